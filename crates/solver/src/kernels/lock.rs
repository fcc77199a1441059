//! The one-lock fill: every thread inserts into the one next set behind one lock, a batch at
//! a time while the lock is free ([`OneLock`]), with a spinning lock for short waits.

use frontier::Tally;
use state::PackedKey;

use super::{Batch, Sink};

/// Successors a thread holds for a [`OneLock`] fill's set while another thread inserts, before
/// it waits for the lock.
const ONE_LOCK_WAIT: usize = 512;

/// The batches of a [`OneLock`] fill's thread that wait for the lock: whole buffers, taken from
/// [`direct`] as they are (a spare of the same length left in their place), so that no
/// successor is copied while the other threads hold the lock.
#[derive(Debug)]
pub(crate) struct Waiting<K, C> {
    /// The waiting buffers, each with the number of its items that wait.
    batches: Vec<(Batch<K, C>, usize)>,
    /// Emptied buffers, kept from batch to batch and depth to depth.
    spare: Vec<Batch<K, C>>,
}

impl<K, C> Waiting<K, C> {
    /// The successors waiting, over every buffer (a few buffers at most).
    fn len(&self) -> usize {
        self.batches.iter().map(|b| b.1).sum()
    }
}

impl<K, C> Default for Waiting<K, C> {
    fn default() -> Self {
        Waiting { batches: Vec::new(), spare: Vec::new() }
    }
}

/// A thread's [`Sink`] into a next frontier of one set behind one lock, which every thread
/// takes ([`crate::fill::Fill::OneLock`]): a batch goes straight in when the lock is free (its
/// slots prefetched as it was made), else it waits ([`Waiting`]) with the next batches until
/// the lock is free or [`ONE_LOCK_WAIT`] successors wait. Any key and any counts; no successor
/// is copied for another thread.
pub(crate) struct OneLock<'a, 'b, K: PackedKey, C: Tally> {
    set: &'a std::sync::Mutex<&'b mut frontier::CountSet<K, C>>,
    /// The set's table as it was when the fill began: the threads prefetch through it without
    /// the lock (a set that grows moves its table: a prefetch through an old view is then
    /// wasted, never wrong).
    view: frontier::SlotView,
    /// The thread's successors waiting for the lock (hash, key, counts).
    waiting: &'a mut Waiting<K, C>,
}

impl<'a, 'b, K: PackedKey, C: Tally> OneLock<'a, 'b, K, C> {
    /// A thread's sink into `set`, whose successors wait in `waiting` (emptied here).
    pub(crate) fn new(
        set: &'a std::sync::Mutex<&'b mut frontier::CountSet<K, C>>,
        waiting: &'a mut Waiting<K, C>,
    ) -> Self {
        let view = set.lock().unwrap_or_else(|e| e.into_inner()).slot_view();
        let Waiting { batches, spare } = &mut *waiting;
        spare.extend(batches.drain(..).map(|(b, _)| b));
        OneLock { set, view, waiting }
    }

    /// Inserts the successors still waiting: the thread's part of the fill is done.
    pub(crate) fn finish(mut self) {
        self.insert_waiting(true);
    }

    /// Inserts the waiting successors (their slots fetched again: they may have waited long)
    /// if the lock is free, or whether or not it is (`wait`).
    #[inline(always)]
    fn insert_waiting(&mut self, wait: bool) {
        if self.waiting.batches.is_empty() {
            return;
        }
        let set = if wait { Some(lock_spinning(self.set)) } else { self.set.try_lock().ok() };
        if let Some(mut set) = set {
            let Waiting { batches, spare } = &mut *self.waiting;
            for (batch, n) in batches.drain(..) {
                set.insert_many_hashed(&batch[..n], |r| r.0, |r| r.1, |r| r.2);
                spare.push(batch);
            }
        }
    }

    /// Inserts `batch` now if nothing waits and the lock is free; returns whether it did.
    #[inline(always)]
    fn insert_now(&mut self, batch: &[(u64, K, C)]) -> bool {
        if self.waiting.batches.is_empty() {
            if let Ok(mut set) = self.set.try_lock() {
                set.insert_prefetched(batch, |r| r.0, |r| r.1, |r| r.2);
                return true;
            }
        }
        false
    }

    /// Lets the first `n` items of `buffer` wait, and inserts what waits if the lock is free
    /// (or, once [`ONE_LOCK_WAIT`] successors wait, when it is).
    #[inline(always)]
    fn wait(&mut self, buffer: Batch<K, C>, n: usize) {
        self.waiting.batches.push((buffer, n));
        self.insert_waiting(self.waiting.len() >= ONE_LOCK_WAIT);
    }
}

impl<K: PackedKey, C: Tally> Sink<K, C> for OneLock<'_, '_, K, C> {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        self.view.prefetch_hash(hash);
    }

    #[inline(always)]
    fn insert(&mut self, batch: &mut [(u64, K, C)]) {
        if !self.insert_now(batch) {
            let mut buffer = self.waiting.spare.pop().unwrap_or_default();
            buffer.clear();
            buffer.extend_from_slice(batch);
            self.wait(buffer, batch.len());
        }
    }

    /// The batch waits in its own buffer, a spare of the same length left in its place.
    #[inline(always)]
    fn insert_buffer(&mut self, batch: &mut Batch<K, C>, len: usize) {
        if !self.insert_now(&batch[..len]) {
            let mut buffer = self.waiting.spare.pop().unwrap_or_default();
            buffer.resize(batch.len(), (0, K::ZERO, C::zero()));
            std::mem::swap(batch, &mut buffer);
            self.wait(buffer, len);
        }
    }
}

/// Looks a thread spins for what another thread does before it gives its core up between
/// looks ([`pause`]).
const SPINS: u32 = 1 << 12;

/// Waits a moment between two looks at what another thread does, the `waits`-th time: a
/// spin, or after [`SPINS`] looks a yield of the core, as the thread waited for may be off
/// its core (more threads than cores). Neither parks the thread: a parked thread is woken
/// late (a system call, and on a virtual machine perhaps a halted vCPU), and what is waited
/// for here takes microseconds.
#[inline(always)]
pub(super) fn pause(waits: &mut u32) {
    *waits = waits.saturating_add(1);
    if *waits < SPINS {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Takes `lock` ([`OneLock`]'s set, held for a batch's inserts), spinning while another
/// thread holds it ([`pause`]): `Mutex::lock` parks a thread after a few spins, and the
/// one lock is taken every few batches.
#[inline]
pub(super) fn lock_spinning<T>(lock: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    let mut waits = 0u32;
    loop {
        match lock.try_lock() {
            Ok(guard) => return guard,
            Err(std::sync::TryLockError::Poisoned(e)) => return e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => pause(&mut waits),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Batch;

    /// While another thread holds a [`OneLock`] fill's lock, a thread's batches wait: a buffer
    /// [`direct`] fills waits as it is (a spare of its length takes its place), a slice as a
    /// copy. Once the lock is free, what waits goes in, before the next batch, and every
    /// successor is in the set exactly once; a batch that finds the lock free and nothing
    /// waiting goes straight in, from its own buffer.
    #[test]
    fn one_lock_batches_wait_in_their_own_buffers_until_the_lock_is_free() {
        type Item = (u64, u32, u64);
        let items = |keys: std::ops::Range<u32>, buffer: &mut Batch<u32, u64>| {
            for (j, k) in keys.enumerate() {
                buffer[j] = (frontier::key_hash(&k), k, u64::from(k) + 1);
            }
        };
        let mut set = frontier::CountSet::<u32, u64>::new(0);
        let lock = std::sync::Mutex::new(&mut set);
        let mut waiting = Waiting::default();
        let mut sink = OneLock::new(&lock, &mut waiting);
        let mut batch: Batch<u32, u64> = vec![(0, 0, 0); 150];
        let held = lock.lock().unwrap();
        // Under ONE_LOCK_WAIT successors in all: none of these waits for the lock.
        for keys in [1..101, 1001..1101] {
            items(keys, &mut batch);
            let before = batch.as_ptr();
            sink.insert_buffer(&mut batch, 100);
            assert_ne!(batch.as_ptr(), before, "the buffer waits as it is");
            assert_eq!(batch.len(), 150, "the spare has the buffer's length");
        }
        let mut copy: Vec<Item> = vec![(0, 0, 0); 50];
        items(1..51, &mut copy);
        sink.insert(&mut copy);
        assert_eq!(sink.waiting.len(), 250);
        drop(held);
        // The lock is free: what waits goes in with this batch.
        items(2001..2101, &mut batch);
        sink.insert_buffer(&mut batch, 100);
        assert_eq!(sink.waiting.len(), 0);
        assert_eq!(sink.waiting.spare.len(), 4, "every emptied buffer is a spare again");
        // Nothing waits and the lock is free: straight in, from the same buffer.
        items(3001..3101, &mut batch);
        let before = batch.as_ptr();
        sink.insert_buffer(&mut batch, 100);
        assert_eq!(batch.as_ptr(), before);
        sink.finish();
        let set = lock.into_inner().unwrap();
        assert_eq!(set.len(), 400);
        for k in (1..101).chain(1001..1101).chain(2001..2101).chain(3001..3101) {
            let twice = if k < 51 { 2 } else { 1 };
            assert_eq!(set.get(&k), Some(twice * (u64::from(k) + 1)), "key {k}");
        }
    }

    /// A lock another thread holds is taken once that thread lets it go (the holder changes
    /// the value first, so the taker must have waited), and a poisoned one is taken as well.
    #[test]
    fn a_spinning_lock_waits_for_its_holder_and_takes_a_poisoned_one() {
        let lock = std::sync::Mutex::new(0u32);
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut guard = lock.lock().unwrap();
                held_tx.send(()).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
                *guard = 1;
            });
            held_rx.recv().unwrap();
            let mut guard = lock_spinning(&lock);
            assert_eq!(*guard, 1, "taken only after the holder let go");
            *guard = 2;
        });
        let poisoned = std::sync::Mutex::new(3u32);
        let _ = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let _guard = poisoned.lock().unwrap();
                    panic!("poisons the lock");
                })
                .join()
        });
        assert!(poisoned.is_poisoned());
        assert_eq!(*lock_spinning(&poisoned), 3);
    }
}

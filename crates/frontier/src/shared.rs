//! One [`CountSet`] filled by several threads at once, without a lock: [`SharedSet`].
//!
//! The protocol, for a key `k` whose probe reaches slot `i`:
//! * a slot holding an element number `e` (read with `Acquire`) is final: `keys[e]` was
//!   written before `e` was published there, and is never written again; if it is `k`, its
//!   counts are merged with atomic additions ([`Tally::merge_shared`]), else the probe goes on;
//! * an empty slot is claimed by writing `k` and its counts into an element `f` that only this
//!   inserter owns (from its [`Claim`]), then publishing `f` with a compare-and-swap
//!   (`Release`); if another thread published first, `f` stays with the claim for its next new
//!   key, and the probe carries on from the winner's element (which may be `k` itself).
//!
//! Claims take elements in blocks from one atomic counter (or what ended claims gave back) and
//! give back what they did not use when they end; [`CountSet::fill_shared`] then moves the
//! highest elements into those holes (re-pointing their slots), so the keys and counts are
//! dense again.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::Mutex;

use bytemuck::Pod;

use crate::prefetch::prefetch;
use crate::set::{slot_of, CountSet};
use crate::Tally;

/// Elements a [`Claim`] takes from the shared counter at a time.
const CLAIM_BLOCK: usize = 256;

/// The set was too small for the keys inserted into it (see [`CountSet::fill_shared`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("more keys were inserted than the set had room for")
    }
}

impl std::error::Error for Overflow {}

/// A [`CountSet`] open to insertion by many threads at once (each through its own
/// [`Claim`]), made by [`CountSet::fill_shared`].
///
/// Its room is fixed: the keys the set could take before it would have grown. An insert
/// that needs more fails, and the whole fill is reported as an [`Overflow`].
#[derive(Debug)]
pub struct SharedSet<'a, K: Pod + Eq, C: Tally> {
    table: &'a [AtomicU32],
    keys: Elements<K>,
    counts: Elements<C>,
    shift: u32,
    bits: u32,
    /// The lowest element no claim has taken yet.
    next: AtomicUsize,
    /// Elements below this exist (`1 + ` the set's room in keys).
    end: usize,
    /// Element ranges claims took and did not fill.
    unused: Mutex<Vec<Range<usize>>>,
    overflowed: AtomicBool,
    _borrow: std::marker::PhantomData<&'a mut [K]>,
}

/// Raw access to a set's dense array while it is shared (see the module's protocol for who
/// writes and reads each element when).
#[derive(Debug)]
struct Elements<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: `Elements` is a view of an array exclusively borrowed by the `SharedSet` that holds
// it; threads touch its elements only under the module's protocol (each element written by one
// owner before it is published, read only after, counts merged atomically), so sharing the
// view is as safe as sharing the `T`s.
unsafe impl<T: Send + Sync> Sync for Elements<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Send for Elements<T> {}

impl<T: Pod> Elements<T> {
    fn new(slice: &mut [T]) -> Self {
        Elements { ptr: slice.as_mut_ptr(), len: slice.len() }
    }

    /// Element `e`.
    ///
    /// # Safety
    /// No other thread may be writing element `e`: it was published (its writer finished it
    /// before the `Release` that made it visible, and this thread saw that with `Acquire`), or
    /// this thread owns it.
    #[inline(always)]
    unsafe fn read(&self, e: usize) -> T {
        assert!(e < self.len);
        // SAFETY: in bounds (checked), aligned and initialised (a slice of `Pod`); no
        // concurrent write (the caller's contract).
        unsafe { self.ptr.add(e).read() }
    }

    /// Writes element `e`.
    ///
    /// # Safety
    /// This thread owns element `e` (from its claim, not yet published): no other thread reads
    /// or writes it.
    #[inline(always)]
    unsafe fn write(&self, e: usize, value: T) {
        assert!(e < self.len);
        // SAFETY: in bounds (checked) and aligned; exclusive (the caller's contract).
        unsafe { self.ptr.add(e).write(value) }
    }
}

impl<T> Elements<T> {
    /// Hints the CPU to fetch element `e` (any `e`: a prefetch never faults).
    #[inline(always)]
    fn prefetch(&self, e: usize) {
        prefetch(self.ptr.wrapping_add(e));
    }
}

impl<T: Tally> Elements<T> {
    /// Adds `add` to published element `e` atomically.
    #[inline(always)]
    fn merge(&self, e: usize, add: T) {
        assert!(e < self.len);
        // SAFETY: in bounds (checked) and aligned; once published, an element's counts are
        // only ever merged through `merge_shared` while the set is shared.
        unsafe { T::merge_shared(self.ptr.add(e), add) }
    }
}

/// One thread's inserter into a [`SharedSet`], holding the elements it will give its new keys.
/// What it did not use goes back to the set when it is dropped.
#[derive(Debug)]
pub struct Claim<'s, 'a, K: Pod + Eq, C: Tally> {
    set: &'s SharedSet<'a, K, C>,
    next: usize,
    end: usize,
}

impl<K: Pod + Eq + Send + Sync, C: Tally> CountSet<K, C> {
    /// Fills the set from several threads at once: `fill` gets a [`SharedSet`] whose
    /// [`Claim`]s (one for each thread, or each task) insert concurrently. The set's room is
    /// what it has now ([`CountSet::clear_for`] makes it): if more keys arrive, the fill
    /// reports [`Overflow`] and the set is left empty (the caller makes room and starts again).
    ///
    /// The keys and their counts are the same as if every item had been inserted by
    /// [`CountSet::insert`]; their dense order depends on how the threads interleave.
    ///
    /// ```
    /// use frontier::{key_hash, CountSet};
    ///
    /// let mut set = CountSet::<u64, u64>::new(0);
    /// set.clear_for(1000); // room for 1000 keys
    /// let items: Vec<u64> = (0..4000).map(|i| i % 700).collect();
    /// set.fill_shared(|shared| {
    ///     std::thread::scope(|s| {
    ///         for part in items.chunks(1000) {
    ///             s.spawn(|| shared.claim().insert_prefetched(part, key_hash, |&k| k, |_| 1));
    ///         }
    ///     })
    /// })
    /// .expect("700 keys fit");
    /// assert_eq!(set.len(), 700);
    /// assert_eq!(set.get(&5), Some(&6)); // 5 is inserted 6 times (5, 705, ... 3505)
    /// ```
    pub fn fill_shared<R>(&mut self, fill: impl FnOnce(&SharedSet<'_, K, C>) -> R) -> Result<R, Overflow> {
        if self.capacity() == 0 {
            self.clear_for(1);
        }
        let first = self.len + 1;
        let end = self.room_end();
        let (shift, bits) = (self.shift, self.bits);
        let (table, keys, counts) = self.arrays_mut();
        // SAFETY: `AtomicU32` has the size, alignment and bit validity of `u32`, and the
        // exclusive borrow of `table` (for as long as the shared set lives) means every access
        // meanwhile goes through the atomic view.
        let table = unsafe { &*(table as *mut [u32] as *const [AtomicU32]) };
        let shared = SharedSet {
            table,
            keys: Elements::new(keys),
            counts: Elements::new(counts),
            shift,
            bits,
            next: AtomicUsize::new(first),
            end,
            unused: Mutex::new(Vec::new()),
            overflowed: AtomicBool::new(false),
            _borrow: std::marker::PhantomData,
        };
        let out = fill(&shared);
        let SharedSet { next, overflowed, unused, .. } = shared;
        if overflowed.into_inner() {
            self.clear_all();
            return Err(Overflow);
        }
        let top = next.into_inner().min(end);
        let mut holes = unused.into_inner().unwrap_or_else(|e| e.into_inner());
        holes.retain(|r| !r.is_empty());
        holes.sort_by_key(|r| r.start);
        let unfilled: usize = holes.iter().map(|r| r.len()).sum();
        let len = top - 1 - unfilled;
        // The used elements above `len` move down into the holes at or below it.
        let in_hole = |e: usize| {
            let p = holes.partition_point(|r| r.start <= e);
            p > 0 && holes[p - 1].contains(&e)
        };
        let movers: Vec<usize> = (len + 1..top).filter(|&e| !in_hole(e)).collect();
        let targets = holes.iter().flat_map(|r| r.clone()).take_while(|&e| e <= len);
        for (from, to) in movers.into_iter().zip(targets) {
            self.move_element(from, to);
        }
        self.len = len;
        Ok(out)
    }
}

impl<'a, K: Pod + Eq, C: Tally> SharedSet<'a, K, C> {
    /// An inserter for one thread (or task). Claims are cheap: elements are taken from the
    /// set a block at a time, as new keys need them.
    pub fn claim(&self) -> Claim<'_, 'a, K, C> {
        Claim { set: self, next: 0, end: 0 }
    }

    /// True once an insert has found the set full: the fill will fail, so the rest of the
    /// work can be skipped.
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// Hints the CPU to fetch the table slot of a key whose [`crate::key_hash`] is `hash`.
    #[inline(always)]
    pub fn prefetch_hash(&self, hash: u64) {
        if let Some(slot) = self.table.get(slot_of(hash, self.shift, self.bits)) {
            prefetch(slot);
        }
    }
}

impl<K: Pod + Eq, C: Tally> Claim<'_, '_, K, C> {
    /// Hints the CPU to fetch the table slot of a key whose [`crate::key_hash`] is `hash`.
    #[inline(always)]
    pub fn prefetch_hash(&self, hash: u64) {
        self.set.prefetch_hash(hash);
    }

    /// An element for a new key, owned by this claim until it is published.
    #[inline(always)]
    fn fresh(&mut self) -> Option<usize> {
        if self.next == self.end {
            self.refill()?;
        }
        Some(self.next)
    }

    #[cold]
    fn refill(&mut self) -> Option<()> {
        let set = self.set;
        // Elements an ended claim gave back first, so that short claims waste nothing.
        let spare = set.unused.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if let Some(r) = spare {
            (self.next, self.end) = (r.start, r.end);
            return Some(());
        }
        let start = set.next.fetch_add(CLAIM_BLOCK, Ordering::Relaxed);
        if start >= set.end {
            set.overflowed.store(true, Ordering::Relaxed);
            return None;
        }
        (self.next, self.end) = (start, (start + CLAIM_BLOCK).min(set.end));
        Some(())
    }

    /// Inserts every item of `items` (whose keys' [`crate::key_hash`] `hash` gives, and whose
    /// slots the caller has prefetched), merging the counts of keys already present. Returns
    /// false, having inserted only some, when the set is full (see [`CountSet::fill_shared`]).
    #[inline(always)]
    pub fn insert_prefetched<T>(
        &mut self,
        items: &[T],
        hash: impl Fn(&T) -> u64,
        key: impl Fn(&T) -> K,
        counts: impl Fn(&T) -> C,
    ) -> bool {
        let set = self.set;
        let mask = set.table.len() - 1;
        // The locked instructions below wait for every load before them: first, with plain
        // loads that overlap, bring in the key and counts each item's slot points to.
        for item in items {
            let e = set.table[slot_of(hash(item), set.shift, set.bits)].load(Ordering::Relaxed) as usize;
            set.keys.prefetch(e);
            set.counts.prefetch(e);
        }
        for item in items {
            let k = key(item);
            let add = counts(item);
            let mut i = slot_of(hash(item), set.shift, set.bits);
            loop {
                let mut e = set.table[i].load(Ordering::Acquire) as usize;
                if e == 0 {
                    let Some(f) = self.fresh() else { return false };
                    // SAFETY: `f` is this claim's and not yet published.
                    unsafe {
                        set.keys.write(f, k);
                        set.counts.write(f, add);
                    }
                    match set.table[i].compare_exchange(0, f as u32, Ordering::Release, Ordering::Acquire) {
                        Ok(_) => {
                            self.next += 1;
                            break;
                        }
                        Err(winner) => e = winner as usize,
                    }
                }
                // SAFETY: `e` was read from the table with `Acquire`: published, never written
                // again.
                if unsafe { set.keys.read(e) } == k {
                    set.counts.merge(e, add);
                    break;
                }
                i = (i + 1) & mask;
            }
        }
        true
    }
}

impl<K: Pod + Eq, C: Tally> Drop for Claim<'_, '_, K, C> {
    fn drop(&mut self) {
        if self.next < self.end {
            let mut unused = self.set.unused.lock().unwrap_or_else(|e| e.into_inner());
            unused.push(self.next..self.end);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_hash;
    use std::collections::HashMap;

    /// Inserts `items` split among `threads` threads (each with several claims), then checks
    /// the set against a map built one item at a time.
    fn fill_and_check<C: Tally + std::fmt::Debug + PartialEq>(
        items: &[(u64, C)],
        threads: usize,
        room: usize,
    ) {
        let mut set = CountSet::<u64, C>::new(0);
        set.clear_for(room);
        set.insert(u64::MAX, &items[0].1); // a key present before the fill
        let per = items.len().div_ceil(threads);
        set.fill_shared(|shared| {
            std::thread::scope(|s| {
                for part in items.chunks(per) {
                    s.spawn(move || {
                        for piece in part.chunks(97) {
                            let mut claim = shared.claim();
                            for it in piece {
                                claim.prefetch_hash(key_hash(&it.0));
                            }
                            assert!(claim.insert_prefetched(
                                piece,
                                |it| key_hash(&it.0),
                                |it| it.0,
                                |it| it.1
                            ));
                        }
                    });
                }
            })
        })
        .expect("room for every key");
        let mut map: HashMap<u64, C> = HashMap::new();
        map.insert(u64::MAX, items[0].1);
        for &(k, c) in items {
            let e = map.entry(k).or_insert(C::zero());
            *e = e.merge(c);
        }
        assert_eq!(set.len(), map.len());
        let mut seen = std::collections::HashSet::new();
        for (k, c) in set.iter() {
            assert!(seen.insert(*k), "key {k} stored twice");
            assert_eq!(map[k], *c);
            assert_eq!(set.get(k), Some(c));
        }
        // Still a working set: more inserts, one at a time.
        set.insert(3, &items[0].1);
        set.insert(u64::MAX - 1, &items[0].1);
        assert_eq!(set.get(&(u64::MAX - 1)), Some(&items[0].1));
    }

    fn keys(n: usize, range: u64) -> impl Iterator<Item = u64> {
        let mut x = 7u64;
        (0..n).map(move |_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 20) % range
        })
    }

    #[test]
    fn threads_fill_a_set_like_one_thread() {
        for threads in [1, 2, 3, 8] {
            let items: Vec<(u64, u64)> = keys(60_000, 20_000).zip(1..).collect();
            fill_and_check(&items, threads, 25_000);
            let lanes: Vec<(u64, [u32; 3])> =
                keys(30_000, 5_000).map(|k| (k, [k as u32, 1, u32::MAX])).collect();
            fill_and_check(&lanes, threads, 6_000);
        }
    }

    #[test]
    fn a_fill_beyond_the_room_overflows_and_empties_the_set() {
        let mut set = CountSet::<u64, u64>::new(0);
        set.clear_for(1000);
        let room = set.capacity() / 4;
        let items: Vec<u64> = (0..room as u64 + 1).collect();
        let out = set.fill_shared(|shared| {
            let mut claim = shared.claim();
            let ok = claim.insert_prefetched(&items, key_hash, |&k| k, |_| 1);
            (ok, shared.overflowed())
        });
        assert_eq!(out, Err(Overflow));
        assert!(set.is_empty() && set.get(&0).is_none());
        // Exactly the room fits.
        let out = set
            .fill_shared(|shared| shared.claim().insert_prefetched(&items[..room], key_hash, |&k| k, |_| 1));
        assert_eq!(out, Ok(true));
        assert_eq!(set.len(), room);
        assert!(items[..room].iter().all(|k| set.get(k) == Some(&1)));
    }
}

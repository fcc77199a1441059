//! The owned fill's mail: each thread owns shards of the next set and posts the successors of
//! the others' shards to their owners a block at a time ([`Owned`]), with the deal of chunks
//! to threads ([`Deal`]) and the per-thread buffers kept alone on their cache lines
//! ([`Lined`]).

use frontier::Tally;
use state::PackedKey;

use super::{lock::pause, Sink, SUCCESSORS};

/// A value alone on its two cache lines (128 bytes: what adjacent-line prefetchers fetch
/// together). Threads push to vectors of their own whose headers (their lengths change with
/// every item) would otherwise share a line with another thread's, and each push would take
/// the line from the other core.
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Lined<T>(pub T);

impl<T> std::ops::Deref for Lined<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> std::ops::DerefMut for Lined<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// Successors a thread gathers for a shard another thread owns before it posts them to that
/// thread (an [`Owned`] fill): a block stays within a core's caches as it is written, and a
/// post (one uncontended lock) comes once every few batches.
pub(super) const POST_BLOCK: usize = 512;

/// Successors (key, counts) posted to another thread in an [`Owned`] fill: their hashes
/// are not sent (the owner hashes each key again, which costs less than moving the hash
/// between cores).
type Letter<K, C> = Vec<(K, C)>;

/// The mailboxes of an [`Owned`] fill, one a shard of the next set: blocks of successors
/// (key, counts) that other threads have posted to the shard's owner; and the emptied blocks,
/// which any thread takes to post in. Kept from fill to fill: a thread that posts more than
/// it is posted takes the blocks the others emptied, rather than new memory (each new block's
/// pages are faults, and the threads' heaps would grow with every fill).
pub(crate) struct Post<K, C> {
    boxes: Vec<Mailbox<K, C>>,
    spare: std::sync::Mutex<Vec<Letter<K, C>>>,
}

/// A shard's mailbox ([`Post`]).
struct Mailbox<K, C> {
    blocks: std::sync::Mutex<Vec<Letter<K, C>>>,
    /// Set when a block is posted, cleared when the owner takes the blocks: the owner looks
    /// at it, not at the lock, after each batch. A hint only: whatever it misses is taken at
    /// the fill's end ([`Post::take_all`]).
    waiting: std::sync::atomic::AtomicBool,
}

impl<K, C> Default for Post<K, C> {
    fn default() -> Self {
        Post { boxes: Vec::new(), spare: Default::default() }
    }
}

impl<K: PackedKey, C: Tally> Post<K, C> {
    /// Mailboxes for `shards` shards (each empty after a fill: the fill takes every block).
    pub(crate) fn prepare(&mut self, shards: usize) {
        self.boxes
            .resize_with(shards, || Mailbox { blocks: Default::default(), waiting: Default::default() });
    }

    /// An empty block to post in: an emptied one, or a new one.
    fn spare_block(&self) -> Letter<K, C> {
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        spare.unwrap_or_else(|| Vec::with_capacity(POST_BLOCK + SUCCESSORS))
    }

    /// Takes back the blocks in `emptied` (empty), for any thread to post in again.
    fn give_back(&self, emptied: &mut Vec<Letter<K, C>>) {
        self.spare.lock().unwrap_or_else(|e| e.into_inner()).append(emptied);
    }

    /// Puts a block of successors of shard `s` in its mailbox.
    fn send(&self, s: usize, block: Letter<K, C>) {
        let mailbox = &self.boxes[s];
        mailbox.blocks.lock().unwrap_or_else(|e| e.into_inner()).push(block);
        mailbox.waiting.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Moves the blocks waiting for shard `s` to `into`, when its hint says there are some.
    #[inline(always)]
    fn take(&self, s: usize, into: &mut Vec<Letter<K, C>>) {
        if self.boxes[s].waiting.load(std::sync::atomic::Ordering::Relaxed) {
            self.take_all(s, into);
        }
    }

    /// Moves every block waiting for shard `s` to `into`.
    fn take_all(&self, s: usize, into: &mut Vec<Letter<K, C>>) {
        let mailbox = &self.boxes[s];
        let mut blocks = mailbox.blocks.lock().unwrap_or_else(|e| e.into_inner());
        mailbox.waiting.store(false, std::sync::atomic::Ordering::Relaxed);
        into.append(&mut blocks);
    }
}

/// The chunks of an [`Owned`] fill dealt to its threads: each thread first takes, in order,
/// the chunks of the source shards it filled at the previous depth (whose slots are still in
/// its core's caches), then takes the others' last chunks while they have some left. A hand
/// is one word (its first and end places in the deal), taken from by compare-and-swap: the
/// hand's owner from the front, the others from the back.
pub(crate) struct Deal {
    /// Chunk indices, each thread's hand in a run.
    order: Vec<u32>,
    /// `hands[t]`: the first and end places in `order` of what is left of thread `t`'s hand
    /// (the end in the high half).
    hands: Vec<Lined<std::sync::atomic::AtomicU64>>,
}

impl Deal {
    /// Deals chunks to `threads` threads: chunk `i` to thread `owner[i]`.
    pub(crate) fn new(owner: &[usize], threads: usize) -> Self {
        let mut order = Vec::with_capacity(owner.len());
        let mut hands = Vec::with_capacity(threads);
        for t in 0..threads {
            let first = order.len() as u64;
            order.extend((0..owner.len() as u32).filter(|&i| owner[i as usize] == t));
            hands.push(Lined(std::sync::atomic::AtomicU64::new(first | (order.len() as u64) << 32)));
        }
        Deal { order, hands }
    }

    /// The next chunk for thread `me`: its own hand's first, else another hand's last.
    pub(crate) fn next(&self, me: usize) -> Option<usize> {
        let n = self.hands.len();
        (0..n).find_map(|k| self.take((me + k) % n, k == 0))
    }

    /// Takes the first (`front`) or last chunk left in hand `t`.
    fn take(&self, t: usize, front: bool) -> Option<usize> {
        use std::sync::atomic::Ordering::Relaxed;
        let hand = &self.hands[t].0;
        let mut now = hand.load(Relaxed);
        loop {
            let (first, end) = (now as u32, (now >> 32) as u32);
            if first >= end {
                return None;
            }
            let (place, (first, end)) =
                if front { (first, (first + 1, end)) } else { (end - 1, (first, end - 1)) };
            // Relaxed: a chunk is reached through its own lock; the word only decides who.
            match hand.compare_exchange_weak(now, first as u64 | (end as u64) << 32, Relaxed, Relaxed) {
                Ok(_) => return Some(self.order[place as usize] as usize),
                Err(seen) => now = seen,
            }
        }
    }
}

/// A thread's buffers in an [`Owned`] fill, kept from chunk to chunk (and their memory from
/// depth to depth).
#[derive(Debug)]
pub(crate) struct Letters<K, C> {
    /// One block in the making a shard (those of the thread's own shards stay empty).
    pub blocks: Vec<Lined<Letter<K, C>>>,
    /// Blocks taken from the thread's mailboxes.
    received: Vec<Letter<K, C>>,
    /// The thread's own shards, in order.
    own: Vec<usize>,
    /// The one shard the thread owns, when it owns one (as many threads as shards, the usual
    /// case): its successors are then told from the others by one comparison ([`in_shard`]).
    solo: Option<usize>,
    /// The one shard the thread does not own, when there is one (two shards, two threads).
    other: Option<usize>,
    /// `local[s]`: 1 + the place of shard `s` in `own`, or 0 for a shard another thread owns.
    local: Vec<u32>,
    /// `views[s]`: where the slots of shard `s` are, for the thread's own shards; an idle view
    /// for the others ([`frontier::SlotView::idle`]). Brought up to date after every insert
    /// (a set that grows moves its table).
    views: Vec<frontier::SlotView>,
}

impl<K, C> Default for Letters<K, C> {
    fn default() -> Self {
        Letters {
            blocks: Vec::new(),
            received: Vec::new(),
            own: Vec::new(),
            solo: None,
            other: None,
            local: Vec::new(),
            views: Vec::new(),
        }
    }
}

impl<K: PackedKey, C: Tally> Letters<K, C> {
    /// Ready for a fill of `shards` shards by `threads` threads, as thread `me`, which owns
    /// the shards `s` with `s % threads == me`.
    pub(crate) fn prepare(&mut self, shards: usize, me: usize, threads: usize) {
        self.blocks.resize_with(shards, Default::default);
        self.blocks.iter_mut().for_each(|b| b.clear());
        self.own.clear();
        self.own.extend((me..shards).step_by(threads));
        self.local.clear();
        self.local.resize(shards, 0);
        for (j, &s) in self.own.iter().enumerate() {
            self.local[s] = j as u32 + 1;
        }
        self.solo = if let [s] = self.own[..] { Some(s) } else { None };
        let mut others = (0..shards).filter(|&s| self.local[s] == 0);
        self.other = others.next().filter(|_| others.next().is_none());
        self.views.clear();
        self.views.resize(shards, frontier::SlotView::idle());
    }
}

/// A thread's [`Sink`] into a next frontier whose shards are each filled by one thread, the
/// shard's owner (shard `s` by thread `s % threads`): the successors of its own shards go
/// straight in (their slots prefetched as they are made, as on one thread), the others are
/// posted to their owners a block at a time ([`Post`]), and each thread inserts what it was
/// posted after each batch of its own. Any key and any counts; nothing is shared but the
/// mailboxes, and no two threads write to one shard.
pub(crate) struct Owned<'a, 'b, K: PackedKey, C: Tally> {
    /// The thread's own shards (`letters.own`), locked for the chunk at hand (uncontended:
    /// only their owner takes their locks while the fill runs).
    mine: Vec<std::sync::MutexGuard<'a, &'b mut frontier::CountSet<K, C>>>,
    /// The number of shards' logarithm (a key's shard is the top bits of its hash).
    shard_bits: u32,
    /// Where the slots of the thread's one shard are (`letters.solo`, when it owns one; kept up
    /// to date as `letters.views`): its successors' slots are prefetched through it, not
    /// through the table of views.
    solo_view: frontier::SlotView,
    post: &'a Post<K, C>,
    letters: &'a mut Letters<K, C>,
}

impl<'a, 'b, K: PackedKey, C: Tally> Owned<'a, 'b, K, C> {
    /// A thread's sink into `shards` (`2^shard_bits` of them), whose buffers `letters` were
    /// prepared for that thread ([`Letters::prepare`]).
    pub(crate) fn new(
        shards: &'a [std::sync::Mutex<&'b mut frontier::CountSet<K, C>>],
        shard_bits: u32,
        post: &'a Post<K, C>,
        letters: &'a mut Letters<K, C>,
    ) -> Self {
        debug_assert!(shards.len() == 1 << shard_bits && letters.local.len() == shards.len());
        let mine = letters.own.iter().map(|&s| shards[s].lock().unwrap_or_else(|e| e.into_inner())).collect();
        let solo_view = frontier::SlotView::idle();
        let mut owned = Owned { mine, shard_bits, solo_view, post, letters };
        owned.update_views();
        owned
    }

    /// Brings the views of the thread's own shards up to date.
    #[inline(always)]
    fn update_views(&mut self) {
        for (set, &s) in self.mine.iter().zip(&self.letters.own) {
            self.letters.views[s] = set.slot_view();
        }
        if let [set] = &self.mine[..] {
            self.solo_view = set.slot_view();
        }
    }

    /// Inserts the blocks posted to the thread's shards: every one (`all`), or those its
    /// mailboxes' hints show.
    #[inline(always)]
    fn receive(&mut self, all: bool) {
        let letters = &mut *self.letters;
        for (set, &s) in self.mine.iter_mut().zip(&letters.own) {
            if all {
                self.post.take_all(s, &mut letters.received);
            } else {
                self.post.take(s, &mut letters.received);
            }
            for block in letters.received.iter_mut() {
                set.insert_many(block, |r| r.0, |r| r.1);
                block.clear();
            }
            if !letters.received.is_empty() {
                self.post.give_back(&mut letters.received);
            }
        }
    }

    /// Ends the thread's part of the fill, once it has no chunk left: posts the successors
    /// it still holds for the others' shards, then inserts what the others post to it until
    /// every one of the `threads` threads has ended its part (`done` counts them), and then
    /// the last of it.
    pub(crate) fn finish(mut self, done: &std::sync::atomic::AtomicUsize, threads: usize) {
        use std::sync::atomic::Ordering;
        let letters = &mut *self.letters;
        for (s, block) in letters.blocks.iter_mut().enumerate() {
            if !block.is_empty() {
                self.post.send(s, std::mem::replace(&mut block.0, self.post.spare_block()));
            }
        }
        // Release: a thread that sees every part ended sees every block posted before.
        done.fetch_add(1, Ordering::Release);
        let mut waits = 0u32;
        while done.load(Ordering::Acquire) < threads {
            self.receive(false);
            pause(&mut waits);
        }
        self.receive(true);
    }

    /// Posts shard `s`'s block when it has [`POST_BLOCK`] successors or more.
    #[inline(always)]
    fn post_full(&mut self, s: usize) {
        let letters = &mut *self.letters;
        let block = &mut letters.blocks[s];
        if block.len() >= POST_BLOCK {
            self.post.send(s, std::mem::replace(&mut block.0, self.post.spare_block()));
        }
    }
}

/// Whether a key whose hash is `hash` is in shard `s` of `2^shard_bits` (the top bits of the
/// hash), by one shift and comparison: no branch, whatever the number of shards.
#[inline(always)]
pub(super) fn in_shard(hash: u64, shard_bits: u32, s: usize) -> bool {
    (hash >> 1 >> (63 - shard_bits)) as usize == s
}

impl<K: PackedKey, C: Tally> Sink<K, C> for Owned<'_, '_, K, C> {
    /// The slot of a successor the thread keeps; for one it posts, the idle view's line: no
    /// branch.
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        if let Some(solo) = self.letters.solo {
            self.solo_view.prefetch_hash_if(hash, in_shard(hash, self.shard_bits, solo));
        } else {
            self.letters.views[frontier::shard_of_hash(hash, self.shard_bits)].prefetch_hash(hash);
        }
    }

    /// Moves the successors the thread keeps to the front of `batch` and inserts them; posts
    /// the others. The successors are told apart in a loop of their own, after the batch is
    /// made: the loop that makes the batch then stores each successor once, at the next place,
    /// which costs less than choosing the place there.
    #[inline(always)]
    fn insert(&mut self, batch: &mut [(u64, K, C)]) {
        let mut kept = 0;
        if let (Some(solo), Some(other)) = (self.letters.solo, self.letters.other) {
            // Without a branch: each successor is written to both places, and only the list
            // it belongs to grows.
            let shard_bits = self.shard_bits;
            let block = &mut self.letters.blocks[other].0;
            let mut away = block.len();
            block.resize(away + batch.len(), (K::ZERO, C::zero()));
            for j in 0..batch.len() {
                let (hash, key, counts) = batch[j];
                let keep = in_shard(hash, shard_bits, solo);
                batch[kept] = (hash, key, counts);
                block[away] = (key, counts);
                kept += usize::from(keep);
                away += usize::from(!keep);
            }
            block.truncate(away);
            self.post_full(other);
        } else {
            for j in 0..batch.len() {
                let (hash, key, counts) = batch[j];
                let s = frontier::shard_of_hash(hash, self.shard_bits);
                if self.letters.local[s] != 0 {
                    batch[kept] = (hash, key, counts);
                    kept += 1;
                } else {
                    self.letters.blocks[s].push((key, counts));
                    self.post_full(s);
                }
            }
        }
        let kept = &batch[..kept];
        if let [set] = &mut self.mine[..] {
            set.insert_prefetched(kept, |r| r.0, |r| r.1, |r| r.2);
        } else {
            for item in kept {
                let mine = self.letters.local[frontier::shard_of_hash(item.0, self.shard_bits)] as usize - 1;
                self.mine[mine].insert_prefetched(std::slice::from_ref(item), |r| r.0, |r| r.1, |r| r.2);
            }
        }
        self.receive(false);
        self.update_views();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks emptied by one thread are posted in again by any: a fill makes new blocks only
    /// while none is spare, whichever thread posts more.
    #[test]
    fn emptied_blocks_are_posted_in_again() {
        let mut post = Post::<u32, [u32; 4]>::default();
        post.prepare(2);
        let mut block = post.spare_block();
        assert!(block.is_empty() && block.capacity() >= POST_BLOCK);
        block.push((7, [1; 4]));
        post.send(1, block);
        let mut received = Vec::new();
        post.take_all(1, &mut received);
        assert_eq!(received.len(), 1);
        let address = received[0].as_ptr();
        received[0].clear();
        post.give_back(&mut received);
        assert!(received.is_empty());
        let again = post.spare_block();
        assert_eq!(again.as_ptr(), address, "the emptied block, not a new one");
        assert!(again.is_empty());
        post.prepare(4);
        let mut none = Vec::new();
        post.take_all(3, &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn in_shard_agrees_with_the_shard_of_a_hash() {
        for bits in 0..=12 {
            for hash in [0, 1, 1 << 63, u64::MAX, 0x9e37_79b9_7f4a_7c15, 0x0123_4567_89ab_cdef] {
                let s = frontier::shard_of_hash(hash, bits);
                assert!(in_shard(hash, bits, s), "hash {hash:#x}, {bits} bits");
                assert!(!in_shard(hash, bits, s ^ 1), "hash {hash:#x}, {bits} bits");
            }
        }
    }
}

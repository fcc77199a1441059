//! The search's kernels: pure functions over a chunk of the current frontier (a range of one
//! set's slots) and a sink for what they produce, generic over the rules and the weights.
//!
//! * [`direct`]: successors canonicalised, hashed, their slots prefetched, and inserted in
//!   batches into a [`Sink`]: the next frontier's one set, alone or behind the [`OneLock`]
//!   that every thread takes, a thread's [`Owned`] shards of one set (and its post to the
//!   other threads'), or a [`Routed`] sink that sends the successors
//!   of partitions kept elsewhere to their [`Outbox`](crate::home::Outbox).
//! * [`expand`] then [`insert`]: successors as records (canonical key and parent tag) bucketed by
//!   the next frontier's shard, then each shard filled from every chunk's bucket (or, for
//!   partitions kept elsewhere, their records sent to the outbox with their counts).
//! * [`last`] and [`last_two`]: the last depth (and the two last, where the successor sums
//!   are cheap) summed without storing anything.
//!
//! Every kernel is `#[inline(always)]`: [`crate::dispatch`] compiles each once per instruction
//! set. Full successors end their paths at once (`Chunk::acc`); nothing here knows where a
//! partition lives.

use bytemuck::Pod;
use frontier::{key_hash, shard_of, Frontier, Tallies, Tally};
use state::{Counts, PackedKey, Rules};

use crate::home::{Outbox, Sender, HOME};
use crate::weights::{wide_counts, Weights, MANY_MAX};

/// Room for the successors a kernel buffers ([`successor_buffer`]): those of one group of
/// positions ([`Rules::MANY`] of them, [`Rules::BUFFER`] each), after a batch not yet full.
const SUCCESSORS: usize = 1024;

/// A buffer for successors, on the stack: one reached through a struct field is reloaded
/// around the stores of every successor. Every rules' [`Rules::BUFFER`] fits (checked when
/// compiled).
#[inline(always)]
pub(crate) fn successor_buffer<R: Rules>() -> [R::Key; SUCCESSORS] {
    const { assert!(R::BUFFER <= SUCCESSORS) };
    [R::Key::ZERO; SUCCESSORS]
}

/// One successor on its way to the next frontier: its canonical key, and `parent << 3 | t`,
/// where `parent` indexes its chunk's slots and `t` is the symmetry that canonicalised it
/// (the counts it brings are the parent's, permuted by `t`).
///
/// Packed (12 bytes for a `u64` key, not 16): records are most of a parallel depth's memory
/// traffic, written by one thread's expansion and read back by the shard's inserter.
#[derive(Clone, Copy, Debug)]
#[repr(C, packed)]
pub(crate) struct Record<K: Copy> {
    pub(crate) key: K,
    pub(crate) tag: u32,
}

impl<K: Copy> Record<K> {
    #[inline(always)]
    fn new(key: K, parent: usize, t: u8) -> Self {
        Record { key, tag: tag(parent, t) }
    }

    /// The counts it brings: its parent's (in `parents`, the slots of its chunk), carried
    /// through the symmetry that canonicalised it.
    #[inline(always)]
    pub(crate) fn counts<R: Rules<Key = K>, W: Weights>(
        &self,
        rules: &R,
        weights: W,
        parents: Tallies<'_, K, W::Count>,
    ) -> W::Count
    where
        K: PackedKey,
    {
        carried(rules, weights, parents, self.tag)
    }
}

/// A successor's `parent << 3 | t` (see [`Record`]).
#[inline(always)]
fn tag(parent: usize, t: u8) -> u32 {
    (parent as u32) << 3 | u32::from(t)
}

/// The counts a successor tagged `tag` brings: its parent's (in `parents`, the slots of its
/// chunk), carried through the symmetry that canonicalised it.
#[inline(always)]
fn carried<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    parents: Tallies<'_, R::Key, W::Count>,
    tag: u32,
) -> W::Count {
    weights.carry(rules, &parents.get((tag >> 3) as usize), (tag & 7) as u8)
}

/// The set into which [`direct`] inserts its successors lean (see [`Batches`]): `sink`, when
/// it is one set taking them at once, for [`wide_counts`].
#[inline(always)]
fn lean_set<K: PackedKey, C: Tally>(sink: &mut impl Sink<K, C>) -> Option<&mut frontier::CountSet<K, C>> {
    sink.set_at_once().filter(|_| wide_counts::<C>())
}

/// The records of one chunk grouped by the next shard of their keys: shard `s`'s are
/// `records[starts[s]..starts[s + 1]]`, in the order they were made.
///
/// One buffer the size of what the chunk made, not a vector a shard: the positions of a chunk
/// (a range of table slots) share the top bits of their hashes, and so, under a multiplicative
/// hash, do their successors by each move: a chunk's records crowd into a few shards, and
/// room set aside for every shard is mostly left empty where it is not outgrown.
#[derive(Debug)]
pub(crate) struct Buckets<K: Copy> {
    records: Vec<Record<K>>,
    /// `shards + 1` offsets into `records`.
    starts: Vec<u32>,
}

impl<K: Copy> Default for Buckets<K> {
    fn default() -> Self {
        Buckets { records: Vec::new(), starts: Vec::new() }
    }
}

impl<K: Copy> Buckets<K> {
    /// True when the buckets have memory of their own.
    pub(crate) fn holds_memory(&self) -> bool {
        self.records.capacity() > 0 || self.starts.capacity() > 0
    }

    /// Empty buckets with room for `records` records.
    #[cfg(test)]
    pub(crate) fn with_capacity(records: usize) -> Self {
        Buckets { records: Vec::with_capacity(records), starts: Vec::new() }
    }

    /// Room for records.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.records.capacity()
    }

    /// Takes the records of `made`, grouped by their shards (`shards` of them): a counting
    /// sort, stable.
    fn group(&mut self, made: &Made<K>, shards: usize) {
        assert_eq!(made.records.len(), made.shards.len());
        let starts = &mut self.starts;
        starts.clear();
        starts.resize(shards + 1, 0);
        for &s in &made.shards {
            starts[s as usize + 1] += 1;
        }
        // `starts[s + 1]` becomes where shard `s` begins, and moves to where it ends as its
        // records are placed: then `starts[s]..starts[s + 1]` is shard `s`.
        let mut sum = 0;
        for at in &mut starts[1..] {
            (*at, sum) = (sum, sum + *at);
        }
        self.records.clear();
        let Some(&first) = made.records.first() else { return };
        self.records.resize(made.records.len(), first);
        for (&r, &s) in made.records.iter().zip(&made.shards) {
            let at = &mut starts[s as usize + 1];
            self.records[*at as usize] = r;
            *at += 1;
        }
    }
}

/// How [`expand`] buckets a chunk's records: by the next frontier's shard of their keys (its
/// top `shard_bits` hash bits), with room for `per_slot` records a slot of the chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bucketing {
    pub(crate) shard_bits: u32,
    pub(crate) per_slot: f64,
}

impl Bucketing {
    /// Room for the records of a chunk of `slots` slots: those expected, with a margin over
    /// the last depth's.
    pub(crate) fn room(&self, slots: usize) -> usize {
        (slots as f64 * self.per_slot * 1.25) as usize + 64
    }
}

/// A thread's scratch for [`expand`]: a chunk's records as they are made, each with its next
/// shard, before they are grouped into the chunk's [`Buckets`].
#[derive(Debug)]
pub(crate) struct Made<K: Copy> {
    records: Vec<Record<K>>,
    shards: Vec<u16>,
}

impl<K: Copy> Default for Made<K> {
    fn default() -> Self {
        Made { records: Vec::new(), shards: Vec::new() }
    }
}

impl<K: Copy> Made<K> {
    /// Empties the scratch, with room for `records` records: a buffer that grows reallocates,
    /// and with some allocators (musl's) every reallocation of a large block maps and unmaps
    /// memory, flushing the other threads' TLBs.
    fn start(&mut self, records: usize) {
        self.records.clear();
        self.shards.clear();
        self.records.reserve(records);
        self.shards.reserve(records);
    }

    /// Adds `record`, for next shard `shard`.
    #[inline(always)]
    fn push(&mut self, record: Record<K>, shard: u16) {
        self.records.push(record);
        self.shards.push(shard);
    }
}

/// A piece of the current frontier, one shard's table slots `start..end`, and what expanding
/// it produced (`S`: the weights' sum of ended paths).
#[derive(Debug)]
pub(crate) struct Chunk<K: Copy, S> {
    pub(crate) shard: usize,
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// The records for each next shard, in generation order ([`expand`]'s). They keep their
    /// memory from depth to depth.
    pub(crate) buckets: Buckets<K>,
    /// Hashes of the paths that ended in this chunk (full successors, or the last depth).
    pub(crate) acc: S,
    /// In a step over the last two depths ([`last_two`]): hashes of the paths that end at the
    /// last one.
    pub(crate) beyond: S,
    /// Paths that ended on a full successor in this chunk.
    pub(crate) ended_paths: u32,
    /// In a step over the last two depths: the successors that were not full.
    pub(crate) records: usize,
    /// With board counting: the full successors, as records.
    pub(crate) full: Vec<Record<K>>,
}

impl<K: Copy, S: Tally> Chunk<K, S> {
    pub(crate) fn new() -> Self {
        Chunk {
            shard: 0,
            start: 0,
            end: 0,
            buckets: Buckets::default(),
            acc: S::zero(),
            beyond: S::zero(),
            ended_paths: 0,
            records: 0,
            full: Vec::new(),
        }
    }

    pub(crate) fn bucketed(&self) -> usize {
        self.buckets.records.len()
    }

    /// The records for next shard `s`.
    fn bucket(&self, s: usize) -> &[Record<K>] {
        let b = &self.buckets;
        &b.records[b.starts[s] as usize..b.starts[s + 1] as usize]
    }

    /// The counts in the chunk's slots (what its records' parent indexes point into).
    #[inline(always)]
    pub(crate) fn parents<'a, C: Tally>(&self, cur: &'a Frontier<K, C>) -> Tallies<'a, K, C>
    where
        K: PackedKey,
    {
        cur.shards()[self.shard].tallies(self.start..self.end)
    }

    /// The chunk's positions: each one's slot index in the chunk, key and counts.
    #[inline(always)]
    pub(crate) fn positions<'a, C: Tally>(
        &self,
        cur: &'a Frontier<K, C>,
    ) -> impl Iterator<Item = (usize, K, C)> + 'a
    where
        K: PackedKey,
    {
        cur.shards()[self.shard].entries(self.start..self.end)
    }
}

/// The hash of a start board that ends every path itself (depth 0, or full), as lanes.
pub(crate) fn own_hash<R: Rules>(rules: &R, s: R::Key) -> Counts {
    let mut lanes = [0; 8];
    lanes[0] = rules.hashes(s)[0];
    lanes
}

pub(crate) fn add(a: &mut Counts, b: &Counts) {
    for g in 0..8 {
        a[g] = a[g].wrapping_add(b[g]);
    }
}

/// The successors of the next [`Rules::MANY`] positions of `positions` (from
/// [`Chunk::positions`]), through [`Rules::successors_of_many`], into the front of `succ`, each
/// with its parent's tag in `from`: the parent's slot index in the chunk `<< 1`, bit 0 set
/// when the parent may fill the board ([`Rules::may_fill`]). Returns how many, or `None` when
/// no position is left.
#[inline(always)]
fn next_successors<R: Rules, C: Tally>(
    rules: &R,
    positions: &mut impl Iterator<Item = (usize, R::Key, C)>,
    succ: &mut [R::Key],
    from: &mut [u32],
) -> Option<usize> {
    let (mut keys, mut tags) = ([R::Key::ZERO; MANY_MAX], [0u32; MANY_MAX]);
    let mut got = 0;
    for (i, k, _) in positions.take(R::MANY) {
        (keys[got], tags[got]) = (k, (i as u32) << 1 | rules.may_fill(k) as u32);
        got += 1;
    }
    // Not `bool::then` with a closure: a closure does not inherit the kernel's instruction
    // set, and the generator's intrinsics in it would be calls.
    if got == 0 {
        None
    } else {
        Some(rules.successors_of_many(&keys[..got], &tags[..got], succ, from))
    }
}

/// Expands one chunk: full successors into `c.acc`, the others as records, made into a
/// thread's scratch `made` and then grouped into `c.buckets` by the shard of their canonical
/// key, as `bucketing` says.
#[inline(always)]
pub(crate) fn expand<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    c: &mut Chunk<R::Key, W::Sum>,
    made: &mut Made<R::Key>,
    bucketing: Bucketing,
    count_boards: bool,
) {
    let shard_bits = bucketing.shard_bits;
    const { assert!(R::MANY * R::BUFFER <= SUCCESSORS && R::MANY <= MANY_MAX) };
    assert!(shard_bits <= u16::BITS, "a shard index fits in a u16");
    let mut succ = successor_buffer::<R>();
    let mut from = [0u32; SUCCESSORS];
    // The canonical forms of each batch of successors, made at once (`Rules::canonical_many`).
    let (mut canonical, mut symmetry) = (successor_buffer::<R>(), [0u8; SUCCESSORS]);
    made.start(bucketing.room(c.end - c.start));
    c.full.clear();
    let mut acc = W::Sum::zero();
    let mut paths = 0u32;
    let cur_shard = &cur.shards()[c.shard];
    let parents = cur_shard.tallies(c.start..c.end);
    let mut positions = cur_shard.entries(c.start..c.end);
    while let Some(m) = next_successors(rules, &mut positions, &mut succ, &mut from) {
        rules.canonical_many(&succ[..m], &mut canonical, &mut symmetry);
        for ((&s, &f), (&key, &t)) in succ[..m].iter().zip(&from[..m]).zip(canonical.iter().zip(&symmetry)) {
            let i = (f >> 1) as usize;
            if f & 1 != 0 && rules.is_full(s) {
                let n = parents.get(i);
                weights.end(&mut acc, &n, &rules.hashes(s));
                paths = paths.wrapping_add(weights.paths(&n));
                if count_boards {
                    c.full.push(Record::new(key, i, t));
                }
            } else {
                made.push(Record::new(key, i, t), shard_of(&key, shard_bits) as u16);
            }
        }
    }
    c.buckets.group(made, 1 << shard_bits);
    c.acc = acc;
    c.ended_paths = paths;
}

/// Where [`direct`] puts the successors it keeps: the next frontier's only set (one thread), a
/// thread's [`Owned`] shards, or a [`Routed`] split between the memory home and the outbox.
pub(crate) trait Sink<K, C> {
    /// Hints the CPU to fetch the slot of a key whose hash is `hash`, when the sink keeps
    /// that key in a set of its own.
    fn prefetch_hash(&self, hash: u64);

    /// Whether [`Sink::prefetch_hash`] pays: not into a set small enough to stay in the
    /// caches ([`frontier::CountSet::worth_prefetching`]).
    #[inline(always)]
    fn worth_prefetching(&self) -> bool {
        true
    }

    /// Takes a batch of (hash, key, counts) whose slots were prefetched: inserts those it
    /// keeps, passes the others on. It may reorder the batch.
    fn insert(&mut self, batch: &mut [(u64, K, C)]);

    /// [`Sink::insert`] of the first `len` items of `batch`, a buffer the caller fills by
    /// index: a sink that keeps the items for later may take the buffer itself and leave
    /// another of the same length in its place, instead of copying them.
    #[inline(always)]
    fn insert_buffer(&mut self, batch: &mut Batch<K, C>, len: usize) {
        self.insert(&mut batch[..len]);
    }

    /// The set the sink is, when it is one set that takes every successor as it comes: a
    /// batch for it may then give each successor's parent and symmetry instead of its counts
    /// (see [`direct`]).
    #[inline(always)]
    fn set_at_once(&mut self) -> Option<&mut frontier::CountSet<K, C>>
    where
        K: PackedKey,
        C: Tally,
    {
        None
    }
}

impl<K: PackedKey, C: Tally> Sink<K, C> for frontier::CountSet<K, C> {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        frontier::CountSet::prefetch_hash(self, hash);
    }

    #[inline(always)]
    fn worth_prefetching(&self) -> bool {
        frontier::CountSet::worth_prefetching(self)
    }

    #[inline(always)]
    fn insert(&mut self, batch: &mut [(u64, K, C)]) {
        self.insert_prefetched(batch, |r| r.0, |r| r.1, |r| r.2);
    }

    #[inline(always)]
    fn set_at_once(&mut self) -> Option<&mut frontier::CountSet<K, C>> {
        Some(self)
    }
}

impl<K, C, S: Sink<K, C>> Sink<K, C> for &mut S {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        (**self).prefetch_hash(hash);
    }

    #[inline(always)]
    fn worth_prefetching(&self) -> bool {
        (**self).worth_prefetching()
    }

    #[inline(always)]
    fn insert(&mut self, batch: &mut [(u64, K, C)]) {
        (**self).insert(batch)
    }

    #[inline(always)]
    fn insert_buffer(&mut self, batch: &mut Batch<K, C>, len: usize) {
        (**self).insert_buffer(batch, len)
    }

    #[inline(always)]
    fn set_at_once(&mut self) -> Option<&mut frontier::CountSet<K, C>>
    where
        K: PackedKey,
        C: Tally,
    {
        (**self).set_at_once()
    }
}

/// A [`Sink`] for a depth whose partitions do not all stay in memory: successors of the
/// partitions kept in memory go into `set`, the others to the depth's
/// [`Outbox`](crate::home::Outbox), through this thread's [`Sender`].
pub(crate) struct Routed<'a, 's, K: Pod + Eq + Send + Sync, C: Tally, S> {
    /// Where the successors kept in memory go.
    pub set: S,
    /// Where the others go.
    pub sender: Sender<'a, K, C>,
    /// The thread's buffers, reused from batch to batch.
    pub split: &'s mut Split<K, C>,
}

impl<K: PackedKey, C: Tally, S: Sink<K, C>> Sink<K, C> for Routed<'_, '_, K, C, S> {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        // A successor sent away prefetches the slot of hash 0 instead, already in the caches:
        // no branch (see `Outbox::route`).
        let kept = self.sender.route(hash) == HOME;
        self.set.prefetch_hash(std::hint::select_unpredictable(kept, hash, 0));
    }

    #[inline(always)]
    fn insert(&mut self, batch: &mut [(u64, K, C)]) {
        let kept = self.split.route(&mut self.sender, batch.iter().copied());
        self.set.insert(kept)
    }
}

/// A thread's buffers for splitting successors between the memory home and the rest
/// ([`Split::route`]).
#[derive(Debug)]
pub(crate) struct Split<K, C> {
    /// The successors kept (hash, key, counts), at the front.
    kept: Batch<K, C>,
    /// The others (where to, key, counts), at the front.
    away: Vec<(usize, K, C)>,
}

impl<K, C> Default for Split<K, C> {
    fn default() -> Self {
        Split { kept: Vec::new(), away: Vec::new() }
    }
}

impl<K: PackedKey, C: Tally> Split<K, C> {
    /// Sends the successors `items` (hash, key, counts) that do not go into the memory home
    /// through `sender`, and returns the others. Branch-free: each successor is written to the
    /// ends of both lists, and only the one it belongs to grows (see `Outbox::route`).
    #[inline(always)]
    pub(crate) fn route(
        &mut self,
        sender: &mut Sender<'_, K, C>,
        items: impl ExactSizeIterator<Item = (u64, K, C)>,
    ) -> &mut [(u64, K, C)] {
        let n = items.len();
        if self.kept.len() < n {
            self.kept.resize(n, (0, K::ZERO, C::zero()));
            self.away.resize(n, (0, K::ZERO, C::zero()));
        }
        let (mut kept, mut away) = (0, 0);
        for (hash, key, counts) in items {
            let to = sender.route(hash);
            self.kept[kept] = (hash, key, counts);
            self.away[away] = (to, key, counts);
            kept += usize::from(to == HOME);
            away += usize::from(to != HOME);
        }
        for (to, key, counts) in &self.away[..away] {
            sender.push(*to, key, counts);
        }
        &mut self.kept[..kept]
    }
}

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
const POST_BLOCK: usize = 512;

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
fn in_shard(hash: u64, shard_bits: u32, s: usize) -> bool {
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
fn pause(waits: &mut u32) {
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
fn lock_spinning<T>(lock: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    let mut waits = 0u32;
    loop {
        match lock.try_lock() {
            Ok(guard) => return guard,
            Err(std::sync::TryLockError::Poisoned(e)) => return e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => pause(&mut waits),
        }
    }
}

/// Successors gathered (from as many positions as it takes) before they are canonicalised,
/// their slots prefetched, and inserted (with their counts) as one batch: by the time the
/// batch is inserted, its slots have arrived.
const DIRECT_BATCH: usize = 192;

/// [`direct`]'s batch of successors: hash, canonical key and counts.
pub(crate) type Batch<K, C> = Vec<(u64, K, C)>;

/// A thread's buffers for [`direct`]'s batches, kept from chunk to chunk: with counts, or
/// lean (hash, canonical key and `parent << 3 | t`, as in a [`Record`]), for counts larger
/// than 8 bytes going into a [`Sink::set_at_once`]. A lean successor is a third of the bytes
/// of one with eight lanes, and its counts are permuted as they go in, from a parent whose
/// slot a few successors before it brought into the nearest cache.
pub(crate) struct Batches<K, C> {
    /// Successors with their counts.
    counted: Batch<K, C>,
    /// Lean successors.
    lean: Vec<(u64, K, u32)>,
    /// The canonical forms of a batch's successors and their symmetries, made at once
    /// ([`Rules::canonical_many`]).
    canonical: (Vec<K>, Vec<u8>),
}

impl<K, C> Default for Batches<K, C> {
    fn default() -> Self {
        Batches { counted: Vec::new(), lean: Vec::new(), canonical: (Vec::new(), Vec::new()) }
    }
}

/// Expands one chunk straight into the next frontier's only set (the one-thread path): full
/// successors into `c.acc` (and `c.full` when counting boards), the others canonicalised and
/// inserted in batches. Returns the number of successors inserted.
///
/// The positions are handed to [`Rules::successors_of_many`] [`Rules::MANY`] at a time, and
/// the successors of consecutive positions gather in one buffer, each tagged with its parent,
/// until a batch is full; a batch is then handled in one loop over the buffer. A loop a
/// position would end at a different count each time: a mispredicted branch a position.
/// Its successor loop repeats [`expand`]'s on purpose: one loop generic over what happens to
/// a successor (closures over a sink) is slower on this path.
#[inline(always)]
pub(crate) fn direct<R: Rules, W: Weights, S: Sink<R::Key, W::Count>>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    c: &mut Chunk<R::Key, W::Sum>,
    set: &mut S,
    batches: &mut Batches<R::Key, W::Count>,
    count_boards: bool,
) -> usize {
    const { assert!(DIRECT_BATCH + R::MANY * R::BUFFER <= SUCCESSORS && R::MANY <= MANY_MAX) };
    let mut succ = successor_buffer::<R>();
    // Successor j came from parent slot `from[j] >> 1`, which may fill the board when bit 0 is
    // set (one empty cell: see `Rules::may_fill`).
    let mut from = [0u32; SUCCESSORS];
    let mut full = std::mem::take(&mut c.full);
    full.clear();
    // Written by index below, never read past what was written.
    batches.canonical.0.resize(DIRECT_BATCH + R::MANY * R::BUFFER, R::Key::ZERO);
    batches.canonical.1.resize(DIRECT_BATCH + R::MANY * R::BUFFER, 0);
    if lean_set(set).is_some() {
        batches.lean.resize(DIRECT_BATCH + R::MANY * R::BUFFER, (0, R::Key::ZERO, 0));
    } else {
        batches.counted.resize(DIRECT_BATCH + R::MANY * R::BUFFER, (0, R::Key::ZERO, W::Count::zero()));
    }
    let mut out = Expanded { parents: c.parents(cur), acc: W::Sum::zero(), paths: 0, records: 0, full };
    let mut m = 0;
    let mut positions = c.positions(cur);
    while let Some(n) = next_successors(rules, &mut positions, &mut succ[m..], &mut from[m..]) {
        m += n;
        if m >= DIRECT_BATCH {
            out.flush(rules, weights, &succ[..m], &from[..m], set, batches, count_boards);
            m = 0;
        }
    }
    out.flush(rules, weights, &succ[..m], &from[..m], set, batches, count_boards);
    (c.full, c.acc, c.ended_paths) = (out.full, out.acc, out.paths);
    out.records
}

/// What [`direct`] has made of a chunk so far.
struct Expanded<'a, K: PackedKey, C: Tally, S> {
    /// The chunk's slots.
    parents: Tallies<'a, K, C>,
    /// Σ counts × hashes of the paths ended on full boards.
    acc: S,
    /// Paths ended on full boards.
    paths: u32,
    /// Successors inserted.
    records: usize,
    /// The full successors (when counting boards).
    full: Vec<Record<K>>,
}

impl<K: PackedKey, C: Tally, S> Expanded<'_, K, C, S> {
    /// Handles the successors in `succ` (successor j from parent `from[j] >> 1`, which may
    /// fill the board when bit 0 is set): all are canonicalised at once; the full ones end
    /// their paths, the others have their slots prefetched (where that pays) and are then
    /// inserted: lean into a [`lean_set`] (in a loop of its own: one loop with a branch on a
    /// constant, or over a closure that stores a successor, is slower), else with their
    /// counts.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn flush<R: Rules<Key = K>, W: Weights<Count = C, Sum = S>, T: Sink<K, C>>(
        &mut self,
        rules: &R,
        weights: W,
        succ: &[K],
        from: &[u32],
        set: &mut T,
        batches: &mut Batches<K, C>,
        count_boards: bool,
    ) {
        // Asked once a batch: a set small enough to stay in the caches is not prefetched.
        let far = set.worth_prefetching();
        // Every successor's canonical form at once, the full ones' too (which only counting
        // boards uses: they are few).
        let (canonical, symmetry) =
            (&mut batches.canonical.0[..succ.len()], &mut batches.canonical.1[..succ.len()]);
        rules.canonical_many(succ, canonical, symmetry);
        let canonical = canonical.iter().zip(symmetry.iter());
        if let Some(set) = lean_set(set) {
            let mut len = 0;
            for ((&s, &f), (&key, &t)) in succ.iter().zip(from).zip(canonical) {
                let i = (f >> 1) as usize;
                if f & 1 != 0 && rules.is_full(s) {
                    self.end(rules, weights, s, (key, t), i, count_boards);
                } else {
                    let hash = frontier::key_hash(&key);
                    if far {
                        set.prefetch_hash(hash);
                    }
                    batches.lean[len] = (hash, key, tag(i, t));
                    len += 1;
                }
            }
            self.records += len;
            let parents = self.parents;
            let counts = |r: &(u64, K, u32)| carried(rules, weights, parents, r.2);
            return set.insert_prefetched(&batches.lean[..len], |r| r.0, |r| r.1, counts);
        }
        let mut len = 0;
        for ((&s, &f), (&key, &t)) in succ.iter().zip(from).zip(canonical) {
            let i = (f >> 1) as usize;
            if f & 1 != 0 && rules.is_full(s) {
                self.end(rules, weights, s, (key, t), i, count_boards);
            } else {
                let hash = frontier::key_hash(&key);
                if far {
                    set.prefetch_hash(hash);
                }
                batches.counted[len] = (hash, key, weights.carry(rules, &self.parents.get(i), t));
                len += 1;
            }
        }
        self.records += len;
        set.insert_buffer(&mut batches.counted, len)
    }

    /// Ends the paths at the full successor `s` of parent `i`, whose canonical form and
    /// symmetry are `canonical` (kept when counting boards).
    #[inline(always)]
    fn end<R: Rules<Key = K>, W: Weights<Count = C, Sum = S>>(
        &mut self,
        rules: &R,
        weights: W,
        s: K,
        (key, t): (K, u8),
        i: usize,
        count_boards: bool,
    ) {
        let n = self.parents.get(i);
        weights.end(&mut self.acc, &n, &rules.hashes(s));
        self.paths = self.paths.wrapping_add(weights.paths(&n));
        if count_boards {
            self.full.push(Record::new(key, i, t));
        }
    }
}

/// Fills next shard `s` from every chunk's records for it, in chunk order; with an `outbox`,
/// the records of partitions kept on disk go there instead, with their counts.
#[inline(always)]
pub(crate) fn insert<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    chunks: &[Chunk<R::Key, W::Sum>],
    s: usize,
    set: &mut frontier::CountSet<R::Key, W::Count>,
    outbox: Option<&Outbox<R::Key, W::Count>>,
) {
    let Some(outbox) = outbox else {
        for c in chunks {
            let parents = c.parents(cur);
            set.insert_many(c.bucket(s), |r| r.key, |r| r.counts(rules, weights, parents));
        }
        return;
    };
    let mut split = Split::default();
    let mut sender = outbox.sender();
    for c in chunks {
        let parents = c.parents(cur);
        let items =
            c.bucket(s).iter().map(|r| (key_hash(&{ r.key }), r.key, r.counts(rules, weights, parents)));
        let kept = split.route(&mut sender, items);
        set.insert_many(kept, |r| r.1, |r| r.2);
    }
}

/// The last two depths over one chunk, the successors of its positions never canonicalised
/// or stored: a full one ends its paths at once (`c.acc`, `c.ended_paths`), any other ends
/// them through its own successors, whose hashes come summed from the tables
/// ([`Weights::end_successors_of_many`], as in [`last`]) into `c.beyond`. A successor `s` of the
/// stored `k` is reached as `g(s)` by the paths that reached `g(k)`, so the parent's counts
/// apply to `s`'s own lanes unpermuted. `c.records` counts the successors that are not full
/// (the records a stored depth would have made).
///
/// As in [`direct`], positions go to [`Rules::successors_of_many`] [`Rules::MANY`] at a time;
/// the successors that are not full gather (with their parent's slot) until `MANY` of them
/// go to [`Rules::successor_hashes_of_many`] at once.
#[inline(always)]
pub(crate) fn last_two<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    c: &mut Chunk<R::Key, W::Sum>,
) {
    const { assert!(R::MANY * R::BUFFER <= SUCCESSORS && R::MANY <= MANY_MAX) };
    if W::TOTALS && rules.fused_successor_totals() {
        return last_two_totals(rules, weights, cur, c);
    }
    let parents = c.parents(cur);
    let mut succ = successor_buffer::<R>();
    let mut from = [0u32; SUCCESSORS];
    // Successors not full yet to be summed, each with its parent's slot.
    let (mut open, mut open_from) = ([R::Key::ZERO; MANY_MAX], [0u32; MANY_MAX]);
    let (mut acc, mut beyond, mut paths, mut records) = (W::Sum::zero(), W::Sum::zero(), 0u32, 0);
    let mut pending = 0;
    let mut positions = c.positions(cur);
    while let Some(m) = next_successors(rules, &mut positions, &mut succ, &mut from) {
        for (&s, &f) in succ[..m].iter().zip(&from[..m]) {
            let i = f >> 1;
            if f & 1 != 0 && rules.is_full(s) {
                let n = parents.get(i as usize);
                weights.end(&mut acc, &n, &rules.hashes(s));
                paths = paths.wrapping_add(weights.paths(&n));
            } else {
                (open[pending], open_from[pending]) = (s, i);
                pending += 1;
                if pending == R::MANY {
                    let count = |j: usize| parents.get(open_from[j] as usize);
                    weights.end_successors_of_many(rules, &mut beyond, &open[..pending], count);
                    records += pending;
                    pending = 0;
                }
            }
        }
    }
    let count = |j: usize| parents.get(open_from[j] as usize);
    weights.end_successors_of_many(rules, &mut beyond, &open[..pending], count);
    records += pending;
    (c.acc, c.beyond, c.ended_paths, c.records) = (acc, beyond, paths, records);
}

/// [`last_two`] a position at a time, through [`Rules::successor_totals`] (each successor's
/// total found from its parent's), for counts that need only totals ([`Weights::TOTALS`]).
#[inline(always)]
fn last_two_totals<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    c: &mut Chunk<R::Key, W::Sum>,
) {
    let (mut acc, mut beyond, mut paths, mut records) = (W::Sum::zero(), W::Sum::zero(), 0u32, 0);
    for (_, k, n) in c.positions(cur) {
        let (total, open) = rules.successor_totals(k, |t| {
            weights.end(&mut acc, &n, &rules.hashes(t));
            paths = paths.wrapping_add(weights.paths(&n));
        });
        weights.end_totals(&mut beyond, &n, total);
        records += open as usize;
    }
    (c.acc, c.beyond, c.ended_paths, c.records) = (acc, beyond, paths, records);
}

/// The last depth over one chunk: `c.acc` = Σ counts × summed successor hashes.
#[inline(always)]
pub(crate) fn last<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    c: &mut Chunk<R::Key, W::Sum>,
) {
    let mut acc = W::Sum::zero();
    for (_, k, n) in c.positions(cur) {
        weights.end_successors(rules, &mut acc, &n, k);
    }
    c.acc = acc;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chunk's buckets hold every record made, each in its shard's bucket, in the order
    /// made; shards that got none have empty buckets; grouping again reuses the buffer.
    #[test]
    fn buckets_group_records_by_shard_in_the_order_made() {
        let mut made = Made::<u32>::default();
        let mut buckets = Buckets::default();
        for (round, shards) in [(0u32, 16usize), (1, 4), (2, 1), (3, 64)] {
            made.start(0);
            let mut x = 12345u32 + round;
            for i in 0..1000u32 {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                // Crowded, as real chunks are: most records in a few shards.
                let s = if x.is_multiple_of(4) {
                    (x >> 8) as usize % shards
                } else {
                    (x >> 8) as usize % 2 % shards
                };
                made.push(Record { key: x, tag: i }, s as u16);
            }
            buckets.group(&made, shards);
            assert_eq!(buckets.records.len(), made.records.len());
            let chunk = Chunk::<u32, u64> { buckets, ..Chunk::new() };
            for s in 0..shards {
                let want: Vec<(u32, u32)> = made
                    .records
                    .iter()
                    .zip(&made.shards)
                    .filter(|(_, &t)| t as usize == s)
                    .map(|(r, _)| (r.key, r.tag))
                    .collect();
                let got: Vec<(u32, u32)> = chunk.bucket(s).iter().map(|r| (r.key, r.tag)).collect();
                assert_eq!(got, want, "round {round}, shard {s}");
            }
            buckets = chunk.buckets;
        }
        made.start(0);
        buckets.group(&made, 8);
        assert_eq!(buckets.records.len(), 0);
        assert_eq!(buckets.starts, vec![0; 9]);
    }

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

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

use frontier::{key_hash, shard_of, Frontier, Tallies, Tally};
use state::{Counts, PackedKey, Rules};

use crate::home::Outbox;
use crate::weights::{wide_counts, Weights, MANY_MAX};

mod lock;
mod owned;
mod sink;

pub(crate) use lock::{OneLock, Waiting};
pub(crate) use owned::{Deal, Letters, Lined, Owned, Post};
pub(crate) use sink::{Routed, Sink, Split};

/// What every kernel of a depth reads: the rules, the counting, the source being expanded,
/// and whether full boards are kept (to count boards).
pub(crate) struct Ctx<'a, R: Rules, W: Weights> {
    pub rules: &'a R,
    pub weights: W,
    pub cur: &'a Frontier<R::Key, W::Count>,
    pub count_boards: bool,
}

impl<R: Rules, W: Weights> Clone for Ctx<'_, R, W> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: Rules, W: Weights> Copy for Ctx<'_, R, W> {}

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
    x: Ctx<'_, R, W>,
    c: &mut Chunk<R::Key, W::Sum>,
    made: &mut Made<R::Key>,
    bucketing: Bucketing,
) {
    let Ctx { rules, weights, cur, count_boards } = x;
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

/// Expands one chunk straight into a [`Sink`] (the next set on one thread; on several, a
/// thread's owned shards or the one locked set; or a routed split): full successors into
/// `c.acc` (and `c.full` when counting boards), the others canonicalised and inserted in
/// batches. Returns the number of successors inserted.
///
/// The positions are handed to [`Rules::successors_of_many`] [`Rules::MANY`] at a time, and
/// the successors of consecutive positions gather in one buffer, each tagged with its parent,
/// until a batch is full; a batch is then handled in one loop over the buffer. A loop a
/// position would end at a different count each time: a mispredicted branch a position.
/// Its successor loop repeats [`expand`]'s on purpose: one loop generic over what happens to
/// a successor (closures over a sink) is slower on this path.
#[inline(always)]
pub(crate) fn direct<R: Rules, W: Weights, S: Sink<R::Key, W::Count>>(
    x: Ctx<'_, R, W>,
    c: &mut Chunk<R::Key, W::Sum>,
    set: &mut S,
    batches: &mut Batches<R::Key, W::Count>,
) -> usize {
    let Ctx { rules, weights, cur, count_boards } = x;
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
    x: Ctx<'_, R, W>,
    chunks: &[Chunk<R::Key, W::Sum>],
    s: usize,
    set: &mut frontier::CountSet<R::Key, W::Count>,
    outbox: Option<&Outbox<R::Key, W::Count>>,
) {
    let Ctx { rules, weights, cur, .. } = x;
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
pub(crate) fn last_two<R: Rules, W: Weights>(x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>) {
    let Ctx { rules, weights, cur, .. } = x;
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
pub(crate) fn last<R: Rules, W: Weights>(x: Ctx<'_, R, W>, c: &mut Chunk<R::Key, W::Sum>) {
    let Ctx { rules, weights, cur, .. } = x;
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
}

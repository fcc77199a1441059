//! The per-depth breadth-first search over canonical positions, generic over [`Rules`].
//!
//! One depth, from the current frontier to the next:
//! 1. **expand** (parallel over chunks of the current frontier): every successor of every
//!    position is either full (its hashes, weighted by the parent's counts, go straight into
//!    the chunk's sum) or canonicalised and written as a record (canonical key, the parent's
//!    index in the chunk and the canonicalising symmetry) into the chunk's bucket for the
//!    shard of its key.
//! 2. **insert** (parallel over the next frontier's shards): each shard takes its bucket from
//!    every chunk, in chunk order, permutes each record's parent counts by its symmetry and
//!    merges them into its hash set. Shards are independent, so no lock is needed.
//!
//! On one thread (or a frontier too small to share out, [`PARALLEL_MIN`]) the two phases are
//! one ([`direct`]): each successor goes straight into a single set, its slot prefetched a
//! batch ahead, with no records written and read back. On several threads, a frontier whose
//! positions carry one count ([`Weights::SHARED_FILL`]) and whose keys are one atomic word
//! (up to 21 cells) is done the same way by every thread at once, into one lock-free
//! [`frontier::SharedSet`].
//!
//! At the last depth nothing is generated: each position adds its counts times the summed
//! hashes of its successors ([`Rules::successor_hashes`]). The counts a position stands for
//! are [`Weights`]: 8 lanes, or one orbit mass when every symmetry fixes the start. Chunks and
//! shards depend only on the data, and wrapping sums commute, so the answer (and every
//! statistic) is the same for any number of threads, whichever way a depth ran (a shared
//! fill's table order may depend on the threads' timing; no result does).

use std::sync::{Mutex, RwLock};
use std::time::Instant;

use frontier::{shard_of, Frontier, Slot, Tally};
use rayon::prelude::*;
use state::{Counts, PackedKey, Rules};

use crate::dispatch;
use crate::lockstep;
use crate::weights::Weights;

/// Slots of the current frontier expanded by one task (in the inline layout, a quarter to a
/// half of them hold positions; in the dense one, all).
const CHUNK_SLOTS: usize = 1 << 13;

/// Chunks expanded before their records are inserted.
const BLOCK_CHUNKS: usize = 1 << 20;

/// Room for the successors a kernel buffers ([`successor_buffer`]): those of one group of
/// positions ([`Rules::MANY`] of them, [`Rules::BUFFER`] each), after a batch not yet full.
const SUCCESSORS: usize = 1024;

/// A buffer for successors, on the stack: one reached through a struct field
/// was reloaded around the stores of every successor (public cg10, one thread: 64.9 -> 60.5 M
/// instructions). Every rules' [`Rules::BUFFER`] fits (checked when compiled).
#[inline(always)]
pub(crate) fn successor_buffer<R: Rules>() -> [R::Key; SUCCESSORS] {
    const { assert!(R::BUFFER <= SUCCESSORS) };
    [R::Key::ZERO; SUCCESSORS]
}

/// Statistics of one depth of a search.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DepthStats {
    /// The depth (number of moves played).
    pub depth: u32,
    /// Canonical positions stored at this depth (full boards are not stored; none at the last
    /// depth unless boards are counted, nor at the one before it on paths that sum the last
    /// two depths in one pass, see [`state::Rules::CHEAP_SUCCESSOR_HASHES`], unless boards are
    /// counted or every depth's answer is asked for).
    pub states: u64,
    /// With board counting: the distinct boards reached by exactly this many moves, full ones
    /// included (what the stored positions and the full boards stand for).
    pub boards: Option<u64>,
    /// Successor records generated to reach the stored positions (one per move, before
    /// merging).
    pub records: u64,
    /// Paths that ended on a full board at this depth, modulo 2^32 (all paths still going
    /// at the last depth end there too, but are not counted here).
    pub ended_paths: u32,
    /// Sum of the hashes of all paths ending at this depth (full boards reached at this depth,
    /// plus every path at the last depth), modulo 2^30.
    pub ended: u32,
    /// Wall-clock seconds spent on this depth.
    pub seconds: f64,
    /// Of which expanding the previous frontier (generating and canonicalising successors).
    pub expand_seconds: f64,
    /// Of which inserting the records into the new frontier.
    pub insert_seconds: f64,
    /// Peak resident memory of the process so far, in bytes (Linux; 0 elsewhere), as last read:
    /// it is read only after depths that took over a millisecond, at most once in 10 ms (0
    /// until then).
    pub peak_memory: u64,
    /// Bytes written to disk at this depth (frontiers on disk and checkpoints only).
    pub bytes_written: u64,
    /// Bytes read from disk at this depth.
    pub bytes_read: u64,
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
    key: K,
    tag: u32,
}

impl<K: Copy> Record<K> {
    #[inline(always)]
    fn new(key: K, parent: usize, t: u8) -> Self {
        Record { key, tag: (parent as u32) << 3 | t as u32 }
    }

    /// The counts it brings: its parent's (in `parents`, the slots of its chunk), carried
    /// through the symmetry that canonicalised it.
    #[inline(always)]
    fn counts<R: Rules<Key = K>, W: Weights>(
        &self,
        rules: &R,
        weights: W,
        parents: &[Slot<K, W::Count>],
    ) -> W::Count
    where
        K: PackedKey,
    {
        let tag = self.tag;
        weights.carry(rules, parents[(tag >> 3) as usize].count(), (tag & 7) as u8)
    }
}

/// A piece of the current frontier, one shard's table slots `start..end`, and what expanding
/// it produced (`S`: the weights' sum of ended paths).
#[derive(Debug)]
pub(crate) struct Chunk<K: Copy, S> {
    shard: usize,
    start: usize,
    end: usize,
    /// `buckets[s]`: the records for next shard `s`, in generation order. The vectors keep
    /// their memory from depth to depth.
    buckets: Vec<Vec<Record<K>>>,
    /// Hashes of the paths that ended in this chunk (full successors, or the last depth).
    acc: S,
    /// In a step over the last two depths ([`last_two`]): hashes of the paths that end at the
    /// last one.
    beyond: S,
    /// Paths that ended on a full successor in this chunk.
    ended_paths: u32,
    /// In a step over the last two depths: the successors that were not full.
    records: usize,
    /// With board counting: the full successors, as records.
    full: Vec<Record<K>>,
}

impl<K: Copy, S: Tally> Chunk<K, S> {
    fn new() -> Self {
        Chunk {
            shard: 0,
            start: 0,
            end: 0,
            buckets: Vec::new(),
            acc: S::zero(),
            beyond: S::zero(),
            ended_paths: 0,
            records: 0,
            full: Vec::new(),
        }
    }

    /// Empties the buckets, one for each of `shards`, with room for the records expected
    /// (`fanout` a position, a margin over the last depth's): a bucket that grows reallocates,
    /// and with some allocators (musl's) every reallocation of a large block maps and unmaps
    /// memory, flushing the other threads' TLBs.
    fn prepare_buckets(&mut self, shards: usize, fanout: f64) {
        self.buckets.resize_with(shards, Vec::new);
        let room = ((self.end - self.start) as f64 * fanout * 1.25) as usize / shards + 16;
        for b in &mut self.buckets {
            b.clear();
            b.reserve(room);
        }
    }

    fn bucketed(&self) -> usize {
        self.buckets.iter().map(Vec::len).sum()
    }

    /// The records for next shard `s`.
    fn bucket(&self, s: usize) -> &[Record<K>] {
        &self.buckets[s]
    }

    /// The chunk's slots (what its records' parent indexes point into).
    fn parents<'a, C: Tally>(&self, cur: &'a Frontier<K, C>) -> &'a [Slot<K, C>]
    where
        K: PackedKey,
    {
        &cur.shards()[self.shard].slots()[self.start..self.end]
    }

    /// The chunk's positions: each one's slot index in the chunk, key and counts.
    #[inline(always)]
    fn positions<'a, C: Tally>(&self, cur: &'a Frontier<K, C>) -> impl Iterator<Item = (usize, K, &'a C)> + 'a
    where
        K: PackedKey,
    {
        cur.shards()[self.shard].entries(self.start..self.end)
    }
}

/// The search state: two frontiers (current and next) and the chunk buffers, reused from
/// depth to depth.
pub(crate) struct Search<'r, R: Rules, W: Weights> {
    rules: &'r R,
    weights: W,
    cur: Frontier<R::Key, W::Count>,
    next: Frontier<R::Key, W::Count>,
    chunks: Vec<Chunk<R::Key, W::Sum>>,
    /// [`direct`]'s batches, one a worker thread, kept from chunk to chunk and depth to depth:
    /// a fresh one a chunk was a heap allocation each time, which musl's allocator maps and
    /// unmaps (12 KiB, three pages to fault; on several threads, a TLB flush of the others).
    batches: Vec<Mutex<Batch<R::Key, W::Count>>>,
    /// Positions of the last depth per position of the one before: sizes the next tables.
    growth: f64,
    /// Records (successors stored) per position at the last depth: sizes the buckets.
    fanout: f64,
    /// Seconds of the last step's expand and insert phases.
    phase_seconds: [f64; 2],
    /// Count distinct boards at every depth (costs a set of the full boards and a full last
    /// depth).
    count_boards: bool,
    /// With board counting: the full boards reached at the current depth.
    ended: frontier::CountSet<R::Key, W::Count>,
    /// The default memory limit, once read.
    default_limit: Option<u64>,
}

/// What sees each depth's statistics as soon as the depth is done (for progress reports). It
/// is `Send`: a search moves onto the thread pool when its first parallel depth comes.
pub(crate) type Observer<'a> = dyn FnMut(&DepthStats) + Send + 'a;

/// What a run computes besides the answer.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RunConfig {
    /// The answer at every depth.
    pub all_depths: bool,
    /// Distinct boards at every depth.
    pub count_boards: bool,
    /// When to stop (and report the depth reached in [`Outcome::handover`]) before a depth
    /// whose in-memory frontier would not fit.
    pub spill: Spill,
}

/// When an in-memory search hands its frontier to disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Spill {
    /// Never (the frontier is on disk already, or the caller holds it).
    #[default]
    Never,
    /// Before a depth that would need more than this many bytes.
    At(u64),
    /// At [`crate::default_memory_limit`], read only once a frontier is large enough for it
    /// to matter (it reads /proc, which small searches should not pay for).
    AtDefault,
}

/// Peak resident memory of this process in bytes (`VmHWM`), 0 where unknown.
pub fn peak_memory() -> u64 {
    status_bytes("VmHWM:").unwrap_or(0)
}

/// Resident memory of this process in bytes (`VmRSS`), where the system tells.
fn resident_memory() -> Option<u64> {
    status_bytes("VmRSS:")
}

fn status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Where a search is: the depths done and what they found, the peak memory as last read.
struct Progress {
    done: u32,
    out: Outcome,
    peak: u64,
    peak_read: Option<Instant>,
}

/// The result of a search.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// Per-lane sums of every path's final hash.
    pub total: Counts,
    /// `answers[d]`: the answer for depth `d`, when all depths were asked for.
    pub answers: Vec<u32>,
    /// Per-depth statistics, depth 0 first.
    pub stats: Vec<DepthStats>,
    /// Set when the run stopped at this depth because the next frontier would not fit in
    /// [`RunConfig::spill`]; the frontier of that depth is still in the search.
    pub handover: Option<u32>,
}

impl<'r, R: Rules, W: Weights> Search<'r, R, W> {
    pub(crate) fn new(rules: &'r R, weights: W) -> Self {
        Search {
            rules,
            weights,
            cur: Frontier::new(0),
            next: Frontier::new(0),
            chunks: Vec::new(),
            batches: Vec::new(),
            growth: 4.0,
            fanout: 8.0,
            phase_seconds: [0.0; 2],
            count_boards: false,
            ended: frontier::CountSet::new(0),
            default_limit: None,
        }
    }

    /// Every path of `depth` moves (fewer when the board fills) from `start`; `observe` sees
    /// each depth's statistics as soon as the depth is done.
    pub(crate) fn run(
        &mut self,
        start: &[u8],
        depth: u32,
        config: RunConfig,
        observe: &mut Observer<'_>,
    ) -> Outcome {
        let (rules, weights) = (self.rules, self.weights);
        self.count_boards = config.count_boards;
        let t0 = Instant::now();
        let s = rules.pack(start);
        let mut out = Outcome::default();
        let mut ended = [0u32; 8];
        let mut first = DepthStats { depth: 0, records: 1, ..DepthStats::default() };
        if depth == 0 || rules.is_full(s) {
            ended = own_hash(rules, s);
            first.ended_paths = u32::from(rules.is_full(s));
        } else {
            let (c, t) = rules.canonical(s);
            self.cur.reset(0, 1);
            self.cur.shard_mut(0).insert(c, &weights.start(rules, t));
        }
        first.states = self.cur.len() as u64;
        first.boards = config.count_boards.then_some(1);
        first.ended = state::fold_lanes(&ended);
        first.seconds = t0.elapsed().as_secs_f64();
        observe(&first);
        out.stats.push(first);
        add(&mut out.total, &ended);
        if config.all_depths {
            let mut v = ended;
            if !self.cur.is_empty() {
                let here = self.frontier_hashes();
                add(&mut v, &self.as_lanes(&here));
            }
            out.answers.push(state::fold_lanes(&v));
        }
        let mut progress = Progress { done: 0, out, peak: 0, peak_read: None };
        self.depths(&mut progress, depth, config, observe);
        let mut out = progress.out;
        if config.all_depths && out.handover.is_none() {
            // The board filled before `depth`: later depths add nothing.
            let last = *out.answers.last().expect("depth 0 is always answered");
            out.answers.resize(depth as usize + 1, last);
        }
        out
    }

    /// The depths after `p.done`, up to `depth` (or a handover to disk, in `p.out`).
    fn depths(&mut self, p: &mut Progress, depth: u32, config: RunConfig, observe: &mut Observer<'_>) {
        // Reading /proc costs tens of microseconds, a good share of a small search: the peak is
        // read only after depths that took over a millisecond (it cannot have moved much in
        // the others), at most once in `PEAK_EVERY`, so a search that quick reports none.
        while p.done < depth && !self.cur.is_empty() {
            if self.parallel() && rayon::current_thread_index().is_none() {
                // The rest runs on a pool thread, which then takes part in every parallel
                // phase itself: each wakes one thread fewer than a call from outside the pool
                // (small searches never get here, nor start the pool).
                return rayon::scope(|_| self.depths(p, depth, config, observe));
            }
            let d = p.done;
            if R::CHEAP_SUCCESSOR_HASHES && d + 2 == depth && !self.count_boards && !config.all_depths {
                // The last two depths in one pass: nothing stored, nothing to spill.
                for (mut stats, sum) in self.last_two(d) {
                    add(&mut p.out.total, &self.as_lanes(&sum));
                    stats.ended = self.weights.answer(&sum);
                    stats.peak_memory = p.peak;
                    observe(&stats);
                    p.out.stats.push(stats);
                }
                break;
            }
            let last = d + 1 == depth;
            if !last && self.over_limit(config.spill) {
                p.out.handover = Some(d);
                return;
            }
            let d = d + 1;
            p.done = d;
            let t = Instant::now();
            let mut stats = DepthStats { depth: d, ..DepthStats::default() };
            let ended = if last && !self.count_boards {
                self.last_depth()
            } else {
                let (mut ended, states, records) = self.step(&mut stats);
                stats.states = states;
                stats.records = records;
                if last {
                    // Counting boards: the last depth was generated; its positions end here.
                    ended = ended.merge(self.frontier_hashes());
                }
                ended
            };
            let ended = self.as_lanes(&ended);
            add(&mut p.out.total, &ended);
            if config.all_depths {
                let here = if last { W::Sum::zero() } else { self.frontier_hashes() };
                let mut v = p.out.total;
                add(&mut v, &self.as_lanes(&here));
                p.out.answers.push(state::fold_lanes(&v));
            }
            stats.ended = state::fold_lanes(&ended);
            stats.seconds = t.elapsed().as_secs_f64();
            stats.expand_seconds = self.phase_seconds[0];
            stats.insert_seconds = self.phase_seconds[1];
            if stats.seconds > 1e-3 && p.peak_read.map_or(true, |r| r.elapsed() >= PEAK_EVERY) {
                p.peak = peak_memory();
                p.peak_read = Some(Instant::now());
            }
            stats.peak_memory = p.peak;
            observe(&stats);
            p.out.stats.push(stats);
        }
    }

    /// A sum of ended paths as lanes whose folded sum is its answer.
    fn as_lanes(&self, sum: &W::Sum) -> Counts {
        let mut lanes = [0; 8];
        lanes[0] = self.weights.answer(sum);
        lanes
    }

    /// Positions of the last depth per position of the one before.
    pub(crate) fn growth(&self) -> f64 {
        self.growth
    }

    /// Estimated bytes of memory the process will hold during the next depth: what it holds
    /// now (resident memory, where the system tells) grown as the frontier grows, or else
    /// [`Search::counted_bytes`].
    fn next_bytes(&self, limit: u64) -> f64 {
        let counted = self.counted_bytes();
        if counted < limit as f64 / 16.0 {
            // Far below the limit (what is resident runs at most a few times over the count):
            // not worth reading /proc at every depth.
            return counted;
        }
        // A depth's peak (both frontiers and the records in flight) runs up to ~1.7x over
        // what stays resident after it.
        match resident_memory() {
            Some(rss) => counted.max(rss as f64 * self.growth.max(1.0) * 1.8),
            None => counted,
        }
    }

    /// Both frontiers (at most twice [`position_bytes`] a position: tables are sized with a
    /// margin, up to a power of two) and the records in flight of the next depth, counted
    /// from the frontier's size.
    fn counted_bytes(&self) -> f64 {
        let key = std::mem::size_of::<R::Key>() as f64;
        let position = position_bytes::<R::Key, W::Count>() as f64;
        let (cur, next) = (self.cur.len() as f64, self.cur.len() as f64 * self.growth);
        (cur + next) * 2.0 * position + next * 5.0 * (key + 4.0)
    }

    /// True when the next depth would not fit under `spill`'s limit.
    fn over_limit(&mut self, spill: Spill) -> bool {
        let limit = match spill {
            Spill::Never => return false,
            Spill::At(limit) => limit,
            // The default is a share of physical memory, far above a small search.
            Spill::AtDefault if self.counted_bytes() < SMALL_BYTES => return false,
            Spill::AtDefault => *self.default_limit.get_or_insert_with(crate::default_memory_limit),
        };
        self.next_bytes(limit) > limit as f64
    }
    /// The current frontier with 8 lanes of counts (the disk search's form), the rest of the
    /// search's memory released.
    pub(crate) fn into_frontier(self) -> Frontier<R::Key, Counts> {
        let (rules, weights) = (self.rules, self.weights);
        let mut lanes = Frontier::new(self.cur.shard_bits());
        for (s, set) in self.cur.shards().iter().enumerate() {
            let out = lanes.shard_mut(s);
            out.reset(self.cur.shard_bits(), set.len());
            for (k, n) in set.iter() {
                out.insert(k, &weights.lanes(rules, k, n));
            }
        }
        lanes
    }

    /// Lays the current frontier's tables out as chunks of at most [`CHUNK_SLOTS`] slots, cut
    /// also at every `1/shares` of the slots (of the positions, in the dense layout; about so
    /// in the inline one): a pass spread over `shares` threads then has that many chunks at
    /// least, of even sizes, however small the frontier.
    fn plan_chunks(&mut self, shares: usize) {
        let total: usize = self.cur.shards().iter().filter(|s| !s.is_empty()).map(|s| s.slots().len()).sum();
        let cut = |t: usize| total * t / shares;
        let (mut n, mut base, mut share) = (0, 0, 1);
        for (shard, set) in self.cur.shards().iter().enumerate() {
            if set.is_empty() {
                continue;
            }
            let len = set.slots().len();
            let mut start = 0;
            while start < len {
                // The next cut past `start` (`cut(shares)` is `total`, past every slot).
                while cut(share) <= base + start {
                    share += 1;
                }
                let end = len.min(start + CHUNK_SLOTS).min(cut(share) - base);
                if n == self.chunks.len() {
                    self.chunks.push(Chunk::new());
                }
                let c = &mut self.chunks[n];
                (c.shard, c.start, c.end) = (shard, start, end);
                n += 1;
                start = end;
            }
            base += len;
        }
        self.chunks.truncate(n);
    }

    /// The sum over the current frontier of counts times hashes.
    fn frontier_hashes(&mut self) -> W::Sum {
        let parallel = self.parallel();
        self.plan_pass(parallel);
        let (rules, weights, cur) = (self.rules, self.weights, &self.cur);
        for_each_mut(parallel, &mut self.chunks, |_, c| {
            c.acc = W::Sum::zero();
            for (_, k, n) in c.positions(cur) {
                weights.end(&mut c.acc, n, &rules.hashes(k));
            }
        });
        self.chunks.iter().fold(W::Sum::zero(), |a, c| a.merge(c.acc))
    }

    /// Chunks for a pass over the current frontier: in one share a thread when `parallel`
    /// (small frontiers, of a chunk or two, are then still spread), else in one.
    fn plan_pass(&mut self, parallel: bool) {
        self.plan_chunks(if parallel { rayon::current_num_threads() } else { 1 });
    }

    /// True when the current frontier is worth spreading over the thread pool.
    fn parallel(&self) -> bool {
        let min = if Self::SHARED { PARALLEL_MIN_SHARED } else { PARALLEL_MIN };
        self.cur.len() >= min && rayon::current_num_threads() > 1
    }

    /// True when a parallel depth has every thread fill one shared set: positions with one
    /// mass ([`Weights::SHARED_FILL`]) in sets the threads can share (keys of one atomic word,
    /// up to 21 cells). Else it goes through records and shards.
    const SHARED: bool = W::SHARED_FILL && frontier::CountSet::<R::Key, W::Count>::SHAREABLE;

    /// The last depth: every position's successors end their paths.
    fn last_depth(&mut self) -> W::Sum {
        let t = Instant::now();
        let parallel = self.parallel();
        self.plan_pass(parallel);
        let (rules, weights, cur) = (self.rules, self.weights, &self.cur);
        for_each_mut(parallel, &mut self.chunks, |_, c| dispatch::last(rules, weights, cur, c));
        // All expansion (summing successors), no insertion.
        self.phase_seconds = [t.elapsed().as_secs_f64(), 0.0];
        self.chunks.iter().fold(W::Sum::zero(), |a, c| a.merge(c.acc))
    }

    /// The last two depths at once (see [`last_two`]): each one's statistics and the hashes
    /// of the paths that end there. The pass's time goes to the first (all of it expansion).
    fn last_two(&mut self, done: u32) -> [(DepthStats, W::Sum); 2] {
        let t = Instant::now();
        let parallel = self.parallel();
        self.plan_pass(parallel);
        let (rules, weights, cur) = (self.rules, self.weights, &self.cur);
        for_each_mut(parallel, &mut self.chunks, |_, c| dispatch::last_two(rules, weights, cur, c));
        let depth = done + 1;
        let mut first = (DepthStats { depth, ..DepthStats::default() }, W::Sum::zero());
        let mut second = (DepthStats { depth: depth + 1, ..DepthStats::default() }, W::Sum::zero());
        for c in &self.chunks {
            first.0.records += c.records as u64;
            first.0.ended_paths = first.0.ended_paths.wrapping_add(c.ended_paths);
            first.1 = first.1.merge(c.acc);
            second.1 = second.1.merge(c.beyond);
        }
        first.0.seconds = t.elapsed().as_secs_f64();
        first.0.expand_seconds = first.0.seconds;
        [first, second]
    }

    /// One depth that is not the last: returns the hashes of the paths that ended (full
    /// boards), the number of positions of the next frontier and the records generated.
    fn step(&mut self, stats: &mut DepthStats) -> (W::Sum, u64, u64) {
        self.phase_seconds = [0.0; 2];
        let count_boards = self.count_boards;
        self.ended.clear_for(0);
        let parallel = self.parallel();
        // On one thread, the successors go straight into one set: no records, no shards.
        // (Asking rayon for its thread count starts the pool: only for a parallel depth.)
        let position = position_bytes::<R::Key, W::Count>();
        let threads = if parallel { rayon::current_num_threads() } else { 1 };
        // Threads fill one set at once where the counts are one word and the keys one atomic
        // word (faster than records and shards at every size measured: each successor is
        // written once, into its slot); else, in parallel, records go through shards (in
        // lockstep while the next frontier fits the caches).
        let shared = parallel && Self::SHARED;
        let lockstep = parallel && !shared && fits_cache(self.cur.len(), position, threads);
        let shard_bits =
            if parallel && !shared { shard_bits_for(self.cur.len(), position, threads) } else { 0 };
        self.plan_chunks(if lockstep { LOCKSTEP_SHARES * threads } else { 1 });
        let expect = self.cur.len() as f64 * self.growth * 1.2 / (1u64 << shard_bits) as f64;
        self.next.resize_shards(shard_bits);
        if !lockstep {
            // The one large set of a shared fill is cleared by all threads; shards by one each
            // (in lockstep, by the thread that fills them).
            for_each_mut(parallel, self.next.shards_mut(), |_, s| {
                s.reset_with(shard_bits, expect as usize + 16, &PoolZeroer(shared))
            });
        }
        let (rules, weights, cur, next, fanout) =
            (self.rules, self.weights, &self.cur, &mut self.next, self.fanout);
        let (mut records, mut ended) = (0, W::Sum::zero());
        // What an expanded chunk found besides the successors it stored or bucketed.
        let mut gather = |c: &Chunk<R::Key, W::Sum>, ended_set: &mut frontier::CountSet<R::Key, W::Count>| {
            ended = ended.merge(c.acc);
            stats.ended_paths = stats.ended_paths.wrapping_add(c.ended_paths);
            let parents = c.parents(cur);
            for r in &c.full {
                ended_set.insert(r.key, &r.counts(rules, weights, parents));
            }
        };
        if self.batches.len() < threads {
            self.batches.resize_with(threads, Default::default);
        }
        let batches = &self.batches;
        if shared {
            // Every thread expands chunks straight into the one next set, as on one thread.
            let mut room = expect as usize + 16;
            loop {
                let t0 = Instant::now();
                let chunks = &mut self.chunks;
                let filled = next.shard_mut(0).fill_shared(|shared| {
                    chunks.par_iter_mut().for_each_init(
                        || shared.claim(),
                        |claim, c| {
                            if !shared.overflowed() {
                                // Each worker its own batch: the lock is never contended.
                                let mine = rayon::current_thread_index().unwrap_or(0) % batches.len();
                                let batch = &mut *batches[mine].lock().unwrap_or_else(|e| e.into_inner());
                                c.records =
                                    dispatch::direct(rules, weights, cur, c, claim, batch, count_boards);
                            }
                        },
                    )
                });
                self.phase_seconds[0] += t0.elapsed().as_secs_f64();
                if filled.is_ok() {
                    break;
                }
                // The estimate fell short: again, with twice the room.
                room *= 2;
                next.shard_mut(0).clear_for(room);
            }
            for c in self.chunks.iter() {
                records += c.records;
                gather(c, &mut self.ended);
            }
        } else if lockstep {
            // One pool call (see [`lockstep`]): threads claim chunks to expand, then, once all
            // are expanded, shards to clear and fill from every chunk's records, in chunk order.
            let t0 = Instant::now();
            let phases = lockstep::Phases::new(self.chunks.len(), next.shards().len());
            let chunks: Vec<_> = self.chunks.iter_mut().map(RwLock::new).collect();
            let sets: Vec<_> = next.shards_mut().iter_mut().map(Mutex::new).collect();
            let expanded = Mutex::new(t0);
            let work = || {
                while let Some(i) = phases.claim_chunk() {
                    let c = &mut **chunks[i].write().unwrap_or_else(|e| e.into_inner());
                    dispatch::expand(rules, weights, cur, c, shard_bits, fanout, count_boards);
                    if phases.expanded() {
                        *expanded.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
                    }
                }
                phases.wait_expanded();
                while let Some(s) = phases.claim_shard() {
                    let set = &mut **sets[s].lock().unwrap_or_else(|e| e.into_inner());
                    set.reset_with(shard_bits, expect as usize + 16, &frontier::Serial);
                    for c in &chunks {
                        let c = &**c.read().unwrap_or_else(|e| e.into_inner());
                        dispatch::insert(rules, weights, cur, std::slice::from_ref(c), s, set);
                    }
                }
            };
            rayon::scope(|scope| {
                for _ in 1..threads {
                    scope.spawn(|_| work());
                }
                work();
            });
            drop(chunks);
            let t1 = expanded.into_inner().unwrap_or_else(|e| e.into_inner());
            for c in self.chunks.iter() {
                records += c.bucketed();
                gather(c, &mut self.ended);
            }
            self.phase_seconds[0] += (t1 - t0).as_secs_f64();
            self.phase_seconds[1] += t1.elapsed().as_secs_f64();
        } else if parallel {
            // A block of chunks is expanded, then inserted, before the next: the records in
            // flight (and the memory they need) stay bounded.
            for block in self.chunks.chunks_mut(BLOCK_CHUNKS) {
                let t0 = Instant::now();
                for_each_mut(parallel, block, |_, c| {
                    dispatch::expand(rules, weights, cur, c, shard_bits, fanout, count_boards)
                });
                let t1 = Instant::now();
                for c in block.iter() {
                    records += c.bucketed();
                    gather(c, &mut self.ended);
                }
                let block = &*block;
                for_each_mut(parallel, next.shards_mut(), |s, set| {
                    dispatch::insert(rules, weights, cur, block, s, set)
                });
                self.phase_seconds[0] += (t1 - t0).as_secs_f64();
                self.phase_seconds[1] += t1.elapsed().as_secs_f64();
            }
        } else {
            let t0 = Instant::now();
            let set = next.shard_mut(0);
            let batch = &mut *batches[0].lock().unwrap_or_else(|e| e.into_inner());
            for c in self.chunks.iter_mut() {
                records += dispatch::direct(rules, weights, cur, c, set, batch, count_boards);
                gather(c, &mut self.ended);
            }
            self.phase_seconds[0] = t0.elapsed().as_secs_f64();
        }
        let states = self.next.len();
        if count_boards {
            let count = |set: &frontier::CountSet<R::Key, W::Count>| -> u64 {
                set.iter().map(|(k, n)| weights.boards(rules, k, n)).sum()
            };
            let stored: u64 = self.next.shards().par_iter().map(count).sum();
            stats.boards = Some(stored + count(&self.ended));
        }
        self.growth = states as f64 / self.cur.len().max(1) as f64;
        self.fanout = records as f64 / self.cur.len().max(1) as f64;
        std::mem::swap(&mut self.cur, &mut self.next);
        (ended, states as u64, records as u64)
    }
}

/// The least time between two reads of the peak memory (see [`DepthStats::peak_memory`]).
const PEAK_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

/// Chunks a thread on a depth in [`lockstep`] (claimed as threads come: a few each, so that
/// they end together).
const LOCKSTEP_SHARES: usize = 4;

/// Below this many bytes a search is small: no /proc reads for its memory checks.
const SMALL_BYTES: f64 = (16 << 20) as f64;

/// Frontiers smaller than this are expanded on the calling thread, straight into one set
/// ([`direct`]): below it, starting the pool and handing work between threads costs more
/// than a second thread saves (small searches never start the pool at all). Larger ones go
/// through records and shards, in [`lockstep`] while they fit the caches. Every sum is a
/// wrapping one, so both ways give the same answers and statistics (a test checks it).
/// Public cg07-cg12 (8 lanes, frontiers of 4-32K positions) timed case by case, one binary
/// after the other, favoured 4 096 (36.8 ms against 39.1 on one thread), but the twelve public
/// cases run as a sequence per binary, as `cargo xtask bench` runs them, favour this one, with
/// far less spread: 39.6 ms (38.5-41.6) against 43.5 (42.1-45.8) from 4 096 and 41.6 from
/// 8 192, and again 40.4 (39.5-42.1) against 39.9 (36.1-48.6). A second vCPU of this VM
/// sometimes starts work half a millisecond late or stalls for longer.
const PARALLEL_MIN: usize = 1 << 15;

/// [`PARALLEL_MIN`] where threads fill one shared set ([`Search::SHARED`]), which costs
/// little more than one thread's pass: it pays from smaller frontiers (the empty 3x3 to
/// depth 40 on 2 threads: 86.6 ms from 8 192 positions, 88.8 ms from 16 384, 89.5 ms from
/// 32 768).
const PARALLEL_MIN_SHARED: usize = 1 << 13;

/// Calls `f(index, item)` on every item: on the thread pool when `parallel` and there is more
/// than one item, else on the calling thread, in order.
fn for_each_mut<T: Send>(parallel: bool, items: &mut [T], f: impl Fn(usize, &mut T) + Sync + Send) {
    if !parallel || items.len() <= 1 {
        items.iter_mut().enumerate().for_each(|(i, t)| f(i, t));
    } else {
        items.par_iter_mut().enumerate().for_each(|(i, t)| f(i, t));
    }
}

/// Clears a set's table on the thread pool when `.0`, else on the calling thread.
struct PoolZeroer(bool);

impl frontier::Zeroer for PoolZeroer {
    fn zero<T: Copy + Send + Sync>(&self, items: &mut [T], zero: T) {
        if self.0 {
            items.par_chunks_mut((256 << 10) / std::mem::size_of::<T>().max(1)).for_each(|s| s.fill(zero));
        } else {
            items.fill(zero);
        }
    }
}

/// Shards for a next frontier grown from `len` positions of `bytes` each (key, counts and
/// table slots), on `threads` threads: one a thread while a thread's share fits in a core's
/// cache ([`SHARE_BYTES`]: each thread then expands into as few buckets as possible and
/// inserts one shard); beyond that, a few thousand positions a shard, so that the shard being
/// filled stays in cache, at most 2^12 shards.
fn shard_bits_for(len: usize, bytes: usize, threads: usize) -> u32 {
    let least = threads.next_power_of_two().trailing_zeros();
    if fits_cache(len, bytes, threads) {
        return least;
    }
    let mut bits = 0;
    while bits < 12 && (len >> bits) > 16384 {
        bits += 1;
    }
    bits.max(least)
}

/// True when a thread's share of a next frontier grown from `len` positions of `bytes` each
/// fits in its core's cache ([`SHARE_BYTES`]).
fn fits_cache(len: usize, bytes: usize, threads: usize) -> bool {
    len / threads.max(1) * bytes <= SHARE_BYTES
}

/// The bytes a position takes in a frontier's set, typically: 3 table slots in the inline
/// layout (load 1/4 to 1/2), or its dense slot and 6 `u32` table slots (load 1/8 to 1/2).
fn position_bytes<K: PackedKey, C: Tally>() -> usize {
    let slot = std::mem::size_of::<Slot<K, C>>();
    if frontier::CountSet::<K, C>::INLINE {
        3 * slot
    } else {
        slot + 6 * 4
    }
}

/// A thread's share of the next frontier that still counts as small: about a core's L2.
const SHARE_BYTES: usize = 2 << 20;

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
fn next_successors<'a, R: Rules, C: Tally + 'a>(
    rules: &R,
    positions: &mut impl Iterator<Item = (usize, R::Key, &'a C)>,
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

/// Expands one chunk: full successors into `c.acc`, the others as records bucketed by the
/// shard of their canonical key.
#[inline(always)]
pub(crate) fn expand<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    c: &mut Chunk<R::Key, W::Sum>,
    shard_bits: u32,
    fanout: f64,
    count_boards: bool,
) {
    const { assert!(R::MANY * R::BUFFER <= SUCCESSORS && R::MANY <= MANY_MAX) };
    let mut succ = successor_buffer::<R>();
    let mut from = [0u32; SUCCESSORS];
    c.prepare_buckets(1 << shard_bits, fanout);
    c.full.clear();
    let mut acc = W::Sum::zero();
    let mut paths = 0u32;
    let cur_shard = &cur.shards()[c.shard];
    let parents = &cur_shard.slots()[c.start..c.end];
    let mut positions = cur_shard.entries(c.start..c.end);
    while let Some(m) = next_successors(rules, &mut positions, &mut succ, &mut from) {
        for (&s, &f) in succ[..m].iter().zip(&from[..m]) {
            let i = (f >> 1) as usize;
            if f & 1 != 0 && rules.is_full(s) {
                let n = parents[i].count();
                weights.end(&mut acc, n, &rules.hashes(s));
                paths = paths.wrapping_add(weights.paths(n));
                if count_boards {
                    let (key, t) = rules.canonical(s);
                    c.full.push(Record::new(key, i, t));
                }
            } else {
                let (key, t) = rules.canonical(s);
                c.buckets[shard_of(&key, shard_bits)].push(Record::new(key, i, t));
            }
        }
    }
    c.acc = acc;
    c.ended_paths = paths;
}

/// Where [`direct`] puts the successors it keeps: the next frontier's only set (one thread),
/// or one thread's [`Claim`](frontier::Claim) on it while all threads fill it at once.
pub(crate) trait Sink<K, C> {
    /// Hints the CPU to fetch the slot of a key whose hash is `hash`.
    fn prefetch_hash(&self, hash: u64);

    /// Inserts a batch of (hash, key, counts) whose slots were prefetched. False when the set
    /// turned out too small (the depth is then done again with more room).
    fn insert(&mut self, batch: &[(u64, K, C)]) -> bool;
}

impl<K: PackedKey, C: Tally> Sink<K, C> for frontier::CountSet<K, C> {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        frontier::CountSet::prefetch_hash(self, hash);
    }

    #[inline(always)]
    fn insert(&mut self, batch: &[(u64, K, C)]) -> bool {
        self.insert_prefetched(batch, |r| r.0, |r| r.1, |r| r.2);
        true
    }
}

impl<K: PackedKey, C: Tally> Sink<K, C> for frontier::Claim<'_, '_, K, C> {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        frontier::Claim::prefetch_hash(self, hash);
    }

    #[inline(always)]
    fn insert(&mut self, batch: &[(u64, K, C)]) -> bool {
        self.insert_prefetched(batch, |r| r.0, |r| r.1, |r| r.2)
    }
}

/// Successors gathered (from as many positions as it takes) before they are canonicalised,
/// their slots prefetched, and inserted (with their counts) as one batch: by the time the
/// batch is inserted, its slots have arrived.
const DIRECT_BATCH: usize = 192;

/// The most positions [`Rules::successors_of_many`] takes at once, over all rules.
const MANY_MAX: usize = 16;

/// [`direct`]'s batch of successors: hash, canonical key and counts.
pub(crate) type Batch<K, C> = Vec<(u64, K, C)>;

/// Expands one chunk straight into the next frontier's only set (the one-thread path): full
/// successors into `c.acc` (and `c.full` when counting boards), the others canonicalised and
/// inserted in batches. Returns the number of successors inserted.
///
/// The positions are handed to [`Rules::successors_of_many`] [`Rules::MANY`] at a time, and
/// the successors of consecutive positions gather in one buffer, each tagged with its parent,
/// until a batch is full; a batch is then handled in one loop over the buffer. A loop a
/// position would end at a different count each time: a mispredicted branch a position.
/// Its successor loop repeats [`expand`]'s on purpose: one loop generic over what happens to
/// a successor (closures over a sink) measured 2-5% slower on this path.
#[inline(always)]
pub(crate) fn direct<R: Rules, W: Weights, S: Sink<R::Key, W::Count>>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    c: &mut Chunk<R::Key, W::Sum>,
    set: &mut S,
    batch: &mut Batch<R::Key, W::Count>,
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
    batch.resize(DIRECT_BATCH + R::MANY * R::BUFFER, (0, R::Key::ZERO, W::Count::zero()));
    let mut out = Expanded { parents: c.parents(cur), acc: W::Sum::zero(), paths: 0, records: 0, full };
    let mut m = 0;
    let mut positions = c.positions(cur);
    while let Some(n) = next_successors(rules, &mut positions, &mut succ[m..], &mut from[m..]) {
        m += n;
        if m >= DIRECT_BATCH {
            if !out.flush(rules, weights, &succ[..m], &from[..m], set, batch, count_boards) {
                // A shared set that ran out of room: the depth is redone.
                c.full = out.full;
                return out.records;
            }
            m = 0;
        }
    }
    out.flush(rules, weights, &succ[..m], &from[..m], set, batch, count_boards);
    (c.full, c.acc, c.ended_paths) = (out.full, out.acc, out.paths);
    out.records
}

/// What [`direct`] has made of a chunk so far.
struct Expanded<'a, K: PackedKey, C: Tally, S> {
    /// The chunk's slots.
    parents: &'a [Slot<K, C>],
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
    /// fill the board when bit 0 is set): the full ones end their paths, the others are
    /// canonicalised, their slots prefetched, and then inserted. False when a shared set ran
    /// out of room.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn flush<R: Rules<Key = K>, W: Weights<Count = C, Sum = S>, T: Sink<K, C>>(
        &mut self,
        rules: &R,
        weights: W,
        succ: &[K],
        from: &[u32],
        set: &mut T,
        batch: &mut Batch<K, C>,
        count_boards: bool,
    ) -> bool {
        let mut len = 0;
        for (&s, &f) in succ.iter().zip(from) {
            let i = (f >> 1) as usize;
            let n = self.parents[i].count();
            if f & 1 != 0 && rules.is_full(s) {
                weights.end(&mut self.acc, n, &rules.hashes(s));
                self.paths = self.paths.wrapping_add(weights.paths(n));
                if count_boards {
                    let (key, t) = rules.canonical(s);
                    self.full.push(Record::new(key, i, t));
                }
            } else {
                let (key, t) = rules.canonical(s);
                let hash = frontier::key_hash(&key);
                set.prefetch_hash(hash);
                batch[len] = (hash, key, weights.carry(rules, n, t));
                len += 1;
            }
        }
        self.records += len;
        set.insert(&batch[..len])
    }
}

/// Fills next shard `s` from every chunk's records for it, in chunk order.
#[inline(always)]
pub(crate) fn insert<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    cur: &Frontier<R::Key, W::Count>,
    chunks: &[Chunk<R::Key, W::Sum>],
    s: usize,
    set: &mut frontier::CountSet<R::Key, W::Count>,
) {
    for c in chunks {
        let parents = c.parents(cur);
        set.insert_many(c.bucket(s), |r| r.key, |r| r.counts(rules, weights, parents));
    }
}

/// The last two depths over one chunk, the successors of its positions never canonicalised
/// or stored: a full one ends its paths at once (`c.acc`, `c.ended_paths`), any other ends
/// them through its own successors, whose hashes come summed from the tables
/// ([`Rules::successor_hashes`], as in [`last`]) into `c.beyond`. A successor `s` of the
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
    let parents = c.parents(cur);
    let mut succ = successor_buffer::<R>();
    let mut from = [0u32; SUCCESSORS];
    // Successors not full yet to be summed, each with its parent's slot.
    let (mut open, mut open_from) = ([R::Key::ZERO; MANY_MAX], [0u32; MANY_MAX]);
    let mut hashes = [[0u32; 8]; MANY_MAX];
    let (mut acc, mut beyond, mut paths, mut records) = (W::Sum::zero(), W::Sum::zero(), 0u32, 0);
    let mut pending = 0;
    let mut positions = c.positions(cur);
    while let Some(m) = next_successors(rules, &mut positions, &mut succ, &mut from) {
        for (&s, &f) in succ[..m].iter().zip(&from[..m]) {
            let i = f >> 1;
            if f & 1 != 0 && rules.is_full(s) {
                let n = parents[i as usize].count();
                weights.end(&mut acc, n, &rules.hashes(s));
                paths = paths.wrapping_add(weights.paths(n));
            } else {
                (open[pending], open_from[pending]) = (s, i);
                pending += 1;
                if pending == R::MANY {
                    let open = (&open[..pending], &open_from[..pending]);
                    sum_open(rules, weights, parents, open, &mut hashes, &mut beyond);
                    records += pending;
                    pending = 0;
                }
            }
        }
    }
    sum_open(rules, weights, parents, (&open[..pending], &open_from[..pending]), &mut hashes, &mut beyond);
    records += pending;
    (c.acc, c.beyond, c.ended_paths, c.records) = (acc, beyond, paths, records);
}

/// Adds to `beyond` the paths through each successor `open.0[j]` (of parent slot
/// `open.1[j]`) and on to its own successors ([`last_two`]'s step; a function, not a closure:
/// a closure would not inherit the kernel's instruction set, and its intrinsics would be
/// calls).
#[inline(always)]
fn sum_open<R: Rules, W: Weights>(
    rules: &R,
    weights: W,
    parents: &[Slot<R::Key, W::Count>],
    open: (&[R::Key], &[u32]),
    hashes: &mut [Counts],
    beyond: &mut W::Sum,
) {
    rules.successor_hashes_of_many(open.0, hashes);
    for (h, &i) in hashes.iter().zip(open.1) {
        weights.end(beyond, parents[i as usize].count(), h);
    }
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
        weights.end(&mut acc, n, &rules.successor_hashes(k));
    }
    c.acc = acc;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::Orbits;
    use state::{Grid, Level, Shape};

    /// A shared fill whose room was estimated far too small overflows, and the depth is done
    /// again with more room: the frontiers still match a search whose estimates were right.
    #[test]
    fn a_shared_fill_that_overflows_is_redone() {
        let rules = Grid::<u64>::new(Shape::new(4, 4).unwrap(), Level::Portable);
        let start = rules.pack(&[0; 16]);
        let orbits = Orbits::of(&rules, start).expect("the empty board is symmetric");
        let frontier = |underestimate: bool| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            pool.install(|| {
                let mut search = Search::new(&rules, orbits);
                let (c, t) = rules.canonical(start);
                search.cur.reset(0, 1);
                search.cur.shard_mut(0).insert(c, &orbits.start(&rules, t));
                for _ in 0..13 {
                    if underestimate {
                        search.growth = 1e-3;
                    }
                    search.step(&mut DepthStats::default());
                }
                let mut positions: Vec<(u64, u64)> =
                    search.cur.shards().iter().flat_map(|s| s.iter()).map(|(k, n)| (k, *n)).collect();
                positions.sort_unstable();
                positions
            })
        };
        let (right, wrong) = (frontier(false), frontier(true));
        assert!(right.len() >= 1 << 18, "depth 13 is past the shared-fill threshold");
        assert_eq!(right, wrong);
    }
}

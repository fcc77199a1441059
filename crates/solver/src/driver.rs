//! The per-depth driver: one breadth-first pass a depth over canonical positions, generic over
//! [`Rules`] and [`Weights`], whatever home each partition of the frontier lives in.
//!
//! A depth's frontier is a set of hash partitions ([`crate::budget`]). The partitions the
//! budget keeps in memory are one [`Frontier`] (the *memory home*, `cur`); the others live on
//! disk ([`crate::home`]). One depth, from the current frontier to the next:
//!
//! 1. **Plan.** The budget says how many partitions the next depth has and which stay in
//!    memory, from the limit and what the last depth measured. While everything fits there is
//!    one partition, in memory, and nothing below touches a file.
//! 2. **Expand every source.** The memory home first, then each partition on disk, loaded in
//!    turn into `cur` (its files read into a set): the same kernels ([`crate::kernels`]) run on
//!    each. Successors of partitions kept in memory go into the next memory home (`next`);
//!    the others go to the depth's [`Outbox`] (a file a partition).
//! 3. **Merge.** Each partition on disk is merged into a set (one a worker), counted, and
//!    written as one file of distinct positions.
//!
//! Within a source, a depth runs one of three ways, all with the same results:
//! * **direct** (one thread, or a frontier too small to share out, [`PARALLEL_MIN`]): each
//!   successor goes straight into one set, its slot prefetched a batch ahead;
//! * **owned** (several threads, any key and counts, the whole frontier in memory): the next
//!   set has a shard a thread, which only that thread fills; every thread runs `direct`,
//!   inserting its own shard's successors and posting the others' to their owners a block at
//!   a time ([`Owned`]);
//! * **one lock** (the same): every thread runs `direct` into the one next set, behind one
//!   lock, a batch at a time while the lock is free ([`OneLock`]). Which of the two fills a
//!   run's depths is measured on its first parallel depths, and again as the frontier grows
//!   ([`crate::fill`]);
//! * **blocks** (several threads, partitions on disk): chunks expanded into records bucketed
//!   by the next frontier's shard, then each shard filled from every chunk's bucket (or its
//!   records sent to the outbox), a block of chunks at a time.
//!
//! At the last depth nothing is generated: each position adds its counts times the summed
//! hashes of its successors ([`Weights::end_successors`]); where those sums are cheap
//! ([`Weights::cheap_successor_sums`]), the last two depths are one pass. Chunks, shards and
//! partitions depend only on the data, and wrapping sums commute, so the answer (and every
//! statistic) is the same for any number of threads and wherever the partitions live.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;
use frontier::spill::DiskReserve;
use frontier::{CountSet, Frontier, Tally};
use rayon::prelude::*;
use state::{Counts, PackedKey, Rules};

use crate::budget::{Budget, Need, Plan};
use crate::checkpoint::{Checkpoint, Identity, Manifest};
use crate::cluster::{self, Cluster, Ranks};
use crate::dispatch;
use crate::fill::{self, Fill};
use crate::home::{self, Away, Outbox, Part, Place, Pool, Scratch};
use crate::kernels::{
    add, own_hash, Batches, Bucketing, Chunk, Deal, Letters, Lined, Made, OneLock, Owned, Post, Routed,
    Split, Waiting,
};
use crate::stats::{peak_memory, DepthStats, Observer, RankSpread, RankSummary};
use crate::weights::{wide_counts, Weights};

/// Slots of the current frontier expanded by one task (in the inline layout, a quarter to a
/// half of them hold positions; in the dense one, all).
const CHUNK_SLOTS: usize = 1 << 13;

/// Chunks a thread takes, at least, in a parallel fill or pass (where chunks go to whichever
/// thread is free): the threads end within a chunk of each other, so the last chunk keeps the
/// others waiting for at most about 1/32 of their part of the depth.
const PARALLEL_CHUNKS: usize = 32;

/// The fewest slots a chunk of a parallel fill or pass has: each chunk has costs of its own
/// (in a fill, it ends with a partial batch).
const PARALLEL_CHUNK_MIN: usize = 1 << 11;

/// Chunks expanded before their records are inserted, in memory (on a frontier partly on disk,
/// the budget bounds the records in flight).
const BLOCK_CHUNKS: usize = 1 << 20;

/// Where a run keeps what is not in memory, and what it saves.
#[derive(Debug, Default)]
pub(crate) struct Storage {
    /// The parent of the scratch directory ([`Scratch`]; the system's temporary directory by
    /// default).
    pub work_dir: Option<PathBuf>,
    /// The scratch directory, made when a partition first goes to disk.
    pub scratch: Option<Scratch>,
    /// The checkpoint, when every depth is saved.
    pub checkpoint: Option<Checkpoint>,
    /// What a checkpoint must match.
    pub identity: Option<Identity>,
    /// The free space the scratch files and the checkpoint leave on their disks.
    pub reserve: DiskReserve,
}

impl Storage {
    /// Where the partitions of `depth` on disk go: the checkpoint's depth directory, else the
    /// scratch directory's pool.
    fn place(&mut self, depth: u32) -> Result<Place> {
        if let Some(ck) = &self.checkpoint {
            return Ok(Place::Dir(ck.depth_dir(depth)?, self.reserve));
        }
        Ok(Place::Scratch(self.pool()?))
    }

    /// The scratch directory's files (the directory made on first use).
    fn pool(&mut self) -> Result<Arc<Pool>> {
        if self.scratch.is_none() {
            self.scratch = Some(Scratch::create(self.work_dir.as_deref(), self.reserve)?);
        }
        Ok(self.scratch.as_ref().expect("made above").pool().clone())
    }
}

/// The search state: the current source and the next memory home, the partitions on disk, the
/// chunk buffers, reused from depth to depth.
pub(crate) struct Search<'r, R: Rules, W: Weights> {
    rules: &'r R,
    weights: W,
    /// The ranks of the search ([`crate::cluster`]): one, unless distributed.
    cluster: &'r dyn Cluster,
    ranks: Ranks,
    /// This rank's exchanges: their buffers, and what they moved during the current depth.
    room: cluster::Mailroom,
    /// This rank's own figures over the whole search.
    mine: RankSummary,
    /// The source being expanded: the current depth's memory home, then each of its
    /// partitions on disk, loaded in turn.
    cur: Frontier<R::Key, W::Count>,
    /// The next depth's memory home.
    next: Frontier<R::Key, W::Count>,
    /// The current depth's partitions on disk.
    away: Away,
    /// Σ counts × hashes over `away` (computed as they were merged, for `--all-depths`).
    away_sum: W::Sum,
    /// The partition bits of the current depth.
    bits: u32,
    chunks: Vec<Chunk<R::Key, W::Sum>>,
    /// [`crate::kernels::direct`]'s batches, one a worker thread, kept from chunk to chunk
    /// and depth to depth: a fresh one a chunk was a heap allocation each time, which musl's
    /// allocator maps and unmaps (on several threads, a TLB flush of the others).
    batches: PerWorker<Batches<R::Key, W::Count>>,
    /// [`crate::kernels::expand`]'s scratch, one a worker thread, kept like `batches`.
    made: PerWorker<Made<R::Key>>,
    /// The buffers of an [`Owned`] fill, one a worker thread, kept like `batches`.
    letters: PerWorker<Letters<R::Key, W::Count>>,
    /// The mailboxes of an [`Owned`] fill and their emptied blocks, kept like `batches`.
    mailboxes: Post<R::Key, W::Count>,
    /// The successors waiting for a [`OneLock`] fill's lock, one [`Waiting`] a worker thread,
    /// kept like `batches`.
    waiting: PerWorker<Waiting<R::Key, W::Count>>,
    /// How parallel depths whose next frontier stays in memory fill it.
    fill: fill::Choice,
    /// Sets that merge partitions on disk, one a worker, kept from depth to depth.
    merge_sets: Vec<Mutex<CountSet<R::Key, W::Count>>>,
    /// Positions of the last depth per position of the one before: sizes the next tables.
    growth: f64,
    /// False when the rest of the run is too little work to start the thread pool for
    /// ([`POOL_WORK_MIN`]): its depths stay on the calling thread until the pool is running.
    pool_pays: bool,
    /// The memory home's frontiers are on huge pages ([`Frontier::use_huge_pages`]).
    huge_pages: bool,
    /// Records (successors stored) per position at the last depth: sizes the buckets.
    fanout: f64,
    /// Seconds of the last step's expand and insert phases.
    phase_seconds: [f64; 2],
    /// Count distinct boards at every depth (costs a set of the full boards and a full last
    /// depth).
    count_boards: bool,
    /// With board counting: the full boards reached at the current depth.
    ended: CountSet<R::Key, W::Count>,
    budget: Budget,
    storage: Storage,
    /// Bytes read and written by the current depth.
    io: (u64, u64),
}

/// What a run computes besides the answer.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RunConfig {
    /// The answer at every depth.
    pub all_depths: bool,
    /// Distinct boards at every depth.
    pub count_boards: bool,
    /// How several threads fill a next frontier that stays in memory.
    pub fill: Fill,
}

/// Where a search is: the depths done and what they found, the peak memory as last read.
struct Progress {
    done: u32,
    /// Positions of the depth `done` over every rank.
    states: u64,
    out: Outcome,
    /// The peak memory as last read.
    peak: u64,
}

/// The result of a search.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// Per-lane sums of every path's final hash.
    pub total: Counts,
    /// `answers[d]`: the answer for depth `d`, when all depths were asked for.
    pub answers: Vec<u32>,
    /// Per-depth statistics, depth 0 first (from the checkpoint's depth on, when resumed).
    pub stats: Vec<DepthStats>,
    /// Where the checkpoint is and the bytes it takes, when saved.
    pub checkpoint: Option<(PathBuf, u64)>,
    /// Each rank's own figures, in rank order (one, unless distributed).
    pub ranks: Vec<RankSummary>,
}

/// One value a worker thread, each alone on its cache lines ([`Lined`]) behind a lock that
/// only its worker takes while threads run.
type PerWorker<T> = Vec<Lined<Mutex<T>>>;

/// Expands a chunk with a thread's batch buffer into a sink the function holds: returns the
/// successors it stored.
type ExpandChunk<'a, K, S, C> = dyn FnMut(&mut Chunk<K, S>, &mut Batches<K, C>) -> usize + 'a;

/// How the next frontier is filled from one source.
#[derive(Clone, Copy, Debug)]
struct Mode {
    parallel: bool,
    /// With the whole next frontier in memory, on several threads: how they fill it (never
    /// [`Fill::Auto`]).
    fill: Option<Fill>,
    shard_bits: u32,
    threads: usize,
    /// With several ranks: records of mail a rank holds before it exchanges them.
    mail: usize,
    /// Positions a shard of the next memory home is sized for.
    expect: usize,
    /// At a serial depth whose pool has idle threads: positions whose memory one of them
    /// pre-faults in the source's sets (0: none).
    prefault: usize,
    /// Seconds the depth took to clear its next set before a one-lock fill (an owned fill's
    /// threads clear their shards within the fill): part of the fill's time, which
    /// [`fill::Choice`] compares between the ways.
    cleared: f64,
}

impl<'r, R: Rules, W: Weights> Search<'r, R, W> {
    pub(crate) fn new(
        rules: &'r R,
        weights: W,
        budget: Budget,
        storage: Storage,
        cluster: &'r dyn Cluster,
    ) -> Self {
        Search {
            rules,
            weights,
            cluster,
            ranks: Ranks::of(cluster),
            room: cluster::Mailroom::default(),
            mine: RankSummary::default(),
            cur: Frontier::new(0),
            next: Frontier::new(0),
            away: Away::default(),
            away_sum: W::Sum::zero(),
            bits: 0,
            chunks: Vec::new(),
            batches: Vec::new(),
            made: Vec::new(),
            letters: Vec::new(),
            mailboxes: Post::default(),
            waiting: Vec::new(),
            fill: fill::Choice::new(Fill::Auto),
            merge_sets: Vec::new(),
            growth: 4.0,
            pool_pays: true,
            huge_pages: false,
            fanout: 8.0,
            phase_seconds: [0.0; 2],
            count_boards: false,
            ended: CountSet::new(0),
            budget,
            storage,
            io: (0, 0),
        }
    }

    /// Every path of `depth` moves (fewer when the board fills) from `start`, or from the
    /// checkpoint `resume` holds; `observe` sees each depth's statistics as soon as the depth
    /// is done.
    pub(crate) fn run(
        &mut self,
        start: &[u8],
        depth: u32,
        config: RunConfig,
        resume: Option<Manifest>,
        observe: &mut Observer<'_>,
    ) -> Result<Outcome> {
        let (rules, weights) = (self.rules, self.weights);
        self.count_boards = config.count_boards;
        self.fill = fill::Choice::new(config.fill);
        let mut out = Outcome::default();
        let (done, states) = match resume {
            Some(m) => {
                out.total = m.total;
                self.growth = m.growth;
                self.bits = m.bits;
                self.away = Away { parts: m.parts };
                let states = cluster::sum_over(self.cluster, &[self.depth_states()])[0];
                (m.depth, states)
            }
            None => {
                let t0 = Instant::now();
                let s = rules.pack(start);
                let mut ended = [0u32; 8];
                // Rank 0 counts the start and any path it ends; its owner stores it.
                let first_rank = self.ranks.me == 0;
                let mut first =
                    DepthStats { depth: 0, records: u64::from(first_rank), ..DepthStats::default() };
                if depth == 0 || rules.is_full(s) {
                    if first_rank {
                        ended = own_hash(rules, s);
                        first.ended_paths = u32::from(rules.is_full(s));
                    }
                } else {
                    let (c, t) = rules.canonical(s);
                    self.cur.reset(0, 1);
                    if self.ranks.owns(frontier::key_hash(&c)) {
                        self.cur.shard_mut(0).insert(c, &weights.start(rules, t));
                    }
                }
                first.states = self.cur.len() as u64;
                first.boards = config.count_boards.then_some(u64::from(first_rank));
                first.ended = state::fold_lanes(&ended);
                add(&mut out.total, &ended);
                if config.all_depths {
                    let mut v = ended;
                    if !self.cur.is_empty() {
                        let here = self.frontier_hashes();
                        add(&mut v, &self.as_lanes(&here));
                    }
                    out.answers.push(state::fold_lanes(&v));
                }
                self.commit(0, depth, &out.total)?;
                first.seconds = t0.elapsed().as_secs_f64();
                let states = self.over_ranks(&mut first);
                observe(&first);
                out.stats.push(first);
                (0, states)
            }
        };
        let mut progress = Progress { done, states, out, peak: 0 };
        self.depths(&mut progress, depth, config, observe)?;
        let mut out = progress.out;
        if self.ranks.n > 1 {
            // Every rank's partial sums (lanes, then every depth's answer), added.
            let mine: Vec<u64> = out.total.iter().chain(&out.answers).map(|&x| u64::from(x)).collect();
            let sums = cluster::sum_over(self.cluster, &mine);
            for (t, s) in out.total.iter_mut().chain(&mut out.answers).zip(sums) {
                *t = s as u32;
            }
            out.answers.iter_mut().for_each(|a| *a &= state::HASH_MASK);
        }
        out.ranks = self.rank_summaries();
        if config.all_depths {
            // The board filled before `depth`: later depths add nothing.
            let last = *out.answers.last().expect("depth 0 is always answered");
            out.answers.resize(depth as usize + 1, last);
        }
        if self.storage.checkpoint.is_some() && progress.done < depth {
            // Every path ended before `depth`: the checkpoint says the run is complete.
            self.cur.reset(0, 0);
            self.away = Away::default();
            self.commit(depth, depth, &out.total)?;
        }
        out.checkpoint = self.storage.checkpoint.as_ref().map(|c| (c.dir().to_path_buf(), c.bytes()));
        Ok(out)
    }

    /// Positions of the current depth, in every home.
    fn depth_states(&self) -> u64 {
        self.cur.len() as u64 + self.away.states()
    }

    /// With a checkpoint: saves the current frontier (memory home and partitions on disk) as
    /// depth `d` of a run to `target`, with the ended paths' sum `total`.
    fn commit(&mut self, d: u32, target: u32, total: &Counts) -> Result<()> {
        let Some(ck) = &mut self.storage.checkpoint else { return Ok(()) };
        let place = Place::Dir(ck.depth_dir(d)?, self.storage.reserve);
        let mut parts = home::write_home(&self.cur, self.bits, &place, true)?;
        self.io.1 += parts.iter().map(|p| p.bytes).sum::<u64>();
        parts.extend(self.away.parts.iter().cloned());
        parts.sort_by_key(|p| p.index);
        let id = self.storage.identity.clone().expect("a checkpoint has an identity");
        let m = Manifest {
            id: Identity { target, ..id },
            depth: d,
            total: *total,
            bits: self.bits,
            growth: self.growth,
            parts,
        };
        ck.commit(&m)?;
        Ok(())
    }

    /// The depths after `p.done`, up to `depth`.
    fn depths(
        &mut self,
        p: &mut Progress,
        depth: u32,
        config: RunConfig,
        observe: &mut Observer<'_>,
    ) -> Result<()> {
        // The peak is read (a system call) only after depths that took over a millisecond: it
        // cannot have moved much in the others, so a search that quick reports none.
        while p.done < depth && p.states > 0 {
            self.pool_pays = self.work_left(depth - p.done, 0) >= POOL_WORK_MIN;
            if (self.parallel() || self.pool_for_prefault(depth - p.done))
                && rayon::current_thread_index().is_none()
            {
                // The rest runs on a pool thread, which then takes part in every parallel
                // phase itself: each wakes one thread fewer than a call from outside the pool
                // (small searches never get here, nor start the pool).
                return rayon::scope(|_| self.depths(p, depth, config, observe));
            }
            let d = p.done;
            self.io = (0, 0);
            if self.weights.cheap_successor_sums(self.rules)
                && d + 2 == depth
                && !self.count_boards
                && !config.all_depths
            {
                // The last two depths in one pass: nothing stored.
                for (mut stats, sum) in self.last_two(d)? {
                    add(&mut p.out.total, &self.as_lanes(&sum));
                    stats.ended = self.weights.answer(&sum);
                    stats.peak_memory = p.peak;
                    stats.bytes_read = std::mem::take(&mut self.io.0);
                    p.states = self.over_ranks(&mut stats);
                    p.done = stats.depth;
                    if p.done == depth {
                        self.cur.reset(0, 0);
                        self.away = Away::default();
                        self.commit(depth, depth, &p.out.total)?;
                    }
                    observe(&stats);
                    p.out.stats.push(stats);
                }
                break;
            }
            let last = d + 1 == depth;
            let d = d + 1;
            p.done = d;
            let t = Instant::now();
            let mut stats = DepthStats { depth: d, ..DepthStats::default() };
            let ended = if last && !self.count_boards {
                let ended = self.last_depth()?;
                self.cur.reset(0, 0);
                self.away = Away::default();
                ended
            } else {
                let (mut ended, states, records) = self.step(&mut stats, depth)?;
                stats.states = states;
                stats.records = records;
                if last {
                    // Counting boards: the last depth was generated; its positions end here.
                    ended = ended.merge(self.frontier_hashes());
                    self.cur.reset(0, 0);
                    self.away = Away::default();
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
            self.commit(d, depth, &p.out.total)?;
            stats.ended = state::fold_lanes(&ended);
            stats.seconds = t.elapsed().as_secs_f64();
            stats.expand_seconds = self.phase_seconds[0];
            stats.insert_seconds = self.phase_seconds[1];
            (stats.bytes_read, stats.bytes_written) = self.io;
            if stats.seconds > PEAK_READ_SECONDS {
                p.peak = peak_memory();
            }
            stats.peak_memory = p.peak;
            p.states = self.over_ranks(&mut stats);
            observe(&stats);
            p.out.stats.push(stats);
        }
        Ok(())
    }

    /// With several ranks: makes `stats` (this rank's) the depth's over every rank, adding this
    /// rank's own to [`Search::mine`]. Returns the positions of the depth over every rank.
    /// Collective.
    fn over_ranks(&mut self, stats: &mut DepthStats) -> u64 {
        let moved = std::mem::take(&mut self.room.traffic);
        self.mine.states_largest = self.mine.states_largest.max(stats.states);
        self.mine.bytes_sent += moved.sent;
        self.mine.bytes_received += moved.received;
        self.mine.exchange_seconds += moved.seconds;
        self.mine.bytes_written += stats.bytes_written;
        self.mine.peak_memory = self.mine.peak_memory.max(stats.peak_memory);
        if self.ranks.n == 1 {
            return stats.states;
        }
        let nanos = |s: f64| (s * 1e9) as u64;
        let mine = [
            stats.states,
            stats.boards.unwrap_or(0),
            stats.records,
            u64::from(stats.ended_paths),
            u64::from(stats.ended),
            stats.bytes_read,
            stats.bytes_written,
            stats.peak_memory,
            moved.sent,
            moved.received,
            nanos(moved.seconds),
            nanos(stats.seconds),
            nanos(stats.expand_seconds),
            nanos(stats.insert_seconds),
            u64::from(moved.exchanges),
        ];
        let all = self.cluster.all_gather(&mine);
        let rows: Vec<&[u64]> = all.chunks(mine.len()).collect();
        let sum = |i: usize| rows.iter().fold(0u64, |a, r| a.wrapping_add(r[i]));
        let max = |i: usize| rows.iter().map(|r| r[i]).max().unwrap_or(0);
        let seconds = |i: usize| max(i) as f64 / 1e9;
        stats.states = sum(0);
        stats.boards = stats.boards.map(|_| sum(1));
        stats.records = sum(2);
        stats.ended_paths = sum(3) as u32;
        stats.ended = sum(4) as u32 & state::HASH_MASK;
        stats.bytes_read = sum(5);
        stats.bytes_written = sum(6);
        stats.peak_memory = max(7);
        (stats.seconds, stats.expand_seconds, stats.insert_seconds) = (seconds(11), seconds(12), seconds(13));
        stats.ranks = Some(RankSpread {
            ranks: self.ranks.n as u32,
            states_max: max(0),
            bytes_sent: sum(8),
            bytes_received: sum(9),
            exchange_seconds: seconds(10),
            exchanges: max(14) as u32,
        });
        stats.states
    }

    /// Every rank's own figures, in rank order. Collective.
    fn rank_summaries(&self) -> Vec<RankSummary> {
        let m = &self.mine;
        let mine = [
            m.states_largest,
            m.bytes_sent,
            m.bytes_received,
            (m.exchange_seconds * 1e9) as u64,
            m.bytes_written,
            m.peak_memory,
        ];
        let all = if self.ranks.n == 1 { mine.to_vec() } else { self.cluster.all_gather(&mine) };
        all.chunks(mine.len())
            .enumerate()
            .map(|(rank, r)| RankSummary {
                rank,
                states_largest: r[0],
                bytes_sent: r[1],
                bytes_received: r[2],
                exchange_seconds: r[3] as f64 / 1e9,
                bytes_written: r[4],
                peak_memory: r[5],
            })
            .collect()
    }

    /// A sum of ended paths as lanes whose folded sum is its answer.
    fn as_lanes(&self, sum: &W::Sum) -> Counts {
        let mut lanes = [0; 8];
        lanes[0] = self.weights.answer(sum);
        lanes
    }

    /// Lays the current frontier's tables out as chunks, cut also at every `1/shares` of the
    /// slots (of the positions, in the dense layout; about so in the inline one): a pass
    /// spread over `shares` threads then has that many chunks at least, of even sizes, however
    /// small the frontier. Chunks have at most [`CHUNK_SLOTS`] slots; when `takers` threads
    /// take them as they free up (more than one), few enough for [`PARALLEL_CHUNKS`] a thread
    /// (but [`PARALLEL_CHUNK_MIN`] at least), so that the threads end together.
    fn plan_chunks(&mut self, shares: usize, takers: usize) {
        let total: usize = self.cur.shards().iter().filter(|s| !s.is_empty()).map(|s| s.slot_count()).sum();
        let most = if takers > 1 {
            (total / (takers * PARALLEL_CHUNKS)).clamp(PARALLEL_CHUNK_MIN, CHUNK_SLOTS)
        } else {
            CHUNK_SLOTS
        };
        let cut = |t: usize| total * t / shares;
        let (mut n, mut base, mut share) = (0, 0, 1);
        for (shard, set) in self.cur.shards().iter().enumerate() {
            if set.is_empty() {
                continue;
            }
            let len = set.slot_count();
            let mut start = 0;
            while start < len {
                // The next cut past `start` (`cut(shares)` is `total`, past every slot).
                while cut(share) <= base + start {
                    share += 1;
                }
                let end = len.min(start + most).min(cut(share) - base);
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

    /// Calls `f` on every source of the current depth in turn, in `cur`: the memory home, then
    /// the partitions on disk, loaded one a thread at a time (in parallel, each into a shard
    /// of `cur`; the partitions stay on disk until the depth is done).
    fn for_each_source(&mut self, mut f: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        let group = if self.parallel() { rayon::current_num_threads() } else { 1 };
        if !self.cur.is_empty() {
            f(self)?;
        }
        let away = std::mem::take(&mut self.away);
        for parts in away.parts.chunks(group) {
            let bits = parts.len().next_power_of_two().trailing_zeros();
            self.cur.resize_shards(bits);
            let load = |i: usize, set: &mut CountSet<R::Key, W::Count>| {
                set.reset(bits, parts.get(i).map_or(0, |p| p.states as usize));
                parts.get(i).map_or(Ok(0), |p| home::load(p, set))
            };
            let read: Vec<std::io::Result<u64>> = if parts.len() == 1 {
                vec![load(0, self.cur.shard_mut(0))]
            } else {
                self.cur.shards_mut().par_iter_mut().enumerate().map(|(i, set)| load(i, set)).collect()
            };
            for r in read {
                self.io.0 += r?;
            }
            f(self)?;
        }
        self.away = away;
        Ok(())
    }

    /// The sum over the current frontier (every home) of counts times hashes.
    fn frontier_hashes(&mut self) -> W::Sum {
        let parallel = self.parallel();
        self.plan_pass(parallel);
        let (rules, weights, cur) = (self.rules, self.weights, &self.cur);
        for_each_mut(parallel, &mut self.chunks, |_, c| {
            c.acc = W::Sum::zero();
            for (_, k, n) in c.positions(cur) {
                weights.end(&mut c.acc, &n, &rules.hashes(k));
            }
        });
        self.chunks.iter().fold(self.away_sum, |a, c| a.merge(c.acc))
    }

    /// Chunks for a pass over the current source: in one share a thread when `parallel`
    /// (small frontiers, of a chunk or two, are then still spread), else in one.
    fn plan_pass(&mut self, parallel: bool) {
        let threads = if parallel { rayon::current_num_threads() } else { 1 };
        self.plan_chunks(threads, threads);
    }

    /// Positions whose memory an idle thread pre-faults in the source's sets while a serial
    /// depth (`depth`, of a run to `target`) expands them (0: none). Those sets are filled
    /// again two depths later, and every other depth after: with the frontier growing, their
    /// tables grow, and fresh pages cost as much as the fill itself on some systems (a
    /// virtual machine's first touch of a page). A serial depth leaves the pool's other
    /// threads with nothing to do, so one of them faults the pages the frontier would take
    /// after [`PREFAULT_DEPTHS`] more depths at the present growth (not past the run's last
    /// stored depth, and within a quarter of the memory limit), and the parallel depths find
    /// them there. Only on a pool thread with company, for a frontier about to be parallel
    /// ([`parallel_soon`]: [`PREFAULT_MIN`] positions or more, growing): the frontiers of many
    /// boards with dice level off below [`PARALLEL_MIN`], and pages faulted for them are
    /// never used, but cost the system's time to fault and unmap.
    fn prefault_ahead(&self, total: usize, depth: u32, target: u32) -> usize {
        let depths = target.saturating_sub(depth + 1).min(PREFAULT_DEPTHS);
        if depths == 0
            || !parallel_soon(total as u64, self.growth)
            || rayon::current_thread_index().is_none()
            || rayon::current_num_threads() < 2
        {
            return 0;
        }
        let keys = total as f64 * self.growth.min(2.0).powi(depths as i32) * 1.2;
        let most = self.budget.limit() as f64 / 4.0 / budget_position_bytes::<R::Key, W::Count>();
        keys.min(most) as usize
    }

    /// [`Search::parallel`] for the last depths (which insert nothing, so the fill never picks
    /// for them): on one thread where the fill's trials kept one thread.
    fn parallel_last(&self) -> bool {
        self.parallel() && !self.fill.one_thread()
    }

    /// True when the current depth is worth spreading over the thread pool: a frontier of
    /// [`PARALLEL_MIN`] positions or more, and, until the pool runs, enough work left in the
    /// run to pay for starting it ([`POOL_WORK_MIN`]).
    fn parallel(&self) -> bool {
        self.depth_states() >= PARALLEL_MIN as u64
            && (self.pool_pays || rayon::current_thread_index().is_some())
            && rayon::current_num_threads() > 1
    }

    /// Positions the run's `depths` remaining depths are expected to expand, from the current
    /// frontier at the last depth's growth, counting only the depths of `least` positions or
    /// more.
    fn work_left(&self, depths: u32, least: usize) -> f64 {
        let (mut positions, mut sum) = (self.depth_states() as f64, 0.0);
        for _ in 0..depths.min(64) {
            if positions >= least as f64 {
                sum += positions;
            }
            positions *= self.growth;
        }
        sum
    }

    /// True when a search of `depths` more depths, not yet on the thread pool, starts it at
    /// this serial depth rather than at its first parallel one: the pool's idle threads then
    /// pre-fault the memory the parallel depths will fill ([`Search::prefault_ahead`]), as in
    /// a search given a thread count, whose pool runs from the start. Only for a frontier
    /// that pre-faults ([`PREFAULT_MIN`] positions or more) and reaches [`PARALLEL_MIN`]
    /// within [`POOL_AHEAD_DEPTHS`] depths at the present growth, in a run whose coming
    /// parallel depths are work enough to start the pool for ([`POOL_WORK_MIN`]), as they
    /// will be judged when they come.
    fn pool_for_prefault(&self, depths: u32) -> bool {
        parallel_soon(self.depth_states(), self.growth)
            && self.work_left(depths, PARALLEL_MIN) >= POOL_WORK_MIN
            && rayon::current_num_threads() > 1
    }

    /// The last depth: every position's successors end their paths.
    fn last_depth(&mut self) -> Result<W::Sum> {
        let t = Instant::now();
        let parallel = self.parallel_last();
        let mut sum = W::Sum::zero();
        self.for_each_source(|s| {
            s.plan_pass(parallel);
            let (rules, weights, cur) = (s.rules, s.weights, &s.cur);
            for_each_mut(parallel, &mut s.chunks, |_, c| dispatch::last(rules, weights, cur, c));
            sum = s.chunks.iter().fold(sum, |a, c| a.merge(c.acc));
            Ok(())
        })?;
        // All expansion (summing successors), no insertion.
        self.phase_seconds = [t.elapsed().as_secs_f64(), 0.0];
        Ok(sum)
    }

    /// The last two depths at once (see [`crate::kernels::last_two`]): each one's statistics
    /// and the hashes of the paths that end there. The pass's time goes to the first (all of
    /// it expansion).
    fn last_two(&mut self, done: u32) -> Result<[(DepthStats, W::Sum); 2]> {
        let t = Instant::now();
        let parallel = self.parallel_last();
        let depth = done + 1;
        let mut first = (DepthStats { depth, ..DepthStats::default() }, W::Sum::zero());
        let mut second = (DepthStats { depth: depth + 1, ..DepthStats::default() }, W::Sum::zero());
        self.for_each_source(|s| {
            s.plan_pass(parallel);
            let (rules, weights, cur) = (s.rules, s.weights, &s.cur);
            for_each_mut(parallel, &mut s.chunks, |_, c| dispatch::last_two(rules, weights, cur, c));
            for c in &s.chunks {
                first.0.records += c.records as u64;
                first.0.ended_paths = first.0.ended_paths.wrapping_add(c.ended_paths);
                first.1 = first.1.merge(c.acc);
                second.1 = second.1.merge(c.beyond);
            }
            Ok(())
        })?;
        first.0.seconds = t.elapsed().as_secs_f64();
        first.0.expand_seconds = first.0.seconds;
        Ok([first, second])
    }

    /// One depth that is not the last, of a run to depth `target`: returns the hashes of the
    /// paths that ended (full boards), the number of positions of the next frontier and the
    /// records generated.
    fn step(&mut self, stats: &mut DepthStats, target: u32) -> Result<(W::Sum, u64, u64)> {
        self.phase_seconds = [0.0; 2];
        self.ended.clear_for(0);
        let parallel = self.parallel();
        let total = self.depth_states() as usize;
        let position = position_bytes::<R::Key, W::Count>();
        // (Asking rayon for its thread count starts the pool: only for a parallel depth.)
        let threads = if parallel { rayon::current_num_threads() } else { 1 };
        let plan = self.budget.plan(&Need {
            states: total as u64,
            growth: self.growth,
            position_bytes: budget_position_bytes::<R::Key, W::Count>(),
            resident_bytes: self.cur.bytes() as u64,
            largest_away: self.away.largest(),
            threads,
        });
        // Successors other ranks own go through the outbox's mail.
        let remote = self.ranks.n > 1;
        // One source into a next frontier wholly in memory: the in-memory engine as it is.
        let single = !plan.spills() && self.away.is_empty() && !remote;
        // With the whole frontier in memory, each thread fills a shard of its own (owned) or
        // all fill one set (one lock); else records go through shards, a block at a time.
        // Depths `stats.depth..=target` are left to make: at most that many fills.
        let fills_left = target.saturating_add(1).saturating_sub(stats.depth);
        let pick = (parallel && single).then(|| self.fill.pick(total, fills_left));
        // One thread, when the fill's trials found the threads no faster here.
        let spread = parallel && pick != Some(None);
        let (fill, threads) = (pick.flatten(), if spread { threads } else { 1 });
        stats.fill = fill;
        let shard_bits = match fill {
            Some(Fill::Owned) => threads.next_power_of_two().trailing_zeros(),
            Some(_) => 0,
            None if spread => shard_bits_for(total, position, threads),
            None => 0,
        };
        let resident = plan.resident as f64 / plan.parts() as f64;
        let expect =
            (total as f64 * self.growth * 1.2 * resident / (1u64 << shard_bits) as f64) as usize + 16;
        let mail = self.budget.mail_bytes() / home::mail_record::<R::Key, W::Count>();
        // A depth of parallel size kept to one thread pre-faults nothing: the other core is
        // the one the host takes away.
        let prefault = if single && !parallel { self.prefault_ahead(total, stats.depth, target) } else { 0 };
        if !self.huge_pages && wide_counts::<W::Count>() && parallel_soon(total as u64, self.growth) {
            // A frontier about to be parallel grows to megabytes: its sets take huge pages
            // while they are small (see `MmapArray::use_huge_pages`), not from their third
            // megabyte on. Frontiers that level off below never pay for a whole huge page.
            // Only for lanes and coset lanes ([`wide_counts`]).
            self.cur.use_huge_pages();
            self.next.use_huge_pages();
            self.huge_pages = true;
        }
        self.next.resize_shards(shard_bits);
        let clearing = Instant::now();
        if fill != Some(Fill::Owned) {
            // In an owned fill each shard is cleared by its owner; else on the pool when the
            // depth is parallel: the shards spread over the threads, and a large one (the one
            // set of a one-lock fill) in pieces ([`OnPool`]).
            for_each_mut(spread, self.next.shards_mut(), |_, s| {
                if spread {
                    s.reset_with(shard_bits, expect, &OnPool);
                } else {
                    s.reset(shard_bits, expect);
                }
            });
        }
        let cleared = clearing.elapsed().as_secs_f64();
        let mode = Mode { parallel: spread, fill, shard_bits, threads, mail, expect, prefault, cleared };
        let pool = if plan.spills() { Some(self.storage.pool()?) } else { None };
        let outbox = (plan.spills() || remote).then(|| Outbox::new(plan, pool, self.ranks));
        let (mut ended, mut records) = (W::Sum::zero(), 0usize);
        self.for_each_source(|s| {
            let (e, r) = s.expand_source(&mode, &plan, outbox.as_ref(), &mut stats.ended_paths);
            ended = ended.merge(e);
            records += r;
            Ok(())
        })?;
        if single && !spread {
            // What the fill's trials must beat.
            self.fill.record_one_thread(clearing.elapsed().as_secs_f64(), records as u64, total);
        }
        if let (true, Some(outbox)) = (remote, &outbox) {
            // This rank's sources are done: its last mail goes, and it takes what the others
            // send until every rank is done.
            while !post(self.cluster, outbox, &mut self.next, true, &mut self.room) {}
            if self.count_boards {
                self.share_ended();
            }
        }
        let states_home = self.next.len() as u64;
        if outbox.is_some() {
            // The source is done with: its memory goes back before the merge sets take theirs.
            self.cur.reset(0, 0);
        }
        // The partitions on disk: merged, counted, written as the next depth's files.
        let t_merge = Instant::now();
        let (away, away_sum, away_boards) = match outbox {
            Some(outbox) if plan.spills() => {
                let (parts, written) = outbox.finish()?;
                self.io.1 += written;
                let place = self.storage.place(stats.depth)?;
                self.merge(parts, &place)?
            }
            _ => (Vec::new(), W::Sum::zero(), 0),
        };
        // The files of the depth just expanded are no longer needed (a checkpoint's are
        // removed when the next depth is committed).
        if self.storage.checkpoint.is_none() && !self.away.is_empty() {
            self.storage.place(stats.depth)?.discard(&self.away.parts)?;
        }
        if !away.is_empty() {
            self.phase_seconds[1] += t_merge.elapsed().as_secs_f64();
        }
        let away = Away { parts: away };
        let states = states_home + away.states();
        if self.count_boards {
            let (rules, weights) = (self.rules, self.weights);
            let count = |set: &CountSet<R::Key, W::Count>| -> u64 {
                set.iter().map(|(k, n)| weights.boards(rules, k, &n)).sum()
            };
            let stored: u64 = self.next.shards().par_iter().map(count).sum();
            stats.boards = Some(stored + away_boards + count(&self.ended));
        }
        self.growth = states as f64 / total.max(1) as f64;
        self.fanout = records as f64 / total.max(1) as f64;
        std::mem::swap(&mut self.cur, &mut self.next);
        (self.away, self.away_sum, self.bits) = (away, away_sum, plan.bits);
        if !single {
            // The source's memory goes back before the next depth is planned (in memory alone,
            // it is kept for the next memory home, as its tables are reused).
            self.next.reset(0, 0);
        }
        if self.budget.must_evict(self.cur.bytes() as u64) {
            // The estimate fell short: the memory home alone passes the limit; it goes to disk.
            // Its positions' hashes join the sum kept for the partitions there, which is all
            // that the depth's answer (and a last depth's, counting boards) reads of them.
            self.away_sum = self.frontier_hashes();
            let place = self.storage.place(stats.depth)?;
            let written = home::write_home(&self.cur, self.bits, &place, false)?;
            self.io.1 += written.iter().map(|p| p.bytes).sum::<u64>();
            self.away.parts.extend(written);
            self.away.parts.sort_by_key(|p| p.index);
            self.cur.reset(0, 0);
        }
        Ok((ended, states, records as u64))
    }

    /// With several ranks and boards counted: sends each full board reached at this depth to
    /// its owner, so that each rank counts the full boards it owns (a board reached on two
    /// ranks is one board). Collective.
    fn share_ended(&mut self) {
        let room = &mut self.room;
        room.mail.resize_with(self.ranks.n, Vec::new);
        room.mail.iter_mut().for_each(Vec::clear);
        let mut own = CountSet::new(0);
        for (k, c) in self.ended.iter() {
            let to = self.ranks.owner(frontier::key_hash(&k));
            if to == self.ranks.me {
                own.insert(k, &c);
            } else {
                home::put_record(&mut room.mail[to], &k, &c);
            }
        }
        let record = home::mail_record::<R::Key, W::Count>();
        let all_done = cluster::exchange(self.cluster, room, record, true, |got| {
            for (k, c) in home::records::<R::Key, W::Count>(got) {
                own.insert(k, &c);
            }
        });
        debug_assert!(all_done);
        self.ended = own;
    }

    /// Merges the partitions on disk `parts` (one a worker at a time), each into one file in
    /// `place`: the merged partitions, the sum of counts times hashes over them (with
    /// `--all-depths`, or when boards are counted) and the boards they stand for.
    fn merge(&mut self, parts: Vec<Part>, place: &Place) -> Result<(Vec<Part>, W::Sum, u64)> {
        let pool = self.storage.pool()?;
        let (rules, weights, count_boards) = (self.rules, self.weights, self.count_boards);
        let workers = rayon::current_num_threads().min(parts.len()).max(1);
        while self.merge_sets.len() < workers {
            self.merge_sets.push(Mutex::new(CountSet::new(0)));
        }
        let (sync, reserve) = (self.storage.checkpoint.is_some(), place.reserve());
        // Distinct positions per record sent, as at the last depth.
        let distinct = (self.growth / self.fanout.max(1e-9)).clamp(0.01, 1.0);
        let sets = &self.merge_sets;
        let outs: Vec<_> = parts.iter().map(|p| place.file(p.index)).collect();
        let merged: Vec<Result<(home::Merged, W::Sum, u64)>> = parts
            .into_par_iter()
            .zip(outs)
            .map(|(part, out)| {
                let mine = rayon::current_thread_index().unwrap_or(0) % sets.len();
                let set = &mut *sets[mine].lock().unwrap_or_else(|e| e.into_inner());
                let (mut sum, mut boards) = (W::Sum::zero(), 0u64);
                let expect = (part.states as f64 * distinct * 1.1) as usize + 16;
                let m = home::merge(part, set, expect, (&out, sync, reserve), &pool, |k, n| {
                    weights.end(&mut sum, n, &rules.hashes(k));
                    if count_boards {
                        boards += weights.boards(rules, k, n);
                    }
                })?;
                Ok((m, sum, boards))
            })
            .collect();
        // The sets' memory goes back before the next depth unless the budget lets them stay
        // (it counts them while partitions are merged, and small idle ones beside the source).
        let idle: usize = self.merge_sets.iter_mut().map(|m| m.get_mut().map_or(0, |s| s.bytes())).sum();
        if !self.budget.may_keep(idle as u64) {
            self.merge_sets.clear();
        }
        let (mut parts, mut sum, mut boards) = (Vec::new(), W::Sum::zero(), 0);
        for m in merged {
            let (home::Merged { part, read, written }, s, b) = m?;
            self.io.0 += read;
            self.io.1 += written;
            (sum, boards) = (sum.merge(s), boards + b);
            if part.states > 0 {
                parts.push(part);
            } else {
                place.discard(std::slice::from_ref(&part))?;
            }
        }
        Ok((parts, sum, boards))
    }

    /// Expands the source in `cur` into the next memory home (and `outbox`): returns the
    /// hashes of the paths that ended on full boards and the records generated, adds the
    /// paths ended to `ended_paths`.
    fn expand_source(
        &mut self,
        mode: &Mode,
        plan: &Plan,
        outbox: Option<&Outbox<R::Key, W::Count>>,
        ended_paths: &mut u32,
    ) -> (W::Sum, usize) {
        let Mode { parallel, fill, shard_bits, threads, mail, expect, prefault, cleared } = *mode;
        let (cluster, remote) = (self.cluster, self.ranks.n > 1);
        let count_boards = self.count_boards;
        // A parallel fill's threads take chunks as they free up: small ones end the depth
        // together (the blocks keep full-sized chunks).
        self.plan_chunks(1, if fill.is_some() { threads } else { 1 });
        let (rules, weights, cur, next, fanout) =
            (self.rules, self.weights, &self.cur, &mut self.next, self.fanout);
        let room = &mut self.room;
        let (mut records, mut ended) = (0, W::Sum::zero());
        // What an expanded chunk found besides the successors it stored or bucketed.
        let mut gather = |c: &Chunk<R::Key, W::Sum>, ended_set: &mut CountSet<R::Key, W::Count>| {
            ended = ended.merge(c.acc);
            *ended_paths = ended_paths.wrapping_add(c.ended_paths);
            let parents = c.parents(cur);
            for r in &c.full {
                ended_set.insert(r.key, &r.counts(rules, weights, parents));
            }
        };
        if self.batches.len() < threads {
            self.batches.resize_with(threads, Default::default);
        }
        let batches = &self.batches;
        if let Some(fill) = fill {
            let t0 = Instant::now();
            // A chunk first to the thread that filled its source shard (shard `s` by thread
            // `s % threads`, as at every owned depth): its slots are in that core's caches.
            let owner: Vec<usize> = self.chunks.iter().map(|c| c.shard % threads).collect();
            let deal = Deal::new(&owner, threads);
            let chunks: Vec<_> = self.chunks.iter_mut().map(Mutex::new).collect();
            // Thread `me` expands the chunks dealt to it into `sink`.
            let expand_dealt = |me: usize, sink: &mut ExpandChunk<'_, R::Key, W::Sum, W::Count>| {
                // Each worker its own buffers: no lock is contended.
                let buffers = &mut *batches[me % batches.len()].lock().unwrap_or_else(|e| e.into_inner());
                while let Some(i) = deal.next(me) {
                    let c = &mut **chunks[i].lock().unwrap_or_else(|e| e.into_inner());
                    c.records = sink(c, buffers);
                }
            };
            if fill == Fill::Owned {
                // Every thread expands chunks straight into the shards it owns, and posts the
                // successors of the others' shards to them (see [`Owned`]).
                // One thread's buffers a worker of the pool (whose size is `threads`).
                self.letters.resize_with(threads, Default::default);
                for (me, letters) in self.letters.iter_mut().enumerate() {
                    letters.get_mut().unwrap_or_else(|e| e.into_inner()).prepare(
                        1 << shard_bits,
                        me,
                        threads,
                    );
                }
                self.mailboxes.prepare(1 << shard_bits);
                let post = &self.mailboxes;
                let sets: Vec<_> = next.shards_mut().iter_mut().map(Mutex::new).collect();
                let letters = &self.letters;
                let done = AtomicUsize::new(0);
                rayon::broadcast(|ctx| {
                    let me = ctx.index();
                    // Each thread clears the shards it owns: their tables are then in its caches.
                    for s in (me..sets.len()).step_by(threads) {
                        sets[s].lock().unwrap_or_else(|e| e.into_inner()).reset(shard_bits, expect);
                    }
                    let letters = &mut *letters[me].lock().unwrap_or_else(|e| e.into_inner());
                    let mut sink = Owned::new(&sets, shard_bits, post, letters);
                    expand_dealt(me, &mut |c, buffers| {
                        dispatch::direct(rules, weights, cur, c, &mut sink, buffers, count_boards)
                    });
                    sink.finish(&done, threads);
                });
            } else {
                // Every thread expands chunks straight into the one set, behind one lock (see
                // [`OneLock`]).
                self.waiting.resize_with(threads, Default::default);
                let set = Mutex::new(next.shard_mut(0));
                let waiting = &self.waiting;
                rayon::broadcast(|ctx| {
                    let me = ctx.index();
                    let waiting = &mut *waiting[me].lock().unwrap_or_else(|e| e.into_inner());
                    let mut sink = OneLock::new(&set, waiting);
                    expand_dealt(me, &mut |c, buffers| {
                        dispatch::direct(rules, weights, cur, c, &mut sink, buffers, count_boards)
                    });
                    sink.finish();
                });
            }
            drop(chunks);
            for c in self.chunks.iter() {
                records += c.records;
                gather(c, &mut self.ended);
            }
            let seconds = t0.elapsed().as_secs_f64();
            self.phase_seconds[0] += seconds;
            self.fill.record(seconds + cleared, records as u64);
        } else if parallel {
            // A block of chunks is expanded, then inserted, before the next: the records in
            // flight (and the memory they need) stay bounded. A chunk is a range of table
            // slots, some of them empty: its records are its positions' (`per_slot`).
            let slots: usize = cur.shards().iter().map(|s| s.slot_count()).sum();
            let per_slot = fanout.max(1.0) * cur.len() as f64 / slots.max(1) as f64;
            let bucketing = Bucketing { shard_bits, per_slot };
            let record = std::mem::size_of::<crate::kernels::Record<R::Key>>();
            let per_chunk = (bucketing.room(CHUNK_SLOTS) * record) as f64;
            let mut block =
                ((plan.records_in_flight as f64 / per_chunk) as usize).clamp(threads, BLOCK_CHUNKS);
            if remote {
                // About a mail's worth of successors a block (a chunk's, at most, go to others).
                let per_chunk = CHUNK_SLOTS as f64 * per_slot;
                block = block.min((mail as f64 / per_chunk) as usize).max(threads);
            }
            if self.made.len() < threads {
                self.made.resize_with(threads, Default::default);
            }
            let made = &self.made;
            let blocks = self.chunks.len().div_ceil(block.max(1));
            for b in 0..blocks {
                let range = b * block..((b + 1) * block).min(self.chunks.len());
                if b > 0 {
                    // The buckets' memory passes from block to block: the records in flight
                    // stay within one block's.
                    pass_buckets(&mut self.chunks, range.start - block, range.start, range.len());
                }
                let block = &mut self.chunks[range];
                let t0 = Instant::now();
                for_each_mut(parallel, block, |_, c| {
                    let me = rayon::current_thread_index().unwrap_or(0);
                    let made = &mut *made[me % made.len()].lock().unwrap_or_else(|e| e.into_inner());
                    dispatch::expand(rules, weights, cur, c, made, bucketing, count_boards)
                });
                let t1 = Instant::now();
                for c in block.iter() {
                    records += c.bucketed();
                    gather(c, &mut self.ended);
                }
                let block = &*block;
                for_each_mut(parallel, next.shards_mut(), |s, set| {
                    dispatch::insert(rules, weights, cur, block, s, set, outbox)
                });
                self.phase_seconds[0] += (t1 - t0).as_secs_f64();
                self.phase_seconds[1] += t1.elapsed().as_secs_f64();
                if let (true, Some(outbox)) = (remote, outbox) {
                    if outbox.mail_len() >= mail {
                        post(cluster, outbox, next, false, room);
                    }
                }
            }
            // The buckets' memory goes back to the first chunks, where the next depth starts:
            // chunks further on would keep theirs, unused, beside those that the next depth's
            // first block makes.
            gather_buckets(&mut self.chunks);
        } else {
            let t0 = Instant::now();
            let buffers = &mut *batches[0].lock().unwrap_or_else(|e| e.into_inner());
            match outbox {
                None => {
                    let set = next.shard_mut(0);
                    let (chunks, ended_set) = (&mut self.chunks, &mut self.ended);
                    // An idle thread of the pool pre-faults the source's memory for the
                    // coming depths while this one expands it. The job stops at its next piece
                    // once the expansion ends or unwinds (the guard's drop; at once, when no
                    // thread took it before then), and this thread does not wait for it: the
                    // job holds the maps it faults, and faulting changes no byte.
                    let _stop_job = (prefault > 0).then(|| {
                        let job = cur.prefault(prefault);
                        let stop = Arc::new(AtomicBool::new(false));
                        let flag = Arc::clone(&stop);
                        rayon::spawn(move || job.run(&flag));
                        StopOnDrop(stop)
                    });
                    for c in chunks.iter_mut() {
                        records += dispatch::direct(rules, weights, cur, c, set, buffers, count_boards);
                        gather(c, ended_set);
                    }
                }
                Some(outbox) => {
                    let mut split = Split::default();
                    for c in self.chunks.iter_mut() {
                        let set = next.shard_mut(0);
                        let mut routed = Routed { set, sender: outbox.sender(), split: &mut split };
                        records +=
                            dispatch::direct(rules, weights, cur, c, &mut routed, buffers, count_boards);
                        // The sender (this thread's writers) goes before the mail is taken.
                        drop(routed);
                        gather(c, &mut self.ended);
                        if remote && outbox.mail_len() >= mail {
                            post(cluster, outbox, next, false, room);
                        }
                    }
                }
            }
            self.phase_seconds[0] += t0.elapsed().as_secs_f64();
        }
        (ended, records)
    }
}

/// One exchange of a rank's mail ([`cluster::exchange`]): sends what `outbox` holds for other
/// ranks, files what they send into `next` (or the outbox's files). Returns true when every
/// rank said it was `done`. Collective.
fn post<K: PackedKey, C: Tally>(
    cluster: &dyn Cluster,
    outbox: &Outbox<K, C>,
    next: &mut Frontier<K, C>,
    done: bool,
    room: &mut cluster::Mailroom,
) -> bool {
    outbox.take_mail(&mut room.mail);
    cluster::exchange(cluster, room, home::mail_record::<K, C>(), done, |got| {
        home::deliver(got, next, outbox)
    })
}

/// Frontiers smaller than this are expanded on the calling thread, straight into one set
/// ([`crate::kernels::direct`]): below it, starting the pool and handing work between threads
/// costs more than a second thread saves (small searches never start the pool at all), and a
/// second vCPU may start work late. Every sum is a wrapping one, so both ways give the
/// same answers and statistics (a test checks it). The twelve public cases, run as a sequence
/// per binary, are no slower with this value than with twice it, and the 3x3 boards with a
/// die gain (figures in benches/RESULTS.md).
const PARALLEL_MIN: usize = 1 << 14;

/// The least work, in positions the rest of a run is expected to expand ([`Search::work_left`]),
/// for which a search starts its thread pool: starting it, and the first parallel depths'
/// fresh shards and wake-ups, cost more than a second thread saves in a run that ends a few
/// depths later: public case cg11 (depth 20, its last four depths over 16 384 positions, about
/// 100 000 positions left when the first of them comes) runs faster on one thread than on
/// two (figures in benches/RESULTS.md). A run that passes it later starts the pool then; once
/// started, every depth of [`PARALLEL_MIN`] positions or more is parallel. A search given a
/// thread count ([`crate::Options::threads`]) runs on a pool from the start (for one thread,
/// possibly the caller's), so this decides only the default's lazy pool.
const POOL_WORK_MIN: f64 = (1 << 18) as f64;

/// How many depths before its frontier reaches [`PARALLEL_MIN`] positions (at the present
/// growth) a search starts its lazy pool, for the pool's idle threads to pre-fault memory
/// ([`Search::pool_for_prefault`]). Not more: a frontier's growth slows as the board fills,
/// and the frontiers of many boards with dice level off below [`PARALLEL_MIN`] (the twelve
/// public cases' all do): those runs never start the pool.
const POOL_AHEAD_DEPTHS: i32 = 2;

/// True when a frontier of `states` positions is large enough to pre-fault for
/// ([`PREFAULT_MIN`] positions or more) and reaches [`PARALLEL_MIN`] within
/// [`POOL_AHEAD_DEPTHS`] depths at `growth`: a serial depth that starts the lazy pool
/// ([`Search::pool_for_prefault`]), and one whose idle pool thread pre-faults
/// ([`Search::prefault_ahead`]).
fn parallel_soon(states: u64, growth: f64) -> bool {
    states >= PREFAULT_MIN as u64 && states as f64 * growth.powi(POOL_AHEAD_DEPTHS) >= PARALLEL_MIN as f64
}

/// The smallest serial depth (in positions) whose idle threads pre-fault memory for the
/// coming depths ([`Search::prefault_ahead`]): a smaller one takes a fraction of a
/// millisecond, too short to fault much, and its frontier is far from the sizes that need
/// fresh pages.
const PREFAULT_MIN: usize = 1 << 12;

/// How many depths ahead of a serial one the memory of the source's sets is pre-faulted for
/// ([`Search::prefault_ahead`]).
const PREFAULT_DEPTHS: u32 = 8;

/// Sets its flag when dropped: stops a detached job when the work it runs beside ends, however
/// it ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

/// Calls `f(index, item)` on every item: on the thread pool when `parallel` and there is more
/// than one item, else on the calling thread, in order.
fn for_each_mut<T: Send>(parallel: bool, items: &mut [T], f: impl Fn(usize, &mut T) + Sync + Send) {
    if !parallel || items.len() <= 1 {
        items.iter_mut().enumerate().for_each(|(i, t)| f(i, t));
    } else {
        items.par_iter_mut().enumerate().for_each(|(i, t)| f(i, t));
    }
}

/// Moves the buckets (and their memory) of chunks `from..from + n` to chunks `to..to + n`,
/// dropping what those held.
fn pass_buckets<K: Copy, S>(chunks: &mut [Chunk<K, S>], from: usize, to: usize, n: usize) {
    for i in 0..n {
        chunks[to + i].buckets = std::mem::take(&mut chunks[from + i].buckets);
    }
}

/// Moves every chunk's buckets that hold memory to the first chunks, in order: after a depth
/// in blocks, those of its last block and, past a short last block, the rest of the one before.
fn gather_buckets<K: Copy, S>(chunks: &mut [Chunk<K, S>]) {
    let mut to = 0;
    for from in 0..chunks.len() {
        if chunks[from].buckets.holds_memory() {
            chunks[to].buckets = std::mem::take(&mut chunks[from].buckets);
            to += 1;
        }
    }
}

/// A depth that takes longer than this (seconds) reads the peak memory after it: a read
/// costs some 20 microseconds ([`peak_memory`]), under half a percent of such a depth.
const PEAK_READ_SECONDS: f64 = 5e-3;

/// Bytes a task of [`OnPool`] clears.
const ZERO_PIECE: usize = 256 << 10;

/// A [`frontier::Zeroer`] on the thread pool: a table is cleared a piece of [`ZERO_PIECE`]
/// bytes a task, and fresh pages pre-faulted a piece a task, on every thread.
struct OnPool;

impl frontier::Zeroer for OnPool {
    fn zero<T: Copy + Send + Sync>(&self, items: &mut [T], zero: T) {
        let per = (ZERO_PIECE / std::mem::size_of::<T>().max(1)).max(1);
        items.par_chunks_mut(per).for_each(|piece| piece.fill(zero));
    }

    fn each_piece(&self, pieces: usize, f: &(dyn Fn(usize) + Sync)) {
        (0..pieces).into_par_iter().for_each(f);
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
/// layout (load 1/4 to 1/2), or its dense slot and 6 `u32` table slots (load 1/8 to 1/4, or
/// 1/4 to 1/2 in the largest tables; small tables' `u16` numbers take half that).
fn position_bytes<K: PackedKey, C: Tally>() -> usize {
    let slot = CountSet::<K, C>::SLOT_BYTES;
    if frontier::CountSet::<K, C>::INLINE {
        3 * slot
    } else {
        slot + 6 * 4
    }
}

/// The bytes a position may take in a set, for the budget: up to 4 table slots in the inline
/// layout (a table is the smallest power of two at load at most 1/2), or its dense slot and 8
/// `u32` table slots.
fn budget_position_bytes<K: PackedKey, C: Tally>() -> f64 {
    let slot = CountSet::<K, C>::SLOT_BYTES;
    (if CountSet::<K, C>::INLINE { 4 * slot } else { slot + 8 * 4 }) as f64
}

/// A thread's share of the next frontier that still counts as small: about a core's L2.
const SHARE_BYTES: usize = 2 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::{Lanes, Orbits};
    use frontier::Zeroer;
    use state::{Grid, Level, Shape};

    /// Sizes (positions at a depth and the one before) from real runs: the 3x3 boards with a
    /// die and the empty one start the lazy pool a depth or two before their first parallel
    /// depth; the public cases whose frontiers level off below [`PARALLEL_MIN`] never do.
    #[test]
    fn the_pool_starts_early_only_for_frontiers_about_to_be_parallel() {
        let soon = |before: u64, now: u64| parallel_soon(now, now as f64 / before as f64);
        // The die in a corner, depths 14 to 17: from depth 15 on.
        assert!(!soon(4656, 6524));
        assert!(soon(6524, 8981));
        assert!(soon(8981, 12088));
        assert!(soon(12088, 15964));
        // The empty board, depths 15 and 16.
        assert!(!soon(4695, 6576));
        assert!(soon(6576, 9039));
        // Public case cg10 (the largest frontier of the twelve: 11 805), every depth from
        // 4 096 positions to its largest; and cg09's largest.
        let cg10 = [2929, 4156, 5460, 7014, 8452, 9679, 10841, 11474, 11805];
        for w in cg10.windows(2) {
            assert!(!soon(w[0], w[1]), "{w:?}");
        }
        assert!(!soon(7103, 7174));
        // Too small to pre-fault, however fast it grows.
        assert!(!soon(100, (PREFAULT_MIN - 1) as u64));
    }

    #[test]
    fn on_pool_clears_every_item_and_visits_every_piece_once() {
        for len in [0, 1, 1000, ZERO_PIECE / 8 - 1, 3 * ZERO_PIECE / 8 + 5] {
            let mut items: Vec<u64> = (0..len as u64).map(|i| i | 1).collect();
            OnPool.zero(&mut items, 0);
            assert!(items.iter().all(|&x| x == 0), "{len} items");
        }
        let seen: Vec<AtomicUsize> = (0..37).map(|_| AtomicUsize::new(0)).collect();
        OnPool.each_piece(seen.len(), &|i| {
            seen[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        });
        assert!(seen.iter().all(|n| n.load(std::sync::atomic::Ordering::Relaxed) == 1));
    }

    /// Every fill of several threads (owned, one lock, and the trials of both) gives, depth by
    /// depth, the frontier that one thread makes: on two threads (for an owned fill, a shard
    /// each) and on three (four shards: one thread owns two), over `depths` depths from
    /// `cells`. Positions compare as the bytes of their keys and counts.
    fn fills_match_one_thread<R: Rules, W: Weights>(rules: &R, weights: W, cells: &[u8], depths: usize) {
        let start = rules.pack(cells);
        let frontiers = |threads: usize, fill: Fill| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut search =
                    Search::new(rules, weights, Budget::new(None), Storage::default(), &crate::cluster::Solo);
                search.fill = fill::Choice::new(fill);
                let (c, t) = rules.canonical(start);
                search.cur.reset(0, 1);
                search.cur.shard_mut(0).insert(c, &weights.start(rules, t));
                let mut frontiers = Vec::new();
                for _ in 0..depths {
                    search.step(&mut DepthStats::default(), u32::MAX).unwrap();
                    let mut positions: Vec<Vec<u8>> = search
                        .cur
                        .shards()
                        .iter()
                        .flat_map(|s| s.iter())
                        .map(|(k, n)| [bytemuck::bytes_of(&k), bytemuck::bytes_of(&n)].concat())
                        .collect();
                    positions.sort_unstable();
                    frontiers.push(positions);
                }
                frontiers
            })
        };
        let one = frontiers(1, Fill::Auto);
        let parallel = one.iter().filter(|f| f.len() >= PARALLEL_MIN).count();
        assert!(parallel > fill::TRIALS as usize, "too few depths are parallel on two threads");
        for fill in [Fill::Owned, Fill::OneLock, Fill::Auto] {
            assert!(one == frontiers(2, fill), "two threads, {fill:?}");
            assert!(one == frontiers(3, fill), "three threads, {fill:?}");
        }
    }

    /// The buckets that hold memory end up in the first chunks, in order, and no memory is
    /// left anywhere else.
    #[test]
    fn gathered_buckets_hold_their_memory_in_the_first_chunks() {
        let mut chunks: Vec<Chunk<u32, u64>> = (0..10).map(|_| Chunk::new()).collect();
        for (i, at) in [7usize, 2, 8, 9].into_iter().enumerate() {
            chunks[at].buckets = crate::kernels::Buckets::with_capacity(100 * (i + 1));
        }
        gather_buckets(&mut chunks);
        let held: Vec<usize> = chunks.iter().map(|c| c.buckets.capacity()).collect();
        // In chunk order: 2 (200), 7 (100), 8 (300), 9 (400); `with_capacity` gives at least.
        for (h, want) in held.iter().zip([200, 100, 300, 400]) {
            assert!((want..want + 100).contains(h), "{held:?}");
        }
        assert!(held[4..].iter().all(|&h| h == 0), "{held:?}");
    }

    /// 8 lanes in the dense layout, and orbit masses in packed slots (the 3x3's).
    #[test]
    fn fills_match_one_thread_for_lanes_and_masses() {
        let grid = Grid::<u64>::new(Shape::new(4, 4).unwrap(), Level::Portable);
        fills_match_one_thread(&grid, Lanes, &[0; 16], 15);
        let ring = state::Ring3::new(state::canon::Portable);
        let empty = ring.pack(&[0; 9]);
        const { assert!(CountSet::<u32, frontier::Count34>::PACKED) };
        fills_match_one_thread(&ring, Orbits::of(&ring, empty).expect("symmetric"), &[0; 9], 26);
    }
}

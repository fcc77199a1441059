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
//! Within a source, a depth runs one of the ways of [`plan::Way`], all with the same
//! results; [`plan::depth`] decides which, and each has its executor in [`exec`]. The fill of
//! parallel depths in memory (owned or one lock) is measured on the run's first parallel
//! depths ([`crate::fill`]).
//!
//! At the last depth nothing is generated: each position adds its counts times the summed
//! hashes of its successors ([`Weights::end_successors`]); where those sums are cheap
//! ([`Weights::cheap_successor_sums`]), the last two depths are one pass. Chunks, shards and
//! partitions depend only on the data, and wrapping sums commute, so the answer (and every
//! statistic) is the same for any number of threads and wherever the partitions live.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use frontier::{CountSet, Frontier, Tally};
use state::{Counts, PackedKey, Rules};

use crate::budget::{Budget, Need};
use crate::checkpoint::Manifest;
use crate::cluster::{self, Cluster, Ranks};
use crate::error::{Error, Result};
use crate::fill::{self, Fill};
use crate::home::{Away, Outbox};
use crate::kernels::{add, own_hash, Batches, Chunk, Letters, Lined, Made, Post, Waiting};
use crate::plan::{self, DepthPlan, Facts, Way};
use crate::stats::{peak_memory, DepthStats, Observer, RankSummary};
use crate::weights::{wide_counts, Weights};
use crate::Cancel;

mod disk;
mod exec;
mod passes;
mod pool;
mod ranks;

pub(crate) use disk::Storage;
use passes::{gather_buckets, pass_buckets, OnPool, BLOCK_CHUNKS, CHUNK_SLOTS};
use pool::for_each_mut;
use ranks::post;

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
    /// The depth of the current frontier, and the run's last depth.
    depth: u32,
    target: u32,
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
    /// For a whole game ([`RunConfig::state_space`]): every position reached so far, at any
    /// depth, with the lanes reached ([`Weights::reached`]); `None` when not asked for, or
    /// once a depth went to disk.
    reached: Option<CountSet<R::Key, W::Count>>,
    budget: Budget,
    storage: Storage,
    /// Bytes read and written by the current depth.
    io: (u64, u64),
    /// Stops the run between depths (every rank together), or within a depth at the next
    /// chunk or source (one rank alone).
    pub(crate) cancel: Option<Cancel>,
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
    /// The distinct boards reached at any depth (with board counting, in memory).
    pub state_space: bool,
}

/// Where a search is: the depths done and what they found, the peak memory as last read.
struct Progress {
    done: u32,
    /// Positions of the depth `done` over every rank.
    states: u64,
    out: Outcome,
    /// The peak memory as last read.
    peak: u64,
    /// In an exact count: the paths of the depth `done` over every rank, once known.
    paths: Option<u128>,
}

/// The result of a search.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// Per-lane sums of every path's final hash.
    pub total: Counts,
    /// `answers[d]`: the answer for depth `d`, when all depths were asked for, up to the last
    /// depth the search made (every path may end before the depth asked for: the later
    /// depths' answers are then all the last one's).
    pub answers: Vec<u32>,
    /// Per-depth statistics, depth 0 first (from the checkpoint's depth on, when resumed).
    pub stats: Vec<DepthStats>,
    /// Where the checkpoint is and the bytes it takes, when saved.
    pub checkpoint: Option<(PathBuf, u64)>,
    /// Each rank's own figures, in rank order (one, unless distributed).
    pub ranks: Vec<RankSummary>,
    /// With [`RunConfig::state_space`]: the distinct boards reached at any depth from 0,
    /// over every rank; `None` when a depth went to disk.
    pub state_space: Option<u64>,
}

/// One value a worker thread, each alone on its cache lines ([`Lined`]) behind a lock that
/// only its worker takes while threads run.
type PerWorker<T> = Vec<Lined<Mutex<T>>>;

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
            depth: 0,
            target: 0,
            huge_pages: false,
            fanout: 8.0,
            phase_seconds: [0.0; 2],
            count_boards: false,
            ended: CountSet::new(0),
            reached: None,
            budget,
            storage,
            io: (0, 0),
            cancel: None,
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
        self.count_boards = config.count_boards;
        self.reached =
            (config.state_space && config.count_boards && resume.is_none()).then(|| CountSet::new(0));
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
            None => (0, self.start(start, depth, config, &mut out, observe)?),
        };
        let mut progress = Progress { done, states, out, peak: 0, paths: None };
        self.depths(&mut progress, depth, config, observe)?;
        let mut out = progress.out;
        if self.ranks.n > 1 {
            // Every rank's partial sums of the lanes, added (each depth's answer was summed
            // over the ranks as the depth ended).
            let mine: Vec<u64> = out.total.iter().map(|&x| u64::from(x)).collect();
            let sums = cluster::sum_over(self.cluster, &mine);
            for (t, s) in out.total.iter_mut().zip(sums) {
                *t = s as u32;
            }
        }
        out.ranks = self.rank_summaries();
        if config.state_space {
            out.state_space = self.state_space();
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

    /// Depth 0: the start board, stored (or its path ended, when it is full or the depth is
    /// 0) and counted into `out`. Returns the positions of depth 0 over every rank.
    fn start(
        &mut self,
        start: &[u8],
        depth: u32,
        config: RunConfig,
        out: &mut Outcome,
        observe: &mut Observer<'_>,
    ) -> Result<u64> {
        let (rules, weights) = (self.rules, self.weights);
        let t0 = Instant::now();
        let s = rules.pack(start);
        let mut ended = [0u32; 8];
        // Rank 0 counts the start and any path it ends; its owner stores it.
        let first_rank = self.ranks.me == 0;
        let mut first = DepthStats { depth: 0, records: u64::from(first_rank), ..DepthStats::default() };
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
        if depth == 0 || rules.is_full(s) {
            // The start ended its path: with board counting, it is a board of depth 0.
            let (c, t) = rules.canonical(s);
            if first_rank {
                self.ended.insert(c, &weights.start(rules, t));
            }
        }
        self.note_reached();
        first.ended = state::fold_lanes(&ended);
        add(&mut out.total, &ended);
        if config.all_depths {
            let mut v = ended;
            if !self.cur.is_empty() {
                let here = self.frontier_hashes();
                add(&mut v, &self.as_lanes(&here));
            }
            first.answer = Some(state::fold_lanes(&v));
        }
        self.commit(0, depth, &out.total)?;
        first.seconds = t0.elapsed().as_secs_f64();
        let states = self.over_ranks(&mut first);
        out.answers.extend(first.answer);
        observe(&first);
        out.stats.push(first);
        Ok(states)
    }

    /// Positions of the current depth, in every home.
    fn depth_states(&self) -> u64 {
        self.cur.len() as u64 + self.away.states()
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
            (self.depth, self.target) = (p.done, depth);
            if plan::start_pool(&self.facts(p.done + 1)) {
                // The rest runs on a pool thread, which then takes part in every parallel
                // phase itself: each wakes one thread fewer than a call from outside the pool
                // (small searches never get here, nor start the pool).
                return pool::within(&mut || self.depths(p, depth, config, observe));
            }
            self.stop_between_depths()?;
            self.io = (0, 0);
            let cheap_sums = self.weights.cheap_successor_sums(self.rules);
            if plan::last_two_in_one(
                &self.facts(p.done + 1),
                cheap_sums,
                self.count_boards || config.all_depths,
            ) {
                self.last_two_depths(p, depth, observe)?;
                break;
            }
            self.check_exact(p)?;
            self.one_depth(p, depth, config, observe)?;
        }
        Ok(())
    }

    /// Stops before the depth after `self.depth` when any rank's run was cancelled.
    /// Collective: every rank learns whether one was, and they all stop together.
    fn stop_between_depths(&self) -> Result<()> {
        let mine = self.cancel.as_ref().is_some_and(Cancel::is_cancelled);
        let any =
            if self.ranks.n > 1 { cluster::sum_over(self.cluster, &[u64::from(mine)])[0] > 0 } else { mine };
        if any {
            return Err(Error::Cancelled { depth: self.depth + 1 });
        }
        Ok(())
    }

    /// What stops the depth in progress at its next chunk: the token, for a run of one rank
    /// (ranks stop together, between depths).
    pub(super) fn stop(&self) -> Option<Cancel> {
        if self.ranks.n == 1 {
            self.cancel.clone()
        } else {
            None
        }
    }

    /// Stops the depth in progress (one rank alone) when the run was cancelled.
    pub(super) fn stop_within_depth(&self) -> Result<()> {
        if stopped(&self.stop()) {
            return Err(Error::Cancelled { depth: self.depth + 1 });
        }
        Ok(())
    }

    /// In an exact count: refuses the depth after `p.done` when its paths could pass 2^128
    /// (a position has at most [`most_moves`] moves).
    fn check_exact(&mut self, p: &mut Progress) -> Result<()> {
        if self.weights.exact(&W::Sum::zero()).is_none() {
            return Ok(());
        }
        let paths = match p.paths {
            Some(paths) => paths,
            None => {
                // Depth 0, or a resumed run: the paths at the current positions.
                let here = self.frontier_hashes();
                let here = self.weights.exact(&here).unwrap_or(0);
                cluster::sum_exact_over(self.cluster, &[here])[0]
            }
        };
        if paths.checked_mul(most_moves(self.rules.shape())).is_none() {
            return Err(Error::Overflow { depth: p.done + 1, sequences: paths });
        }
        Ok(())
    }

    /// The last two depths in one pass ([`Search::last_two`]): their statistics, and their
    /// ended paths into `p`.
    fn last_two_depths(&mut self, p: &mut Progress, depth: u32, observe: &mut Observer<'_>) -> Result<()> {
        for (mut stats, sum) in self.last_two(p.done)? {
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
        Ok(())
    }

    /// Depth `p.done + 1` of a run to `depth`: made (or, at the last depth, summed), counted
    /// into `p`, committed to the checkpoint, and shown to `observe`.
    fn one_depth(
        &mut self,
        p: &mut Progress,
        depth: u32,
        config: RunConfig,
        observe: &mut Observer<'_>,
    ) -> Result<()> {
        let d = p.done + 1;
        let last = d == depth;
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
            let exact = self.weights.exact(&ended);
            if last || exact.is_some() || config.all_depths {
                // The paths at the positions just stored.
                let here = self.frontier_hashes();
                self.note_reached();
                if let (Some(games), Some(stored)) = (exact, self.weights.exact(&here)) {
                    (stats.games, stats.perft) = (Some(games), Some(games + stored));
                }
                if last {
                    // Counting boards: the last depth was generated; its positions end here.
                    ended = ended.merge(here);
                    self.cur.reset(0, 0);
                    self.away = Away::default();
                } else if config.all_depths {
                    let mut v = p.out.total;
                    add(&mut v, &self.as_lanes(&ended.merge(here)));
                    stats.answer = Some(state::fold_lanes(&v));
                }
            }
            ended
        };
        let ended = self.as_lanes(&ended);
        add(&mut p.out.total, &ended);
        if config.all_depths && last {
            stats.answer = Some(state::fold_lanes(&p.out.total));
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
        p.paths = stats.perft;
        p.out.answers.extend(stats.answer);
        observe(&stats);
        p.out.stats.push(stats);
        Ok(())
    }

    /// A sum of ended paths as lanes whose folded sum is its answer.
    fn as_lanes(&self, sum: &W::Sum) -> Counts {
        let mut lanes = [0; 8];
        lanes[0] = self.weights.answer(sum);
        lanes
    }

    /// What the plan of depth `depth` (the one about to be made) is made from.
    fn facts(&self, depth: u32) -> Facts {
        Facts {
            depth,
            target: self.target,
            states: self.depth_states(),
            growth: self.growth,
            on_pool: rayon::current_thread_index().is_some(),
            threads: rayon::current_num_threads,
            ranks: self.ranks.n,
            away: !self.away.is_empty(),
            position_bytes: position_bytes::<R::Key, W::Count>(),
            budget_position_bytes: budget_position_bytes::<R::Key, W::Count>(),
            wide_counts: wide_counts::<W::Count>(),
            huge_pages: self.huge_pages,
        }
    }

    /// True when a pass over the current frontier runs on every thread ([`plan::parallel`]).
    fn parallel(&self) -> bool {
        plan::parallel(&self.facts(self.depth + 1))
    }

    /// True when the last depths run on every thread ([`plan::parallel_last`]).
    fn parallel_last(&self) -> bool {
        plan::parallel_last(&self.facts(self.depth + 1), &self.fill)
    }

    /// One depth that is not the last, of a run to depth `target`: returns the hashes of the
    /// paths that ended (full boards), the number of positions of the next frontier and the
    /// records generated.
    fn step(&mut self, stats: &mut DepthStats, target: u32) -> Result<(W::Sum, u64, u64)> {
        self.phase_seconds = [0.0; 2];
        self.ended.clear_for(0);
        self.target = target;
        let total = self.depth_states() as usize;
        let plan = self.plan_depth(stats.depth);
        let partitions = plan.partitions;
        stats.fill = plan.way.fill();
        let clearing = Instant::now();
        self.prepare_next(&plan);
        let cleared = clearing.elapsed().as_secs_f64();
        let remote = self.ranks.n > 1;
        let pool = if partitions.spills() { Some(self.storage.pool()?) } else { None };
        let outbox = (partitions.spills() || remote).then(|| Outbox::new(partitions, pool, self.ranks));
        let (mut ended, mut records) = (W::Sum::zero(), 0usize);
        let expanding = Instant::now();
        self.for_each_source(|s| {
            let (e, r) = s.expand_source(&plan, outbox.as_ref(), &mut stats.ended_paths);
            ended = ended.merge(e);
            records += r;
            s.stop_within_depth()
        })?;
        // What the fill's trials measure, and must beat.
        let seconds = cleared + expanding.elapsed().as_secs_f64();
        match plan.way {
            Way::Direct if plan.single => self.fill.record_one_thread(seconds, records as u64, total),
            Way::Owned | Way::OneLock => self.fill.record(seconds, records as u64),
            _ => {}
        }
        let states = self.finish_depth(stats, &plan, outbox, total, records)?;
        Ok((ended, states, records as u64))
    }

    /// How depth `depth` runs: the budget's partitions, then the plan ([`plan::depth`]).
    fn plan_depth(&mut self, depth: u32) -> DepthPlan {
        let facts = self.facts(depth);
        let partitions = self.budget.plan(&Need {
            states: self.depth_states(),
            growth: self.growth,
            position_bytes: facts.budget_position_bytes,
            resident_bytes: self.cur.bytes() as u64,
            largest_away: self.away.largest(),
            // (Asking rayon for its thread count starts the pool: only for a parallel depth.)
            threads: if plan::parallel(&facts) { rayon::current_num_threads() } else { 1 },
        });
        let plan = plan::depth(&facts, partitions, &self.fill);
        self.fill = plan.fill.clone();
        plan
    }

    /// Makes the next memory home ready for `plan`: its shards, sized, on huge pages when the
    /// plan says so. An owned fill's shards are cleared by their owners within the fill; other
    /// parallel depths clear theirs on the pool (a large set in pieces, [`OnPool`]).
    fn prepare_next(&mut self, plan: &DepthPlan) {
        if plan.huge_pages {
            self.cur.use_huge_pages();
            self.next.use_huge_pages();
            self.huge_pages = true;
        }
        let (shard_bits, expect, parallel) = (plan.shard_bits, plan.expect, plan.way.parallel());
        self.next.resize_shards(shard_bits);
        if plan.way != Way::Owned {
            for_each_mut(parallel, self.next.shards_mut(), &|_, s| {
                if parallel {
                    s.reset_with(shard_bits, expect, &OnPool);
                } else {
                    s.reset(shard_bits, expect);
                }
            });
        }
    }

    /// After every source of a depth is expanded: the last exchanges between ranks, the
    /// partitions on disk merged, boards counted, and the next frontier made the current one
    /// (what outgrew the memory limit written to disk). Returns the next depth's positions.
    fn finish_depth(
        &mut self,
        stats: &mut DepthStats,
        plan: &DepthPlan,
        outbox: Option<Outbox<R::Key, W::Count>>,
        total: usize,
        records: usize,
    ) -> Result<u64> {
        let spills = plan.partitions.spills();
        if let (true, Some(outbox)) = (self.ranks.n > 1, &outbox) {
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
            Some(outbox) if spills => {
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
            stats.boards = Some(self.count_next_boards() + away_boards);
        }
        self.growth = states as f64 / total.max(1) as f64;
        self.fanout = records as f64 / total.max(1) as f64;
        std::mem::swap(&mut self.cur, &mut self.next);
        (self.away, self.away_sum, self.bits) = (away, away_sum, plan.partitions.bits);
        if !plan.single {
            // The source's memory goes back before the next depth is planned (in memory alone,
            // it is kept for the next memory home, as its tables are reused).
            self.next.reset(0, 0);
        }
        self.evict_if_over(stats.depth)?;
        Ok(states)
    }

    /// For a whole game: adds the current positions and the depth's full boards to
    /// [`Search::reached`], or drops it when a partition is on disk.
    fn note_reached(&mut self) {
        let Some(reached) = &mut self.reached else { return };
        if !self.away.is_empty() {
            self.reached = None;
            return;
        }
        let weights = self.weights;
        let sets = self.cur.shards().iter().chain(std::iter::once(&self.ended));
        for (k, n) in sets.flat_map(CountSet::iter) {
            reached.insert(k, &weights.reached(&n));
        }
    }

    /// The distinct boards of [`Search::reached`] over every rank, `None` when it was dropped
    /// on any. Collective.
    fn state_space(&self) -> Option<u64> {
        let (rules, weights) = (self.rules, self.weights);
        let mine = self
            .reached
            .as_ref()
            .map(|set| set.iter().map(|(k, n)| weights.boards(rules, k, &n)).sum::<u64>());
        let [lost, boards] = [u64::from(mine.is_none()), mine.unwrap_or(0)];
        let sums = if self.ranks.n > 1 {
            cluster::sum_over(self.cluster, &[lost, boards])
        } else {
            vec![lost, boards]
        };
        (sums[0] == 0).then_some(sums[1])
    }

    /// The boards the next memory home and the full boards of the depth stand for.
    fn count_next_boards(&self) -> u64 {
        let (rules, weights) = (self.rules, self.weights);
        let count = |set: &CountSet<R::Key, W::Count>| -> u64 {
            set.iter().map(|(k, n)| weights.boards(rules, k, &n)).sum()
        };
        let stored: u64 = pool::map(self.next.shards().iter().collect(), &count).into_iter().sum();
        stored + count(&self.ended)
    }
}

/// True when `stop` holds a cancelled token.
pub(super) fn stopped(stop: &Option<Cancel>) -> bool {
    stop.as_ref().is_some_and(Cancel::is_cancelled)
}

/// The most moves a position of `shape` can have: each cell, empty, with its neighbours
/// all holding dice, has one move a subset of at least two of them (all of them may capture),
/// and one move when it has fewer than two neighbours.
fn most_moves(shape: state::Shape) -> u128 {
    let (rows, cols) = (shape.rows(), shape.cols());
    let cells = (0..rows).flat_map(|r| (0..cols).map(move |c| (r, c)));
    cells
        .map(|(r, c)| {
            let sides = [r > 0, r + 1 < rows, c > 0, c + 1 < cols];
            let n = sides.iter().filter(|&&s| s).count() as u32;
            u128::from(((1u32 << n) - n - 1).max(1))
        })
        .sum()
}

/// A depth that takes longer than this (seconds) reads the peak memory after it: a read
/// costs some 20 microseconds ([`peak_memory`]), under half a percent of such a depth.
const PEAK_READ_SECONDS: f64 = 5e-3;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::weights::{Lanes, Orbits};
    use frontier::Zeroer;
    use passes::ZERO_PIECE;
    use state::{Grid, Level, Shape};
    use std::sync::atomic::AtomicUsize;

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
        let parallel = one.iter().filter(|f| f.len() >= plan::PARALLEL_MIN).count();
        assert!(parallel > fill::TRIALS as usize, "too few depths are parallel on two threads");
        for fill in [Fill::Owned, Fill::OneLock, Fill::Auto] {
            assert!(one == frontiers(2, fill), "two threads, {fill:?}");
            assert!(one == frontiers(3, fill), "three threads, {fill:?}");
        }
    }

    /// A depth whose run is cancelled expands no chunk, whichever way it runs (one thread,
    /// owned, one lock), and its step stops with the cancelled error naming it.
    #[test]
    fn a_cancelled_depth_expands_no_chunk() {
        let grid = Grid::<u64>::new(Shape::new(4, 4).unwrap(), Level::Portable);
        for (threads, fill) in [(1, Fill::Auto), (2, Fill::Owned), (2, Fill::OneLock)] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut search =
                    Search::new(&grid, Lanes, Budget::new(None), Storage::default(), &crate::cluster::Solo);
                search.fill = fill::Choice::new(fill);
                let (c, t) = grid.canonical(grid.pack(&[0; 16]));
                search.cur.reset(0, 1);
                search.cur.shard_mut(0).insert(c, &Lanes.start(&grid, t));
                // Grown until a depth is parallel (on two threads).
                while search.depth_states() < 4 * plan::PARALLEL_MIN as u64 {
                    search.step(&mut DepthStats::default(), u32::MAX).unwrap();
                    search.depth += 1;
                }
                let plan = search.plan_depth(search.depth + 1);
                assert_eq!(plan.way.fill(), (threads > 1).then_some(fill), "{plan:?}");
                search.prepare_next(&plan);
                let cancel = Cancel::new();
                search.cancel = Some(cancel.clone());
                cancel.cancel();
                let (_, records) = search.expand_source(&plan, None, &mut 0);
                assert_eq!((records, search.next.len()), (0, 0), "{threads} threads, {fill:?}");
                let stopped = search.step(&mut DepthStats::default(), u32::MAX);
                let depth = search.depth + 1;
                assert!(matches!(stopped, Err(Error::Cancelled { depth: d }) if d == depth), "{stopped:?}");
            });
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

    /// 8 lanes in the dense layout (the 4x4's), from a start whose sixes (never captured) wall
    /// off cells: seven depths past the parallel threshold at a seventh of the positions the
    /// empty board takes.
    #[test]
    fn fills_match_one_thread_for_lanes() {
        let grid = Grid::<u64>::new(Shape::new(4, 4).unwrap(), Level::Portable);
        let cells = [6, 0, 0, 0, 6, 0, 6, 5, 4, 6, 1, 0, 0, 0, 0, 1];
        fills_match_one_thread(&grid, Lanes, &cells, 16);
    }

    /// Orbit masses in packed slots (the 3x3's). A test of its own, so that the two run side
    /// by side.
    #[test]
    fn fills_match_one_thread_for_masses() {
        let ring = state::Ring3::new(state::canon::Portable);
        let empty = ring.pack(&[0; 9]);
        const { assert!(CountSet::<u32, frontier::Count34>::PACKED) };
        fills_match_one_thread(&ring, Orbits::of(&ring, empty).expect("symmetric"), &[0; 9], 26);
    }
}

//! How each depth runs, decided in one place: a pure function of what the search has
//! measured ([`Facts`]) gives a [`DepthPlan`], a value that the driver carries out.
//!
//! Every threshold that decides between the ways a depth runs lives here, named, with the
//! reason for it. The plan never changes an answer: every way gives the same frontier and the
//! same sums (they are wrapping sums, which commute), so these decisions are about time and
//! memory only.
//!
//! A depth runs one of five ways ([`Way`]):
//! * **direct**: on the calling thread, each successor straight into the next set;
//! * **routed**: the same, but successors of partitions kept elsewhere (on disk, or owned by
//!   another rank) go to the depth's outbox;
//! * **owned** and **one lock**: on every thread, the whole next frontier in memory; the next
//!   set has a shard a thread that only its owner fills, or is one set behind one lock. Which
//!   of the two is measured on the run's first parallel depths ([`crate::fill`]);
//! * **blocks**: on every thread, with partitions on disk or several ranks: chunks expanded
//!   into records bucketed by the next frontier's shard, then each shard filled.

use crate::budget;
use crate::fill::{self, Fill};

/// Frontiers smaller than this are expanded on one thread: below it, handing work between
/// threads and waking them costs more than a second thread saves.
pub(crate) const PARALLEL_MIN: usize = 1 << 14;

/// The least work, in positions the rest of a run is expected to expand ([`work_left`]), for
/// which a search starts its thread pool: in a run that ends a few depths after its first
/// parallel one, starting the pool and its first depths' fresh shards cost more than a
/// second thread saves. A search given a thread count runs on a pool from the start; this
/// decides only the default's lazy pool.
const POOL_WORK_MIN: f64 = (1 << 18) as f64;

/// How many depths ahead of reaching [`PARALLEL_MIN`] positions (at the present growth) a
/// frontier counts as about to be parallel ([`parallel_soon`]). Not more: a frontier's growth
/// slows as the board fills, and the frontiers of many boards with dice level off below
/// [`PARALLEL_MIN`].
const SOON_DEPTHS: i32 = 2;

/// The smallest frontier (in positions) that counts as about to be parallel: a smaller one is
/// far from the sizes whose sets take megabytes.
const SOON_MIN: usize = 1 << 12;

/// A thread's share of the next frontier that still counts as small: about a core's L2.
const SHARE_BYTES: usize = 2 << 20;

/// Positions a shard of a blocks depth holds about, past a core's cache: the shard being
/// filled stays in cache.
const SHARD_POSITIONS: usize = 1 << 14;

/// The most shard bits of a blocks depth.
const MAX_SHARD_BITS: u32 = 12;

/// Room a next set is sized for beyond the positions expected: growth is measured on the
/// depth before, and a table that grows in the middle of a depth rehashes every key.
const SIZE_MARGIN: f64 = 1.2;

/// What the search knows when it plans a depth.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Facts {
    /// The depth about to be made.
    pub depth: u32,
    /// The run's last depth.
    pub target: u32,
    /// Positions of the current depth, in every home of this rank.
    pub states: u64,
    /// Positions of the last depth per position of the one before.
    pub growth: f64,
    /// The search runs on a thread of its pool.
    pub on_pool: bool,
    /// Threads of the pool the search runs on, or would start: asked only where a depth may
    /// be parallel (asking rayon starts its global pool).
    pub threads: fn() -> usize,
    /// Ranks of the search.
    pub ranks: usize,
    /// Some partitions of the current depth are on disk.
    pub away: bool,
    /// Bytes a position takes in a set, typically.
    pub position_bytes: usize,
    /// Bytes a position may take in a set, at most (what the budget counts).
    pub budget_position_bytes: f64,
    /// The counts are wider than 8 bytes (lanes, coset lanes).
    pub wide_counts: bool,
    /// The memory home's sets are on huge pages already.
    pub huge_pages: bool,
}

/// How one depth fills its next frontier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Way {
    /// On the calling thread, straight into the one next set.
    Direct,
    /// On the calling thread; successors of partitions kept elsewhere go to the outbox.
    Routed,
    /// On every thread: each fills the shard it owns and posts the others' successors.
    Owned,
    /// On every thread, into one set behind one lock.
    OneLock,
    /// On every thread: blocks of chunks expanded into records bucketed by shard, then each
    /// shard filled (or its records sent to the outbox).
    Blocks,
}

impl Way {
    /// The fill of the whole next frontier in memory on several threads, if it is one.
    pub(crate) fn fill(self) -> Option<Fill> {
        match self {
            Way::Owned => Some(Fill::Owned),
            Way::OneLock => Some(Fill::OneLock),
            _ => None,
        }
    }

    /// True when the depth runs on every thread of the pool.
    pub(crate) fn parallel(self) -> bool {
        matches!(self, Way::Owned | Way::OneLock | Way::Blocks)
    }
}

/// How one depth runs: a value made by [`depth`], carried out by the driver.
#[derive(Clone, Debug)]
pub(crate) struct DepthPlan {
    pub way: Way,
    /// One source (the memory home) into a next frontier wholly in memory, on this rank
    /// alone: the next memory home's tables are kept for the depth after, and the depth's
    /// time counts for the fill's choice.
    pub single: bool,
    /// Threads that run the depth (1 unless it is parallel).
    pub threads: usize,
    /// Where the next depth's partitions live.
    pub partitions: budget::Plan,
    /// The next memory home has `2^shard_bits` shards.
    pub shard_bits: u32,
    /// Positions each shard of the next memory home is sized for.
    pub expect: usize,
    /// The memory home's sets move to huge pages now (see `MmapArray::use_huge_pages`).
    pub huge_pages: bool,
    /// The fill's choice after this depth's pick (it records the trial this depth may be).
    pub fill: fill::Choice,
}

/// True when the current depth is worth spreading over the thread pool: a frontier of
/// [`PARALLEL_MIN`] positions or more, and, until the pool runs, enough work left in the run
/// to pay for starting it ([`POOL_WORK_MIN`]).
pub(crate) fn parallel(f: &Facts) -> bool {
    f.states >= PARALLEL_MIN as u64 && (f.on_pool || work_left(f) >= POOL_WORK_MIN) && (f.threads)() > 1
}

/// True when the rest of the run moves onto the thread pool before this depth: its first
/// parallel depth.
pub(crate) fn start_pool(f: &Facts) -> bool {
    !f.on_pool && parallel(f)
}

/// True when the last depths (which store nothing) run on every thread: where a depth is
/// parallel, unless the fill's trials found one thread faster.
pub(crate) fn parallel_last(f: &Facts, fill: &fill::Choice) -> bool {
    parallel(f) && !fill.one_thread()
}

/// True when the depth about to be made and the run's last depth run as one pass that stores
/// nothing: the last depth's counts are summed from every successor of the positions the
/// depth before it would store. Only where those successor sums are cheap (`cheap_sums`, a
/// property of the counting and the rules) and no depth's positions are wanted
/// (`keep_positions`: boards counted, or every depth's answer).
pub(crate) fn last_two_in_one(f: &Facts, cheap_sums: bool, keep_positions: bool) -> bool {
    cheap_sums && f.depth + 1 == f.target && !keep_positions
}

/// The plan of a depth that stores its successors, given where the budget puts the next
/// depth's partitions and the fill's choice so far.
pub(crate) fn depth(f: &Facts, partitions: budget::Plan, fill: &fill::Choice) -> DepthPlan {
    let parallel = parallel(f);
    let total = f.states as usize;
    let threads = if parallel { (f.threads)() } else { 1 };
    // One source into a next frontier wholly in memory, on this rank alone.
    let single = !partitions.spills() && !f.away && f.ranks == 1;
    let mut fill = fill.clone();
    // Depths `f.depth..=f.target` are left to make: at most that many fills.
    let fills_left = f.target.saturating_add(1).saturating_sub(f.depth);
    let way = match (parallel, single) {
        (true, true) => match fill.pick(total, fills_left) {
            Some(Fill::Owned) => Way::Owned,
            Some(_) => Way::OneLock,
            // The fill's trials found the threads no faster here.
            None => Way::Direct,
        },
        (true, false) => Way::Blocks,
        // Partitions of the next depth kept elsewhere need routes; a source from disk whose
        // next depth fits in memory does not.
        (false, false) if partitions.spills() || f.ranks > 1 => Way::Routed,
        (false, _) => Way::Direct,
    };
    let threads = if way.parallel() { threads } else { 1 };
    let shard_bits = match way {
        Way::Owned => threads.next_power_of_two().trailing_zeros(),
        Way::Blocks => shard_bits_for(total, f.position_bytes, threads),
        _ => 0,
    };
    let resident = partitions.resident as f64 / partitions.parts() as f64;
    let expect =
        (total as f64 * f.growth * SIZE_MARGIN * resident / (1u64 << shard_bits) as f64) as usize + 16;
    // A frontier about to be parallel grows to megabytes: its sets take huge pages while they
    // are small, not from their third megabyte on. Frontiers that level off below never pay
    // for a whole huge page; sets of counts of 8 bytes or less gain nothing by it.
    let huge_pages = !f.huge_pages && f.wide_counts && parallel_soon(f.states, f.growth);
    DepthPlan { way, single, threads, partitions, shard_bits, expect, huge_pages, fill }
}

/// Positions the run's remaining depths are expected to expand, from the current frontier at
/// the last depth's growth.
fn work_left(f: &Facts) -> f64 {
    let depths = f.target.saturating_sub(f.depth.saturating_sub(1));
    let (mut positions, mut sum) = (f.states as f64, 0.0);
    for _ in 0..depths.min(64) {
        sum += positions;
        positions *= f.growth;
    }
    sum
}

/// True when a frontier of `states` positions is about to be parallel: [`SOON_MIN`]
/// positions or more, reaching [`PARALLEL_MIN`] within [`SOON_DEPTHS`] depths at `growth`.
fn parallel_soon(states: u64, growth: f64) -> bool {
    states >= SOON_MIN as u64 && states as f64 * growth.powi(SOON_DEPTHS) >= PARALLEL_MIN as f64
}

/// Shards for a blocks depth grown from `len` positions of `bytes` each, on `threads`
/// threads: one a thread while a thread's share fits in a core's cache ([`SHARE_BYTES`]: each
/// thread then expands into as few buckets as possible and inserts one shard); beyond that,
/// about [`SHARD_POSITIONS`] positions a shard, so that the shard being filled stays in
/// cache, at most `2^MAX_SHARD_BITS` shards.
fn shard_bits_for(len: usize, bytes: usize, threads: usize) -> u32 {
    let least = threads.next_power_of_two().trailing_zeros();
    if len / threads.max(1) * bytes <= SHARE_BYTES {
        return least;
    }
    let mut bits = 0;
    while bits < MAX_SHARD_BITS && (len >> bits) > SHARD_POSITIONS {
        bits += 1;
    }
    bits.max(least)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> usize {
        2
    }

    fn one() -> usize {
        1
    }

    fn never() -> usize {
        panic!("the pool's size is asked for only where a depth may be parallel")
    }

    /// The facts of depth `depth` of a run to `target` on a 3x3 board with 8 lanes, on two
    /// threads, the frontier of `states` positions grown `growth` times at the last depth.
    fn facts(depth: u32, target: u32, states: u64, growth: f64) -> Facts {
        Facts {
            depth,
            target,
            states,
            growth,
            on_pool: true,
            threads: two,
            ranks: 1,
            away: false,
            position_bytes: 56,
            budget_position_bytes: 64.0,
            wide_counts: true,
            huge_pages: false,
        }
    }

    fn plan(f: &Facts) -> DepthPlan {
        depth(f, budget::Plan::IN_MEMORY, &fill::Choice::new(Fill::Auto))
    }

    #[test]
    fn the_last_two_depths_are_one_pass_only_before_the_last_with_cheap_sums_and_nothing_kept() {
        assert!(last_two_in_one(&facts(39, 40, 1000, 1.3), true, false));
        assert!(!last_two_in_one(&facts(40, 40, 1000, 1.3), true, false));
        assert!(!last_two_in_one(&facts(38, 40, 1000, 1.3), true, false));
        assert!(!last_two_in_one(&facts(39, 40, 1000, 1.3), false, false));
        assert!(!last_two_in_one(&facts(39, 40, 1000, 1.3), true, true));
    }

    /// Sizes (positions at a depth and the one before) from real runs: the 3x3 boards with a
    /// die and the empty one are about to be parallel a depth or two before their first
    /// parallel depth; the public cases whose frontiers level off below [`PARALLEL_MIN`] never
    /// are.
    #[test]
    fn frontiers_about_to_be_parallel() {
        let soon = |before: u64, now: u64| parallel_soon(now, now as f64 / before as f64);
        assert!(!soon(4656, 6524));
        assert!(soon(6524, 8981));
        assert!(soon(8981, 12088));
        assert!(soon(12088, 15964));
        assert!(!soon(4695, 6576));
        assert!(soon(6576, 9039));
        let cg10 = [2929, 4156, 5460, 7014, 8452, 9679, 10841, 11474, 11805];
        for w in cg10.windows(2) {
            assert!(!soon(w[0], w[1]), "{w:?}");
        }
        assert!(!soon(7103, 7174));
        assert!(!soon(100, (SOON_MIN - 1) as u64));
    }

    #[test]
    fn small_frontiers_run_direct_without_asking_for_the_pool() {
        let f = Facts { threads: never, on_pool: false, ..facts(5, 40, 1000, 2.0) };
        assert!(!parallel(&f));
        assert!(!start_pool(&f));
        assert_eq!(plan(&f).way, Way::Direct);
        assert_eq!(plan(&f).threads, 1);
    }

    #[test]
    fn one_thread_never_runs_parallel() {
        let f = Facts { threads: one, ..facts(20, 40, 1 << 20, 1.5) };
        assert!(!parallel(&f));
        assert_eq!(plan(&f).way, Way::Direct);
    }

    #[test]
    fn large_frontiers_in_memory_fill_on_every_thread_and_trials_alternate() {
        let f = facts(20, 40, 1 << 18, 1.3);
        let mut choice = fill::Choice::new(Fill::Auto);
        let mut ways = Vec::new();
        for _ in 0..4 {
            let p = depth(&f, budget::Plan::IN_MEMORY, &choice);
            assert_eq!(p.threads, 2);
            ways.push(p.way);
            choice = p.fill;
            choice.record(1e-3, 1000);
        }
        assert_eq!(ways, [Way::OneLock, Way::Owned, Way::OneLock, Way::Owned]);
        let owned = depth(&f, budget::Plan::IN_MEMORY, &fill::Choice::new(Fill::Owned));
        assert_eq!((owned.way, owned.shard_bits), (Way::Owned, 1));
    }

    #[test]
    fn partitions_on_disk_or_other_ranks_take_blocks_or_routes() {
        let spill = budget::Plan { bits: 2, resident: 1, write_buffer: 1 << 16, records_in_flight: 1 << 20 };
        let choice = fill::Choice::new(Fill::Auto);
        assert_eq!(depth(&facts(20, 40, 1 << 18, 1.3), spill, &choice).way, Way::Blocks);
        let ranks = Facts { ranks: 2, ..facts(20, 40, 1 << 18, 1.3) };
        assert_eq!(depth(&ranks, budget::Plan::IN_MEMORY, &choice).way, Way::Blocks);
        let small = Facts { ranks: 2, ..facts(5, 40, 100, 2.0) };
        assert_eq!(depth(&small, budget::Plan::IN_MEMORY, &choice).way, Way::Routed);
        let away = Facts { away: true, ..facts(5, 40, 100, 2.0) };
        assert_eq!(depth(&away, spill, &choice).way, Way::Routed);
        let back = depth(&away, budget::Plan::IN_MEMORY, &choice);
        assert_eq!((back.way, back.single), (Way::Direct, false));
    }

    #[test]
    fn the_pool_starts_at_the_first_parallel_depth() {
        let first = Facts { on_pool: false, ..facts(20, 40, 1 << 18, 1.3) };
        assert!(start_pool(&first));
        assert!(!start_pool(&Facts { on_pool: true, ..first }));
        let soon = Facts { on_pool: false, ..facts(15, 40, 9000, 1.4) };
        assert!(parallel_soon(soon.states, soon.growth));
        assert!(!start_pool(&soon));
        assert_eq!(plan(&soon).way, Way::Direct);
    }

    #[test]
    fn a_short_run_does_not_start_the_pool() {
        // cg11: its last depths pass PARALLEL_MIN with little work left.
        let f = Facts { on_pool: false, ..facts(17, 20, 20_000, 1.05) };
        assert!(!parallel(&f));
        assert!(!start_pool(&f));
    }

    #[test]
    fn huge_pages_only_for_wide_counts_about_to_be_parallel_once() {
        assert!(plan(&facts(15, 40, 9000, 1.4)).huge_pages);
        assert!(!plan(&Facts { wide_counts: false, ..facts(15, 40, 9000, 1.4) }).huge_pages);
        assert!(!plan(&Facts { huge_pages: true, ..facts(15, 40, 9000, 1.4) }).huge_pages);
        assert!(!plan(&facts(15, 40, 900, 1.4)).huge_pages);
    }

    #[test]
    fn blocks_shards_keep_a_threads_share_in_cache_then_a_few_thousand_positions() {
        assert_eq!(shard_bits_for(1000, 56, 2), 1);
        assert_eq!(shard_bits_for(1 << 20, 56, 2), 6);
        assert_eq!(shard_bits_for(1 << 40, 56, 2), MAX_SHARD_BITS);
        assert_eq!(shard_bits_for(1000, 56, 5), 3);
    }
}

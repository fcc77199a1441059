//! How the threads of a parallel depth fill a next frontier that stays in memory, and the
//! choice between the ways, made by measuring them on the run's own first parallel depths.
//!
//! * **Owned** ([`crate::kernels::Owned`]): the next set has a shard a thread, which only that
//!   thread fills; the successors of the others' shards are posted to their owners a block at
//!   a time. Every insert runs in parallel, but about half of the successors cross between
//!   cores.
//! * **One lock** ([`crate::kernels::OneLock`]): every thread inserts into the one next set,
//!   behind one lock, a batch at a time while the lock is free. No successor crosses between
//!   cores in a block, but inserts run one thread at a time.
//!
//! Which one is faster depends on the CPU (on the cost of moving cache lines between its
//! cores) and on the frontier's size; the CPUs measured differ on the same boards
//! (docs/benchmarks.md). So
//! [`Choice`] runs the first parallel depths both ways, in turn, and keeps the way that took
//! less time a successor over all of its timed trials, until the frontier has grown
//! [`RETRY_GROWTH`] times: then it tries both again. One pair of trials never decides: its
//! depths take a few milliseconds, where a depth the host slows down can look 1.25 times as
//! slow, and the two ways may cost about the same there before they part as the frontier
//! grows. A way's time is all a fill costs, clearing the next set included (an owned fill's
//! threads clear their shards within it, a one-lock fill's set is cleared before it). Trials
//! start only where [`FILLS_AFTER_TRIALS`] fills or more would follow them; a shorter run
//! takes the owned fill, and a run near its end keeps the way it has. Both give the same
//! answer and statistics: only the order of the slots differs, and every sum is a wrapping one.
//!
//! Neither way may lose to one thread: a core the host gives to others for milliseconds at a
//! time (a busy virtual machine's second vCPU) leaves the other thread to do every chunk,
//! wait for the lock or take the posts at the end. So [`Choice`] also keeps the time of the
//! last two depths run on one thread; when the faster way's trials took [`ONE_THREAD_MARGIN`]
//! times as long a successor or longer, the depths after them run on one thread, until the
//! frontier has grown [`RETRY_GROWTH`] times and both ways are tried again against the depths
//! on one thread just before. Those depths count only from frontiers within [`RETRY_GROWTH`]
//! times the last trial's size: a successor costs more in a larger set.

/// How the threads of a parallel depth fill a next frontier that stays in memory (the
/// command line's `--fill`). The answer never depends on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
#[serde(rename_all = "kebab-case")]
pub enum Fill {
    /// Measured on the run's first parallel depths: each way in turn, then the faster one.
    #[default]
    Auto,
    /// A shard a thread, filled only by that thread; the others' successors posted to them.
    Owned,
    /// One set behind one lock, filled by every thread a batch at a time.
    OneLock,
}

impl Fill {
    /// Its name on the command line, in the `--stats` table and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Fill::Auto => "auto",
            Fill::Owned => "owned",
            Fill::OneLock => "one-lock",
        }
    }
}

/// Parallel depths that [`Choice`] runs as trials, the two ways in turn, before it keeps one.
pub(crate) const TRIALS: u32 = 6;

/// The first trials, one each way, whose times [`Choice`] does not count: the first parallel
/// depth also starts the thread pool, and each way's first depth makes its buffers.
const WARM_UP: u32 = 2;

/// Fills that must remain after a full set of trials for [`Choice`] to start them: trials
/// pay only through the depths that use what they find, and a trial of the slower way costs
/// up to twice a depth. A run with fewer fills left takes the owned fill: never far from the
/// faster way where the one lock wins, and the faster by far where it loses.
const FILLS_AFTER_TRIALS: u32 = 2;

/// How many times as long a successor the faster way's trials must take as the last two depths
/// on one thread for [`Choice`] to keep one thread. Those depths come before the trials, from
/// a frontier up to [`RETRY_GROWTH`] times smaller, whose set sits in nearer caches: a
/// successor there costs less than at the trials' sizes, on one thread as on two.
const ONE_THREAD_MARGIN: f64 = 1.25;

/// How many times its size a frontier grows past the last trials before [`Choice`] tries both
/// ways again: which is faster changes with the size (with how much of a set the caches
/// hold).
pub(crate) const RETRY_GROWTH: usize = 16;

/// The fill of a run's parallel depths: the one asked for, or ([`Fill::Auto`]) trials of both
/// and then the faster, tried again as the frontier grows.
#[derive(Clone, Debug)]
pub(crate) struct Choice {
    asked: Fill,
    /// Seconds and successors of the trials so far, owned fill first.
    trials: [(f64, u64); 2],
    /// Trials run.
    tried: u32,
    /// The way of the trial under way: picked, not yet recorded.
    trial: Option<Fill>,
    /// What was kept after the trials.
    kept: Option<Kept>,
    /// The size of the frontier at the last trial: trials come again at [`RETRY_GROWTH`]
    /// times it.
    tried_at: usize,
    /// Seconds, successors and frontier size of the last two depths run on one thread (the
    /// latest second), which the trials' ways must beat.
    one_thread: [(f64, u64, usize); 2],
}

/// What [`Choice`] keeps after its trials: one thread, or a way to fill on all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kept {
    OneThread,
    Way(Fill),
}

impl Kept {
    /// The fill of a depth run this way ([`Choice::pick`]).
    fn fill(self) -> Option<Fill> {
        match self {
            Kept::OneThread => None,
            Kept::Way(fill) => Some(fill),
        }
    }
}

impl Choice {
    pub(crate) fn new(asked: Fill) -> Self {
        let one_thread = [(0.0, 0, 0); 2];
        Choice { asked, trials: [(0.0, 0); 2], tried: 0, trial: None, kept: None, tried_at: 0, one_thread }
    }

    /// How to fill the next frontier of a parallel depth whose frontier has `positions`
    /// positions, with at most `fills_left` fills of a run left, this one included (never
    /// [`Fill::Auto`]), or `None`: on one thread, the trials' ways having been no faster; when
    /// the depth is a trial, [`Choice::record`] takes its time.
    pub(crate) fn pick(&mut self, positions: usize, fills_left: u32) -> Option<Fill> {
        self.trial = None;
        if self.asked != Fill::Auto {
            return Some(self.asked);
        }
        let worth_trials = fills_left >= TRIALS + FILLS_AFTER_TRIALS;
        match self.kept {
            Some(kept) if positions / RETRY_GROWTH < self.tried_at || !worth_trials => return kept.fill(),
            None if self.tried == 0 && !worth_trials => return Some(Fill::Owned),
            Some(_) => {
                // Trials again, with no warm-up: both ways have run.
                (self.kept, self.trials, self.tried) = (None, [(0.0, 0); 2], WARM_UP);
            }
            None => {}
        }
        let fill = if self.tried.is_multiple_of(2) { Fill::OneLock } else { Fill::Owned };
        (self.trial, self.tried_at) = (Some(fill), positions);
        Some(fill)
    }

    /// True when the trials kept one thread, for the depths that [`Choice::pick`] does not
    /// see (the last ones, which insert nothing).
    pub(crate) fn one_thread(&self) -> bool {
        self.kept == Some(Kept::OneThread)
    }

    /// Takes the time a depth on one thread took for `successors` successors from a frontier
    /// of `positions` positions (a depth that filled a set in memory).
    pub(crate) fn record_one_thread(&mut self, seconds: f64, successors: u64, positions: usize) {
        self.one_thread = [self.one_thread[1], (seconds, successors, positions)];
    }

    /// Takes the time the depth last picked took for `successors` successors, when it was a
    /// trial; the last trial decides the way kept.
    pub(crate) fn record(&mut self, seconds: f64, successors: u64) {
        let Some(fill) = self.trial.take() else { return };
        if self.tried >= WARM_UP {
            let trial = &mut self.trials[usize::from(fill == Fill::OneLock)];
            trial.0 += seconds;
            trial.1 += successors;
        }
        self.tried += 1;
        if self.tried >= TRIALS {
            // A way with no successors measured is not kept.
            let [owned, lock] = self.trials;
            let (way, timed) =
                if faster(lock, owned, 1.0) { (Fill::OneLock, lock) } else { (Fill::Owned, owned) };
            // The depths on one thread, when both were measured from a frontier near the
            // trials' sizes.
            let [(s1, n1, p1), (s2, n2, p2)] = self.one_thread;
            let near = n1 > 0 && n2 > 0 && p1.min(p2).saturating_mul(RETRY_GROWTH) >= self.tried_at;
            let one = near && timed.1 > 0 && faster((s1 + s2, n1 + n2), timed, ONE_THREAD_MARGIN);
            self.kept = Some(if one { Kept::OneThread } else { Kept::Way(way) });
        }
    }
}

/// True when `a` (seconds, successors) took no more time a successor than `b`, `margin` times
/// over: compared without a division, and never when `a` measured no successors.
fn faster(a: (f64, u64), b: (f64, u64), margin: f64) -> bool {
    a.1 > 0 && a.0 * b.1 as f64 * margin <= b.0 * a.1 as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Choice {
        /// [`Choice::pick`] where no depth on one thread was measured: always a way.
        fn way(&mut self, positions: usize, fills_left: u32) -> Fill {
            self.pick(positions, fills_left).expect("a way to fill, never one thread")
        }
    }

    /// Fills left in a long run: enough for trials at every depth of these tests.
    const MANY: u32 = 1000;

    /// Runs `TRIALS` trials, each way taking `per` seconds a successor (owned, one lock),
    /// but the warm-up trials, which take the other way's time and a second more.
    fn after_trials(per: [f64; 2]) -> Choice {
        let mut choice = Choice::new(Fill::Auto);
        run_trials(&mut choice, per);
        choice
    }

    /// Runs a first set of trials on `choice` as [`after_trials`] does, at frontiers of 1000
    /// positions.
    fn run_trials(choice: &mut Choice, per: [f64; 2]) {
        for depth in 0..TRIALS {
            let fill = choice.way(1000, MANY);
            assert_ne!(fill, Fill::Auto);
            let successors = 1000 + 100 * u64::from(depth);
            let mut way = usize::from(fill == Fill::OneLock);
            let mut extra = 0.0;
            if depth < WARM_UP {
                (way, extra) = (1 - way, 1.0);
            }
            choice.record(per[way] * successors as f64 + extra, successors);
        }
    }

    /// A choice whose last two depths on one thread took `per` seconds a successor, from
    /// frontiers of `positions` positions.
    fn after_one_thread(per: f64, positions: usize) -> Choice {
        let mut choice = Choice::new(Fill::Auto);
        for successors in [900, 950] {
            choice.record_one_thread(per * successors as f64, successors, positions);
        }
        choice
    }

    /// As on a virtual machine whose host takes the second vCPU away: both ways slower than
    /// one thread (by `ONE_THREAD_MARGIN` or more), which the depths after the trials then
    /// keep to. A way slower by less than that is kept.
    #[test]
    fn one_thread_is_kept_where_both_ways_lose_to_it_by_the_margin() {
        for per in [[1.3e-9, 1.4e-9], [2e-9, 1.25e-9], [1.26e-9, 1.26e-9]] {
            let mut choice = after_one_thread(1e-9, 900);
            run_trials(&mut choice, per);
            assert_eq!(choice.pick(1000, MANY), None, "{per:?}");
            assert!(choice.one_thread());
        }
        for (per, way) in [([1.3e-9, 1.24e-9], Fill::OneLock), ([0.5e-9, 2e-9], Fill::Owned)] {
            let mut choice = after_one_thread(1e-9, 900);
            run_trials(&mut choice, per);
            assert_eq!(choice.pick(1000, MANY), Some(way), "{per:?}");
            assert!(!choice.one_thread());
        }
    }

    /// A measure on one thread counts only from a frontier within `RETRY_GROWTH` times the
    /// trials' sizes (a successor costs less in a smaller set), and only of two depths.
    #[test]
    fn one_thread_counts_only_near_the_trials_and_over_two_depths() {
        let mut far = after_one_thread(1e-9, 1000 / RETRY_GROWTH - 1);
        run_trials(&mut far, [2e-9, 1.9e-9]);
        assert_eq!(far.pick(1000, MANY), Some(Fill::OneLock));
        let mut one = Choice::new(Fill::Auto);
        one.record_one_thread(1e-6, 1000, 1000);
        run_trials(&mut one, [2e-9, 1.9e-9]);
        assert_eq!(one.pick(1000, MANY), Some(Fill::OneLock));
    }

    /// Kept to one thread, a run tries both ways again once its frontier has grown
    /// `RETRY_GROWTH` times, against the depths on one thread just before; and a way is
    /// kept again when it is the faster (the host gave the vCPU back).
    #[test]
    fn after_one_thread_both_ways_again_as_the_frontier_grows() {
        let mut choice = after_one_thread(1e-9, 900);
        run_trials(&mut choice, [2e-9, 2e-9]);
        let grown = 1000 * RETRY_GROWTH;
        assert_eq!(choice.pick(grown - 1, MANY), None);
        for successors in [9000, 9500] {
            choice.record_one_thread(1e-9 * successors as f64, successors, grown - 1);
        }
        let mut seen = Vec::new();
        for _ in 0..TRIALS - WARM_UP {
            let fill = choice.way(grown, MANY);
            seen.push(fill);
            let per = if fill == Fill::OneLock { 0.6e-9 } else { 0.8e-9 };
            choice.record(per * 1000.0, 1000);
        }
        assert_eq!(seen, [Fill::OneLock, Fill::Owned].repeat(seen.len() / 2));
        assert_eq!(choice.pick(grown, MANY), Some(Fill::OneLock));
        assert!(!choice.one_thread());
    }

    /// The names are those that clap and serde derive (`--fill`, JSON).
    #[test]
    fn names_match_the_derived_ones() {
        for fill in [Fill::Auto, Fill::Owned, Fill::OneLock] {
            assert_eq!(serde_json::to_value(fill).unwrap(), fill.name());
        }
    }

    #[test]
    fn trials_alternate_and_the_faster_way_is_kept() {
        let mut choice = Choice::new(Fill::Auto);
        let mut seen = Vec::new();
        for _ in 0..TRIALS {
            let fill = choice.way(1000, MANY);
            seen.push(fill);
            choice.record(1.0, 1000);
        }
        assert_eq!(seen, [Fill::OneLock, Fill::Owned].repeat(TRIALS as usize / 2));
        // Clearly faster (twice) or barely (a tenth): kept either way.
        assert_eq!(after_trials([2e-9, 1e-9]).way(1000, MANY), Fill::OneLock);
        assert_eq!(after_trials([1e-9, 2e-9]).way(1000, MANY), Fill::Owned);
        assert_eq!(after_trials([1.1e-9, 1e-9]).way(1000, MANY), Fill::OneLock);
        assert_eq!(after_trials([1e-9, 1.1e-9]).way(1000, MANY), Fill::Owned);
        // The choice is kept: later depths do not change it.
        let mut kept = after_trials([1e-9, 2e-9]);
        assert_eq!(kept.way(1000, MANY), Fill::Owned);
        kept.record(0.0, 1_000_000);
        assert_eq!(kept.way(1000, MANY), Fill::Owned);
    }

    /// The choice after `TRIALS` depths and the ways it picked, the timed trial `i` of way
    /// `fill` taking `cost(fill, i)` seconds a successor (the warm-up a second).
    fn picks_by(cost: impl Fn(Fill, u32) -> f64) -> (Choice, Vec<Fill>) {
        let mut choice = Choice::new(Fill::Auto);
        let seen = (0..TRIALS)
            .map(|depth| {
                let fill = choice.way(1000, MANY);
                let seconds = match depth.checked_sub(WARM_UP) {
                    None => 1.0,
                    Some(timed) => cost(fill, timed) * 1000.0,
                };
                choice.record(seconds, 1000);
                fill
            })
            .collect();
        (choice, seen)
    }

    /// The ways picked over `TRIALS` depths, each way taking `per` seconds a successor
    /// (owned, one lock) but in the warm-up.
    fn picks(per: [f64; 2]) -> Vec<Fill> {
        picks_by(|fill, _| per[usize::from(fill == Fill::OneLock)]).1
    }

    /// One pair of timed trials does not decide, however clear: both ways run every trial.
    #[test]
    fn every_trial_runs_however_clear_the_first_pair() {
        use Fill::{OneLock, Owned};
        for per in [[1.3e-9, 1e-9], [1e-9, 1.3e-9], [3e-9, 1e-9], [1e-9, 3e-9]] {
            assert_eq!(picks(per), [OneLock, Owned].repeat(TRIALS as usize / 2), "{per:?}");
        }
        // As on the 3x3 boards with dice on an AMD EPYC: the ways cost the same at the first
        // pair's depths, and owned more at the second's; the host slows the first pair's
        // one-lock depth, which then looks 1.3 times as slow. The second pair sets it right.
        let (mut choice, _) = picks_by(|fill, timed| match (fill, timed) {
            (OneLock, 0) => 1.3e-9,
            (Owned, 3) => 1.4e-9,
            _ => 1e-9,
        });
        assert_eq!(choice.way(1000, MANY), OneLock);
    }

    /// A run too near its end for trials to pay takes the owned fill without any, and keeps
    /// the way it has rather than trying both again.
    #[test]
    fn no_trials_where_too_few_fills_follow_them() {
        let enough = TRIALS + FILLS_AFTER_TRIALS;
        let mut choice = Choice::new(Fill::Auto);
        for left in (1..enough).rev() {
            assert_eq!(choice.way(1000, left), Fill::Owned);
            choice.record(1.0, 1000);
        }
        assert_eq!(choice.way(1000, enough), Fill::OneLock, "trials where enough follow");
        let mut kept = after_trials([2e-9, 1e-9]);
        assert_eq!(kept.way(1000 * RETRY_GROWTH, enough - 1), Fill::OneLock);
        assert_eq!(kept.way(1000 * RETRY_GROWTH, enough), Fill::OneLock);
        kept.record(1.0, 1000);
        assert_eq!(kept.way(1000 * RETRY_GROWTH, enough), Fill::Owned, "trials again");
    }

    #[test]
    fn trials_come_again_as_the_frontier_grows_unless_a_way_is_asked_for() {
        let mut kept = after_trials([2e-9, 1e-9]);
        let grown = 1000 * RETRY_GROWTH;
        assert_eq!(kept.way(grown - 1, MANY), Fill::OneLock);
        // Grown enough: both ways again (no warm-up), owned now the faster.
        let mut seen = Vec::new();
        for depth in 0..TRIALS - WARM_UP {
            let fill = kept.way(grown << depth, MANY);
            seen.push(fill);
            let per = if fill == Fill::Owned { 1e-9 } else { 1.1e-9 };
            kept.record(per * 1000.0, 1000);
        }
        assert_eq!(seen, [Fill::OneLock, Fill::Owned].repeat(seen.len() / 2));
        assert_eq!(kept.way(grown, MANY), Fill::Owned);
        for asked in [Fill::Owned, Fill::OneLock] {
            let mut choice = Choice::new(asked);
            for positions in [10, 10 << 20] {
                assert_eq!(choice.way(positions, MANY), asked);
                choice.record(1.0, 10);
            }
        }
    }
}

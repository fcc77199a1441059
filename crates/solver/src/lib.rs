//! An exact enumerator of Cephalopod game positions.
//!
//! Given a board and a depth, every sequence of `depth` moves (fewer when the board fills
//! first) is played, the final board of each is hashed (its cells read row by row as one
//! base-10 number, modulo 2^30), and the sum of those hashes modulo 2^30 is the answer.
//!
//! # Brief overview
//!
//! * [`solve`]: the library entry point, a [`Board`], a depth and [`Options`] in, an
//!   [`Answer`] out.
//! * [`parse`]: the text format (the depth on the first line, then one board row a line).
//! * The search (one breadth-first pass a depth over symmetry-canonical positions with one
//!   path count per symmetry, or one orbit mass when every symmetry fixes the start board)
//!   runs on rayon; the answer never depends on the thread count.
//! * The 3x3 board takes a fast path ([`state::Ring3`], SIMD canonicalisation); every other
//!   shape up to 64 cells takes the general one ([`state::Grid`]).
//!
//! # Example
//!
//! ```
//! use solver::{parse, solve, Options};
//!
//! let problem = parse("20\n0 6 0\n2 2 2\n1 6 1\n").unwrap();
//! let answer = solve(&problem.board, problem.depth, &Options::default()).unwrap();
//! assert_eq!(answer.answer, 322_444_322);
//! ```
#![deny(missing_docs)]

mod disk;
mod dispatch;
mod input;
mod lockstep;
mod search;
mod weights;

pub mod cli;

pub use input::{parse, InputError, Problem};
use search::Observer;
pub use search::{peak_memory, DepthStats};

pub use state::{Board, Level, Shape};

use state::canon::Portable;
use state::{Counts, Grid, Ring3, Rules, Width, U192};

/// How to run a search. The default: every core, the best instruction set, symmetry on, the
/// 3x3 fast path where it applies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Worker threads; `None` for one per core.
    pub threads: Option<usize>,
    /// Instruction set for the hot loops; `None` for the best this CPU has.
    pub backend: Option<Level>,
    /// Use the general path even on 3x3.
    pub general: bool,
    /// Store every board as itself (no canonicalisation): slower, for cross-checks.
    pub no_symmetry: bool,
    /// Keep 8 path counts a position (one per symmetry) even when every symmetry fixes the
    /// start, where one orbit mass would do: slower, for cross-checks and comparisons.
    pub lanes: bool,
    /// Also compute the answer at every depth `0..=depth`.
    pub all_depths: bool,
    /// Count the distinct boards at every depth ([`DepthStats::boards`]): keeps a set of the
    /// full boards and generates the last depth instead of summing it directly. In memory
    /// only (ignored when the frontier is on disk).
    pub count_boards: bool,
    /// Bytes of memory the frontier may take: the search runs in memory while the next depth
    /// fits, then moves its frontier to disk, in hash partitions small enough that the work
    /// fits. `None`: a quarter of the physical memory ([`default_memory_limit`]).
    pub memory_limit: Option<u64>,
    /// Where the on-disk frontier's scratch files go (a fresh directory inside it, removed at
    /// the end); the system's temporary directory by default.
    pub work_dir: Option<std::path::PathBuf>,
    /// Save every depth's frontier in this directory, atomically, so that a killed run can be
    /// resumed. Implies a disk frontier.
    pub checkpoint: Option<std::path::PathBuf>,
    /// Continue the run checkpointed in this directory (same board, depth and version).
    pub resume: Option<std::path::PathBuf>,
}

impl Options {
    /// True when the frontier lives on disk from the start (to checkpoint it or resume it).
    pub fn on_disk(&self) -> bool {
        self.checkpoint.is_some() || self.resume.is_some()
    }
}

/// The memory limit when none is given: a quarter of the
/// physical memory (Linux), else 1 GiB.
pub fn default_memory_limit() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(1 << 30, |kb| kb * 1024 / 4)
}

/// The result of [`solve`].
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The sum of the final hashes of all paths, modulo 2^30.
    pub answer: u32,
    /// With [`Options::all_depths`]: `answers[d]` is the answer at depth `d`.
    pub answers: Vec<u32>,
    /// Per-depth statistics, depth 0 first.
    pub stats: Vec<DepthStats>,
    /// The instruction set the search ran with.
    pub backend: Level,
    /// Which rules ran: `ring3`, `grid-u32`, `grid-u64`, `grid-u128` or `grid-u192`.
    pub path: &'static str,
}

/// Solves `board` at `depth`.
///
/// # Errors
/// When the requested backend is not available on this CPU, or the thread pool cannot start.
pub fn solve(board: &Board, depth: u32, options: &Options) -> anyhow::Result<Answer> {
    solve_observed(board, depth, options, &mut |_| ())
}

/// [`solve`], calling `observe` with each depth's statistics as soon as that depth is done
/// (for progress reports).
///
/// # Errors
/// As [`solve`].
pub fn solve_observed(
    board: &Board,
    depth: u32,
    options: &Options,
    observe: &mut (dyn FnMut(&DepthStats) + Send),
) -> anyhow::Result<Answer> {
    let level = match options.backend {
        Some(l) if !l.is_available() => {
            anyhow::bail!("the {} backend is not available on this CPU", l.name())
        }
        Some(l) => l,
        None => Level::detect(),
    };
    let mut run = move || choose(board, depth, options, level, observe);
    match options.threads {
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build()?;
            pool.install(run)
        }
        None => run(),
    }
}

fn choose(
    board: &Board,
    depth: u32,
    options: &Options,
    level: Level,
    observe: &mut Observer<'_>,
) -> anyhow::Result<Answer> {
    let shape = board.shape();
    if shape == Shape::SQUARE3 && !options.general {
        #[cfg(target_arch = "x86_64")]
        if level == Level::Avx2 {
            if let Some(b) = state::canon::Avx2::new() {
                return with_rules(&Ring3::new(b), board, depth, options, "ring3", observe);
            }
        }
        return with_rules(&Ring3::new(Portable), board, depth, options, "ring3", observe);
    }
    match shape.width() {
        Width::U32 => with_rules(&Grid::<u32>::new(shape, level), board, depth, options, "grid-u32", observe),
        Width::U64 => with_rules(&Grid::<u64>::new(shape, level), board, depth, options, "grid-u64", observe),
        Width::U128 => {
            with_rules(&Grid::<u128>::new(shape, level), board, depth, options, "grid-u128", observe)
        }
        Width::U192 => {
            with_rules(&Grid::<U192>::new(shape, level), board, depth, options, "grid-u192", observe)
        }
    }
}

fn with_rules<R: Rules>(
    rules: &R,
    board: &Board,
    depth: u32,
    options: &Options,
    path: &'static str,
    observe: &mut Observer<'_>,
) -> anyhow::Result<Answer> {
    let config = search::RunConfig {
        all_depths: options.all_depths,
        count_boards: options.count_boards && !options.on_disk(),
        // In memory until the next depth would pass the memory limit; then on disk.
        spill: match (options.on_disk(), options.memory_limit) {
            (true, _) => search::Spill::Never,
            (false, Some(limit)) => search::Spill::At(limit),
            (false, None) => search::Spill::AtDefault,
        },
    };
    let outcome = if options.no_symmetry {
        run_rules(&NoSymmetry(rules), path, board, depth, options, config, observe)?
    } else {
        run_rules(rules, path, board, depth, options, config, observe)?
    };
    Ok(Answer {
        answer: state::fold_lanes(&outcome.total),
        answers: outcome.answers,
        stats: outcome.stats,
        backend: rules.level(),
        path,
    })
}

/// Runs one search: on disk when asked, else in memory, handing over to disk when the
/// frontier outgrows the memory limit.
fn run_rules<R: Rules>(
    rules: &R,
    path: &'static str,
    board: &Board,
    depth: u32,
    options: &Options,
    config: search::RunConfig,
    observe: &mut Observer<'_>,
) -> anyhow::Result<search::Outcome> {
    // Built only for a disk search: the default limit reads /proc.
    let job = |config| disk::Job {
        rules,
        path,
        board,
        depth,
        config,
        disk: disk::DiskConfig {
            memory_limit: options.memory_limit.unwrap_or_else(default_memory_limit),
            work_dir: options.work_dir.clone(),
            checkpoint: options.checkpoint.clone(),
            resume: options.resume.clone(),
        },
    };
    if options.on_disk() {
        return disk::run(&job(config), observe);
    }
    // A start that every symmetry fixes needs one count a position (see `weights`).
    let orbits = weights::Orbits::of(rules, rules.pack(board.cells())).filter(|_| !options.lanes);
    match orbits {
        Some(orbits) => in_memory(search::Search::new(rules, orbits), board, depth, config, observe, job),
        None => in_memory(search::Search::new(rules, weights::Lanes), board, depth, config, observe, job),
    }
}

/// Runs `search` in memory, and hands its frontier to the disk search if it outgrows the
/// memory limit.
fn in_memory<'r, R: Rules, W: weights::Weights>(
    mut search: search::Search<'r, R, W>,
    board: &Board,
    depth: u32,
    config: search::RunConfig,
    observe: &mut Observer<'_>,
    job: impl Fn(search::RunConfig) -> disk::Job<'r, R>,
) -> anyhow::Result<search::Outcome> {
    let outcome = search.run(board.cells(), depth, config, observe);
    match outcome.handover {
        None => Ok(outcome),
        Some(reached) => {
            let config = search::RunConfig { count_boards: false, spill: search::Spill::Never, ..config };
            let growth = search.growth();
            disk::run_from_memory(&job(config), observe, search.into_frontier(), reached, growth, outcome)
        }
    }
}

/// The rules of `R` with every board its own canonical form: counts stay in lane 0.
struct NoSymmetry<'a, R>(&'a R);

impl<R: Rules> Rules for NoSymmetry<'_, R> {
    type Key = R::Key;
    const CHEAP_SUCCESSOR_HASHES: bool = R::CHEAP_SUCCESSOR_HASHES;
    const BUFFER: usize = R::BUFFER;
    fn shape(&self) -> Shape {
        self.0.shape()
    }
    fn level(&self) -> Level {
        self.0.level()
    }
    fn pack(&self, cells: &[u8]) -> R::Key {
        self.0.pack(cells)
    }
    fn unpack(&self, key: R::Key) -> Vec<u8> {
        self.0.unpack(key)
    }
    #[inline(always)]
    fn is_full(&self, s: R::Key) -> bool {
        self.0.is_full(s)
    }
    #[inline(always)]
    fn may_fill(&self, s: R::Key) -> bool {
        self.0.may_fill(s)
    }
    #[inline(always)]
    fn canonical(&self, s: R::Key) -> (R::Key, u8) {
        (s, 0)
    }
    fn symmetries(&self) -> usize {
        1
    }
    fn images(&self, s: R::Key) -> [R::Key; 8] {
        [s; 8]
    }
    #[inline(always)]
    fn permute(&self, counts: &Counts, _t: u8) -> Counts {
        *counts
    }
    #[inline(always)]
    fn successors(&self, s: R::Key, f: impl FnMut(R::Key)) {
        self.0.successors(s, f)
    }
    #[inline(always)]
    fn successors_into(&self, s: R::Key, out: &mut [R::Key]) -> usize {
        self.0.successors_into(s, out)
    }
    #[inline(always)]
    fn hashes(&self, s: R::Key) -> Counts {
        self.0.hashes(s)
    }
    #[inline(always)]
    fn successor_hashes(&self, s: R::Key) -> Counts {
        self.0.successor_hashes(s)
    }
}

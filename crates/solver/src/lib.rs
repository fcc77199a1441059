//! An exact enumerator of Cephalopod game positions.
//!
//! Given a board and a depth, every sequence of `depth` moves (fewer when the board fills
//! first) is played, the final board of each is hashed (its cells read row by row as one
//! base-10 number, modulo 2^30), and the sum of those hashes modulo 2^30 is the answer.
//!
//! # Brief overview
//!
//! * [`solve`]: a [`Board`], a depth and [`Options`] in, an [`Answer`] out;
//!   [`solve_observed`] calls back as each depth ends ([`DepthStats`]),
//!   [`solve_distributed`] runs as one rank of several ([`Cluster`]: [`InProcess`] threads,
//!   or MPI processes with the `mpi` feature's `solver::mpi`), and [`solve_streamed`] keeps
//!   the memory of a caller of every depth's answer from growing with the depth.
//! * [`perft`] and [`divide`]: exact counts of the move sequences from a board, depth by
//!   depth and by first move ([`moves`] names the moves; [`Problem::after_moves`] plays them).
//! * [`parse`]: the text format (the depth on the first line, then one board row a line).
//! * [`Options`], built with `with_*` setters: threads, backend, the memory limit past which
//!   partitions of the frontier go to disk, the disk reserve, checkpoints to resume, and a
//!   [`Cancel`] token that stops a run between depths or at the next chunk of one.
//! * [`Error`]: what every call returns on failure, a variant a caller can match (input,
//!   options, backend, I/O with the file, checkpoint, overflow, rank, cancelled).
//! * The search (one breadth-first pass a depth over symmetry-canonical positions with one
//!   path count per symmetry, or one orbit mass when every symmetry fixes the start board)
//!   runs on rayon; the answer never depends on the thread count or where the frontier
//!   lives. The 3x3 board takes a fast path ([`state::Ring3`], SIMD canonicalisation); every
//!   other shape up to 64 cells takes the general one ([`state::Grid`]).
//!
//! # Example
//!
//! ```
//! use solver::{parse, solve, Error, Options};
//!
//! let problem = parse("20\n0 6 0\n2 2 2\n1 6 1\n")?;
//! let options = Options::default().with_threads(2);
//! let answer = solve(&problem.board, problem.depth, &options)?;
//! assert_eq!(answer.answer, 322_444_322);
//!
//! // A checkpoint needs a new or empty directory: a crate's is refused, and untouched.
//! let dir = env!("CARGO_MANIFEST_DIR");
//! let refused = solve(&problem.board, problem.depth, &Options::default().with_checkpoint(dir));
//! assert!(matches!(refused, Err(Error::Checkpoint(e)) if e.dir() == std::path::Path::new(dir)));
//! # Ok::<(), Error>(())
//! ```
#![deny(missing_docs)]

mod budget;
mod checkpoint;
pub mod cluster;
mod dispatch;
mod driver;
mod error;
mod fill;
mod home;
mod input;
mod kernels;
pub mod moves;
#[cfg(feature = "mpi")]
pub mod mpi;
mod options;
mod perft;
mod plan;
mod stats;
mod weights;

/// The README's Rust snippets, compiled and run as documentation tests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeSnippets;

/// This crate's README's example, compiled and run as a documentation test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadme;

pub use budget::default_memory_limit;
pub use error::{CheckpointError, CheckpointErrorKind, Error, Result};
pub use input::{parse, parse_bytes, InputError, Problem};
pub use options::{Cancel, Options};

/// The most worker threads a search takes ([`Options::threads`]): more only wait for cores,
/// and each costs a stack and buffers.
pub const MAX_THREADS: usize = 1024;
pub use cluster::{Cluster, InProcess, Solo};
pub use fill::Fill;
pub use frontier::spill::DiskReserve;
pub use moves::{descend, legal_moves, Move, MoveError};
pub use perft::{
    divide, divide_distributed, perft, perft_distributed, Division, MoveCount, Perft, PerftRow, WholeGame,
};
use stats::Observer;
pub use stats::{peak_memory, DepthStats, RankSpread, RankSummary};

pub use state::{Board, Level, Shape};

#[cfg(not(target_arch = "x86_64"))]
use state::canon::Portable;
use state::{Counts, Grid, Ring3, Rules, Width, U192};

/// Where a finished run's checkpoint is and how large.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SavedCheckpoint {
    /// Its directory.
    pub dir: std::path::PathBuf,
    /// Bytes it takes on disk.
    pub bytes: u64,
}

/// The result of [`solve`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Answer {
    /// The sum of the final hashes of all paths, modulo 2^30.
    pub answer: u32,
    /// With [`Options::all_depths`]: `answers[d]` is the answer at depth `d`, for every depth
    /// from 0 to the one asked for (4 bytes a depth; each also comes in
    /// [`DepthStats::answer`] as its depth ends).
    pub answers: Vec<u32>,
    /// Per-depth statistics, depth 0 first.
    pub stats: Vec<DepthStats>,
    /// The instruction set the search ran with.
    pub backend: Level,
    /// Which rules ran: `ring3`, `grid-u64`, `grid-u128` or `grid-u192`.
    pub path: &'static str,
    /// With [`Options::checkpoint`] or [`Options::resume`]: the checkpoint, complete.
    pub checkpoint: Option<SavedCheckpoint>,
    /// Each rank's own figures, in rank order: one row, unless the search was distributed
    /// ([`solve_distributed`]).
    pub ranks: Vec<RankSummary>,
}

/// Removes the scratch directories of every search running in this process (where their
/// partitions on disk live). For a process about to end without running destructors (on a
/// signal, or when an MPI job is aborted): the searches must not go on. The `solver` binary
/// calls it when SIGTERM, SIGINT or SIGHUP come ([`on_first_scratch`]). Signal plumbing of
/// the binary, not part of the library's API: a library caller stops a run with [`Cancel`].
#[doc(hidden)]
pub fn remove_scratch() {
    home::remove_live();
}

/// Has `first` called once, when a search of this process first makes a scratch directory
/// (the `solver` binary then starts watching for signals, so that the runs that never go to
/// disk start no thread). The first call to this function sets it; later calls do nothing.
/// Signal plumbing of the binary, not part of the library's API.
#[doc(hidden)]
pub fn on_first_scratch(first: fn()) {
    let _ = home::ON_FIRST.set(first);
}

/// Solves `board` at `depth`.
///
/// # Errors
/// When the requested backend is not available on this CPU, the thread count is 0 or over
/// [`MAX_THREADS`], the thread pool cannot start, a
/// checkpoint is refused (a directory not empty, another problem's), or a file of the frontier
/// on disk cannot be written or read back intact.
pub fn solve(board: &Board, depth: u32, options: &Options) -> Result<Answer> {
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
) -> Result<Answer> {
    solve_distributed(board, depth, options, &Solo, observe)
}

/// [`solve_observed`] as one rank of `cluster` ([`cluster`]): every rank calls it with the
/// same board and depth (each with its own options: threads, memory limit, work directory,
/// checkpoint); each stores and expands the positions it owns, and every rank gets the whole
/// answer, `--all-depths` answers and statistics, the same as one process alone would.
/// With a checkpoint, each rank saves its own partitions in `rank-R/` of the directory, and
/// rank 0 a manifest that names the number of ranks; a checkpoint resumes only with as many.
///
/// # Errors
/// As [`solve`]; also when another rank refused the checkpoint. An error that is not a
/// refusal agreed by every rank (a full disk on one rank) leaves the others waiting in a
/// collective: the caller ends them (the `solver` binary aborts the MPI job).
pub fn solve_distributed(
    board: &Board,
    depth: u32,
    options: &Options,
    cluster: &dyn Cluster,
    observe: &mut (dyn FnMut(&DepthStats) + Send),
) -> Result<Answer> {
    let mut answer = solve_streamed(board, depth, options, cluster, observe)?;
    if options.all_depths {
        // Every path ended before `depth`: the later depths add nothing.
        answer.answers.resize(depth as usize + 1, answer.answer);
    }
    Ok(answer)
}

/// [`solve_distributed`], with [`Answer::answers`] only up to the last depth the search made
/// (every path may end before `depth`; the later depths' answers are all [`Answer::answer`]):
/// for a caller that takes each depth's answer from [`DepthStats::answer`] as it comes, and
/// whose memory must not grow with the depth asked for (the `solver` binary's
/// `--all-depths`, up to depth 4294967295).
///
/// ```
/// use solver::{solve_streamed, Board, Options, Shape, Solo};
///
/// // Every game on a 1x3 board ends by its third move.
/// let board = Board::empty(Shape::new(1, 3)?);
/// let mut lines = Vec::new();
/// let options = Options::default().with_all_depths(true);
/// let answer = solve_streamed(&board, u32::MAX, &options, &Solo, &mut |s| {
///     lines.extend(s.answer.map(|a| (s.depth, a)))
/// })?;
/// assert_eq!(answer.answers.len(), lines.len());
/// assert!(lines.len() <= 6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// As [`solve_distributed`].
pub fn solve_streamed(
    board: &Board,
    depth: u32,
    options: &Options,
    cluster: &dyn Cluster,
    observe: &mut Observer<'_>,
) -> Result<Answer> {
    let mut run = move || choose(board, depth, options, Counting::Hashes, cluster, observe);
    on_pool(options, cluster, &mut run).map(|(answer, _)| answer)
}

/// Runs `run` on the thread pool `options` asks for (checked), or on the caller's.
fn on_pool<T: Send>(
    options: &Options,
    cluster: &dyn Cluster,
    run: &mut (dyn FnMut() -> Result<T> + Send),
) -> Result<T> {
    // Ranks that are threads of one process need a pool each: a rank waiting in a collective
    // holds its pool's thread.
    let threads = options.threads.or((cluster.size() > 1).then(rayon::current_num_threads));
    match threads {
        Some(n) if !(1..=MAX_THREADS).contains(&n) => {
            Err(Error::options(format!("{n} threads: a search takes 1 to {MAX_THREADS}")))
        }
        // Asked on a thread of a pool of that many threads (the `solver` binary's `--threads N`
        // runs on its main thread so): that pool, with no thread to start, or to hand the
        // search to and wait for.
        Some(n)
            if cluster.size() == 1
                && rayon::current_thread_index().is_some()
                && rayon::current_num_threads() == n =>
        {
            run()
        }
        Some(n) => {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .map_err(|e| Error::ThreadPool { source: Box::new(e) })?;
            pool.install(run)
        }
        None => run(),
    }
}

/// What a search counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Counting {
    /// The hashes of the paths' final boards (the contest's answer).
    Hashes,
    /// The paths themselves, exactly ([`perft`]); with `state_space`, also the distinct boards
    /// reached at any depth.
    Exact { state_space: bool },
}

/// The backend `options` ask for, checked against this CPU.
fn level(options: &Options) -> Result<Level> {
    match options.backend {
        Some(l) if !l.is_available() => Err(Error::Backend { level: l }),
        Some(l) => Ok(l),
        None => Ok(Level::detect()),
    }
}

/// A finished search: its answer, and for a whole game counted exactly, its state space.
type Run = (Answer, Option<u64>);

fn choose(
    board: &Board,
    depth: u32,
    options: &Options,
    counting: Counting,
    cluster: &dyn Cluster,
    observe: &mut Observer<'_>,
) -> Result<Run> {
    let level = level(options)?;
    let shape = board.shape();
    // Each rules type below is one more copy of the whole engine in the binary (one a
    // counting), so a copy is kept only where it is the fast way: the ring for the 3x3 board,
    // with the backend this target runs it on (AVX2 on x86-64; elsewhere the portable one),
    // and the grid for everything else. An x86-64 CPU without AVX2, or `--backend portable`,
    // takes the grid on the 3x3 board too, as does the `--no-symmetry` cross-check.
    if shape == Shape::SQUARE3 && !options.general && !options.no_symmetry {
        // The ring's SIMD backend is AVX2's, which AVX-512 includes: its token comes from the
        // level's proof (already asked of the CPU), not from asking again.
        #[cfg(target_arch = "x86_64")]
        if let Some(cpu) = state::Isa::new(level).and_then(state::Isa::avx2) {
            let ring = Ring3::new(state::canon::Avx2::with_token(cpu));
            return with_rules::<_, false>(&ring, board, depth, options, counting, "ring3", cluster, observe);
        }
        #[cfg(not(target_arch = "x86_64"))]
        return with_rules::<_, false>(
            &Ring3::new(Portable),
            board,
            depth,
            options,
            counting,
            "ring3",
            cluster,
            observe,
        );
    }
    // Boards of up to 10 cells share the 64-bit keys: their frontiers are small, and a
    // 32-bit grid would be a copy of the engine for them alone.
    match shape.width() {
        Width::U32 | Width::U64 => with_rules::<_, true>(
            &Grid::<u64>::new(shape, dispatch::level_for::<Grid<u64>>(level)),
            board,
            depth,
            options,
            counting,
            "grid-u64",
            cluster,
            observe,
        ),
        Width::U128 => with_rules::<_, true>(
            &Grid::<u128>::new(shape, dispatch::level_for::<Grid<u128>>(level)),
            board,
            depth,
            options,
            counting,
            "grid-u128",
            cluster,
            observe,
        ),
        Width::U192 => with_rules::<_, true>(
            &Grid::<U192>::new(shape, dispatch::level_for::<Grid<U192>>(level)),
            board,
            depth,
            options,
            counting,
            "grid-u192",
            cluster,
            observe,
        ),
    }
}

/// Runs one search under `rules`. With `CROSS_CHECK` (the grids), `--no-symmetry` runs the
/// cross-check: every board its own class, one count a position (an orbit of one board). It
/// takes this one counting, on grids only, so that the engine is compiled once more per key
/// width for it, not once per counting and rules (`CROSS_CHECK` is a constant: the ring's copy
/// of this function has no cross-check in it).
#[allow(clippy::too_many_arguments)]
fn with_rules<R: Rules, const CROSS_CHECK: bool>(
    rules: &R,
    board: &Board,
    depth: u32,
    options: &Options,
    counting: Counting,
    path: &'static str,
    cluster: &dyn Cluster,
    observe: &mut Observer<'_>,
) -> Result<Run> {
    if CROSS_CHECK && options.no_symmetry && counting == Counting::Hashes {
        let orbits = weights::Orbits::of(&NoSymmetry(rules), rules.pack(board.cells()))
            .expect("with no symmetry but the identity, every start is its own orbit");
        let config = hashes_config(options);
        let outcome = run_weighted(
            &NoSymmetry(rules),
            orbits,
            "orbits",
            path,
            board,
            depth,
            options,
            config,
            cluster,
            observe,
        )?;
        return Ok(finish(outcome, rules.level(), path));
    }
    let outcome = if let Counting::Exact { state_space } = counting {
        if options.no_symmetry || options.lanes || options.all_depths {
            return Err(Error::options("exact counts take neither --no-symmetry, --lanes nor --all-depths"));
        }
        let exact = weights::Exact::of(rules, rules.pack(board.cells()));
        let config =
            driver::RunConfig { all_depths: false, count_boards: true, fill: options.fill, state_space };
        run_weighted(rules, exact, "exact", path, board, depth, options, config, cluster, observe)?
    } else {
        run_rules(rules, path, board, depth, options, cluster, observe)?
    };
    Ok(finish(outcome, rules.level(), path))
}

/// A finished search's answer, from the driver's outcome.
fn finish(outcome: driver::Outcome, backend: Level, path: &'static str) -> Run {
    let state_space = outcome.state_space;
    let answer = Answer {
        answer: state::fold_lanes(&outcome.total),
        answers: outcome.answers,
        stats: outcome.stats,
        backend,
        path,
        checkpoint: outcome.checkpoint.map(|(dir, bytes)| SavedCheckpoint { dir, bytes }),
        ranks: outcome.ranks,
    };
    (answer, state_space)
}

/// Runs one search, with orbit masses when every symmetry fixes the start (see `weights`).
fn run_rules<R: Rules>(
    rules: &R,
    path: &'static str,
    board: &Board,
    depth: u32,
    options: &Options,
    cluster: &dyn Cluster,
    observe: &mut Observer<'_>,
) -> Result<driver::Outcome> {
    let start = rules.pack(board.cells());
    let config = hashes_config(options);
    if !options.lanes {
        if let Some(orbits) = weights::Orbits::of(rules, start) {
            return run_weighted(
                rules, orbits, "orbits", path, board, depth, options, config, cluster, observe,
            );
        }
        if let Some(cosets) = weights::Cosets::<4>::of(rules, start) {
            return run_weighted(
                rules,
                cosets,
                "cosets of 2",
                path,
                board,
                depth,
                options,
                config,
                cluster,
                observe,
            );
        }
    }
    run_weighted(rules, weights::Lanes, "lanes", path, board, depth, options, config, cluster, observe)
}

/// Runs one search counted by `weights`: opens the checkpoint (new, or resumed), then the
/// driver.
#[allow(clippy::too_many_arguments)]
fn run_weighted<R: Rules, W: weights::Weights>(
    rules: &R,
    weights: W,
    counting: &str,
    path: &'static str,
    board: &Board,
    depth: u32,
    options: &Options,
    config: driver::RunConfig,
    cluster: &dyn Cluster,
    observe: &mut Observer<'_>,
) -> Result<driver::Outcome> {
    let shape = board.shape();
    // What a checkpoint records of the problem (made only for a run that checkpoints).
    let identity = || checkpoint::Identity {
        version: env!("CARGO_PKG_VERSION").to_string(),
        path: path.to_string(),
        weights: if options.no_symmetry { format!("{counting}, no symmetry") } else { counting.to_string() },
        record: (std::mem::size_of::<R::Key>(), std::mem::size_of::<W::Count>()),
        shape: (shape.rows(), shape.cols()),
        cells: board.cells().to_vec(),
        target: depth,
        ranks: (cluster.size() > 1).then(|| (cluster.rank(), cluster.size())),
    };
    // With several ranks, each checkpoints into its own directory within the one given.
    let own = |dir: &std::path::Path, resume: bool| -> Result<std::path::PathBuf> {
        if cluster.size() > 1 {
            checkpoint::rank_dir(dir, cluster, resume)
        } else {
            checkpoint::refuse_cluster(dir)?;
            Ok(dir.to_path_buf())
        }
    };
    let mut storage = driver::Storage {
        work_dir: options.work_dir.clone(),
        reserve: options.disk_reserve,
        ..driver::Storage::default()
    };
    let mut resume = None;
    match (&options.checkpoint, &options.resume) {
        (Some(c), Some(r)) if c != r => {
            return Err(Error::options(format!(
                "--checkpoint {} and --resume {}: a resumed run goes on checkpointing into the directory it resumes; give --resume alone",
                c.display(),
                r.display()
            )))
        }
        (_, Some(dir)) => {
            if options.all_depths {
                return Err(Error::options("--all-depths cannot be combined with --resume (the answers of the depths before the checkpoint are not saved)"));
            }
            let dir = own(dir, true)?;
            let (ck, manifest) = cluster::agree(cluster, checkpoint::Checkpoint::resume(&dir, &identity()))?;
            let depths = cluster.all_gather(&[u64::from(manifest.depth)]);
            if depths.iter().any(|&d| d != depths[0]) {
                let message = format!(
                    "the ranks' checkpoints are at different depths ({depths:?}, by rank): the run was stopped while they were committing; it cannot resume"
                );
                return Err(Error::checkpoint(CheckpointErrorKind::OtherRanks, &dir, message));
            }
            storage.checkpoint = Some(ck);
            resume = Some(manifest);
        }
        (Some(dir), None) => {
            let dir = own(dir, false)?;
            storage.checkpoint = Some(cluster::agree(cluster, checkpoint::Checkpoint::create(&dir))?);
        }
        (None, None) => {}
    }
    if storage.checkpoint.is_some() {
        storage.identity = Some(identity());
    }
    let budget = budget::Budget::new(options.memory_limit);
    let mut search = driver::Search::new(rules, weights, budget, storage, cluster);
    search.cancel.clone_from(&options.cancel);
    search.run(board.cells(), depth, config, resume, observe)
}

/// What a search of the contest's answer computes besides it, as `options` say.
fn hashes_config(options: &Options) -> driver::RunConfig {
    driver::RunConfig {
        all_depths: options.all_depths,
        count_boards: options.count_boards,
        fill: options.fill,
        state_space: false,
    }
}

/// The rules of `R` with every board its own canonical form: counts stay in lane 0.
struct NoSymmetry<'a, R>(&'a R);

impl<R: Rules> Rules for NoSymmetry<'_, R> {
    type Key = R::Key;
    const SIMD_ONLY: bool = R::SIMD_ONLY;
    const CHEAP_SUCCESSOR_HASHES: bool = R::CHEAP_SUCCESSOR_HASHES;
    const BUFFER: usize = R::BUFFER;
    fn shape(&self) -> Shape {
        self.0.shape()
    }
    fn isa(&self) -> state::Isa {
        self.0.isa()
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

//! The command-line tool: arguments, reading the input, printing the answer.
//!
//! `out` holds the checked stdout, the colour rule and the streamed `--all-depths` lines;
//! `report` the `--stats` tables and the `--json` object; `progress` the progress bar;
//! `manual` the shell completions and the manual page made from [`Args`]; `mpi` one rank of
//! an MPI job.

use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, ValueEnum};

use solver::{
    parse_bytes, Answer, Cancel, DepthStats, DiskReserve, Fill, Level, Options, Problem, MAX_THREADS,
};

mod count;
mod manual;
#[cfg(feature = "mpi")]
mod mpi;
mod out;
mod progress;
mod report;

pub use manual::{generate, Generate};
pub use out::colour;
use out::Stdout;
pub use progress::Progress;

/// The `--help` heading of the options that cross-check the engine or tune it: they never
/// change an answer.
const TUNING: &str = "Cross-checks and tuning (never change an answer)";

/// Exact enumerator of Cephalopod game positions
///
/// Reads a board and a depth DEPTH; prints the sum, over every sequence of DEPTH moves from
/// that board (fewer when the board fills), of the final board's hash, modulo 2^30.
#[derive(Debug, Default, PartialEq, Parser)]
#[command(name = "solver", version, after_help = EXAMPLES, max_term_width = 100)]
pub struct Args {
    /// Input file: the depth on the first line, then the board, one row a line [default: stdin]
    ///
    /// `-` reads stdin too. Each row is its cells' pip counts (0 for an empty cell, 1 to 6),
    /// separated by spaces; every row has as many cells, 64 cells at most.
    pub file: Option<PathBuf>,
    /// Worker threads, 1 to 1024 [default: RAYON_NUM_THREADS, else one per core]
    ///
    /// The answer never depends on it. Without it, the environment variable
    /// RAYON_NUM_THREADS, when set to a positive number, gives the count.
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Print the answer at every depth from 0 to DEPTH, one `depth answer` line each
    ///
    /// Each line is printed as its depth ends. When every game ends before DEPTH, the later
    /// depths' lines (all with the final answer) follow at once; a reader that stops
    /// reading (`| head`) ends the run.
    #[arg(long)]
    pub all_depths: bool,
    /// Print exact counts: one `depth perft ended boards` line a depth.
    ///
    /// The move sequences of exactly that many moves, those whose last move filled the board,
    /// and the distinct boards they reach, each line as its depth ends, up to DEPTH or the end
    /// of every game. DEPTH 4294967295 asks for the whole game: a summary (games, the longest,
    /// the boards reachable) then goes to stderr.
    #[arg(long, conflicts_with_all = ["divide", "all_depths"])]
    pub perft: bool,
    /// Split perft(DEPTH) and the answer by first move: one `move perft answer` line a move.
    ///
    /// Each legal first move (named as the README says: `b2`, or `b2:a2+c2` for a capture),
    /// the sequences of DEPTH moves that begin with it, and the answer over its paths; the
    /// totals go to stderr.
    #[arg(long, conflicts_with_all = ["all_depths", "checkpoint", "resume"])]
    pub divide: bool,
    /// Play these moves first, then answer or count from where they lead.
    ///
    /// Comma-separated moves (e.g. `b2,a1:a2+b1`), each legal where it is played; the search
    /// then runs from the board they reach, at DEPTH less their number.
    #[arg(long, value_name = "MOVES")]
    pub moves: Option<String>,
    /// Per-depth statistics on stderr: positions, distinct boards, time, memory, disk
    ///
    /// Counting boards keeps a set of the full boards and generates the last depth: slower.
    /// With --json, the statistics (with the engine's internals) go into the JSON object.
    #[arg(long)]
    pub stats: bool,
    /// Print one JSON object on stdout instead of plain text (schema in docs/guide.md)
    #[arg(long)]
    pub json: bool,
    /// Never show the progress bar
    ///
    /// The bar shows only when stderr is a terminal, once a run has lasted a second.
    #[arg(long)]
    pub no_progress: bool,
    /// Memory for the frontier, e.g. 512M or 8G [default: a quarter of the physical memory]
    ///
    /// The frontier is a set of hash partitions: in memory while a depth fits; past the
    /// limit, as many partitions stay in memory as fit and the others go to disk (in
    /// --work-dir). A byte count with an optional K, M, G or T suffix (powers of 1024).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,
    /// Where partitions on disk go [default: the system's temporary directory]
    ///
    /// A scratch directory is made inside DIR when a partition first goes to disk, and
    /// removed at the end (a killed run's is removed by the next run in DIR). It does not
    /// put the frontier on disk by itself (--memory-limit decides).
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Free disk space to leave for other programs [default: 1/50 of the disk, 1G to 16G]
    ///
    /// On the disk that partitions (--work-dir) and checkpoints go to: a run that would
    /// write past it stops with an error instead of filling the disk. A byte count as for
    /// --memory-limit; 0: write until the disk is full.
    #[arg(long, value_name = "SIZE", value_parser = parse_reserve)]
    pub disk_reserve: Option<u64>,
    /// Save every depth's frontier in DIR, so that a killed run can be resumed
    ///
    /// DIR is a new or empty directory that becomes the run's own; partitions in memory
    /// are written out too.
    #[arg(long, value_name = "DIR")]
    pub checkpoint: Option<PathBuf>,
    /// Continue the run saved in DIR by --checkpoint
    ///
    /// Same board, depth, counting and version; the run goes on checkpointing into DIR.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Run as one rank of an MPI job: `mpirun -np N solver --mpi [OPTIONS] [FILE]`
    ///
    /// Rank 0 reads the problem and prints; every other option applies to each rank on its
    /// own (its threads, memory limit, work directory). Listed only in builds with the
    /// `mpi` feature; elsewhere it is refused with a hint.
    #[arg(long, hide = cfg!(not(feature = "mpi")))]
    pub mpi: bool,
    /// Instruction set for the hot loops
    #[arg(long, value_enum, default_value_t, value_name = "NAME", help_heading = TUNING)]
    pub backend: Backend,
    /// Use the general path even on the 3x3 board
    #[arg(long, help_heading = TUNING)]
    pub general: bool,
    /// How several threads fill a next frontier held in memory
    ///
    /// By default, the faster way on this machine, timed on the run's first parallel depths.
    #[arg(long, value_enum, default_value_t, value_name = "WAY", help_heading = TUNING)]
    pub fill: FillArg,
    /// Do not reduce by symmetry (slower)
    #[arg(long, help_heading = TUNING)]
    pub no_symmetry: bool,
    /// Keep 8 path counts a position even when symmetries fix the start board (slower)
    ///
    /// Otherwise one count does when every symmetry fixes the start, and 4 or 2 when some do.
    #[arg(long, help_heading = TUNING)]
    pub lanes: bool,
    /// --stats with the engine's internals too: records, ended paths, phases, fill
    #[arg(long, help_heading = TUNING)]
    pub stats_internals: bool,
    /// Print shell completions or the manual page (what `cargo xtask man` installs)
    #[arg(long, value_enum, value_name = "WHAT", hide = true)]
    pub generate: Option<Generate>,
}

/// `--backend`: the instruction set for the hot loops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The best this CPU has.
    #[default]
    Auto,
    /// Plain Rust, on any CPU.
    Portable,
    /// AVX2 (x86-64 CPUs that have it).
    Avx2,
    /// AVX-512 F, CD, BW, DQ and VL (x86-64 CPUs that have them); the 3x3 ring runs its AVX2
    /// code.
    Avx512,
}

/// `--fill`: how several threads fill a next frontier held in memory ([`Fill`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum FillArg {
    /// Measured on the run's first parallel depths: each way in turn, then the faster one.
    #[default]
    Auto,
    /// A shard a thread, filled only by that thread; the others' successors posted to them.
    Owned,
    /// One set behind one lock, filled by every thread a batch at a time.
    OneLock,
}

impl FillArg {
    /// The fill it asks for.
    pub fn fill(self) -> Fill {
        match self {
            FillArg::Auto => Fill::Auto,
            FillArg::Owned => Fill::Owned,
            FillArg::OneLock => Fill::OneLock,
        }
    }
}

impl Backend {
    /// The instruction set it asks for (`None`: the best available).
    pub fn level(self) -> Option<Level> {
        match self {
            Backend::Auto => None,
            Backend::Portable => Some(Level::Portable),
            Backend::Avx2 => Some(Level::Avx2),
            Backend::Avx512 => Some(Level::Avx512),
        }
    }
}

impl Args {
    /// The process's arguments, parsed by clap; with none, `Args::default()` (the same,
    /// without building clap's command, a share of a short run's whole process: the contest
    /// runs the solver with no arguments, once per case).
    ///
    /// # Errors
    /// Clap's error, or its help or version text, to print as [`main`] does.
    pub fn from_env() -> Result<Args, clap::Error> {
        if std::env::args_os().len() <= 1 {
            Ok(Args::default())
        } else {
            Args::try_parse()
        }
    }

    /// True when per-depth statistics are asked for (`--stats` or `--stats-internals`).
    pub fn any_stats(&self) -> bool {
        self.stats || self.stats_internals
    }
}

/// Parses `512M`, `8G`, `1.5GiB`, `1048576`... into bytes (K, M, G and T are powers of 1024),
/// with the `parse-size` crate; zero is refused.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bytes = parse_size::Config::new()
        .with_binary()
        .parse_size(text.trim())
        .map_err(|e| format!("`{text}` is not a size such as 512M or 8G ({e})"))?;
    if bytes == 0 {
        return Err("the memory limit must be more than zero".into());
    }
    Ok(bytes)
}

/// Parses a disk reserve: a size as [`parse_size()`] reads it, or 0 (none).
pub fn parse_reserve(text: &str) -> Result<u64, String> {
    if text.trim() == "0" {
        return Ok(0);
    }
    parse_size(text)
}

/// Parses a thread count from 1 to [`MAX_THREADS`].
pub fn parse_threads(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Ok(0) => Err("must be at least 1".into()),
        Ok(_) => Err(format!("at most {MAX_THREADS} (more threads than that only wait for cores)")),
        Err(_) => Err(format!("`{text}` is not a whole number of threads")),
    }
}

const EXAMPLES: &str = "Examples:
  printf '40\\n0 0 0\\n0 0 0\\n0 0 0\\n' | solver        # prints 503115192
  solver fixtures/public/cg01.in                        # a file instead of stdin
  solver --threads 1 --stats fixtures/public/cg01.in    # per-depth statistics on stderr
  solver --all-depths fixtures/shapes/4x4_empty_d8.in   # `depth answer` for depths 0..=8
  solver --json --stats fixtures/shapes/3x5_d7.in       # one JSON object with the statistics
  solver --memory-limit 64M --stats big.in              # partitions past 64M on disk
  solver --checkpoint ck/ big.in                        # save every depth; if killed:
  solver --resume ck/ big.in                            # ...continue where it stopped

Exit status: 0 on success, 1 when reading or writing fails (a broken pipe included), 2 on bad
input or options. The user guide (docs/guide.md) describes every option.";

/// How a run failed.
#[derive(Debug)]
pub enum Failed {
    /// An exit code and a message for stderr.
    Run(u8, String),
    /// Writing to stdout failed.
    Stdout(io::Error),
}

impl Failed {
    /// Says what failed on stderr (a broken pipe silently) and gives the exit code.
    fn exit(self) -> ExitCode {
        match self {
            Failed::Run(code, msg) => {
                let _ = writeln!(io::stderr(), "error: {msg}");
                ExitCode::from(code)
            }
            Failed::Stdout(e) => out::write_failed(&e),
        }
    }
}

impl From<(u8, String)> for Failed {
    fn from((code, msg): (u8, String)) -> Failed {
        Failed::Run(code, msg)
    }
}

/// Runs the tool with the process's arguments; the exit code is 0 on success, 1 on a failure
/// to read or write (input, output, or the disk frontier's files), 2 on bad input or
/// arguments (including a checkpoint of another problem). Nothing goes to stdout but the
/// answer (or help and version text); every write is checked, and a broken pipe ends the run
/// quietly with exit 1. Colour only on a terminal, never with `NO_COLOR` ([`colour`]).
pub fn main() -> ExitCode {
    let args = match Args::from_env() {
        Ok(args) => args,
        Err(e) => return clap_message(&e),
    };
    if let Some(what) = args.generate {
        return out::deliver(Stdout::open(), &generate(what));
    }
    #[cfg(unix)]
    solver::on_first_scratch(remove_scratch_on_signals);
    if args.mpi {
        #[cfg(feature = "mpi")]
        return mpi::main(&args);
        #[cfg(not(feature = "mpi"))]
        return Failed::Run(2, "--mpi: this solver was built without MPI (build it with `cargo build --release -p solver --features mpi`)".into()).exit();
    }
    // The answer's way out is checked before any work: a closed stdout fails now.
    let mut stdout = match Stdout::open() {
        Ok(stdout) => stdout,
        Err(e) => return Failed::Run(1, format!("cannot write to stdout: {e}")).exit(),
    };
    // `--threads N`: this thread becomes the first thread of a pool of N, kept until the
    // process ends (a pool made with the calling thread is never freed), and the search runs
    // on it: no thread to hand the search to and wait for, and with one thread none to start.
    // (Failing, the search starts a pool of its own.)
    let _pool =
        args.threads.map(|n| rayon::ThreadPoolBuilder::new().num_threads(n).use_current_thread().build());
    match run(&args, &mut stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failed) => failed.exit(),
    }
}

/// Prints clap's error (on stderr, exit 2) or its help or version text (on stdout, exit 0),
/// in colour only where [`colour`] allows.
fn clap_message(e: &clap::Error) -> ExitCode {
    if e.use_stderr() {
        let styled = e.render();
        let text =
            if colour(io::stderr().is_terminal()) { styled.ansi().to_string() } else { styled.to_string() };
        let _ = io::stderr().write_all(text.as_bytes());
        return ExitCode::from(2);
    }
    let styled = e.render();
    let text =
        if colour(io::stdout().is_terminal()) { styled.ansi().to_string() } else { styled.to_string() };
    out::deliver(Stdout::open(), text.as_bytes())
}

/// Starts a thread that, when SIGTERM, SIGINT or SIGHUP comes, removes the run's scratch
/// directories and ends the process (exit 128 + the signal's number): a process ended by a
/// signal runs no destructors, and `mpirun` ends the other ranks of an aborted job with
/// SIGTERM.
#[cfg(unix)]
fn remove_scratch_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) else { return };
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            solver::remove_scratch();
            std::process::exit(128 + signal);
        }
    });
}

/// Reads the input: the file, or stdin when there is none or it is `-` (with a hint on
/// stderr first when stdin is a terminal). Returns its bytes and the name messages give it.
fn read_input(file: Option<&PathBuf>) -> Result<(Vec<u8>, String), (u8, String)> {
    match file {
        Some(path) if path.as_os_str() != "-" => {
            let bytes =
                std::fs::read(path).map_err(|e| (1, format!("cannot read {}: {e}", path.display())))?;
            Ok((bytes, path.display().to_string()))
        }
        _ => {
            if out::stdin_is_terminal() {
                let _ = writeln!(io::stderr(), "{}", out::STDIN_HINT);
            }
            let mut bytes = Vec::new();
            io::stdin().read_to_end(&mut bytes).map_err(|e| (1, format!("cannot read stdin: {e}")))?;
            Ok((bytes, "stdin".to_string()))
        }
    }
}

/// Everything after the arguments: reads the problem, solves it with the progress bar and the
/// `--all-depths` lines as the depths end, then reports. Statistics (with `--stats`) and the
/// progress bar go to stderr; a failure to write the statistics is a failure of the run (exit
/// 1). A failure to write a depth's line ends the process at once.
pub fn run(args: &Args, stdout: &mut Stdout) -> Result<(), Failed> {
    let problem = count::descended(args, read_problem(args)?)?;
    // A line that cannot be written stops the search at once (its scratch removed, its
    // checkpoint at the last depth done), and the run fails on that write.
    let cancel = Cancel::new();
    let options = options(args).with_cancel(cancel.clone());
    let started = Instant::now();
    let mut progress = Progress::new(problem.depth, started, progress_target(args));
    let count = count::Count::of(args);
    if count != count::Count::Answer {
        let out = Some(&mut stdout.0);
        return count::run(count, args, &problem, &options, &solver::Solo, &mut progress, out, None);
    }
    let mut unwritten = None;
    let answer = {
        let stream = args.all_depths && !args.json;
        let out = &mut stdout.0;
        let mut observe = |s: &DepthStats| {
            progress.depth_done(s);
            if let (true, Some(answer), None) = (stream, s.answer, &unwritten) {
                if let Err(e) = progress.suspend(|| out::depth_line(out, s.depth, answer)) {
                    unwritten = Some(e);
                    cancel.cancel();
                }
            }
        };
        solver::solve_streamed(&problem.board, problem.depth, &options, &solver::Solo, &mut observe)
    };
    progress.finish();
    if let Some(e) = unwritten {
        return Err(Failed::Stdout(e));
    }
    let answer = answer.map_err(failure)?;
    finish(args, &problem, &answer, &options, started.elapsed().as_secs_f64(), stdout)
}

/// The problem, read from the input and parsed.
fn read_problem(args: &Args) -> Result<Problem, (u8, String)> {
    let (bytes, source) = read_input(args.file.as_ref())?;
    parse_bytes(&bytes).map_err(|e| (2, format!("{source}: {e}")))
}

/// The search's options, as the arguments give them.
fn options(args: &Args) -> Options {
    let mut options = Options::default()
        .with_threads(args.threads)
        .with_backend(args.backend.level())
        .with_general(args.general)
        .with_fill(args.fill.fill())
        .with_no_symmetry(args.no_symmetry)
        .with_lanes(args.lanes)
        .with_all_depths(args.all_depths)
        .with_count_boards(args.any_stats())
        .with_memory_limit(args.memory_limit)
        .with_disk_reserve(match args.disk_reserve {
            None => DiskReserve::Standard,
            Some(0) => DiskReserve::None,
            Some(n) => DiskReserve::Bytes(n),
        });
    options.work_dir.clone_from(&args.work_dir);
    options.checkpoint.clone_from(&args.checkpoint);
    options.resume.clone_from(&args.resume);
    options
}

/// Where the progress bar is drawn: stderr when it is a terminal and the bar is not refused.
fn progress_target(args: &Args) -> Option<indicatif::ProgressDrawTarget> {
    (!args.no_progress && io::stderr().is_terminal()).then(indicatif::ProgressDrawTarget::stderr)
}

/// A failed search's exit code and message: disk trouble (unwritable, full, corrupt) is exit
/// 1; refused options, input and checkpoints are exit 2.
fn failure(e: solver::Error) -> (u8, String) {
    use solver::{CheckpointErrorKind, Error};
    let disk = match &e {
        Error::Io { .. } | Error::Mpi { .. } => true,
        Error::Checkpoint(c) => c.kind() == CheckpointErrorKind::Corrupt,
        _ => false,
    };
    (if disk { 1 } else { 2 }, e.to_string())
}

/// Reports a finished search: the checkpoint's place and the statistics on stderr; on
/// `stdout`, the answer, or the `--all-depths` lines of the depths after those the search
/// made (every path ended before them), or the JSON object.
fn finish(
    args: &Args,
    problem: &Problem,
    answer: &Answer,
    options: &Options,
    seconds: f64,
    stdout: &mut Stdout,
) -> Result<(), Failed> {
    let unwritable = |e: io::Error| Failed::Run(1, format!("cannot write to stderr: {e}"));
    if let Some(ck) = &answer.checkpoint {
        writeln!(
            io::stderr(),
            "checkpoint: {} (complete, {:.1} MiB; --resume {} prints the answer again)",
            ck.dir.display(),
            ck.bytes as f64 / (1 << 20) as f64,
            ck.dir.display()
        )
        .map_err(unwritable)?;
    }
    if args.any_stats() && !args.json {
        let table = report::stats_table(problem, answer, args.stats_internals);
        io::stderr().write_all(table.as_bytes()).map_err(unwritable)?;
    }
    let out = &mut stdout.0;
    let written = if args.json {
        report::write_json(out, problem, answer, options, args.any_stats(), seconds)
    } else if args.all_depths {
        let made = answer.answers.len().saturating_sub(1) as u32;
        out::remaining_lines(out, made, problem.depth, answer.answer)
    } else {
        writeln!(out, "{}", answer.answer).and_then(|()| out.flush())
    };
    written.map_err(Failed::Stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_arguments_are_clap_defaults() {
        assert_eq!(Args::default(), Args::parse_from(["solver"]));
    }

    #[test]
    fn sizes_and_threads_are_checked() {
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0").is_err() && parse_size("12Q").is_err() && parse_size("-1M").is_err());
        assert_eq!((parse_reserve("0"), parse_reserve("2G")), (Ok(0), Ok(2 << 30)));
        assert!(parse_reserve("-1").is_err() && parse_reserve("lots").is_err());
        assert_eq!(parse_threads("1024"), Ok(1024));
        assert!(parse_threads("0").unwrap_err().contains("at least"));
        assert!(parse_threads("100000").unwrap_err().contains("at most 1024"));
        assert!(parse_threads("x").is_err());
    }

    #[test]
    fn stats_internals_count_boards_as_stats_do() {
        let args = Args::parse_from(["solver", "--stats-internals"]);
        assert!(args.any_stats() && options(&args).count_boards);
    }
}

//! The command-line tool: arguments, reading the input, printing the answer.

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use serde::Serialize;

use crate::{
    parse_bytes, solve_observed, Answer, DepthStats, DiskReserve, Fill, Level, Options, Problem, MAX_THREADS,
};

/// Exact enumerator of Cephalopod game positions: the sum, over every sequence of DEPTH moves
/// from the given board (fewer when it fills), of the final board's hash, modulo 2^30.
#[derive(Debug, Default, PartialEq, Parser)]
#[command(version, after_help = EXAMPLES)]
pub struct Args {
    /// Input file (the depth on the first line, then the board, one row a line); stdin when
    /// absent or `-`.
    pub file: Option<PathBuf>,
    /// Worker threads, 1 to 1024 (default: one per core). The answer never depends on it.
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Instruction set for the hot loops.
    #[arg(long, value_enum, default_value_t, value_name = "NAME")]
    pub backend: Backend,
    /// Use the general path even on the 3x3 board.
    #[arg(long)]
    pub general: bool,
    /// How several threads fill a next frontier held in memory. The answer never depends on
    /// it.
    #[arg(long, value_enum, default_value_t, value_name = "WAY")]
    pub fill: Fill,
    /// Do not reduce by symmetry (slower; for cross-checks).
    #[arg(long)]
    pub no_symmetry: bool,
    /// Keep 8 path counts a position even when symmetries fix the start board (which otherwise
    /// needs one when all do, and 4 or 2 when some do): slower; for cross-checks and
    /// comparisons.
    #[arg(long)]
    pub lanes: bool,
    /// Print the answer at every depth from 0 to DEPTH, one `depth answer` line each.
    #[arg(long)]
    pub all_depths: bool,
    /// Per-depth statistics on stderr: positions, distinct boards, ended paths, time, memory.
    /// Counting boards keeps a set of the full boards and generates the last depth: slower.
    #[arg(long)]
    pub stats: bool,
    /// Print one JSON object on stdout instead of plain text (schema in docs/guide.md).
    #[arg(long)]
    pub json: bool,
    /// Never show the progress bar (it shows only on a terminal, for runs over a second).
    #[arg(long)]
    pub no_progress: bool,
    /// Memory for the frontier. The frontier is a set of hash partitions: in memory while a
    /// depth fits; past the limit, as many partitions stay in memory as fit and the others go
    /// to disk (in --work-dir). A byte count with an optional K, M, G or T suffix (powers of
    /// 1024), e.g. 512M or 8G.
    /// [default: a quarter of the physical memory]
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub memory_limit: Option<u64>,
    /// Where partitions on disk go: a scratch directory made inside DIR when one first goes to
    /// disk, removed at the end (a killed run's is removed by the next run in DIR). It does not
    /// put the frontier on disk by itself (--memory-limit decides). [default: the system's
    /// temporary directory]
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Free space to leave on the disk that partitions (--work-dir) and checkpoints go to, for
    /// other programs: a run that would write past it stops with an error instead of filling
    /// the disk. A byte count as for --memory-limit; 0: write until the disk is full.
    /// [default: the larger of 1G and 1/50 of the disk, at most 16G]
    #[arg(long, value_name = "SIZE", value_parser = parse_reserve)]
    pub disk_reserve: Option<u64>,
    /// Save every depth's frontier in DIR, a new or empty directory that becomes the run's own,
    /// so that a killed run can be resumed (partitions in memory are written out too).
    #[arg(long, value_name = "DIR")]
    pub checkpoint: Option<PathBuf>,
    /// Continue the run saved in DIR by --checkpoint (same board, depth, counting and
    /// version), checkpointing on into DIR.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Run as one rank of an MPI job: `mpirun -np N solver --mpi [OPTIONS] [FILE]`. Rank 0
    /// reads the problem and prints; every other option applies to each rank on its own (its
    /// threads, memory limit, work directory). Needs a build with `--features mpi`.
    #[arg(long)]
    pub mpi: bool,
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
  solver --backend portable --general cg.in             # cross-check the fast paths
  solver --memory-limit 64M --stats big.in              # partitions past 64M on disk
  solver --checkpoint ck/ big.in                        # save every depth; if killed:
  solver --resume ck/ big.in                            # ...continue where it stopped";

/// Runs the tool with the process's arguments; the exit code is 0 on success, 1 on a failure
/// to read or write (input, output, or the disk frontier's files), 2 on bad input or
/// arguments (including a checkpoint of another problem). Nothing goes to stdout but the
/// answer (or help and version text); every write is checked, and a broken pipe ends the run
/// quietly with exit 1.
pub fn main() -> ExitCode {
    let mut stderr = io::stderr();
    let args = match Args::from_env() {
        Ok(args) => args,
        Err(e) if e.use_stderr() => {
            let _ = write!(stderr, "{}", e.render().ansi());
            return ExitCode::from(2);
        }
        Err(e) => {
            // --help, --version: text for stdout.
            return deliver(Stdout::open(), e.render().to_string().as_bytes());
        }
    };
    #[cfg(unix)]
    crate::on_first_scratch(remove_scratch_on_signals);
    if args.mpi {
        return mpi_main(&args);
    }
    // The answer's way out is checked before any work: a closed stdout fails now.
    let stdout = Stdout::open();
    if let Err(e) = &stdout {
        let _ = writeln!(stderr, "error: cannot write to stdout: {e}");
        return ExitCode::from(1);
    }
    // `--threads N`: this thread becomes the first thread of a pool of N, kept until the
    // process ends (a pool made with the calling thread is never freed), and the search runs
    // on it: no thread to hand the search to and wait for, and with one thread none to start.
    // (Failing, the search starts a pool of its own.)
    let _pool =
        args.threads.map(|n| rayon::ThreadPoolBuilder::new().num_threads(n).use_current_thread().build());
    match run(&args) {
        Ok(out) => deliver(stdout, out.as_bytes()),
        Err((code, msg)) => {
            let _ = writeln!(stderr, "error: {msg}");
            ExitCode::from(code)
        }
    }
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
            crate::remove_scratch();
            std::process::exit(128 + signal);
        }
    });
}

/// Standard output, checked: the standard library's `Stdout` takes a closed descriptor for a
/// sink that accepts everything (it ignores `EBADF`), so the answer goes through a duplicate
/// of the descriptor, which fails when there is none, and a stdout that was closed when the
/// process started is refused ([`STDOUT_CLOSED_AT_START`]).
struct Stdout(File);

impl Stdout {
    #[cfg(unix)]
    fn open() -> io::Result<Stdout> {
        use std::os::fd::AsFd;
        if STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(io::Error::other("it is closed"));
        }
        Ok(Stdout(File::from(io::stdout().as_fd().try_clone_to_owned()?)))
    }

    #[cfg(windows)]
    fn open() -> io::Result<Stdout> {
        use std::os::windows::io::AsHandle;
        Ok(Stdout(File::from(io::stdout().as_handle().try_clone_to_owned()?)))
    }
}

/// True when descriptor 1 was closed as the process started. The standard library's start-up
/// then opens `/dev/null` on it, which looks like a stdout its parent sent to `/dev/null` on
/// purpose: so it is read before that, by [`record_stdout`], which the C runtime calls with the
/// other initialisers of an ELF executable ahead of `main`. Elsewhere it stays false (a
/// closed stdout then takes the answer silently, as the standard library's own does).
#[cfg(unix)]
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`record_stdout`] in the executable's list of initialisers (`.init_array`, run before
/// `main`, and before the standard library's start-up).
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd", target_os = "netbsd"))]
#[used]
#[link_section = ".init_array"]
static RECORD_STDOUT: extern "C" fn() = record_stdout;

/// Sets [`STDOUT_CLOSED_AT_START`] when descriptor 1 is not open.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd", target_os = "netbsd"))]
extern "C" fn record_stdout() {
    // SAFETY: `F_GETFD` reads a descriptor number's flags, or fails with `EBADF` when nothing
    // is open on it; it borrows nothing and changes nothing.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

/// Writes `bytes` to `out`: exit 0 once they are written, else 1, with a message on stderr
/// (none for a broken pipe: whoever read the output has gone).
fn deliver(out: io::Result<Stdout>, bytes: &[u8]) -> ExitCode {
    match out.and_then(|mut o| o.0.write_all(bytes).and_then(|()| o.0.flush())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::from(1),
        Err(e) => {
            let _ = writeln!(io::stderr(), "error: cannot write to stdout: {e}");
            ExitCode::from(1)
        }
    }
}

/// Reads the input: the file, or stdin when there is none or it is `-`. Returns its bytes and
/// the name messages give it.
fn read_input(file: Option<&PathBuf>) -> Result<(Vec<u8>, String), (u8, String)> {
    match file {
        Some(path) if path.as_os_str() != "-" => {
            let bytes =
                std::fs::read(path).map_err(|e| (1, format!("cannot read {}: {e}", path.display())))?;
            Ok((bytes, path.display().to_string()))
        }
        _ => {
            let mut bytes = Vec::new();
            io::stdin().read_to_end(&mut bytes).map_err(|e| (1, format!("cannot read stdin: {e}")))?;
            Ok((bytes, "stdin".to_string()))
        }
    }
}

/// Everything but printing the result: returns what goes on stdout, or an exit code and a
/// message. Statistics (with `--stats`) and the progress bar go to stderr; a failure to write
/// the statistics is a failure of the run (exit 1).
pub fn run(args: &Args) -> Result<String, (u8, String)> {
    let problem = read_problem(args)?;
    let options = options(args);
    let started = Instant::now();
    let mut progress = Progress::new(problem.depth, show_progress(args));
    let answer = solve_observed(&problem.board, problem.depth, &options, &mut |s| progress.depth_done(s))
        .map_err(failure)?;
    progress.finish();
    report(args, &problem, &answer, &options, started.elapsed().as_secs_f64())
}

/// The problem, read from the input and parsed.
fn read_problem(args: &Args) -> Result<Problem, (u8, String)> {
    let (bytes, source) = read_input(args.file.as_ref())?;
    parse_bytes(&bytes).map_err(|e| (2, format!("{source}: {e}")))
}

/// The search's options, as the arguments give them.
fn options(args: &Args) -> Options {
    Options {
        threads: args.threads,
        backend: args.backend.level(),
        general: args.general,
        fill: args.fill,
        no_symmetry: args.no_symmetry,
        lanes: args.lanes,
        all_depths: args.all_depths,
        count_boards: args.stats,
        memory_limit: args.memory_limit,
        work_dir: args.work_dir.clone(),
        disk_reserve: match args.disk_reserve {
            None => DiskReserve::Standard,
            Some(0) => DiskReserve::None,
            Some(n) => DiskReserve::Bytes(n),
        },
        checkpoint: args.checkpoint.clone(),
        resume: args.resume.clone(),
    }
}

/// True when the progress bar may show (stderr a terminal, and not refused).
fn show_progress(args: &Args) -> bool {
    !args.no_progress && io::stderr().is_terminal()
}

/// A failed search's exit code and message: disk trouble (unwritable, full, corrupt) is exit
/// 1; refused options are exit 2.
fn failure(e: anyhow::Error) -> (u8, String) {
    let io = e.chain().any(|c| c.is::<io::Error>());
    (if io { 1 } else { 2 }, format!("{e:#}"))
}

/// What goes on stdout for a finished search (the statistics and the checkpoint's place go
/// to stderr).
fn report(
    args: &Args,
    problem: &Problem,
    answer: &Answer,
    options: &Options,
    seconds: f64,
) -> Result<String, (u8, String)> {
    let unwritable = |e: io::Error| (1, format!("cannot write to stderr: {e}"));
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
    if args.stats && !args.json {
        io::stderr().write_all(stats_table(problem, answer).as_bytes()).map_err(unwritable)?;
    }
    if args.json {
        let report = Report::new(problem, answer, options, args.stats, seconds);
        return Ok(serde_json::to_string_pretty(&report).expect("plain data serialises") + "\n");
    }
    if args.all_depths {
        Ok(answer.answers.iter().enumerate().map(|(d, a)| format!("{d} {a}\n")).collect())
    } else {
        Ok(format!("{}\n", answer.answer))
    }
}

/// `--mpi` in a build without the `mpi` feature: refused.
#[cfg(not(feature = "mpi"))]
fn mpi_main(_: &Args) -> ExitCode {
    let _ = writeln!(
        io::stderr(),
        "error: --mpi: this solver was built without MPI (build it with `cargo build --release -p solver --features mpi`)"
    );
    ExitCode::from(2)
}

/// One rank of an MPI job. Rank 0 reads and checks the problem and sends its text to every
/// rank (or its failure: then every rank ends with rank 0's exit code); every rank solves
/// with its own options; rank 0 prints. An error on any rank, or a panic, is printed with the
/// rank's number and ends every rank of the job (`MPI_Abort`): the others would wait for it
/// for ever. Nothing goes to stdout unless every rank finished.
#[cfg(feature = "mpi")]
fn mpi_main(args: &Args) -> ExitCode {
    let (_universe, ranks) = match crate::mpi::start() {
        Ok(started) => started,
        Err(e) => {
            let _ = writeln!(io::stderr(), "error: --mpi: {e}");
            return ExitCode::from(1);
        }
    };
    let rank = crate::Cluster::rank(&ranks);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        let _ = writeln!(io::stderr(), "rank {rank}: panicked; ending every rank");
        crate::mpi::abort(101)
    }));
    // Rank 0's status (0, or the exit code of its failure) and then the problem's text.
    let mut message = vec![0u8];
    let stdout = (rank == 0).then(Stdout::open);
    if rank == 0 {
        let read = match &stdout {
            Some(Err(e)) => Err((1, format!("cannot write to stdout: {e}"))),
            _ => read_input(args.file.as_ref()).and_then(|(bytes, source)| {
                parse_bytes(&bytes).map(|_| bytes).map_err(|e| (2, format!("{source}: {e}")))
            }),
        };
        match read {
            Ok(bytes) => message.extend_from_slice(&bytes),
            Err((code, msg)) => {
                let _ = writeln!(io::stderr(), "error: {msg}");
                message[0] = code;
            }
        }
    }
    ranks.broadcast(&mut message);
    if message[0] != 0 {
        return ExitCode::from(message[0]);
    }
    let fail = |(code, msg): (u8, String)| -> ! {
        let _ = writeln!(io::stderr(), "rank {rank}: error: {msg}");
        crate::mpi::abort(i32::from(code))
    };
    let problem = parse_bytes(&message[1..]).unwrap_or_else(|e| fail((2, e.to_string())));
    let options = options(args);
    let started = Instant::now();
    let mut progress = Progress::new(problem.depth, rank == 0 && show_progress(args));
    let answer = crate::solve_distributed(&problem.board, problem.depth, &options, &ranks, &mut |s| {
        progress.depth_done(s)
    })
    .unwrap_or_else(|e| fail(failure(e)));
    progress.finish();
    let Some(stdout) = stdout else { return ExitCode::SUCCESS };
    let mut answer = answer;
    if let (Some(ck), Some(dir)) = (&mut answer.checkpoint, args.checkpoint.as_ref().or(args.resume.as_ref()))
    {
        // Rank 0's part is in a directory of its own; the checkpoint is the one given.
        ck.dir.clone_from(dir);
    }
    match report(args, &problem, &answer, &options, started.elapsed().as_secs_f64()) {
        Ok(out) => deliver(stdout, out.as_bytes()),
        Err((code, msg)) => {
            let _ = writeln!(io::stderr(), "error: {msg}");
            ExitCode::from(code)
        }
    }
}

/// The `--stats` table.
fn stats_table(problem: &Problem, answer: &Answer) -> String {
    let mut out = format!(
        "# {} board, depth {}, path {}, backend {}\n{:>6} {:>12} {:>14} {:>12} {:>12} {:>10} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>8}\n",
        problem.board.shape(),
        problem.depth,
        answer.path,
        answer.backend.name(),
        "depth",
        "states",
        "boards",
        "records",
        "ended_paths",
        "ended",
        "seconds",
        "expand",
        "insert",
        "peak_MiB",
        "write_MiB",
        "read_MiB",
        "fill"
    );
    for s in &answer.stats {
        out += &format!(
            "{:>6} {:>12} {:>14} {:>12} {:>12} {:>10} {:>9.4} {:>9.4} {:>9.4} {:>8.1} {:>9.1} {:>9.1} {:>8}\n",
            s.depth,
            s.states,
            s.boards.map_or("-".to_string(), |b| b.to_string()),
            s.records,
            s.ended_paths,
            s.ended,
            s.seconds,
            s.expand_seconds,
            s.insert_seconds,
            s.peak_memory as f64 / (1 << 20) as f64,
            s.bytes_written as f64 / (1 << 20) as f64,
            s.bytes_read as f64 / (1 << 20) as f64,
            s.fill.map_or("-", Fill::name)
        );
    }
    if answer.ranks.len() > 1 {
        out += &rank_tables(answer);
    }
    out
}

/// The `--stats` tables of an MPI job: per depth, how the positions were shared out and what
/// the ranks exchanged; per rank, its own figures.
fn rank_tables(answer: &Answer) -> String {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let mut out = format!(
        "# exchanges between {} ranks\n{:>6} {:>12} {:>12} {:>10} {:>10} {:>10}\n",
        answer.ranks.len(),
        "depth",
        "states_max",
        "states_mean",
        "sent_MiB",
        "exchanges",
        "exch_s"
    );
    for s in &answer.stats {
        let Some(r) = s.ranks else { continue };
        out += &format!(
            "{:>6} {:>12} {:>12.0} {:>10.1} {:>10} {:>10.4}\n",
            s.depth,
            r.states_max,
            s.states as f64 / f64::from(r.ranks.max(1)),
            mib(r.bytes_sent),
            r.exchanges,
            r.exchange_seconds
        );
    }
    out += &format!(
        "# per rank\n{:>6} {:>14} {:>10} {:>10} {:>10} {:>10} {:>9}\n",
        "rank", "states_largest", "sent_MiB", "recv_MiB", "exch_s", "write_MiB", "peak_MiB"
    );
    for r in &answer.ranks {
        out += &format!(
            "{:>6} {:>14} {:>10.1} {:>10.1} {:>10.4} {:>10.1} {:>9.1}\n",
            r.rank,
            r.states_largest,
            mib(r.bytes_sent),
            mib(r.bytes_received),
            r.exchange_seconds,
            mib(r.bytes_written),
            mib(r.peak_memory)
        );
    }
    out
}

/// The `--json` output.
#[derive(Debug, Serialize)]
struct Report {
    answer: u32,
    shape: ShapeJson,
    depth: u32,
    path: &'static str,
    backend: &'static str,
    threads: usize,
    seconds: f64,
    peak_memory_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    answers: Option<Vec<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<Vec<DepthStats>>,
    /// With `--stats`, in an MPI job: each rank's own figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    ranks: Option<Vec<crate::RankSummary>>,
}

#[derive(Debug, Serialize)]
struct ShapeJson {
    rows: usize,
    cols: usize,
}

impl Report {
    fn new(problem: &Problem, answer: &Answer, options: &Options, stats: bool, seconds: f64) -> Report {
        let shape = problem.board.shape();
        Report {
            answer: answer.answer,
            shape: ShapeJson { rows: shape.rows(), cols: shape.cols() },
            depth: problem.depth,
            path: answer.path,
            backend: answer.backend.name(),
            threads: options.threads.unwrap_or_else(rayon::current_num_threads),
            seconds,
            peak_memory_bytes: crate::peak_memory(),
            answers: options.all_depths.then(|| answer.answers.clone()),
            stats: stats.then(|| answer.stats.clone()),
            ranks: (stats && answer.ranks.len() > 1).then(|| answer.ranks.clone()),
        }
    }
}

/// How long a run goes before its progress bar appears.
pub const PROGRESS_DELAY: Duration = Duration::from_secs(1);

/// The progress line's layout: at most 80 columns for any depth up to 99 999 (the bar takes
/// what the rest leaves).
const PROGRESS_TEMPLATE: &str = "{elapsed_precise} [{bar:20}] depth {pos}/{len} {msg}";

/// The progress bar on stderr: only on a terminal, and only once a run has lasted
/// [`PROGRESS_DELAY`], so that short runs, pipes and CI logs never see it. After each depth
/// it shows that depth's figures: the positions it stored and its seconds (the last depth
/// stores none: its paths are summed).
#[derive(Debug)]
pub struct Progress {
    total: u32,
    enabled: bool,
    started: Instant,
    bar: Option<indicatif::ProgressBar>,
    /// Where the bar is drawn, taken when it first is (`None`: stderr; a test's in-memory
    /// terminal).
    target: Option<indicatif::ProgressDrawTarget>,
}

impl Progress {
    /// A reporter for a run of `total` depths; `enabled` when stderr is a terminal.
    pub fn new(total: u32, enabled: bool) -> Progress {
        Progress { total, enabled, started: Instant::now(), bar: None, target: None }
    }

    /// True when the bar should be on screen after `elapsed`.
    pub fn should_show(enabled: bool, elapsed: Duration) -> bool {
        enabled && elapsed >= PROGRESS_DELAY
    }

    /// True once the bar has been drawn.
    pub fn is_visible(&self) -> bool {
        self.bar.is_some()
    }

    /// Called after each depth.
    pub fn depth_done(&mut self, s: &DepthStats) {
        if self.bar.is_none() && Self::should_show(self.enabled, self.started.elapsed()) {
            let target = self.target.take().unwrap_or_else(indicatif::ProgressDrawTarget::stderr);
            let bar = indicatif::ProgressBar::with_draw_target(Some(self.total as u64), target);
            bar.set_style(
                indicatif::ProgressStyle::with_template(PROGRESS_TEMPLATE)
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_message(progress_message(s));
            bar.set_position(s.depth as u64);
        }
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

/// A depth's figures for the progress line: `12.3M positions, 4.5 s` (at most 24 columns
/// below 10^4 seconds), or `summed, 4.5 s` for a depth that stores nothing (the last).
fn progress_message(s: &DepthStats) -> String {
    let n = s.states as f64;
    let positions = match n {
        _ if n < 1e4 => format!("{}", s.states),
        _ if n < 1e6 => format!("{:.1}K", n / 1e3),
        _ if n < 1e9 => format!("{:.1}M", n / 1e6),
        _ => format!("{:.1}G", n / 1e9),
    };
    if s.states == 0 {
        format!("summed, {:.1} s", s.seconds)
    } else {
        format!("{positions} positions, {:.1} s", s.seconds)
    }
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

    /// A terminal 200 columns wide that keeps the lines drawn on it: enough of one for the
    /// progress line, which is drawn in place (cursor up, line cleared, written again).
    /// Written here rather than taken from indicatif's `in_memory` feature: a feature that
    /// only the tests enable would make the release tests' solver library another build than
    /// the binary's, and CI would compile both.
    #[derive(Clone, Debug, Default)]
    struct Screen(std::sync::Arc<std::sync::Mutex<(Vec<String>, usize)>>);

    impl Screen {
        /// Runs `f` on the lines and the cursor's line, that line made to exist.
        fn at<T>(&self, f: impl FnOnce(&mut Vec<String>, &mut usize) -> T) -> T {
            let mut screen = self.0.lock().unwrap();
            let (lines, row) = &mut *screen;
            if lines.len() <= *row {
                lines.resize(*row + 1, String::new());
            }
            f(lines, row)
        }

        fn contents(&self) -> String {
            self.at(|lines, _| lines.join("\n"))
        }
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            200
        }

        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            self.at(|_, row| *row = row.saturating_sub(n));
            Ok(())
        }

        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            self.at(|_, row| *row += n);
            Ok(())
        }

        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            unimplemented!("the progress line does not move the cursor across")
        }

        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            unimplemented!("the progress line does not move the cursor across")
        }

        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.at(|lines, row| {
                lines[*row].push_str(s);
                *row += 1;
            });
            Ok(())
        }

        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.at(|lines, row| lines[*row].push_str(s));
            Ok(())
        }

        fn clear_line(&self) -> std::io::Result<()> {
            self.at(|lines, row| lines[*row].clear());
            Ok(())
        }

        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The line as a terminal shows it, after depth `depth` of `total`.
    fn drawn(total: u32, stats: &[DepthStats]) -> String {
        let term = Screen::default();
        let mut p = Progress {
            started: Instant::now() - Duration::from_secs(5),
            target: Some(indicatif::ProgressDrawTarget::term_like(Box::new(term.clone()))),
            ..Progress::new(total, true)
        };
        for s in stats {
            p.depth_done(s);
        }
        p.bar.as_ref().unwrap().tick();
        term.contents().trim_end().to_string()
    }

    #[test]
    fn progress_shows_each_depth_within_80_columns() {
        assert!(!Progress::should_show(false, Duration::from_secs(60)));
        assert!(!Progress::should_show(true, Duration::from_millis(10)));
        assert!(Progress::should_show(true, PROGRESS_DELAY));
        // Not a terminal: never drawn, however long the run.
        let mut p = Progress { started: Instant::now() - Duration::from_secs(5), ..Progress::new(3, false) };
        p.depth_done(&DepthStats { depth: 1, ..DepthStats::default() });
        assert!(!p.is_visible());
        // The widest figures: a large depth, a huge frontier, hours of work.
        let big =
            DepthStats { depth: 99_998, states: 987_654_321_000, seconds: 9999.9, ..DepthStats::default() };
        let line = drawn(99_999, &[big]);
        assert!(line.chars().count() <= 80, "{} columns: {line}", line.chars().count());
        assert!(line.ends_with("depth 99998/99999 987.7G positions, 9999.9 s"), "{line}");
        // The last depth stores nothing: the line ends on its figures, not on `0 positions`.
        let line = drawn(
            18,
            &[
                DepthStats { depth: 17, states: 4_013_027, seconds: 1.27, ..DepthStats::default() },
                DepthStats { depth: 18, states: 0, seconds: 2.28, ..DepthStats::default() },
            ],
        );
        assert!(line.ends_with("depth 18/18 summed, 2.3 s"), "{line}");
        let line =
            drawn(18, &[DepthStats { depth: 17, states: 4_013_027, seconds: 1.27, ..DepthStats::default() }]);
        assert!(line.ends_with("depth 17/18 4.0M positions, 1.3 s"), "{line}");
    }
}

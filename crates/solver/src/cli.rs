//! The command-line tool: arguments, reading the input, printing the answer.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use serde::Serialize;

use crate::{parse, solve_observed, Answer, DepthStats, Level, Options, Problem};

/// Exact enumerator of Cephalopod game positions: the sum, over every sequence of DEPTH moves
/// from the given board (fewer when it fills), of the final board's hash, modulo 2^30.
#[derive(Debug, PartialEq, Parser)]
#[command(version, after_help = EXAMPLES)]
pub struct Args {
    /// Input file (the depth on the first line, then the board, one row a line); stdin when
    /// absent.
    pub file: Option<PathBuf>,
    /// Worker threads (default: one per core). The answer never depends on it.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Instruction set for the hot loops: auto, portable or avx2.
    #[arg(long, default_value = "auto", value_name = "NAME")]
    pub backend: String,
    /// Use the general path even on the 3x3 board.
    #[arg(long)]
    pub general: bool,
    /// Do not reduce by symmetry (slower; for cross-checks).
    #[arg(long)]
    pub no_symmetry: bool,
    /// Keep 8 path counts a position even when every symmetry fixes the start board (which
    /// otherwise needs one): slower; for cross-checks and comparisons.
    #[arg(long)]
    pub lanes: bool,
    /// Print the answer at every depth from 0 to DEPTH, one `depth answer` line each.
    #[arg(long)]
    pub all_depths: bool,
    /// Per-depth statistics on stderr: positions, distinct boards, ended paths, time, memory.
    /// Counting boards keeps a set of the full boards and generates the last depth: slower.
    #[arg(long)]
    pub stats: bool,
    /// Print one JSON object on stdout instead of plain text (schema in the README).
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
    /// Save every depth's frontier in DIR, a new or empty directory that becomes the run's own,
    /// so that a killed run can be resumed (partitions in memory are written out too).
    #[arg(long, value_name = "DIR")]
    pub checkpoint: Option<PathBuf>,
    /// Continue the run saved in DIR by --checkpoint (same board, depth, counting and
    /// version), checkpointing on into DIR.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
}

impl Args {
    /// The arguments of a command line that gives none (clap's defaults), without building
    /// clap's command: that takes tens of microseconds, a share of a short run's whole process
    /// (the contest runs the solver with no arguments, once per case).
    pub fn defaults() -> Args {
        Args {
            file: None,
            threads: None,
            backend: "auto".into(),
            general: false,
            no_symmetry: false,
            lanes: false,
            all_depths: false,
            stats: false,
            json: false,
            no_progress: false,
            memory_limit: None,
            work_dir: None,
            checkpoint: None,
            resume: None,
        }
    }

    /// The process's arguments: [`Args::defaults`] when there are none, else parsed by clap
    /// (which prints help or an error and exits where asked or needed).
    pub fn from_env() -> Args {
        if std::env::args_os().len() <= 1 {
            Args::defaults()
        } else {
            Args::parse()
        }
    }
}

/// Parses `512M`, `8G`, `1048576`... into bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                'B' => 0,
                _ => return Err(format!("unknown size suffix `{c}` (expected K, M, G or T)")),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = digits.parse().map_err(|_| format!("`{text}` is not a size such as 512M or 8G"))?;
    let bytes = n.checked_mul(1u64 << shift).ok_or_else(|| format!("`{text}` is too large"))?;
    if bytes == 0 {
        return Err("the memory limit must be more than zero".into());
    }
    Ok(bytes)
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
/// arguments (including a checkpoint of another problem).
pub fn main() -> ExitCode {
    let args = Args::from_env();
    match run(&args) {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            if stdout.write_all(out.as_bytes()).and_then(|_| stdout.flush()).is_err() {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err((code, msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(code)
        }
    }
}

/// Everything but printing the result: returns what goes on stdout, or an exit code and a
/// message. Statistics (with `--stats`) and the progress bar go to stderr.
pub fn run(args: &Args) -> Result<String, (u8, String)> {
    let backend = match args.backend.as_str() {
        "auto" => None,
        name => Some(Level::from_name(name).ok_or_else(|| {
            (2, format!("--backend: unknown backend `{name}` (expected auto, portable or avx2)"))
        })?),
    };
    if args.threads == Some(0) {
        return Err((2, "--threads: must be at least 1".into()));
    }
    let mut text = String::new();
    let source = match &args.file {
        Some(path) => {
            text = std::fs::read_to_string(path)
                .map_err(|e| (1, format!("cannot read {}: {e}", path.display())))?;
            path.display().to_string()
        }
        None => {
            std::io::stdin().read_to_string(&mut text).map_err(|e| (1, format!("cannot read stdin: {e}")))?;
            "stdin".to_string()
        }
    };
    let problem = parse(&text).map_err(|e| (2, format!("{source}: {e}")))?;
    let options = Options {
        threads: args.threads,
        backend,
        general: args.general,
        no_symmetry: args.no_symmetry,
        lanes: args.lanes,
        all_depths: args.all_depths,
        count_boards: args.stats,
        memory_limit: args.memory_limit,
        work_dir: args.work_dir.clone(),
        checkpoint: args.checkpoint.clone(),
        resume: args.resume.clone(),
    };
    let started = Instant::now();
    let show = !args.no_progress && std::io::stderr().is_terminal();
    let mut progress = Progress::new(problem.depth, show);
    let answer = solve_observed(&problem.board, problem.depth, &options, &mut |s| progress.depth_done(s))
        .map_err(|e| {
            // Disk trouble (unwritable, full, corrupt) is exit 1; refused options are exit 2.
            let io = e.chain().any(|c| c.is::<std::io::Error>());
            (if io { 1 } else { 2 }, format!("{e:#}"))
        })?;
    progress.finish();
    if let Some(ck) = &answer.checkpoint {
        let _ = writeln!(
            std::io::stderr(),
            "checkpoint: {} (complete, {:.1} MiB; --resume {} prints the answer again)",
            ck.dir.display(),
            ck.bytes as f64 / (1 << 20) as f64,
            ck.dir.display()
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    if args.stats && !args.json {
        eprint!("{}", stats_table(&problem, &answer));
    }
    if args.json {
        let report = Report::new(&problem, &answer, &options, args.stats, seconds);
        return Ok(serde_json::to_string_pretty(&report).expect("plain data serialises") + "\n");
    }
    if args.all_depths {
        Ok(answer.answers.iter().enumerate().map(|(d, a)| format!("{d} {a}\n")).collect())
    } else {
        Ok(format!("{}\n", answer.answer))
    }
}

/// The `--stats` table.
fn stats_table(problem: &Problem, answer: &Answer) -> String {
    let mut out = format!(
        "# {} board, depth {}, path {}, backend {}\n{:>6} {:>12} {:>14} {:>12} {:>12} {:>10} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9}\n",
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
        "read_MiB"
    );
    for s in &answer.stats {
        out += &format!(
            "{:>6} {:>12} {:>14} {:>12} {:>12} {:>10} {:>9.4} {:>9.4} {:>9.4} {:>8.1} {:>9.1} {:>9.1}\n",
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
            s.bytes_read as f64 / (1 << 20) as f64
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
    stats: Option<Vec<DepthJson>>,
}

#[derive(Debug, Serialize)]
struct ShapeJson {
    rows: usize,
    cols: usize,
}

#[derive(Debug, Serialize)]
struct DepthJson {
    depth: u32,
    states: u64,
    boards: Option<u64>,
    records: u64,
    ended_paths: u32,
    ended: u32,
    seconds: f64,
    expand_seconds: f64,
    insert_seconds: f64,
    peak_memory_bytes: u64,
    bytes_written: u64,
    bytes_read: u64,
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
            stats: stats.then(|| answer.stats.iter().map(DepthJson::from).collect()),
        }
    }
}

impl From<&DepthStats> for DepthJson {
    fn from(s: &DepthStats) -> DepthJson {
        DepthJson {
            depth: s.depth,
            states: s.states,
            boards: s.boards,
            records: s.records,
            ended_paths: s.ended_paths,
            ended: s.ended,
            seconds: s.seconds,
            expand_seconds: s.expand_seconds,
            insert_seconds: s.insert_seconds,
            peak_memory_bytes: s.peak_memory,
            bytes_written: s.bytes_written,
            bytes_read: s.bytes_read,
        }
    }
}

/// How long a run goes before its progress bar appears.
pub const PROGRESS_DELAY: Duration = Duration::from_secs(1);

/// The progress bar on stderr: only on a terminal, and only once a run has lasted
/// [`PROGRESS_DELAY`], so that short runs, pipes and CI logs never see it.
#[derive(Debug)]
pub struct Progress {
    total: u32,
    enabled: bool,
    started: Instant,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// A reporter for a run of `total` depths; `enabled` when stderr is a terminal.
    pub fn new(total: u32, enabled: bool) -> Progress {
        Progress { total, enabled, started: Instant::now(), bar: None }
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
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(self.total as u64),
                indicatif::ProgressDrawTarget::stderr(),
            );
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:40}] depth {pos}/{len} {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(s.depth as u64);
            bar.set_message(format!("{} positions, {:.1} s", s.states, s.seconds));
        }
    }

    /// Removes the bar.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_arguments_are_clap_defaults() {
        assert_eq!(Args::defaults(), Args::parse_from(["solver"]));
    }

    #[test]
    fn progress_shows_only_on_a_terminal_after_the_delay() {
        assert!(!Progress::should_show(false, Duration::from_secs(60)));
        assert!(!Progress::should_show(true, Duration::from_millis(10)));
        assert!(Progress::should_show(true, PROGRESS_DELAY));
        // Not a terminal: never drawn, however long the run.
        let mut p = Progress { started: Instant::now() - Duration::from_secs(5), ..Progress::new(3, false) };
        p.depth_done(&DepthStats { depth: 1, ..DepthStats::default() });
        assert!(!p.is_visible());
        // A terminal, after the delay: drawn (to a hidden target in tests is not possible, so
        // check the state only).
        let mut p = Progress { started: Instant::now() - Duration::from_secs(5), ..Progress::new(3, true) };
        p.depth_done(&DepthStats { depth: 1, ..DepthStats::default() });
        assert!(p.is_visible());
        p.finish();
        assert!(!p.is_visible());
    }
}

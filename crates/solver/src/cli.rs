//! The command-line tool: arguments, reading the input, printing the answer.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::{parse, solve, Level, Options};

/// Exact enumerator of Cephalopod game positions: the sum, over every sequence of DEPTH moves
/// from the given board, of the final board's hash, modulo 2^30.
#[derive(Debug, Parser)]
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
    /// Print the answer at every depth from 0 to DEPTH, one `depth answer` line each.
    #[arg(long)]
    pub all_depths: bool,
    /// Per-depth statistics on stderr.
    #[arg(long)]
    pub stats: bool,
}

const EXAMPLES: &str = "Examples:
  printf '40\\n0 0 0\\n0 0 0\\n0 0 0\\n' | solver            # prints 503115192
  solver --threads 1 --stats fixtures/public/cg01.in
  solver --all-depths fixtures/shapes/4x4_empty_d8.in";

/// Runs the tool with the process's arguments; the exit code is 0 on success, 1 on a failure
/// to read, 2 on bad input or arguments.
pub fn main() -> ExitCode {
    let args = Args::parse();
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

/// Everything but printing: returns what goes on stdout, or an exit code and a message.
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
        all_depths: args.all_depths,
    };
    let answer = solve(&problem.board, problem.depth, &options).map_err(|e| (2, e.to_string()))?;
    if args.stats {
        eprintln!(
            "# {} board, depth {}, path {}, backend {}",
            problem.board.shape(),
            problem.depth,
            answer.path,
            answer.backend.name()
        );
        eprintln!(
            "{:>6} {:>12} {:>12} {:>10} {:>9} {:>9} {:>9}",
            "depth", "states", "records", "ended", "seconds", "expand", "insert"
        );
        for s in &answer.stats {
            eprintln!(
                "{:>6} {:>12} {:>12} {:>10} {:>9.4} {:>9.4} {:>9.4}",
                s.depth, s.states, s.records, s.ended, s.seconds, s.expand_seconds, s.insert_seconds
            );
        }
    }
    if args.all_depths {
        Ok(answer.answers.iter().enumerate().map(|(d, a)| format!("{d} {a}\n")).collect())
    } else {
        Ok(format!("{}\n", answer.answer))
    }
}

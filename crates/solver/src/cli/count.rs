//! `--perft`, `--divide` and `--moves`: exact counts on the command line.

use std::fs::File;
use std::io::{self, Write};

use serde::Serialize;

use super::{failure, Args, Failed, Progress};
use solver::{divide_distributed, perft_distributed, Cluster, DepthStats, Options, Perft, Problem};

/// What the counting options ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Count {
    /// The contest's answer (no counting option).
    Answer,
    /// `--perft`.
    Perft,
    /// `--divide`.
    Divide,
}

impl Count {
    /// What `args` ask for.
    pub(super) fn of(args: &Args) -> Count {
        match (args.perft, args.divide) {
            (true, _) => Count::Perft,
            (false, true) => Count::Divide,
            (false, false) => Count::Answer,
        }
    }
}

/// The problem after `--moves`: the board they reach and the depth left (the input's depth
/// less the moves played).
///
/// # Errors
/// Exit 2 with a message naming the move that is not legal, or when there are more moves
/// than the depth.
pub(super) fn descended(args: &Args, problem: Problem) -> Result<Problem, (u8, String)> {
    let Some(text) = &args.moves else { return Ok(problem) };
    problem.after_moves(text).map_err(|e| (2, format!("--moves: {e}")))
}

/// Runs `--perft` or `--divide` on `problem` as a rank of `cluster`, writing to `out` (rank
/// 0's stdout; `None` on the other ranks) and the summary lines to stderr. A row that cannot
/// be written as its depth ends goes to `stop`, which ends the process (every rank of an MPI
/// job), or, without one, cancels the search ([`Options::cancel`]) and fails the run.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    count: Count,
    args: &Args,
    problem: &Problem,
    options: &Options,
    cluster: &dyn Cluster,
    progress: &mut Progress,
    mut out: Option<&mut File>,
    stop: Option<fn(&io::Error) -> !>,
) -> Result<(), Failed> {
    let unwritable = |e: io::Error| Failed::Run(1, format!("cannot write to stderr: {e}"));
    let text = match count {
        Count::Perft => {
            // Plain rows go out as each depth ends (a long count shows its depths as it
            // goes, and a stopped one keeps them); JSON goes out whole at the end.
            let stream = !args.json;
            let table = perft_rows(problem, options, cluster, progress, out.as_deref_mut(), stream, stop)?;
            if stream {
                if out.is_some() {
                    io::stderr().write_all(whole_game(&table).as_bytes()).map_err(unwritable)?;
                }
                return Ok(());
            }
            json(&PerftJson::new(problem, &table))
        }
        Count::Divide => {
            let division =
                divide_distributed(&problem.board, problem.depth, options, cluster).map_err(failure)?;
            if args.json {
                let moves = division
                    .moves
                    .iter()
                    .map(|m| MoveJson { name: &m.name, perft: m.perft.to_string(), answer: m.answer })
                    .collect();
                json(&DivideJson {
                    depth: problem.depth,
                    moves,
                    perft: division.perft.to_string(),
                    answer: division.answer,
                })
            } else {
                if out.is_some() {
                    let (perft, depth, answer) = (division.perft, problem.depth, division.answer);
                    writeln!(io::stderr(), "total: {perft} sequences of {depth} moves, answer {answer}")
                        .map_err(unwritable)?;
                }
                division.moves.iter().map(|m| format!("{} {} {}\n", m.name, m.perft, m.answer)).collect()
            }
        }
        Count::Answer => unreachable!("the answer is not a count"),
    };
    match out {
        Some(out) => out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(Failed::Stdout),
        None => Ok(()),
    }
}

/// The exact count of `problem`, each row written to `out` as its depth ends when `stream`
/// (see [`run`] for a row that cannot be written).
fn perft_rows(
    problem: &Problem,
    options: &Options,
    cluster: &dyn Cluster,
    progress: &mut Progress,
    mut out: Option<&mut File>,
    stream: bool,
    stop: Option<fn(&io::Error) -> !>,
) -> Result<Perft, Failed> {
    let mut unwritten = None;
    let table = {
        let mut observe = |s: &DepthStats| {
            progress.depth_done(s);
            if let (true, Some(row), Some(out), None) = (stream, row(s), out.as_deref_mut(), &unwritten) {
                let written = progress.suspend(|| out.write_all(row.as_bytes()).and_then(|()| out.flush()));
                if let Err(e) = written {
                    if let Some(stop) = stop {
                        progress.finish();
                        stop(&e);
                    }
                    unwritten = Some(e);
                    options.cancel.as_ref().expect("a count that can stop has a token").cancel();
                }
            }
        };
        perft_distributed(&problem.board, problem.depth, options, cluster, &mut observe)
    };
    progress.finish();
    if let Some(e) = unwritten {
        return Err(Failed::Stdout(e));
    }
    table.map_err(|e| Failed::from(failure(e)))
}

/// The `d perft ended boards` line of a depth's statistics, for depths from 1.
fn row(s: &DepthStats) -> Option<String> {
    let (perft, ended, boards) = (s.perft?, s.games?, s.boards?);
    (s.depth >= 1).then(|| format!("{} {perft} {ended} {boards}\n", s.depth))
}

/// The summary of a table that reaches the end of every game (for stderr), or nothing.
fn whole_game(table: &Perft) -> String {
    let Some(w) = table.whole_game else { return String::new() };
    let space = w.state_space.map_or(String::new(), |s| format!(", {s} distinct boards reachable"));
    format!("every game over: {} games, the longest of {} moves{space}\n", w.games, w.longest)
}

/// Pretty JSON and a newline.
fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("plain data serialises") + "\n"
}

/// `--perft --json`: counts as decimal strings (JSON readers lose digits past 2^53).
#[derive(Serialize)]
struct PerftJson {
    depth: u32,
    /// Wall-clock seconds of the count's depths.
    seconds: f64,
    /// The peak resident memory of the process, in bytes, as last read.
    peak_memory_bytes: u64,
    /// Bytes written to disk (partitions and checkpoints).
    bytes_written: u64,
    rows: Vec<RowJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    games: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    longest: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state_space: Option<String>,
}

#[derive(Serialize)]
struct RowJson {
    depth: u32,
    perft: String,
    ended: String,
    boards: String,
}

impl PerftJson {
    fn new(problem: &Problem, table: &Perft) -> PerftJson {
        let rows = table
            .rows
            .iter()
            .map(|r| RowJson {
                depth: r.depth,
                perft: r.perft.to_string(),
                ended: r.ended.to_string(),
                boards: r.boards.to_string(),
            })
            .collect();
        let w = table.whole_game;
        PerftJson {
            depth: problem.depth,
            seconds: table.stats.iter().map(|s| s.seconds).sum(),
            peak_memory_bytes: table
                .stats
                .iter()
                .map(|s| s.peak_memory)
                .max()
                .unwrap_or(0)
                .max(solver::peak_memory()),
            bytes_written: table.stats.iter().map(|s| s.bytes_written).sum(),
            rows,
            games: w.map(|w| w.games.to_string()),
            longest: w.map(|w| w.longest),
            state_space: w.and_then(|w| w.state_space).map(|s| s.to_string()),
        }
    }
}

/// `--divide --json`.
#[derive(Serialize)]
struct DivideJson<'a> {
    depth: u32,
    moves: Vec<MoveJson<'a>>,
    perft: String,
    answer: u32,
}

#[derive(Serialize)]
struct MoveJson<'a> {
    name: &'a str,
    perft: String,
    answer: u32,
}

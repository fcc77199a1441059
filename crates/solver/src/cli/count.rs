//! `--perft`, `--divide` and `--moves`: exact counts on the command line.

use std::io::{self, Write};

use serde::Serialize;

use super::{failure, Args, Progress};
use crate::{descend, divide_distributed, perft_distributed, Cluster, Options, Perft, Problem};

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
    let (board, played) = descend(&problem.board, text).map_err(|e| (2, format!("--moves: {e}")))?;
    let depth =
        u32::try_from(played.len()).ok().and_then(|n| problem.depth.checked_sub(n)).ok_or_else(|| {
            (2, format!("--moves: {} moves, more than the depth {}", played.len(), problem.depth))
        })?;
    Ok(Problem { board, depth })
}

/// Runs `--perft` or `--divide` on `problem` as a rank of `cluster`: returns what goes on
/// stdout (rank 0's to print), after writing the summary lines to stderr.
pub(super) fn run(
    count: Count,
    args: &Args,
    problem: &Problem,
    options: &Options,
    cluster: &dyn Cluster,
    progress: &mut Progress,
) -> Result<String, (u8, String)> {
    let unwritable = |e: io::Error| (1, format!("cannot write to stderr: {e}"));
    let print = cluster.rank() == 0;
    match count {
        Count::Perft => {
            let table = perft_distributed(&problem.board, problem.depth, options, cluster, &mut |s| {
                progress.depth_done(s);
            })
            .map_err(failure)?;
            progress.finish();
            if print && !args.json {
                io::stderr().write_all(whole_game(&table).as_bytes()).map_err(unwritable)?;
            }
            Ok(if args.json { json(&PerftJson::new(problem, &table)) } else { perft_lines(&table) })
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
                let out = DivideJson {
                    depth: problem.depth,
                    moves,
                    perft: division.perft.to_string(),
                    answer: division.answer,
                };
                return Ok(json(&out));
            }
            if print {
                writeln!(
                    io::stderr(),
                    "total: {} sequences of {} moves, answer {}",
                    division.perft,
                    problem.depth,
                    division.answer
                )
                .map_err(unwritable)?;
            }
            Ok(division.moves.iter().map(|m| format!("{} {} {}\n", m.name, m.perft, m.answer)).collect())
        }
        Count::Answer => unreachable!("the answer is not a count"),
    }
}

/// The `d perft ended boards` lines of a table.
fn perft_lines(table: &Perft) -> String {
    table.rows.iter().map(|r| format!("{} {} {} {}\n", r.depth, r.perft, r.ended, r.boards)).collect()
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

//! Exact counts: perft tables ([`perft`]) and their split by first move ([`divide`]).
//!
//! From a start board, for each depth `d` from 1: `perft(d)` is the number of move sequences
//! of exactly `d` moves (a sequence stops when the board is full: one that filled it earlier
//! is not continued), `ended(d)` the number of those whose last move filled the board (games
//! of `d` moves), and `boards(d)` the distinct boards they reach, not reduced by symmetry.
//! Counts are exact: the search keeps one exact mass a position ([`crate::weights`]) and
//! refuses a depth whose counts could pass 2^128 instead of wrapping.

use state::Board;

use crate::error::{Error, Result};
use crate::moves::{legal_moves, play, Move};
use crate::stats::{DepthStats, Observer};
use crate::{
    choose, on_pool, solve_distributed, Cluster, Counting, Options, RankSummary, SavedCheckpoint, Solo,
};

/// One depth of a perft table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PerftRow {
    /// The number of moves.
    pub depth: u32,
    /// Move sequences of exactly `depth` moves.
    pub perft: u128,
    /// Of those, the ones whose last move filled the board.
    pub ended: u128,
    /// The distinct boards those sequences reach.
    pub boards: u64,
}

/// What a table that reaches the end of every game adds ([`Perft::whole_game`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WholeGame {
    /// The number of games: move sequences from the start that fill the board (Σ `ended`).
    pub games: u128,
    /// The most moves a game takes (0 when the start board is full).
    pub longest: u32,
    /// The distinct boards reachable from the start at any depth, the start included (a
    /// union over the depths, not their sum). Counted only when the table was asked to the
    /// end of the game (depth [`u32::MAX`]) and every depth stayed in memory.
    pub state_space: Option<u64>,
}

/// An exact count from a board ([`perft`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Perft {
    /// One row a depth from 1, up to the depth asked for or to the last depth at which a
    /// game is still going (after it, every count is 0). A resumed run has the rows after
    /// its checkpoint's depth.
    pub rows: Vec<PerftRow>,
    /// When every game ended within the table (and the run was not resumed).
    pub whole_game: Option<WholeGame>,
    /// Per-depth statistics of the search, depth 0 first.
    pub stats: Vec<DepthStats>,
    /// With a checkpoint: where it is.
    pub checkpoint: Option<SavedCheckpoint>,
    /// Each rank's own figures.
    pub ranks: Vec<RankSummary>,
}

/// Counts the move sequences from `board` exactly, depth by depth up to `depth`
/// ([`u32::MAX`]: to the end of every game, with the state space).
///
/// # Errors
/// As [`crate::solve`]; also when a depth's counts could pass 2^128 (the error names the
/// depth), and for options that do not apply to exact counts (`no_symmetry`, `lanes`,
/// `all_depths`).
pub fn perft(board: &Board, depth: u32, options: &Options) -> Result<Perft> {
    perft_distributed(board, depth, options, &Solo, &mut |_| ())
}

/// [`perft`] as one rank of `cluster` (see [`crate::solve_distributed`]), calling `observe`
/// with each depth's statistics as it ends.
///
/// # Errors
/// As [`perft`] and [`crate::solve_distributed`].
pub fn perft_distributed(
    board: &Board,
    depth: u32,
    options: &Options,
    cluster: &dyn Cluster,
    observe: &mut Observer<'_>,
) -> Result<Perft> {
    let counting = Counting::Exact { state_space: depth == u32::MAX };
    let mut run = move || choose(board, depth, options, counting, cluster, observe);
    let (answer, state_space) = on_pool(options, cluster, &mut run)?;
    let rows: Vec<PerftRow> = answer
        .stats
        .iter()
        .filter(|s| s.depth >= 1)
        .map(|s| PerftRow {
            depth: s.depth,
            perft: s.perft.expect("an exact count counts every depth"),
            ended: s.games.expect("an exact count counts every depth"),
            boards: s.boards.expect("an exact count counts boards"),
        })
        .collect();
    let over = match rows.last() {
        Some(last) => last.perft == last.ended,
        None => board.is_full(),
    };
    let whole_game = (over && options.resume.is_none()).then(|| WholeGame {
        games: rows.iter().map(|r| r.ended).sum(),
        longest: rows.last().map_or(0, |r| r.depth),
        state_space,
    });
    Ok(Perft { rows, whole_game, stats: answer.stats, checkpoint: answer.checkpoint, ranks: answer.ranks })
}

/// One first move of a [`Division`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MoveCount {
    /// The move.
    pub played: Move,
    /// Its name ([`crate::moves`]).
    pub name: String,
    /// Sequences of the division's depth that begin with it.
    pub perft: u128,
    /// The contest's answer over the paths that begin with it (their final hashes summed,
    /// modulo 2^30).
    pub answer: u32,
}

/// A perft count split by first move ([`divide`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Division {
    /// One entry a legal first move, in [`legal_moves`]'s order.
    pub moves: Vec<MoveCount>,
    /// `perft(depth)`: the sum of the moves' counts.
    pub perft: u128,
    /// The contest's answer at the depth: the sum of the moves' answers, modulo 2^30 (on a
    /// full board, which has no move, the board's hash).
    pub answer: u32,
}

/// Splits `perft(depth)` from `board` and the contest's answer by first move: for each legal
/// move, the sequences of `depth` moves that begin with it and the answer over its paths
/// (a move that fills the board ends its one path there).
///
/// # Errors
/// A depth of 0 (no first move), a checkpoint asked for (a division is many searches), and
/// the errors of [`perft`].
pub fn divide(board: &Board, depth: u32, options: &Options) -> Result<Division> {
    divide_distributed(board, depth, options, &Solo)
}

/// [`divide`] as one rank of `cluster`: every rank calls it with the same board and depth.
///
/// # Errors
/// As [`divide`].
pub fn divide_distributed(
    board: &Board,
    depth: u32,
    options: &Options,
    cluster: &dyn Cluster,
) -> Result<Division> {
    if depth == 0 {
        return Err(Error::options("a division needs a depth of at least 1: it splits by the first move"));
    }
    if options.checkpoint.is_some() || options.resume.is_some() {
        return Err(Error::options("a division is a search a first move: it takes no checkpoint"));
    }
    let options = Options { all_depths: false, count_boards: false, ..options.clone() };
    let mut moves = Vec::new();
    for played in legal_moves(board) {
        let child = play(board, &played);
        let (perft, answer) = if depth == 1 || child.is_full() {
            (u128::from(depth == 1), child.hash())
        } else {
            let table = perft_distributed(&child, depth - 1, &options, cluster, &mut |_| ())?;
            let perft = table.rows.iter().find(|r| r.depth == depth - 1).map_or(0, |r| r.perft);
            (perft, solve_distributed(&child, depth - 1, &options, cluster, &mut |_| ())?.answer)
        };
        moves.push(MoveCount { name: played.name(board.shape()), played, perft, answer });
    }
    let perft = moves.iter().map(|m| m.perft).sum();
    // A full board has no move: its one path, of no move, ends at once.
    let start = if board.is_full() { board.hash() } else { 0 };
    let answer = moves.iter().fold(start, |a, m| (a + m.answer) & state::HASH_MASK);
    Ok(Division { moves, perft, answer })
}

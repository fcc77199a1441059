//! Exact counts (`perft`, `divide`, `--moves`) against the published tables in
//! `fixtures/perft/` and against the plain reference's 128-bit counts, on every path: threads,
//! backends, the general path, frontiers on disk, several ranks.

use std::path::PathBuf;

use proptest::prelude::*;
use solver::{descend, divide, legal_moves, parse, perft, solve, Board, InProcess, Level, Options, Shape};

use crate::boards::{self, board};
use crate::plain;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/perft")
}

/// The rows of a table as the reference gives them.
fn table_rows(table: &solver::Perft) -> Vec<plain::PerftRow> {
    table.rows.iter().map(|r| (r.depth, r.perft, r.ended, r.boards)).collect()
}

/// The ways a count may run: each must give the same rows.
fn count_options(work: &std::path::Path) -> Vec<Options> {
    let mut v = vec![
        Options::default(),
        Options::default().with_threads(1),
        Options::default().with_threads(2).with_general(true),
        Options::default().with_backend(Level::Portable).with_threads(2),
        // Every depth past the first few on disk, in partitions.
        Options::default().with_memory_limit(1).with_work_dir(work.to_path_buf()).with_threads(2),
    ];
    for level in [Level::Avx2, Level::Avx512].into_iter().filter(|l| l.is_available()) {
        v.push(Options::default().with_backend(level));
    }
    v
}

#[test]
fn every_published_table_matches_digit_for_digit() {
    let mut names: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "perft"))
        .collect();
    names.sort();
    assert!(names.len() >= 5, "{names:?}");
    for table in names {
        let problem = parse(&std::fs::read_to_string(table.with_extension("in")).unwrap()).unwrap();
        let got = perft(&problem.board, problem.depth, &Options::default()).unwrap();
        let text: String =
            got.rows.iter().map(|r| format!("{} {} {} {}\n", r.depth, r.perft, r.ended, r.boards)).collect();
        assert_eq!(text, std::fs::read_to_string(&table).unwrap(), "{}", table.display());
    }
}

#[test]
fn the_empty_3x3_to_depth_40_matches_the_published_boards() {
    let counts = std::fs::read_to_string(fixtures().join("../counts/3x3_empty.txt")).unwrap();
    let want: Vec<u64> = counts
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    let got = perft(&Board::empty(Shape::SQUARE3), 40, &Options::default()).unwrap();
    assert_eq!(got.rows.iter().map(|r| r.boards).collect::<Vec<_>>(), want);
    // The published sequence count at depth 40: about 1.4 x 10^28.
    let last = got.rows.last().unwrap();
    assert_eq!(last.depth, 40);
    assert!(last.perft > 10u128.pow(28) && last.perft < 2 * 10u128.pow(28), "{}", last.perft);
}

#[test]
fn whole_games_of_small_boards_match_the_reference() {
    for (rows, cols, cells) in
        [(2, 2, vec![0; 4]), (2, 3, vec![0; 6]), (1, 5, vec![0; 5]), (2, 2, vec![0, 1, 2, 0])]
    {
        let (want, space) = plain::perft(&cells, rows, cols, u32::MAX);
        for threads in [1, 2] {
            let got = perft(&board(rows, cols, &cells), u32::MAX, &Options::default().with_threads(threads))
                .unwrap();
            assert_eq!(table_rows(&got), want, "{rows}x{cols} {cells:?}");
            let whole = got.whole_game.expect("every game ends");
            assert_eq!(whole.games, want.iter().map(|r| r.2).sum::<u128>());
            assert_eq!(whole.longest, want.last().unwrap().0);
            assert_eq!(whole.state_space, Some(space as u64), "{rows}x{cols} {cells:?}");
        }
    }
}

#[test]
fn a_table_short_of_the_end_is_not_a_whole_game() {
    let got = perft(&Board::empty(Shape::SQUARE3), 10, &Options::default()).unwrap();
    assert_eq!(got.rows.len(), 10);
    assert!(got.whole_game.is_none());
    // A full start: no move, no row, a game of no move.
    let full = perft(&board(1, 2, &[1, 1]), 5, &Options::default()).unwrap();
    assert!(full.rows.is_empty());
    assert_eq!(full.whole_game.map(|w| (w.games, w.longest)), Some((0, 0)));
}

#[test]
fn several_ranks_count_as_one() {
    let cells = [0u8; 12];
    let one = perft(&board(3, 4, &cells), 9, &Options::default()).unwrap();
    let b = board(3, 4, &cells);
    let options = Options::default().with_threads(1);
    let (b, options) = (&b, &options);
    std::thread::scope(|s| {
        let ranks: Vec<_> = InProcess::ranks(3)
            .into_iter()
            .map(|c| s.spawn(move || solver::perft_distributed(b, 9, options, &c, &mut |_| ()).unwrap()))
            .collect();
        for r in ranks {
            assert_eq!(r.join().unwrap().rows, one.rows);
        }
    });
}

#[test]
fn divide_splits_the_total_and_the_answer() {
    let problem = parse("7\n0 0 0\n0 3 0\n0 0 1\n").unwrap();
    let d = divide(&problem.board, problem.depth, &Options::default()).unwrap();
    let total = perft(&problem.board, problem.depth, &Options::default()).unwrap();
    assert_eq!(d.moves.len(), legal_moves(&problem.board).len());
    assert_eq!(d.perft, total.rows.last().unwrap().perft);
    assert_eq!(d.moves.iter().map(|m| m.perft).sum::<u128>(), d.perft);
    assert_eq!(d.answer, solve(&problem.board, problem.depth, &Options::default()).unwrap().answer);
    // Descending into a move gives that move's row: its children sum to it.
    for m in &d.moves {
        let (child, _) = descend(&problem.board, &m.name).unwrap();
        let below = divide(&child, problem.depth - 1, &Options::default()).unwrap();
        assert_eq!((below.perft, below.answer), (m.perft, m.answer), "{}", m.name);
    }
}

#[test]
fn divide_ends_paths_that_fill_the_board() {
    // One empty cell: its one move fills the board, at depth 1 and at every depth after.
    let b = board(2, 2, &[1, 6, 6, 0]);
    for depth in 1..4 {
        let d = divide(&b, depth, &Options::default()).unwrap();
        assert_eq!(d.moves.len(), 1);
        assert_eq!(d.perft, u128::from(depth == 1));
        assert_eq!(d.answer, solve(&b, depth, &Options::default()).unwrap().answer);
    }
    assert!(divide(&b, 0, &Options::default()).is_err());
}

#[test]
fn exact_counts_refuse_the_options_they_do_not_take() {
    let b = Board::empty(Shape::SQUARE3);
    for o in [
        Options::default().with_no_symmetry(true),
        Options::default().with_lanes(true),
        Options::default().with_all_depths(true),
    ] {
        assert!(perft(&b, 3, &o).is_err(), "{o:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random small boards: every way of counting gives the reference's rows.
    #[test]
    fn counts_match_the_reference((rows, cols, cells) in boards::strategy(4), depth in 1u32..9) {
        let (want, _) = plain::perft(&cells, rows, cols, depth);
        let work = tempfile::tempdir().unwrap();
        for o in count_options(work.path()) {
            let got = perft(&board(rows, cols, &cells), depth, &o).unwrap();
            prop_assert_eq!(table_rows(&got), want.clone(), "{:?}", o);
        }
    }
}

//! Deep cases, too slow for a debug build: `cargo xtask verify` runs them with release's
//! optimisation (`cargo test --release -p solver --test deep -- --ignored`).
//!
//! Every depth of long 3x3 games against the plain reference, and the paths that only deep
//! searches reach (many shards, owned fills, partitions on disk, several threads) against
//! each other, depth by depth, on 3x3 to depth 40 and on 4x4.

use solver::{solve, Board, Level, Options, Shape};

mod common;

#[path = "common/reference.rs"]
mod plain;

/// Starts with few dice (the contest's usual inputs) and the empty board.
fn starts_3x3() -> Vec<Vec<u8>> {
    let one = |at: usize, v: u8| {
        let mut c = vec![0; 9];
        c[at] = v;
        c
    };
    vec![vec![0; 9], one(0, 1), one(1, 1), one(4, 1), one(2, 3), vec![0, 0, 2, 0, 0, 0, 1, 0, 0]]
}

/// Every way to run a search that must give the same answers; the last runs with every
/// partition on disk under `work`.
fn paths(work: &std::path::Path) -> Vec<(String, Options)> {
    let all = Options::default().with_all_depths(true);
    let mut v = vec![
        ("default, 1 thread".to_string(), all.clone().with_threads(1)),
        ("default, 2 threads".to_string(), all.clone().with_threads(2)),
        ("default, 3 threads".to_string(), all.clone().with_threads(3)),
        ("general".to_string(), all.clone().with_general(true)),
        ("lanes, 2 threads".to_string(), all.clone().with_lanes(true).with_threads(2)),
        ("portable".to_string(), all.clone().with_backend(Level::Portable)),
        (
            "on disk, 2 threads".to_string(),
            all.clone().with_memory_limit(1).with_work_dir(work.to_path_buf()).with_threads(2),
        ),
    ];
    for level in [Level::Avx2, Level::Avx512] {
        if level.is_available() {
            let name = format!("{}, general", level.name());
            v.push((name, all.clone().with_backend(level).with_general(true)));
        }
    }
    v
}

/// Every path gives `board` the same answer at every depth to `depth`.
fn paths_agree(board: &Board, depth: u32, work: &std::path::Path) {
    let mut first: Option<(String, Vec<u32>)> = None;
    for (name, o) in paths(work) {
        let got = solve(board, depth, &o).unwrap().answers;
        let (first_name, want) = first.get_or_insert_with(|| (name.clone(), got.clone()));
        assert_eq!(&got, want, "{board:?}: {name} against {first_name}");
    }
}

#[test]
#[ignore = "deep: run in release by `cargo xtask verify`"]
fn every_3x3_depth_to_24_matches_reference_on_every_path() {
    let work = common::temp_dir("deep-3x3");
    for cells in starts_3x3() {
        let want = plain::answers(&cells, 3, 3, 24);
        let board = Board::new(Shape::SQUARE3, cells.clone()).unwrap();
        for (name, o) in paths(work.path()) {
            let got = solve(&board, 24, &o).unwrap();
            assert_eq!(got.answers, want, "{cells:?} on {name}");
        }
    }
    assert_eq!(std::fs::read_dir(work.path()).unwrap().count(), 0, "scratch left");
    work.close().unwrap();
}

#[test]
#[ignore = "deep: run in release by `cargo xtask verify`"]
fn every_3x3_depth_to_40_agrees_on_every_path() {
    let work = common::temp_dir("deep-3x3-40");
    for cells in starts_3x3() {
        paths_agree(&Board::new(Shape::SQUARE3, cells).unwrap(), 40, work.path());
    }
    work.close().unwrap();
}

#[test]
#[ignore = "deep: run in release by `cargo xtask verify`"]
fn the_4x4_to_depth_13_agrees_on_every_path() {
    let work = common::temp_dir("deep-4x4");
    let mut corner = vec![0; 16];
    corner[0] = 1;
    for cells in [vec![0; 16], corner] {
        paths_agree(&Board::new(Shape::new(4, 4).unwrap(), cells).unwrap(), 13, work.path());
    }
    work.close().unwrap();
}

#[test]
#[ignore = "deep: run in release by `cargo xtask verify`"]
fn the_4x4_to_depth_9_matches_reference() {
    let mut corner = vec![0; 16];
    corner[5] = 2;
    let want = plain::answers(&corner, 4, 4, 9);
    let board = Board::new(Shape::new(4, 4).unwrap(), corner).unwrap();
    let got = solve(&board, 9, &Options::default().with_all_depths(true)).unwrap();
    assert_eq!(got.answers, want);
}

/// The whole game of the empty 3x3 board, counted exactly, against the plain reference's
/// 128-bit counts: every depth's row, the games, the longest game and the state space; and
/// the same table with every depth's partitions on disk and on one thread.
#[test]
#[ignore = "deep: run by cargo xtask verify"]
fn the_whole_3x3_game_counted_exactly() {
    let empty = Board::empty(Shape::SQUARE3);
    let (want, space) = plain::perft(&[0; 9], 3, 3, u32::MAX);
    let got = solver::perft(&empty, u32::MAX, &Options::default()).unwrap();
    let rows: Vec<plain::PerftRow> = got.rows.iter().map(|r| (r.depth, r.perft, r.ended, r.boards)).collect();
    assert_eq!(rows, want);
    let whole = got.whole_game.expect("every game ends");
    assert_eq!(whole.games, want.iter().map(|r| r.2).sum::<u128>());
    assert_eq!(whole.longest, want.last().unwrap().0);
    assert_eq!(whole.state_space, Some(space as u64));
    let work = tempfile::tempdir().unwrap();
    let disk =
        Options::default().with_threads(1).with_memory_limit(1).with_work_dir(work.path().to_path_buf());
    let on_disk = solver::perft(&empty, u32::MAX, &disk).unwrap();
    assert_eq!(on_disk.rows, got.rows);
    // A depth went to disk: the union of every depth's boards is not kept.
    assert_eq!(on_disk.whole_game.map(|w| (w.games, w.state_space)), Some((whole.games, None)));
}

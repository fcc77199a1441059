//! A search of several ranks (threads of this process, [`solver::InProcess`]) against one
//! process and the plain reference: the same answers, per-depth answers and statistics for
//! any number of ranks, threads, and homes (memory or disk), and checkpoints that resume only
//! with as many ranks. Every test works under the build's temporary directory and removes
//! what it made.

use std::path::PathBuf;

use proptest::prelude::*;
use solver::{solve, solve_distributed, Answer, Board, InProcess, Options, Shape};

use crate::boards::board;
use crate::common::entries;
use crate::{common, plain};
use plain::reference;

/// Every rank's result of one search by `n` ranks, in rank order.
fn ranks(board: &Board, depth: u32, options: &Options, n: usize) -> Vec<solver::Result<Answer>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = InProcess::ranks(n)
            .into_iter()
            .map(|c| s.spawn(move || solve_distributed(board, depth, options, &c, &mut |_| ())))
            .collect();
        let got: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        for (r, g) in got.iter().enumerate() {
            if let Ok(Err(e)) = g {
                eprintln!("rank {r}: {e:#}");
            }
        }
        got.into_iter().map(|g| g.expect("no rank panics")).collect()
    })
}

/// A depth's figures that no number of ranks may change: depth, positions, boards, records,
/// ended paths and their hashes.
type DepthKey = (u32, u64, Option<u64>, u64, u32, u32);

/// What no number of ranks may change: the answer, every depth's, and each depth's figures.
fn key(a: &Answer) -> (u32, Vec<u32>, Vec<DepthKey>) {
    let stats =
        a.stats.iter().map(|s| (s.depth, s.states, s.boards, s.records, s.ended_paths, s.ended)).collect();
    (a.answer, a.answers.clone(), stats)
}

/// `n` ranks agree with one process on `board` to `depth` (every rank has the whole answer).
fn agree(board: &Board, depth: u32, options: &Options, n: usize, alone: &Answer) {
    for (r, got) in ranks(board, depth, options, n).into_iter().enumerate() {
        let got = got.unwrap();
        assert_eq!(key(&got), key(alone), "{n} ranks, rank {r}, {options:?}, {board:?} d{depth}");
        assert_eq!(got.ranks.len(), n);
        if n > 1 {
            let spread = got.stats.last().and_then(|s| s.ranks).expect("per-rank figures");
            assert_eq!(spread.ranks as usize, n);
            assert_eq!(spread.bytes_sent, spread.bytes_received);
        }
    }
}

/// The boards of the fixtures: `(board, depth)`.
fn fixtures(dir: &str) -> Vec<(Board, u32)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "in"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let p = solver::parse_bytes(&std::fs::read(f).unwrap()).unwrap();
            (p.board, p.depth)
        })
        .collect()
}

fn counted(threads: usize) -> Options {
    Options::default().with_threads(threads).with_all_depths(true).with_count_boards(true)
}

#[test]
fn public_and_shape_fixtures_agree_for_one_to_three_ranks_in_memory_and_on_disk() {
    let dir = common::temp_dir("cluster-fixtures");
    let mut cases = fixtures("public");
    cases.extend(fixtures("shapes").into_iter().filter(|(b, d)| b.cells().len() <= 16 && *d <= 12));
    for (b, depth) in &cases {
        let depth = (*depth).min(14);
        let alone = solve(b, depth, &counted(1)).unwrap();
        for n in 1..=3 {
            agree(b, depth, &counted(1), n, &alone);
            let disk = counted(1).with_memory_limit(1 << 20).with_work_dir(dir.path().to_path_buf());
            agree(b, depth, &disk, n, &alone);
        }
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "scratch files left");
}

/// Ranks of two threads each go through records and shards; a small limit sends most
/// partitions to disk and exchanges mail many times a depth.
#[test]
fn ranks_of_several_threads_and_partitions_on_disk_agree() {
    let dir = common::temp_dir("cluster-threads");
    for (b, depth) in
        [(Board::empty(Shape::new(4, 4).unwrap()), 11), (board(3, 3, &[0, 0, 0, 0, 0, 0, 0, 0, 1]), 20)]
    {
        let alone = solve(&b, depth, &counted(1)).unwrap();
        for (n, threads) in [(2, 2), (3, 2)] {
            agree(&b, depth, &counted(threads), n, &alone);
            let disk = counted(threads).with_memory_limit(256 << 10).with_work_dir(dir.path().to_path_buf());
            agree(&b, depth, &disk, n, &alone);
        }
    }
}

/// The last two depths summed in one pass (answer only, nothing counted) agree too.
#[test]
fn answers_alone_agree() {
    for (b, depth) in [
        (Board::empty(Shape::new(4, 4).unwrap()), 12),
        (Board::empty(Shape::new(5, 5).unwrap()), 7),
        (Board::empty(Shape::SQUARE3), 24),
        (board(3, 3, &[1, 0, 0, 0, 0, 0, 0, 0, 0]), 24),
    ] {
        let options = Options::default().with_threads(1);
        let alone = solve(&b, depth, &options).unwrap();
        for n in 2..=3 {
            for got in ranks(&b, depth, &options, n) {
                assert_eq!(got.unwrap().answer, alone.answer, "{n} ranks, {b:?} d{depth}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random boards, shapes and depths: any number of ranks gives the reference's answer.
    #[test]
    fn random_boards_agree_with_the_reference(
        (rows, cols) in (1usize..=4, 1usize..=4),
        seed in any::<u64>(),
        depth in 0u32..=7,
        n in 1usize..=3,
    ) {
        let mut x = seed | 1;
        let cells: Vec<u8> = (0..rows * cols)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x % 5 == 0 { (x / 5 % 6) as u8 + 1 } else { 0 }
            })
            .collect();
        let b = board(rows, cols, &cells);
        let want = reference(&cells, rows, cols, depth).0;
        for got in ranks(&b, depth, &Options::default().with_threads(1), n) {
            prop_assert_eq!(got.unwrap().answer, want);
        }
    }
}

/// A checkpoint of two ranks: one directory a rank and a manifest naming two; resumed by two
/// ranks it gives the answer again; three ranks, or one process, are refused on every rank.
#[test]
fn a_checkpoint_of_two_ranks_resumes_only_with_two() {
    let dir = common::temp_dir("cluster-checkpoint");
    let ck = dir.path().join("ck");
    let b = Board::empty(Shape::new(4, 4).unwrap());
    let depth = 9;
    let alone = solve(&b, depth, &Options::default().with_threads(1)).unwrap();
    let options = Options::default().with_threads(1).with_checkpoint(ck.clone());
    for got in ranks(&b, depth, &options, 2) {
        assert_eq!(got.unwrap().answer, alone.answer);
    }
    assert_eq!(entries(&ck), ["cluster", "rank-0000", "rank-0001"]);
    let resume = Options::default().with_threads(1).with_resume(ck.clone());
    for got in ranks(&b, depth, &resume, 2) {
        assert_eq!(got.unwrap().answer, alone.answer);
    }
    for (r, got) in ranks(&b, depth, &resume, 3).into_iter().enumerate() {
        let e = format!("{:#}", got.unwrap_err());
        if r == 0 {
            assert!(e.contains("made by 2 ranks, not 3"), "{e}");
        } else {
            assert!(e.contains("rank 0 failed"), "{e}");
        }
    }
    let e = format!("{:#}", solve(&b, depth, &resume).unwrap_err());
    assert!(e.contains("several ranks"), "{e}");
    // A new checkpoint of several ranks needs a new or empty directory, as one process does.
    for got in ranks(&b, depth, &options, 2) {
        assert!(got.is_err());
    }
    assert_eq!(entries(&ck), ["cluster", "rank-0000", "rank-0001"]);
}

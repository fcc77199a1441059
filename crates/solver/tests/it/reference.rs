//! The plain reference solver (whole boards in a `HashMap`, no symmetry, no tables, no packing)
//! and property tests comparing the real solver with it.

use proptest::prelude::*;
use solver::{solve, Board, Fill, Level, Options, Shape};

use crate::plain;
use plain::{answers, answers_and_boards, reference};

use crate::boards;

fn solve_with(cells: &[u8], rows: usize, cols: usize, depth: u32, options: &Options) -> u32 {
    let board = boards::board(rows, cols, cells);
    solve(&board, depth, options).unwrap().answer
}

/// An answer against the reference's from one pass to the same depth: its answer (the last of
/// `answers`, the reference's answer at each depth), the distinct boards of every depth
/// `distinct` (the search stops once every path has ended, where the reference keeps counting
/// empty depths) and, where all depths were asked for, the answer at each depth.
fn check_answer(a: &solver::Answer, answers: &[u32], distinct: &[usize]) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.answer, *answers.last().unwrap());
    let boards: Vec<usize> = a.stats.iter().map(|s| s.boards.unwrap() as usize).collect();
    prop_assert_eq!(&boards[..], &distinct[..boards.len()]);
    prop_assert!(distinct[boards.len()..].iter().all(|&n| n == 0));
    if !a.answers.is_empty() {
        prop_assert_eq!(&a.answers[..], answers);
    }
    Ok(())
}

fn all_paths() -> Vec<Options> {
    let mut v = vec![
        Options::default(),
        Options::default().with_general(true),
        Options::default().with_no_symmetry(true),
        // Symmetric starts: 8 lanes instead of one orbit mass.
        Options::default().with_lanes(true).with_threads(2),
        Options::default().with_backend(Level::Portable).with_threads(1),
    ];
    for level in [Level::Avx2, Level::Avx512] {
        if level.is_available() {
            v.push(Options::default().with_backend(level).with_general(true));
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn matches_reference_on_small_shapes((rows, cols, cells) in boards::strategy(4), depth in 0u32..7) {
        let (answers, distinct) = answers_and_boards(&cells, rows, cols, depth);
        let want = *answers.last().unwrap();
        for o in all_paths() {
            prop_assert_eq!(solve_with(&cells, rows, cols, depth, &o), want, "{:?}", o);
        }
        // Perft-style: the distinct boards of every depth, with and without symmetry.
        for no_symmetry in [false, true] {
            let board = boards::board(rows, cols, &cells);
            let o = Options::default().with_count_boards(true).with_no_symmetry(no_symmetry);
            check_answer(&solve(&board, depth, &o).unwrap(), &answers, &distinct)?;
        }
    }

    #[test]
    fn matches_reference_on_3x3((_, _, cells) in boards::strategy(3).prop_filter("3x3", |b| b.0 == 3 && b.1 == 3), depth in 0u32..12) {
        let (want, _) = reference(&cells, 3, 3, depth);
        for o in all_paths() {
            prop_assert_eq!(solve_with(&cells, 3, 3, depth, &o), want, "{:?}", o);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// One `--all-depths` pass equals D+1 separate runs.
    #[test]
    fn all_depths_equal_separate_runs((rows, cols, cells) in boards::strategy(3), depth in 0u32..9) {
        let board = boards::board(rows, cols, &cells);
        let all = solve(&board, depth, &Options::default().with_all_depths(true)).unwrap();
        prop_assert_eq!(&all.answers, &answers(&cells, rows, cols, depth));
        for d in 0..=depth {
            prop_assert_eq!(all.answers[d as usize], solve(&board, d, &Options::default()).unwrap().answer);
        }
    }

    /// Every shape up to 8x8, shallow.
    #[test]
    fn matches_reference_on_every_shape(rows in 1usize..=8, cols in 1usize..=8, seed in any::<u64>(), depth in 0u32..4) {
        prop_assume!(rows * cols <= 64);
        let cells = boards::random(rows, cols, seed, 3);
        let (want, _) = reference(&cells, rows, cols, depth);
        prop_assert_eq!(solve_with(&cells, rows, cols, depth, &Options::default()), want);
        // Every level this CPU has: the wide keys' SIMD kernels (`u64`, `u128`) and their twin.
        for level in [Level::Portable, Level::Avx2, Level::Avx512].into_iter().filter(|l| l.is_available()) {
            prop_assert_eq!(solve_with(&cells, rows, cols, depth, &Options::default().with_backend(level)), want);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Starts that every symmetry fixes (counted by orbit masses): answers at every depth and
    /// distinct boards, on every path, against the reference.
    #[test]
    fn symmetric_starts_match_reference(rows in 1usize..=5, cols in 1usize..=5, seed in any::<u64>(), one_in in 2u64..8, depth in 0u32..8) {
        prop_assume!(rows * cols <= 16 || depth <= 5);
        let cells = boards::symmetric(rows, cols, &boards::random(rows, cols, seed, one_in));
        let (answers, distinct) = answers_and_boards(&cells, rows, cols, depth);
        let want = *answers.last().unwrap();
        for o in all_paths() {
            prop_assert_eq!(solve_with(&cells, rows, cols, depth, &o), want, "{:?}", o);
        }
        let board = boards::board(rows, cols, &cells);
        let o = Options::default().with_count_boards(true).with_all_depths(true);
        let a = solve(&board, depth, &o).unwrap();
        prop_assert_eq!(a.answers.len(), depth as usize + 1);
        check_answer(&a, &answers, &distinct)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Square starts that some symmetries fix but not all (counted by one lane a coset of those
    /// symmetries: a reflection, the half turn, or a group of 4 of them): answers at every
    /// depth and distinct boards, on every path, against the reference.
    #[test]
    fn partly_symmetric_starts_match_reference(side in 2usize..=5, seed in any::<u64>(), one_in in 2u64..6, group in 0usize..8, depth in 0u32..8) {
        prop_assume!(side <= 4 || depth <= 5);
        let gens: &[usize] = [&[0][..], &[1], &[2], &[3], &[4], &[0, 1], &[3, 4], &[5]][group];
        let cells = boards::symmetric_under(side, &boards::random(side, side, seed, one_in), gens);
        let (answers, distinct) = answers_and_boards(&cells, side, side, depth);
        let want = *answers.last().unwrap();
        for o in all_paths() {
            prop_assert_eq!(solve_with(&cells, side, side, depth, &o), want, "{:?}", o);
        }
        let board = boards::board(side, side, &cells);
        for threads in [1, 2] {
            let o = Options::default().with_count_boards(true).with_all_depths(true).with_threads(threads);
            let a = solve(&board, depth, &o).unwrap();
            prop_assert_eq!(a.answers.len(), depth as usize + 1);
            check_answer(&a, &answers, &distinct)?;
            // Paths ended, depth by depth, as 8 lanes count them.
            let lanes = solve(&board, depth, &o.clone().with_lanes(true)).unwrap();
            let ended = |a: &solver::Answer| a.stats.iter().map(|s| (s.ended_paths, s.states)).collect::<Vec<_>>();
            prop_assert_eq!(ended(&a), ended(&lanes));
        }
    }
}

#[test]
fn every_shape_every_size_fixed_boards() {
    for rows in 1..=8 {
        for cols in 1..=8 {
            if rows * cols > 64 {
                continue;
            }
            let n = rows * cols;
            let cells: Vec<u8> = (0..n).map(|i| if i % 3 == 1 { (i % 6 + 1) as u8 } else { 0 }).collect();
            let depth = if n <= 16 { 4 } else { 2 };
            let (want, _) = reference(&cells, rows, cols, depth);
            assert_eq!(solve_with(&cells, rows, cols, depth, &Options::default()), want, "{rows}x{cols}");
        }
    }
}

#[test]
fn all_depths_match_separate_runs() {
    for (rows, cols, cells, depth) in [
        (3, 3, vec![0; 9], 14u32),
        (2, 3, vec![0, 1, 0, 0, 0, 2], 12),
        (1, 1, vec![0], 3),
        (3, 3, vec![1, 2, 3, 4, 5, 6, 1, 2, 0], 5),
    ] {
        let board = boards::board(rows, cols, &cells);
        let all = solve(&board, depth, &Options::default().with_all_depths(true)).unwrap();
        assert_eq!(all.answers, answers(&cells, rows, cols, depth), "{rows}x{cols}");
        assert_eq!(all.answer, *all.answers.last().unwrap());
    }
}

/// Frontiers past the parallel threshold: one thread inserts straight into one set, several
/// each into a shard of its own, posting the others' successors to them (owned), or all into
/// one set behind one lock, or the way measured faster (the default). All must agree at every
/// depth, in every statistic, for starts with and without symmetry, 8 lanes or one mass, keys
/// of every width.
#[test]
fn one_thread_and_parallel_fills_agree() {
    // 8 lanes on the empty 4x4: frontiers past 2^15 positions (parallel on two threads).
    let board = Board::empty(Shape::new(4, 4).unwrap());
    let o = |threads, fill| counted_options(threads).with_lanes(true).with_fill(fill);
    let one = solve(&board, 12, &o(1, Fill::Auto)).unwrap();
    let sizes: Vec<u64> = one.stats.iter().map(|s| s.states).collect();
    assert!(sizes.iter().any(|&n| n >= 1 << 17), "no parallel depth: {sizes:?}");
    for fill in [Fill::Auto, Fill::Owned, Fill::OneLock] {
        let two = solve(&board, 12, &o(2, fill)).unwrap();
        let filled: Vec<_> = two.stats.iter().filter_map(|s| s.fill).collect();
        assert!(!filled.is_empty() && !filled.contains(&Fill::Auto), "{fill:?}: {filled:?}");
        assert!(fill == Fill::Auto || filled.iter().all(|&f| f == fill), "{fill:?}: {filled:?}");
        assert_eq!(one.answers, two.answers, "{fill:?}");
        assert_eq!(depth_statistics(&one), depth_statistics(&two), "{fill:?}");
    }

    for (seed, depth) in [(1u64, 10u32), (7, 11), (12, 10)] {
        let mut cells = boards::random(4, 4, seed, 6);
        if seed == 12 {
            cells = boards::symmetric(4, 4, &cells);
        }
        let board = boards::board(4, 4, &cells);
        let run = |threads| counted_run(&board, depth, threads);
        let (one, two) = (run(1), run(2));
        assert!(one.stats.iter().any(|s| s.states >= 1 << 15), "seed {seed}: frontier too small to shard");
        assert_eq!(one.answers, two.answers, "seed {seed}");
        assert_eq!(depth_statistics(&one), depth_statistics(&two), "seed {seed}");
    }

    // `u128` keys (the 5x5 board), one mass a position and 8 lanes.
    let board = Board::empty(Shape::new(5, 5).unwrap());
    for lanes in [false, true] {
        let o = |threads| counted_options(threads).with_lanes(lanes);
        let (one, two) = (solve(&board, 7, &o(1)).unwrap(), solve(&board, 7, &o(2)).unwrap());
        assert!(one.stats.iter().any(|s| s.states >= 1 << 15), "5x5: frontier too small to shard");
        assert_eq!(one.answers, two.answers, "5x5, lanes {lanes}");
        assert_eq!(depth_statistics(&one), depth_statistics(&two), "5x5, lanes {lanes}");
    }
}

/// Every depth's answer and statistics, distinct boards counted, of `board` to `depth` on
/// `threads` threads.
fn counted_run(board: &Board, depth: u32, threads: usize) -> solver::Answer {
    solve(board, depth, &counted_options(threads)).unwrap()
}

/// Every depth's answer and statistics, distinct boards counted, on `threads` threads.
fn counted_options(threads: usize) -> Options {
    Options::default().with_threads(threads).with_all_depths(true).with_count_boards(true)
}

/// What no thread count may change, depth by depth: positions, boards, records, ended paths and
/// their hashes.
fn depth_statistics(a: &solver::Answer) -> Vec<(u64, Option<u64>, u64, u32, u32)> {
    a.stats.iter().map(|s| (s.states, s.boards, s.records, s.ended_paths, s.ended)).collect()
}

/// On several threads, positions with one orbit mass (the empty 4x4, with `u64` keys beside
/// their masses, and the empty 3x3, with `u32` keys packed with them) go through owned and
/// one-lock fills: every answer and statistic is the one thread's.
#[test]
fn parallel_fills_of_orbit_masses_agree_with_one_thread() {
    for (shape, depth) in [(Shape::new(4, 4).unwrap(), 14), (Shape::SQUARE3, 30)] {
        let board = Board::empty(shape);
        let one = counted_run(&board, depth, 1);
        for (threads, fill) in [(2, Fill::Owned), (2, Fill::OneLock), (3, Fill::Owned), (3, Fill::OneLock)] {
            let many = solve(&board, depth, &counted_options(threads).with_fill(fill)).unwrap();
            let case = format!("{shape}, {threads} threads, {fill:?}");
            assert!(many.stats.iter().any(|s| s.fill == Some(fill)), "{case}: no depth was filled so");
            assert_eq!(one.answers, many.answers, "{case}");
            assert_eq!(depth_statistics(&one), depth_statistics(&many), "{case}");
        }
    }
}

/// The 3x3 fast path (8 lanes or orbit masses) and the general grid with orbit masses sum
/// their last two depths in one pass (nothing stored at the one before the last), on one
/// thread or, past the parallel threshold, several; asking for every depth's answer stores
/// every depth instead. All must agree, statistics included.
#[test]
fn last_two_depths_in_one_pass_agree() {
    let mut corner = vec![0u8; 9];
    corner[0] = 1;
    for (shape, cells, depth) in [
        (Shape::SQUARE3, vec![0u8; 9], 24),
        (Shape::SQUARE3, corner, 24),
        (Shape::new(4, 4).unwrap(), vec![0u8; 16], 12),
    ] {
        let board = Board::new(shape, cells).unwrap();
        let run = |threads, all_depths| {
            solve(&board, depth, &Options::default().with_threads(threads).with_all_depths(all_depths))
                .unwrap()
        };
        let (one, two, stored) = (run(1, false), run(2, false), run(2, true));
        let last = depth as usize - 1;
        assert!(one.stats[last - 1].states >= 1 << 15, "frontier too small to share out");
        assert_eq!((one.stats[last].states, one.stats[last].depth), (0, depth - 1), "not stored");
        assert_eq!(one.answer, stored.answer);
        assert_eq!(two.answer, stored.answer);
        let key = |a: &solver::Answer| -> Vec<(u32, u64, u64, u32, u32)> {
            a.stats.iter().map(|s| (s.depth, s.states, s.records, s.ended_paths, s.ended)).collect()
        };
        assert_eq!(key(&one), key(&two));
        // Depth by depth, the moves made and the paths ended are the same whether depth 23 was
        // stored or not.
        let made = |a: &solver::Answer| -> Vec<(u64, u32, u32)> {
            a.stats.iter().map(|s| (s.records, s.ended_paths, s.ended)).collect()
        };
        assert_eq!(made(&one), made(&stored));
    }
}

#[test]
fn answer_does_not_depend_on_thread_count() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures");
    for dir in ["public", "shapes"] {
        for entry in std::fs::read_dir(format!("{root}/{dir}")).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "in") {
                continue;
            }
            let p = solver::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let want: u32 =
                std::fs::read_to_string(path.with_extension("out")).unwrap().trim().parse().unwrap();
            let mut stats = None;
            for threads in [1, 2, 3] {
                let a = solve(&p.board, p.depth, &Options::default().with_threads(threads)).unwrap();
                assert_eq!(a.answer, want, "{} with {threads} threads", path.display());
                let s: Vec<(u64, u64, u32)> =
                    a.stats.iter().map(|s| (s.states, s.records, s.ended)).collect();
                assert!(stats.get_or_insert(s.clone()) == &s, "statistics differ with {threads} threads");
            }
        }
    }
}

/// A search of `n` threads asked for on a thread of a pool of `n` (as the binary's
/// `--threads N` asks on its main thread) runs on that thread, with the reference's answer.
#[test]
fn n_threads_on_a_thread_of_a_pool_of_n_run_there() {
    for n in [1, 2] {
        std::thread::spawn(move || {
            let _pool = rayon::ThreadPoolBuilder::new().num_threads(n).use_current_thread().build().unwrap();
            let me = std::thread::current().id();
            let cells = [1, 0, 0, 0, 0, 0, 0, 0, 0];
            let board = boards::board(3, 3, &cells);
            let mut threads = Vec::new();
            let options = Options::default().with_threads(n);
            let a = solver::solve_observed(&board, 12, &options, &mut |_| {
                threads.push((std::thread::current().id(), rayon::current_num_threads()))
            })
            .unwrap();
            assert_eq!(a.answer, reference(&cells, 3, 3, 12).0);
            assert!(
                !threads.is_empty() && threads.iter().all(|&t| t == (me, n)),
                "{n} threads: the search left the pool's thread"
            );
        })
        .join()
        .unwrap();
    }
}

#[test]
fn reference_agrees_with_published_counts() {
    // Perft-style check of the reference itself against the fixtures' board counts (the
    // counts include full boards reached at that depth; the empty 3x3 has none before depth 9).
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/counts/3x3_empty.txt"))
            .unwrap();
    let want: Vec<usize> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split_whitespace().nth(1).unwrap().parse().unwrap())
        .collect();
    let (_, distinct) = reference(&[0; 9], 3, 3, 8);
    assert_eq!(distinct[1..], want[..8]);
}

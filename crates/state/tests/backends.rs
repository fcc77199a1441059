//! Every canonicalisation backend against the portable one and the slow twins; the fast 3x3
//! path against the general one; the general path's AVX2 kernel against its portable twin on
//! every shape it serves.

use proptest::prelude::*;
use state::canon::{canonical_slow, Canon3, Portable};
use state::{pack, Grid, Level, PackedKey, Ring3, Rules, Shape, U192};

/// A pseudo-random board of `n` cells.
fn board(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 7) as u8
        })
        .collect()
}

/// Whether this CPU has what the AVX2 backends need (a skip is only right when it has not).
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("bmi1")
        && std::is_x86_feature_detected!("bmi2")
        && std::is_x86_feature_detected!("popcnt");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

fn ring_boards() -> impl Iterator<Item = u32> {
    let ring = Ring3::new(Portable);
    (0..200_000u64).map(move |i| ring.pack(&board(i, 9)))
}

/// Checks one 3x3 backend against the portable one on `boards`, and both against the slow twin
/// on every tenth.
pub fn check_backend<B: Canon3>(b: B, boards: impl Iterator<Item = u32>) {
    let boards: Vec<u32> = boards.collect();
    check_canonical_many(b, &boards);
    for (i, &s) in boards.iter().enumerate() {
        let want = Portable.canonical(s);
        assert_eq!(b.canonical(s), want, "board {s:#o}");
        if i.is_multiple_of(10) {
            assert_eq!(want, canonical_slow(s), "board {s:#o}");
        }
        let counts = [1, 2, 3, 4, 5, 6, 7, 8];
        for t in 0..8 {
            assert_eq!(b.permute(&counts, t), Portable.permute(&counts, t));
        }
        for p in 0..9 {
            assert_eq!(b.pattern(s, p), Portable.pattern(s, p), "board {s:#o}, position {p}");
        }
    }
}

/// [`Canon3::canonical_many`] agrees with the portable [`Canon3::canonical`] of each key: on
/// `boards` taken in runs of every length up to 40 (whole groups of 8 and the rest), and on
/// keys of any 32 bits (the bits above the ring are kept as they are).
fn check_canonical_many<B: Canon3>(b: B, boards: &[u32]) {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let any: Vec<u32> = (0..4096)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 32) as u32
        })
        .collect();
    for keys in [boards, &any[..]] {
        let mut rest = keys;
        let mut len = 0;
        while !rest.is_empty() {
            let (run, tail) = rest.split_at(len.min(rest.len()));
            // Longer outputs than keys: only the first `run.len()` are written.
            let (mut canonical, mut symmetry) = (vec![7; run.len() + 9], vec![9; run.len() + 9]);
            b.canonical_many(run, &mut canonical, &mut symmetry);
            for (j, &k) in run.iter().enumerate() {
                assert_eq!(
                    (canonical[j], symmetry[j]),
                    Portable.canonical(k),
                    "key {k:#x}, run of {}",
                    run.len()
                );
            }
            assert!(
                canonical[run.len()..].iter().all(|&c| c == 7)
                    && symmetry[run.len()..].iter().all(|&t| t == 9)
            );
            (rest, len) = (tail, (len + 1) % 41);
        }
    }
}

#[test]
fn portable_matches_slow_twin() {
    check_backend(Portable, ring_boards());
}

#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_matches_portable() {
    match state::canon::Avx2::new() {
        // With BMI2's bit gather and without (the CPU decides which one runs).
        Some(b) => [true, false].into_iter().for_each(|g| check_backend(b.with_gather(g), ring_boards())),
        None => eprintln!("skipped: this CPU has no AVX2"),
    }
}

/// Every way `rules` has to list successors agrees with [`Rules::successors`]: one position
/// at a time (`successors_into`), and many at once (`successors_of_many`, in groups of every
/// size up to `MANY`, each successor tagged with its position's tag); the summed successor
/// hashes agree with the successors' own.
fn check_successor_lists<R: Rules<Key = u32>>(rules: &R, boards: impl Iterator<Item = u32>) {
    let keys: Vec<u32> = boards.filter(|&s| !rules.is_full(s)).collect();
    let mut out = vec![0u32; R::MANY * R::BUFFER];
    let mut from = vec![0u32; R::MANY * R::BUFFER];
    let mut want = Vec::new();
    let (mut at, mut group) = (0, 1);
    while at < keys.len() {
        let keys = &keys[at..(at + group).min(keys.len())];
        let tags: Vec<u32> = keys.iter().map(|&k| k.rotate_left(7) ^ 0x5A5A).collect();
        want.clear();
        for (&k, &tag) in keys.iter().zip(&tags) {
            let mut one = Vec::new();
            rules.successors(k, |t| one.push(t));
            let n = rules.successors_into(k, &mut out);
            assert_eq!(out[..n], one, "board {k:#o}");
            let mut hashes = [0u32; 8];
            for &t in &one {
                state::mul_add(&mut hashes, &[1; 8], &rules.hashes(t));
            }
            assert_eq!(rules.successor_hashes(k), hashes, "board {k:#o}");
            want.extend(one.iter().map(|&t| (t, tag)));
        }
        let n = rules.successors_of_many(keys, &tags, &mut out, &mut from);
        let got: Vec<(u32, u32)> = out[..n].iter().copied().zip(from[..n].iter().copied()).collect();
        assert_eq!(got, want, "boards {keys:?}");
        at += keys.len();
        group = group % R::MANY + 1;
    }
}

#[test]
fn successor_lists_agree_portable() {
    check_successor_lists(&Ring3::new(Portable), ring_boards().take(50_000));
}

#[cfg(target_arch = "x86_64")]
#[test]
fn successor_lists_agree_avx2() {
    match state::canon::Avx2::new() {
        Some(b) => [true, false]
            .into_iter()
            .for_each(|g| check_successor_lists(&Ring3::new(b.with_gather(g)), ring_boards().take(50_000))),
        None => {
            assert!(!has_avx2(), "this CPU has AVX2 but no AVX2 backend was made");
            eprintln!("skipped: this CPU has no AVX2")
        }
    }
}

#[test]
fn canonical_form_is_invariant_under_symmetry() {
    let ring = Ring3::new(Portable);
    for i in 0..20_000 {
        let s = ring.pack(&board(i, 9));
        let (c, t) = ring.canonical(s);
        assert_eq!(ring.images(s)[t as usize], c);
        assert_eq!(ring.images(s).iter().min(), Some(&c));
        // c is an image of s: the t-th image.
        let (c2, _) = canonical_slow(c);
        assert_eq!(c, c2, "the canonical form is its own canonical form");
        assert_eq!(c, canonical_slow(s).0);
        assert_eq!(ring.hashes(s)[t as usize], ring.hashes(c)[0]);
    }
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

#[test]
fn ring3_agrees_with_grid_on_3x3() {
    let ring = Ring3::new(Portable);
    let grid = Grid::<u32>::new(Shape::SQUARE3, Level::Portable);
    for i in 0..20_000 {
        let cells = board(i, 9);
        let (r, g) = (ring.pack(&cells), grid.pack(&cells));
        assert_eq!(ring.unpack(r), cells);
        assert_eq!(ring.is_full(r), grid.is_full(g));
        assert_eq!(sorted(ring.hashes(r).to_vec()), sorted(grid.hashes(g).to_vec()));
        // Canonical forms differ (different packings) but stand for the same orbit.
        let (rc, _) = ring.canonical(r);
        let (gc, _) = grid.canonical(g);
        assert_eq!(grid.canonical(grid.pack(&ring.unpack(rc))).0, gc);
        if ring.is_full(r) {
            continue;
        }
        let mut a = Vec::new();
        ring.successors(r, |t| a.push(ring.unpack(t)));
        let mut b = Vec::new();
        grid.successors(g, |t| b.push(grid.unpack(t)));
        assert_eq!(sorted(a), sorted(b), "board {cells:?}");
        assert_eq!(sorted(ring.successor_hashes(r).to_vec()), sorted(grid.successor_hashes(g).to_vec()));
    }
}

/// Checks the general rules of one shape: canonical form against the slow twin, hashes and
/// successor hash sums against the successors themselves.
fn check_grid<K: PackedKey>(rows: usize, cols: usize, seed: u64) {
    let shape = Shape::new(rows, cols).unwrap();
    let grid = Grid::<K>::new(shape, Level::Portable);
    let cells = board(seed, shape.cells());
    let s: K = pack(&cells);
    assert_eq!(grid.canonical(s), grid.canonical_slow(s), "{shape} {cells:?}");
    let (c, t) = grid.canonical(s);
    assert_eq!(grid.images(s)[t as usize], c);
    assert_eq!(grid.hashes(s)[t as usize], grid.hashes(c)[0]);
    assert_eq!(grid.hashes(s)[0], state::hash_cells(&cells) | (grid.hashes(s)[0] & !state::HASH_MASK));
    if grid.is_full(s) {
        return;
    }
    let mut sum = [0u32; 8];
    grid.successors(s, |t| {
        let h = grid.hashes(t);
        for g in 0..8 {
            sum[g] = sum[g].wrapping_add(h[g]);
        }
    });
    assert_eq!(grid.successor_hashes(s), sum, "{shape} {cells:?}");
    // The total over the symmetries: exact modulo 2^54 where the grid has a window for its
    // patterns (2 to 10 columns), else the sum of the wrapped lanes (equal modulo 2^32).
    let n = shape.cells();
    // Cell `i` weighs 10^(n - 1 - i) modulo 2^32 (so that hashes hold 32 exact bits).
    let weight: Vec<u64> = (0..n).map(|i| (0..n - 1 - i).fold(1u64, |w, _| w * 10 % (1 << 32))).collect();
    let exact = |b: K| -> u64 { (0..n).map(|i| u64::from(b.cell(i)) * weight[i]).sum() };
    assert_eq!(exact(s) % (1 << 30), u64::from(state::hash_cells(&cells)), "{shape} {cells:?}");
    let mut total = 0u64;
    grid.successors(s, |t| {
        let images = grid.images(t);
        total = images[..grid.symmetries()].iter().fold(total, |a, &b| a.wrapping_add(exact(b)));
    });
    let got = grid.successor_hash_total(s);
    assert_eq!(got as u32, total as u32, "{shape} {cells:?}");
    if (2..=10).contains(&cols) {
        assert_eq!(got << 10, total << 10, "{shape} {cells:?}");
    }
    // Over the successors at once (updated from the parent's, where the grid has a window):
    // the same as each successor's own total, and the same full successors.
    let (mut want, mut open, mut full) = (0u64, 0u32, Vec::new());
    grid.successors(s, |t| {
        if grid.is_full(t) {
            full.push(t);
        } else {
            want = want.wrapping_add(grid.successor_hash_total(t));
            open += 1;
        }
    });
    let mut got_full = Vec::new();
    assert_eq!(grid.successor_totals(s, |t| got_full.push(t)), (want, open), "{shape} {cells:?}");
    assert_eq!(got_full, full, "{shape} {cells:?}");
}

fn check_shape(rows: usize, cols: usize, seed: u64) {
    match Shape::new(rows, cols).unwrap().width() {
        state::Width::U32 => check_grid::<u32>(rows, cols, seed),
        state::Width::U64 => check_grid::<u64>(rows, cols, seed),
        state::Width::U128 => check_grid::<u128>(rows, cols, seed),
        state::Width::U192 => check_grid::<U192>(rows, cols, seed),
    }
    // Any wider key gives the same answers.
    if rows * cols <= 42 {
        check_grid::<u128>(rows, cols, seed);
    }
    check_grid::<U192>(rows, cols, seed);
}

#[test]
fn every_shape_fixed_seeds() {
    for rows in 1..=8 {
        for cols in 1..=8 {
            if rows * cols <= 64 {
                for seed in 0..20 {
                    check_shape(rows, cols, seed);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn grid_rules_hold_on_random_shapes(rows in 1usize..=8, cols in 1usize..=8, seed in any::<u64>()) {
        prop_assume!(rows * cols <= 64);
        check_shape(rows, cols, seed);
    }
}

/// Every shape packed into `K`: 11 to 21 cells for `u64` (4x4, 3x7, 2x9, 1x13...), 22 to 42
/// for `u128` (5x5, 4x6, 6x7, 1x42...).
fn wide_shapes<K: PackedKey>() -> Vec<Shape> {
    let (cells, width) = match K::BITS {
        64 => (11..=21, state::Width::U64),
        128 => (22..=42, state::Width::U128),
        bits => panic!("no SIMD kernel for {bits}-bit keys"),
    };
    let mut v = Vec::new();
    for rows in 1..=*cells.end() {
        for cols in 1..=*cells.end() {
            if cells.contains(&(rows * cols)) {
                let shape = Shape::new(rows, cols).unwrap();
                assert_eq!(shape.width(), width, "{shape}");
                v.push(shape);
            }
        }
    }
    v
}

/// A board of `grid`'s shape from `seed`, of one of three kinds: random dice, mostly empty
/// (images tie often), or made symmetric under one symmetry (so that some images are equal and
/// the smallest lane must win).
fn wide_board<K: PackedKey>(grid: &Grid<K>, seed: u64, kind: u8) -> K {
    let n = grid.shape().cells();
    let mut cells = board(seed, n);
    match kind % 3 {
        0 => {}
        1 => {
            let mask = board(seed ^ 0x5555, n);
            for (c, m) in cells.iter_mut().zip(mask) {
                if m < 5 {
                    *c = 0;
                }
            }
        }
        _ => {
            // The cell-wise maximum with the image under g until it is stable.
            let g = (seed % grid.shape().symmetries() as u64) as usize;
            loop {
                let image = grid.unpack(grid.images(grid.pack(&cells))[g]);
                let next: Vec<u8> = cells.iter().zip(&image).map(|(&a, &b)| a.max(b)).collect();
                if next == cells {
                    break;
                }
                cells = next;
            }
        }
    }
    grid.pack(&cells)
}

/// The SIMD levels this CPU has, each with a grid of `shape` built for it.
fn simd_grids<K: PackedKey>(shape: Shape) -> Vec<Grid<K>> {
    [Level::Avx2, Level::Avx512]
        .into_iter()
        .filter(|l| l.is_available())
        .map(|l| Grid::<K>::new(shape, l))
        .inspect(|g| assert!(g.level() != Level::Portable, "{shape}: a grid took no SIMD level the CPU has"))
        .collect()
}

/// Each SIMD grid's canonical form (key and symmetry) against the portable grid's, and every
/// `slow`-th board's against the slow twin's. Returns how many SIMD grids were checked (none
/// where this CPU has no SIMD level).
fn check_wide<K: PackedKey>(shape: Shape, seeds: impl Iterator<Item = u64>, slow: u64) -> usize {
    let simd = simd_grids::<K>(shape);
    let portable = Grid::<K>::new(shape, Level::Portable);
    for seed in seeds {
        let s = wide_board(&portable, seed, seed as u8);
        let want = portable.canonical(s);
        for grid in &simd {
            assert_eq!(grid.canonical(s), want, "{shape} {} board {s:?}", grid.level().name());
        }
        if seed % slow == 0 {
            assert_eq!(want, portable.canonical_slow(s), "{shape} board {s:?}");
        }
    }
    simd.len()
}

/// How many SIMD levels this CPU has that the wide kernels serve.
fn simd_levels() -> usize {
    [Level::Avx2, Level::Avx512].into_iter().filter(|l| l.is_available()).count()
}

#[test]
fn wide_simd_matches_portable_on_every_u64_shape() {
    assert_eq!(Level::Avx2.is_available(), has_avx2());
    for (i, shape) in wide_shapes::<u64>().into_iter().enumerate() {
        let base = 1_000_000 * i as u64;
        assert_eq!(check_wide::<u64>(shape, base..base + 20_000, 1), simd_levels());
    }
    if simd_levels() == 0 {
        eprintln!("skipped: this CPU has no SIMD level");
    }
}

#[test]
fn wide_simd_matches_portable_on_every_u128_shape() {
    for (i, shape) in wide_shapes::<u128>().into_iter().enumerate() {
        let base = 1_000_000 * i as u64;
        assert_eq!(check_wide::<u128>(shape, base..base + 5_000, 16), simd_levels());
    }
    if simd_levels() == 0 {
        eprintln!("skipped: this CPU has no SIMD level");
    }
}

/// The largest keys a `u128` grid holds: every cell of a 42-cell board a 6, and single dice in
/// the top cells (high words that decide, low words that tie), through every SIMD level.
#[test]
fn wide_simd_u128_keys_at_the_top_bits() {
    for shape in [Shape::new(6, 7).unwrap(), Shape::new(7, 6).unwrap(), Shape::new(1, 42).unwrap()] {
        let portable = Grid::<u128>::new(shape, Level::Portable);
        let n = shape.cells();
        let mut boards = vec![vec![6u8; n]];
        for i in 0..n {
            for v in [1u8, 4, 6] {
                let mut cells = vec![0u8; n];
                cells[i] = v;
                boards.push(cells.clone());
                cells[n - 1 - i] = 7 - v;
                boards.push(cells);
            }
        }
        for cells in boards {
            let s = portable.pack(&cells);
            let want = portable.canonical_slow(s);
            assert_eq!(portable.canonical(s), want, "{shape} {cells:?}");
            for grid in simd_grids::<u128>(shape) {
                assert_eq!(grid.canonical(s), want, "{shape} {} {cells:?}", grid.level().name());
            }
        }
    }
}

#[test]
fn wide_shapes_are_all_there() {
    let shapes = wide_shapes::<u64>();
    assert_eq!(shapes.len(), 43);
    assert!(shapes.contains(&Shape::new(4, 4).unwrap()) && shapes.contains(&Shape::new(7, 3).unwrap()));
    assert!(shapes.contains(&Shape::new(1, 21).unwrap()) && shapes.contains(&Shape::new(11, 1).unwrap()));
    let shapes = wide_shapes::<u128>();
    assert_eq!(shapes.len(), 98);
    assert!(shapes.contains(&Shape::new(5, 5).unwrap()) && shapes.contains(&Shape::new(6, 7).unwrap()));
    assert!(shapes.contains(&Shape::new(1, 22).unwrap()) && shapes.contains(&Shape::new(42, 1).unwrap()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn wide_simd_matches_portable_on_random_shapes(
        shape in prop::sample::select(wide_shapes::<u64>()),
        wider in prop::sample::select(wide_shapes::<u128>()),
        seed in any::<u64>(),
    ) {
        prop_assert_eq!(check_wide::<u64>(shape, seed..seed.saturating_add(8), 1), simd_levels());
        prop_assert_eq!(check_wide::<u128>(wider, seed..seed.saturating_add(8), 1), simd_levels());
    }
}

//! Board makers shared by the property tests.

/// `cells` (row-major, `rows` x `cols`) made symmetric under every symmetry of its shape: each
/// cell takes the value of the first cell (row-major) of its orbit, so that the search can
/// count one mass a position instead of 8 lanes.
pub fn symmetric(rows: usize, cols: usize, cells: &[u8]) -> Vec<u8> {
    let images = |r: usize, c: usize| -> Vec<(usize, usize)> {
        let (rr, cc) = (rows - 1 - r, cols - 1 - c);
        let mut v = vec![(r, c), (rr, c), (r, cc), (rr, cc)];
        if rows == cols {
            v.extend([(c, r), (cc, r), (c, rr), (cc, rr)]);
        }
        v
    };
    let mut out = cells.to_vec();
    for r in 0..rows {
        for c in 0..cols {
            let first = images(r, c).into_iter().map(|(a, b)| a * cols + b).min().unwrap();
            out[r * cols + c] = cells[first];
        }
    }
    out
}

/// A random board from `seed`: a die (1..=6) in about one cell of `one_in`.
pub fn random(rows: usize, cols: usize, seed: u64, one_in: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..rows * cols)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(one_in) {
                (x % 6 + 1) as u8
            } else {
                0
            }
        })
        .collect()
}

/// `cells` (a square board, `side` x `side`) made symmetric under the group that the
/// symmetries `gens` generate (numbered: 0 flips the rows, 1 the columns, 2 turns half a
/// turn, 3 transposes, 4 transposes across the other diagonal, 5 and 6 turn a quarter turn
/// either way): each cell takes the value of the first cell (row-major) of its orbit.
// Not every test that includes this file uses it.
#[allow(dead_code)]
pub fn symmetric_under(side: usize, cells: &[u8], gens: &[usize]) -> Vec<u8> {
    let last = side - 1;
    let map = |g: usize, (r, c): (usize, usize)| match g {
        0 => (last - r, c),
        1 => (r, last - c),
        2 => (last - r, last - c),
        3 => (c, r),
        4 => (last - c, last - r),
        5 => (c, last - r),
        _ => (last - c, r),
    };
    let mut out = cells.to_vec();
    for r in 0..side {
        for c in 0..side {
            // The orbit of (r, c): every cell the generators reach from it.
            let mut orbit = vec![(r, c)];
            let mut i = 0;
            while i < orbit.len() {
                for &g in gens {
                    let next = map(g, orbit[i]);
                    if !orbit.contains(&next) {
                        orbit.push(next);
                    }
                }
                i += 1;
            }
            let first = orbit.iter().map(|&(a, b)| a * side + b).min().unwrap();
            out[r * side + c] = cells[first];
        }
    }
    out
}

/// The board of `rows` x `cols` with `cells`.
pub fn board(rows: usize, cols: usize, cells: &[u8]) -> solver::Board {
    solver::Board::new(solver::Shape::new(rows, cols).unwrap(), cells.to_vec()).unwrap()
}

/// Random boards of 1 to `max_side` rows and columns, mostly empty cells so that games last:
/// `(rows, cols, cells)`.
pub fn strategy(max_side: usize) -> impl proptest::strategy::Strategy<Value = (usize, usize, Vec<u8>)> {
    use proptest::prelude::*;
    (1..=max_side, 1..=max_side).prop_flat_map(|(r, c)| {
        let cell = prop_oneof![4 => Just(0u8), 1 => 1u8..=6];
        (Just(r), Just(c), proptest::collection::vec(cell, r * c))
    })
}

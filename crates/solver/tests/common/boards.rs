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

//! Shape-dependent tables: neighbours, symmetries and hash weights of an `R x C` board.
//!
//! Cells are numbered row by row (`cell = row * cols + col`). Every builder is a `const fn`:
//! fixed shapes get them at compile time ([`GEOMETRY_3X3`]), other shapes call the same
//! functions once at start-up.

/// The largest number of cells a board may have.
pub const MAX_CELLS: usize = 64;

/// The largest number of symmetries (the dihedral group of the square).
pub const MAX_SYMMETRIES: usize = 8;

/// Marks an absent neighbour in [`Geometry::neighbours`].
pub const NO_CELL: u8 = u8::MAX;

/// Where symmetry `g` sends the cell at (`row`, `col`) of a `rows x cols` board.
///
/// The symmetries are numbered by three bits: bit 2 transposes (only on square boards), then
/// bit 1 mirrors the rows (top to bottom) and bit 0 mirrors the columns (left to right).
/// Symmetries `0..4` exist on every board, `4..8` only on square ones.
pub const fn map_cell(g: usize, rows: usize, cols: usize, row: usize, col: usize) -> (usize, usize) {
    let (mut r, mut c) = if g & 4 != 0 { (col, row) } else { (row, col) };
    // After a transpose the board is cols x rows; square boards only, so the same.
    if g & 2 != 0 {
        r = rows - 1 - r;
    }
    if g & 1 != 0 {
        c = cols - 1 - c;
    }
    (r, c)
}

/// Neighbours, symmetries and hash weights of one board shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Number of rows.
    pub rows: u8,
    /// Number of columns.
    pub cols: u8,
    /// `rows * cols`.
    pub cells: u8,
    /// Up to four neighbours per cell, in the order up, left, right, down; absent ones are
    /// [`NO_CELL`] (they read as an empty neighbour in a pattern).
    pub neighbours: [[u8; 4]; MAX_CELLS],
    /// Number of symmetries: 8 on square boards, 4 on the others.
    pub symmetries: u8,
    /// `sym[g][cell]`: the cell that `cell` moves to under symmetry `g`.
    pub sym: [[u8; MAX_CELLS]; MAX_SYMMETRIES],
    /// `compose[t][h]`: the index of `h ∘ t` (apply `t`, then `h`); identity beyond `symmetries`.
    pub compose: [[u8; MAX_SYMMETRIES]; MAX_SYMMETRIES],
    /// Weight of each cell in the base-10 hash: `10^(cells-1-cell)`, wrapping modulo 2^32
    /// (exact modulo 2^30, which is all the answer keeps).
    pub weight: [u32; MAX_CELLS],
}

impl Geometry {
    /// Builds the tables of a `rows x cols` board.
    ///
    /// # Panics
    /// If a side is zero or the board has more than [`MAX_CELLS`] cells (at compile time for a
    /// `const`/`static`).
    pub const fn new(rows: usize, cols: usize) -> Geometry {
        assert!(rows >= 1 && cols >= 1 && rows * cols <= MAX_CELLS, "unsupported board shape");
        let cells = rows * cols;
        let mut g = Geometry {
            rows: rows as u8,
            cols: cols as u8,
            cells: cells as u8,
            neighbours: [[NO_CELL; 4]; MAX_CELLS],
            symmetries: if rows == cols { 8 } else { 4 },
            sym: [[0; MAX_CELLS]; MAX_SYMMETRIES],
            compose: [[0; MAX_SYMMETRIES]; MAX_SYMMETRIES],
            weight: [0; MAX_CELLS],
        };
        let mut i = 0;
        while i < cells {
            let (r, c) = (i / cols, i % cols);
            if r > 0 {
                g.neighbours[i][0] = (i - cols) as u8;
            }
            if c > 0 {
                g.neighbours[i][1] = (i - 1) as u8;
            }
            if c + 1 < cols {
                g.neighbours[i][2] = (i + 1) as u8;
            }
            if r + 1 < rows {
                g.neighbours[i][3] = (i + cols) as u8;
            }
            let mut s = 0;
            while s < MAX_SYMMETRIES {
                if s < g.symmetries as usize {
                    let (rr, cc) = map_cell(s, rows, cols, r, c);
                    g.sym[s][i] = (rr * cols + cc) as u8;
                } else {
                    g.sym[s][i] = i as u8;
                }
                s += 1;
            }
            let mut w = 1u32;
            let mut k = i + 1;
            while k < cells {
                w = w.wrapping_mul(10);
                k += 1;
            }
            g.weight[i] = w;
            i += 1;
        }
        // Compose abstract group elements, not maps: on 1-row or 1-column boards two symmetries
        // can be the same map, yet each row of `compose` must stay a permutation. A board of the
        // same kind (square or not) where all symmetries differ gives the group law.
        let (pr, pc) = if rows == cols { (3, 3) } else { (2, 3) };
        let mut proxy = [[0u8; MAX_CELLS]; MAX_SYMMETRIES];
        let mut s = 0;
        while s < g.symmetries as usize {
            let mut i = 0;
            while i < pr * pc {
                let (rr, cc) = map_cell(s, pr, pc, i / pc, i % pc);
                proxy[s][i] = (rr * pc + cc) as u8;
                i += 1;
            }
            s += 1;
        }
        g.compose = compose_table(&proxy, g.symmetries as usize, pr * pc);
        g
    }
}

/// `compose[t][h]` = the index `g` with `sym[g] = sym[h] ∘ sym[t]` for `t, h < n`; the identity
/// map (`compose[t][h] = h`) for the unused lanes `h >= n`, so that permuting a count vector
/// keeps its unused lanes in place.
///
/// # Panics
/// If the `n` permutations are not closed under composition.
pub const fn compose_table(
    sym: &[[u8; MAX_CELLS]; MAX_SYMMETRIES],
    n: usize,
    cells: usize,
) -> [[u8; MAX_SYMMETRIES]; MAX_SYMMETRIES] {
    let mut out = [[0u8; MAX_SYMMETRIES]; MAX_SYMMETRIES];
    let mut t = 0;
    while t < MAX_SYMMETRIES {
        let mut h = 0;
        while h < MAX_SYMMETRIES {
            out[t][h] = h as u8;
            if t < n && h < n {
                let mut found = MAX_SYMMETRIES;
                let mut g = 0;
                while g < n {
                    let mut same = true;
                    let mut i = 0;
                    while i < cells {
                        same = same && sym[g][i] == sym[h][sym[t][i] as usize];
                        i += 1;
                    }
                    if same && found == MAX_SYMMETRIES {
                        found = g;
                    }
                    g += 1;
                }
                assert!(found < MAX_SYMMETRIES, "symmetries are not a group");
                out[t][h] = found as u8;
            }
            h += 1;
        }
        t += 1;
    }
    out
}

/// The contest's board.
pub static GEOMETRY_3X3: Geometry = Geometry::new(3, 3);

/// Slow twin of [`Geometry::new`]'s neighbours: scans every pair of cells.
pub fn neighbours_slow(rows: usize, cols: usize, cell: usize) -> Vec<usize> {
    (0..rows * cols)
        .filter(|&j| {
            let (r1, c1) = ((cell / cols) as isize, (cell % cols) as isize);
            let (r2, c2) = ((j / cols) as isize, (j % cols) as isize);
            (r1 - r2).abs() + (c1 - c2).abs() == 1
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes() -> impl Iterator<Item = (usize, usize)> {
        (1..=8).flat_map(|r| (1..=8).map(move |c| (r, c)))
    }

    #[test]
    fn neighbours_match_slow_twin_on_every_shape() {
        for (r, c) in shapes() {
            let g = Geometry::new(r, c);
            for i in 0..r * c {
                let mut got: Vec<usize> =
                    g.neighbours[i].iter().filter(|&&n| n != NO_CELL).map(|&n| n as usize).collect();
                got.sort();
                assert_eq!(got, neighbours_slow(r, c, i), "{r}x{c} cell {i}");
            }
        }
    }

    #[test]
    fn symmetries_preserve_adjacency_and_form_a_group() {
        for (r, c) in shapes() {
            let g = Geometry::new(r, c);
            let n = g.symmetries as usize;
            assert_eq!(n, if r == c { 8 } else { 4 });
            for s in 0..n {
                let mut seen = vec![false; r * c];
                for i in 0..r * c {
                    seen[g.sym[s][i] as usize] = true;
                    for j in neighbours_slow(r, c, i) {
                        let (a, b) = (g.sym[s][i] as usize, g.sym[s][j] as usize);
                        assert!(neighbours_slow(r, c, a).contains(&b));
                    }
                }
                assert!(seen.iter().all(|&b| b), "{r}x{c} symmetry {s} is not a bijection");
            }
            // compose is the group law (on 1-row or 1-column boards some symmetries coincide,
            // so compare maps, not indices), and each row is a permutation.
            for t in 0..8 {
                let mut row = g.compose[t].to_vec();
                row.sort();
                assert_eq!(row, (0..8).collect::<Vec<u8>>(), "{r}x{c} row {t}");
            }
            for t in 0..n {
                assert_eq!(g.sym[g.compose[t][0] as usize], g.sym[t]);
                assert_eq!(g.sym[g.compose[0][t] as usize], g.sym[t]);
                for h in 0..n {
                    let k = g.compose[t][h] as usize;
                    for i in 0..r * c {
                        assert_eq!(g.sym[k][i], g.sym[h][g.sym[t][i] as usize]);
                    }
                }
            }
            // Distinct maps on boards with more than one cell per orbit.
            if r > 1 && c > 1 {
                for a in 0..n {
                    for b in 0..a {
                        assert_ne!(g.sym[a][..r * c], g.sym[b][..r * c], "{r}x{c} {a} == {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn weights_are_powers_of_ten_mod_2_32() {
        let g = Geometry::new(3, 3);
        assert_eq!(g.weight[..9], [100_000_000, 10_000_000, 1_000_000, 100_000, 10_000, 1000, 100, 10, 1]);
        let g = Geometry::new(8, 8);
        let mut w = 1u64;
        for i in (0..64).rev() {
            assert_eq!(g.weight[i] as u64, w);
            w = w * 10 % (1 << 32);
        }
    }
}

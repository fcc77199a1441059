//! Tables of the 3x3 fast path, whose packing follows the board's symmetry.
//!
//! The eight outer cells are numbered as *positions* `0..8` clockwise around the ring from the
//! top-left corner (even positions are corners, odd ones edges); the centre is position 8.
//! The die at position `p` lives in bits `3p..3p+3` of a `u32`, so the ring fills bits `0..24`
//! and the centre bits `24..27`. Every symmetry fixes the centre and acts on the ring by
//! rotation and reflection:
//!
//! * symmetry `t < 4` rotates the ring by `2t` positions: a left rotation of bits `0..24` by
//!   `6t`;
//! * symmetry `t >= 4` first reflects the ring (`p -> (8 - p) mod 8`, the main diagonal), which
//!   is the reversal of the eight positions followed by a rotation by one position, then
//!   rotates by `2(t - 4)` positions.

use crate::captures::{neighbour, placements, NUM_PATTERNS, PATTERN_SUMS};
use crate::geometry::{compose_table, MAX_CELLS, MAX_SYMMETRIES};

/// Row-major cell of each position (the ring clockwise from the top-left corner, then the centre).
pub const RING_CELL: [u8; 9] = [0, 1, 2, 5, 8, 7, 6, 3, 4];

/// Bit offset of the centre.
pub const CENTRE_SHIFT: u32 = 24;

/// The 24 bits holding the ring.
pub const RING_MASK: u32 = (1 << 24) - 1;

/// Bit `3p` for every position `p`: the low bit of each cell.
pub const LOW_BITS: u32 = 0o111_111_111;

/// The position that position `p` moves to under symmetry `t`.
pub const fn map_position(t: usize, p: usize) -> usize {
    if p == 8 {
        return 8;
    }
    let q = if t >= 4 { (8 - p) % 8 } else { p };
    (q + 2 * (t & 3)) % 8
}

const fn build_sym() -> [[u8; MAX_CELLS]; MAX_SYMMETRIES] {
    let mut s = [[0u8; MAX_CELLS]; MAX_SYMMETRIES];
    let mut t = 0;
    while t < MAX_SYMMETRIES {
        let mut p = 0;
        while p < 9 {
            s[t][RING_CELL[p] as usize] = RING_CELL[map_position(t, p)];
            p += 1;
        }
        t += 1;
    }
    s
}

/// `SYM[t][cell]`: where symmetry `t` (ring numbering) sends a row-major cell.
pub static SYM: [[u8; MAX_CELLS]; MAX_SYMMETRIES] = build_sym();

/// `COMPOSE[t][h]`: the index of `h ∘ t` in the ring numbering. If a successor `s` is
/// canonicalised as `c = t(s)`, its count vector is the parent's permuted by `COMPOSE[t]`.
pub static COMPOSE: [[u8; MAX_SYMMETRIES]; MAX_SYMMETRIES] = compose_table(&build_sym(), 8, 9);

/// The neighbour positions of each position, in pattern order, which is ascending: a
/// pattern is then the neighbours' bits of the packed board gathered in order (`pext` with
/// [`PATTERN_MASK`]); `9` marks an absent one.
pub const NEIGHBOURS: [[u8; 4]; 9] = {
    let mut n = [[9u8; 4]; 9];
    let mut p = 0;
    while p < 8 {
        let (a, b) = ((p + 7) % 8, (p + 1) % 8);
        n[p][0] = if a < b { a } else { b } as u8;
        n[p][1] = if a < b { b } else { a } as u8;
        if p % 2 == 1 {
            n[p][2] = 8;
        }
        p += 1;
    }
    n[8] = [1, 3, 5, 7];
    n
};

/// Number of neighbours of each position.
pub const DEGREE: [u8; 9] = [2, 3, 2, 3, 2, 3, 2, 3, 4];

/// The bits of each position's neighbours in a packed board: [`pattern`]`(s, p)` is the
/// bits of `s` under `PATTERN_MASK[p]`, gathered to the low end in order.
pub const PATTERN_MASK: [u32; 9] = {
    let mut m = [0u32; 9];
    let mut p = 0;
    while p < 9 {
        let mut k = 0;
        while k < DEGREE[p] as usize {
            m[p] |= 7 << (3 * NEIGHBOURS[p][k] as usize);
            k += 1;
        }
        p += 1;
    }
    m
};

/// The value at position `p` of a packed board.
pub const fn value(s: u32, p: usize) -> u32 {
    (s >> (3 * p)) & 7
}

/// The neighbourhood pattern of position `p` (see [`crate::captures`]).
pub const fn pattern(s: u32, p: usize) -> usize {
    let mut x = 0;
    let mut k = 0;
    while k < DEGREE[p] as usize {
        x |= (value(s, NEIGHBOURS[p][k] as usize) as usize) << (3 * k);
        k += 1;
    }
    x
}

/// Base-10 weight of each position: `10^(8 - cell)`.
const fn weight(p: usize) -> u32 {
    let mut w = 1;
    let mut k = RING_CELL[p] as usize;
    while k < 8 {
        w *= 10;
        k += 1;
    }
    w
}

/// `WEIGHT_UNDER[g][p]`: weight of position `p` in the hash of the board transformed by `g`.
pub const WEIGHT_UNDER: [[u32; 9]; 8] = {
    let mut w = [[0u32; 9]; 8];
    let mut g = 0;
    while g < 8 {
        let mut p = 0;
        while p < 9 {
            w[g][p] = weight(map_position(g, p));
            p += 1;
        }
        g += 1;
    }
    w
};

const fn weight_under(g: usize, p: usize) -> u32 {
    WEIGHT_UNDER[g][p]
}

/// `HASH[k][x][g]`: the hash contribution, once the board is transformed by `g`, of positions
/// `3k..3k+3` holding the 9 bits `x`. The 8 hashes of a board are the sums over `k`.
pub static HASH: [[[u32; 8]; 512]; 3] = {
    let mut h = [[[0u32; 8]; 512]; 3];
    let mut k = 0;
    while k < 3 {
        let mut x = 0;
        while x < 512 {
            let mut g = 0;
            while g < 8 {
                let mut j = 0;
                while j < 3 {
                    let v = ((x >> (3 * j)) & 7) as u32;
                    h[k][x][g] += v * weight_under(g, 3 * k + j);
                    j += 1;
                }
                g += 1;
            }
            x += 1;
        }
        k += 1;
    }
    h
};

/// Slow twin of the hash tables: the hash of board `t(s)` read cell by cell.
pub const fn hash_slow(s: u32, t: usize) -> u32 {
    let mut cells = [0u32; 9];
    let mut p = 0;
    while p < 9 {
        cells[RING_CELL[map_position(t, p)] as usize] = value(s, p);
        p += 1;
    }
    let mut h = 0;
    let mut i = 0;
    while i < 9 {
        h = h * 10 + cells[i];
        i += 1;
    }
    h
}

/// Up to `N` moves of one (position, pattern) entry, as `u32` deltas to add (wrapping) to the
/// packed board. Unused entries repeat nothing meaningful and must be ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct Deltas<const N: usize> {
    /// The deltas; only the first `len` count.
    pub delta: [u32; N],
}

/// The delta of move `i` (in [`placements`] order) at position `p` with pattern `x`.
pub const fn move_delta(p: usize, x: usize, i: usize) -> u32 {
    move_delta_of(p, x, placements(x).list[i])
}

const fn move_delta_of(p: usize, x: usize, m: crate::captures::Placement) -> u32 {
    let mut d = (m.die as u32) << (3 * p);
    let mut k = 0;
    while k < 4 {
        if m.captured >> k & 1 == 1 {
            d = d.wrapping_sub((neighbour(x, k) as u32) << (3 * NEIGHBOURS[p][k] as usize));
        }
        k += 1;
    }
    d
}

const fn deltas<const N: usize>(p: usize, x: usize) -> Deltas<N> {
    let mut out = Deltas { delta: [0; N] };
    let list = placements(x);
    let n = list.len as usize;
    assert!(n <= N || x >= 1 << (3 * DEGREE[p] as usize));
    let mut i = 0;
    while i < n && i < N {
        out.delta[i] = move_delta_of(p, x, list.list[i]);
        i += 1;
    }
    out
}

/// Move deltas of the four corners (positions `0, 2, 4, 6`), indexed `[p / 2][pattern]`: a
/// corner has exactly one move.
pub static CORNER_MOVES: [[u32; 64]; 4] = {
    let mut t = [[0u32; 64]; 4];
    let mut c = 0;
    while c < 4 {
        let mut x = 0;
        while x < 64 {
            t[c][x] = move_delta(2 * c, x, 0);
            x += 1;
        }
        c += 1;
    }
    t
};

/// Move deltas of the four edges (positions `1, 3, 5, 7`), indexed `[p / 2][pattern]`: at most
/// 4 moves (three pairs and the triple).
pub static EDGE_MOVES: [[Deltas<4>; 512]; 4] = {
    let mut t = [[Deltas { delta: [0; 4] }; 512]; 4];
    let mut c = 0;
    while c < 4 {
        let mut x = 0;
        while x < 512 {
            t[c][x] = deltas::<4>(2 * c + 1, x);
            x += 1;
        }
        c += 1;
    }
    t
};

/// Move deltas of the centre, indexed by pattern: at most 11 moves, padded to 12.
#[allow(long_running_const_eval)]
pub static CENTRE_MOVES: [Deltas<12>; NUM_PATTERNS] = {
    let mut t = [Deltas { delta: [0; 12] }; NUM_PATTERNS];
    let mut x = 0;
    while x < NUM_PATTERNS {
        t[x] = deltas::<12>(8, x);
        x += 1;
    }
    t
};

/// `Σ over the moves of (p, x)` of the change of the 8 transformed hashes.
const fn last_entry(p: usize, x: usize) -> [u32; 8] {
    let s = PATTERN_SUMS[x];
    let mut out = [0u32; 8];
    let mut g = 0;
    while g < 8 {
        let mut v = s.dice.wrapping_mul(weight_under(g, p));
        let mut k = 0;
        while k < DEGREE[p] as usize {
            let w = weight_under(g, NEIGHBOURS[p][k] as usize);
            v = v.wrapping_sub(s.captured[k].wrapping_mul(w));
            k += 1;
        }
        out[g] = v;
        g += 1;
    }
    out
}

/// Last-depth tables, indexed like the move tables: for every (position, pattern), the sum over
/// its moves of the change of the 8 transformed hashes. A board's successors through position
/// `p` add up to `moves * hashes(board) + LAST[p][x]` without being generated.
#[derive(Debug)]
pub struct LastTables {
    /// Corners, `[p / 2][pattern]`.
    pub corner: [[[u32; 8]; 64]; 4],
    /// Edges, `[p / 2][pattern]`.
    pub edge: [[[u32; 8]; 512]; 4],
    /// The centre, `[pattern]`.
    pub centre: [[u32; 8]; NUM_PATTERNS],
}

/// The last-depth tables.
// About 200 k table entries of 8 lanes: long for the const evaluator, not endless.
#[allow(long_running_const_eval)]
pub static LAST: LastTables = {
    let mut t =
        LastTables { corner: [[[0; 8]; 64]; 4], edge: [[[0; 8]; 512]; 4], centre: [[0; 8]; NUM_PATTERNS] };
    let mut c = 0;
    while c < 4 {
        let mut x = 0;
        while x < 512 {
            if x < 64 {
                t.corner[c][x] = last_entry(2 * c, x);
            }
            t.edge[c][x] = last_entry(2 * c + 1, x);
            x += 1;
        }
        c += 1;
    }
    let mut x = 0;
    while x < NUM_PATTERNS {
        t.centre[x] = last_entry(8, x);
        x += 1;
    }
    t
};

/// Reverses the order of four 3-bit fields: `REVERSE12[a | b<<3 | c<<6 | d<<9] = d | c<<3 | b<<6 | a<<9`.
pub static REVERSE12: [u16; 4096] = {
    let mut t = [0u16; 4096];
    let mut x = 0;
    while x < 4096 {
        let mut k = 0;
        while k < 4 {
            t[x] |= (((x >> (3 * k)) & 7) << (3 * (3 - k))) as u16;
            k += 1;
        }
        x += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::captures::{placements_slow, PLACEMENTS};
    use crate::geometry::GEOMETRY_3X3;

    /// The bits of `s` under `mask`, gathered to the low end in order (BMI2's `pext`).
    fn gather(s: u32, mask: u32) -> u32 {
        (0..32).filter(|&b| mask >> b & 1 == 1).enumerate().fold(0, |x, (i, b)| x | (s >> b & 1) << i)
    }

    #[test]
    fn a_pattern_is_its_mask_gathered() {
        for i in 0..40_353_607u32 / 997 {
            let s = (0..9).fold(0, |s, p| s | (i * 997 / 7u32.pow(p) % 7) << (3 * p));
            for p in 0..9 {
                assert_eq!(pattern(s, p) as u32, gather(s, PATTERN_MASK[p]), "{s:#o} at {p}");
            }
        }
    }

    /// A few thousand boards covering every value at every position.
    fn boards() -> impl Iterator<Item = u32> {
        let mut x = 0x1234_5678u32;
        (0..20_000).map(move |_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let mut s = 0;
            for p in 0..9 {
                s |= ((x >> (3 * p)) % 7) << (3 * p);
            }
            s
        })
    }

    #[test]
    fn ring_symmetries_are_the_board_symmetries() {
        for t in 0..8 {
            assert!((0..8).any(|g| GEOMETRY_3X3.sym[g][..9] == SYM[t][..9]), "{t}");
            // Corners stay corners.
            for p in (0..8).step_by(2) {
                assert_eq!(map_position(t, p) % 2, 0);
            }
        }
        assert!(COMPOSE.iter().enumerate().all(|(t, row)| row[0] as usize == t));
    }

    #[test]
    fn neighbours_match_the_geometry() {
        for p in 0..9 {
            let mut got: Vec<u8> =
                NEIGHBOURS[p][..DEGREE[p] as usize].iter().map(|&q| RING_CELL[q as usize]).collect();
            got.sort();
            let mut want: Vec<u8> = GEOMETRY_3X3.neighbours[RING_CELL[p] as usize]
                .iter()
                .copied()
                .filter(|&n| n != crate::geometry::NO_CELL)
                .collect();
            want.sort();
            assert_eq!(got, want, "position {p}");
        }
    }

    #[test]
    fn hash_tables_match_slow_twin() {
        for s in boards() {
            for g in 0..8 {
                let fast: u32 = (0..3).map(|k| HASH[k][(s >> (9 * k) & 511) as usize][g]).sum();
                assert_eq!(fast, hash_slow(s, g));
            }
        }
    }

    /// Applies a move the slow way: cell by cell.
    fn apply_slow(s: u32, p: usize, captured: u8, die: u8) -> u32 {
        let mut cells: Vec<u32> = (0..9).map(|q| value(s, q)).collect();
        cells[p] = die as u32;
        for k in 0..4 {
            if captured >> k & 1 == 1 {
                cells[NEIGHBOURS[p][k] as usize] = 0;
            }
        }
        cells.iter().enumerate().map(|(q, &v)| v << (3 * q)).sum()
    }

    #[test]
    fn move_tables_match_slow_twin() {
        for s in boards() {
            for p in 0..9 {
                if value(s, p) != 0 {
                    continue;
                }
                let x = pattern(s, p);
                let want: Vec<u32> =
                    placements_slow(x).iter().map(|m| apply_slow(s, p, m.captured, m.die)).collect();
                let got: Vec<u32> = match p {
                    8 => CENTRE_MOVES[x].delta[..want.len()].to_vec(),
                    _ if p % 2 == 0 => vec![CORNER_MOVES[p / 2][x]],
                    _ => EDGE_MOVES[p / 2][x].delta[..want.len()].to_vec(),
                };
                assert_eq!(PLACEMENTS[x].len as usize, want.len());
                let got: Vec<u32> = got.iter().map(|&d| s.wrapping_add(d)).collect();
                assert_eq!(got, want, "board {s:o} position {p}");
            }
        }
    }

    #[test]
    fn last_tables_match_summed_successor_hashes() {
        for s in boards().take(3000) {
            for p in 0..9 {
                if value(s, p) != 0 {
                    continue;
                }
                let x = pattern(s, p);
                let entry = match p {
                    8 => LAST.centre[x],
                    _ if p % 2 == 0 => LAST.corner[p / 2][x],
                    _ => LAST.edge[p / 2][x],
                };
                for g in 0..8 {
                    let want = placements_slow(x).iter().fold(0u32, |acc, m| {
                        let t = apply_slow(s, p, m.captured, m.die);
                        acc.wrapping_add(hash_slow(t, g).wrapping_sub(hash_slow(s, g)))
                    });
                    assert_eq!(entry[g], want);
                }
            }
        }
    }

    #[test]
    fn reverse12_reverses() {
        for x in 0..4096usize {
            let r = REVERSE12[x] as usize;
            for k in 0..4 {
                assert_eq!((x >> (3 * k)) & 7, (r >> (3 * (3 - k))) & 7);
            }
        }
    }
}

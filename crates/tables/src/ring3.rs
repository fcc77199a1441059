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

use crate::captures::{neighbour, Placements, PATTERN_SUMS, PLACEMENTS};
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

/// The change to a packed board of move `m` at position `p` with pattern `x`: the die placed,
/// the captured neighbours' dice taken away.
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

/// Where one position's moves are: its pattern mask ([`PATTERN_MASK`]), and the index of its
/// pattern 0 in [`MOVE_START`] ([`ENTRY_BASE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct MovesAt {
    /// [`PATTERN_MASK`] of the position.
    pub mask: u32,
    /// Index in [`MOVE_START`] of the position's pattern 0.
    pub base: u32,
}

/// Index of each position's pattern 0 in the tables with one entry a (position, pattern),
/// [`MOVE_START`] and [`LAST`] (and, at 9, their length).
pub const ENTRY_BASE: [u32; 10] = {
    let mut b = [0u32; 10];
    let mut p = 0;
    while p < 9 {
        b[p + 1] = b[p] + (1 << (3 * DEGREE[p] as u32));
        p += 1;
    }
    b
};

/// Index of position `p` with pattern `x` in [`MOVE_START`] and [`LAST`].
pub const fn entry_at(p: usize, x: usize) -> usize {
    ENTRY_BASE[p] as usize + x
}

/// The move deltas, compact: position `p`'s lone move with no capture (the die 1 placed) at
/// index `p`, shared by every pattern without one, then the moves of each (position, pattern)
/// with a capture, in their order. With [`MOVE_START`], a sixth of the size of a table with
/// room for every pattern's moves (the centre's eleven for each of 4 096 patterns), so that
/// both stay in a core's nearest caches beside the frontier.
const MOVE_TABLES: ([u16; ENTRY_BASE[9] as usize], [u32; MOVE_LIST_LEN + 12]) = {
    let mut start = [0u16; ENTRY_BASE[9] as usize];
    let mut list = [0u32; MOVE_LIST_LEN + 12];
    let mut p = 0;
    while p < 9 {
        list[p] = 1 << (3 * p);
        p += 1;
    }
    let mut len = 9;
    p = 0;
    while p < 9 {
        let mut x = 0;
        while x < 1 << (3 * DEGREE[p] as usize) {
            let moves = &PLACEMENTS[x];
            let kept = listed_moves(moves);
            if kept == 0 {
                start[entry_at(p, x)] = p as u16;
            } else {
                start[entry_at(p, x)] = len as u16;
                let mut i = 0;
                while i < kept {
                    list[len] = move_delta_of(p, x, moves.list[i]);
                    len += 1;
                    i += 1;
                }
            }
            x += 1;
        }
        p += 1;
    }
    assert!(len == MOVE_LIST_LEN);
    (start, list)
};

/// How many of a pattern's `moves` ([`PLACEMENTS`]) it keeps in [`MOVE_LIST`] at each
/// position: all of them when it has a capture, none when it has not (its one move, the die 1
/// placed, is the position's shared entry).
const fn listed_moves(moves: &Placements) -> usize {
    if moves.list[0].captured != 0 {
        return moves.len as usize;
    }
    assert!(moves.len == 1 && moves.list[0].die == 1);
    0
}

/// How many deltas [`MOVE_LIST`] holds (below its padding): the 9 moves without capture and
/// the moves of every (position, pattern) with a capture.
const MOVE_LIST_LEN: usize = {
    let mut len = 9;
    let mut p = 0;
    while p < 9 {
        let mut x = 0;
        while x < 1 << (3 * DEGREE[p] as usize) {
            len += listed_moves(&PLACEMENTS[x]);
            x += 1;
        }
        p += 1;
    }
    assert!(len + 12 <= u16::MAX as usize);
    len
};

/// Where the moves of each (position `p`, pattern `x`) start in [`MOVE_LIST`], at
/// [`entry_at`]`(p, x)`.
pub static MOVE_START: [u16; ENTRY_BASE[9] as usize] = MOVE_TABLES.0;

/// The move deltas (see `MOVE_TABLES`): position `p` with pattern `x` has `MOVE_COUNT[x]`
/// moves (in [`PLACEMENTS`] order), each a `u32` to add (wrapping) to the packed board, from
/// index `MOVE_START[entry_at(p, x)]` ([`moves_of`]); a corner has exactly one. Twelve deltas
/// can be read from any such index (the table is padded at the end): a generator may read and
/// store twelve whatever the position, and keep the first `MOVE_COUNT[x]`.
pub static MOVE_LIST: [u32; MOVE_LIST_LEN + 12] = MOVE_TABLES.1;

/// The moves of position `p` with pattern `x`, and more: the first `MOVE_COUNT[x]` of them
/// are its moves, and at least twelve can be read.
#[inline(always)]
pub fn moves_of(p: usize, x: usize) -> &'static [u32] {
    &MOVE_LIST[MOVE_START[entry_at(p, x)] as usize..]
}

/// [`MovesAt`] of each position (entries 9 to 15 are unused: an index masked to 4 bits
/// needs no bounds check).
pub static MOVES_AT: [MovesAt; 16] = {
    let mut t = [MovesAt { mask: 0, base: 0 }; 16];
    let mut p = 0;
    while p < 9 {
        t[p] = MovesAt { mask: PATTERN_MASK[p], base: ENTRY_BASE[p] };
        p += 1;
    }
    t
};

/// The positions of the set bits of a 9-bit mask (bit `p`: position `p`), in ascending order,
/// padded to 16 bytes: a board's empty positions, from the low bits of its empty cells
/// gathered.
pub static SET_POSITIONS: [[u8; 16]; 512] = {
    let mut t = [[0u8; 16]; 512];
    let mut e = 0;
    while e < 512 {
        let (mut p, mut k) = (0, 0);
        while p < 9 {
            if e >> p & 1 == 1 {
                t[e][k] = p as u8;
                k += 1;
            }
            p += 1;
        }
        e += 1;
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

/// The last-depth table: for every (position `p`, pattern `x`), at [`entry_at`]`(p, x)`, the
/// sum over its moves of the change of the 8 transformed hashes. A board's successors
/// through position `p` add up to `moves * hashes(board) + LAST[entry_at(p, x)]` without
/// being generated.
pub static LAST: [[u32; 8]; ENTRY_BASE[9] as usize] = {
    let mut t = [[0u32; 8]; ENTRY_BASE[9] as usize];
    let mut p = 0;
    while p < 9 {
        let mut x = 0;
        while x < 1 << (3 * DEGREE[p] as usize) {
            t[entry_at(p, x)] = last_entry(p, x);
            x += 1;
        }
        p += 1;
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
    use crate::captures::placements_slow;
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
                let got = moves_of(p, x)[..want.len()].to_vec();
                if p.is_multiple_of(2) && p < 8 {
                    assert_eq!(want.len(), 1, "a corner has one move");
                }
                assert_eq!(PLACEMENTS[x].len as usize, want.len());
                let got: Vec<u32> = got.iter().map(|&d| s.wrapping_add(d)).collect();
                assert_eq!(got, want, "board {s:o} position {p}");
            }
        }
    }

    /// Every (position, pattern) of dice, not only those of random boards: the board with
    /// those neighbours around the empty position, and no other die.
    #[test]
    fn compact_move_table_holds_every_pattern() {
        for p in 0..9 {
            for x in 0..1usize << (3 * DEGREE[p]) {
                if (0..DEGREE[p] as usize).any(|k| x >> (3 * k) & 7 == 7) {
                    continue;
                }
                let s = (0..DEGREE[p] as usize)
                    .fold(0u32, |s, k| s | ((x >> (3 * k) & 7) as u32) << (3 * NEIGHBOURS[p][k] as usize));
                assert_eq!(pattern(s, p), x);
                let want: Vec<u32> =
                    placements_slow(x).iter().map(|m| apply_slow(s, p, m.captured, m.die)).collect();
                let got: Vec<u32> = moves_of(p, x)[..want.len()].iter().map(|&d| s.wrapping_add(d)).collect();
                assert_eq!(got, want, "position {p} pattern {x:#o}");
                assert!(moves_of(p, x).len() >= 12);
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
                let entry = LAST[entry_at(p, x)];
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

//! The contest's 3x3 board on its fast path: ring packing, table-driven moves.

use tables::captures::MOVE_COUNT;
use tables::ring3::{
    value, CENTRE_MOVES, CORNER_MOVES, EDGE_MOVES, HASH, LAST, LOW_BITS, RING_CELL, RING_MASK,
};

use crate::canon::{reverse_ring, Canon3, ROTATE};
use crate::rules::{Counts, Level, Rules};
use crate::shape::Shape;

/// The rules of the 3x3 board in the ring packing of [`tables::ring3`], canonicalised by the
/// backend `B`.
#[derive(Clone, Copy, Debug)]
pub struct Ring3<B: Canon3> {
    backend: B,
}

impl<B: Canon3> Ring3<B> {
    /// The rules with `backend`.
    pub fn new(backend: B) -> Ring3<B> {
        Ring3 { backend }
    }

    /// The neighbourhood pattern of position `p` (see [`tables::ring3::pattern`]).
    #[inline(always)]
    fn pattern(&self, s: u32, p: usize) -> usize {
        self.backend.pattern(s, p)
    }

    /// [`Ring3::pattern`], by bit gather when `GATHER` (the backend's choice, asked once a
    /// position: see [`Canon3::gathers`]).
    #[inline(always)]
    fn pattern_by<const GATHER: bool>(&self, s: u32, p: usize) -> usize {
        if GATHER {
            self.backend.gathered_pattern(s, p)
        } else {
            tables::ring3::pattern(s, p)
        }
    }

    /// [`Rules::successors_into`] with the patterns taken one way.
    #[inline(always)]
    fn successors_by<const GATHER: bool>(&self, s: u32, out: &mut [u32]) -> usize {
        let out = &mut out[..Self::BUFFER];
        let empty = |p: usize| (value(s, p) == 0) as usize;
        let mut m = 0;
        for c in 0..4 {
            let p = 2 * c;
            out[m] = s.wrapping_add(CORNER_MOVES[c][self.pattern_by::<GATHER>(s, p)]);
            m += empty(p);
        }
        for c in 0..4 {
            let p = 2 * c + 1;
            let x = self.pattern_by::<GATHER>(s, p);
            let d = &EDGE_MOVES[c][x].delta;
            let w: &mut [u32; 4] = (&mut out[m..m + 4]).try_into().expect("4 lanes");
            *w = std::array::from_fn(|i| s.wrapping_add(d[i]));
            m += MOVE_COUNT[x] as usize * empty(p);
        }
        let x = self.pattern_by::<GATHER>(s, 8);
        let d = &CENTRE_MOVES[x].delta;
        let w: &mut [u32; 12] = (&mut out[m..m + 12]).try_into().expect("12 lanes");
        *w = std::array::from_fn(|i| s.wrapping_add(d[i]));
        m + MOVE_COUNT[x] as usize * empty(8)
    }

    /// [`Rules::successor_hashes`] with the patterns taken one way.
    #[inline(always)]
    fn successor_hashes_by<const GATHER: bool>(&self, s: u32) -> Counts {
        let mut moves = 0u32;
        let mut sum = [0u32; 8];
        let mut add = |x: usize, entry: &[u32; 8]| {
            moves += MOVE_COUNT[x] as u32;
            for g in 0..8 {
                sum[g] = sum[g].wrapping_add(entry[g]);
            }
        };
        for c in 0..4 {
            if value(s, 2 * c) == 0 {
                let x = self.pattern_by::<GATHER>(s, 2 * c);
                add(x, &LAST.corner[c][x]);
            }
            if value(s, 2 * c + 1) == 0 {
                let x = self.pattern_by::<GATHER>(s, 2 * c + 1);
                add(x, &LAST.edge[c][x]);
            }
        }
        if value(s, 8) == 0 {
            let x = self.pattern_by::<GATHER>(s, 8);
            add(x, &LAST.centre[x]);
        }
        let h = self.hashes(s);
        std::array::from_fn(|g| sum[g].wrapping_add(moves.wrapping_mul(h[g])))
    }
}

impl<B: Canon3> Rules for Ring3<B> {
    type Key = u32;

    fn shape(&self) -> Shape {
        Shape::SQUARE3
    }

    fn level(&self) -> Level {
        B::LEVEL
    }

    fn pack(&self, cells: &[u8]) -> u32 {
        (0..9).fold(0, |s, p| s | (cells[RING_CELL[p] as usize] as u32) << (3 * p))
    }

    fn unpack(&self, key: u32) -> Vec<u8> {
        let mut cells = vec![0u8; 9];
        for p in 0..9 {
            cells[RING_CELL[p] as usize] = value(key, p) as u8;
        }
        cells
    }

    #[inline(always)]
    fn is_full(&self, s: u32) -> bool {
        (s | s >> 1 | s >> 2) & LOW_BITS == LOW_BITS
    }

    #[inline(always)]
    fn may_fill(&self, s: u32) -> bool {
        // One empty cell at most: the empty cells' low bits, less the lowest, are none.
        let empty = !(s | s >> 1 | s >> 2) & LOW_BITS;
        empty & empty.wrapping_sub(1) == 0
    }

    #[inline(always)]
    fn canonical(&self, s: u32) -> (u32, u8) {
        self.backend.canonical(s)
    }

    fn images(&self, s: u32) -> [u32; 8] {
        let ring = s & RING_MASK;
        let rev = reverse_ring(ring);
        std::array::from_fn(|t| {
            let (base, r) = (if t < 4 { ring } else { rev }, ROTATE[t]);
            (s & !RING_MASK) | ((base << r | base >> (24 - r)) & RING_MASK)
        })
    }

    #[inline(always)]
    fn permute(&self, counts: &Counts, t: u8) -> Counts {
        self.backend.permute(counts, t)
    }

    #[inline(always)]
    fn successors(&self, s: u32, mut f: impl FnMut(u32)) {
        for c in 0..4 {
            let p = 2 * c;
            if value(s, p) == 0 {
                f(s.wrapping_add(CORNER_MOVES[c][self.pattern(s, p)]));
            }
        }
        for c in 0..4 {
            let p = 2 * c + 1;
            if value(s, p) == 0 {
                let x = self.pattern(s, p);
                let d = &EDGE_MOVES[c][x].delta;
                for &d in &d[..MOVE_COUNT[x] as usize] {
                    f(s.wrapping_add(d));
                }
            }
        }
        if value(s, 8) == 0 {
            let x = self.pattern(s, 8);
            let d = &CENTRE_MOVES[x].delta;
            for &d in &d[..MOVE_COUNT[x] as usize] {
                f(s.wrapping_add(d));
            }
        }
    }

    /// 31 moves at most (4 corners, 4 edges of 4, the centre's 11), plus the slack of the
    /// 12-wide store of the centre's moves.
    const BUFFER: usize = 48;

    /// Nine table entries at most (`LAST`): cheaper than a canonicalisation and an insertion.
    const CHEAP_SUCCESSOR_HASHES: bool = true;

    /// Branch-free: every position's moves are stored, but the write position only advances
    /// over the empty ones (later stores overwrite the rest). Whether a cell is empty is as
    /// random as the boards, so branches on it would be mispredicted often.
    #[inline(always)]
    fn successors_into(&self, s: u32, out: &mut [u32]) -> usize {
        if self.backend.gathers() {
            self.successors_by::<true>(s, out)
        } else {
            self.successors_by::<false>(s, out)
        }
    }

    #[inline(always)]
    fn hashes(&self, s: u32) -> Counts {
        let (a, b, c) = (
            &HASH[0][(s & 511) as usize],
            &HASH[1][(s >> 9 & 511) as usize],
            &HASH[2][(s >> 18 & 511) as usize],
        );
        std::array::from_fn(|g| a[g].wrapping_add(b[g]).wrapping_add(c[g]))
    }

    #[inline(always)]
    fn successor_hashes(&self, s: u32) -> Counts {
        if self.backend.gathers() {
            self.successor_hashes_by::<true>(s)
        } else {
            self.successor_hashes_by::<false>(s)
        }
    }
}

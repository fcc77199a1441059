//! The contest's 3x3 board on its fast path: ring packing, table-driven moves.

use tables::captures::{MOVE_COUNT, NUM_PATTERNS};
use tables::ring3::{
    entry_at, moves_of, value, HASH, LAST, LOW_BITS, MOVES_AT, MOVE_LIST, MOVE_START, RING_CELL, RING_MASK,
    SET_POSITIONS,
};

use crate::canon::{reverse_ring, Canon3, ROTATE};
use crate::counts::{lane_total, Counts};
use crate::level::Isa;
use crate::rules::{successor_hashes_one_by_one, successors_one_by_one, Rules};
use crate::shape::Shape;

/// Positions [`Rules::successors_of_many`] takes at once.
const MANY: usize = 16;

/// Room for the empty positions of [`MANY`] boards, and the slack of the last 16-byte store.
const ITEMS: usize = 9 * MANY + 16;

/// The empty positions of several boards ([`Ring3::empty_cells`]): item `j < items` is
/// position `cell[j]` of board `owner[j]`.
struct EmptyCells {
    cell: [u8; ITEMS],
    owner: [u8; ITEMS],
    items: usize,
}

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

    /// [`Rules::successors_into`] with the patterns taken one way. Branch-free: every
    /// position's moves are stored, but the write position only advances over the empty ones
    /// (later stores overwrite the rest). Whether a cell is empty is as random as the boards,
    /// so branches on it would be mispredicted often.
    #[inline(always)]
    fn successors_by<const GATHER: bool>(&self, s: u32, out: &mut [u32]) -> usize {
        let out = &mut out[..Self::BUFFER];
        let empty = |p: usize| (value(s, p) == 0) as usize;
        let mut m = 0;
        for c in 0..4 {
            let p = 2 * c;
            out[m] = s.wrapping_add(moves_of(p, self.pattern_by::<GATHER>(s, p))[0]);
            m += empty(p);
            let p = 2 * c + 1;
            let x = self.pattern_by::<GATHER>(s, p);
            let d: &[u32; 4] = moves_of(p, x)[..4].try_into().expect("4 deltas");
            let w: &mut [u32; 4] = (&mut out[m..m + 4]).try_into().expect("4 lanes");
            *w = crate::counts::lanes(|i| s.wrapping_add(d[i]));
            m += MOVE_COUNT[x] as usize * empty(p);
        }
        let x = self.pattern_by::<GATHER>(s, 8);
        let d: &[u32; 12] = moves_of(8, x)[..12].try_into().expect("12 deltas");
        let w: &mut [u32; 12] = (&mut out[m..m + 12]).try_into().expect("12 lanes");
        *w = crate::counts::lanes(|i| s.wrapping_add(d[i]));
        m + MOVE_COUNT[x] as usize * empty(8)
    }

    /// The empty positions of up to [`MANY`] boards, listed with no branch on a board: per
    /// board, its empty cells' low bits gathered (9 bits) pick its list of positions
    /// ([`SET_POSITIONS`]), stored whole (16 bytes), and the list advances by their count.
    /// (Filled in place: returned by value, the lists were copied, 2% more instructions.)
    #[inline(always)]
    fn empty_cells(&self, keys: &[u32], e: &mut EmptyCells) {
        // The count lives in a local while the list is made: kept in the struct, it would go
        // through memory for each board (a store, then a load that waits for it).
        let mut items = 0;
        for (o, &k) in keys.iter().enumerate() {
            let empty = self.backend.gather(!(k | k >> 1 | k >> 2), LOW_BITS);
            let list: &mut [u8; 16] = (&mut e.cell[items..items + 16]).try_into().expect("16 items");
            *list = SET_POSITIONS[empty & 511];
            let own: &mut [u8; 16] = (&mut e.owner[items..items + 16]).try_into().expect("16 items");
            *own = [o as u8; 16];
            items += empty.count_ones() as usize;
        }
        e.items = items;
    }

    /// [`Rules::successors_of_many`] for backends that gather a pattern in one instruction,
    /// with no branch that depends on a board: first the empty positions of every board are
    /// listed (a table lookup by the board's empty cells, a 16-byte store, the list advancing
    /// by their number), then each listed position's moves are stored, twelve deltas read from
    /// [`MOVE_LIST`] whatever the position (the write position advancing by its move count). A
    /// loop over each board's empty cells would end at a different count each time.
    #[inline(always)]
    fn successors_of_many_gathered(
        &self,
        keys: &[u32],
        tags: &[u32],
        out: &mut [u32],
        from: &mut [u32],
    ) -> usize {
        assert!(keys.len() <= Self::MANY && tags.len() == keys.len());
        let out = &mut out[..Self::MANY * Self::BUFFER];
        let from = &mut from[..Self::MANY * Self::BUFFER];
        let mut e = EmptyCells { cell: [0; ITEMS], owner: [0; ITEMS], items: 0 };
        self.empty_cells(keys, &mut e);
        let (cell, owner) = (&e.cell[..e.items], &e.owner[..e.items]);
        let mut m = 0;
        for (&p, &o) in cell.iter().zip(owner) {
            let (s, tag) = (keys[o as usize], tags[o as usize]);
            let at = &MOVES_AT[p as usize & 15];
            let x = self.backend.gather(s, at.mask) & (NUM_PATTERNS - 1);
            let start = MOVE_START[at.base as usize + x] as usize;
            let d: &[u32; 12] = MOVE_LIST[start..start + 12].try_into().expect("12 deltas");
            let w: &mut [u32; 12] = (&mut out[m..m + 12]).try_into().expect("12 lanes");
            *w = crate::counts::lanes(|i| s.wrapping_add(d[i]));
            let f: &mut [u32; 12] = (&mut from[m..m + 12]).try_into().expect("12 lanes");
            *f = [tag; 12];
            m += MOVE_COUNT[x] as usize;
        }
        m
    }

    /// [`Rules::successor_hashes_of_many`] for backends that gather a pattern in one
    /// instruction, with no branch that depends on a board: the empty positions of every
    /// board are listed first (as in `successors_of_many_gathered`), then each listed
    /// position's table entry is added to its board's sum. A branch a cell on whether it is
    /// empty was mispredicted often; adding every cell's entry, masked, read nine entries a
    /// board from a 200 KiB table.
    #[inline(always)]
    fn successor_hashes_of_many_gathered(&self, keys: &[u32], out: &mut [Counts]) {
        assert!(keys.len() <= Self::MANY);
        let out = &mut out[..keys.len()];
        let mut e = EmptyCells { cell: [0; ITEMS], owner: [0; ITEMS], items: 0 };
        self.empty_cells(keys, &mut e);
        let (cell, owner) = (&e.cell[..e.items], &e.owner[..e.items]);
        let mut moves = [0u32; MANY];
        out.fill([0; 8]);
        for (&p, &o) in cell.iter().zip(owner) {
            let o = o as usize & (MANY - 1);
            let x = self.backend.gather(keys[o], MOVES_AT[p as usize & 15].mask) & (NUM_PATTERNS - 1);
            let entry = &LAST[entry_at(p as usize, x)];
            moves[o] += MOVE_COUNT[x] as u32;
            let sum = &mut out[o];
            for g in 0..8 {
                sum[g] = sum[g].wrapping_add(entry[g]);
            }
        }
        for ((sum, &k), &n) in out.iter_mut().zip(keys).zip(&moves) {
            let h = self.hashes(k);
            for g in 0..8 {
                sum[g] = sum[g].wrapping_add(n.wrapping_mul(h[g]));
            }
        }
    }

    /// [`Rules::successor_hashes`] with the patterns taken one way. (Branch-free, every
    /// position's entry added and masked where the cell holds a die, measured no faster on
    /// the public cases, with 5% more instructions.)
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
        for p in 0..9 {
            if value(s, p) == 0 {
                let x = self.pattern_by::<GATHER>(s, p);
                add(x, &LAST[entry_at(p, x)]);
            }
        }
        let h = self.hashes(s);
        crate::counts::lanes(|g| sum[g].wrapping_add(moves.wrapping_mul(h[g])))
    }
}

impl<B: Canon3> Rules for Ring3<B> {
    type Key = u32;
    const SIMD_ONLY: bool = B::SIMD_ONLY;

    fn shape(&self) -> Shape {
        Shape::SQUARE3
    }

    fn isa(&self) -> Isa {
        self.backend.isa()
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

    #[inline(always)]
    fn canonical_many(&self, keys: &[u32], canonical: &mut [u32], symmetry: &mut [u8]) {
        self.backend.canonical_many(keys, canonical, symmetry)
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
        for p in 0..9 {
            if value(s, p) == 0 {
                let x = self.pattern(s, p);
                for &d in &moves_of(p, x)[..MOVE_COUNT[x] as usize] {
                    f(s.wrapping_add(d));
                }
            }
        }
    }

    /// 31 moves at most (4 corners, 4 edges of 4, the centre's 11), plus the slack of the
    /// 12-wide store of the centre's moves.
    const BUFFER: usize = 48;

    const MANY: usize = MANY;

    /// Nine table entries at most (`LAST`): cheaper than a canonicalisation and an insertion.
    const CHEAP_SUCCESSOR_HASHES: bool = true;

    /// Branch-free (see `successors_by`).
    #[inline(always)]
    fn successors_into(&self, s: u32, out: &mut [u32]) -> usize {
        if self.backend.gathers() {
            self.successors_by::<true>(s, out)
        } else {
            self.successors_by::<false>(s, out)
        }
    }

    #[inline(always)]
    fn successors_of_many(&self, keys: &[u32], tags: &[u32], out: &mut [u32], from: &mut [u32]) -> usize {
        if self.backend.gathers() {
            self.successors_of_many_gathered(keys, tags, out, from)
        } else {
            successors_one_by_one(self, keys, tags, out, from)
        }
    }

    #[inline(always)]
    fn successor_hashes_of_many(&self, keys: &[u32], out: &mut [Counts]) {
        if self.backend.gathers() {
            self.successor_hashes_of_many_gathered(keys, out)
        } else {
            successor_hashes_one_by_one(self, keys, out)
        }
    }

    #[inline(always)]
    fn successor_hash_totals_of_many(&self, keys: &[u32], out: &mut [u64]) {
        let mut lanes = [[0u32; 8]; MANY];
        self.successor_hashes_of_many(keys, &mut lanes);
        for (o, h) in out[..keys.len()].iter_mut().zip(&lanes) {
            *o = lane_total(h);
        }
    }

    #[inline(always)]
    fn hashes(&self, s: u32) -> Counts {
        let (a, b, c) = (
            &HASH[0][(s & 511) as usize],
            &HASH[1][(s >> 9 & 511) as usize],
            &HASH[2][(s >> 18 & 511) as usize],
        );
        crate::counts::lanes(|g| a[g].wrapping_add(b[g]).wrapping_add(c[g]))
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

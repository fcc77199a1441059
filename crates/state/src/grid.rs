//! Boards of any shape: row-major packing, tables built once per shape at start-up.

use tables::captures::{NUM_PATTERNS, PATTERN_SUMS, PLACEMENTS};
use tables::geometry::{Geometry, MAX_CELLS, NO_CELL};

use crate::canon::{Portable, Wide};
use crate::counts::{lane_total, Counts};
use crate::key::{pack, unpack, PackedKey};
use crate::level::{Isa, Level};
use crate::rules::{successor_totals_one_by_one, Rules};
use crate::shape::Shape;

/// The rules of one board shape over a packed key `K` (cell `i` in bits `3i..3i+3`).
///
/// Canonicalisation reads the key a byte at a time: symmetries only permute bits, so the image
/// of a key is the OR of the images of its bytes, looked up in a per-shape table of 8 lanes.
/// The base-10 hash is linear in the bits, so the 8 transformed hashes come the same way.
///
/// The smallest image is found by a backend chosen once, by the level the grid is built with:
/// with [`Level::Avx2`] or [`Level::Avx512`], `u64` keys (4x4 and every shape of 11 to 21 cells)
/// and `u128` keys (5x5 and every shape of 22 to 42 cells) take that level's kernel; every
/// other case takes the portable code, their twin.
#[derive(Clone, Debug)]
pub struct Grid<K: PackedKey> {
    shape: Shape,
    isa: Isa,
    /// The canonicalisation backend (follows `isa`).
    wide: Wide,
    cells: usize,
    symmetries: usize,
    compose: [[u8; 8]; 8],
    /// Present neighbours of each cell, in pattern order, and how many.
    neighbours: [[u8; 4]; MAX_CELLS],
    degree: [u8; MAX_CELLS],
    /// `weight[i][g]`: weight of cell `i` in the hash of the board transformed by `g`.
    weight: [[u32; 8]; MAX_CELLS],
    /// Bit `3i` for every cell `i`.
    low: K,
    bytes: usize,
    /// `images[256k + b][g]`: `g` applied to the key holding only byte `k = b`.
    images: Vec<[K; 8]>,
    /// `byte_hashes[256k + b][g]`: hash of `g` applied to that key.
    byte_hashes: Vec<Counts>,
    /// `byte_totals[256k + b]`: the sum over the symmetries of `byte_hashes[256k + b]`,
    /// exact (not wrapped in 32 bits).
    byte_totals: Vec<u64>,
    /// `side_mask[i]`: the bits of a [`Grid::side_pattern`] window that hold neighbours of
    /// cell `i` (the window's left and right cells are the rows' ends for cells at the ends).
    side_mask: [u16; MAX_CELLS],
    /// `side_cell[i][k]`: the bits of the neighbour of cell `i` on side `k`, none where there
    /// is none.
    side_cell: [[K; 4]; MAX_CELLS],
    /// `side_index[i][k]`: the neighbour of cell `i` on side `k` (meaningful where
    /// `side_cell[i][k]` is not empty).
    side_index: [[u8; 4]; MAX_CELLS],
    /// `near[i]`: bit `3j` for every neighbour `j` of cell `i`.
    near: [K; MAX_CELLS],
    /// `total_weight[i]`: the weight of cell `i` in the hash total (over the symmetries,
    /// exact modulo 2^64): [`Grid::hash_total`] is linear in the cells' values.
    total_weight: [u64; MAX_CELLS],
    /// True when a window of 64 bits holds every neighbour of a cell (up to 10 columns).
    windowed: bool,
    /// `move_sums[4096 i + x]` (with a window), for cell `i` empty with pattern by side `x`:
    /// over its moves, the sum of what each adds to the hash total (summed over the
    /// symmetries) of the board, shifted left by [`MOVE_BITS`], plus the number of moves.
    move_sums: Vec<u64>,
}

/// Low bits of a [`Grid`]'s `move_sums` entry that count moves: more than the moves of all
/// the empty cells of a board together (at most 11 a cell, 64 cells).
const MOVE_BITS: u32 = 10;

/// Per byte of a key (`bytes` of them) and per value of that byte: its image under each
/// symmetry, its hash under each symmetry (lane), and the sum of those hashes.
#[allow(clippy::type_complexity)]
fn byte_tables<K: PackedKey>(
    geo: &Geometry,
    cells: usize,
    bytes: usize,
    weight: &[[u32; 8]; MAX_CELLS],
) -> (Vec<[K; 8]>, Vec<[u32; 8]>, Vec<u64>) {
    let mut images = vec![[K::ZERO; 8]; bytes * 256];
    let mut byte_hashes = vec![[0u32; 8]; bytes * 256];
    let mut byte_totals = vec![0u64; bytes * 256];
    for k in 0..bytes {
        for b in 0..256usize {
            for bit in (0..8).filter(|j| b >> j & 1 == 1) {
                let q = 8 * k + bit;
                let (cell, v) = (q / 3, 1u8 << (q % 3));
                if cell >= cells {
                    continue; // never set in a valid key
                }
                for g in 0..geo.symmetries as usize {
                    let e = &mut images[256 * k + b][g];
                    *e = *e | K::place(v, geo.sym[g][cell] as usize);
                    let h = &mut byte_hashes[256 * k + b][g];
                    *h = h.wrapping_add((v as u32).wrapping_mul(weight[cell][g]));
                    byte_totals[256 * k + b] += u64::from(v) * u64::from(weight[cell][g]);
                }
            }
        }
    }
    (images, byte_hashes, byte_totals)
}

/// Per cell and per pattern of its neighbours by side: the change of the hash sum a move
/// there makes (summed over its capture choices), above [`MOVE_BITS`] bits of its number of
/// moves. Only for boards read through one 64-bit window (`windowed`).
fn move_sums(
    cells: usize,
    side_mask: &[u16; MAX_CELLS],
    side_weight: &[[u64; 4]; MAX_CELLS],
    total_weight: &[u64; MAX_CELLS],
) -> Vec<u64> {
    let mut move_sums = Vec::with_capacity(cells * NUM_PATTERNS);
    for i in 0..cells {
        for x in 0..NUM_PATTERNS {
            let p = &PATTERN_SUMS[x & side_mask[i] as usize];
            let mut v = u64::from(p.dice).wrapping_mul(total_weight[i]);
            for k in 0..4 {
                v = v.wrapping_sub(u64::from(p.captured[k]).wrapping_mul(side_weight[i][k]));
            }
            move_sums.push(v << MOVE_BITS | u64::from(p.moves));
        }
    }
    move_sums
}

impl<K: PackedKey> Grid<K> {
    /// The rules of `shape` with hot loops compiled for `level` (falling back to
    /// [`Level::Portable`] when the CPU lacks it).
    ///
    /// # Panics
    /// If `K` is too narrow for the shape (3 bits a cell).
    pub fn new(shape: Shape, level: Level) -> Grid<K> {
        let cells = shape.cells();
        assert!(3 * cells <= K::BITS, "{shape} does not fit in {} bits", K::BITS);
        let geo = Geometry::new(shape.rows(), shape.cols());
        let mut neighbours = [[0u8; 4]; MAX_CELLS];
        let mut degree = [0u8; MAX_CELLS];
        let mut weight = [[0u32; 8]; MAX_CELLS];
        for i in 0..cells {
            for &n in geo.neighbours[i].iter().filter(|&&n| n != NO_CELL) {
                neighbours[i][degree[i] as usize] = n;
                degree[i] += 1;
            }
            for g in 0..geo.symmetries as usize {
                weight[i][g] = geo.weight[geo.sym[g][i] as usize];
            }
        }
        let bytes = (3 * cells).div_ceil(8);
        let (images, byte_hashes, byte_totals) = byte_tables::<K>(&geo, cells, bytes, &weight);
        let low = (0..cells).fold(K::ZERO, |k, i| k | K::place(1, i));
        let total_weight: [u64; MAX_CELLS] = std::array::from_fn(|i| lane_total(&weight[i]));
        let (mut side_weight, mut side_mask) = ([[0u64; 4]; MAX_CELLS], [0u16; MAX_CELLS]);
        let mut side_cell = [[K::ZERO; 4]; MAX_CELLS];
        let (mut side_index, mut near) = ([[0u8; 4]; MAX_CELLS], [K::ZERO; MAX_CELLS]);
        for i in 0..cells {
            for k in 0..4 {
                let n = geo.neighbours[i][k];
                if n != NO_CELL {
                    side_weight[i][k] = total_weight[n as usize];
                    side_mask[i] |= 7 << (3 * k);
                    side_cell[i][k] = K::place(7, n as usize);
                    side_index[i][k] = n;
                    near[i] = near[i] | K::place(1, n as usize);
                }
            }
        }
        let windowed = shape.cols() >= 2 && 6 * shape.cols() + 3 <= 64;
        let move_sums =
            if windowed { move_sums(cells, &side_mask, &side_weight, &total_weight) } else { Vec::new() };
        let isa = Isa::new(level).unwrap_or(Isa::Portable);
        Grid {
            shape,
            isa,
            wide: Wide::new(isa),
            cells,
            symmetries: geo.symmetries as usize,
            compose: geo.compose,
            neighbours,
            degree,
            weight,
            low,
            bytes,
            images,
            byte_hashes,
            byte_totals,
            side_mask,
            side_cell,
            side_index,
            near,
            total_weight,
            windowed,
            move_sums,
        }
    }

    /// The pattern of cell `i` with its neighbours by side: up, left, right, down (3 bits
    /// each, 0 where there is none, which the capture rule reads as an empty cell), read from
    /// one 64-bit window of the key that starts a row before the cell. Only where
    /// `windowed`.
    #[inline(always)]
    fn side_pattern(&self, s: K, i: usize) -> usize {
        let cols = self.shape.cols();
        let w = s.window(i, cols);
        let x = (w & 7)
            | (w >> (3 * cols - 6) & 0o70)
            | (w >> (3 * cols - 3) & 0o700)
            | (w >> (6 * cols - 9) & 0o7000);
        x as usize & self.side_mask[i] as usize
    }

    /// The sum over the symmetries of the hashes of `s`, exact (each lane of
    /// [`Rules::hashes`] is one of them wrapped in 32 bits).
    #[inline(always)]
    fn hash_total(&self, s: K) -> u64 {
        (0..self.bytes).fold(0u64, |a, k| a.wrapping_add(self.byte_totals[256 * k + s.byte(k) as usize]))
    }

    /// The pattern of cell `i` (its neighbours' values, 3 bits each).
    #[inline(always)]
    fn pattern(&self, s: K, i: usize) -> usize {
        let mut x = 0;
        for k in 0..self.degree[i] as usize {
            x |= (s.cell(self.neighbours[i][k] as usize) as usize) << (3 * k);
        }
        x
    }

    /// The 8 images of `s` (lanes beyond the symmetry count are zero).
    #[inline(always)]
    fn raw_images(&self, s: K) -> [K; 8] {
        Portable.wide_images(&self.images, s)
    }

    /// Slow twin of [`Rules::canonical`]: moves the cells one by one.
    pub fn canonical_slow(&self, s: K) -> (K, u8) {
        let geo = Geometry::new(self.shape.rows(), self.shape.cols());
        (0..self.symmetries)
            .map(|g| {
                let mut cells = vec![0u8; self.cells];
                for i in 0..self.cells {
                    cells[geo.sym[g][i] as usize] = s.cell(i);
                }
                (pack::<K>(&cells), g as u8)
            })
            .min()
            .expect("at least one symmetry")
    }
}

impl<K: PackedKey> Rules for Grid<K> {
    type Key = K;

    fn shape(&self) -> Shape {
        self.shape
    }

    fn isa(&self) -> Isa {
        self.isa
    }

    fn pack(&self, cells: &[u8]) -> K {
        pack(cells)
    }

    fn unpack(&self, key: K) -> Vec<u8> {
        unpack(key, self.cells)
    }

    #[inline(always)]
    fn is_full(&self, s: K) -> bool {
        s.smear() & self.low == self.low
    }

    #[inline(always)]
    fn canonical(&self, s: K) -> (K, u8) {
        K::canonical_wide(&self.images, s, self.symmetries, self.wide)
    }

    fn images(&self, s: K) -> [K; 8] {
        let mut images = self.raw_images(s);
        images[self.symmetries..].fill(s);
        images
    }

    #[inline(always)]
    fn permute(&self, counts: &Counts, t: u8) -> Counts {
        let p = &self.compose[t as usize];
        crate::counts::lanes(|h| counts[p[h] as usize])
    }

    /// With a window (`Grid::side_pattern`): the empty cells found by their bits, each
    /// one's moves listed by its pattern by side, a captured neighbour cleared through its
    /// side's bits. Else a cell at a time.
    #[inline(always)]
    fn successors(&self, s: K, mut f: impl FnMut(K)) {
        if self.windowed {
            let mut empty = self.low ^ (s.smear() & self.low);
            while empty != K::ZERO {
                let i = empty.lowest_cell();
                empty = empty.without_lowest();
                let sides = &self.side_cell[i];
                for m in PLACEMENTS[self.side_pattern(s, i)].as_slice() {
                    let mut t = s | K::place(m.die, i);
                    let mut captured = m.captured;
                    while captured != 0 {
                        t = t ^ (s & sides[captured.trailing_zeros() as usize]);
                        captured &= captured - 1;
                    }
                    f(t);
                }
            }
            return;
        }
        for i in 0..self.cells {
            if s.cell(i) != 0 {
                continue;
            }
            let x = self.pattern(s, i);
            for m in PLACEMENTS[x].as_slice() {
                let mut t = s | K::place(m.die, i);
                for k in 0..self.degree[i] as usize {
                    if m.captured >> k & 1 == 1 {
                        let n = self.neighbours[i][k] as usize;
                        t = t ^ K::place(s.cell(n), n);
                    }
                }
                f(t);
            }
        }
    }

    #[inline(always)]
    fn hashes(&self, s: K) -> Counts {
        let mut out = [0u32; 8];
        for k in 0..self.bytes {
            let e = &self.byte_hashes[256 * k + s.byte(k) as usize];
            for g in 0..8 {
                out[g] = out[g].wrapping_add(e[g]);
            }
        }
        out
    }

    #[inline(always)]
    fn successor_hashes(&self, s: K) -> Counts {
        let mut moves = 0u32;
        let mut sum = [0u32; 8];
        for i in 0..self.cells {
            if s.cell(i) != 0 {
                continue;
            }
            let p = &PATTERN_SUMS[self.pattern(s, i)];
            moves += p.moves;
            for g in 0..8 {
                sum[g] = sum[g].wrapping_add(p.dice.wrapping_mul(self.weight[i][g]));
            }
            for k in 0..self.degree[i] as usize {
                let w = &self.weight[self.neighbours[i][k] as usize];
                for g in 0..8 {
                    sum[g] = sum[g].wrapping_sub(p.captured[k].wrapping_mul(w[g]));
                }
            }
        }
        let h = self.hashes(s);
        crate::counts::lanes(|g| sum[g].wrapping_add(moves.wrapping_mul(h[g])))
    }

    /// One number where [`Rules::successor_hashes`] makes 8 lanes, exact modulo
    /// `2^(64 - MOVE_BITS)` (the orbit sums need 33 bits): the empty cells are found by their
    /// bits (not by a branch a cell), and each one's moves add one entry of `move_sums`,
    /// found by the cell and its pattern by side (`Grid::side_pattern`), which holds what
    /// they add to the board's hash total and how many they are.
    #[inline(always)]
    fn successor_hash_total(&self, s: K) -> u64 {
        if !self.windowed {
            let h = self.successor_hashes(s);
            return lane_total(&h[..self.symmetries]);
        }
        let mut empty = self.low ^ (s.smear() & self.low);
        let mut acc = 0u64;
        while empty != K::ZERO {
            let i = empty.lowest_cell();
            empty = empty.without_lowest();
            acc = acc.wrapping_add(self.move_sums[NUM_PATTERNS * i + self.side_pattern(s, i)]);
        }
        let moves = acc & ((1 << MOVE_BITS) - 1);
        (acc >> MOVE_BITS).wrapping_add(moves.wrapping_mul(self.hash_total(s)))
    }

    /// With a window: the moves' cell patterns and their `move_sums` entries are looked up
    /// once for the parent `s`; a successor's total starts from the parent's, takes out the
    /// cell it fills, and looks up again only the empty cells next to a cell the move changed
    /// (the one it fills and those it captures, which are empty now); its hash total is the
    /// parent's plus what the move adds and takes away. Else as the default.
    #[inline(always)]
    fn successor_totals(&self, s: K, mut full: impl FnMut(K)) -> (u64, u32) {
        if !self.windowed {
            return successor_totals_one_by_one(self, s, full);
        }
        let entry = |t: K, j: usize| self.move_sums[NUM_PATTERNS * j + self.side_pattern(t, j)];
        // `before[j]`: cell j's entry in `s` where it is empty, else 0.
        let mut before = [0u64; MAX_CELLS];
        let empty_s = self.low ^ (s.smear() & self.low);
        let mut parent = 0u64;
        let mut empty = empty_s;
        while empty != K::ZERO {
            let j = empty.lowest_cell();
            empty = empty.without_lowest();
            before[j] = entry(s, j);
            parent = parent.wrapping_add(before[j]);
        }
        let hash_s = self.hash_total(s);
        let (mut sum, mut open) = (0u64, 0u32);
        let mut empty = empty_s;
        while empty != K::ZERO {
            let i = empty.lowest_cell();
            empty = empty.without_lowest();
            let sides = &self.side_cell[i];
            let rest = parent.wrapping_sub(before[i]);
            for m in PLACEMENTS[self.side_pattern(s, i)].as_slice() {
                let mut t = s | K::place(m.die, i);
                let mut hash = hash_s.wrapping_add(u64::from(m.die).wrapping_mul(self.total_weight[i]));
                let mut changed = self.near[i];
                let mut captured = m.captured;
                while captured != 0 {
                    let k = captured.trailing_zeros() as usize;
                    let c = self.side_index[i][k] as usize;
                    t = t ^ (s & sides[k]);
                    hash = hash.wrapping_sub(u64::from(s.cell(c)).wrapping_mul(self.total_weight[c]));
                    changed = changed | self.near[c] | K::place(1, c);
                    captured &= captured - 1;
                }
                let empty_t = self.low ^ (t.smear() & self.low);
                if empty_t == K::ZERO {
                    full(t);
                    continue;
                }
                let mut acc = rest;
                let mut again = changed & empty_t;
                while again != K::ZERO {
                    let j = again.lowest_cell();
                    again = again.without_lowest();
                    acc = acc.wrapping_add(entry(t, j)).wrapping_sub(before[j]);
                }
                let moves = acc & ((1 << MOVE_BITS) - 1);
                sum = sum.wrapping_add((acc >> MOVE_BITS).wrapping_add(moves.wrapping_mul(hash)));
                open += 1;
            }
        }
        (sum, open)
    }

    fn fused_successor_totals(&self) -> bool {
        self.windowed
    }

    /// Where the window serves the shape (else the totals are the 8-lane sums added up).
    fn cheap_successor_totals(&self) -> bool {
        self.windowed
    }
}

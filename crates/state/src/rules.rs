//! The interface between a board packing and the search: what the solver asks of a position.

use crate::counts::Counts;
use crate::key::PackedKey;
use crate::level::{Isa, Level};
use crate::shape::Shape;

/// A board packing with its moves, symmetries and hashes: everything a breadth-first search over
/// canonical positions needs. Implemented by [`crate::Grid`] (any shape) and [`crate::Ring3`]
/// (the 3x3 fast path).
///
/// Symmetries are numbered `0..8` by each implementation in its own way; `t` returned by
/// [`Rules::canonical`] and taken by [`Rules::permute`] and [`Rules::hashes`] share it.
pub trait Rules: Sync + Send {
    /// The packed board.
    type Key: PackedKey;

    /// The board shape.
    fn shape(&self) -> Shape;

    /// The instruction set the search's hot loops should be compiled for when they use these
    /// rules, with the proof that the CPU has it: a search runs loops compiled for AVX2 only on
    /// an [`Isa::Avx2`], whose [`crate::Avx2Token`] no safe code makes on a CPU without it, so
    /// an implementation cannot claim an instruction set the CPU lacks.
    fn isa(&self) -> Isa;

    /// True when [`Rules::isa`] is never [`Isa::Portable`]: these rules exist only with a SIMD
    /// backend (made from the proof that the CPU has it), so a search compiles no portable
    /// copy of its hot loops for them.
    const SIMD_ONLY: bool = false;

    /// The level of [`Rules::isa`], as reports name it.
    #[inline]
    fn level(&self) -> Level {
        self.isa().level()
    }

    /// Packs row-major cells (each `0..=6`).
    fn pack(&self, cells: &[u8]) -> Self::Key;

    /// Unpacks to row-major cells.
    fn unpack(&self, key: Self::Key) -> Vec<u8>;

    /// True when no cell is empty.
    fn is_full(&self, s: Self::Key) -> bool;

    /// False when no successor of `s` can be full (it has more than one empty cell: a move
    /// fills one and may empty others), so the search need not ask [`Rules::is_full`] of each.
    #[inline(always)]
    fn may_fill(&self, s: Self::Key) -> bool {
        let _ = s;
        true
    }

    /// The canonical form `c = t(s)` (the smallest image under the symmetries, smallest `t` on
    /// ties) and `t`.
    fn canonical(&self, s: Self::Key) -> (Self::Key, u8);

    /// [`Rules::canonical`] of each of `keys`: key `j`'s canonical form into `canonical[j]`,
    /// its symmetry into `symmetry[j]` (both at least as long as `keys`). Faster where the
    /// rules canonicalise several keys at once (one a SIMD lane).
    #[inline(always)]
    fn canonical_many(&self, keys: &[Self::Key], canonical: &mut [Self::Key], symmetry: &mut [u8]) {
        for ((c, t), &k) in canonical.iter_mut().zip(symmetry.iter_mut()).zip(keys) {
            (*c, *t) = self.canonical(k);
        }
    }

    /// How many symmetries canonicalisation uses: lanes `0..symmetries()` of [`Rules::images`],
    /// [`Rules::hashes`] and [`Rules::successor_hashes`] stand for the whole group, each element
    /// once (8 on square boards, 4 on the others, 1 when canonicalisation is switched off).
    fn symmetries(&self) -> usize {
        self.shape().symmetries()
    }

    /// The images `g(s)` of `s` under each symmetry `g`, numbered as [`Rules::canonical`]
    /// numbers them; lanes past the board's symmetry count hold `s`.
    fn images(&self, s: Self::Key) -> [Self::Key; 8];

    /// The number of distinct boards among the images `g(s)` for the lanes `g` where `counts`
    /// is not zero: how many boards a stored position with these counts stands for.
    fn boards(&self, s: Self::Key, counts: &Counts) -> u32 {
        let images = self.images(s);
        let mut seen = [s; 8];
        let mut n = 0;
        for g in 0..8 {
            if counts[g] != 0 && !seen[..n].contains(&images[g]) {
                seen[n] = images[g];
                n += 1;
            }
        }
        n as u32
    }

    /// The counts of a successor `s` that was canonicalised as `c = t(s)`, from the counts of the
    /// position that produced it: lane `h` becomes lane `h ∘ t`.
    fn permute(&self, counts: &Counts, t: u8) -> Counts;

    /// Calls `f` on every successor of `s` (one per move; equal boards reached by different
    /// moves are reported once per move). `s` must not be full.
    fn successors(&self, s: Self::Key, f: impl FnMut(Self::Key));

    /// The length of buffer [`Rules::successors_into`] needs.
    const BUFFER: usize = tables::geometry::MAX_CELLS * tables::captures::MAX_PLACEMENTS;

    /// Writes every successor of `s` (as [`Rules::successors`] reports them, in the same order)
    /// to the front of `out` and returns how many there are; entries past them are scratch.
    /// `s` must not be full.
    ///
    /// # Panics
    /// If `out` is shorter than [`Rules::BUFFER`].
    #[inline(always)]
    fn successors_into(&self, s: Self::Key, out: &mut [Self::Key]) -> usize {
        let mut n = 0;
        self.successors(s, |t| {
            out[n] = t;
            n += 1;
        });
        n
    }

    /// Positions [`Rules::successors_of_many`] takes at once.
    const MANY: usize = if Self::BUFFER <= 64 { 16 } else { 1 };

    /// [`Rules::successors_into`] for up to [`Rules::MANY`] positions at once: the successors
    /// of `keys[0]` (as [`Rules::successors`] reports them, in the same order), then those of
    /// `keys[1]`..., to the front of `out`, each with its position's tag (`tags[i]`) at the
    /// same index of `from`; returns how many there are. No key may be full. A search hands
    /// over many positions at once so that a generator may work across them: one that lists
    /// them all with no branch on a board (see [`crate::Ring3`]) avoids a loop a position that
    /// ends at a different count each time.
    ///
    /// # Panics
    /// If `out` or `from` is shorter than `MANY * BUFFER`, or `keys` longer than `MANY`.
    #[inline(always)]
    fn successors_of_many(
        &self,
        keys: &[Self::Key],
        tags: &[u32],
        out: &mut [Self::Key],
        from: &mut [u32],
    ) -> usize {
        successors_one_by_one(self, keys, tags, out, from)
    }

    /// Lane `g`: the hash of the board `g(s)` (wrapping modulo 2^32).
    fn hashes(&self, s: Self::Key) -> Counts;

    /// Lane `g`: the sum over all successors `s'` of `s` of the hash of `g(s')`, without
    /// generating them. `s` must not be full.
    fn successor_hashes(&self, s: Self::Key) -> Counts;

    /// [`Rules::successor_hashes`] of up to [`Rules::MANY`] positions at once, into
    /// `out[..keys.len()]`. No key may be full.
    ///
    /// # Panics
    /// If `keys` is longer than `MANY` or `out` shorter than `keys`.
    #[inline(always)]
    fn successor_hashes_of_many(&self, keys: &[Self::Key], out: &mut [Counts]) {
        successor_hashes_one_by_one(self, keys, out)
    }

    /// The sum of lanes `0..symmetries()` of [`Rules::successor_hashes`]: what a search whose
    /// positions carry one orbit mass needs of a position's successors. Lane `g` is a
    /// function of the board `g(s)` alone (its successors' hashes summed modulo 2^32); so must
    /// each term of this sum be, congruent to that lane modulo 2^32 (the default adds the
    /// wrapped lanes; an implementation may add exact ones). Summed over positions closed under the symmetries and weighted by orbit masses,
    /// any such choice gives `|G|` times the same value modulo `2^32 · |G|`, and the orbit
    /// sums' division by `|G|` keeps 32 exact bits of it. Needed modulo 2^33 at least.
    #[inline(always)]
    fn successor_hash_total(&self, s: Self::Key) -> u64 {
        let h = self.successor_hashes(s);
        crate::counts::lane_total(&h[..self.symmetries()])
    }

    /// [`Rules::successor_hash_total`] of up to [`Rules::MANY`] positions at once, into
    /// `out[..keys.len()]`. No key may be full.
    ///
    /// # Panics
    /// If `keys` is longer than `MANY` or `out` shorter than `keys`.
    #[inline(always)]
    fn successor_hash_totals_of_many(&self, keys: &[Self::Key], out: &mut [u64]) {
        assert!(keys.len() <= Self::MANY);
        for (o, &k) in out[..keys.len()].iter_mut().zip(keys) {
            *o = self.successor_hash_total(k);
        }
    }

    /// Over the successors of `s` (one per move, as [`Rules::successors`] reports them; `s`
    /// must not be full): calls `full` on each one that fills the board, and returns the
    /// wrapping sum of [`Rules::successor_hash_total`] over the others and their number. What
    /// a search whose positions carry one orbit mass needs of a position two moves before
    /// the end; a rules type may find each total from its parent's
    /// ([`Rules::fused_successor_totals`]).
    #[inline(always)]
    fn successor_totals(&self, s: Self::Key, full: impl FnMut(Self::Key)) -> (u64, u32) {
        successor_totals_one_by_one(self, s, full)
    }

    /// True when [`Rules::successor_totals`] costs less than listing the successors and
    /// summing each one's [`Rules::successor_hash_total`] in batches: where each total comes
    /// from the parent's, updated for the cells a move changes.
    fn fused_successor_totals(&self) -> bool {
        false
    }

    /// [`Rules::CHEAP_SUCCESSOR_HASHES`] for [`Rules::successor_hash_total`]: true when a
    /// search whose positions carry one orbit mass sums the last depth from every successor
    /// of the depth before it. A method, not a constant: a grid's totals are cheap only on
    /// the shapes its window serves.
    fn cheap_successor_totals(&self) -> bool {
        Self::CHEAP_SUCCESSOR_HASHES
    }

    /// True when [`Rules::successor_hashes`] costs less than canonicalising and storing a
    /// position does. A search then sums the last depth from every successor of the depth
    /// before it, which it never stores, instead of from that depth's distinct positions: a
    /// position reached by several moves is summed once for each, so this pays only where
    /// the summing is cheap (measured: the 3x3 ring packing, yes; the general grid, whose
    /// sums loop over every cell and neighbour, no).
    const CHEAP_SUCCESSOR_HASHES: bool = false;
}

/// [`Rules::successor_totals`] a successor at a time, each one's
/// [`Rules::successor_hash_total`] found on its own (the default way).
#[inline(always)]
pub fn successor_totals_one_by_one<R: Rules + ?Sized>(
    rules: &R,
    s: R::Key,
    mut full: impl FnMut(R::Key),
) -> (u64, u32) {
    let (mut sum, mut open) = (0u64, 0u32);
    rules.successors(s, |t| {
        if rules.is_full(t) {
            full(t);
        } else {
            sum = sum.wrapping_add(rules.successor_hash_total(t));
            open += 1;
        }
    });
    (sum, open)
}

/// [`Rules::successors_of_many`] one position at a time, through
/// [`Rules::successors_into`] (the default way).
#[inline(always)]
pub fn successors_one_by_one<R: Rules + ?Sized>(
    rules: &R,
    keys: &[R::Key],
    tags: &[u32],
    out: &mut [R::Key],
    from: &mut [u32],
) -> usize {
    assert!(keys.len() <= R::MANY && tags.len() == keys.len());
    let mut m = 0;
    for (&k, &tag) in keys.iter().zip(tags) {
        let n = rules.successors_into(k, &mut out[m..]);
        if R::BUFFER <= 64 {
            // A fixed width: stores, no loop.
            from[m..m + R::BUFFER].fill(tag);
        } else {
            from[m..m + n].fill(tag);
        }
        m += n;
    }
    m
}

/// [`Rules::successor_hashes_of_many`] one position at a time, through
/// [`Rules::successor_hashes`] (the default way).
#[inline(always)]
pub fn successor_hashes_one_by_one<R: Rules + ?Sized>(rules: &R, keys: &[R::Key], out: &mut [Counts]) {
    assert!(keys.len() <= R::MANY);
    for (o, &k) in out[..keys.len()].iter_mut().zip(keys) {
        *o = rules.successor_hashes(k);
    }
}

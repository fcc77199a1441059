//! How the search counts the paths that reach a stored (canonical) position.
//!
//! Four ways, one trait ([`Weights`]):
//!
//! * [`Lanes`], for any start: 8 wrapping `u32` counts a position, lane `g` counting the paths
//!   that reached the board `g(c)` (see [`state::Counts`]). A successor canonicalised by `t`
//!   brings its parent's lanes permuted by `t`.
//! * [`Orbits`], for a start that every symmetry maps to itself (the empty board, say). Then
//!   every board of an orbit is reached by as many paths as any other, and one number a
//!   position is enough: its *mass* `m(c)`, the paths reaching any board of the orbit of `c`.
//!   A move from `c` into the orbit of `c'` adds `m(c)` to `m(c')`, whatever symmetry
//!   canonicalised it (each board of `c`'s orbit makes the same move into `c'`'s orbit), and
//!   the hashes of the paths at the positions `c` are `Σ m(c)·HS(c) / |G|`, where `HS(c)` sums
//!   the hashes of the `|G|` images of `c`. That sum is an exact multiple of `|G|` (a power of
//!   two up to 8), so it is kept modulo 2^64 in a `u64` and divided at the end. Masses are kept
//!   modulo 2^34 ([`frontier::Count34`]), so the sum is exact modulo 2^34, and divided by up
//!   to 8, modulo 2^31: the answer keeps 30 bits. A position costs 8 bytes of counts instead
//!   of 32, and no permutation; with a key of at most 30 bits (boards of up to 10 cells, the
//!   3x3 among them), key and mass share one 8-byte slot ([`frontier::CountSet::PACKED`]).
//! * [`Cosets`], for a square board's start that some of the 8 symmetries fix but not all (a
//!   die in a corner or on an edge: a group `H` of 2 or 4). A symmetry `h` of `H` applied to a
//!   whole path gives another path from the start, so every path is counted `|H|` times (the
//!   start carries 1 on each lane of `H`): then lanes `g` and `h ∘ g` always hold the same
//!   count, and one lane a coset of a subgroup of `H` of two keeps them all (4 lanes instead
//!   of 8). The sums are `|H|` times the answer, modulo 2^32: divided at the end, 30 bits or
//!   more are exact.
//! * [`Exact`], for exact counts (perft), from any start: one exact mass a position (the
//!   paths reaching any board of its orbit; a move from any board of an orbit makes the same
//!   moves, so masses add up as for [`Orbits`] whatever the start), and the lanes that are
//!   reached, for counting boards. Its sums count paths, not hashes.

use frontier::{Count34, Tally};
use state::{lane_sum, mul_add, Counts, Rules, HASH_MASK};

/// The most positions [`Rules::successors_of_many`] takes at once, over all rules.
pub(crate) const MANY_MAX: usize = 16;

/// Whether counts of type `C` take more than 8 bytes: lanes and coset lanes, not an orbit mass.
/// One thread batches their successors lean (`kernels::Batches`: a tag costs a batch fewer
/// bytes than such counts), and their sets take huge pages as soon as the frontier is about
/// to be parallel ([`crate::plan::depth`]; sets of orbit masses gain nothing from it).
pub(crate) const fn wide_counts<C>() -> bool {
    std::mem::size_of::<C>() > 8
}

/// A way of counting paths: what a stored position carries, how a successor's share is made
/// from its parent's, and how ended paths add up to the answer.
pub(crate) trait Weights: Copy + Send + Sync {
    /// The counts stored with a position.
    type Count: Tally;
    /// A running sum of ended paths' hashes.
    type Sum: Tally;

    /// The counts of the start position, canonicalised by `t`.
    fn start<R: Rules>(&self, rules: &R, t: u8) -> Self::Count;

    /// The counts a successor canonicalised by `t` brings from its parent's `n`.
    fn carry<R: Rules>(&self, rules: &R, n: &Self::Count, t: u8) -> Self::Count;

    /// Adds to `sum` the hashes of the paths with counts `n` at boards whose per-symmetry
    /// hashes are `hashes` (the lanes of [`Rules::hashes`] or [`Rules::successor_hashes`]).
    fn end(&self, sum: &mut Self::Sum, n: &Self::Count, hashes: &Counts);

    /// Adds to `sum` the hashes of the paths with counts `n` at `s` continued by every move
    /// from `s` (not full): [`Weights::end`] of its [`Rules::successor_hashes`], or what of
    /// them the counts need.
    #[inline(always)]
    fn end_successors<R: Rules>(&self, rules: &R, sum: &mut Self::Sum, n: &Self::Count, s: R::Key) {
        self.end(sum, n, &rules.successor_hashes(s));
    }

    /// True when [`Weights::end_totals`] serves: the counts are one number a position, and
    /// what the last depth needs of a position's successors is their hash total
    /// ([`Rules::successor_hash_total`]).
    const TOTALS: bool;

    /// Adds to `sum` the hashes of the paths with counts `n` continued by every move from
    /// positions whose [`Rules::successor_hash_total`]s sum to `total`. Only where
    /// [`Weights::TOTALS`].
    fn end_totals(&self, _sum: &mut Self::Sum, _n: &Self::Count, _total: u64) {
        unreachable!("these counts need each lane of the successor hashes, not their total")
    }

    /// [`Weights::end_successors`] for up to [`Rules::MANY`] positions `keys[j]` at once, with
    /// counts `counts(j)`.
    fn end_successors_of_many<R: Rules>(
        &self,
        rules: &R,
        sum: &mut Self::Sum,
        keys: &[R::Key],
        counts: impl Fn(usize) -> Self::Count,
    );

    /// True when summing the last depth from every successor of the depth before it
    /// ([`Weights::end_successors_of_many`]) costs less than storing that depth: where the
    /// rules' successor sums these counts need are cheap.
    fn cheap_successor_sums<R: Rules>(&self, _rules: &R) -> bool {
        R::CHEAP_SUCCESSOR_HASHES
    }

    /// The number of paths counts `n` stand for, modulo 2^32.
    fn paths(&self, n: &Self::Count) -> u32;

    /// The answer's 30 bits of a sum.
    fn answer(&self, sum: &Self::Sum) -> u32;

    /// The distinct boards a stored position `c` with counts `n` stands for.
    fn boards<R: Rules>(&self, rules: &R, c: R::Key, n: &Self::Count) -> u64;

    /// What of counts `n` says which boards of a position are reached, the paths dropped: a
    /// set of positions at every depth merges these ([`Weights::boards`] reads them).
    fn reached(&self, n: &Self::Count) -> Self::Count {
        *n
    }

    /// The exact number of paths a sum counts, for counts that are exact ([`Exact`]);
    /// `None` for counts of hashes.
    fn exact(&self, _sum: &Self::Sum) -> Option<u128> {
        None
    }
}

/// 8 path counts a position, one per symmetry: any start.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lanes;

impl Weights for Lanes {
    type Count = Counts;
    const TOTALS: bool = false;
    type Sum = Counts;

    fn start<R: Rules>(&self, rules: &R, t: u8) -> Counts {
        let mut one = [0u32; 8];
        one[0] = 1;
        rules.permute(&one, t)
    }

    #[inline(always)]
    fn carry<R: Rules>(&self, rules: &R, n: &Counts, t: u8) -> Counts {
        rules.permute(n, t)
    }

    #[inline(always)]
    fn end(&self, sum: &mut Counts, n: &Counts, hashes: &Counts) {
        mul_add(sum, n, hashes);
    }

    #[inline(always)]
    fn end_successors_of_many<R: Rules>(
        &self,
        rules: &R,
        sum: &mut Counts,
        keys: &[R::Key],
        counts: impl Fn(usize) -> Counts,
    ) {
        let mut hashes = [[0u32; 8]; MANY_MAX];
        rules.successor_hashes_of_many(keys, &mut hashes);
        for (j, h) in hashes[..keys.len()].iter().enumerate() {
            self.end(sum, &counts(j), h);
        }
    }

    #[inline(always)]
    fn paths(&self, n: &Counts) -> u32 {
        lane_sum(n)
    }

    fn answer(&self, sum: &Counts) -> u32 {
        state::fold_lanes(sum)
    }

    fn boards<R: Rules>(&self, rules: &R, c: R::Key, n: &Counts) -> u64 {
        rules.boards(c, n).into()
    }
}

/// `L` path counts a position, one per coset of the symmetries that fix the start board
/// (module docs): starts that some symmetries fix but not all (one die in a corner or on an
/// edge of a square board, say: 4 lanes where [`Lanes`] keeps 8).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cosets<const L: usize> {
    /// The lane of each symmetry: `coset[g]` holds the counts of lane `g` of [`Lanes`].
    coset: [u8; 8],
    /// `carry[t][c]`: the parent's lane that lane `c` of a successor canonicalised by `t`
    /// takes.
    carry: [[u8; L]; 8],
    /// The start board's 8 lanes before it is canonicalised: 1 on each symmetry that fixes it.
    fixers: Counts,
    /// `log2` of the number of symmetries that fix the start: every path is counted that
    /// many times.
    shift: u32,
    /// `u32::MAX` on the first lane of each coset of every fixer, 0 on the others: those
    /// lanes count every path once (every lane, when the lanes are the fixers' cosets; one
    /// lane of two, when they are a subgroup's, whose two cosets in one coset of every fixer
    /// hold equal counts).
    once: [u32; L],
}

impl<const L: usize> Cosets<L> {
    /// Coset lanes for a search from `start` under `rules`, when a subgroup of `8 / L` of the
    /// 8 symmetries of a square board fixes `start`. Lane `g` of [`Lanes`] counts the paths
    /// that reach `g(c)`; every path is counted here once for each symmetry `h` that fixes the
    /// start (applied to the whole path, `h` gives another path from the start), so that
    /// lanes `g` and `h ∘ g` always hold the same count for every `h` of that subgroup: one
    /// lane a coset of it. The subgroup is every fixer when there are `8 / L` of them; with
    /// more (but not all 8, which [`Orbits`] serves), and `L = 4`, it is the identity and one
    /// fixer of order 2: a start that 4 symmetries fix takes 4 lanes, not 2, so that the
    /// engine is compiled for one coset counting only. Checked, not assumed: `None` unless
    /// the start's lanes and every successor's permutation ([`Rules::permute`]) keep each
    /// coset's lanes equal.
    pub(crate) fn of<R: Rules>(rules: &R, start: R::Key) -> Option<Cosets<L>> {
        if rules.symmetries() != 8 {
            return None;
        }
        let images = rules.images(start);
        let fixers: Counts = std::array::from_fn(|g| u32::from(images[g] == start));
        let fixed = fixers.iter().sum::<u32>() as usize;
        if fixed * L < 8 || fixed == 8 || (fixed * L > 8 && L != 4) {
            return None;
        }
        // The symmetry `h ∘ g` as an index, read off a board that no symmetry fixes.
        let probe = asymmetric(rules)?;
        let seen = rules.images(probe);
        let compose = |h: usize, g: usize| seen.iter().position(|&b| b == rules.images(seen[g])[h]);
        let group: Counts = if fixed * L == 8 {
            fixers
        } else {
            let identity = seen.iter().position(|&b| b == probe)?;
            let order_two =
                (0..8).find(|&h| fixers[h] == 1 && h != identity && compose(h, h) == Some(identity))?;
            std::array::from_fn(|g| u32::from(g == identity || g == order_two))
        };
        let mut coset = [u8::MAX; 8];
        let mut next = 0u8;
        for g in 0..8 {
            if coset[g] != u8::MAX {
                continue;
            }
            for h in (0..8).filter(|&h| group[h] == 1) {
                coset[compose(h, g)?] = next;
            }
            next += 1;
        }
        if usize::from(next) != L || coset.contains(&u8::MAX) {
            return None;
        }
        let iota: Counts = std::array::from_fn(|g| g as u32);
        let mut carry = [[0u8; L]; 8];
        for (t, row) in carry.iter_mut().enumerate() {
            let from = rules.permute(&iota, t as u8);
            // Lanes of one coset must come from lanes of one coset.
            for g in 0..8 {
                for g2 in 0..8 {
                    if coset[g] == coset[g2] && coset[from[g] as usize] != coset[from[g2] as usize] {
                        return None;
                    }
                }
                row[usize::from(coset[g])] = coset[from[g] as usize];
            }
        }
        let mut once = [0; L];
        for g in 0..8 {
            let mut lanes = (0..8).filter(|&h| fixers[h] == 1).map(|h| compose(h, g).map(|hg| coset[hg]));
            let first = lanes.try_fold(u8::MAX, |m, c| c.map(|c| m.min(c)))?;
            once[usize::from(first)] = u32::MAX;
        }
        let cosets = Cosets { coset, carry, fixers, shift: fixed.trailing_zeros(), once };
        // The start's lanes, however canonicalised, are equal on each coset.
        (0..8u8)
            .all(|t| cosets.expand(&cosets.compress(&rules.permute(&fixers, t))) == rules.permute(&fixers, t))
            .then_some(cosets)
    }

    /// The 8 lanes of [`Lanes`] these counts stand for.
    #[inline(always)]
    fn expand(&self, n: &[u32; L]) -> Counts {
        state::lanes(|g| n[usize::from(self.coset[g])])
    }

    /// The counts of 8 lanes that are equal on each coset.
    fn compress(&self, lanes: &Counts) -> [u32; L] {
        let mut n = [0; L];
        for g in 0..8 {
            n[usize::from(self.coset[g])] = lanes[g];
        }
        n
    }
}

/// A board of `rules`' shape that no symmetry fixes (its 8 images distinct), if one of a few
/// pseudo-random boards is.
fn asymmetric<R: Rules>(rules: &R) -> Option<R::Key> {
    let cells = rules.shape().cells();
    (1..=64u64).find_map(|seed| {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let board: Vec<u8> = (0..cells)
            .map(|_| {
                x ^= x >> 29;
                x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
                ((x >> 32) % 7) as u8
            })
            .collect();
        let key = rules.pack(&board);
        let images = rules.images(key);
        (0..8).all(|g| !images[..g].contains(&images[g])).then_some(key)
    })
}

impl<const L: usize> Weights for Cosets<L> {
    type Count = [u32; L];
    const TOTALS: bool = false;
    type Sum = Counts;

    fn start<R: Rules>(&self, rules: &R, t: u8) -> [u32; L] {
        self.compress(&rules.permute(&self.fixers, t))
    }

    #[inline(always)]
    fn carry<R: Rules>(&self, _rules: &R, n: &[u32; L], t: u8) -> [u32; L] {
        let from = &self.carry[usize::from(t)];
        state::lanes(|c| n[usize::from(from[c])])
    }

    #[inline(always)]
    fn end(&self, sum: &mut Counts, n: &[u32; L], hashes: &Counts) {
        mul_add(sum, &self.expand(n), hashes);
    }

    #[inline(always)]
    fn end_successors_of_many<R: Rules>(
        &self,
        rules: &R,
        sum: &mut Counts,
        keys: &[R::Key],
        counts: impl Fn(usize) -> [u32; L],
    ) {
        Lanes.end_successors_of_many(rules, sum, keys, |j| self.expand(&counts(j)));
    }

    /// Each lane of [`Lanes`] counts every path once for each fixer, and a coset of every
    /// fixer has as many lanes: the sum of one lane of each such coset.
    #[inline(always)]
    fn paths(&self, n: &[u32; L]) -> u32 {
        n.iter().zip(&self.once).fold(0u32, |sum, (&x, &m)| sum.wrapping_add(x & m))
    }

    fn answer(&self, sum: &Counts) -> u32 {
        (lane_sum(sum) >> self.shift) & HASH_MASK
    }

    fn boards<R: Rules>(&self, rules: &R, c: R::Key, n: &[u32; L]) -> u64 {
        rules.boards(c, &self.expand(n)).into()
    }
}

/// One mass a position, modulo 2^34 (module docs): starts that every symmetry fixes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Orbits {
    /// `log2 |G|`: the sums are `|G|` times the answer.
    shift: u32,
    /// `|G|`: lanes `0..symmetries` of the rules' hashes stand for the group.
    symmetries: usize,
}

impl Orbits {
    /// Orbit masses for a search from `start` under `rules`, when every symmetry fixes it.
    pub(crate) fn of<R: Rules>(rules: &R, start: R::Key) -> Option<Orbits> {
        let symmetries = rules.symmetries();
        let images = rules.images(start);
        (symmetries.is_power_of_two() && images[..symmetries].iter().all(|&i| i == start))
            .then_some(Orbits { shift: symmetries.trailing_zeros(), symmetries })
    }

    /// The number of distinct boards in the orbit of `c`.
    fn orbit<R: Rules>(&self, rules: &R, c: R::Key) -> (u64, [bool; 8]) {
        let images = rules.images(c);
        let mut first = [false; 8];
        let mut n = 0;
        for g in 0..self.symmetries {
            if !images[..g].contains(&images[g]) {
                first[g] = true;
                n += 1;
            }
        }
        (n, first)
    }
}

impl Weights for Orbits {
    type Count = Count34;
    const TOTALS: bool = true;
    type Sum = u64;

    fn start<R: Rules>(&self, _rules: &R, _t: u8) -> Count34 {
        Count34::new(1)
    }

    #[inline(always)]
    fn carry<R: Rules>(&self, _rules: &R, n: &Count34, _t: u8) -> Count34 {
        *n
    }

    #[inline(always)]
    fn end(&self, sum: &mut u64, n: &Count34, hashes: &Counts) {
        let all = state::lane_total(&hashes[..self.symmetries]);
        *sum = sum.wrapping_add(n.get().wrapping_mul(all));
    }

    #[inline(always)]
    fn end_successors<R: Rules>(&self, rules: &R, sum: &mut u64, n: &Count34, s: R::Key) {
        self.end_totals(sum, n, rules.successor_hash_total(s));
    }

    #[inline(always)]
    fn end_totals(&self, sum: &mut u64, n: &Count34, total: u64) {
        *sum = sum.wrapping_add(n.get().wrapping_mul(total));
    }

    #[inline(always)]
    fn end_successors_of_many<R: Rules>(
        &self,
        rules: &R,
        sum: &mut u64,
        keys: &[R::Key],
        counts: impl Fn(usize) -> Count34,
    ) {
        let mut totals = [0u64; MANY_MAX];
        rules.successor_hash_totals_of_many(keys, &mut totals);
        for (j, &t) in totals[..keys.len()].iter().enumerate() {
            *sum = sum.wrapping_add(counts(j).get().wrapping_mul(t));
        }
    }

    fn cheap_successor_sums<R: Rules>(&self, rules: &R) -> bool {
        rules.cheap_successor_totals()
    }

    #[inline(always)]
    fn paths(&self, n: &Count34) -> u32 {
        n.get() as u32
    }

    fn answer(&self, sum: &u64) -> u32 {
        (sum >> self.shift) as u32 & HASH_MASK
    }

    /// Every board of a stored position's orbit: each is reached (a mass that wrapped to zero
    /// modulo 2^34 still counts paths).
    fn boards<R: Rules>(&self, rules: &R, c: R::Key, _n: &Count34) -> u64 {
        self.orbit(rules, c).0
    }
}

/// Exact path counts ([`Exact`]): a mass (below 2^128: the search refuses a depth whose
/// paths could pass it) and the lanes reached, one bit a symmetry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub(crate) struct Paths {
    /// The mass's low and high 64 bits (8-byte words: a position's slot needs no 16-byte
    /// alignment).
    mass: [u64; 2],
    /// The lanes reached, one bit a symmetry.
    seen: u64,
}

impl Paths {
    /// `mass` paths reaching the lanes of `seen`.
    #[inline(always)]
    fn new(mass: u128, seen: u8) -> Paths {
        Paths { mass: [mass as u64, (mass >> 64) as u64], seen: u64::from(seen) }
    }

    /// The number of paths.
    #[inline(always)]
    pub(crate) fn mass(self) -> u128 {
        u128::from(self.mass[1]) << 64 | u128::from(self.mass[0])
    }

    /// The lanes reached, one bit a symmetry.
    #[inline(always)]
    fn seen(self) -> u8 {
        self.seen as u8
    }
}

impl Tally for Paths {
    /// Masses added (no sum passes 2^128: the search checks the bound a depth ahead), lanes
    /// reached joined.
    #[inline(always)]
    fn merge(self, add: Self) -> Self {
        Paths::new(self.mass().wrapping_add(add.mass()), self.seen() | add.seen())
    }
}

/// Exact counts of paths (module docs): what perft counts. A stored position carries its
/// orbit's mass and the lanes its paths reach; a sum counts paths, whatever their hashes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Exact {
    /// `lane[t][g]`: the lane that lane `g` of a parent becomes in a successor canonicalised by
    /// `t` ([`Rules::permute`]); `None` when every symmetry fixes the start, so every lane of
    /// a stored position is reached and none needs following.
    lane: Option<[[u8; 8]; 8]>,
    /// The lanes of the group, one bit a symmetry.
    group: u8,
}

impl Exact {
    /// Exact counts for a search from `start` under `rules`.
    pub(crate) fn of<R: Rules>(rules: &R, start: R::Key) -> Exact {
        let group = (1u16 << rules.symmetries()).wrapping_sub(1) as u8;
        if Orbits::of(rules, start).is_some() {
            return Exact { lane: None, group };
        }
        let lane = std::array::from_fn(|t| {
            std::array::from_fn(|g| {
                let mut unit = [0u32; 8];
                unit[g] = 1;
                let moved = rules.permute(&unit, t as u8);
                moved.iter().position(|&x| x == 1).unwrap_or(g) as u8
            })
        });
        Exact { lane: Some(lane), group }
    }

    /// `seen` as a successor canonicalised by `t` reaches it.
    #[inline(always)]
    fn permute(&self, seen: u8, t: u8) -> u8 {
        match &self.lane {
            None => seen,
            Some(lane) => {
                let map = &lane[usize::from(t & 7)];
                (0..8).filter(|&g| seen >> g & 1 != 0).fold(0, |m, g| m | 1 << map[g])
            }
        }
    }
}

impl Weights for Exact {
    type Count = Paths;
    const TOTALS: bool = false;
    type Sum = Paths;

    fn start<R: Rules>(&self, _rules: &R, t: u8) -> Paths {
        let seen = if self.lane.is_none() { self.group } else { self.permute(1, t) };
        Paths::new(1, seen)
    }

    #[inline(always)]
    fn carry<R: Rules>(&self, _rules: &R, n: &Paths, t: u8) -> Paths {
        Paths::new(n.mass(), self.permute(n.seen(), t))
    }

    #[inline(always)]
    fn end(&self, sum: &mut Paths, n: &Paths, _hashes: &Counts) {
        *sum = Paths::new(sum.mass().wrapping_add(n.mass()), 0);
    }

    /// Every move from `s` ends a path: the mass once a move.
    fn end_successors<R: Rules>(&self, rules: &R, sum: &mut Paths, n: &Paths, s: R::Key) {
        let mut moves = 0u128;
        rules.successors(s, |_| moves += 1);
        *sum = Paths::new(sum.mass().wrapping_add(n.mass().wrapping_mul(moves)), 0);
    }

    fn end_successors_of_many<R: Rules>(
        &self,
        rules: &R,
        sum: &mut Paths,
        keys: &[R::Key],
        counts: impl Fn(usize) -> Paths,
    ) {
        for (j, &s) in keys.iter().enumerate() {
            self.end_successors(rules, sum, &counts(j), s);
        }
    }

    fn cheap_successor_sums<R: Rules>(&self, _rules: &R) -> bool {
        false
    }

    #[inline(always)]
    fn paths(&self, n: &Paths) -> u32 {
        n.mass() as u32
    }

    /// Not a hash sum: the paths counted, modulo 2^30.
    fn answer(&self, sum: &Paths) -> u32 {
        sum.mass() as u32 & HASH_MASK
    }

    fn boards<R: Rules>(&self, rules: &R, c: R::Key, n: &Paths) -> u64 {
        let seen = n.seen();
        let lanes: Counts = std::array::from_fn(|g| u32::from(seen >> g & 1));
        rules.boards(c, &lanes).into()
    }

    fn reached(&self, n: &Paths) -> Paths {
        Paths::new(0, n.seen())
    }

    fn exact(&self, sum: &Paths) -> Option<u128> {
        Some(sum.mass())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use state::canon::Portable;
    use state::{Grid, Level, Ring3, Shape};

    /// Which counting each start gets, on the 3x3 fast path and the general grid alike.
    fn cosets_of<R: Rules>(rules: &R) {
        let lanes = |cells: &[u8]| {
            let start = rules.pack(cells);
            match (Orbits::of(rules, start), Cosets::<4>::of(rules, start)) {
                (Some(_), None) => 1,
                (None, Some(_)) => 4,
                (None, None) => 8,
                _ => panic!("two countings for {cells:?}"),
            }
        };
        // A corner die (a diagonal fixes it), an edge die (a reflection), the empty board.
        assert_eq!(lanes(&[1, 0, 0, 0, 0, 0, 0, 0, 0]), 4);
        assert_eq!(lanes(&[0, 2, 0, 0, 0, 0, 0, 0, 0]), 4);
        assert_eq!(lanes(&[0; 9]), 1);
        // Two opposite corners (the half turn and both diagonals: 4 lanes of a subgroup of
        // two); two dice the other diagonal maps to each other; two that nothing fixes.
        assert_eq!(lanes(&[3, 0, 0, 0, 0, 0, 0, 0, 3]), 4);
        assert_eq!(lanes(&[1, 2, 0, 0, 0, 2, 0, 0, 1]), 4);
        assert_eq!(lanes(&[0, 1, 0, 0, 0, 1, 0, 0, 0]), 4);
        assert_eq!(lanes(&[1, 2, 0, 0, 0, 0, 0, 0, 0]), 8);
    }

    #[test]
    fn starts_get_one_lane_a_coset_of_their_fixers() {
        cosets_of(&Ring3::new(Portable));
        cosets_of(&Grid::<u64>::new(Shape::SQUARE3, Level::Portable));
    }

    /// A pinwheel on the 4x4 board: only the quarter turns fix it, and the half turn is the
    /// subgroup of two whose cosets are the lanes.
    #[test]
    fn turns_alone_give_the_half_turns_cosets() {
        let grid = Grid::<u64>::new(Shape::new(4, 4).unwrap(), Level::Portable);
        #[rustfmt::skip]
        let pinwheel = [
            0, 1, 0, 0,
            0, 0, 0, 1,
            1, 0, 0, 0,
            0, 0, 1, 0,
        ];
        let start = grid.pack(&pinwheel);
        assert!(Orbits::of(&grid, start).is_none());
        assert!(Cosets::<4>::of(&grid, start).is_some());
    }

    #[test]
    fn a_board_no_symmetry_fixes_is_found() {
        for side in 2..=6 {
            let grid = Grid::<u128>::new(Shape::new(side, side).unwrap(), Level::Portable);
            assert!(asymmetric(&grid).is_some(), "{side}x{side}");
        }
        for side in 7..=8 {
            let grid = Grid::<state::U192>::new(Shape::new(side, side).unwrap(), Level::Portable);
            assert!(asymmetric(&grid).is_some(), "{side}x{side}");
        }
    }
}

//! How the search counts the paths that reach a stored (canonical) position.
//!
//! Two ways, one trait ([`Weights`]):
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
//!   two up to 8), so it is kept modulo 2^64 in a `u64` and divided at the end: 61 exact bits,
//!   of which the answer keeps 30. A position costs 8 bytes of counts instead of 32, and no
//!   permutation.

use frontier::Tally;
use state::{mul_add, Counts, Rules, HASH_MASK};

/// The most positions [`Rules::successors_of_many`] takes at once, over all rules.
pub(crate) const MANY_MAX: usize = 16;

/// A way of counting paths: what a stored position carries, how a successor's share is made
/// from its parent's, and how ended paths add up to the answer.
pub(crate) trait Weights: Copy + Send + Sync {
    /// The counts stored with a position.
    type Count: Tally;
    /// True when threads filling one set at once ([`frontier::SharedSet`], one atomic
    /// addition a successor) beats records and shards. False for 8 lanes: 8 locked additions
    /// a successor cost more (random 5x5 to depth 8, 2 threads: 397 ms against 355 ms with
    /// shards), and lanes are kept in the dense layout, which cannot be shared.
    const SHARED_FILL: bool;
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
    fn end_successors<R: Rules>(&self, rules: &R, sum: &mut Self::Sum, n: &Self::Count, s: R::Key);

    /// True when [`Weights::end_totals`] serves: the counts are one number a position, and
    /// what the last depth needs of a position's successors is their hash total
    /// ([`Rules::successor_hash_total`]).
    const TOTALS: bool;

    /// Adds to `sum` the hashes of the paths with counts `n` continued by every move from
    /// positions whose [`Rules::successor_hash_total`]s sum to `total`. Only where
    /// [`Weights::TOTALS`].
    fn end_totals(&self, sum: &mut Self::Sum, n: &Self::Count, total: u64);

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
    fn cheap_successor_sums<R: Rules>(&self, rules: &R) -> bool;

    /// The number of paths counts `n` stand for, modulo 2^32.
    fn paths(&self, n: &Self::Count) -> u32;

    /// The answer's 30 bits of a sum.
    fn answer(&self, sum: &Self::Sum) -> u32;

    /// The distinct boards a stored position `c` with counts `n` stands for.
    fn boards<R: Rules>(&self, rules: &R, c: R::Key, n: &Self::Count) -> u64;
}

/// 8 path counts a position, one per symmetry: any start.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lanes;

impl Weights for Lanes {
    type Count = Counts;
    const SHARED_FILL: bool = false;
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
    fn end_successors<R: Rules>(&self, rules: &R, sum: &mut Counts, n: &Counts, s: R::Key) {
        self.end(sum, n, &rules.successor_hashes(s));
    }

    fn end_totals(&self, _sum: &mut Counts, _n: &Counts, _total: u64) {
        unreachable!("8 lanes need each lane of the successor hashes, not their total")
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

    fn cheap_successor_sums<R: Rules>(&self, _rules: &R) -> bool {
        R::CHEAP_SUCCESSOR_HASHES
    }

    #[inline(always)]
    fn paths(&self, n: &Counts) -> u32 {
        n.iter().fold(0u32, |a, &x| a.wrapping_add(x))
    }

    fn answer(&self, sum: &Counts) -> u32 {
        state::fold_lanes(sum)
    }

    fn boards<R: Rules>(&self, rules: &R, c: R::Key, n: &Counts) -> u64 {
        rules.boards(c, n).into()
    }
}

/// One `u64` mass a position (module docs): starts that every symmetry fixes.
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
    type Count = u64;
    const SHARED_FILL: bool = true;
    const TOTALS: bool = true;
    type Sum = u64;

    fn start<R: Rules>(&self, _rules: &R, _t: u8) -> u64 {
        1
    }

    #[inline(always)]
    fn carry<R: Rules>(&self, _rules: &R, n: &u64, _t: u8) -> u64 {
        *n
    }

    #[inline(always)]
    fn end(&self, sum: &mut u64, n: &u64, hashes: &Counts) {
        let all = state::lane_total(&hashes[..self.symmetries]);
        *sum = sum.wrapping_add(n.wrapping_mul(all));
    }

    #[inline(always)]
    fn end_successors<R: Rules>(&self, rules: &R, sum: &mut u64, n: &u64, s: R::Key) {
        self.end_totals(sum, n, rules.successor_hash_total(s));
    }

    #[inline(always)]
    fn end_totals(&self, sum: &mut u64, n: &u64, total: u64) {
        *sum = sum.wrapping_add(n.wrapping_mul(total));
    }

    #[inline(always)]
    fn end_successors_of_many<R: Rules>(
        &self,
        rules: &R,
        sum: &mut u64,
        keys: &[R::Key],
        counts: impl Fn(usize) -> u64,
    ) {
        let mut totals = [0u64; MANY_MAX];
        rules.successor_hash_totals_of_many(keys, &mut totals);
        for (j, &t) in totals[..keys.len()].iter().enumerate() {
            *sum = sum.wrapping_add(counts(j).wrapping_mul(t));
        }
    }

    fn cheap_successor_sums<R: Rules>(&self, rules: &R) -> bool {
        rules.cheap_successor_totals()
    }

    #[inline(always)]
    fn paths(&self, n: &u64) -> u32 {
        *n as u32
    }

    fn answer(&self, sum: &u64) -> u32 {
        (sum >> self.shift) as u32 & HASH_MASK
    }

    fn boards<R: Rules>(&self, rules: &R, c: R::Key, n: &u64) -> u64 {
        if *n == 0 {
            0
        } else {
            self.orbit(rules, c).0
        }
    }
}

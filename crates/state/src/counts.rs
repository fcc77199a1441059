//! Path counts: one per symmetry, wrapping.

/// One path count per symmetry: lane `g` counts the paths that reached the board `g(c)`, where
/// `c` is the stored canonical key. Boards with 4 symmetries keep lanes `4..8` at zero.
/// Counts wrap modulo 2^32, which is exact modulo 2^30 (all the answer keeps).
pub type Counts = [u32; 8];

/// `a + b * c` lane by lane, wrapping.
#[inline(always)]
pub fn mul_add(a: &mut Counts, b: &Counts, c: &Counts) {
    for g in 0..8 {
        a[g] = a[g].wrapping_add(b[g].wrapping_mul(c[g]));
    }
}

/// The sum of `lanes` as integers, not wrapped: the one number of an orbit (its lanes are the
/// hashes of its images, say).
#[inline(always)]
pub fn lane_total(lanes: &[u32]) -> u64 {
    lanes.iter().map(|&x| u64::from(x)).sum()
}

/// The sum of `lanes` modulo 2^32 (the paths a position's counts stand for, say).
#[inline(always)]
pub fn lane_sum(lanes: &[u32]) -> u32 {
    lanes.iter().fold(0u32, |a, &x| a.wrapping_add(x))
}

/// The answer's 30 bits of a lane vector: the sum of its lanes, modulo 2^30.
pub fn fold_lanes(v: &Counts) -> u32 {
    lane_sum(v) & crate::shape::HASH_MASK
}

/// `[f(0), f(1), .., f(N - 1)]` by a loop that always inlines: the way hot loops build lanes.
/// `std::array::from_fn` calls its closure through a generic helper of `core` that stays out
/// of line (a call a lane) when a crate is optimised in pieces with no link-time pass, as the
/// `release` profile builds it.
#[inline(always)]
pub fn lanes<T: Copy + Default, const N: usize>(mut f: impl FnMut(usize) -> T) -> [T; N] {
    let mut out = [T::default(); N];
    for i in 0..N {
        out[i] = f(i);
    }
    out
}

//! The AVX2 kernel of the general path for `u64` keys: the 8 images in two 256-bit registers
//! (lanes `0..4` and `4..8`), ORed from the bytes' rows, then a horizontal minimum.
//!
//! AVX2 compares 64-bit lanes as signed integers only. That is exact here: a `u64` shape has at
//! most 21 cells (63 bits, [`crate::Grid::new`] asserts `3 * cells <= 64`) and a row holds only
//! bits of existing cells, so every lane is below 2^63.

use std::arch::x86_64::*;

use super::avx2::Avx2;

// As in `avx2.rs`: intrinsics are called straight from `#[inline(always)]` functions, never from
// `#[target_feature]` helpers, so that inside a kernel compiled for AVX2 (`solver::dispatch`)
// they become single instructions.
impl Avx2 {
    /// [`crate::canon::Portable::canonical_wide`] for `u64` keys: the smallest of the first
    /// `symmetries` (4 or 8) images and its lane, the smallest on ties.
    ///
    /// `rows` holds 256 rows per byte of the key (at most 8 bytes); every lane of every row must
    /// be below 2^63 (see the module documentation).
    #[inline(always)]
    pub(crate) fn canonical_u64(self, rows: &[[u64; 8]], s: u64, symmetries: usize) -> (u64, u8) {
        debug_assert!(rows.len() <= 8 * 256 && rows.len().is_multiple_of(256));
        debug_assert!(symmetries == 4 || symmetries == 8);
        let mut images = self.zero();
        for (k, table) in rows.chunks_exact(256).enumerate() {
            let row = &table[(s >> (8 * k)) as u8 as usize];
            debug_assert!(row.iter().all(|&x| x >> 63 == 0), "a lane needs the sign bit");
            images = self.or_row(images, row);
        }
        self.min_lane(images, symmetries == 8)
    }

    /// Two zero registers.
    #[inline(always)]
    fn zero(self) -> [__m256i; 2] {
        // SAFETY: `self` holds an `Avx2Token`, which exists only where the CPU has AVX2 (made
        // by `Avx2Token::new`, which asks the CPU, or vouched for by the caller of
        // `new_unchecked`).
        unsafe { [_mm256_setzero_si256(); 2] }
    }

    /// `acc | row`, lanes `0..4` in the first register and `4..8` in the second.
    #[inline(always)]
    fn or_row(self, acc: [__m256i; 2], row: &[u64; 8]) -> [__m256i; 2] {
        let p = row.as_ptr();
        // SAFETY: AVX2 as in `zero`; `row` is 8 u64 (64 bytes), read as two unaligned 32-byte
        // loads at offsets 0 and 32 (`p.add(4)` stays within the array).
        unsafe {
            [
                _mm256_or_si256(acc[0], _mm256_loadu_si256(p.cast())),
                _mm256_or_si256(acc[1], _mm256_loadu_si256(p.add(4).cast())),
            ]
        }
    }

    /// Lane by lane, the smaller of `a` and `b` as signed 64-bit integers (AVX2 has no 64-bit
    /// minimum: where a > b, take b).
    #[inline(always)]
    fn min64(self, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: AVX2 as in `zero`; register operations only.
        unsafe { _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b)) }
    }

    /// The smallest of lanes `0..4` (`0..8` when `all8`) of `v` as signed 64-bit integers, and
    /// the smallest lane holding it.
    #[inline(always)]
    fn min_lane(self, v: [__m256i; 2], all8: bool) -> (u64, u8) {
        let [lo, hi] = v;
        // SAFETY: AVX2 as in `zero`; register operations only.
        let (min, first) = unsafe {
            // With 4 symmetries, lanes 4..8 (zero) become i64::MAX: never below a lane 0..4, and
            // on a tie the lower lane wins.
            let hi = _mm256_or_si256(hi, _mm256_set1_epi64x(if all8 { 0 } else { i64::MAX }));
            // Three halvings: lanes g and g + 4, then the two 128-bit halves, then the two lanes
            // of each half.
            let m = self.min64(lo, hi);
            let m = self.min64(m, _mm256_permute4x64_epi64::<0x4E>(m));
            let m = self.min64(m, _mm256_shuffle_epi32::<0x4E>(m));
            // Every lane of m holds the minimum; the first lane equal to it is the symmetry.
            let eq_lo = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(lo, m)));
            let eq_hi = _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(hi, m)));
            (_mm_cvtsi128_si64(_mm256_castsi256_si128(m)), eq_lo | eq_hi << 4)
        };
        (min as u64, first.trailing_zeros() as u8)
    }
}

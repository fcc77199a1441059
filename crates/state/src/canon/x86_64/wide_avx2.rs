//! The AVX2 kernels of the general path for `u64` and `u128` keys: the 8 images in two 256-bit registers
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

// `u128` keys: the 8 images ORed in four registers (two images a register, low word first),
// then split into high and low words.
impl Avx2 {
    /// [`crate::canon::Portable::canonical_wide`] for `u128` keys: the smallest of the first
    /// `symmetries` (4 or 8) images and its lane, the smallest on ties.
    ///
    /// A row's lanes are compared as (high word, low word) pairs. AVX2 compares 64-bit lanes as
    /// signed integers only: a high word is below 2^63 (a `u128` shape has at most 42 cells, so
    /// 126 bits), and a low word is compared with its top bit flipped, which maps the unsigned
    /// order onto the signed one.
    #[inline(always)]
    pub(crate) fn canonical_u128(self, rows: &[[u128; 8]], s: u128, symmetries: usize) -> (u128, u8) {
        debug_assert!(rows.len() <= 16 * 256 && rows.len().is_multiple_of(256));
        debug_assert!(symmetries == 4 || symmetries == 8);
        let all8 = symmetries == 8;
        let mut acc = [self.zero(), self.zero()];
        for (k, table) in rows.chunks_exact(256).enumerate() {
            let row = &table[(s >> (8 * k)) as u8 as usize];
            debug_assert!(row.iter().all(|&x| x >> 127 == 0), "a lane needs the sign bit");
            let halves: &[[u64; 8]; 2] = bytemuck::cast_ref(row);
            // Lanes 0..4 only, with 4 symmetries: lanes 4..8 of every row are zero.
            acc[0] = self.or_row(acc[0], &halves[0]);
            if all8 {
                acc[1] = self.or_row(acc[1], &halves[1]);
            }
        }
        self.min_lane128(acc, all8)
    }

    /// The (high, low) words of the four `u128` lanes in `pair` (lanes 0 and 1 in the first
    /// register, 2 and 3 in the second), in the lane order 0, 2, 1, 3; the low words with
    /// their top bit flipped.
    #[inline(always)]
    fn split128(self, pair: [__m256i; 2]) -> (__m256i, __m256i) {
        // SAFETY: AVX2 as in `zero`; register operations only.
        unsafe {
            let flip = _mm256_set1_epi64x(i64::MIN);
            let lo = _mm256_xor_si256(_mm256_unpacklo_epi64(pair[0], pair[1]), flip);
            (_mm256_unpackhi_epi64(pair[0], pair[1]), lo)
        }
    }

    /// Lane by lane, the smaller of the pairs `(ah, al)` and `(bh, bl)` (high words compared
    /// first, then the flipped low words), as signed 64-bit integers.
    #[inline(always)]
    fn min128(self, a: (__m256i, __m256i), b: (__m256i, __m256i)) -> (__m256i, __m256i) {
        // SAFETY: AVX2 as in `zero`; register operations only.
        unsafe {
            let high = _mm256_cmpgt_epi64(a.0, b.0);
            let tied = _mm256_and_si256(_mm256_cmpeq_epi64(a.0, b.0), _mm256_cmpgt_epi64(a.1, b.1));
            let take_b = _mm256_or_si256(high, tied);
            (_mm256_blendv_epi8(a.0, b.0, take_b), _mm256_blendv_epi8(a.1, b.1, take_b))
        }
    }

    /// The lanes (in the order 0, 2, 1, 3 of [`Avx2::split128`]) where `v` equals `min`, as
    /// bits in lane order.
    #[inline(always)]
    fn equal128(self, v: (__m256i, __m256i), min: (__m256i, __m256i)) -> u32 {
        // SAFETY: AVX2 as in `zero`; register operations only.
        let m = unsafe {
            let eq = _mm256_and_si256(_mm256_cmpeq_epi64(v.0, min.0), _mm256_cmpeq_epi64(v.1, min.1));
            _mm256_movemask_pd(_mm256_castsi256_pd(eq)) as u32
        };
        // Bit 1 holds lane 2 and bit 2 lane 1.
        m & 0b1001 | (m >> 1 & 0b10) | (m << 1 & 0b100)
    }

    /// The smallest of the `u128` lanes `0..4` (`0..8` when `all8`) held as in
    /// [`Avx2::canonical_u128`], and the smallest lane holding it.
    #[inline(always)]
    fn min_lane128(self, acc: [[__m256i; 2]; 2], all8: bool) -> (u128, u8) {
        let a = self.split128(acc[0]);
        let b = self.split128(acc[1]);
        let mut m = if all8 { self.min128(a, b) } else { a };
        // SAFETY: AVX2 as in `zero`; register operations only.
        unsafe {
            // The two 128-bit halves, then the two lanes of each half.
            let swap = (_mm256_permute4x64_epi64::<0x4E>(m.0), _mm256_permute4x64_epi64::<0x4E>(m.1));
            m = self.min128(m, swap);
            let swap = (_mm256_shuffle_epi32::<0x4E>(m.0), _mm256_shuffle_epi32::<0x4E>(m.1));
            m = self.min128(m, swap);
        }
        let mut lanes = self.equal128(a, m);
        if all8 {
            lanes |= self.equal128(b, m) << 4;
        }
        // SAFETY: AVX2 as in `zero`; register operations only.
        let (high, low) = unsafe {
            let high = _mm_cvtsi128_si64(_mm256_castsi256_si128(m.0)) as u64;
            let low = _mm_cvtsi128_si64(_mm256_castsi256_si128(m.1)) as u64 ^ (1 << 63);
            (high, low)
        };
        ((high as u128) << 64 | low as u128, lanes.trailing_zeros() as u8)
    }
}

//! The AVX-512 backend of the general path ([`crate::Grid`]): the 8 images of a `u64` key in
//! one 512-bit register, of a `u128` key in two (then one of high words and one of low words),
//! and the smallest found by masked unsigned minimums and compares, which AVX2 lacks.

use std::arch::x86_64::*;

use crate::level::Avx512Token;

/// Canonicalisation of wide keys with AVX-512; only constructible on CPUs that have it: it
/// holds the [`Avx512Token`] proving the features of [`Level::Avx512`], and every method
/// that runs their instructions takes `self`.
///
/// [`Level::Avx512`]: crate::Level::Avx512
#[derive(Clone, Copy, Debug)]
pub struct Avx512 {
    cpu: Avx512Token,
}

// Intrinsics are called straight from `#[inline(always)]` functions, never from
// `#[target_feature]` helpers, so that inside code compiled for AVX-512 they become single
// instructions.
impl Avx512 {
    /// The backend, when this CPU supports [`Level::Avx512`].
    ///
    /// [`Level::Avx512`]: crate::Level::Avx512
    pub fn new() -> Option<Avx512> {
        Avx512Token::new().map(Avx512::with_token)
    }

    /// The backend on a CPU proven to support [`Level::Avx512`] (by `cpu`).
    ///
    /// [`Level::Avx512`]: crate::Level::Avx512
    pub fn with_token(cpu: Avx512Token) -> Avx512 {
        Avx512 { cpu }
    }

    /// The token this backend holds.
    #[inline(always)]
    pub fn token(self) -> Avx512Token {
        self.cpu
    }

    /// The lanes a canonical form is taken from: `0..4` or `0..8`.
    #[inline(always)]
    fn lanes(symmetries: usize) -> __mmask8 {
        debug_assert!(symmetries == 4 || symmetries == 8);
        if symmetries == 8 {
            0xFF
        } else {
            0x0F
        }
    }

    /// `acc | *p`, 64 bytes from `p`.
    ///
    /// # Safety
    /// `p` points to 64 readable bytes.
    #[inline(always)]
    unsafe fn or_load(self, acc: __m512i, p: *const u64) -> __m512i {
        // SAFETY: `self` holds an `Avx512Token`, which exists only where the CPU has the
        // features of `Level::Avx512` (made by `Avx512Token::new`, which asks the CPU, or
        // vouched for by the caller of `new_unchecked`); `p` points to 64 readable bytes (this
        // function's contract), read unaligned.
        unsafe { _mm512_or_si512(acc, _mm512_loadu_si512(p.cast())) }
    }

    /// [`crate::canon::Portable::canonical_wide`] for `u64` keys: the smallest of the first
    /// `symmetries` (4 or 8) images and its lane, the smallest on ties.
    #[inline(always)]
    pub(crate) fn canonical_u64(self, rows: &[[u64; 8]], s: u64, symmetries: usize) -> (u64, u8) {
        debug_assert!(rows.len() <= 8 * 256 && rows.len().is_multiple_of(256));
        let lanes = Avx512::lanes(symmetries);
        // SAFETY: AVX-512 as in `or_load`; register operations only.
        let mut images = unsafe { _mm512_setzero_si512() };
        for (k, table) in rows.chunks_exact(256).enumerate() {
            let row = &table[(s >> (8 * k)) as u8 as usize];
            // SAFETY: a row is 8 `u64`, 64 bytes.
            images = unsafe { self.or_load(images, row.as_ptr()) };
        }
        // SAFETY: AVX-512 as in `or_load`; register operations only.
        unsafe {
            let min = _mm512_mask_reduce_min_epu64(lanes, images);
            let at = _mm512_mask_cmpeq_epu64_mask(lanes, images, _mm512_set1_epi64(min as i64));
            (min, at.trailing_zeros() as u8)
        }
    }

    /// [`crate::canon::Portable::canonical_wide`] for `u128` keys: the smallest of the first
    /// `symmetries` (4 or 8) images and its lane, the smallest on ties.
    ///
    /// The smallest high word is found first, then the smallest low word among the lanes that
    /// hold it, both as unsigned integers (any `u128` is exact).
    #[inline(always)]
    pub(crate) fn canonical_u128(self, rows: &[[u128; 8]], s: u128, symmetries: usize) -> (u128, u8) {
        debug_assert!(rows.len() <= 16 * 256 && rows.len().is_multiple_of(256));
        let lanes = Avx512::lanes(symmetries);
        // SAFETY: AVX-512 as in `or_load`; register operations only.
        let mut images = unsafe { [_mm512_setzero_si512(); 2] };
        for (k, table) in rows.chunks_exact(256).enumerate() {
            let row: &[u64; 16] = bytemuck::cast_ref(&table[(s >> (8 * k)) as u8 as usize]);
            // SAFETY: a row is 8 `u128`, 128 bytes: lanes 0..4 from its start, 4..8 from byte 64.
            // With 4 symmetries lanes 4..8 are zero in every row and never read.
            unsafe {
                images[0] = self.or_load(images[0], row.as_ptr());
                if lanes == 0xFF {
                    images[1] = self.or_load(images[1], row.as_ptr().add(8));
                }
            }
        }
        // SAFETY: AVX-512 as in `or_load`; register operations only.
        unsafe {
            // 64-bit word j of `images[0]` is word j of the pair, word j - 8 of `images[1]`:
            // lane g's low word is word 2g, its high word 2g + 1.
            let low =
                _mm512_permutex2var_epi64(images[0], _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), images[1]);
            let high =
                _mm512_permutex2var_epi64(images[0], _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1), images[1]);
            let min_high = _mm512_mask_reduce_min_epu64(lanes, high);
            let at_high = _mm512_mask_cmpeq_epu64_mask(lanes, high, _mm512_set1_epi64(min_high as i64));
            let min_low = _mm512_mask_reduce_min_epu64(at_high, low);
            let at = _mm512_mask_cmpeq_epu64_mask(at_high, low, _mm512_set1_epi64(min_low as i64));
            ((min_high as u128) << 64 | min_low as u128, at.trailing_zeros() as u8)
        }
    }
}

//! The AVX2 backend: the 8 images in one 256-bit register, then a horizontal minimum.

use std::arch::x86_64::*;

use tables::ring3::RING_MASK;

use super::super::{reverse_ring, Canon3, COMPOSE32, ROTATE};
use crate::rules::{Counts, Level};

/// Canonicalisation with AVX2; only constructible on CPUs that have it.
#[derive(Clone, Copy, Debug)]
pub struct Avx2 {
    _private: (),
}

impl Avx2 {
    /// The backend, when this CPU supports [`Level::Avx2`].
    pub fn new() -> Option<Avx2> {
        Level::Avx2.is_available().then_some(Avx2 { _private: () })
    }

    /// The backend without checking the CPU.
    ///
    /// # Safety
    /// The CPU must support every feature of [`Level::Avx2`].
    pub unsafe fn new_unchecked() -> Avx2 {
        Avx2 { _private: () }
    }
}

// The intrinsics are called straight from these `#[inline(always)]` methods (not from a
// `#[target_feature]` helper, which could not be forced inline): inside a kernel compiled for
// AVX2 (see `solver::dispatch`) they become single instructions.
impl Canon3 for Avx2 {
    const LEVEL: Level = Level::Avx2;

    #[inline(always)]
    fn canonical(self, s: u32) -> (u32, u8) {
        let ring = s & RING_MASK;
        let rev = reverse_ring(ring);
        // SAFETY: an `Avx2` value exists only when `Level::Avx2.is_available()` held (or the
        // caller of `new_unchecked` vouched for it); ROTATE is 8 u32, loaded unaligned.
        let best = unsafe {
            // Lanes 0..4 hold the ring, 4..8 its reversal; lane t rotates left by ROTATE[t].
            let v = _mm256_blend_epi32::<0xF0>(_mm256_set1_epi32(ring as i32), _mm256_set1_epi32(rev as i32));
            let left = _mm256_loadu_si256(ROTATE.as_ptr().cast());
            let right = _mm256_sub_epi32(_mm256_set1_epi32(24), left);
            let img = _mm256_and_si256(
                _mm256_or_si256(_mm256_sllv_epi32(v, left), _mm256_srlv_epi32(v, right)),
                _mm256_set1_epi32(RING_MASK as i32),
            );
            // Key = image << 3 | t: the minimum is the smallest image, then the smallest t.
            let key = _mm256_or_si256(_mm256_slli_epi32::<3>(img), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
            let m = _mm_min_epu32(_mm256_castsi256_si128(key), _mm256_extracti128_si256::<1>(key));
            let m = _mm_min_epu32(m, _mm_shuffle_epi32::<0x4E>(m));
            let m = _mm_min_epu32(m, _mm_shuffle_epi32::<0xB1>(m));
            _mm_cvtsi128_si32(m) as u32
        };
        ((s & !RING_MASK) | best >> 3, (best & 7) as u8)
    }

    #[inline(always)]
    fn permute(self, counts: &Counts, t: u8) -> Counts {
        let mut out = [0u32; 8];
        // SAFETY: as in `canonical`; Counts and COMPOSE32 rows are 8 u32 (32 bytes), loaded and
        // stored unaligned.
        unsafe {
            let c = _mm256_loadu_si256(counts.as_ptr().cast());
            let p = _mm256_loadu_si256(COMPOSE32[t as usize & 7].as_ptr().cast());
            _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm256_permutevar8x32_epi32(c, p));
        }
        out
    }
}

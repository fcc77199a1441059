//! The AVX2 backend: the 8 images in one 256-bit register, then a horizontal minimum.

use std::arch::x86_64::*;

use tables::ring3::RING_MASK;

use super::super::{reverse_ring, Canon3, COMPOSE32, ROTATE};
use crate::counts::Counts;
use crate::level::{Avx2Token, Isa};

/// Canonicalisation with AVX2; only constructible on CPUs that have it: it holds the
/// [`Avx2Token`] proving the features of [`Level::Avx2`], and every method that runs their
/// instructions takes `self`.
///
/// Where BMI2's bit gather and scatter (`pext`, `pdep`) are fast ([`fast_bit_gather`]), it
/// also uses them: for neighbourhood patterns (one `pext` each) and for reversing the ring.
///
/// [`Level::Avx2`]: crate::Level::Avx2
#[derive(Clone, Copy, Debug)]
pub struct Avx2 {
    cpu: Avx2Token,
    gather: bool,
}

impl Avx2 {
    /// The backend, when this CPU supports [`Level::Avx2`].
    ///
    /// [`Level::Avx2`]: crate::Level::Avx2
    pub fn new() -> Option<Avx2> {
        Avx2Token::new().map(Avx2::with_token)
    }

    /// The backend on a CPU proven to support [`Level::Avx2`] (by `cpu`).
    ///
    /// [`Level::Avx2`]: crate::Level::Avx2
    pub fn with_token(cpu: Avx2Token) -> Avx2 {
        Avx2 { cpu, gather: fast_bit_gather() }
    }

    /// The backend without checking the CPU.
    ///
    /// # Safety
    /// The CPU must support every feature of [`Level::Avx2`].
    ///
    /// [`Level::Avx2`]: crate::Level::Avx2
    pub unsafe fn new_unchecked() -> Avx2 {
        // SAFETY: the CPU has every feature of `Level::Avx2` (this function's contract, the
        // same as the token's).
        Avx2::with_token(unsafe { Avx2Token::new_unchecked() })
    }

    /// The token this backend holds.
    #[inline(always)]
    pub fn token(self) -> Avx2Token {
        self.cpu
    }

    /// The same backend, using BMI2's bit gather or not (tests compare both ways; either gives
    /// the same results, and both run on any CPU with [`Level::Avx2`], only more slowly with it
    /// where it is slow).
    ///
    /// [`Level::Avx2`]: crate::Level::Avx2
    pub fn with_gather(self, gather: bool) -> Avx2 {
        Avx2 { gather, ..self }
    }
}

/// True when this CPU runs BMI2's `pext` and `pdep` fast (a few cycles): every CPU that has
/// them but AMD's (and Hygon's) before Zen 3, which run them in microcode, up to hundreds of
/// cycles. Read from the CPUID leaves asked once a process (see `state::cpu`).
pub fn fast_bit_gather() -> bool {
    crate::cpu::Cpu::get().fast_bit_gather()
}

/// [`super::super::reverse_ring`] with BMI2: the eight 3-bit positions spread one a byte,
/// the bytes reversed, gathered back.
///
/// # Safety
/// The CPU must support BMI2.
#[inline(always)]
unsafe fn reverse_ring_bmi2(ring: u32) -> u32 {
    const BYTES: u64 = 0x0707_0707_0707_0707;
    // SAFETY: the caller's.
    unsafe { _pext_u64(_pdep_u64(ring as u64, BYTES).swap_bytes(), BYTES) as u32 }
}

// The intrinsics are called straight from these `#[inline(always)]` methods (not from a
// `#[target_feature]` helper, which could not be forced inline): inside a kernel compiled for
// AVX2 (see `solver::dispatch`) they become single instructions.
impl Canon3 for Avx2 {
    #[inline]
    fn isa(self) -> Isa {
        Isa::Avx2(self.cpu)
    }

    #[inline(always)]
    fn canonical(self, s: u32) -> (u32, u8) {
        let ring = s & RING_MASK;
        // SAFETY: `self.cpu` proves the CPU has BMI2 (a feature of `Level::Avx2`).
        let rev = if self.gather { unsafe { reverse_ring_bmi2(ring) } } else { reverse_ring(ring) };
        // SAFETY: `self.cpu` proves the CPU has AVX2 (an `Avx2Token` exists only where it
        // does); ROTATE is 8 u32, loaded unaligned.
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
    fn gathers(self) -> bool {
        self.gather
    }

    #[inline(always)]
    fn gather(self, s: u32, mask: u32) -> usize {
        // SAFETY: `self.cpu` proves the CPU has BMI2, as in `canonical`.
        unsafe { _pext_u32(s, mask) as usize }
    }

    #[inline(always)]
    fn permute(self, counts: &Counts, t: u8) -> Counts {
        let mut out = [0u32; 8];
        // SAFETY: `self.cpu` proves the CPU has AVX2, as in `canonical`; Counts and COMPOSE32
        // rows are 8 u32 (32 bytes), loaded and stored unaligned.
        unsafe {
            let c = _mm256_loadu_si256(counts.as_ptr().cast());
            let p = _mm256_loadu_si256(COMPOSE32[t as usize & 7].as_ptr().cast());
            _mm256_storeu_si256(out.as_mut_ptr().cast(), _mm256_permutevar8x32_epi32(c, p));
        }
        out
    }
}

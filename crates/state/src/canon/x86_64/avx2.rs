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

/// The canonical forms of 8 keys, one a lane (see [`Canon3::canonical_many`]): lane `j` of
/// the first result is the canonical key of lane `j` of `s`, of the second its symmetry.
///
/// The reversal of each ring swaps its two 12-bit halves, then the 6-bit blocks within them,
/// then the 3-bit positions within those (position `p` to `p ^ 4 ^ 2 ^ 1 = 7 - p`). Image `t`
/// shifted left by 3, with `t` in the low bits, is a rotation of the ring (or of its reversal)
/// by `ROTATE[t]` within 24 bits, taken 3 bits further left: the minimum over `t` is the
/// smallest image, then the smallest `t`, as in `canonical`.
///
/// # Safety
/// The CPU must support AVX2.
#[inline(always)]
unsafe fn canonical8(s: __m256i) -> (__m256i, __m256i) {
    /// Image `T`'s key: `base` rotated left within 24 bits by `L - 3` (which is `21 - R`),
    /// shifted left by 3, OR `T`. The shifts by `L` and `R` take each bit straight to its
    /// place; the `and` drops the bits past 27 and the low 3 bits the right shift brings in.
    #[inline(always)]
    unsafe fn image<const L: i32, const R: i32, const T: i32>(base: __m256i, mask3: __m256i) -> __m256i {
        // SAFETY: the caller's (AVX2).
        unsafe {
            let rotated = _mm256_or_si256(_mm256_slli_epi32::<L>(base), _mm256_srli_epi32::<R>(base));
            _mm256_or_si256(_mm256_and_si256(rotated, mask3), _mm256_set1_epi32(T))
        }
    }
    /// Swaps the blocks of `base` under `low` with the `SHIFT` bits above them.
    #[inline(always)]
    unsafe fn swap<const SHIFT: i32>(base: __m256i, low: i32) -> __m256i {
        // SAFETY: the caller's (AVX2).
        unsafe {
            let low = _mm256_set1_epi32(low);
            let up = _mm256_slli_epi32::<SHIFT>(_mm256_and_si256(base, low));
            _mm256_or_si256(up, _mm256_and_si256(_mm256_srli_epi32::<SHIFT>(base), low))
        }
    }
    // SAFETY: the caller's (AVX2).
    unsafe {
        let mask = _mm256_set1_epi32(RING_MASK as i32);
        let mask3 = _mm256_set1_epi32((RING_MASK << 3) as i32);
        let ring = _mm256_and_si256(s, mask);
        let halves = _mm256_and_si256(
            _mm256_or_si256(_mm256_slli_epi32::<12>(ring), _mm256_srli_epi32::<12>(ring)),
            mask,
        );
        let rev = swap::<3>(swap::<6>(halves, 0x03F_03F), 0x1C7_1C7);
        let mut best = _mm256_slli_epi32::<3>(ring);
        // ROTATE: 6, 12, 18 of the ring; 3, 9, 15, 21 of its reversal.
        best = _mm256_min_epu32(best, image::<9, 15, 1>(ring, mask3));
        best = _mm256_min_epu32(best, image::<15, 9, 2>(ring, mask3));
        best = _mm256_min_epu32(best, image::<21, 3, 3>(ring, mask3));
        best = _mm256_min_epu32(best, image::<6, 18, 4>(rev, mask3));
        best = _mm256_min_epu32(best, image::<12, 12, 5>(rev, mask3));
        best = _mm256_min_epu32(best, image::<18, 6, 6>(rev, mask3));
        best = _mm256_min_epu32(best, image::<24, 0, 7>(rev, mask3));
        let key = _mm256_or_si256(_mm256_andnot_si256(mask, s), _mm256_srli_epi32::<3>(best));
        (key, _mm256_and_si256(best, _mm256_set1_epi32(7)))
    }
}

// The intrinsics are called straight from these `#[inline(always)]` methods (not from a
// `#[target_feature]` helper, which could not be forced inline): inside a kernel compiled for
// AVX2 (see `solver::dispatch`) they become single instructions.
impl Canon3 for Avx2 {
    #[inline]
    fn isa(self) -> Isa {
        Isa::Avx2(self.cpu)
    }

    const SIMD_ONLY: bool = true;

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
    fn canonical_many(self, keys: &[u32], canonical: &mut [u32], symmetry: &mut [u8]) {
        let n = keys.len();
        let (canonical, symmetry) = (&mut canonical[..n], &mut symmetry[..n]);
        let whole = n - n % 8;
        for j in (0..whole).step_by(8) {
            // SAFETY: `self.cpu` proves the CPU has AVX2, as in `canonical`; `j + 8 <= n`, so
            // the 32-byte load and store are within `keys` and `canonical`, the 8-byte store
            // within `symmetry` (all unaligned).
            unsafe {
                let (c, t) = canonical8(_mm256_loadu_si256(keys.as_ptr().add(j).cast()));
                _mm256_storeu_si256(canonical.as_mut_ptr().add(j).cast(), c);
                // Byte 0 of each lane to the low 4 bytes of its half, the halves' to bytes 0..8.
                let bytes = _mm256_shuffle_epi8(t, _mm256_set1_epi32(0x0C08_0400));
                let low = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(
                    bytes,
                    _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0),
                ));
                _mm_storel_epi64(symmetry.as_mut_ptr().add(j).cast(), low);
            }
        }
        for j in whole..n {
            (canonical[j], symmetry[j]) = self.canonical(keys[j]);
        }
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

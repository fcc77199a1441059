//! Canonicalisation of the general path's keys ([`crate::Grid`]), one backend per instruction
//! set, chosen once per grid.
//!
//! A grid holds, for each byte `k` of a key and each value `b` of that byte, the row of the 8
//! images (one lane per symmetry) of the key holding only that byte: the images of a key are the
//! OR of its bytes' rows, and its canonical form the smallest of the first 4 or 8 lanes
//! (smallest lane on ties). [`Portable::canonical_wide`] does this for every key width;
//! the AVX2 and AVX-512 backends (`x86_64/wide_avx2.rs`, `x86_64/avx512.rs`) for `u64` keys
//! (4x4 and every shape of 11 to 21 cells) and `u128` keys (22 to 42 cells).
//!
//! Which kernels exist depends on the key type, so the dispatch goes through [`WideKey`], a
//! sealed supertrait of [`crate::PackedKey`]: `u64` and `u128` match on the grid's [`Wide`],
//! the other widths always take the portable code.

use super::Portable;
use crate::key::{PackedKey, U192};
use crate::level::Isa;

/// The canonicalisation backend of one [`crate::Grid`], chosen when it is built.
#[derive(Clone, Copy, Debug)]
pub enum Wide {
    /// [`Portable::canonical_wide`], for every key width.
    Portable,
    /// AVX2 kernels for `u64` and `u128` keys (others fall back to the portable code). Holds
    /// the [`super::Avx2`] value (and so its token), so it exists only where the CPU has AVX2.
    #[cfg(target_arch = "x86_64")]
    Avx2(super::Avx2),
    /// AVX-512 kernels for `u64` and `u128` keys (others fall back to the portable code).
    /// Holds the [`super::x86_64::avx512::Avx512`] value (and so its token), so it exists
    /// only where the CPU has AVX-512.
    #[cfg(target_arch = "x86_64")]
    Avx512(super::x86_64::avx512::Avx512),
}

impl Wide {
    /// The backend for hot loops compiled for `isa`: the SIMD one `isa` proves.
    pub fn new(isa: Isa) -> Wide {
        match isa {
            Isa::Portable => Wide::Portable,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2(cpu) => Wide::Avx2(super::Avx2::with_token(cpu)),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512(cpu) => Wide::Avx512(super::x86_64::avx512::Avx512::with_token(cpu)),
            #[cfg(not(target_arch = "x86_64"))]
            _ => Wide::Portable,
        }
    }
}

/// The per-width hook of [`crate::Grid`]'s canonicalisation. Sealed: nameable only inside this
/// crate, implemented for the four key types.
pub trait WideKey: Sized {
    /// The smallest of the first `symmetries` (4 or 8) lanes of the OR of `rows[256 k + byte
    /// k of s]` over the bytes `k < rows.len() / 256`, and its lane (the smallest on ties).
    #[inline(always)]
    fn canonical_wide(rows: &[[Self; 8]], s: Self, symmetries: usize, _wide: Wide) -> (Self, u8)
    where
        Self: PackedKey,
    {
        Portable.canonical_wide(rows, s, symmetries)
    }
}

impl WideKey for u32 {}
impl WideKey for U192 {}

impl WideKey for u64 {
    #[inline(always)]
    fn canonical_wide(rows: &[[u64; 8]], s: u64, symmetries: usize, wide: Wide) -> (u64, u8) {
        match wide {
            #[cfg(target_arch = "x86_64")]
            Wide::Avx2(b) => b.canonical_u64(rows, s, symmetries),
            #[cfg(target_arch = "x86_64")]
            Wide::Avx512(b) => b.canonical_u64(rows, s, symmetries),
            Wide::Portable => Portable.canonical_wide(rows, s, symmetries),
        }
    }
}

impl WideKey for u128 {
    #[inline(always)]
    fn canonical_wide(rows: &[[u128; 8]], s: u128, symmetries: usize, wide: Wide) -> (u128, u8) {
        match wide {
            #[cfg(target_arch = "x86_64")]
            Wide::Avx2(b) => b.canonical_u128(rows, s, symmetries),
            #[cfg(target_arch = "x86_64")]
            Wide::Avx512(b) => b.canonical_u128(rows, s, symmetries),
            Wide::Portable => Portable.canonical_wide(rows, s, symmetries),
        }
    }
}

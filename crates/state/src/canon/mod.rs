//! Canonicalisation, one backend per instruction set: of the 3x3 ring packing (see
//! [`tables::ring3`]) through [`Canon3`], and of the general path's keys ([`crate::Grid`], its
//! `u64` and `u128` keys) through the grid's level.
//!
//! A backend is a small value that can only be made where its instructions exist
//! (`new() -> Option<Self>`): a SIMD backend holds the token proving them ([`crate::Isa`]),
//! and its methods run SIMD instructions only through that proof. The ring's search is
//! generic over it; a grid picks its backend once, when it is built. Either way the choice is
//! made once, never per board. [`Portable`] runs everywhere and is the reference every other
//! backend is tested against.

use crate::counts::Counts;
use crate::level::Isa;

pub mod portable;
mod wide;
#[cfg(target_arch = "x86_64")]
pub mod x86_64;

pub use portable::Portable;
#[cfg(target_arch = "x86_64")]
pub use x86_64::avx2::Avx2;

pub(crate) use wide::{Wide, WideKey};

/// Canonicalisation of packed 3x3 boards (ring layout).
pub trait Canon3: Copy + Send + Sync + std::fmt::Debug + 'static {
    /// The instruction set this backend needs, with the proof that the CPU has it (taken
    /// from the backend itself, so it cannot name an instruction set the CPU lacks): a search
    /// over [`crate::Ring3`] with this backend runs hot loops compiled for it.
    fn isa(self) -> Isa;

    /// True when [`Canon3::isa`] is never [`Isa::Portable`] (see [`crate::Rules::SIMD_ONLY`]).
    const SIMD_ONLY: bool = false;

    /// The smallest of the 8 images of `s` and the (smallest) symmetry `t` giving it.
    fn canonical(self, s: u32) -> (u32, u8);

    /// [`Canon3::canonical`] of each of `keys`: key `j`'s canonical form into `canonical[j]`,
    /// its symmetry into `symmetry[j]` (both at least as long as `keys`). A backend may take
    /// the keys several at a time: one key a SIMD lane, its 8 images in 8 registers, their
    /// minimum lane by lane (no horizontal minimum, whose steps wait on each other).
    #[inline(always)]
    fn canonical_many(self, keys: &[u32], canonical: &mut [u32], symmetry: &mut [u8]) {
        for ((c, t), &k) in canonical.iter_mut().zip(symmetry.iter_mut()).zip(keys) {
            (*c, *t) = self.canonical(k);
        }
    }

    /// Lane `h` of the result is lane `COMPOSE[t][h]` of `counts`.
    fn permute(self, counts: &Counts, t: u8) -> Counts;

    /// The neighbourhood pattern of position `p` of `s`: [`tables::ring3::pattern`], by bit
    /// gather where the backend [`Canon3::gathers`].
    #[inline(always)]
    fn pattern(self, s: u32, p: usize) -> usize {
        if self.gathers() {
            self.gathered_pattern(s, p)
        } else {
            tables::ring3::pattern(s, p)
        }
    }

    /// True when [`Canon3::gathered_pattern`] is this backend's way to a pattern: a caller
    /// that asks once, then calls it (or [`tables::ring3::pattern`]) for a whole position,
    /// tests the choice once instead of once a cell.
    #[inline(always)]
    fn gathers(self) -> bool {
        false
    }

    /// [`tables::ring3::pattern`] by bit gather, where the backend has it (else by shifts).
    #[inline(always)]
    fn gathered_pattern(self, s: u32, p: usize) -> usize {
        self.gather(s, tables::ring3::PATTERN_MASK[p])
    }

    /// The bits of `s` under `mask`, gathered to the low end in order (BMI2's `pext`): one
    /// instruction where the backend [`Canon3::gathers`], else a loop over the mask's bits.
    #[inline(always)]
    fn gather(self, s: u32, mask: u32) -> usize {
        gather_slow(s, mask)
    }
}

/// The image of the ring bits under each symmetry: left rotations (within 24 bits) of the ring
/// (`t < 4`) or of its reversal (`t >= 4`).
pub(crate) const ROTATE: [u32; 8] = [0, 6, 12, 18, 3, 9, 15, 21];

/// The reversal of the 8 ring positions (position `p` to `7 - p`).
#[inline(always)]
pub(crate) fn reverse_ring(ring: u32) -> u32 {
    use tables::ring3::REVERSE12;
    (REVERSE12[(ring & 0xFFF) as usize] as u32) << 12 | REVERSE12[(ring >> 12 & 0xFFF) as usize] as u32
}

/// `COMPOSE` widened to `u32` lanes (a permutation vector for SIMD).
pub(crate) static COMPOSE32: [[u32; 8]; 8] = {
    let mut t = [[0u32; 8]; 8];
    let mut i = 0;
    while i < 8 {
        let mut h = 0;
        while h < 8 {
            t[i][h] = tables::ring3::COMPOSE[i][h] as u32;
            h += 1;
        }
        i += 1;
    }
    t
};

/// The bits of `s` under `mask`, gathered to the low end in order, one by one.
pub fn gather_slow(s: u32, mask: u32) -> usize {
    let (mut out, mut k, mut m) = (0usize, 0, mask);
    while m != 0 {
        out |= ((s >> m.trailing_zeros() & 1) as usize) << k;
        (k, m) = (k + 1, m & (m - 1));
    }
    out
}

/// Slow twin of every backend: moves the nine cells one by one.
pub fn canonical_slow(s: u32) -> (u32, u8) {
    use tables::ring3::map_position;
    (0..8u8)
        .map(|t| {
            let mut img = 0u32;
            for p in 0..9 {
                img |= (s >> (3 * p) & 7) << (3 * map_position(t as usize, p));
            }
            (img, t)
        })
        .min()
        .expect("eight symmetries")
}

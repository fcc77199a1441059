//! The portable backend: plain integer code.

use tables::ring3::{COMPOSE, RING_MASK};

use super::{reverse_ring, Canon3, ROTATE};
use crate::counts::Counts;
use crate::key::PackedKey;
use crate::level::Isa;

/// Canonicalisation with scalar integer operations; available on every CPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct Portable;

impl Portable {
    /// Always available.
    pub fn new() -> Option<Portable> {
        Some(Portable)
    }
}

impl Canon3 for Portable {
    #[inline]
    fn isa(self) -> Isa {
        Isa::Portable
    }

    #[inline(always)]
    fn canonical(self, s: u32) -> (u32, u8) {
        let ring = s & RING_MASK;
        let rev = reverse_ring(ring);
        // Key = image << 3 | t: the minimum picks the smallest image, then the smallest t.
        let mut best = ring << 3;
        for t in 1..8 {
            let base = if t < 4 { ring } else { rev };
            let r = ROTATE[t];
            let img = (base << r | base >> (24 - r)) & RING_MASK;
            best = best.min(img << 3 | t as u32);
        }
        ((s & !RING_MASK) | best >> 3, (best & 7) as u8)
    }

    #[inline(always)]
    fn permute(self, counts: &Counts, t: u8) -> Counts {
        let p = &COMPOSE[t as usize];
        crate::counts::lanes(|h| counts[p[h] as usize])
    }
}

/// The general path's keys (see `wide.rs`): the twin every wide SIMD backend is tested against.
impl Portable {
    /// The 8 images of `s`: the OR of `rows[256 k + byte k of s]` over the bytes
    /// `k < rows.len() / 256` (lanes past the grid's symmetries stay zero).
    #[inline(always)]
    pub(crate) fn wide_images<K: PackedKey>(self, rows: &[[K; 8]], s: K) -> [K; 8] {
        let mut out = [K::ZERO; 8];
        for k in 0..rows.len() / 256 {
            let e = &rows[256 * k + s.byte(k) as usize];
            for g in 0..8 {
                out[g] = out[g] | e[g];
            }
        }
        out
    }

    /// The smallest of the first `symmetries` images of `s` (see [`Portable::wide_images`]) and
    /// its lane, the smallest on ties.
    #[inline(always)]
    pub(crate) fn canonical_wide<K: PackedKey>(self, rows: &[[K; 8]], s: K, symmetries: usize) -> (K, u8) {
        let images = self.wide_images(rows, s);
        let mut best = (images[0], 0u8);
        for (g, &img) in images.iter().enumerate().take(symmetries).skip(1) {
            if img < best.0 {
                best = (img, g as u8);
            }
        }
        best
    }
}

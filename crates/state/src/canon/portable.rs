//! The portable backend: plain integer code.

use tables::ring3::{COMPOSE, RING_MASK};

use super::{reverse_ring, Canon3, ROTATE};
use crate::rules::{Counts, Level};

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
    const LEVEL: Level = Level::Portable;

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
        std::array::from_fn(|h| counts[p[h] as usize])
    }
}

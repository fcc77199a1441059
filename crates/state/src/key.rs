//! Packed boards: 3 bits a cell, cell `i` (row-major) in bits `3i..3i+3`.

use std::fmt::Debug;
use std::ops::{BitAnd, BitOr, BitXor};

use bytemuck::{Pod, Zeroable};

use crate::canon::WideKey;

/// An unsigned integer a board is packed into. Implemented for `u32`, `u64`, `u128` and
/// [`U192`]; the order is the integer order (the canonical form is the smallest image).
///
/// Sealed: its private supertrait picks the canonicalisation kernels of each width.
pub trait PackedKey:
    WideKey
    + Copy
    + Eq
    + Ord
    + Debug
    + Pod
    + Send
    + Sync
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
    + BitXor<Output = Self>
    + 'static
{
    /// Number of bits.
    const BITS: usize;
    /// All bits clear: the empty board.
    const ZERO: Self;
    /// True where a SIMD kernel canonicalises keys of this width (`u64` and `u128`: a
    /// [`crate::Grid`] built for [`crate::Level::Avx2`] or [`crate::Level::Avx512`] uses it);
    /// a search compiles its loops for AVX-512 only for such keys, since no other code of
    /// its has AVX-512 instructions.
    const SIMD_CANONICAL: bool;
    /// The value of cell `i`.
    fn cell(self, i: usize) -> u8;
    /// The key with `v` in cell `i` and nothing else.
    fn place(v: u8, i: usize) -> Self;
    /// Byte `k` (bits `8k..8k+8`).
    fn byte(self, k: usize) -> u8;
    /// The key with byte `k` set to `b` and nothing else.
    fn from_byte(b: u8, k: usize) -> Self;
    /// `self | self >> 1 | self >> 2`: bit `3i` is set when cell `i` is not empty.
    fn smear(self) -> Self;
    /// The cell of the lowest set bit (`self` is not zero).
    fn lowest_cell(self) -> usize;
    /// `self` without its lowest set bit.
    fn without_lowest(self) -> Self;
    /// 64 bits of the key from cell `cell - before` on (zeroes stand for cells before cell 0).
    fn window(self, cell: usize, before: usize) -> u64;
}

macro_rules! impl_packed {
    ($($t:ty),*) => {$(
        impl PackedKey for $t {
            const BITS: usize = <$t>::BITS as usize;
            const ZERO: Self = 0;
            const SIMD_CANONICAL: bool = <$t>::BITS == 64 || <$t>::BITS == 128;
            #[inline(always)]
            fn cell(self, i: usize) -> u8 {
                (self >> (3 * i)) as u8 & 7
            }
            #[inline(always)]
            fn place(v: u8, i: usize) -> Self {
                (v as $t) << (3 * i)
            }
            #[inline(always)]
            fn byte(self, k: usize) -> u8 {
                (self >> (8 * k)) as u8
            }
            #[inline(always)]
            fn from_byte(b: u8, k: usize) -> Self {
                (b as $t) << (8 * k)
            }
            #[inline(always)]
            fn smear(self) -> Self {
                self | self >> 1 | self >> 2
            }
            #[inline(always)]
            fn lowest_cell(self) -> usize {
                self.trailing_zeros() as usize / 3
            }
            #[inline(always)]
            fn without_lowest(self) -> Self {
                self & self.wrapping_sub(1)
            }
            #[inline(always)]
            fn window(self, cell: usize, before: usize) -> u64 {
                if cell >= before {
                    (self >> (3 * (cell - before))) as u64
                } else {
                    (self as u64) << (3 * (before - cell))
                }
            }
        }
    )*};
}
impl_packed!(u32, u64, u128);

/// A 192-bit key for boards of 43 to 64 cells: three little-endian 64-bit words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Pod, Zeroable)]
#[repr(transparent)]
pub struct U192(pub [u64; 3]);

impl Ord for U192 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0[2], self.0[1], self.0[0]).cmp(&(other.0[2], other.0[1], other.0[0]))
    }
}

impl PartialOrd for U192 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

macro_rules! impl_u192_op {
    ($tr:ident, $f:ident, $op:tt) => {
        impl $tr for U192 {
            type Output = U192;
            #[inline(always)]
            fn $f(self, o: U192) -> U192 {
                U192([self.0[0] $op o.0[0], self.0[1] $op o.0[1], self.0[2] $op o.0[2]])
            }
        }
    };
}
impl_u192_op!(BitAnd, bitand, &);
impl_u192_op!(BitOr, bitor, |);
impl_u192_op!(BitXor, bitxor, ^);

impl U192 {
    #[inline(always)]
    fn shl(v: u64, bit: usize) -> U192 {
        let mut w = [0u64; 3];
        let (i, o) = (bit / 64, bit % 64);
        w[i] = v << o;
        if o != 0 && i + 1 < 3 {
            w[i + 1] = v >> (64 - o);
        }
        U192(w)
    }

    #[inline(always)]
    fn bits(self, bit: usize) -> u64 {
        let (i, o) = (bit / 64, bit % 64);
        let mut v = self.0[i] >> o;
        if o != 0 && i + 1 < 3 {
            v |= self.0[i + 1] << (64 - o);
        }
        v
    }

    #[inline(always)]
    fn shr(self, n: usize) -> U192 {
        U192([self.bits(n), (self.0[1] >> n) | (self.0[2] << (64 - n)), self.0[2] >> n])
    }
}

impl PackedKey for U192 {
    const BITS: usize = 192;
    const ZERO: Self = U192([0; 3]);
    const SIMD_CANONICAL: bool = false;
    #[inline(always)]
    fn cell(self, i: usize) -> u8 {
        self.bits(3 * i) as u8 & 7
    }
    #[inline(always)]
    fn place(v: u8, i: usize) -> Self {
        U192::shl(v as u64, 3 * i)
    }
    #[inline(always)]
    fn byte(self, k: usize) -> u8 {
        self.bits(8 * k) as u8
    }
    #[inline(always)]
    fn from_byte(b: u8, k: usize) -> Self {
        U192::shl(b as u64, 8 * k)
    }
    #[inline(always)]
    fn smear(self) -> Self {
        self | self.shr(1) | self.shr(2)
    }
    #[inline(always)]
    fn lowest_cell(self) -> usize {
        let w = self.0.iter().position(|&w| w != 0).unwrap_or(2);
        (64 * w + self.0[w].trailing_zeros() as usize) / 3
    }
    #[inline(always)]
    fn without_lowest(self) -> Self {
        let mut words = self.0;
        if let Some(w) = words.iter_mut().find(|w| **w != 0) {
            *w &= *w - 1;
        }
        U192(words)
    }
    #[inline(always)]
    fn window(self, cell: usize, before: usize) -> u64 {
        if cell >= before {
            self.bits(3 * (cell - before))
        } else {
            self.0[0] << (3 * (before - cell))
        }
    }
}

/// Packs row-major cells (each `0..=7`).
pub fn pack<K: PackedKey>(cells: &[u8]) -> K {
    cells.iter().enumerate().fold(K::ZERO, |k, (i, &v)| k | K::place(v, i))
}

/// Unpacks `n` row-major cells.
pub fn unpack<K: PackedKey>(key: K, n: usize) -> Vec<u8> {
    (0..n).map(|i| key.cell(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip<K: PackedKey>(n: usize) {
        let cells: Vec<u8> = (0..n).map(|i| ((i * 5 + 3) % 7) as u8).collect();
        let k: K = pack(&cells);
        assert_eq!(unpack(k, n), cells);
        let smear = k.smear();
        for (i, &v) in cells.iter().enumerate() {
            assert_eq!(smear.cell(i) & 1 == 1, v != 0, "cell {i}");
        }
        for b in 0..K::BITS / 8 {
            assert_eq!(K::from_byte(k.byte(b), b) & k, K::from_byte(k.byte(b), b));
        }
    }

    #[test]
    fn pack_roundtrips_on_every_width() {
        roundtrip::<u32>(10);
        roundtrip::<u64>(21);
        roundtrip::<u128>(42);
        roundtrip::<U192>(64);
    }

    #[test]
    fn u192_orders_as_an_integer() {
        let a = U192([u64::MAX, 0, 1]);
        let b = U192([0, 1, 1]);
        assert!(a < b);
        assert!(U192::place(1, 63) > U192::place(7, 0));
    }
}

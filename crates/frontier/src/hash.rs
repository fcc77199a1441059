//! Hashing of plain-data keys.

use bytemuck::Pod;

const MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// A 64-bit hash of a key's bytes whose *high* bits are well mixed (multiplicative hashing):
/// shard and slot indices are taken from the top.
#[inline(always)]
pub fn key_hash<K: Pod>(key: &K) -> u64 {
    let bytes = bytemuck::bytes_of(key);
    match bytes.len() {
        4 => (u32::from_ne_bytes(bytes.try_into().expect("4 bytes")) as u64).wrapping_mul(MUL),
        8 => mix(u64::from_ne_bytes(bytes.try_into().expect("8 bytes"))),
        _ => bytes.chunks(8).fold(0u64, |h, w| {
            let mut word = [0u8; 8];
            word[..w.len()].copy_from_slice(w);
            mix(h ^ u64::from_ne_bytes(word))
        }),
    }
}

#[inline(always)]
fn mix(x: u64) -> u64 {
    let x = (x ^ (x >> 29)).wrapping_mul(MUL);
    x ^ (x >> 32)
}

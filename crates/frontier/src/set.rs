//! One shard: an open-addressing set of keys, each with `L` wrapping counters.

use bytemuck::Pod;

use crate::arena::MmapArray;
use crate::hash::{empty_key, key_hash};
use crate::prefetch::prefetch;

/// The smallest table.
const MIN_CAPACITY: usize = 16;

/// An open-addressing hash set of keys with `[u32; L]` payloads merged by lane-wise wrapping
/// addition on insert.
///
/// * Linear probing over a power-of-two table; keys and payloads in two parallel arrays, each
///   in its own [`MmapArray`], indexed by slot.
/// * The all-ones key marks an empty slot and can never be inserted.
/// * The load factor stays at or below 1/2 (the table doubles past it), so a probe is short
///   and always ends at an empty slot.
/// * Which slot a key lands in is decided by the bits below the top `shift` bits of its hash;
///   the top bits are left to choose the shard (see [`crate::Frontier`]).
#[derive(Debug)]
pub struct CountSet<K: Pod + Eq, const L: usize> {
    keys: MmapArray<K>,
    counts: MmapArray<[u32; L]>,
    bits: u32,
    len: usize,
    shift: u32,
}

impl<K: Pod + Eq, const L: usize> CountSet<K, L> {
    /// An empty set whose slot bits start below the top `shift` bits of the hash.
    pub fn new(shift: u32) -> Self {
        let mut s = CountSet {
            keys: MmapArray::zeroed(0),
            counts: MmapArray::zeroed(0),
            bits: 0,
            len: 0,
            shift,
        };
        s.reset(MIN_CAPACITY);
        s
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        1 << self.bits
    }

    /// Empties the set, keeping room for at least `keys` keys without growing.
    pub fn clear_for(&mut self, keys: usize) {
        let want = (2 * keys).next_power_of_two().max(MIN_CAPACITY);
        if want > self.capacity() {
            self.reset(want);
        } else {
            // Clear only what was used: a set that never held a key is already empty.
            if self.len > 0 {
                self.keys.as_mut_slice().fill(empty_key());
            }
            self.len = 0;
        }
    }

    fn reset(&mut self, capacity: usize) {
        debug_assert!(capacity.is_power_of_two());
        self.keys = MmapArray::zeroed(capacity);
        self.keys.as_mut_slice().fill(empty_key());
        self.counts = MmapArray::zeroed(capacity);
        self.bits = capacity.trailing_zeros();
        self.len = 0;
    }

    #[inline(always)]
    fn slot(&self, key: &K) -> usize {
        ((key_hash(key) << self.shift) >> (64 - self.bits)) as usize
    }

    /// Hints the CPU to fetch the slot where `key` would go.
    #[inline(always)]
    pub fn prefetch(&self, key: &K) {
        let i = self.slot(key);
        prefetch(&self.keys.as_slice()[i]);
        prefetch(&self.counts.as_slice()[i]);
    }

    /// Adds `add` to the counts of `key`, inserting it (with `add`) if absent.
    ///
    /// # Panics
    /// In debug builds, if `key` is the reserved all-ones key.
    #[inline(always)]
    pub fn insert(&mut self, key: K, add: &[u32; L]) {
        debug_assert!(key != empty_key(), "the all-ones key is reserved");
        if 2 * (self.len + 1) > self.capacity() {
            self.grow();
        }
        let mask = self.capacity() - 1;
        let mut i = self.slot(&key);
        let keys = self.keys.as_mut_slice();
        loop {
            let k = keys[i];
            if k == key {
                let c = &mut self.counts.as_mut_slice()[i];
                for (c, a) in c.iter_mut().zip(add) {
                    *c = c.wrapping_add(*a);
                }
                return;
            }
            if k == empty_key() {
                keys[i] = key;
                self.counts.as_mut_slice()[i] = *add;
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// The counts of `key`, if present.
    pub fn get(&self, key: &K) -> Option<&[u32; L]> {
        let mask = self.capacity() - 1;
        let mut i = self.slot(key);
        let keys = self.keys.as_slice();
        loop {
            if keys[i] == *key {
                return Some(&self.counts.as_slice()[i]);
            }
            if keys[i] == empty_key() {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    #[cold]
    fn grow(&mut self) {
        let keys = std::mem::replace(&mut self.keys, MmapArray::zeroed(0));
        let counts = std::mem::replace(&mut self.counts, MmapArray::zeroed(0));
        self.reset(2 * keys.len().max(MIN_CAPACITY / 2));
        for (k, c) in keys.as_slice().iter().zip(counts.as_slice()) {
            if *k != empty_key() {
                self.insert(*k, c);
            }
        }
    }

    /// The key array by slot (empty slots hold the all-ones key).
    pub fn slot_keys(&self) -> &[K] {
        self.keys.as_slice()
    }

    /// The counts by slot (meaningless at empty slots).
    pub fn slot_counts(&self) -> &[[u32; L]] {
        self.counts.as_slice()
    }

    /// The stored keys and their counts, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &[u32; L])> + '_ {
        self.slot_keys()
            .iter()
            .zip(self.slot_counts())
            .filter(|(k, _)| **k != empty_key::<K>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn merges_like_a_hashmap() {
        let mut set = CountSet::<u64, 2>::new(0);
        let mut map: HashMap<u64, [u32; 2]> = HashMap::new();
        let mut x = 1u64;
        for i in 0..50_000u32 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = x >> 50; // many repeats
            set.insert(k, &[i, 1]);
            let e = map.entry(k).or_insert([0, 0]);
            e[0] = e[0].wrapping_add(i);
            e[1] += 1;
        }
        assert_eq!(set.len(), map.len());
        for (k, c) in set.iter() {
            assert_eq!(map[k], *c);
        }
        assert!(set.len() * 2 <= set.capacity());
        set.clear_for(10);
        assert!(set.is_empty() && set.iter().next().is_none() && set.get(&3).is_none());
    }
}

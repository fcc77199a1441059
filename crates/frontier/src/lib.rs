//! The per-depth state set of a breadth-first search: keys with count vectors, merged on
//! insert, sharded by hash, stored in memory maps.
//!
//! # Brief overview
//!
//! * [`CountSet`]: one shard, an open-addressing hash set of plain-data keys (any
//!   [`bytemuck::Pod`] type but the one with all bits set) with [`Tally`] payloads
//!   (`[u32; L]` added lane by lane, one `u64`, or one [`Count34`], all wrapping) merged
//!   when a key is inserted again. Small counts share the table's slots with their keys (one
//!   cache line an insert, prefetched from the key's hash; linear probing at load at most
//!   1/2), and a `u32` key below 2^30 - 1 with a [`Count34`] shares one 64-bit word with it;
//!   larger counts (lanes) are dense, in insertion order, behind an index table of `u16`s
//!   (small tables) or `u32`s (load at most 1/4, or 1/2 in the largest tables). Read back in
//!   slot order, whole or by ranges of slots. Each layout is a file of the `set` module
//!   (`packed.rs`, `inline.rs`, `dense.rs`) behind one private trait; the types of the keys
//!   and counts choose it at compile time ([`CountSet::PACKED`], [`CountSet::INLINE`]).
//! * [`Frontier`]: `2^b` shards; a key's shard is the top `b` bits of its hash, so the shards
//!   are independent: each can be filled by its own thread, in any order, with the same result.
//! * [`MmapArray`]: the storage, anonymous memory maps (memmap2) whose pages cost nothing
//!   until touched.
//! * [`spill`]: record files (key and counts, checked by a header and a checksum) for
//!   frontiers that live on disk: written and read sequentially; each error names its file
//!   ([`spill::FileError`]).
//!
//! The crate knows keys and payloads, not games.
//!
//! # Example
//!
//! ```
//! use frontier::Frontier;
//!
//! let mut f = Frontier::<u64, [u32; 2]>::new(3); // 8 shards
//! for (key, counts) in [(7u64, [1, 0]), (9, [0, 1]), (7, [2, 5])] {
//!     let shard = f.shard_of(&key);
//!     f.shard_mut(shard).insert(key, &counts);
//! }
//! assert_eq!(f.len(), 2);
//! assert_eq!(f.get(&7), Some([3, 5]));
//! ```
#![deny(missing_docs)]

/// The README's example, compiled and run as a documentation test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod arena;
mod hash;
mod prefetch;
mod set;
pub mod spill;

pub use arena::{MmapArray, Serial, Zeroer};
pub use hash::key_hash;
pub use prefetch::prefetch;
pub use set::{CountSet, Entries, SlotView, Tallies};

use bytemuck::Pod;

/// A key of the sets: plain data (every bit pattern but all ones is a key), compared by value,
/// shared between threads. Every type with those properties is one.
pub trait Key: Pod + Eq + Send + Sync {}

impl<T: Pod + Eq + Send + Sync> Key for T {}

/// A set of keys with [`Tally`] counts, split into `2^shard_bits` independent [`CountSet`]s
/// by the top bits of the key's hash.
#[derive(Debug)]
pub struct Frontier<K: Key, C: Tally> {
    shard_bits: u32,
    shards: Vec<CountSet<K, C>>,
}

impl<K: Key, C: Tally> Frontier<K, C> {
    /// An empty frontier of `2^shard_bits` shards (`shard_bits` at most 16).
    pub fn new(shard_bits: u32) -> Self {
        assert!(shard_bits <= 16, "at most 2^16 shards");
        Frontier { shard_bits, shards: (0..1 << shard_bits).map(|_| CountSet::new(shard_bits)).collect() }
    }

    /// Number of shard bits.
    pub fn shard_bits(&self) -> u32 {
        self.shard_bits
    }

    /// The shard `key` belongs to.
    #[inline(always)]
    pub fn shard_of(&self, key: &K) -> usize {
        shard_of(key, self.shard_bits)
    }

    /// The shards.
    pub fn shards(&self) -> &[CountSet<K, C>] {
        &self.shards
    }

    /// The shards, mutably (each can be filled by its own thread).
    pub fn shards_mut(&mut self) -> &mut [CountSet<K, C>] {
        &mut self.shards
    }

    /// One shard, mutably.
    pub fn shard_mut(&mut self, shard: usize) -> &mut CountSet<K, C> {
        &mut self.shards[shard]
    }

    /// Puts every shard's arrays on huge pages from now on ([`CountSet::use_huge_pages`]):
    /// for a frontier about to grow large.
    pub fn use_huge_pages(&mut self) {
        for s in &mut self.shards {
            s.use_huge_pages(&Serial);
        }
    }

    /// Total number of keys.
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.len()).sum()
    }

    /// Bytes of memory the shards' arrays take ([`CountSet::bytes`]).
    pub fn bytes(&self) -> usize {
        self.shards.iter().map(|s| s.bytes()).sum()
    }

    /// True when no shard holds a key.
    pub fn is_empty(&self) -> bool {
        self.shards.iter().all(|s| s.is_empty())
    }

    /// The counts of `key`, if present.
    pub fn get(&self, key: &K) -> Option<C> {
        self.shards[self.shard_of(key)].get(key)
    }

    /// Empties every shard, with room for `keys_per_shard` keys each, and sets the number of
    /// shards to `2^shard_bits`. Shards (and the memory they have touched) are reused.
    pub fn reset(&mut self, shard_bits: u32, keys_per_shard: usize) {
        self.resize_shards(shard_bits);
        for s in &mut self.shards {
            s.reset(shard_bits, keys_per_shard);
        }
    }

    /// Sets the number of shards to `2^shard_bits` without emptying them: each must then be
    /// [`CountSet::reset`] with `shard_bits` (by any thread) before it is used.
    pub fn resize_shards(&mut self, shard_bits: u32) {
        assert!(shard_bits <= 16, "at most 2^16 shards");
        self.shard_bits = shard_bits;
        self.shards.resize_with(1 << shard_bits, || CountSet::new(shard_bits));
    }
}

/// What a [`CountSet`] keeps per key: plain data merged by wrapping addition.
///
/// For the results to be right, the all-zero value is [`Tally::zero`], and merging is
/// associative and commutative: the order in which a set sees a key's counts never matters.
pub trait Tally: Pod + Send + Sync {
    /// 0, or the bits a value needs when it is an 8-byte count kept modulo `2^PACK_BITS`
    /// (its bytes a `u64`, merged by addition modulo `2^PACK_BITS`): then a [`CountSet`] of
    /// 4-byte keys keeps each key and its count in one 64-bit word ([`CountSet::PACKED`]).
    const PACK_BITS: u32 = 0;

    /// No paths.
    #[inline(always)]
    fn zero() -> Self {
        Self::zeroed()
    }

    /// `self + add`, wrapping (lane by lane for lanes).
    fn merge(self, add: Self) -> Self;

    /// `add` when `fresh`, else `self.merge(add)`, without a branch where the type allows:
    /// the insert loop's found-or-new step.
    #[inline(always)]
    fn merge_or_start(self, add: Self, fresh: bool) -> Self {
        if fresh {
            add
        } else {
            self.merge(add)
        }
    }
}

impl<const L: usize> Tally for [u32; L] {
    #[inline(always)]
    fn merge(self, add: Self) -> Self {
        std::array::from_fn(|g| self[g].wrapping_add(add[g]))
    }

    #[inline(always)]
    fn merge_or_start(self, add: Self, fresh: bool) -> Self {
        let keep = if fresh { 0 } else { u32::MAX };
        std::array::from_fn(|g| (self[g] & keep).wrapping_add(add[g]))
    }
}

impl Tally for u64 {
    #[inline(always)]
    fn merge(self, add: Self) -> Self {
        self.wrapping_add(add)
    }

    #[inline(always)]
    fn merge_or_start(self, add: Self, fresh: bool) -> Self {
        let keep = if fresh { 0 } else { u64::MAX };
        (self & keep).wrapping_add(add)
    }
}

/// A count modulo 2^34 (in a `u64`): with 4-byte keys, a [`CountSet`] packs each key and its
/// count into one 64-bit word ([`CountSet::PACKED`]), half the size of a `u32` key beside a
/// `u64`. Enough for a sum of paths times hashes that is exact modulo 2^30 after a division
/// by up to 8.
///
/// The value is what [`Count34::get`] returns; the bits above the 34th are ignored wherever
/// they appear (equality included).
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct Count34(u64);

impl Count34 {
    /// The bits a count keeps.
    pub const BITS: u32 = 34;

    /// `value` modulo 2^34.
    #[inline(always)]
    pub fn new(value: u64) -> Self {
        Count34(value & ((1 << Self::BITS) - 1))
    }

    /// The count, below 2^34.
    #[inline(always)]
    pub fn get(self) -> u64 {
        self.0 & ((1 << Self::BITS) - 1)
    }
}

impl PartialEq for Count34 {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for Count34 {}

impl Tally for Count34 {
    const PACK_BITS: u32 = Self::BITS;

    #[inline(always)]
    fn merge(self, add: Self) -> Self {
        Count34::new(self.0.wrapping_add(add.0))
    }
}

/// The shard of `key` among `2^shard_bits`.
#[inline(always)]
pub fn shard_of<K: Pod>(key: &K, shard_bits: u32) -> usize {
    shard_of_hash(key_hash(key), shard_bits)
}

/// The shard among `2^shard_bits` of a key whose [`key_hash`] is `hash`.
#[inline(always)]
pub fn shard_of_hash(hash: u64, shard_bits: u32) -> usize {
    if shard_bits == 0 {
        0
    } else {
        (hash >> (64 - shard_bits)) as usize
    }
}

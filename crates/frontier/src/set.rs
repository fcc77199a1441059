//! One shard: an open-addressing hash table of keys, each stored in its slot beside its
//! [`Tally`] of path counts.

use std::ops::Range;

use bytemuck::{Pod, Zeroable};

use crate::Tally;

use crate::arena::MmapArray;
use crate::hash::key_hash;
use crate::prefetch::prefetch;

/// The smallest table.
const MIN_SLOTS: usize = 16;

/// How many items ahead [`CountSet::insert_many`] prefetches table slots.
const PREFETCH_DISTANCE: usize = 8;

/// Table slots a key: the load factor stays at or below `1 / SLOTS_PER_KEY` while keys are
/// inserted one thread at a time (a shared fill may take it to 3/4, see
/// [`CountSet::fill_shared`]).
pub(crate) const SLOTS_PER_KEY: usize = 2;

/// One slot of a [`CountSet`]'s table: empty, or a key with its counts.
///
/// The key is stored with every bit inverted, so that an all-zero slot (what a fresh page of
/// memory holds, and what clearing writes) is an empty one, with zero counts ready to be
/// added to. The price: the key whose bits are all ones (`u64::MAX`, say) cannot be stored.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Slot<K, C> {
    pub(crate) stored: K,
    pub(crate) count: C,
}

// SAFETY: both fields are `Pod`, so all-zero bytes are a valid `Slot` (an empty one).
unsafe impl<K: Pod, C: Pod> Zeroable for Slot<K, C> {}

impl<K: Pod + Eq, C: Tally> Slot<K, C> {
    /// An empty slot (all zero): what clearing a table writes into each of its slots.
    #[inline(always)]
    pub fn empty() -> Self {
        Self::zeroed()
    }

    /// The key, or `None` for an empty slot.
    #[inline(always)]
    pub fn key(&self) -> Option<K> {
        (!self.is_empty()).then(|| invert(self.stored))
    }

    /// The counts (zero in an empty slot).
    #[inline(always)]
    pub fn count(&self) -> &C {
        &self.count
    }

    /// True when the slot holds no key.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.stored == K::zeroed()
    }
}

/// `key` with every bit inverted: how a [`Slot`] stores it.
#[inline(always)]
pub(crate) fn invert<K: Pod>(mut key: K) -> K {
    for b in bytemuck::bytes_of_mut(&mut key) {
        *b = !*b;
    }
    key
}

/// A key as its slot stores it; panics on the one key that cannot be stored (all ones).
#[inline(always)]
pub(crate) fn stored<K: Pod + Eq>(key: K) -> K {
    let s = invert(key);
    assert!(s != K::zeroed(), "a CountSet cannot store the key whose bits are all ones");
    s
}

/// An open-addressing hash set of keys with [`Tally`] payloads (lanes of wrapping counters,
/// say), merged by [`Tally::merge`] when a key is inserted again.
///
/// * The table is a power-of-two array of [`Slot`]s in an [`MmapArray`], each a key and its
///   counts side by side, probed linearly: an insert touches one slot (one cache line,
///   mostly), whose address follows from the key's hash alone, so it can be prefetched.
/// * An all-zero slot is empty (keys are stored inverted): a fresh map is an empty table,
///   and an empty slot's counts are zero already, so a new key and a present one are merged
///   the same way. The key with all bits set cannot be stored (inserting it panics).
/// * The table's load factor stays at or below `1 / SLOTS_PER_KEY` (1/2): probes are short
///   and always end.
/// * Which slot a key lands in is decided by the bits below the top `shift` bits of its hash;
///   the top bits are left to choose the shard (see [`crate::Frontier`]).
/// * The keys are read back in table order ([`CountSet::iter`], or [`CountSet::slots`] by
///   ranges): the same inserts in the same order give the same table.
#[derive(Debug)]
pub struct CountSet<K: Pod + Eq, C: Tally> {
    slots: MmapArray<Slot<K, C>>,
    pub(crate) bits: u32,
    pub(crate) len: usize,
    pub(crate) shift: u32,
}

impl<K: Pod + Eq, C: Tally> CountSet<K, C> {
    /// An empty set whose slot bits start below the top `shift` bits of the hash.
    ///
    /// Nothing is mapped until the first key (or [`CountSet::clear_for`] with room for some):
    /// a set a search never fills costs no system call.
    pub fn new(shift: u32) -> Self {
        CountSet {
            slots: MmapArray::zeroed(0),
            // The bits of the smallest table, so that slot indices stay small while there is
            // none (a lookup finds no slot, a prefetch has nothing to fetch).
            bits: MIN_SLOTS.trailing_zeros(),
            len: 0,
            shift,
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of table slots (`SLOTS_PER_KEY` times the keys it holds before growing).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Empties the set, with room for `keys` keys, and takes slot bits below the top `shift`
    /// bits of the hash from now on.
    pub fn reset(&mut self, shift: u32, keys: usize) {
        self.reset_with(shift, keys, zero_slots);
    }

    /// [`CountSet::reset`], the table's slots zeroed by `zero` (on a thread pool, say).
    pub fn reset_with(&mut self, shift: u32, keys: usize, zero: impl FnOnce(&mut [Slot<K, C>])) {
        self.shift = shift;
        self.clear_for_with(keys, zero);
    }

    /// Empties the set, keeping room for at least `keys` keys without growing.
    pub fn clear_for(&mut self, keys: usize) {
        self.clear_for_with(keys, zero_slots);
    }

    /// [`CountSet::clear_for`], the table's slots zeroed by `zero` (on a thread pool, say):
    /// it is given the slots that may not be zero (a larger table's fresh pages are), and
    /// must make every one of them all-zero ([`bytemuck::Zeroable::zeroed`]).
    pub fn clear_for_with(&mut self, keys: usize, zero: impl FnOnce(&mut [Slot<K, C>])) {
        if keys == 0 && self.len == 0 {
            // Already clear, and room is made on demand: nothing to map.
            return;
        }
        let want = (SLOTS_PER_KEY * keys).next_power_of_two().max(MIN_SLOTS);
        if want > self.capacity() || want < self.capacity() / 4 {
            // Shrinking too, when much smaller: a smaller table is faster to clear and probe.
            self.slots.resize_zeroed_with(want, zero);
            self.bits = want.trailing_zeros();
        } else if self.len > 0 {
            // A set that never held a key is already clear.
            self.slots.resize_zeroed_with(self.capacity(), zero);
        }
        self.len = 0;
    }

    #[inline(always)]
    fn slot(&self, key: &K) -> usize {
        slot_of(key_hash(key), self.shift, self.bits)
    }

    /// Hints the CPU to fetch the table slot where `key` would go.
    #[inline(always)]
    pub fn prefetch(&self, key: &K) {
        self.prefetch_hash(key_hash(key));
    }

    /// [`CountSet::prefetch`] for a key whose [`key_hash`] is `hash`.
    #[inline(always)]
    pub fn prefetch_hash(&self, hash: u64) {
        if let Some(slot) = self.slots.as_slice().get(slot_of(hash, self.shift, self.bits)) {
            prefetch(slot);
        }
    }

    /// Adds `add` to the counts of `key`, inserting it (with `add`) if absent.
    ///
    /// # Panics
    /// If every bit of `key` is set: that key cannot be stored (see [`Slot`]).
    #[inline(always)]
    pub fn insert(&mut self, key: K, add: &C) {
        self.insert_many(std::slice::from_ref(&(key, *add)), |r| r.0, |r| r.1);
    }

    /// Inserts every item of `items` (its key and counts given by `key` and `counts`), in
    /// order, prefetching the slots of the items a few places ahead. The same as calling
    /// [`CountSet::insert`] on each, faster.
    #[inline(always)]
    pub fn insert_many<T>(&mut self, items: &[T], key: impl Fn(&T) -> K, counts: impl Fn(&T) -> C) {
        self.insert_all::<T, true>(items, &|t| key_hash(&key(t)), &key, &counts);
    }

    /// Inserts every item of `items`, whose keys' [`key_hash`] `hash` gives and whose slots
    /// the caller has prefetched already ([`CountSet::prefetch_hash`]): the same as
    /// [`CountSet::insert_many`] without hashing any key again.
    #[inline(always)]
    pub fn insert_prefetched<T>(
        &mut self,
        items: &[T],
        hash: impl Fn(&T) -> u64,
        key: impl Fn(&T) -> K,
        counts: impl Fn(&T) -> C,
    ) {
        self.insert_all::<T, false>(items, &hash, &key, &counts);
    }

    #[inline(always)]
    fn insert_all<T, const PREFETCH: bool>(
        &mut self,
        items: &[T],
        hash: &impl Fn(&T) -> u64,
        key: &impl Fn(&T) -> K,
        counts: &impl Fn(&T) -> C,
    ) {
        let mut rest = items;
        while !rest.is_empty() {
            // A piece that cannot outgrow the table: each item adds at most one key.
            let mut room = (self.capacity() / SLOTS_PER_KEY).saturating_sub(self.len);
            if room == 0 {
                self.grow();
                room = (self.capacity() / SLOTS_PER_KEY).saturating_sub(self.len);
            }
            let (piece, tail) = rest.split_at(room.min(rest.len()));
            self.insert_piece::<T, PREFETCH>(piece, hash, key, counts);
            rest = tail;
        }
    }

    /// Inserts `piece`, which has at most `capacity / SLOTS_PER_KEY - len` items.
    #[inline(always)]
    fn insert_piece<T, const PREFETCH: bool>(
        &mut self,
        piece: &[T],
        hash: &impl Fn(&T) -> u64,
        key: &impl Fn(&T) -> K,
        counts: &impl Fn(&T) -> C,
    ) {
        let (bits, shift) = (self.bits, self.shift);
        let slot = |h: u64| slot_of(h, shift, bits);
        let mask = self.capacity() - 1;
        let slots = self.slots.as_mut_slice();
        let empty = K::zeroed();
        let mut len = self.len;
        for (j, item) in piece.iter().enumerate() {
            if PREFETCH {
                if let Some(ahead) = piece.get(j + PREFETCH_DISTANCE) {
                    prefetch(&slots[slot(hash(ahead))]);
                }
            }
            let s = stored(key(item));
            let mut i = slot(hash(item));
            // Probe until the key's slot or an empty one: the first slot, almost always
            // (load <= 1/SLOTS_PER_KEY).
            while slots[i].stored != s && slots[i].stored != empty {
                i = (i + 1) & mask;
            }
            // Found or new, without a branch (which would be mispredicted for a good share of
            // the inserts): an empty slot's counts are zero, so adding works for both.
            let slot = &mut slots[i];
            len += (slot.stored == empty) as usize;
            slot.stored = s;
            slot.count = slot.count.merge(counts(item));
        }
        self.len = len;
    }

    /// The counts of `key`, if present.
    pub fn get(&self, key: &K) -> Option<&C> {
        if self.len == 0 {
            return None;
        }
        let s = invert(*key);
        let mask = self.capacity() - 1;
        let mut i = self.slot(key);
        let slots = self.slots.as_slice();
        loop {
            let slot = &slots[i];
            if slot.is_empty() {
                return None;
            }
            if slot.stored == s {
                return Some(&slot.count);
            }
            i = (i + 1) & mask;
        }
    }

    /// The table, mutably (the shared fill's view of it).
    pub(crate) fn slots_mut(&mut self) -> &mut [Slot<K, C>] {
        self.slots.as_mut_slice()
    }

    /// Empties the set, keeping its table's size.
    pub(crate) fn clear_all(&mut self) {
        zero_slots(self.slots.as_mut_slice());
        self.len = 0;
    }

    #[cold]
    fn grow(&mut self) {
        let slots = (2 * self.capacity()).max(MIN_SLOTS);
        let old = std::mem::replace(&mut self.slots, MmapArray::zeroed(slots));
        self.bits = slots.trailing_zeros();
        let mask = slots - 1;
        for old in old.as_slice().iter().filter(|s| !s.is_empty()) {
            let mut i = slot_of(key_hash(&invert(old.stored)), self.shift, self.bits);
            let table = self.slots.as_mut_slice();
            while !table[i].is_empty() {
                i = (i + 1) & mask;
            }
            table[i] = *old;
        }
    }

    /// The whole table, empty slots included, in slot order: for reading the set in pieces
    /// (ranges of slots), say one piece a thread.
    pub fn slots(&self) -> &[Slot<K, C>] {
        self.slots.as_slice()
    }

    /// The stored keys and their counts, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &C)> + '_ {
        let all = if self.len == 0 { 0..0 } else { 0..self.capacity() };
        self.entries(all).map(|(_, k, c)| (k, c))
    }

    /// The keys stored in the table slots `slots` (a range of [`CountSet::slots`]), each with
    /// its slot's index within the range and its counts, in table order.
    ///
    /// Which slots are empty is read 64 at a time into a bit mask, without a branch: a loop
    /// over the positions of a sparse table would otherwise mispredict on a good share of
    /// its slots.
    ///
    /// # Panics
    /// If the range is not within the table.
    pub fn entries(&self, slots: Range<usize>) -> Entries<'_, K, C> {
        Entries { slots: &self.slots()[slots], block: 0, next_block: 0, occupied: 0 }
    }
}

/// The keys of a range of a [`CountSet`]'s slots: see [`CountSet::entries`].
#[derive(Clone, Debug)]
pub struct Entries<'a, K, C> {
    slots: &'a [Slot<K, C>],
    /// The first slot of the block `occupied` describes.
    block: usize,
    /// The first slot of the block after it.
    next_block: usize,
    /// Bit `j`: slot `block + j` holds a key not yet returned.
    occupied: u64,
}

impl<'a, K: Pod + Eq, C: Tally> Iterator for Entries<'a, K, C> {
    type Item = (usize, K, &'a C);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        while self.occupied == 0 {
            let rest = self.slots.get(self.next_block..)?;
            if rest.is_empty() {
                return None;
            }
            let mut occupied = 0u64;
            for (j, s) in rest.iter().take(64).enumerate() {
                occupied |= u64::from(!s.is_empty()) << j;
            }
            (self.block, self.next_block, self.occupied) = (self.next_block, self.next_block + 64, occupied);
        }
        let i = self.block + self.occupied.trailing_zeros() as usize;
        self.occupied &= self.occupied - 1;
        let slot = &self.slots[i];
        Some((i, invert(slot.stored), &slot.count))
    }
}

/// Zeroes every slot: empties them.
fn zero_slots<K: Pod + Eq, C: Tally>(slots: &mut [Slot<K, C>]) {
    slots.fill(Slot::empty());
}

/// The slot of a key whose hash is `hash` in a table of `2^bits` slots that takes its slot
/// bits below the top `shift` bits of the hash (those choose the shard).
#[inline(always)]
pub(crate) fn slot_of(hash: u64, shift: u32, bits: u32) -> usize {
    ((hash << shift) >> (64 - bits)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn merges_like_a_hashmap() {
        let mut set = CountSet::<u64, [u32; 2]>::new(0);
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
        assert_eq!(set.iter().count(), map.len());
        for (k, c) in set.iter() {
            assert_eq!(map[&k], *c);
            assert_eq!(set.get(&k), Some(c));
        }
        assert!(set.len() * SLOTS_PER_KEY <= set.capacity());
        set.clear_for(10);
        assert!(set.is_empty() && set.iter().next().is_none() && set.get(&3).is_none());
        set.clear_for(0);
        assert!(set.is_empty() && set.get(&3).is_none());
        // Zero is a key like any other; only all ones is not.
        set.insert(0, &[1, 2]);
        set.insert(u64::MAX - 1, &[3, 4]);
        assert_eq!(set.get(&0), Some(&[1, 2]));
        assert_eq!(set.get(&(u64::MAX - 1)), Some(&[3, 4]));
        assert_eq!(set.get(&u64::MAX), None);
    }

    #[test]
    #[should_panic(expected = "all ones")]
    fn the_all_ones_key_is_refused() {
        let mut set = CountSet::<u32, u64>::new(0);
        set.insert(u32::MAX, &1);
    }

    #[test]
    fn a_new_set_maps_nothing_until_used() {
        let mut set = CountSet::<u32, [u32; 8]>::new(0);
        set.clear_for(0);
        set.prefetch(&7);
        assert_eq!((set.capacity(), set.len(), set.slots().len()), (0, 0, 0));
        assert!(set.iter().next().is_none());
        assert_eq!(set.get(&7), None);
        set.insert(7, &[1; 8]);
        assert_eq!(set.get(&7), Some(&[1; 8]));
        assert!(set.capacity() >= MIN_SLOTS);
    }

    #[test]
    fn slots_hold_every_key_once() {
        let mut set = CountSet::<u32, u64>::new(0);
        for k in (0..1000u32).chain(0..500) {
            set.insert(k * 7, &1);
        }
        let mut keys: Vec<u32> = set.slots().iter().filter_map(Slot::key).collect();
        keys.sort_unstable();
        assert_eq!(keys, (0..1000).map(|k| k * 7).collect::<Vec<_>>());
        assert!(set.slots().iter().filter(|s| s.is_empty()).all(|s| *s.count() == 0));
        // By ranges, with indices within each range, every key once.
        let cap = set.capacity();
        for cut in [0, 1, 63, 64, 65, 100, cap / 2, cap - 1, cap] {
            let mut seen: Vec<u32> = set
                .entries(0..cut)
                .map(|(i, k, _)| {
                    assert_eq!(set.slots()[i].key(), Some(k));
                    k
                })
                .collect();
            seen.extend(set.entries(cut..cap).map(|(i, k, _)| {
                assert_eq!(set.slots()[cut + i].key(), Some(k));
                k
            }));
            seen.sort_unstable();
            assert_eq!(seen, keys, "cut at {cut}");
        }
        let twice: u64 = set.slots().iter().map(|s| s.count()).sum();
        assert_eq!(twice, 1500);
    }

    #[test]
    fn u64_tallies_carry() {
        let mut set = CountSet::<u32, u64>::new(0);
        set.insert(5, &u64::from(u32::MAX));
        set.insert(5, &1);
        set.insert(6, &u64::MAX);
        set.insert(6, &2);
        assert_eq!(set.get(&5), Some(&(1u64 << 32)));
        assert_eq!(set.get(&6), Some(&1));
    }
}

//! One shard: an open-addressing set of keys, each with a [`Tally`] of path counts.

use bytemuck::Pod;

use crate::Tally;

use crate::arena::MmapArray;
use crate::hash::key_hash;
use crate::prefetch::prefetch;

/// The smallest table.
const MIN_SLOTS: usize = 16;

/// How many items ahead [`CountSet::insert_many`] prefetches table slots.
const PREFETCH_DISTANCE: usize = 8;

/// Table slots a key: the load factor stays at or below `1 / SLOTS_PER_KEY`.
const SLOTS_PER_KEY: usize = 4;

/// An open-addressing hash set of keys with [`Tally`] payloads (lanes of wrapping counters,
/// say), merged by [`Tally::merge`] when a key is inserted again.
///
/// * Keys and payloads are *dense*, in insertion order, in two [`MmapArray`]s whose element 0
///   is not a key: the `n`th key inserted is element `n + 1`. The table is a power-of-two array
///   of `u32` slots holding element numbers (0 marks an empty slot, so a fresh map is an empty
///   table), probed linearly.
/// * Element 0 of the keys is the probe's sentinel: an insertion writes its key there first,
///   so that an empty slot and the key's own slot end the probe loop on the same comparison
///   (one branch, taken only on a collision, instead of a found-or-empty branch that the CPU
///   would mispredict for a good share of the inserts).
/// * The table's load factor stays at or below `1 / SLOTS_PER_KEY` (1/4): probes are short
///   and always end.
/// * Which slot a key lands in is decided by the bits below the top `shift` bits of its hash;
///   the top bits are left to choose the shard (see [`crate::Frontier`]).
/// * Insertion order decides the dense order: the same inserts in the same order give the same
///   arrays.
#[derive(Debug)]
pub struct CountSet<K: Pod + Eq, C: Tally> {
    table: MmapArray<u32>,
    keys: MmapArray<K>,
    counts: MmapArray<C>,
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
            table: MmapArray::zeroed(0),
            keys: MmapArray::zeroed(0),
            counts: MmapArray::zeroed(0),
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
        self.table.len()
    }

    /// Empties the set, with room for `keys` keys, and takes slot bits below the top `shift`
    /// bits of the hash from now on.
    pub fn reset(&mut self, shift: u32, keys: usize) {
        self.reset_with(shift, keys, |t| t.fill(0));
    }

    /// [`CountSet::reset`], the table's slots zeroed by `zero` (on a thread pool, say).
    pub fn reset_with(&mut self, shift: u32, keys: usize, zero: impl FnOnce(&mut [u32])) {
        self.shift = shift;
        self.clear_for_with(keys, zero);
    }

    /// Empties the set, keeping room for at least `keys` keys without growing.
    pub fn clear_for(&mut self, keys: usize) {
        self.clear_for_with(keys, |t| t.fill(0));
    }

    /// [`CountSet::clear_for`], the table's slots zeroed by `zero` (on a thread pool, say):
    /// it is given the slots that may not be zero (a larger table's fresh pages are).
    pub fn clear_for_with(&mut self, keys: usize, zero: impl FnOnce(&mut [u32])) {
        if keys == 0 && self.len == 0 {
            // Already clear, and room is made on demand: nothing to map.
            return;
        }
        let want = (SLOTS_PER_KEY * keys).next_power_of_two().max(MIN_SLOTS);
        if want > self.capacity() || want < self.capacity() / 4 {
            // Shrinking too, when much smaller: a smaller table is faster to clear and probe.
            self.len = 0;
            self.reserve_slots(want, zero);
        } else if self.len > 0 {
            // A set that never held a key is already clear.
            self.table.resize_zeroed_with(self.capacity(), zero);
            self.len = 0;
        }
    }

    /// Makes the table an empty one of `slots` slots (zeroed by `zero`) and the key and count
    /// arrays room for `slots / 4` keys, keeping the stored keys and counts (the caller
    /// re-inserts them into the table). Memory is reused: only the table is cleared.
    fn reserve_slots(&mut self, slots: usize, zero: impl FnOnce(&mut [u32])) {
        debug_assert!(slots.is_power_of_two());
        self.table.resize_zeroed_with(slots, zero);
        self.bits = slots.trailing_zeros();
        // Element 0 is the sentinel (keys) or unused (counts).
        self.keys.resize(slots / SLOTS_PER_KEY + 1);
        self.counts.resize(slots / SLOTS_PER_KEY + 1);
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
        if let Some(slot) = self.table.as_slice().get(slot_of(hash, self.shift, self.bits)) {
            prefetch(slot);
        }
    }

    /// Adds `add` to the counts of `key`, inserting it (with `add`) if absent.
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
            let mut room = self.capacity() / SLOTS_PER_KEY - self.len;
            if room == 0 {
                self.grow();
                room = self.capacity() / SLOTS_PER_KEY - self.len;
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
        let table = self.table.as_mut_slice();
        let keys = self.keys.as_mut_slice();
        let all_counts = self.counts.as_mut_slice();
        let mut len = self.len;
        for (j, item) in piece.iter().enumerate() {
            if PREFETCH {
                if let Some(ahead) = piece.get(j + PREFETCH_DISTANCE) {
                    prefetch(&table[slot(hash(ahead))]);
                }
            }
            let h = hash(item);
            let k = key(item);
            let mut i = slot(h);
            // Probe until the key's slot or an empty one (whose element 0 holds the key): the
            // first slot, almost always (load <= 1/SLOTS_PER_KEY).
            keys[0] = k;
            while keys[table[i] as usize] != k {
                i = (i + 1) & mask;
            }
            // Found or new, without a branch (which would be mispredicted for a good share of
            // the inserts): a new key takes element `len + 1` and starts from zero counts. The
            // piece fits, so that element is in bounds either way.
            let found = table[i] as usize;
            let fresh = found == 0;
            let e = if fresh { len + 1 } else { found };
            table[i] = e as u32;
            keys[e] = k;
            all_counts[e] = C::merge_or_start(all_counts[e], counts(item), fresh);
            len += fresh as usize;
        }
        self.len = len;
    }

    /// The counts of `key`, if present.
    pub fn get(&self, key: &K) -> Option<&C> {
        if self.len == 0 {
            return None;
        }
        let mask = self.capacity() - 1;
        let mut i = self.slot(key);
        let table = self.table.as_slice();
        loop {
            let e = table[i] as usize;
            if e == 0 {
                return None;
            }
            if self.keys.as_slice()[e] == *key {
                return Some(&self.counts.as_slice()[e]);
            }
            i = (i + 1) & mask;
        }
    }

    /// One past the highest element number the table has room for.
    pub(crate) fn room_end(&self) -> usize {
        self.capacity() / SLOTS_PER_KEY + 1
    }

    /// The table, keys and counts (all of their elements, element 0 included).
    pub(crate) fn arrays_mut(&mut self) -> (&mut [u32], &mut [K], &mut [C]) {
        (self.table.as_mut_slice(), self.keys.as_mut_slice(), self.counts.as_mut_slice())
    }

    /// Empties the set, keeping its table's size.
    pub(crate) fn clear_all(&mut self) {
        self.table.as_mut_slice().fill(0);
        self.len = 0;
    }

    /// Moves the key and counts of element `from` to element `to`, re-pointing its slot.
    pub(crate) fn move_element(&mut self, from: usize, to: usize) {
        let key = self.keys.as_slice()[from];
        let counts = self.counts.as_slice()[from];
        self.keys.as_mut_slice()[to] = key;
        self.counts.as_mut_slice()[to] = counts;
        let mask = self.capacity() - 1;
        let mut i = self.slot(&key);
        let table = self.table.as_mut_slice();
        while table[i] as usize != from {
            i = (i + 1) & mask;
        }
        table[i] = to as u32;
    }

    #[cold]
    fn grow(&mut self) {
        self.reserve_slots((2 * self.capacity()).max(MIN_SLOTS), |t| t.fill(0));
        let mask = self.capacity() - 1;
        for e in 1..=self.len {
            let mut i = self.slot(&self.keys.as_slice()[e]);
            let table = self.table.as_mut_slice();
            while table[i] != 0 {
                i = (i + 1) & mask;
            }
            table[i] = e as u32;
        }
    }

    /// The keys, in insertion order.
    pub fn keys(&self) -> &[K] {
        self.keys.as_slice().get(1..=self.len).unwrap_or_default()
    }

    /// The counts, in the order of [`CountSet::keys`].
    pub fn counts(&self) -> &[C] {
        self.counts.as_slice().get(1..=self.len).unwrap_or_default()
    }

    /// The stored keys and their counts, in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &C)> + '_ {
        self.keys().iter().zip(self.counts())
    }
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
        for (k, c) in set.iter() {
            assert_eq!(map[k], *c);
            assert_eq!(set.get(k), Some(c));
        }
        assert!(set.len() * 2 <= set.capacity());
        set.clear_for(10);
        assert!(set.is_empty() && set.iter().next().is_none() && set.get(&3).is_none());
        set.clear_for(0);
        assert!(set.is_empty() && set.get(&3).is_none());
        set.insert(u64::MAX, &[1, 2]);
        assert_eq!(set.get(&u64::MAX), Some(&[1, 2]));
    }

    #[test]
    fn a_new_set_maps_nothing_until_used() {
        let mut set = CountSet::<u32, [u32; 8]>::new(0);
        set.clear_for(0);
        set.prefetch(&7);
        assert_eq!((set.capacity(), set.len(), set.keys(), set.counts()), (0, 0, &[][..], &[][..]));
        assert_eq!(set.get(&7), None);
        set.insert(7, &[1; 8]);
        assert_eq!(set.get(&7), Some(&[1; 8]));
        assert!(set.capacity() >= MIN_SLOTS);
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

//! The inline layout: the table is a power-of-two array of [`Slot`]s, each a key and its
//! counts side by side, probed linearly at load at most 1/2. An insert touches one slot (one
//! cache line, as a slot's size is a power of two), whose address follows from the key's hash
//! alone, so it can be prefetched. An all-zero slot is empty: a fresh map is an empty table,
//! and an empty slot's counts are zero already, so a new key and a present one are merged the
//! same way.

use crate::Key;
use std::ops::Range;

use super::{invert, prefetch_ahead, slot_of, stored, CountSet, Entries, Layout, Slot, Tallies};
use crate::arena::Zeroer;
use crate::Tally;

/// Table slots a key: the load factor stays at or below `1 / SLOTS_PER_KEY` (the packed
/// layout's too).
pub(super) const SLOTS_PER_KEY: usize = 2;

/// The inline layout ([`CountSet::INLINE`], not packed): the table is `slots`.
#[derive(Debug)]
pub(super) struct Inline;

impl<K: Key, C: Tally> Layout<K, C> for Inline {
    #[inline(always)]
    fn max_keys(slots: usize) -> usize {
        slots / SLOTS_PER_KEY
    }

    fn capacity(set: &CountSet<K, C>) -> usize {
        set.slots.len()
    }

    fn make_table(set: &mut CountSet<K, C>, slots: usize, _keys: usize, zero: &impl Zeroer) {
        set.slots.resize_zeroed_with(slots, zero);
    }

    fn use_huge_pages(set: &mut CountSet<K, C>, zero: &impl Zeroer) {
        set.slots.use_huge_pages(zero);
    }

    #[inline(always)]
    fn table(set: &CountSet<K, C>) -> (usize, usize) {
        (set.slots.as_slice().as_ptr() as usize, std::mem::size_of::<Slot<K, C>>())
    }

    #[inline(always)]
    fn insert_piece<T, const PREFETCH: bool>(
        set: &mut CountSet<K, C>,
        piece: &[T],
        hash: &impl Fn(&T) -> u64,
        key: &impl Fn(&T) -> K,
        counts: &impl Fn(&T) -> C,
    ) {
        let (bits, shift) = (set.bits, set.shift);
        let view = set.slot_view();
        let slots = set.slots.as_mut_slice();
        let mask = slots.len() - 1;
        let empty = K::zeroed();
        let mut len = set.len;
        for (j, item) in piece.iter().enumerate() {
            prefetch_ahead::<T, PREFETCH>(&view, piece, j, hash);
            let s = stored(key(item));
            let mut i = slot_of(hash(item), shift, bits);
            // Probe until the key's slot or an empty one: the first slot, almost always (load
            // <= 1/2).
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
        set.len = len;
    }

    fn get(set: &CountSet<K, C>, key: &K) -> Option<C> {
        let s = invert(*key);
        let slots = set.slots.as_slice();
        let mask = slots.len() - 1;
        let mut i = set.slot(key);
        loop {
            let slot = &slots[i];
            if slot.is_empty() {
                return None;
            }
            if slot.stored == s {
                return Some(slot.count);
            }
            i = (i + 1) & mask;
        }
    }

    fn slot_count(set: &CountSet<K, C>) -> usize {
        set.slots.len()
    }

    #[inline(always)]
    fn tallies(set: &CountSet<K, C>, slots: Range<usize>) -> Tallies<'_, K, C> {
        Tallies { slots: &set.slots.as_slice()[slots], words: &[] }
    }

    #[inline(always)]
    fn tally(tallies: &Tallies<'_, K, C>, i: usize) -> C {
        tallies.slots[i].count
    }

    #[inline(always)]
    fn next_entry(entries: &mut Entries<'_, K, C>) -> Option<(usize, K, C)> {
        let slots = entries.slots;
        let i = entries.next_full(slots, |s| !s.is_empty())?;
        let slot = &slots[i];
        Some((i, invert(slot.stored), slot.count))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::merges_like_a_hashmap;
    use super::*;

    #[test]
    fn inline_sets_merge_like_a_hashmap() {
        merges_like_a_hashmap::<1>();
        merges_like_a_hashmap::<2>();
    }

    #[test]
    fn u64_tallies_carry() {
        let mut set = CountSet::<u32, u64>::new(0);
        const { assert!(CountSet::<u32, u64>::INLINE && !CountSet::<u32, u64>::PACKED) };
        set.insert(5, &u64::from(u32::MAX));
        set.insert(5, &1);
        set.insert(6, &u64::MAX);
        set.insert(6, &2);
        assert_eq!(set.get(&5), Some(1u64 << 32));
        assert_eq!(set.get(&6), Some(1));
    }

    /// The table holds at most one key every `SLOTS_PER_KEY` slots, however it was made.
    #[test]
    fn inline_tables_stay_at_load_one_half() {
        let mut set = CountSet::<u64, u64>::new(0);
        for k in 0..10_000u64 {
            set.insert(k * 3, &k);
            assert!(set.len() * SLOTS_PER_KEY <= set.capacity(), "{k}");
        }
        set.clear_for(5000);
        assert!(set.is_empty() && set.capacity() >= 5000 * SLOTS_PER_KEY);
    }
}

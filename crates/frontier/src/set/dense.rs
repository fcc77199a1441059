//! The dense layout: the [`Slot`]s are elements in insertion order, behind a power-of-two
//! table of element numbers probed linearly. For counts too large to sit in the table (lanes,
//! or slots whose size is not a power of two): an inline table of them would be several
//! times larger than the keys it holds, and clearing it between depths would cost more than
//! the second cache miss (the key's element after its table slot) saves.
//!
//! * Element 0 is the probe's sentinel: an insert writes its key there first, so an empty
//!   table slot (number 0) and the key's own slot end the probe on one comparison. A new key
//!   takes the next element, from zero counts.
//! * The table numbers elements in `u16`s while it is made for at most [`NARROW_KEYS`] keys
//!   (half the bytes to cache), else in `u32`s ([`ElementNumber`]); both live in the set's
//!   `index` of `u32`s.
//! * The load factor is at most 1/4 in a table of fewer than [`LARGE_SLOTS`] slots, 1/2 from
//!   there ([`SLOTS_PER_KEY`]).

use std::ops::Range;

use crate::Key;
use bytemuck::Pod;

use super::{invert, prefetch_ahead, slot_of, stored, CountSet, Entries, Layout, Slot, Tallies};
use crate::arena::Zeroer;
use crate::prefetch::prefetch;
use crate::Tally;

/// How many items ahead an insert prefetches the element a slot names.
const ELEMENT_AHEAD: usize = 8;

/// Table slots (element numbers) a key: load at most 1/4 in a table of fewer than
/// [`LARGE_SLOTS`] slots, 1/2 from there. Within a core's caches, a key whose probe does not
/// end at its first slot costs a mispredicted branch (the probe loop's exit), and the fewer
/// collisions pay more than clearing twice the slots every depth does. Past a core's cache
/// and before memory, a collision also costs a miss on another key's element. In a table far
/// past the caches every probe misses anyway: there the smaller table (half the pages to
/// fault, clear and map) pays more.
const SLOTS_PER_KEY: usize = 4;

/// The smallest table kept at load up to 1/2 again (16 MiB of element numbers).
const LARGE_SLOTS: usize = 1 << 22;

/// The most elements a table numbers in `u16`s (element 0, the sentinel, is not counted): a
/// table of fewer keys takes half the bytes, and a set within a core's caches leaves more of
/// them to its elements.
const NARROW_KEYS: usize = u16::MAX as usize;

/// An element number of the table: a `u16` in tables for at most [`NARROW_KEYS`] keys, else a
/// `u32`. Sealed: only those two.
trait ElementNumber: Pod + sealed::Sealed {
    /// The number, as an index of the elements.
    fn number(self) -> usize;
    /// `e` as a number (it fits: the table is made for its elements).
    fn of(e: usize) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
}

impl ElementNumber for u16 {
    #[inline(always)]
    fn number(self) -> usize {
        usize::from(self)
    }
    #[inline(always)]
    fn of(e: usize) -> Self {
        e as u16
    }
}

impl ElementNumber for u32 {
    #[inline(always)]
    fn number(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn of(e: usize) -> Self {
        e as u32
    }
}

/// The dense layout: the table is `index`, the elements `slots` (from element 1).
#[derive(Debug)]
pub(super) struct Dense;

impl Dense {
    /// The most keys a table of `slots` slots holds before it grows.
    #[inline(always)]
    fn max_keys(slots: usize) -> usize {
        if slots >= LARGE_SLOTS {
            slots / (SLOTS_PER_KEY / 2)
        } else {
            slots / SLOTS_PER_KEY
        }
    }

    /// Whether a table of `slots` slots numbers its elements in `u16`s.
    #[inline(always)]
    fn narrow_for(slots: usize) -> bool {
        Self::max_keys(slots) <= NARROW_KEYS
    }

    /// Whether `set`'s table numbers its elements in `u16`s, from its size (`bits`, set with
    /// the table).
    #[inline(always)]
    fn narrow<K: Key, C: Tally>(set: &CountSet<K, C>) -> bool {
        Self::narrow_for(1 << set.bits)
    }

    /// The `u32`s that a table of `slots` slots takes.
    fn index_words(slots: usize) -> usize {
        if Self::narrow_for(slots) {
            slots.div_ceil(2)
        } else {
            slots
        }
    }

    /// The element number in table slot `i`.
    fn element_at<K: Key, C: Tally>(set: &CountSet<K, C>, i: usize) -> usize {
        let words = set.index.as_slice();
        if Self::narrow(set) {
            bytemuck::cast_slice::<u32, u16>(words)[i].number()
        } else {
            words[i].number()
        }
    }

    /// The elements that hold keys, in insertion order.
    #[inline(always)]
    fn elements<K: Key, C: Tally>(set: &CountSet<K, C>) -> &[Slot<K, C>] {
        set.slots.as_slice().get(1..=set.len).unwrap_or_default()
    }

    /// [`Layout::insert_piece`] in a table of element numbers of type `E` (the set's: `u16`
    /// when [`Dense::narrow`]).
    #[inline(always)]
    fn insert_numbered<K: Key, C: Tally, T, E: ElementNumber, const PREFETCH: bool>(
        set: &mut CountSet<K, C>,
        piece: &[T],
        hash: &impl Fn(&T) -> u64,
        key: &impl Fn(&T) -> K,
        counts: &impl Fn(&T) -> C,
    ) {
        let (bits, shift) = (set.bits, set.shift);
        let slot = |h: u64| slot_of(h, shift, bits);
        let view = set.slot_view();
        let far = set.worth_prefetching();
        let mask = <Self as Layout<K, C>>::capacity(set) - 1;
        let table: &mut [E] = bytemuck::cast_slice_mut(set.index.as_mut_slice());
        let slots = set.slots.as_mut_slice();
        let mut len = set.len;
        for (j, item) in piece.iter().enumerate() {
            // The slot of the item `SLOT_AHEAD` places on arrives before the item
            // `ELEMENT_AHEAD` places before it reads it.
            prefetch_ahead::<T, PREFETCH>(&view, piece, j, hash);
            // The element a slot names is a second, dependent miss: fetch the one of an item a
            // little ahead (the last item, near the end), whose slot has arrived (prefetched
            // with its hash). No bounds check: a prefetch reads nothing.
            if far {
                let ahead = &piece[(j + ELEMENT_AHEAD).min(piece.len() - 1)];
                prefetch(slots.as_ptr().wrapping_add(table[slot(hash(ahead))].number()));
            }
            let s = stored(key(item));
            let mut i = slot(hash(item));
            // Probe until the key's slot or an empty one (whose element 0 holds the key): the
            // first slot, mostly (load <= 1/4, or 1/2 in the largest tables).
            slots[0].stored = s;
            while slots[table[i].number()].stored != s {
                i = (i + 1) & mask;
            }
            // Found or new, without a branch: a new key takes element `len + 1` and starts from
            // zero counts. The piece fits, so that element is in bounds either way, and its
            // number fits an `E`.
            let found = table[i].number();
            let fresh = found == 0;
            let e = if fresh { len + 1 } else { found };
            table[i] = E::of(e);
            let element = &mut slots[e];
            element.stored = s;
            element.count = element.count.merge_or_start(counts(item), fresh);
            len += fresh as usize;
        }
        set.len = len;
    }
}

impl<K: Key, C: Tally> Layout<K, C> for Dense {
    #[inline(always)]
    fn max_keys(slots: usize) -> usize {
        Dense::max_keys(slots)
    }

    fn capacity(set: &CountSet<K, C>) -> usize {
        if Self::narrow(set) {
            set.index.len() * 2
        } else {
            set.index.len()
        }
    }

    /// Also makes room for as many elements as the table takes keys, whose old contents are
    /// kept (the caller may insert them again), and whose pages are pre-faulted for the
    /// `keys` keys expected only (elements are written from the front: the others fault when
    /// written).
    fn make_table(set: &mut CountSet<K, C>, slots: usize, keys: usize, zero: &impl Zeroer) {
        set.index.resize_zeroed_with(Self::index_words(slots), zero);
        // Element 0 is the sentinel.
        set.slots.resize_prefaulting(Dense::max_keys(slots) + 1, keys + 1, zero);
    }

    fn use_huge_pages(set: &mut CountSet<K, C>, zero: &impl Zeroer) {
        set.index.use_huge_pages(zero);
        set.slots.use_huge_pages(zero);
    }

    #[inline(always)]
    fn table(set: &CountSet<K, C>) -> (usize, usize) {
        let size = if Self::narrow(set) { std::mem::size_of::<u16>() } else { std::mem::size_of::<u32>() };
        (set.index.as_slice().as_ptr() as usize, size)
    }

    #[inline(always)]
    fn insert_piece<T, const PREFETCH: bool>(
        set: &mut CountSet<K, C>,
        piece: &[T],
        hash: &impl Fn(&T) -> u64,
        key: &impl Fn(&T) -> K,
        counts: &impl Fn(&T) -> C,
    ) {
        if Self::narrow(set) {
            Self::insert_numbered::<K, C, T, u16, PREFETCH>(set, piece, hash, key, counts)
        } else {
            Self::insert_numbered::<K, C, T, u32, PREFETCH>(set, piece, hash, key, counts)
        }
    }

    fn get(set: &CountSet<K, C>, key: &K) -> Option<C> {
        let s = invert(*key);
        let mask = <Self as Layout<K, C>>::capacity(set) - 1;
        let mut i = set.slot(key);
        let slots = set.slots.as_slice();
        loop {
            let slot = match Self::element_at(set, i) {
                0 => return None,
                e => &slots[e],
            };
            if slot.stored == s {
                return Some(slot.count);
            }
            i = (i + 1) & mask;
        }
    }

    fn slot_count(set: &CountSet<K, C>) -> usize {
        Self::elements(set).len()
    }

    #[inline(always)]
    fn tallies(set: &CountSet<K, C>, slots: Range<usize>) -> Tallies<'_, K, C> {
        Tallies { slots: &Self::elements(set)[slots], words: &[] }
    }

    #[inline(always)]
    fn tally(tallies: &Tallies<'_, K, C>, i: usize) -> C {
        tallies.slots[i].count
    }

    #[inline(always)]
    fn next_entry(entries: &mut Entries<'_, K, C>) -> Option<(usize, K, C)> {
        let i = entries.next_block;
        let slot = entries.slots.get(i)?;
        entries.next_block = i + 1;
        Some((i, invert(slot.stored), slot.count))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::merges_like_a_hashmap;
    use super::*;

    #[test]
    fn dense_sets_merge_like_a_hashmap() {
        merges_like_a_hashmap::<3>();
        merges_like_a_hashmap::<8>();
    }

    #[test]
    fn dense_tables_grow_one_key_at_a_time() {
        // Made small, grown one key at a time (load up to 1/4 all the way), then made large
        // at once.
        let mut set = CountSet::<u32, [u32; 4]>::new(0);
        for round in 0..2u32 {
            for k in 0..100_000u32 {
                set.insert(k.wrapping_mul(0x9E37_79B9), &[k, round, 1, 0]);
                if k < 1000 {
                    assert!(set.len() * 4 <= set.capacity(), "{k}");
                }
            }
            assert_eq!(set.len(), 100_000);
            assert!(set.capacity() > 1 << 16 && set.len() * 4 <= set.capacity());
        }
        for k in (0..100_000u32).step_by(997) {
            assert_eq!(set.get(&k.wrapping_mul(0x9E37_79B9)), Some([2 * k, 1, 2, 0]));
        }
        set.clear_for(200_000);
        assert!(set.is_empty() && set.capacity() >= 800_000);
        set.insert(5, &[1; 4]);
        assert_eq!((set.len(), set.get(&5)), (1, Some([1; 4])));
    }

    /// Tables for up to `NARROW_KEYS` keys number their elements in `u16`s, in half the
    /// bytes; a set that grows past them numbers them in `u32`s from then on, every key kept.
    #[test]
    fn small_dense_tables_number_elements_in_u16s() {
        type Set = CountSet<u32, [u32; 4]>;
        let mut set = Set::new(0);
        set.clear_for(1000);
        assert!(Dense::narrow(&set));
        assert_eq!(
            set.bytes(),
            set.capacity() * 2 + set.slots.len() * std::mem::size_of::<Slot<u32, [u32; 4]>>()
        );
        let key = |k: u32| k.wrapping_mul(0x9E37_79B9);
        let mut k = 0;
        while Dense::narrow(&set) {
            set.insert(key(k), &[k, 1, 0, 0]);
            k += 1;
            assert_eq!(set.len(), k as usize);
        }
        // The last narrow table held as many keys as it may, all numbered in `u16`s.
        assert_eq!(Dense::max_keys(set.capacity() / 2) as u32, k - 1);
        assert!((k - 1) as usize <= NARROW_KEYS && Dense::max_keys(set.capacity()) > NARROW_KEYS);
        for j in 0..k + 40_000 {
            set.insert(key(j), &[j, 1, 0, 0]);
        }
        for j in 0..k + 40_000 {
            let twice = if j < k { 2 } else { 1 };
            assert_eq!(set.get(&key(j)), Some([j * twice, twice, 0, 0]), "{j}");
        }
        // Cleared for few keys, the table is small and narrow again.
        set.clear_for(100);
        assert!(Dense::narrow(&set) && set.is_empty());
        set.insert(key(7), &[1; 4]);
        assert_eq!(set.get(&key(7)), Some([1; 4]));
    }

    /// A table past `LARGE_SLOTS` is at load up to 1/2 again: made for 1.5 M keys, it has
    /// 2^22 slots (1/4 would take 2^23), and holds them. No table size holds fewer keys than
    /// the one below it, so `slots_for` finds the smallest that fits.
    #[test]
    fn large_dense_tables_go_back_to_load_one_half() {
        type Set = CountSet<u32, [u32; 4]>;
        const { assert!(!Set::INLINE) };
        for bits in 4..40 {
            assert!(Dense::max_keys(1 << bits) <= Dense::max_keys(1 << (bits + 1)), "{bits}");
        }
        let mut set = Set::new(0);
        set.clear_for(1_500_000);
        assert_eq!(set.capacity(), LARGE_SLOTS);
        let keys = (0..1_500_000u32).map(|k| (k.wrapping_mul(0x9E37_79B9), [k, 1, 0, 0]));
        set.insert_many(&keys.collect::<Vec<_>>(), |r| r.0, |r| r.1);
        assert_eq!((set.len(), set.capacity()), (1_500_000, LARGE_SLOTS));
        for k in (0..1_500_000u32).step_by(9_973) {
            assert_eq!(set.get(&k.wrapping_mul(0x9E37_79B9)), Some([k, 1, 0, 0]));
        }
    }
}

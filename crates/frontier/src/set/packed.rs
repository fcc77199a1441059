//! The packed layout: a 4-byte key and its count share one 64-bit word, the key (its bits
//! inverted) in the low bits and the count above them. The words are the table, probed
//! linearly at load at most 1/2 as in the inline layout, and an insert is one addition to a
//! word: an empty word is zero, so a new key and a present one are merged the same way.

use crate::Key;
use std::ops::Range;

use bytemuck::Pod;

use super::{inline, prefetch_ahead, slot_of, CountSet, Entries, Layout, Tallies};
use crate::arena::Zeroer;
use crate::Tally;

/// The packed layout ([`CountSet::PACKED`]): the table is `words`.
#[derive(Debug)]
pub(super) struct Packed;

impl Packed {
    /// The low bits of a word that hold its key (inverted); the count is above them. (Any
    /// width below 64 for counts that do not pack, whose copies of this code never run.)
    const fn key_bits<C: Tally>() -> u32 {
        if C::PACK_BITS > 0 {
            64 - C::PACK_BITS
        } else {
            32
        }
    }

    /// The key bits of a word.
    const fn key_mask<C: Tally>() -> u64 {
        (1 << Self::key_bits::<C>()) - 1
    }

    /// The word bits of `key` (inverted, so that no key's word is zero).
    ///
    /// # Panics
    /// If the key does not fit below the count's bits, or its bits there are all ones.
    #[inline(always)]
    fn key_word<K: Pod, C: Tally>(key: K) -> u64 {
        let k = u64::from(bytemuck::cast::<K, u32>(key));
        assert!(
            k < Self::key_mask::<C>(),
            "a packed CountSet stores keys below 2^{} - 1",
            const { Self::key_bits::<C>() }
        );
        !k & Self::key_mask::<C>()
    }

    /// A count's bits, to be added to a word's above its key.
    #[inline(always)]
    fn count_word<C: Tally>(count: C) -> u64 {
        bytemuck::cast::<C, u64>(count) << Self::key_bits::<C>()
    }

    /// The key and count of a word (of an empty word, zero counts and a key that means
    /// nothing).
    #[inline(always)]
    fn unpack<K: Pod, C: Tally>(word: u64) -> (K, C) {
        (
            bytemuck::cast::<u32, K>((!word & Self::key_mask::<C>()) as u32),
            bytemuck::cast::<u64, C>(word >> Self::key_bits::<C>()),
        )
    }

    /// The keys and counts from table slot `i` on, up to the first empty one (a probe's path).
    fn iter_from<K: Key, C: Tally>(set: &CountSet<K, C>, mut i: usize) -> impl Iterator<Item = (K, C)> + '_ {
        let words = set.words.as_slice();
        let mask = words.len() - 1;
        std::iter::from_fn(move || {
            let word = words[i];
            i = (i + 1) & mask;
            (word != 0).then(|| Self::unpack(word))
        })
    }
}

impl<K: Key, C: Tally> Layout<K, C> for Packed {
    #[inline(always)]
    fn max_keys(slots: usize) -> usize {
        slots / inline::SLOTS_PER_KEY
    }

    fn capacity(set: &CountSet<K, C>) -> usize {
        set.words.len()
    }

    fn make_table(set: &mut CountSet<K, C>, slots: usize, _keys: usize, zero: &impl Zeroer) {
        set.words.resize_zeroed_with(slots, zero);
    }

    fn use_huge_pages(set: &mut CountSet<K, C>, zero: &impl Zeroer) {
        set.words.use_huge_pages(zero);
    }

    #[inline(always)]
    fn table(set: &CountSet<K, C>) -> (usize, usize) {
        (set.words.as_slice().as_ptr() as usize, std::mem::size_of::<u64>())
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
        let words = set.words.as_mut_slice();
        let mask = words.len() - 1;
        let key_mask = Self::key_mask::<C>();
        let mut len = set.len;
        for (j, item) in piece.iter().enumerate() {
            prefetch_ahead::<T, PREFETCH>(&view, piece, j, hash);
            let s = Self::key_word::<K, C>(key(item));
            let mut i = slot_of(hash(item), shift, bits);
            // Probe until the key's word or an empty one: an empty word is zero, a full one
            // has its key bits.
            while words[i] & key_mask != s && words[i] != 0 {
                i = (i + 1) & mask;
            }
            // Found or new, without a branch: an empty word's count is zero.
            let word = words[i];
            len += (word == 0) as usize;
            words[i] = (word | s).wrapping_add(Self::count_word(counts(item)));
        }
        set.len = len;
    }

    fn get(set: &CountSet<K, C>, key: &K) -> Option<C> {
        Self::iter_from(set, set.slot(key)).find(|(k, _)| k == key).map(|(_, c)| c)
    }

    fn slot_count(set: &CountSet<K, C>) -> usize {
        set.words.len()
    }

    #[inline(always)]
    fn tallies(set: &CountSet<K, C>, slots: Range<usize>) -> Tallies<'_, K, C> {
        Tallies { slots: &[], words: &set.words.as_slice()[slots] }
    }

    #[inline(always)]
    fn tally(tallies: &Tallies<'_, K, C>, i: usize) -> C {
        Self::unpack::<K, C>(tallies.words[i]).1
    }

    #[inline(always)]
    fn next_entry(entries: &mut Entries<'_, K, C>) -> Option<(usize, K, C)> {
        let words = entries.words;
        let i = entries.next_full(words, |&w| w != 0)?;
        let (k, c) = Self::unpack(words[i]);
        Some((i, k, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Count34;
    use std::collections::HashMap;

    #[test]
    fn packed_sets_merge_like_a_hashmap_modulo_2_34() {
        let mut set = CountSet::<u32, Count34>::new(0);
        let mut map: HashMap<u32, u64> = HashMap::new();
        let mut x = 1u64;
        for i in 0..50_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Many repeats, and counts above 2^34 too: only their low 34 bits count.
            let k = (x >> 50) as u32;
            let add = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            set.insert(k, &Count34::new(add));
            let e = map.entry(k).or_insert(0);
            *e = e.wrapping_add(add);
        }
        assert_eq!(set.len(), map.len());
        for (k, c) in set.iter() {
            assert_eq!(c.get(), map[&k] % (1 << 34));
            assert_eq!(set.get(&k), Some(c));
        }
        // The keys at the ends of the range: 0, and 2^30 - 2.
        set.clear_for(10);
        assert!(set.is_empty() && set.get(&3).is_none());
        set.insert(0, &Count34::new(1));
        set.insert((1 << 30) - 2, &Count34::new(u64::MAX));
        assert_eq!(set.get(&0), Some(Count34::new(1)));
        assert_eq!(set.get(&((1 << 30) - 2)).map(Count34::get), Some((1 << 34) - 1));
        assert_eq!(set.get(&((1 << 30) - 1)), None);
    }

    /// A word is its key's bits inverted below its count's bits, and reads back as both.
    #[test]
    fn a_word_holds_its_key_below_its_count() {
        assert_eq!(Packed::key_bits::<Count34>(), 30);
        let word = Packed::key_word::<u32, Count34>(5) + Packed::count_word(Count34::new(3));
        assert_eq!(word, (3 << 30) | (((1 << 30) - 1) ^ 5));
        assert_eq!(Packed::unpack::<u32, Count34>(word), (5, Count34::new(3)));
    }

    #[test]
    #[should_panic(expected = "below 2^30 - 1")]
    fn a_packed_set_refuses_a_key_above_its_bits() {
        let mut set = CountSet::<u32, Count34>::new(0);
        set.insert(1 << 30, &Count34::new(1));
    }

    /// The largest 30-bit key would be stored as zero bits: an empty word.
    #[test]
    #[should_panic(expected = "below 2^30 - 1")]
    fn a_packed_set_refuses_the_key_whose_bits_are_all_ones() {
        let mut set = CountSet::<u32, Count34>::new(0);
        set.insert((1 << 30) - 1, &Count34::new(1));
    }
}

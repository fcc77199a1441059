//! The set checked against `HashMap` models, in every layout.

use super::*;
use crate::Count34;
use proptest::prelude::*;
use std::collections::HashMap;

#[test]
fn an_idle_view_fetches_its_one_line_whatever_the_hash() {
    let v = SlotView::idle();
    for hash in [0, 1, 1 << 63, u64::MAX, 0x9e37_79b9_7f4a_7c15] {
        let at = v.slot_address(hash);
        assert_eq!(at, IDLE_LINE.as_ptr() as usize);
    }
}

/// Each type the tests use takes the layout they expect.
#[test]
fn the_types_choose_the_layout() {
    const { assert!(CountSet::<u32, Count34>::PACKED && CountSet::<u32, Count34>::INLINE) };
    const { assert!(!CountSet::<u64, Count34>::PACKED && CountSet::<u64, Count34>::INLINE) };
    const { assert!(!CountSet::<u32, [u32; 2]>::PACKED && !CountSet::<u32, [u32; 2]>::INLINE) };
    // Inline for one lane; dense for two beside a `u32` key (a 12-byte slot).
    const { assert!(CountSet::<u32, [u32; 1]>::INLINE && CountSet::<u64, [u32; 2]>::INLINE) };
    const { assert!(CountSet::<u32, u64>::INLINE && !CountSet::<u32, [u32; 4]>::INLINE) };
}

/// A set put on huge pages keeps its keys and counts, in every layout, and goes on
/// filling.
#[test]
fn huge_pages_keep_the_keys() {
    fn check<C: Tally + std::fmt::Debug + PartialEq>(count: impl Fn(u32) -> C) {
        let mut set = CountSet::<u32, C>::new(0);
        for k in 0..20_000u32 {
            set.insert(k * 7, &count(k));
        }
        set.use_huge_pages(&Serial);
        for k in 20_000..40_000u32 {
            set.insert(k * 7, &count(k));
        }
        assert_eq!(set.len(), 40_000);
        for k in 0..40_000u32 {
            assert_eq!(set.get(&(k * 7)), Some(count(k)), "key {}", k * 7);
        }
    }
    check(|k| [k, k + 1, k + 2, k + 3, k + 4, k + 5, k + 6, k + 7]);
    check(|k| [k, k + 1]);
    check(|k| Count34::new(u64::from(k) << 3));
}

/// Random inserts with many repeats, in a set of lanes `[u32; L]`: dense for `L > 2`.
pub(super) fn merges_like_a_hashmap<const L: usize>() {
    let mut set = CountSet::<u64, [u32; L]>::new(0);
    assert_eq!(CountSet::<u64, [u32; L]>::INLINE, L <= 2);
    let mut map: HashMap<u64, [u32; L]> = HashMap::new();
    let mut x = 1u64;
    for i in 0..50_000u32 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let k = x >> 50; // many repeats
        let add: [u32; L] = std::array::from_fn(|g| i.wrapping_mul(g as u32 + 1));
        set.insert(k, &add);
        let e = map.entry(k).or_insert([0; L]);
        *e = e.merge(add);
    }
    assert_eq!(set.len(), map.len());
    assert_eq!(set.iter().count(), map.len());
    for (k, c) in set.iter() {
        assert_eq!(map[&k], c);
        assert_eq!(set.get(&k), Some(c));
    }
    assert!(set.len() <= CountSet::<u64, [u32; L]>::max_keys(set.capacity()));
    set.clear_for(10);
    assert!(set.is_empty() && set.iter().next().is_none() && set.get(&3).is_none());
    assert!(set.entries(0..set.slot_count()).next().is_none());
    set.clear_for(0);
    assert!(set.is_empty() && set.get(&3).is_none());
    // Zero is a key like any other; only all ones is not.
    set.insert(0, &[1; L]);
    set.insert(u64::MAX - 1, &[3; L]);
    assert_eq!(set.get(&0), Some([1; L]));
    assert_eq!(set.get(&(u64::MAX - 1)), Some([3; L]));
    assert_eq!(set.get(&u64::MAX), None);
}

/// A set is prefetched into only once its arrays pass `CACHED_BYTES`: every key is kept
/// either way, on both sides of the line (one key at a time, and a batch at once).
#[test]
fn prefetching_starts_past_the_caches() {
    type Dense = CountSet<u32, [u32; 8]>;
    let key = |k: u32| k.wrapping_mul(0x9E37_79B9);
    let mut set = Dense::new(0);
    assert!(!set.worth_prefetching());
    let mut k = 0u32;
    while !set.worth_prefetching() {
        set.insert(key(k), &[k, 1, 0, 0, 0, 0, 0, 2]);
        k += 1;
        assert_eq!(set.worth_prefetching(), set.bytes() > CACHED_BYTES);
    }
    assert!(k > 1000, "{k} keys fill a core's caches");
    let batch: Vec<(u32, [u32; 8])> = (0..2 * k).map(|j| (key(j), [1, 0, 0, 0, 0, 0, 0, 1])).collect();
    set.insert_many(&batch, |r| r.0, |r| r.1);
    assert_eq!(set.len(), 2 * k as usize);
    for j in (0..2 * k).step_by(31) {
        let old = if j < k { [j + 1, 1, 0, 0, 0, 0, 0, 3] } else { [1, 0, 0, 0, 0, 0, 0, 1] };
        assert_eq!(set.get(&key(j)), Some(old), "{j}");
    }
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
    assert_eq!((set.capacity(), set.len(), set.slot_count()), (0, 0, 0));
    assert!(set.iter().next().is_none());
    assert_eq!(set.get(&7), None);
    set.insert(7, &[1; 8]);
    assert_eq!(set.get(&7), Some([1; 8]));
    assert!(set.capacity() >= MIN_SLOTS);
}

/// Every key once among the slots, whole or by ranges, in a set of counts `C`, each key
/// inserted with `one` (`total` reads a count's number).
fn slots_hold_every_key_once<C: Tally + PartialEq + std::fmt::Debug>(one: C, total: fn(C) -> u64) {
    let mut set = CountSet::<u32, C>::new(0);
    for k in (0..1000u32).chain(0..500) {
        set.insert(k * 7, &one);
    }
    let end = set.slot_count();
    let mut keys: Vec<u32> = set.entries(0..end).map(|(_, k, _)| k).collect();
    keys.sort_unstable();
    assert_eq!(keys, (0..1000).map(|k| k * 7).collect::<Vec<_>>());
    let counts = set.tallies(0..end);
    let mut occupied = vec![false; end];
    // By ranges, with indices within each range, every key once, and its counts where
    // `tallies` finds them.
    for cut in [0, 1, 63, 64, 65, 100, end / 2, end - 1, end] {
        let mut seen: Vec<u32> = set
            .entries(0..cut)
            .map(|(i, k, c)| {
                assert_eq!(counts.get(i), c);
                occupied[i] = true;
                k
            })
            .collect();
        seen.extend(set.entries(cut..end).map(|(i, k, c)| {
            assert_eq!((counts.get(cut + i), set.tallies(cut..end).get(i)), (c, c));
            assert_eq!(set.get(&k), Some(c));
            k
        }));
        seen.sort_unstable();
        assert_eq!(seen, keys, "cut at {cut}");
    }
    // The slots without a key hold zero counts.
    assert!((0..end).filter(|&i| !occupied[i]).all(|i| counts.get(i) == C::zero()));
    let twice: u64 = set.iter().map(|(_, c)| total(c)).sum();
    assert_eq!(twice, 1500);
}

#[test]
fn slots_hold_every_key_once_in_every_layout() {
    slots_hold_every_key_once([1; 1], |c| c[0].into());
    slots_hold_every_key_once([1; 2], |c| c[1].into());
    slots_hold_every_key_once([1; 5], |c| c[4].into());
    slots_hold_every_key_once(Count34::new(1), Count34::get);
}

/// What a model test does to a set.
#[derive(Clone, Debug)]
enum Op {
    /// Inserts the keys with their counts: one at a time (0), in one batch (1), or in
    /// one batch whose slots are prefetched first (2).
    Insert(Vec<(u32, u32)>, u8),
    /// Empties the set, with room for this many keys.
    Clear(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (prop::collection::vec((0u32..3000, any::<u32>()), 0..400), 0u8..3)
            .prop_map(|(items, how)| Op::Insert(items, how)),
        1 => (0usize..5000).prop_map(Op::Clear),
    ]
}

/// Runs `ops` on a set of keys `K` and counts `C` (made from the op's numbers by `key`
/// and `count`) and on a `HashMap`, and compares the two after each op: the number of
/// keys, each key's counts, and the keys read back whole and by two ranges.
fn matches_a_hashmap<K, C>(shift: u32, ops: &[Op], key: impl Fn(u32) -> K, count: impl Fn(u32) -> C)
where
    K: Key + std::hash::Hash + std::fmt::Debug,
    C: Tally + PartialEq + std::fmt::Debug,
{
    let mut set = CountSet::<K, C>::new(shift);
    let mut model: HashMap<K, C> = HashMap::new();
    for op in ops {
        match op {
            Op::Insert(items, how) => {
                let items: Vec<(K, C)> = items.iter().map(|&(k, c)| (key(k), count(c))).collect();
                match how {
                    0 => items.iter().for_each(|(k, c)| set.insert(*k, c)),
                    1 => set.insert_many(&items, |r| r.0, |r| r.1),
                    _ => {
                        items.iter().for_each(|(k, _)| set.prefetch(k));
                        set.insert_prefetched(&items, |r| key_hash(&r.0), |r| r.0, |r| r.1);
                    }
                }
                for (k, c) in items {
                    let e = model.entry(k).or_insert_with(C::zero);
                    *e = e.merge(c);
                }
            }
            Op::Clear(keys) => {
                set.clear_for(*keys);
                model.clear();
                assert!(set.len() <= CountSet::<K, C>::max_keys(set.capacity()));
            }
        }
        assert_eq!(set.len(), model.len());
        for (k, c) in &model {
            assert_eq!(set.get(k).as_ref(), Some(c), "{k:?}");
        }
        let cut = set.slot_count() / 3;
        let mut seen: Vec<(K, C)> = set.entries(0..cut).map(|(_, k, c)| (k, c)).collect();
        seen.extend(set.entries(cut..set.slot_count()).map(|(_, k, c)| (k, c)));
        assert_eq!(seen.len(), model.len());
        assert!(seen.iter().all(|(k, c)| model.get(k) == Some(c)));
        assert!(set.iter().eq(seen.iter().copied()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every layout against a plain `HashMap`: packed, inline (`u64` and `[u32; 2]`
    /// counts) and dense (small and large keys), their tables grown and cleared.
    #[test]
    fn every_layout_matches_a_hashmap(shift in 0u32..9, ops in prop::collection::vec(op(), 1..24)) {
        matches_a_hashmap(shift, &ops, |k| k, |c| Count34::new(u64::from(c) << 20));
        matches_a_hashmap(shift, &ops, |k| u64::from(k).wrapping_mul(0x9E37_79B9_7F4A_7C15), u64::from);
        matches_a_hashmap(shift, &ops, |k| u64::from(k) << 40, |c| [c, !c]);
        matches_a_hashmap(shift, &ops, |k| k.wrapping_mul(0x9E37_79B9), |c| [c, c >> 3, 1]);
        matches_a_hashmap(shift, &ops, |k| [k, !k, 7], |c| [c; 8]);
    }
}

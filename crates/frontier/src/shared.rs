//! One [`CountSet`] filled by several threads at once, without a lock: [`SharedSet`].
//!
//! The protocol, for a key `k` whose probe reaches slot `i` (keys are 4 or 8 bytes, so that a
//! slot's key is one atomic word):
//! * a slot's key, read atomically, is final once it is not empty: if it is `k`, its counts
//!   are merged with atomic additions ([`Tally::merge_shared`]), else the probe goes on;
//! * an empty slot is claimed by a compare-and-swap of its key from empty to `k`; whoever
//!   wins or loses, the counts are then merged into the slot if its key is `k` (an empty
//!   slot's counts are zero), else the probe goes on.
//!
//! In the packed layout ([`CountSet::PACKED`]) a slot is one word, key and count: an empty
//! one is claimed by a compare-and-swap from zero to the key with the item's count, and a
//! count is merged by one atomic addition to the word, above its key bits.
//!
//! No other data is published through a slot, so every access can be `Relaxed`: the fill's
//! end (the threads joined) orders it before anything reads the set.
//!
//! Each [`Claim`] counts its new keys and adds them to the set's count a block at a time;
//! past 3/4 of the table, or when a probe finds no empty slot at all, the fill fails with
//! [`Overflow`] (the caller makes room and starts again).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use bytemuck::Pod;

use crate::prefetch::prefetch;
use crate::set::{slot_of, stored, CountSet, Slot};
use crate::Tally;

/// New keys a [`Claim`] inserts before it adds them to the set's count.
const REPORT_BLOCK: usize = 256;

/// The set was too small for the keys inserted into it (see [`CountSet::fill_shared`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("more keys were inserted than the set had room for")
    }
}

impl std::error::Error for Overflow {}

/// A [`CountSet`] open to insertion by many threads at once (each through its own
/// [`Claim`]), made by [`CountSet::fill_shared`].
///
/// Its table is fixed: a fill that would take it past 3/4 full fails, and the whole fill is
/// reported as an [`Overflow`].
#[derive(Debug)]
pub struct SharedSet<'a, K: Pod + Eq, C: Tally> {
    /// The slots (inline layout).
    slots: *mut Slot<K, C>,
    /// The words (packed layout).
    words: *mut u64,
    /// Number of slots (a power of two).
    capacity: usize,
    shift: u32,
    bits: u32,
    /// Keys in the set: those before the fill, and those claims have reported.
    len: AtomicUsize,
    /// The most keys the fill may leave in the table.
    limit: usize,
    overflowed: AtomicBool,
    _borrow: std::marker::PhantomData<Tables<'a, K, C>>,
}

/// The two tables a [`SharedSet`] borrows (one of them empty): slots, or packed words.
type Tables<'a, K, C> = (&'a mut [Slot<K, C>], &'a mut [u64]);

// SAFETY: the set is a view of a table exclusively borrowed for its lifetime (`_borrow`);
// threads touch its slots only through atomic operations (`load_key`, `claim_key`, and
// `Tally::merge_shared`, atomic by the promise of the unsafe trait `Tally`; in the packed
// layout, `AtomicU64` on whole words), so sharing the view is as safe as sharing the keys and
// counts.
unsafe impl<K: Pod + Eq + Send + Sync, C: Tally> Sync for SharedSet<'_, K, C> {}
// SAFETY: as above.
unsafe impl<K: Pod + Eq + Send + Sync, C: Tally> Send for SharedSet<'_, K, C> {}

/// One thread's inserter into a [`SharedSet`]; it adds the number of keys it inserted to the
/// set's when it is dropped (and every 256 keys before that).
#[derive(Debug)]
pub struct Claim<'s, 'a, K: Pod + Eq, C: Tally> {
    set: &'s SharedSet<'a, K, C>,
    /// New keys not yet added to the set's count.
    fresh: usize,
}

impl<K: Pod + Eq + Send + Sync, C: Tally> CountSet<K, C> {
    /// True when [`CountSet::fill_shared`] works for these types: the packed layout (one
    /// word a slot, see [`CountSet::PACKED`]), or the inline layout (counts of at most 8
    /// bytes, see [`CountSet::INLINE`]) with keys of 4 or 8 bytes (`u32`, `u64`), which one
    /// atomic instruction can compare and swap, and a slot layout that aligns every slot's
    /// key for that atomic and its counts to [`Tally::SHARED_ALIGN`] (false for `u32` keys
    /// with `u64` counts on 32-bit x86, whose counts lie at offset 4).
    pub const SHAREABLE: bool = Self::PACKED || (Self::INLINE && atomic_layout::<K, C>());

    /// Fills the set from several threads at once: `fill` gets a [`SharedSet`] whose
    /// [`Claim`]s (one for each thread, or each task) insert concurrently. The table keeps
    /// its size (make room first with [`CountSet::clear_for`]): if the keys would fill more
    /// than 3/4 of it, the fill reports [`Overflow`] and the set is left empty (the caller
    /// makes room and starts again). A fill that succeeds may leave the set fuller than one
    /// thread's inserts would (up to 3/4 instead of 1/2); the next single insert grows it.
    ///
    /// The keys and their counts are the same as if every item had been inserted by
    /// [`CountSet::insert`]; where in the table a key lands may depend on how the threads
    /// interleave.
    ///
    /// # Panics
    /// Unless [`CountSet::SHAREABLE`] (a packed set, or keys of 4 or 8 bytes, counts of at
    /// most 8, slots aligned for their atomics), or if an item's key has all its bits set, or
    /// does not fit a packed set (see [`CountSet`]).
    ///
    /// ```
    /// use frontier::{key_hash, CountSet};
    ///
    /// let mut set = CountSet::<u64, u64>::new(0);
    /// set.clear_for(1000); // room for 1000 keys
    /// let items: Vec<u64> = (0..4000).map(|i| i % 700).collect();
    /// set.fill_shared(|shared| {
    ///     std::thread::scope(|s| {
    ///         for part in items.chunks(1000) {
    ///             s.spawn(|| shared.claim().insert_prefetched(part, key_hash, |&k| k, |_| 1));
    ///         }
    ///     })
    /// })
    /// .expect("700 keys fit");
    /// assert_eq!(set.len(), 700);
    /// assert_eq!(set.get(&5), Some(6)); // 5 is inserted 6 times (5, 705, ... 3505)
    /// ```
    pub fn fill_shared<R>(&mut self, fill: impl FnOnce(&SharedSet<'_, K, C>) -> R) -> Result<R, Overflow> {
        // A constant: the check costs nothing, and it is what keeps the atomic accesses of
        // `Claim::insert_prefetched` (reached only through the `SharedSet` made below) to the
        // types whose slots are laid out for them.
        assert!(Self::SHAREABLE, "a shared fill needs 4- or 8-byte keys and slots aligned for atomics");
        if self.capacity() == 0 {
            self.clear_for(1);
        }
        let (len, shift, bits, capacity) = (self.len, self.shift, self.bits, self.capacity());
        let (slots, words) = self.table_mut();
        // What `Claim::insert_packed`'s atomic words rest on (maps are page-aligned).
        assert!(
            !Self::PACKED || words.as_ptr().cast::<AtomicU64>().is_aligned(),
            "packed tables are aligned for AtomicU64"
        );
        let shared = SharedSet {
            slots: slots.as_mut_ptr(),
            words: words.as_mut_ptr(),
            capacity,
            shift,
            bits,
            len: AtomicUsize::new(len),
            limit: capacity / 4 * 3,
            overflowed: AtomicBool::new(false),
            _borrow: std::marker::PhantomData,
        };
        // `R` cannot borrow `shared`: every claim has been dropped (and has reported its
        // keys) when `fill` returns.
        let out = fill(&shared);
        let SharedSet { len, overflowed, .. } = shared;
        if overflowed.into_inner() {
            self.clear_all();
            return Err(Overflow);
        }
        self.len = len.into_inner();
        Ok(out)
    }
}

impl<'a, K: Pod + Eq, C: Tally> SharedSet<'a, K, C> {
    /// An inserter for one thread (or task). Claims are cheap: a reference and a counter.
    pub fn claim(&self) -> Claim<'_, 'a, K, C> {
        Claim { set: self, fresh: 0 }
    }

    /// True once the fill has failed (too many keys): the rest of the work can be skipped.
    pub fn overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Relaxed)
    }

    /// The slots a probe for a key whose hash is `hash` visits, in order: its own, then the
    /// next ones, wrapping, each once.
    #[inline(always)]
    fn probe(&self, hash: u64) -> impl Iterator<Item = usize> {
        let (start, mask) = (slot_of(hash, self.shift, self.bits), self.capacity - 1);
        (0..self.capacity).map(move |p| (start + p) & mask)
    }

    /// Fails the fill, a probe having found every slot taken by other keys; returns false.
    #[cold]
    fn overflow(&self) -> bool {
        self.overflowed.store(true, Ordering::Relaxed);
        false
    }

    /// Adds `fresh` new keys to the set's count; false (and the fill fails) past the limit.
    fn report(&self, fresh: usize) -> bool {
        let len = self.len.fetch_add(fresh, Ordering::Relaxed) + fresh;
        if len > self.limit {
            self.overflowed.store(true, Ordering::Relaxed);
        }
        len <= self.limit
    }
}

impl<K: Pod + Eq + Send + Sync, C: Tally> SharedSet<'_, K, C> {
    /// Hints the CPU to fetch the table slot of a key whose [`crate::key_hash`] is `hash`.
    #[inline(always)]
    pub fn prefetch_hash(&self, hash: u64) {
        let i = slot_of(hash, self.shift, self.bits);
        if i < self.capacity {
            if CountSet::<K, C>::PACKED {
                prefetch(self.words.wrapping_add(i));
            } else {
                prefetch(self.slots.wrapping_add(i));
            }
        }
    }
}

impl<K: Pod + Eq + Send + Sync, C: Tally> Claim<'_, '_, K, C> {
    /// Hints the CPU to fetch the table slot of a key whose [`crate::key_hash`] is `hash`.
    #[inline(always)]
    pub fn prefetch_hash(&self, hash: u64) {
        self.set.prefetch_hash(hash);
    }

    /// Inserts every item of `items` (whose keys' [`crate::key_hash`] `hash` gives, and whose
    /// slots the caller has prefetched), merging the counts of keys already present. Returns
    /// false, having inserted only some, when the set is full (see [`CountSet::fill_shared`]).
    #[inline(always)]
    pub fn insert_prefetched<T>(
        &mut self,
        items: &[T],
        hash: impl Fn(&T) -> u64,
        key: impl Fn(&T) -> K,
        counts: impl Fn(&T) -> C,
    ) -> bool {
        if CountSet::<K, C>::PACKED {
            return self.insert_packed(items, hash, key, counts);
        }
        let set = self.set;
        let empty = K::zeroed();
        'items: for item in items {
            let k = stored(key(item));
            for i in set.probe(hash(item)) {
                let slot = set.slots.wrapping_add(i);
                // SAFETY: `i < capacity` (`probe`): a slot of the table, its key aligned for its
                // atomic type (a set that is not packed, as here, is shared only when
                // `atomic_layout` says so), whose keys are only accessed atomically while it is
                // shared (the module's protocol).
                let mut here = unsafe { load_key(std::ptr::addr_of_mut!((*slot).stored)) };
                if here == empty {
                    // SAFETY: as above.
                    match unsafe { claim_key(std::ptr::addr_of_mut!((*slot).stored), k) } {
                        Ok(()) if !self.count_new() => return false,
                        Ok(()) => here = k,
                        Err(winner) => here = winner,
                    }
                }
                if here == k {
                    // SAFETY: `slot` is in the table (above); its counts are only merged
                    // through `merge_shared` while the set is shared, and are aligned to
                    // `C::SHARED_ALIGN` (the set is shared only when `SHAREABLE`, which for a
                    // set that is not packed, as here, is `atomic_layout`'s check of the slot's
                    // alignment and the counts' offset).
                    unsafe { C::merge_shared(std::ptr::addr_of_mut!((*slot).count), counts(item)) };
                    continue 'items;
                }
            }
            return set.overflow();
        }
        true
    }

    /// [`Claim::insert_prefetched`] in the packed layout.
    #[inline(always)]
    fn insert_packed<T>(
        &mut self,
        items: &[T],
        hash: impl Fn(&T) -> u64,
        key: impl Fn(&T) -> K,
        counts: impl Fn(&T) -> C,
    ) -> bool {
        let set = self.set;
        'items: for item in items {
            let (k, add) = CountSet::<K, C>::packed_parts(key(item), counts(item));
            for i in set.probe(hash(item)) {
                // SAFETY: `i < capacity` (`probe`): a word of the table, 8-byte aligned (the
                // table is an array of `u64` at the start of a page, checked by `fill_shared`),
                // and only accessed atomically while the set is shared (the module's
                // protocol).
                let word = unsafe { AtomicU64::from_ptr(set.words.wrapping_add(i)) };
                let mut here = word.load(Ordering::Relaxed);
                if here == 0 {
                    // A new key's word holds its count from the start.
                    match word.compare_exchange(0, k | add, Ordering::Relaxed, Ordering::Relaxed) {
                        Ok(_) if !self.count_new() => return false,
                        Ok(_) => continue 'items,
                        Err(winner) => here = winner,
                    }
                }
                if here & CountSet::<K, C>::KEY_MASK == k {
                    word.fetch_add(add, Ordering::Relaxed);
                    continue 'items;
                }
            }
            return set.overflow();
        }
        true
    }

    /// Counts a new key; false when the fill has run out of room.
    #[inline(always)]
    fn count_new(&mut self) -> bool {
        self.fresh += 1;
        self.fresh < REPORT_BLOCK || self.set.report(std::mem::take(&mut self.fresh))
    }
}

impl<K: Pod + Eq, C: Tally> Drop for Claim<'_, '_, K, C> {
    fn drop(&mut self) {
        if self.fresh > 0 {
            self.set.report(std::mem::take(&mut self.fresh));
        }
    }
}

/// The alignment of the atomic type a shared key is accessed as (`AtomicU32` for 4 bytes,
/// `AtomicU64` for 8), or 0 for other sizes, which cannot be shared.
const fn key_atomic_align<K>() -> usize {
    match std::mem::size_of::<K>() {
        4 => std::mem::align_of::<AtomicU32>(),
        8 => std::mem::align_of::<AtomicU64>(),
        _ => 0,
    }
}

/// True when a table of `Slot<K, C>` can be shared: keys of 4 or 8 bytes, aligned by their
/// own type for the atomic type of their size (not only by the counts beside them), and in
/// every slot of an array (aligned to `align_of::<Slot<K, C>>()`, spaced by its size, a
/// multiple of it), the key aligned for that atomic type ([`load_key`], [`claim_key`]) and
/// the counts to [`Tally::SHARED_ALIGN`] ([`Tally::merge_shared`]). Every alignment is a
/// power of two, so it holds when the slot's alignment and the field's offset are multiples
/// of it.
const fn atomic_layout<K, C: Tally>() -> bool {
    let slot = std::mem::align_of::<Slot<K, C>>();
    let key = key_atomic_align::<K>();
    let count = C::SHARED_ALIGN;
    key != 0
        && count.is_power_of_two()
        && std::mem::align_of::<K>().is_multiple_of(key)
        && slot.is_multiple_of(key)
        && std::mem::offset_of!(Slot<K, C>, stored).is_multiple_of(key)
        && slot.is_multiple_of(count)
        && std::mem::offset_of!(Slot<K, C>, count).is_multiple_of(count)
}

/// Reads the key at `p` atomically.
///
/// # Safety
/// `p` is valid, aligned for the atomic type of the key's size (`AtomicU32` for 4 bytes,
/// `AtomicU64` for 8: [`CountSet::SHAREABLE`]), and every access to it meanwhile is atomic,
/// through that type.
#[inline(always)]
unsafe fn load_key<K: Pod>(p: *mut K) -> K {
    match std::mem::size_of::<K>() {
        // SAFETY: a valid, aligned 4-byte word only accessed atomically (the contract).
        4 => bytemuck::cast(unsafe { AtomicU32::from_ptr(p.cast()) }.load(Ordering::Relaxed)),
        // SAFETY: as above, 8 bytes.
        8 => bytemuck::cast(unsafe { AtomicU64::from_ptr(p.cast()) }.load(Ordering::Relaxed)),
        _ => unreachable!("shared keys are 4 or 8 bytes"),
    }
}

/// Swaps the empty (all-zero) key at `p` for `key`, atomically; else returns the key there.
///
/// # Safety
/// As for [`load_key`].
#[inline(always)]
unsafe fn claim_key<K: Pod>(p: *mut K, key: K) -> Result<(), K> {
    match std::mem::size_of::<K>() {
        // SAFETY: a valid, aligned 4-byte word only accessed atomically (the contract).
        4 => unsafe { AtomicU32::from_ptr(p.cast()) }
            .compare_exchange(0, bytemuck::cast(key), Ordering::Relaxed, Ordering::Relaxed)
            .map(drop)
            .map_err(bytemuck::cast),
        // SAFETY: as above, 8 bytes.
        8 => unsafe { AtomicU64::from_ptr(p.cast()) }
            .compare_exchange(0, bytemuck::cast(key), Ordering::Relaxed, Ordering::Relaxed)
            .map(drop)
            .map_err(bytemuck::cast),
        _ => unreachable!("shared keys are 4 or 8 bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{key_hash, Count34};
    use std::collections::HashMap;

    /// Inserts `items` split among `threads` threads (each with several claims), then checks
    /// the set against a map built one item at a time.
    fn fill_and_check<K, C>(items: &[(K, C)], threads: usize, room: usize)
    where
        K: Pod + Eq + std::hash::Hash + Send + Sync + std::fmt::Debug + From<u8>,
        C: Tally + std::fmt::Debug + PartialEq,
    {
        let mut set = CountSet::<K, C>::new(0);
        set.clear_for(room);
        // A key present before the fill (the items' keys are never zero).
        let before = K::from(0);
        set.insert(before, &items[0].1);
        let per = items.len().div_ceil(threads);
        set.fill_shared(|shared| {
            std::thread::scope(|s| {
                for part in items.chunks(per) {
                    s.spawn(move || {
                        for piece in part.chunks(97) {
                            let mut claim = shared.claim();
                            for it in piece {
                                claim.prefetch_hash(key_hash(&it.0));
                            }
                            assert!(claim.insert_prefetched(
                                piece,
                                |it| key_hash(&it.0),
                                |it| it.0,
                                |it| it.1
                            ));
                        }
                    });
                }
            })
        })
        .expect("room for every key");
        let mut map: HashMap<K, C> = HashMap::new();
        map.insert(before, items[0].1);
        for &(k, c) in items {
            let e = map.entry(k).or_insert(C::zero());
            *e = e.merge(c);
        }
        assert_eq!(set.len(), map.len());
        let mut seen = std::collections::HashSet::new();
        for (k, c) in set.iter() {
            assert!(seen.insert(k), "key {k:?} stored twice");
            assert_eq!(map[&k], c);
            assert_eq!(set.get(&k), Some(c));
        }
        assert_eq!(seen.len(), map.len());
        // Still a working set: more inserts, one at a time (growing it if needed).
        set.insert(before, &items[0].1);
        assert_eq!(set.get(&before), Some(items[0].1.merge(items[0].1)));
    }

    fn keys(n: usize, range: u64) -> impl Iterator<Item = u64> {
        let mut x = 7u64;
        (0..n).map(move |_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            1 + (x >> 20) % range
        })
    }

    #[test]
    fn threads_fill_a_set_like_one_thread() {
        for threads in [1, 2, 3, 8] {
            let items: Vec<(u64, u64)> = keys(60_000, 20_000).zip(1..).collect();
            fill_and_check(&items, threads, 25_000);
            let lanes: Vec<(u64, [u32; 2])> =
                keys(30_000, 5_000).map(|k| (k, [k as u32, u32::MAX])).collect();
            fill_and_check(&lanes, threads, 6_000);
            let small: Vec<(u32, u64)> = keys(30_000, 3_000).map(|k| (k as u32, k << 40)).collect();
            fill_and_check(&small, threads, 3_000);
            // Packed: counts that wrap past 2^34, keys up to the largest a word takes.
            let packed: Vec<(u32, Count34)> =
                keys(30_000, 3_000).map(|k| ((1 << 30) - 1 - k as u32, Count34::new(k << 30 | 3))).collect();
            fill_and_check(&packed, threads, 3_000);
        }
    }

    #[test]
    fn wide_keys_and_dense_sets_cannot_be_shared() {
        const { assert!(CountSet::<u32, [u32; 1]>::SHAREABLE && CountSet::<u64, [u32; 2]>::SHAREABLE) };
        const { assert!(CountSet::<u32, Count34>::PACKED && CountSet::<u32, Count34>::SHAREABLE) };
        const { assert!(!CountSet::<u64, Count34>::PACKED && !CountSet::<u32, u64>::PACKED) };
        const { assert!(!CountSet::<u128, u64>::SHAREABLE && !CountSet::<[u32; 2], u64>::SHAREABLE) };
        const { assert!(!CountSet::<u64, [u32; 8]>::SHAREABLE && !CountSet::<u32, [u32; 3]>::INLINE) };
        // `u64` keys and counts share where `u64` is aligned like `AtomicU64` (x86-64, not
        // 32-bit x86).
        const U64_ALIGNED: bool = std::mem::align_of::<u64>() == std::mem::align_of::<AtomicU64>();
        const { assert!(CountSet::<u32, u64>::SHAREABLE == U64_ALIGNED) };
        const { assert!(CountSet::<u64, u64>::SHAREABLE == U64_ALIGNED) };
        // On x86-64 they do share.
        const { assert!(U64_ALIGNED || !cfg!(target_arch = "x86_64")) };
        // A packed set shares on every target (its words are page-aligned arrays of `u64`).
        const { assert!(CountSet::<u32, Count34>::INLINE && CountSet::<u32, Count34>::SHAREABLE) };
    }

    /// Counts of 8 bytes aligned to 4 whose shared merge is one `AtomicU64`: what `u64` is
    /// on 32-bit x86.
    #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Zeroable, bytemuck::Pod)]
    #[repr(C)]
    struct Split([u32; 2]);

    // SAFETY: `merge_shared` accesses the cell only as one `AtomicU64`, on every call, and
    // `SHARED_ALIGN` is that type's alignment.
    unsafe impl Tally for Split {
        const SHARED_ALIGN: usize = std::mem::align_of::<AtomicU64>();

        fn merge(self, add: Self) -> Self {
            Split(self.0.merge(add.0))
        }

        unsafe fn merge_shared(cell: *mut Self, add: Self) {
            // SAFETY: valid, aligned for `AtomicU64` and only accessed atomically meanwhile
            // (the caller's contract).
            let word = unsafe { AtomicU64::from_ptr(cell.cast()) };
            let _ = word.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
                Some(bytemuck::cast(Split(bytemuck::cast::<u64, [u32; 2]>(w)).merge(add)))
            });
        }
    }

    #[test]
    fn counts_misaligned_for_their_atomics_cannot_be_shared() {
        // After a 4-byte key, the counts lie at offset 4 in a 12-byte slot aligned to 4 (which
        // is dense, and could not be shared anyway).
        const { assert!(std::mem::offset_of!(Slot<u32, Split>, count) == 4) };
        const { assert!(!CountSet::<u32, Split>::INLINE && !CountSet::<u32, Split>::SHAREABLE) };
        const { assert!(!atomic_layout::<u32, Split>()) };
        // After an 8-byte key aligned for `AtomicU64` (where `u64` is), they are aligned for
        // it too.
        const U64_ALIGNED: bool = std::mem::align_of::<u64>() == std::mem::align_of::<AtomicU64>();
        const { assert!(CountSet::<u64, Split>::SHAREABLE == U64_ALIGNED) };
        if CountSet::<u64, Split>::SHAREABLE {
            let items: Vec<(u64, Split)> =
                keys(20_000, 4_000).map(|k| (k, Split([k as u32, u32::MAX]))).collect();
            fill_and_check(&items, 3, 5_000);
        }
    }

    /// A fill past 3/4 of the table fails and leaves the set empty; one of exactly 3/4 works.
    fn overflows<K, C>(key: fn(u64) -> K, one: C)
    where
        K: Pod + Eq + Send + Sync + std::fmt::Debug,
        C: Tally + std::fmt::Debug + PartialEq,
    {
        let mut set = CountSet::<K, C>::new(0);
        set.clear_for(1000);
        let limit = set.capacity() / 4 * 3;
        let items: Vec<K> = (0..limit as u64 + 1).map(key).collect();
        let out = set.fill_shared(|shared| {
            let mut claim = shared.claim();
            let ok = claim.insert_prefetched(&items, key_hash, |&k| k, |_| one);
            drop(claim);
            (ok, shared.overflowed())
        });
        assert_eq!(out, Err(Overflow));
        assert!(set.is_empty() && set.get(&items[0]).is_none());
        assert!(set.entries(0..set.slot_count()).next().is_none());
        // Exactly the limit fits.
        let out = set.fill_shared(|shared| {
            shared.claim().insert_prefetched(&items[..limit], key_hash, |&k| k, |_| one)
        });
        assert_eq!(out, Ok(true));
        assert_eq!(set.len(), limit);
        assert!(items[..limit].iter().all(|k| set.get(k) == Some(one)));
        // A fuller table than single inserts allow: the next one grows it.
        set.insert(items[limit], &one);
        assert!(set.capacity() >= 2 * set.len());
        assert!(items[..=limit].iter().all(|k| set.get(k) == Some(one)));
    }

    #[test]
    fn a_fill_beyond_the_room_overflows_and_empties_the_set() {
        overflows(|k| k, 1u64);
        overflows(|k| k as u32, Count34::new(1));
    }

    #[test]
    fn a_full_table_fails_instead_of_probing_forever() {
        fn overfill<C: Tally>(one: C) {
            let mut set = CountSet::<u32, C>::new(0);
            set.clear_for(4); // 16 slots
            let items: Vec<u32> = (0..64).collect();
            let out = set.fill_shared(|shared| {
                // Claims that never report (fewer than a block each) cannot see the limit: the
                // probe does.
                items.chunks(8).all(|part| shared.claim().insert_prefetched(part, key_hash, |&k| k, |_| one))
            });
            assert_eq!(out, Err(Overflow));
        }
        overfill(1u64);
        overfill(Count34::new(1));
    }
}

//! One shard: an open-addressing hash table of keys, each stored in its slot beside its
//! [`Tally`] of path counts.

use std::ops::Range;

use bytemuck::{Pod, Zeroable};

use crate::Tally;

use crate::arena::{MmapArray, Prefault, Serial, Zeroer};
use crate::hash::key_hash;
use crate::prefetch::prefetch;

/// The smallest table.
const MIN_SLOTS: usize = 16;

/// How many items ahead [`CountSet::insert_many`] prefetches the table slot of an item.
const SLOT_AHEAD: usize = 32;

/// How many items ahead an insert into the dense layout prefetches the element a slot names.
const ELEMENT_AHEAD: usize = 8;

/// The size up to which a set's arrays are taken to stay in a core's caches (a private L2 of
/// 1 MiB, or L2 and a share of L3): a prefetch into a set that size costs its instructions
/// and brings nothing a load would wait for, so [`CountSet::worth_prefetching`] says no.
const CACHED_BYTES: usize = 1 << 20;

/// Table slots a key in the inline layout: the load factor stays at or below
/// `1 / INLINE_SLOTS_PER_KEY`.
const INLINE_SLOTS_PER_KEY: usize = 2;

/// Table slots (element numbers) a key in the dense layout: load at most 1/4 in a table of
/// fewer than [`DENSE_LARGE_SLOTS`] slots, 1/2 from there. Within a core's caches, a key whose
/// probe does not end at its first slot costs a mispredicted branch (the probe loop's exit),
/// and the fewer collisions pay more than clearing twice the slots every depth does. Past a
/// core's cache and before memory, a collision also costs a miss on another key's element. In
/// a table far past the caches every probe misses anyway: there the smaller table (half the
/// pages to fault, clear and map) pays more.
const DENSE_SLOTS_PER_KEY: usize = 4;

/// The smallest dense table kept at load up to 1/2 again (16 MiB of element numbers).
const DENSE_LARGE_SLOTS: usize = 1 << 22;

/// The most elements a dense table numbers in `u16`s (element 0, the sentinel, is not
/// counted): a table of fewer keys takes half the bytes, and a set within a core's caches
/// leaves more of them to its elements.
const NARROW_KEYS: usize = u16::MAX as usize;

/// An element number of the dense layout's table: a `u16` in tables for at most
/// [`NARROW_KEYS`] keys, else a `u32`. Sealed: only those two.
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

/// One slot of a [`CountSet`]'s table: empty, or a key with its counts.
///
/// The key is stored with every bit inverted, so that an all-zero slot (what a fresh page of
/// memory holds, and what clearing writes) is an empty one, with zero counts ready to be
/// added to. The price: the key whose bits are all ones (`u64::MAX`, say) cannot be stored.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub(crate) struct Slot<K, C> {
    pub(crate) stored: K,
    pub(crate) count: C,
}

// SAFETY: both fields are `Pod`, so all-zero bytes are a valid `Slot` (an empty one).
unsafe impl<K: Pod, C: Pod> Zeroable for Slot<K, C> {}

impl<K: Pod + Eq, C: Tally> Slot<K, C> {
    /// True when the slot holds no key.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.stored == K::zeroed()
    }
}

/// `key` with every bit inverted: how a `Slot` stores it.
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
/// say), merged by [`Tally::merge`] when a key is inserted again. Keys and counts are kept
/// in slots, in one of three layouts chosen by the types of the keys and counts
/// ([`CountSet::INLINE`], [`CountSet::PACKED`]):
///
/// * **packed** (4-byte keys below `2^(64 - C::PACK_BITS) - 1` with counts that need only
///   [`Tally::PACK_BITS`] bits: [`crate::Count34`]): as inline, but a slot is one 64-bit
///   word, the key (bits inverted) in its low bits and the count above them, so that an
///   insert is one addition to the word. A key out of range panics when inserted.
/// * **inline** (counts of at most 8 bytes in a slot whose size is a power of two, so that no
///   slot straddles two cache lines; not a `u32` key beside two `u32` lanes, 12 bytes): the
///   table is a power-of-two array of slots, each a key and its counts side by side, probed
///   linearly at load at most 1/2. An insert touches one slot (one cache line), whose address
///   follows from the key's hash alone, so it can be prefetched. An all-zero slot is empty: a
///   fresh map is an empty table, and an empty slot's counts are zero already, so a new key
///   and a present one are merged the same way.
/// * **dense** (larger counts, lanes, or slots of other sizes): the slots are dense, in
///   insertion order, and the table is a power-of-two array of element numbers (0: empty;
///   `u16`s in a table for at most 65 535 keys, half the bytes to cache, else
///   `u32`s), probed linearly at load at most 1/4 below 2^22 slots (a collision costs a
///   mispredicted branch, and past a core's cache a miss that a hit would not), 1/2 from
///   there (far past the caches every probe misses anyway, and a smaller table is fewer
///   pages to fault and clear). Large slots would make an inline table several times
///   larger than the keys it holds, and clearing it between depths would cost more than the
///   second cache miss (the key's element after its table slot) saves. Element 0 is the
///   probe's sentinel: an insert writes its key there first, so an empty slot and the key's
///   own slot end the probe on one comparison.
///
/// In all three, the key is stored with its bits inverted, so that an all-zero slot is an
/// empty one: the key with all bits set cannot be stored (inserting it panics).
/// * Which slot a key lands in is decided by the bits below the top `shift` bits of its hash;
///   the top bits are left to choose the shard (see [`crate::Frontier`]).
/// * The keys are read back in slot order ([`CountSet::iter`], or [`CountSet::entries`] by
///   ranges of [`CountSet::slot_count`]): the same inserts in the same order give the same
///   slots.
///
/// A set is aligned to 128 bytes (two cache lines, what adjacent-line prefetchers fetch
/// together): the shards of a frontier sit side by side in one vector, and threads filling
/// two of them at once would otherwise write (their lengths) to one line.
#[derive(Debug)]
#[repr(align(128))]
pub struct CountSet<K: Pod + Eq, C: Tally> {
    /// Inline: the table. Dense: the elements, from element 1 (element 0 is the sentinel).
    slots: MmapArray<Slot<K, C>>,
    /// Dense only: the table of element numbers, `u32`s, or two `u16`s a `u32` while the table
    /// is narrow ([`CountSet::narrow`]).
    index: MmapArray<u32>,
    /// Packed only: the table, one key and its count a word.
    words: MmapArray<u64>,

    pub(crate) bits: u32,
    pub(crate) len: usize,
    pub(crate) shift: u32,
}

impl<K: Pod + Eq + Send + Sync, C: Tally> CountSet<K, C> {
    /// True when keys and counts share the table's slots (counts of at most 8 bytes, in a
    /// slot whose size is a power of two), false when the slots are dense behind a table of
    /// element numbers (see [`CountSet`]).
    pub const INLINE: bool = Self::PACKED
        || (std::mem::size_of::<C>() <= 8 && std::mem::size_of::<Slot<K, C>>().is_power_of_two());

    /// True when each key and its count share one 64-bit word (4-byte keys, 8-byte counts
    /// that need [`Tally::PACK_BITS`] bits): a form of the inline layout ([`CountSet::INLINE`]
    /// holds too; see [`CountSet`]).
    pub const PACKED: bool =
        C::PACK_BITS > 0 && std::mem::size_of::<K>() == 4 && std::mem::size_of::<C>() == 8;

    /// Packed: the low bits of a word that hold its key (inverted); the count is above them.
    /// (Any width below 64 for the other layouts, which do not use it.)
    const KEY_BITS: u32 = if Self::PACKED { 64 - C::PACK_BITS } else { 32 };

    /// Packed: the key bits of a word.
    pub(crate) const KEY_MASK: u64 = (1 << Self::KEY_BITS) - 1;

    /// Bytes a slot takes (a word in the packed layout; in the dense one, an element, without
    /// the index's `u32`s): what a memory estimate counts a key at.
    pub const SLOT_BYTES: usize = if Self::PACKED { 8 } else { std::mem::size_of::<Slot<K, C>>() };

    /// Packed: the word bits of `key` (inverted, so that no key's word is zero).
    ///
    /// # Panics
    /// If the key does not fit below the count's bits, or its bits there are all ones.
    #[inline(always)]
    fn packed_key(key: K) -> u64 {
        let k = u64::from(bytemuck::cast::<K, u32>(key));
        assert!(k < Self::KEY_MASK, "a packed CountSet stores keys below 2^{} - 1", Self::KEY_BITS);
        !k & Self::KEY_MASK
    }

    /// Packed: a count's bits, to be added to a word's above its key.
    #[inline(always)]
    fn packed_count(count: C) -> u64 {
        bytemuck::cast::<C, u64>(count) << Self::KEY_BITS
    }

    /// Packed: the key and count of a word (of an empty word, zero counts and a key that
    /// means nothing).
    #[inline(always)]
    fn unpack(word: u64) -> (K, C) {
        (
            bytemuck::cast::<u32, K>((!word & Self::KEY_MASK) as u32),
            bytemuck::cast::<u64, C>(word >> Self::KEY_BITS),
        )
    }

    /// The most keys a table of `slots` slots holds before it grows.
    #[inline(always)]
    fn max_keys(slots: usize) -> usize {
        if Self::INLINE {
            slots / INLINE_SLOTS_PER_KEY
        } else if slots >= DENSE_LARGE_SLOTS {
            slots / (DENSE_SLOTS_PER_KEY / 2)
        } else {
            slots / DENSE_SLOTS_PER_KEY
        }
    }

    /// The slots of a table made for `keys` keys: the smallest power of two that holds them.
    fn slots_for(keys: usize) -> usize {
        let mut slots = keys.next_power_of_two().max(MIN_SLOTS);
        while Self::max_keys(slots) < keys {
            slots *= 2;
        }
        slots
    }

    /// An empty set whose slot bits start below the top `shift` bits of the hash.
    ///
    /// Nothing is mapped until the first key (or [`CountSet::clear_for`] with room for some):
    /// a set a search never fills costs no system call.
    pub fn new(shift: u32) -> Self {
        CountSet {
            slots: MmapArray::zeroed(0),
            index: MmapArray::zeroed(0),
            words: MmapArray::zeroed(0),
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

    /// Bytes of memory the set's arrays take (the table and, in the dense layout, the
    /// elements): what a memory budget counts.
    pub fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot<K, C>>() + self.index.len() * 4 + self.words.len() * 8
    }

    /// Whether prefetching the set's slots and elements pays: not when its arrays are small
    /// enough to stay in a core's caches (1 MiB or less), where the prefetches only cost
    /// instructions (the dense layout's element prefetch is two dependent loads). Inserts
    /// ask it once a batch; a caller that prefetches slots itself should too.
    #[inline(always)]
    pub fn worth_prefetching(&self) -> bool {
        self.bytes() > CACHED_BYTES
    }

    /// Number of table slots (2 or 4 times the keys it holds before growing).
    pub fn capacity(&self) -> usize {
        if Self::PACKED {
            self.words.len()
        } else if Self::INLINE {
            self.slots.len()
        } else if self.narrow() {
            self.index.len() * 2
        } else {
            self.index.len()
        }
    }

    /// Dense: whether a table of `slots` slots numbers its elements in `u16`s.
    #[inline(always)]
    fn narrow_for(slots: usize) -> bool {
        Self::max_keys(slots) <= NARROW_KEYS
    }

    /// Dense: whether the table numbers its elements in `u16`s ([`NARROW_KEYS`]), from its
    /// size (`bits`, set with the table).
    #[inline(always)]
    fn narrow(&self) -> bool {
        Self::narrow_for(1 << self.bits)
    }

    /// Dense: the `u32`s that a table of `slots` slots takes.
    fn index_words(slots: usize) -> usize {
        if Self::narrow_for(slots) {
            slots.div_ceil(2)
        } else {
            slots
        }
    }

    /// Empties the set, with room for `keys` keys, and takes slot bits below the top `shift`
    /// bits of the hash from now on.
    pub fn reset(&mut self, shift: u32, keys: usize) {
        self.reset_with(shift, keys, &Serial);
    }

    /// [`CountSet::reset`], the table cleared by `zero` (on a thread pool, say).
    pub fn reset_with(&mut self, shift: u32, keys: usize, zero: &impl Zeroer) {
        self.shift = shift;
        self.clear_for_with(keys, zero);
    }

    /// Empties the set, keeping room for at least `keys` keys without growing.
    pub fn clear_for(&mut self, keys: usize) {
        self.clear_for_with(keys, &Serial);
    }

    /// [`CountSet::clear_for`], the table cleared by `zero` (on a thread pool, say): it is
    /// given only what may not be zero (a larger table's fresh pages are).
    pub fn clear_for_with(&mut self, keys: usize, zero: &impl Zeroer) {
        if keys == 0 && self.len == 0 {
            // Already clear, and room is made on demand: nothing to map.
            return;
        }
        let want = Self::slots_for(keys);
        if want > self.capacity() || want < self.capacity() / 4 {
            // Shrinking too, when much smaller: a smaller table is faster to clear and probe.
            self.make_table(want, keys, zero);
        } else if self.len > 0 {
            // A set that never held a key is already clear.
            self.make_table(self.capacity(), keys, zero);
        }
        self.len = 0;
    }

    /// Makes the table an empty one of `slots` slots (cleared by `zero`); in the dense layout,
    /// with room for as many elements as it takes keys, whose old contents are kept (the
    /// caller may insert them again), and whose pages are pre-faulted for the `keys` keys
    /// expected only (elements are written from the front: the others fault when written).
    fn make_table(&mut self, slots: usize, keys: usize, zero: &impl Zeroer) {
        debug_assert!(slots.is_power_of_two());
        if Self::PACKED {
            self.words.resize_zeroed_with(slots, zero);
        } else if Self::INLINE {
            self.slots.resize_zeroed_with(slots, zero);
        } else {
            self.index.resize_zeroed_with(Self::index_words(slots), zero);
            // Element 0 is the sentinel.
            self.slots.resize_prefaulting(Self::max_keys(slots) + 1, keys + 1, zero);
        }
        self.bits = slots.trailing_zeros();
    }

    /// Adds to `job` the memory a table made for `keys` keys would take (see
    /// [`MmapArray::prefault_into`]): for a thread that would otherwise idle while the set is
    /// used. Running the job changes nothing in the set. A set that was never given room has
    /// no map yet, and adds nothing.
    pub fn prefault_into(&self, keys: usize, job: &mut Prefault) {
        let slots = Self::slots_for(keys);
        if Self::PACKED {
            self.words.prefault_into(slots, job);
        } else if Self::INLINE {
            self.slots.prefault_into(slots, job);
        } else {
            self.index.prefault_into(Self::index_words(slots), job);
            self.slots.prefault_into(keys + 1, job);
        }
    }

    /// Puts the set's arrays on huge pages from now on ([`MmapArray::use_huge_pages`]): for a
    /// set about to grow large. Its keys and counts stay as they are.
    pub fn use_huge_pages(&mut self, zero: &impl Zeroer) {
        if Self::PACKED {
            self.words.use_huge_pages(zero);
        } else if Self::INLINE {
            self.slots.use_huge_pages(zero);
        } else {
            self.index.use_huge_pages(zero);
            self.slots.use_huge_pages(zero);
        }
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
        self.slot_view().prefetch_hash(hash);
    }

    /// Where a key's table slot is, as a plain value: the one place that knows which array
    /// holds the slots (the slots themselves, the packed layout's words, or the dense layout's
    /// element numbers). Other
    /// threads may prefetch through it while this set is filled behind a lock (a set that
    /// grows moves its table: a prefetch through an old view is then wasted, never wrong).
    #[inline(always)]
    pub fn slot_view(&self) -> SlotView {
        let (base, size) = if Self::PACKED {
            (self.words.as_slice().as_ptr() as usize, 8)
        } else if Self::INLINE {
            (self.slots.as_slice().as_ptr() as usize, std::mem::size_of::<Slot<K, C>>())
        } else {
            let size = if self.narrow() { std::mem::size_of::<u16>() } else { std::mem::size_of::<u32>() };
            (self.index.as_slice().as_ptr() as usize, size)
        };
        SlotView { base, size, shift: self.shift, bits: self.bits }
    }

    /// Adds `add` to the counts of `key`, inserting it (with `add`) if absent.
    ///
    /// # Panics
    /// If every bit of `key` is set: that key cannot be stored (see [`CountSet`]); in the
    /// packed layout, also if it does not fit ([`CountSet::PACKED`]).
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

    /// [`CountSet::insert_many`] for items whose keys' [`key_hash`] `hash` gives: no key is
    /// hashed again.
    #[inline(always)]
    pub fn insert_many_hashed<T>(
        &mut self,
        items: &[T],
        hash: impl Fn(&T) -> u64,
        key: impl Fn(&T) -> K,
        counts: impl Fn(&T) -> C,
    ) {
        self.insert_all::<T, true>(items, &hash, &key, &counts);
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
            let mut room = Self::max_keys(self.capacity()).saturating_sub(self.len);
            while room == 0 {
                self.grow();
                room = Self::max_keys(self.capacity()).saturating_sub(self.len);
            }
            let (piece, tail) = rest.split_at(room.min(rest.len()));
            if PREFETCH {
                // The first items' slots are fetched at once; the others a fixed distance
                // ahead of the item being inserted (see `insert_piece`).
                self.prefetch_items(&piece[..piece.len().min(SLOT_AHEAD)], hash);
            }
            self.insert_piece::<T, PREFETCH>(piece, hash, key, counts);
            rest = tail;
        }
    }

    /// Prefetches the table slots of `items`.
    #[inline(always)]
    fn prefetch_items<T>(&self, items: &[T], hash: &impl Fn(&T) -> u64) {
        for item in items {
            self.prefetch_hash(hash(item));
        }
    }

    /// Inserts `piece`, which has at most `max_keys(capacity) - len` items, whose table slots
    /// were prefetched.
    #[inline(always)]
    fn insert_piece<T, const PREFETCH: bool>(
        &mut self,
        piece: &[T],
        hash: &impl Fn(&T) -> u64,
        key: &impl Fn(&T) -> K,
        counts: &impl Fn(&T) -> C,
    ) {
        if !Self::INLINE {
            return if self.narrow() {
                self.insert_dense::<T, u16, PREFETCH>(piece, hash, key, counts)
            } else {
                self.insert_dense::<T, u32, PREFETCH>(piece, hash, key, counts)
            };
        }
        let (bits, shift) = (self.bits, self.shift);
        let slot = |h: u64| slot_of(h, shift, bits);
        let view = self.slot_view();
        let mask = self.capacity() - 1;
        let slots = self.slots.as_mut_slice();
        let words = self.words.as_mut_slice();
        let empty = K::zeroed();
        let mut len = self.len;
        for (j, item) in piece.iter().enumerate() {
            if PREFETCH {
                // The slot of the item `SLOT_AHEAD` places on: it arrives before that item
                // goes in.
                if let Some(ahead) = piece.get(j + SLOT_AHEAD) {
                    view.prefetch_hash(hash(ahead));
                }
            }
            if Self::PACKED {
                let s = Self::packed_key(key(item));
                let mut i = slot(hash(item));
                // As inline, below: an empty word is zero, a full one has its key bits.
                while words[i] & Self::KEY_MASK != s && words[i] != 0 {
                    i = (i + 1) & mask;
                }
                let word = words[i];
                len += (word == 0) as usize;
                words[i] = (word | s).wrapping_add(Self::packed_count(counts(item)));
                continue;
            }
            let s = stored(key(item));
            let mut i = slot(hash(item));
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
        self.len = len;
    }

    /// [`CountSet::insert_piece`] in the dense layout, whose table holds element numbers of
    /// type `E` (the set's: `u16` when [`CountSet::narrow`]).
    #[inline(always)]
    fn insert_dense<T, E: ElementNumber, const PREFETCH: bool>(
        &mut self,
        piece: &[T],
        hash: &impl Fn(&T) -> u64,
        key: &impl Fn(&T) -> K,
        counts: &impl Fn(&T) -> C,
    ) {
        let (bits, shift) = (self.bits, self.shift);
        let slot = |h: u64| slot_of(h, shift, bits);
        let view = self.slot_view();
        let far = self.worth_prefetching();
        let mask = self.capacity() - 1;
        let table: &mut [E] = bytemuck::cast_slice_mut(self.index.as_mut_slice());
        let slots = self.slots.as_mut_slice();
        let mut len = self.len;
        for (j, item) in piece.iter().enumerate() {
            if PREFETCH {
                // The slot of the item `SLOT_AHEAD` places on: it arrives before that item
                // goes in, and before the item `ELEMENT_AHEAD` places before it reads it.
                if let Some(ahead) = piece.get(j + SLOT_AHEAD) {
                    view.prefetch_hash(hash(ahead));
                }
            }
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
        self.len = len;
    }

    /// The counts of `key`, if present.
    pub fn get(&self, key: &K) -> Option<C> {
        if self.len == 0 {
            return None;
        }
        if Self::PACKED {
            return self.iter_from(self.slot(key)).find(|(k, _)| k == key).map(|(_, c)| c);
        }
        let s = invert(*key);
        let mask = self.capacity() - 1;
        let mut i = self.slot(key);
        let slots = self.slots.as_slice();
        loop {
            let slot = if Self::INLINE {
                &slots[i]
            } else {
                match self.element_at(i) {
                    0 => return None,
                    e => &slots[e],
                }
            };
            if slot.is_empty() {
                return None;
            }
            if slot.stored == s {
                return Some(slot.count);
            }
            i = (i + 1) & mask;
        }
    }

    /// Dense: the element number in table slot `i`.
    fn element_at(&self, i: usize) -> usize {
        let words = self.index.as_slice();
        if self.narrow() {
            bytemuck::cast_slice::<u32, u16>(words)[i].number()
        } else {
            words[i].number()
        }
    }

    /// The keys and counts from table slot `i` on, up to the first empty one (a probe's
    /// path), in the packed layout.
    fn iter_from(&self, mut i: usize) -> impl Iterator<Item = (K, C)> + '_ {
        let words = self.words.as_slice();
        let mask = words.len() - 1;
        std::iter::from_fn(move || {
            let word = words[i];
            i = (i + 1) & mask;
            (word != 0).then(|| Self::unpack(word))
        })
    }

    /// Doubles the table and inserts the keys again, in the order they are read back (so the
    /// dense layout keeps its insertion order). Rare: tables are made for the keys expected.
    #[cold]
    fn grow(&mut self) {
        let keys: Vec<(K, C)> = self.iter().collect();
        self.len = 0;
        let slots = (2 * self.capacity()).max(MIN_SLOTS);
        self.make_table(slots, Self::max_keys(slots), &Serial);
        // They fit: a doubled table holds at least as many keys.
        self.insert_all::<_, true>(&keys, &|r| key_hash(&r.0), &|r| r.0, &|r| r.1);
    }

    /// The slots: the whole table, empty slots included, in the inline layout; the elements,
    /// in insertion order, in the dense one (none in the packed one).
    pub(crate) fn slots(&self) -> &[Slot<K, C>] {
        if Self::PACKED {
            &[]
        } else if Self::INLINE {
            self.slots.as_slice()
        } else {
            self.slots.as_slice().get(1..=self.len).unwrap_or_default()
        }
    }

    /// The number of slots, for reading the set in pieces (ranges of slots), say one piece a
    /// thread ([`CountSet::entries`], [`CountSet::tallies`]): the whole table, empty slots
    /// included, in the inline and packed layouts; the elements, in insertion order, in the
    /// dense one.
    pub fn slot_count(&self) -> usize {
        if Self::PACKED {
            self.words.len()
        } else {
            self.slots().len()
        }
    }

    /// The stored keys and their counts, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (K, C)> + '_ {
        let all = if self.len == 0 { 0..0 } else { 0..self.slot_count() };
        self.entries(all).map(|(_, k, c)| (k, c))
    }

    /// The counts in the slots `slots` (a range of [`CountSet::slot_count`]), by slot index
    /// within the range (zero in an empty slot).
    ///
    /// # Panics
    /// If the range is not within the table.
    #[inline(always)]
    pub fn tallies(&self, slots: Range<usize>) -> Tallies<'_, K, C> {
        if Self::PACKED {
            Tallies { slots: &[], words: &self.words.as_slice()[slots] }
        } else {
            Tallies { slots: &self.slots()[slots], words: &[] }
        }
    }

    /// The keys stored in the table slots `slots` (a range of [`CountSet::slot_count`]), each
    /// with its slot's index within the range and its counts, in table order.
    ///
    /// Which slots are empty is read 64 at a time into a bit mask, without a branch: a loop
    /// over the positions of a sparse table would otherwise mispredict on a good share of
    /// its slots.
    ///
    /// # Panics
    /// If the range is not within the table.
    pub fn entries(&self, slots: Range<usize>) -> Entries<'_, K, C> {
        let Tallies { slots, words } = self.tallies(slots);
        Entries { slots, words, block: 0, next_block: 0, occupied: 0 }
    }
}

/// The counts of a range of a [`CountSet`]'s slots: see [`CountSet::tallies`].
#[derive(Clone, Copy, Debug)]
pub struct Tallies<'a, K, C> {
    /// The slots (inline and dense layouts).
    slots: &'a [Slot<K, C>],
    /// The words (packed layout).
    words: &'a [u64],
}

impl<K: Pod + Eq + Send + Sync, C: Tally> Tallies<'_, K, C> {
    /// The counts in slot `i` of the range.
    ///
    /// # Panics
    /// If `i` is not within the range.
    #[inline(always)]
    pub fn get(&self, i: usize) -> C {
        if CountSet::<K, C>::PACKED {
            CountSet::<K, C>::unpack(self.words[i]).1
        } else {
            self.slots[i].count
        }
    }
}

/// The keys of a range of a [`CountSet`]'s slots: see [`CountSet::entries`].
#[derive(Clone, Debug)]
pub struct Entries<'a, K, C> {
    /// The slots (inline and dense layouts).
    slots: &'a [Slot<K, C>],
    /// The words (packed layout).
    words: &'a [u64],
    /// The first slot of the block `occupied` describes.
    block: usize,
    /// The first slot of the block after it.
    next_block: usize,
    /// Bit `j`: slot `block + j` holds a key not yet returned (inline and packed layouts; the
    /// dense one returns slot `next_block` next, all of them holding a key).
    occupied: u64,
}

impl<'a, K: Pod + Eq + Send + Sync, C: Tally> Iterator for Entries<'a, K, C> {
    type Item = (usize, K, C);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let packed = CountSet::<K, C>::PACKED;
        if !CountSet::<K, C>::INLINE {
            let i = self.next_block;
            let slot = self.slots.get(i)?;
            self.next_block = i + 1;
            return Some((i, invert(slot.stored), slot.count));
        }
        while self.occupied == 0 {
            let len = if packed { self.words.len() } else { self.slots.len() };
            if self.next_block >= len {
                return None;
            }
            let mut occupied = 0u64;
            if packed {
                for (j, &w) in self.words[self.next_block..].iter().take(64).enumerate() {
                    occupied |= u64::from(w != 0) << j;
                }
            } else {
                for (j, s) in self.slots[self.next_block..].iter().take(64).enumerate() {
                    occupied |= u64::from(!s.is_empty()) << j;
                }
            }
            (self.block, self.next_block, self.occupied) = (self.next_block, self.next_block + 64, occupied);
        }
        let i = self.block + self.occupied.trailing_zeros() as usize;
        self.occupied &= self.occupied - 1;
        if packed {
            let (k, c) = CountSet::<K, C>::unpack(self.words[i]);
            return Some((i, k, c));
        }
        let slot = &self.slots[i];
        Some((i, invert(slot.stored), slot.count))
    }
}

/// A set's table as seen by [`CountSet::slot_view`]: enough to prefetch a key's slot.
#[derive(Clone, Copy, Debug)]
pub struct SlotView {
    base: usize,
    size: usize,
    shift: u32,
    bits: u32,
}

/// The line that every prefetch through [`SlotView::idle`] fetches.
static IDLE_LINE: [u8; 64] = [0; 64];

impl SlotView {
    /// A view whose every prefetch fetches one static line, soon in the caches: for keys that
    /// a set does not take, so that a caller prefetches through a table of views by key
    /// without a branch.
    pub fn idle() -> SlotView {
        SlotView { base: IDLE_LINE.as_ptr() as usize, size: 0, shift: 0, bits: 1 }
    }

    /// Hints the CPU to fetch the table slot of a key whose [`key_hash`] is `hash`.
    #[inline(always)]
    pub fn prefetch_hash(&self, hash: u64) {
        prefetch(self.slot_address(hash) as *const u8);
    }

    /// [`SlotView::prefetch_hash`] when `fetch`, else a fetch of the idle view's line (see
    /// [`SlotView::idle`]): no branch.
    #[inline(always)]
    pub fn prefetch_hash_if(&self, hash: u64, fetch: bool) {
        let at = std::hint::select_unpredictable(fetch, self.slot_address(hash), IDLE_LINE.as_ptr() as usize);
        prefetch(at as *const u8);
    }

    /// The address of the table slot of a key whose [`key_hash`] is `hash`.
    #[inline(always)]
    fn slot_address(&self, hash: u64) -> usize {
        self.base.wrapping_add(slot_of(hash, self.shift, self.bits) * self.size)
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
    use crate::Count34;
    use std::collections::HashMap;

    #[test]
    fn an_idle_view_fetches_its_one_line_whatever_the_hash() {
        let v = SlotView::idle();
        for hash in [0, 1, 1 << 63, u64::MAX, 0x9e37_79b9_7f4a_7c15] {
            let at = v.slot_address(hash);
            assert_eq!(at, IDLE_LINE.as_ptr() as usize);
        }
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
    fn merges_like_a_hashmap<const L: usize>() {
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

    #[test]
    fn inline_sets_merge_like_a_hashmap() {
        merges_like_a_hashmap::<1>();
        merges_like_a_hashmap::<2>();
    }

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

    /// Dense tables for up to `NARROW_KEYS` keys number their elements in `u16`s, in half the
    /// bytes; a set that grows past them numbers them in `u32`s from then on, every key kept.
    #[test]
    fn small_dense_tables_number_elements_in_u16s() {
        type Dense = CountSet<u32, [u32; 4]>;
        let mut set = Dense::new(0);
        set.clear_for(1000);
        assert!(set.narrow());
        assert_eq!(
            set.bytes(),
            set.capacity() * 2 + set.slots.len() * std::mem::size_of::<Slot<u32, [u32; 4]>>()
        );
        let key = |k: u32| k.wrapping_mul(0x9E37_79B9);
        let mut k = 0;
        while set.narrow() {
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
        assert!(set.narrow() && set.is_empty());
        set.insert(key(7), &[1; 4]);
        assert_eq!(set.get(&key(7)), Some([1; 4]));
    }

    /// A dense table past `DENSE_LARGE_SLOTS` is at load up to 1/2 again: made for 1.5 M keys,
    /// it has 2^22 slots (1/4 would take 2^23), and holds them. No table size holds fewer
    /// keys than the one below it, so `slots_for` finds the smallest that fits.
    #[test]
    fn large_dense_tables_go_back_to_load_one_half() {
        type Dense = CountSet<u32, [u32; 4]>;
        const { assert!(!Dense::INLINE) };
        for bits in 4..40 {
            assert!(Dense::max_keys(1 << bits) <= Dense::max_keys(1 << (bits + 1)), "{bits}");
        }
        let mut set = Dense::new(0);
        set.clear_for(1_500_000);
        assert_eq!(set.capacity(), DENSE_LARGE_SLOTS);
        let keys = (0..1_500_000u32).map(|k| (k.wrapping_mul(0x9E37_79B9), [k, 1, 0, 0]));
        set.insert_many(&keys.collect::<Vec<_>>(), |r| r.0, |r| r.1);
        assert_eq!((set.len(), set.capacity()), (1_500_000, DENSE_LARGE_SLOTS));
        for k in (0..1_500_000u32).step_by(9_973) {
            assert_eq!(set.get(&k.wrapping_mul(0x9E37_79B9)), Some([k, 1, 0, 0]));
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
        const { assert!(CountSet::<u32, Count34>::PACKED && !CountSet::<u32, [u32; 2]>::PACKED) };
        // Inline for one lane; dense for two beside a `u32` key (a 12-byte slot).
        const { assert!(CountSet::<u32, [u32; 1]>::INLINE && !CountSet::<u32, [u32; 2]>::INLINE) };
        const { assert!(CountSet::<u64, [u32; 2]>::INLINE) };
    }

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

    #[test]
    fn u64_tallies_carry() {
        let mut set = CountSet::<u32, u64>::new(0);
        set.insert(5, &u64::from(u32::MAX));
        set.insert(5, &1);
        set.insert(6, &u64::MAX);
        set.insert(6, &2);
        assert_eq!(set.get(&5), Some(1u64 << 32));
        assert_eq!(set.get(&6), Some(1));
    }
}

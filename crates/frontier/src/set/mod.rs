//! One shard: an open-addressing hash table of keys, each stored beside its [`Tally`] of path
//! counts, in the layout that the types of the keys and counts choose.
//!
//! # Layouts
//!
//! Each layout lives in its own file and implements the private [`Layout`] trait: what a set
//! asks of its table (make it, insert a batch, look a key up, read it back by ranges of
//! slots, say where a key's slot is). A set keeps three arrays; each layout uses the ones it
//! names, and the others stay empty (an empty [`MmapArray`] maps nothing):
//!
//! | layout | chosen for | the table | the keys and counts |
//! |---|---|---|---|
//! | [`Packed`] (`packed.rs`) | [`CountSet::PACKED`] | `words` | in the table's words |
//! | [`Inline`] (`inline.rs`) | [`CountSet::INLINE`], not packed | `slots` | in the table's slots |
//! | [`Dense`] (`dense.rs`) | the others | `index` | `slots`, in insertion order |
//!
//! The choice is made at compile time: `with_layout!` branches on the constants
//! [`CountSet::PACKED`] and [`CountSet::INLINE`], so each monomorphised copy of a method keeps
//! one branch and calls its layout's code directly. The set itself keeps what every layout
//! shares: the number of keys, the slot bits and the shift, batching inserts so that a batch
//! never outgrows the table, growing, prefetching and iterating.
//!
//! The key is stored with its bits inverted in every layout, so that an all-zero slot is an
//! empty one (see [`Slot`]).

use crate::Key;
use std::ops::Range;

use bytemuck::{Pod, Zeroable};

use crate::Tally;

use crate::arena::{MmapArray, Serial, Zeroer};
use crate::hash::key_hash;
use crate::prefetch::prefetch;

mod dense;
mod inline;
mod packed;

use dense::Dense;
use inline::Inline;
use packed::Packed;

/// The smallest table.
const MIN_SLOTS: usize = 16;

/// How many items ahead [`CountSet::insert_many`] prefetches the table slot of an item.
const SLOT_AHEAD: usize = 32;

/// The size up to which a set's arrays are taken to stay in a core's caches (a private L2 of
/// 1 MiB, or L2 and a share of L3): a prefetch into a set that size costs its instructions
/// and brings nothing a load would wait for, so [`CountSet::worth_prefetching`] says no.
const CACHED_BYTES: usize = 1 << 20;

/// What a layout does with a set's arrays (see the module docs). Implemented by the
/// zero-sized [`Packed`], [`Inline`] and [`Dense`]; private to this module and its files, so
/// no other type implements it. Its functions take the whole set: the layout reads the slot
/// bits and the shift, and keeps the number of keys as it inserts.
trait Layout<K: Key, C: Tally> {
    /// The most keys a table of `slots` slots holds before it grows.
    fn max_keys(slots: usize) -> usize;

    /// Number of table slots.
    fn capacity(set: &CountSet<K, C>) -> usize;

    /// Makes the table an empty one of `slots` slots (cleared by `zero`) for `keys` keys
    /// expected. The caller sets the slot bits.
    fn make_table(set: &mut CountSet<K, C>, slots: usize, keys: usize, zero: &impl Zeroer);

    /// Puts the layout's arrays on huge pages from now on.
    fn use_huge_pages(set: &mut CountSet<K, C>, zero: &impl Zeroer);

    /// The address of the array whose entries a key's hash names, and the bytes of an entry:
    /// what [`SlotView`] prefetches.
    fn table(set: &CountSet<K, C>) -> (usize, usize);

    /// Inserts `piece`, which has at most `max_keys(capacity) - len` items; when `PREFETCH`,
    /// the slots of its first [`SLOT_AHEAD`] items have been prefetched, and the others are
    /// prefetched [`SLOT_AHEAD`] items ahead (see [`prefetch_ahead`]).
    fn insert_piece<T, const PREFETCH: bool>(
        set: &mut CountSet<K, C>,
        piece: &[T],
        hash: &impl Fn(&T) -> u64,
        key: &impl Fn(&T) -> K,
        counts: &impl Fn(&T) -> C,
    );

    /// The counts of `key`, if present, in a set that holds a key.
    fn get(set: &CountSet<K, C>, key: &K) -> Option<C>;

    /// The number of slots the set is read back by ([`CountSet::slot_count`]).
    fn slot_count(set: &CountSet<K, C>) -> usize;

    /// The counts of the slots `slots` ([`CountSet::tallies`]).
    fn tallies(set: &CountSet<K, C>, slots: Range<usize>) -> Tallies<'_, K, C>;

    /// The counts in slot `i` of `tallies`.
    fn tally(tallies: &Tallies<'_, K, C>, i: usize) -> C;

    /// The next key of `entries`, with its slot's index within the range and its counts.
    fn next_entry(entries: &mut Entries<'_, K, C>) -> Option<(usize, K, C)>;
}

/// `$body` with `$L` the [`Layout`] that the types `$K` and `$C` choose: a branch on the
/// constants [`CountSet::PACKED`] and [`CountSet::INLINE`], which folds away in each
/// monomorphised copy.
macro_rules! with_layout {
    (<$K:ty, $C:ty> $L:ident => $body:expr) => {
        if CountSet::<$K, $C>::PACKED {
            type $L = Packed;
            $body
        } else if CountSet::<$K, $C>::INLINE {
            type $L = Inline;
            $body
        } else {
            type $L = Dense;
            $body
        }
    };
}

/// One slot of a [`CountSet`]: empty, or a key with its counts. The table in the inline
/// layout, the elements in the dense one.
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

impl<K: Key, C: Tally> Slot<K, C> {
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
pub(crate) fn stored<K: Key>(key: K) -> K {
    let s = invert(key);
    assert!(s != K::zeroed(), "a CountSet cannot store the key whose bits are all ones");
    s
}

/// An open-addressing hash set of keys with [`Tally`] payloads (lanes of wrapping counters,
/// say), merged by [`Tally::merge`] when a key is inserted again. Keys and counts are kept
/// in one of three layouts chosen by the types of the keys and counts
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
///   follows from the key's hash alone, so it can be prefetched.
/// * **dense** (larger counts, lanes, or slots of other sizes): the slots are dense, in
///   insertion order, behind a power-of-two table of element numbers (`u16`s in a table
///   for at most 65 535 keys, else `u32`s), probed linearly at load at most 1/4, or 1/2 in
///   the largest tables. Large slots would make an inline table several times larger than
///   the keys it holds, and clearing it between depths would cost more than the second
///   cache miss (the key's element after its table slot) saves.
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
pub struct CountSet<K: Key, C: Tally> {
    /// Inline: the table. Dense: the elements, from element 1 (element 0 is the sentinel).
    slots: MmapArray<Slot<K, C>>,
    /// Dense only: the table of element numbers, `u32`s, or two `u16`s a `u32` while the table
    /// is narrow.
    index: MmapArray<u32>,
    /// Packed only: the table, one key and its count a word.
    words: MmapArray<u64>,

    pub(crate) bits: u32,
    pub(crate) len: usize,
    pub(crate) shift: u32,
}

impl<K: Key, C: Tally> CountSet<K, C> {
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

    /// Bytes a slot takes (a word in the packed layout; in the dense one, an element, without
    /// the index's `u32`s): what a memory estimate counts a key at.
    pub const SLOT_BYTES: usize = if Self::PACKED { 8 } else { std::mem::size_of::<Slot<K, C>>() };

    /// The most keys a table of `slots` slots holds before it grows.
    #[inline(always)]
    fn max_keys(slots: usize) -> usize {
        with_layout!(<K, C> L => <L as Layout<K, C>>::max_keys(slots))
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
        with_layout!(<K, C> L => L::capacity(self))
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

    /// Makes the table an empty one of `slots` slots (cleared by `zero`) for `keys` keys
    /// expected (see each layout's `make_table`).
    fn make_table(&mut self, slots: usize, keys: usize, zero: &impl Zeroer) {
        debug_assert!(slots.is_power_of_two());
        with_layout!(<K, C> L => L::make_table(self, slots, keys, zero));
        self.bits = slots.trailing_zeros();
    }

    /// Puts the set's arrays on huge pages from now on ([`MmapArray::use_huge_pages`]): for a
    /// set about to grow large. Its keys and counts stay as they are.
    pub fn use_huge_pages(&mut self, zero: &impl Zeroer) {
        with_layout!(<K, C> L => L::use_huge_pages(self, zero));
    }

    /// The table slot where `key` goes first.
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
    /// element numbers). Other threads may prefetch through it while this set is filled
    /// behind a lock (a set that grows moves its table: a prefetch through an old view is
    /// then wasted, never wrong).
    #[inline(always)]
    pub fn slot_view(&self) -> SlotView {
        let (base, size) = with_layout!(<K, C> L => L::table(self));
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

    /// Inserts `items` in pieces that cannot outgrow the table, growing it between them; the
    /// layout inserts each piece ([`Layout::insert_piece`]).
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
                // ahead of the item being inserted (see `prefetch_ahead`).
                self.prefetch_items(&piece[..piece.len().min(SLOT_AHEAD)], hash);
            }
            with_layout!(<K, C> L => L::insert_piece::<T, PREFETCH>(self, piece, hash, key, counts));
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

    /// The counts of `key`, if present.
    pub fn get(&self, key: &K) -> Option<C> {
        if self.len == 0 {
            return None;
        }
        with_layout!(<K, C> L => L::get(self, key))
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

    /// The number of slots, for reading the set in pieces (ranges of slots), say one piece a
    /// thread ([`CountSet::entries`], [`CountSet::tallies`]): the whole table, empty slots
    /// included, in the inline and packed layouts; the elements, in insertion order, in the
    /// dense one.
    pub fn slot_count(&self) -> usize {
        with_layout!(<K, C> L => L::slot_count(self))
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
        with_layout!(<K, C> L => L::tallies(self, slots))
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

/// When `PREFETCH`, prefetches through `view` the table slot of the item [`SLOT_AHEAD`]
/// places after item `j` of `piece`: it arrives before that item goes in.
#[inline(always)]
fn prefetch_ahead<T, const PREFETCH: bool>(
    view: &SlotView,
    piece: &[T],
    j: usize,
    hash: &impl Fn(&T) -> u64,
) {
    if PREFETCH {
        if let Some(ahead) = piece.get(j + SLOT_AHEAD) {
            view.prefetch_hash(hash(ahead));
        }
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

impl<K: Key, C: Tally> Tallies<'_, K, C> {
    /// The counts in slot `i` of the range.
    ///
    /// # Panics
    /// If `i` is not within the range.
    #[inline(always)]
    pub fn get(&self, i: usize) -> C {
        with_layout!(<K, C> L => L::tally(self, i))
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

impl<K, C> Entries<'_, K, C> {
    /// The index of the next slot of `table` (the range's slots, or its words) that `full`
    /// says holds a key: read 64 slots at a time into `occupied`, without a branch.
    #[inline(always)]
    fn next_full<S>(&mut self, table: &[S], full: impl Fn(&S) -> bool) -> Option<usize> {
        while self.occupied == 0 {
            if self.next_block >= table.len() {
                return None;
            }
            let mut occupied = 0u64;
            for (j, s) in table[self.next_block..].iter().take(64).enumerate() {
                occupied |= u64::from(full(s)) << j;
            }
            (self.block, self.next_block, self.occupied) = (self.next_block, self.next_block + 64, occupied);
        }
        let i = self.block + self.occupied.trailing_zeros() as usize;
        self.occupied &= self.occupied - 1;
        Some(i)
    }
}

impl<K: Key, C: Tally> Iterator for Entries<'_, K, C> {
    type Item = (usize, K, C);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        with_layout!(<K, C> L => L::next_entry(self))
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
mod tests;

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

use crate::arena::{MmapArray, Prefault, Serial, Zeroer};
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

    /// Adds to `job` the memory a table of `slots` slots made for `keys` keys takes.
    fn prefault_into(set: &CountSet<K, C>, slots: usize, keys: usize, job: &mut Prefault);

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

    /// Adds to `job` the memory a table made for `keys` keys would take (see
    /// [`MmapArray::prefault_into`]): for a thread that would otherwise idle while the set is
    /// used. Running the job changes nothing in the set. A set that was never given room has
    /// no map yet, and adds nothing.
    pub fn prefault_into(&self, keys: usize, job: &mut Prefault) {
        let slots = Self::slots_for(keys);
        with_layout!(<K, C> L => L::prefault_into(self, slots, keys, job));
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
mod tests {
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
}

//! Growable arrays of plain data in anonymous memory maps.

use std::marker::PhantomData;
use std::ops::Range;
use std::ptr::NonNull;

use bytemuck::Zeroable;
use memmap2::{MmapMut, MmapOptions};

/// Address space reserved by a new array unless it asks for more: 256 MiB. Pages cost nothing
/// until touched (the map does not reserve swap), so arrays grow within it without remapping
/// or copying, and the pages a run has touched stay mapped for the next use (unless the array
/// shrinks by a megabyte or more).
pub const DEFAULT_RESERVE_BYTES: usize = 256 << 20;

/// Pre-faulting at least this many bytes at once asks for transparent huge pages (Linux,
/// where the system grants them on request: `madvise` mode): an array that large is a big
/// table, and small runs keep their small pages.
const HUGE_BYTES: usize = 2 << 20;

/// How the arrays of a set are prepared, on the caller's terms (a thread pool, say):
/// cleared, and their fresh pages pre-faulted. [`Serial`] does both on the calling thread.
pub trait Zeroer {
    /// Sets every item of `items` to `zero` (an all-zero value).
    fn zero<T: Copy + Send + Sync>(&self, items: &mut [T], zero: T);

    /// Calls `f(i)` for every `i` in `0..pieces`, in any order, on any threads: how the fresh
    /// pages of a grown array are pre-faulted, a piece each (on a virtual machine, the first
    /// touch of a page costs as much as writing it several times).
    fn each_piece(&self, pieces: usize, f: &(dyn Fn(usize) + Sync)) {
        (0..pieces).for_each(f);
    }
}

/// A [`Zeroer`] that works on the calling thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serial;

impl Zeroer for Serial {
    fn zero<T: Copy + Send + Sync>(&self, items: &mut [T], zero: T) {
        items.fill(zero);
    }
}

/// Bytes of pages past its new length an array must leave behind, at least, for a shrink
/// to give them back to the system.
const RELEASE_BYTES: usize = 1 << 20;

/// Bytes of fresh small pages pre-faulted as one piece ([`Zeroer::each_piece`]): small
/// enough that the growth of a table of a few megabytes goes to several threads.
const POPULATE_PIECE: usize = 256 << 10;

/// Bytes of fresh pages under which a growth leaves them to fault when first written, rather
/// than pre-faulting them in a system call: on a virtual machine a page faulted by its first
/// write costs about as much as one pre-faulted in so small a range, and more than one of a
/// larger range. Small frontiers grow their sets by a few pages a depth: those come
/// pre-faulted too.
const POPULATE_MIN: usize = 16 << 10;

/// The page size the byte ranges given to the system are rounded to.
#[cfg(target_os = "linux")]
const PAGE: usize = 4096;

/// How many pieces of `piece` bytes `bytes` spans, counted from the map's start (see
/// [`piece_of`]).
#[cfg(target_os = "linux")]
fn pieces(bytes: &Range<usize>, piece: usize) -> usize {
    bytes.end.div_ceil(piece) - bytes.start / piece
}

/// Piece `i` of `bytes`: pieces end on multiples of their size from the map's start (which
/// Linux aligns for huge pages), so a huge page is faulted whole, and no two pieces share one
/// (they would wait for each other).
#[cfg(target_os = "linux")]
fn piece_of(bytes: &Range<usize>, piece: usize, i: usize) -> Range<usize> {
    let first = bytes.start / piece + i;
    (first * piece).max(bytes.start)..((first + 1) * piece).min(bytes.end)
}

/// An array of `T` (any plain data that zero bytes make valid) whose length can change within
/// a reserved anonymous memory map (memmap2).
///
/// * Fresh pages read as zero; pages keep whatever was written to them when the array
///   shrinks a little and grows again (callers that need zeroes after a shrink clear them);
///   a shrink that leaves a megabyte or more of pages behind gives them back to the system.
/// * Growing past the reservation maps a larger region and copies the live prefix, into pages
///   pre-faulted first.
#[derive(Debug)]
pub struct MmapArray<T: Zeroable + Copy> {
    /// The elements are reached through `ptr` alone; the map is kept for the system calls on
    /// its pages (and to unmap them when dropped).
    map: Option<Map>,
    /// The start of `map` (dangling while there is none): kept so that a slice of the
    /// elements costs no conversion (hot loops take one per element).
    ptr: NonNull<T>,
    len: usize,
    /// Elements at or above this have never been handed out since the map was made: they
    /// are zero.
    touched: usize,
    _t: PhantomData<T>,
}

/// An array's memory map and what is known of its pages. Its bytes are never read or written
/// through `map` (they belong to the array's `ptr`): only system calls on its range go
/// through it.
struct Map {
    map: MmapMut,
    /// The map's length in bytes.
    len: usize,
    /// Bytes below this have been pre-faulted (or written), as far as is known: a hint that
    /// spares faulting them again.
    populated: usize,
    /// The map was asked for transparent huge pages (Linux only).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    huge: bool,
}

impl<T: Zeroable + Copy> MmapArray<T> {
    /// `len` zeroed elements, in a reservation of at least `DEFAULT_RESERVE_BYTES` (256 MiB).
    ///
    /// # Panics
    /// If the operating system refuses the mapping (out of address space).
    pub fn zeroed(len: usize) -> MmapArray<T> {
        let mut a = MmapArray { map: None, ptr: NonNull::dangling(), len: 0, touched: 0, _t: PhantomData };
        a.resize(len);
        a
    }

    fn reserved(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len / std::mem::size_of::<T>().max(1))
    }

    /// Elements below this have been pre-faulted (or written) in the current map.
    fn populated(&self) -> usize {
        let size = std::mem::size_of::<T>().max(1);
        self.map.as_ref().map_or(0, |m| m.populated / size)
    }

    /// Sets the length to `len`. Elements past the old length are zero if never written
    /// before, else hold their old values.
    pub fn resize(&mut self, len: usize) {
        self.resize_with(len, &Serial);
    }

    /// [`MmapArray::resize`], fresh pages pre-faulted through `zeroer` (on a thread pool, say).
    pub fn resize_with(&mut self, len: usize, zeroer: &impl Zeroer) {
        self.resize_prefaulting(len, len, zeroer);
    }

    /// [`MmapArray::resize_with`], the fresh pages pre-faulted only up to element `ahead`
    /// (at most `len`): for an array written from the front whose tail may never be used,
    /// which then costs no page until it is written.
    pub fn resize_prefaulting(&mut self, len: usize, ahead: usize, zeroer: &impl Zeroer) {
        if len > self.reserved() {
            self.remap(len, false, zeroer);
        }
        let populated = self.populated();
        let ahead = ahead.min(len);
        if ahead > populated {
            self.populate(populated, ahead, zeroer);
        }
        if len < self.len {
            self.release_past(len);
        }
        self.len = len;
        self.touched = self.touched.max(len);
    }

    /// Moves the array into a new map of room for `len` elements at least (at least twice the
    /// old one's), on huge pages from the start when `huge`, or when the old map was: the live
    /// elements are copied, into pages pre-faulted first.
    fn remap(&mut self, len: usize, huge: bool, zeroer: &impl Zeroer) {
        let size = std::mem::size_of::<T>().max(1);
        let least = len.max(self.len);
        let bytes = least.checked_mul(size).expect("array size overflows");
        let bytes = bytes.max(DEFAULT_RESERVE_BYTES).max(2 * self.reserved() * size);
        let mut map = MmapOptions::new()
            .len(bytes)
            .no_reserve_swap()
            .map_anon()
            .or_else(|_| MmapOptions::new().len(least * size).map_anon())
            .unwrap_or_else(|e| panic!("cannot map {bytes} bytes of anonymous memory: {e}"));
        assert!((map.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()), "maps are page-aligned");
        let ptr = NonNull::new(map.as_mut_ptr().cast::<T>()).expect("a map is never at address 0");
        let map_len = map.len();
        let huge = huge || self.map.as_ref().is_some_and(|m| m.huge);
        let mut map = Map { map, len: map_len, populated: 0, huge: false };
        if huge {
            map.ask_huge();
        }
        // The pages the live elements go to are pre-faulted first (through `zeroer`, in huge
        // pages past 2 MiB, or from the start when asked), rather than faulted one small page
        // at a time by the copy.
        map.populate(0..self.len * size, zeroer);
        // Element by element, not byte by byte: a `T` may have padding bytes, which are not to
        // be read.
        let live = self.as_slice();
        // SAFETY: the new map is aligned for `T` (checked) and holds at least `least >=
        // self.len` elements, all zero (a valid `T`: `Zeroable`); nothing else points into it.
        unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), live.len()) }.copy_from_slice(live);
        self.ptr = ptr;
        map.populated = map.populated.max(self.len * size);
        self.map = Some(map);
        self.touched = self.len;
    }

    /// Puts the array's pages not faulted yet on transparent huge pages (Linux, where the
    /// system grants them on request: `madvise` mode), for an array about to grow large. One
    /// that has touched less than a huge page's worth of small pages moves to a map of its own
    /// (its live elements copied), so that its first huge page is one too: on a virtual
    /// machine a fresh small page costs about four times its share of a huge one, and a
    /// large table is read at random, where huge pages spare TLB misses.
    pub fn use_huge_pages(&mut self, zeroer: &impl Zeroer) {
        if !cfg!(target_os = "linux") {
            return;
        }
        let size = std::mem::size_of::<T>().max(1);
        let small = self.touched.max(self.populated()) * size;
        match self.map.as_mut() {
            Some(m) if m.huge => {}
            Some(m) if small >= HUGE_BYTES => m.ask_huge(),
            _ => self.remap(self.len, true, zeroer),
        }
    }

    /// Gives the pages wholly past element `len` back to the system when they are
    /// [`RELEASE_BYTES`] or more (a set cut to a small table lets a partitioned depth's memory
    /// go): they read as zero again, fresh. Linux only (elsewhere they stay).
    fn release_past(&mut self, len: usize) {
        #[cfg(target_os = "linux")]
        if let Some(Map { map, len: map_len, populated, .. }) = self.map.as_mut() {
            let size = std::mem::size_of::<T>().max(1);
            let start = (len * size).div_ceil(PAGE) * PAGE;
            let end = (self.touched * size).min(*map_len);
            if end >= start + RELEASE_BYTES {
                // SAFETY: the range holds only elements at or past `len` (it starts on the
                // first page boundary at or after element `len`), which the array is about to
                // stop handing out: `&mut self` means no slice of them is alive, and they are
                // read again only after a later `resize` hands them out, as zero (what
                // `MADV_DONTNEED` makes an anonymous private page read as), a valid `T`
                // (`Zeroable`).
                let done = unsafe {
                    map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
                };
                if done.is_ok() {
                    // Elements wholly before `start` keep what they held (and the one across
                    // it, its bytes before `start`: it counts as touched); those after are
                    // fresh.
                    self.touched = start.div_ceil(size);
                    *populated = (*populated).min(start);
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = len;
    }

    /// Sets the length to `len` with every element zero, writing only the elements that may
    /// have been written before (fresh pages are zero already): the same as
    /// [`MmapArray::resize`] then filling with zeroes, at most half the work when growing.
    /// `zeroer` does the writing and the pre-faulting (on a thread pool, say).
    pub fn resize_zeroed_with(&mut self, len: usize, zeroer: &impl Zeroer)
    where
        T: Send + Sync,
    {
        let dirty = self.touched.min(len);
        self.resize_with(len, zeroer);
        zeroer.zero(&mut self.as_mut_slice()[..dirty], T::zeroed());
    }

    /// Pre-faults the pages of elements `from..to` (Linux 5.14+), a piece of
    /// [`POPULATE_PIECE`] bytes (a huge page, once the array asks for them) a system call,
    /// through `zeroer` (pieces may go at once on several threads), instead of one page fault
    /// per page when they are first written: much cheaper, and it keeps the kernel's
    /// page-fault locks out of the parallel phases. Ranges under [`POPULATE_MIN`] are left to
    /// fault (a system call each would cost more). A hint: errors are ignored.
    fn populate(&mut self, from: usize, to: usize, zeroer: &impl Zeroer) {
        let size = std::mem::size_of::<T>();
        if let Some(m) = self.map.as_mut() {
            m.populate(from * size..to * size, zeroer);
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The elements.
    #[inline(always)]
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` is the start of `map` and aligned for `T` (checked when mapped), or
        // dangling (and aligned) with `len == 0`; the map holds at least `len` elements (see
        // `resize`), each a valid `T`: zero bytes (anonymous maps start zeroed; `T:
        // Zeroable`) or a `T` written before; the borrow of `self` keeps the map alive and
        // unchanged.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The elements, mutably.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`; the mutable borrow of `self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl std::fmt::Debug for Map {
    /// The hints and the length, not the bytes (another thread may be writing them).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Map")
            .field("len", &self.len)
            .field("populated", &self.populated)
            .field("huge", &self.huge)
            .finish()
    }
}

impl Map {
    /// Pre-faults the bytes `bytes` through `zeroer` (see [`MmapArray::populate`]).
    fn populate(&mut self, bytes: Range<usize>, zeroer: &impl Zeroer) {
        #[cfg(target_os = "linux")]
        if let Some((fault, piece)) = self.plan_faults(bytes.clone()) {
            let map = &*self;
            zeroer.each_piece(pieces(&fault, piece), &|i| map.fault(piece_of(&fault, piece, i)));
            self.populated = self.populated.max(bytes.end);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (bytes, zeroer);
    }

    /// The bytes to pre-fault for the byte range `want` (from the page that holds its start,
    /// cut to the map) and the size of their pieces ([`Map::piece_for`]); `None` under
    /// [`POPULATE_MIN`] (a system call would cost more than the faults).
    #[cfg(target_os = "linux")]
    fn plan_faults(&mut self, want: Range<usize>) -> Option<(Range<usize>, usize)> {
        let bytes = want.start / PAGE * PAGE..want.end.min(self.len);
        if bytes.end < bytes.start + POPULATE_MIN {
            return None;
        }
        let piece = self.piece_for(bytes.len());
        Some((bytes, piece))
    }

    /// The size of the pieces ([`piece_of`]) in which `bytes` more bytes are pre-faulted,
    /// asking for huge pages first when that is [`HUGE_BYTES`] or more at once.
    #[cfg(target_os = "linux")]
    fn piece_for(&mut self, bytes: usize) -> usize {
        if bytes >= HUGE_BYTES && !self.huge {
            self.ask_huge();
        }
        if self.huge {
            HUGE_BYTES
        } else {
            POPULATE_PIECE
        }
    }

    /// Asks for transparent huge pages for the pages not faulted yet. Large arrays are read
    /// and written at random (hash tables): with 2 MiB pages a lookup rarely misses the TLB,
    /// and a page is zeroed and mapped in one step instead of 512.
    fn ask_huge(&mut self) {
        #[cfg(target_os = "linux")]
        let _ = self.map.advise(memmap2::Advice::HugePage);
        self.huge = true;
    }

    /// Pre-faults `bytes` (`MADV_POPULATE_WRITE`); a hint: errors are ignored. Pre-faulting
    /// changes no byte of the map: a page already there stays as it is, a fresh one reads as
    /// zero, as it would when first touched.
    #[cfg(target_os = "linux")]
    fn fault(&self, bytes: Range<usize>) {
        let _ = self.map.advise_range(memmap2::Advice::PopulateWrite, bytes.start, bytes.len());
    }
}

// SAFETY: the array owns its map (like a `Vec<T>` its buffer), which no one else points
// into; `ptr` is only dereferenced through `&self` or `&mut self`, so sending or sharing the
// array is as safe as for `T`.
unsafe impl<T: Zeroable + Copy + Send> Send for MmapArray<T> {}
// SAFETY: as above.
unsafe impl<T: Zeroable + Copy + Sync> Sync for MmapArray<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    /// An array put on huge pages keeps its elements, and grows and clears as before; one
    /// with no map yet gets one, a second call changes nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_keep_the_elements() {
        let mut a = MmapArray::<u32>::zeroed(100_000);
        a.as_mut_slice().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32 ^ 0x5555);
        let before = a.as_slice().as_ptr();
        a.use_huge_pages(&Serial);
        assert_ne!(a.as_slice().as_ptr(), before, "under 2 MiB of small pages: a map of its own");
        assert!(a.map.as_ref().is_some_and(|m| m.huge));
        let at = a.as_slice().as_ptr();
        a.use_huge_pages(&Serial);
        assert_eq!(a.as_slice().as_ptr(), at, "already on huge pages");
        a.resize(3_000_000);
        assert!(a.as_slice()[..100_000].iter().enumerate().all(|(i, &x)| x == i as u32 ^ 0x5555));
        assert!(a.as_slice()[100_000..].iter().all(|&x| x == 0));
        a.resize_zeroed_with(200_000, &Serial);
        assert!(a.as_slice().iter().all(|&x| x == 0));

        let mut fresh = MmapArray::<u64>::zeroed(0);
        fresh.use_huge_pages(&Serial);
        assert!(fresh.map.as_ref().is_some_and(|m| m.huge));
        fresh.resize(1_000);
        assert!(fresh.as_slice().iter().all(|&x| x == 0));

        // Past 2 MiB of small pages (grown a megabyte at a time: each growth pre-faulted in
        // small pages) it stays where it is; its later pages are huge.
        let mut big = MmapArray::<u64>::zeroed(0);
        for mib in 1..=3 {
            big.resize(mib << 17);
        }
        assert!(!big.map.as_ref().is_some_and(|m| m.huge));
        big.as_mut_slice().fill(3);
        let at = big.as_slice().as_ptr();
        big.use_huge_pages(&Serial);
        assert_eq!(big.as_slice().as_ptr(), at);
        assert!(big.map.as_ref().is_some_and(|m| m.huge));
        assert!(big.as_slice().iter().all(|&x| x == 3));
    }

    #[test]
    fn odd_sizes() {
        let mut a = MmapArray::<[u64; 3]>::zeroed(7);
        a.as_mut_slice()[6] = [1, 2, 3];
        a.resize(100);
        assert_eq!(a.as_slice()[6], [1, 2, 3]);
    }

    #[test]
    fn resize_zeroed_clears_what_was_written() {
        let mut a = MmapArray::<u32>::zeroed(10);
        a.as_mut_slice().fill(7);
        a.resize(4);
        for len in [3, 20, 100_000] {
            a.resize_zeroed_with(len, &Serial);
            assert!(a.as_slice().iter().all(|&x| x == 0), "length {len}");
            a.as_mut_slice().fill(9);
        }
        // Past the reservation (a new map, the live prefix copied).
        let big = DEFAULT_RESERVE_BYTES / 4 + 10;
        a.resize_zeroed_with(big, &Serial);
        assert!(a.as_slice().iter().all(|&x| x == 0));
    }

    /// A shrink that leaves megabytes behind gives those pages back: the elements kept keep
    /// their values, those handed out again read as zero (`resize` promises only that for
    /// fresh pages; these are fresh again), and clearing still clears.
    #[test]
    fn a_large_shrink_gives_pages_back() {
        let n = 4 << 20;
        let mut a = MmapArray::<u32>::zeroed(n);
        a.as_mut_slice().fill(7);
        a.resize(1000);
        assert!(a.as_slice().iter().all(|&x| x == 7));
        #[cfg(target_os = "linux")]
        {
            let kept = a.touched;
            assert!(kept < 2048, "the pages past the first one were not given back");
            a.resize(n);
            assert!(a.as_slice()[..1000].iter().all(|&x| x == 7));
            assert!(a.as_slice()[kept..].iter().all(|&x| x == 0));
        }
        a.resize_zeroed_with(n, &Serial);
        assert!(a.as_slice().iter().all(|&x| x == 0));
    }

    /// A [`Zeroer`] that records the pieces it is asked for.
    #[derive(Default)]
    struct Counting(std::sync::Mutex<Vec<usize>>);

    impl Zeroer for Counting {
        fn zero<T: Copy + Send + Sync>(&self, items: &mut [T], zero: T) {
            Serial.zero(items, zero);
        }

        fn each_piece(&self, pieces: usize, f: &(dyn Fn(usize) + Sync)) {
            self.0.lock().unwrap().push(pieces);
            (0..pieces).for_each(f);
        }
    }

    /// Growth pre-faults its fresh pages in pieces through the zeroer: small pages a
    /// [`POPULATE_PIECE`] each, huge ones (asked for once a growth reaches 2 MiB) one each,
    /// counted from the map's start; what grew reads as zero and takes writes.
    #[test]
    #[cfg(target_os = "linux")]
    fn growth_pre_faults_in_pieces_through_the_zeroer() {
        let mut a = MmapArray::<u8>::zeroed(0);
        let z = Counting::default();
        a.resize_with(POPULATE_PIECE * 3 + 1, &z);
        a.resize_with(POPULATE_PIECE * 3 + 100, &z); // under `POPULATE_MIN`: left to fault
        a.resize_with(POPULATE_PIECE * 4 + 5, &z);
        let grown = POPULATE_PIECE * 4 + 5 + HUGE_BYTES;
        a.resize_with(grown, &z);
        assert_eq!(*z.0.lock().unwrap(), [4, 2, 2]);
        assert!(a.as_slice().iter().all(|&x| x == 0));
        a.as_mut_slice().fill(3);
        assert!(a.as_slice().iter().all(|&x| x == 3));
    }

    /// A growth pre-faulted only part of the way faults no page past that part (the rest
    /// faults when written, and the next growth pre-faults from where this one stopped); the
    /// whole new length reads as zero and takes writes.
    #[test]
    #[cfg(target_os = "linux")]
    fn growth_pre_faults_only_as_far_as_asked() {
        let mut a = MmapArray::<u8>::zeroed(0);
        let z = Counting::default();
        a.resize_prefaulting(POPULATE_PIECE * 8, POPULATE_PIECE * 2, &z);
        assert_eq!(a.populated(), POPULATE_PIECE * 2);
        assert_eq!(a.len(), POPULATE_PIECE * 8);
        assert!(a.as_slice().iter().all(|&x| x == 0));
        a.as_mut_slice().fill(9);
        assert!(a.as_slice().iter().all(|&x| x == 9));
        a.resize_prefaulting(POPULATE_PIECE * 8, POPULATE_PIECE * 5, &z);
        assert_eq!(a.populated(), POPULATE_PIECE * 5);
        // Never past the length.
        a.resize_prefaulting(POPULATE_PIECE * 6, POPULATE_PIECE * 7, &z);
        assert_eq!(a.populated(), POPULATE_PIECE * 6);
        assert_eq!(*z.0.lock().unwrap(), [2, 3, 1]);
        assert!(a.as_slice().iter().all(|&x| x == 9));
    }

    /// Past the reservation, the pages the live elements are copied to are pre-faulted first,
    /// through the zeroer, and the copy keeps every element.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_remap_pre_faults_what_it_copies() {
        let live = POPULATE_PIECE + 1000;
        let mut a = MmapArray::<u8>::zeroed(live);
        a.as_mut_slice().fill(4);
        let z = Counting::default();
        a.resize_prefaulting(DEFAULT_RESERVE_BYTES + 1, live, &z);
        assert_eq!(*z.0.lock().unwrap(), [2], "the live elements' two pieces, and nothing past them");
        assert!(a.populated() >= live);
        assert!(a.as_slice()[..live].iter().all(|&x| x == 4));
        assert!(a.as_slice()[live..].iter().all(|&x| x == 0));
    }

    #[test]
    fn zeroed_writable_and_growable() {
        let mut a = MmapArray::<[u32; 8]>::zeroed(1000);
        assert_eq!(a.len(), 1000);
        assert!(a.as_slice().iter().all(|x| *x == [0; 8]));
        a.as_mut_slice()[999][7] = 5;
        assert_eq!(a.as_slice()[999][7], 5);
        // Past the reservation: copied.
        let big = DEFAULT_RESERVE_BYTES / 32 + 10;
        a.resize(big);
        assert_eq!(a.as_slice()[999][7], 5);
        assert_eq!(a.as_slice()[big - 1], [0; 8]);
        assert!(MmapArray::<u64>::zeroed(0).as_slice().is_empty());
    }
}

//! Fixed-size arrays of plain data in anonymous memory maps.

use std::marker::PhantomData;

use bytemuck::Pod;
use memmap2::{MmapMut, MmapOptions};

/// A fixed-length array of `T` in its own anonymous memory map (memmap2).
///
/// Fresh pages are zero and cost nothing until touched, so a large array that a small run
/// barely uses is cheap; the length is fixed at creation (grow by building a larger one).
#[derive(Debug)]
pub struct MmapArray<T: Pod> {
    map: Option<MmapMut>,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Pod> MmapArray<T> {
    /// `len` zeroed elements.
    ///
    /// # Panics
    /// If the operating system refuses the mapping (out of address space).
    pub fn zeroed(len: usize) -> MmapArray<T> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).expect("array size overflows");
        let map = (bytes > 0).then(|| {
            MmapOptions::new().len(bytes).map_anon().unwrap_or_else(|e| {
                panic!("cannot map {bytes} bytes of anonymous memory: {e}")
            })
        });
        MmapArray { map, len, _t: PhantomData }
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
    pub fn as_slice(&self) -> &[T] {
        match &self.map {
            // Page-aligned maps satisfy any `T`'s alignment; bytemuck checks it anyway.
            Some(m) => bytemuck::cast_slice(&m[..]),
            None => &[],
        }
    }

    /// The elements, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.map {
            Some(m) => bytemuck::cast_slice_mut(&mut m[..]),
            None => &mut [],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_and_writable() {
        let mut a = MmapArray::<[u32; 8]>::zeroed(1000);
        assert_eq!(a.len(), 1000);
        assert!(a.as_slice().iter().all(|x| *x == [0; 8]));
        a.as_mut_slice()[999][7] = 5;
        assert_eq!(a.as_slice()[999][7], 5);
        assert!(MmapArray::<u64>::zeroed(0).as_slice().is_empty());
    }
}

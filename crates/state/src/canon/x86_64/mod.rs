//! x86-64 backends.

pub mod avx2;
pub mod avx512;
mod wide_avx2;

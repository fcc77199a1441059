//! x86-64 backends.

pub mod avx2;
mod wide_avx2;

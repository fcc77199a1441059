//! x86-64 backends.

pub mod avx2;

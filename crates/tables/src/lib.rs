//! Lookup tables for the Cephalopod dice game, computed at compile time by `const fn`.
//!
//! # Brief overview
//!
//! * [`captures`]: the capture rule, independent of the board's shape. For every
//!   *neighbourhood pattern* (the values of a cell's up to four neighbours, 3 bits each) the
//!   list of moves that fill the cell ([`captures::PLACEMENTS`]) and their sums
//!   ([`captures::PATTERN_SUMS`]), which let the last depth add up successor hashes without
//!   generating them.
//! * [`geometry`]: neighbours, symmetries (8 on square boards, 4 on the others), their
//!   composition and the base-10 hash weights of any `R x C` board of at most 64 cells.
//! * [`ring3`]: the contest's 3x3 board in a packing where every symmetry is a rotation or
//!   reflection of a 24-bit ring: move deltas per (cell, pattern), the 8 transformed hashes,
//!   last-depth sums.
//!
//! Every table is a `static` built by a `const fn` that `assert!`s its invariants, and has a
//! slow twin (`*_slow`) that an exhaustive test compares it with. The crate has no
//! dependencies.
//!
//! # Example
//!
//! ```
//! use tables::captures::{Placement, PLACEMENTS};
//! use tables::geometry::Geometry;
//!
//! // An empty cell whose neighbours hold a 2 (neighbour 0) and a 3 (neighbour 1):
//! // the only move captures both and leaves a 5.
//! let pattern = 2 | 3 << 3;
//! assert_eq!(PLACEMENTS[pattern].as_slice(), &[Placement { captured: 0b11, die: 5 }]);
//!
//! // A 2x3 board has 4 symmetries; its top-left cell has two neighbours.
//! let g = Geometry::new(2, 3);
//! assert_eq!(g.symmetries, 4);
//! assert_eq!(g.weight[0], 100_000);
//! ```
#![deny(missing_docs)]

/// The README's example, compiled and run as a documentation test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod captures;
pub mod geometry;
pub mod ring3;

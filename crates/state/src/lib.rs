//! Packed Cephalopod boards, their moves, and canonicalisation under the board's symmetries.
//!
//! # Brief overview
//!
//! * [`Shape`] and [`Board`]: a rectangular board of at most 64 cells, as a user writes it.
//! * [`PackedKey`]: a board packed 3 bits a cell into the narrowest of `u32`, `u64`, `u128`
//!   and [`U192`] that holds it ([`Shape::width`]).
//! * [`Rules`]: what a search needs of a packing: moves, the canonical form (the smallest image
//!   under the board's 8 or 4 symmetries) with the symmetry that produced it, per-symmetry
//!   hashes, and the sum of the successors' hashes without generating them.
//! * [`Grid`]: the rules of any shape, tables built once per shape; `u64` and `u128` keys (11
//!   to 42 cells) are canonicalised with AVX2 or AVX-512 when the grid is built for
//!   [`Level::Avx2`] or [`Level::Avx512`].
//! * [`Ring3`]: the contest's 3x3 board, packed so that its symmetries are rotations and
//!   reflections of a 24-bit ring, canonicalised by a [`canon`] backend ([`canon::Portable`]
//!   everywhere, [`canon::Avx2`] where the CPU has it), chosen once at run time.
//! * [`Level`] and [`Isa`]: an instruction set as named, and one this CPU is proven to have
//!   (by a token such as [`Avx2Token`] or [`Avx512Token`], made only by asking the CPU); [`Rules::isa`] tells a
//!   search which hot loops it may run.
//!
//! # Example
//!
//! ```
//! use state::canon::Portable;
//! use state::{Grid, Level, Ring3, Rules, Shape};
//!
//! let cells = [0, 6, 0, 2, 2, 2, 1, 6, 1];
//! let ring = Ring3::new(Portable);
//! let s = ring.pack(&cells);
//! let mut successors = Vec::new();
//! ring.successors(s, |t| successors.push(ring.unpack(t)));
//! // Two empty corners; neither captures (6 + 2 > 6), so each gets a 1.
//! assert_eq!(successors, vec![vec![1, 6, 0, 2, 2, 2, 1, 6, 1], vec![0, 6, 1, 2, 2, 2, 1, 6, 1]]);
//!
//! // The same board through the general path agrees on the hash of every symmetric image.
//! let grid = Grid::<u32>::new(Shape::SQUARE3, Level::Portable);
//! let mut a = ring.hashes(s);
//! let mut b = grid.hashes(grid.pack(&cells));
//! a.sort();
//! b.sort();
//! assert_eq!(a, b);
//! ```
#![deny(missing_docs)]

/// The README's example, compiled and run as a documentation test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod canon;
mod counts;
#[cfg(target_arch = "x86_64")]
mod cpu;
mod grid;
mod key;
mod level;
mod ring3;
mod rules;
mod shape;

pub use counts::{fold_lanes, lane_sum, lane_total, lanes, mul_add, Counts};
pub use grid::Grid;
pub use key::{pack, unpack, PackedKey, U192};
pub use level::{Avx2Token, Avx512Token, Isa, Level};
pub use ring3::Ring3;
pub use rules::{successor_hashes_one_by_one, successor_totals_one_by_one, successors_one_by_one, Rules};
pub use shape::{hash_cells, Board, BoardError, Shape, ShapeError, Width, HASH_MASK};

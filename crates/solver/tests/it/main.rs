//! The solver's tests through its public API and its binary, in one test binary: one link
//! instead of one a file, and its tests share the machine's threads instead of running file
//! after file. `deep.rs` (long searches, run by `cargo xtask verify` in release) and `mpi.rs`
//! (feature `mpi`) stay binaries of their own.
//!
//! - `reference`: property tests of every search path against the plain reference solver;
//!   `perft`: exact counts against it; `cluster`: ranks as threads.
//! - `disk`: partitions on disk, checkpoints and faults; `cancel` and `errors`: how runs stop.
//! - `cli`, `count_cli`, `input`, `terminal`: the binary and its input.

#[path = "../common/boards.rs"]
mod boards;
#[path = "../common/mod.rs"]
mod common;
#[path = "../common/reference.rs"]
mod plain;

mod cancel;
mod cli;
mod cluster;
mod count_cli;
mod disk;
mod errors;
mod input;
mod perft;
mod reference;
mod terminal;

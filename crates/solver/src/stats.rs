//! What a search reports about each depth, and the process's memory figures.

use crate::fill::Fill;

/// Statistics of one depth of a search (serialisable: the `--json` output's `stats` rows).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct DepthStats {
    /// The depth (number of moves played).
    pub depth: u32,
    /// Canonical positions stored at this depth (full boards are not stored; none at the last
    /// depth unless boards are counted, nor at the one before it on paths that sum the last
    /// two depths in one pass: the 3x3 board, and boards of 2 to 10 columns whose start every
    /// symmetry fixes; unless boards are counted or every depth's answer is asked for).
    pub states: u64,
    /// With board counting: the distinct boards reached by exactly this many moves, full ones
    /// included (what the stored positions and the full boards stand for).
    pub boards: Option<u64>,
    /// Successor records generated to reach the stored positions (one per move, before
    /// merging).
    pub records: u64,
    /// Paths that ended on a full board at this depth, modulo 2^32 (all paths still going
    /// at the last depth end there too, but are not counted here).
    pub ended_paths: u32,
    /// In an exact count (perft): the move sequences of exactly this many moves, ended or
    /// not (a decimal string in JSON).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "decimal")]
    pub perft: Option<u128>,
    /// In an exact count (perft): of those sequences, the ones whose last move filled the
    /// board (games of this length; a decimal string in JSON).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "decimal")]
    pub games: Option<u128>,
    /// Sum of the hashes of all paths ending at this depth (full boards reached at this depth,
    /// plus every path at the last depth), modulo 2^30.
    pub ended: u32,
    /// With [`crate::Options::all_depths`]: the answer at this depth (the sum of the final
    /// hashes of every path of this many moves, or fewer when the board filled), modulo 2^30.
    /// The `--json` output lists these in its `answers` array instead.
    #[serde(skip)]
    pub answer: Option<u32>,
    /// Wall-clock seconds spent on this depth.
    pub seconds: f64,
    /// Of which expanding the previous frontier (generating and canonicalising successors).
    pub expand_seconds: f64,
    /// Of which inserting records into the new frontier (0 on depths whose expansion inserts
    /// each successor itself: direct, owned and one-lock).
    pub insert_seconds: f64,
    /// Peak resident memory of the process so far, in bytes (Linux; 0 elsewhere), as last read:
    /// the driver reads it only after depths long enough for it to have moved, and not after
    /// every one of those (0 until the first read).
    #[serde(rename = "peak_memory_bytes")]
    pub peak_memory: u64,
    /// Bytes written to disk at this depth (frontiers on disk and checkpoints only).
    pub bytes_written: u64,
    /// Bytes read from disk at this depth.
    pub bytes_read: u64,
    /// How several threads filled this depth's positions, when each thread inserted the
    /// successors it made straight into a frontier in memory ([`Fill::Owned`] or
    /// [`Fill::OneLock`], never [`Fill::Auto`]); `None` on one thread, on small depths (one
    /// thread too), and where records go through shards (a frontier partly on disk, several
    /// ranks).
    pub fill: Option<Fill>,
    /// In a search of several ranks: how the depth was shared out and what the ranks
    /// exchanged (every other figure is then over all ranks: sums, the longest time, the
    /// largest peak memory). `None` for one process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<RankSpread>,
}

/// An exact count as a decimal string: JSON readers lose the digits of numbers past 2^53.
fn decimal<S: serde::Serializer>(n: &Option<u128>, s: S) -> Result<S::Ok, S::Error> {
    match n {
        Some(n) => s.collect_str(n),
        None => s.serialize_none(),
    }
}

/// How a depth of a search of several ranks was shared out ([`DepthStats::ranks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct RankSpread {
    /// The number of ranks.
    pub ranks: u32,
    /// Positions of the rank that stored the most (the mean is
    /// [`DepthStats::states`] / `ranks`).
    pub states_max: u64,
    /// Bytes of successors the ranks sent one another (each byte counted once, by its sender).
    pub bytes_sent: u64,
    /// Bytes the ranks received (equal to the bytes sent).
    pub bytes_received: u64,
    /// Seconds the slowest rank spent in exchanges (sending, receiving, filing what it
    /// received, waiting for the others).
    pub exchange_seconds: f64,
    /// Exchanges in the depth (each a collective over every rank).
    pub exchanges: u32,
}

/// One rank's own figures over a whole search ([`crate::Answer::ranks`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct RankSummary {
    /// The rank.
    pub rank: usize,
    /// Positions it stored at its largest depth.
    pub states_largest: u64,
    /// Bytes it sent to other ranks.
    pub bytes_sent: u64,
    /// Bytes it received from other ranks.
    pub bytes_received: u64,
    /// Seconds it spent in exchanges.
    pub exchange_seconds: f64,
    /// Bytes it wrote to disk.
    pub bytes_written: u64,
    /// Its peak resident memory in bytes, as last read ([`DepthStats::peak_memory`]).
    #[serde(rename = "peak_memory_bytes")]
    pub peak_memory: u64,
}

/// What sees each depth's statistics as soon as the depth is done (for progress reports). It
/// is `Send`: a search moves onto the thread pool when its first parallel depth comes.
pub(crate) type Observer<'a> = dyn FnMut(&DepthStats) + Send + 'a;

/// Peak resident memory of this process in bytes, 0 where unknown (Linux only): the kernel's
/// high-water mark of its resident set since it started this program (`VmHWM` in
/// `/proc/self/status`). Not `getrusage`'s `ru_maxrss`: that one carries over through
/// `execve`, so a run started by a larger process (a test harness, a script, `mpirun`) would
/// report that process's peak. A read takes some 20 microseconds (the kernel writes the whole
/// status file).
pub fn peak_memory() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status.lines().find_map(|line| line.strip_prefix("VmHWM:")).map_or(0, kib_to_bytes)
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// A `/proc` figure such as `  123456 kB`, in bytes; 0 if it is not one.
#[cfg(target_os = "linux")]
fn kib_to_bytes(figure: &str) -> u64 {
    let kib = figure.trim().strip_suffix("kB").map(|n| n.trim().parse::<u64>());
    kib.and_then(Result::ok).map_or(0, |n| n.saturating_mul(1024))
}

//! The memory budget: the one place that reads the memory limit and decides where each
//! partition of a frontier lives.
//!
//! A depth's frontier is split into `2^bits` hash partitions ([`partition_of`]). Before each
//! depth the driver asks for a [`Plan`], giving what it has measured ([`Need`]): the positions
//! of the current depth, how much the frontier grew at the last depth, the bytes a stored
//! position takes, and the bytes the current depth's memory home takes now. The policy:
//!
//! 1. **Everything in memory** while the current memory home and the next depth's estimated
//!    sets fit the limit together: one partition, no file, the in-memory engine as it is.
//! 2. Otherwise **partitions**: as few as keep one partition's set at most
//!    `limit / (2 * threads)` (that many are merged at once, one a worker, at the end of the
//!    depth), never smaller than [`MIN_PART_STATES`] positions, at most `2^`[`MAX_BITS`].
//!    Partitions `0..resident` stay in memory: as many as fit in what is left once the
//!    source being expanded (the current memory home, or one loaded partition a thread), the merge
//!    sets, the write buffers and the successor records in flight are counted. The others go
//!    to disk.
//! 3. **Eviction**: a memory home that turned out larger than the whole limit (the estimate
//!    fell short) is written to disk after its depth ([`Budget::must_evict`]).
//!
//! The limit defaults to a quarter of the physical memory ([`default_memory_limit`]), read
//! only once a frontier is large enough for it to matter (small searches make no system call
//! for it).

use std::sync::OnceLock;

/// The most partition bits: 1 024 partitions (files a depth, per writing thread).
pub(crate) const MAX_BITS: u32 = 10;

/// The fewest positions a partition is planned for: below it, a file's fixed costs (open,
/// header, a set to merge into) outweigh what a smaller partition saves.
pub(crate) const MIN_PART_STATES: f64 = 16384.0;

/// Below this many bytes of frontier a search is small: the default limit (a share of the
/// physical memory) is far above it, and is not read.
const SMALL_BYTES: f64 = (16 << 20) as f64;

/// Margin over the estimated next depth (its growth is the last depth's, which it may pass).
const MARGIN: f64 = 1.25;

/// The memory limit when none is given: a quarter of the physical memory (Linux), else 1 GiB.
pub fn default_memory_limit() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `sysinfo` (the struct) is plain C data, for which all-zero bytes are valid.
        let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
        // SAFETY: `sysinfo` writes one struct through the pointer, which points to one on
        // this stack frame, alive and not otherwise borrowed during the call.
        if unsafe { libc::sysinfo(&mut info) } != 0 {
            return 1 << 30;
        }
        // The total usable RAM (what `/proc/meminfo` calls `MemTotal`), in units of `mem_unit`.
        // (`c_ulong`: 32 bits on 32-bit systems.)
        (info.totalram as u64).saturating_mul(u64::from(info.mem_unit)) / 4
    }
    #[cfg(not(target_os = "linux"))]
    {
        1 << 30
    }
}

/// The limit of one run, and the decisions made from it.
#[derive(Debug)]
pub(crate) struct Budget {
    given: Option<u64>,
    default: OnceLock<u64>,
}

/// What the driver has measured when it plans a depth.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Need {
    /// Positions of the current depth, in every home.
    pub states: u64,
    /// Positions of the last depth per position of the one before.
    pub growth: f64,
    /// Bytes a stored position takes in a set (slots and table, typically).
    pub position_bytes: f64,
    /// Bytes the current depth's memory home takes now.
    pub resident_bytes: u64,
    /// Positions of the largest current partition on disk (0 if none).
    pub largest_away: u64,
    /// Worker threads.
    pub threads: usize,
}

/// Where the partitions of the next depth live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// `2^bits` partitions.
    pub bits: u32,
    /// Partitions `0..resident` stay in memory, the others go to disk.
    pub resident: usize,
    /// Bytes each writer of a partition on disk buffers.
    pub write_buffer: usize,
    /// Bytes of successor records a parallel depth may hold between expanding and inserting.
    pub records_in_flight: usize,
}

impl Plan {
    /// One partition, in memory.
    pub(crate) const IN_MEMORY: Plan =
        Plan { bits: 0, resident: 1, write_buffer: 0, records_in_flight: usize::MAX };

    /// The number of partitions.
    pub(crate) fn parts(&self) -> usize {
        1 << self.bits
    }

    /// True when some partition goes to disk.
    pub(crate) fn spills(&self) -> bool {
        self.resident < self.parts()
    }
}

/// The partition, among `2^bits`, of a key whose [`frontier::key_hash`] is `hash`.
///
/// Tables take their slots (and shards) from the top bits of the hash; a partition is the top
/// `bits` of a remix of all 64 bits into 32 (the low bits of a multiplicative hash of a
/// 4-byte key depend on its low bits only), so that a set holding some partitions still
/// spreads its keys over all its slots.
#[inline(always)]
pub(crate) fn partition_of(hash: u64, bits: u32) -> usize {
    if bits == 0 {
        return 0;
    }
    let folded = (hash as u32) ^ ((hash >> 32) as u32);
    (folded.wrapping_mul(0x9E37_79B9) >> (32 - bits)) as usize
}

/// Bytes of mail a rank holds at most before it exchanges them ([`Budget::mail_bytes`]):
/// enough that an exchange moves far more than it costs to meet, few enough that the buffers
/// stay near the caches.
const MAIL_BYTES: usize = 1 << 20;

impl Budget {
    /// A budget of `limit` bytes, or [`default_memory_limit`].
    pub(crate) fn new(limit: Option<u64>) -> Budget {
        Budget { given: limit, default: OnceLock::new() }
    }

    /// The limit in bytes (reads the system's memory size if none was given).
    pub(crate) fn limit(&self) -> u64 {
        self.given.unwrap_or_else(|| *self.default.get_or_init(default_memory_limit))
    }

    /// The limit, or `None` when none was given and `bytes` is far below any default.
    fn limit_for(&self, bytes: f64) -> Option<u64> {
        match self.given {
            Some(l) => Some(l),
            None if bytes < SMALL_BYTES => None,
            None => Some(self.limit()),
        }
    }

    /// Where the next depth's partitions live (module docs).
    pub(crate) fn plan(&self, need: &Need) -> Plan {
        let threads = need.threads.max(1) as f64;
        let next_states = need.states as f64 * need.growth.max(0.0) * MARGIN;
        let next_bytes = next_states * need.position_bytes;
        let resident = need.resident_bytes as f64;
        let Some(limit) = self.limit_for(resident + next_bytes) else { return Plan::IN_MEMORY };
        let limit = limit as f64;
        if resident + next_bytes <= limit {
            return Plan::IN_MEMORY;
        }
        let part_cap = limit / 2.0 / threads;
        let mut bits = 0;
        while bits < MAX_BITS
            && next_bytes / f64::from(1u32 << bits) > part_cap
            && next_states / f64::from(2u32 << bits) >= MIN_PART_STATES
        {
            bits += 1;
        }
        let parts = 1usize << bits;
        let part_bytes = (next_bytes / parts as f64).max(1.0);
        let write_buffer = ((limit / 16.0 / threads / parts as f64) as usize).clamp(4 << 10, 1 << 20);
        let buffers = (write_buffer * parts) as f64 * threads;
        let source =
            resident.max(threads * need.largest_away as f64 * need.position_bytes).max(threads * part_bytes);
        let records_in_flight = ((limit / 16.0) as usize).max(1 << 16);
        // An eighth of the limit for the records in flight and the merge sets kept idle.
        let room = limit - source - buffers - limit / 8.0;
        let kept = if room <= 0.0 { 0 } else { ((room / part_bytes) as usize).min(parts) };
        Plan { bits, resident: kept, write_buffer, records_in_flight }
    }

    /// True when sets of `bytes` that are idle during a depth's expansion (those that merge
    /// partitions) may be kept for the next depth: at most an eighth of the limit, which the
    /// plan leaves free ([`Plan::records_in_flight`] is half of it).
    pub(crate) fn may_keep(&self, bytes: u64) -> bool {
        self.limit_for(bytes as f64).is_none_or(|l| bytes.saturating_mul(8) <= l)
    }

    /// Bytes of mail (successors other ranks own, [`crate::home::Outbox`]) a rank holds before
    /// it exchanges them: [`MAIL_BYTES`], or a 64th of a smaller limit (within the eighth the
    /// plan leaves free; the exchange's buffers hold as much again), but never under 256 KiB
    /// (below that, meeting the other ranks costs more than the exchange moves).
    pub(crate) fn mail_bytes(&self) -> usize {
        match self.given {
            Some(l) => ((l / 64) as usize).clamp(256 << 10, MAIL_BYTES),
            None => MAIL_BYTES,
        }
    }

    /// True when a memory home of `bytes` must go to disk before the next depth: it alone
    /// passes the limit.
    pub(crate) fn must_evict(&self, bytes: u64) -> bool {
        self.limit_for(bytes as f64).is_some_and(|l| bytes > l)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn need(states: u64, resident_bytes: u64) -> Need {
        Need { states, growth: 2.0, position_bytes: 48.0, resident_bytes, largest_away: 0, threads: 2 }
    }

    #[test]
    fn small_searches_stay_in_memory_without_reading_the_limit() {
        let b = Budget::new(None);
        assert_eq!(b.plan(&need(1000, 100_000)), Plan::IN_MEMORY);
        assert!(b.default.get().is_none(), "no limit read for a small search");
        assert!(!b.must_evict(1 << 20));
    }

    #[test]
    fn a_frontier_that_fits_stays_in_memory() {
        let b = Budget::new(Some(64 << 20));
        // 100K positions growing to 250K (with the margin) at 48 bytes: 12 MB.
        assert_eq!(b.plan(&need(100_000, 5 << 20)), Plan::IN_MEMORY);
    }

    #[test]
    fn a_frontier_over_the_limit_is_partitioned_and_partly_resident() {
        let limit = 64u64 << 20;
        let b = Budget::new(Some(limit));
        let n = need(2_400_000, 100 << 20);
        let plan = b.plan(&n);
        assert!(plan.spills());
        let parts = plan.parts();
        let next_bytes = 2_400_000.0 * 2.0 * MARGIN * 48.0;
        // Each partition small enough that one a thread fits half the limit.
        assert!(next_bytes / parts as f64 <= limit as f64 / 4.0, "{plan:?}");
        // Fewest partitions that do: one bit fewer would not.
        assert!(next_bytes / (parts / 2) as f64 > limit as f64 / 4.0, "{plan:?}");
        // The current memory home is larger than the limit: nothing more can stay.
        assert_eq!(plan.resident, 0);
        // With a small memory home, some partitions stay in memory, within the limit.
        let plan = b.plan(&need(2_400_000, 8 << 20));
        assert!(plan.resident > 0 && plan.spills(), "{plan:?}");
        let kept = plan.resident as f64 * next_bytes / plan.parts() as f64;
        assert!(kept + (8 << 20) as f64 <= limit as f64, "{plan:?}");
        assert!(plan.write_buffer >= 4 << 10 && plan.records_in_flight <= limit as usize);
    }

    #[test]
    fn tiny_limits_never_make_tiny_partitions() {
        let b = Budget::new(Some(1));
        let plan = b.plan(&need(17, 1000));
        assert_eq!((plan.bits, plan.resident), (0, 0), "one partition, on disk");
        let plan = b.plan(&need(100_000, 1000));
        assert!(100_000.0 * 2.0 * MARGIN / plan.parts() as f64 >= MIN_PART_STATES, "{plan:?}");
        let plan = b.plan(&need(1 << 40, 1000));
        assert_eq!(plan.bits, MAX_BITS);
        assert!(b.must_evict(2));
    }

    #[test]
    fn partitions_spread_evenly_and_split_by_bits() {
        for bits in [1, 3, 6] {
            let mut count = vec![0u32; 1 << bits];
            for k in 0..1u64 << 16 {
                // Multiplicative hashes of small keys, as 4-byte keys get.
                count[partition_of(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), bits)] += 1;
            }
            let mean = (1u32 << 16) >> bits;
            assert!(count.iter().all(|&c| c > mean * 9 / 10 && c < mean * 11 / 10), "{bits}: {count:?}");
        }
        assert_eq!(partition_of(u64::MAX, 0), 0);
    }
}

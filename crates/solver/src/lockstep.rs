//! A parallel depth's two phases in one pool call, its work claimed as it goes.
//!
//! Each rayon call of a depth wakes the pool's sleeping threads, which on a virtual machine
//! can cost as much as a small depth's work. So a depth whose next frontier fits the caches, and takes a millisecond or so, is
//! one call instead of three (clear, expand, insert): every thread claims chunks to expand
//! until none is left, waits until the last claimed one is expanded, then claims shards to
//! clear and fill until none is left ([`Phases`]). Nothing is assigned to a thread in advance:
//! a thread that wakes late finds less to do, and the calling thread, if no other ever comes,
//! does it all (it never waits for a thread that has not started).

use std::sync::atomic::{AtomicUsize, Ordering};

/// The claims on one depth's work: `chunks` to expand, then `shards` to fill once every chunk
/// is expanded.
#[derive(Debug)]
pub(crate) struct Phases {
    chunks: usize,
    shards: usize,
    next_chunk: AtomicUsize,
    expanded: AtomicUsize,
    next_shard: AtomicUsize,
}

/// Spins before a waiting thread starts yielding its core.
const SPINS: u32 = 1 << 12;

impl Phases {
    /// `chunks` chunks to expand, then `shards` shards to fill.
    pub(crate) fn new(chunks: usize, shards: usize) -> Self {
        Phases {
            chunks,
            shards,
            next_chunk: AtomicUsize::new(0),
            expanded: AtomicUsize::new(0),
            next_shard: AtomicUsize::new(0),
        }
    }

    /// A chunk for the caller to expand (each is handed out once), or `None` when all are
    /// taken.
    pub(crate) fn claim_chunk(&self) -> Option<usize> {
        claim(&self.next_chunk, self.chunks)
    }

    /// Reports a claimed chunk expanded. True for the last one.
    pub(crate) fn expanded(&self) -> bool {
        // Release: the chunk's records go to whichever thread fills a shard from them.
        self.expanded.fetch_add(1, Ordering::AcqRel) + 1 == self.chunks
    }

    /// Waits until every chunk is expanded (the caller has none left to claim, so the chunks
    /// still out are being expanded by running threads). Everything written while expanding
    /// them is visible to the caller after.
    pub(crate) fn wait_expanded(&self) {
        let mut spins = 0u32;
        // Acquire: pairs with `expanded`'s release.
        while self.expanded.load(Ordering::Acquire) < self.chunks {
            if spins < SPINS {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// A shard for the caller to fill (each is handed out once), or `None` when all are taken.
    /// Only after [`Phases::wait_expanded`].
    pub(crate) fn claim_shard(&self) -> Option<usize> {
        claim(&self.next_shard, self.shards)
    }
}

fn claim(next: &AtomicUsize, n: usize) -> Option<usize> {
    // Relaxed: the counter only hands out distinct numbers; what they stand for is ordered by
    // `expanded` and by the pool's join.
    let i = next.fetch_add(1, Ordering::Relaxed);
    (i < n).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn every_piece_is_claimed_once_and_shards_wait_for_all_chunks() {
        for threads in 1..=4 {
            for (chunks, shards) in [(0, 1), (1, 1), (3, 2), (17, 4), (64, 8)] {
                let phases = Phases::new(chunks, shards);
                let done: Vec<Mutex<u32>> = (0..chunks).map(|_| Mutex::new(0)).collect();
                let filled: Vec<Mutex<u32>> = (0..shards).map(|_| Mutex::new(0)).collect();
                let last = AtomicUsize::new(0);
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| {
                            while let Some(i) = phases.claim_chunk() {
                                *done[i].lock().unwrap() += 1;
                                if phases.expanded() {
                                    last.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            phases.wait_expanded();
                            while let Some(s) = phases.claim_shard() {
                                assert!(done.iter().all(|d| *d.lock().unwrap() == 1));
                                *filled[s].lock().unwrap() += 1;
                            }
                        });
                    }
                });
                assert!(done.iter().chain(&filled).all(|d| *d.lock().unwrap() == 1));
                assert_eq!(last.into_inner(), usize::from(chunks > 0));
            }
        }
    }
}

//! How a depth's source is cut into chunks, and the passes over it that store nothing: the
//! last depth, the last two at once, and the sum of the frontier's hashes.

use std::time::Instant;

use frontier::{CountSet, Tally};
use state::Rules;

use super::pool::{self, for_each_mut};
use super::{stopped, Search};
use crate::dispatch;
use crate::error::Result;
use crate::home;
use crate::kernels::{Chunk, Ctx};
use crate::stats::DepthStats;
use crate::weights::Weights;

/// Slots of the current frontier expanded by one task (in the inline layout, a quarter to a
/// half of them hold positions; in the dense one, all).
pub(super) const CHUNK_SLOTS: usize = 1 << 13;

/// Chunks a thread takes, at least, in a parallel fill or pass (where chunks go to whichever
/// thread is free): the threads end within a chunk of each other, so the last chunk keeps the
/// others waiting for at most about 1/32 of their part of the depth.
pub(super) const PARALLEL_CHUNKS: usize = 32;

/// The fewest slots a chunk of a parallel fill or pass has: each chunk has costs of its own
/// (in a fill, it ends with a partial batch).
pub(super) const PARALLEL_CHUNK_MIN: usize = 1 << 11;

/// Chunks expanded before their records are inserted, in memory (on a frontier partly on disk,
/// the budget bounds the records in flight).
pub(super) const BLOCK_CHUNKS: usize = 1 << 20;

/// Moves the buckets (and their memory) of chunks `from..from + n` to chunks `to..to + n`,
/// dropping what those held.
pub(super) fn pass_buckets<K: Copy, S>(chunks: &mut [Chunk<K, S>], from: usize, to: usize, n: usize) {
    for i in 0..n {
        chunks[to + i].buckets = std::mem::take(&mut chunks[from + i].buckets);
    }
}

/// Moves every chunk's buckets that hold memory to the first chunks, in order: after a depth
/// in blocks, those of its last block and, past a short last block, the rest of the one before.
pub(super) fn gather_buckets<K: Copy, S>(chunks: &mut [Chunk<K, S>]) {
    let mut to = 0;
    for from in 0..chunks.len() {
        if chunks[from].buckets.holds_memory() {
            chunks[to].buckets = std::mem::take(&mut chunks[from].buckets);
            to += 1;
        }
    }
}

/// Bytes a task of [`OnPool`] clears.
pub(super) const ZERO_PIECE: usize = 256 << 10;

/// A [`frontier::Zeroer`] on the thread pool: a table is cleared a piece of [`ZERO_PIECE`]
/// bytes a task, and fresh pages pre-faulted a piece a task, on every thread.
pub(super) struct OnPool;

impl frontier::Zeroer for OnPool {
    fn zero<T: Copy + Send + Sync>(&self, items: &mut [T], zero: T) {
        let per = (ZERO_PIECE / std::mem::size_of::<T>().max(1)).max(1);
        let mut pieces: Vec<&mut [T]> = items.chunks_mut(per).collect();
        for_each_mut(true, &mut pieces, &|_, piece| piece.fill(zero));
    }

    fn each_piece(&self, pieces: usize, f: &(dyn Fn(usize) + Sync)) {
        pool::each_index(pieces, f);
    }
}

/// A kernel of a pass that stores nothing: it sums one chunk's successors into the chunk.
type SumKernel<R, W> = fn(Ctx<'_, R, W>, &mut Chunk<<R as Rules>::Key, <W as Weights>::Sum>);

impl<'r, R: Rules, W: Weights> Search<'r, R, W> {
    /// Lays the current frontier's tables out as chunks, cut also at every `1/shares` of the
    /// slots (of the positions, in the dense layout; about so in the inline one): a pass
    /// spread over `shares` threads then has that many chunks at least, of even sizes, however
    /// small the frontier. Chunks have at most [`CHUNK_SLOTS`] slots; when `takers` threads
    /// take them as they free up (more than one), few enough for [`PARALLEL_CHUNKS`] a thread
    /// (but [`PARALLEL_CHUNK_MIN`] at least), so that the threads end together.
    pub(super) fn plan_chunks(&mut self, shares: usize, takers: usize) {
        let total: usize = self.cur.shards().iter().filter(|s| !s.is_empty()).map(|s| s.slot_count()).sum();
        let most = if takers > 1 {
            (total / (takers * PARALLEL_CHUNKS)).clamp(PARALLEL_CHUNK_MIN, CHUNK_SLOTS)
        } else {
            CHUNK_SLOTS
        };
        let cut = |t: usize| total * t / shares;
        let (mut n, mut base, mut share) = (0, 0, 1);
        for (shard, set) in self.cur.shards().iter().enumerate() {
            if set.is_empty() {
                continue;
            }
            let len = set.slot_count();
            let mut start = 0;
            while start < len {
                // The next cut past `start` (`cut(shares)` is `total`, past every slot).
                while cut(share) <= base + start {
                    share += 1;
                }
                let end = len.min(start + most).min(cut(share) - base);
                if n == self.chunks.len() {
                    self.chunks.push(Chunk::new());
                }
                let c = &mut self.chunks[n];
                (c.shard, c.start, c.end) = (shard, start, end);
                n += 1;
                start = end;
            }
            base += len;
        }
        self.chunks.truncate(n);
    }

    /// Calls `f` on every source of the current depth in turn, in `cur`: the memory home, then
    /// the partitions on disk, loaded one a thread at a time (in parallel, each into a shard
    /// of `cur`; the partitions stay on disk until the depth is done).
    pub(super) fn for_each_source(&mut self, mut f: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        let group = if self.parallel() { rayon::current_num_threads() } else { 1 };
        if !self.cur.is_empty() {
            self.stop_within_depth()?;
            f(self)?;
        }
        let away = std::mem::take(&mut self.away);
        for parts in away.parts.chunks(group) {
            if let Err(e) = self.stop_within_depth() {
                self.away = away;
                return Err(e);
            }
            let bits = parts.len().next_power_of_two().trailing_zeros();
            self.cur.resize_shards(bits);
            let load = |i: usize, set: &mut CountSet<R::Key, W::Count>| {
                set.reset(bits, parts.get(i).map_or(0, |p| p.states as usize));
                parts.get(i).map_or(Ok(0), |p| home::load(p, set))
            };
            let read: Vec<std::io::Result<u64>> = if parts.len() == 1 {
                vec![load(0, self.cur.shard_mut(0))]
            } else {
                pool::map_mut(self.cur.shards_mut(), &load)
            };
            for r in read {
                self.io.0 += r?;
            }
            f(self)?;
        }
        self.away = away;
        Ok(())
    }

    /// The sum over the current frontier (every home) of counts times hashes.
    pub(super) fn frontier_hashes(&mut self) -> W::Sum {
        let parallel = self.parallel();
        self.plan_pass(parallel);
        let (rules, weights, cur) = (self.rules, self.weights, &self.cur);
        for_each_mut(parallel, &mut self.chunks, &|_, c| {
            c.acc = W::Sum::zero();
            for (_, k, n) in c.positions(cur) {
                weights.end(&mut c.acc, &n, &rules.hashes(k));
            }
        });
        self.chunks.iter().fold(self.away_sum, |a, c| a.merge(c.acc))
    }

    /// Chunks for a pass over the current source: in one share a thread when `parallel`
    /// (small frontiers, of a chunk or two, are then still spread), else in one.
    pub(super) fn plan_pass(&mut self, parallel: bool) {
        let threads = if parallel { rayon::current_num_threads() } else { 1 };
        self.plan_chunks(threads, threads);
    }

    /// One pass of `kernel` over the chunks of every source of the current depth (on every
    /// thread when `parallel`), storing nothing; `done` reads each source's chunks after it.
    /// Once the search is cancelled, the chunks left are skipped and the pass returns the
    /// cancellation.
    fn summing_pass(
        &mut self,
        parallel: bool,
        kernel: SumKernel<R, W>,
        mut done: impl FnMut(&[Chunk<R::Key, W::Sum>]),
    ) -> Result<()> {
        self.for_each_source(|s| {
            s.plan_pass(parallel);
            let (x, stop) = (
                Ctx { rules: s.rules, weights: s.weights, cur: &s.cur, count_boards: s.count_boards },
                s.stop(),
            );
            for_each_mut(parallel, &mut s.chunks, &|_, c| {
                if !stopped(&stop) {
                    kernel(x, c);
                }
            });
            s.stop_within_depth()?;
            done(&s.chunks);
            Ok(())
        })
    }

    /// The last depth: every position's successors end their paths.
    pub(super) fn last_depth(&mut self) -> Result<W::Sum> {
        let t = Instant::now();
        let parallel = self.parallel_last();
        let mut sum = W::Sum::zero();
        self.summing_pass(parallel, dispatch::last, |chunks| {
            sum = chunks.iter().fold(sum, |a, c| a.merge(c.acc));
        })?;
        // All expansion (summing successors), no insertion.
        self.phase_seconds = [t.elapsed().as_secs_f64(), 0.0];
        Ok(sum)
    }

    /// The last two depths at once (see [`crate::kernels::last_two`]): each one's statistics
    /// and the hashes of the paths that end there. The pass's time goes to the first (all of
    /// it expansion).
    pub(super) fn last_two(&mut self, done: u32) -> Result<[(DepthStats, W::Sum); 2]> {
        let t = Instant::now();
        let parallel = self.parallel_last();
        let depth = done + 1;
        let mut first = (DepthStats { depth, ..DepthStats::default() }, W::Sum::zero());
        let mut second = (DepthStats { depth: depth + 1, ..DepthStats::default() }, W::Sum::zero());
        self.summing_pass(parallel, dispatch::last_two, |chunks| {
            for c in chunks {
                first.0.records += c.records as u64;
                first.0.ended_paths = first.0.ended_paths.wrapping_add(c.ended_paths);
                first.1 = first.1.merge(c.acc);
                second.1 = second.1.merge(c.beyond);
            }
        })?;
        first.0.seconds = t.elapsed().as_secs_f64();
        first.0.expand_seconds = first.0.seconds;
        Ok([first, second])
    }
}

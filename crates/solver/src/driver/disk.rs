//! Where a search keeps what is not in memory: the scratch directory and the checkpoint, the
//! merge of the partitions on disk, and the eviction of a memory home that outgrew the limit.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use frontier::spill::DiskReserve;
use frontier::{CountSet, Tally};
use state::{Counts, Rules};

use super::{pool, stopped, Search};
use crate::checkpoint::{Checkpoint, Identity, Manifest};
use crate::error::{Error, Result};
use crate::home::{self, Part, Place, Pool, Scratch};
use crate::weights::Weights;

/// Where a run keeps what is not in memory, and what it saves.
#[derive(Debug, Default)]
pub(crate) struct Storage {
    /// The parent of the scratch directory ([`Scratch`]; the system's temporary directory by
    /// default).
    pub work_dir: Option<PathBuf>,
    /// The scratch directory, made when a partition first goes to disk.
    pub scratch: Option<Scratch>,
    /// The checkpoint, when every depth is saved.
    pub checkpoint: Option<Checkpoint>,
    /// What a checkpoint must match.
    pub identity: Option<Identity>,
    /// The free space the scratch files and the checkpoint leave on their disks.
    pub reserve: DiskReserve,
}

impl Storage {
    /// Where the partitions of `depth` on disk go: the checkpoint's depth directory, else the
    /// scratch directory's pool.
    pub(super) fn place(&mut self, depth: u32) -> Result<Place> {
        if let Some(ck) = &self.checkpoint {
            return Ok(Place::Dir(ck.depth_dir(depth)?, self.reserve));
        }
        Ok(Place::Scratch(self.pool()?))
    }

    /// The scratch directory's files (the directory made on first use).
    pub(super) fn pool(&mut self) -> Result<Arc<Pool>> {
        if self.scratch.is_none() {
            self.scratch = Some(Scratch::create(self.work_dir.as_deref(), self.reserve)?);
        }
        Ok(self.scratch.as_ref().expect("made above").pool().clone())
    }
}

impl<'r, R: Rules, W: Weights> Search<'r, R, W> {
    /// With a checkpoint: saves the current frontier (memory home and partitions on disk) as
    /// depth `d` of a run to `target`, with the ended paths' sum `total`.
    pub(super) fn commit(&mut self, d: u32, target: u32, total: &Counts) -> Result<()> {
        let Some(ck) = &mut self.storage.checkpoint else { return Ok(()) };
        let place = Place::Dir(ck.depth_dir(d)?, self.storage.reserve);
        let mut parts = home::write_home(&self.cur, self.bits, &place, true)?;
        self.io.1 += parts.iter().map(|p| p.bytes).sum::<u64>();
        parts.extend(self.away.parts.iter().cloned());
        parts.sort_by_key(|p| p.index);
        let id = self.storage.identity.clone().expect("a checkpoint has an identity");
        let m = Manifest {
            id: Identity { target, ..id },
            depth: d,
            total: *total,
            bits: self.bits,
            growth: self.growth,
            parts,
        };
        ck.commit(&m)?;
        Ok(())
    }

    /// Merges the partitions on disk `parts` (one a worker at a time), each into one file in
    /// `place`: the merged partitions, the sum of counts times hashes over them (with
    /// `--all-depths`, or when boards are counted) and the boards they stand for.
    pub(super) fn merge(&mut self, parts: Vec<Part>, place: &Place) -> Result<(Vec<Part>, W::Sum, u64)> {
        let pool = self.storage.pool()?;
        let (rules, weights, count_boards) = (self.rules, self.weights, self.count_boards);
        let workers = rayon::current_num_threads().min(parts.len()).max(1);
        while self.merge_sets.len() < workers {
            self.merge_sets.push(Mutex::new(CountSet::new(0)));
        }
        let (sync, reserve) = (self.storage.checkpoint.is_some(), place.reserve());
        // Distinct positions per record sent, as at the last depth.
        let distinct = (self.growth / self.fanout.max(1e-9)).clamp(0.01, 1.0);
        let sets = &self.merge_sets;
        let outs: Vec<_> = parts.iter().map(|p| place.file(p.index)).collect();
        let stop = self.stop();
        let depth = self.depth + 1;
        let jobs: Vec<_> = parts.into_iter().zip(outs).collect();
        let merged: Vec<Result<(home::Merged, W::Sum, u64)>> = pool::map(jobs, &|(part, out)| {
            if stopped(&stop) {
                return Err(Error::Cancelled { depth });
            }
            let mine = rayon::current_thread_index().unwrap_or(0) % sets.len();
            let set = &mut *sets[mine].lock().unwrap_or_else(|e| e.into_inner());
            let (mut sum, mut boards) = (W::Sum::zero(), 0u64);
            let expect = (part.states as f64 * distinct * 1.1) as usize + 16;
            let m = home::merge(part, set, expect, (&out, sync, reserve), &pool, |k, n| {
                weights.end(&mut sum, n, &rules.hashes(k));
                if count_boards {
                    boards += weights.boards(rules, k, n);
                }
            })?;
            Ok((m, sum, boards))
        });
        // The sets' memory goes back before the next depth unless the budget lets them stay
        // (it counts them while partitions are merged, and small idle ones beside the source).
        let idle: usize = self.merge_sets.iter_mut().map(|m| m.get_mut().map_or(0, |s| s.bytes())).sum();
        if !self.budget.may_keep(idle as u64) {
            self.merge_sets.clear();
        }
        let (mut parts, mut sum, mut boards) = (Vec::new(), W::Sum::zero(), 0);
        for m in merged {
            let (home::Merged { part, read, written }, s, b) = m?;
            self.io.0 += read;
            self.io.1 += written;
            (sum, boards) = (sum.merge(s), boards + b);
            if part.states > 0 {
                parts.push(part);
            } else {
                place.discard(std::slice::from_ref(&part))?;
            }
        }
        Ok((parts, sum, boards))
    }

    /// When the estimate fell short and the memory home alone passes the limit, it goes to
    /// disk as partitions of depth `depth`. Its positions' hashes join the sum kept for the
    /// partitions there, which is all that the depth's answer (and a last depth's, counting
    /// boards) reads of them.
    pub(super) fn evict_if_over(&mut self, depth: u32) -> Result<()> {
        if !self.budget.must_evict(self.cur.bytes() as u64) {
            return Ok(());
        }
        self.away_sum = self.frontier_hashes();
        let place = self.storage.place(depth)?;
        let written = home::write_home(&self.cur, self.bits, &place, false)?;
        self.io.1 += written.iter().map(|p| p.bytes).sum::<u64>();
        self.away.parts.extend(written);
        self.away.parts.sort_by_key(|p| p.index);
        self.cur.reset(0, 0);
        Ok(())
    }
}

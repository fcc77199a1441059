//! The executors: each carries out one [`Way`] of a depth's plan on the source in `cur`,
//! with the same kernels, into the next memory home (and the depth's outbox).

use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;
use std::time::Instant;

use frontier::Tally;
use state::Rules;

use super::pool::{self, for_each_mut};
use super::{gather_buckets, pass_buckets, post, stopped, Search, BLOCK_CHUNKS, CHUNK_SLOTS};
use crate::dispatch;
use crate::home::{self, Outbox};
use crate::kernels::{Batches, Bucketing, Chunk, Ctx, Deal, OneLock, Owned, Routed, Split};
use crate::plan::{DepthPlan, Way};
use crate::weights::Weights;
use crate::Cancel;

/// What the expansion of one source found besides the successors it stored: the hashes of
/// the paths that ended on full boards, the records made, the paths ended (wrapping).
pub(super) struct Found<S> {
    pub ended: S,
    pub records: usize,
    pub ended_paths: u32,
}

impl<'r, R: Rules, W: Weights> Search<'r, R, W> {
    /// Expands the source in `cur` as `plan` says: returns the hashes of the paths that ended
    /// on full boards and the records generated, adds the paths ended to `ended_paths`.
    pub(super) fn expand_source(
        &mut self,
        plan: &DepthPlan,
        outbox: Option<&Outbox<R::Key, W::Count>>,
        ended_paths: &mut u32,
    ) -> (W::Sum, usize) {
        // A parallel fill's threads take chunks as they free up: small ones end the depth
        // together (the blocks keep full-sized chunks).
        let takers = if plan.way.fill().is_some() { plan.threads } else { 1 };
        self.plan_chunks(1, takers);
        if self.batches.len() < plan.threads {
            self.batches.resize_with(plan.threads, Default::default);
        }
        let t0 = Instant::now();
        let mut found = Found { ended: W::Sum::zero(), records: 0, ended_paths: 0 };
        let stop = self.stop();
        match plan.way {
            Way::Owned => self.run_owned(plan, &stop),
            Way::OneLock => self.run_one_lock(plan, &stop),
            Way::Blocks => self.run_blocks(plan, outbox, &mut found, &stop),
            Way::Direct => self.run_direct(&mut found, &stop),
            Way::Routed => self.run_routed(outbox.expect("a routed depth has an outbox"), &mut found, &stop),
        }
        if stopped(&stop) {
            // Chunks were skipped: what the others found is of no use (the run stops).
            return (W::Sum::zero(), 0);
        }
        if plan.way.fill().is_some() {
            for i in 0..self.chunks.len() {
                found.records += self.chunks[i].records;
                self.gather(i, &mut found);
            }
        }
        if plan.way != Way::Blocks {
            self.phase_seconds[0] += t0.elapsed().as_secs_f64();
        }
        *ended_paths = ended_paths.wrapping_add(found.ended_paths);
        (found.ended, found.records)
    }

    /// Adds what chunk `i` found besides the successors it stored or bucketed to `found`,
    /// and its full boards to the depth's set of them.
    fn gather(&mut self, i: usize, found: &mut Found<W::Sum>) {
        let (rules, weights) = (self.rules, self.weights);
        let c = &self.chunks[i];
        found.ended = found.ended.merge(c.acc);
        found.ended_paths = found.ended_paths.wrapping_add(c.ended_paths);
        let parents = c.parents(&self.cur);
        for r in &c.full {
            self.ended.insert(r.key, &r.counts(rules, weights, parents));
        }
    }

    /// [`Way::Owned`]: every thread expands chunks straight into the shards it owns, and
    /// posts the successors of the others' shards to them ([`Owned`]).
    fn run_owned(&mut self, plan: &DepthPlan, stop: &Option<Cancel>) {
        let (threads, shard_bits, expect) = (plan.threads, plan.shard_bits, plan.expect);
        self.letters.resize_with(threads, Default::default);
        for (me, letters) in self.letters.iter_mut().enumerate() {
            letters.get_mut().unwrap_or_else(|e| e.into_inner()).prepare(1 << shard_bits, me, threads);
        }
        self.mailboxes.prepare(1 << shard_bits);
        let x =
            Ctx { rules: self.rules, weights: self.weights, cur: &self.cur, count_boards: self.count_boards };
        let (post, letters, batches) = (&self.mailboxes, &self.letters, &self.batches);
        let sets: Vec<_> = self.next.shards_mut().iter_mut().map(Mutex::new).collect();
        let dealt = Dealt::new(&mut self.chunks, threads);
        let done = AtomicUsize::new(0);
        pool::on_every_thread(&|me| {
            // Each thread clears the shards it owns: their tables are then in its caches.
            for s in (me..sets.len()).step_by(threads) {
                sets[s].lock().unwrap_or_else(|e| e.into_inner()).reset(shard_bits, expect);
            }
            let letters = &mut *letters[me].lock().unwrap_or_else(|e| e.into_inner());
            let mut sink = Owned::new(&sets, shard_bits, post, letters);
            dealt.expand(me, batches, stop, &mut |c, buffers| dispatch::direct(x, c, &mut sink, buffers));
            sink.finish(&done, threads);
        });
    }

    /// [`Way::OneLock`]: every thread expands chunks straight into the one set, behind one
    /// lock ([`OneLock`]).
    fn run_one_lock(&mut self, plan: &DepthPlan, stop: &Option<Cancel>) {
        self.waiting.resize_with(plan.threads, Default::default);
        let x =
            Ctx { rules: self.rules, weights: self.weights, cur: &self.cur, count_boards: self.count_boards };
        let (waiting, batches) = (&self.waiting, &self.batches);
        let set = Mutex::new(self.next.shard_mut(0));
        let dealt = Dealt::new(&mut self.chunks, plan.threads);
        pool::on_every_thread(&|me| {
            let waiting = &mut *waiting[me].lock().unwrap_or_else(|e| e.into_inner());
            let mut sink = OneLock::new(&set, waiting);
            dealt.expand(me, batches, stop, &mut |c, buffers| dispatch::direct(x, c, &mut sink, buffers));
            sink.finish();
        });
    }

    /// [`Way::Direct`]: on this thread, each chunk's successors straight into the one next
    /// set.
    fn run_direct(&mut self, found: &mut Found<W::Sum>, stop: &Option<Cancel>) {
        let mut buffers = self.take_buffers();
        for i in 0..self.chunks.len() {
            if stopped(stop) {
                break;
            }
            let x = Ctx {
                rules: self.rules,
                weights: self.weights,
                cur: &self.cur,
                count_boards: self.count_boards,
            };
            found.records += dispatch::direct(x, &mut self.chunks[i], self.next.shard_mut(0), &mut buffers);
            self.gather(i, found);
        }
        self.put_buffers(buffers);
    }

    /// [`Way::Routed`]: as direct, but the successors of partitions kept elsewhere go to
    /// `outbox` (with several ranks, its mail goes out as it fills).
    fn run_routed(
        &mut self,
        outbox: &Outbox<R::Key, W::Count>,
        found: &mut Found<W::Sum>,
        stop: &Option<Cancel>,
    ) {
        let remote = self.ranks.n > 1;
        let mail = self.mail_records();
        let mut buffers = self.take_buffers();
        let mut split = Split::default();
        for i in 0..self.chunks.len() {
            if stopped(stop) {
                break;
            }
            let set = self.next.shard_mut(0);
            let mut routed = Routed { set, sender: outbox.sender(), split: &mut split };
            let x = Ctx {
                rules: self.rules,
                weights: self.weights,
                cur: &self.cur,
                count_boards: self.count_boards,
            };
            found.records += dispatch::direct(x, &mut self.chunks[i], &mut routed, &mut buffers);
            // The sender (this thread's writers) goes before the mail is taken.
            drop(routed);
            self.gather(i, found);
            if remote && outbox.mail_len() >= mail {
                post(self.cluster, outbox, &mut self.next, false, &mut self.room);
            }
        }
        self.put_buffers(buffers);
    }

    /// [`Way::Blocks`]: a block of chunks is expanded into records bucketed by the next
    /// frontier's shard, then each shard filled from every chunk's bucket (or its records sent
    /// to the outbox), before the next block: the records in flight (and the memory they
    /// need) stay bounded.
    fn run_blocks(
        &mut self,
        plan: &DepthPlan,
        outbox: Option<&Outbox<R::Key, W::Count>>,
        found: &mut Found<W::Sum>,
        stop: &Option<Cancel>,
    ) {
        let (threads, remote, mail) = (plan.threads, self.ranks.n > 1, self.mail_records());
        // A chunk is a range of table slots, some of them empty: its records are its
        // positions' (`per_slot`).
        let slots: usize = self.cur.shards().iter().map(|s| s.slot_count()).sum();
        let per_slot = self.fanout.max(1.0) * self.cur.len() as f64 / slots.max(1) as f64;
        let bucketing = Bucketing { shard_bits: plan.shard_bits, per_slot };
        let record = std::mem::size_of::<crate::kernels::Record<R::Key>>();
        let per_chunk = (bucketing.room(CHUNK_SLOTS) * record) as f64;
        let mut block =
            ((plan.partitions.records_in_flight as f64 / per_chunk) as usize).clamp(threads, BLOCK_CHUNKS);
        if remote {
            // About a mail's worth of successors a block (a chunk's, at most, go to others).
            block = block.min((mail as f64 / (CHUNK_SLOTS as f64 * per_slot)) as usize).max(threads);
        }
        if self.made.len() < threads {
            self.made.resize_with(threads, Default::default);
        }
        for b in 0..self.chunks.len().div_ceil(block.max(1)) {
            if stopped(stop) {
                break;
            }
            let range = b * block..((b + 1) * block).min(self.chunks.len());
            if b > 0 {
                // The buckets' memory passes from block to block.
                pass_buckets(&mut self.chunks, range.start - block, range.start, range.len());
            }
            let (x, made) = (
                Ctx {
                    rules: self.rules,
                    weights: self.weights,
                    cur: &self.cur,
                    count_boards: self.count_boards,
                },
                &self.made,
            );
            let t0 = Instant::now();
            for_each_mut(true, &mut self.chunks[range.clone()], &|_, c| {
                let me = rayon::current_thread_index().unwrap_or(0);
                let made = &mut *made[me % made.len()].lock().unwrap_or_else(|e| e.into_inner());
                dispatch::expand(x, c, made, bucketing)
            });
            let t1 = Instant::now();
            for i in range.clone() {
                found.records += self.chunks[i].bucketed();
                self.gather(i, found);
            }
            let (x, block_chunks) = (
                Ctx {
                    rules: self.rules,
                    weights: self.weights,
                    cur: &self.cur,
                    count_boards: self.count_boards,
                },
                &self.chunks[range],
            );
            for_each_mut(true, self.next.shards_mut(), &|s, set| {
                dispatch::insert(x, block_chunks, s, set, outbox)
            });
            self.phase_seconds[0] += (t1 - t0).as_secs_f64();
            self.phase_seconds[1] += t1.elapsed().as_secs_f64();
            if let (true, Some(outbox)) = (remote, outbox) {
                if outbox.mail_len() >= mail {
                    post(self.cluster, outbox, &mut self.next, false, &mut self.room);
                }
            }
        }
        // The buckets' memory goes back to the first chunks, where the next depth starts.
        gather_buckets(&mut self.chunks);
    }

    /// The first worker's batch buffers, for a depth on this thread (given back with
    /// [`Search::put_buffers`]: they are kept from depth to depth).
    fn take_buffers(&mut self) -> Batches<R::Key, W::Count> {
        std::mem::take(self.batches[0].get_mut().unwrap_or_else(|e| e.into_inner()))
    }

    fn put_buffers(&mut self, buffers: Batches<R::Key, W::Count>) {
        *self.batches[0].get_mut().unwrap_or_else(|e| e.into_inner()) = buffers;
    }

    /// Records of mail a rank holds before it exchanges them.
    fn mail_records(&self) -> usize {
        self.budget.mail_bytes() / home::mail_record::<R::Key, W::Count>()
    }
}

/// Expands a chunk with a thread's batch buffers into a sink the function holds: returns the
/// successors it stored.
type ExpandChunk<'a, K, S, C> = dyn FnMut(&mut Chunk<K, S>, &mut Batches<K, C>) -> usize + 'a;

/// The chunks of a parallel fill, each behind its own lock, dealt to the threads.
struct Dealt<'c, K: Copy, S> {
    chunks: Vec<Mutex<&'c mut Chunk<K, S>>>,
    deal: Deal,
}

impl<'c, K: Copy, S> Dealt<'c, K, S> {
    /// A chunk first to the thread that filled its source shard (shard `s` by thread
    /// `s % threads`, as at every owned depth): its slots are in that core's caches.
    fn new(chunks: &'c mut [Chunk<K, S>], threads: usize) -> Self {
        let owner: Vec<usize> = chunks.iter().map(|c| c.shard % threads).collect();
        Dealt { deal: Deal::new(&owner, threads), chunks: chunks.iter_mut().map(Mutex::new).collect() }
    }

    /// Thread `me` expands the chunks dealt to it into `sink`, with its own batch buffers;
    /// once `stop` is cancelled, it takes the rest of its chunks without expanding them.
    fn expand<C>(
        &self,
        me: usize,
        batches: &[crate::kernels::Lined<Mutex<Batches<K, C>>>],
        stop: &Option<Cancel>,
        sink: &mut ExpandChunk<'_, K, S, C>,
    ) {
        let buffers = &mut *batches[me % batches.len()].lock().unwrap_or_else(|e| e.into_inner());
        while let Some(i) = self.deal.next(me) {
            if stopped(stop) {
                continue;
            }
            let c = &mut **self.chunks[i].lock().unwrap_or_else(|e| e.into_inner());
            c.records = sink(c, buffers);
        }
    }
}

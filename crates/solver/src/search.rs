//! The per-depth breadth-first search over canonical positions, generic over [`Rules`].
//!
//! One depth, from the current frontier to the next:
//! 1. **expand** (parallel over chunks of the current frontier's slots): every successor of
//!    every position is either full (its hashes, weighted by the parent's counts, go straight
//!    into the chunk's sum) or canonicalised and written as a record `(canonical key, parent,
//!    symmetry)`; a chunk's records are then counting-sorted by the shard of their key.
//! 2. **insert** (parallel over the next frontier's shards): each shard takes its records from
//!    every chunk, in chunk order, permutes the parent's counts by the record's symmetry and
//!    merges them into its hash set. Shards are independent, so no lock is needed.
//!
//! At the last depth nothing is generated: each position adds its counts times the summed
//! hashes of its successors ([`Rules::successor_hashes`]). Chunks and shards depend only on
//! the data, never on the thread count, and wrapping sums commute, so the answer (and every
//! statistic) is the same for any number of threads.

use std::time::Instant;

use frontier::{empty_key, shard_of, Frontier};
use rayon::prelude::*;
use state::{mul_add, Counts, Rules};

use crate::dispatch;

/// Slots of the current frontier expanded by one task.
const CHUNK_SLOTS: usize = 1 << 13;

/// Statistics of one depth of a search.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DepthStats {
    /// The depth (number of moves played).
    pub depth: u32,
    /// Canonical positions stored at this depth (full boards are not stored).
    pub states: u64,
    /// Successor records generated to reach them (one per move, before merging).
    pub records: u64,
    /// Sum of the hashes of all paths ending at this depth (full boards reached at this depth,
    /// plus every position when this is the last depth), modulo 2^30.
    pub ended: u32,
    /// Wall-clock seconds spent on this depth.
    pub seconds: f64,
}

/// One successor: its canonical key, and `parent << 3 | symmetry`, the parent's slot counted
/// from its chunk's start.
#[derive(Clone, Copy, Debug)]
struct Record<K> {
    key: K,
    tag: u32,
}

/// A piece of the current frontier: one shard's slots `start..end`, and what expanding it
/// produced.
#[derive(Debug)]
pub(crate) struct Chunk<K> {
    shard: usize,
    start: usize,
    end: usize,
    records: Vec<Record<K>>,
    sorted: Vec<Record<K>>,
    /// `offsets[s]..offsets[s + 1]`: the records of next shard `s` in `sorted`.
    offsets: Vec<u32>,
    acc: Counts,
}

impl<K> Chunk<K> {
    fn new() -> Self {
        Chunk { shard: 0, start: 0, end: 0, records: Vec::new(), sorted: Vec::new(), offsets: Vec::new(), acc: [0; 8] }
    }
}

/// The search state: two frontiers (current and next) and the chunk buffers, reused from
/// depth to depth.
pub(crate) struct Search<'r, R: Rules> {
    rules: &'r R,
    cur: Frontier<R::Key, 8>,
    next: Frontier<R::Key, 8>,
    chunks: Vec<Chunk<R::Key>>,
    /// Distinct keys per record at the previous depth: sizes the next tables.
    distinct_ratio: f64,
}

/// The result of a search.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// Per-lane sums of every path's final hash.
    pub total: Counts,
    /// `answers[d]`: the answer for depth `d`, when all depths were asked for.
    pub answers: Vec<u32>,
    /// Per-depth statistics, depth 0 first.
    pub stats: Vec<DepthStats>,
}

impl<'r, R: Rules> Search<'r, R> {
    pub(crate) fn new(rules: &'r R) -> Self {
        Search { rules, cur: Frontier::new(0), next: Frontier::new(0), chunks: Vec::new(), distinct_ratio: 1.0 }
    }

    /// Every path of `depth` moves (fewer when the board fills) from `start`.
    pub(crate) fn run(&mut self, start: &[u8], depth: u32, all_depths: bool) -> Outcome {
        let rules = self.rules;
        let t0 = Instant::now();
        let s = rules.pack(start);
        let mut out = Outcome::default();
        let mut ended = [0u32; 8];
        if depth == 0 || rules.is_full(s) {
            // The board itself ends every path.
            ended = rules.hashes(s);
            ended[1..].fill(0);
        } else {
            let (c, t) = rules.canonical(s);
            self.cur.reset(0, 1);
            let mut one = [0u32; 8];
            one[0] = 1;
            self.cur.shard_mut(0).insert(c, &rules.permute(&one, t));
        }
        out.stats.push(DepthStats { depth: 0, states: self.cur.len() as u64, records: 1, ended: state::fold_lanes(&ended), seconds: t0.elapsed().as_secs_f64() });
        add(&mut out.total, &ended);
        if all_depths {
            let mut v = ended;
            if !self.cur.is_empty() {
                add(&mut v, &self.frontier_hashes());
            }
            out.answers.push(state::fold_lanes(&v));
        }
        let mut d = 0;
        while d < depth && !self.cur.is_empty() {
            d += 1;
            let t = Instant::now();
            let (ended, states, records) = if d == depth {
                (self.last_depth(), 0, 0)
            } else {
                self.step()
            };
            add(&mut out.total, &ended);
            if all_depths {
                let here = if d == depth { [0; 8] } else { self.frontier_hashes() };
                let mut v = out.total;
                add(&mut v, &here);
                out.answers.push(state::fold_lanes(&v));
            }
            out.stats.push(DepthStats { depth: d, states, records, ended: state::fold_lanes(&ended), seconds: t.elapsed().as_secs_f64() });
        }
        if all_depths {
            // The board filled before `depth`: later depths add nothing.
            let last = *out.answers.last().expect("depth 0 is always answered");
            out.answers.resize(depth as usize + 1, last);
        }
        out
    }

    /// Lays the current frontier out as chunks of at most [`CHUNK_SLOTS`] slots.
    fn plan_chunks(&mut self) {
        let mut n = 0;
        for (shard, set) in self.cur.shards().iter().enumerate() {
            if set.is_empty() {
                continue;
            }
            let mut start = 0;
            while start < set.capacity() {
                if n == self.chunks.len() {
                    self.chunks.push(Chunk::new());
                }
                let c = &mut self.chunks[n];
                (c.shard, c.start, c.end) = (shard, start, (start + CHUNK_SLOTS).min(set.capacity()));
                start = c.end;
                n += 1;
            }
        }
        self.chunks.truncate(n);
    }

    /// The sum over the current frontier of counts times hashes.
    fn frontier_hashes(&mut self) -> Counts {
        self.plan_chunks();
        let (rules, cur) = (self.rules, &self.cur);
        self.chunks.par_iter_mut().for_each(|c| {
            c.acc = [0; 8];
            let set = &cur.shards()[c.shard];
            for (k, n) in set.slot_keys()[c.start..c.end].iter().zip(&set.slot_counts()[c.start..c.end]) {
                if *k != empty_key::<R::Key>() {
                    mul_add(&mut c.acc, n, &rules.hashes(*k));
                }
            }
        });
        self.chunks.iter().fold([0; 8], |mut a, c| {
            add(&mut a, &c.acc);
            a
        })
    }

    /// The last depth: every position's successors end their paths.
    fn last_depth(&mut self) -> Counts {
        self.plan_chunks();
        let (rules, cur) = (self.rules, &self.cur);
        self.chunks.par_iter_mut().for_each(|c| dispatch::last(rules, cur, c));
        self.chunks.iter().fold([0; 8], |mut a, c| {
            add(&mut a, &c.acc);
            a
        })
    }

    /// One depth that is not the last: returns the hashes of the paths that ended (full
    /// boards), the number of positions of the next frontier and the records generated.
    fn step(&mut self) -> (Counts, u64, u64) {
        self.plan_chunks();
        let shard_bits = shard_bits_for(self.cur.len());
        let (rules, cur) = (self.rules, &self.cur);
        self.chunks.par_iter_mut().for_each(|c| dispatch::expand(rules, cur, c, shard_bits));
        let records: usize = self.chunks.iter().map(|c| c.sorted.len()).sum();
        let per_shard = records as f64 / (1u64 << shard_bits) as f64;
        let expect = (per_shard * self.distinct_ratio * 1.2) as usize + 16;
        self.next.reset(shard_bits, expect);
        let chunks = &self.chunks;
        self.next
            .shards_mut()
            .par_iter_mut()
            .enumerate()
            .for_each(|(s, set)| dispatch::insert(rules, cur, chunks, s, set));
        let states = self.next.len();
        self.distinct_ratio = if records > 0 { (states as f64 / records as f64).max(0.01) } else { 1.0 };
        std::mem::swap(&mut self.cur, &mut self.next);
        let ended = self.chunks.iter().fold([0; 8], |mut a, c| {
            add(&mut a, &c.acc);
            a
        });
        (ended, states as u64, records as u64)
    }
}

/// Shards for a next frontier grown from `len` positions: about a thousand positions a shard
/// (small enough to stay in cache while it is filled), at most 2^12 shards.
fn shard_bits_for(len: usize) -> u32 {
    let mut bits = 0;
    while bits < 12 && (len >> bits) > 512 {
        bits += 1;
    }
    bits
}

fn add(a: &mut Counts, b: &Counts) {
    for g in 0..8 {
        a[g] = a[g].wrapping_add(b[g]);
    }
}

/// Expands one chunk: full successors into `c.acc`, the others as records sorted by shard.
#[inline(always)]
pub(crate) fn expand<R: Rules>(rules: &R, cur: &Frontier<R::Key, 8>, c: &mut Chunk<R::Key>, shard_bits: u32) {
    let set = &cur.shards()[c.shard];
    let keys = &set.slot_keys()[c.start..c.end];
    let counts = &set.slot_counts()[c.start..c.end];
    c.records.clear();
    let mut acc = [0u32; 8];
    let records = &mut c.records;
    for (i, (&k, n)) in keys.iter().zip(counts).enumerate() {
        if k == empty_key::<R::Key>() {
            continue;
        }
        let tag = (i as u32) << 3;
        rules.successors(k, |s| {
            if rules.is_full(s) {
                mul_add(&mut acc, n, &rules.hashes(s));
            } else {
                let (key, t) = rules.canonical(s);
                records.push(Record { key, tag: tag | t as u32 });
            }
        });
    }
    c.acc = acc;
    // Counting sort by shard.
    let shards = 1usize << shard_bits;
    c.offsets.clear();
    c.offsets.resize(shards + 1, 0);
    for r in c.records.iter() {
        c.offsets[shard_of(&r.key, shard_bits) + 1] += 1;
    }
    for s in 0..shards {
        c.offsets[s + 1] += c.offsets[s];
    }
    c.sorted.clear();
    c.sorted.resize(c.records.len(), Record { key: empty_key(), tag: 0 });
    let mut pos: Vec<u32> = c.offsets[..shards].to_vec();
    for r in c.records.iter() {
        let s = shard_of(&r.key, shard_bits);
        c.sorted[pos[s] as usize] = *r;
        pos[s] += 1;
    }
}

/// How far ahead insertion prefetches the table slot of a record.
const PREFETCH_DISTANCE: usize = 8;

/// Fills next shard `s` from every chunk's records for it.
#[inline(always)]
pub(crate) fn insert<R: Rules>(
    rules: &R,
    cur: &Frontier<R::Key, 8>,
    chunks: &[Chunk<R::Key>],
    s: usize,
    set: &mut frontier::CountSet<R::Key, 8>,
) {
    for c in chunks {
        let recs = &c.sorted[c.offsets[s] as usize..c.offsets[s + 1] as usize];
        let parents = &cur.shards()[c.shard].slot_counts()[c.start..c.end];
        for (j, r) in recs.iter().enumerate() {
            if let Some(ahead) = recs.get(j + PREFETCH_DISTANCE) {
                set.prefetch(&ahead.key);
            }
            let n = rules.permute(&parents[(r.tag >> 3) as usize], (r.tag & 7) as u8);
            set.insert(r.key, &n);
        }
    }
}

/// The last depth over one chunk: `c.acc` = Σ counts × summed successor hashes.
#[inline(always)]
pub(crate) fn last<R: Rules>(rules: &R, cur: &Frontier<R::Key, 8>, c: &mut Chunk<R::Key>) {
    let set = &cur.shards()[c.shard];
    let mut acc = [0u32; 8];
    for (&k, n) in set.slot_keys()[c.start..c.end].iter().zip(&set.slot_counts()[c.start..c.end]) {
        if k != empty_key::<R::Key>() {
            mul_add(&mut acc, n, &rules.successor_hashes(k));
        }
    }
    c.acc = acc;
}

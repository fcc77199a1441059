//! The search with its frontiers on disk, for frontiers larger than memory.
//!
//! Each depth's frontier is a set of record files (`frontier::spill`), one per hash
//! partition. A depth streams the current files block by block, expands each block in
//! parallel, and appends every successor (canonical key and permuted counts) to the spill file
//! of its partition; then each partition in turn is merged in memory (one `CountSet` at a
//! time, sized to fit the memory limit) and written out as a file of the next frontier. All
//! I/O is sequential. With a checkpoint directory the frontier files are written there and
//! made durable, and a manifest is switched atomically after every depth, so that a killed run
//! resumes from its last complete depth.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use frontier::spill::{RecordReader, RecordWriter};
use frontier::{shard_of, CountSet};
use rayon::prelude::*;
use state::{mul_add, Board, Counts, Rules};

use crate::search::{add, own_hash, peak_memory, DepthStats, Observer, Outcome, RunConfig};
use crate::weights::{Lanes, Weights};

/// Where and how a disk search runs.
#[derive(Clone, Debug, Default)]
pub(crate) struct DiskConfig {
    /// Bytes of memory the frontier work may use.
    pub memory_limit: u64,
    /// Parent of the scratch directory (default: the system's temporary directory).
    pub work_dir: Option<PathBuf>,
    /// Save each depth's frontier here, atomically.
    pub checkpoint: Option<PathBuf>,
    /// Continue the run saved here.
    pub resume: Option<PathBuf>,
}

/// One disk search: the rules, the problem and how to run it.
pub(crate) struct Job<'a, R> {
    pub rules: &'a R,
    /// Which rules these are (`ring3`, `grid-u64`...): a checkpoint records it.
    pub path: &'a str,
    pub board: &'a Board,
    pub depth: u32,
    pub config: RunConfig,
    pub disk: DiskConfig,
}

/// Positions read and expanded at a time.
const BLOCK: usize = 1 << 13;

/// A scratch directory, removed (with everything in it) when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn create(parent: Option<&Path>) -> Result<ScratchDir> {
        let parent = parent.map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let dir = parent.join(format!("cephalopod-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create work directory {}", dir.display()))?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Everything a checkpoint records besides the frontier files.
#[derive(Clone, Debug, PartialEq)]
struct Manifest {
    version: String,
    rows: usize,
    cols: usize,
    cells: Vec<u8>,
    target: u32,
    depth: u32,
    total: Counts,
    parts: usize,
    states: u64,
    path: String,
}

const MANIFEST_HEADER: &str = "cephalopod-checkpoint 1";

impl Manifest {
    /// The manifest of a run of `board` to `depth` that has played nothing yet.
    fn start(board: &Board, depth: u32, path: &str) -> Manifest {
        let shape = board.shape();
        Manifest {
            version: env!("CARGO_PKG_VERSION").to_string(),
            rows: shape.rows(),
            cols: shape.cols(),
            cells: board.cells().to_vec(),
            target: depth,
            depth: 0,
            total: [0; 8],
            parts: 1,
            states: 0,
            path: path.to_string(),
        }
    }

    fn to_text(&self) -> String {
        let join = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(" ");
        format!(
            "{MANIFEST_HEADER}\nversion {}\npath {}\nshape {}x{}\ncells {}\ntarget {}\ndepth {}\ntotal {}\nparts {}\nstates {}\n",
            self.version,
            self.path,
            self.rows,
            self.cols,
            join(&mut self.cells.iter().map(|c| c.to_string())),
            self.target,
            self.depth,
            join(&mut self.total.iter().map(|c| c.to_string())),
            self.parts,
            self.states
        )
    }

    fn parse(text: &str, file: &Path) -> Result<Manifest> {
        let bad = || anyhow::anyhow!("{}: not a valid checkpoint manifest", file.display());
        let mut lines = text.lines();
        if lines.next() != Some(MANIFEST_HEADER) {
            return Err(bad());
        }
        let mut get = |name: &str| -> Result<String> {
            let line = lines.next().ok_or_else(bad)?;
            line.strip_prefix(name).and_then(|r| r.strip_prefix(' ')).map(str::to_string).ok_or_else(bad)
        };
        let version = get("version")?;
        let path = get("path")?;
        let shape = get("shape")?;
        let (rows, cols) = shape.split_once('x').ok_or_else(bad)?;
        let cells = get("cells")?
            .split_whitespace()
            .map(|c| c.parse().map_err(|_| bad()))
            .collect::<Result<Vec<u8>>>()?;
        let target = get("target")?.parse().map_err(|_| bad())?;
        let depth = get("depth")?.parse().map_err(|_| bad())?;
        let total: Vec<u32> =
            get("total")?.split_whitespace().map(|c| c.parse().map_err(|_| bad())).collect::<Result<_>>()?;
        let parts = get("parts")?.parse().map_err(|_| bad())?;
        let states = get("states")?.parse().map_err(|_| bad())?;
        Ok(Manifest {
            version,
            path,
            rows: rows.parse().map_err(|_| bad())?,
            cols: cols.parse().map_err(|_| bad())?,
            cells,
            target,
            depth,
            total: total.try_into().map_err(|_| bad())?,
            parts,
            states,
        })
    }
}

/// The frontier of one depth on disk.
struct Level {
    dir: PathBuf,
    parts: usize,
    states: u64,
}

impl Level {
    fn file(&self, q: usize) -> PathBuf {
        part_file(&self.dir, q)
    }
}

fn part_file(dir: &Path, q: usize) -> PathBuf {
    dir.join(format!("part-{q:05}.rec"))
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// On failure (when dropped armed): removes the depth directories of a checkpoint that its
/// `current` pointer does not name (a depth being written when the run failed), and a stray
/// `current.tmp`.
struct UncommittedCleanup<'a> {
    checkpoint: Option<&'a Path>,
    armed: bool,
}

impl Drop for UncommittedCleanup<'_> {
    fn drop(&mut self) {
        let Some(ck) = self.checkpoint.filter(|_| self.armed) else { return };
        let current = std::fs::read_to_string(ck.join("current")).unwrap_or_default();
        let _ = std::fs::remove_file(ck.join("current.tmp"));
        if let Ok(entries) = std::fs::read_dir(ck) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if name.starts_with("depth-") && name != current.trim() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
}

/// Runs the search of `board` to `depth` with frontiers on disk.
pub(crate) fn run<R: Rules>(job: &Job<'_, R>, observe: &mut Observer<'_>) -> Result<Outcome> {
    let (rules, path_name, board, depth, config, disk) =
        (job.rules, job.path, job.board, job.depth, job.config, &job.disk);
    let mut cleanup = UncommittedCleanup { checkpoint: disk.checkpoint.as_deref(), armed: true };
    let scratch = ScratchDir::create(disk.work_dir.as_deref())?;
    let mut out = Outcome::default();
    let t0 = Instant::now();
    let shape = board.shape();
    let mut manifest = Manifest::start(board, depth, path_name);
    let frontier_root = disk.checkpoint.clone().unwrap_or_else(|| scratch.0.clone());
    if let Some(ck) = &disk.checkpoint {
        std::fs::create_dir_all(ck)
            .with_context(|| format!("cannot create checkpoint directory {}", ck.display()))?;
    }
    let cur = match &disk.resume {
        Some(dir) => {
            if config.all_depths {
                bail!("--all-depths cannot be combined with --resume (the answers of the depths before the checkpoint are not saved)");
            }
            let file = dir.join("current");
            let name = std::fs::read_to_string(&file).with_context(|| {
                format!("cannot resume: no checkpoint in {} ({} unreadable)", dir.display(), file.display())
            })?;
            let level_dir = dir.join(name.trim());
            let mfile = level_dir.join("manifest");
            let text = std::fs::read_to_string(&mfile)
                .with_context(|| format!("cannot read {}", mfile.display()))?;
            let m = Manifest::parse(&text, &mfile)?;
            if m.version != manifest.version {
                bail!(
                    "checkpoint {} was written by version {}, this is {}",
                    dir.display(),
                    m.version,
                    manifest.version
                );
            }
            if (m.rows, m.cols, &m.cells) != (shape.rows(), shape.cols(), &board.cells().to_vec())
                || m.path != path_name
            {
                bail!(
                    "checkpoint {} is for another board (or solver path); refusing to resume",
                    dir.display()
                );
            }
            if m.target != depth {
                bail!(
                    "checkpoint {} is for depth {}, not {depth}; refusing to resume",
                    dir.display(),
                    m.target
                );
            }
            manifest = m;
            let level = Level { dir: level_dir, parts: manifest.parts, states: manifest.states };
            // Every file must be complete before any work is done.
            for q in 0..level.parts {
                RecordReader::<R::Key, 8>::open(&level.file(q))?;
            }
            level
        }
        None => {
            let s = rules.pack(board.cells());
            let mut ended = [0u32; 8];
            let dir = frontier_root.join("depth-0");
            std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let mut w = RecordWriter::<R::Key, 8>::create(&part_file(&dir, 0), 4096)?;
            if depth == 0 || rules.is_full(s) {
                ended = own_hash(rules, s);
            } else {
                let (c, t) = rules.canonical(s);
                w.push(&c, &Lanes.start(rules, t))?;
            }
            let states = w.records();
            w.finish(disk.checkpoint.is_some())?;
            add(&mut manifest.total, &ended);
            manifest.states = states;
            if disk.checkpoint.is_some() {
                commit_checkpoint(&frontier_root, &dir, &manifest)?;
            }
            let stats = DepthStats {
                depth: 0,
                states,
                records: 1,
                ended: state::fold_lanes(&ended),
                seconds: t0.elapsed().as_secs_f64(),
                peak_memory: peak_memory(),
                ..DepthStats::default()
            };
            observe(&stats);
            out.stats.push(stats);
            Level { dir, parts: 1, states }
        }
    };
    if config.all_depths {
        let mut v = manifest.total;
        add(&mut v, &level_hashes(rules, &cur)?);
        out.answers.push(state::fold_lanes(&v));
    }
    let out = drive(job, observe, &scratch, &frontier_root, manifest, cur, out, 4.0)?;
    cleanup.armed = false;
    Ok(out)
}

/// The depth loop, from the frontier `cur` at depth `manifest.depth`.
#[allow(clippy::too_many_arguments)]
fn drive<R: Rules>(
    job: &Job<'_, R>,
    observe: &mut Observer<'_>,
    scratch: &ScratchDir,
    frontier_root: &Path,
    mut manifest: Manifest,
    mut cur: Level,
    mut out: Outcome,
    mut growth: f64,
) -> Result<Outcome> {
    let (rules, depth, config, disk) = (job.rules, job.depth, job.config, &job.disk);
    // Distinct positions per record, from the last depth merged.
    let mut distinct = 0.5f64;
    // The expanded pieces of a block, their buffers reused from block to block (a fresh one
    // each time would map and unmap memory with some allocators, musl's among them).
    let mut pieces: Vec<Piece<R::Key>> = Vec::new();
    while manifest.depth < depth && cur.states > 0 {
        let d = manifest.depth + 1;
        let t = Instant::now();
        let mut stats = DepthStats { depth: d, ..DepthStats::default() };
        let mut ended = [0u32; 8];
        let mut here = [0u32; 8];
        if d == depth {
            for q in 0..cur.parts {
                stats.bytes_read +=
                    RecordReader::<R::Key, 8>::open(&cur.file(q))?.for_each_block(BLOCK, |recs| {
                        let acc = recs.par_chunks(1024).map(|r| crate::dispatch::disk_last(rules, r)).reduce(
                            || [0; 8],
                            |mut a, b| {
                                add(&mut a, &b);
                                a
                            },
                        );
                        add(&mut ended, &acc);
                        Ok(())
                    })?;
            }
            manifest.states = 0;
            manifest.depth = d;
            add(&mut manifest.total, &ended);
            let next = Level { dir: cur.dir.clone(), parts: cur.parts, states: 0 };
            cur = next;
        } else {
            let bits = partition_bits::<R::Key>(cur.states as f64 * growth, disk.memory_limit);
            let parts = 1usize << bits;
            let spill_dir = scratch.0.join(format!("spill-{d}"));
            std::fs::create_dir_all(&spill_dir)
                .with_context(|| format!("cannot create {}", spill_dir.display()))?;
            let buffer = ((disk.memory_limit / 8) as usize / parts).clamp(4096, 1 << 20);
            let mut writers = (0..parts)
                .map(|q| RecordWriter::<R::Key, 8>::create(&part_file(&spill_dir, q), buffer))
                .collect::<io::Result<Vec<_>>>()?;
            let t_expand = Instant::now();
            for q in 0..cur.parts {
                stats.bytes_read +=
                    RecordReader::<R::Key, 8>::open(&cur.file(q))?.for_each_block(BLOCK, |recs| {
                        let n = recs.len().div_ceil(PIECE);
                        pieces.resize_with(pieces.len().max(n), Piece::default);
                        recs.par_chunks(PIECE)
                            .zip(&mut pieces[..n])
                            .for_each(|(r, p)| crate::dispatch::disk_expand(rules, r, bits, p));
                        for p in &pieces[..n] {
                            add(&mut ended, &p.acc);
                            stats.ended_paths = stats.ended_paths.wrapping_add(p.paths);
                            stats.records += p.records.len() as u64;
                            for (part, key, n) in &p.records {
                                writers[*part as usize].push(key, n)?;
                            }
                        }
                        Ok(())
                    })?;
            }
            for w in writers {
                stats.bytes_written += w.finish(false)?;
            }
            stats.expand_seconds = t_expand.elapsed().as_secs_f64();
            let t_insert = Instant::now();
            let next_dir = frontier_root.join(format!("depth-{d}"));
            let _ = std::fs::remove_dir_all(&next_dir);
            std::fs::create_dir_all(&next_dir)
                .with_context(|| format!("cannot create {}", next_dir.display()))?;
            // Partitions are merged in parallel, one set per worker (partitions are sized so
            // that the workers' sets take half the memory limit), each into its own file.
            let sync = disk.checkpoint.is_some();
            let workers = rayon::current_num_threads().min(parts).max(1);
            let merged: Vec<io::Result<(u64, u64, u64, Counts)>> = (0..workers)
                .into_par_iter()
                .map(|w| {
                    // One set per worker, reused for its partitions w, w + workers, ...
                    let mut set = CountSet::<R::Key, Counts>::new(bits);
                    let mut total = (0, 0, 0, [0u32; 8]);
                    for q in (w..parts).step_by(workers) {
                        let (n, read, written, h) = merge_partition(
                            rules,
                            distinct,
                            &mut set,
                            &part_file(&spill_dir, q),
                            &part_file(&next_dir, q),
                            sync,
                            config.all_depths,
                        )?;
                        total.0 += n;
                        total.1 += read;
                        total.2 += written;
                        add(&mut total.3, &h);
                    }
                    Ok(total)
                })
                .collect();
            let mut states = 0u64;
            for m in merged {
                let (n, read, written, h) = m?;
                states += n;
                stats.bytes_read += read;
                stats.bytes_written += written;
                add(&mut here, &h);
            }
            let _ = std::fs::remove_dir_all(&spill_dir);
            stats.insert_seconds = t_insert.elapsed().as_secs_f64();
            growth = states as f64 / cur.states.max(1) as f64;
            distinct = (states as f64 / stats.records.max(1) as f64).clamp(0.01, 1.0);
            add(&mut manifest.total, &ended);
            manifest.depth = d;
            manifest.parts = parts;
            manifest.states = states;
            stats.states = states;
            let old = std::mem::replace(&mut cur, Level { dir: next_dir, parts, states });
            if disk.checkpoint.is_some() {
                commit_checkpoint(frontier_root, &cur.dir, &manifest)?;
            }
            std::fs::remove_dir_all(&old.dir)
                .with_context(|| format!("cannot remove {}", old.dir.display()))?;
        }
        if config.all_depths {
            let mut v = manifest.total;
            add(&mut v, &here);
            out.answers.push(state::fold_lanes(&v));
        }
        stats.ended = state::fold_lanes(&ended);
        stats.seconds = t.elapsed().as_secs_f64();
        stats.peak_memory = peak_memory();
        observe(&stats);
        out.stats.push(stats);
    }
    if config.all_depths {
        let last = out.answers.last().copied().unwrap_or(state::fold_lanes(&manifest.total));
        out.answers.resize(depth as usize + 1, last);
    }
    out.total = manifest.total;
    Ok(out)
}

/// Continues an in-memory search on disk: `cur` (the frontier of depth `reached`, with the
/// partial sums `total` and what the run has reported so far in `out`) is written out as record
/// files, then the run goes on as a disk search.
pub(crate) fn run_from_memory<R: Rules>(
    job: &Job<'_, R>,
    observe: &mut Observer<'_>,
    cur: frontier::Frontier<R::Key, Counts>,
    reached: u32,
    growth: f64,
    out: Outcome,
) -> Result<Outcome> {
    let scratch = ScratchDir::create(job.disk.work_dir.as_deref())?;
    let dir = scratch.0.join(format!("depth-{reached}"));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let shards = cur.shards();
    for (q, set) in shards.iter().enumerate() {
        let mut w = RecordWriter::<R::Key, 8>::create(&part_file(&dir, q), 1 << 16)?;
        for (k, n) in set.iter() {
            w.push(&k, n)?;
        }
        w.finish(false)?;
    }
    let manifest = Manifest {
        depth: reached,
        total: out.total,
        parts: shards.len(),
        states: cur.len() as u64,
        ..Manifest::start(job.board, job.depth, job.path)
    };
    let level = Level { dir, parts: shards.len(), states: cur.len() as u64 };
    drop(cur); // the memory goes back before the disk search starts
    let root = scratch.0.clone();
    drive(job, observe, &scratch, &root, manifest, level, out, growth)
}

/// Merges one spill file into `set` and writes the set as a frontier file; returns the
/// positions, the bytes read and written, and (when asked) the sum of counts times hashes.
fn merge_partition<R: Rules>(
    rules: &R,
    distinct: f64,
    set: &mut CountSet<R::Key, Counts>,
    spill: &Path,
    out: &Path,
    sync: bool,
    hashes: bool,
) -> io::Result<(u64, u64, u64, Counts)> {
    let reader = RecordReader::<R::Key, 8>::open(spill)?;
    // Sized for the distinct keys expected (the last depth's ratio, with a margin); the set
    // grows if there are more.
    set.clear_for((reader.records() as f64 * distinct * 1.25) as usize + 16);
    let read = reader.for_each_block(BLOCK, |recs| {
        set.insert_many(recs, |r| r.0, |r| r.1);
        Ok(())
    })?;
    std::fs::remove_file(spill)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot remove {}: {e}", spill.display())))?;
    let mut w = RecordWriter::<R::Key, 8>::create(out, 1 << 16)?;
    let mut here = [0u32; 8];
    for (k, n) in set.iter() {
        w.push(&k, n)?;
        if hashes {
            mul_add(&mut here, n, &rules.hashes(k));
        }
    }
    let written = w.finish(sync)?;
    Ok((set.len() as u64, read, written, here))
}

/// The sum of counts times hashes over a frontier on disk.
fn level_hashes<R: Rules>(rules: &R, level: &Level) -> Result<Counts> {
    let mut acc = [0u32; 8];
    for q in 0..level.parts {
        RecordReader::<R::Key, 8>::open(&level.file(q))?.for_each_block(BLOCK, |recs| {
            for (k, n) in recs {
                mul_add(&mut acc, n, &rules.hashes(*k));
            }
            Ok(())
        })?;
    }
    Ok(acc)
}

/// Makes `level_dir` (already written and synced) the checkpoint of `root`: its manifest is
/// written and synced, then the `current` pointer is replaced atomically (write, fsync,
/// rename), then the directory is synced.
fn commit_checkpoint(root: &Path, level_dir: &Path, manifest: &Manifest) -> Result<()> {
    let m = level_dir.join("manifest");
    let write_synced = |path: &Path, text: &str| -> io::Result<()> {
        let mut f = std::fs::File::create(path)?;
        io::Write::write_all(&mut f, text.as_bytes())?;
        f.sync_all()
    };
    write_synced(&m, &manifest.to_text()).with_context(|| format!("cannot write {}", m.display()))?;
    sync_dir(level_dir).with_context(|| format!("cannot sync {}", level_dir.display()))?;
    let tmp = root.join("current.tmp");
    let name = level_dir.file_name().expect("a level directory").to_string_lossy().to_string();
    write_synced(&tmp, &name).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, root.join("current"))
        .with_context(|| format!("cannot update {}", root.display()))?;
    sync_dir(root).with_context(|| format!("cannot sync {}", root.display()))?;
    Ok(())
}

/// Partitions (as a power of two) so that the sets of all workers merging partitions at once
/// take at most half the limit (the rest: I/O buffers, the block being expanded, the program).
fn partition_bits<K>(expected_states: f64, memory_limit: u64) -> u32 {
    // Dense slots (a key and its 8 lanes) plus a table of 4 to 8 u32 slots a key; the arrays
    // are sized (and pre-faulted) for up to twice the keys expected.
    let per_state = (2 * (std::mem::size_of::<frontier::Slot<K, Counts>>() + 8)) as f64;
    let workers = rayon::current_num_threads().max(1) as f64;
    let budget = (memory_limit as f64 / 2.0 / workers).max(1.0);
    let mut bits = 0;
    while bits < 12 && expected_states * per_state / (1u64 << bits) as f64 > budget {
        bits += 1;
    }
    bits
}

/// Positions of a block expanded by one task.
const PIECE: usize = 1024;

/// What expanding a piece of a block produced.
pub(crate) struct Piece<K> {
    records: Vec<(u32, K, Counts)>,
    acc: Counts,
    paths: u32,
}

impl<K> Default for Piece<K> {
    fn default() -> Self {
        Piece { records: Vec::new(), acc: [0; 8], paths: 0 }
    }
}

/// Expands positions into (partition, canonical key, permuted counts) records, in `p` (whose
/// buffers are reused).
#[inline(always)]
pub(crate) fn expand_piece<R: Rules>(
    rules: &R,
    positions: &[(R::Key, Counts)],
    bits: u32,
    p: &mut Piece<R::Key>,
) {
    p.records.clear();
    (p.acc, p.paths) = ([0; 8], 0);
    let mut succ = crate::search::successor_buffer::<R>();
    for (k, n) in positions {
        let k = *k;
        let m = rules.successors_into(k, &mut succ);
        for &s in &succ[..m] {
            if rules.is_full(s) {
                Lanes.end(&mut p.acc, n, &rules.hashes(s));
                p.paths = p.paths.wrapping_add(Lanes.paths(n));
            } else {
                let (key, t) = rules.canonical(s);
                p.records.push((shard_of(&key, bits) as u32, key, rules.permute(n, t)));
            }
        }
    }
}

/// The last depth over a block: Σ counts × summed successor hashes, in parallel.
#[inline(always)]
pub(crate) fn last_block<R: Rules>(rules: &R, positions: &[(R::Key, Counts)]) -> Counts {
    let mut acc = [0u32; 8];
    for (k, n) in positions {
        Lanes.end(&mut acc, n, &rules.successor_hashes(*k));
    }
    acc
}

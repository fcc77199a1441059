//! The homes of a frontier's partitions other than the driver's memory: the disk.
//!
//! A depth's frontier is `2^bits` hash partitions ([`crate::budget::partition_of`]). The
//! partitions the budget keeps in memory are one [`frontier::Frontier`] of the driver (its
//! *memory home*); every other partition lives here, as record files ([`frontier::spill`]):
//!
//! * While a depth is built, the kernels send the successors of partitions kept on disk to the
//!   depth's [`Outbox`] (key and counts, self-contained: no parent to look up later): each
//!   thread appends to files of its own, one a partition.
//! * When the depth is built, each such partition is merged ([`merge`]): its successors are
//!   read into a set (one a worker), counted, and written as one file of distinct positions, a
//!   [`Part`] of the depth's [`Away`] partitions.
//! * The next depth expands each of them in turn: [`load`] reads it into the driver's source
//!   set, and the same kernels run on it as on the memory home.
//!
//! **The third home: another rank.** In a search of several ranks ([`crate::cluster`]), the
//! successors owned by another rank go to the same outbox, into its *mail*: one buffer of
//! records a destination a thread, so that each exchange sends each rank one message (the
//! owner's set adds the counts of a successor sent twice, as it does for its own). The
//! driver takes the mail ([`Outbox::take_mail`]) whenever it passes its bound and at the end
//! of the depth, exchanges it with every other rank, and files what it receives with
//! [`deliver`]: into the memory home, or the outbox's files for the partitions it keeps on
//! disk. So the kernels route a successor the same way whatever home it goes to.
//!
//! Files live in a [`Scratch`] directory of the run (removed when the run ends, and by the
//! next run in the same work directory if the run was killed), or, with a checkpoint, in the
//! checkpoint's depth directory.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytemuck::Pod;
use frontier::spill::{DiskReserve, FileError, RecordReader, RecordWriter, Written};
use frontier::{key_hash, shard_of_hash, CountSet, Frontier, Key, Tally};

use crate::budget::{partition_of, Plan};
use crate::cluster::Ranks;

/// Records read at a time from a file.
const BLOCK: usize = 1 << 13;

/// The prefix of a scratch directory's name (`cephalopod-` and random letters and digits).
const SCRATCH_PREFIX: &str = "cephalopod-";

/// The prefix of a scratch directory's name while it is made, before its run holds its lock:
/// another run's clean-up removes it only if it looks abandoned twice, [`MAKING_RECHECK`]
/// apart.
const MAKING_PREFIX: &str = ".cephalopod-";

/// The file of a scratch directory that its run holds locked while it lives.
const LOCK: &str = "lock";

/// A run's scratch directory: created in the work directory, held by a lock on a file inside
/// it, and removed (with everything in it) when dropped. Creating one also removes the scratch
/// directories of runs that were killed in the same work directory (their lock is free), and
/// nothing else.
#[derive(Debug)]
pub(crate) struct Scratch {
    /// The directory: removed with everything in it when dropped.
    dir: PathBuf,
    /// Held (locked) while the run lives.
    _lock: File,
    /// Its files.
    pool: Arc<Pool>,
}

impl Scratch {
    /// A fresh scratch directory in `work_dir` (the system's temporary directory if `None`),
    /// whose files leave `reserve` free on its disk.
    pub(crate) fn create(work_dir: Option<&Path>, reserve: DiskReserve) -> io::Result<Scratch> {
        // Called before any directory is made: a signal that comes while it is made finds the
        // watch in place (and the directory in `LIVE`, below).
        if let Some(first) = ON_FIRST.get() {
            static CALLED: std::sync::Once = std::sync::Once::new();
            CALLED.call_once(*first);
        }
        let parent = work_dir.map(Path::to_path_buf).unwrap_or_else(std::env::temp_dir);
        std::fs::create_dir_all(&parent).map_err(at("cannot create work directory", &parent))?;
        remove_abandoned(&parent);
        // The directory is made under a name other runs' clean-up leaves alone (for a grace
        // period), and takes its own name only once its lock is held: a run starting beside it
        // (another rank) never sees it unlocked.
        let making = Making::new(&parent).map_err(at("cannot create work directory", &parent))?;
        live().push(making.path().to_path_buf());
        let lock = File::create(making.path().join(LOCK)).and_then(lock_soon).map_err(|e| {
            // `making` removes itself as it drops: it is no longer live.
            live().retain(|d| d != making.path());
            at("cannot lock work directory", making.path())(e)
        })?;
        let name = making.path().file_name().expect("a temporary directory has a name").to_string_lossy();
        let path = parent.join(format!("{SCRATCH_PREFIX}{}", &name[MAKING_PREFIX.len()..]));
        {
            // Renamed with `LIVE` held, so that `remove_live` finds it under one name or the
            // other; owned under its final name from here on (removed when dropped, or by
            // [`remove_live`]).
            let mut live = live();
            live.retain(|d| d != making.path());
            let renamed = std::fs::rename(making.path(), &path);
            if renamed.is_ok() {
                making.keep();
                live.push(path.clone());
            }
            renamed.map_err(at("cannot create work directory", &path))?;
        }
        let pool = Arc::new(Pool {
            dir: path.clone(),
            free: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
            reserve,
        });
        Ok(Scratch { dir: path, _lock: lock, pool })
    }

    /// The directory.
    #[cfg(test)]
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its files.
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        &self.pool
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        live().retain(|d| *d != self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A directory made under a fresh name, removed (with what it holds) when dropped unless it
/// is kept.
struct Making {
    path: PathBuf,
    kept: bool,
}

impl Making {
    /// Tries made before a name is given up on (each name is random: another one is taken
    /// only by a race with a run that chose the same letters).
    const TRIES: usize = 64;

    /// A new directory in `parent` named [`MAKING_PREFIX`] and 12 random letters and digits,
    /// readable only by its owner.
    fn new(parent: &Path) -> io::Result<Making> {
        let mut last = None;
        for _ in 0..Making::TRIES {
            let path = parent.join(format!("{MAKING_PREFIX}{}", random_letters(12)));
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&path) {
                Ok(()) => return Ok(Making { path, kept: false }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free name")))
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the directory in place when dropped.
    fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Making {
    fn drop(&mut self) {
        if !self.kept {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// `n` random ASCII letters and digits: from the standard library's randomly keyed hasher
/// (seeded from the system once a process), over a counter and the time.
fn random_letters(n: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    // Two hashers, each keyed afresh, for 128 bits.
    let word = || {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(call);
        h.write_u128(now.as_nanos());
        h.write_u32(std::process::id());
        u128::from(h.finish())
    };
    let mut bits = word() << 64 | word();
    (0..n)
        .map(|_| {
            let c = LETTERS[(bits % LETTERS.len() as u128) as usize];
            bits /= LETTERS.len() as u128;
            c as char
        })
        .collect()
}

/// The scratch directories alive in this process.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// [`LIVE`], held (a thread that panicked while holding it left a list still valid).
fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// What to call when this process first makes a scratch directory ([`crate::on_first_scratch`]).
pub(crate) static ON_FIRST: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Removes every scratch directory alive in this process (see [`crate::remove_scratch`]).
pub(crate) fn remove_live() {
    for dir in live().drain(..) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The files of a scratch directory, reused from depth to depth: a file that is no longer
/// needed is kept (with its pages) for the next one to overwrite. Making and removing a file
/// a partition a depth costs more than writing it (the file system allocates and frees an
/// inode and every page each time).
#[derive(Debug)]
pub(crate) struct Pool {
    dir: PathBuf,
    /// Files free to overwrite.
    free: Mutex<Vec<PathBuf>>,
    /// Files named so far.
    made: AtomicUsize,
    /// The free space its files leave on their disk.
    reserve: DiskReserve,
}

impl Pool {
    /// A file to write (a free one, else a new name).
    pub(crate) fn file(&self) -> PathBuf {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        free.unwrap_or_else(|| {
            self.dir.join(format!("f-{:06}.rec", self.made.fetch_add(1, Ordering::Relaxed)))
        })
    }

    /// The free space its files leave on their disk.
    pub(crate) fn reserve(&self) -> DiskReserve {
        self.reserve
    }

    /// Takes back files that are no longer needed.
    pub(crate) fn release<'a>(&self, files: impl IntoIterator<Item = &'a PathBuf>) {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).extend(files.into_iter().cloned());
    }
}

/// Where the files of a depth's partitions on disk go.
#[derive(Clone, Debug)]
pub(crate) enum Place {
    /// The scratch directory's [`Pool`].
    Scratch(Arc<Pool>),
    /// A directory of their own (a checkpoint's depth), one file a partition, named by it,
    /// leaving a reserve free on its disk.
    Dir(PathBuf, DiskReserve),
}

impl Place {
    /// The file of partition `q`.
    pub(crate) fn file(&self, q: usize) -> PathBuf {
        match self {
            Place::Scratch(pool) => pool.file(),
            Place::Dir(dir, _) => part_file(dir, q),
        }
    }

    /// The free space its files leave on their disk.
    pub(crate) fn reserve(&self) -> DiskReserve {
        match self {
            Place::Scratch(pool) => pool.reserve(),
            Place::Dir(_, reserve) => *reserve,
        }
    }

    /// Lets go of the files of `parts`, placed here: back to the pool, or removed.
    pub(crate) fn discard(&self, parts: &[Part]) -> io::Result<()> {
        let files = parts.iter().flat_map(|p| &p.files);
        match self {
            Place::Scratch(pool) => pool.release(files),
            Place::Dir(..) => {
                for f in files {
                    std::fs::remove_file(f).map_err(at("cannot remove", f))?;
                }
            }
        }
        Ok(())
    }
}

/// How long apart another run's clean-up looks twice at a scratch directory still being made
/// (its name starts with a dot) before it takes it for abandoned: its run creates the lock
/// file, takes the lock and renames the directory within microseconds of making it.
const MAKING_RECHECK: std::time::Duration = std::time::Duration::from_millis(500);

/// Takes the lock on a scratch directory's fresh lock file, trying again for a while: another
/// run's clean-up may be holding it for a moment to see whether it is free.
fn lock_soon(file: File) -> io::Result<File> {
    for _ in 0..1000 {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) => std::thread::sleep(std::time::Duration::from_millis(1)),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
    Err(io::Error::other("its lock file stays locked"))
}

/// Removes the scratch directories in `parent` whose run is gone: named like ours, holding a
/// lock file that nobody holds. One still named as it is made (a run killed before it took its
/// name) holds nothing but its lock file, or nothing yet: it is removed when it looks so, with
/// a free lock, at two looks [`MAKING_RECHECK`] apart. Anything else (a user's files, a live
/// run's scratch) is left.
fn remove_abandoned(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    let mut making = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let (rest, is_making) = match name.strip_prefix(MAKING_PREFIX) {
            Some(rest) => (rest, true),
            None => match name.strip_prefix(SCRATCH_PREFIX) {
                Some(rest) => (rest, false),
                None => continue,
            },
        };
        if !rest.chars().all(|c| c.is_ascii_alphanumeric()) || !e.path().is_dir() {
            continue;
        }
        if is_making {
            if made_and_left(&e.path()) {
                making.push(e.path());
            }
            continue;
        }
        let Ok(lock) = File::options().write(true).open(e.path().join(LOCK)) else { continue };
        if lock.try_lock().is_ok() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    if making.is_empty() {
        return;
    }
    std::thread::sleep(MAKING_RECHECK);
    for d in making {
        if made_and_left(&d) {
            // Only what a run puts there before it is renamed: anything else stays.
            let _ = std::fs::remove_file(d.join(LOCK));
            let _ = std::fs::remove_dir(&d);
        }
    }
}

/// Whether a scratch directory still being made looks abandoned now: it holds its lock file,
/// which nobody holds, or nothing at all, and nothing else.
fn made_and_left(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    let names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    match &names[..] {
        [] => true,
        [name] if name == LOCK => {
            File::options().write(true).open(dir.join(LOCK)).is_ok_and(|lock| lock.try_lock().is_ok())
        }
        _ => false,
    }
}

/// One partition of a depth on disk: its files (the successors sent to it while the depth is
/// built; one file of distinct positions once merged).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Part {
    /// The partition's index among the depth's `2^bits`.
    pub index: usize,
    /// Its record files.
    pub files: Vec<PathBuf>,
    /// Records in its files: the successors sent to it while the depth is built, its distinct
    /// positions once merged.
    pub states: u64,
    /// Bytes its files take.
    pub bytes: u64,
    /// The checksum each file ends with, in `files` order (see [`frontier::spill::Written`]).
    pub checksums: Vec<u32>,
}

/// The partitions of one depth that live on disk.
#[derive(Clone, Debug, Default)]
pub(crate) struct Away {
    /// Its partitions on disk, by increasing index.
    pub parts: Vec<Part>,
}

impl Away {
    /// Positions on disk.
    pub(crate) fn states(&self) -> u64 {
        self.parts.iter().map(|p| p.states).sum()
    }

    /// Positions of the largest partition.
    pub(crate) fn largest(&self) -> u64 {
        self.parts.iter().map(|p| p.states).max().unwrap_or(0)
    }

    /// True when no partition is on disk.
    pub(crate) fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

/// Where the successors of the partitions kept on disk go while a depth is built (record
/// files, one a partition a writing thread), and those other ranks own (their mail, one
/// buffer of records a rank a thread). Each thread writes its own files and buffers (through
/// a [`Sender`]), so no lock is ever contended and a successor costs one copy into a buffer.
pub(crate) struct Outbox<K: Key, C: Tally> {
    plan: Plan,
    /// Where the files go (none when nothing goes to disk).
    pool: Option<Arc<Pool>>,
    ranks: Ranks,
    /// One set of writers a thread: rayon's worker `i` uses `i`, a thread outside the pool
    /// the last. (A mutex, uncontended, makes any other use safe as well.)
    threads: Vec<Mutex<Writers<K, C>>>,
}

/// One thread's files and mail of an [`Outbox`]: per partition on disk (index - resident), its
/// file, created on its first record; per rank, the successors it owns; the first write error
/// (kernels cannot return one; the driver checks after the depth).
struct Writers<K: Key, C: Tally> {
    files: Vec<Option<(PathBuf, RecordWriter<K, C>)>>,
    mail: Vec<Vec<u8>>,
    error: Option<io::Error>,
}

/// A thread's hold on its writers of an [`Outbox`], for as long as a kernel runs.
pub(crate) struct Sender<'a, K: Key, C: Tally> {
    outbox: &'a Outbox<K, C>,
    writers: std::sync::MutexGuard<'a, Writers<K, C>>,
}

/// [`Outbox::route`]'s answer for a key that goes into the memory home.
pub(crate) const HOME: usize = usize::MAX;

/// The bytes of one record of mail: a key and its counts.
pub(crate) fn mail_record<K, C>() -> usize {
    std::mem::size_of::<K>() + std::mem::size_of::<C>()
}

/// Appends one record of mail (a key, then its counts) to `buf`.
#[inline(always)]
pub(crate) fn put_record<K: Pod, C: Pod>(buf: &mut Vec<u8>, key: &K, counts: &C) {
    buf.extend_from_slice(bytemuck::bytes_of(key));
    buf.extend_from_slice(bytemuck::bytes_of(counts));
}

/// The records of mail in `bytes` ([`put_record`]'s).
pub(crate) fn records<K: Pod, C: Pod>(bytes: &[u8]) -> impl Iterator<Item = (K, C)> + '_ {
    let ks = std::mem::size_of::<K>();
    bytes
        .chunks_exact(mail_record::<K, C>())
        .map(move |r| (bytemuck::pod_read_unaligned(&r[..ks]), bytemuck::pod_read_unaligned(&r[ks..])))
}

impl<K: Key, C: Tally> Outbox<K, C> {
    /// An outbox for the partitions `plan` keeps on disk, their files from `pool`, and for the
    /// successors other ranks own.
    pub(crate) fn new(plan: Plan, pool: Option<Arc<Pool>>, ranks: Ranks) -> Self {
        let away = plan.parts() - plan.resident;
        let threads = (0..rayon::current_num_threads() + 1)
            .map(|_| {
                Mutex::new(Writers {
                    files: (0..away).map(|_| None).collect(),
                    mail: vec![Vec::new(); ranks.n],
                    error: None,
                })
            })
            .collect();
        Outbox { plan, pool, ranks, threads }
    }

    /// Where a key whose hash is `hash` goes, if not into the memory home: its partition, if
    /// kept on disk, or `parts + r` when rank `r` owns it.
    #[inline(always)]
    pub(crate) fn away(&self, hash: u64) -> Option<usize> {
        let to = self.route(hash);
        (to != HOME).then_some(to)
    }

    /// [`Outbox::away`] as one number, [`HOME`] for the memory home, chosen without a branch:
    /// where successors go is a coin toss (half of them to the other of two ranks, say), and a
    /// branch on it would be mispredicted for every other successor.
    #[inline(always)]
    pub(crate) fn route(&self, hash: u64) -> usize {
        let owner = self.ranks.owner(hash);
        let p = partition_of(hash, self.plan.bits);
        let kept = std::hint::select_unpredictable(p >= self.plan.resident, p, HOME);
        std::hint::select_unpredictable(owner != self.ranks.me, self.plan.parts() + owner, kept)
    }

    /// The calling thread's writers.
    pub(crate) fn sender(&self) -> Sender<'_, K, C> {
        let last = self.threads.len() - 1;
        let thread = rayon::current_thread_index().map_or(last, |i| i.min(last));
        let writers = self.threads[thread].lock().unwrap_or_else(|e| e.into_inner());
        Sender { outbox: self, writers }
    }

    /// Records waiting in the mail, over every thread.
    pub(crate) fn mail_len(&self) -> usize {
        let len = |w: &Mutex<Writers<K, C>>| {
            w.lock().unwrap_or_else(|e| e.into_inner()).mail.iter().map(Vec::len).sum::<usize>()
        };
        self.threads.iter().map(len).sum::<usize>() / mail_record::<K, C>()
    }

    /// Takes the mail into `mail` (emptied first): for each rank, the records
    /// ([`mail_record`] bytes each) of the successors it owns, every thread's one after
    /// another.
    pub(crate) fn take_mail(&self, mail: &mut Vec<Vec<u8>>) {
        mail.resize_with(self.ranks.n, Vec::new);
        mail.iter_mut().for_each(Vec::clear);
        for w in &self.threads {
            let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
            for (out, mine) in mail.iter_mut().zip(&mut w.mail) {
                if out.is_empty() {
                    // The first thread's buffer moves out, the emptied one takes its place.
                    std::mem::swap(out, mine);
                } else {
                    out.extend_from_slice(mine);
                    mine.clear();
                }
            }
        }
    }

    /// Finishes every file: the partitions on disk with the files they received (none for a
    /// partition that received nothing), by increasing index. Returns the bytes written too.
    /// The mail must have been taken.
    pub(crate) fn finish(self) -> io::Result<(Vec<Part>, u64)> {
        let away = self.plan.parts() - self.plan.resident;
        let mut parts: Vec<Part> =
            (0..away).map(|i| Part { index: self.plan.resident + i, ..Part::default() }).collect();
        let mut bytes = 0;
        for w in self.threads {
            let w = w.into_inner().unwrap_or_else(|e| e.into_inner());
            debug_assert!(w.mail.iter().all(Vec::is_empty), "the mail was taken");
            if let Some(e) = w.error {
                return Err(e);
            }
            for (part, file) in parts.iter_mut().zip(w.files) {
                if let Some((path, file)) = file {
                    let written = file.finish(false)?;
                    bytes += written.bytes;
                    part.bytes += written.bytes;
                    part.states += written.records;
                    part.files.push(path);
                    part.checksums.push(written.checksum);
                }
            }
        }
        Ok((parts, bytes))
    }
}

impl<K: Key, C: Tally> Sender<'_, K, C> {
    /// Where a key whose hash is `hash` goes ([`Outbox::route`]).
    #[inline(always)]
    pub(crate) fn route(&self, hash: u64) -> usize {
        self.outbox.route(hash)
    }

    /// Sends a successor to `to`, as [`Outbox::away`] gave it: a partition on disk, or a rank.
    #[inline(always)]
    pub(crate) fn push(&mut self, to: usize, key: &K, counts: &C) {
        let parts = self.outbox.plan.parts();
        if to >= parts {
            put_record(&mut self.writers.mail[to - parts], key, counts);
            return;
        }
        if self.writers.error.is_some() {
            // This thread's files have failed (a full disk, its reserve): the depth fails when
            // it ends; meanwhile no more files are made, and no more records pile up in a
            // writer's buffer that can no longer be written.
            return;
        }
        let i = to - self.outbox.plan.resident;
        let result = match &mut self.writers.files[i] {
            Some((_, w)) => w.push(key, counts),
            slot @ None => {
                let pool =
                    self.outbox.pool.as_ref().expect("a plan that keeps partitions on disk has a pool");
                let path = pool.file();
                RecordWriter::create(&path, self.outbox.plan.write_buffer)
                    .and_then(|w| w.keeping(pool.reserve()))
                    .and_then(|w| slot.insert((path, w)).1.push(key, counts))
            }
        };
        if let Err(e) = result {
            self.writers.error.get_or_insert(e);
        }
    }
}

/// Files records another rank sent this one ([`Outbox::take_mail`]'s format): into the
/// memory home `next`, or `outbox`'s files for the partitions kept on disk.
pub(crate) fn deliver<K: Key, C: Tally>(bytes: &[u8], next: &mut Frontier<K, C>, outbox: &Outbox<K, C>) {
    let bits = next.shard_bits();
    let mut sender = None;
    // As the kernels do: each slot is prefetched as its record is read, and a batch goes in
    // once the first of its slots has had time to arrive.
    const BATCH: usize = 256;
    let mut kept: Vec<(u64, K, C)> = Vec::with_capacity(if bits == 0 { BATCH } else { 0 });
    for (key, counts) in records::<K, C>(bytes) {
        let hash = key_hash(&key);
        match outbox.away(hash) {
            Some(to) => {
                debug_assert!(to < outbox.plan.parts(), "a rank receives only what it owns");
                sender.get_or_insert_with(|| outbox.sender()).push(to, &key, &counts);
            }
            None if bits == 0 => {
                let set = next.shard_mut(0);
                set.prefetch_hash(hash);
                kept.push((hash, key, counts));
                if kept.len() == BATCH {
                    set.insert_prefetched(&kept, |r| r.0, |r| r.1, |r| r.2);
                    kept.clear();
                }
            }
            None => next.shard_mut(shard_of_hash(hash, bits)).insert(key, &counts),
        }
    }
    if !kept.is_empty() {
        next.shard_mut(0).insert_prefetched(&kept, |r| r.0, |r| r.1, |r| r.2);
    }
}

/// An I/O error that names what failed and on which path (`cannot write /x/y: No space...`).
pub(crate) fn at<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> io::Error + 'a {
    move |e| FileError::new(what, path, e).into()
}

/// The file of partition `q` in `dir`.
pub(crate) fn part_file(dir: &Path, q: usize) -> PathBuf {
    dir.join(format!("part-{q:05}.rec"))
}

/// Reads every file of `part` into `set` (merging repeated keys); returns the bytes read.
pub(crate) fn load<K: Key, C: Tally>(part: &Part, set: &mut CountSet<K, C>) -> io::Result<u64> {
    let mut read = 0;
    for f in &part.files {
        read += RecordReader::<K, C>::open(f)?.for_each_block(BLOCK, |recs| {
            set.insert_many(recs, |r| r.0, |r| r.1);
            Ok(())
        })?;
    }
    Ok(read)
}

/// What [`merge`] did with one partition.
#[derive(Debug)]
pub(crate) struct Merged {
    /// The partition, its one file of distinct positions.
    pub part: Part,
    /// Bytes read and written.
    pub read: u64,
    /// Bytes written.
    pub written: u64,
}

/// Merges the successors sent to `part` into `set` (emptied first, sized for `expect` keys),
/// calls `each` on every distinct position, writes them as one file `out` (synced when
/// `sync`, leaving `reserve` free on its disk), and gives the files it read back to `pool`.
pub(crate) fn merge<K: Key, C: Tally>(
    part: Part,
    set: &mut CountSet<K, C>,
    expect: usize,
    (out, sync, reserve): (&Path, bool, DiskReserve),
    pool: &Pool,
    mut each: impl FnMut(K, &C),
) -> io::Result<Merged> {
    set.clear_for(expect);
    let read = load(&part, set)?;
    pool.release(&part.files);
    let mut w = RecordWriter::<K, C>::create(out, 1 << 16)?.keeping(reserve)?;
    for (k, n) in set.iter() {
        w.push(&k, &n)?;
        each(k, &n);
    }
    let written = w.finish(sync)?;
    let part = Part {
        index: part.index,
        files: vec![out.to_path_buf()],
        states: set.len() as u64,
        bytes: written.bytes,
        checksums: vec![written.checksum],
    };
    Ok(Merged { part, read, written: written.bytes })
}

/// Writes the memory home `home` as files of partitions (of `2^bits`) in `place`, one a
/// partition that holds a key, synced when `sync`: for a checkpoint, or to free the memory.
pub(crate) fn write_home<K: Key, C: Tally>(
    home: &Frontier<K, C>,
    bits: u32,
    place: &Place,
    sync: bool,
) -> io::Result<Vec<Part>> {
    let mut writers: Vec<Option<(PathBuf, RecordWriter<K, C>)>> = (0..1usize << bits).map(|_| None).collect();
    for set in home.shards() {
        for (k, n) in set.iter() {
            let q = partition_of(key_hash(&k), bits);
            let w = match &mut writers[q] {
                Some((_, w)) => w,
                slot @ None => {
                    let path = place.file(q);
                    let w = RecordWriter::create(&path, 1 << 16)?.keeping(place.reserve())?;
                    &mut slot.insert((path, w)).1
                }
            };
            w.push(&k, &n)?;
        }
    }
    let mut parts = Vec::new();
    for (q, w) in writers.into_iter().enumerate() {
        if let Some((path, w)) = w {
            let Written { bytes, checksum, records } = w.finish(sync)?;
            parts.push(Part {
                index: q,
                files: vec![path],
                states: records,
                bytes,
                checksums: vec![checksum],
            });
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the build's target directory, removed when dropped.
    fn dir(name: &str) -> tempfile::TempDir {
        let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
        tempfile::Builder::new().prefix(&format!("home-{name}-")).tempdir_in(target).unwrap()
    }

    #[test]
    fn scratch_is_removed_when_dropped_and_abandoned_ones_by_the_next_run() {
        let work_tmp = dir("scratch");
        let work = work_tmp.path();
        std::fs::write(work.join("cephalopod-user-file"), "mine").unwrap();
        std::fs::create_dir(work.join("cephalopod-1-2")).unwrap(); // no lock file: not ours
        let a = Scratch::create(Some(work), DiskReserve::None).unwrap();
        let kept = a.dir().to_path_buf();
        // A killed run's scratch: its lock file exists, nobody holds it.
        let dead = work.join("cephalopod-9yQ2xZ");
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(LOCK), "").unwrap();
        std::fs::write(dead.join("part-00000.rec"), "x").unwrap();
        let b = Scratch::create(Some(work), DiskReserve::None).unwrap();
        assert!(!dead.exists(), "the killed run's scratch is removed");
        assert!(kept.exists(), "a live run's scratch is kept");
        assert!(work.join("cephalopod-user-file").exists() && work.join("cephalopod-1-2").exists());
        drop(a);
        drop(b);
        let mut left: Vec<_> = std::fs::read_dir(work).unwrap().flatten().map(|e| e.file_name()).collect();
        left.sort();
        assert_eq!(left, ["cephalopod-1-2", "cephalopod-user-file"]);
        work_tmp.close().unwrap();
    }

    /// A run killed while its scratch still had the name it is made under: removed when it
    /// holds only a free lock file, or nothing; kept while its lock is held (its run is about
    /// to rename it) or when it holds anything else.
    #[test]
    fn scratch_abandoned_while_made_is_removed() {
        let work_tmp = dir("making");
        let work = work_tmp.path();
        let made = |name: &str, lock: bool| {
            let d = work.join(name);
            std::fs::create_dir(&d).unwrap();
            if lock {
                std::fs::write(d.join(LOCK), "").unwrap();
            }
            d
        };
        let free = made(".cephalopod-Ab12cd", true);
        let bare = made(".cephalopod-Ij56kl", false);
        let held = made(".cephalopod-Ef34gh", true);
        let holder = File::options().write(true).open(held.join(LOCK)).unwrap();
        holder.try_lock().unwrap();
        let more = made(".cephalopod-Mn78op", true);
        std::fs::write(more.join("notes"), "a user's").unwrap();
        let other = made(".cephalopod-x-y", true);
        let s = Scratch::create(Some(work), DiskReserve::None).unwrap();
        assert!(!free.exists() && !bare.exists(), "the killed runs' scratch is removed");
        assert!(held.exists() && more.exists() && other.exists());
        drop(s);
        drop(holder);
        work_tmp.close().unwrap();
    }

    #[test]
    fn an_outbox_routes_merges_and_writes_partitions() {
        let d_tmp = dir("outbox");
        let d = d_tmp.path();
        let plan = Plan { bits: 2, resident: 1, write_buffer: 4096, records_in_flight: 0 };
        let scratch = Scratch::create(Some(d), DiskReserve::None).unwrap();
        let outbox = Outbox::<u64, u64>::new(plan, Some(scratch.pool().clone()), Ranks::SOLO);
        let mut want = std::collections::HashMap::new();
        let mut sender = outbox.sender();
        for i in 0..20_000u64 {
            let k = i % 5000;
            if let Some(p) = outbox.away(key_hash(&k)) {
                sender.push(p, &k, &i);
                *want.entry(k).or_insert(0u64) += i;
            }
        }
        drop(sender);
        let (parts, bytes) = outbox.finish().unwrap();
        assert_eq!(parts.iter().map(|p| p.index).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(bytes > 0);
        let mut set = CountSet::<u64, u64>::new(0);
        let mut got = std::collections::HashMap::new();
        for part in parts {
            let out = d.join(format!("merged-{}", part.index));
            let read = part.files.clone();
            let m = merge(part, &mut set, 100, (&out, false, DiskReserve::None), scratch.pool(), |k, n| {
                got.insert(k, *n);
            })
            .unwrap();
            assert_eq!(m.part.states, set.len() as u64);
            // The files read are reused: the next file asked for is one of them.
            assert!(read.contains(&scratch.pool().file()));
        }
        assert_eq!(got, want);
        drop(scratch);
        d_tmp.close().unwrap();
    }

    #[test]
    fn an_outbox_whose_disk_is_down_to_its_reserve_stops_at_its_first_file() {
        let d_tmp = dir("reserve");
        let d = d_tmp.path();
        let plan = Plan { bits: 3, resident: 1, write_buffer: 4096, records_in_flight: 0 };
        let scratch = Scratch::create(Some(d), DiskReserve::Bytes(u64::MAX)).unwrap();
        let outbox = Outbox::<u64, u64>::new(plan, Some(scratch.pool().clone()), Ranks::SOLO);
        let mut sender = outbox.sender();
        for k in 0..20_000u64 {
            if let Some(p) = outbox.away(key_hash(&k)) {
                sender.push(p, &k, &k);
            }
        }
        drop(sender);
        let e = outbox.finish().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
        // The first file was made, then refused: no other was tried.
        let files = std::fs::read_dir(scratch.dir())
            .unwrap()
            .filter(|e| e.as_ref().is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".rec")));
        assert_eq!(files.count(), 1);
        drop(scratch);
        d_tmp.close().unwrap();
    }
}

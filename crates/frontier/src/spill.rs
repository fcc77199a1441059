//! Record files: frontiers and hash-partitioned successors on disk, sequential I/O only.
//!
//! A record is a key and its counts (any plain-data type: `[u32; 8]` lanes, one `u64` mass),
//! stored as their bytes one after the other. A file is a 32-byte header (magic, format
//! version, key size, count size, record count), the records, and a 4-byte checksum of
//! everything before it. Readers check all of it, so a truncated or corrupt file is an error
//! naming the file, never a wrong answer. A writer returns the checksum it wrote
//! ([`Written`]), so that a manifest can pin a file to its exact contents
//! ([`stored_checksum`] reads it back without reading the records).

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use bytemuck::Pod;

const MAGIC: &[u8; 8] = b"CEPHREC\0";
const VERSION: u32 = 3;
const HEADER: usize = 32;
/// Bytes of the checksum that ends a file.
const TRAILER: usize = 4;

/// The checksum record files use (CRC-32, [`crc32fast`]: several bytes a cycle where the CPU
/// has a carry-less multiply), of any bytes: for files that sit beside record files, such as a
/// manifest naming them, too.
pub fn checksum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

fn header(key_size: usize, count_size: usize, records: u64) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(key_size as u32).to_le_bytes());
    h[16..20].copy_from_slice(&(count_size as u32).to_le_bytes());
    h[24..32].copy_from_slice(&records.to_le_bytes());
    h
}

fn with_path(e: io::Error, action: &'static str, path: &Path) -> io::Error {
    FileError::new(action, path, e).into()
}

/// A file's contents that are not what they must be: an `InvalidData` error naming the file.
fn bad_data(path: &Path, why: &str) -> io::Error {
    FileError::new("", path, io::Error::new(io::ErrorKind::InvalidData, why.to_string())).into()
}

/// What failed on a file: the action, the file and the system's error (or, for contents that
/// are not what they must be, an `InvalidData` error saying what is wrong).
///
/// Every error of this module is an [`io::Error`] of its source's kind that carries a
/// `FileError` ([`FileError::of`] finds it) and shows as it does: `cannot write
/// /tmp/f.rec: No space left on device (os error 28)`, or `/tmp/f.rec: truncated`.
///
/// ```
/// use frontier::spill::FileError;
/// use std::io;
///
/// let e: io::Error = FileError::new("cannot write", "/tmp/f.rec", io::ErrorKind::StorageFull.into()).into();
/// assert_eq!(e.kind(), io::ErrorKind::StorageFull);
/// assert_eq!(FileError::of(&e).unwrap().path, std::path::Path::new("/tmp/f.rec"));
/// assert!(e.to_string().starts_with("cannot write /tmp/f.rec: "));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct FileError {
    /// What was being done (`cannot write`), or empty when the file's contents are to blame.
    pub action: &'static str,
    /// The file (or directory).
    pub path: PathBuf,
    /// The system's error, or what is wrong with the contents (`InvalidData`).
    pub source: io::Error,
}

impl FileError {
    /// `action` on `path` failed with `source`.
    pub fn new(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> FileError {
        FileError { action, path: path.into(), source }
    }

    /// The `FileError` that `e` carries, if any.
    pub fn of(e: &io::Error) -> Option<&FileError> {
        e.get_ref().and_then(|inner| inner.downcast_ref::<FileError>())
    }

    /// `e` as a `FileError`: the one it carries, or `Err(e)` when it carries none.
    ///
    /// # Errors
    /// `e` itself, when it carries no `FileError`.
    pub fn take(e: io::Error) -> Result<FileError, io::Error> {
        if FileError::of(&e).is_none() {
            return Err(e);
        }
        let inner = e.into_inner().expect("it carries a FileError");
        Ok(*inner.downcast::<FileError>().expect("it carries a FileError"))
    }
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.action.is_empty() {
            write!(f, "{}: {}", self.path.display(), self.source)
        } else {
            write!(f, "{} {}: {}", self.action, self.path.display(), self.source)
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<FileError> for io::Error {
    /// An error of the source's kind that carries `e` and shows as it does.
    fn from(e: FileError) -> io::Error {
        io::Error::new(e.source.kind(), e)
    }
}

/// Free space that writers leave on the file system they write to, for other programs. Past
/// it, a write fails (`ErrorKind::StorageFull`, a message naming the file, the space free and
/// the reserve) rather than filling the disk, where other programs' writes would fail too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DiskReserve {
    /// No reserve: write until the disk is full.
    None,
    /// The larger of [`DiskReserve::STANDARD_MIN`] and 1/50 of the file system's size, at most
    /// [`DiskReserve::STANDARD_MAX`].
    #[default]
    Standard,
    /// This many bytes.
    Bytes(u64),
}

impl DiskReserve {
    /// The least a [`DiskReserve::Standard`] reserve keeps free: 1 GiB.
    pub const STANDARD_MIN: u64 = 1 << 30;

    /// The most a [`DiskReserve::Standard`] reserve keeps free: 16 GiB.
    pub const STANDARD_MAX: u64 = 16 << 30;

    /// Bytes to keep free on a file system of `size` bytes.
    pub fn keep(self, size: u64) -> u64 {
        match self {
            DiskReserve::None => 0,
            DiskReserve::Standard => (size / 50).clamp(Self::STANDARD_MIN, Self::STANDARD_MAX),
            DiskReserve::Bytes(n) => n,
        }
    }

    /// Checks that the file system holding `dir` has more than the reserve free (for the
    /// file `path` about to grow there, which the message names). Unix only (elsewhere, and
    /// where the system cannot say, it passes).
    ///
    /// # Errors
    /// `ErrorKind::StorageFull` when the free space is at or below the reserve.
    pub fn check(self, dir: &Path, path: &Path) -> io::Result<()> {
        if self == DiskReserve::None {
            return Ok(());
        }
        let Some((free, size)) = space(dir) else { return Ok(()) };
        let keep = self.keep(size);
        if free > keep {
            return Ok(());
        }
        let why = format!(
            "its disk has {} free, and a run leaves {} free for other programs (a larger memory \
             limit keeps more in memory; a work directory or checkpoint on another disk, or a \
             smaller disk reserve, leaves room)",
            gib(free),
            gib(keep)
        );
        Err(with_path(io::Error::new(io::ErrorKind::StorageFull, why), "cannot write", path))
    }
}

/// `bytes` in GiB, for a message.
fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// The bytes free to an unprivileged writer and the size of the file system holding `dir`.
#[cfg(unix)]
fn space(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let dir = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `statvfs` (the struct) is plain C data, for which all-zero bytes are valid.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is a NUL-terminated string and `st` one struct on this stack frame, alive
    // and not otherwise borrowed during the call, which writes only `st`.
    if unsafe { libc::statvfs(dir.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // (The field types differ between systems: `c_ulong` or `fsblkcnt_t`.)
    #[allow(clippy::unnecessary_cast)]
    let (unit, free, blocks) = (st.f_frsize as u64, st.f_bavail as u64, st.f_blocks as u64);
    Some((free.saturating_mul(unit), blocks.saturating_mul(unit)))
}

#[cfg(not(unix))]
fn space(_dir: &Path) -> Option<(u64, u64)> {
    None
}

/// Bytes a [`RecordWriter`] writes between two checks of its [`DiskReserve`]: a system call
/// a megabyte costs nothing beside the writing. Every writer is also checked when it starts
/// ([`RecordWriter::keeping`]), so that many small files are checked too.
const RESERVE_CHECK_BYTES: u64 = 1 << 20;

/// Writes one record file.
#[derive(Debug)]
pub struct RecordWriter<K: Pod, C: Pod> {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    cap: usize,
    sum: crc32fast::Hasher,
    records: u64,
    /// The free space to leave, and bytes written since it was last checked.
    reserve: DiskReserve,
    unchecked: u64,
    _k: PhantomData<(K, C)>,
}

/// What [`RecordWriter::finish`] wrote: the file's size and its checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    /// Bytes the file takes.
    pub bytes: u64,
    /// The checksum stored at its end.
    pub checksum: u32,
    /// Records in it.
    pub records: u64,
}

impl<K: Pod, C: Pod> RecordWriter<K, C> {
    /// Creates `path`, or overwrites it (cut to its new length when finished: a file is
    /// cheaper to reuse than to remove and make again), buffering `buffer` bytes.
    ///
    /// # Errors
    /// When the file cannot be created; the message names it.
    pub fn create(path: &Path, buffer: usize) -> io::Result<Self> {
        let mut file = File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| with_path(e, "cannot create", path))?;
        file.write_all(&[0u8; HEADER]).map_err(|e| with_path(e, "cannot write", path))?;
        let cap = buffer.max(4096);
        Ok(RecordWriter {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(cap),
            cap,
            sum: crc32fast::Hasher::new(),
            records: 0,
            reserve: DiskReserve::None,
            unchecked: 0,
            _k: PhantomData,
        })
    }

    /// The writer, leaving `reserve` free on its disk from now on: checked at once, and again
    /// after every megabyte or so written.
    ///
    /// # Errors
    /// When the disk has no more than the reserve free ([`DiskReserve::check`]).
    pub fn keeping(mut self, reserve: DiskReserve) -> io::Result<Self> {
        self.reserve = reserve;
        self.check_reserve()?;
        Ok(self)
    }

    fn check_reserve(&mut self) -> io::Result<()> {
        self.unchecked = 0;
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        self.reserve.check(dir, &self.path)
    }

    /// Appends one record.
    ///
    /// # Errors
    /// When the write fails (a full disk, say); the message names the file.
    #[inline]
    pub fn push(&mut self, key: &K, counts: &C) -> io::Result<()> {
        self.buf.extend_from_slice(bytemuck::bytes_of(key));
        self.buf.extend_from_slice(bytemuck::bytes_of(counts));
        self.records += 1;
        if self.buf.len() >= self.cap {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.unchecked += self.buf.len() as u64;
        if self.unchecked >= RESERVE_CHECK_BYTES {
            self.check_reserve()?;
        }
        self.sum.update(&self.buf);
        self.file.write_all(&self.buf).map_err(|e| with_path(e, "cannot write", &self.path))?;
        self.buf.clear();
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Writes the checksum and the header, and with `sync` makes the file durable (fsync).
    ///
    /// # Errors
    /// When a write or the sync fails; the message names the file.
    pub fn finish(mut self, sync: bool) -> io::Result<Written> {
        self.flush()?;
        let err = |e| with_path(e, "cannot write", &self.path);
        let h = header(std::mem::size_of::<K>(), std::mem::size_of::<C>(), self.records);
        let mut sum = self.sum.clone();
        sum.update(&h);
        let checksum = sum.finalize();
        self.file.write_all(&checksum.to_le_bytes()).map_err(err)?;
        let bytes = HEADER as u64 + self.records * record_size::<K, C>() as u64 + TRAILER as u64;
        // What an overwritten file held past the new end goes.
        self.file.set_len(bytes).map_err(err)?;
        self.file.seek(SeekFrom::Start(0)).and_then(|_| self.file.write_all(&h)).map_err(err)?;
        if sync {
            self.file.sync_all().map_err(err)?;
        }
        Ok(Written { bytes, checksum, records: self.records })
    }
}

/// Bytes of one record.
pub const fn record_size<K, C>() -> usize {
    std::mem::size_of::<K>() + std::mem::size_of::<C>()
}

/// The checksum stored at the end of the record file `path` (its last 4 bytes), without
/// reading or checking the records: a manifest that names a file with its checksum detects a
/// file replaced by another complete one.
///
/// # Errors
/// A missing or unreadable file, or one shorter than a header; the message names the file.
pub fn stored_checksum(path: &Path) -> io::Result<u32> {
    let mut file = File::open(path).map_err(|e| with_path(e, "cannot open", path))?;
    let len = file.metadata().map_err(|e| with_path(e, "cannot read", path))?.len();
    if len < (HEADER + TRAILER) as u64 {
        return Err(bad_data(path, "truncated"));
    }
    let mut tail = [0u8; TRAILER];
    file.seek(SeekFrom::Start(len - TRAILER as u64))
        .and_then(|_| file.read_exact(&mut tail))
        .map_err(|e| with_path(e, "cannot read", path))?;
    Ok(u32::from_le_bytes(tail))
}

/// Reads one record file, checking its header, length and checksum.
#[derive(Debug)]
pub struct RecordReader<K: Pod, C: Pod> {
    path: PathBuf,
    input: BufReader<File>,
    records: u64,
    header: [u8; HEADER],
    _k: PhantomData<(K, C)>,
}

impl<K: Pod, C: Pod> RecordReader<K, C> {
    /// Opens `path` and checks its header and length.
    ///
    /// # Errors
    /// A missing file, or one that is not a complete record file of this key and count size
    /// (`InvalidData`); the message names the file.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path).map_err(|e| with_path(e, "cannot open", path))?;
        let len = file.metadata().map_err(|e| with_path(e, "cannot read", path))?.len();
        let mut input = BufReader::with_capacity(1 << 16, file);
        let bad = |why: &str| bad_data(path, why);
        let mut h = [0u8; HEADER];
        input.read_exact(&mut h).map_err(|_| bad("truncated (no complete header)"))?;
        if &h[..8] != MAGIC {
            return Err(bad("not a record file"));
        }
        let word = |at: usize| u32::from_le_bytes(h[at..at + 4].try_into().expect("4 bytes"));
        if word(8) != VERSION {
            return Err(bad("written by another format version"));
        }
        if word(12) as usize != std::mem::size_of::<K>() || word(16) as usize != std::mem::size_of::<C>() {
            return Err(bad("records of another key or count size"));
        }
        let records = u64::from_le_bytes(h[24..32].try_into().expect("8 bytes"));
        let want = (HEADER as u64).checked_add(records.saturating_mul(record_size::<K, C>() as u64));
        if want.and_then(|w| w.checked_add(TRAILER as u64)) != Some(len) {
            return Err(bad("truncated or padded (length does not match the header)"));
        }
        Ok(RecordReader { path: path.to_path_buf(), input, records, header: h, _k: PhantomData })
    }

    /// Number of records.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Calls `f` on consecutive blocks of at most `block` records, then checks the checksum.
    /// Returns the bytes read.
    ///
    /// # Errors
    /// A read failure or a checksum mismatch (`InvalidData`), naming the file; `f`'s own
    /// errors are passed through.
    pub fn for_each_block(
        mut self,
        block: usize,
        mut f: impl FnMut(&[(K, C)]) -> io::Result<()>,
    ) -> io::Result<u64> {
        let size = record_size::<K, C>();
        let block = block.max(1);
        let mut bytes = vec![0u8; block * size];
        let mut records = Vec::with_capacity(block);
        let mut sum = crc32fast::Hasher::new();
        let mut left = self.records;
        while left > 0 {
            let n = (left as usize).min(block);
            let buf = &mut bytes[..n * size];
            self.input.read_exact(buf).map_err(|e| with_path(e, "cannot read", &self.path))?;
            sum.update(buf);
            records.clear();
            records.extend(buf.chunks_exact(size).map(|rec| {
                let (k, c) = rec.split_at(std::mem::size_of::<K>());
                (bytemuck::pod_read_unaligned::<K>(k), bytemuck::pod_read_unaligned::<C>(c))
            }));
            f(&records)?;
            left -= n as u64;
        }
        let mut stored = [0u8; TRAILER];
        self.input.read_exact(&mut stored).map_err(|e| with_path(e, "cannot read", &self.path))?;
        sum.update(&self.header);
        if u32::from_le_bytes(stored) != sum.finalize() {
            return Err(bad_data(&self.path, "checksum mismatch (corrupt file)"));
        }
        Ok(HEADER as u64 + self.records * size as u64 + TRAILER as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the build's target directory (tests leave nothing in /tmp),
    /// removed when dropped.
    fn dir() -> tempfile::TempDir {
        let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
        tempfile::Builder::new().prefix("frontier-spill-").tempdir_in(target).unwrap()
    }

    #[test]
    fn roundtrip_and_corruption() {
        let d = dir();
        let p = d.path().join("a.rec");
        let mut w = RecordWriter::<u64, [u32; 3]>::create(&p, 100).unwrap();
        for i in 0..10_007u64 {
            w.push(&(i * 7), &[i as u32, 1, 2]).unwrap();
        }
        let written = w.finish(true).unwrap();
        assert_eq!(written.bytes, std::fs::metadata(&p).unwrap().len());
        assert_eq!(written.records, 10_007);
        assert_eq!(stored_checksum(&p).unwrap(), written.checksum);
        let r = RecordReader::<u64, [u32; 3]>::open(&p).unwrap();
        assert_eq!(r.records(), 10_007);
        let mut seen = 0u64;
        r.for_each_block(1000, |recs| {
            for (k, c) in recs {
                assert_eq!((*k, c[0]), (seen * 7, seen as u32));
                seen += 1;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, 10_007);
        // Wrong key size.
        assert!(RecordReader::<u32, [u32; 3]>::open(&p).is_err());
        // A flipped byte: the checksum catches it.
        let mut raw = std::fs::read(&p).unwrap();
        raw[5000] ^= 1;
        std::fs::write(&p, &raw).unwrap();
        let e = RecordReader::<u64, [u32; 3]>::open(&p).unwrap().for_each_block(64, |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("checksum") && e.to_string().contains("a.rec"), "{e}");
        // Truncated.
        std::fs::write(&p, &raw[..raw.len() - 3]).unwrap();
        let e = RecordReader::<u64, [u32; 3]>::open(&p).unwrap_err();
        assert!(e.to_string().contains("truncated"), "{e}");
        std::fs::write(&p, b"hello").unwrap();
        assert!(RecordReader::<u64, [u32; 3]>::open(&p).is_err());
        // A file overwritten with fewer records is cut to them.
        for n in [500u64, 3] {
            let mut w = RecordWriter::<u64, [u32; 3]>::create(&p, 100).unwrap();
            (0..n).for_each(|i| w.push(&i, &[1, 2, 3]).unwrap());
            let written = w.finish(false).unwrap();
            assert_eq!(written.bytes, std::fs::metadata(&p).unwrap().len());
            let r = RecordReader::<u64, [u32; 3]>::open(&p).unwrap();
            let mut keys = Vec::new();
            r.for_each_block(7, |recs| {
                keys.extend(recs.iter().map(|r| r.0));
                Ok(())
            })
            .unwrap();
            assert_eq!(keys, (0..n).collect::<Vec<_>>());
        }
        d.close().unwrap();
    }

    #[test]
    fn a_writer_stops_at_the_disk_reserve() {
        let d = dir();
        let p = d.path().join("r.rec");
        // No reserve, or none to speak of: the file is written.
        for reserve in [DiskReserve::None, DiskReserve::Bytes(0)] {
            let mut w = RecordWriter::<u64, u64>::create(&p, 4096).unwrap().keeping(reserve).unwrap();
            (0..200_000u64).for_each(|i| w.push(&i, &i).unwrap());
            assert_eq!(w.finish(false).unwrap().records, 200_000);
        }
        // A reserve larger than any disk: refused at once, the message naming the file.
        let e = RecordWriter::<u64, u64>::create(&p, 4096)
            .unwrap()
            .keeping(DiskReserve::Bytes(u64::MAX))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert!(e.to_string().contains("r.rec") && e.to_string().contains("free"), "{e}");
        let file = FileError::of(&e).expect("a file's error carries its path");
        assert_eq!((file.action, file.path.as_path()), ("cannot write", p.as_path()));
        assert_eq!(file.source.kind(), io::ErrorKind::StorageFull);
        // A reserve 4 MiB below the space free now: writing 64 MiB stops on the way, once
        // about 4 MiB are written (the file system may count the pages written a little
        // late).
        #[cfg(unix)]
        {
            let (free, _) = space(d.path()).unwrap();
            let mut w = RecordWriter::<u64, u64>::create(&p, 1 << 16)
                .unwrap()
                .keeping(DiskReserve::Bytes(free - (4 << 20)))
                .unwrap();
            let stopped = (0..4u64 << 20).find_map(|i| w.push(&i, &i).err().map(|e| (i, e)));
            let (at, e) = stopped.expect("the writer stops before the disk's reserve");
            assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
            assert!((2..32).contains(&((at * 16) >> 20)), "stopped after {} bytes", at * 16);
        }
        d.close().unwrap();
    }

    #[test]
    fn the_standard_reserve_is_a_fiftieth_of_the_disk_within_bounds() {
        let gib = 1u64 << 30;
        assert_eq!(DiskReserve::Standard.keep(10 * gib), gib);
        assert_eq!(DiskReserve::Standard.keep(250 * gib), 5 * gib);
        assert_eq!(DiskReserve::Standard.keep(100_000 * gib), 16 * gib);
        assert_eq!(DiskReserve::None.keep(250 * gib), 0);
        assert_eq!(DiskReserve::Bytes(7).keep(250 * gib), 7);
    }
}

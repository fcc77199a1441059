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

fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Writes one record file.
#[derive(Debug)]
pub struct RecordWriter<K: Pod, C: Pod> {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    cap: usize,
    sum: crc32fast::Hasher,
    records: u64,
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
            _k: PhantomData,
        })
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
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("{}: truncated", path.display())));
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
        let bad =
            |why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {why}", path.display()));
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
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: checksum mismatch (corrupt file)", self.path.display()),
            ));
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
}

//! Checkpoints: a run's frontier saved after every depth, so that a killed run resumes.
//!
//! A checkpoint directory is its run's own:
//!
//! ```text
//! DIR/checkpoint            the manifest: the problem, the depth reached, the partial answer,
//!                           every file with its size and checksum; its last line is a
//!                           checksum of the rest
//! DIR/depth-N/part-Q.rec    partition Q of depth N's frontier (a record file, which ends with
//!                           its own checksum over every byte)
//! ```
//!
//! A depth is committed in order: its files are written and synced, the manifest is written
//! to `checkpoint.tmp`, synced and renamed over `checkpoint`, the directory is synced, and only
//! then is the previous depth's directory removed. A killed run leaves at most an uncommitted
//! `depth-*` directory or `checkpoint.tmp`, which the next resume removes.
//!
//! **Invariants.** `--checkpoint` takes only a new or empty directory, and `--resume` only a
//! directory holding a checkpoint of the same problem and nothing else, so no user file is
//! ever overwritten or removed. Every byte of a checkpoint is covered by a checksum the
//! manifest holds (directly, or through a file's own checksum that the manifest repeats): a
//! changed byte is an error naming the file, never a wrong answer.

use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use frontier::spill;
use state::Counts;

use crate::home::{at, Part};

const HEADER: &str = "cephalopod-checkpoint 2";
const MANIFEST: &str = "checkpoint";
const MANIFEST_TMP: &str = "checkpoint.tmp";

/// What a checkpoint must match to be resumed: the problem and how it is counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Identity {
    /// The solver's version.
    pub version: String,
    /// The rules (`ring3`, `grid-u64`...).
    pub path: String,
    /// How paths are counted (`lanes`, `orbits`, `lanes, no symmetry`).
    pub weights: String,
    /// Bytes of a key and of its counts in the files.
    pub record: (usize, usize),
    /// Rows and columns.
    pub shape: (usize, usize),
    /// The start board's cells.
    pub cells: Vec<u8>,
    /// The depth asked for.
    pub target: u32,
}

/// A committed depth: the problem, how far it got, and its frontier's files.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Manifest {
    pub id: Identity,
    /// The depth whose frontier the files hold.
    pub depth: u32,
    /// The lanes of the hashes of every path ended so far.
    pub total: Counts,
    /// The frontier's partition bits.
    pub bits: u32,
    /// Positions of the last depth per position of the one before.
    pub growth: f64,
    /// The frontier's partitions (file paths relative to the checkpoint directory).
    pub parts: Vec<Part>,
}

/// A run's checkpoint directory.
#[derive(Debug)]
pub(crate) struct Checkpoint {
    dir: PathBuf,
    /// The depth directory the manifest names.
    committed: Option<String>,
}

fn depth_name(depth: u32) -> String {
    format!("depth-{depth}")
}

impl Checkpoint {
    /// Takes `dir` for a new checkpoint: it must not exist or be empty.
    pub(crate) fn create(dir: &Path) -> Result<Checkpoint> {
        if let Some(first) = entries(dir)?.first() {
            bail!(
                "--checkpoint {}: the directory is not empty (it holds `{first}`); a checkpoint needs a new or empty directory of its own (to continue the checkpoint in it, use --resume {})",
                dir.display(),
                dir.display()
            );
        }
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create checkpoint directory {}", dir.display()))?;
        Ok(Checkpoint { dir: dir.to_path_buf(), committed: None })
    }

    /// Opens the checkpoint in `dir` for a run of `id`: checks the manifest's checksum, that it
    /// is this problem's, and every file it names (size and checksum); removes what a killed
    /// run left uncommitted. Returns the checkpoint (to go on committing into) and its
    /// manifest, whose part files are made absolute.
    pub(crate) fn resume(dir: &Path, id: &Identity) -> Result<(Checkpoint, Manifest)> {
        let file = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&file).map_err(|e| {
            anyhow::anyhow!("cannot resume: no checkpoint in {} ({}: {e})", dir.display(), file.display())
        })?;
        let mut m = Manifest::parse(&text)
            .with_context(|| format!("{}: not a valid checkpoint manifest", file.display()))?;
        let what = |field: &str, theirs: &dyn std::fmt::Debug, ours: &dyn std::fmt::Debug| {
            anyhow::anyhow!(
                "checkpoint {} is for {field} {theirs:?}, not {ours:?}; refusing to resume",
                dir.display()
            )
        };
        if m.id.version != id.version {
            return Err(what("version", &m.id.version, &id.version));
        }
        if (m.id.shape, &m.id.cells, &m.id.path) != (id.shape, &id.cells, &id.path) {
            bail!("checkpoint {} is for another board (or solver path); refusing to resume", dir.display());
        }
        if m.id.target != id.target {
            bail!(
                "checkpoint {} is for depth {}, not {}; refusing to resume",
                dir.display(),
                m.id.target,
                id.target
            );
        }
        if m.id != *id {
            return Err(what("counting", &m.id.weights, &id.weights));
        }
        let current = depth_name(m.depth);
        for name in entries(dir)? {
            if name == MANIFEST || name == current {
                continue;
            }
            let ours = name == MANIFEST_TMP
                || name
                    .strip_prefix("depth-")
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if !ours {
                bail!(
                    "checkpoint {} holds `{name}`, which is not part of the checkpoint; refusing to resume",
                    dir.display()
                );
            }
            let path = dir.join(&name);
            let removed =
                if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
            removed.with_context(|| format!("cannot remove {}", path.display()))?;
        }
        for part in &mut m.parts {
            for (f, &sum) in part.files.iter_mut().zip(&part.checksums) {
                *f = dir.join(&*f);
                let stored = spill::stored_checksum(f)?;
                if stored != sum {
                    bail!("{}: checksum mismatch with the manifest (changed or corrupt)", f.display());
                }
            }
            let bytes: u64 = part.files.iter().map(|f| std::fs::metadata(f).map_or(0, |m| m.len())).sum();
            if bytes != part.bytes {
                bail!(
                    "{}: size differs from the manifest (changed or corrupt)",
                    dir.join(&current).display()
                );
            }
        }
        let ck = Checkpoint { dir: dir.to_path_buf(), committed: Some(current) };
        Ok((ck, m))
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The directory for the files of `depth` (a killed run's uncommitted one was removed when
    /// the checkpoint was resumed).
    pub(crate) fn depth_dir(&self, depth: u32) -> io::Result<PathBuf> {
        let d = self.dir.join(depth_name(depth));
        std::fs::create_dir_all(&d).map_err(at("cannot create", &d))?;
        Ok(d)
    }

    /// Makes `m` the checkpoint: its depth's files (in [`Checkpoint::depth_dir`], written and
    /// synced) are named by a new manifest, swapped in atomically; then the previous depth's
    /// directory is removed.
    pub(crate) fn commit(&mut self, m: &Manifest) -> io::Result<()> {
        let name = depth_name(m.depth);
        let depth_dir = self.depth_dir(m.depth)?;
        sync_dir(&depth_dir)?;
        let text = m.to_text(&self.dir);
        let tmp = self.dir.join(MANIFEST_TMP);
        let mut f = std::fs::File::create(&tmp).map_err(at("cannot write", &tmp))?;
        f.write_all(text.as_bytes()).and_then(|_| f.sync_all()).map_err(at("cannot write", &tmp))?;
        let manifest = self.dir.join(MANIFEST);
        std::fs::rename(&tmp, &manifest).map_err(at("cannot write", &manifest))?;
        sync_dir(&self.dir)?;
        if let Some(old) = self.committed.replace(name.clone()) {
            if old != name {
                let old = self.dir.join(old);
                std::fs::remove_dir_all(&old).map_err(at("cannot remove", &old))?;
            }
        }
        Ok(())
    }

    /// Bytes the checkpoint takes on disk.
    pub(crate) fn bytes(&self) -> u64 {
        fn size(p: &Path) -> u64 {
            match std::fs::read_dir(p) {
                Ok(rd) => rd.flatten().map(|e| size(&e.path())).sum(),
                Err(_) => std::fs::metadata(p).map_or(0, |m| m.len()),
            }
        }
        size(&self.dir)
    }
}

impl Drop for Checkpoint {
    /// Removes what the run wrote and did not commit (a depth being written when it failed):
    /// after a successful run, nothing.
    fn drop(&mut self) {
        for name in entries(&self.dir).unwrap_or_default() {
            if name.starts_with("depth-") && self.committed.as_deref() != Some(&name) || name == MANIFEST_TMP
            {
                let p = self.dir.join(&name);
                let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
            }
        }
    }
}

/// The names in `dir` (none when it does not exist), sorted.
fn entries(dir: &Path) -> Result<Vec<String>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut v: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    Ok(v)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(at("cannot sync", dir))
}

impl Manifest {
    /// The manifest's text, part files relative to `root`, ending with a checksum line.
    fn to_text(&self, root: &Path) -> String {
        let id = &self.id;
        let join = |v: &mut dyn Iterator<Item = String>| v.collect::<Vec<_>>().join(" ");
        let mut t = format!(
            "{HEADER}\nversion {}\npath {}\nweights {}\nrecord {} {}\nshape {} {}\ncells {}\ntarget {}\ndepth {}\ntotal {}\nbits {}\ngrowth {}\nparts {}\n",
            id.version,
            id.path,
            id.weights,
            id.record.0,
            id.record.1,
            id.shape.0,
            id.shape.1,
            join(&mut id.cells.iter().map(u8::to_string)),
            id.target,
            self.depth,
            join(&mut self.total.iter().map(u32::to_string)),
            self.bits,
            self.growth.to_bits(),
            self.parts.len()
        );
        for p in &self.parts {
            let files = p
                .files
                .iter()
                .zip(&p.checksums)
                .map(|(f, c)| format!("{} {c:08x}", f.strip_prefix(root).unwrap_or(f).display()));
            let _ = writeln!(t, "part {} {} {} {}", p.index, p.states, p.bytes, join(&mut files.into_iter()));
        }
        let sum = spill::checksum(t.as_bytes());
        let _ = writeln!(t, "checksum {sum:08x}");
        t
    }

    fn parse(text: &str) -> Result<Manifest> {
        let body_end = text.trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
        let (body, last) = text.split_at(body_end);
        let stored = last.trim().strip_prefix("checksum ").context("no checksum line")?;
        if u32::from_str_radix(stored, 16).ok() != Some(spill::checksum(body.as_bytes())) {
            bail!("checksum mismatch (changed or corrupt)");
        }
        let mut lines = body.lines();
        if lines.next() != Some(HEADER) {
            bail!("not a checkpoint manifest of this format");
        }
        let mut get = |name: &str| -> Result<Vec<String>> {
            let line = lines.next().with_context(|| format!("no `{name}` line"))?;
            let rest = line
                .strip_prefix(name)
                .and_then(|r| r.strip_prefix(' '))
                .with_context(|| format!("no `{name}` line"))?;
            Ok(rest.split(' ').map(str::to_string).collect())
        };
        fn num<T: std::str::FromStr>(s: &str) -> Result<T> {
            s.parse().ok().with_context(|| format!("`{s}` is not a number"))
        }
        let nums = |v: Vec<String>| -> Result<Vec<u64>> { v.iter().map(|s| num(s)).collect() };
        let version = get("version")?.join(" ");
        let path = get("path")?.join(" ");
        let weights = get("weights")?.join(" ");
        let record = nums(get("record")?)?;
        let shape = nums(get("shape")?)?;
        let cells = nums(get("cells")?)?;
        let target = num(&get("target")?[0])?;
        let depth = num(&get("depth")?[0])?;
        let total: Vec<u32> = get("total")?.iter().map(|s| num(s)).collect::<Result<_>>()?;
        let bits = num(&get("bits")?[0])?;
        let growth = f64::from_bits(num(&get("growth")?[0])?);
        let count: usize = num(&get("parts")?[0])?;
        let mut parts = Vec::with_capacity(count.min(1 << 16));
        for _ in 0..count {
            let f = get("part")?;
            if f.len() < 3 || f.len().is_multiple_of(2) {
                bail!("a malformed `part` line");
            }
            let files = f[3..].chunks(2).map(|c| PathBuf::from(&c[0])).collect();
            let checksums = f[3..]
                .chunks(2)
                .map(|c| u32::from_str_radix(&c[1], 16).context("a malformed checksum"))
                .collect::<Result<_>>()?;
            parts.push(Part {
                index: num(&f[0])?,
                states: num(&f[1])?,
                bytes: num(&f[2])?,
                files,
                checksums,
            });
        }
        if record.len() != 2 || shape.len() != 2 || total.len() != 8 || lines.next().is_some() {
            bail!("malformed");
        }
        let id = Identity {
            version,
            path,
            weights,
            record: (record[0] as usize, record[1] as usize),
            shape: (shape[0] as usize, shape[1] as usize),
            cells: cells.iter().map(|&c| c as u8).collect(),
            target,
        };
        Ok(Manifest { id, depth, total: total.try_into().expect("8 lanes"), bits, growth, parts })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(root: &Path) -> Manifest {
        Manifest {
            id: Identity {
                version: "0.1.0".into(),
                path: "ring3".into(),
                weights: "orbits".into(),
                record: (4, 8),
                shape: (3, 3),
                cells: vec![0; 9],
                target: 40,
            },
            depth: 12,
            total: [1, 2, 3, 4, 5, 6, 7, u32::MAX],
            bits: 2,
            growth: 1.37,
            parts: vec![Part {
                index: 3,
                files: vec![root.join("depth-12/part-00003.rec")],
                states: 99,
                bytes: 1228,
                checksums: vec![0xdead_beef],
            }],
        }
    }

    #[test]
    fn a_manifest_reads_back_and_any_changed_byte_is_refused() {
        let root = Path::new("/ck");
        let m = manifest(root);
        let text = m.to_text(root);
        let back = Manifest::parse(&text).unwrap();
        let mut want = m.clone();
        want.parts[0].files[0] = PathBuf::from("depth-12/part-00003.rec");
        assert_eq!(back, want);
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            for flip in [1u8, 0x10] {
                let mut b = bytes.to_vec();
                b[i] ^= flip;
                let Ok(t) = String::from_utf8(b) else { continue };
                // Only a change that keeps the meaning may pass (white space after the checksum).
                if let Ok(parsed) = Manifest::parse(&t) {
                    assert_eq!(parsed, back, "byte {i} changed the manifest's meaning and still parsed");
                }
            }
        }
    }
}

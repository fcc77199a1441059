//! Checkpoints: a run's frontier saved after every depth, so that a killed run resumes.
//!
//! A checkpoint directory is its run's own:
//!
//! ```text
//! DIR/checkpoint            the manifest (TOML): the problem, the depth reached, the partial
//!                           answer, every file with its size and checksum; its first line
//!                           is a checksum of the rest
//! DIR/depth-N/part-Q.rec    partition Q of depth N's frontier (a record file, which ends with
//!                           its own checksum over every byte)
//! ```
//!
//! A search of several ranks ([`crate::cluster`]) checkpoints into one directory: rank 0
//! takes it (new or empty) and writes `DIR/cluster`, which names the number of ranks; each
//! rank `R` keeps a checkpoint of its own partitions, as above, in `DIR/rank-R`, whose
//! manifest names the rank and the number of ranks. A resume needs as many ranks.
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

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use frontier::spill;
use serde::{Deserialize, Serialize};
use state::Counts;

use crate::cluster::{self, Cluster, Ranks};
use crate::error::{CheckpointErrorKind as Kind, Error, Result};
use crate::home::{at, Part};

/// The manifest's format; a manifest of another format is refused.
const FORMAT: u32 = 3;
const MANIFEST: &str = "checkpoint";
const MANIFEST_TMP: &str = "checkpoint.tmp";
/// The file of a checkpoint of several ranks that names their number.
const CLUSTER: &str = "cluster";

/// The text of a [`CLUSTER`] file for `n` ranks.
fn cluster_text(n: usize) -> String {
    format!("# a checkpoint of {n} ranks: resume it with as many (mpirun -np {n} solver --mpi --resume DIR)\nranks = {n}\n")
}

/// In a search of several ranks: the directory of this rank's checkpoint within `dir`, once
/// rank 0 has taken `dir` (for a new checkpoint: new or empty, then holding a [`CLUSTER`]
/// file; to resume: its [`CLUSTER`] file names as many ranks). Collective: when rank 0
/// refuses, every rank returns an error.
pub(crate) fn rank_dir(dir: &Path, cluster: &dyn Cluster, resume: bool) -> Result<PathBuf> {
    let Ranks { me, n } = Ranks::of(cluster);
    let file = dir.join(CLUSTER);
    let mine = match (me, resume) {
        (0, false) => Checkpoint::create(dir).and_then(|_| {
            std::fs::write(&file, cluster_text(n)).map_err(|e| Error::io("cannot write", &file, e))
        }),
        (0, true) => match std::fs::read_to_string(&file) {
            Ok(text) if text == cluster_text(n) => Ok(()),
            Ok(text) => match (1..=1 << 20).find(|&m| text == cluster_text(m)) {
                Some(m) => Err(Error::checkpoint(
                    Kind::OtherRanks,
                    dir,
                    format!(
                        "checkpoint {} was made by {m} ranks, not {n}: resume it with {m} (mpirun -np {m})",
                        dir.display()
                    ),
                )),
                None => Err(Error::corrupt(dir, &file, "not a valid cluster manifest")),
            },
            Err(e) => Err(Error::checkpoint(
                Kind::Missing,
                dir,
                format!(
                    "cannot resume: no checkpoint of several ranks in {} ({}: {e})",
                    dir.display(),
                    file.display()
                ),
            )),
        },
        _ => Ok(()),
    };
    cluster::agree(cluster, mine)?;
    Ok(dir.join(format!("rank-{me:04}")))
}

/// For one process: refuses a directory that holds a checkpoint of several ranks.
pub(crate) fn refuse_cluster(dir: &Path) -> Result<()> {
    let file = dir.join(CLUSTER);
    if file.exists() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let message = format!(
            "checkpoint {} is a checkpoint of several ranks ({}); resume it with mpirun and --mpi",
            dir.display(),
            text.lines().last().unwrap_or("?")
        );
        return Err(Error::checkpoint(Kind::OtherRanks, dir, message));
    }
    Ok(())
}

/// What a checkpoint must match to be resumed: the problem and how it is counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// In a search of several ranks: this rank and the number of ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranks: Option<(usize, usize)>,
}

/// A committed depth: the problem, how far it got, and its frontier's files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
            let message = format!(
                "--checkpoint {}: the directory is not empty (it holds `{first}`); a checkpoint needs a new or empty directory of its own (to continue the checkpoint in it, use --resume {})",
                dir.display(),
                dir.display()
            );
            return Err(Error::checkpoint(Kind::NotEmpty, dir, message));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io("cannot create checkpoint directory", dir, e))?;
        Ok(Checkpoint { dir: dir.to_path_buf(), committed: None })
    }

    /// Opens the checkpoint in `dir` for a run of `id`: checks the manifest's checksum, that it
    /// is this problem's, and every file it names (size and checksum); removes what a killed
    /// run left uncommitted. Returns the checkpoint (to go on committing into) and its
    /// manifest, whose part files are made absolute.
    pub(crate) fn resume(dir: &Path, id: &Identity) -> Result<(Checkpoint, Manifest)> {
        let file = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&file).map_err(|e| {
            let message =
                format!("cannot resume: no checkpoint in {} ({}: {e})", dir.display(), file.display());
            Error::checkpoint(Kind::Missing, dir, message)
        })?;
        let mut m = Manifest::parse(&text)
            .map_err(|why| Error::corrupt(dir, &file, format!("not a valid checkpoint manifest: {why}")))?;
        let other = |what: String| {
            let message = format!("checkpoint {} is for {what}; refusing to resume", dir.display());
            Err(Error::checkpoint(Kind::OtherProblem, dir, message))
        };
        if m.id.version != id.version {
            return other(format!("version {:?}, not {:?}", m.id.version, id.version));
        }
        if (m.id.shape, &m.id.cells, &m.id.path) != (id.shape, &id.cells, &id.path) {
            return other("another board (or solver path)".to_string());
        }
        if m.id.target != id.target {
            return other(format!("depth {}, not {}", m.id.target, id.target));
        }
        if m.id != *id {
            return other(format!("counting {:?}, not {:?}", m.id.weights, id.weights));
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
                let message = format!(
                    "checkpoint {} holds `{name}`, which is not part of the checkpoint; refusing to resume",
                    dir.display()
                );
                return Err(Error::checkpoint(Kind::Foreign, dir, message));
            }
            let path = dir.join(&name);
            let removed =
                if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
            removed.map_err(|e| Error::io("cannot remove", &path, e))?;
        }
        for part in &mut m.parts {
            for (f, &sum) in part.files.iter_mut().zip(&part.checksums) {
                *f = dir.join(&*f);
                let stored = spill::stored_checksum(f)?;
                if stored != sum {
                    return Err(Error::corrupt(
                        dir,
                        f,
                        "checksum mismatch with the manifest (changed or corrupt)",
                    ));
                }
            }
            let bytes: u64 = part.files.iter().map(|f| std::fs::metadata(f).map_or(0, |m| m.len())).sum();
            if bytes != part.bytes {
                let why = "size differs from the manifest (changed or corrupt)";
                return Err(Error::corrupt(dir, &dir.join(&current), why));
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
        Err(e) => return Err(Error::io("cannot read", dir, e)),
    };
    let mut v: Vec<String> = rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    Ok(v)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(at("cannot sync", dir))
}

/// A manifest file's document: its format, then the manifest.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document<M> {
    format: u32,
    manifest: M,
}

impl Manifest {
    /// The manifest's text (TOML, part files relative to `root`), starting with a line that
    /// holds the checksum of every byte after it.
    fn to_text(&self, root: &Path) -> String {
        let mut m = self.clone();
        for f in m.parts.iter_mut().flat_map(|p| &mut p.files) {
            if let Ok(rel) = f.strip_prefix(root) {
                *f = rel.to_path_buf();
            }
        }
        let body = toml::to_string(&Document { format: FORMAT, manifest: m }).expect("a manifest is TOML");
        format!("checksum = \"{:08x}\"\n{body}", spill::checksum(body.as_bytes()))
    }

    /// The manifest `text` holds, or what is wrong with it.
    fn parse(text: &str) -> std::result::Result<Manifest, String> {
        let (first, body) = text.split_once('\n').ok_or("no checksum line")?;
        let stored = first
            .strip_prefix("checksum = \"")
            .and_then(|s| s.strip_suffix('"'))
            .ok_or("no checksum line")?;
        if u32::from_str_radix(stored, 16).ok() != Some(spill::checksum(body.as_bytes())) {
            return Err("checksum mismatch (changed or corrupt)".into());
        }
        let doc: toml::Table = body.parse().map_err(|e: toml::de::Error| e.to_string())?;
        let format = doc.get("format").and_then(toml::Value::as_integer).ok_or("no format")?;
        if format != i64::from(FORMAT) {
            return Err(format!("a manifest of format {format}, not {FORMAT}"));
        }
        let doc: Document<Manifest> = doc.try_into().map_err(|e: toml::de::Error| e.to_string())?;
        Ok(doc.manifest)
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
                ranks: None,
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
                // Only a change that keeps the meaning may pass.
                if let Ok(parsed) = Manifest::parse(&t) {
                    assert_eq!(parsed, back, "byte {i} changed the manifest's meaning and still parsed");
                }
            }
        }
    }
}

//! The one error type of the library's calls ([`Error`]), so that a caller can tell a bad
//! option from a CPU without the backend asked for, a full disk, a refused checkpoint, a lost
//! rank or a cancelled run without reading messages.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use frontier::spill::FileError;
use state::Level;

use crate::input::InputError;
use crate::moves::MoveError;

/// What [`Error`] the library's calls return.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a call of the library failed.
///
/// Each variant shows as one line, the message the `solver` binary prints after `error:`.
/// The variants a later version may add do not break a `match` that ends with `_ =>`.
///
/// ```
/// use solver::{solve, Board, Error, Options, Shape};
///
/// let board = Board::empty(Shape::new(2, 2)?);
/// match solve(&board, 3, &Options::default().with_threads(0)) {
///     Err(Error::Options { reason }) => assert!(reason.contains("threads")),
///     other => panic!("{other:?}"),
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The problem's text does not parse ([`crate::parse`]): the line and token to blame.
    Input(InputError),
    /// A move of a sequence cannot be played ([`crate::Problem::after_moves`]).
    Move(MoveError),
    /// An option, or a combination of options, that a search does not take: a thread count
    /// out of range, exact counts with `lanes`, a checkpoint and a resume of two directories,
    /// a division of depth 0, more moves than the depth.
    Options {
        /// What is wrong, naming the option.
        reason: String,
    },
    /// The instruction set asked for ([`crate::Options::backend`]) is not on this CPU.
    Backend {
        /// The instruction set asked for.
        level: Level,
    },
    /// The thread pool of [`crate::Options::threads`] threads cannot start.
    ThreadPool {
        /// Why (rayon's error).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A file of the frontier on disk, of the scratch directory or of a checkpoint cannot be
    /// made, written or read back intact: an unwritable directory, a full disk or one down to
    /// the disk reserve ([`io::ErrorKind::StorageFull`]), a truncated or corrupt file
    /// ([`io::ErrorKind::InvalidData`]).
    Io {
        /// What was being done (`cannot write`); empty when the file's contents are to blame.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The system's error, or what is wrong with the contents.
        source: io::Error,
    },
    /// A checkpoint directory refused or not readable as a checkpoint (see
    /// [`CheckpointError::kind`]).
    Checkpoint(CheckpointError),
    /// An exact count ([`crate::perft`]) stopped before `depth`, whose counts could pass
    /// 2^128.
    Overflow {
        /// The depth refused.
        depth: u32,
        /// The move sequences of the depth before it.
        sequences: u128,
    },
    /// Another rank of a distributed search failed (its own error says why).
    Rank {
        /// The first rank that failed.
        rank: usize,
    },
    /// MPI cannot run the search (feature `mpi`).
    Mpi {
        /// Why.
        reason: String,
    },
    /// The run was cancelled ([`crate::Cancel`]) before `depth` was done: every depth before
    /// it is done (and saved, with a checkpoint, which resumes from there).
    Cancelled {
        /// The depth that was in progress, or about to start.
        depth: u32,
    },
}

impl Error {
    /// An [`Error::Options`].
    pub(crate) fn options(reason: impl Into<String>) -> Error {
        Error::Options { reason: reason.into() }
    }

    /// An [`Error::Checkpoint`] of `kind` about `dir`, saying `message`.
    pub(crate) fn checkpoint(kind: CheckpointErrorKind, dir: &Path, message: String) -> Error {
        Error::Checkpoint(CheckpointError { kind, dir: dir.to_path_buf(), message })
    }

    /// A checkpoint's file `file` whose contents are not what its manifest says.
    pub(crate) fn corrupt(dir: &Path, file: &Path, why: impl fmt::Display) -> Error {
        Error::checkpoint(CheckpointErrorKind::Corrupt, dir, format!("{}: {why}", file.display()))
    }

    /// An [`Error::Io`] of `action` on `path`.
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> Error {
        Error::Io { action, path: path.to_path_buf(), source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(e) => e.fmt(f),
            Error::Move(e) => e.fmt(f),
            Error::Options { reason } | Error::Mpi { reason } => f.write_str(reason),
            Error::Backend { level } => {
                write!(f, "the {} backend is not available on this CPU", level.name())
            }
            Error::ThreadPool { source } => source.fmt(f),
            Error::Io { action, path, source } => match (action.is_empty(), path.as_os_str().is_empty()) {
                (_, true) => source.fmt(f),
                (true, false) => write!(f, "{}: {source}", path.display()),
                (false, false) => write!(f, "{action} {}: {source}", path.display()),
            },
            Error::Checkpoint(e) => e.fmt(f),
            Error::Overflow { depth, sequences } => write!(
                f,
                "depth {depth}: its exact counts could pass 2^128 (depth {} has {sequences} move sequences); the count stops at depth {}",
                depth - 1,
                depth - 1
            ),
            Error::Rank { rank } => write!(f, "rank {rank} failed (its message says why)"),
            Error::Cancelled { depth } => write!(f, "cancelled at depth {depth}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Input(e) => Some(e),
            Error::Move(e) => Some(e),
            Error::ThreadPool { source } => Some(&**source),
            Error::Io { source, .. } => Some(source),
            Error::Checkpoint(e) => Some(e),
            _ => None,
        }
    }
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Error {
        Error::Input(e)
    }
}

impl From<MoveError> for Error {
    fn from(e: MoveError) -> Error {
        Error::Move(e)
    }
}

impl From<io::Error> for Error {
    /// [`Error::Io`], with the action and path the error carries ([`FileError`]).
    fn from(e: io::Error) -> Error {
        match FileError::take(e) {
            Ok(file) => Error::Io { action: file.action, path: file.path, source: file.source },
            Err(e) => Error::Io { action: "", path: PathBuf::new(), source: e },
        }
    }
}

/// Why a checkpoint directory was refused ([`Error::Checkpoint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckpointErrorKind {
    /// A new checkpoint's directory is not empty.
    NotEmpty,
    /// The directory to resume holds no checkpoint.
    Missing,
    /// The checkpoint is of another problem: another board, depth, version or way of
    /// counting.
    OtherProblem,
    /// The checkpoint was made by another number of ranks (or by several, resumed by one
    /// process), or its ranks stopped at different depths.
    OtherRanks,
    /// The directory holds a file that is not the checkpoint's.
    Foreign,
    /// A file of the checkpoint is not what its manifest says: changed, truncated or corrupt.
    Corrupt,
}

/// A checkpoint directory refused ([`Error::Checkpoint`]): its [`kind`](Self::kind), the
/// directory, and a message naming it (and the file to blame).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointError {
    kind: CheckpointErrorKind,
    dir: PathBuf,
    message: String,
}

impl CheckpointError {
    /// Why it was refused.
    pub fn kind(&self) -> CheckpointErrorKind {
        self.kind
    }

    /// The checkpoint's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CheckpointError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_error_keeps_its_path_and_shows_as_before() {
        let source = io::Error::new(io::ErrorKind::StorageFull, "no room");
        let e: Error = io::Error::from(FileError::new("cannot write", "/w/f.rec", source)).into();
        assert_eq!(e.to_string(), "cannot write /w/f.rec: no room");
        match &e {
            Error::Io { path, source, .. } => {
                assert_eq!(
                    (path.as_path(), source.kind()),
                    (Path::new("/w/f.rec"), io::ErrorKind::StorageFull)
                )
            }
            other => panic!("{other:?}"),
        }
        let plain: Error = io::Error::other("lost").into();
        assert_eq!(plain.to_string(), "lost");
        let corrupt: Error = io::Error::from(FileError::new(
            "",
            "/w/g.rec",
            io::Error::new(io::ErrorKind::InvalidData, "truncated"),
        ))
        .into();
        assert_eq!(corrupt.to_string(), "/w/g.rec: truncated");
    }

    #[test]
    fn an_overflow_names_both_depths() {
        let e = Error::Overflow { depth: 9, sequences: 12 };
        assert_eq!(
            e.to_string(),
            "depth 9: its exact counts could pass 2^128 (depth 8 has 12 move sequences); the count stops at depth 8"
        );
    }
}

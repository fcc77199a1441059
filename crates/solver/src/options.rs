//! How to run a search ([`Options`], built with `with_*` setters) and how to stop one
//! ([`Cancel`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use frontier::spill::DiskReserve;
use state::Level;

use crate::fill::Fill;
#[cfg(doc)]
use crate::{default_memory_limit, DepthStats, MAX_THREADS};

/// How to run a search. The default: every core, the best instruction set, symmetry on, the
/// 3x3 fast path where it applies, the frontier in memory up to a quarter of the memory.
///
/// Options are built from [`Options::default`] with the `with_*` setters, so that an option
/// added later breaks no caller; the fields can be read (and set) one by one.
///
/// ```
/// use solver::{Cancel, Options};
///
/// let cancel = Cancel::new();
/// let options = Options::default()
///     .with_threads(2)
///     .with_all_depths(true)
///     .with_memory_limit(64 << 20)
///     .with_cancel(cancel.clone());
/// assert_eq!((options.threads, options.memory_limit), (Some(2), Some(64 << 20)));
/// ```
///
/// A struct literal does not compile, even with `..Default::default()`:
///
/// ```compile_fail
/// let options = solver::Options { threads: Some(2), ..solver::Options::default() };
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Worker threads, 1 to [`MAX_THREADS`]. `None`: the pool the caller runs on, else rayon's
    /// global pool (one thread per core, or `RAYON_NUM_THREADS`); ranks that are threads of
    /// one process each get a pool of that size. `Some(n)`: a pool of its own of `n`
    /// threads, except that a search of one rank asking for `Some(n)` on a thread of a pool of
    /// `n` threads runs on that thread and pool.
    pub threads: Option<usize>,
    /// Instruction set for the hot loops; `None` for the best this CPU has.
    pub backend: Option<Level>,
    /// Use the general path even on 3x3.
    pub general: bool,
    /// How several threads fill a next frontier that stays in memory: by default, the faster
    /// way on this machine, measured on the run's first parallel depths.
    pub fill: Fill,
    /// Store every board as itself (no canonicalisation): slower, for cross-checks. Counts
    /// one path count a board whatever [`Options::lanes`] says.
    pub no_symmetry: bool,
    /// Keep 8 path counts a position (one per symmetry) even when symmetries fix the start,
    /// where one orbit mass would do (all of them fix it) or one count a coset of those that
    /// do (some): slower, for cross-checks and comparisons.
    pub lanes: bool,
    /// Also compute the answer at every depth `0..=depth`.
    pub all_depths: bool,
    /// Count the distinct boards at every depth ([`DepthStats::boards`]): keeps a set of the
    /// full boards and generates the last depth instead of summing it directly.
    pub count_boards: bool,
    /// Bytes of memory the frontier may take. The frontier is a set of hash partitions: while
    /// a depth fits, it is one partition in memory; past the limit, as many partitions stay
    /// in memory as fit and the others go to disk (in the work directory), each small enough
    /// to be merged within the limit. `None`: a quarter of the physical memory
    /// ([`default_memory_limit`]).
    pub memory_limit: Option<u64>,
    /// The directory in which a run makes its scratch directory for partitions on disk (made
    /// only when one goes to disk, removed at the end; a killed run's is removed by the next
    /// run in the same directory). The system's temporary directory by default. It does not
    /// put the frontier on disk by itself: the memory limit decides that.
    pub work_dir: Option<PathBuf>,
    /// Free space that the files of partitions on disk and of a checkpoint leave on their
    /// disk for other programs: a run that would write past it stops with an error (naming
    /// the file, the space free and the reserve) instead of filling the disk. By default
    /// [`DiskReserve::Standard`].
    pub disk_reserve: DiskReserve,
    /// Save every depth's frontier in this directory (new or empty: it becomes the run's
    /// own), atomically, so that a killed run can be resumed. The frontier's home does not
    /// change: partitions in memory are written out as well.
    pub checkpoint: Option<PathBuf>,
    /// Continue the run checkpointed in this directory (same board, depth, counting and
    /// version), and go on checkpointing into it.
    pub resume: Option<PathBuf>,
    /// Stops the run when cancelled ([`Cancel`]); `None`: the run goes to its end.
    pub cancel: Option<Cancel>,
}

impl Options {
    /// [`Options::threads`]: `n` threads (a number, or `None` for the caller's pool).
    #[must_use]
    pub fn with_threads(mut self, n: impl Into<Option<usize>>) -> Self {
        self.threads = n.into();
        self
    }

    /// [`Options::backend`]: this instruction set (or `None` for the best this CPU has).
    #[must_use]
    pub fn with_backend(mut self, level: impl Into<Option<Level>>) -> Self {
        self.backend = level.into();
        self
    }

    /// [`Options::general`]: the general path even on 3x3.
    #[must_use]
    pub fn with_general(mut self, general: bool) -> Self {
        self.general = general;
        self
    }

    /// [`Options::fill`]: how several threads fill a frontier in memory.
    #[must_use]
    pub fn with_fill(mut self, fill: Fill) -> Self {
        self.fill = fill;
        self
    }

    /// [`Options::no_symmetry`]: every board stored as itself.
    #[must_use]
    pub fn with_no_symmetry(mut self, no_symmetry: bool) -> Self {
        self.no_symmetry = no_symmetry;
        self
    }

    /// [`Options::lanes`]: 8 path counts a position.
    #[must_use]
    pub fn with_lanes(mut self, lanes: bool) -> Self {
        self.lanes = lanes;
        self
    }

    /// [`Options::all_depths`]: the answer at every depth too.
    #[must_use]
    pub fn with_all_depths(mut self, all_depths: bool) -> Self {
        self.all_depths = all_depths;
        self
    }

    /// [`Options::count_boards`]: the distinct boards of every depth.
    #[must_use]
    pub fn with_count_boards(mut self, count_boards: bool) -> Self {
        self.count_boards = count_boards;
        self
    }

    /// [`Options::memory_limit`]: bytes for the frontier (or `None` for the default).
    #[must_use]
    pub fn with_memory_limit(mut self, bytes: impl Into<Option<u64>>) -> Self {
        self.memory_limit = bytes.into();
        self
    }

    /// [`Options::work_dir`]: where the scratch directory goes.
    #[must_use]
    pub fn with_work_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.work_dir = Some(dir.into());
        self
    }

    /// [`Options::disk_reserve`]: the free space to leave on the disk.
    #[must_use]
    pub fn with_disk_reserve(mut self, reserve: DiskReserve) -> Self {
        self.disk_reserve = reserve;
        self
    }

    /// [`Options::checkpoint`]: save every depth in `dir` (new or empty).
    #[must_use]
    pub fn with_checkpoint(mut self, dir: impl Into<PathBuf>) -> Self {
        self.checkpoint = Some(dir.into());
        self
    }

    /// [`Options::resume`]: continue the run checkpointed in `dir`.
    #[must_use]
    pub fn with_resume(mut self, dir: impl Into<PathBuf>) -> Self {
        self.resume = Some(dir.into());
        self
    }

    /// [`Options::cancel`]: stop when `cancel` is cancelled.
    #[must_use]
    pub fn with_cancel(mut self, cancel: Cancel) -> Self {
        self.cancel = Some(cancel);
        self
    }
}

/// A token that stops a run ([`Options::with_cancel`]): cheap to clone, every clone the same
/// token, cancelled from any thread (an observer of the run's depths, a GUI, a signal
/// handler's thread).
///
/// A cancelled run stops before its next depth, or within a depth at its next chunk of
/// positions or partition on disk (a search of several ranks stops between depths, all
/// together), and returns [`Error::Cancelled`](crate::Error::Cancelled). Its scratch files
/// are removed; its checkpoint, when it has one, holds the last depth done and resumes.
///
/// ```
/// use solver::{solve_observed, Board, Cancel, Error, Options, Shape};
///
/// let cancel = Cancel::new();
/// let options = Options::default().with_threads(1).with_cancel(cancel.clone());
/// let board = Board::empty(Shape::new(3, 4)?);
/// let mut seen = Vec::new();
/// let stopped = solve_observed(&board, 10, &options, &mut |s| {
///     seen.push(s.depth);
///     if s.depth == 2 {
///         cancel.cancel();
///     }
/// });
/// assert!(matches!(stopped, Err(Error::Cancelled { depth: 3 })));
/// assert_eq!(seen, [0, 1, 2]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A token not cancelled yet.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every run holding this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// True once [`Cancel::cancel`] was called on this token or a clone.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for Cancel {
    /// The same token (a clone of it), not merely in the same state.
    fn eq(&self, other: &Cancel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}

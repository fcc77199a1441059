//! The ranks of an MPI job as a search's [`Cluster`] (feature `mpi`): what
//! `mpirun -np N solver --mpi` runs on.
//!
//! MPI is started with `MPI_THREAD_SERIALIZED`: a search makes its collectives from one
//! thread at a time (the thread it runs on, which may be a thread of its pool), never from
//! two at once. Every call goes to `MPI_COMM_WORLD`.
//!
//! ```no_run
//! use solver::{solve_distributed, Board, Options, Shape};
//!
//! // Run with `mpirun -np 4`: every rank runs the same search, each gets the answer.
//! let (_universe, ranks) = solver::mpi::start()?;
//! let board = Board::empty(Shape::new(4, 4)?);
//! let answer = solve_distributed(&board, 12, &Options::default(), &ranks, &mut |_| ())?;
//! println!("{}", answer.answer);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::{Count, Threading};

use crate::{Cluster, Error, Result};

/// MPI, started: it ends when this is dropped (after the last search).
pub use mpi::environment::Universe;

/// The job's ranks (`MPI_COMM_WORLD`), this process one of them.
#[derive(Debug)]
pub struct Mpi {
    rank: usize,
    size: usize,
}

/// Starts MPI: the universe (MPI ends when it is dropped) and the job's ranks.
///
/// # Errors
/// [`Error::Mpi`] when MPI was started already in this process, or gives less than
/// serialized threading.
pub fn start() -> Result<(Universe, Mpi)> {
    let (universe, threading) = mpi::initialize_with_threading(Threading::Serialized)
        .ok_or_else(|| Error::Mpi { reason: "MPI was started already in this process".into() })?;
    if threading < Threading::Serialized {
        return Err(Error::Mpi { reason: format!(
            "this MPI library gives {threading:?} threading; the search needs Serialized (calls from one thread at a time)"
        ) });
    }
    let world = universe.world();
    let (rank, size) = (world.rank() as usize, world.size() as usize);
    Ok((universe, Mpi { rank, size }))
}

/// Ends every rank of the job with exit code `code` (`MPI_Abort`): for a rank whose search
/// failed, which the others would wait for for ever.
pub fn abort(code: i32) -> ! {
    SimpleCommunicator::world().abort(code)
}

impl Mpi {
    /// Sends rank 0's `bytes` to every rank (each gets them in `bytes`). Collective.
    pub fn broadcast(&self, bytes: &mut Vec<u8>) {
        let world = SimpleCommunicator::world();
        let root = world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        root.broadcast_into(&mut bytes[..]);
    }
}

/// Offsets of pieces of `counts` laid one after another.
fn displacements(counts: &[Count]) -> Vec<Count> {
    counts.iter().scan(0, |at, &c| Some(std::mem::replace(at, *at + c))).collect()
}

impl Cluster for Mpi {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_to_all(&self, send: &[u8], counts: &[usize], recv: &mut Vec<u8>) -> Vec<usize> {
        let world = SimpleCommunicator::world();
        let as_count = |c: usize| Count::try_from(c).expect("exchanges go in pieces below 2^31 bytes");
        let send_counts: Vec<Count> = counts.iter().map(|&c| as_count(c)).collect();
        as_count(send.len());
        // Counts first, then the bytes.
        let mut recv_counts = vec![0 as Count; self.size];
        world.all_to_all_into(&send_counts[..], &mut recv_counts[..]);
        let total: usize = recv_counts.iter().map(|&c| c as usize).sum();
        as_count(total);
        // Buffers of a byte at least, so that two empty ones never share an address (MPI
        // refuses a receive buffer that is the send buffer).
        recv.clear();
        recv.resize(total.max(1), 0);
        let one = [0u8];
        let send = if send.is_empty() { &one[..] } else { send };
        let (send_displs, recv_displs) = (displacements(&send_counts), displacements(&recv_counts));
        {
            let outgoing = Partition::new(send, &send_counts[..], &send_displs[..]);
            let mut incoming = PartitionMut::new(&mut recv[..], &recv_counts[..], &recv_displs[..]);
            world.all_to_all_varcount_into(&outgoing, &mut incoming);
        }
        recv.truncate(total);
        recv_counts.iter().map(|&c| c as usize).collect()
    }

    fn all_gather(&self, mine: &[u64]) -> Vec<u64> {
        let world = SimpleCommunicator::world();
        let mut all = vec![0u64; mine.len() * self.size];
        world.all_gather_into(mine, &mut all[..]);
        all
    }
}

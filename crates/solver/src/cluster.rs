//! Ranks: the processes of a distributed search, and a partition's third home.
//!
//! A search may run as `n` cooperating *ranks* (MPI processes, or threads of one process in
//! tests). Every position has one owner, chosen by hash bits that no set reads for its slots;
//! each rank stores, expands and counts only the positions it owns. While a depth is built,
//! the successors a rank makes for another rank wait in its outbox's *mail* (one buffer of
//! records a destination); when a rank's mail passes its bound, and once more when its
//! sources are all expanded, the rank joins an exchange: every rank sends each other rank its
//! mail and files what it receives into its own next frontier. Exchanges are collective:
//! every rank makes the same number of them, each saying whether it is done, and a depth's
//! exchanges end when all are.
//!
//! [`Cluster`] is what the search needs of the ranks: who it is, how many there are, an
//! all-to-all of bytes and an all-gather of numbers. [`Solo`] is one process alone;
//! [`InProcess`] runs ranks as threads of one process (tests compare any number of ranks
//! with one, without MPI); the `solver` binary's `--mpi` implements it on MPI.
//!
//! **Invariants.** The owner of a position depends only on its key and the number of ranks.
//! Every rank calls the same collectives in the same order. Sums over ranks wrap, as every
//! sum of the search does, so the answer and every statistic are the same for any number of
//! ranks.

use std::sync::{Arc, Condvar, Mutex};

/// The ranks of a search, as the search sees them. Collectives ([`Cluster::all_to_all`],
/// [`Cluster::all_gather`]) block until every rank has made the same call.
pub trait Cluster: Sync {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;

    /// The number of ranks.
    fn size(&self) -> usize;

    /// Sends `counts[j]` bytes of `send` (the ranks' pieces one after another, in rank order)
    /// to each rank `j`; puts the bytes every rank sent this one in `recv` (in rank order,
    /// replacing what it held) and returns their counts. Callers keep every count, and their
    /// sum, below 2^31 (the search sends in pieces).
    fn all_to_all(&self, send: &[u8], counts: &[usize], recv: &mut Vec<u8>) -> Vec<usize>;

    /// Every rank's `mine` (of the same length on every rank), in rank order.
    fn all_gather(&self, mine: &[u64]) -> Vec<u64>;
}

/// One process alone: rank 0 of 1.
#[derive(Clone, Copy, Debug, Default)]
pub struct Solo;

impl Cluster for Solo {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn all_to_all(&self, send: &[u8], counts: &[usize], recv: &mut Vec<u8>) -> Vec<usize> {
        recv.clear();
        recv.extend_from_slice(send);
        counts.to_vec()
    }

    fn all_gather(&self, mine: &[u64]) -> Vec<u64> {
        mine.to_vec()
    }
}

/// One rank of ranks that are threads of one process ([`InProcess::ranks`]): each thread
/// runs a search with its own rank. If a rank's handle is dropped before the others are done
/// with their collectives (its search failed, or panicked), the others panic at their next
/// collective rather than wait for ever.
#[derive(Debug)]
pub struct InProcess {
    rank: usize,
    hub: Arc<Hub>,
}

#[derive(Debug)]
struct Hub {
    size: usize,
    state: Mutex<HubState>,
    turn: Condvar,
}

#[derive(Debug, Default)]
struct HubState {
    /// Collectives completed.
    generation: u64,
    /// Ranks arrived at the current barrier.
    arrived: usize,
    /// A rank has gone: every collective from now on fails.
    left: bool,
    /// `bytes[from * size + to]`: what `from` sends `to` in the current all-to-all.
    bytes: Vec<Vec<u8>>,
    /// `numbers[from]`: what `from` gives the current all-gather.
    numbers: Vec<Vec<u64>>,
}

impl InProcess {
    /// `n` ranks (at least 1), to be moved one to each of `n` threads.
    pub fn ranks(n: usize) -> Vec<InProcess> {
        let n = n.max(1);
        let state =
            HubState { bytes: vec![Vec::new(); n * n], numbers: vec![Vec::new(); n], ..Default::default() };
        let hub = Arc::new(Hub { size: n, state: Mutex::new(state), turn: Condvar::new() });
        (0..n).map(|rank| InProcess { rank, hub: hub.clone() }).collect()
    }

    /// Puts what this rank gives, waits for every rank to have done so, reads what it gets,
    /// and waits for every rank to have read (so that the next collective may overwrite).
    fn collective<T>(&self, give: impl FnOnce(&mut HubState), get: impl FnOnce(&HubState) -> T) -> T {
        let mut st = self.hub.state.lock().unwrap_or_else(|e| e.into_inner());
        give(&mut st);
        st = self.barrier(st);
        let got = get(&st);
        drop(self.barrier(st));
        got
    }

    fn barrier<'a>(
        &'a self,
        mut st: std::sync::MutexGuard<'a, HubState>,
    ) -> std::sync::MutexGuard<'a, HubState> {
        let generation = st.generation;
        st.arrived += 1;
        if st.arrived == self.hub.size {
            st.arrived = 0;
            st.generation += 1;
            self.hub.turn.notify_all();
        } else {
            while st.generation == generation && !st.left {
                st = self.hub.turn.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        }
        assert!(st.generation != generation, "another rank of the in-process cluster has gone");
        st
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        let mut st = self.hub.state.lock().unwrap_or_else(|e| e.into_inner());
        st.left = true;
        self.hub.turn.notify_all();
    }
}

impl Cluster for InProcess {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.hub.size
    }

    fn all_to_all(&self, send: &[u8], counts: &[usize], recv: &mut Vec<u8>) -> Vec<usize> {
        let n = self.hub.size;
        assert_eq!(counts.len(), n, "one count a rank");
        self.collective(
            |st| {
                let mut at = 0;
                for (to, &c) in counts.iter().enumerate() {
                    st.bytes[self.rank * n + to] = send[at..at + c].to_vec();
                    at += c;
                }
            },
            |st| {
                recv.clear();
                let pieces: Vec<&Vec<u8>> = (0..n).map(|from| &st.bytes[from * n + self.rank]).collect();
                pieces.iter().for_each(|p| recv.extend_from_slice(p));
                pieces.iter().map(|p| p.len()).collect()
            },
        )
    }

    fn all_gather(&self, mine: &[u64]) -> Vec<u64> {
        self.collective(|st| st.numbers[self.rank] = mine.to_vec(), |st| st.numbers.concat())
    }
}

/// This rank and how many there are, as the search's hot paths use them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ranks {
    /// This rank.
    pub me: usize,
    /// The number of ranks.
    pub n: usize,
}

impl Ranks {
    /// One process alone.
    #[cfg(test)]
    pub(crate) const SOLO: Ranks = Ranks { me: 0, n: 1 };

    /// The ranks of `cluster`.
    pub(crate) fn of(cluster: &dyn Cluster) -> Ranks {
        Ranks { me: cluster.rank(), n: cluster.size() }
    }

    /// The rank that owns a key whose [`frontier::key_hash`] is `hash`: from its low
    /// [`OWNER_BITS`] bits, which no set reads (a set's slot and shard come from the top 44
    /// bits of the hash at most: 2^32 slots under 2^12 shards), so that a rank's keys spread
    /// over its tables as evenly as all keys would.
    #[inline(always)]
    pub(crate) fn owner(&self, hash: u64) -> usize {
        (((hash & ((1 << OWNER_BITS) - 1)) * self.n as u64) >> OWNER_BITS) as usize
    }

    /// True when this rank owns a key whose hash is `hash` (alone, it owns every key).
    #[inline(always)]
    pub(crate) fn owns(&self, hash: u64) -> bool {
        self.owner(hash) == self.me
    }
}

/// Hash bits that choose a key's owner ([`Ranks::owner`]).
const OWNER_BITS: u32 = 20;

/// Bytes a rank sends another in one all-to-all at most: an exchange of more goes in pieces,
/// so that no message passes 2^31 bytes (MPI counts are `int`) and the buffers stay bounded.
const PIECE_BYTES: usize = 16 << 20;

/// What a rank's exchanges moved since it was last taken.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Traffic {
    /// Bytes this rank sent and received.
    pub sent: u64,
    pub received: u64,
    /// Exchanges made.
    pub exchanges: u32,
    /// Seconds spent in them (filing what arrived, and waiting for the others, included).
    pub seconds: f64,
}

/// A rank's exchanges: their buffers, kept from one to the next (fresh ones each time would
/// be fresh pages each time, each a fault and a clearing), and what they moved.
#[derive(Debug, Default)]
pub(crate) struct Mailroom {
    /// Per rank, what goes to it.
    pub mail: Vec<Vec<u8>>,
    send: Vec<u8>,
    recv: Vec<u8>,
    /// What the exchanges moved.
    pub traffic: Traffic,
}

/// One exchange of records of `record` bytes: sends `room.mail[j]` (whole records) to each
/// rank `j` (nothing to itself), hands `deliver` the records every rank sent this one, a
/// piece at a time (at most [`PIECE_BYTES`] from each rank), adds to `room.traffic`, and says
/// whether every rank said `done`. Collective: every rank calls it, and as often as the others.
pub(crate) fn exchange(
    cluster: &dyn Cluster,
    room: &mut Mailroom,
    record: usize,
    done: bool,
    mut deliver: impl FnMut(&[u8]),
) -> bool {
    let t = std::time::Instant::now();
    let Mailroom { mail, send, recv, traffic } = room;
    let n = cluster.size();
    let largest = mail.iter().map(Vec::len).max().unwrap_or(0) as u64;
    let all = cluster.all_gather(&[largest, u64::from(done)]);
    let all_done = all.chunks(2).all(|r| r[1] == 1);
    let largest = all.chunks(2).map(|r| r[0]).max().unwrap_or(0) as usize;
    let piece = (PIECE_BYTES.min((i32::MAX as usize) / n) / record).max(1) * record;
    let mut counts = vec![0; n];
    for start in (0..largest.div_ceil(piece)).map(|k| k * piece) {
        send.clear();
        let part = |j: usize| match mail.get(j) {
            Some(m) if j != cluster.rank() => &m[start.min(m.len())..(start + piece).min(m.len())],
            _ => &[][..],
        };
        for (j, c) in counts.iter_mut().enumerate() {
            *c = part(j).len();
        }
        // One rank's piece alone (of two ranks, say) goes as it is; several are laid end to end.
        let outgoing = match counts.iter().filter(|&&c| c > 0).count() {
            0 => &[][..],
            1 => part(counts.iter().position(|&c| c > 0).expect("one is not empty")),
            _ => {
                (0..n).for_each(|j| send.extend_from_slice(part(j)));
                &send[..]
            }
        };
        cluster.all_to_all(outgoing, &counts, recv);
        traffic.sent += outgoing.len() as u64;
        traffic.received += recv.len() as u64;
        deliver(recv);
    }
    traffic.exchanges += 1;
    traffic.seconds += t.elapsed().as_secs_f64();
    all_done
}

/// Every rank's outcome of a step all take: `Ok` only when every rank's is. A rank whose own
/// step failed gets its error, the others one naming the first rank that failed. Collective.
pub(crate) fn agree<T>(cluster: &dyn Cluster, mine: crate::Result<T>) -> crate::Result<T> {
    if cluster.size() == 1 {
        return mine;
    }
    let all = cluster.all_gather(&[u64::from(mine.is_err())]);
    let v = mine?;
    match all.iter().position(|&failed| failed == 1) {
        Some(rank) => Err(crate::Error::Rank { rank }),
        None => Ok(v),
    }
}

/// Wrapping sums over the ranks of `mine`, element by element, modulo 2^64 (every rank gets
/// them).
pub(crate) fn sum_over(cluster: &dyn Cluster, mine: &[u64]) -> Vec<u64> {
    let all = cluster.all_gather(mine);
    let mut sum = vec![0u64; mine.len()];
    for r in all.chunks(mine.len().max(1)) {
        for (s, x) in sum.iter_mut().zip(r) {
            *s = s.wrapping_add(*x);
        }
    }
    sum
}

/// The sums over every rank of each of `mine` (exact below 2^128), in 32-bit pieces so that
/// no word carries. Collective.
pub(crate) fn sum_exact_over(cluster: &dyn Cluster, mine: &[u128]) -> Vec<u128> {
    if cluster.size() == 1 {
        return mine.to_vec();
    }
    let pieces: Vec<u64> =
        mine.iter().flat_map(|&x| (0..4).map(move |i| (x >> (32 * i)) as u64 & 0xffff_ffff)).collect();
    let sums = sum_over(cluster, &pieces);
    sums.chunks(4)
        .map(|p| p.iter().enumerate().fold(0u128, |a, (i, &w)| a.wrapping_add(u128::from(w) << (32 * i))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_are_balanced_and_cover_every_rank() {
        for n in 1..=5 {
            let ranks = Ranks { me: 0, n };
            let mut seen = vec![0usize; n];
            for k in 0..100_000u64 {
                seen[ranks.owner(frontier::key_hash(&k))] += 1;
            }
            let (lo, hi) = (*seen.iter().min().unwrap(), *seen.iter().max().unwrap());
            assert!(hi - lo < 100_000 / n / 10, "{n} ranks: {seen:?}");
        }
    }

    #[test]
    fn an_exchange_in_pieces_delivers_everything_and_agrees_on_done() {
        let n = 3;
        let got: Vec<(Vec<u8>, bool)> = std::thread::scope(|s| {
            let handles: Vec<_> = InProcess::ranks(n)
                .into_iter()
                .map(|c| {
                    s.spawn(move || {
                        let me = c.rank();
                        // Rank r sends rank j a piece and j + 1 bytes of value r.
                        let mail: Vec<Vec<u8>> =
                            (0..n).map(|j| vec![me as u8; PIECE_BYTES + j + 1]).collect();
                        let mut received = vec![0u8; 0];
                        let mut room = Mailroom { mail, ..Mailroom::default() };
                        let all_done = exchange(&c, &mut room, 1, me != 1, |b| received.extend_from_slice(b));
                        assert_eq!(room.traffic.received as usize, received.len());
                        (received, all_done)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (me, (received, all_done)) in got.iter().enumerate() {
            assert!(!all_done, "rank 1 was not done");
            for from in 0..n {
                let want = if from == me { 0 } else { PIECE_BYTES + me + 1 };
                assert_eq!(
                    received.iter().filter(|&&b| b == from as u8).count(),
                    want,
                    "rank {me} from {from}"
                );
            }
        }
    }

    #[test]
    fn a_rank_that_goes_makes_the_others_fail_instead_of_wait() {
        let mut ranks = InProcess::ranks(2);
        let other = ranks.pop().unwrap();
        let first = ranks.pop().unwrap();
        let waiting =
            std::thread::spawn(move || std::panic::catch_unwind(|| first.all_gather(&[1])).is_err());
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(other);
        assert!(waiting.join().unwrap(), "the waiting rank panicked");
    }
}

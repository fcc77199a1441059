//! Where [`super::direct`] puts the successors it keeps: the [`Sink`] trait, the one set,
//! and the [`Routed`] sink that splits successors between the memory home and the outbox.

use frontier::{Key, Tally};
use state::PackedKey;

use super::Batch;
use crate::home::{Sender, HOME};

/// Where [`super::direct`] puts the successors it keeps: the next frontier's one set, a
/// thread's [`super::Owned`] shards, the [`super::OneLock`] set, or a [`Routed`] split between the memory home and
/// the outbox.
pub(crate) trait Sink<K, C> {
    /// Hints the CPU to fetch the slot of a key whose hash is `hash`, when the sink keeps
    /// that key in a set of its own.
    fn prefetch_hash(&self, hash: u64);

    /// Whether [`Sink::prefetch_hash`] pays: not into a set small enough to stay in the
    /// caches ([`frontier::CountSet::worth_prefetching`]).
    #[inline(always)]
    fn worth_prefetching(&self) -> bool {
        true
    }

    /// Takes a batch of (hash, key, counts) whose slots were prefetched: inserts those it
    /// keeps, passes the others on. It may reorder the batch.
    fn insert(&mut self, batch: &mut [(u64, K, C)]);

    /// [`Sink::insert`] of the first `len` items of `batch`, a buffer the caller fills by
    /// index: a sink that keeps the items for later may take the buffer itself and leave
    /// another of the same length in its place, instead of copying them.
    #[inline(always)]
    fn insert_buffer(&mut self, batch: &mut Batch<K, C>, len: usize) {
        self.insert(&mut batch[..len]);
    }

    /// The set the sink is, when it is one set that takes every successor as it comes: a
    /// batch for it may then give each successor's parent and symmetry instead of its counts
    /// (see [`direct`]).
    #[inline(always)]
    fn set_at_once(&mut self) -> Option<&mut frontier::CountSet<K, C>>
    where
        K: PackedKey,
        C: Tally,
    {
        None
    }
}

impl<K: PackedKey, C: Tally> Sink<K, C> for frontier::CountSet<K, C> {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        frontier::CountSet::prefetch_hash(self, hash);
    }

    #[inline(always)]
    fn worth_prefetching(&self) -> bool {
        frontier::CountSet::worth_prefetching(self)
    }

    #[inline(always)]
    fn insert(&mut self, batch: &mut [(u64, K, C)]) {
        self.insert_prefetched(batch, |r| r.0, |r| r.1, |r| r.2);
    }

    #[inline(always)]
    fn set_at_once(&mut self) -> Option<&mut frontier::CountSet<K, C>> {
        Some(self)
    }
}

impl<K, C, S: Sink<K, C>> Sink<K, C> for &mut S {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        (**self).prefetch_hash(hash);
    }

    #[inline(always)]
    fn worth_prefetching(&self) -> bool {
        (**self).worth_prefetching()
    }

    #[inline(always)]
    fn insert(&mut self, batch: &mut [(u64, K, C)]) {
        (**self).insert(batch)
    }

    #[inline(always)]
    fn insert_buffer(&mut self, batch: &mut Batch<K, C>, len: usize) {
        (**self).insert_buffer(batch, len)
    }

    #[inline(always)]
    fn set_at_once(&mut self) -> Option<&mut frontier::CountSet<K, C>>
    where
        K: PackedKey,
        C: Tally,
    {
        (**self).set_at_once()
    }
}

/// A [`Sink`] for a depth whose partitions do not all stay in memory: successors of the
/// partitions kept in memory go into `set`, the others to the depth's
/// [`Outbox`](crate::home::Outbox), through this thread's [`Sender`].
pub(crate) struct Routed<'a, 's, K: Key, C: Tally, S> {
    /// Where the successors kept in memory go.
    pub set: S,
    /// Where the others go.
    pub sender: Sender<'a, K, C>,
    /// The thread's buffers, reused from batch to batch.
    pub split: &'s mut Split<K, C>,
}

impl<K: PackedKey, C: Tally, S: Sink<K, C>> Sink<K, C> for Routed<'_, '_, K, C, S> {
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        // A successor sent away prefetches the slot of hash 0 instead, already in the caches:
        // no branch (see `Outbox::route`).
        let kept = self.sender.route(hash) == HOME;
        self.set.prefetch_hash(std::hint::select_unpredictable(kept, hash, 0));
    }

    #[inline(always)]
    fn insert(&mut self, batch: &mut [(u64, K, C)]) {
        let kept = self.split.route(&mut self.sender, batch.iter().copied());
        self.set.insert(kept)
    }
}

/// A thread's buffers for splitting successors between the memory home and the rest
/// ([`Split::route`]).
#[derive(Debug)]
pub(crate) struct Split<K, C> {
    /// The successors kept (hash, key, counts), at the front.
    kept: Batch<K, C>,
    /// The others (where to, key, counts), at the front.
    away: Vec<(usize, K, C)>,
}

impl<K, C> Default for Split<K, C> {
    fn default() -> Self {
        Split { kept: Vec::new(), away: Vec::new() }
    }
}

impl<K: PackedKey, C: Tally> Split<K, C> {
    /// Sends the successors `items` (hash, key, counts) that do not go into the memory home
    /// through `sender`, and returns the others. Branch-free: each successor is written to the
    /// ends of both lists, and only the one it belongs to grows (see `Outbox::route`).
    #[inline(always)]
    pub(crate) fn route(
        &mut self,
        sender: &mut Sender<'_, K, C>,
        items: impl ExactSizeIterator<Item = (u64, K, C)>,
    ) -> &mut [(u64, K, C)] {
        let n = items.len();
        if self.kept.len() < n {
            self.kept.resize(n, (0, K::ZERO, C::zero()));
            self.away.resize(n, (0, K::ZERO, C::zero()));
        }
        let (mut kept, mut away) = (0, 0);
        for (hash, key, counts) in items {
            let to = sender.route(hash);
            self.kept[kept] = (hash, key, counts);
            self.away[away] = (to, key, counts);
            kept += usize::from(to == HOME);
            away += usize::from(to != HOME);
        }
        for (to, key, counts) in &self.away[..away] {
            sender.push(*to, key, counts);
        }
        &mut self.kept[..kept]
    }
}

//! What a search of several ranks adds to a depth: the exchanges of mail, the statistics
//! summed over the ranks, and the full boards shared out to their owners.

use frontier::{CountSet, Frontier, Tally};
use state::{PackedKey, Rules};

use super::Search;
use crate::cluster::{self, Cluster};
use crate::home::{self, Outbox};
use crate::stats::{DepthStats, RankSpread, RankSummary};
use crate::weights::Weights;

/// One exchange of a rank's mail ([`cluster::exchange`]): sends what `outbox` holds for other
/// ranks, files what they send into `next` (or the outbox's files). Returns true when every
/// rank said it was `done`. Collective.
pub(super) fn post<K: PackedKey, C: Tally>(
    cluster: &dyn Cluster,
    outbox: &Outbox<K, C>,
    next: &mut Frontier<K, C>,
    done: bool,
    room: &mut cluster::Mailroom,
) -> bool {
    outbox.take_mail(&mut room.mail);
    cluster::exchange(cluster, room, home::mail_record::<K, C>(), done, |got| {
        home::deliver(got, next, outbox)
    })
}

impl<'r, R: Rules, W: Weights> Search<'r, R, W> {
    /// With several ranks: makes `stats` (this rank's) the depth's over every rank, adding this
    /// rank's own to [`Search::mine`]. Returns the positions of the depth over every rank.
    /// Collective.
    pub(super) fn over_ranks(&mut self, stats: &mut DepthStats) -> u64 {
        let moved = std::mem::take(&mut self.room.traffic);
        self.mine.states_largest = self.mine.states_largest.max(stats.states);
        self.mine.bytes_sent += moved.sent;
        self.mine.bytes_received += moved.received;
        self.mine.exchange_seconds += moved.seconds;
        self.mine.bytes_written += stats.bytes_written;
        self.mine.peak_memory = self.mine.peak_memory.max(stats.peak_memory);
        if self.ranks.n == 1 {
            return stats.states;
        }
        let nanos = |s: f64| (s * 1e9) as u64;
        let mine = [
            stats.states,
            stats.boards.unwrap_or(0),
            stats.records,
            u64::from(stats.ended_paths),
            u64::from(stats.ended),
            stats.bytes_read,
            stats.bytes_written,
            stats.peak_memory,
            moved.sent,
            moved.received,
            nanos(moved.seconds),
            nanos(stats.seconds),
            nanos(stats.expand_seconds),
            nanos(stats.insert_seconds),
            u64::from(moved.exchanges),
            u64::from(stats.answer.unwrap_or(0)),
        ];
        let all = self.cluster.all_gather(&mine);
        let rows: Vec<&[u64]> = all.chunks(mine.len()).collect();
        let sum = |i: usize| rows.iter().fold(0u64, |a, r| a.wrapping_add(r[i]));
        let max = |i: usize| rows.iter().map(|r| r[i]).max().unwrap_or(0);
        let seconds = |i: usize| max(i) as f64 / 1e9;
        if let (Some(perft), Some(games)) = (stats.perft, stats.games) {
            let exact = cluster::sum_exact_over(self.cluster, &[perft, games]);
            (stats.perft, stats.games) = (Some(exact[0]), Some(exact[1]));
        }
        stats.states = sum(0);
        stats.boards = stats.boards.map(|_| sum(1));
        stats.records = sum(2);
        stats.ended_paths = sum(3) as u32;
        stats.ended = sum(4) as u32 & state::HASH_MASK;
        stats.answer = stats.answer.map(|_| sum(15) as u32 & state::HASH_MASK);
        stats.bytes_read = sum(5);
        stats.bytes_written = sum(6);
        stats.peak_memory = max(7);
        (stats.seconds, stats.expand_seconds, stats.insert_seconds) = (seconds(11), seconds(12), seconds(13));
        stats.ranks = Some(RankSpread {
            ranks: self.ranks.n as u32,
            states_max: max(0),
            bytes_sent: sum(8),
            bytes_received: sum(9),
            exchange_seconds: seconds(10),
            exchanges: max(14) as u32,
        });
        stats.states
    }

    /// Every rank's own figures, in rank order. Collective.
    pub(super) fn rank_summaries(&self) -> Vec<RankSummary> {
        let m = &self.mine;
        let mine = [
            m.states_largest,
            m.bytes_sent,
            m.bytes_received,
            (m.exchange_seconds * 1e9) as u64,
            m.bytes_written,
            m.peak_memory,
        ];
        let all = if self.ranks.n == 1 { mine.to_vec() } else { self.cluster.all_gather(&mine) };
        all.chunks(mine.len())
            .enumerate()
            .map(|(rank, r)| RankSummary {
                rank,
                states_largest: r[0],
                bytes_sent: r[1],
                bytes_received: r[2],
                exchange_seconds: r[3] as f64 / 1e9,
                bytes_written: r[4],
                peak_memory: r[5],
            })
            .collect()
    }

    /// With several ranks and boards counted: sends each full board reached at this depth to
    /// its owner, so that each rank counts the full boards it owns (a board reached on two
    /// ranks is one board). Collective.
    pub(super) fn share_ended(&mut self) {
        let room = &mut self.room;
        room.mail.resize_with(self.ranks.n, Vec::new);
        room.mail.iter_mut().for_each(Vec::clear);
        let mut own = CountSet::new(0);
        for (k, c) in self.ended.iter() {
            let to = self.ranks.owner(frontier::key_hash(&k));
            if to == self.ranks.me {
                own.insert(k, &c);
            } else {
                home::put_record(&mut room.mail[to], &k, &c);
            }
        }
        let record = home::mail_record::<R::Key, W::Count>();
        let all_done = cluster::exchange(self.cluster, room, record, true, |got| {
            for (k, c) in home::records::<R::Key, W::Count>(got) {
                own.insert(k, &c);
            }
        });
        debug_assert!(all_done);
        self.ended = own;
    }
}

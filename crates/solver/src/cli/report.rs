//! What a finished run reports: the `--stats` tables (on stderr) and the `--json` object (on
//! stdout).

use std::fmt::Write as _;
use std::io::{self, Write};

use serde::{Serialize, Serializer};

use solver::{Answer, DepthStats, Fill, Options, Problem};

/// Bytes in a MiB, for the `_MiB` columns.
fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// The `--stats` table: the user's columns, and with `internals` the engine's after them.
/// Each column's name carries its unit.
pub fn stats_table(problem: &Problem, answer: &Answer, internals: bool) -> String {
    let mut out = format!("# {} board, depth {}", problem.board.shape(), problem.depth);
    if internals {
        let _ = write!(out, ", path {}, backend {}", answer.path, answer.backend.name());
    }
    let _ = write!(
        out,
        "\n{:>6} {:>14} {:>14} {:>10} {:>9} {:>16}",
        "depth", "positions", "boards", "seconds", "peak_MiB", "disk_written_MiB"
    );
    if internals {
        let _ = write!(
            out,
            " {:>12} {:>12} {:>10} {:>9} {:>9} {:>13} {:>8}",
            "records", "ended_paths", "ended", "expand_s", "insert_s", "disk_read_MiB", "fill"
        );
    }
    out.push('\n');
    for s in &answer.stats {
        let _ = write!(
            out,
            "{:>6} {:>14} {:>14} {:>10.4} {:>9.1} {:>16.1}",
            s.depth,
            s.states,
            s.boards.map_or("-".to_string(), |b| b.to_string()),
            s.seconds,
            mib(s.peak_memory),
            mib(s.bytes_written),
        );
        if internals {
            let _ = write!(
                out,
                " {:>12} {:>12} {:>10} {:>9.4} {:>9.4} {:>13.1} {:>8}",
                s.records,
                s.ended_paths,
                s.ended,
                s.expand_seconds,
                s.insert_seconds,
                mib(s.bytes_read),
                s.fill.map_or("-", Fill::name)
            );
        }
        out.push('\n');
    }
    if answer.ranks.len() > 1 {
        out += &rank_tables(answer);
    }
    out
}

/// The `--stats` tables of an MPI job: per depth, how the positions were shared out and what
/// the ranks exchanged; per rank, its own figures.
fn rank_tables(answer: &Answer) -> String {
    let mut out = format!(
        "# exchanges between {} ranks\n{:>6} {:>14} {:>14} {:>10} {:>10} {:>17}\n",
        answer.ranks.len(),
        "depth",
        "positions_max",
        "positions_mean",
        "sent_MiB",
        "exchanges",
        "exchange_seconds"
    );
    for s in &answer.stats {
        let Some(r) = s.ranks else { continue };
        let _ = writeln!(
            out,
            "{:>6} {:>14} {:>14.0} {:>10.1} {:>10} {:>17.4}",
            s.depth,
            r.states_max,
            s.states as f64 / f64::from(r.ranks.max(1)),
            mib(r.bytes_sent),
            r.exchanges,
            r.exchange_seconds
        );
    }
    let _ = writeln!(
        out,
        "# per rank\n{:>6} {:>16} {:>10} {:>10} {:>17} {:>16} {:>9}",
        "rank", "positions_most", "sent_MiB", "recv_MiB", "exchange_seconds", "disk_written_MiB", "peak_MiB"
    );
    for r in &answer.ranks {
        let _ = writeln!(
            out,
            "{:>6} {:>16} {:>10.1} {:>10.1} {:>17.4} {:>16.1} {:>9.1}",
            r.rank,
            r.states_largest,
            mib(r.bytes_sent),
            mib(r.bytes_received),
            r.exchange_seconds,
            mib(r.bytes_written),
            mib(r.peak_memory)
        );
    }
    out
}

/// The `--json` output.
#[derive(Debug, Serialize)]
struct Report<'a> {
    answer: u32,
    shape: ShapeJson,
    depth: u32,
    path: &'static str,
    backend: &'static str,
    threads: usize,
    seconds: f64,
    peak_memory_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    answers: Option<Answers<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<&'a [DepthStats]>,
    /// With `--stats`, in an MPI job: each rank's own figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    ranks: Option<&'a [solver::RankSummary]>,
}

#[derive(Debug, Serialize)]
struct ShapeJson {
    rows: usize,
    cols: usize,
}

/// `answers`: every depth's answer from 0 to `depth`, the depths after those the search made
/// written as they are serialised (all equal to the final answer), never held.
#[derive(Debug)]
struct Answers<'a> {
    made: &'a [u32],
    depth: u32,
    last: u32,
}

impl Serialize for Answers<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rest = (self.made.len() as u64..=u64::from(self.depth)).map(|_| self.last);
        s.collect_seq(self.made.iter().copied().chain(rest))
    }
}

/// Writes the `--json` object of a finished run to `out`, with its statistics when `stats`.
pub fn write_json(
    out: impl Write,
    problem: &Problem,
    answer: &Answer,
    options: &Options,
    stats: bool,
    seconds: f64,
) -> io::Result<()> {
    let shape = problem.board.shape();
    let report = Report {
        answer: answer.answer,
        shape: ShapeJson { rows: shape.rows(), cols: shape.cols() },
        depth: problem.depth,
        path: answer.path,
        backend: answer.backend.name(),
        threads: options.threads.unwrap_or_else(rayon::current_num_threads),
        seconds,
        peak_memory_bytes: solver::peak_memory(),
        answers: options.all_depths.then_some(Answers {
            made: &answer.answers,
            depth: problem.depth,
            last: answer.answer,
        }),
        stats: stats.then_some(&answer.stats[..]),
        ranks: (stats && answer.ranks.len() > 1).then_some(&answer.ranks[..]),
    };
    let mut w = io::BufWriter::with_capacity(1 << 16, out);
    serde_json::to_writer_pretty(&mut w, &report).map_err(io::Error::from)?;
    w.write_all(b"\n")?;
    w.flush()
}

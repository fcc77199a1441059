//! `cargo xtask bench`: whole-process timings beside the C++ yardstick.
//!
//! The yardstick is `../shared/anchor/anchor.cpp`, a single-threaded solver of the 3x3 board
//! only, built with `g++ -O3 -march=native`. Every sample times whole processes, from spawn to
//! exit, with the input fed on stdin from memory. On each workload our solver and the yardstick
//! get one warm-up run each, then alternate run by run, so that a drift of the machine (clock
//! speed, a noisy neighbour) hits both alike. Every answer is checked: against the warm-up's,
//! against the yardstick's and, where the workload knows it, against the expected one.
//!
//! `--baseline PATH` names another solver binary (a previous commit's, say) that runs in every
//! round with our arguments, after ours in one round and before it in the next; its column is
//! the median of the rounds' ratios ours / baseline.
//!
//! The report (a markdown table) goes to stdout. Each row is appended as one JSON object to
//! `docs/bench-runs.jsonl` (the fields are listed in `docs/benchmarks.md`), and a full run
//! (neither `--quick` nor `--only`) writes its table into `docs/benchmarks.md`, between
//! [`BEGIN`] and [`END`].

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::{build_dist, build_solver, check_args, flag_value};

/// The yardstick's source, relative to the workspace root.
const ANCHOR_SRC: &str = "../shared/anchor/anchor.cpp";
/// Where the yardstick is built, relative to the workspace root.
const ANCHOR_EXE: &str = "target/anchor";
/// Every measured row, one JSON object a line, relative to the workspace root.
const RUNS_LOG: &str = "docs/bench-runs.jsonl";
/// The document whose current table a full run rewrites, relative to the workspace root.
const BENCH_DOC: &str = "docs/benchmarks.md";
/// The markers around that table in [`BENCH_DOC`].
const BEGIN: &str = "<!-- bench:begin -->";
const END: &str = "<!-- bench:end -->";
/// Timed runs per program and workload by default, and under `--quick`.
const DEFAULT_RUNS: usize = 11;
const QUICK_RUNS: usize = 5;

/// One thing to time.
#[derive(Debug)]
struct Workload {
    name: &'static str,
    /// The stdin of each process of one sample; the processes run one after another.
    inputs: Vec<String>,
    /// Extra arguments for our solver.
    args: &'static [&'static str],
    /// Whether the yardstick runs it too (it knows only the 3x3 board).
    yardstick: bool,
    /// Instead of the yardstick, our solver with these arguments is what ours runs against.
    against: Option<&'static [&'static str]>,
    /// Also report each side's peak resident memory (from one extra `--json` run).
    memory: bool,
    /// What ours runs against is the plain reference solver (the `reference` example).
    oracle: bool,
    /// What ours runs against is our solver as `cargo build` links it (dynamically), not as
    /// shipped.
    cargo_build: bool,
    /// Left out under `--quick`.
    slow: bool,
    /// The known answer (every process's answer, space-separated), when there is one.
    expected: Option<String>,
    /// What ours runs against prints something else (the answer beside ours's exact counts):
    /// each side's output is checked against its own warm-up's.
    other_output: bool,
    /// Ours is an MPI job of this many ranks (`mpirun -np N`, the `mpi` build, `--mpi`).
    ranks: Option<usize>,
    /// Ours runs this many copies of each process at once (the other side runs one), all of
    /// which must print the same answer: what running side by side costs the machine's cores.
    copies: usize,
}

impl Workload {
    /// A workload of one process per input, with the yardstick beside ours.
    fn new(name: &'static str, inputs: Vec<String>) -> Self {
        Workload {
            name,
            inputs,
            args: &[],
            yardstick: true,
            against: None,
            memory: false,
            oracle: false,
            cargo_build: false,
            slow: false,
            expected: None,
            other_output: false,
            ranks: None,
            copies: 1,
        }
    }

    /// A workload of one process.
    fn one(name: &'static str, input: &str) -> Self {
        Workload::new(name, vec![input.to_string()])
    }

    fn args(self, args: &'static [&'static str]) -> Self {
        Workload { args, ..self }
    }

    fn expect(self, answer: &str) -> Self {
        Workload { expected: Some(answer.to_string()), ..self }
    }

    /// Ours only, and left out under `--quick`.
    fn general(self) -> Self {
        Workload { yardstick: false, slow: true, ..self }
    }

    /// Ours against ours with `args`, alternating; left out under `--quick`.
    fn against(self, args: &'static [&'static str]) -> Self {
        Workload { yardstick: false, against: Some(args), slow: true, ..self }
    }

    /// Ours against ours with `args`, which print another output than ours (`--perft`
    /// against the answer); left out under `--quick`.
    fn against_other_output(self, args: &'static [&'static str]) -> Self {
        Workload { other_output: true, ..self.against(args) }
    }

    /// Ours against the plain reference solver; left out under `--quick`.
    fn against_oracle(self) -> Self {
        Workload { yardstick: false, against: Some(&[]), oracle: true, slow: true, ..self }
    }

    /// Ours as shipped against ours as `cargo build` makes it; left out under `--quick`.
    fn against_cargo_build(self) -> Self {
        Workload { yardstick: false, against: Some(&[]), cargo_build: true, slow: true, ..self }
    }

    /// Ours as an MPI job of `n` ranks ([`Workload::ranks`]).
    fn ranks(self, n: usize) -> Self {
        Workload { ranks: Some(n), ..self }
    }

    /// Ours as `n` copies run at once ([`Workload::copies`]).
    fn side_by_side(self, n: usize) -> Self {
        Workload { copies: n, ..self }
    }

    /// Also measure peak resident memory.
    fn memory(self) -> Self {
        Workload { memory: true, ..self }
    }
}

/// Every workload, in report order.
fn workloads(root: &Path) -> Result<Vec<Workload>> {
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    };
    let mut inputs = Vec::new();
    let mut answers = Vec::new();
    for i in 1..=12 {
        let input = root.join(format!("fixtures/public/cg{i:02}.in"));
        answers.push(read(input.with_extension("out"))?.trim().to_string());
        inputs.push(read(input)?);
    }
    // The two public cases of depth 40: boards with six and four dice.
    let (deep_inputs, deep_answers) = (inputs[8..10].to_vec(), answers[8..10].join(" "));
    let answers = answers.join(" ");
    let public12 = Workload::new("public12", inputs.clone()).expect(&answers);
    let public12_one =
        Workload::new("public12-1thread", inputs.clone()).args(&["--threads", "1"]).expect(&answers);
    let public12_linked =
        Workload::new("public12 (vs cargo build)", inputs).against_cargo_build().expect(&answers);

    let empty3 = "40\n0 0 0\n0 0 0\n0 0 0\n";
    let empty4 = "16\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n";
    let random5 = "8\n0 0 3 0 0\n0 1 0 0 0\n0 0 0 0 2\n4 0 0 0 0\n0 0 0 1 0\n";
    let empty4_18 = "18\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n";
    let empty4_20 = "20\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n";
    let empty5_12 = "12\n0 0 0 0 0\n0 0 0 0 0\n0 0 0 0 0\n0 0 0 0 0\n0 0 0 0 0\n";
    let corner3 = "40\n1 0 0\n0 0 0\n0 0 0\n";
    let edge3 = "40\n0 1 0\n0 0 0\n0 0 0\n";
    // Two dice that no symmetry keeps in place: 8 lanes a position, and a frontier of the
    // corner's size (the public cases with dice fill their boards within a few milliseconds).
    let two3 = "40\n1 0 0\n0 0 0\n0 2 0\n";
    // Three dice, 8 lanes: a middle-sized frontier (at most 72 thousand positions, a few
    // megabytes), between the public cases' and the corner's.
    let three3 = "40\n4 0 0\n4 0 0\n0 0 1\n";
    Ok(vec![
        public12,
        public12_one,
        Workload::new("cg09+cg10-d40", deep_inputs.clone()).expect(&deep_answers),
        Workload::new("cg09+cg10-d40-1thread", deep_inputs).args(&["--threads", "1"]).expect(&deep_answers),
        Workload::one("empty3x3-d40", empty3).expect("503115192"),
        Workload::one("deep-d120", "120\n0 0 0\n0 1 0\n0 0 0\n"),
        Workload::one("empty3x3-d40-1thread", empty3).args(&["--threads", "1"]).expect("503115192"),
        public12_linked,
        Workload::one("empty4x4-d16 (vs 1 thread)", empty4).against(&["--threads", "1"]),
        Workload::one("empty4x4-d10 (vs plain oracle)", "10\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n")
            .against_oracle()
            .expect("689363388"),
        Workload::one("empty3x3-d40 (vs 1 thread)", empty3).against(&["--threads", "1"]),
        Workload::one("empty3x3-d40-1thread (vs 8 lanes)", empty3).args(&["--threads", "1"]).against(&[
            "--threads",
            "1",
            "--lanes",
        ]),
        Workload::one("corner3x3-d40", corner3).expect("4932872"),
        Workload::one("corner3x3-d40-1thread", corner3).args(&["--threads", "1"]).expect("4932872"),
        Workload::one("corner3x3-d40 (vs 1 thread)", corner3).against(&["--threads", "1"]),
        Workload::one("corner3x3-d40-1thread, 2 processes at once (vs 1 alone)", corner3)
            .args(&["--threads", "1"])
            .side_by_side(2)
            .against(&["--threads", "1"])
            .expect("4932872"),
        Workload::one("corner3x3-d40 --fill one-lock (vs --fill owned)", corner3)
            .args(&["--fill", "one-lock"])
            .against(&["--fill", "owned"])
            .expect("4932872"),
        Workload::one("empty3x3-d40 --fill one-lock (vs --fill owned)", empty3)
            .args(&["--fill", "one-lock"])
            .against(&["--fill", "owned"])
            .expect("503115192"),
        Workload::one("edge3x3-d40", edge3).expect("48694429"),
        Workload::one("edge3x3-d40 (vs 1 thread)", edge3).against(&["--threads", "1"]),
        Workload::one("twodice3x3-d40", two3).expect("635044267"),
        Workload::one("twodice3x3-d40-1thread", two3).args(&["--threads", "1"]).expect("635044267"),
        Workload::one("twodice3x3-d40 (vs 1 thread)", two3).against(&["--threads", "1"]),
        Workload::one("threedice3x3-d40", three3).expect("894533180"),
        Workload::one("threedice3x3-d40-1thread", three3).args(&["--threads", "1"]).expect("894533180"),
        Workload::one("threedice3x3-d40 (vs 1 thread)", three3).against(&["--threads", "1"]),
        Workload::one("empty5x5-d12", empty5_12).general().memory().expect("686111104"),
        Workload::one("empty5x5-d12 (vs portable backend)", empty5_12)
            .against(&["--backend", "portable"])
            .expect("686111104"),
        Workload::one("empty4x4-d20", empty4_20).general().memory().expect("276704540"),
        Workload::one("random5x5-d8", random5).general(),
        Workload::one("random5x5-d8 (vs 1 thread)", random5).against(&["--threads", "1"]),
        Workload::one("empty3x3-d40 --perft (vs the answer)", empty3)
            .args(&["--perft"])
            .against_other_output(&[]),
        Workload::one("empty4x4-d18 --perft (vs the answer)", empty4_18)
            .args(&["--perft"])
            .against_other_output(&[]),
        Workload::one("empty3x3-d40 --memory-limit 2M (vs in memory)", empty3)
            .args(&["--memory-limit", "2M"])
            .against(&[])
            .memory()
            .expect("503115192"),
        Workload::one("empty4x4-d18 2 ranks x 1 thread (vs 1 process x 2 threads)", empty4_18)
            .args(&["--threads", "1"])
            .ranks(2)
            .against(&["--threads", "2"])
            .expect("622264148"),
        Workload::one("empty4x4-d18 --memory-limit 64M (vs in memory)", empty4_18)
            .args(&["--memory-limit", "64M"])
            .against(&[])
            .memory()
            .expect("622264148"),
    ])
}

/// Median, min and max of one program's samples, in milliseconds.
#[derive(Debug, Clone, Copy)]
struct Summary {
    median: f64,
    min: f64,
    max: f64,
}

impl Summary {
    fn of(samples: &[Duration]) -> Self {
        let ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        let min = ms.iter().copied().fold(f64::INFINITY, f64::min);
        let max = ms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Summary { median: median(&ms), min, max }
    }

    fn spread(&self) -> String {
        format!("{:.1}–{:.1}", self.min, self.max)
    }
}

/// One line of the report.
#[derive(Debug)]
struct Row {
    name: &'static str,
    ours: Summary,
    /// The yardstick's or the other configuration's times (the workload's "against").
    yardstick: Option<Summary>,
    /// Peak resident memory (MiB) of ours and of the other configuration, when measured.
    memory: Option<(f64, Option<f64>)>,
    /// The `--baseline` binary's times, and the median of the rounds' ratios ours / baseline.
    baseline: Option<(Summary, f64)>,
}

/// The median of `values` (not empty).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Peak resident memory in MiB of one run of `exe` with `args` and `--json`, from the
/// report's `peak_memory_bytes`.
fn peak_mib(exe: &Path, args: &[&str], input: &str) -> Result<f64> {
    let mut all: Vec<&str> = args.to_vec();
    all.push("--json");
    let (_, out) = sample(exe, &all, &[input.to_string()])?;
    let bytes: f64 = out
        .split("\"peak_memory_bytes\":")
        .nth(1)
        .and_then(|r| r.trim_start().split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .context("no peak_memory_bytes in the JSON report")?;
    Ok(bytes / (1u64 << 20) as f64)
}

/// Runs `exe` once per input, one process after another, and returns the time taken by them
/// all and their answers (stdout trimmed, space-separated).
fn sample(exe: &Path, args: &[&str], inputs: &[String]) -> Result<(Duration, String)> {
    sample_copies(exe, args, inputs, 1)
}

/// [`sample`] with `copies` processes of each input at once, all waited for; each copy must
/// print the same answer, which stands for them all.
fn sample_copies(exe: &Path, args: &[&str], inputs: &[String], copies: usize) -> Result<(Duration, String)> {
    let mut answers = Vec::with_capacity(inputs.len());
    let start = Instant::now();
    for input in inputs {
        let mut children: Vec<(std::process::Child, std::io::Result<()>)> = Vec::with_capacity(copies);
        for _ in 0..copies {
            let spawned = Command::new(exe)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn();
            let mut child = match spawned {
                Ok(child) => child,
                Err(e) => {
                    // The copies already started are stopped: none outlives the bench.
                    for (mut c, _) in children {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    return Err(e).with_context(|| format!("cannot start {}", exe.display()));
                }
            };
            // A child that fails before reading its input breaks the pipe: its exit is
            // reported first.
            let fed = child.stdin.take().expect("stdin is piped").write_all(input.as_bytes());
            children.push((child, fed));
        }
        // Every copy is waited for before any is judged.
        let outs: Vec<_> = children.into_iter().map(|(c, fed)| (c.wait_with_output(), fed)).collect();
        let mut answer: Option<String> = None;
        for (out, fed) in outs {
            let out = out?;
            if !out.status.success() {
                bail!(
                    "{} exited with {}: {}",
                    exe.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            fed.with_context(|| format!("cannot feed {}", exe.display()))?;
            let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
            match &answer {
                Some(a) if *a != got => {
                    bail!("{}: copies run at once printed `{a}` and `{got}`", exe.display())
                }
                Some(_) => {}
                None => answer = Some(got),
            }
        }
        answers.push(answer.unwrap_or_default());
    }
    Ok((start.elapsed(), answers.join(" ")))
}

/// Our binaries.
#[derive(Debug)]
struct Ours {
    /// As shipped (`cargo xtask dist`): every row's "ours".
    dist: PathBuf,
    /// As `cargo build --release` links it.
    cargo_build: PathBuf,
    /// The plain reference solver.
    oracle: PathBuf,
    /// The `mpi` build, when a chosen workload needs it.
    mpi: Option<PathBuf>,
    /// The `--baseline` binary, when one is given.
    baseline: Option<PathBuf>,
}

/// Times one workload: a warm-up run of each program, then `runs` rounds of timed runs, each
/// program once a round (ours, then what it runs against; the `--baseline` binary last in
/// even rounds and first in odd ones); fails on any answer that differs from our warm-up's.
fn measure(w: &Workload, ours: &Ours, yardstick: Option<&Path>, runs: usize) -> Result<Row> {
    let check = |who: &str, got: &str, want: &str| {
        if got != want {
            bail!("{}: {who} printed `{got}`, expected `{want}`", w.name);
        }
        Ok(())
    };
    let yardstick = match w.against {
        Some(_) if w.oracle => Some(ours.oracle.as_path()),
        Some(_) if w.cargo_build => Some(ours.cargo_build.as_path()),
        Some(_) => Some(ours.dist.as_path()),
        None => yardstick.filter(|_| w.yardstick),
    };
    let mpi_exe = ours.mpi.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    let np = w.ranks.map(|n| n.to_string()).unwrap_or_default();
    // The baseline binary runs what ours runs, but not as an MPI job (it may lack `--mpi`).
    let baseline = ours.baseline.as_deref().filter(|_| w.ranks.is_none());
    let ours = ours.dist.as_path();
    let against_args: &[&str] = w.against.unwrap_or(&[]);
    // An MPI job: mpirun runs the `mpi` build with `--mpi` and the workload's arguments.
    let (program, our_args): (&Path, Vec<&str>) = match w.ranks {
        Some(_) => {
            let mut a: Vec<&str> = crate::verify::MPIRUN_ARGS.to_vec();
            a.extend(["-np", np.as_str(), mpi_exe.as_str(), "--mpi"]);
            a.extend(w.args);
            (Path::new("mpirun"), a)
        }
        None => (ours, w.args.to_vec()),
    };
    let run_ours = || {
        sample_copies(program, &our_args, &w.inputs, w.copies)
            .with_context(|| format!("{}: our solver", w.name))
    };
    let run_yardstick =
        |y| sample(y, against_args, &w.inputs).with_context(|| format!("{}: what ours runs against", w.name));
    let run_baseline = |b| {
        sample_copies(b, w.args, &w.inputs, w.copies)
            .with_context(|| format!("{}: the baseline binary", w.name))
    };

    let (_, answer) = run_ours()?;
    if let Some(expected) = &w.expected {
        check("our solver", &answer, expected)?;
    }
    // What the other side must print in every round: ours's answer, or its own warm-up's.
    let their_answer = match yardstick {
        Some(y) if w.other_output => Some(run_yardstick(y)?.1),
        Some(y) => {
            check("the yardstick", &run_yardstick(y)?.1, &answer)?;
            Some(answer.clone())
        }
        None => None,
    };
    // A baseline that cannot run the workload (an older binary without a flag, say) is left
    // out of this row; one that runs it and answers otherwise is an error.
    let baseline = match baseline.map(|b| (b, run_baseline(b))) {
        Some((b, Ok((_, got)))) => {
            check("the baseline binary", &got, &answer)?;
            Some(b)
        }
        Some((_, Err(e))) => {
            eprintln!(
                "bench: {}: the baseline binary failed its warm-up, left out of this row: {e:#}",
                w.name
            );
            None
        }
        None => None,
    };

    let mut our_times = Vec::with_capacity(runs);
    let mut yard_times = Vec::with_capacity(runs);
    let mut base_times = Vec::with_capacity(runs);
    let mut base_ratios = Vec::with_capacity(runs);
    for round in 0..runs {
        // The baseline runs first in every other round: a program's time depends on the one
        // before it (its memory comes back from the host, its caches are cold), and a fixed
        // order would put that into every ratio.
        let base_first = round % 2 == 1;
        let run_base = || baseline.map(run_baseline).transpose();
        let early = if base_first { run_base()? } else { None };
        let (ours_t, got) = run_ours()?;
        check("our solver", &got, &answer)?;
        our_times.push(ours_t);
        if let (Some(y), Some(want)) = (yardstick, &their_answer) {
            let (t, got) = run_yardstick(y)?;
            check("the yardstick", &got, want)?;
            yard_times.push(t);
        }
        let late = if base_first { None } else { run_base()? };
        if let Some((t, got)) = early.or(late) {
            check("the baseline binary", &got, &answer)?;
            base_times.push(t);
            base_ratios.push(ours_t.as_secs_f64() / t.as_secs_f64());
        }
    }
    let memory = if w.memory {
        // The other side's only where it is our solver in another configuration.
        let other = match w.against {
            Some(_) => Some(peak_mib(ours, against_args, &w.inputs[0])?),
            None => None,
        };
        Some((peak_mib(ours, w.args, &w.inputs[0])?, other))
    } else {
        None
    };
    Ok(Row {
        name: w.name,
        ours: Summary::of(&our_times),
        yardstick: yardstick.map(|_| Summary::of(&yard_times)),
        memory,
        baseline: baseline.map(|_| (Summary::of(&base_times), median(&base_ratios))),
    })
}

/// The yardstick's binary, built when missing or older than its source; `Err(reason)` when
/// it cannot be had.
fn yardstick(root: &Path) -> Result<PathBuf, String> {
    let src = root.join(ANCHOR_SRC);
    if !src.is_file() {
        return Err(format!("{ANCHOR_SRC} not found"));
    }
    let exe = root.join(ANCHOR_EXE);
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if matches!((mtime(&exe), mtime(&src)), (Some(e), Some(s)) if e >= s) {
        return Ok(exe);
    }
    eprintln!("bench: g++ -O3 -march=native -o {ANCHOR_EXE} {ANCHOR_SRC}");
    let out = Command::new("g++")
        .args(["-O3", "-march=native", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run g++: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().find(|l| l.contains("error")).or_else(|| err.lines().next_back());
        let first = first.unwrap_or("no message").trim();
        return Err(format!("g++ failed with {}: {first}", out.status));
    }
    Ok(exe)
}

/// The stdout of a command, trimmed; `None` when it cannot run or fails.
fn output_of(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok().filter(|o| o.status.success())?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// What a run was measured on and with: the head of its report and of each of its records.
#[derive(Debug)]
struct Meta {
    /// When, in UTC: `2026-11-29T22:00:51Z`; `None` when `date` cannot run.
    date: Option<String>,
    cpu: Cpu,
    /// Threads the machine runs at once.
    cores: usize,
    /// `git rev-parse --short HEAD`; `None` outside git.
    commit: Option<String>,
    /// Tracked files had uncommitted changes.
    dirty: bool,
    /// Our solver's instruction set, as `--json` names it.
    backend: String,
    /// Timed runs a program and workload.
    runs: usize,
    /// How the yardstick was had, or why not.
    yardstick: String,
    /// The `--baseline` binary, as given.
    baseline: Option<String>,
}

impl Meta {
    /// The date, the machine and the commit, read now.
    fn read(root: &Path) -> Meta {
        let git = |args: &[&str]| output_of(Command::new("git").arg("-C").arg(root).args(args));
        Meta {
            date: output_of(Command::new("date").args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])),
            cpu: std::fs::read_to_string("/proc/cpuinfo").map(|text| Cpu::parse(&text)).unwrap_or_default(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            commit: git(&["rev-parse", "--short", "HEAD"]),
            dirty: git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty()),
            backend: String::new(),
            runs: 0,
            yardstick: String::new(),
            baseline: None,
        }
    }
}

/// This machine's CPU, described as [`Cpu::describe`] does.
pub(crate) fn cpu_description() -> String {
    Cpu::parse(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default()).describe()
}

/// The CPU, from `/proc/cpuinfo` (Linux; unknown elsewhere).
#[derive(Debug, Default, PartialEq)]
struct Cpu {
    /// `model name`, e.g. `AMD EPYC`.
    name: Option<String>,
    /// `cpu family`.
    family: Option<u32>,
    /// `model`.
    model: Option<u32>,
}

impl Cpu {
    /// The first processor's figures in the text of `/proc/cpuinfo`.
    fn parse(cpuinfo: &str) -> Cpu {
        let mut cpu = Cpu::default();
        for line in cpuinfo.lines() {
            // A blank line ends the first processor's block.
            if line.trim().is_empty() && cpu != Cpu::default() {
                break;
            }
            let Some((key, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            match key.trim() {
                "model name" => cpu.name = Some(value.to_string()),
                "cpu family" => cpu.family = value.parse().ok(),
                "model" => cpu.model = value.parse().ok(),
                _ => {}
            }
        }
        cpu
    }

    /// `AMD EPYC (family 25, model 17)`.
    fn describe(&self) -> String {
        let name = self.name.as_deref().unwrap_or("an unknown CPU");
        match (self.family, self.model) {
            (Some(family), Some(model)) => format!("{name} (family {family}, model {model})"),
            _ => name.to_string(),
        }
    }
}

/// What a row's other side is: the text of its name's `(vs ...)`, else the yardstick when it
/// ran; `None` when nothing ran beside ours.
fn against_label(row: &Row) -> Option<&str> {
    match row.name.rsplit_once("(vs ") {
        Some((_, rest)) => Some(rest.trim_end().trim_end_matches(')')),
        None => row.yardstick.map(|_| "yardstick"),
    }
}

/// The report: where, when and how the run was measured, then the table of its rows.
fn report(meta: &Meta, rows: &[Row]) -> String {
    let date = meta.date.as_deref().map_or("at an unknown date".to_string(), |d| {
        format!("on {}", d.replacen('T', " ", 1).replace('Z', " UTC"))
    });
    let commit = match (&meta.commit, meta.dirty) {
        (Some(c), false) => format!("commit {c}"),
        (Some(c), true) => format!("commit {c} with uncommitted changes"),
        (None, _) => "outside git".to_string(),
    };
    let mut out = format!(
        "Measured {date}, {commit}, on {}, {} cores: `cargo xtask dist`'s binary, backend {}, {} \
         timed runs a program after one warm-up. Yardstick: {}.",
        meta.cpu.describe(),
        meta.cores,
        meta.backend,
        meta.runs,
        meta.yardstick
    );
    if let Some(b) = &meta.baseline {
        write!(out, " Baseline binary: `{b}`.").expect("writing to a String");
    }
    out + "\n\n" + &table(rows)
}

/// The markdown table of the rows; the baseline binary's columns only when it ran.
fn table(rows: &[Row]) -> String {
    let baseline = rows.iter().any(|r| r.baseline.is_some());
    let mut out = String::from(
        "| workload | ours median (ms) | ours spread (min–max ms) | against median (ms) \
         | against spread | ratio ours/against | peak MiB (ours / against) |",
    );
    out += if baseline { " baseline median (ms) | ours/baseline (paired) |\n" } else { "\n" };
    out += "|---|---:|---:|---:|---:|---:|---:|";
    out += if baseline { "---:|---:|\n" } else { "\n" };
    for r in rows {
        let (median, spread, ratio) = match r.yardstick {
            Some(y) => (format!("{:.1}", y.median), y.spread(), format!("{:.2}", r.ours.median / y.median)),
            None => ("—".into(), "—".into(), "—".into()),
        };
        let memory = r.memory.map_or("—".to_string(), |(a, b)| match b {
            Some(b) => format!("{a:.0} / {b:.0}"),
            None => format!("{a:.0} / —"),
        });
        write!(
            out,
            "| {} | {:.1} | {} | {median} | {spread} | {ratio} | {memory} |",
            r.name,
            r.ours.median,
            r.ours.spread()
        )
        .expect("writing to a String");
        if baseline {
            match r.baseline {
                Some((b, paired)) => write!(out, " {:.1} | {paired:.2} |", b.median),
                None => write!(out, " — | — |"),
            }
            .expect("writing to a String");
        }
        out.push('\n');
    }
    out
}

/// One row as one line of JSON, its fields in the order `docs/benchmarks.md` lists them.
fn record(meta: &Meta, row: &Row) -> String {
    let ms = |x: f64| Value::from((x * 1e3).round() / 1e3);
    let ratio = |x: f64| Value::from((x * 1e4).round() / 1e4);
    let mib = |x: f64| Value::from((x * 10.0).round() / 10.0);
    let or_null = |x: Option<Value>| x.unwrap_or(Value::Null);
    let y = row.yardstick;
    let b = row.baseline;
    let fields: [(&str, Value); 26] = [
        ("date", or_null(meta.date.clone().map(Value::from))),
        ("commit", or_null(meta.commit.clone().map(Value::from))),
        ("dirty", Value::from(meta.dirty)),
        ("cpu", or_null(meta.cpu.name.clone().map(Value::from))),
        ("cpu_family", or_null(meta.cpu.family.map(Value::from))),
        ("cpu_model", or_null(meta.cpu.model.map(Value::from))),
        ("cores", Value::from(meta.cores)),
        ("backend", Value::from(meta.backend.clone())),
        ("binary", Value::from("dist")),
        ("runs", Value::from(meta.runs)),
        ("workload", Value::from(row.name)),
        ("ours_ms", ms(row.ours.median)),
        ("ours_min_ms", ms(row.ours.min)),
        ("ours_max_ms", ms(row.ours.max)),
        ("against", or_null(against_label(row).map(Value::from))),
        ("against_ms", or_null(y.map(|y| ms(y.median)))),
        ("against_min_ms", or_null(y.map(|y| ms(y.min)))),
        ("against_max_ms", or_null(y.map(|y| ms(y.max)))),
        ("ratio", or_null(y.map(|y| ratio(row.ours.median / y.median)))),
        ("ours_peak_mib", or_null(row.memory.map(|(m, _)| mib(m)))),
        ("against_peak_mib", or_null(row.memory.and_then(|(_, m)| m).map(mib))),
        ("baseline", or_null(b.and(meta.baseline.clone()).map(Value::from))),
        ("baseline_ms", or_null(b.map(|(s, _)| ms(s.median)))),
        ("baseline_min_ms", or_null(b.map(|(s, _)| ms(s.min)))),
        ("baseline_max_ms", or_null(b.map(|(s, _)| ms(s.max)))),
        ("baseline_ratio", or_null(b.map(|(_, r)| ratio(r)))),
    ];
    let body: Vec<String> =
        fields.iter().map(|(key, value)| format!("{}:{value}", Value::from(*key))).collect();
    format!("{{{}}}", body.join(","))
}

/// Appends each row to the run log, one JSON object a line.
fn append_runs(path: &Path, meta: &Meta, rows: &[Row]) -> Result<()> {
    let lines: String = rows.iter().map(|r| record(meta, r) + "\n").collect();
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut log| log.write_all(lines.as_bytes()))
        .with_context(|| format!("cannot append to {}", path.display()))
}

/// `doc` with the text between [`BEGIN`] and [`END`] replaced by `section`.
fn replace_section(doc: &str, section: &str) -> Result<String> {
    let begin = doc.find(BEGIN).with_context(|| format!("no `{BEGIN}` marker"))? + BEGIN.len();
    let end =
        doc[begin..].find(END).map(|i| begin + i).with_context(|| format!("no `{END}` after `{BEGIN}`"))?;
    Ok(format!("{}\n{}\n{}", &doc[..begin], section.trim(), &doc[end..]))
}

/// Writes `section` as the current table of the benchmarks document.
fn rewrite_current(path: &Path, section: &str) -> Result<()> {
    let doc = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let doc = replace_section(&doc, section).with_context(|| format!("{}", path.display()))?;
    std::fs::write(path, doc).with_context(|| format!("cannot write {}", path.display()))
}

/// A new copy of the program at `exe`, in `target/bench-programs/`, to time instead of it.
///
/// On this VM an executable whose file has sat in the page cache for a while starts more
/// slowly than a new copy of it (seen: 0.62 against 0.53 ms for a whole process of public
/// cg03, the same binary): the yardstick, built once, would have run the older file and our
/// solver, rebuilt with each change, the newer one. Both are copied afresh before each bench.
fn fresh_copy(root: &Path, exe: &Path, name: &str) -> Result<PathBuf> {
    let dir = root.join("target/bench-programs");
    std::fs::create_dir_all(&dir)?;
    let copy = dir.join(name);
    // A new file, not an overwrite of the old one's pages.
    let _ = std::fs::remove_file(&copy);
    std::fs::copy(exe, &copy)
        .with_context(|| format!("cannot copy {} to {}", exe.display(), copy.display()))?;
    Ok(copy)
}

/// `cargo xtask bench [--quick] [--runs N] [--only NAME] [--baseline PATH]`.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    check_args("bench", args, &["--quick"], &[("--runs", "N"), ("--only", "NAME"), ("--baseline", "PATH")])?;
    let mut meta = Meta::read(root);
    let quick = args.iter().any(|a| a == "--quick");
    let runs: usize = flag_value(args, "--runs")?.unwrap_or(if quick { QUICK_RUNS } else { DEFAULT_RUNS });
    if runs == 0 {
        bail!("--runs: must be at least 1");
    }
    let only: Option<String> = flag_value(args, "--only")?;
    // Absolute, or from the workspace root (the current directory by now).
    let baseline: Option<String> = flag_value(args, "--baseline")?;
    if let Some(b) = &baseline {
        if !Path::new(b).is_file() {
            bail!("--baseline: no file `{b}` (absolute, or from the workspace root)");
        }
    }

    let mut chosen = workloads(root)?;
    match &only {
        Some(name) => {
            let names: Vec<&str> = chosen.iter().map(|w| w.name).collect();
            // The exact name, else the one it begins.
            let name = match names.iter().find(|n| **n == name.as_str()) {
                Some(_) => name.clone(),
                None => names
                    .iter()
                    .find(|n| n.starts_with(name.as_str()))
                    .map_or(name.clone(), |n| n.to_string()),
            };
            if !names.contains(&name.as_str()) {
                bail!("--only: no workload `{name}` (one of: {})", names.join(", "));
            }
            chosen.retain(|w| w.name == name);
        }
        None if quick => chosen.retain(|w| !w.slow),
        None => {}
    }

    // MPI rows need Open MPI: without it they are left out, said on stderr.
    let has_mpi = output_of(Command::new("mpirun").arg("--version")).is_some();
    if !has_mpi && chosen.iter().any(|w| w.ranks.is_some()) {
        eprintln!("bench: no mpirun: the MPI rows are left out (apt-get install openmpi-bin libopenmpi-dev libclang-dev)");
        chosen.retain(|w| w.ranks.is_none());
    }
    let mpi = match chosen.iter().any(|w| w.ranks.is_some()) {
        true => Some(crate::verify::build_mpi_solver(root, "release")?),
        false => None,
    };
    let oracle = crate::build_reference(root)?;
    let ours = Ours {
        dist: build_dist(root)?,
        cargo_build: build_solver(root)?,
        oracle,
        mpi: mpi.as_ref().map(|m| fresh_copy(root, m, "solver-mpi")).transpose()?,
        baseline: baseline.as_ref().map(|b| fresh_copy(root, Path::new(b), "solver-baseline")).transpose()?,
    };
    let backend = crate::verify::backend(&ours.dist)?;
    let ours = Ours {
        dist: fresh_copy(root, &ours.dist, "solver")?,
        cargo_build: fresh_copy(root, &ours.cargo_build, "solver-cargo-build")?,
        ..ours
    };
    let yardstick = yardstick(root).and_then(|y| fresh_copy(root, &y, "anchor").map_err(|e| e.to_string()));
    let yardstick_note = match &yardstick {
        Ok(_) => format!("`g++ -O3 -march=native` build of {ANCHOR_SRC}"),
        Err(reason) => {
            eprintln!("yardstick: skipped ({reason})");
            format!("skipped ({reason})")
        }
    };
    eprintln!("bench: {runs} timed runs per program and workload; our solver's backend: {backend}");

    let mut rows = Vec::with_capacity(chosen.len());
    for w in &chosen {
        eprintln!("bench: {}", w.name);
        rows.push(measure(w, &ours, yardstick.as_deref().ok(), runs)?);
    }

    meta.backend = backend;
    meta.runs = runs;
    meta.yardstick = yardstick_note;
    meta.baseline = baseline;
    let mut report = report(&meta, &rows);
    if let Some(mpi) = ours.mpi.as_ref().filter(|_| !quick) {
        eprintln!("bench: exchange volumes of the empty 4x4 to depth 20 (2 ranks) and the cluster model");
        report += &cluster_model(mpi, 16, 10.0)?;
    }
    print!("{report}");

    append_runs(&root.join(RUNS_LOG), &meta, &rows)?;
    eprintln!("bench: {} rows appended to {RUNS_LOG}", rows.len());
    if quick || only.is_some() {
        eprintln!("bench: --quick and --only leave the current table of {BENCH_DOC} as it is");
    } else {
        rewrite_current(&root.join(BENCH_DOC), &report)?;
        eprintln!("bench: the current table of {BENCH_DOC} rewritten");
    }
    Ok(())
}

/// The exchange volume per depth of the empty 4x4 to depth 20 on 2 ranks of 1 thread
/// (`--stats`, so every depth is stored and its figures kept), and a model of each depth on
/// `machines` machines of one rank each with links of `gbit` Gbit/s: a successor goes to
/// another rank with probability `(m - 1) / m` (measured at 1/2 with 2 ranks), each machine
/// sends and receives its share over its own link at full speed, and its compute is the two
/// ranks' compute shared out evenly; a depth's exchanges and compute add up (the rounds are
/// bulk-synchronous).
fn cluster_model(mpi: &Path, machines: usize, gbit: f64) -> Result<String> {
    let mut child = crate::verify::mpirun()
        .args(["-np", "2"])
        .arg(mpi)
        .args(["--mpi", "--threads", "1", "--stats", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start mpirun")?;
    child.stdin.take().expect("piped").write_all(b"20\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n")?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("the cluster model's run failed: {}", out.status);
    }
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("the MPI run's --json output")?;
    let m = machines as f64;
    let bytes_per_s = gbit * 1e9 / 8.0;
    let mut text = format!(
        "\nExchange volume of the empty 4x4, 2 ranks of 1 thread (`--stats`: every depth stored), and each \
         depth modelled on {machines} machines with {gbit} Gbit/s links (the bytes scaled by ({machines} - 1) / {machines} \
         over 1/2, each machine's share over its own link; compute: the 2 ranks' compute shared out over {machines}; \
         exchange and compute added):\n\n\
         | depth | positions | sent by 2 ranks (MiB) | exchanges | 2 ranks: seconds | of which exchange | \
         {machines} machines: MiB a machine | network s | compute s | depth s |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    let (mut total_2, mut total_m) = (0.0, 0.0);
    for s in report["stats"].as_array().into_iter().flatten() {
        let spread = &s["ranks"];
        let sent = spread["bytes_sent"].as_f64().unwrap_or(0.0);
        let exchange = spread["exchange_seconds"].as_f64().unwrap_or(0.0);
        let seconds = s["seconds"].as_f64().unwrap_or(0.0);
        let compute = (seconds - exchange).max(0.0) * 2.0 / m;
        let per_machine = sent * ((m - 1.0) / m) / 0.5 / m;
        let network = per_machine / bytes_per_s;
        total_2 += seconds;
        total_m += compute + network;
        writeln!(
            text,
            "| {} | {} | {:.1} | {} | {:.3} | {:.3} | {:.1} | {:.4} | {:.4} | {:.4} |",
            s["depth"],
            s["states"],
            sent / (1 << 20) as f64,
            spread["exchanges"],
            seconds,
            exchange,
            per_machine / (1 << 20) as f64,
            network,
            compute,
            compute + network
        )
        .expect("writing to a String");
    }
    writeln!(
        text,
        "\nWhole search: {total_2:.2} s on 2 ranks here; modelled {total_m:.2} s on {machines} machines."
    )
    .expect("writing to a String");
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_at_once_give_their_one_answer() {
        let inputs = vec!["40\n".to_string(), "7\n".to_string()];
        let (_, answers) = sample_copies(Path::new("cat"), &[], &inputs, 3).unwrap();
        assert_eq!(answers, "40 7");
    }

    #[test]
    fn copies_that_disagree_fail_the_sample() {
        // Each copy prints its own process id.
        let err = sample_copies(Path::new("sh"), &["-c", "cat >/dev/null; echo $$"], &["x".to_string()], 2)
            .unwrap_err();
        assert!(err.to_string().contains("copies run at once printed"), "{err}");
    }

    #[test]
    fn a_failing_copy_fails_the_sample() {
        let err = sample_copies(Path::new("sh"), &["-c", "cat >/dev/null; exit 3"], &["x".to_string()], 2)
            .unwrap_err();
        assert!(err.to_string().contains("exited with"), "{err}");
    }

    fn summary(median: f64, min: f64, max: f64) -> Summary {
        Summary { median, min, max }
    }

    fn meta() -> Meta {
        Meta {
            date: Some("2026-11-29T22:00:51Z".into()),
            cpu: Cpu { name: Some("AMD EPYC".into()), family: Some(25), model: Some(17) },
            cores: 2,
            commit: Some("0cc8412".into()),
            dirty: false,
            backend: "avx2".into(),
            runs: 11,
            yardstick: "built".into(),
            baseline: Some("old/solver".into()),
        }
    }

    #[test]
    fn the_first_processor_names_the_cpu() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\
                    model name\t: AMD EPYC\n\nprocessor\t: 1\nmodel name\t: Other\n";
        let cpu = Cpu::parse(info);
        assert_eq!(cpu, Cpu { name: Some("AMD EPYC".into()), family: Some(25), model: Some(17) });
        assert_eq!(cpu.describe(), "AMD EPYC (family 25, model 17)");
        assert_eq!(Cpu::parse("").describe(), "an unknown CPU");
    }

    #[test]
    fn a_row_is_one_json_line_with_every_field() {
        let against = Row {
            name: "corner3x3-d40 (vs 1 thread)",
            ours: summary(57.5, 56.4, 70.2),
            yardstick: Some(summary(91.1, 89.1, 107.9)),
            memory: None,
            baseline: Some((summary(60.0, 59.0, 61.0), 0.9583)),
        };
        let line = record(&meta(), &against);
        assert!(!line.contains('\n'));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v.as_object().unwrap().len(), 26);
        assert_eq!(v["against"], "1 thread");
        assert_eq!(v["ratio"], 0.6312);
        assert_eq!(v["baseline"], "old/solver");
        assert_eq!(v["baseline_ratio"], 0.9583);
        assert_eq!(v["cpu_family"], 25);
        assert!(line.starts_with("{\"date\":\"2026-11-29T22:00:51Z\",\"commit\":\"0cc8412\","), "{line}");

        let alone = Row {
            name: "empty4x4-d20",
            yardstick: None,
            memory: Some((518.0, None)),
            baseline: None,
            ..against
        };
        let v: Value = serde_json::from_str(&record(&meta(), &alone)).unwrap();
        assert_eq!((v["against"].clone(), v["ratio"].clone()), (Value::Null, Value::Null));
        assert_eq!((v["ours_peak_mib"].clone(), v["baseline"].clone()), (Value::from(518.0), Value::Null));
        let yardstick = Row { name: "public12", yardstick: Some(summary(39.4, 38.3, 43.5)), ..alone };
        assert_eq!(against_label(&yardstick), Some("yardstick"));
    }

    #[test]
    fn the_table_gains_the_baseline_columns_only_when_it_ran() {
        let row = |baseline| Row {
            name: "public12",
            ours: summary(27.4, 26.4, 33.1),
            yardstick: Some(summary(39.4, 38.3, 43.5)),
            memory: None,
            baseline,
        };
        let plain = report(&Meta { baseline: None, ..meta() }, &[row(None)]);
        assert!(
            plain.starts_with("Measured on 2026-11-29 22:00:51 UTC, commit 0cc8412, on AMD EPYC"),
            "{plain}"
        );
        assert!(plain.contains("| public12 | 27.4 | 26.4–33.1 | 39.4 | 38.3–43.5 | 0.70 | — |\n"), "{plain}");
        assert!(!plain.contains("paired"));
        let with = table(&[row(Some((summary(28.0, 27.0, 29.0), 0.981))), row(None)]);
        assert!(
            with.contains("| ours/baseline (paired) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"),
            "{with}"
        );
        assert!(with.contains("| 0.70 | — | 28.0 | 0.98 |\n"), "{with}");
        assert!(with.ends_with("| 0.70 | — | — | — |\n"), "{with}");
    }

    #[test]
    fn the_current_table_goes_between_the_markers() {
        let doc = format!("# Benchmarks\n\n{BEGIN}\nold table\n{END}\n\n## Notes\n");
        let new = replace_section(&doc, "new table\n").unwrap();
        assert_eq!(new, format!("# Benchmarks\n\n{BEGIN}\nnew table\n{END}\n\n## Notes\n"));
        assert_eq!(replace_section(&new, "new table").unwrap(), new);
        assert!(replace_section("# no markers\n", "x").is_err());
        assert!(replace_section(&format!("{END}\n{BEGIN}\n"), "x").is_err());
    }
}

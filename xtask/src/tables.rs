//! `cargo xtask tables`: exact counts of the game (perft tables) into `docs/tables/`.
//!
//! Each table is one run of `solver --perft`, its rows streamed into
//! `target/tables/NAME.rows` as the depths end. Boards of up to 9 cells are played to the end
//! of every game. Larger ones run until their time is up, with a checkpoint in
//! `target/tables/NAME.ck` and their partitions on disk past the memory limit: a table whose
//! time ran out is stopped (its last finished depth checkpointed) and the next
//! `cargo xtask tables --only NAME` resumes it. Each table is written as `NAME.md` (the rows,
//! how they were made, the cross-checks) and `NAME.svg` (positions and boards per depth, on a
//! log scale), and `README.md` lists them.
//!
//! Cross-checks: the first depths against the plain reference (`examples/reference.rs`), and
//! the depths that take seconds again with every partition on disk and, when `mpirun` and an
//! MPI build are at hand, as 2 MPI ranks; a table whose check disagrees is not written.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::{build_reference, build_solver, check_args, run_cmd};

/// One table to make.
struct Spec {
    name: String,
    rows: usize,
    cols: usize,
    /// Minutes it may take (0: none, the whole game).
    minutes: u64,
}

/// What a run of the solver left: its rows, and how it ran.
#[derive(Default)]
struct Made {
    rows: Vec<Row>,
    seconds: f64,
    peak_bytes: u64,
    written_bytes: u64,
    /// The summary line of a whole game (stderr), if every game ended.
    summary: Option<String>,
    /// True when the time ran out before the depth asked for.
    stopped: bool,
    /// Why the count stopped short, when the solver did (a depth that did not fit on the
    /// disk, say): its message.
    failed: Option<String>,
}

/// A row: depth, perft, ended, boards (decimal text: counts pass 2^64).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row(u32, String, String, String);

/// Every table: the boards of up to 9 cells (one of each pair of transposed shapes: they
/// have the same tables), 2x5, 2x6 and 3x4, the empty 4x4 and 5x5.
fn specs(minutes: u64) -> Vec<Spec> {
    let mut v = Vec::new();
    for rows in 1..=3 {
        for cols in rows..=9 {
            if rows * cols <= 9 {
                v.push(Spec { name: format!("{rows}x{cols}"), rows, cols, minutes: 0 });
            }
        }
    }
    for (rows, cols, m) in
        [(2, 5, minutes / 4), (2, 6, minutes / 4), (3, 4, minutes / 4), (4, 4, minutes), (5, 5, minutes)]
    {
        v.push(Spec { name: format!("{rows}x{cols}"), rows, cols, minutes: m.max(1) });
    }
    v
}

/// `cargo xtask tables [--only NAME] [--minutes N]`.
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    check_args("tables", args, &[], &[("--only", "NAME"), ("--minutes", "N")])?;
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1));
    let minutes =
        value("--minutes").map(|m| m.parse::<u64>()).transpose().context("--minutes")?.unwrap_or(60);
    let only = value("--only");
    let solver = build_solver(root)?;
    let reference = build_reference(root)?;
    let (work, out) = (root.join("target/tables"), root.join("docs/tables"));
    std::fs::create_dir_all(&work)?;
    std::fs::create_dir_all(&out)?;
    let mpi = mpi_solver(root);
    for spec in specs(minutes).into_iter().filter(|s| only.is_none_or(|o| *o == s.name)) {
        println!(
            "{}: counting{}",
            spec.name,
            if spec.minutes > 0 { format!(" for up to {} min", spec.minutes) } else { String::new() }
        );
        let made = count(&solver, &spec, &work)?;
        let checks = cross_check(&solver, &reference, mpi.as_deref(), &spec, &made, &work)?;
        std::fs::write(out.join(format!("{}.md", spec.name)), page(&spec, &made, &checks, root))?;
        std::fs::write(out.join(format!("{}.svg", spec.name)), plot(&spec, &made.rows))?;
        println!("{}: {} depths in {:.0} s, written", spec.name, made.rows.len(), made.seconds);
    }
    std::fs::write(out.join("README.md"), index(&out)?)?;
    Ok(())
}

/// The input of the empty `spec` board at `depth`.
fn input(spec: &Spec, depth: u32) -> String {
    let row = vec!["0"; spec.cols].join(" ");
    format!("{depth}\n{}", format!("{row}\n").repeat(spec.rows))
}

/// Runs (or resumes) the count of `spec`, its rows streamed into `work/NAME.rows`.
fn count(solver: &Path, spec: &Spec, work: &Path) -> Result<Made> {
    let rows_file = work.join(format!("{}.rows", spec.name));
    let ck = work.join(format!("{}.ck", spec.name));
    let input_file = work.join(format!("{}.in", spec.name));
    std::fs::write(&input_file, input(spec, u32::MAX))?;
    let mut cmd = Command::new(solver);
    cmd.args(["--perft", "--no-progress"]).arg(&input_file);
    // `checkpoint` is the manifest a checkpoint directory holds (solver's checkpoint.rs).
    let resume = spec.minutes > 0 && ck.join("checkpoint").exists() && rows_file.exists();
    let mut rows = if resume { read_rows(&std::fs::read_to_string(&rows_file)?) } else { Vec::new() };
    if spec.minutes > 0 {
        let scratch = work.join("scratch");
        std::fs::create_dir_all(&scratch)?;
        // A long count keeps as much of its frontier in memory as the machine leaves it: each
        // partition kept there is one that does not take disk space as unmerged records.
        cmd.arg("--work-dir").arg(&scratch).arg("--memory-limit").arg(memory_limit()?.to_string());
        if resume {
            cmd.arg("--resume").arg(&ck);
        } else {
            if ck.exists() {
                std::fs::remove_dir_all(&ck)?;
            }
            cmd.arg("--checkpoint").arg(&ck);
        }
    }
    let log = work.join(format!("{}.log", spec.name));
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(resume)
        .write(true)
        .truncate(!resume)
        .open(&rows_file)?;
    let mut child = cmd.stdout(appended).stderr(std::fs::File::create(&log)?).stdin(Stdio::null()).spawn()?;
    let (started, mut made) = (Instant::now(), Made::default());
    let budget = Duration::from_secs(spec.minutes * 60);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
        made.peak_bytes = made.peak_bytes.max(proc_figure(&status, "VmHWM:") * 1024);
        let io = std::fs::read_to_string(format!("/proc/{}/io", child.id())).unwrap_or_default();
        made.written_bytes = made.written_bytes.max(proc_figure(&io, "write_bytes:"));
        if spec.minutes > 0 && started.elapsed() > budget && !made.stopped {
            // SIGTERM: the solver removes its scratch; the checkpoint keeps the last depth.
            run_cmd(Command::new("kill").args(["-TERM", &child.id().to_string()]))?;
            made.stopped = true;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    made.seconds = started.elapsed().as_secs_f64();
    let err = std::fs::read_to_string(&log)?;
    if !status.success() && !made.stopped {
        // A count that made depths keeps them: the page says where and why it stopped.
        let message = err.lines().find(|l| l.starts_with("error:")).map(str::to_string);
        if spec.minutes == 0 || !rows_file.exists() || message.is_none() {
            bail!("{}: the solver failed ({status}): {err}", spec.name);
        }
        made.failed = message;
    }
    let new = read_rows(&std::fs::read_to_string(&rows_file)?);
    if resume && new.first().map(|r| r.0) != rows.first().map(|r| r.0) {
        bail!("{}: the rows file does not start at depth 1", spec.name);
    }
    rows = new;
    if rows.iter().enumerate().any(|(i, r)| r.0 as usize != i + 1) {
        bail!(
            "{}: rows missing in {} (a depth checkpointed but not printed): remove {} and count again",
            spec.name,
            rows_file.display(),
            ck.display()
        );
    }
    made.rows = rows;
    made.summary = err.lines().find(|l| l.starts_with("every game over")).map(str::to_string);
    Ok(made)
}

/// The memory a long count may take: half the physical memory (a run's peak passes its limit
/// by the buffers of the depth in progress), which leaves the rest to the system and to the
/// builds that run beside it.
fn memory_limit() -> Result<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").context("/proc/meminfo")?;
    Ok(proc_figure(&meminfo, "MemTotal:") * 1024 / 2)
}

/// The rows of `d perft ended boards` lines.
fn read_rows(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let depth = f.first()?.parse().ok()?;
            (f.len() == 4).then(|| Row(depth, f[1].to_string(), f[2].to_string(), f[3].to_string()))
        })
        .collect()
}

/// A `/proc` figure after `key` (its first number), 0 when absent.
fn proc_figure(text: &str, key: &str) -> u64 {
    let line = text.lines().find_map(|l| l.strip_prefix(key));
    line.and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The `mpi` build of the solver when `mpirun` is at hand and the build succeeds.
fn mpi_solver(root: &Path) -> Option<PathBuf> {
    let have = Command::new("mpirun").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if !have.is_ok_and(|s| s.success()) {
        return None;
    }
    crate::verify::build_mpi_solver(root, "release").ok()
}

/// The cross-checks of a table, one line each; fails on a disagreement.
fn cross_check(
    solver: &Path,
    reference: &Path,
    mpi: Option<&Path>,
    spec: &Spec,
    made: &Made,
    work: &Path,
) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    // The plain reference: depths whose boards it holds in a few seconds.
    let plain_depth =
        made.rows.iter().take_while(|r| r.3.parse::<u64>().is_ok_and(|b| b < 300_000)).count() as u32;
    if plain_depth > 0 {
        let got = output(Command::new(reference).arg("--perft"), &input(spec, plain_depth))?;
        compare(spec, "the plain reference", &got, &made.rows[..plain_depth as usize])?;
        lines.push(format!(
            "depths 1 to {plain_depth} against the plain reference (whole boards, 128-bit counts)"
        ));
    }
    // Every partition on disk, and 2 MPI ranks: the depths of about a minute.
    let quick =
        made.rows.iter().take_while(|r| r.3.parse::<u64>().is_ok_and(|b| b < 20_000_000)).count() as u32;
    let text = input(spec, quick);
    let scratch = work.join("scratch");
    std::fs::create_dir_all(&scratch)?;
    let disk = output(
        Command::new(solver)
            .args(["--perft", "--no-progress", "--memory-limit", "1M", "--work-dir"])
            .arg(&scratch),
        &text,
    )?;
    compare(spec, "partitions on disk", &disk, &made.rows[..quick as usize])?;
    lines.push(format!("depths 1 to {quick} again with every partition on disk (--memory-limit 1M)"));
    if let Some(mpi) = mpi {
        let mut cmd = crate::verify::mpirun();
        cmd.args(["-np", "2"]).arg(mpi).args(["--mpi", "--perft", "--no-progress", "--threads", "1"]);
        compare(spec, "2 MPI ranks", &output(&mut cmd, &text)?, &made.rows[..quick as usize])?;
        lines.push(format!("depths 1 to {quick} again as 2 MPI ranks"));
    }
    Ok(lines)
}

/// Fails when `got` (`d perft ended boards` lines) is not `want`.
fn compare(spec: &Spec, what: &str, got: &str, want: &[Row]) -> Result<()> {
    if read_rows(got) != want {
        bail!("{}: {what} disagrees with the table", spec.name);
    }
    Ok(())
}

/// The stdout of `cmd` fed `input`, failing on a non-zero exit.
fn output(cmd: &mut Command, input: &str) -> Result<String> {
    use std::io::Write;
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn()?;
    child.stdin.take().expect("piped").write_all(input.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!("{cmd:?} failed with {}", out.status);
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// The page of a table.
fn page(spec: &Spec, made: &Made, checks: &[String], root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_default();
    let cpu = crate::bench::cpu_description();
    let mut s = format!("# The empty {}x{} board\n\n", spec.rows, spec.cols);
    match (&made.summary, made.stopped) {
        (Some(summary), _) => {
            writeln!(s, "The whole game: {}.\n", summary.trim_start_matches("every game over: "))
        }
        (None, _) if made.failed.is_some() => writeln!(
            s,
            "Counted to depth {}; depth {} stopped the count: `{}`\n",
            made.rows.len(),
            made.rows.len() + 1,
            // Paths in the page are relative to the workspace, not to this machine.
            made.failed.as_deref().unwrap_or_default().replace(&format!("{}/", root.display()), "")
        ),
        (None, true) => writeln!(
            s,
            "Counted to depth {} in the time given ({} min); the checkpoint resumes it.\n",
            made.rows.len(),
            spec.minutes
        ),
        (None, false) => writeln!(s, "Counted to depth {}.\n", made.rows.len()),
    }
    .expect("writing to a String");
    writeln!(
        s,
        "Made by `cargo xtask tables` at commit {commit} on {cpu}, {} cores: {:.1} s (this run), peak memory {:.1} MiB, {:.1} MiB written to disk.\n",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        made.seconds,
        made.peak_bytes as f64 / (1 << 20) as f64,
        made.written_bytes as f64 / (1 << 20) as f64
    )
    .expect("writing to a String");
    s += "Cross-checked: ";
    s += &checks.join("; ");
    s += ".\n\n`perft`: move sequences of exactly `depth` moves (one that filled the board earlier is not continued); `ended`: those whose last move filled the board; `boards`: distinct boards they reach, not reduced by symmetry.\n\n";
    writeln!(s, "![positions and boards per depth]({}.svg)\n", spec.name).expect("writing to a String");
    s += "| depth | perft | ended | boards |\n|---:|---:|---:|---:|\n";
    for r in &made.rows {
        writeln!(s, "| {} | {} | {} | {} |", r.0, r.1, r.2, r.3).expect("writing to a String");
    }
    s
}

/// The index of `docs/tables/`: one line a table, from the pages written.
fn index(out: &Path) -> Result<String> {
    let mut names: Vec<String> = std::fs::read_dir(out)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".md").map(str::to_string))
        .filter(|n| n != "README")
        .collect();
    names.sort_by_key(|n| n.split('x').map(|x| x.parse::<usize>().unwrap_or(0)).fold(0, |a, x| a * 100 + x));
    let mut s = String::from("# Tables of the game\n\nExact counts from the empty board of each shape, made by `cargo xtask tables` (see `docs/guide.md` for the definitions). A shape's transpose has the same table.\n\n| board | depths | first line of the page |\n|---|---:|---|\n");
    for n in names {
        let text = std::fs::read_to_string(out.join(format!("{n}.md")))?;
        let depths = text
            .lines()
            .filter(|l| l.starts_with("| ") && l.chars().nth(2).is_some_and(|c| c.is_ascii_digit()))
            .count();
        let what = text.lines().nth(2).unwrap_or("");
        writeln!(s, "| [{n}]({n}.md) | {depths} | {what} |").expect("writing to a String");
    }
    Ok(s)
}

/// An SVG plot of perft (sequences) and boards per depth, on a log scale.
fn plot(spec: &Spec, rows: &[Row]) -> String {
    let (w, h, left, bottom) = (640.0, 360.0, 60.0, 40.0);
    let log = |v: &str| v.parse::<f64>().map_or(0.0, |x| x.max(1.0).log10());
    let top = rows.iter().map(|r| log(&r.1).max(log(&r.3))).fold(1.0f64, f64::max).ceil();
    let depths = rows.len().max(1) as f64;
    let x = |d: u32| left + (f64::from(d) - 1.0) / (depths - 1.0).max(1.0) * (w - left - 20.0);
    let y = |l: f64| h - bottom - l / top * (h - bottom - 20.0);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    let step = (top / 8.0).ceil().max(1.0);
    let mut e = 0.0;
    while e <= top {
        writeln!(s, "<line x1=\"{left}\" x2=\"{}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">1e{e}</text>", w - 20.0, y(e), y(e), left - 4.0, y(e) + 4.0).expect("writing to a String");
        e += step;
    }
    for (i, r) in rows.iter().enumerate() {
        if rows.len() <= 20 || i % (rows.len() / 10) == 0 {
            writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                x(r.0),
                h - bottom + 16.0,
                r.0
            )
            .expect("writing to a String");
        }
    }
    for (field, colour, label, at) in
        [(1, "#c0392b", "perft (move sequences)", 0.0), (3, "#2471a3", "boards (distinct)", 16.0)]
    {
        let points: Vec<String> = rows
            .iter()
            .map(|r| format!("{:.1},{:.1}", x(r.0), y(log(if field == 1 { &r.1 } else { &r.3 }))))
            .collect();
        writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        )
        .expect("writing to a String");
        writeln!(s, "<text x=\"{}\" y=\"{}\" fill=\"{colour}\">{label}</text>", left + 10.0, 20.0 + at)
            .expect("writing to a String");
    }
    writeln!(s, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">depth (moves) on the empty {}x{} board</text>\n</svg>", (w + left) / 2.0, h - 6.0, spec.rows, spec.cols).expect("writing to a String");
    s
}

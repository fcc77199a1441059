//! `cargo xtask verify`: every fixture through the release binary (or the one `--solver`
//! names), the exhaustive backend test, and the deep cases (too slow for a debug build), in
//! profile `release`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::{build_dist, build_solver, check_args, flag_value, run_cmd};

/// One fixture: `NAME.in` and `NAME.out`.
pub struct Case {
    pub name: String,
    pub input: PathBuf,
    pub expected: String,
}

/// Every case under `fixtures/` (sorted by path).
pub fn cases(root: &Path) -> Result<Vec<Case>> {
    let mut out = Vec::new();
    for dir in ["public", "shapes"] {
        let dir = root.join("fixtures").join(dir);
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("cannot list {}", dir.display()))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for input in entries.into_iter().filter(|p| p.extension().is_some_and(|e| e == "in")) {
            let expected = std::fs::read_to_string(input.with_extension("out"))
                .with_context(|| format!("no answer beside {}", input.display()))?
                .trim()
                .to_string();
            let name = input
                .strip_prefix(root.join("fixtures"))
                .unwrap_or(&input)
                .with_extension("")
                .display()
                .to_string();
            out.push(Case { name, input, expected });
        }
    }
    Ok(out)
}

/// Runs `exe --json --stats` on `input`; returns its JSON report (`None` when the run failed).
fn report_of(exe: &Path, input: &str) -> Result<Option<serde_json::Value>> {
    let mut child = Command::new(exe)
        .args(["--json", "--stats"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    std::io::Write::write_all(&mut child.stdin.take().expect("piped"), input.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(Some(serde_json::from_slice(&out.stdout).context("the solver's --json output")?))
}

/// The backend the solver picks on this machine (its `--json` report's `backend`).
pub fn backend(exe: &Path) -> Result<String> {
    let report = report_of(exe, "1\n0 0 0\n0 0 0\n0 0 0\n")?.context("the solver failed on an empty 3x3")?;
    Ok(report["backend"].as_str().unwrap_or("unknown").to_string())
}

/// Compares the distinct boards per depth (`solver --stats`) with every table under
/// `fixtures/counts/` (`NAME.txt` for the empty board of shape NAME's `RxC` prefix, one
/// `depth boards` line a depth); returns the number of tables that differ.
fn check_counts(root: &Path, exe: &Path) -> Result<usize> {
    let dir = root.join("fixtures/counts");
    let mut tables: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    tables.sort();
    let mut failed = 0;
    for table in tables.iter().filter(|p| p.extension().is_some_and(|e| e == "txt")) {
        let name = table.file_stem().unwrap_or_default().to_string_lossy().to_string();
        let (rows, cols) = name
            .split('_')
            .next()
            .and_then(|s| s.split_once('x'))
            .and_then(|(r, c)| Some((r.parse::<usize>().ok()?, c.parse::<usize>().ok()?)))
            .with_context(|| format!("{}: name must start with RxC", table.display()))?;
        let want: Vec<(u64, u64)> = std::fs::read_to_string(table)?
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| {
                let mut it = l.split_whitespace().map(str::parse::<u64>);
                match (it.next(), it.next()) {
                    (Some(Ok(d)), Some(Ok(b))) => Ok((d, b)),
                    _ => bail!("{}: `{l}` is not `depth boards`", table.display()),
                }
            })
            .collect::<Result<_>>()?;
        let depth = want.len();
        let input = format!("{depth}\n{}", format!("{}\n", vec!["0"; cols].join(" ")).repeat(rows));
        let t = Instant::now();
        let report = report_of(exe, &input)?;
        // Each depth's `boards`, depth 0 left out (the tables start at depth 1).
        let got: Vec<(u64, u64)> = report
            .as_ref()
            .and_then(|r| r["stats"].as_array())
            .map(|rows| {
                rows.iter()
                    .filter_map(|row| Some((row["depth"].as_u64()?, row["boards"].as_u64()?)))
                    .filter(|&(d, _)| d != 0)
                    .collect()
            })
            .unwrap_or_default();
        let ok = report.is_some() && got == want;
        failed += usize::from(!ok);
        println!(
            "counts/{name}: {} depths of distinct boards, {:.2} s: {}",
            depth,
            t.elapsed().as_secs_f64(),
            if ok { "ok" } else { "MISMATCH" }
        );
        if !ok {
            for (w, g) in want.iter().zip(&got).filter(|(w, g)| w != g).take(5) {
                println!("  depth {}: expected {}, got {}", w.0, w.1, g.1);
            }
        }
    }
    Ok(failed)
}

/// Shape (`RxC`) and depth of an input file.
fn describe(input: &Path) -> Result<(String, String)> {
    let text = std::fs::read_to_string(input)?;
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let depth = lines.next().unwrap_or("").trim().to_string();
    let rows: Vec<usize> = lines.map(|l| l.split_whitespace().count()).collect();
    Ok((format!("{}x{}", rows.len(), rows.first().copied().unwrap_or(0)), depth))
}

pub fn run(root: &Path, args: &[String]) -> Result<()> {
    check_args("verify", args, &["--dist"], &[("--threads", "N"), ("--solver", "PATH")])?;
    let threads: Option<usize> = flag_value(args, "--threads")?;
    let given: Option<PathBuf> = flag_value(args, "--solver")?;
    let dist = args.iter().any(|a| a == "--dist");
    if let Some(exe) = given.as_ref().filter(|exe| !exe.is_file()) {
        bail!("--solver: no file at {}", exe.display());
    }
    if dist && given.is_some() {
        bail!("--dist and --solver each name the binary to run: give one");
    }
    let started = Instant::now();
    // The solver builds (the release one, or with `--dist` the one to ship, in a target
    // directory of its own; none when `--solver` names one) while the tests build in profile
    // `release`: the dist binary's whole-program link runs mostly on one core, and the tests'
    // build takes the other.
    let exe = std::thread::scope(|scope| -> Result<PathBuf> {
        let solver = given
            .is_none()
            .then(|| scope.spawn(move || if dist { build_dist(root) } else { build_solver(root) }));
        let tests =
            run_cmd(deep_tests().arg("--no-run")).and_then(|()| run_cmd(exhaustive_test().arg("--no-run")));
        let exe = match solver {
            Some(build) => build.join().map_err(|_| anyhow::anyhow!("the solver's build panicked"))?,
            None => given.clone().context("no solver to run"),
        };
        tests?;
        exe
    })?;
    println!(
        "solver: {}, backend: {} (built in {:.0} s)\n",
        exe.display(),
        backend(&exe)?,
        started.elapsed().as_secs_f64()
    );
    // Every fixture twice: in memory, and with every partition of the frontier on disk (a
    // memory limit of one byte), its scratch in the build's directory.
    let scratch = root.join("target/verify-scratch");
    std::fs::create_dir_all(&scratch)?;
    let disk = [
        "--memory-limit".to_string(),
        "1".to_string(),
        "--work-dir".to_string(),
        scratch.display().to_string(),
    ];
    println!("| case | shape | depth | frontier | expected | got | seconds | verdict |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut failed = 0;
    let all = cases(root)?;
    for case in &all {
        let (shape, depth) = describe(&case.input)?;
        for (home, extra) in [("memory", &[][..]), ("disk", &disk[..])] {
            let mut cmd = Command::new(&exe);
            if let Some(t) = threads {
                cmd.args(["--threads", &t.to_string()]);
            }
            cmd.args(extra);
            let t = Instant::now();
            let out = cmd.stdin(std::fs::File::open(&case.input)?).output()?;
            let secs = t.elapsed().as_secs_f64();
            let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let ok = out.status.success() && got == case.expected;
            failed += usize::from(!ok);
            println!(
                "| {} | {} | {} | {} | {} | {} | {:.3} | {} |",
                case.name,
                shape,
                depth,
                home,
                case.expected,
                if got.is_empty() { String::from_utf8_lossy(&out.stderr).trim().to_string() } else { got },
                secs,
                if ok { "ok" } else { "MISMATCH" }
            );
        }
    }
    println!(
        "\nfixture runs: {} passed, {} failed (at {:.0} s)",
        2 * all.len() - failed,
        failed,
        started.elapsed().as_secs_f64()
    );
    failed += check_perft(root, &exe, &disk)?;
    let left = std::fs::read_dir(&scratch)?.count();
    std::fs::remove_dir_all(&scratch)?;
    if left > 0 {
        println!("scratch files left by the runs on disk: {left}");
        failed += 1;
    }
    failed += check_counts(root, &exe)?;
    println!(
        "\nexhaustive backend check (every 3x3 board, profile release; at {:.0} s):",
        started.elapsed().as_secs_f64()
    );
    run_cmd(exhaustive_test().args(["--", "--ignored", "--nocapture"]))?;
    println!(
        "\ndeep cases (long 3x3 and 4x4 searches on every path, profile release; at {:.0} s):",
        started.elapsed().as_secs_f64()
    );
    run_cmd(deep_tests().args(["--", "--ignored"]))?;
    if failed > 0 {
        bail!("{failed} fixture(s) or count table(s) failed");
    }
    Ok(())
}

/// `cargo SUBCOMMAND -p PACKAGE` in profile `release`.
fn in_verify_profile(subcommand: &str, package: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args([subcommand, "--profile", VERIFY_PROFILE, "--quiet", "-p", package]);
    cmd
}

/// The deep tests (long searches on every path), in profile `release`.
fn deep_tests() -> Command {
    let mut cmd = in_verify_profile("test", "solver");
    cmd.args(["--test", "deep"]);
    cmd
}

/// The exhaustive SIMD-against-portable test, in profile `release`.
fn exhaustive_test() -> Command {
    let mut cmd = in_verify_profile("test", "state");
    cmd.args(["--test", "exhaustive"]);
    cmd
}

/// The profile verify's tests and verify-mpi's solvers build in: the one `cargo build
/// --release` makes, so that the binary and the tests share one build of the library.
const VERIFY_PROFILE: &str = "release";

/// `mpirun` for a job on this machine: as root if need be, more ranks than cores allowed, and
/// the shared-memory transport chosen up front (probing the network interfaces' components
/// costs 0.2 s a job).
pub fn mpirun() -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(MPIRUN_ARGS);
    cmd
}

/// [`mpirun`]'s arguments before `-np`.
pub const MPIRUN_ARGS: [&str; 8] =
    ["--allow-run-as-root", "--oversubscribe", "--mca", "pml", "ob1", "--mca", "btl", "self,vader"];

/// Builds the solver with the `mpi` feature in `profile` (in `target/mpi`, a target directory
/// of its own, so that it and the default build do not rebuild each other's binary) as the MPI
/// tests build it, and returns its path.
pub fn build_mpi_solver(root: &Path, profile: &str) -> Result<PathBuf> {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root).args([
        "test",
        "--profile",
        profile,
        "-p",
        "solver",
        "--features",
        "mpi",
        "--test",
        "mpi",
    ]);
    cmd.args(["--quiet", "--target-dir", "target/mpi"]);
    solver_built_for_tests(cmd)
}

/// The `solver` binary that `cmd` (a `cargo test` of the `solver` package) builds for its
/// tests, built without running them. A binary made for tests resolves the features of the
/// tests' dev-dependencies too: a `cargo build` of the same package resolves others, and
/// would compile the engine again beside the tests' build.
fn solver_built_for_tests(mut cmd: Command) -> Result<PathBuf> {
    cmd.args(["--no-run", "--message-format", "json-render-diagnostics"]);
    cmd.stderr(Stdio::inherit());
    let out = cmd.output().with_context(|| format!("cannot start {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed with {}", out.status);
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "solver")
        .filter(|m| m["target"]["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "bin")))
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .with_context(|| format!("{cmd:?} built no solver binary"))
}

/// What no number of ranks may change in a `--json --stats --all-depths` report: the answer,
/// every depth's answer, and each depth's positions, boards, records, ended paths and hashes.
fn figures(report: &serde_json::Value) -> String {
    let depths: Vec<String> = report["stats"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    format!(
                        "{} {} {} {} {} {}",
                        s["depth"], s["states"], s["boards"], s["records"], s["ended_paths"], s["ended"]
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{} {} {:?}", report["answer"], report["answers"], depths)
}

/// Runs `cmd` on `input` (with a time limit: a hung job fails); returns its stdout, or `None`
/// when it failed.
fn output_of(mut cmd: Command, input: &Path) -> Result<Option<String>> {
    let mut child = cmd
        .stdin(std::fs::File::open(input)?)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let t = Instant::now();
    while child.try_wait()?.is_none() {
        if t.elapsed().as_secs() > 900 {
            let _ = child.kill();
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let out = child.wait_with_output()?;
    Ok(out.status.success().then(|| String::from_utf8_lossy(&out.stdout).to_string()))
}

/// Every table of `fixtures/perft/` through `exe --perft`, in memory and on disk (`disk`),
/// digit for digit. Returns the number of mismatches.
fn check_perft(root: &Path, exe: &Path, disk: &[String]) -> Result<usize> {
    println!("\n| perft table | frontier | seconds | verdict |\n|---|---|---|---|");
    let mut failed = 0;
    for input in perft_cases(root)? {
        let want = std::fs::read_to_string(input.with_extension("perft"))?;
        for (home, extra) in [("memory", &[][..]), ("disk", disk)] {
            let t = Instant::now();
            let out =
                Command::new(exe).arg("--perft").args(extra).stdin(std::fs::File::open(&input)?).output()?;
            let ok = out.status.success() && out.stdout == want.as_bytes();
            failed += usize::from(!ok);
            let name = input.file_stem().unwrap_or_default().to_string_lossy();
            let verdict = if ok { "ok" } else { "MISMATCH" };
            println!("| {name} | {home} | {:.3} | {verdict} |", t.elapsed().as_secs_f64());
        }
    }
    Ok(failed)
}

/// The inputs of `fixtures/perft/`, sorted.
fn perft_cases(root: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root.join("fixtures/perft"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "in"))
        .collect();
    v.sort();
    Ok(v)
}

/// `cargo xtask verify-mpi`: every fixture, 3x3 deep cases, the empty 4x4 to depth 16 and a
/// 5x5 case through `mpirun -np 1`, `2` and `3` of the `mpi` build, in memory and with each
/// rank's frontier on disk (`--memory-limit 1M`), against one process of the default build:
/// fixtures by answers and per-depth figures (`--json --stats --all-depths`), the larger
/// cases by their answers.
pub fn run_mpi(root: &Path, args: &[String]) -> Result<()> {
    check_args("verify-mpi", args, &[], &[])?;
    let started = Instant::now();
    // Both in profile `release`, as the tests build them (`cargo xtask verify`'s deep tests,
    // and the MPI tests), so that after those no engine is compiled again: the one process
    // that every job is checked against, and the `mpi` one.
    let mut deep = deep_tests();
    deep.current_dir(root);
    let exe = solver_built_for_tests(deep)?;
    let mpi = build_mpi_solver(root, VERIFY_PROFILE)?;
    println!("solvers built in {:.0} s", started.elapsed().as_secs_f64());
    let scratch = root.join("target/verify-mpi-scratch");
    std::fs::create_dir_all(&scratch)?;
    let disk =
        ["--memory-limit".to_string(), "1M".into(), "--work-dir".into(), scratch.display().to_string()];
    let generated = root.join("target/verify-mpi-cases");
    std::fs::create_dir_all(&generated)?;
    let mut larger = Vec::new();
    for (name, text) in [
        ("3x3_corner_d40", "40\n1 0 0\n0 0 0\n0 0 0\n"),
        ("3x3_edge_d40", "40\n0 1 0\n0 0 0\n0 0 0\n"),
        ("3x3_empty_d40", "40\n0 0 0\n0 0 0\n0 0 0\n"),
        ("4x4_empty_d16", "16\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n"),
        ("5x5_empty_d10", "10\n0 0 0 0 0\n0 0 0 0 0\n0 0 0 0 0\n0 0 0 0 0\n0 0 0 0 0\n"),
    ] {
        let path = generated.join(format!("{name}.in"));
        std::fs::write(&path, text)?;
        larger.push((name.to_string(), path));
    }
    println!("| case | ranks | frontier | seconds | verdict |");
    println!("|---|---|---|---|---|");
    let (mut runs, mut failed) = (0, 0);
    let mut check =
        |name: &str, input: &Path, flags: &[&str], compare: &dyn Fn(&str) -> String| -> Result<()> {
            let want = output_of(
                {
                    let mut c = Command::new(&exe);
                    c.args(flags);
                    c
                },
                input,
            )?
            .context("the single process failed")?;
            let want = compare(&want);
            for n in 1..=3 {
                for (home, extra) in [("memory", &[][..]), ("disk", &disk[..])] {
                    let mut cmd = mpirun();
                    cmd.args(["-np", &n.to_string()]).arg(&mpi).arg("--mpi").args(flags).args(extra);
                    let t = Instant::now();
                    let got = output_of(cmd, input)?.map(|o| compare(&o));
                    let ok = got.as_deref() == Some(want.as_str());
                    runs += 1;
                    failed += usize::from(!ok);
                    println!(
                        "| {name} | {n} | {home} | {:.2} | {} |",
                        t.elapsed().as_secs_f64(),
                        if ok { "ok" } else { "MISMATCH" }
                    );
                }
            }
            Ok(())
        };
    let counted =
        |out: &str| serde_json::from_str(out).map_or_else(|_| "unreadable".to_string(), |v| figures(&v));
    for case in cases(root)? {
        check(&case.name, &case.input, &["--json", "--stats", "--all-depths"], &counted)?;
    }
    for (name, input) in &larger {
        check(name, input, &[], &|out: &str| out.trim().to_string())?;
    }
    // Exact counts: every table of fixtures/perft/, digit for digit.
    for input in perft_cases(root)? {
        let name = input.file_stem().map_or(String::new(), |s| format!("perft {}", s.to_string_lossy()));
        check(&name, &input, &["--perft"], &|out: &str| out.trim().to_string())?;
    }
    println!(
        "\nMPI runs: {} agreed with one process, {failed} did not (in {:.0} s)",
        runs - failed,
        started.elapsed().as_secs_f64()
    );
    let left = std::fs::read_dir(&scratch)?.count();
    std::fs::remove_dir_all(&scratch)?;
    std::fs::remove_dir_all(&generated)?;
    if left > 0 {
        bail!("scratch files left by the runs on disk: {left}");
    }
    if failed > 0 {
        bail!("{failed} MPI run(s) disagreed with one process");
    }
    Ok(())
}

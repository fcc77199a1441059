//! `cargo xtask verify`: every fixture through the release binary, the exhaustive backend
//! test, and the deep cases (too slow for a debug build), in release.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::{build_solver, flag_value, run_cmd};

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
    let threads: Option<usize> = flag_value(args, "--threads")?;
    let exe = build_solver(root)?;
    println!("solver: {}, backend: {}\n", exe.display(), backend(&exe)?);
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
    println!("\nfixture runs: {} passed, {} failed", 2 * all.len() - failed, failed);
    let left = std::fs::read_dir(&scratch)?.count();
    std::fs::remove_dir_all(&scratch)?;
    if left > 0 {
        println!("scratch files left by the runs on disk: {left}");
        failed += 1;
    }
    failed += check_counts(root, &exe)?;
    println!("\nexhaustive backend check (every 3x3 board, release):");
    run_cmd(Command::new(env!("CARGO")).args([
        "test",
        "--release",
        "--quiet",
        "-p",
        "state",
        "--test",
        "exhaustive",
        "--",
        "--ignored",
        "--nocapture",
    ]))?;
    println!("\ndeep cases (long 3x3 and 4x4 searches on every path, release):");
    run_cmd(Command::new(env!("CARGO")).args([
        "test",
        "--release",
        "--quiet",
        "-p",
        "solver",
        "--test",
        "deep",
        "--",
        "--ignored",
    ]))?;
    if failed > 0 {
        bail!("{failed} fixture(s) or count table(s) failed");
    }
    Ok(())
}

//! The binary: output, exit codes and error messages.

use std::process::{Command, Stdio};

mod common;
use common::run;

#[test]
fn answers_on_stdout() {
    let (code, out, err) = run(&[], "20\n0 6 0\n2 2 2\n1 6 1\n");
    assert_eq!((code, out.as_str(), err.as_str()), (0, "322444322\n", ""));
}

#[test]
fn bad_input_is_reported_on_stderr_only() {
    for (input, needle) in [
        ("", "empty input"),
        ("3\n", "missing board"),
        ("abc\n0 0\n", "line 1, token 1 `abc`"),
        ("-1\n0\n", "negative"),
        ("99999999999\n0\n", "32 bits"),
        ("2\n0 0 0\n0 9 0\n", "line 3, token 2 `9`"),
        ("2\n0 0 0\n0 x 0\n", "line 3, token 2 `x`"),
        ("2\n0 0 0\n0 0\n", "line 3"),
        ("2\n0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", "more than 64"),
    ] {
        let (code, out, err) = run(&[], input);
        assert_eq!(code, 2, "{input:?}: {err}");
        assert!(out.is_empty(), "{input:?} printed {out:?}");
        assert!(err.contains(needle), "{input:?}: {err}");
        assert!(!err.contains("panicked"), "{input:?}: {err}");
    }
}

#[test]
fn bad_arguments_are_refused() {
    let (code, out, err) = run(&["--backend", "sse9"], "1\n0\n");
    assert!(code != 0 && out.is_empty() && err.contains("sse9"), "{err}");
    let (code, out, err) = run(&["--threads", "0"], "1\n0\n");
    assert!(code != 0 && out.is_empty() && err.contains("threads"), "{err}");
    let (code, out, err) = run(&["/nonexistent/file.in"], "");
    assert!(code != 0 && out.is_empty() && err.contains("/nonexistent/file.in"), "{err}");
}

#[test]
fn all_depths_prints_one_line_a_depth() {
    let (code, out, _) = run(&["--all-depths"], "3\n0 0\n");
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(lines[0].starts_with("0 0"));
}

#[test]
fn stats_go_to_stderr() {
    let (code, out, err) = run(&["--stats", "--threads", "1"], "5\n0 0 0\n0 0 0\n0 0 0\n");
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1);
    assert!(err.contains("depth") && err.contains("states"), "{err}");
}

#[test]
fn json_output_is_one_object() {
    let (code, out, err) = run(&["--json", "--stats", "--all-depths"], "3\n0 0\n0 0\n");
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["shape"]["rows"], 2);
    assert_eq!(v["depth"], 3);
    assert_eq!(v["answers"].as_array().unwrap().len(), 4);
    assert_eq!(v["stats"][1]["boards"], 4);
    assert_eq!(v["answer"], v["answers"][3]);
    assert!(err.is_empty(), "stats go into the JSON, not stderr: {err}");
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    // A run over a second, stderr piped: nothing but the answer anywhere.
    let (code, out, err) = run(&[], "14\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n");
    assert_eq!((code, out.trim(), err.as_str()), (0, "525370856", ""));
}

/// Runs the binary with a pseudo-terminal as its stdin, stdout and stderr (util-linux
/// `script`), returning everything the terminal showed; `None` where `script` is missing.
fn run_in_pty(args: &str, input_file: &std::path::Path) -> Option<String> {
    let cmd = format!("{} {} {}", env!("CARGO_BIN_EXE_solver"), args, input_file.display());
    let out = Command::new("script").args(["-qec", &cmd, "/dev/null"]).stdin(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn progress_bar_on_a_terminal_for_long_runs_only() {
    let dir = std::env::temp_dir().join(format!("cephalopod-pty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let long = dir.join("long.in");
    // Over a second in a test build, even on a fast machine: the bar must appear. (A start
    // without symmetry: 8 counts a position, the slower kind of search.)
    std::fs::write(&long, "16\n1 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n").unwrap();
    let short = dir.join("short.in");
    std::fs::write(&short, "3\n0 0\n0 0\n").unwrap();
    let Some(shown) = run_in_pty("--threads 1", &long) else {
        eprintln!("skipped: no `script` command to make a pseudo-terminal");
        return;
    };
    assert!(shown.contains("211207660"), "{shown}");
    assert!(shown.contains("depth") && shown.contains("/16"), "no progress bar on a terminal: {shown}");
    let quiet = run_in_pty("--threads 1 --no-progress", &long).unwrap();
    assert!(!quiet.contains("/16"), "--no-progress still drew: {quiet}");
    let short_run = run_in_pty("", &short).unwrap();
    assert_eq!(short_run.trim(), "17776", "a short run shows only its answer");
    std::fs::remove_dir_all(&dir).unwrap();
}

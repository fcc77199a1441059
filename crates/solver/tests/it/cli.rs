//! The binary: output, exit codes and error messages.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::common;
use common::{run, run_bytes, temp_dir};

/// Runs the binary through `sh -c` with `redirections` after its arguments; returns the exit
/// code, stdout and stderr (whichever the redirections leave to the pipes).
fn shell(args: &str, redirections: &str) -> (i32, String, String) {
    let cmd = format!("'{}' {args} {redirections}", env!("CARGO_BIN_EXE_solver"));
    let out = Command::new("sh").args(["-c", &cmd]).stdin(Stdio::null()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const CASE: &str = "20\n0 6 0\n2 2 2\n1 6 1\n";

/// A fresh directory for one test holding [`CASE`] as `in.txt`, and that file's path.
fn case_file(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = temp_dir(name);
    let input = dir.path().join("in.txt");
    std::fs::write(&input, CASE).unwrap();
    (dir, input)
}

#[test]
fn an_answer_that_cannot_be_written_is_an_error() {
    let (dir, input) = case_file("full");
    let f = input.display();
    // A full device: exit 1, said on stderr.
    let (code, _, err) = shell(&format!("'{f}'"), "> /dev/full");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot write to stdout") && err.contains("space"), "{err}");
    // A closed stdout: exit 1, said on stderr (the answer is not silently lost).
    let (code, _, err) = shell(&format!("'{f}'"), ">&-");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("stdout"), "{err}");
    // /dev/null is a place like any other.
    let (code, out, err) = shell(&format!("'{f}'"), ">/dev/null");
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    // Opened read-write too (as Python's `subprocess.DEVNULL` opens it): not a closed stdout.
    let (code, out, err) = shell(&format!("'{f}'"), "1<>/dev/null");
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    // --help to a full device too.
    let (code, _, err) = shell("--help", "> /dev/full");
    assert!(code == 1 && err.contains("cannot write to stdout"), "{code} {err}");
    // A reader that goes away (a broken pipe): quiet, not 0, no panic. The input goes in
    // once the reader is gone, so the answer always meets a closed pipe.
    let mut child = Command::new(env!("CARGO_BIN_EXE_solver"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.stdin.take().unwrap().write_all(CASE.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    dir.close().unwrap();
}

#[test]
fn an_unwritable_stderr_never_aborts() {
    let (dir, input) = case_file("stderr");
    let f = input.display();
    // Bad input: exit 2 even though the message cannot be written.
    let (code, out, _) = shell("", "2>/dev/full <<'EOF'\nx\nEOF");
    assert_eq!((code, out.as_str()), (2, ""));
    // Statistics that cannot be written: the run fails (exit 1), no abort.
    let (code, _, _) = shell(&format!("--stats '{f}'"), "2>/dev/full");
    assert_eq!(code, 1);
    // Clap's own errors too.
    let (code, out, _) = shell("--no-such-flag", "2>/dev/full");
    assert_eq!((code, out.as_str()), (2, ""));
    dir.close().unwrap();
}

#[test]
fn a_dash_is_stdin_and_any_bytes_are_a_clear_error() {
    let (code, out, err) = run(&["-"], CASE);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "322444322\n", ""));
    for (input, needle) in [
        (&b"3\n0 0\n0 \xff\n"[..], "line 3, token 2 `\\xff`"),
        (&b"\xff\xfe3\x00\n\x000\x00"[..], "line 1, token 1 `\\xff\\xfe3\\0`"),
        (&b"3\n0 \x1b[2J\n"[..], "line 2, token 2 `\\u{1b}[2J`"),
        (&b"+3\n0 0\n"[..], "line 1, token 1 `+3`"),
        (&b"3\n0 +1\n"[..], "line 2, token 2 `+1`"),
    ] {
        let (code, out, err) = run_bytes(&[], input);
        assert_eq!(code, 2, "{input:?}: {err}");
        assert!(out.is_empty() && err.contains(needle), "{input:?}: {err}");
        assert!(!err.contains('\x1b') && !err.contains('\0'), "raw control characters echoed: {err:?}");
    }
    // A UTF-8 byte order mark is skipped.
    let (code, out, _) = run(&[], &format!("\u{feff}{CASE}"));
    assert_eq!((code, out.as_str()), (0, "322444322\n"));
}

#[test]
fn thread_counts_past_the_bound_are_refused_at_once() {
    let started = std::time::Instant::now();
    let (code, out, err) = run(&["--threads", "100000"], CASE);
    assert!(code == 2 && out.is_empty() && err.contains("at most 1024"), "{err}");
    assert!(started.elapsed().as_secs() < 30);
    let (code, out, _) = run(&["--threads", "3"], CASE);
    assert_eq!((code, out.as_str()), (0, "322444322\n"));
}

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
    // The user's columns, each with its unit; the engine's internals only when asked.
    let header = err.lines().nth(1).unwrap();
    for column in ["depth", "positions", "boards", "seconds", "peak_MiB", "disk_written_MiB"] {
        assert!(header.split_whitespace().any(|c| c == column), "{column}: {err}");
    }
    assert!(!err.contains("records") && !err.contains("ended_paths") && !err.contains("backend"), "{err}");
    let (code, _, err) = run(&["--stats-internals", "--threads", "1"], "5\n0 0 0\n0 0 0\n0 0 0\n");
    assert_eq!(code, 0);
    assert!(err.contains("records") && err.contains("ended_paths") && err.contains("expand_s"), "{err}");
    assert_eq!(err.lines().count(), 2 + 6, "{err}");
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
    // On one row of two cells every game ends by depth 2: the later depths' answers are
    // the final one.
    let (code, out, _) = run(&["--json", "--all-depths"], "9\n0 0\n");
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let answers = v["answers"].as_array().unwrap();
    assert_eq!(answers.len(), 10);
    assert!(answers[2..].iter().all(|a| *a == v["answer"]) && answers[1] != v["answer"], "{out}");
}

#[test]
fn all_depths_beyond_the_last_game_stream_in_constant_memory() {
    let (code, out, _) = run(&["--all-depths"], "7\n0 0\n");
    assert_eq!(code, 0);
    let want = "0 0\n1 11\n2 22\n3 22\n4 22\n5 22\n6 22\n7 22\n";
    assert_eq!(out, want);
    // The largest depth: lines come at once, the memory stays small however many a reader
    // takes, and a reader that goes away ends the run (exit 1, nothing said).
    let mut child = Command::new(env!("CARGO_BIN_EXE_solver"))
        .arg("--all-depths")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"4294967295\n0 0\n0 0\n").unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    for n in 0..200_000u32 {
        line.clear();
        std::io::BufRead::read_line(&mut lines, &mut line).unwrap();
        assert!(line.starts_with(&format!("{n} ")), "{line}");
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap();
    assert!(peak_kib < 50 << 10, "peak {peak_kib} KiB");
    drop(lines);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn help_lists_the_users_options_first_in_short_lines() {
    for flag in ["-h", "--help"] {
        let (code, out, err) = run(&[flag], "");
        assert_eq!(code, 0, "{err}");
        let user = out.find("--threads").unwrap();
        let tuning = out.find("Cross-checks and tuning").unwrap();
        assert!(user < tuning && tuning < out.find("--backend").unwrap(), "{out}");
        assert!(out.contains("RAYON_NUM_THREADS"), "{out}");
        assert!(!out.contains("--generate"), "{out}");
        assert_eq!(out.contains("--mpi"), cfg!(feature = "mpi"), "{out}");
        assert!(!out.contains('\x1b'), "escape codes on a pipe: {out:?}");
    }
    let (_, short, _) = run(&["-h"], "");
    assert!(short.lines().all(|l| l.chars().count() <= 100), "{short}");
}

#[test]
fn no_escape_codes_on_a_pipe() {
    let (dir, input) = case_file("pipe");
    let f = input.to_str().unwrap();
    for args in [&["--no-such-flag"][..], &["--threads", "x", f], &["--stats", f], &["--version"]] {
        let (_, out, err) = run(args, "");
        assert!(!out.contains('\x1b') && !err.contains('\x1b'), "{args:?}: {out:?} {err:?}");
    }
    dir.close().unwrap();
}

/// The binary prints each of its completions and its manual page (their contents are checked
/// by the binary's own unit test, which reads its options).
#[test]
fn completions_and_manual_page_are_printed() {
    for (name, shows) in
        [("man", "\\-\\-threads"), ("bash", "--threads"), ("zsh", "--threads"), ("fish", "-l threads")]
    {
        let (code, text, err) = run(&["--generate", name], "");
        assert_eq!(code, 0, "{name}: {err}");
        assert!(text.contains(shows) && text.contains("stats"), "{name}: {text}");
    }
}

#[test]
fn no_progress_bar_when_stderr_is_not_a_terminal() {
    // A run over a second, stderr piped: nothing but the answer anywhere.
    let (code, out, err) = run(&[], "14\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n");
    assert_eq!((code, out.trim(), err.as_str()), (0, "525370856", ""));
}

/// Runs the binary with a pseudo-terminal as its stdin, stdout and stderr (util-linux
/// `script`, which the test needs: `.ci/run` installs it), returning everything the terminal
/// showed.
fn run_in_pty(args: &str, input_file: &std::path::Path) -> String {
    let cmd = format!("{} {} {}", env!("CARGO_BIN_EXE_solver"), args, input_file.display());
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("the `script` command (util-linux) makes the pseudo-terminal this test needs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn progress_bar_on_a_terminal_for_long_runs_only() {
    let dir_tmp = temp_dir("pty");
    let dir = dir_tmp.path();
    let long = dir.join("long.in");
    // Over a second in a test build, even on a fast machine: the bar must appear. (A start
    // without symmetry: 8 counts a position, the slower kind of search.)
    std::fs::write(&long, "16\n1 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n").unwrap();
    let short = dir.join("short.in");
    std::fs::write(&short, "3\n0 0\n0 0\n").unwrap();
    let shown = run_in_pty("--threads 1", &long);
    assert!(shown.contains("211207660"), "{shown}");
    assert!(shown.contains("depth") && shown.contains("/16"), "no progress bar on a terminal: {shown}");
    let quiet = run_in_pty("--threads 1 --no-progress", &long);
    assert!(!quiet.contains("/16"), "--no-progress still drew: {quiet}");
    let short_run = run_in_pty("", &short);
    assert_eq!(short_run.trim(), "17776", "a short run shows only its answer");
    dir_tmp.close().unwrap();
}

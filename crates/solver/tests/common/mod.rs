//! Helpers shared by the binary's tests (each test file uses some of them).
#![allow(dead_code)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs the `solver` binary with `args`, feeding `input` on stdin; returns the exit code,
/// stdout and stderr.
pub fn run(args: &[&str], input: &str) -> (i32, String, String) {
    run_bytes(args, input.as_bytes())
}

/// [`run`] with any bytes on stdin (what the tool prints is text whatever they are).
pub fn run_bytes(args: &[&str], input: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_solver"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The tool may exit before reading everything (bad arguments): ignore a broken pipe.
    let _ = child.stdin.take().unwrap().write_all(input);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A fresh, empty directory for one test under the build's temporary directory (never /tmp),
/// removed when dropped (or by `close`, which reports a failure to remove it).
pub fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("{name}-")).tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// The names in `dir`, sorted (none if it cannot be read).
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The depth a checkpoint's manifest holds (0 while it has none).
pub fn saved_depth(ck: &Path) -> u32 {
    let text = std::fs::read_to_string(ck.join("checkpoint")).unwrap_or_default();
    text.lines().find_map(|l| l.strip_prefix("depth = ")).and_then(|d| d.parse().ok()).unwrap_or(0)
}

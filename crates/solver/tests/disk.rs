//! Frontiers on disk: the same answers as in memory, checkpoints that survive SIGKILL, and
//! faults (unwritable directories, a full disk, corrupt checkpoints) that end cleanly.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use solver::{solve, Board, Options, Shape};

/// A fresh, empty directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cephalopod-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// A tiny memory limit forces many partitions; the answers (at every depth) must not move.
    #[test]
    fn disk_frontier_matches_memory(rows in 1usize..=4, cols in 1usize..=4, seed in any::<u64>(), depth in 0u32..8, sym in any::<bool>()) {
        let mut cells = boards::random(rows, cols, seed, 4);
        if sym {
            // Counted by orbit masses in memory, handed over to disk as lanes.
            cells = boards::symmetric(rows, cols, &cells);
        }
        let board = Board::new(Shape::new(rows, cols).unwrap(), cells).unwrap();
        let work = temp_dir(&format!("prop-{seed}"));
        let mem = solve(&board, depth, &Options { all_depths: true, ..Options::default() }).unwrap();
        let disk = solve(&board, depth, &Options {
            all_depths: true,
            memory_limit: Some(16 << 10),
            work_dir: Some(work.clone()),
            ..Options::default()
        }).unwrap();
        prop_assert_eq!(disk.answer, mem.answer);
        prop_assert_eq!(&disk.answers, &mem.answers);
        let states: Vec<u64> = disk.stats.iter().map(|s| s.states).collect();
        let mem_states: Vec<u64> = mem.stats.iter().map(|s| s.states).collect();
        prop_assert_eq!(&states[..states.len() - 1], &mem_states[..mem_states.len() - 1]);
        prop_assert!(entries(&work).is_empty(), "scratch files left: {:?}", entries(&work));
        std::fs::remove_dir_all(&work).unwrap();
    }
}

mod common;
use common::run as solver;

#[path = "common/boards.rs"]
mod boards;

/// Kills a checkpointing run once it has saved depth `kill_after`, resumes it, and checks
/// the answer against an uninterrupted in-memory run.
fn kill_and_resume(name: &str, input: &str, kill_after: u32) {
    let dir = temp_dir(name);
    let ck = dir.join("ck");
    let file = dir.join("in.txt");
    std::fs::write(&file, input).unwrap();
    let (_, want, _) = solver(&[], input);
    let ck_arg = ck.to_str().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_solver"))
        .args(["--threads", "1", "--memory-limit", "1M", "--checkpoint", ck_arg, file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut killed = false;
    loop {
        let saved = std::fs::read_to_string(ck.join("current")).unwrap_or_default();
        let depth: u32 = saved.trim().strip_prefix("depth-").and_then(|d| d.parse().ok()).unwrap_or(0);
        if depth >= kill_after {
            child.kill().unwrap(); // SIGKILL
            killed = true;
            break;
        }
        if child.try_wait().unwrap().is_some() || start.elapsed() > Duration::from_secs(120) {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.wait();
    assert!(killed, "{name}: the run ended before depth {kill_after} was saved");
    let (code, got, err) = solver(&["--checkpoint", ck_arg, "--resume", ck_arg, file.to_str().unwrap()], "");
    assert_eq!(code, 0, "{name}: {err}");
    assert_eq!(got, want, "{name}: resumed answer differs");
    // Resuming a finished run again is harmless, and gives the same answer.
    let (_, again, _) = solver(&["--resume", ck_arg, file.to_str().unwrap()], "");
    assert_eq!(again, want);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn killed_runs_resume_with_the_same_answer() {
    kill_and_resume("kill-3x3", "40\n0 0 0\n0 0 0\n0 0 0\n", 12);
    kill_and_resume("kill-3x4", "16\n0 0 0 0\n0 0 0 0\n0 0 0 0\n", 5);
}

#[test]
fn a_checkpoint_of_another_problem_is_refused() {
    let dir = temp_dir("refuse");
    let ck = dir.join("ck");
    let ck_arg = ck.to_str().unwrap();
    let (code, _, err) = solver(&["--checkpoint", ck_arg], "5\n0 0\n0 0\n");
    assert_eq!(code, 0, "{err}");
    for (input, needle) in [("5\n0 0\n0 1\n", "another board"), ("6\n0 0\n0 0\n", "depth 5")] {
        let (code, out, err) = solver(&["--resume", ck_arg], input);
        assert!(code != 0 && out.is_empty(), "{err}");
        assert!(err.contains(needle) && err.contains(ck_arg), "{err}");
    }
    // Missing checkpoint.
    let (code, out, err) = solver(&["--resume", dir.join("nothing").to_str().unwrap()], "5\n0 0\n0 0\n");
    assert!(code != 0 && out.is_empty() && err.contains("nothing"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupt_checkpoint_is_an_error_naming_the_file() {
    let dir = temp_dir("corrupt");
    let ck = dir.join("ck");
    let ck_arg = ck.to_str().unwrap();
    let input = "8\n0 0 0\n0 0 0\n0 0 0\n";
    let (code, _, err) = solver(&["--checkpoint", ck_arg, "--memory-limit", "1K"], input);
    assert_eq!(code, 0, "{err}");
    let current = std::fs::read_to_string(ck.join("current")).unwrap();
    let level = ck.join(current.trim());
    let part = std::fs::read_dir(&level)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "rec") && std::fs::metadata(p).unwrap().len() > 100)
        .expect("a part file with records");
    let raw = std::fs::read(&part).unwrap();
    // Truncated.
    std::fs::write(&part, &raw[..raw.len() - 10]).unwrap();
    let (code, out, err) = solver(&["--resume", ck_arg], input);
    assert!(code != 0 && out.is_empty(), "{err}");
    assert!(err.contains(part.file_name().unwrap().to_str().unwrap()) && err.contains("truncated"), "{err}");
    // A flipped byte.
    let mut flipped = raw.clone();
    flipped[40] ^= 0x10;
    std::fs::write(&part, &flipped).unwrap();
    let (code, out, err) = solver(&["--resume", ck_arg], input);
    assert!(code != 0 && out.is_empty() && err.contains("checksum"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_work_dir_is_an_error_naming_it() {
    let dir = temp_dir("unwritable");
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let work = blocker.join("work");
    let (code, out, err) =
        solver(&["--memory-limit", "1K", "--work-dir", work.to_str().unwrap()], "4\n0 0\n0 0\n");
    assert!(code != 0 && out.is_empty(), "{err}");
    assert!(err.contains(work.to_str().unwrap()), "{err}");
    assert_eq!(entries(&dir), vec!["a-file".to_string()]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_full_disk_ends_cleanly() {
    // A file-size limit makes writes past 64 KiB fail like a full disk (EFBIG; the signal
    // that would kill the process is ignored, and that disposition is inherited).
    let dir = temp_dir("full");
    let work = dir.join("work");
    let ck = dir.join("ck");
    std::fs::create_dir_all(&work).unwrap();
    let script = format!(
        "trap '' XFSZ; ulimit -f 64; printf '14\\n0 0 0 0\\n0 0 0 0\\n0 0 0 0\\n0 0 0 0\\n' | {} --memory-limit 1M --work-dir {} --checkpoint {}",
        env!("CARGO_BIN_EXE_solver"),
        work.display(),
        ck.display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "the run should fail: {stdout}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("cannot write") && stderr.contains(".rec"), "{stderr}");
    assert!(entries(&work).is_empty(), "scratch files left: {:?}", entries(&work));
    // The checkpoint keeps only its last complete depth (if any), nothing half written.
    let current = std::fs::read_to_string(ck.join("current")).unwrap_or_default();
    for e in entries(&ck) {
        assert!(e == "current" || e == current.trim(), "stray {e} in the checkpoint");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

//! `solver --mpi` under `mpirun` (feature `mpi`; needs Open MPI's `mpirun` on the PATH): the
//! single process's answers for 1 to 3 ranks, in memory and on disk, and failures that end
//! every rank cleanly: bad input, an unwritable work directory on one rank, a killed rank.
//! Every run has a time limit, so that a hang fails the test instead of holding CI. Work
//! directories live under the build's temporary directory and are removed.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const SOLVER: &str = env!("CARGO_BIN_EXE_solver");

/// A run may take this long at most (the slowest here takes a few seconds).
const LIMIT: Duration = Duration::from_secs(120);

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(name)
}

fn work(name: &str) -> tempfile::TempDir {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::fs::create_dir_all(&target).unwrap();
    tempfile::Builder::new().prefix(&format!("mpi-{name}-")).tempdir_in(target).unwrap()
}

/// `mpirun` as root (CI) allows it, and more ranks than cores.
fn mpirun() -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe"]);
    cmd
}

/// Runs `cmd` with `input` on stdin; fails the test if it outlives [`LIMIT`].
fn run(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mpirun (Open MPI) is on the PATH");
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input).unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("{cmd:?} hung for {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn ranks(n: usize, args: &[&str]) -> Command {
    let mut cmd = mpirun();
    cmd.args(["-np", &n.to_string(), SOLVER, "--mpi"]).args(args);
    cmd
}

fn alone(args: &[&str], input: &[u8]) -> String {
    let mut cmd = Command::new(SOLVER);
    cmd.args(args);
    let out = run(cmd, input);
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// Every depth's answer and figures from `--json --stats --all-depths`, without times,
/// memory and exchange figures.
fn figures(json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let depths: Vec<String> = v["stats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {} {} {}",
                s["depth"], s["states"], s["boards"], s["records"], s["ended_paths"], s["ended"]
            )
        })
        .collect();
    format!("{} {} {:?}", v["answer"], v["answers"], depths)
}

#[test]
fn one_to_three_ranks_give_the_single_process_answers_in_memory_and_on_disk() {
    let dir = work("answers");
    let scratch = dir.path().display().to_string();
    let disk = ["--memory-limit", "1M", "--work-dir", scratch.as_str()];
    let counted = ["--json", "--stats", "--all-depths"];
    for case in ["public/cg03.in", "public/cg07.in", "shapes/3x5_d7.in", "shapes/4x4_empty_d8.in"] {
        let input = std::fs::read(fixture(case)).unwrap();
        let want = figures(&alone(&counted, &input));
        for n in 1..=3 {
            for home in [&[][..], &disk[..]] {
                let args: Vec<&str> = counted.iter().chain(home).copied().collect();
                let out = run(ranks(n, &args), &input);
                assert!(out.status.success(), "{case}, {n} ranks: {}", String::from_utf8_lossy(&out.stderr));
                assert_eq!(
                    figures(&String::from_utf8_lossy(&out.stdout)),
                    want,
                    "{case}, {n} ranks {home:?}"
                );
            }
        }
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "scratch left behind");
}

#[test]
fn bad_input_ends_every_rank_with_exit_2_and_a_located_message() {
    let out = run(ranks(2, &[]), b"3\n0 0 0\n0 x 0\n0 0 0\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 3") && err.contains("`x`"), "{err}");
}

#[test]
fn an_unwritable_work_dir_on_one_rank_ends_the_job_naming_that_rank() {
    let dir = work("unwritable");
    let good = dir.path().join("good");
    // A regular file where rank 1's work directory should be: nothing can be made in it.
    let bad = dir.path().join("file");
    std::fs::write(&bad, "not a directory").unwrap();
    let rank = |work: &Path| {
        vec![
            "-np".to_string(),
            "1".into(),
            SOLVER.into(),
            "--mpi".into(),
            "--memory-limit".into(),
            "64K".into(),
        ]
        .into_iter()
        .chain(["--work-dir".to_string(), work.join("x").display().to_string()])
        .collect::<Vec<_>>()
    };
    let mut cmd = mpirun();
    cmd.args(rank(&good)).arg(":").args(rank(&bad));
    let input = std::fs::read(fixture("shapes/4x4_empty_d8.in")).unwrap();
    let out = run(cmd, &input);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rank 1: error: cannot create work directory"), "{err}");
    let left: Vec<_> = std::fs::read_dir(good.join("x")).map(|d| d.flatten().count()).into_iter().collect();
    assert!(left.iter().all(|&n| n == 0), "rank 0's scratch is left: {left:?}");
}

#[test]
fn a_killed_rank_ends_the_job_with_nothing_on_stdout() {
    let dir = work("killed");
    let pid_file = dir.path().join("pid");
    let input = b"19\n0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0\n";
    let mut cmd = mpirun();
    cmd.args(["-np", "1", SOLVER, "--mpi", "--threads", "1", ":", "-np", "1", "sh", "-c"])
        .arg(format!("echo $$ > {}; exec {SOLVER} --mpi --threads 1", pid_file.display()));
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input).unwrap();
    let t = Instant::now();
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file).ok().and_then(|s| s.trim().parse::<i32>().ok())
        {
            break pid;
        }
        assert!(t.elapsed() < LIMIT, "rank 1 never started");
        std::thread::sleep(Duration::from_millis(10));
    };
    // Into the search, then rank 1 goes.
    std::thread::sleep(Duration::from_millis(700));
    assert!(Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap().success());
    while child.try_wait().unwrap().is_none() {
        assert!(t.elapsed() < LIMIT, "the job hung after a rank was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}

//! Project automation: `cargo xtask verify`, `cargo xtask check`, `cargo xtask dist`,
//! `cargo xtask bench`, `cargo xtask man`, `cargo xtask tables`.
//!
//! Runs from the workspace root (found from this crate's manifest directory), whatever the
//! current directory is.

mod bench;
mod check;
mod man;
mod size;
mod tables;
mod verify;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

const HELP: &str = "\
cargo xtask <command>

Commands:
  verify [--threads N] [--solver PATH | --dist]
                         build the release solver (--dist: the one to ship, as `dist`; or take
                         the one at PATH: absolute, or from the workspace root), run every
                         fixture under fixtures/ through it;
                         run the exhaustive SIMD-vs-portable test and the deep cases in
                         profile `release`; non-zero exit on any mismatch
  verify-mpi             build the solver with and without its `mpi` feature in profile
                         `release` (needs Open MPI and libclang), run every fixture, 3x3 deep
                         cases, the empty 4x4 to depth 16 and a 5x5 case through `mpirun -np 1,
                         2, 3`, in memory and on disk (--memory-limit 1M), against one process;
                         non-zero exit on any mismatch
  check                  every locked package builds with the workspace's rust-version, and
                         solver without its default `cli` feature pulls in no command-line
                         crate, and no function in crates/*/src is over 80 lines, no file
                         over 900 (tests aside)
  tables [--only NAME] [--minutes N]
                         exact counts of the game into docs/tables/ (a page and a plot a
                         board): every board of up to 9 cells to the end of every game; 2x5,
                         2x6 and 3x4 for N/4 minutes each, the empty 4x4 and 5x5 for N minutes
                         each (default 60), checkpointed in target/tables/ so that the next run
                         resumes them; each cross-checked against the plain reference, with
                         every partition on disk, and as 2 MPI ranks when mpirun is at hand
  dist                   build the solver to ship (profile `dist`: release with a
                         whole-program link): on Linux one statically linked binary, for
                         musl when its target is installed, else glibc; it starts faster than
                         the dynamically linked one of `cargo build`; prints its path
  man --out DIR          build the release solver and write its manual page and shell
                         completions, made from its options, into DIR: solver.1 (man),
                         solver.bash, _solver (zsh), solver.fish; docs/guide.md says where
                         each is installed
  bench [--quick] [--runs N] [--only NAME] [--baseline PATH]
                         whole-process timings of the dist binary beside the C++ yardstick
                         (../shared/anchor when present); every row is appended as one JSON
                         line to docs/bench-runs.jsonl, and a full run rewrites the current
                         table of docs/benchmarks.md; --quick: 5 runs instead of 11, 3x3
                         workloads only; --only: one workload (e.g. empty3x3-d40, or the start
                         of its name); --baseline: another solver binary (absolute, or from the
                         workspace root) run in every round with our arguments, its column the
                         median of the rounds' ratios ours/baseline; with Open MPI, 2 ranks
                         against 2 threads and a model of the empty 4x4 on 16 machines from
                         measured exchange volumes
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = root();
    std::env::set_current_dir(&root)?;
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{HELP}");
        return Ok(());
    }
    match args.first().map(String::as_str) {
        Some("verify") => verify::run(&root, &args[1..]),
        Some("verify-mpi") => verify::run_mpi(&root, &args[1..]),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("check") => check::run(&root, &args[1..]),
        Some("man") => man::run(&root, &args[1..]),
        Some("tables") => tables::run(&root, &args[1..]),
        Some("dist") => {
            check_args("dist", &args[1..], &[], &[])?;
            println!("{}", build_dist(&root)?.display());
            Ok(())
        }
        Some("help") | None => {
            print!("{HELP}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{HELP}"),
    }
}

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Fails on an argument `command` does not know, so that a typo does not go unnoticed
/// through a long run: `switches` stand alone, each of `valued` takes the argument after it
/// (named in the message).
fn check_args(command: &str, args: &[String], switches: &[&str], valued: &[(&str, &str)]) -> Result<()> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if valued.iter().any(|(flag, _)| flag == a) {
            it.next();
        } else if !switches.contains(&a.as_str()) {
            let expected: Vec<String> = switches
                .iter()
                .map(|s| s.to_string())
                .chain(valued.iter().map(|(flag, value)| format!("{flag} {value}")))
                .collect();
            if expected.is_empty() {
                bail!("{command}: unknown argument `{a}` (it takes none)");
            }
            bail!("{command}: unknown argument `{a}` (expected {})", expected.join(", "));
        }
    }
    Ok(())
}

/// Runs a command to completion, failing on a non-zero exit.
fn run_cmd(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("cannot start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Builds the release solver and returns its path.
fn build_solver(root: &Path) -> Result<PathBuf> {
    run_cmd(Command::new(env!("CARGO")).args(["build", "--release", "--quiet", "-p", "solver"]))?;
    let exe = root.join("target/release/solver");
    if !exe.exists() {
        bail!("{} was not built", exe.display());
    }
    Ok(exe)
}

/// Builds the plain reference solver (`examples/reference.rs`, optimised) and returns its path.
fn build_reference(root: &Path) -> Result<PathBuf> {
    run_cmd(Command::new(env!("CARGO")).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "solver",
        "--example",
        "reference",
    ]))?;
    Ok(root.join("target/release/examples/reference"))
}

/// Where `cargo xtask dist` builds, relative to the workspace root: a target directory of its
/// own, so that it and `cargo build` do not rebuild each other's binary.
const DIST_DIR: &str = "target/dist";

/// Builds the solver to ship and returns its path. On Linux: one statically linked binary,
/// not position-independent (`relocation-model=static`: start-up relocates nothing), for
/// musl's C library when its Rust target is installed (`rustup target add
/// x86_64-unknown-linux-musl`), else for glibc.
///
/// Why: the contest runs one short process a case, and a static glibc process spends most of
/// its start-up in glibc's cache-size detection (dozens of CPUID instructions, each trapping
/// to the hypervisor on a virtual machine), which a musl one skips (docs/benchmarks.md).
/// musl's allocator unmaps large blocks on every reallocation, which the search avoids by
/// sizing its buffers ahead (see `kernels::expand`).
/// The flags go to the binary's own compilation only (`cargo rustc`), never to proc-macro
/// crates, which cannot be static. Each step falls back to the next: musl, static glibc,
/// dynamic.
///
/// A static glibc link lets a symbol be defined twice: toolchains that link with rust-lld
/// (Rust 1.90 and later on x86-64 Linux) name `libgcc_eh.a` twice in a static link, once as a
/// whole archive, and its unwinder's symbols then come from one object file twice over.
fn build_dist(root: &Path) -> Result<PathBuf> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let host = Command::new(&rustc).arg("-vV").output().context("cannot run rustc -vV")?;
    let host = String::from_utf8_lossy(&host.stdout);
    let host = host.lines().find_map(|l| l.strip_prefix("host: ")).unwrap_or("").trim().to_string();
    let build = |target: Option<&str>, extra: &[&str]| -> Result<PathBuf> {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "rustc",
            "--profile",
            "dist",
            "--quiet",
            "-p",
            "solver",
            "--bin",
            "solver",
            "--target-dir",
            DIST_DIR,
        ]);
        if let Some(t) = target {
            cmd.args(["--target", t]);
        }
        run_cmd(cmd.args(extra))?;
        let exe = match target {
            Some(t) => root.join(DIST_DIR).join(t).join("dist/solver"),
            None => root.join(DIST_DIR).join("dist/solver"),
        };
        if !exe.exists() {
            bail!("{} was not built", exe.display());
        }
        Ok(exe)
    };
    let Some(arch) = host.strip_suffix("-unknown-linux-gnu") else {
        return build(None, &[]);
    };
    let fixed = ["--", "-C", "target-feature=+crt-static", "-C", "relocation-model=static"];
    let musl = format!("{arch}-unknown-linux-musl");
    if target_installed(&rustc, &musl) {
        match build(Some(&musl), &fixed) {
            Ok(exe) => return Ok(exe),
            Err(e) => eprintln!("dist: the {musl} build failed ({e:#}); linking glibc statically"),
        }
    } else {
        eprintln!("dist: target {musl} not installed (rustup target add {musl}); linking glibc statically");
    }
    let glibc = [&fixed[..], &["-C", "link-arg=-Wl,--allow-multiple-definition"]].concat();
    build(None, &glibc).or_else(|e| {
        // A system without glibc's static libraries (libc.a) cannot link it statically.
        eprintln!("dist: static linking failed ({e:#}); building a dynamically linked binary");
        build(None, &[])
    })
}

/// True when the Rust standard library for `target` is installed.
fn target_installed(rustc: &str, target: &str) -> bool {
    let Ok(out) = Command::new(rustc).args(["--print", "target-libdir", "--target", target]).output() else {
        return false;
    };
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    out.status.success()
        && std::fs::read_dir(dir).is_ok_and(|mut d| {
            d.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("libstd-")))
        })
}

/// The value of `--name N` in `args`.
fn flag_value<T: std::str::FromStr>(args: &[String], name: &str) -> Result<Option<T>> {
    match args.iter().position(|a| a == name) {
        None => Ok(None),
        Some(i) => {
            let v = args.get(i + 1).with_context(|| format!("{name} needs a value"))?;
            Ok(Some(v.parse().map_err(|_| anyhow::anyhow!("{name}: bad value `{v}`"))?))
        }
    }
}

//! Project automation: `cargo xtask verify`, `cargo xtask dist`, `cargo xtask bench`.
//!
//! Runs from the workspace root (found from this crate's manifest directory), whatever the
//! current directory is.

mod bench;
mod verify;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

const HELP: &str = "\
cargo xtask <command>

Commands:
  verify [--threads N]   build the release solver, run every fixture under fixtures/, run the
                         exhaustive SIMD-vs-portable test; non-zero exit on any mismatch
  dist                   build the solver to ship: one statically linked binary where the
                         toolchain can (Linux with glibc), which starts faster than the
                         dynamically linked one of `cargo build`; prints its path
  bench [--quick] [--runs N] [--only NAME]
                         whole-process timings beside the C++ yardstick (../shared/anchor when
                         present), appended to benches/RESULTS.md; --quick: 5 runs instead of
                         11, 3x3 workloads only; --only: one workload (e.g. empty3x3-d40)
";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("verify") => verify::run(&root, &args[1..]),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("dist") => {
            if let Some(extra) = args.get(1) {
                bail!("dist: unexpected argument `{extra}`");
            }
            println!("{}", build_dist(&root)?.display());
            Ok(())
        }
        Some("help" | "--help" | "-h") | None => {
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

/// Where `cargo xtask dist` builds, relative to the workspace root: a target directory of its
/// own, so that it and `cargo build` do not rebuild each other's binary.
const DIST_DIR: &str = "target/dist";

/// Builds the solver to ship and returns its path: linked statically (`crt-static`) when the
/// host is Linux with glibc, where a dynamically linked binary spends a good share of a short
/// run loading and relocating shared libraries; and not position-independent
/// (`relocation-model=static`), so that start-up relocates nothing (no copy-on-write faults on
/// relocated data; the binary's own code then loads at a fixed address). The flags go to the
/// binary's own compilation only (`cargo rustc`), never to proc-macro crates, which cannot be
/// static.
fn build_dist(root: &Path) -> Result<PathBuf> {
    let host = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-vV")
        .output()
        .context("cannot run rustc -vV")?;
    let host = String::from_utf8_lossy(&host.stdout);
    let host = host.lines().find_map(|l| l.strip_prefix("host: ")).unwrap_or("").trim().to_string();
    let build = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args([
            "rustc",
            "--release",
            "--quiet",
            "-p",
            "solver",
            "--bin",
            "solver",
            "--target-dir",
            DIST_DIR,
        ]);
        run_cmd(cmd.args(extra))
    };
    if !host.ends_with("-linux-gnu") {
        build(&[])?;
    } else if let Err(e) = build(&["--", "-C", "target-feature=+crt-static", "-C", "relocation-model=static"])
    {
        // A system without glibc's static libraries (libc.a) cannot link it statically.
        eprintln!("dist: static linking failed ({e:#}); building a dynamically linked binary");
        build(&[])?;
    }
    let exe = root.join(DIST_DIR).join("release/solver");
    if !exe.exists() {
        bail!("{} was not built", exe.display());
    }
    Ok(exe)
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

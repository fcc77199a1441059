//! Project automation: `cargo xtask verify`, `cargo xtask bench`.
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

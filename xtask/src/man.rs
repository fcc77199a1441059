//! `cargo xtask man --out DIR`: the manual page and the shell completions of the release
//! solver, made by the binary itself from its clap definition (`solver --generate WHAT`), and
//! written into DIR.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// What `solver --generate` makes, and the file each goes to in DIR.
const FILES: [(&str, &str); 4] =
    [("man", "solver.1"), ("bash", "solver.bash"), ("zsh", "_solver"), ("fish", "solver.fish")];

/// Builds the release solver, then writes its manual page and completions into the directory
/// after `--out` (made if missing; relative paths from the workspace root).
pub fn run(root: &Path, args: &[String]) -> Result<()> {
    crate::check_args("man", args, &[], &[("--out", "DIR")])?;
    let Some(out) = args.iter().position(|a| a == "--out").and_then(|i| args.get(i + 1)) else {
        bail!("man: give the directory to write into: cargo xtask man --out DIR");
    };
    let out = root.join(out);
    let solver = crate::build_solver(root)?;
    std::fs::create_dir_all(&out).with_context(|| format!("cannot make {}", out.display()))?;
    for (what, name) in FILES {
        let path = write_one(&solver, what, &out.join(name))?;
        println!("{}", path.display());
    }
    Ok(())
}

/// Writes `solver --generate what` to `path`.
fn write_one(solver: &Path, what: &str, path: &Path) -> Result<PathBuf> {
    let made = Command::new(solver)
        .args(["--generate", what])
        .output()
        .with_context(|| format!("cannot run {}", solver.display()))?;
    if !made.status.success() || made.stdout.is_empty() {
        bail!("{} --generate {what} failed: {}", solver.display(), String::from_utf8_lossy(&made.stderr));
    }
    std::fs::write(path, &made.stdout).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path.to_path_buf())
}

//! `cargo xtask check`: promises the manifests make that compiling alone does not check.
//!
//! * **The minimum supported Rust version.** Every package the lockfile resolves (the
//!   workspace's dependencies, dev-dependencies and build tools) declares a `rust-version` no
//!   newer than the workspace's own, so that the toolchain the README names builds it.
//! * **The library without the command line.** `solver` with `default-features = false`
//!   depends on none of the command line's crates.
//! * **The size rule** (`size.rs`): no function over 80 lines, no file over 900, in
//!   `crates/*/src`.

use std::process::Command;

use anyhow::{bail, Context, Result};

/// Crates only the `solver` crate's `cli` feature may bring in.
const CLI_ONLY: [&str; 7] =
    ["clap", "clap_complete", "clap_mangen", "terminal_size", "indicatif", "serde_json", "parse-size"];

/// Runs the checks; an error names every package that breaks one.
pub fn run(root: &std::path::Path, args: &[String]) -> Result<()> {
    crate::check_args("check", args, &[], &[])?;
    msrv()?;
    library()?;
    crate::size::run(root)?;
    Ok(())
}

/// `1.89` or `1.89.0` as comparable numbers.
fn version(text: &str) -> Option<(u64, u64, u64)> {
    let mut it = text.trim().split('.').map(str::parse::<u64>);
    let major = it.next()?.ok()?;
    let minor = it.next().unwrap_or(Ok(0)).ok()?;
    let patch = it.next().unwrap_or(Ok(0)).ok()?;
    Some((major, minor, patch))
}

fn msrv() -> Result<()> {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked"])
        .output()
        .context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let packages = meta["packages"].as_array().context("cargo metadata: no packages")?;
    let members: Vec<&str> =
        meta["workspace_members"].as_array().into_iter().flatten().filter_map(|m| m.as_str()).collect();
    let ours = packages
        .iter()
        .filter(|p| members.contains(&p["id"].as_str().unwrap_or("")))
        .filter_map(|p| p["rust_version"].as_str())
        .filter_map(version)
        .max()
        .context("no workspace member declares a rust-version")?;
    let mut newer = Vec::new();
    for p in packages {
        if let Some(v) = p["rust_version"].as_str() {
            if version(v).is_some_and(|v| v > ours) {
                newer.push(format!("{} {} needs Rust {v}", p["name"].as_str().unwrap_or("?"), p["version"]));
            }
        }
    }
    let ours = format!("{}.{}", ours.0, ours.1);
    if !newer.is_empty() {
        bail!(
            "the lockfile needs a newer Rust than the workspace's rust-version {ours}:\n  {}",
            newer.join("\n  ")
        );
    }
    println!("msrv: {} packages resolved, none needs more than Rust {ours}", packages.len());
    Ok(())
}

fn library() -> Result<()> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "-p", "solver", "--no-default-features", "-e", "normal,build"])
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .context("cannot run cargo tree")?;
    if !out.status.success() {
        bail!("cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    let found: Vec<&str> = CLI_ONLY.into_iter().filter(|c| names.contains(c)).collect();
    if !found.is_empty() {
        bail!("solver without its default features still depends on {}", found.join(", "));
    }
    let mut distinct = names.clone();
    distinct.sort_unstable();
    distinct.dedup();
    println!(
        "library: solver without the cli feature depends on {} crates, none of {}",
        distinct.len(),
        CLI_ONLY.join(", ")
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_numbers() {
        assert_eq!(version("1.89"), Some((1, 89, 0)));
        assert!(version("1.100.0") > version("1.89"));
        assert_eq!(version("x"), None);
    }
}

//! `cargo xtask check`: promises the manifests make that compiling alone does not check.
//!
//! * **The minimum supported Rust version.** Every package the lockfile resolves (the
//!   workspace's dependencies, dev-dependencies and build tools) declares a `rust-version` no
//!   newer than the workspace's own, so that the toolchain the README names builds it.
//! * **The library without the command line.** `solver` with `default-features = false`
//!   depends on none of the command line's crates, and on exactly the crates that
//!   `README.md` and `crates/solver/README.md` list between their [`LIST_START`] and
//!   [`LIST_END`] markers (each crate name in backticks).
//! * **The size rule** (`size.rs`): no function over 80 lines, no file over 900, in
//!   `crates/*/src`.

use std::process::Command;

use anyhow::{bail, Context, Result};

/// Crates only the `solver` crate's `cli` feature may bring in.
const CLI_ONLY: [&str; 7] =
    ["clap", "clap_complete", "clap_mangen", "terminal_size", "indicatif", "serde_json", "parse-size"];

/// The line before the list of the library's direct dependencies in a README.
const LIST_START: &str =
    "<!-- library dependencies: cargo xtask check compares this list with cargo tree -->";

/// The line after that list.
const LIST_END: &str = "<!-- end of library dependencies -->";

/// The READMEs that list the library's dependencies, from the workspace's root.
const READMES: [&str; 2] = ["README.md", "crates/solver/README.md"];

/// Runs the checks; an error names every package that breaks one.
pub fn run(root: &std::path::Path, args: &[String]) -> Result<()> {
    crate::check_args("check", args, &[], &[])?;
    msrv()?;
    library(root)?;
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

fn library(root: &std::path::Path) -> Result<()> {
    let names = tree(&["-e", "normal,build"])?;
    let found: Vec<&str> = CLI_ONLY.into_iter().filter(|c| names.iter().any(|n| n == c)).collect();
    if !found.is_empty() {
        bail!("solver without its default features still depends on {}", found.join(", "));
    }
    let direct = tree(&["-e", "normal", "--depth", "1", "--target", "all"])?;
    let direct: Vec<String> = direct.into_iter().filter(|n| n != "solver").collect();
    for readme in READMES {
        let text =
            std::fs::read_to_string(root.join(readme)).with_context(|| format!("cannot read {readme}"))?;
        let listed =
            listed(&text).with_context(|| format!("{readme}: no list of the library's dependencies"))?;
        if let Err(why) = compare(&listed, &direct) {
            bail!("{readme} and `cargo tree -p solver --no-default-features` disagree: {why}");
        }
    }
    println!(
        "library: solver without the cli feature depends on {} crates, none of {}; directly on {}, as {} say",
        names.len(),
        CLI_ONLY.join(", "),
        direct.join(", "),
        READMES.join(" and ")
    );
    Ok(())
}

/// The distinct names of the packages `cargo tree -p solver --no-default-features` lists
/// with `args`, sorted.
fn tree(args: &[&str]) -> Result<Vec<String>> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "-p", "solver", "--no-default-features"])
        .args(args)
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .context("cannot run cargo tree")?;
    if !out.status.success() {
        bail!("cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let tree = String::from_utf8_lossy(&out.stdout);
    let mut names: Vec<String> =
        tree.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect();
    names.sort_unstable();
    names.dedup();
    Ok(names)
}

/// The crate names (each in backticks) between a README's [`LIST_START`] and [`LIST_END`]
/// lines, sorted; `None` without the markers.
fn listed(readme: &str) -> Option<Vec<String>> {
    let start = readme.find(LIST_START)? + LIST_START.len();
    let end = start + readme[start..].find(LIST_END)?;
    let mut names: Vec<String> =
        readme[start..end].split('`').skip(1).step_by(2).map(str::to_string).collect();
    names.sort_unstable();
    names.dedup();
    Some(names)
}

/// Whether a README's list and `cargo tree`'s agree: else, what each lacks.
fn compare(listed: &[String], tree: &[String]) -> std::result::Result<(), String> {
    let unlisted: Vec<&str> = tree.iter().filter(|n| !listed.contains(n)).map(String::as_str).collect();
    let unused: Vec<&str> = listed.iter().filter(|n| !tree.contains(n)).map(String::as_str).collect();
    let mut why = Vec::new();
    if !unlisted.is_empty() {
        why.push(format!("the README does not list {}", unlisted.join(", ")));
    }
    if !unused.is_empty() {
        why.push(format!("the README lists {}, which the library does not depend on", unused.join(", ")));
    }
    if why.is_empty() {
        Ok(())
    } else {
        Err(why.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_readme_list_must_match_the_tree() {
        let readme = format!("Text `not-listed`.\n{LIST_START}\n`rayon` (threads), `bytemuck`, and `rayon`\n{LIST_END}\n`after`");
        let list = listed(&readme).unwrap();
        assert_eq!(list, names(&["bytemuck", "rayon"]));
        assert_eq!(compare(&list, &names(&["bytemuck", "rayon"])), Ok(()));
        let e = compare(&list, &names(&["bytemuck", "rayon", "serde"])).unwrap_err();
        assert!(e.contains("does not list serde"), "{e}");
        let e = compare(&list, &names(&["rayon"])).unwrap_err();
        assert!(e.contains("lists bytemuck"), "{e}");
        assert_eq!(listed("no markers"), None);
    }

    #[test]
    fn versions_compare_as_numbers() {
        assert_eq!(version("1.89"), Some((1, 89, 0)));
        assert!(version("1.100.0") > version("1.89"));
        assert_eq!(version("x"), None);
    }
}

//! `cargo xtask bench`: whole-process timings beside the C++ yardstick.

use std::path::Path;

use anyhow::Result;

pub fn run(_root: &Path, _args: &[String]) -> Result<()> {
    anyhow::bail!("not yet")
}

//! Links the `solver` binary with the C unwinder's static library (libgcc_eh) instead of the
//! shared libgcc_s, on Linux with glibc, where the C compiler that links has it.
//!
//! Why: the contest runs one short process a case. Loading libgcc_s runs its constructor,
//! which identifies the CPU with a series of CPUID instructions; on a virtual machine each one
//! traps to the hypervisor, and together they take a sizeable share of a short search's
//! process (figures in docs/benchmarks.md). The binary aborts on panic, so the unwinder only
//! walks the stack for a backtrace, which the static copy does as well. The library's own
//! symbols win over the shared library's, which the linker then leaves out (Rust links with
//! `--as-needed`). The binary then needs of the C library what the compiler's libgcc_eh.a
//! needs of the one it was built for (glibc 2.35's `_dl_find_object`, say): a binary built on
//! a system runs there; `cargo xtask dist` makes the one to ship elsewhere.
//!
//! Left as it is:
//! * with `crt-static` (`cargo xtask dist`): the whole C runtime is static already;
//! * with the `mpi` feature: the MPI library may load libgcc_s itself, and a process is better
//!   off with one unwinder than two;
//! * when cross-compiling, or where the C compiler does not find libgcc_eh.a (another
//!   compiler or C library).

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    if let Some(archive) = static_unwinder() {
        println!("cargo:rustc-link-arg-bins=-Wl,--whole-archive");
        println!("cargo:rustc-link-arg-bins={}", archive.display());
        println!("cargo:rustc-link-arg-bins=-Wl,--no-whole-archive");
    }
}

/// The path of libgcc_eh.a, when the binary is to link it (see the module's comment).
fn static_unwinder() -> Option<PathBuf> {
    let var = |name: &str| env::var(name).unwrap_or_default();
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    let static_crt = var("CARGO_CFG_TARGET_FEATURE").split(',').any(|f| f == "crt-static");
    let mpi = env::var_os("CARGO_FEATURE_MPI").is_some();
    if !linux_gnu || static_crt || mpi || var("TARGET") != var("HOST") {
        return None;
    }
    let linker = env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".into());
    let out = Command::new(linker).arg("-print-file-name=libgcc_eh.a").output().ok()?;
    // The compiler prints the name alone when it does not find the file.
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    (out.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}

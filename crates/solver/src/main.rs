//! The `solver` binary: the command line over the `solver` library ([`cli`]).

mod cli;

/// Where the C library is musl (the shipped static binary), dlmalloc serves the heap: musl's
/// allocator maps and unmaps pages for many small allocations (a thread pool's start takes a
/// dozen system calls and their page faults), which a short run pays for in its start-up.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}

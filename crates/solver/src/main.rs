//! The `solver` binary: see [`solver::cli`].

fn main() -> std::process::ExitCode {
    solver::cli::main()
}

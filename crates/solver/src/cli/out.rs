//! Where the tool's output goes: a checked stdout, colour only where it is wanted, and the
//! `--all-depths` lines streamed as the depths end.

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

/// True when output to a stream that `is_terminal` may carry colour: on a terminal, and
/// never when `NO_COLOR` is set to anything but the empty string (<https://no-color.org>).
pub fn colour(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Standard output, checked: the standard library's `Stdout` takes a closed descriptor for a
/// sink that accepts everything (it ignores `EBADF`), so the answer goes through a duplicate
/// of the descriptor, which fails when there is none, and a stdout that was closed when the
/// process started is refused ([`STDOUT_CLOSED_AT_START`]).
#[derive(Debug)]
pub struct Stdout(pub File);

impl Stdout {
    #[cfg(unix)]
    pub fn open() -> io::Result<Stdout> {
        use std::os::fd::AsFd;
        if STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(io::Error::other("it is closed"));
        }
        Ok(Stdout(File::from(io::stdout().as_fd().try_clone_to_owned()?)))
    }

    #[cfg(windows)]
    pub fn open() -> io::Result<Stdout> {
        use std::os::windows::io::AsHandle;
        Ok(Stdout(File::from(io::stdout().as_handle().try_clone_to_owned()?)))
    }
}

/// True when descriptor 1 was closed as the process started. The standard library's start-up
/// then opens `/dev/null` on it, which looks like a stdout its parent sent to `/dev/null` on
/// purpose: so it is read before that, by [`record_stdout`], which the C runtime calls with the
/// other initialisers of an ELF executable ahead of `main`. Elsewhere it stays false (a
/// closed stdout then takes the answer silently, as the standard library's own does).
#[cfg(unix)]
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// [`record_stdout`] in the executable's list of initialisers (`.init_array`, run before
/// `main`, and before the standard library's start-up).
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd", target_os = "netbsd"))]
#[used]
#[link_section = ".init_array"]
static RECORD_STDOUT: extern "C" fn() = record_stdout;

/// Sets [`STDOUT_CLOSED_AT_START`] when descriptor 1 is not open.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd", target_os = "netbsd"))]
extern "C" fn record_stdout() {
    // SAFETY: `F_GETFD` reads a descriptor number's flags, or fails with `EBADF` when nothing
    // is open on it; it borrows nothing and changes nothing.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

/// The exit code of a failed write to stdout: 1, with a message on stderr (none for a broken
/// pipe: whoever read the output has gone).
pub fn write_failed(e: &io::Error) -> ExitCode {
    if e.kind() != io::ErrorKind::BrokenPipe {
        let _ = writeln!(io::stderr(), "error: cannot write to stdout: {e}");
    }
    ExitCode::from(1)
}

/// Writes `bytes` to `out`: exit 0 once they are written, else as [`write_failed`].
pub fn deliver(out: io::Result<Stdout>, bytes: &[u8]) -> ExitCode {
    match out.and_then(|mut o| o.0.write_all(bytes).and_then(|()| o.0.flush())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => write_failed(&e),
    }
}

/// One `depth answer` line of `--all-depths`, written and flushed at once (a reader sees each
/// depth as it ends).
pub fn depth_line(out: &mut impl Write, depth: u32, answer: u32) -> io::Result<()> {
    writeln!(out, "{depth} {answer}").and_then(|()| out.flush())
}

/// The `--all-depths` lines of the depths after `from` up to `to`, all with `answer` (every
/// path ended before them): written as they are made, never held, so that any depth up to
/// 2^32 - 1 takes the same memory; a reader that stops reading ends it (a broken pipe).
pub fn remaining_lines(out: &mut impl Write, from: u32, to: u32, answer: u32) -> io::Result<()> {
    if from >= to {
        return Ok(());
    }
    let mut w = io::BufWriter::with_capacity(1 << 16, out);
    for depth in from + 1..=to {
        writeln!(w, "{depth} {answer}")?;
    }
    w.flush()
}

/// True when stdin is a terminal (someone would type the input).
pub fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}

/// The hint shown on stderr before the tool waits for input typed on a terminal.
pub const STDIN_HINT: &str =
    "solver: reading the input from stdin (the depth, then the board's rows); Ctrl-D ends it, --help for usage";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remaining_lines_count_from_the_next_depth() {
        let mut out = Vec::new();
        remaining_lines(&mut out, 2, 5, 7).unwrap();
        remaining_lines(&mut out, 5, 5, 7).unwrap();
        remaining_lines(&mut out, u32::MAX, u32::MAX, 7).unwrap();
        depth_line(&mut out, 6, 8).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "3 7\n4 7\n5 7\n6 8\n");
    }
}

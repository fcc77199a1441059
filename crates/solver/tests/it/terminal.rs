//! The binary on a terminal: the progress bar's frames, colour and `NO_COLOR`, the hint
//! before reading a typed input. Each run gets a pseudo-terminal from python3's `pty` module
//! (driven by [`DRIVER`]), which records what the terminal showed and when.

use std::process::Command;

use crate::common;
use common::temp_dir;

/// Runs `argv` on a pseudo-terminal (its stdin, stdout and stderr), types `typed` once the
/// terminal shows `stdin`, sends SIGTERM after `timeout` seconds, and prints as JSON the exit
/// status, whether it was killed, and each chunk read with its time since the start.
const DRIVER: &str = r#"
import json, os, pty, select, signal, sys, time
timeout = float(sys.argv[1]); typed = sys.argv[2].encode(); argv = sys.argv[3:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
t0 = time.monotonic(); chunks = []; seen = b''; sent = not typed; killed = False
while True:
    if not killed and time.monotonic() - t0 > timeout:
        os.kill(pid, signal.SIGTERM); killed = True
    r, _, _ = select.select([fd], [], [], 0.05)
    if not r:
        continue
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    chunks.append([time.monotonic() - t0, data.decode('latin-1')])
    seen += data
    if not sent and b'stdin' in seen:
        os.write(fd, typed); sent = True
_, status = os.waitpid(pid, 0)
print(json.dumps({"status": os.waitstatus_to_exitcode(status), "killed": killed, "chunks": chunks}))
"#;

/// What a run on a terminal showed.
struct Shown {
    status: i64,
    killed: bool,
    /// Each read: seconds since the start, and the text.
    chunks: Vec<(f64, String)>,
}

impl Shown {
    fn text(&self) -> String {
        self.chunks.iter().map(|(_, c)| c.as_str()).collect()
    }
}

/// Runs the solver with `args` on a terminal (see [`DRIVER`]), with `NO_COLOR` as given.
fn on_terminal(args: &[&str], typed: &str, timeout: f64, no_color: Option<&str>) -> Shown {
    let mut cmd = Command::new("python3");
    cmd.args(["-c", DRIVER, &timeout.to_string(), typed, env!("CARGO_BIN_EXE_solver")]).args(args);
    cmd.env("TERM", "xterm").env_remove("NO_COLOR");
    if let Some(v) = no_color {
        cmd.env("NO_COLOR", v);
    }
    let out = cmd.output().expect("python3 runs the pseudo-terminal");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let chunks = v["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c[0].as_f64().unwrap(), c[1].as_str().unwrap().to_string()))
        .collect();
    Shown { status: v["status"].as_i64().unwrap(), killed: v["killed"].as_bool().unwrap(), chunks }
}

/// One frame of the progress line: when it was read, its clock in seconds, its spinner, how
/// many `=` its bar has, and its message.
#[derive(Debug, PartialEq)]
struct Frame {
    at: f64,
    clock: u64,
    spinner: char,
    filled: usize,
    message: String,
}

/// The frames drawn: each redraw starts with a carriage return and a line clear.
fn frames(shown: &Shown) -> Vec<Frame> {
    let mut frames = Vec::new();
    for (at, chunk) in &shown.chunks {
        for line in chunk.split('\r').map(|l| l.trim_start_matches("\x1b[2K").trim_end()) {
            let Some((clock, rest)) = line.split_once(' ') else { continue };
            let parts: Vec<u64> = clock.split(':').filter_map(|p| p.parse().ok()).collect();
            let Some((bar, message)) = rest.get(2..).and_then(|r| r.split_once("] ")) else { continue };
            if parts.len() != 3 || !message.starts_with("depth ") {
                continue;
            }
            frames.push(Frame {
                at: *at,
                clock: parts[0] * 3600 + parts[1] * 60 + parts[2],
                spinner: rest.chars().next().unwrap(),
                filled: bar.matches('=').count(),
                message: message.to_string(),
            });
        }
    }
    frames
}

#[test]
fn the_progress_bar_counts_from_the_start_and_ticks_within_a_depth() {
    let dir = temp_dir("progress");
    let input = dir.path().join("5x5.in");
    // An empty 5x5 board on one thread: each depth takes several times as long as the last,
    // so within a few seconds one depth lasts over a second. The run is stopped before its
    // end.
    std::fs::write(&input, format!("30\n{}", "0 0 0 0 0\n".repeat(5))).unwrap();
    let shown = on_terminal(&["--threads", "1", input.to_str().unwrap()], "", 4.5, None);
    assert!(shown.killed, "the run ended early: {}", shown.text());
    let frames = frames(&shown);
    let first = frames.first().unwrap_or_else(|| panic!("no progress bar: {:?}", shown.text()));
    // Drawn once the run has lasted a second, its clock counting from the run's start.
    assert!(first.at >= 0.9 && first.clock >= 1, "{first:?}");
    for f in &frames {
        assert!((f.clock as f64) <= f.at + 0.5 && (f.clock as f64) >= f.at - 1.5, "clock off: {f:?}");
        // The bar and the message show the same depth: the one in progress, after
        // `depth - 1` done of 30 (the bar is 20 wide).
        let depth: usize = f.message["depth ".len()..].split('/').next().unwrap().parse().unwrap();
        assert!(depth >= 1 && f.filled == (depth - 1) * 20 / 30, "{f:?}");
        assert!(f.message.ends_with("/30") || f.message.contains("/30, "), "{f:?}");
    }
    // A steady tick: the same depth drawn again with the spinner moved.
    let ticked = frames.windows(2).any(|w| w[0].message == w[1].message && w[0].spinner != w[1].spinner);
    assert!(ticked, "no tick within a depth: {frames:#?}");
    let moved_clock = frames.windows(2).any(|w| w[0].message == w[1].message && w[0].clock < w[1].clock);
    assert!(moved_clock, "the clock stood still within a depth: {frames:#?}");
    dir.close().unwrap();
}

#[test]
fn a_typed_input_gets_a_hint_first() {
    let shown = on_terminal(&[], "20\n0 6 0\n2 2 2\n1 6 1\n\x04", 30.0, None);
    let text = shown.text();
    assert_eq!(shown.status, 0, "{text}");
    let hint = text.find("reading the input from stdin").expect("a hint");
    assert!(text[hint..].contains("Ctrl-D") && text[hint..].contains("322444322"), "{text}");
}

#[test]
fn no_escape_codes_with_no_color() {
    let dir = temp_dir("colour");
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "5\n0 0 0\n0 0 0\n0 0 0\n").unwrap();
    let file = input.to_str().unwrap();
    let cases: [&[&str]; 4] =
        [&["--no-such-flag"], &["--threads", "0", file], &["--help"], &["--stats", file]];
    for args in cases {
        let shown = on_terminal(args, "", 30.0, Some("1"));
        assert!(!shown.text().contains('\x1b'), "{args:?} with NO_COLOR: {:?}", shown.text());
        assert!(!shown.killed && shown.status != -1, "{args:?}");
    }
    // On a terminal without it (or with it empty), clap's errors are in colour.
    for no_color in [None, Some("")] {
        let shown = on_terminal(&["--no-such-flag"], "", 30.0, no_color);
        assert!(shown.text().contains("\x1b["), "{no_color:?}: {:?}", shown.text());
        assert_eq!(shown.status, 2);
    }
    dir.close().unwrap();
}

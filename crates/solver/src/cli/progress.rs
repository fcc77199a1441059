//! The progress bar on stderr: only on a terminal, and only once a run has lasted
//! [`PROGRESS_DELAY`], so that short runs, pipes and CI logs never see it.
//!
//! The line shows the time since the run started, a spinner that turns while a depth runs
//! (a steady tick), the depths done as a bar, and the depth in progress with the positions it
//! is expected to store (the last depth's times its growth over the one before). A watcher
//! thread draws the bar when the delay is over, even in the middle of a depth; its first
//! frame shows the depth in progress then, never an earlier one.

use std::fmt::Write as _;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use solver::DepthStats;

/// How long a run goes before its progress bar appears.
pub const PROGRESS_DELAY: Duration = Duration::from_secs(1);

/// How often the bar is redrawn while a depth runs (its clock and spinner move).
pub const TICK: Duration = Duration::from_millis(200);

/// The progress line's layout: at most 80 columns for any depth up to 99 999 (the bar takes
/// 22, the message at most 46). `run_elapsed` is the time since the run started.
const TEMPLATE: &str = "{run_elapsed} {spinner} [{bar:20}] {msg}";

/// What the bar shows, and the bar once it is drawn.
#[derive(Debug, Default)]
struct Shown {
    /// Depths done.
    done: u32,
    message: String,
    bar: Option<ProgressBar>,
    /// The run is over: the watcher draws nothing.
    finished: bool,
}

#[derive(Debug, Default)]
struct Shared {
    shown: Mutex<Shown>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Shown> {
        self.shown.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The progress bar of one run: a line on stderr that a thread redraws while the run goes.
#[derive(Debug)]
pub struct Progress {
    total: u32,
    /// `None` when no bar is to be drawn (stderr not a terminal, or `--no-progress`).
    shared: Option<Arc<Shared>>,
    watcher: Option<JoinHandle<()>>,
    /// The positions of the depth before the last one done: the growth's denominator.
    before: Option<u64>,
}

impl Progress {
    /// The progress of a run of `total` depths that began at `started`, drawn on `target`
    /// (stderr) once the run has lasted [`PROGRESS_DELAY`]; nothing when `target` is `None`.
    pub fn new(total: u32, started: Instant, target: Option<ProgressDrawTarget>) -> Progress {
        let mut progress = Progress { total, shared: None, watcher: None, before: None };
        let Some(target) = target else { return progress };
        let shared = Arc::new(Shared::default());
        shared.lock().message = in_progress(total, 0, None);
        let watch = Arc::clone(&shared);
        let spawned = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || watch_and_draw(&watch, total, started, target));
        if let Ok(handle) = spawned {
            progress.watcher = Some(handle);
            progress.shared = Some(shared);
        }
        progress
    }

    /// Called after each depth with its statistics.
    pub fn depth_done(&mut self, s: &DepthStats) {
        let Some(shared) = &self.shared else { return };
        let growth = self.before.filter(|&b| b > 0).map(|b| s.states as f64 / b as f64);
        self.before = Some(s.states);
        let message = in_progress(self.total, s.depth, growth.map(|g| (s.states, g)));
        let mut shown = shared.lock();
        shown.done = s.depth;
        if let Some(bar) = &shown.bar {
            bar.set_position(u64::from(s.depth));
            bar.set_message(message.clone());
        }
        shown.message = message;
    }

    /// Runs `f` with the bar taken off the screen (for a line written to the terminal).
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        match self.shared.as_ref().and_then(|s| s.lock().bar.clone()) {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// True once the bar has been drawn.
    #[cfg(test)]
    pub fn is_visible(&self) -> bool {
        self.shared.as_ref().is_some_and(|s| s.lock().bar.is_some())
    }

    /// Removes the bar, and stops the watcher.
    pub fn finish(&mut self) {
        if let Some(shared) = self.shared.take() {
            let bar = {
                let mut shown = shared.lock();
                shown.finished = true;
                shown.bar.take()
            };
            shared.wake.notify_all();
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
        }
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The watcher: waits until the run has lasted [`PROGRESS_DELAY`] (or is over), then draws
/// the bar as it stands and sets it ticking.
fn watch_and_draw(shared: &Shared, total: u32, started: Instant, target: ProgressDrawTarget) {
    let due = started + PROGRESS_DELAY;
    let mut shown = shared.lock();
    while !shown.finished {
        let now = Instant::now();
        if now >= due {
            let bar = ProgressBar::with_draw_target(Some(u64::from(total)), ProgressDrawTarget::hidden())
                .with_style(style(started))
                .with_position(u64::from(shown.done))
                .with_message(shown.message.clone());
            // Drawn only from here on, with this depth's figures.
            bar.set_draw_target(target);
            bar.enable_steady_tick(TICK);
            shown.bar = Some(bar);
            return;
        }
        shown = shared.wake.wait_timeout(shown, due - now).unwrap_or_else(|e| e.into_inner()).0;
    }
}

/// The bar's style: [`TEMPLATE`], with `run_elapsed` counted from `started`.
fn style(started: Instant) -> ProgressStyle {
    ProgressStyle::with_template(TEMPLATE)
        .expect("the template is valid")
        .with_key("run_elapsed", move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&clock(started.elapsed()));
        })
        .progress_chars("=> ")
        .tick_chars("|/-\\ ")
}

/// `hh:mm:ss`.
pub fn clock(elapsed: Duration) -> String {
    let s = elapsed.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The message once `done` depths of `total` are done: the depth in progress, and with
/// `grown` (the positions of depth `done` and their growth over the depth before) the
/// positions it is expected to store. The last depth stores none: its paths are summed.
pub fn in_progress(total: u32, done: u32, grown: Option<(u64, f64)>) -> String {
    let next = done.saturating_add(1);
    let mut message = format!("depth {}/{total}", next.min(total));
    if done >= total {
        message += ", done";
    } else if next == total {
        message += ", the last: summed";
    } else if let Some((states, growth)) = grown {
        let _ = write!(message, ", ~{} positions expected", count(states as f64 * growth));
    }
    message
}

/// `1234`, `12.3K`, `4.5M`, `987.7G`: at most 6 columns below 10^13.
fn count(n: f64) -> String {
    match n {
        _ if n < 1e4 => format!("{n:.0}"),
        _ if n < 1e6 => format!("{:.1}K", n / 1e3),
        _ if n < 1e9 => format!("{:.1}M", n / 1e6),
        _ => format!("{:.1}G", n / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A depth's statistics with these figures.
    fn stats(depth: u32, states: u64) -> DepthStats {
        let mut s = DepthStats::default();
        (s.depth, s.states) = (depth, states);
        s
    }

    #[test]
    fn the_message_names_the_depth_in_progress_and_its_expected_size() {
        assert_eq!(in_progress(16, 0, None), "depth 1/16");
        assert_eq!(in_progress(16, 3, Some((1_000_000, 4.0))), "depth 4/16, ~4.0M positions expected");
        assert_eq!(in_progress(16, 15, Some((1_000, 4.0))), "depth 16/16, the last: summed");
        assert_eq!(in_progress(16, 16, None), "depth 16/16, done");
        let widest = in_progress(99_999, 99_997, Some((987_654_321_000, 1.0)));
        assert_eq!(widest, "depth 99998/99999, ~987.7G positions expected");
        // The line: clock, spinner, bar and message within 80 columns.
        assert!(8 + 1 + 1 + 1 + 22 + 1 + widest.len() <= 80, "{widest}");
        assert_eq!(clock(Duration::from_secs(3 * 3600 + 25 * 60 + 7)), "03:25:07");
    }

    #[test]
    fn no_terminal_no_bar_and_no_thread() {
        let mut p = Progress::new(3, Instant::now() - Duration::from_secs(5), None);
        p.depth_done(&stats(1, 0));
        assert!(!p.is_visible() && p.watcher.is_none());
        assert_eq!(p.suspend(|| 7), 7);
    }

    #[test]
    fn a_run_past_the_delay_draws_its_bar_with_the_current_depth() {
        let started = Instant::now() - Duration::from_secs(5);
        let mut p = Progress::new(9, started, Some(ProgressDrawTarget::hidden()));
        p.depth_done(&stats(0, 1));
        p.depth_done(&stats(1, 4));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !p.is_visible() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let bar = p.shared.as_ref().unwrap().lock().bar.clone().expect("the bar is drawn");
        assert_eq!(bar.position(), 1);
        assert_eq!(bar.message(), "depth 2/9, ~16 positions expected");
        p.finish();
        assert!(!p.is_visible());
    }

    #[test]
    fn a_short_run_never_draws() {
        let mut p = Progress::new(9, Instant::now(), Some(ProgressDrawTarget::hidden()));
        p.depth_done(&stats(1, 4));
        p.finish();
        assert!(!p.is_visible() && p.watcher.is_none());
    }
}

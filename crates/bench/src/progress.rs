//! The live progress bar (indicatif) on stderr: elapsed time against the
//! duration, successful ops/s over the last update, and errors so far.
//! Hidden when stderr is not a terminal, so logs and tests stay clean.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::window::Totals;

/// A progress display.
pub struct Progress {
    bar: ProgressBar,
    last: Option<(Duration, u64)>,
}

fn target() -> ProgressDrawTarget {
    match std::io::stderr().is_terminal() {
        true => ProgressDrawTarget::stderr(),
        false => ProgressDrawTarget::hidden(),
    }
}

impl Progress {
    /// A bar for a measured phase of `duration`.
    pub fn run(duration: Duration) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(duration.as_millis() as u64), target());
        let style =
            ProgressStyle::with_template("{prefix} [{bar:30}] {elapsed:>4}/{duration_s}  {msg}")
                .map(|s| s.progress_chars("=> "))
                .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style.with_key(
            "duration_s",
            move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{}s", duration.as_secs());
            },
        ));
        bar.set_prefix("run");
        Progress { bar, last: None }
    }

    /// A bar counting `total` preloaded keys.
    pub fn preload(total: u64) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), target());
        if let Ok(style) =
            ProgressStyle::with_template("preload [{bar:30}] {pos}/{len} keys, {eta} left")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar, last: None }
    }

    /// Shows `elapsed` and the rate since the previous update.
    pub fn update(&mut self, elapsed: Duration, totals: Totals) {
        self.bar.set_position(elapsed.as_millis() as u64);
        if let Some((t, ok)) = self.last {
            let dt = (elapsed - t.min(elapsed)).as_secs_f64();
            if dt > 0.0 {
                let rate = totals.ok.saturating_sub(ok) as f64 / dt;
                self.bar
                    .set_message(format!("{rate:>8.0} ops/s  {} errors", totals.errors));
            }
        }
        self.last = Some((elapsed, totals.ok));
    }

    /// Advances a preload bar by `n`.
    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

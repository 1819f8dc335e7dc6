//! The live progress line (indicatif) on a terminal; plain lines otherwise.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    enabled: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A progress line only when both standard output and standard error
    /// are terminals and `wanted`.
    pub fn new(wanted: bool) -> Progress {
        Progress {
            enabled: wanted && std::io::stdout().is_terminal() && std::io::stderr().is_terminal(),
            bar: None,
        }
    }

    /// A new line for one run: `total` iterations, or a spinner when the
    /// run is timed.
    pub fn start(&mut self, label: &str, total: Option<u64>) {
        self.finish();
        if !self.enabled {
            return;
        }
        let bar = match total {
            Some(n) => {
                let b = ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr());
                if let Ok(s) = ProgressStyle::with_template(
                    "{prefix:>18} [{bar:30}] {pos}/{len} iterations, {elapsed}",
                ) {
                    b.set_style(s.progress_chars("=> "));
                }
                b
            }
            None => {
                let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                if let Ok(s) = ProgressStyle::with_template(
                    "{prefix:>18} {spinner} {pos} iterations, {elapsed}",
                ) {
                    b.set_style(s);
                }
                b
            }
        };
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        self.bar = Some(bar);
    }

    pub fn set(&self, pos: u64) {
        if let Some(b) = &self.bar {
            b.set_position(pos);
        }
    }

    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }

    /// Prints a line of the table without garbling the progress line.
    pub fn println(&self, line: &str) {
        let print = || {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{line}");
            let _ = o.flush();
        };
        match &self.bar {
            Some(b) => b.suspend(print),
            None => print(),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

//! The progress line on stderr during a run: placement, round, task count, seconds left,
//! the current rate. It is redrawn at the harness's own sample points (no thread of its own:
//! workers are forked from a single-threaded harness, and the measured CPUs see nothing more
//! than the sample read they already pay for), and only when stderr is a terminal.

use std::io::{IsTerminal, Write};

use crate::run::{Progress, Tick};
use crate::text::thousands;

pub struct TerminalProgress {
    enabled: bool,
    /// What is being measured, e.g. "child rep 2/5".
    context: String,
    /// Seconds the rest of the run will take after the current measurement.
    after_s: f64,
    unit: &'static str,
    drawn: bool,
}

impl TerminalProgress {
    pub fn new(quiet: bool, unit: &'static str) -> Self {
        TerminalProgress {
            enabled: !quiet && std::io::stderr().is_terminal(),
            context: String::new(),
            after_s: 0.0,
            unit,
            drawn: false,
        }
    }
}

impl Progress for TerminalProgress {
    fn start(&mut self, context: String, after_s: f64) {
        self.context = context;
        self.after_s = after_s;
    }

    fn tick(&mut self, tick: &Tick) {
        if !self.enabled {
            return;
        }
        let line = render(&self.context, tick, self.after_s, self.unit);
        let mut err = std::io::stderr().lock();
        // \r and erase-line: one line redrawn in place.
        let _ = write!(err, "\r\x1b[K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Removes the line, so warnings and the table start on a clean line.
    fn clear(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[K");
            self.drawn = false;
        }
    }
}

impl Drop for TerminalProgress {
    fn drop(&mut self) {
        self.clear();
    }
}

pub fn render(context: &str, tick: &Tick, after_s: f64, unit: &str) -> String {
    let left = (tick.duration_s - tick.elapsed_s).max(0.0) + after_s;
    format!(
        "faultscale: {context}: {:.1}/{:.1} s, {} {unit}/s, {left:.0} s left",
        tick.elapsed_s,
        tick.duration_s,
        thousands(tick.rate)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_where_the_run_is() {
        let tick = Tick { elapsed_s: 3.0, duration_s: 10.0, rate: 612_345.6 };
        assert_eq!(
            render("child rep 2/5, 4 tasks", &tick, 30.0, "faults"),
            "faultscale: child rep 2/5, 4 tasks: 3.0/10.0 s, 612,346 faults/s, 37 s left"
        );
    }

    #[test]
    fn off_when_stderr_is_not_a_terminal() {
        // Test runners capture stderr: the line must not appear there.
        let progress = TerminalProgress::new(false, "faults");
        assert!(!progress.enabled || std::io::stderr().is_terminal());
        assert!(!TerminalProgress::new(true, "faults").enabled);
    }
}

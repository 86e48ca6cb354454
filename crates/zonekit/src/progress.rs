//! Progress of a long run on a terminal: a bar (`msg [#####     ] 40/100 runs (eta 12 s)`) or a
//! counter (`msg 12,345,678 block writes (21.3 M/s)`) on stderr, redrawn at most ten times a
//! second. Nothing is drawn when stderr is not a terminal (CI, a pipe, a file), so logs stay
//! clean. Updates are an atomic store and a clock read; clones share one line.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// How often the line is redrawn, at most.
const REDRAW_NS: u64 = 100_000_000;
const BAR_WIDTH: usize = 30;

#[derive(Clone)]
pub struct Progress(Option<Arc<Line>>);

struct Line {
    /// A bar (else a counter).
    bar: bool,
    unit: &'static str,
    position: AtomicU64,
    length: AtomicU64,
    started: Instant,
    next_draw_ns: AtomicU64,
    text: Mutex<Text>,
}

struct Text {
    message: String,
    drawn: bool,
}

impl Progress {
    /// A bar of `length` steps counted in `unit` (e.g. "runs"; "" for none).
    pub fn bar(length: u64, unit: &'static str) -> Progress {
        Progress::new(true, length, unit)
    }

    /// A running count of `unit` (e.g. "block writes") with its rate; "" shows the message alone.
    pub fn counter(unit: &'static str) -> Progress {
        Progress::new(false, 0, unit)
    }

    fn new(bar: bool, length: u64, unit: &'static str) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        Progress(Some(Arc::new(Line {
            bar,
            unit,
            position: AtomicU64::new(0),
            length: AtomicU64::new(length),
            started: Instant::now(),
            next_draw_ns: AtomicU64::new(0),
            text: Mutex::new(Text { message: String::new(), drawn: false }),
        })))
    }

    pub fn with_message(self, message: &str) -> Progress {
        self.set_message(message);
        self
    }

    pub fn set_message(&self, message: &str) {
        if let Some(line) = &self.0 {
            line.text.lock().unwrap_or_else(|p| p.into_inner()).message = message.to_string();
            line.draw_if_due(true);
        }
    }

    pub fn set_length(&self, length: u64) {
        if let Some(line) = &self.0 {
            line.length.store(length, Ordering::Relaxed);
        }
    }

    pub fn set_position(&self, position: u64) {
        if let Some(line) = &self.0 {
            line.position.store(position, Ordering::Relaxed);
            line.draw_if_due(false);
        }
    }

    pub fn inc(&self, steps: u64) {
        if let Some(line) = &self.0 {
            line.position.fetch_add(steps, Ordering::Relaxed);
            line.draw_if_due(false);
        }
    }

    /// Clears the line (if one was drawn), leaving the terminal as it was.
    pub fn finish_and_clear(&self) {
        if let Some(line) = &self.0 {
            let mut text = line.text.lock().unwrap_or_else(|p| p.into_inner());
            if text.drawn {
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
                text.drawn = false;
            }
            // No redraw after the end, from a clone still updating.
            line.next_draw_ns.store(u64::MAX, Ordering::Relaxed);
        }
    }
}

impl Line {
    fn draw_if_due(&self, now_anyway: bool) {
        let now_ns = self.started.elapsed().as_nanos() as u64;
        let due = self.next_draw_ns.load(Ordering::Relaxed);
        if due == u64::MAX || (!now_anyway && now_ns < due) {
            return;
        }
        if self.next_draw_ns.compare_exchange(due, now_ns + REDRAW_NS, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return; // another thread draws this round
        }
        let mut text = self.text.lock().unwrap_or_else(|p| p.into_inner());
        let line = self.render(&text.message, now_ns);
        let _ = write!(std::io::stderr(), "\r\x1b[2K{line}");
        text.drawn = true;
    }

    fn render(&self, message: &str, now_ns: u64) -> String {
        let position = self.position.load(Ordering::Relaxed);
        let seconds = now_ns as f64 / 1e9;
        let unit = if self.unit.is_empty() { String::new() } else { format!(" {}", self.unit) };
        if self.bar {
            let length = self.length.load(Ordering::Relaxed).max(1);
            let done = (position.min(length) as f64 / length as f64).clamp(0.0, 1.0);
            let filled = (done * BAR_WIDTH as f64).round() as usize;
            let eta = if position > 0 && done < 1.0 { format!(" (eta {:.0} s)", seconds / done - seconds) } else { String::new() };
            format!("{message} [{}{}] {position}/{length}{unit}{eta}", "#".repeat(filled), " ".repeat(BAR_WIDTH - filled))
        } else if position == 0 {
            message.to_string()
        } else {
            let rate = position as f64 / seconds.max(1e-9);
            format!("{message} {}{unit} ({}/s)", thousands(position), si(rate))
        }
    }
}

/// 12345678 as "12,345,678".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with a metric prefix: "950", "21.3 K", "4.1 M".
fn si(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.1} G", x / 1e9),
        x if x >= 1e6 => format!("{:.1} M", x / 1e6),
        x if x >= 1e3 => format!("{:.1} K", x / 1e3),
        x => format!("{x:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(12_345_678), "12,345,678");
        assert_eq!(si(950.0), "950");
        assert_eq!(si(21_300.0), "21.3 K");
        assert_eq!(si(4_100_000.0), "4.1 M");
    }

    #[test]
    fn a_bar_and_a_counter_render_their_state() {
        let line = |bar: bool, unit: &'static str| Line {
            bar,
            unit,
            position: AtomicU64::new(40),
            length: AtomicU64::new(100),
            started: Instant::now(),
            next_draw_ns: AtomicU64::new(0),
            text: Mutex::new(Text { message: String::new(), drawn: false }),
        };
        let bar = line(true, "runs").render("sweep", 2_000_000_000);
        assert_eq!(bar, format!("sweep [{}{}] 40/100 runs (eta 3 s)", "#".repeat(12), " ".repeat(18)));
        assert_eq!(line(false, "blocks").render("reading", 2_000_000_000), "reading 40 blocks (20/s)");
        // Off a terminal (as under the test harness) nothing is drawn and nothing fails.
        let quiet = Progress::bar(10, "ops").with_message("x");
        quiet.inc(3);
        quiet.finish_and_clear();
    }
}

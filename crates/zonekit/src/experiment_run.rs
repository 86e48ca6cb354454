//! What the experiment commands share: the thread count and a progress bar over runs.

use anyhow::Result;
use zonekit_lab::harness::error::LabError;

use crate::error::lab;

/// `--threads`: at least one, the machine's cores by default.
pub fn threads(given: Option<usize>) -> Result<usize> {
    match given {
        Some(0) => usage!("--threads must be at least 1"),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// Runs `experiment`, which reports `(done, total, label)` after each run, behind a bar.
pub fn with_runs_bar<T>(experiment: impl FnOnce(&(dyn Fn(usize, usize, &str) + Sync)) -> Result<T, LabError>) -> Result<T> {
    let bar = crate::progress::Progress::bar(0, "runs");
    let result = experiment(&|done, total, label| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        bar.set_message(label);
    });
    bar.finish_and_clear();
    result.map_err(lab)
}

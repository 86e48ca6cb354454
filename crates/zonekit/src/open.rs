//! Opening devices for the `device` and `fs` commands: readers share an emulated image, a
//! writer has it alone, and `--wait` waits for the lock instead of failing.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use zonekit_device::{OpenOptions, OpenedDevice};

/// The lock flag of the command groups that open devices (given anywhere after the group's
/// name, as `zonekit fs ls IMG --wait`).
#[derive(Args, Clone, Copy, Debug, Default)]
pub struct LockArgs {
    /// Wait for a device image another zonekit process is using instead of failing at once
    /// (readers share an image; a writer has it alone). --wait=SECS gives up after SECS seconds.
    #[arg(long, global = true, value_name = "SECS", num_args = 0..=1, require_equals = true, default_missing_value = "forever", value_parser = parse_wait)]
    pub wait: Option<Duration>,
}

fn parse_wait(s: &str) -> Result<Duration, String> {
    if s == "forever" {
        return Ok(Duration::MAX);
    }
    let secs: f64 = s.parse().map_err(|_| format!("{s:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs).map_err(|_| format!("{s}: a wait is a finite, non-negative number of seconds"))
}

/// Set once by `main` from the group's flags, so the command bodies need not pass it around.
static LOCK: OnceLock<LockArgs> = OnceLock::new();

pub fn set_lock(lock: LockArgs) {
    // Only main sets it, once; a second set would be a bug, and keeping the first is harmless.
    let _ = LOCK.set(lock);
}

/// How long to wait for an image lock (None: fail at once).
pub fn lock_wait() -> Option<Duration> {
    LOCK.get().copied().unwrap_or_default().wait
}

/// Opens a device for a command that only looks at it (shared lock, every write refused).
pub fn open_read_only(path: &Path) -> Result<OpenedDevice> {
    Ok(zonekit_device::open_path_with(path, &OpenOptions { read_only: true, wait: lock_wait() })?)
}

/// Opens a device for a command that changes it (exclusive lock).
pub fn open_read_write(path: &Path) -> Result<OpenedDevice> {
    Ok(zonekit_device::open_path_with(path, &OpenOptions { read_only: false, wait: lock_wait() })?)
}

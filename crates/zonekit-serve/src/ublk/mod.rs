//! `zonekit serve ublk`: a Zonekit zoned device as a host-managed zoned `/dev/ublkbN`.
//!
//! The kernel's ublk driver (Linux ≥ 6.6 for zoned devices, module `ublk_drv`) forwards every
//! block request to this process over io_uring; [`Target`] executes it on the device, so the
//! zone report, the state machine, the open and active limits, zone capacity and zone append
//! are the emulator's own. Zoned ublk requires `UBLK_F_USER_COPY`: data moves by `pread` /
//! `pwrite` on `/dev/ublkcN` at the request's offset, not through shared buffers.
//!
//! One queue, served by one thread; the device sits behind a mutex that only the counters
//! thread shares (a snapshot every `stats_interval`). SIGINT or SIGTERM stops the device, the
//! queue drains, and the final counters are written.
//!
//! What needs the kernel's ublk protocol (the `libublk` crate, whose build generates bindings
//! with libclang) is behind the `ublk` cargo feature, so a build that does not serve devices
//! to the kernel does not pay for it; without it [`serve`] says how to get it.

use std::path::PathBuf;
use std::time::Duration;

use zonekit_device::Geometry;

use crate::target::SECTOR_BYTES;

#[cfg(feature = "ublk")]
mod kernel;
#[cfg(feature = "ublk")]
pub use kernel::serve;

/// How to export the device.
#[derive(Clone, Debug)]
pub struct UblkOptions {
    /// The ublk device id (`/dev/ublkbN`); -1 lets the driver choose.
    pub dev_id: i32,
    pub queue_depth: u16,
    /// Largest request, in bytes (the block queue's max_hw_sectors, and zone append's limit).
    pub max_io_bytes: u32,
    /// Where the counters are written while serving and at exit.
    pub stats_path: Option<PathBuf>,
    pub stats_interval: Duration,
    /// Complete each request when the device's timing model says it completes (needs a
    /// device under a model; see [`crate::served::Served::modelled_completion`]).
    pub pace: bool,
    /// Log every read, write and zone append served as a binary trace here
    /// ([`crate::request_log`]).
    pub trace_out: Option<PathBuf>,
}

impl Default for UblkOptions {
    fn default() -> Self {
        UblkOptions { dev_id: -1, queue_depth: 64, max_io_bytes: 512 << 10, stats_path: None, stats_interval: Duration::from_secs(1), pace: false, trace_out: None }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum UblkServeError {
    /// A geometry the kernel would refuse, named before anything is created.
    #[error("the kernel cannot serve this geometry: {0}")]
    Geometry(String),
    #[error("{0}")]
    Kernel(String),
    #[error("{0}")]
    Config(String),
}

/// The kernel's conditions on a zoned block device, checked up front so the user gets a
/// sentence instead of the driver's bare `EINVAL`.
pub fn check_geometry(g: &Geometry, max_io_bytes: u32) -> Result<(), UblkServeError> {
    let bad = |m: String| Err(UblkServeError::Geometry(m));
    let bs = g.block_size_bytes as u64;
    if !(512..=4096).contains(&bs) || !bs.is_power_of_two() {
        return bad(format!("block size {bs} B: Linux needs a power of two from 512 to 4096 (the page size)"));
    }
    let zone_bytes = g.zone_size_bytes();
    if !zone_bytes.is_power_of_two() {
        return bad(format!("zone size {zone_bytes} B: the Linux block layer needs a power-of-two zone size"));
    }
    if zone_bytes / SECTOR_BYTES > u32::MAX as u64 {
        return bad(format!("zone size {zone_bytes} B: more than 2^32 sectors"));
    }
    if g.zone_count == 0 {
        return bad("no zones".into());
    }
    for (what, limit) in [("open", g.open_zones_max), ("active", g.active_zones_max)] {
        if let Some(n) = limit.filter(|&n| n > g.zone_count) {
            return bad(format!("{what}-zone limit {n} exceeds the zone count {}", g.zone_count));
        }
    }
    if (max_io_bytes as u64) < bs || max_io_bytes as u64 % bs != 0 {
        return bad(format!("largest request {max_io_bytes} B is not a whole number of {bs}-byte blocks"));
    }
    Ok(())
}

/// Without the `ublk` feature: refuses, naming the build that has it.
#[cfg(not(feature = "ublk"))]
pub fn serve<D: crate::served::Served>(_device: D, _options: &UblkOptions, _ready: impl FnOnce(i32) + Send + Sync + 'static) -> Result<crate::counters::Snapshot, UblkServeError> {
    Err(UblkServeError::Config("this zonekit was built without ublk support: build it with `cargo build --release -p zonekit --features ublk` (needs libclang-dev)".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> Geometry {
        Geometry {
            block_size_bytes: 4096,
            zone_size_blocks: 16384,
            zone_capacity_blocks: 15872,
            zone_count: 32,
            conventional_zone_count: 0,
            open_zones_max: Some(14),
            active_zones_max: Some(14),
        }
    }

    #[test]
    fn geometries_the_kernel_refuses_are_named() {
        assert!(check_geometry(&geometry(), 512 << 10).is_ok());
        let err = |g: Geometry| check_geometry(&g, 512 << 10).unwrap_err().to_string();
        assert!(err(Geometry { zone_size_blocks: 24576, zone_capacity_blocks: 24576, ..geometry() }).contains("power-of-two zone size"));
        assert!(err(Geometry { block_size_bytes: 8192, zone_size_blocks: 8192, zone_capacity_blocks: 8192, ..geometry() }).contains("block size 8192"));
        assert!(err(Geometry { open_zones_max: Some(40), ..geometry() }).contains("open-zone limit 40"));
        assert!(check_geometry(&geometry(), 1000).unwrap_err().to_string().contains("1000 B"));
    }
}

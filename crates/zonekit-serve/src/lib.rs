//! Zonekit devices as real kernel block devices, for unmodified software (`fio`, `blkzone`,
//! f2fs, btrfs).
//!
//! - [`target`]: one block request (the kernel's read, write, zone append, flush, zone
//!   report and zone management) executed on a [`zonekit_device::ZonedDevice`], with the
//!   errno the kernel expects and the wire layout of a zone report. Kernel-free, so every
//!   mapping is unit-tested on the host.
//! - [`counters`]: what a server counts while it runs (operations, bytes, errors by errno,
//!   service-time histogram, the device's own counters), as a JSON snapshot written
//!   atomically while serving and at exit.
//! - [`request_log`]: `--trace-out`, every read and write served as a binary trace.
//! - [`timed`], [`served`]: a device under the flash timing model with the model's clock on
//!   the wall clock, so a server can report modelled latencies and pace completions to them.
//! - [`ublk`] (Linux): `zonekit serve ublk` — a host-managed zoned `/dev/ublkbN` through the
//!   kernel's ublk driver (Linux ≥ 6.6, `ublk_drv`), via the ublk-org `libublk` crate.

pub mod counters;
pub mod nbd;
pub mod request_log;
pub mod served;
mod signals;
pub mod target;
pub mod timed;
#[cfg(target_os = "linux")]
pub mod ublk;
pub mod volume;

pub use counters::{Counters, Snapshot};
pub use served::Served;
pub use target::{errno_of, Outcome, Request, Target};

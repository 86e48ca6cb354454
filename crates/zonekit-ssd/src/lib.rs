//! Random-write SSDs beneath the engines: the two other ways, beside ZNS, that a host can hand
//! data to flash.
//!
//! - A **conventional SSD** takes no hint: a page-mapped device FTL writes every block to one
//!   write point and its own garbage collection reclaims erase units.
//! - An **FDP SSD** (NVMe Flexible Data Placement, TP4146) keeps that random-write interface
//!   and the device's GC, but each write may carry a placement identifier (reclaim group,
//!   placement handle) so that data of one class fills reclaim units of its own.
//!
//! Both are one model, [`Ssd`], configured by [`SsdConfig`] (named shapes with their sources in
//! [`preset`]), behind the [`BlockDevice`] trait. It counts host and media blocks (device WAF),
//! GC moves, erases and per-unit wear, optionally keeps the data, charges flash time to
//! [`zonekit_device::timing::TimingModel`] (device GC costs device time and shows in the write
//! latency), and keeps FDP's log pages ([`log`]). Device GC's victim rule comes from
//! [`zonekit_pool::victim`], the same table the zone engines use. The mapping is persistent
//! (power-loss protection): see [`ssd`] for what survives a power loss.
//!
//! The block FTL's placement policies drive it through `zonekit_ftl::hinted`; the lab runs them
//! against ZNS in `zonekit experiment interfaces`.
//!
//! ```
//! use zonekit_ssd::{BlockDevice, Pid, RuhType, Ssd, SsdConfig};
//! // 4096 logical blocks, 28 % spare, 64-block reclaim units, 4 initially isolated handles.
//! let mut ssd = Ssd::new(SsdConfig::fdp(4096, 0.28, 64, 4, RuhType::InitiallyIsolated)).unwrap();
//! for round in 0..4u64 {
//!     for lba in 0..4096u64 {
//!         // Hot blocks (the first 512) through handle 0, the rest through handle 1.
//!         let handle = if lba < 512 || round == 0 { 0 } else { 1 };
//!         ssd.write_meta(lba, Some(Pid { group: 0, handle })).unwrap();
//!     }
//! }
//! assert!(ssd.counters().waf() >= 1.0);
//! assert!(ssd.placement_handles() == 4);
//! ```

pub mod config;
pub mod interface;
pub mod log;
pub mod preset;
pub mod run;
pub mod ssd;
pub mod theory;
pub mod zoned;

pub use config::{RuhType, SsdConfig};
pub use interface::Interface;
pub use run::{HotCold, SsdReport};
pub use ssd::{Notice, Ssd, SsdCounters, SsdTiming};
pub use zoned::{SsdMedia, ZonedSsd};

use serde::Serialize;

/// The handle each of `classes` host classes (numbered hot to cold, or by write lifetime) is
/// written through on a device of `handles` placement handles; empty for a device that takes
/// no hint. With at least as many handles, class c uses handle c. With fewer, classes are
/// folded into contiguous runs, c → ⌊c × H / U⌋ (U classes, H handles), so neighbouring
/// classes share a handle and the first class is never folded with the last. The block FTL's
/// placements (`zonekit_ftl::hinted`) and the file system's lifetimes on a zoned SSD
/// ([`zoned`]) both fold this way.
pub fn fold_classes(classes: usize, handles: usize) -> Vec<u16> {
    if handles == 0 {
        return Vec::new();
    }
    let u = classes.max(1);
    (0..u).map(|c| if u <= handles { c as u16 } else { (c * handles / u) as u16 }).collect()
}

/// A placement identifier: a reclaim group and a placement handle within it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Pid {
    pub group: u16,
    pub handle: u16,
}

/// What a random-write block device can be asked, as the engines use it.
///
/// The caller writes, reads and trims whole blocks of [`BlockDevice::block_size_bytes`] inside
/// `0 .. logical_blocks()`. A write may name a placement ([`Pid`]): an FDP device places the
/// data by it (one it does not have is placed as a write that names none, and counted, as
/// TP4146 has it); a device without placement handles refuses any with
/// [`SsdError::NoPlacement`]. A write
/// without one goes where the device chooses. A block never written, or trimmed, reads as
/// zeros. The implementor never loses a block a call returned `Ok` for.
pub trait BlockDevice {
    fn block_size_bytes(&self) -> u32;
    fn logical_blocks(&self) -> u64;
    /// Placement handles writes may name (0: the device takes no placement).
    fn placement_handles(&self) -> u16;
    fn write(&mut self, lba: u64, pid: Option<Pid>, data: &[u8]) -> Result<(), SsdError>;
    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), SsdError>;
    /// The blocks' data is no longer needed (NVMe Deallocate).
    fn trim(&mut self, lba: u64, blocks: u64) -> Result<(), SsdError>;
    fn counters(&self) -> &SsdCounters;
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SsdError {
    /// A setting the model cannot run (named in the message).
    #[error("SSD model: {0}")]
    Config(String),
    /// TP4146: a command that must name a valid placement (a Reclaim Unit Handle Update)
    /// named a reclaim group or placement handle the namespace does not have: NVMe status
    /// 0002h, Invalid Field in Command (QEMU 10 sets DNR: 4002h). A write with such an
    /// identifier is not refused: see [`Ssd`]'s placement rules.
    #[error("invalid placement identifier: reclaim group {} handle {} (the device has {groups} group(s) of {handles} handle(s))", pid.group, pid.handle)]
    InvalidPlacement { pid: Pid, groups: u16, handles: u16 },
    /// A placement on a device that takes none (a conventional SSD).
    #[error("this device takes no placement identifier (a conventional SSD)")]
    NoPlacement,
    #[error("{blocks} blocks at LBA {lba} lie outside the device's {logical_blocks} logical blocks")]
    OutOfRange { lba: u64, blocks: u64, logical_blocks: u64 },
    #[error("a transfer of {bytes} bytes is not whole {block_size_bytes}-byte blocks")]
    Length { bytes: usize, block_size_bytes: u32 },
    /// Device GC found nothing to reclaim in a reclaim group that needs space.
    #[error("no space: device GC found no reclaim unit with garbage in reclaim group {group}")]
    NoSpace { group: u16 },
    /// The device lost power ([`Ssd::fail_after`]) and waits for [`Ssd::restart`].
    #[error("the device lost power")]
    PowerLoss,
}

impl SsdError {
    /// The NVMe status a real device completes the command with (Status Code Type << 8 |
    /// Status Code), where there is one.
    pub fn nvme_status(&self) -> Option<u16> {
        match self {
            SsdError::InvalidPlacement { .. } | SsdError::NoPlacement => Some(0x4002),
            SsdError::OutOfRange { .. } => Some(0x0080),
            SsdError::NoSpace { .. } => Some(0x0081),
            SsdError::PowerLoss => Some(0x0005),
            SsdError::Config(_) | SsdError::Length { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_fold_onto_handles_in_contiguous_runs() {
        assert_eq!(fold_classes(2, 8), [0, 1]);
        assert_eq!(fold_classes(4, 4), [0, 1, 2, 3]);
        assert_eq!(fold_classes(6, 4), [0, 0, 1, 2, 2, 3]);
        assert_eq!(fold_classes(7, 2), [0, 0, 0, 0, 1, 1, 1]);
        assert_eq!(fold_classes(3, 1), [0, 0, 0]);
        assert!(fold_classes(5, 0).is_empty());
        // Every handle is used when there are at least as many classes, the hottest and the
        // coldest class never share one when there are two or more, and runs are monotone.
        for u in 1..=16 {
            for h in 1..=8 {
                let f = fold_classes(u, h);
                assert_eq!(f.len(), u);
                assert!(f.windows(2).all(|w| w[0] <= w[1]));
                assert_eq!(*f.last().unwrap() as usize, (u - 1).min(h - 1));
                if h >= 2 && u >= 2 {
                    assert_ne!(f[0], f[u - 1], "u {u} h {h}");
                }
            }
        }
    }
}

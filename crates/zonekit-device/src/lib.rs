//! Zoned block devices for Zonekit.
//!
//! Every engine in Zonekit (block FTL, file system, B+-tree, cache) stores data through the
//! [`ZonedDevice`] trait and is generic over it. This crate holds the trait and its backends:
//!
//! - [`MemDevice`]: in-memory emulator with exact NVMe ZNS zone semantics, keeping the data or
//!   only the metadata ([`StorageMode`]); fault injection and simulated power loss.
//! - [`FileDevice`]: the same emulator with data and zone state in a sparse image file that
//!   survives restarts ([`emu::file`] documents the format and what survives a crash).
//! - [`linux::LinuxZonedDevice`]: a real Linux zoned block device through the
//!   `<linux/blkzoned.h>` ioctls.
//!
//! Wrappers implement the same trait: [`timing::TimedDevice`] charges each operation to a flash
//! timing model in virtual time, [`fault::FaultyDevice`] fails chosen operations, [`sim::SimDevice`] crashes where a seed says and shows what a real drive may keep, [`FirstZones`] shows only a device's first
//! zones.
//! [`conformance`] is the one suite every backend passes. [`preset`] names the geometries and
//! timings of the devices the research used.
//!
//! ```
//! use zonekit_device::{MemDevice, StorageMode, ZoneBehavior, ZonedDevice, ZoneId, Lba, preset};
//!
//! let geometry = preset::find("tiny").unwrap().geometry;
//! let mut dev = MemDevice::new(geometry, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
//! let block = vec![7u8; geometry.block_size_bytes as usize];
//! let lba = dev.append(ZoneId(0), &block).unwrap();
//! assert_eq!(lba, Lba(0));
//! let mut back = vec![0u8; block.len()];
//! dev.read(lba, &mut back).unwrap();
//! assert_eq!(back, block);
//! ```

pub mod bench;
pub mod conformance;
mod controller;
mod device;
pub mod emu;
mod error;
pub mod fault;
mod first_zones;
mod flash;
pub mod journal;
pub mod linux;
pub mod preset;
pub mod sim;
pub mod timing;
mod types;

pub use device::{DeviceStats, FlashWrites, OpCounter, ZonedDevice, LIFETIME_HINT_MAX};
pub use emu::{Emulator, FileDevice, Media, MemDevice, StorageMode};
pub use error::{DeviceError, LockHolder, Result, ZoneAction};
pub use first_zones::FirstZones;
pub use types::{AutoClose, Geometry, Lba, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZoneType};

/// A device opened by path, with a line saying which backend serves it.
pub struct OpenedDevice {
    pub device: Box<dyn ZonedDevice + Send>,
    pub backend: String,
    /// The preset an emulated image was created from (selects its timing model).
    pub preset: Option<String>,
}

/// How [`open_path_with`] opens a device.
///
/// An emulated image is locked for as long as the device lives: a read-only open takes a
/// shared lock (other readers may open it too, no writer may), a read-write open an exclusive
/// one. A lock someone else holds fails the open with [`DeviceError::ImageInUse`], unless
/// `wait` allows waiting for it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Open for reading only: every mutating call fails with [`DeviceError::ReadOnlyDevice`].
    pub read_only: bool,
    /// Wait this long for a lock someone else holds (`Duration::MAX`: as long as it takes);
    /// `None` fails at once.
    pub wait: Option<std::time::Duration>,
}

/// Opens a device by path, read-write: a Linux zoned block device (`/dev/...`) or an emulated
/// device image. Fails at once if another open holds the image.
pub fn open_path(path: &std::path::Path) -> Result<OpenedDevice> {
    open_path_with(path, &OpenOptions::default())
}

/// Opens a device by path as `options` says. Linux zoned block devices are always opened
/// read-write with `O_EXCL` (the kernel's exclusive open, which fails at once while someone
/// else has the device open exclusively): `options` apply to emulated images only.
pub fn open_path_with(path: &std::path::Path, options: &OpenOptions) -> Result<OpenedDevice> {
    if linux::is_block_device(path) {
        let dev = linux::LinuxZonedDevice::open(path)?;
        let backend = format!("linux {} (scheduler: {})", dev.driver(), dev.scheduler());
        return Ok(OpenedDevice { device: Box::new(dev), backend, preset: None });
    }
    let meta = std::fs::metadata(path).map_err(|e| DeviceError::Io { context: format!("{}", path.display()), error: e })?;
    if !meta.is_file() {
        return Err(DeviceError::NotZoned { path: path.to_path_buf(), reason: "neither a block device nor a zonekit device image".into() });
    }
    let dev = FileDevice::open_with_options(path, options)?;
    let preset = Some(dev.media().preset().to_string()).filter(|p| !p.is_empty());
    Ok(OpenedDevice { device: Box::new(dev), backend: "emulated (file image)".into(), preset })
}

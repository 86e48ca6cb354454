//! Device errors. The zone errors mirror the NVMe ZNS status codes; see
//! [`DeviceError::nvme_status`].

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::{Lba, ZoneId, ZoneState};

/// A zone-management action, named in errors and counters.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ZoneAction {
    Open,
    Close,
    Finish,
    Reset,
}

impl ZoneAction {
    pub fn name(self) -> &'static str {
        match self {
            ZoneAction::Open => "open",
            ZoneAction::Close => "close",
            ZoneAction::Finish => "finish",
            ZoneAction::Reset => "reset",
        }
    }
}

impl std::fmt::Display for ZoneAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Who holds an image's lock, as far as flock can tell.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LockHolder {
    /// An exclusive lock: a read-write open.
    Writer,
    /// Shared locks only: read-only opens.
    Readers,
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LockHolder::Writer => "a writer",
            LockHolder::Readers => "readers",
        })
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// NVMe 1B9h Zone Is Full.
    #[error("zone {zone} is full")]
    ZoneFull { zone: ZoneId },
    /// NVMe 1BAh Zone Is Read Only.
    #[error("zone {zone} is read-only")]
    ZoneReadOnly { zone: ZoneId },
    /// NVMe 1BBh Zone Is Offline.
    #[error("zone {zone} is offline")]
    ZoneOffline { zone: ZoneId },
    /// NVMe 1BCh Zone Invalid Write: the write does not start at the write pointer.
    #[error("invalid write to zone {zone}: LBA {lba} is not the write pointer (LBA {write_pointer})")]
    InvalidWrite { zone: ZoneId, lba: Lba, write_pointer: Lba },
    /// NVMe 1B8h Zone Boundary Error: the transfer crosses the zone's writable end (or, for a
    /// read, the zone end when cross-zone reads are off).
    #[error("{blocks} blocks at LBA {lba} cross the end of zone {zone} (LBA {limit})")]
    Boundary { zone: ZoneId, lba: Lba, blocks: u64, limit: Lba },
    /// NVMe 1BEh Too Many Open Zones (Linux `ETOOMANYREFS`).
    #[error("too many open zones (limit {limit})")]
    TooManyOpen { limit: u32 },
    /// NVMe 1BDh Too Many Active Zones (Linux `EOVERFLOW`).
    #[error("too many active zones (limit {limit})")]
    TooManyActive { limit: u32 },
    /// NVMe 1BFh Invalid Zone State Transition.
    #[error("cannot {action} zone {zone} in state {state}")]
    InvalidTransition { zone: ZoneId, action: ZoneAction, state: ZoneState },
    /// Zone management or append on a conventional zone.
    #[error("{what} is not allowed on conventional zone {zone}")]
    ConventionalZone { zone: ZoneId, what: &'static str },
    /// The transfer lies (partly) outside the device.
    #[error("{blocks} blocks at LBA {lba} lie outside the device ({device_blocks} blocks)")]
    OutOfRange { lba: Lba, blocks: u64, device_blocks: u64 },
    /// Malformed request: unaligned length, zero-length transfer, bad zone id (Linux `EINVAL`).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("invalid geometry: {0}")]
    InvalidGeometry(String),
    /// A fault injected on purpose by a test or an experiment.
    #[error("injected fault at operation {op_index}")]
    InjectedFault { op_index: u64 },
    /// An emulated device image that is not ours, from another version, or damaged.
    #[error("{}: {reason}", path.display())]
    BadImage { path: PathBuf, reason: String },
    /// An emulated device image another open holds locked: readers share an image, a writer
    /// has it alone.
    #[error("{}: the image is in use by {holder}{}", path.display(), waited.map_or(String::new(), |w| format!(" (waited {:.1} s for it)", w.as_secs_f64())))]
    ImageInUse { path: PathBuf, holder: LockHolder, waited: Option<Duration> },
    /// A mutating call on a device opened read-only; refused before anything changes.
    #[error("{}: {what} refused: the device is open read-only", path.display())]
    ReadOnlyDevice { path: PathBuf, what: &'static str },
    /// A path that is not a zoned block device.
    #[error("{}: not a zoned block device ({reason})", path.display())]
    NotZoned { path: PathBuf, reason: String },
    /// (The OS error is part of the message, not a `source()`, so error chains print it once.)
    #[error("{context}: {error}")]
    Io { context: String, error: io::Error },
}

impl DeviceError {
    pub(crate) fn io(context: impl Into<String>, error: io::Error) -> DeviceError {
        DeviceError::Io { context: context.into(), error }
    }

    /// Whether the device (or a file it needs) is not there: a bad request, not a failed run.
    pub fn is_not_found(&self) -> bool {
        matches!(self, DeviceError::Io { error, .. } if error.kind() == io::ErrorKind::NotFound)
    }

    /// The NVMe status code (SCT 1h, command-specific) this error corresponds to, if any.
    pub fn nvme_status(&self) -> Option<u16> {
        Some(match self {
            DeviceError::Boundary { .. } => 0x1B8,
            DeviceError::ZoneFull { .. } => 0x1B9,
            DeviceError::ZoneReadOnly { .. } => 0x1BA,
            DeviceError::ZoneOffline { .. } => 0x1BB,
            DeviceError::InvalidWrite { .. } => 0x1BC,
            DeviceError::TooManyActive { .. } => 0x1BD,
            DeviceError::TooManyOpen { .. } => 0x1BE,
            DeviceError::InvalidTransition { .. } => 0x1BF,
            _ => return None,
        })
    }

    /// A short stable name of the error kind, for tests and reports.
    pub fn kind(&self) -> &'static str {
        match self {
            DeviceError::ZoneFull { .. } => "zone-full",
            DeviceError::ZoneReadOnly { .. } => "zone-read-only",
            DeviceError::ZoneOffline { .. } => "zone-offline",
            DeviceError::InvalidWrite { .. } => "invalid-write",
            DeviceError::Boundary { .. } => "boundary",
            DeviceError::TooManyOpen { .. } => "too-many-open",
            DeviceError::TooManyActive { .. } => "too-many-active",
            DeviceError::InvalidTransition { .. } => "invalid-transition",
            DeviceError::ConventionalZone { .. } => "conventional-zone",
            DeviceError::OutOfRange { .. } => "out-of-range",
            DeviceError::InvalidArgument(_) => "invalid-argument",
            DeviceError::InvalidGeometry(_) => "invalid-geometry",
            DeviceError::InjectedFault { .. } => "injected-fault",
            DeviceError::BadImage { .. } => "bad-image",
            DeviceError::ImageInUse { .. } => "image-in-use",
            DeviceError::ReadOnlyDevice { .. } => "read-only-device",
            DeviceError::NotZoned { .. } => "not-zoned",
            DeviceError::Io { .. } => "io",
        }
    }
}

pub type Result<T, E = DeviceError> = std::result::Result<T, E>;

//! Host FTLs for open-channel SSDs (seed 002): the thesis' four mappings — PM_GCL (page map,
//! greedy GC, pblk's scheme), PM_GCC (page map, one circular log), SBM_GCL (superblock map)
//! and HSBM_GCL (hybrid superblock map with page-mapped log superblocks) — and the
//! established baselines DFTL and FAST, all on the same flash layer and timing model.
//!
//! Main types: [`OcGeometry`] (channels × LUNs × blocks × pages and the thesis' address
//! layout), [`Flash`] (program/read/erase on a [`zonekit_device::timing::TimedDevice`] whose
//! zones are flash blocks pinned to one parallel unit), the [`Ftl`] trait with one file per
//! mapping under `ftl/`, the [`FTLS`] table, and [`Ssd`], which turns byte-addressed host
//! requests into page writes and reads, times each request and keeps the counters.
//!
//! ```
//! use zonekit_ocssd::{FtlConfig, OcGeometry, Ssd};
//!
//! let geometry = OcGeometry { blocks_per_lun: 4, ..OcGeometry::THESIS };
//! let mut ssd = Ssd::memory("pm-gcl", &FtlConfig::default(), geometry, true).unwrap();
//! ssd.write(0, &vec![7u8; 64 * 1024]).unwrap();
//! let mut back = vec![0u8; 4096];
//! ssd.read(4096, &mut back).unwrap();
//! assert_eq!(back, vec![7u8; 4096]);
//! ```

pub mod alloc;
pub mod flash;
pub mod ftl;
pub mod geometry;
pub mod ssd;

pub use flash::{Flash, FlashCounters};
pub use ftl::{find, Ftl, FtlConfig, FtlInfo, MapCounters, NoFreeSuperblock, FTLS};
pub use geometry::{OcGeometry, PhysAddr, SuperLayout};
pub use ssd::{CommandCosts, Ssd, SsdReport, Timing};

use zonekit_device::DeviceError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OcError {
    #[error("open-channel geometry: {0}")]
    Geometry(String),
    #[error("FTL configuration: {0}")]
    Config(String),
    #[error("{ftl}: out of space: {detail}")]
    DeviceFull { ftl: &'static str, detail: String },
    /// A cap on the logical space ([`Ssd::cap_logical_bytes`]) the FTL cannot honour.
    #[error("{ftl}: a logical space of {requested_bytes} bytes: {detail}")]
    LogicalSpace { ftl: &'static str, requested_bytes: u64, detail: String },
    #[error("request at byte {offset} of {len} bytes is beyond the {capacity}-byte logical space of {ftl}")]
    OutOfRange { ftl: &'static str, offset: u64, len: u64, capacity: u64 },
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("FTL invariant broken: {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, OcError>;

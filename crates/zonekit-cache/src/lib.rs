//! A block cache on flash over a backing HDD (seed 004), in the style of Linux bcache.
//!
//! Main parts: [`sampler`] (admission samplers that tell hot from cold chunks) and [`item`]
//! (item-level cache policies and the Belady bound, the references the bucket cache is
//! measured against).

pub mod cache;
pub mod device;
pub mod evict;
pub mod hdd;
pub mod item;
pub mod sampler;

pub use cache::{Admission, Cache, CacheConfig, CacheStats, WriteMode};
pub use device::{CacheDevice, ZonedBuckets};
pub use hdd::{Hdd, HddConfig};

use zonekit_device::DeviceError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    #[error("cache configuration: {0}")]
    Config(String),
    #[error("request of {blocks} blocks at block {lba} is beyond the {capacity_blocks}-block backing device")]
    OutOfRange { lba: u64, blocks: u64, capacity_blocks: u64 },
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("cache invariant broken: {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, CacheError>;

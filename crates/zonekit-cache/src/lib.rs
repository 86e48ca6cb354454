//! A block cache on flash over a backing HDD (seed 004), in the style of Linux bcache.
//!
//! Main parts: [`sampler`] (admission samplers that tell hot from cold chunks) and [`item`]
//! (item-level cache policies and the Belady bound, the references the bucket cache is
//! measured against).

pub mod cache;
pub mod device;
pub mod durable;
pub mod evict;
pub mod hdd;
pub mod item;
pub mod meta;
pub mod sampler;

pub use cache::{Admission, Cache, CacheConfig, CacheStats, WriteMode};
pub use device::{CacheDevice, RecoveredKeys, ZonedBuckets};
pub use durable::{DurableBuckets, DurableSettings};
pub use hdd::{Hdd, HddConfig};
pub use meta::{MetadataConfig, MetadataStats};

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
    #[error("backing disk: {0}")]
    Disk(std::io::Error),
    /// A cached block whose data does not match the checksum taken when it was written.
    #[error("backing block {block}: its cached copy (bucket {bucket}, block {offset}) does not match the checksum taken when it was written")]
    Damaged { block: u64, bucket: u32, offset: u64 },
    /// A durable cache's journal or keys that are not what a crash leaves.
    #[error("the cache's journal is damaged: {0}")]
    Corrupt(String),
    #[error("cache invariant broken: {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, CacheError>;

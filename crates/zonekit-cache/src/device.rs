//! The cache device as buckets: [`CacheDevice`] is what the cache writes through. A bucket is
//! filled in order from its start and evicted whole. [`ZonedBuckets`] puts each bucket on a
//! whole number of zones of a [`ZonedDevice`] (eviction = zone reset); the random-write SSDs
//! (conventional and NVMe FDP, `zonekit-ssd`) implement it in the lab (`cache_ssd.rs`), where
//! an FDP bucket's class picks its placement handle.

use zonekit_device::{Lba, ZoneId, ZonedDevice};

use crate::{CacheError, Result};

pub trait CacheDevice {
    fn buckets(&self) -> u32;
    fn bucket_blocks(&self) -> u64;
    fn block_bytes(&self) -> u32;
    /// Writes whole blocks at `offset` blocks into `bucket`, which is where the bucket's
    /// previous write ended (buckets are filled in order).
    fn write(&mut self, bucket: u32, offset: u64, data: &[u8]) -> Result<()>;
    fn read(&mut self, bucket: u32, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// The bucket's data is no longer needed; it will be filled again from its start.
    fn evict(&mut self, bucket: u32) -> Result<()>;
    /// The cache fills buckets for `classes` placement classes, numbered shortest-lived first
    /// (see [`crate::Cache`]); told once, before any write. A device that places data by class
    /// (an FDP SSD) maps them onto what it has; others ignore it.
    fn placement_classes(&mut self, _classes: u32) {}
    /// `bucket`, empty, is about to be filled from its start with data of placement `class`
    /// (below the count [`CacheDevice::placement_classes`] gave): every write to it until its
    /// next eviction belongs to that class.
    fn bucket_opened(&mut self, _bucket: u32, _class: u32) {}
    /// Bytes the device wrote to flash per byte it was given, if it can tell (an SSD's FTL).
    fn device_waf(&self) -> Option<f64> {
        None
    }
    /// Bytes the cache wrote to the device so far.
    fn bytes_written(&self) -> u64;
    /// Whether the device keeps the cache's keys across a restart ([`CacheDevice::key`] and
    /// [`CacheDevice::commit`] do something).
    fn durable(&self) -> bool {
        false
    }
    /// A durable device's state after a restart (each bucket's fill and the keys of what it
    /// holds), given once to the cache that opens it; `None` for a fresh or volatile device.
    fn take_recovered(&mut self) -> Option<RecoveredKeys> {
        None
    }
    /// The cache's key for backing block `lba` changed: it now lives at (bucket, offset,
    /// dirty), or (`None`) is no longer cached. A durable device journals it; a volatile one
    /// keeps nothing.
    fn key(&mut self, _lba: u64, _at: Option<(u32, u64, bool)>) {}
    /// Makes every key change so far durable. The backing disk's writes the keys rely on
    /// (dirty blocks written back) must be durable first.
    fn commit(&mut self) -> Result<()> {
        Ok(())
    }
}

/// What a durable cache device held when it was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveredKeys {
    /// Blocks written in each bucket (the bucket is closed: filled no further).
    pub fills: Vec<u64>,
    /// (backing block, bucket, offset, dirty) of every cached block.
    pub keys: Vec<(u64, u32, u64, bool)>,
    /// Recovered to be read, not written ([`crate::DurableBuckets::inspect`]): the cache
    /// must change nothing on opening, not even evict to make a free bucket.
    pub read_only: bool,
}

/// Buckets of `zones_per_bucket` consecutive sequential zones.
pub struct ZonedBuckets<D: ZonedDevice> {
    device: D,
    zones_per_bucket: u32,
    first_zone: u32,
    buckets: u32,
    zone_blocks: u64,
    bytes_written: u64,
}

impl<D: ZonedDevice> ZonedBuckets<D> {
    /// Buckets of `bucket_bytes` over every sequential zone of `device`. A bucket must be a
    /// whole number of zones, and the zones must be fully writable (capacity = size).
    pub fn new(device: D, bucket_bytes: u64) -> Result<ZonedBuckets<D>> {
        let g = *device.geometry();
        let zone_bytes = g.zone_size_bytes();
        if g.zone_capacity_blocks != g.zone_size_blocks {
            return Err(CacheError::Config(format!("zones of {} bytes with {} bytes of capacity: a bucket needs whole zones", zone_bytes, g.zone_capacity_bytes())));
        }
        if bucket_bytes == 0 || bucket_bytes % zone_bytes != 0 {
            return Err(CacheError::Config(format!("bucket of {bucket_bytes} bytes is not a whole number of {zone_bytes}-byte zones")));
        }
        let zones_per_bucket = (bucket_bytes / zone_bytes) as u32;
        let sequential = g.zone_count - g.conventional_zone_count;
        let buckets = sequential / zones_per_bucket;
        if buckets < 3 {
            return Err(CacheError::Config(format!("{sequential} sequential zones make {buckets} buckets of {zones_per_bucket} zones; the cache needs at least 3")));
        }
        Ok(ZonedBuckets { first_zone: g.conventional_zone_count, zone_blocks: g.zone_size_blocks, device, zones_per_bucket, buckets, bytes_written: 0 })
    }

    pub fn device(&self) -> &D {
        &self.device
    }

    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    pub fn into_device(self) -> D {
        self.device
    }

    /// The first zone of `bucket`.
    pub fn first_zone_of(&self, bucket: u32) -> u32 {
        self.first_zone + bucket * self.zones_per_bucket
    }

    pub(crate) fn lba(&self, bucket: u32, offset: u64) -> Lba {
        let zone = self.first_zone as u64 + bucket as u64 * self.zones_per_bucket as u64;
        Lba(zone * self.zone_blocks + offset)
    }
}

impl<D: ZonedDevice> CacheDevice for ZonedBuckets<D> {
    fn buckets(&self) -> u32 {
        self.buckets
    }

    fn bucket_blocks(&self) -> u64 {
        self.zones_per_bucket as u64 * self.zone_blocks
    }

    fn block_bytes(&self) -> u32 {
        self.device.geometry().block_size_bytes
    }

    fn write(&mut self, bucket: u32, offset: u64, data: &[u8]) -> Result<()> {
        // A write may not cross a zone boundary: split it.
        let bb = self.block_bytes() as usize;
        let mut done = 0;
        while done < data.len() {
            let at = offset + (done / bb) as u64;
            let room = (self.zone_blocks - at % self.zone_blocks) as usize * bb;
            let n = room.min(data.len() - done);
            self.device.write(self.lba(bucket, at), &data[done..done + n])?;
            done += n;
        }
        self.bytes_written += data.len() as u64;
        Ok(())
    }

    fn read(&mut self, bucket: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        Ok(self.device.read(self.lba(bucket, offset), buf)?)
    }

    fn evict(&mut self, bucket: u32) -> Result<()> {
        let first = self.first_zone + bucket * self.zones_per_bucket;
        for zone in first..first + self.zones_per_bucket {
            self.device.reset_zone(ZoneId(zone))?;
        }
        Ok(())
    }

    fn device_waf(&self) -> Option<f64> {
        Some(1.0)
    }

    fn bytes_written(&self) -> u64 {
        self.bytes_written
    }
}

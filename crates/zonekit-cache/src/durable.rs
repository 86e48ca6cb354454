//! [`DurableBuckets`]: zone buckets whose cache keys survive a crash, so a write-back cache on
//! a zoned device image or `/dev` zoned device can be killed and reopened without losing a
//! dirty block.
//!
//! The last zones of the device hold a [`zonekit_device::journal`] whose map is the cache's
//! keys: backing block → (slot, dirty) with the CRC-32 of the slot's data, a slot being
//! `bucket × bucket_blocks + offset`. The cache reports every key change (insert, write-back,
//! invalidation) through [`CacheDevice::key`]; [`CacheDevice::commit`] makes them durable (the
//! data first). Before a bucket's zones are reset, every key still pointing into it is removed
//! and committed, so nothing durable ever points into an erased bucket; the cache writes its
//! dirty blocks back and syncs the disk before that.
//!
//! Opening recovers the keys, checks them against the zones before writing anything (every
//! slot inside a bucket's written blocks, no two keys at one slot), resets the buckets nothing
//! points into (a crash between an eviction's commit and its resets leaves them), finishes the
//! partly written zones of the others (they are filled no further: the cache closes them) and
//! writes a fresh snapshot. Reads check each block against its CRC: a damaged copy is
//! [`CacheError::Damaged`] naming the backing block, which the cache takes as a miss when the
//! copy is clean and as an error when it is dirty (the only copy).
//!
//! The journal's tag holds the settings a cache is created with and cannot change: zones per
//! bucket, write mode, and the backing disk's size in blocks.

use std::collections::HashMap;

use zonekit_device::journal::{self, Entry, JournalError, Layout, Writer, REMOVED};
use zonekit_device::{FirstZones, ZoneFilter, ZoneId, ZoneState, ZonedDevice};

use crate::device::{CacheDevice, RecoveredKeys, ZonedBuckets};
use crate::{CacheError, Result, WriteMode};

const MAGIC: [u8; 4] = *b"ZKCJ";
const NO_KEY: u64 = u64::MAX;

/// What a durable cache is created with and keeps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DurableSettings {
    pub zones_per_bucket: u32,
    pub mode: WriteMode,
    pub disk_blocks: u64,
}

impl DurableSettings {
    fn tag(&self) -> Result<u64> {
        if self.zones_per_bucket == 0 || self.zones_per_bucket > u16::MAX as u32 {
            return Err(CacheError::Config(format!("{} zones per bucket: a durable cache takes 1 to {}", self.zones_per_bucket, u16::MAX)));
        }
        if self.disk_blocks == 0 || self.disk_blocks >= 1 << 40 {
            return Err(CacheError::Config(format!("a backing disk of {} blocks: a durable cache takes 1 to 2^40", self.disk_blocks)));
        }
        let mode = match self.mode {
            WriteMode::Writethrough => 0,
            WriteMode::Writeback => 1,
            WriteMode::Writearound => 2,
        };
        Ok(self.zones_per_bucket as u64 | mode << 16 | self.disk_blocks << 24)
    }

    fn from_tag(tag: u64) -> Result<DurableSettings> {
        let mode = match (tag >> 16) & 0xFF {
            0 => WriteMode::Writethrough,
            1 => WriteMode::Writeback,
            2 => WriteMode::Writearound,
            other => return Err(CacheError::Corrupt(format!("write mode {other} in the journal's settings"))),
        };
        let s = DurableSettings { zones_per_bucket: (tag & 0xFFFF) as u32, mode, disk_blocks: tag >> 24 };
        if s.zones_per_bucket == 0 || s.disk_blocks == 0 {
            return Err(CacheError::Corrupt(format!("settings {s:?} in the journal")));
        }
        Ok(s)
    }
}

impl From<JournalError> for CacheError {
    fn from(e: JournalError) -> CacheError {
        match e {
            JournalError::Usage(m) => CacheError::Config(m),
            JournalError::Corrupt(m) => CacheError::Corrupt(m),
            JournalError::Device(e) => CacheError::Device(e),
        }
    }
}

/// Zone buckets with a journal of the cache's keys: see the module doc.
pub struct DurableBuckets<D: ZonedDevice> {
    buckets: ZonedBuckets<FirstZones<D>>,
    settings: DurableSettings,
    writer: Writer,
    /// The keys as the journal will hold them after the next commit: backing block → slot
    /// and dirty.
    map: HashMap<u64, (u64, bool)>,
    /// Backing block of each slot's key (`NO_KEY`: none) and the CRC-32 of its data.
    slot_key: Vec<u64>,
    slot_check: Vec<Option<u32>>,
    /// Key changes since the last commit.
    pending: Vec<Entry>,
    recovered: Option<RecoveredKeys>,
}

impl<D: ZonedDevice> DurableBuckets<D> {
    fn layout(dev: &D) -> Result<Layout> {
        let g = dev.geometry();
        // Sized for a key in every block of the device (a bound on any cache's keys).
        Ok(Layout::for_geometry(g, MAGIC, g.zone_count as u64 * g.zone_capacity_blocks, 3, "the cache's buckets")?)
    }

    fn with(dev: D, layout: &Layout, settings: DurableSettings, writer: Writer) -> Result<DurableBuckets<D>> {
        let zone_bytes = dev.geometry().zone_size_bytes();
        let buckets = ZonedBuckets::new(FirstZones::new(dev, layout.first_zone())?, zone_bytes * settings.zones_per_bucket as u64)?;
        let slots = (buckets.buckets() as u64 * buckets.bucket_blocks()) as usize;
        Ok(DurableBuckets { buckets, settings, writer, map: HashMap::new(), slot_key: vec![NO_KEY; slots], slot_check: vec![None; slots], pending: Vec::new(), recovered: None })
    }

    /// A new, empty cache on `dev`, whose sequential zones must all be empty.
    pub fn create(mut dev: D, settings: DurableSettings) -> Result<DurableBuckets<D>> {
        let tag = settings.tag()?;
        let layout = Self::layout(&dev)?;
        if dev.report_all(ZoneFilter::All)?.iter().any(|z| !matches!(z.state, ZoneState::Empty | ZoneState::NotWritePointer)) {
            return Err(CacheError::Config("the device holds data (reset its zones to create a cache on it)".into()));
        }
        let mut cache = Self::with(dev, &layout, settings, Writer::new(layout, tag, None))?;
        cache.writer.snapshot(cache.buckets.device_mut().inner_mut(), &[])?;
        Ok(cache)
    }

    /// The cache on `dev`: its settings and keys recovered (see the module doc).
    pub fn open(dev: D) -> Result<DurableBuckets<D>> {
        Self::open_with(dev, true)
    }

    /// The cache on `dev` recovered as [`DurableBuckets::open`] recovers it, in memory only:
    /// the buckets nothing points into are not reset, partly written zones not finished, no
    /// snapshot written. For a check that must leave the device as it found it (the device
    /// may be opened read-only); such a cache is for reading, not for writes.
    pub fn inspect(dev: D) -> Result<DurableBuckets<D>> {
        Self::open_with(dev, false)
    }

    fn open_with(mut dev: D, repair: bool) -> Result<DurableBuckets<D>> {
        let layout = Self::layout(&dev)?;
        let Some(r) = journal::recover(&mut dev, &layout)? else {
            return Err(CacheError::Config("the device holds no cache journal (zonekit cache create makes one)".into()));
        };
        let settings = DurableSettings::from_tag(r.tag)?;
        let zones = dev.report_all(ZoneFilter::All)?;
        let writer = Writer::new(layout, r.tag, Some(&r));
        let mut cache = Self::with(dev, &layout, settings, writer)?;
        let (buckets, bucket_blocks) = (cache.buckets.buckets(), cache.buckets.bucket_blocks());
        // Each bucket's written blocks: its zones fill in order.
        let zone_blocks = cache.buckets.device().geometry().zone_capacity_blocks;
        let mut fills: Vec<u64> = (0..buckets)
            .map(|b| {
                let first = cache.buckets.first_zone_of(b) as usize;
                let mut fill = 0;
                for z in &zones[first..first + settings.zones_per_bucket as usize] {
                    let written = if z.state == ZoneState::Full { z.capacity_blocks } else { z.written_blocks() };
                    fill += written;
                    if written < zone_blocks {
                        break;
                    }
                }
                fill
            })
            .collect();
        // Everything before the first write only reads: a refused open changes nothing.
        let mut keys = Vec::with_capacity(r.entries.len());
        for e in &r.entries {
            let (slot, dirty) = (e.value >> 1, e.value & 1 == 1);
            let (bucket, offset) = (slot / bucket_blocks, slot % bucket_blocks);
            if e.key >= settings.disk_blocks || bucket >= buckets as u64 || offset >= fills[bucket as usize] || e.value >> 63 == 1 {
                return Err(CacheError::Corrupt(format!(
                    "backing block {} is kept in slot {slot}, outside the {} blocks of the disk or what its bucket holds; the cache was not opened and nothing was written",
                    e.key, settings.disk_blocks
                )));
            }
            if cache.slot_key[slot as usize] != NO_KEY {
                return Err(CacheError::Corrupt(format!(
                    "backing blocks {} and {} are both kept in slot {slot}; the cache was not opened and nothing was written",
                    cache.slot_key[slot as usize], e.key
                )));
            }
            cache.slot_key[slot as usize] = e.key;
            cache.slot_check[slot as usize] = e.check;
            cache.map.insert(e.key, (slot, dirty));
            keys.push((e.key, bucket as u32, offset, dirty));
        }
        let mut held = vec![false; buckets as usize];
        keys.iter().for_each(|k| held[k.1 as usize] = true);
        for b in 0..buckets {
            let first = cache.buckets.first_zone_of(b);
            let dev = cache.buckets.device_mut();
            for z in first..first + settings.zones_per_bucket {
                let state = zones[z as usize].state;
                if repair && !held[b as usize] && state != ZoneState::Empty {
                    dev.reset_zone(ZoneId(z))?;
                } else if repair && held[b as usize] && state.is_active() {
                    dev.finish_zone(ZoneId(z))?;
                }
            }
            if !held[b as usize] {
                fills[b as usize] = 0;
            }
        }
        if repair {
            cache.writer.snapshot(cache.buckets.device_mut().inner_mut(), &r.entries)?;
        }
        cache.recovered = Some(RecoveredKeys { fills, keys, read_only: !repair });
        Ok(cache)
    }

    pub fn settings(&self) -> DurableSettings {
        self.settings
    }

    pub fn into_device(self) -> D {
        self.buckets.into_device().into_inner()
    }

    fn slot(&self, bucket: u32, offset: u64) -> usize {
        (bucket as u64 * self.buckets.bucket_blocks() + offset) as usize
    }
}

impl<D: ZonedDevice> CacheDevice for DurableBuckets<D> {
    fn buckets(&self) -> u32 {
        self.buckets.buckets()
    }

    fn bucket_blocks(&self) -> u64 {
        self.buckets.bucket_blocks()
    }

    fn block_bytes(&self) -> u32 {
        self.buckets.block_bytes()
    }

    fn write(&mut self, bucket: u32, offset: u64, data: &[u8]) -> Result<()> {
        self.buckets.write(bucket, offset, data)?;
        let first = self.slot(bucket, offset);
        for (i, block) in data.chunks(self.block_bytes() as usize).enumerate() {
            self.slot_check[first + i] = Some(crc32fast::hash(block));
        }
        Ok(())
    }

    fn read(&mut self, bucket: u32, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.buckets.read(bucket, offset, buf)?;
        let first = self.slot(bucket, offset);
        for (i, block) in buf.chunks(self.block_bytes() as usize).enumerate() {
            if self.slot_check[first + i].is_some_and(|c| c != crc32fast::hash(block)) {
                return Err(CacheError::Damaged { block: self.slot_key[first + i], bucket, offset: offset + i as u64 });
            }
        }
        Ok(())
    }

    /// Removes every key still in `bucket`, commits, then resets its zones.
    fn evict(&mut self, bucket: u32) -> Result<()> {
        let first = self.slot(bucket, 0);
        for slot in first..first + self.buckets.bucket_blocks() as usize {
            let key = std::mem::replace(&mut self.slot_key[slot], NO_KEY);
            self.slot_check[slot] = None;
            if key != NO_KEY && self.map.get(&key).is_some_and(|&(s, _)| s == slot as u64) {
                self.map.remove(&key);
                self.pending.push(Entry { key, value: REMOVED, check: None });
            }
        }
        self.commit()?;
        self.buckets.evict(bucket)
    }

    fn device_waf(&self) -> Option<f64> {
        self.buckets.device_waf()
    }

    fn bytes_written(&self) -> u64 {
        self.buckets.bytes_written()
    }

    fn durable(&self) -> bool {
        true
    }

    fn take_recovered(&mut self) -> Option<RecoveredKeys> {
        self.recovered.take()
    }

    fn key(&mut self, lba: u64, at: Option<(u32, u64, bool)>) {
        match at {
            Some((bucket, offset, dirty)) => {
                let slot = self.slot(bucket, offset);
                self.slot_key[slot] = lba;
                self.map.insert(lba, (slot as u64, dirty));
                self.pending.push(Entry { key: lba, value: (slot as u64) << 1 | dirty as u64, check: self.slot_check[slot] });
            }
            None => {
                if self.map.remove(&lba).is_some() {
                    self.pending.push(Entry { key: lba, value: REMOVED, check: None });
                }
            }
        }
    }

    fn commit(&mut self) -> Result<()> {
        let (map, checks) = (&self.map, &self.slot_check);
        let all = || map.iter().map(|(&key, &(slot, dirty))| Entry { key, value: slot << 1 | dirty as u64, check: checks[slot as usize] }).collect();
        self.writer.commit(self.buckets.device_mut().inner_mut(), &self.pending, all)?;
        self.pending.clear();
        Ok(())
    }
}

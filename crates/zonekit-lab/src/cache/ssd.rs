//! The cache's buckets on a random-write SSD: [`SsdBuckets`] implements
//! [`zonekit_cache::CacheDevice`] over [`zonekit_ssd::Ssd`], conventional or FDP. It is an
//! adapter, not a device: the SSD model keeps the mapping, runs the device GC and counts what
//! flash wrote; this file only lays buckets on LBAs and picks the placement handle.
//!
//! - **Layout.** Bucket `b`'s block `o` is LBA `b × bucket_blocks + o`: the SSD's logical space
//!   is exactly the cache's buckets, and the spare (over-provisioning) is on top of it.
//! - **Placement (FDP).** The cache numbers the classes it fills buckets by, shortest-lived
//!   first ([`zonekit_cache::CacheDevice::placement_classes`]: its metadata, then each
//!   temperature's write points from the hottest). Each bucket is written whole under the
//!   handle of the class it was opened for; with fewer handles than classes the classes fold
//!   onto the handles in contiguous runs, c → ⌊c × H / U⌋, the block FTL's rule
//!   ([`zonekit_ftl::hinted::fold_classes`]), so neighbouring classes share a handle and the
//!   shortest-lived is never folded with the longest-lived. A conventional SSD takes no hint.
//! - **Eviction.** On FDP an evicted bucket's LBAs are trimmed (NVMe Deallocate), so device GC
//!   sees them dead at once. On a conventional SSD they are trimmed only with `discard`: bcache
//!   does not discard reused buckets by default, and seed 004's conventional baseline is that
//!   default (the SSD learns a bucket is dead only when it is written again).

use serde::{Deserialize, Serialize};
use zonekit_cache::{CacheDevice, CacheError};
use zonekit_ssd::{BlockDevice, Pid, RuhType, Ssd, SsdConfig, SsdError};

use crate::harness::error::{LabError, Result};

const KIB: u64 = 1024;
const BLOCK: u64 = zonekit_ssd::config::BLOCK_BYTES as u64;

/// The most GC rounds a run keeps (a bound on memory; the counts past it are still in the
/// device's counters).
const GC_ROUNDS_MAX: usize = 1 << 20;

/// How the SSD under the cache is built.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SsdShape {
    /// The cache: the SSD's logical space.
    pub cache_bytes: u64,
    pub bucket_bytes: u64,
    /// Spare beyond the logical space, as a fraction of it (the drive maker's "7 %": 0.07).
    pub op: f64,
    /// The unit device GC reclaims and erases whole (a reclaim unit of one erase block).
    pub erase_unit_bytes: u64,
    /// FDP's reclaim-unit handles; `None`: a conventional SSD.
    pub handles: Option<(u16, RuhType)>,
    /// Trim an evicted bucket (always on FDP).
    pub discard: bool,
    /// Keep the blocks' bytes (tests); metadata only otherwise.
    pub data: bool,
}

impl SsdShape {
    /// The SSD model's configuration, each setting refused by the flag that sets it.
    pub fn config(&self) -> Result<SsdConfig> {
        let (cache_bytes, bucket_bytes, erase_unit_bytes) = (self.cache_bytes, self.bucket_bytes, self.erase_unit_bytes);
        // Each cause named as it is: a bucket of partial blocks is not the cache size's fault.
        if bucket_bytes == 0 || bucket_bytes % BLOCK != 0 {
            return Err(LabError::Usage(format!("--bucket-kib {}: a bucket of {bucket_bytes} bytes is not a whole number of {BLOCK}-byte blocks", bucket_bytes / KIB)));
        }
        if cache_bytes % bucket_bytes != 0 {
            return Err(LabError::Usage(format!("--bucket-kib {}: a {cache_bytes}-byte cache is not a whole number of {bucket_bytes}-byte buckets", bucket_bytes / KIB)));
        }
        if !(self.op > 0.0 && self.op < 1.0) {
            return Err(LabError::Usage(format!("{}: spare (--op) {} must be in (0, 1)", self.kind(), self.op)));
        }
        if erase_unit_bytes == 0 || erase_unit_bytes % BLOCK != 0 || erase_unit_bytes > cache_bytes {
            return Err(LabError::Usage(format!(
                "--erase-unit-kib {}: {}: an erase unit of {erase_unit_bytes} bytes must be whole 4 KiB blocks and at most the {cache_bytes}-byte cache",
                erase_unit_bytes / KIB,
                self.kind()
            )));
        }
        let logical_blocks = cache_bytes / BLOCK;
        let unit_blocks = erase_unit_bytes / BLOCK;
        let mut cfg = match self.handles {
            None => SsdConfig::conventional(logical_blocks, self.op, unit_blocks),
            Some((handles, ruh_type)) => SsdConfig::fdp(logical_blocks, self.op, unit_blocks, handles, ruh_type),
        };
        cfg.store_data = self.data;
        // The model's own refusals (too few reclaim units for the data, the open ones and the
        // GC's reserve; too many blocks) name the flags that shape it here.
        cfg.validate()
            .map_err(|e| LabError::Usage(format!("{} of --cache-mib {} --op {} --erase-unit-kib {}: {e}", self.kind(), cache_bytes >> 20, self.op, erase_unit_bytes / KIB)))?;
        if let Some(total) = zonekit_base::mem::beyond_memory(cfg.memory_bytes()) {
            return Err(LabError::Usage(format!(
                "{}: the SSD model of a {cache_bytes}-byte cache needs {} bytes of memory; this machine has {total}",
                self.kind(),
                cfg.memory_bytes()
            )));
        }
        Ok(cfg)
    }

    fn kind(&self) -> String {
        match self.handles {
            None => "conventional SSD".into(),
            Some((handles, ruh_type)) => format!("FDP SSD of {handles} {} handle(s)", ruh_type.name()),
        }
    }
}

/// The cache's buckets on an SSD model (see the module doc).
pub struct SsdBuckets {
    ssd: Ssd,
    buckets: u32,
    bucket_blocks: u64,
    /// Class → handle (empty on a conventional SSD).
    fold: Vec<u16>,
    /// Per bucket, the handle its current fill is written under.
    bucket_handle: Vec<u16>,
    discard: bool,
    bytes_written: u64,
    gc_rounds: Vec<GcRound>,
}

impl SsdBuckets {
    pub fn new(shape: SsdShape) -> Result<SsdBuckets> {
        let cfg = shape.config()?;
        let buckets = u32::try_from(shape.cache_bytes / shape.bucket_bytes)
            .map_err(|_| LabError::Usage(format!("a {}-byte cache is over {} buckets of {} bytes", shape.cache_bytes, u32::MAX, shape.bucket_bytes)))?;
        let handles = cfg.handles.len();
        let ssd = Ssd::new(cfg).map_err(|e| LabError::Usage(format!("{}: {e}", shape.kind())))?;
        Ok(SsdBuckets {
            ssd,
            buckets,
            bucket_blocks: shape.bucket_bytes / BLOCK,
            fold: zonekit_ftl::hinted::fold_classes(1, handles),
            bucket_handle: vec![0; buckets as usize],
            discard: shape.discard || handles > 0,
            bytes_written: 0,
            gc_rounds: Vec::new(),
        })
    }

    pub fn ssd(&self) -> &Ssd {
        &self.ssd
    }

    /// Class → handle as the cache's classes fold onto the device's handles (empty: no hint).
    pub fn fold(&self) -> &[u16] {
        &self.fold
    }

    /// Every device GC so far (up to [`GC_ROUNDS_MAX`]), in order.
    pub fn gc_rounds(&self) -> &[GcRound] {
        &self.gc_rounds
    }

    fn lba(&self, bucket: u32, offset: u64) -> u64 {
        bucket as u64 * self.bucket_blocks + offset
    }

    fn device(e: SsdError) -> CacheError {
        CacheError::Internal(format!("the cache's SSD: {e}"))
    }
}

impl CacheDevice for SsdBuckets {
    fn buckets(&self) -> u32 {
        self.buckets
    }

    fn bucket_blocks(&self) -> u64 {
        self.bucket_blocks
    }

    fn block_bytes(&self) -> u32 {
        BLOCK as u32
    }

    fn placement_classes(&mut self, classes: u32) {
        self.fold = zonekit_ftl::hinted::fold_classes(classes as usize, self.ssd.placement_handles() as usize);
    }

    fn bucket_opened(&mut self, bucket: u32, class: u32) {
        // A class the cache did not announce goes with the longest-lived (the fold's last).
        if let Some(&handle) = self.fold.get(class as usize).or(self.fold.last()) {
            self.bucket_handle[bucket as usize] = handle;
        }
    }

    fn write(&mut self, bucket: u32, offset: u64, data: &[u8]) -> zonekit_cache::Result<()> {
        let pid = (!self.fold.is_empty()).then(|| Pid { group: 0, handle: self.bucket_handle[bucket as usize] });
        let store = self.ssd.config().store_data;
        let unit_blocks = self.ssd.config().ru_blocks();
        for (i, block) in data.chunks(BLOCK as usize).enumerate() {
            let lba = self.lba(bucket, offset + i as u64);
            let before = (self.ssd.counters().erases, self.ssd.counters().gc_blocks);
            if store {
                self.ssd.write(lba, pid, block).map_err(Self::device)?;
            } else {
                self.ssd.write_meta(lba, pid).map_err(Self::device)?;
            }
            // Device GC runs inside a write: what it did is the counters' change.
            let c = self.ssd.counters();
            let units = c.erases - before.0;
            if units > 0 && self.gc_rounds.len() < GC_ROUNDS_MAX {
                let copied_blocks = c.gc_blocks - before.1;
                self.gc_rounds.push(GcRound { host_blocks: c.host_blocks, units, copied_blocks, freed_blocks: units * unit_blocks - copied_blocks });
            }
        }
        self.bytes_written += data.len() as u64;
        Ok(())
    }

    fn read(&mut self, bucket: u32, offset: u64, buf: &mut [u8]) -> zonekit_cache::Result<()> {
        self.ssd.read(self.lba(bucket, offset), buf).map_err(Self::device)
    }

    fn evict(&mut self, bucket: u32) -> zonekit_cache::Result<()> {
        if self.discard {
            self.ssd.trim(self.lba(bucket, 0), self.bucket_blocks).map_err(Self::device)?;
        }
        Ok(())
    }

    fn device_waf(&self) -> Option<f64> {
        Some(self.ssd.counters().waf())
    }

    fn bytes_written(&self) -> u64 {
        self.bytes_written
    }
}

/// One garbage collection of the conventional SSD, as the thesis' Fig. 2.4 samples it: the
/// erase unit's live blocks copied elsewhere and the blocks it freed for host writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcRound {
    /// Host blocks the device had been given when it collected.
    pub host_blocks: u64,
    /// Erase units reclaimed: 1, or more when one host write needed several at once (their
    /// copies are then known only together, and the row is their sum).
    pub units: u64,
    pub copied_blocks: u64,
    pub freed_blocks: u64,
}

impl GcRound {
    /// Flash writes per host write the collected space bought: (freed + copied) / freed, the
    /// thesis' "host wrote 1 MB, GC copied 1 MB: WAF 2".
    pub fn waf(&self) -> f64 {
        if self.freed_blocks == 0 {
            f64::INFINITY
        } else {
            (self.freed_blocks + self.copied_blocks) as f64 / self.freed_blocks as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(handles: Option<(u16, RuhType)>) -> SsdShape {
        // 32 buckets of one 128 KiB reclaim unit each: a bucket written whole, alone, fills a
        // unit of its own, so trimming it leaves the unit empty.
        SsdShape { cache_bytes: 4 << 20, bucket_bytes: 128 * KIB, op: 0.28, erase_unit_bytes: 128 * KIB, handles, discard: false, data: true }
    }

    /// Fills every bucket whole, in a shuffled order each round, evicting it first.
    fn rewrite_whole_buckets(d: &mut SsdBuckets, rounds: u64, classes: u32) {
        d.placement_classes(classes);
        let block = vec![7u8; BLOCK as usize];
        let mut rng = zonekit_base::Rng::new(3);
        for round in 0..rounds {
            let mut order: Vec<u32> = (0..d.buckets()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            for &b in &order {
                if round > 0 {
                    d.evict(b).unwrap();
                }
                d.bucket_opened(b, b % classes);
                for o in 0..d.bucket_blocks() {
                    d.write(b, o, &block).unwrap();
                }
            }
        }
    }

    #[test]
    fn buckets_trimmed_and_rewritten_whole_cost_no_device_gc() {
        for handles in [Some((1, RuhType::InitiallyIsolated)), Some((4, RuhType::InitiallyIsolated)), Some((2, RuhType::PersistentlyIsolated))] {
            let mut d = SsdBuckets::new(shape(handles)).unwrap();
            rewrite_whole_buckets(&mut d, 6, 4);
            let c = d.ssd().counters();
            assert!(c.erases > 0, "{handles:?}: the device never reclaimed a unit");
            assert_eq!(c.gc_blocks, 0, "{handles:?}: device GC copied blocks of trimmed buckets");
            assert_eq!(d.device_waf(), Some(1.0));
            assert!(d.gc_rounds().iter().all(|g| g.copied_blocks == 0));
        }
        // FDP trims every evicted bucket; a conventional SSD only with discard (bcache's
        // default is none).
        let mut d = SsdBuckets::new(shape(Some((2, RuhType::InitiallyIsolated)))).unwrap();
        rewrite_whole_buckets(&mut d, 2, 4);
        assert_eq!(d.ssd().counters().trimmed_blocks, 32 * 32);
        let mut d = SsdBuckets::new(SsdShape { discard: true, ..shape(None) }).unwrap();
        rewrite_whole_buckets(&mut d, 6, 4);
        assert_eq!(d.ssd().counters().gc_blocks, 0);
        assert!(d.ssd().counters().trimmed_blocks > 0);
        let mut d = SsdBuckets::new(shape(None)).unwrap();
        rewrite_whole_buckets(&mut d, 2, 4);
        assert_eq!(d.ssd().counters().trimmed_blocks, 0);
    }

    #[test]
    fn classes_fold_onto_handles_and_each_bucket_goes_under_its_class_handle() {
        let mut d = SsdBuckets::new(shape(Some((2, RuhType::InitiallyIsolated)))).unwrap();
        d.placement_classes(5);
        assert_eq!(d.fold(), [0, 0, 0, 1, 1]);
        let block = vec![1u8; BLOCK as usize];
        for class in 0..5u32 {
            d.bucket_opened(class, class);
            d.write(class, 0, &block).unwrap();
        }
        // Classes 0–2 under handle 0, 3–4 under handle 1.
        assert_eq!(d.ssd().counters().host_blocks_by_handle, [3, 2]);
        let mut d = SsdBuckets::new(shape(Some((4, RuhType::InitiallyIsolated)))).unwrap();
        d.placement_classes(3);
        assert_eq!(d.fold(), [0, 1, 2]);
        let conventional = SsdBuckets::new(shape(None)).unwrap();
        assert!(conventional.fold().is_empty());
    }

    #[test]
    fn data_reads_back_and_a_shape_the_model_cannot_run_is_refused_by_its_flags() {
        let mut d = SsdBuckets::new(shape(Some((2, RuhType::InitiallyIsolated)))).unwrap();
        d.placement_classes(2);
        d.bucket_opened(3, 1);
        let data: Vec<u8> = (0..2 * BLOCK).map(|i| (i % 251) as u8).collect();
        d.write(3, 0, &data).unwrap();
        let mut back = vec![0u8; data.len()];
        d.read(3, 0, &mut back).unwrap();
        assert_eq!(back, data);
        d.evict(3).unwrap();
        d.read(3, 0, &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 0), "a trimmed bucket reads as zeros");
        for (s, flag) in [
            (SsdShape { erase_unit_bytes: 2 << 20, ..shape(None) }, "--erase-unit-kib 2048"),
            (SsdShape { bucket_bytes: 6 * KIB, ..shape(None) }, "--bucket-kib 6"),
            (SsdShape { op: 1.5, ..shape(None) }, "--op"),
            (SsdShape { erase_unit_bytes: 8 << 20, ..shape(None) }, "--erase-unit-kib 8192"),
        ] {
            let m = SsdBuckets::new(s).err().expect("refused").to_string();
            assert!(m.contains(flag), "{flag}: {m}");
        }
    }
}

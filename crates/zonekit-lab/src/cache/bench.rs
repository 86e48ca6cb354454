//! Seed 004's experiment: a bcache-style cache of an HDD on a ZNS SSD (bucket = zone) or on a
//! random-write SSD model (`zonekit_ssd::Ssd` through [`crate::cache::ssd`]: 1 MiB buckets on
//! a conventional SSD with one write point and greedy device GC, so the device's WAF is
//! measured, or on an FDP SSD with a handle per placement class), driven by YCSB-like reads or
//! a block trace.
//!
//! [`run_cache`] runs one configuration ([`CacheSpec`]); [`run_experiment`] runs the thesis'
//! comparisons (Figs. 5.1–5.3 and 2.4) plus the policies caches use today and the Belady bound,
//! and writes `results.csv`, `waf.csv` (the conventional SSD's WAF per window and cumulative),
//! `gc-waf.csv` (its WAF per garbage collection, Fig. 2.4's own sampling), `summary.md` and SVG
//! charts. [`run_experiment`] also runs on a trace ([`CacheExperiment::trace`]).
//!
//! The thesis' workload does not add up (6.4 M records of 1 KiB are 6 GiB, under the 8 GiB
//! cache, yet it speaks of 64 GiB of data and of evictions), so there are two readings
//! ([`Layout`]). Strided, the default, keeps its record count, its 64 GiB data set and its 1:8
//! cache ratio: record `i` lives at byte `i × data / records` (a 10 KiB stride), a read
//! fetches the 4 KiB block holding it, and the read phase runs long enough to cycle the cache.
//! Packed keeps the record count and size literally: records back to back (1040 bytes, 3.94 to
//! a block), 6.2 GiB under the 8 GiB cache, which then never evicts. Hit ratios are measured
//! after a warm-up either way.

use serde::{Deserialize, Serialize};
use zonekit_base::policy::{self, ParamReader, Params};
use zonekit_base::Rng;
use zonekit_cache::evict::{CacheShape, EVICTIONS};
use zonekit_cache::sampler::{SamplerBudget, SAMPLERS};
use zonekit_cache::{Cache, CacheConfig, CacheDevice, CacheError, Hdd, HddConfig, WriteMode, ZonedBuckets};
use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};
use zonekit_ssd::RuhType;
use zonekit_trace::synth::ycsb::{ScrambledZipfian, Zipfian};

pub use crate::cache::ssd::GcRound;
use crate::cache::ssd::{SsdBuckets, SsdShape};
use crate::harness::error::{LabError, Result};
use crate::harness::interface::Interface;
use crate::harness::progress::Progress;

pub(crate) const KIB: u64 = 1024;
pub(crate) const MIB: u64 = 1024 * KIB;
pub(crate) const BLOCK: u64 = 4096;
/// The thesis' record: a 16-byte key and a 1 KiB value.
pub const RECORD_BYTES: u64 = 1040;
/// Operations (or trace requests) between two progress reports, each of which may stop the run.
pub(crate) const PROGRESS_EVERY: u64 = 65536;
/// The load phase writes the whole data set; beyond this it would run for minutes.
pub(crate) const MAX_DATA_BYTES: u64 = 64 << 40;

/// The cache device.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum DeviceKind {
    /// A ZNS SSD: buckets of `zones_per_bucket` zones, eviction = zone reset.
    Zoned { zone_bytes: u64, zones_per_bucket: u32 },
    /// A conventional SSD (`zonekit_ssd::Ssd`): `bucket_bytes` buckets over its FTL with `op`
    /// spare (fraction of the exported capacity) and `erase_unit_bytes` erase units, greedy
    /// GC, one write point; evicted buckets are not trimmed (bcache's default: no discard).
    Conventional { bucket_bytes: u64, op: f64, erase_unit_bytes: u64 },
    /// The conventional SSD with evicted buckets trimmed (bcache's `discard` option): what
    /// trimming alone does, without placement.
    ConventionalDiscard { bucket_bytes: u64, op: f64, erase_unit_bytes: u64 },
    /// An NVMe FDP SSD of the same shape with `handles` reclaim-unit handles (reclaim units of
    /// one erase unit): each bucket written under its class's handle, trimmed when evicted
    /// ([`crate::cache::ssd`]).
    Fdp { bucket_bytes: u64, op: f64, erase_unit_bytes: u64, handles: u16, ruh_type: RuhType },
}

impl DeviceKind {
    /// The interface, as `--interface` names it.
    pub fn interface(&self) -> Interface {
        match *self {
            DeviceKind::Zoned { .. } => Interface::Zns,
            DeviceKind::Conventional { .. } | DeviceKind::ConventionalDiscard { .. } => Interface::Conventional,
            DeviceKind::Fdp { handles, ruh_type, .. } => Interface::Fdp { handles, ruh_type },
        }
    }

    /// The interface's name, with `+discard` for a conventional SSD that trims.
    pub fn name(&self) -> String {
        match self {
            DeviceKind::ConventionalDiscard { .. } => "conventional+discard".into(),
            d => d.interface().name(),
        }
    }

    /// Bytes of one bucket.
    pub fn bucket_bytes(&self) -> u64 {
        match *self {
            DeviceKind::Zoned { zone_bytes, zones_per_bucket } => zone_bytes.saturating_mul(zones_per_bucket as u64),
            DeviceKind::Conventional { bucket_bytes, .. } | DeviceKind::ConventionalDiscard { bucket_bytes, .. } | DeviceKind::Fdp { bucket_bytes, .. } => bucket_bytes,
        }
    }
}

/// YCSB-like key-value reads (and updates) mapped to blocks.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ycsb {
    pub records: u64,
    pub record_bytes: u64,
    pub data_bytes: u64,
    pub threads: u32,
    /// Operations of the read phase, over all threads.
    pub operations: u64,
    /// Share of operations that are updates (0 for YCSB-C, 0.05 for B, 0.5 for A).
    pub update_fraction: f64,
    /// Share of the read phase before hit ratios are counted.
    pub warmup_fraction: f64,
    /// YCSB's scrambled zipfian (hot records scattered over the data set, as YCSB's
    /// `zipfian` does) or plain zipfian (record 0 the hottest: hot records side by side).
    pub scrambled: bool,
    pub layout: Layout,
}

/// Where records sit on the backing disk.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Layout {
    /// Record `i` at byte `i × data_bytes / records`: the thesis' 6.4 M records spread over
    /// its stated 64 GiB, a 10 KiB stride, one record in each block read. The default: it
    /// keeps the thesis' stated 1:8 cache-to-data ratio, under which eviction and placement
    /// (the thesis' subject) matter.
    #[default]
    Strided,
    /// Records back to back, `record_bytes` each, from byte 0: a key-value store's data
    /// files hold them densely (1040-byte records, 3.94 to a 4 KiB block; a quarter of them
    /// span two blocks and are read as both). The thesis' literal 6.4 M records then take
    /// 6.2 GiB, under its 8 GiB cache.
    Packed,
}

impl Layout {
    pub fn parse(name: &str) -> Result<Layout> {
        match name {
            "strided" => Ok(Layout::Strided),
            "packed" => Ok(Layout::Packed),
            other => Err(LabError::Usage(format!("--layout {other:?}: expected strided or packed"))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Layout::Strided => "strided",
            Layout::Packed => "packed",
        }
    }
}

/// The record chooser a workload asks for.
pub(crate) enum Chooser {
    Scrambled(ScrambledZipfian),
    Clustered(Zipfian),
}

impl Chooser {
    pub(crate) fn new(w: &Ycsb) -> Chooser {
        if w.scrambled {
            Chooser::Scrambled(ScrambledZipfian::new(0, w.records - 1))
        } else {
            Chooser::Clustered(Zipfian::new(0, w.records - 1, zonekit_trace::synth::ycsb::ZIPFIAN_CONSTANT))
        }
    }

    pub(crate) fn next(&mut self, rng: &mut Rng) -> u64 {
        match self {
            Chooser::Scrambled(z) => z.next(rng),
            Chooser::Clustered(z) => z.next(rng),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CacheSpec {
    pub device: DeviceKind,
    pub cache_bytes: u64,
    pub eviction: String,
    /// `none` places every block together (ZNS-naive).
    pub sampler: String,
    pub sampler_params: Params,
    pub budget: SamplerBudget,
    pub config: CacheConfig,
    pub workload: Ycsb,
    pub seed: u64,
    /// Keep the bytes (tests); otherwise metadata only.
    pub data: bool,
}

/// Sampled counters of the read phase.
#[derive(Copy, Clone, Debug, Serialize, Deserialize)]
pub struct CacheSample {
    pub operations: u64,
    pub hit_ratio_window: f64,
    pub device_waf_cumulative: f64,
    /// Device WAF of the window's writes: (host + GC copies) / host.
    pub device_waf_window: f64,
    /// Blocks the cache had written to the device by then.
    pub host_blocks: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CacheReport {
    pub label: String,
    pub spec: CacheSpec,
    pub buckets: u32,
    pub bucket_bytes: u64,
    /// Block hit ratio after the warm-up.
    pub hit_ratio: f64,
    pub request_hit_ratio: f64,
    pub read_blocks: u64,
    pub evictions: u64,
    pub cache_blocks_written: u64,
    pub reinserted_blocks: u64,
    /// The interface the cache ran on (`zns`, `fdp:N`, `conventional`, ...).
    pub interface: String,
    /// Blocks the cache wrote to the device (data, reinsertions, metadata) per block it
    /// admitted: its reinsertions and metadata are the host's write amplification (the cache
    /// copies no live data otherwise: eviction drops it).
    pub host_waf: f64,
    /// Blocks flash programmed per block the cache wrote (1 on ZNS: no device GC).
    pub device_waf: f64,
    /// Their product: flash programs per admitted block.
    pub total_waf: f64,
    /// Blocks the device's GC moved (0 on ZNS).
    pub device_gc_blocks: u64,
    pub mean_latency_us: f64,
    pub latency_us_p99: f64,
    pub hdd_blocks_read: u64,
    pub sampler_memory_bytes: u64,
    pub inserted_per_class: Vec<u64>,
    /// bcache's metadata, when modelled (`config.metadata`): buckets held, blocks written.
    pub metadata: Option<zonekit_cache::MetadataStats>,
    /// The conventional SSD's garbage collections (`gc-waf.csv`); left out of the JSON.
    #[serde(skip)]
    pub gc_rounds: Vec<GcRound>,
    /// Why some of these figures mean less than they seem (no reads counted, so the hit ratio
    /// and latency are over zero samples; a cache that never evicted, so its placement and
    /// eviction never mattered), each naming the setting to change.
    pub warnings: Vec<String>,
}

impl CacheReport {
    fn warn_degenerate(mut self) -> Self {
        if self.read_blocks == 0 {
            self.warnings
                .push("no block was read after the warm-up: the hit ratio and the read latency are over zero samples; give more reads or a smaller --warmup-fraction".into());
        }
        if self.evictions == 0 {
            self.warnings.push(format!(
                "the cache never evicted ({} buckets of {} KiB held everything written): placement and eviction never mattered; use a smaller --cache-mib or more data",
                self.buckets,
                self.bucket_bytes / 1024
            ));
        }
        // A zoned device has no GC of its own; an SSD that never ran one reports the WAF of a
        // drive that was never full, which says nothing about the interface.
        let device_has_gc = !matches!(self.spec.device, DeviceKind::Zoned { .. });
        if device_has_gc && self.cache_blocks_written > 0 && self.gc_rounds.is_empty() && self.device_gc_blocks == 0 {
            self.warnings.push(format!(
                "the {} SSD never ran GC ({} blocks written by the cache): device WAF {:.3} is that of a drive never full and says nothing about the interface; write more (--records, --operations) or give the SSD less spare (--op)",
                self.interface, self.cache_blocks_written, self.device_waf
            ));
        }
        self
    }
}

/// A cache device of any interface.
pub enum AnyDevice {
    Zoned(Box<ZonedBuckets<MemDevice>>),
    /// A conventional or FDP SSD.
    Ssd(Box<SsdBuckets>),
}

macro_rules! on_device {
    ($self:expr, $d:ident => $e:expr) => {
        match $self {
            AnyDevice::Zoned($d) => $e,
            AnyDevice::Ssd($d) => $e,
        }
    };
}

impl CacheDevice for AnyDevice {
    fn buckets(&self) -> u32 {
        on_device!(self, d => d.buckets())
    }
    fn bucket_blocks(&self) -> u64 {
        on_device!(self, d => d.bucket_blocks())
    }
    fn block_bytes(&self) -> u32 {
        on_device!(self, d => d.block_bytes())
    }
    fn write(&mut self, bucket: u32, offset: u64, data: &[u8]) -> zonekit_cache::Result<()> {
        on_device!(self, d => d.write(bucket, offset, data))
    }
    fn read(&mut self, bucket: u32, offset: u64, buf: &mut [u8]) -> zonekit_cache::Result<()> {
        on_device!(self, d => d.read(bucket, offset, buf))
    }
    fn evict(&mut self, bucket: u32) -> zonekit_cache::Result<()> {
        on_device!(self, d => d.evict(bucket))
    }
    fn placement_classes(&mut self, classes: u32) {
        on_device!(self, d => d.placement_classes(classes))
    }
    fn bucket_opened(&mut self, bucket: u32, class: u32) {
        on_device!(self, d => d.bucket_opened(bucket, class))
    }
    fn device_waf(&self) -> Option<f64> {
        on_device!(self, d => d.device_waf())
    }
    fn bytes_written(&self) -> u64 {
        on_device!(self, d => d.bytes_written())
    }
}

impl AnyDevice {
    /// The SSD's GC rounds (a ZNS cache has none: eviction is a zone reset).
    pub fn gc_rounds(&self) -> &[GcRound] {
        match self {
            AnyDevice::Zoned(_) => &[],
            AnyDevice::Ssd(d) => d.gc_rounds(),
        }
    }

    /// (host blocks, GC-copied blocks) the flash has written so far.
    fn flash_writes(&self) -> (u64, u64) {
        match self {
            AnyDevice::Zoned(d) => (d.bytes_written() / BLOCK, 0),
            AnyDevice::Ssd(d) => (d.ssd().counters().host_blocks, d.ssd().counters().gc_blocks),
        }
    }
}

pub(crate) fn cache_error(context: &str) -> impl Fn(CacheError) -> LabError + '_ {
    move |e| LabError::Cache { context: context.to_string(), error: Box::new(e) }
}

/// Builds the cache a spec describes.
/// Memory per cached block, about: the slot tables (18 B) and the index and its tombstones
/// (hash maps of ~12 B entries kept under 3/4 full, once each block was cached).
const CACHE_TABLE_BYTES_PER_BLOCK: u64 = 18 + 2 * 16;

/// Refuses a cache whose tables (and, holding data, its blocks) would not fit the machine's
/// memory, before any is allocated: within the documented limits, a 32 TiB cache aborted
/// the process in the allocator.
fn check_cache_memory(spec: &CacheSpec) -> Result<()> {
    let tables = (spec.cache_bytes / BLOCK).saturating_mul(CACHE_TABLE_BYTES_PER_BLOCK);
    let needed = tables.saturating_add(if spec.data { spec.cache_bytes } else { 0 });
    if let Some(total) = zonekit_base::mem::beyond_memory(needed) {
        let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
        return Err(LabError::Usage(format!(
            "a {:.1} GiB cache needs about {:.1} GiB of memory for its tables{}; this machine has {:.1} GiB",
            gib(spec.cache_bytes),
            gib(needed),
            if spec.data { " and its data" } else { "" },
            gib(total)
        )));
    }
    Ok(())
}

pub fn build_cache(spec: &CacheSpec) -> Result<Cache<AnyDevice>> {
    let w = &spec.workload;
    let context = "cache";
    if spec.cache_bytes == 0 {
        return Err(LabError::Usage("the cache needs at least one bucket (--cache-mib 0)".into()));
    }
    check_cache_memory(spec)?;
    let device = match spec.device {
        DeviceKind::Zoned { zone_bytes, zones_per_bucket } => {
            if zone_bytes == 0 || zone_bytes % BLOCK != 0 || spec.cache_bytes % zone_bytes != 0 {
                return Err(LabError::Usage(format!("a {}-byte cache is not a whole number of {zone_bytes}-byte zones", spec.cache_bytes)));
            }
            let zones = u32::try_from(spec.cache_bytes / zone_bytes)
                .map_err(|_| LabError::Usage(format!("a {}-byte cache is over {} zones of {zone_bytes} bytes", spec.cache_bytes, u32::MAX)))?;
            let geometry = Geometry {
                block_size_bytes: BLOCK as u32,
                zone_size_blocks: zone_bytes / BLOCK,
                zone_capacity_blocks: zone_bytes / BLOCK,
                zone_count: zones,
                conventional_zone_count: 0,
                open_zones_max: None,
                active_zones_max: None,
            };
            let mode = if spec.data { StorageMode::Data } else { StorageMode::MetadataOnly };
            zonekit_device::emu::check_zone_memory(&geometry).map_err(|e| LabError::Usage(format!("a {}-byte cache of {zone_bytes}-byte zones: {e}", spec.cache_bytes)))?;
            let mem = MemDevice::new(geometry, ZoneBehavior::default(), mode)?;
            // Checked: 524289 zones of 32 TiB a bucket wrapped to a bucket of one zone.
            let bucket_bytes = zone_bytes
                .checked_mul(zones_per_bucket as u64)
                .ok_or_else(|| LabError::Usage(format!("buckets of {zones_per_bucket} zones of {zone_bytes} bytes are over 2^64 bytes")))?;
            AnyDevice::Zoned(Box::new(ZonedBuckets::new(mem, bucket_bytes).map_err(|e| LabError::Usage(e.to_string()))?))
        }
        DeviceKind::Conventional { bucket_bytes, op, erase_unit_bytes } => AnyDevice::Ssd(Box::new(SsdBuckets::new(SsdShape {
            cache_bytes: spec.cache_bytes,
            bucket_bytes,
            op,
            erase_unit_bytes,
            handles: None,
            discard: false,
            data: spec.data,
        })?)),
        DeviceKind::ConventionalDiscard { bucket_bytes, op, erase_unit_bytes } => AnyDevice::Ssd(Box::new(SsdBuckets::new(SsdShape {
            cache_bytes: spec.cache_bytes,
            bucket_bytes,
            op,
            erase_unit_bytes,
            handles: None,
            discard: true,
            data: spec.data,
        })?)),
        DeviceKind::Fdp { bucket_bytes, op, erase_unit_bytes, handles, ruh_type } => AnyDevice::Ssd(Box::new(SsdBuckets::new(SsdShape {
            cache_bytes: spec.cache_bytes,
            bucket_bytes,
            op,
            erase_unit_bytes,
            handles: Some((handles, ruh_type)),
            discard: true,
            data: spec.data,
        })?)),
    };
    let shape = CacheShape { buckets: device.buckets(), bucket_blocks: device.bucket_blocks() };
    let (info, params) = policy::find(EVICTIONS, "eviction", &spec.eviction)?;
    let eviction = (info.make)(&ParamReader::new(info, &params)?, shape).map_err(|e| LabError::Usage(e.to_string()))?;
    let sampler = if spec.sampler == "none" {
        None
    } else {
        let (info, mut params) = policy::find(SAMPLERS, "sampler", &spec.sampler)?;
        params.extend(spec.sampler_params.clone());
        Some((info.make)(&ParamReader::new(info, &params)?, spec.budget).map_err(|e| LabError::Usage(e.to_string()))?)
    };
    let hdd = Hdd::new(HddConfig::barracuda(w.data_bytes.div_ceil(BLOCK), BLOCK as u32), spec.data).map_err(cache_error(context))?;
    let config = CacheConfig { chunk_bytes: spec.budget.chunk_bytes, ..spec.config };
    Cache::new(device, hdd, config, eviction, sampler).map_err(|e| match e {
        CacheError::Config(m) => LabError::Usage(m),
        other => cache_error(context)(other),
    })
}

/// The block holding record `i`, and how many blocks the record spans.
pub(crate) fn record_blocks(w: &Ycsb, i: u64) -> (u64, u64) {
    let stride = match w.layout {
        Layout::Strided => w.data_bytes / w.records,
        Layout::Packed => w.record_bytes,
    };
    let start = i * stride;
    let first = start / BLOCK;
    let last = (start + w.record_bytes - 1) / BLOCK;
    (first, last - first + 1)
}

impl Ycsb {
    pub(crate) fn validate(&self) -> Result<()> {
        if self.records == 0 || self.threads == 0 || self.operations == 0 {
            return Err(LabError::Usage(format!("--records {}, --threads {}, --operations {}: each must be at least 1", self.records, self.threads, self.operations)));
        }
        // A record lies in at most two blocks: larger ones would be a request, not a record.
        if self.record_bytes == 0 || self.record_bytes > BLOCK {
            return Err(LabError::Usage(format!("--record-bytes {}: a record must be 1 to {BLOCK} bytes (at most one {BLOCK}-byte block)", self.record_bytes)));
        }
        // Strided records each need their stride; packed ones all of them together.
        let fits = match self.layout {
            Layout::Strided => self.data_bytes / self.records >= self.record_bytes,
            Layout::Packed => self.records.checked_mul(self.record_bytes).is_some_and(|bytes| bytes <= self.data_bytes),
        };
        if !fits {
            return Err(LabError::Usage(format!(
                "--records {} --data-mib {} --layout {} --record-bytes {}: {} records of {} bytes do not fit {} bytes of data",
                self.records,
                self.data_bytes >> 20,
                self.layout.name(),
                self.record_bytes,
                self.records,
                self.record_bytes,
                self.data_bytes
            )));
        }
        if self.data_bytes > MAX_DATA_BYTES {
            return Err(LabError::Usage(format!("--data-mib {}: a data set of {} bytes; at most {MAX_DATA_BYTES} (64 TiB)", self.data_bytes >> 20, self.data_bytes)));
        }
        if !(0.0..=1.0).contains(&self.update_fraction) || !(0.0..1.0).contains(&self.warmup_fraction) {
            return Err(LabError::Usage(format!(
                "--update-fraction {} --warmup-fraction {}: the update share must be in [0, 1] and the warm-up share in [0, 1)",
                self.update_fraction, self.warmup_fraction
            )));
        }
        Ok(())
    }
}

/// Runs one configuration: the load (sequential, bypassing the cache), then the read phase.
/// `progress` hears the read operations done now and then, and may stop the run.
pub fn run_cache(label: &str, spec: &CacheSpec, progress: &mut dyn Progress) -> Result<(CacheReport, Vec<CacheSample>)> {
    let w = spec.workload;
    w.validate()?;
    let mut cache = build_cache(spec)?;
    let err = cache_error(label);
    // Load: 8 MiB sequential writes, over the cutoff, so they bypass the cache.
    let load_chunk = 8 * MIB;
    let mut buf = vec![0u8; load_chunk as usize];
    let data_blocks = w.data_bytes / BLOCK;
    let mut at = 0;
    while at < data_blocks {
        let n = ((data_blocks - at) * BLOCK).min(load_chunk) as usize;
        cache.write(at, &buf[..n]).map_err(&err)?;
        at += n as u64 / BLOCK;
    }
    let mut zipf = Chooser::new(&w);
    let mut rng = Rng::new(spec.seed);
    let warmup = (w.operations as f64 * w.warmup_fraction) as u64;
    let mut samples = Samples::new(w.operations, &cache);
    let mut counted = (0u64, 0u64, 0u64, 0u64);
    for op in 0..w.operations {
        if op == warmup {
            counted = read_counters(&cache);
        }
        let record = zipf.next(&mut rng);
        let (block, blocks) = record_blocks(&w, record);
        let bytes = (blocks * BLOCK) as usize;
        let task = (op % w.threads as u64) as u32;
        if w.update_fraction > 0.0 && rng.chance(w.update_fraction) {
            cache.write_as(task, block, &buf[..bytes]).map_err(&err)?;
        } else {
            cache.read_as(task, block, &mut buf[..bytes]).map_err(&err)?;
        }
        samples.after(op, &cache);
        if (op + 1) % PROGRESS_EVERY == 0 {
            progress.update(op + 1);
            if progress.cancelled() {
                return Err(LabError::Cancelled);
            }
        }
    }
    cache.check_invariants().map_err(&err)?;
    Ok((report(label, spec, &cache, counted), samples.series))
}

/// The report of a run; `counted` are the read counters at the end of the warm-up.
pub(crate) fn report(label: &str, spec: &CacheSpec, cache: &Cache<AnyDevice>, counted: (u64, u64, u64, u64)) -> CacheReport {
    let s = cache.stats();
    let (blocks, hits) = (s.read_blocks - counted.0, s.read_block_hits - counted.1);
    let (requests, request_hits) = (s.read_requests - counted.2, s.read_request_hits - counted.3);
    let admitted_blocks = s.cache_blocks_written - s.reinserted_blocks;
    let device_blocks = cache.device().bytes_written() / BLOCK;
    let host_waf = if admitted_blocks == 0 { 1.0 } else { device_blocks as f64 / admitted_blocks as f64 };
    let device_waf = cache.device().device_waf().unwrap_or(1.0);
    CacheReport {
        label: label.to_string(),
        spec: spec.clone(),
        buckets: cache.device().buckets(),
        bucket_bytes: cache.device().bucket_blocks() * BLOCK,
        hit_ratio: hits as f64 / blocks.max(1) as f64,
        request_hit_ratio: request_hits as f64 / requests.max(1) as f64,
        read_blocks: blocks,
        evictions: s.evictions,
        cache_blocks_written: s.cache_blocks_written,
        reinserted_blocks: s.reinserted_blocks,
        interface: spec.device.name(),
        host_waf,
        device_waf,
        total_waf: host_waf * device_waf,
        device_gc_blocks: cache.device().flash_writes().1,
        mean_latency_us: cache.latency().mean() / 1000.0,
        latency_us_p99: cache.latency().quantile(0.99) as f64 / 1000.0,
        hdd_blocks_read: cache.hdd_stats().blocks_read,
        sampler_memory_bytes: cache.sampler().map_or(0, |s| s.memory_bytes()),
        inserted_per_class: s.inserted_per_class.clone(),
        metadata: cache.metadata().cloned(),
        gc_rounds: cache.device().gc_rounds().to_vec(),
        warnings: Vec::new(),
    }
    .warn_degenerate()
}

/// The read counters a report subtracts to leave out the warm-up.
pub(crate) fn read_counters(cache: &Cache<AnyDevice>) -> (u64, u64, u64, u64) {
    let s = cache.stats();
    (s.read_blocks, s.read_block_hits, s.read_requests, s.read_request_hits)
}

pub(crate) fn check_warmup(warmup_fraction: f64) -> Result<()> {
    if !(0.0..1.0).contains(&warmup_fraction) {
        return Err(LabError::Usage(format!("--warmup-fraction {warmup_fraction}: the warm-up share must be in [0, 1)")));
    }
    Ok(())
}

/// Fifty samples of the hit ratio and the device's WAF over a run of `operations`.
pub(crate) struct Samples {
    every: u64,
    operations: u64,
    last_reads: u64,
    last_hits: u64,
    last_host: u64,
    last_gc: u64,
    pub(crate) series: Vec<CacheSample>,
}

impl Samples {
    pub(crate) fn new(operations: u64, cache: &Cache<AnyDevice>) -> Samples {
        let (last_host, last_gc) = cache.device().flash_writes();
        Samples { every: (operations / 50).max(1), operations, last_reads: 0, last_hits: 0, last_host, last_gc, series: Vec::new() }
    }

    /// After operation `op` (0-based); returns whether it took a sample.
    pub(crate) fn after(&mut self, op: u64, cache: &Cache<AnyDevice>) -> bool {
        if (op + 1) % self.every != 0 {
            return false;
        }
        let s = cache.stats();
        let (host, gc) = cache.device().flash_writes();
        let window_host = host - self.last_host;
        self.series.push(CacheSample {
            operations: op + 1,
            hit_ratio_window: (s.read_block_hits - self.last_hits) as f64 / (s.read_blocks - self.last_reads).max(1) as f64,
            device_waf_cumulative: if host == 0 { 1.0 } else { (host + gc) as f64 / host as f64 },
            device_waf_window: if window_host == 0 { 1.0 } else { (window_host + gc - self.last_gc) as f64 / window_host as f64 },
            host_blocks: host,
        });
        (self.last_reads, self.last_hits, self.last_host, self.last_gc) = (s.read_blocks, s.read_block_hits, host, gc);
        debug_assert!(op < self.operations);
        true
    }
}

/// Parses a write mode for the CLI.
pub fn write_mode(name: &str) -> Result<WriteMode> {
    WriteMode::parse(name).map_err(|e| LabError::Usage(e.to_string()))
}

#[cfg(test)]
mod tests;

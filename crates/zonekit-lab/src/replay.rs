//! Replaying a trace or workload through the block FTL on an emulated device, and what it
//! measured: one sizing pass, the future-knowledge pass when the placement needs it, the replay.

use std::time::Instant;

use serde::Serialize;
use zonekit_base::DistinctCounter;
use zonekit_device::timing::TimedDevice;
use zonekit_device::{preset, Geometry, MemDevice, StorageMode, ZoneBehavior, ZonedDevice};
use zonekit_ftl::engine::gp_quantile;
use zonekit_ftl::placement::{self, Params, PolicyEnv};
use zonekit_ftl::{victim, CapacityMode, Ftl, FtlConfig};
use zonekit_trace::binary::{annotate_next_write, BinaryWriter};
use zonekit_trace::input::Input;

use crate::driver::{drive, BlockEngine};
use crate::error::{LabError, Result};

/// The device preset replays size their device from, unless told otherwise.
pub const DEFAULT_PRESET: &str = "femu-zns";
/// The share of the device the working set fills in fixed-capacity replays.
pub const DEFAULT_UTILIZATION: f64 = 0.85;

/// Everything that defines one replay.
#[derive(Clone, Debug, Serialize)]
pub struct ReplaySpec {
    pub placement: String,
    /// Placement parameters (`key=value`), e.g. BHB-DP's `r1`, `r2`, `m`.
    pub params: Params,
    pub victim: String,
    pub config: FtlConfig,
    /// Device preset whose zone size, limits and flash timing are used.
    pub preset: String,
    /// Fixed mode: size the device so the working set fills this share of it (the preset's own
    /// size when `None`).
    pub utilization: Option<f64>,
    /// Charge every operation to the preset's flash timing model.
    pub timing: bool,
    /// Replay onto this existing device (an emulated image or a `/dev` zoned device, every
    /// sequential zone empty) at its own size instead of an in-memory device sized from the
    /// preset; the preset's size, the utilisation and the timing model then do not apply.
    pub device: Option<std::path::PathBuf>,
    pub seed: u64,
}

impl Default for ReplaySpec {
    fn default() -> Self {
        ReplaySpec {
            placement: placement::bhbdp::BHBDP.name.into(),
            params: Params::new(),
            victim: victim::cbe::CBE.name.into(),
            config: FtlConfig::default(),
            preset: DEFAULT_PRESET.into(),
            utilization: Some(DEFAULT_UTILIZATION),
            timing: false,
            device: None,
            seed: 1,
        }
    }
}

impl ReplaySpec {
    /// Every setting that changes a replay's result except the input and the policies'
    /// names and parameters, as one canonical string: a resumed sweep reuses a row only
    /// when this matches.
    pub fn settings_key(&self) -> String {
        let c = &self.config;
        format!(
            "preset={} utilization={:?} capacity={:?} gc_threshold={:?} timing={} store_data={} seed={}{}",
            self.preset,
            self.utilization,
            c.capacity,
            c.gc_threshold,
            self.timing,
            c.store_data,
            self.seed,
            self.device.as_ref().map_or(String::new(), |d| format!(" device={}", d.display()))
        )
    }

    /// Checks the settings before anything runs.
    pub fn validate(&self) -> Result<()> {
        preset::find(&self.preset).ok_or_else(|| LabError::Usage(format!("unknown device preset {:?}; valid: {}", self.preset, preset::names().join(", "))))?;
        if let (CapacityMode::Fixed, Some(u)) = (self.config.capacity, self.utilization) {
            if !(u > 0.0 && u < 1.0) {
                return Err(LabError::Usage(format!("utilisation {u} must be in (0, 1)")));
            }
        }
        if !(0.0..1.0).contains(&self.config.gc_threshold) {
            return Err(LabError::Usage(format!("GC threshold {} is not in [0, 1)", self.config.gc_threshold)));
        }
        if let Some(d) = &self.device {
            if self.timing {
                return Err(LabError::Usage(format!("--timing models an emulated device sized from a preset; {} is used at its own speed", d.display())));
            }
            if !d.exists() {
                return Err(LabError::Usage(format!("{}: no such device or image", d.display())));
            }
        }
        placement::find(&self.placement, &self.params)?;
        victim::find(&self.victim)?;
        Ok(())
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    pub workload: String,
    pub placement: String,
    pub victim: String,
    pub capacity_mode: CapacityMode,
    pub zones: u32,
    pub zone_mib: f64,
    pub distinct_blocks: u64,
    pub user_blocks: u64,
    pub gc_blocks: u64,
    pub waf: f64,
    pub gc_count: u64,
    pub user_gib: f64,
    pub gc_gib: f64,
    pub reclaimed_gp_mean: Option<f64>,
    pub reclaimed_gp_q1_median_q3: Option<[f64; 3]>,
    pub user_blocks_by_class: Vec<u64>,
    pub gc_blocks_by_class: Vec<u64>,
    /// GP histogram (1 % bins) over all classes, then per class.
    pub gp_histogram: Vec<u64>,
    pub gp_histogram_by_class: Vec<Vec<u64>>,
    pub resets_min_max_mean: (u64, u64, f64),
    pub read_blocks: u64,
    pub device_time_s: Option<f64>,
    pub wall_s: f64,
    pub blocks_per_s: f64,
    pub ftl_bytes_per_block: f64,
}

fn geometry_for(spec: &ReplaySpec, distinct: u64, classes: usize) -> Result<(Geometry, ZoneBehavior, zonekit_device::timing::FlashConfig)> {
    let p = preset::find(&spec.preset).ok_or_else(|| LabError::Usage(format!("unknown device preset {:?}; valid: {}", spec.preset, preset::names().join(", "))))?;
    let mut g = p.geometry;
    let extra = 2 * classes as u64 + 2;
    match (spec.config.capacity, spec.utilization) {
        (CapacityMode::Unbounded, _) => {
            // The log grows to about working set / (1 − threshold); leave room for the open
            // zones and for the victims in flight.
            let log = distinct as f64 / (1.0 - spec.config.gc_threshold) * 1.25;
            g.zone_count = (log / g.zone_capacity_blocks as f64).ceil() as u32 + extra as u32 + 8;
        }
        (CapacityMode::Fixed, Some(u)) => {
            if !(u > 0.0 && u < 1.0) {
                return Err(LabError::Usage(format!("utilisation {u} must be in (0, 1)")));
            }
            let data_zones = (distinct as f64 / u / g.zone_capacity_blocks as f64).ceil() as u64;
            g.zone_count = (data_zones + extra).max(extra + 4) as u32;
        }
        (CapacityMode::Fixed, None) => {}
    }
    g.conventional_zone_count = 0;
    g.validate()?;
    Ok((g, p.behavior, p.flash))
}

/// Writes `input` to a temporary annotated binary trace, for the oracles.
fn with_future(input: &Input, dir: &std::path::Path) -> Result<Input> {
    let path = dir.join("oracle.zkt");
    let io = LabError::input(input);
    let mut w = BinaryWriter::create(&path, input.filters.split.block_size_bytes as u32, &input.describe()).map_err(&io)?;
    for r in input.records().map_err(&io)? {
        w.push(&r.map_err(&io)?.io).map_err(&io)?;
    }
    w.finish().map_err(&io)?;
    annotate_next_write(&path).map_err(&io)?;
    let mut annotated = Input::path(&path, None, false);
    annotated.filters.split.block_size_bytes = input.filters.split.block_size_bytes;
    Ok(annotated)
}

/// Replays the writes of `input` under `spec`. `progress` is called now and then with the
/// number of user block writes so far.
pub fn replay(input: &Input, spec: &ReplaySpec, progress: &mut dyn FnMut(u64)) -> Result<ReplayReport> {
    spec.validate()?;
    let io = LabError::input(input);
    // Sizing pass: distinct written blocks.
    let mut hll = DistinctCounter::new();
    for r in input.writes().map_err(&io)? {
        hll.add(r.map_err(&io)?.io.key());
    }
    let distinct_estimate = (hll.estimate() as f64 * 1.04) as u64 + 16;
    let opened = spec.device.as_deref().map(zonekit_device::open_path).transpose()?;
    let zone_blocks = match &opened {
        Some(o) => o.device.geometry().zone_capacity_blocks,
        None => preset::find(&spec.preset).expect("validated").geometry.zone_capacity_blocks,
    };
    let provisional_capacity = match (&opened, spec.utilization) {
        (Some(o), _) => {
            let g = o.device.geometry();
            (g.zone_count - g.conventional_zone_count) as u64 * g.zone_capacity_blocks
        }
        (None, Some(u)) if spec.config.capacity == CapacityMode::Fixed => (distinct_estimate as f64 / u) as u64,
        _ => (distinct_estimate as f64 / (1.0 - spec.config.gc_threshold)) as u64,
    };
    let env = PolicyEnv { zone_blocks, capacity_blocks: provisional_capacity };
    let placement = placement::create(&spec.placement, &spec.params, env)?;
    let victim = victim::create(&spec.victim, spec.seed)?;
    let temp = tempdir()?;
    let source = if placement.needs_future() { with_future(input, &temp) } else { Ok(input.clone()) };
    let source = source.inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&temp);
    })?;
    let started = Instant::now();
    let expected = distinct_estimate as usize;
    let (g, run) = match opened {
        Some(o) => {
            let g = *o.device.geometry();
            (g, run_ftl(Ftl::new(o.device, placement, victim, spec.config, expected)?, &source, progress, |_| None))
        }
        None => {
            let (g, behavior, flash) = geometry_for(spec, distinct_estimate, placement.classes())?;
            let mode = if spec.config.store_data { StorageMode::Data } else { StorageMode::MetadataOnly };
            let mem = MemDevice::new(g, behavior, mode)?;
            let run = if spec.timing {
                let dev = TimedDevice::new(mem, flash, 32)?;
                run_ftl(Ftl::new(dev, placement, victim, spec.config, expected)?, &source, progress, |d| Some(d.report().elapsed_ns as f64 / 1e9))
            } else {
                run_ftl(Ftl::new(mem, placement, victim, spec.config, expected)?, &source, progress, |_| None)
            };
            (g, run)
        }
    };
    let _ = std::fs::remove_dir_all(&temp);
    let Run { stats, zones, device_time_s, bytes_per_block, distinct, reads } = run?;
    let wall_s = started.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&temp);
    let hist = stats.gp_histogram(None);
    let resets: Vec<u64> = zones.iter().map(|z| z.resets).collect();
    let block_gib = g.block_size_bytes as f64 / (1u64 << 30) as f64;
    let reclaimed: u64 = hist.iter().sum();
    Ok(ReplayReport {
        workload: input.describe(),
        placement: spec.placement.clone(),
        victim: spec.victim.clone(),
        capacity_mode: spec.config.capacity,
        zones: g.zone_count,
        zone_mib: g.zone_capacity_bytes() as f64 / (1 << 20) as f64,
        distinct_blocks: distinct,
        user_blocks: stats.user_blocks,
        gc_blocks: stats.gc_blocks,
        waf: stats.waf(),
        gc_count: stats.gc_count,
        user_gib: stats.user_blocks as f64 * block_gib,
        gc_gib: stats.gc_blocks as f64 * block_gib,
        reclaimed_gp_mean: (reclaimed > 0).then(|| hist.iter().enumerate().map(|(i, n)| i as f64 / 100.0 * *n as f64).sum::<f64>() / reclaimed as f64),
        reclaimed_gp_q1_median_q3: gp_quantile(&hist, 0.25).map(|q1| [q1, gp_quantile(&hist, 0.5).unwrap(), gp_quantile(&hist, 0.75).unwrap()]),
        user_blocks_by_class: stats.user_blocks_by_class.clone(),
        gc_blocks_by_class: stats.gc_blocks_by_class.clone(),
        gp_histogram: hist.to_vec(),
        gp_histogram_by_class: stats.reclaimed_gp_by_class.iter().map(|h| h.to_vec()).collect(),
        resets_min_max_mean: (resets.iter().copied().min().unwrap_or(0), resets.iter().copied().max().unwrap_or(0), resets.iter().sum::<u64>() as f64 / resets.len().max(1) as f64),
        read_blocks: reads,
        device_time_s,
        wall_s,
        blocks_per_s: stats.user_blocks as f64 / wall_s.max(1e-9),
        ftl_bytes_per_block: bytes_per_block,
    })
}

/// What one FTL run left behind, whatever device it ran on.
struct Run {
    stats: zonekit_ftl::FtlStats,
    zones: Vec<zonekit_ftl::ZoneInfo>,
    device_time_s: Option<f64>,
    bytes_per_block: f64,
    distinct: u64,
    reads: u64,
}

fn run_ftl<D: ZonedDevice>(mut ftl: Ftl<D>, source: &Input, progress: &mut dyn FnMut(u64), device_time_s: impl Fn(&D) -> Option<f64>) -> Result<Run> {
    let reads = drive(&mut ftl, source, progress)?.reads;
    Ok(Run {
        stats: ftl.stats().clone(),
        zones: ftl.zones().to_vec(),
        device_time_s: device_time_s(ftl.device()),
        bytes_per_block: ftl.bytes_per_block(),
        distinct: ftl.live_blocks(),
        reads,
    })
}

/// The FTL as the harness drives it: the dense id found ahead of a write is its hint.
impl<D: ZonedDevice> BlockEngine for Ftl<D> {
    type Hint = Option<u32>;

    #[inline]
    fn prefetch(&mut self, key: u64) {
        self.prefetch_key(key);
    }

    #[inline]
    fn resolve(&mut self, key: u64) -> Option<u32> {
        self.prefetch_block(key)
    }

    #[inline]
    fn write(&mut self, key: u64, hint: Option<u32>, time_us: u64, next_write: u64) -> Result<()> {
        Ok(self.write_resolved(key, hint, None, time_us, next_write)?)
    }
}

fn tempdir() -> Result<std::path::PathBuf> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("zonekit-replay-{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).map_err(LabError::io(&dir))?;
    Ok(dir)
}

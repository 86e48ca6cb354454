//! Replaying a block stream through the FTL on an emulated device, and what it measured.

use std::time::Instant;

use serde::Serialize;
use zonekit_device::timing::TimedDevice;
use zonekit_device::{preset, Geometry, MemDevice, StorageMode, ZoneBehavior, ZonedDevice};
use zonekit_trace::binary::{annotate_next_write, BinaryWriter};
use zonekit_trace::input::Input;
use zonekit_trace::{DistinctCounter, Op};

use crate::engine::{gp_quantile, CapacityMode, Ftl, FtlConfig, FtlError};
use crate::placement::{self, Params, PolicyEnv};
use crate::victim;

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
    pub seed: u64,
}

impl Default for ReplaySpec {
    fn default() -> Self {
        ReplaySpec {
            placement: "bhbdp".into(),
            params: Params::new(),
            victim: "cbe".into(),
            config: FtlConfig::default(),
            preset: "femu-zns".into(),
            utilization: Some(0.85),
            timing: false,
            seed: 1,
        }
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

fn geometry_for(spec: &ReplaySpec, distinct: u64, classes: usize) -> Result<(Geometry, ZoneBehavior, zonekit_device::timing::FlashConfig), FtlError> {
    let p = preset::find(&spec.preset).ok_or_else(|| FtlError::Config(format!("unknown device preset {:?}; valid: {}", spec.preset, preset::names().join(", "))))?;
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
                return Err(FtlError::Config(format!("utilisation {u} must be in (0, 1)")));
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
fn with_future(input: &Input, dir: &std::path::Path) -> Result<Input, FtlError> {
    let path = dir.join("oracle.zkt");
    let io = |e: zonekit_trace::TraceError| FtlError::Config(e.to_string());
    let mut w = BinaryWriter::create(&path, input.filters.split.block_size_bytes as u32, &input.describe()).map_err(io)?;
    for r in input.records().map_err(io)? {
        w.push(&r.map_err(io)?.io).map_err(io)?;
    }
    w.finish().map_err(io)?;
    annotate_next_write(&path).map_err(io)?;
    let mut annotated = Input::path(&path, None, false);
    annotated.filters.split.block_size_bytes = input.filters.split.block_size_bytes;
    Ok(annotated)
}

/// Replays the writes of `input` under `spec`. `progress` is called now and then with the
/// number of user block writes so far.
pub fn replay(input: &Input, spec: &ReplaySpec, progress: &mut dyn FnMut(u64)) -> Result<ReplayReport, FtlError> {
    let io = |e: zonekit_trace::TraceError| FtlError::Config(e.to_string());
    // Sizing pass: distinct written blocks.
    let mut hll = DistinctCounter::new();
    for r in input.writes().map_err(io)? {
        hll.add(r.map_err(io)?.io.key());
    }
    let distinct_estimate = (hll.estimate() as f64 * 1.04) as u64 + 16;
    let p0 = preset::find(&spec.preset).ok_or_else(|| FtlError::Config(format!("unknown device preset {:?}; valid: {}", spec.preset, preset::names().join(", "))))?;
    let mut params = spec.params.clone();
    let provisional_capacity = match spec.utilization {
        Some(u) if spec.config.capacity == CapacityMode::Fixed => (distinct_estimate as f64 / u) as u64,
        _ => (distinct_estimate as f64 / (1.0 - spec.config.gc_threshold)) as u64,
    };
    let env = PolicyEnv { zone_blocks: p0.geometry.zone_capacity_blocks, capacity_blocks: provisional_capacity };
    let placement = placement::create(&spec.placement, &mut params, env).map_err(FtlError::Config)?;
    if let Some(k) = params.keys().next() {
        return Err(FtlError::Config(format!("placement {} has no parameter {k:?}", spec.placement)));
    }
    let victim = victim::create(&spec.victim, spec.seed).map_err(FtlError::Config)?;
    let (g, behavior, flash) = geometry_for(spec, distinct_estimate, placement.classes())?;
    let temp = tempdir()?;
    let source = if placement.needs_future() { with_future(input, &temp)? } else { input.clone() };
    let mode = if spec.config.store_data { StorageMode::Data } else { StorageMode::MetadataOnly };
    let mem = MemDevice::new(g, behavior, mode)?;
    let started = Instant::now();
    let (stats, zones, device_time_s, bytes_per_block, distinct, reads) = if spec.timing {
        let dev = TimedDevice::new(mem, flash, 32)?;
        let mut ftl = Ftl::new(dev, placement, victim, spec.config, distinct_estimate as usize)?;
        let reads = drive(&mut ftl, &source, progress)?;
        let t = ftl.device().report().elapsed_ns as f64 / 1e9;
        (ftl.stats().clone(), ftl.zones().to_vec(), Some(t), ftl.bytes_per_block(), ftl.live_blocks(), reads)
    } else {
        let mut ftl = Ftl::new(mem, placement, victim, spec.config, distinct_estimate as usize)?;
        let reads = drive(&mut ftl, &source, progress)?;
        (ftl.stats().clone(), ftl.zones().to_vec(), None, ftl.bytes_per_block(), ftl.live_blocks(), reads)
    };
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

fn drive<D: ZonedDevice>(ftl: &mut Ftl<D>, input: &Input, progress: &mut dyn FnMut(u64)) -> Result<u64, FtlError> {
    let io = |e: zonekit_trace::TraceError| FtlError::Config(e.to_string());
    // A small window of upcoming writes: their map entries are fetched LOOKAHEAD records
    // ahead and their block records half as far ahead, so the misses overlap.
    const LOOKAHEAD: usize = 16;
    const RESOLVE_AT: usize = LOOKAHEAD / 2;
    // (key, time, next write, dense id once resolved)
    let mut window: std::collections::VecDeque<(u64, u64, u64, Option<u32>)> = std::collections::VecDeque::with_capacity(LOOKAHEAD + 1);
    let mut reads = 0u64;
    let mut n = 0u64;
    let mut records = input.records().map_err(io)?;
    loop {
        while window.len() < LOOKAHEAD {
            match records.next() {
                Some(r) => {
                    let r = r.map_err(io)?;
                    if r.io.op == Op::Read {
                        reads += 1;
                        continue;
                    }
                    let key = r.io.key();
                    ftl.prefetch_key(key);
                    window.push_back((key, r.io.time_us, r.next_write, None));
                }
                None => break,
            }
        }
        if let Some(w) = window.get_mut(RESOLVE_AT) {
            w.3 = ftl.prefetch_block(w.0);
        }
        let Some((key, time_us, next_write, id)) = window.pop_front() else { break };
        ftl.write_resolved(key, id, None, time_us, next_write)?;
        n += 1;
        if n & 0xF_FFFF == 0 {
            progress(n);
        }
    }
    progress(n);
    Ok(reads)
}

fn tempdir() -> Result<std::path::PathBuf, FtlError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!("zonekit-replay-{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).map_err(|e| FtlError::Config(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

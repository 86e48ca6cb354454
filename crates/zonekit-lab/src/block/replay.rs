//! Replaying a trace or workload through the block FTL on an emulated device, and what it
//! measured: the trace staged once ([`crate::block::stage`]: one pass into a replay stream of dense
//! ids and times, or that stream from the cache; the distinct-block estimate the device is
//! sized from; future knowledge when the placement needs it), then the replay.

use std::time::Instant;

use zonekit_base::{DistinctCounter, LogHistogram};
use zonekit_device::timing::TimedDevice;
use zonekit_device::{preset, Geometry, MemDevice, StorageMode, ZoneBehavior, ZonedDevice};
use zonekit_ftl::engine::gp_quantile;
use zonekit_ftl::placement::{self, Placement, PolicyEnv};
use zonekit_ftl::{victim, CapacityMode, Ftl, FtlError, GcTrigger};
use zonekit_trace::input::Input;

use crate::block::driver::{drive, BlockEngine, Series, SeriesPoint};
use crate::block::spec::{zone_blocks_for, NEARLY_LIVE_GP, UTILIZATION_SHORTFALL_WARN};
pub use crate::block::spec::{ReplayReport, ReplaySpec, SsdSummary, DEFAULT_PRESET, DEFAULT_UTILIZATION};
use crate::block::stage::{prepare_with, with_future, Prepared, Staged};
use crate::harness::error::{LabError, Result};
use crate::harness::interface::Interface;
use crate::harness::progress::Progress;

/// Builds a placement the caller wrote, once the device it runs on is known.
pub type MakeCustomPlacement = Box<dyn FnOnce(PolicyEnv) -> Box<dyn Placement>>;

/// Policies the caller built instead of naming them (e.g. written in Python): the spec's
/// `placement` and `victim` then only name them in the report, and its parameters are not read.
#[derive(Default)]
pub struct CustomPolicies {
    pub placement: Option<MakeCustomPlacement>,
    pub victim: Option<Box<dyn victim::Victim>>,
}

impl CustomPolicies {
    fn check_names(&self, spec: &ReplaySpec) -> Result<()> {
        if self.placement.is_none() {
            placement::find(&spec.placement, &spec.params)?;
        }
        if self.victim.is_none() {
            victim::find(&spec.victim)?;
            spec.check_threshold_is_read()?;
        }
        Ok(())
    }
}

/// Open zones a sized device makes room for when its preset sets no open or active limit.
pub const RESERVED_OPEN_ZONES_UNLIMITED: u32 = 16;

/// Zones a sized device holds beyond the data: an open zone and a GC destination per class the
/// device can keep open, plus two victims in flight. It depends on the device, never on the
/// policy, so every policy in one comparison runs on the same device (a policy needing more
/// open zones than that is refused, not given a larger device).
fn reserved_zones(g: &Geometry, placement: &str, classes: usize) -> Result<u64> {
    let open = g.open_zones_max.into_iter().chain(g.active_zones_max).min().unwrap_or(RESERVED_OPEN_ZONES_UNLIMITED);
    if classes > open as usize {
        return Err(LabError::Usage(format!(
            "placement {placement} writes to {classes} open zones; a sized device makes room for {open}: use a preset with more open zones or --device"
        )));
    }
    Ok(2 * open as u64 + 2)
}

fn geometry_for(spec: &ReplaySpec, distinct: u64, classes: usize) -> Result<(Geometry, ZoneBehavior, zonekit_device::timing::FlashConfig)> {
    let p = preset::find(&spec.preset).ok_or_else(|| LabError::Usage(format!("unknown device preset {:?}; valid: {}", spec.preset, preset::names().join(", "))))?;
    let mut g = p.geometry;
    if let Some(mib) = spec.zone_mib {
        // Zone size = capacity; the preset's own size (no utilisation) is kept in bytes.
        let blocks = zone_blocks_for(mib, g.block_size_bytes)?;
        let preset_blocks = g.zone_count as u64 * g.zone_capacity_blocks;
        g.zone_size_blocks = blocks;
        g.zone_capacity_blocks = blocks;
        g.zone_count = u32::try_from(preset_blocks.div_ceil(blocks).max(1)).map_err(|_| LabError::Usage(format!("--zone-mib {mib}: too many zones")))?;
    }
    // Zone counts are worked out in f64 and checked before they become a u32: `as u32`
    // saturated and the additions after it wrapped (--gc-threshold 0.99999999999999 with
    // --unbounded made a device of 23 zones), and a tiny --utilization was truncated mod 2^32.
    match (spec.config.capacity, spec.utilization) {
        (CapacityMode::Unbounded, _) => {
            let extra = reserved_zones(&g, &spec.placement, classes)?;
            // The log grows to about working set / (1 − threshold); leave room for the open
            // zones and for the victims in flight.
            let log = distinct as f64 / (1.0 - spec.config.gc_threshold) * 1.25;
            let zones = (log / g.zone_capacity_blocks as f64).ceil() + extra as f64 + 8.0;
            g.zone_count = sized_zone_count(&format!("--gc-threshold {:?} with --unbounded", spec.config.gc_threshold), zones, &g)?;
        }
        (CapacityMode::Fixed, Some(u)) => {
            if !(u > 0.0 && u < 1.0) {
                return Err(LabError::Usage(format!("--utilization {u:?}: utilisation {u} must be in (0, 1)")));
            }
            let extra = reserved_zones(&g, &spec.placement, classes)?;
            let data_zones = (distinct as f64 / u / g.zone_capacity_blocks as f64).ceil();
            let zones = (data_zones + extra as f64).max(extra as f64 + 4.0);
            g.zone_count = sized_zone_count(&format!("--utilization {u:?}"), zones, &g)?;
        }
        (CapacityMode::Fixed, None) => g.zone_count = sized_zone_count(&format!("--preset {} --preset-size", spec.preset), g.zone_count as f64, &g)?,
    }
    g.conventional_zone_count = 0;
    g.validate()?;
    Ok((g, p.behavior, p.flash))
}

/// The zone count a sized device needs (`zones`, from `flags`), refused with the count when the
/// FTL cannot map that many blocks or the machine cannot hold the tables.
fn sized_zone_count(flags: &str, zones: f64, g: &Geometry) -> Result<u32> {
    let zone_mib = g.zone_capacity_bytes() as f64 / (1 << 20) as f64;
    let blocks = zones * g.zone_capacity_blocks as f64;
    if !(blocks <= zonekit_ftl::engine::PHYSICAL_BLOCKS_MAX as f64) {
        return Err(LabError::Usage(format!(
            "{flags}: the device would need {zones:.0} zones of {zone_mib} MiB ({blocks:.0} blocks); the FTL maps at most {} blocks",
            zonekit_ftl::engine::PHYSICAL_BLOCKS_MAX
        )));
    }
    let zone_count = zones as u32; // Fits: zones ≤ blocks < 2^32.
    let needed = zonekit_device::emu::zone_memory_bytes(zone_count as u64) + zonekit_ftl::engine::slot_memory_bytes(blocks as u64);
    if let Some(total) = zonekit_base::mem::beyond_memory(needed) {
        return Err(LabError::Usage(format!(
            "{flags}: the device would need {zone_count} zones of {zone_mib} MiB, whose tables take {needed} bytes of memory; the machine has {total}"
        )));
    }
    Ok(zone_count)
}

/// Replays the writes of `input` under `spec`. `progress` is called now and then with the
/// number of user block writes so far.
pub fn replay(input: &Input, spec: &ReplaySpec, progress: &mut dyn Progress) -> Result<ReplayReport> {
    replay_with(input, spec, CustomPolicies::default(), progress)
}

/// [`replay`] with policies the caller built ([`CustomPolicies`]) in place of named ones.
pub fn replay_with(input: &Input, spec: &ReplaySpec, custom: CustomPolicies, progress: &mut dyn Progress) -> Result<ReplayReport> {
    spec.validate_settings()?;
    custom.check_names(spec)?;
    let temp = TempDir::new()?;
    let started = Instant::now();
    let prepared = prepare_with(input, temp.path(), progress)?;
    let stage_s = started.elapsed().as_secs_f64();
    let mut report = replay_prepared(prepared, spec, custom, temp.path(), progress)?;
    report.workload = input.describe();
    report.stage_s += stage_s;
    Ok(report)
}

/// [`replay`] of a trace already staged (a sweep stages its input once for every run).
/// Temporary files (an annotated copy for the oracles) go to `dir`.
pub fn replay_staged(staged: &Staged, spec: &ReplaySpec, dir: &std::path::Path, progress: &mut dyn Progress) -> Result<ReplayReport> {
    replay_prepared(Prepared::Staged(staged.clone()), spec, CustomPolicies::default(), dir, progress)
}

/// [`replay`] of a trace ready for it: staged, or numbered as it is replayed.
fn replay_prepared(trace: Prepared, spec: &ReplaySpec, custom: CustomPolicies, dir: &std::path::Path, progress: &mut dyn Progress) -> Result<ReplayReport> {
    spec.validate_settings()?;
    custom.check_names(spec)?;
    let started_stage = Instant::now();
    let distinct_estimate = DistinctCounter::with_margin(trace.distinct_estimate());
    let opened = spec.device.as_deref().map(zonekit_device::open_path).transpose()?;
    let zone_blocks = match &opened {
        Some(o) => o.device.geometry().zone_capacity_blocks,
        None => {
            let g = preset::find(&spec.preset).expect("validated").geometry;
            match spec.zone_mib {
                Some(mib) => zone_blocks_for(mib, g.block_size_bytes)?,
                None => g.zone_capacity_blocks,
            }
        }
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
    let placement = match custom.placement {
        Some(make) => make(env),
        None => placement::create(&spec.placement, &spec.params, env)?,
    };
    let victim = match custom.victim {
        Some(v) => v,
        None => victim::create(&spec.victim, spec.seed)?,
    };
    let trace = if placement.needs_future() { Prepared::Staged(with_future(trace.into_staged()?, dir)?) } else { trace };
    if spec.interface != Interface::Zns {
        return replay_on_ssd(trace, spec, placement, started_stage, progress);
    }
    let stage_s = started_stage.elapsed().as_secs_f64();
    let started = Instant::now();
    let blocks = trace.blocks_hint();
    let (g, run) = match opened {
        Some(o) => {
            let g = *o.device.geometry();
            // A device the FTL cannot take (too few zones, a zone not empty) is the request's
            // fault: name the device.
            let path = spec.device.as_deref().expect("opened from --device").display();
            let ftl = Ftl::new_dense(o.device, placement, victim, spec.config, blocks).map_err(|e| match e {
                FtlError::Config(_) | FtlError::TooManyClasses { .. } => LabError::Usage(format!("--device {path}: {e}")),
                e => e.into(),
            })?;
            (g, run_ftl(ftl, trace, progress))
        }
        None => {
            let (g, behavior, flash) = geometry_for(spec, distinct_estimate, placement.classes())?;
            let mode = if spec.config.store_data { StorageMode::Data } else { StorageMode::MetadataOnly };
            let mem = MemDevice::new(g, behavior, mode)?;
            let run = if spec.timing {
                let dev = TimedDevice::new(mem, flash, 32)?;
                let mut timed = HostTimed { ftl: Ftl::new_dense(dev, placement, victim, spec.config, blocks)?, latency: LogHistogram::default() };
                let mut series = Series::new();
                let staged = drive(&mut timed, trace, progress, &mut series)?;
                let HostTimed { ftl, latency } = timed;
                finished(ftl, staged, series, |d| Some((d.report().elapsed_ns as f64 / 1e9, latency.quantile(0.99) as f64 / 1e3)))
            } else {
                {
                    let mut ftl = Ftl::new_dense(mem, placement, victim, spec.config, blocks)?;
                    // Untimed: the device's command sizes do not matter, so it may hear of the
                    // blocks in batches (metadata only; with data each block is sent).
                    if !spec.config.store_data {
                        ftl.defer_appends()?;
                    }
                    run_ftl(ftl, trace, progress)
                }
            };
            (g, run)
        }
    };
    let Run { stats, zones, timed, bytes_per_block, distinct, staged, series } = run?;
    let wall_s = started.elapsed().as_secs_f64();
    let hist = stats.gp_histogram(None);
    let resets: Vec<u64> = zones.iter().map(|z| z.resets).collect();
    let block_gib = g.block_size_bytes as f64 / (1u64 << 30) as f64;
    let reclaimed: u64 = hist.iter().sum();
    Ok(ReplayReport {
        workload: staged.source.clone(),
        interface: spec.interface.name(),
        placement: spec.placement.clone(),
        victim: spec.victim.clone(),
        capacity_mode: spec.config.capacity,
        gc_trigger: match spec.config.capacity {
            CapacityMode::Fixed => spec.config.trigger.name().into(),
            CapacityMode::Unbounded => "unbounded-log".into(),
        },
        zones: g.zone_count,
        zone_mib: g.zone_capacity_bytes() as f64 / (1 << 20) as f64,
        distinct_blocks: distinct,
        user_blocks: stats.user_blocks,
        gc_blocks: stats.gc_blocks,
        waf: stats.waf(),
        host_waf: stats.waf(),
        device_waf: 1.0,
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
        read_blocks: staged.reads,
        device_time_s: timed.map(|t| t.0),
        write_latency_us_p99: timed.map(|t| t.1),
        ssd: None,
        stage_s,
        wall_s,
        blocks_per_s: stats.user_blocks as f64 / wall_s.max(1e-9),
        ftl_bytes_per_block: bytes_per_block,
        series,
        warnings: Vec::new(),
    }
    .warn_degenerate(spec, &g))
}

/// What one FTL run left behind, whatever device it ran on.
struct Run {
    stats: zonekit_ftl::FtlStats,
    zones: Vec<zonekit_ftl::ZoneInfo>,
    /// Device seconds and write latency p99 (µs) of a timed run.
    timed: Option<(f64, f64)>,
    bytes_per_block: f64,
    distinct: u64,
    /// The replay stream the run read or wrote.
    staged: Staged,
    series: Vec<SeriesPoint>,
}

fn run_ftl<D: ZonedDevice>(mut ftl: Ftl<D>, trace: Prepared, progress: &mut dyn Progress) -> Result<Run> {
    let mut series = Series::new();
    let staged = drive(&mut ftl, trace, progress, &mut series)?;
    finished(ftl, staged, series, |_| None)
}

/// What an FTL run left behind, once its device has everything: `timed` reads the device's
/// time and latency (after the sync) when the run was timed.
fn finished<D: ZonedDevice>(mut ftl: Ftl<D>, staged: Staged, series: Series, timed: impl FnOnce(&D) -> Option<(f64, f64)>) -> Result<Run> {
    ftl.sync_device()?;
    Ok(Run {
        stats: ftl.stats().clone(),
        zones: ftl.zones().to_vec(),
        timed: timed(ftl.device()),
        bytes_per_block: ftl.bytes_per_block(),
        distinct: ftl.live_blocks(),
        staged,
        series: series.points,
    })
}

/// A timed FTL as the harness drives it, timing each user write as the host sees it: from the
/// submission of the first device operation it causes to the completion of the last (the GC
/// it runs before its own append included) — what an SSD's host write latency is.
struct HostTimed<D: ZonedDevice> {
    ftl: Ftl<TimedDevice<D>>,
    latency: LogHistogram,
}

impl<D: ZonedDevice> BlockEngine for HostTimed<D> {
    #[inline]
    fn prefetch(&mut self, id: u32) {
        self.ftl.prefetch_id(id);
    }

    #[inline]
    fn prefetch_pointed(&mut self, id: u32) {
        self.ftl.prefetch_slot(id);
    }

    fn sample(&self) -> Option<SeriesPoint> {
        self.ftl.sample()
    }

    fn write(&mut self, id: u32, time_us: u64, next_write: u64) -> Result<()> {
        self.ftl.device_mut().mark();
        self.ftl.write_dense(id, time_us, next_write)?;
        if let Some((submit, done)) = self.ftl.device().since_mark() {
            self.latency.record(done.saturating_sub(submit));
        }
        Ok(())
    }
}

/// The FTL as the harness drives it: by dense block id.
impl<D: ZonedDevice> BlockEngine for Ftl<D> {
    #[inline]
    fn prefetch(&mut self, id: u32) {
        self.prefetch_id(id);
    }

    #[inline]
    fn prefetch_pointed(&mut self, id: u32) {
        self.prefetch_slot(id);
    }

    #[inline]
    fn write(&mut self, id: u32, time_us: u64, next_write: u64) -> Result<()> {
        Ok(self.write_dense(id, time_us, next_write)?)
    }

    fn sample(&self) -> Option<SeriesPoint> {
        let s = self.stats();
        Some(SeriesPoint { writes: s.user_blocks, user_blocks: s.user_blocks, gc_blocks: s.gc_blocks, gc_count: s.gc_count })
    }
}

/// A replay through the placement's classes onto an FDP or conventional SSD model of the ZNS
/// device's raw capacity ([`crate::harness::interface`]): the host writes in place, the device collects.
fn replay_on_ssd(
    trace: Prepared,
    spec: &ReplaySpec,
    placement: Box<dyn zonekit_ftl::placement::Placement>,
    started_stage: Instant,
    progress: &mut dyn Progress,
) -> Result<ReplayReport> {
    // The ZNS device this replay would have had (sized from the same estimate): its raw
    // capacity is the SSD's. The SSD's logical space is the trace's blocks, counted exactly.
    let sized_from = DistinctCounter::with_margin(trace.distinct_estimate());
    let (g, _, flash) = geometry_for(spec, sized_from, 1)?;
    let staged = trace.into_staged()?;
    let stage_s = started_stage.elapsed().as_secs_f64();
    let logical = staged.distinct.max(1);
    let ru_blocks = g.zone_capacity_blocks;
    let raw = g.zone_count as u64 * ru_blocks;
    let i = spec.interface;
    // Spare such that the physical space is exactly the zones' (a hair under raw / logical - 1,
    // so rounding up to whole units cannot add one).
    let spare = ssd_spare(raw, logical);
    if !(spare > 0.0 && spare < 1.0) {
        return Err(LabError::Usage(format!(
            "--interface {i}: the ZNS device this run compares with has {} zones of {} MiB ({raw} blocks), {} of them kept for open zones and GC, for the trace's {logical} blocks: a spare of {spare:.3}, and an SSD model takes a spare in (0, 1); {}",
            g.zone_count,
            g.zone_capacity_bytes() >> 20,
            reserved_zones(&g, &spec.placement, 1)?,
            smaller_zone_advice(spec, sized_from, logical)
        )));
    }
    let mut cfg = zonekit_ssd::SsdConfig::conventional(logical, spare, ru_blocks);
    cfg.victim = spec.victim.clone();
    cfg.seed = spec.seed;
    if let Interface::Fdp { handles, ruh_type } = i {
        cfg.handles = vec![ruh_type; handles as usize];
    }
    if spec.timing {
        cfg.flash = Some(flash);
    }
    debug_assert_eq!(cfg.physical_blocks(), raw, "the SSD's raw capacity is the zones'");
    let ssd = zonekit_ssd::Ssd::new(cfg).map_err(|e| LabError::Usage(format!("--interface {i}: {e}")))?;
    let mut host = zonekit_ftl::hinted::HintedFtl::new(ssd, placement, logical as usize)?;
    let started = Instant::now();
    let mut series = Series::new();
    let staged = drive(&mut host, Prepared::Staged(staged), progress, &mut series)?;
    let wall_s = started.elapsed().as_secs_f64();
    let ssd = host.ssd();
    let c = ssd.counters();
    let hist = &host.stats().reclaimed_gp;
    let reclaimed: u64 = hist.iter().sum();
    let block_gib = g.block_size_bytes as f64 / (1u64 << 30) as f64;
    let timing = ssd.timing();
    Ok(ReplayReport {
        workload: staged.source.clone(),
        interface: i.name(),
        placement: spec.placement.clone(),
        victim: spec.victim.clone(),
        capacity_mode: spec.config.capacity,
        gc_trigger: "device".into(),
        zones: g.zone_count,
        zone_mib: g.zone_capacity_bytes() as f64 / (1 << 20) as f64,
        distinct_blocks: logical,
        user_blocks: c.host_blocks,
        gc_blocks: c.gc_blocks,
        waf: c.waf(),
        host_waf: 1.0,
        device_waf: c.waf(),
        gc_count: c.erases,
        user_gib: c.host_blocks as f64 * block_gib,
        gc_gib: c.gc_blocks as f64 * block_gib,
        reclaimed_gp_mean: (reclaimed > 0).then(|| hist.iter().enumerate().map(|(i, n)| i as f64 / 100.0 * *n as f64).sum::<f64>() / reclaimed as f64),
        reclaimed_gp_q1_median_q3: gp_quantile(hist, 0.25).map(|q1| [q1, gp_quantile(hist, 0.5).unwrap(), gp_quantile(hist, 0.75).unwrap()]),
        user_blocks_by_class: host.stats().user_blocks_by_class.clone(),
        gc_blocks_by_class: c.gc_blocks_by_handle.clone(),
        gp_histogram: hist.clone(),
        gp_histogram_by_class: Vec::new(),
        resets_min_max_mean: ssd.wear_min_max_mean(),
        read_blocks: staged.reads,
        device_time_s: timing.as_ref().map(|t| t.elapsed_s),
        write_latency_us_p99: timing.as_ref().map(|t| t.write_latency_us_p99),
        ssd: Some(SsdSummary {
            handles: i.handles(),
            handle_type: ssd.config().handles.first().map(|t| t.name().to_string()),
            class_to_handle: host.fold().to_vec(),
            logical_blocks: logical,
            physical_blocks: ssd.config().physical_blocks(),
            spare: ssd.config().spare,
            reclaim_unit_blocks: ru_blocks,
            host_blocks_by_handle: c.host_blocks_by_handle.clone(),
            gc_blocks_by_handle: c.gc_blocks_by_handle.clone(),
            invalid_placements: c.invalid_placements,
        }),
        stage_s,
        wall_s,
        blocks_per_s: c.host_blocks as f64 / wall_s.max(1e-9),
        ftl_bytes_per_block: host.bytes_per_block(),
        series: series.points,
        warnings: Vec::new(),
    }
    .warn_degenerate(spec, &g))
}

/// The spare of an SSD whose physical space is exactly `raw` blocks for `logical` blocks of
/// logical space (a hair under raw / logical − 1, so rounding up to whole units cannot add one).
fn ssd_spare(raw: u64, logical: u64) -> f64 {
    raw as f64 / logical as f64 * (1.0 - 1e-12) - 1.0
}

/// The largest power-of-two zone size (MiB) below the one `spec` gives a working set of
/// `distinct` blocks whose device (sized as the run's was) `fits`: the advice for a working set
/// too small for the device's fixed reserve of zones.
fn largest_zone_mib_that(spec: &ReplaySpec, distinct: u64, fits: impl Fn(&Geometry) -> bool) -> Option<u64> {
    let zone_mib = geometry_for(spec, distinct, 1).map_or(1, |(g, _, _)| g.zone_capacity_bytes() >> 20);
    (0..16).rev().map(|k| 1u64 << k).filter(|&mib| mib < zone_mib).find(|&mib| {
        let spec = ReplaySpec { zone_mib: Some(mib), ..spec.clone() };
        geometry_for(&spec, distinct, 1).is_ok_and(|(g, _, _)| fits(&g))
    })
}

/// Advice that works for a trace too small for the ZNS device's fixed reserve of zones, so
/// that the SSD beside it would get a spare of 1 or more.
fn smaller_zone_advice(spec: &ReplaySpec, distinct: u64, logical: u64) -> String {
    let spare_of = |g: &Geometry| ssd_spare(g.zone_count as u64 * g.zone_capacity_blocks, logical);
    match largest_zone_mib_that(spec, distinct, |g| (0.0..1.0).contains(&spare_of(g)) && spare_of(g) > 0.0) {
        Some(mib) => format!("use smaller zones, e.g. --zone-mib {mib}, or a larger working set"),
        None => "use a larger working set (even 1 MiB zones leave the SSD too much spare)".into(),
    }
}

/// A placement on an SSD, as the harness drives it: by dense block id.
impl BlockEngine for zonekit_ftl::hinted::HintedFtl {
    #[inline]
    fn prefetch(&mut self, id: u32) {
        self.prefetch_id(id);
    }

    #[inline]
    fn prefetch_pointed(&mut self, id: u32) {
        zonekit_ftl::hinted::HintedFtl::prefetch_pointed(self, id);
    }

    #[inline]
    fn write(&mut self, id: u32, time_us: u64, next_write: u64) -> Result<()> {
        Ok(self.write_dense(id, time_us, next_write)?)
    }

    fn sample(&self) -> Option<SeriesPoint> {
        let c = self.ssd().counters();
        Some(SeriesPoint { writes: c.host_blocks, user_blocks: c.host_blocks, gc_blocks: c.gc_blocks, gc_count: c.erases })
    }
}

/// A temporary directory, removed with everything in it when dropped.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    pub fn new() -> Result<TempDir> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!("zonekit-replay-{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
        std::fs::create_dir_all(&dir).map_err(LabError::io(&dir))?;
        Ok(TempDir(dir))
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl ReplayReport {
    /// Fills [`ReplayReport::warnings`]: a run with no user writes, one where GC never ran (so WAF
    /// says nothing of the placement), one whose GC copied almost-live zones, and a device the
    /// working set fills far less than `--utilization` asked (its fixed reserve of zones for open
    /// zones and GC dwarfs a small working set).
    fn warn_degenerate(mut self, spec: &ReplaySpec, g: &Geometry) -> Self {
        let mut w = Vec::new();
        if self.user_blocks == 0 {
            w.push("no block was written: the input has no writes, so every figure here is over zero samples".to_string());
        } else if self.gc_count == 0 {
            w.push(format!(
                "no GC ran ({} user writes, {} distinct blocks): WAF {:.3} says nothing about the placement; replay more writes (about 3× the working set or more){}",
                self.user_blocks,
                self.distinct_blocks,
                self.waf,
                if self.gc_trigger == GcTrigger::FreeZones.name() || self.gc_trigger == "device" { " or raise --utilization" } else { " or lower --gc-threshold" }
            ));
        }
        if let Some([_, median, _]) = self.reclaimed_gp_q1_median_q3 {
            if median < NEARLY_LIVE_GP {
                w.push(format!(
                    "the reclaimed zones were almost all live (median garbage proportion {median:.2}): GC copied nearly whole zones to free a little space; the device is too full for this workload (lower --utilization)"
                ));
            }
        }
        if let (Some(u), None) = (spec.utilization, &spec.device) {
            let raw_blocks = g.zone_count as u64 * g.zone_capacity_blocks;
            let filled = self.distinct_blocks as f64 / raw_blocks.max(1) as f64;
            if filled < u - UTILIZATION_SHORTFALL_WARN {
                let reserve = reserved_zones(g, &spec.placement, 1).unwrap_or(0);
                w.push(format!(
                    "the working set fills {:.0} % of the device, not the {:.0} % --utilization asks: {reserve} of its {} zones of {} MiB are kept for open zones and GC, which a working set of {} MiB cannot outweigh; {}",
                    filled * 100.0,
                    u * 100.0,
                    g.zone_count,
                    g.zone_capacity_bytes() >> 20,
                    (self.distinct_blocks * g.block_size_bytes as u64) >> 20,
                    match largest_zone_mib_that(spec, DistinctCounter::with_margin(self.distinct_blocks), |g| {
                        self.distinct_blocks as f64 / (g.zone_count as u64 * g.zone_capacity_blocks) as f64 >= u - UTILIZATION_SHORTFALL_WARN
                    }) {
                        Some(mib) => format!("use smaller zones (--zone-mib {mib}) or a larger working set"),
                        None => "use a larger working set".into(),
                    }
                ));
            }
        }
        self.warnings = w;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::spec::*;
    use zonekit_ftl::FtlConfig;

    fn usage(r: Result<(Geometry, ZoneBehavior, zonekit_device::timing::FlashConfig)>) -> String {
        match r {
            Err(LabError::Usage(m)) => m,
            Err(e) => panic!("not a usage error: {e}"),
            Ok((g, ..)) => panic!("accepted: {} zones", g.zone_count),
        }
    }

    #[test]
    fn sized_zone_counts_are_refused_with_the_flag_not_wrapped() {
        // --gc-threshold 0.99999999999999 with --unbounded: `as u32` saturated and `+ extra + 8`
        // wrapped to a device of 23 zones.
        let unbounded = ReplaySpec {
            utilization: None,
            config: FtlConfig { capacity: CapacityMode::Unbounded, gc_threshold: 0.999_999_999_999_99, ..FtlConfig::default() },
            ..ReplaySpec::default()
        };
        let m = usage(geometry_for(&unbounded, 2000, 1));
        assert!(m.contains("--gc-threshold 0.99999999999999 with --unbounded") && m.contains("zones of"), "{m}");
        // A tiny --utilization: the zone count was truncated mod 2^32 (1.165e-12) or allocated
        // as asked until the allocator aborted (1e-9).
        for u in [1e-9, 1.165e-12, 1e-15] {
            let m = usage(geometry_for(&ReplaySpec { utilization: Some(u), ..ReplaySpec::default() }, 2000, 1));
            assert!(m.contains(&format!("--utilization {u:?}")) && m.contains("would need"), "{m}");
        }
        // Ordinary sizes still size the device.
        let (g, ..) = geometry_for(&ReplaySpec::default(), 1 << 20, 1).unwrap();
        assert!(g.zone_count > 4);
    }

    #[test]
    fn zone_sizes_name_the_flag() {
        for mib in [0, 3, 1 << 20] {
            let m = match zone_blocks_for(mib, 4096) {
                Err(LabError::Usage(m)) => m,
                other => panic!("{mib}: {other:?}"),
            };
            assert!(m.starts_with(&format!("--zone-mib {mib}:")), "{m}");
        }
    }
}

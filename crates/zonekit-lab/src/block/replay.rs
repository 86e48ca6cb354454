//! Replaying a trace or workload through the block FTL on an emulated device, and what it
//! measured: the trace staged once ([`crate::block::stage`]: one pass into a replay stream of dense
//! ids and times, or that stream from the cache; the distinct-block estimate the device is
//! sized from; future knowledge when the placement needs it), then the replay.

use std::time::Instant;

use serde::Serialize;
use zonekit_base::{DistinctCounter, LogHistogram};
use zonekit_device::timing::TimedDevice;
use zonekit_device::{preset, Geometry, MemDevice, StorageMode, ZoneBehavior, ZonedDevice};
use zonekit_ftl::engine::gp_quantile;
use zonekit_ftl::placement::{self, Params, Placement, PolicyEnv};
use zonekit_ftl::{victim, CapacityMode, Ftl, FtlConfig, FtlError, GcTrigger};
use zonekit_trace::input::Input;

use crate::block::driver::{drive, BlockEngine, Series, SeriesPoint};
use crate::block::stage::{prepare_with, with_future, Prepared, Staged};
use crate::harness::error::{LabError, Result};
use crate::harness::interface::Interface;
use crate::harness::progress::Progress;

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
    /// Zone size and capacity in MiB instead of the preset's (a power of two number of blocks;
    /// e.g. to match another simulator's segment size). Not with `device`, which has its own.
    pub zone_mib: Option<u64>,
    /// ZNS (host GC), FDP or a conventional SSD (device GC) at the same raw capacity
    /// ([`crate::harness::interface`]).
    pub interface: Interface,
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
            zone_mib: None,
            interface: Interface::Zns,
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
            "preset={}{} utilization={:?} capacity={:?} gc_threshold={:?} timing={} store_data={} seed={}{}",
            self.preset,
            self.zone_mib.map_or(String::new(), |m| format!(" zone_mib={m}")),
            self.utilization,
            c.capacity,
            c.gc_threshold,
            self.timing,
            c.store_data,
            self.seed,
            self.device.as_ref().map_or(String::new(), |d| format!(" device={}", d.display()))
        ) + &format!(" gc_trigger={} unforced_gc_min_gp=threshold", c.trigger.name())
            + &(if self.interface == Interface::Zns { String::new() } else { format!(" interface={}", self.interface) })
    }

    /// The `zonekit replay` command that runs this spec on `input`, every setting spelt out
    /// (none left to a default that may change), so a row of any experiment can be rerun
    /// alone. The seed is the generated workload's (the replay's too for a trace); a sweep's
    /// inputs carry no filters, and any an input does carry are named in a trailing comment.
    pub fn command(&self, input: &Input) -> String {
        use zonekit_trace::input::Source;
        let quote = zonekit_report::shell_word;
        let mut parts = vec!["zonekit replay".to_string()];
        let seed = match &input.source {
            Source::Generated { workload, seed } => {
                parts.push(format!("--workload {}", quote(&workload.to_string())));
                *seed
            }
            Source::Binary(path) => {
                parts.push(quote(&path.display().to_string()));
                self.seed
            }
            Source::Trace { path, format, lenient } => {
                parts.push(quote(&path.display().to_string()));
                parts.extend(format.as_ref().map(|f| format!("--format {}", f.name())));
                parts.extend(lenient.then(|| "--lenient".to_string()));
                self.seed
            }
        };
        parts.push(format!("--placement {}", quote(&self.placement)));
        parts.extend(self.params.iter().map(|(k, v)| format!("--param {}", quote(&format!("{k}={v}")))));
        parts.push(format!("--victim {}", quote(&self.victim)));
        match &self.device {
            Some(d) => parts.push(format!("--device {}", quote(&d.display().to_string()))),
            None => {
                parts.push(format!("--preset {}", quote(&self.preset)));
                parts.extend(self.zone_mib.map(|m| format!("--zone-mib {m}")));
            }
        }
        match (self.config.capacity, self.utilization, &self.device) {
            (CapacityMode::Unbounded, _, _) => parts.push("--unbounded".into()),
            (CapacityMode::Fixed, Some(u), None) => parts.push(format!("--utilization {u:?}")),
            (CapacityMode::Fixed, None, None) => parts.push("--preset-size".into()),
            (CapacityMode::Fixed, _, Some(_)) => {}
        }
        parts.push(format!("--gc-threshold {:?}", self.config.gc_threshold));
        if self.config.capacity == CapacityMode::Fixed {
            parts.push(format!("--gc-trigger {}", self.config.trigger.name()));
        }
        parts.extend(self.timing.then(|| "--timing".to_string()));
        parts.push(format!("--interface {}", self.interface));
        parts.push(format!("--seed {seed}"));
        let filtered = input.describe();
        let plain = match &input.source {
            Source::Binary(p) | Source::Trace { path: p, .. } => p.display().to_string(),
            Source::Generated { workload, seed } => format!("{workload} (seed {seed})"),
        };
        if filtered != plain {
            parts.push(format!("# input filtered: {filtered}"));
        }
        parts.join(" ")
    }

    /// Checks the settings before anything runs.
    pub fn validate(&self) -> Result<()> {
        self.validate_settings()?;
        placement::find(&self.placement, &self.params)?;
        victim::find(&self.victim)?;
        self.check_threshold_is_read()
    }

    /// A GC threshold other than the default must change the run: under `free-zones` only CBE
    /// victims read it (GC runs when free zones run short), and an SSD's device GC never does.
    /// Policies the caller wrote may read it, so only named victims are checked.
    fn check_threshold_is_read(&self) -> Result<()> {
        let t = self.config.gc_threshold;
        if t == zonekit_ftl::engine::DEFAULT_GC_THRESHOLD || self.config.capacity == CapacityMode::Unbounded {
            return Ok(());
        }
        if self.interface != Interface::Zns {
            return Err(LabError::Usage(format!("--gc-threshold {t:?}: on --interface {} the device's GC runs when free space runs short and reads no threshold", self.interface)));
        }
        let reads = victim::find(&self.victim).is_ok_and(|(info, _)| info.name.starts_with("cbe"));
        if self.config.trigger == GcTrigger::FreeZones && !reads {
            return Err(LabError::Usage(format!(
                "--gc-threshold {t:?}: under --gc-trigger free-zones GC runs when free zones run short, and the {} victim reads no threshold (CBE victims do); use --gc-trigger gp-sealed or gp-all",
                self.victim
            )));
        }
        Ok(())
    }

    /// [`ReplaySpec::validate`] but for the policies' names (policies the caller built itself,
    /// [`CustomPolicies`], are not looked up).
    pub fn validate_settings(&self) -> Result<()> {
        let p = preset::find(&self.preset).ok_or_else(|| LabError::Usage(format!("unknown device preset {:?}; valid: {}", self.preset, preset::names().join(", "))))?;
        if let (CapacityMode::Fixed, Some(u)) = (self.config.capacity, self.utilization) {
            if !(u > 0.0 && u < 1.0) {
                return Err(LabError::Usage(format!("--utilization {u:?}: utilisation {u} must be in (0, 1)")));
            }
        }
        if !(0.0..1.0).contains(&self.config.gc_threshold) {
            return Err(LabError::Usage(format!("--gc-threshold {0:?}: GC threshold {0} is not in [0, 1)", self.config.gc_threshold)));
        }
        if let Some(mib) = self.zone_mib {
            zone_blocks_for(mib, p.geometry.block_size_bytes)?;
            if let Some(d) = &self.device {
                return Err(LabError::Usage(format!("a zone size of {mib} MiB cannot apply to {}, which has its own zones", d.display())));
            }
        }
        if let Some(d) = &self.device {
            if self.timing {
                return Err(LabError::Usage(format!("--timing models an emulated device sized from a preset; {} is used at its own speed", d.display())));
            }
            if !d.exists() {
                return Err(LabError::Usage(format!("{}: no such device or image", d.display())));
            }
        }
        if self.interface != Interface::Zns {
            let i = self.interface;
            if let Some(d) = &self.device {
                return Err(LabError::Usage(format!("--interface {i}: an SSD model is sized from the trace; {} is a zoned device (use --interface zns)", d.display())));
            }
            if self.config.capacity == CapacityMode::Unbounded {
                return Err(LabError::Usage(format!("--interface {i}: --unbounded is the host log's GC; an SSD has a fixed capacity")));
            }
            if self.config.store_data {
                return Err(LabError::Usage(format!("--interface {i}: replays on an SSD model keep no data (--store-data is for ZNS)")));
            }
            if self.config.trigger != GcTrigger::FreeZones {
                return Err(LabError::Usage(format!(
                    "--gc-trigger {}: on --interface {i} the SSD collects when its free space runs short, as --gc-trigger free-zones does on ZNS; the garbage triggers are the host FTL's, on ZNS only",
                    self.config.trigger.name()
                )));
            }
        }
        Ok(())
    }
}

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

#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    pub workload: String,
    /// `zns`, `fdp:N[:persistent]` or `conventional`.
    pub interface: String,
    pub placement: String,
    pub victim: String,
    pub capacity_mode: CapacityMode,
    /// `gp-all`, `gp-sealed` or `free-zones` (fixed capacity), `unbounded-log`.
    pub gc_trigger: String,
    pub zones: u32,
    pub zone_mib: f64,
    pub distinct_blocks: u64,
    pub user_blocks: u64,
    pub gc_blocks: u64,
    /// Total write amplification: flash writes per user block write, `host_waf × device_waf`.
    pub waf: f64,
    /// Blocks the host wrote to the device per user block (its GC's moves included): the ZNS
    /// FTL's WAF; 1 on an SSD, where the host writes in place.
    pub host_waf: f64,
    /// Blocks the flash programmed per block the host wrote: 1 on ZNS (zones are written
    /// once between resets), the device GC's on an SSD.
    pub device_waf: f64,
    /// Zones (ZNS) or reclaim units (SSD) reclaimed.
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
    /// 99th percentile of user write latency in µs as the host sees it (timed runs): from the
    /// first device operation a user write causes to the completion of the last, so the GC it
    /// waits for is in it — the host's GC on ZNS, the device's foreground GC on an SSD.
    pub write_latency_us_p99: Option<f64>,
    /// The SSD model of an FDP or conventional run.
    pub ssd: Option<SsdSummary>,
    /// Seconds spent getting the trace ready (the one pass over the trace, or finding its cached
    /// replay stream; an annotated copy for the oracles): see [`crate::block::stage`]. A binary trace's
    /// first replay numbers its writes during the loop, so that time is in `wall_s`.
    pub stage_s: f64,
    /// Seconds of the replay loop itself.
    pub wall_s: f64,
    pub blocks_per_s: f64,
    pub ftl_bytes_per_block: f64,
    /// The counters over the run, at most [`Series::MAX_POINTS`] points: WAF and GC traffic
    /// as they developed.
    pub series: Vec<SeriesPoint>,
    /// Why some of these figures mean less than they seem, each naming its cause and the
    /// setting to change (empty when nothing is degenerate): see [`ReplayReport::warn_degenerate`].
    pub warnings: Vec<String>,
}

/// Below this median garbage proportion of the reclaimed zones, GC mostly copied live data.
pub const NEARLY_LIVE_GP: f64 = 0.05;
/// How far (in points of utilisation) the working set may fall short of `--utilization` before
/// a report says the device is not the one asked for.
pub const UTILIZATION_SHORTFALL_WARN: f64 = 0.10;

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

/// The SSD model behind an FDP or conventional replay, and what it did.
#[derive(Clone, Debug, Serialize)]
pub struct SsdSummary {
    pub handles: u16,
    pub handle_type: Option<String>,
    /// Class → handle (empty: no hint).
    pub class_to_handle: Vec<u16>,
    pub logical_blocks: u64,
    pub physical_blocks: u64,
    /// Over-provisioning: physical blocks beyond the logical space per logical block.
    pub spare: f64,
    pub reclaim_unit_blocks: u64,
    pub host_blocks_by_handle: Vec<u64>,
    /// GC moves out of each handle's units, the shared GC units' last.
    pub gc_blocks_by_handle: Vec<u64>,
    pub invalid_placements: u64,
}

/// The largest zone `--zone-mib` accepts (64 GiB; the largest ZNS zones are 2 GiB).
pub const ZONE_MIB_MAX: u64 = 1 << 16;

/// Blocks per zone of `mib` MiB, refusing sizes that are not a power of two number of blocks
/// or are absurd.
fn zone_blocks_for(mib: u64, block_size_bytes: u32) -> Result<u64> {
    let bytes = mib.checked_mul(1 << 20).filter(|_| (1..=ZONE_MIB_MAX).contains(&mib));
    match bytes {
        Some(b) if b % block_size_bytes as u64 == 0 && (b / block_size_bytes as u64).is_power_of_two() => Ok(b / block_size_bytes as u64),
        _ => Err(LabError::Usage(format!("--zone-mib {mib}: zone size {mib} MiB: expected a power of two number of {block_size_bytes}-byte blocks, from 1 to {ZONE_MIB_MAX} MiB"))),
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

#[cfg(test)]
mod tests {
    use super::*;

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

//! One replay's settings and what it measured: [`ReplaySpec`] (the defaults, defined once; the
//! checks; the settings key a sweep resumes by; the `zonekit replay` command that reruns it)
//! and [`ReplayReport`] (WAF, GC traffic, GP, wear, the warnings a degenerate run earns). The
//! replay itself is [`crate::block::replay`]'s.

use serde::Serialize;
use zonekit_device::preset;
use zonekit_ftl::placement::{self, Params};
use zonekit_ftl::{victim, CapacityMode, FtlConfig, GcTrigger};
use zonekit_trace::input::Input;

use crate::block::driver::SeriesPoint;
use crate::harness::error::{LabError, Result};
use crate::harness::interface::Interface;

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
    pub(crate) fn check_threshold_is_read(&self) -> Result<()> {
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
pub(crate) fn zone_blocks_for(mib: u64, block_size_bytes: u32) -> Result<u64> {
    let bytes = mib.checked_mul(1 << 20).filter(|_| (1..=ZONE_MIB_MAX).contains(&mib));
    match bytes {
        Some(b) if b % block_size_bytes as u64 == 0 && (b / block_size_bytes as u64).is_power_of_two() => Ok(b / block_size_bytes as u64),
        _ => Err(LabError::Usage(format!("--zone-mib {mib}: zone size {mib} MiB: expected a power of two number of {block_size_bytes}-byte blocks, from 1 to {ZONE_MIB_MAX} MiB"))),
    }
}

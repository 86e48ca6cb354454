//! The FTL's settings (capacity mode, GC trigger and threshold), its errors and its
//! statistics: what a caller sets and reads, apart from the engine's write and GC loop
//! ([`crate::engine`]).

use serde::Serialize;
use zonekit_base::policy::PolicyError;
use zonekit_device::DeviceError;

/// How GC is triggered and how much space there is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum CapacityMode {
    /// The device's capacity is all there is: GC runs when the garbage proportion of written
    /// space exceeds the threshold (until it is below) and whenever free zones run short.
    Fixed,
    /// The SepBIT simulator's log: after each user write, if invalid blocks in sealed zones
    /// exceed the threshold share of all written blocks, one zone with at least that garbage
    /// proportion is reclaimed. The device must be large enough (the log grows to about
    /// working set / (1 − threshold)).
    Unbounded,
}

/// When a fixed-capacity FTL collects (the unbounded log always follows the SepBIT simulator:
/// one sealed zone after a write while sealed garbage exceeds the threshold). Whatever the
/// trigger, GC also runs whenever free zones fall below the reserve a GC needs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub enum GcTrigger {
    /// While all garbage, open zones' included, exceeds the threshold share of written
    /// blocks, reclaim the victim policy's choice among zones at or over the threshold.
    GpAll,
    /// The SepBIT prototype's rule (`prototype/src/logstore/scheduler.cc`, `manager.cc`):
    /// while garbage in sealed zones is at least the threshold share of all written blocks,
    /// reclaim a sealed zone.
    GpSealed,
    /// Only when free zones run short: GC as late as the device allows, so the
    /// over-provisioning (1 − utilisation) is what sets the write amplification. The default:
    /// the lowest WAF of the three on every workload and placement measured, the rule an FDP
    /// or conventional SSD's own GC follows (so interfaces compare alike), and the one under
    /// which `--utilization` decides what GC has to work with (docs/block-ftl.md).
    #[default]
    FreeZones,
}

impl GcTrigger {
    pub const ALL: [GcTrigger; 3] = [GcTrigger::GpAll, GcTrigger::GpSealed, GcTrigger::FreeZones];

    pub fn name(self) -> &'static str {
        match self {
            GcTrigger::GpAll => "gp-all",
            GcTrigger::GpSealed => "gp-sealed",
            GcTrigger::FreeZones => "free-zones",
        }
    }

    pub fn from_name(name: &str) -> Option<GcTrigger> {
        GcTrigger::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The garbage proportion that triggers GC unless told otherwise (seed 000: 15 %).
pub const DEFAULT_GC_THRESHOLD: f64 = 0.15;

#[derive(Copy, Clone, Debug, Serialize)]
pub struct FtlConfig {
    /// Garbage proportion that triggers GC (thesis: 0.15).
    pub gc_threshold: f64,
    pub capacity: CapacityMode,
    /// When GC runs in [`CapacityMode::Fixed`].
    pub trigger: GcTrigger,
    /// Keep data: GC reads and rewrites payloads (the device must store data).
    pub store_data: bool,
}

impl Default for FtlConfig {
    fn default() -> Self {
        FtlConfig { gc_threshold: DEFAULT_GC_THRESHOLD, capacity: CapacityMode::Fixed, trigger: GcTrigger::FreeZones, store_data: false }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FtlError {
    #[error("the placement policy {policy} needs {needed} open zones, the device allows {allowed}")]
    TooManyClasses { policy: String, needed: usize, allowed: u32 },
    #[error("the working set ({live_blocks} blocks) does not fit the device ({capacity_blocks} usable blocks after reserving {reserve_zones} zones for GC); use a larger device or a lower utilisation")]
    DoesNotFit { live_blocks: u64, capacity_blocks: u64, reserve_zones: u64 },
    #[error("no space: GC found no zone with garbage to reclaim ({free_zones} free zones, {live_blocks} live blocks)")]
    NoSpace { free_zones: usize, live_blocks: u64 },
    #[error("invalid FTL configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Counters of a run.
#[derive(Clone, Debug, Serialize)]
pub struct FtlStats {
    pub user_blocks: u64,
    pub gc_blocks: u64,
    /// Zones reclaimed.
    pub gc_count: u64,
    pub reads: u64,
    pub reads_unmapped: u64,
    pub user_blocks_by_class: Vec<u64>,
    pub gc_blocks_by_class: Vec<u64>,
    /// Garbage proportion of reclaimed zones, by class, in 1 % bins (index = ⌊GP × 100⌋).
    #[serde(skip)]
    pub reclaimed_gp_by_class: Vec<[u64; 101]>,
}

impl FtlStats {
    pub fn waf(&self) -> f64 {
        if self.user_blocks == 0 {
            1.0
        } else {
            (self.user_blocks + self.gc_blocks) as f64 / self.user_blocks as f64
        }
    }

    /// Histogram (1 % bins) of the reclaimed zones' GP over all classes or one.
    pub fn gp_histogram(&self, class: Option<usize>) -> [u64; 101] {
        let mut h = [0u64; 101];
        for (c, hist) in self.reclaimed_gp_by_class.iter().enumerate() {
            if class.is_none_or(|k| k == c) {
                for (a, b) in h.iter_mut().zip(hist) {
                    *a += b;
                }
            }
        }
        h
    }
}

/// Quantile of a 1 %-bin GP histogram.
pub fn gp_quantile(h: &[u64], q: f64) -> Option<f64> {
    let total: u64 = h.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (i, n) in h.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return Some(i as f64 / 100.0);
        }
    }
    Some(1.0)
}

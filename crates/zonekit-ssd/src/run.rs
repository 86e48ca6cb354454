//! A generated workload for one SSD model and what the model reports after it: what
//! `zonekit ssd run` drives and prints (the binary only parses flags and prints).
//!
//! [`HotCold`] fills the logical space once, in LBA order, then overwrites it at random: a hot
//! share of the LBAs takes a hot share of the writes, the rest spreads over the cold LBAs. On
//! an FDP SSD hot data goes through placement handle 0 and cold data through handle 1 (through
//! handle 0 too when the device has one handle), each LBA in reclaim group `lba mod groups`; on
//! a conventional SSD no write names a placement. A pure function of the spec and the seed.
//!
//! [`SsdReport`] is the model's state after a run: counters, device WAF, erases per reclaim
//! unit (wear) and the four FDP log pages.

use serde::Serialize;
use zonekit_base::Rng;

use crate::config::{RuhType, SsdConfig};
use crate::log::{ConfigLog, EventsLog, StatsLog, UsageLog};
use crate::ssd::{Ssd, SsdCounters, SsdTiming};
use crate::{Pid, SsdError};

/// A hot/cold overwrite workload (see the module doc).
#[derive(Clone, Debug, Serialize)]
pub struct HotCold {
    /// Random overwrites after the fill.
    pub writes: u64,
    /// The share of LBAs that are hot, in (0, 1].
    pub hot_share: f64,
    /// The share of the overwrites that go to hot LBAs, in [0, 1].
    pub hot_writes: f64,
    pub seed: u64,
}

/// What a [`HotCold`] run wrote.
#[derive(Clone, Debug, Serialize)]
pub struct HotColdStats {
    /// Blocks of the initial fill (the logical space).
    pub fill_blocks: u64,
    pub overwrites: u64,
    /// LBAs `0 .. hot_blocks` are hot.
    pub hot_blocks: u64,
    pub hot_overwrites: u64,
}

impl HotCold {
    /// Refuses, naming the field, a spec that means nothing.
    pub fn validate(&self) -> Result<(), SsdError> {
        if !(self.hot_share > 0.0 && self.hot_share <= 1.0) {
            return Err(SsdError::Config(format!("hot share {}: the share of hot LBAs must be in (0, 1]", self.hot_share)));
        }
        if !(0.0..=1.0).contains(&self.hot_writes) {
            return Err(SsdError::Config(format!("hot writes {}: the share of writes to hot LBAs must be in [0, 1]", self.hot_writes)));
        }
        Ok(())
    }

    /// Hot LBAs of a device of `logical_blocks`: at least one.
    pub fn hot_blocks(&self, logical_blocks: u64) -> u64 {
        ((logical_blocks as f64 * self.hot_share).round() as u64).clamp(1, logical_blocks)
    }

    /// Fills `ssd` and overwrites it (see the module doc).
    pub fn run(&self, ssd: &mut Ssd) -> Result<HotColdStats, SsdError> {
        self.validate()?;
        let cfg = ssd.config();
        let logical = cfg.logical_blocks;
        let groups = cfg.reclaim_groups as u64;
        let handles = cfg.handles.len();
        let hot_blocks = self.hot_blocks(logical);
        let pid = move |lba: u64| (handles > 0).then(|| Pid { group: (lba % groups) as u16, handle: u16::from(lba >= hot_blocks && handles > 1) });
        for lba in 0..logical {
            ssd.write_meta(lba, pid(lba))?;
        }
        let mut rng = Rng::new(self.seed);
        let cold_blocks = logical - hot_blocks;
        let mut hot_overwrites = 0;
        for _ in 0..self.writes {
            let lba = if cold_blocks == 0 || rng.chance(self.hot_writes) {
                hot_overwrites += 1;
                rng.below(hot_blocks)
            } else {
                hot_blocks + rng.below(cold_blocks)
            };
            ssd.write_meta(lba, pid(lba))?;
        }
        Ok(HotColdStats { fill_blocks: logical, overwrites: self.writes, hot_blocks, hot_overwrites })
    }
}

/// Erases per reclaim unit.
#[derive(Clone, Debug, Serialize)]
pub struct Wear {
    pub erases_min: u64,
    pub erases_max: u64,
    pub erases_mean: f64,
}

/// An SSD model's state (see the module doc). The log pages are `None` on a conventional SSD.
#[derive(Clone, Debug, Serialize)]
pub struct SsdReport {
    /// "conventional" or "fdp".
    pub kind: &'static str,
    pub block_size_bytes: u32,
    pub logical_blocks: u64,
    pub physical_blocks: u64,
    pub spare: f64,
    pub erase_block_blocks: u64,
    pub ru_blocks: u64,
    pub reclaim_groups: u16,
    pub reclaim_units: u64,
    pub handles: Vec<RuhType>,
    pub victim: String,
    pub counters: SsdCounters,
    pub media_blocks: u64,
    pub waf: f64,
    pub wear: Wear,
    pub timing: Option<SsdTiming>,
    pub config_log: Option<ConfigLog>,
    pub usage_log: Option<UsageLog>,
    pub stats_log: Option<StatsLog>,
    pub events_log: Option<EventsLog>,
}

impl SsdReport {
    pub fn of(ssd: &Ssd) -> SsdReport {
        let c: &SsdConfig = ssd.config();
        let (erases_min, erases_max, erases_mean) = ssd.wear_min_max_mean();
        let counters = ssd.counters().clone();
        SsdReport {
            kind: if c.is_fdp() { "fdp" } else { "conventional" },
            block_size_bytes: c.block_size_bytes,
            logical_blocks: c.logical_blocks,
            physical_blocks: c.physical_blocks(),
            spare: c.spare,
            erase_block_blocks: c.erase_block_blocks,
            ru_blocks: c.ru_blocks(),
            reclaim_groups: c.reclaim_groups,
            reclaim_units: c.units(),
            handles: c.handles.clone(),
            victim: c.victim.clone(),
            media_blocks: counters.media_blocks(),
            waf: counters.waf(),
            counters,
            wear: Wear { erases_min, erases_max, erases_mean },
            timing: ssd.timing(),
            config_log: ssd.config_log(),
            usage_log: ssd.usage_log(),
            stats_log: ssd.stats_log(),
            events_log: ssd.events_log(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> HotCold {
        HotCold { writes: 60_000, hot_share: 0.1, hot_writes: 0.9, seed: 3 }
    }

    #[test]
    fn the_workload_is_a_function_of_its_seed_and_separation_pays() {
        let run = |cfg: SsdConfig, s: &HotCold| {
            let mut ssd = Ssd::new(cfg).unwrap();
            let stats = s.run(&mut ssd).unwrap();
            ssd.check_invariants();
            (stats, SsdReport::of(&ssd))
        };
        let fdp = || SsdConfig::fdp(16384, 0.2, 32, 2, RuhType::PersistentlyIsolated);
        let (a, ra) = run(fdp(), &spec());
        let (b, rb) = run(fdp(), &spec());
        assert_eq!((a.hot_overwrites, ra.counters.gc_blocks), (b.hot_overwrites, rb.counters.gc_blocks));
        assert_eq!(a.hot_blocks, 1638);
        assert_eq!(ra.counters.host_blocks, 16384 + 60_000);
        assert_eq!(ra.counters.host_blocks_by_handle[0], 1638 + a.hot_overwrites);
        assert!(ra.counters.erases > 0 && ra.wear.erases_max >= ra.wear.erases_min);
        assert_eq!(ra.stats_log.as_ref().unwrap().hbmw, ra.counters.host_blocks * 4096);
        let (_, conventional) = run(SsdConfig::conventional(16384, 0.2, 32), &spec());
        assert!(conventional.config_log.is_none() && conventional.events_log.is_none());
        assert!(ra.waf < conventional.waf, "FDP {} vs conventional {}", ra.waf, conventional.waf);
    }

    #[test]
    fn bad_shares_are_refused_by_name() {
        for (hot_share, hot_writes, name) in
            [(0.0, 0.5, "hot share"), (f64::NAN, 0.5, "hot share"), (1.5, 0.5, "hot share"), (0.5, -0.1, "hot writes"), (0.5, f64::INFINITY, "hot writes")]
        {
            let e = HotCold { hot_share, hot_writes, ..spec() }.validate().unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
        // Everything hot: the cold range is empty and every write is hot.
        let mut ssd = Ssd::new(SsdConfig::conventional(512, 0.3, 16)).unwrap();
        let stats = HotCold { hot_share: 1.0, ..spec() }.run(&mut ssd).unwrap();
        assert_eq!((stats.hot_blocks, stats.hot_overwrites), (512, 60_000));
    }
}

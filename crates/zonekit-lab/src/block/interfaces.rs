//! `zonekit experiment interfaces`: one placement, every interface. Each input is replayed with
//! each placement on ZNS (host GC), on FDP SSDs of several handle counts and on a conventional
//! SSD, all of the same raw capacity (the ZNS device's zones = the SSD's reclaim units,
//! [`crate::harness::interface`]), reporting host, device and total WAF, GC traffic and — when timed —
//! the device's write latency p99. Inputs are staged once and shared by every run.

use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use zonekit_report::{csv, text_table, BarChart, Spread};

use crate::block::replay::{replay_staged, ReplaySpec, TempDir};
use crate::block::stage::stage;
use crate::block::sweep::SweepInput;
use crate::harness::error::{LabError, Result};
use crate::harness::interface::Interface;
use crate::harness::runs::{input_identity, RunStore, Stored};

/// What the experiment runs.
pub struct InterfacesSpec {
    pub inputs: Vec<SweepInput>,
    pub placements: Vec<String>,
    pub interfaces: Vec<Interface>,
    /// Every other setting (device preset, GC trigger and victim, timing); each run takes its
    /// placement, interface and its input's utilisation.
    pub base: ReplaySpec,
    pub threads: usize,
    /// Where finished runs are kept (`DIR/runs/`), so that a rerun after an interruption
    /// computes only the missing ones; `None`: nothing kept.
    pub keep_runs_in: Option<std::path::PathBuf>,
}

/// What a timed run's device time and latencies come from, for its key: what its preset's
/// flash timing gives (`zonekit_device::bench::timing_fingerprint`), so that a run kept from
/// other figures of the same preset name is run again, never reused. Untimed runs: nothing.
fn timing_identity(s: &ReplaySpec) -> String {
    match zonekit_device::preset::find(&s.preset) {
        Some(p) if s.timing => format!(" # timing {}", zonekit_device::bench::timing_fingerprint(&p.flash)),
        _ => String::new(),
    }
}

/// One run's figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InterfaceRow {
    pub input: String,
    pub placement: String,
    pub interface: String,
    pub host_waf: f64,
    pub device_waf: f64,
    pub waf: f64,
    pub gc_gib: f64,
    /// Zones (ZNS) or reclaim units (SSD) reclaimed.
    pub gc_count: u64,
    pub write_latency_us_p99: Option<f64>,
    pub device_time_s: Option<f64>,
    /// The `zonekit replay` command that gives this row alone (`commands.tsv`).
    pub command: String,
}

/// The columns of `interfaces.csv`.
pub const HEADER: [&str; 10] = ["input", "placement", "interface", "host_waf", "device_waf", "waf", "gc_gib", "gc_count", "write_latency_us_p99", "device_time_s"];

impl InterfaceRow {
    fn cells(&self) -> Vec<String> {
        let opt = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
        vec![
            self.input.clone(),
            self.placement.clone(),
            self.interface.clone(),
            format!("{:.4}", self.host_waf),
            format!("{:.4}", self.device_waf),
            format!("{:.4}", self.waf),
            format!("{:.4}", self.gc_gib),
            self.gc_count.to_string(),
            opt(self.write_latency_us_p99, 0),
            opt(self.device_time_s, 3),
        ]
    }
}

/// Runs every input × placement × interface; `on_done` is called as runs finish (with the
/// count of runs). Rows come back in grid order.
pub fn run(spec: &InterfacesSpec, on_start: &dyn Fn(usize), on_done: &(dyn Fn() + Sync)) -> Result<Vec<InterfaceRow>> {
    if spec.inputs.is_empty() || spec.placements.is_empty() || spec.interfaces.is_empty() {
        return Err(LabError::Usage("the interfaces experiment needs at least one input, placement and interface".into()));
    }
    let mut jobs = Vec::new();
    for (i, input) in spec.inputs.iter().enumerate() {
        for p in &spec.placements {
            for &interface in &spec.interfaces {
                let mut s = ReplaySpec { placement: p.clone(), interface, ..spec.base.clone() };
                if input.utilization.is_some() {
                    s.utilization = input.utilization;
                }
                s.validate()?;
                jobs.push((i, s));
            }
        }
    }
    let temp = TempDir::new()?;
    let staged = spec.inputs.iter().map(|i| stage(&i.input, temp.path())).collect::<Result<Vec<_>>>()?;
    let store = spec.keep_runs_in.as_deref().map(RunStore::open).transpose()?;
    // Every run takes the base's preset and timing: their identity is worked out once.
    let timing = timing_identity(&spec.base);
    on_start(jobs.len());
    let rows: Mutex<Vec<Option<Result<InterfaceRow>>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    crate::harness::parallel::for_each(jobs.len(), spec.threads, |j| {
        let (i, s) = &jobs[j];
        let key = format!("experiment interfaces {} # {}{}{}", s.command(&spec.inputs[*i].input), spec.inputs[*i].label, input_identity(&spec.inputs[*i].input), timing);
        if let Some(Stored::Run(row)) = store.as_ref().map(|store| store.load::<InterfaceRow>(&key)) {
            rows.lock().unwrap()[j] = Some(Ok(row));
            on_done();
            return;
        }
        let row = replay_staged(&staged[*i], s, temp.path(), &mut |_| {}).map(|r| InterfaceRow {
            input: spec.inputs[*i].label.clone(),
            placement: r.placement.clone(),
            interface: r.interface.clone(),
            host_waf: r.host_waf,
            device_waf: r.device_waf,
            waf: r.waf,
            gc_gib: r.gc_gib,
            gc_count: r.gc_count,
            write_latency_us_p99: r.write_latency_us_p99,
            device_time_s: r.device_time_s,
            command: s.command(&spec.inputs[*i].input),
        });
        let row = match (row, &store) {
            (Ok(row), Some(store)) => store.save(&key, &row).map(|()| row),
            (row, _) => row,
        };
        rows.lock().unwrap()[j] = Some(row);
        on_done();
    });
    rows.into_inner().unwrap().into_iter().map(|r| r.expect("every job ran")).collect()
}

/// Writes `interfaces.csv`, `summary.csv`, `waf.svg` and (timed) `write_p99.svg` into `out`;
/// returns the summary as text: per placement and interface, the mean over the inputs of the
/// total WAF (with its range) and of the write latency p99, and each interface's WAF against
/// ZNS's for the same placement.
pub fn write(out: &Path, placements: &[String], interfaces: &[String], rows: &[InterfaceRow]) -> Result<String> {
    std::fs::create_dir_all(out).map_err(LabError::io(out))?;
    let path = out.join("interfaces.csv");
    zonekit_base::atomic::write(&path, csv(&HEADER, &rows.iter().map(InterfaceRow::cells).collect::<Vec<_>>())).map_err(LabError::io(&path))?;
    fn of<'a>(rows: &'a [InterfaceRow], p: &'a str, i: &'a str) -> impl Iterator<Item = &'a InterfaceRow> {
        rows.iter().filter(move |r| r.placement == p && r.interface == i)
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let mut table = Vec::new();
    // Per interface, one value per placement: the charts group bars by placement.
    let mut waf_series = vec![Vec::new(); interfaces.len()];
    let mut p99_series = vec![Vec::new(); interfaces.len()];
    for p in placements {
        let zns: Vec<f64> = of(rows, p, "zns").map(|r| r.waf).collect();
        for (k, i) in interfaces.iter().enumerate() {
            let waf: Vec<f64> = of(rows, p, i).map(|r| r.waf).collect();
            let host: Vec<f64> = of(rows, p, i).map(|r| r.host_waf).collect();
            let device: Vec<f64> = of(rows, p, i).map(|r| r.device_waf).collect();
            let p99: Vec<f64> = of(rows, p, i).filter_map(|r| r.write_latency_us_p99).collect();
            let range = Spread::of(waf.clone()).map_or("-".into(), |s| format!("{:.3}–{:.3}", s.min, s.max));
            let vs_zns = if zns.is_empty() || i == "zns" { "-".to_string() } else { format!("{:+.1} %", 100.0 * (mean(&waf) / mean(&zns) - 1.0)) };
            table.push(vec![
                p.clone(),
                i.clone(),
                format!("{:.3}", mean(&host)),
                format!("{:.3}", mean(&device)),
                format!("{:.3}", mean(&waf)),
                range,
                vs_zns,
                if p99.is_empty() { "-".into() } else { format!("{:.0}", mean(&p99)) },
            ]);
            waf_series[k].push(if waf.is_empty() { f64::NAN } else { mean(&waf) });
            p99_series[k].push(if p99.is_empty() { f64::NAN } else { mean(&p99) / 1e3 });
        }
    }
    let header = ["placement", "interface", "host WAF", "device WAF", "total WAF", "total WAF min–max", "total vs ZNS", "write p99 µs"];
    let commands: String = rows.iter().map(|r| format!("{}\t{}\t{}\t{}\n", r.input, r.placement, r.interface, r.command)).collect();
    let path = out.join("commands.tsv");
    zonekit_base::atomic::write(&path, format!("input\tplacement\tinterface\tcommand\n{commands}")).map_err(LabError::io(&path))?;
    let path = out.join("summary.csv");
    zonekit_base::atomic::write(&path, csv(&header, &table)).map_err(LabError::io(&path))?;
    // The terminal's table names the range by its place beside the total, to fit 100 columns.
    let header = header.map(|h| if h == "total WAF min–max" { "min–max" } else { h });
    let chart = |title: &str, label: &str, unit: &str, series: Vec<Vec<f64>>| {
        let chart = BarChart::new(title, label, unit, "placement", placements.to_vec());
        interfaces.iter().zip(series).fold(chart, |chart, (i, values)| chart.series(i, values)).svg()
    };
    let path = out.join("waf.svg");
    let svg = chart("Total WAF (host × device) by placement and interface, mean over inputs", "total WAF", "", waf_series);
    zonekit_base::atomic::write(&path, svg).map_err(LabError::io(&path))?;
    if p99_series.iter().flatten().any(|v| v.is_finite()) {
        let path = out.join("write_p99.svg");
        let svg = chart("Device write latency p99 by placement and interface, mean over inputs", "write latency p99", "ms", p99_series);
        zonekit_base::atomic::write(&path, svg).map_err(LabError::io(&path))?;
    }
    Ok(text_table(&header, &table))
}

#[cfg(test)]
mod tests {
    use super::*;

    use zonekit_ftl::GcTrigger;
    use zonekit_trace::input::Input;

    #[test]
    fn a_timed_runs_key_names_what_its_timing_gives() {
        let timed = ReplaySpec { preset: "femu-zns".into(), timing: true, ..ReplaySpec::default() };
        let femu = zonekit_device::bench::timing_fingerprint(&zonekit_device::preset::find("femu-zns").unwrap().flash);
        assert_eq!(timing_identity(&timed), format!(" # timing {femu}"));
        let other = ReplaySpec { preset: "zn540".into(), ..timed.clone() };
        assert_ne!(timing_identity(&other), timing_identity(&timed), "another preset's figures, another key");
        assert_eq!(timing_identity(&ReplaySpec { timing: false, ..timed }), "", "an untimed run's figures do not depend on it");
    }

    fn small_spec(interfaces: Vec<Interface>) -> InterfacesSpec {
        let w: zonekit_trace::synth::Workload = "hotcold:blocks=60000,writes=600000,hot=0.1,hot-writes=0.9".parse().unwrap();
        InterfacesSpec {
            inputs: vec![SweepInput { label: "hotcold".into(), input: Input::generated(w, 1), utilization: Some(0.8) }],
            placements: vec!["normal".into(), "sepbit".into()],
            interfaces,
            base: ReplaySpec { preset: "tiny".into(), config: zonekit_ftl::FtlConfig { trigger: GcTrigger::FreeZones, ..Default::default() }, ..ReplaySpec::default() },
            threads: 2,
            keep_runs_in: None,
        }
    }

    #[test]
    fn every_interface_runs_at_the_same_raw_capacity_and_separation_pays_on_fdp() {
        let spec = small_spec(vec![Interface::Zns, Interface::Fdp { handles: 2, ruh_type: zonekit_ssd::RuhType::InitiallyIsolated }, Interface::Conventional]);
        let rows = run(&spec, &|n| assert_eq!(n, 6), &|| {}).unwrap();
        assert_eq!(rows.len(), 6);
        let get = |p: &str, i: &str| rows.iter().find(|r| r.placement == p && r.interface == i).unwrap();
        for r in &rows {
            assert!((r.waf - r.host_waf * r.device_waf).abs() < 1e-9, "{r:?}");
            if r.interface == "zns" {
                assert_eq!(r.device_waf, 1.0);
            } else {
                assert_eq!(r.host_waf, 1.0);
            }
        }
        // A conventional SSD ignores the placement: both placements give one WAF.
        assert_eq!(get("normal", "conventional").waf, get("sepbit", "conventional").waf);
        // SepBIT's two user classes on two handles beat no separation on the same device.
        assert!(get("sepbit", "fdp:2").waf < get("sepbit", "conventional").waf, "{rows:?}");
        let dir = TempDir::new().unwrap();
        let names: Vec<String> = spec.interfaces.iter().map(Interface::name).collect();
        let text = write(dir.path(), &spec.placements, &names, &rows).unwrap();
        assert!(text.contains("fdp:2") && dir.path().join("interfaces.csv").exists());
        // The WAF chart groups bars by placement, one coloured series per interface, a legend.
        let svg = std::fs::read_to_string(dir.path().join("waf.svg")).unwrap();
        assert_eq!(svg.matches("<rect x=").count(), 6, "2 placements × 3 interfaces");
        assert_eq!(svg.matches("class=\"legend-entry\"").count(), 3);
        assert!(svg.contains(">sepbit</text>") && svg.contains(">fdp:2</text>") && !svg.contains("sepbit fdp:2"));
    }

    #[test]
    fn the_navy_pattern_needs_separation_when_the_cache_fills_the_device() {
        let (share, rows) = navy_anchor(1 << 17, 1).unwrap();
        assert!((0.6..0.99).contains(&share), "{share}");
        let waf = |used: f64, fdp: bool| rows.iter().find(|r| r.used == used && r.fdp == fdp).unwrap().waf;
        // Calibrated on the first, the others measured: FDP near 1 at both sizes, and a
        // half-used conventional drive far below the full one.
        assert!((waf(1.0, false) - 3.22).abs() < 0.15, "{rows:?}");
        assert!(waf(1.0, true) < 1.3 && waf(0.5, true) < 1.1, "{rows:?}");
        assert!(waf(0.5, false) < 2.0, "{rows:?}");
        let bad = NavySpec {
            logical_blocks: 1 << 12,
            used: 1.5,
            small_share: 0.04,
            small_writes: 0.5,
            region_blocks: 4,
            spare: 0.07,
            ru_blocks: 16,
            passes: 1.0,
            warmup: 0.0,
            fdp: true,
            persistent: false,
            seed: 1,
        };
        assert!(navy_waf(&bad).unwrap_err().to_string().contains("used 1.5"));
    }
}

/// The published FDP anchor as a write pattern: CacheLib's flash cache (Navy) on an FDP SSD,
/// WAF 1.03 with FDP against 3.22 without at 100 % of the device, 1.03 against 1.22 at 50 %
/// (CacheLib's FDP documentation; Allison et al., EuroSys '25). Navy writes two ways: its
/// small-object cache (BigHash) rewrites random 4 KiB buckets of a fixed LBA range, its
/// large-object cache (BlockCache) writes whole regions in a ring over the rest, evicting the
/// oldest region (FIFO). With FDP each goes under a handle of its own; without, both share the
/// device's one write point. This is that pattern on the SSD model, not our bcache-style cache
/// (whose buckets are not Navy's): what separating the two streams is worth.
#[derive(Clone, Debug)]
pub struct NavySpec {
    /// Logical blocks of the device (the scaled drive; the reclaim unit scales with it).
    pub logical_blocks: u64,
    /// Share of the logical space the cache uses (1.0: the whole device, 0.5: half).
    pub used: f64,
    /// Share of the cache's space that is BigHash.
    pub small_share: f64,
    /// Share of host writes (blocks) that go to BigHash.
    pub small_writes: f64,
    /// BlockCache region, blocks.
    pub region_blocks: u64,
    /// The drive's shape: spare and reclaim unit (scaled with the device).
    pub spare: f64,
    pub ru_blocks: u64,
    /// Host writes, in device capacities (the first pass fills the cache).
    pub passes: f64,
    /// Host writes after the fill that are not counted, in device capacities: the device
    /// reaches its steady state before the measured `passes` (0: count from the fill on).
    pub warmup: f64,
    pub fdp: bool,
    /// With FDP: persistently isolated handles (GC keeps each cache's moved data in units of
    /// its own) rather than initially isolated (moved data of both shares GC units).
    pub persistent: bool,
    pub seed: u64,
}

/// What a Navy-like run measured, after its fill and warm-up.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NavyCounts {
    /// Host blocks written to the small-object cache (BigHash) and the large (BlockCache).
    pub small_host_blocks: u64,
    pub large_host_blocks: u64,
    /// Blocks device GC moved, all of them and those out of units the large cache's handle
    /// wrote (FDP only; 0 on a conventional SSD, where no unit belongs to a handle; with
    /// persistently isolated handles, every move of the large cache's data).
    pub gc_blocks: u64,
    pub gc_blocks_from_large: u64,
    /// Blocks device GC moved out of units the small cache's handle wrote (FDP only; with
    /// persistently isolated handles, every move of the small cache's data).
    pub gc_blocks_from_small: u64,
    /// Blocks of the device: live at the end of the fill (both caches) and physical.
    pub small_blocks: u64,
    pub large_blocks: u64,
    pub physical_blocks: u64,
    /// Blocks of the units GC never has as spare: its free reserve and the open units
    /// (`SsdConfig::units_held_back`).
    pub held_back_blocks: f64,
}

impl NavyCounts {
    /// Device write amplification over the measured writes.
    pub fn waf(&self) -> f64 {
        let host = self.small_host_blocks + self.large_host_blocks;
        (host + self.gc_blocks) as f64 / host.max(1) as f64
    }

    /// The small-object cache's own amplification under FDP: 1 + moves out of its units / its
    /// host writes (exact with persistently isolated handles, whose GC keeps its data in its
    /// own units; initially isolated ones move data a second time out of shared units).
    pub fn small_waf(&self) -> f64 {
        1.0 + self.gc_blocks_from_small as f64 / self.small_host_blocks.max(1) as f64
    }

    /// Moves of the large cache's data per block it wrote: 0 if its units die whole.
    pub fn large_moves_per_write(&self) -> f64 {
        self.gc_blocks_from_large as f64 / self.large_host_blocks.max(1) as f64
    }

    /// Blocks of the device not live: over-provisioning and every logical block neither cache
    /// uses.
    pub fn spare_blocks(&self) -> u64 {
        self.physical_blocks - self.small_blocks - self.large_blocks
    }

    /// The small-object cache's share of host writes.
    pub fn small_write_share(&self) -> f64 {
        self.small_host_blocks as f64 / (self.small_host_blocks + self.large_host_blocks).max(1) as f64
    }
}

/// The published figures: (share of the device used, FDP on, WAF).
pub const NAVY_PUBLISHED: [(f64, bool, f64); 4] = [(1.0, false, 3.22), (1.0, true, 1.03), (0.5, false, 1.22), (0.5, true, 1.03)];

/// BigHash's share of the cache: assumed (CacheLib's FDP work gives the WAF figures, not this).
pub const NAVY_SMALL_SHARE: f64 = 0.04;

/// One row of the anchor: the published setting and figure, ours.
#[derive(Clone, Debug, Serialize)]
pub struct NavyRow {
    pub used: f64,
    pub fdp: bool,
    pub published_waf: f64,
    pub waf: f64,
}

/// BlockCache's region in reclaim units: Navy's 16 MiB against the drive's 6 GiB unit (the
/// `fdp-pm9d3` preset's, assumed), kept in proportion as `fdp-anchor` keeps it. A region far
/// smaller than a unit is what mixes the two caches in one unit without FDP: with regions of
/// many units, the LOC's units stay pure even through one write point.
pub fn region_blocks(ru_blocks: u64) -> u64 {
    (ru_blocks * 16 / 6144).max(1)
}

/// The anchor: the drive's shape (fdp-pm9d3: its reclaim-unit count kept as the device is
/// scaled to `logical_blocks`), BigHash's share of host writes calibrated so that the
/// conventional run at 100 % gives the published 3.22 (the larger of the two shares that do:
/// small objects' random writes dominate), then the other three settings measured with it.
/// Returns the calibrated share and the four rows.
pub fn navy_anchor(logical_blocks: u64, seed: u64) -> Result<(f64, Vec<NavyRow>)> {
    let p = zonekit_ssd::preset::find("fdp-pm9d3").expect("the preset exists");
    let units = (p.capacity_bytes as f64 * (1.0 + p.spare) / p.ru_bytes() as f64).round();
    let ru_blocks = ((logical_blocks as f64 * (1.0 + p.spare)) / units).floor().max(1.0) as u64;
    // Navy's 16 MiB regions against the 6 GiB reclaim unit, kept in proportion.
    let region_blocks = region_blocks(ru_blocks);
    let spec = |used, small_writes, fdp| NavySpec {
        logical_blocks,
        used,
        small_share: NAVY_SMALL_SHARE,
        small_writes,
        region_blocks,
        spare: p.spare,
        ru_blocks,
        passes: 4.0,
        warmup: 0.0,
        fdp,
        persistent: false,
        seed,
    };
    // WAF falls as BigHash's share of writes rises past the peak (~0.5): bisect above it.
    let (target, mut lo, mut hi) = (NAVY_PUBLISHED[0].2, 0.6, 0.99);
    for _ in 0..14 {
        let mid = (lo + hi) / 2.0;
        if navy_waf(&spec(1.0, mid, false))? > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let share = (lo + hi) / 2.0;
    let rows =
        NAVY_PUBLISHED.iter().map(|&(used, fdp, published_waf)| Ok(NavyRow { used, fdp, published_waf, waf: navy_waf(&spec(used, share, fdp))? })).collect::<Result<Vec<_>>>()?;
    Ok((share, rows))
}

/// Device WAF of a Navy-like run ([`NavySpec`]).
pub fn navy_waf(s: &NavySpec) -> Result<f64> {
    navy_run(s).map(|c| c.waf())
}

/// A Navy-like run ([`NavySpec`]): what it wrote and what device GC moved, after the fill and
/// the warm-up.
pub fn navy_run(s: &NavySpec) -> Result<NavyCounts> {
    use zonekit_ssd::{Pid, RuhType, Ssd, SsdConfig};
    let bad = |m: String| LabError::Usage(format!("the Navy anchor: {m}"));
    let in_range = s.used > 0.0
        && s.used <= 1.0
        && s.small_share > 0.0
        && s.small_share < 1.0
        && (0.0..=1.0).contains(&s.small_writes)
        && s.passes >= 0.0
        && s.passes.is_finite()
        && s.warmup >= 0.0
        && s.warmup.is_finite();
    if !in_range {
        return Err(bad(format!(
            "used {} and small share {} must be in (0, 1], small writes {} in [0, 1], passes {} and warm-up {} finite and not negative",
            s.used, s.small_share, s.small_writes, s.passes, s.warmup
        )));
    }
    let mut cfg = if s.fdp {
        SsdConfig::fdp(s.logical_blocks, s.spare, s.ru_blocks, 2, if s.persistent { RuhType::PersistentlyIsolated } else { RuhType::InitiallyIsolated })
    } else {
        SsdConfig::conventional(s.logical_blocks, s.spare, s.ru_blocks)
    };
    cfg.victim = "greedy".into();
    cfg.seed = s.seed;
    let mut ssd = Ssd::new(cfg).map_err(|e| bad(e.to_string()))?;
    let cache = (s.logical_blocks as f64 * s.used) as u64;
    let small = ((cache as f64 * s.small_share) as u64).max(1);
    let large = (cache - small) / s.region_blocks * s.region_blocks;
    if large == 0 {
        return Err(bad(format!("no room for one BlockCache region of {} blocks", s.region_blocks)));
    }
    let pid = |h: u16| s.fdp.then_some(Pid { group: 0, handle: h });
    let mut rng = zonekit_base::Rng::new(s.seed);
    // Fill both caches once, then write `passes` device capacities in the measured mix.
    for lba in 0..small {
        ssd.write_meta(lba, pid(1)).map_err(|e| bad(e.to_string()))?;
    }
    for lba in small..small + large {
        ssd.write_meta(lba, pid(0)).map_err(|e| bad(e.to_string()))?;
    }
    let mut ring = 0u64;
    // A BigHash write is one block, a BlockCache flush a region: the chance per event that
    // gives BigHash `small_writes` of the blocks.
    let r = s.region_blocks as f64;
    let small_event = s.small_writes * r / (1.0 - s.small_writes + s.small_writes * r);
    // Host blocks written to each cache since the fill: (small, large).
    let mut written = (0u64, 0u64);
    let mut write = |ssd: &mut Ssd, blocks: u64| -> Result<(u64, u64)> {
        let mut w = 0;
        while w < blocks {
            if rng.chance(small_event) {
                ssd.write_meta(rng.below(small), pid(1)).map_err(|e| bad(e.to_string()))?;
                w += 1;
                written.0 += 1;
            } else {
                // A whole region, as Navy flushes one.
                for b in 0..s.region_blocks {
                    ssd.write_meta(small + ring + b, pid(0)).map_err(|e| bad(e.to_string()))?;
                }
                ring = (ring + s.region_blocks) % large;
                w += s.region_blocks;
                written.1 += s.region_blocks;
            }
        }
        Ok(written)
    };
    let warm = write(&mut ssd, (s.logical_blocks as f64 * s.warmup) as u64)?;
    let before = ssd.counters().clone();
    let end = write(&mut ssd, (s.logical_blocks as f64 * s.passes) as u64)?;
    let after = ssd.counters();
    debug_assert_eq!(after.host_blocks - before.host_blocks, end.0 - warm.0 + end.1 - warm.1);
    let by = |v: &Vec<u64>, i: usize| v.get(i).copied().unwrap_or(0);
    Ok(NavyCounts {
        small_host_blocks: end.0 - warm.0,
        large_host_blocks: end.1 - warm.1,
        gc_blocks: after.gc_blocks - before.gc_blocks,
        gc_blocks_from_large: if s.fdp { by(&after.gc_blocks_by_handle, 0) - by(&before.gc_blocks_by_handle, 0) } else { 0 },
        gc_blocks_from_small: if s.fdp { by(&after.gc_blocks_by_handle, 1) - by(&before.gc_blocks_by_handle, 1) } else { 0 },
        small_blocks: small,
        large_blocks: large,
        physical_blocks: ssd.config().physical_blocks(),
        held_back_blocks: ssd.config().units_held_back() * ssd.config().ru_blocks() as f64,
    })
}

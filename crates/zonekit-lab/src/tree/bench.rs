//! Seed 003's experiment: YCSB-style workloads on the ZB+-tree and the copy-on-write B+-tree.
//!
//! A run loads `records` keys, then runs `operations` inserts / deletes / searches in the mix
//! of one of the paper's workloads (W1–W5) or a custom one, with keys chosen as YCSB 0.17.0's
//! CoreWorkload chooses them: record `i`'s key is `fnvhash64(i)` (YCSB's default hashed insert
//! order); the run's zipfian chooser is the scrambled zipfian over `records + 2 × expected
//! inserts` key numbers, uniform is over the loaded key numbers, latest is YCSB's skewed-latest;
//! a chosen key number not inserted yet is drawn again (CoreWorkload.nextKeynum). Inserts take
//! the next key number. YCSB has no delete; the paper's deletes choose their key like a search.
//!
//! The device is the paper's: sequential zones plus conventional zones of one size (40 + 1 of
//! 2 GiB, 4 KiB blocks), emulated in memory without payload while the tree keeps its live nodes'
//! bytes (so an 82 GiB device costs memory in proportion to the tree), with ZN540 flash timing
//! at queue depth 1 for the device time. Reported: the run phase's node reads and writes, its
//! device time and wall-clock rate, and at the end the occupancy of both zone kinds and resets.

use std::time::Instant;

use serde::Serialize;
use zonekit_base::Rng;
use zonekit_device::timing::TimedDevice;
use zonekit_device::{FirstZones, Geometry, MemDevice, StorageMode, ZoneBehavior, ZonedDevice};
use zonekit_trace::synth::ycsb::{fnv_hash64, KeyChooser, Latest, ScrambledZipfian, Uniform};
use zonekit_trace::synth::YcsbDist;
use zonekit_zbtree::{CowCollect, CowRebalance, CowTree, Index, Payload, TreeConfig, TreeError, TreeStats, ZbTree};

use crate::harness::error::{LabError, Result};

/// The two trees.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum TreeKind {
    Zb,
    Cow,
}

impl TreeKind {
    pub const ALL: [TreeKind; 2] = [TreeKind::Zb, TreeKind::Cow];

    pub fn name(self) -> &'static str {
        match self {
            TreeKind::Zb => "zbtree",
            TreeKind::Cow => "cow",
        }
    }

    pub fn parse(name: &str) -> Result<TreeKind> {
        TreeKind::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| LabError::Usage(format!("unknown tree {name:?}: the trees are zbtree and cow")))
    }
}

/// Operation mix in percent.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Mix {
    pub insert_pct: u32,
    pub delete_pct: u32,
    pub search_pct: u32,
}

/// The paper's workloads (§4.1): insert / delete / search percentages.
pub const WORKLOADS: [(&str, Mix); 5] = [
    ("w1", Mix { insert_pct: 40, delete_pct: 30, search_pct: 30 }),
    ("w2", Mix { insert_pct: 10, delete_pct: 10, search_pct: 80 }),
    ("w3", Mix { insert_pct: 25, delete_pct: 25, search_pct: 50 }),
    ("w4", Mix { insert_pct: 50, delete_pct: 50, search_pct: 0 }),
    ("w5", Mix { insert_pct: 0, delete_pct: 0, search_pct: 100 }),
];

impl Mix {
    /// `w1`..`w5`, or `INSERT/DELETE/SEARCH` percentages summing to 100.
    pub fn parse(text: &str) -> Result<Mix> {
        if let Some((_, mix)) = WORKLOADS.iter().find(|(name, _)| name.eq_ignore_ascii_case(text)) {
            return Ok(*mix);
        }
        let bad = || LabError::Usage(format!("workload {text:?}: expected w1..w5 or INSERT/DELETE/SEARCH percentages summing to 100, e.g. 40/30/30"));
        // Parsed wide and each checked against 100 before they are summed: three u32s can
        // sum to 100 modulo 2^32 (4294967295/1/100 was a mix of "4294967295% insert").
        let parts: Vec<u64> = text.split('/').map(|p| p.trim().parse::<u64>()).collect::<std::result::Result<_, _>>().map_err(|_| bad())?;
        match parts[..] {
            [insert_pct, delete_pct, search_pct] if parts.iter().all(|&p| p <= 100) && insert_pct + delete_pct + search_pct == 100 => {
                Ok(Mix { insert_pct: insert_pct as u32, delete_pct: delete_pct as u32, search_pct: search_pct as u32 })
            }
            _ => Err(bad()),
        }
    }

    pub fn name(&self) -> String {
        match WORKLOADS.iter().find(|(_, m)| m == self) {
            Some((name, _)) => name.to_string(),
            None => format!("{}/{}/{}", self.insert_pct, self.delete_pct, self.search_pct),
        }
    }
}

/// The run phase's key distribution: YCSB's, by the names YCSB gives them.
pub type KeyDistribution = YcsbDist;

/// A count with an optional K or M suffix (`100K`, `2.5M`), as the CLI's record and operation
/// counts and Python's take it.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let (number, multiplier) = match text.trim().char_indices().last() {
        Some((i, 'K' | 'k')) => (&text[..i], 1e3),
        Some((i, 'M' | 'm')) => (&text[..i], 1e6),
        _ => (text, 1.0),
    };
    let value: f64 = number.trim().parse().map_err(|_| format!("{text:?} is not a count (e.g. 500000, 100K, 2.5M)"))?;
    if !(value >= 0.0) || value * multiplier > 1e12 {
        return Err(format!("{text:?} is out of range"));
    }
    Ok((value * multiplier).round() as u64)
}

impl TreeSpec {
    /// The `zonekit tree run` command that runs this spec alone (on `device` when the runs took
    /// turns on one), every setting spelt out: a row of the experiment rerun by itself.
    pub fn command(&self, device: Option<&str>) -> String {
        let mut parts = vec![
            format!("zonekit tree run --tree {}", self.tree.name()),
            format!("--workload {}", self.mix.name()),
            format!("--distribution {}", self.distribution.name()),
            format!("--records {} --operations {}", self.records, self.operations),
        ];
        match device {
            Some(d) => parts.push(format!("--device {}", zonekit_report::shell_word(d))),
            None => {
                parts.push(format!("--sequential-zones {} --conventional-zones {} --zone-size-mib {}", self.sequential_zones, self.conventional_zones, self.zone_size_bytes >> 20))
            }
        }
        parts.push(format!("--node-size-bytes {} --value-size-bytes {} --inner-entries-max {}", self.node_size_bytes, self.value_size_bytes, self.inner_entries_max));
        if !self.dynamic_zone_choice {
            parts.push("--no-dynamic-zone-choice".into());
        }
        parts.push(format!("--cow-rebalance {} --cow-collect {} --seed {}", self.cow_rebalance.name(), self.cow_collect.name(), self.seed));
        parts.join(" ")
    }
}

/// `zipfian`, `uniform` or `latest`.
pub fn parse_distribution(name: &str) -> Result<KeyDistribution> {
    YcsbDist::from_name(name).ok_or_else(|| LabError::Usage(format!("unknown distribution {name:?}: zipfian, uniform or latest")))
}

/// `bottom-up` or `top-down` (`--cow-rebalance`).
pub fn cow_rebalance(name: &str) -> Result<CowRebalance> {
    CowRebalance::from_name(name).ok_or_else(|| LabError::Usage(format!("--cow-rebalance {name:?}: bottom-up or top-down")))
}

/// `reserve` or `when-full` (`--cow-collect`).
pub fn cow_collect(name: &str) -> Result<CowCollect> {
    CowCollect::from_name(name).ok_or_else(|| LabError::Usage(format!("--cow-collect {name:?}: reserve or when-full")))
}

/// Everything that defines one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TreeSpec {
    pub tree: TreeKind,
    pub records: u64,
    pub operations: u64,
    pub mix: Mix,
    pub distribution: KeyDistribution,
    pub seed: u64,
    pub sequential_zones: u32,
    pub conventional_zones: u32,
    pub zone_size_bytes: u64,
    pub node_size_bytes: usize,
    pub value_size_bytes: usize,
    /// Cap on entries of interior, head and CoW inner nodes (0: as many as fit).
    pub inner_entries_max: usize,
    /// The paper's dynamic zone choice (§2.2); off for §4.2.5's reset experiment.
    pub dynamic_zone_choice: bool,
    /// How the CoW tree splits and merges (the ZB+-tree takes only the default).
    pub cow_rebalance: CowRebalance,
    /// When the CoW tree collects a zone (the ZB+-tree takes only the default).
    pub cow_collect: CowCollect,
}

const GIB: u64 = 1 << 30;

/// The paper gives neither its record size nor its fan-outs; its load-only figures fix them.
/// The ZB+-tree's W5 Seq-Zone occupancy (Tables 2–6: 0.000363 / 0.001025 / 0.001729 at
/// 0.5 / 1.5 / 2.5 M records, i.e. 7.6 K / 21.5 K / 36.3 K nodes moved, about one per leaf
/// filled from half to full) is matched by leaves of 96 entries: a 33-byte value in a 4 KiB
/// node (`zonekit tree run --workload w5 --operations 1` gives 0.000359 and 0.001799). CoW's
/// load (0.073 / 0.262 / 0.451: 3.08 / 3.66 / 3.78 node writes per insert, a path of 3
/// becoming 4 near 0.6 M records) fits inner nodes of the same order: 0.69³ × m² × 96 ≈ 0.5 M
/// for m = 96, so inner nodes are capped at 96 too. Every other figure of the paper is then a
/// prediction, not a fit (docs/results/seed-003.md).
pub const CALIBRATED_VALUE_SIZE_BYTES: usize = 33;
pub const CALIBRATED_INNER_ENTRIES_MAX: usize = 96;
const BLOCK_BYTES: u64 = 4096;
/// The most zones (sequential and conventional) a tree run takes. Both trees scan every
/// sequential zone each time they choose one (the paper's most/least-free choice), so a run
/// on millions of zones spends its time scanning; the paper's device has 41.
pub const TREE_ZONES_MAX: u64 = 1 << 20;

impl Default for TreeSpec {
    fn default() -> Self {
        TreeSpec {
            tree: TreeKind::Zb,
            records: 100_000,
            operations: 100_000,
            mix: WORKLOADS[0].1,
            distribution: KeyDistribution::Zipfian,
            seed: 1,
            sequential_zones: 40,
            conventional_zones: 1,
            zone_size_bytes: 2 * GIB,
            node_size_bytes: 4096,
            value_size_bytes: CALIBRATED_VALUE_SIZE_BYTES,
            inner_entries_max: CALIBRATED_INNER_ENTRIES_MAX,
            dynamic_zone_choice: true,
            cow_rebalance: CowRebalance::BottomUp,
            cow_collect: CowCollect::Reserve,
        }
    }
}

impl TreeSpec {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(LabError::Usage(m));
        if self.records == 0 {
            return bad("--records must be at least 1".into());
        }
        let zones = format!("--sequential-zones {} --conventional-zones {}", self.sequential_zones, self.conventional_zones);
        if self.sequential_zones == 0 || self.conventional_zones == 0 {
            return bad(format!("{zones}: the trees need at least one sequential and one conventional zone"));
        }
        // Summed wide: two u32 counts can wrap to a small one (4294967295 + 1 was a device of
        // zero zones).
        let zone_count = self.sequential_zones as u64 + self.conventional_zones as u64;
        if zone_count > TREE_ZONES_MAX {
            return bad(format!("{zones}: {zone_count} zones; the trees take at most {TREE_ZONES_MAX}"));
        }
        if self.zone_size_bytes < BLOCK_BYTES || self.zone_size_bytes % BLOCK_BYTES != 0 {
            return bad(format!(
                "--zone-size-mib {}: zone size {} bytes is not a positive multiple of the {BLOCK_BYTES}-byte block",
                self.zone_size_bytes >> 20,
                self.zone_size_bytes
            ));
        }
        let g = self.geometry();
        if g.zone_size_blocks.checked_mul(zone_count).and_then(|b| b.checked_mul(BLOCK_BYTES)).is_none() {
            return bad(format!("{zones} --zone-size-mib {}: the device would be over 2^64 bytes", self.zone_size_bytes >> 20));
        }
        zonekit_device::emu::check_zone_memory(&g).map_err(|e| LabError::Usage(format!("{zones}: {e}")))?;
        if self.node_size_bytes as u64 % BLOCK_BYTES != 0 || self.node_size_bytes == 0 {
            return bad(format!("--node-size-bytes {}: node size {} bytes is not a positive multiple of the {BLOCK_BYTES}-byte block", self.node_size_bytes, self.node_size_bytes));
        }
        // A value larger than a node holds no record (and sized a buffer past memory).
        if self.value_size_bytes == 0 || self.value_size_bytes > self.node_size_bytes {
            return bad(format!("--value-size-bytes {}: values of 1 to {} bytes fit a {}-byte node", self.value_size_bytes, self.node_size_bytes, self.node_size_bytes));
        }
        let flags = format!("--node-size-bytes {} --value-size-bytes {} --inner-entries-max {}", self.node_size_bytes, self.value_size_bytes, self.inner_entries_max);
        self.config().validate().map_err(|e| LabError::Usage(format!("{flags}: {e}")))?;
        self.validate_cow()
    }

    /// The CoW tree's own settings: refused, naming the flag, where they would not be honoured.
    fn validate_cow(&self) -> Result<()> {
        let bad = |m: String| Err(LabError::Usage(m));
        if self.tree == TreeKind::Zb {
            for (flag, value, default) in
                [("--cow-rebalance", self.cow_rebalance.name(), CowRebalance::default().name()), ("--cow-collect", self.cow_collect.name(), CowCollect::default().name())]
            {
                if value != default {
                    return bad(format!("{flag} {value}: a setting of the cow tree; the zbtree has its own rules (run --tree cow)"));
                }
            }
            return Ok(());
        }
        let inner = self.config().interior_capacity();
        if self.cow_rebalance == CowRebalance::TopDown && inner < 4 {
            return bad(format!(
                "--cow-rebalance top-down needs inner nodes of at least 4 entries (two nodes at their minimum merge into one); --inner-entries-max {} --node-size-bytes {} give {inner}",
                self.inner_entries_max, self.node_size_bytes
            ));
        }
        if self.cow_collect == CowCollect::WhenFull && self.dynamic_zone_choice {
            return bad("--cow-collect when-full collects a zone when it fills, which needs zones used in order (--no-dynamic-zone-choice): with the most-free choice every zone fills at once".into());
        }
        Ok(())
    }

    fn config(&self) -> TreeConfig {
        TreeConfig {
            node_size_bytes: self.node_size_bytes,
            value_size_bytes: self.value_size_bytes,
            inner_entries_max: self.inner_entries_max,
            payload: Payload::Shadow,
            dynamic_zone_choice: self.dynamic_zone_choice,
            cow_rebalance: self.cow_rebalance,
            cow_collect: self.cow_collect,
            ..TreeConfig::default()
        }
    }

    fn geometry(&self) -> Geometry {
        let zone_blocks = self.zone_size_bytes / BLOCK_BYTES;
        Geometry {
            block_size_bytes: BLOCK_BYTES as u32,
            zone_size_blocks: zone_blocks,
            zone_capacity_blocks: zone_blocks,
            zone_count: self.sequential_zones + self.conventional_zones,
            conventional_zone_count: self.conventional_zones,
            open_zones_max: None,
            active_zones_max: None,
        }
    }
}

/// Counts of one phase.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Phase {
    pub operations: u64,
    pub inserts: u64,
    pub deletes: u64,
    pub searches: u64,
    /// Deletes of keys that were not there (already deleted).
    pub deletes_missing: u64,
    pub node_reads: u64,
    pub node_writes: u64,
    pub node_writes_sequential: u64,
    pub zone_resets: u64,
    /// Device busy time from the timing model (queue depth 1).
    pub device_ns: u64,
    pub wall_s: f64,
    /// CPU time of the thread that ran the phase, system calls included: on a memory-backed
    /// device (null_blk, an image in tmpfs) the phase's time without what other processes took.
    pub cpu_s: f64,
}

impl Phase {
    pub fn ops_per_sec(&self) -> f64 {
        if self.wall_s > 0.0 {
            self.operations as f64 / self.wall_s
        } else {
            0.0
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TreeOutcome {
    pub spec: TreeSpec,
    pub load: Phase,
    pub run: Phase,
    /// At the end of the run.
    pub stats: TreeStats,
}

/// The run phase's key numbers (YCSB CoreWorkload: the chooser, and a chosen key number not
/// inserted yet is drawn again).
struct Keys {
    chooser: KeyChooser,
    /// Key numbers 0..inserted exist (or existed).
    inserted: u64,
}

impl Keys {
    fn new(distribution: KeyDistribution, records: u64, mix: Mix, operations: u64) -> Keys {
        let expected_new = (operations as f64 * mix.insert_pct as f64 / 100.0 * 2.0) as u64;
        let chooser = match distribution {
            KeyDistribution::Zipfian => KeyChooser::Zipfian(ScrambledZipfian::new(0, records + expected_new - 1)),
            KeyDistribution::Uniform => KeyChooser::Uniform(Uniform::new(0, records - 1)),
            KeyDistribution::Latest => KeyChooser::Latest(Latest::new(records)),
        };
        Keys { chooser, inserted: records }
    }

    fn choose(&mut self, rng: &mut Rng) -> u64 {
        loop {
            let keynum = self.chooser.next(rng);
            if keynum < self.inserted {
                return keynum;
            }
        }
    }

    fn insert(&mut self) -> u64 {
        self.chooser.inserted();
        self.inserted += 1;
        self.inserted - 1
    }
}

fn key_of(keynum: u64) -> u64 {
    fnv_hash64(keynum)
}

fn value_of(key: u64, size: usize) -> Vec<u8> {
    key.to_le_bytes().iter().copied().cycle().take(size).collect()
}

/// A tree of either kind over a device, with access to the timing report.
enum AnyTree<D: ZonedDevice> {
    Zb(Box<ZbTree<TimedDevice<D>>>),
    Cow(Box<CowTree<TimedDevice<D>>>),
}

impl<D: ZonedDevice> AnyTree<D> {
    fn create(spec: &TreeSpec, device: D, payload: Payload) -> Result<AnyTree<D>> {
        let flash = zonekit_device::preset::find("zn540").expect("the zn540 preset exists").flash;
        let device = TimedDevice::new(device, flash, 1)?;
        let config = TreeConfig { payload, ..spec.config() };
        Ok(match spec.tree {
            TreeKind::Zb => AnyTree::Zb(Box::new(ZbTree::create(device, config).map_err(|e| LabError::Usage(e.to_string()))?)),
            TreeKind::Cow => AnyTree::Cow(Box::new(CowTree::create(device, config).map_err(|e| LabError::Usage(e.to_string()))?)),
        })
    }

    fn index(&mut self) -> &mut dyn Index {
        match self {
            AnyTree::Zb(t) => t.as_mut(),
            AnyTree::Cow(t) => t.as_mut(),
        }
    }

    fn device_ns(&self) -> u64 {
        match self {
            AnyTree::Zb(t) => t.store().device().report().elapsed_ns,
            AnyTree::Cow(t) => t.store().device().report().elapsed_ns,
        }
    }

    fn into_device(self) -> D {
        match self {
            AnyTree::Zb(t) => t.into_device().into_inner(),
            AnyTree::Cow(t) => t.into_device().into_inner(),
        }
    }
}

fn engine_error<'a>(spec: &'a TreeSpec, phase: &'a str, op: u64) -> impl Fn(TreeError) -> LabError + 'a {
    move |error| LabError::Tree { context: format!("{} {} {} at {phase} operation {op}", spec.tree.name(), spec.mix.name(), spec.distribution.name()), error: Box::new(error) }
}

/// Loads and runs one spec on the paper's device emulated in memory (zone states only, the
/// live nodes' bytes beside it): the device time is the timing model's, the wall time the
/// trees' own CPU time. `progress` gets (operations done, operations in all).
pub fn run_tree(spec: &TreeSpec, progress: &mut dyn FnMut(u64, u64)) -> Result<TreeOutcome> {
    spec.validate()?;
    let mem = MemDevice::new(spec.geometry(), ZoneBehavior::default(), StorageMode::MetadataOnly)?;
    let (outcome, _) = drive(spec, AnyTree::create(spec, mem, Payload::Shadow)?, progress)?;
    Ok(outcome)
}

/// Loads and runs one spec on a zoned device (an image or `/dev`): every node is written to
/// and read back from it, so the wall time is the time measured on that device; the timing
/// model runs beside it on the same requests. The trees take the device's first
/// `conventional_zones + sequential_zones` zones ([`FirstZones`]), which must be its
/// conventional zones and then sequential ones of `zone_size_bytes` and 4 KiB blocks; the
/// device is handed back for the next run.
pub fn run_tree_on<D: ZonedDevice>(spec: &TreeSpec, device: D, progress: &mut dyn FnMut(u64, u64)) -> Result<(TreeOutcome, D)> {
    spec.validate()?;
    fits_device(spec, device.geometry())?;
    let window = FirstZones::new(device, spec.conventional_zones + spec.sequential_zones)?;
    let (outcome, window) = drive(spec, AnyTree::create(spec, window, Payload::Device)?, progress)?;
    Ok((outcome, window.into_inner()))
}

/// Whether a device can hold `spec`'s zones, as [`run_tree_on`] takes them; the refusal names
/// the flag to change.
pub fn fits_device(spec: &TreeSpec, g: &Geometry) -> Result<()> {
    let refuse = |m: String| Err(LabError::Usage(m));
    if g.block_size_bytes as u64 != BLOCK_BYTES {
        return refuse(format!("the device's blocks are {} bytes; the trees' runs use {BLOCK_BYTES}-byte blocks", g.block_size_bytes));
    }
    if g.zone_size_bytes() != spec.zone_size_bytes {
        return refuse(format!("the device's zones are {} bytes ({} MiB), this run's {} bytes", g.zone_size_bytes(), g.zone_size_bytes() >> 20, spec.zone_size_bytes));
    }
    if g.conventional_zone_count != spec.conventional_zones {
        return refuse(format!(
            "--conventional-zones {}: the device has {} conventional zones, and the trees take all of them (they come first)",
            spec.conventional_zones, g.conventional_zone_count
        ));
    }
    let sequential = g.zone_count - g.conventional_zone_count;
    if spec.sequential_zones > sequential {
        return refuse(format!("--sequential-zones {}: the device has {sequential} sequential zones", spec.sequential_zones));
    }
    // Both trees choose among all their sequential zones (§2.2) and never finish one early, so
    // every zone may be open at once.
    for (what, limit) in [("open", g.open_zones_max), ("active", g.active_zones_max)] {
        if let Some(limit) = limit.filter(|&l| l < spec.sequential_zones) {
            return refuse(format!(
                "--sequential-zones {}: the device allows {limit} {what} zones, and the trees may keep every sequential zone open (use a device without the limit)",
                spec.sequential_zones
            ));
        }
    }
    Ok(())
}

/// The load, then the run phase, on a created tree; the tree's device back.
fn drive<D: ZonedDevice>(spec: &TreeSpec, mut tree: AnyTree<D>, progress: &mut dyn FnMut(u64, u64)) -> Result<(TreeOutcome, D)> {
    let total = spec.records + spec.operations;
    let tick = (total / 200).max(1);
    let mut rng = Rng::new(spec.seed);

    let mut load = Phase::default();
    let started = Instant::now();
    let cpu_started = zonekit_base::thread_cpu_s();
    for keynum in 0..spec.records {
        let key = key_of(keynum);
        tree.index().insert(key, &value_of(key, spec.value_size_bytes)).map_err(engine_error(spec, "load", keynum))?;
        if keynum % tick == 0 {
            progress(keynum, total);
        }
    }
    load.operations = spec.records;
    load.inserts = spec.records;
    load.wall_s = started.elapsed().as_secs_f64();
    load.cpu_s = zonekit_base::thread_cpu_s() - cpu_started;
    let after_load = tree.index().stats();
    load.node_reads = after_load.io.node_reads;
    load.node_writes = after_load.io.node_writes();
    load.node_writes_sequential = after_load.io.node_writes_sequential;
    load.zone_resets = after_load.io.zone_resets;
    load.device_ns = tree.device_ns();

    let mut keys = Keys::new(spec.distribution, spec.records, spec.mix, spec.operations);
    let mut run = Phase::default();
    let started = Instant::now();
    let cpu_started = zonekit_base::thread_cpu_s();
    for op in 0..spec.operations {
        let dice = rng.below(100) as u32;
        let index = tree.index();
        if dice < spec.mix.insert_pct {
            let key = key_of(keys.insert());
            index.insert(key, &value_of(key, spec.value_size_bytes)).map_err(engine_error(spec, "run", op))?;
            run.inserts += 1;
        } else if dice < spec.mix.insert_pct + spec.mix.delete_pct {
            let key = key_of(keys.choose(&mut rng));
            if !index.delete(key).map_err(engine_error(spec, "run", op))? {
                run.deletes_missing += 1;
            }
            run.deletes += 1;
        } else {
            let key = key_of(keys.choose(&mut rng));
            index.get(key).map_err(engine_error(spec, "run", op))?;
            run.searches += 1;
        }
        if op % tick == 0 {
            progress(spec.records + op, total);
        }
    }
    run.operations = spec.operations;
    run.wall_s = started.elapsed().as_secs_f64();
    run.cpu_s = zonekit_base::thread_cpu_s() - cpu_started;
    let stats = tree.index().stats();
    run.node_reads = stats.io.node_reads - load.node_reads;
    run.node_writes = stats.io.node_writes() - load.node_writes;
    run.node_writes_sequential = stats.io.node_writes_sequential - load.node_writes_sequential;
    run.zone_resets = stats.io.zone_resets - load.zone_resets;
    run.device_ns = tree.device_ns() - load.device_ns;
    progress(total, total);
    Ok((TreeOutcome { spec: spec.clone(), load, run, stats }, tree.into_device()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_counts_are_refused_by_flag_not_wrapped() {
        let refused = |sequential_zones: u32, conventional_zones: u32| {
            let spec = TreeSpec { sequential_zones, conventional_zones, ..TreeSpec::default() };
            match spec.validate() {
                Err(LabError::Usage(m)) => m,
                other => panic!("{sequential_zones} + {conventional_zones}: {other:?}"),
            }
        };
        // 4294967295 + 1 wrapped to a device of zero zones; 1 + 4294967295 to one of 39 zones
        // with 4294967295 conventional; 100000000 aborted allocating the zone tables.
        for (s, c) in [(u32::MAX, 1), (40, u32::MAX), (100_000_000, 1), (0, 1)] {
            let m = refused(s, c);
            assert!(m.contains(&format!("--sequential-zones {s} --conventional-zones {c}")), "{m}");
        }
        // A million zones is still a run.
        assert!(TreeSpec { sequential_zones: (1 << 20) - 1, ..TreeSpec::default() }.validate().is_ok());
        let m = match (TreeSpec { zone_size_bytes: 1 << 62, sequential_zones: 1000, ..TreeSpec::default() }).validate() {
            Err(LabError::Usage(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(m.contains("over 2^64 bytes"), "{m}");
    }

    #[test]
    fn mixes_parse() {
        assert_eq!(Mix::parse("W4").unwrap(), WORKLOADS[3].1);
        assert_eq!(Mix::parse("20/0/80").unwrap(), Mix { insert_pct: 20, delete_pct: 0, search_pct: 80 });
        assert!(Mix::parse("20/0/70").unwrap_err().to_string().contains("summing to 100"));
        assert!(Mix::parse("w9").is_err());
        // Sums to 100 only modulo 2^32 (and 2^64).
        for wraps in ["4294967295/1/100", "4294967196/100/100", "18446744073709551615/1/100"] {
            assert!(Mix::parse(wraps).unwrap_err().to_string().contains("summing to 100"), "{wraps}");
        }
    }

    /// The ratio section at a tiny scale into `out` (12 runs of 2,000 records).
    fn tiny_experiment(out: &std::path::Path) -> TreeExperiment {
        TreeExperiment {
            scale: 0.002,
            sections: vec![Section::Ratio],
            seed: 1,
            value_size_bytes: CALIBRATED_VALUE_SIZE_BYTES,
            inner_entries_max: CALIBRATED_INNER_ENTRIES_MAX,
            cow_rebalance: CowRebalance::BottomUp,
            cow_collect: CowCollect::Reserve,
            threads: 2,
            out: out.into(),
        }
    }

    /// The CoW settings are honoured where they apply and refused, naming the flag, where
    /// they would not be.
    #[test]
    fn cow_settings_are_honoured_or_refused_by_flag() {
        let refused = |spec: TreeSpec| match spec.validate() {
            Err(LabError::Usage(m)) => m,
            other => panic!("{other:?}"),
        };
        let zb = TreeSpec { tree: TreeKind::Zb, ..TreeSpec::default() };
        assert!(refused(TreeSpec { cow_rebalance: CowRebalance::TopDown, ..zb.clone() }).contains("--cow-rebalance top-down: a setting of the cow tree"));
        assert!(refused(TreeSpec { cow_collect: CowCollect::WhenFull, dynamic_zone_choice: false, ..zb }).contains("--cow-collect when-full: a setting of the cow tree"));
        let cow = TreeSpec { tree: TreeKind::Cow, ..TreeSpec::default() };
        assert!(refused(TreeSpec { cow_collect: CowCollect::WhenFull, ..cow.clone() })
            .contains("--cow-collect when-full collects a zone when it fills, which needs zones used in order (--no-dynamic-zone-choice)"));
        let m = refused(TreeSpec { cow_rebalance: CowRebalance::TopDown, inner_entries_max: 3, ..cow.clone() });
        assert!(m.contains("--cow-rebalance top-down needs inner nodes of at least 4 entries") && m.contains("--inner-entries-max 3"), "{m}");
        TreeSpec { cow_rebalance: CowRebalance::TopDown, cow_collect: CowCollect::WhenFull, dynamic_zone_choice: false, ..cow }.validate().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let exp = TreeExperiment { cow_collect: CowCollect::WhenFull, ..tiny_experiment(dir.path()) };
        let e = run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap_err().to_string();
        assert!(e.contains("--cow-collect when-full: only the resets section uses zones in order, and --sections ratio does not run it"), "{e}");
    }

    /// Top-down rebalancing and collection when full reach the CoW runs (and their rows), not
    /// the ZB+-tree's: a rerun with another CoW setting reuses the ZB+-tree's rows and
    /// recomputes the CoW ones.
    #[test]
    fn cow_settings_reach_the_cow_rows_only() {
        let dir = tempfile::tempdir().unwrap();
        let exp = TreeExperiment { sections: vec![Section::Resets], scale: 0.0005, threads: 2, ..tiny_experiment(dir.path()) };
        run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
        let before = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
        let changed = TreeExperiment { cow_rebalance: CowRebalance::TopDown, cow_collect: CowCollect::WhenFull, ..exp.clone() };
        let outcome = run_experiment(&changed, Backend::Model, &|_, _, _| {}).unwrap();
        assert_eq!(outcome.set_aside, exp.specs().len() / 2, "the CoW rows, of other settings");
        assert!(outcome.summary.contains("CoW rebalancing: top-down") && outcome.summary.contains("CoW zone collection in the resets section: when-full"), "{}", outcome.summary);
        let after = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
        let cells = |text: &str, tree: &str| -> Vec<Vec<String>> {
            text.lines().skip(1).map(|l| l.split(',').map(String::from).collect::<Vec<_>>()).filter(|r| r[col("tree")] == tree).collect()
        };
        assert_eq!(cells(&before, "zbtree"), cells(&after, "zbtree"), "the ZB+-tree's rows are reused");
        for row in cells(&after, "cow") {
            assert_eq!((row[col("cow_rebalance")].as_str(), row[col("cow_collect")].as_str()), ("top-down", "when-full"));
            assert!(row[col("run_zone_resets")].parse::<u64>().unwrap() > 0, "{row:?}");
        }
        assert!(cells(&after, "zbtree").iter().all(|r| (r[col("cow_rebalance")].as_str(), r[col("cow_collect")].as_str()) == ("bottom-up", "reserve")));
    }

    /// Top-down splits and merges on the way down: the same keys and answers, reads never fewer
    /// (a delete may read siblings), and the tree stays whole.
    #[test]
    fn top_down_runs_read_at_least_the_paths() {
        let spec = TreeSpec { tree: TreeKind::Cow, records: 3000, operations: 3000, zone_size_bytes: 16 << 20, sequential_zones: 8, mix: WORKLOADS[3].1, ..TreeSpec::default() };
        let bottom_up = run_tree(&spec, &mut |_, _| {}).unwrap();
        let top_down = run_tree(&TreeSpec { cow_rebalance: CowRebalance::TopDown, ..spec }, &mut |_, _| {}).unwrap();
        assert_eq!(top_down.stats.records, bottom_up.stats.records);
        assert_eq!(top_down.run.deletes_missing, bottom_up.run.deletes_missing);
        assert!(top_down.run.node_reads >= bottom_up.run.node_reads, "{} < {}", top_down.run.node_reads, bottom_up.run.node_reads);
    }

    #[test]
    fn damaged_rows_are_moved_aside_byte_for_byte_and_a_file_without_checks_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let exp = tiny_experiment(dir.path());
        let path = dir.path().join("results.csv");
        run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
        let clean = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = clean.lines().collect();
        // A row with one more node write than the run made, one cut before its check, one
        // not UTF-8, and the last row without its newline.
        let mut cells: Vec<String> = lines[1].split(',').map(String::from).collect();
        cells[col("run_node_writes")] = (cells[col("run_node_writes")].parse::<u64>().unwrap() + 1).to_string();
        let changed = cells.join(",");
        let mut damage = format!("{changed}\n{}\n", &lines[2][..50]).into_bytes();
        damage.extend_from_slice(b"ratio,cow,w1,zipf\xffan\n");
        let mut text = format!("{}\n", lines[0]).into_bytes();
        text.extend_from_slice(&damage);
        text.extend_from_slice(lines[3..].join("\n").as_bytes());
        std::fs::write(&path, &text).unwrap();
        run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
        let aside = std::fs::read(dir.path().join("results.previous.csv")).unwrap();
        assert_eq!(aside, [format!("{}\n", lines[0]).into_bytes(), damage].concat(), "the damaged rows, as they were");
        let resumed = std::fs::read_to_string(&path).unwrap();
        assert_eq!(resumed.lines().count(), lines.len(), "every row is there again: {resumed}");
        assert!(resumed.lines().skip(1).all(|l| crate::harness::results::seal_holds(&l.split(',').map(String::from).collect::<Vec<_>>())));
        assert!(resumed.lines().skip(3).eq(lines[3..].iter().copied()), "intact rows are reused as they were");
        // A file from before the check column is refused naming its first line, and kept.
        let old: String = lines.iter().map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n").collect();
        std::fs::write(&path, &old).unwrap();
        let e = run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap_err().to_string();
        assert!(e.contains("results.csv:1: not a tree experiment results file of this version"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
    }

    #[test]
    fn small_run_counts_add_up() {
        let spec = TreeSpec { records: 3000, operations: 3000, zone_size_bytes: 16 << 20, sequential_zones: 8, ..TreeSpec::default() };
        let out = run_tree(&spec, &mut |_, _| {}).unwrap();
        assert_eq!(out.run.inserts + out.run.deletes + out.run.searches, 3000);
        assert_eq!(out.stats.records, 3000 + out.run.inserts - (out.run.deletes - out.run.deletes_missing));
        assert!(out.run.node_reads > 0 && out.run.node_writes > 0 && out.run.device_ns > 0);
    }

    /// A device with data, `extra` sequential zones more than `spec` takes.
    fn data_device(spec: &TreeSpec, extra: u32) -> MemDevice {
        let g = Geometry { zone_count: spec.geometry().zone_count + extra, ..spec.geometry() };
        MemDevice::new(g, ZoneBehavior::default(), StorageMode::Data).unwrap()
    }

    /// On a device the trees write every node to it and read it back, and do exactly what they
    /// do on the emulated one (same reads, writes, resets, occupancy, model time); the zones
    /// past their window stay untouched.
    #[test]
    fn a_run_on_a_device_does_what_the_model_run_does() {
        for tree in TreeKind::ALL {
            let spec = TreeSpec { tree, records: 3000, operations: 3000, zone_size_bytes: 1 << 20, sequential_zones: 3, ..TreeSpec::default() };
            let model = run_tree(&spec, &mut |_, _| {}).unwrap();
            let (measured, mut device) = run_tree_on(&spec, data_device(&spec, 2), &mut |_, _| {}).unwrap();
            assert_eq!((measured.load.node_writes, &measured.stats), (model.load.node_writes, &model.stats), "{}", tree.name());
            assert_eq!(
                (measured.run.node_reads, measured.run.node_writes, measured.run.device_ns),
                (model.run.node_reads, model.run.node_writes, model.run.device_ns),
                "{}",
                tree.name()
            );
            let io = device.stats();
            assert!(io.reads.ops >= measured.run.node_reads, "the nodes were read from the device");
            assert!(io.writes.ops + io.appends.ops >= measured.load.node_writes + measured.run.node_writes, "the nodes were written to the device");
            let zones = device.report_all(zonekit_device::ZoneFilter::All).unwrap();
            assert!(zones[4..].iter().all(|z| z.write_pointer == z.start), "{}: zones past the window were written", tree.name());
        }
    }

    #[test]
    fn a_device_that_cannot_hold_the_run_is_refused_naming_why() {
        let spec = TreeSpec { records: 100, operations: 100, zone_size_bytes: 1 << 20, sequential_zones: 3, ..TreeSpec::default() };
        let refused = |g: Geometry| fits_device(&spec, &g).unwrap_err().to_string();
        let g = spec.geometry();
        assert!(refused(Geometry { zone_size_blocks: 512, zone_capacity_blocks: 512, ..g }).contains("the device's zones are 2097152 bytes (2 MiB), this run's 1048576"));
        assert!(refused(Geometry { conventional_zone_count: 0, ..g }).contains("--conventional-zones 1: the device has 0 conventional zones"));
        assert!(refused(Geometry { zone_count: 3, ..g }).contains("--sequential-zones 3: the device has 2 sequential zones"));
        assert!(refused(Geometry { block_size_bytes: 512, zone_size_blocks: 2048, zone_capacity_blocks: 2048, ..g }).contains("blocks are 512 bytes"));
        assert!(refused(Geometry { active_zones_max: Some(2), ..g }).contains("--sequential-zones 3: the device allows 2 active zones"));
        fits_device(&spec, &Geometry { open_zones_max: Some(3), ..g }).unwrap();
        fits_device(&spec, &Geometry { zone_count: 9, ..g }).unwrap();
    }

    /// On a device the experiment's rows say so (its `device` cell), run one after another on
    /// it, and a rerun on the emulated device moves them aside rather than reusing them.
    #[test]
    fn an_experiment_on_a_device_records_it_and_is_not_reused_by_a_model_run() {
        let dir = tempfile::tempdir().unwrap();
        let exp = TreeExperiment { sections: vec![Section::Resets], scale: 0.0005, threads: 1, ..tiny_experiment(dir.path()) };
        let spec = &exp.specs()[0].1;
        let refused = run_experiment(
            &exp,
            Backend::Device {
                name: "small".into(),
                device: Box::new(MemDevice::new(Geometry { zone_count: 1, ..spec.geometry() }, ZoneBehavior::default(), StorageMode::Data).unwrap()),
            },
            &|_, _, _| {},
        );
        assert!(refused.unwrap_err().to_string().contains("small: cannot hold the resets section's runs at --scale 0.0005"));
        let small_zones = Geometry { zone_size_blocks: 64, zone_capacity_blocks: 64, ..spec.geometry() };
        let e = run_experiment(
            &exp,
            Backend::Device { name: "z".into(), device: Box::new(MemDevice::new(small_zones, ZoneBehavior::default(), StorageMode::Data).unwrap()) },
            &|_, _, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(&format!("(its zones match --scale {})", (64 * 4096) as f64 / (2u64 << 30) as f64)), "{e}");
        let device = Box::new(data_device(spec, 3));
        let outcome = run_experiment(&exp, Backend::Device { name: "mem0".into(), device }, &|_, _, _| {}).unwrap();
        assert!(outcome.summary.contains("Measured on mem0"), "{}", outcome.summary);
        let rows = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
        assert!(rows.lines().skip(1).all(|l| l.split(',').nth(col("device")) == Some("mem0")), "{rows}");
        let model = run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
        assert_eq!(model.set_aside, exp.specs().len(), "the device's rows are not the model's");
    }
}

// ---- The experiment: the paper's section 4 ---------------------------------------------------

/// Which part of §4 a run belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Section {
    /// §4.2.1–4.2.3: W1–W5 × zipfian/uniform/latest × 0.5/1.5/2.5 M records, 40 + 1 zones.
    Grid,
    /// §4.2.4: Cov:Seq 1:32, 1:48, 1:64 at 1 M records, W1 and W2, zipfian.
    Ratio,
    /// §4.2.5: 1 + 1 zones, no dynamic zone choice, W1 and W2 zipfian, 2.5/5/7.5 M records.
    Resets,
    /// §4.2.6: the ZB+-tree's conventional-zone occupancy at 1–10 M records, W1 and W2 zipfian.
    Conventional,
}

impl Section {
    pub const ALL: [Section; 4] = [Section::Grid, Section::Ratio, Section::Resets, Section::Conventional];

    pub fn name(self) -> &'static str {
        match self {
            Section::Grid => "grid",
            Section::Ratio => "ratio",
            Section::Resets => "resets",
            Section::Conventional => "conventional",
        }
    }

    pub fn parse(name: &str) -> Result<Section> {
        Section::ALL.into_iter().find(|s| s.name() == name).ok_or_else(|| LabError::Usage(format!("unknown section {name:?}: grid, ratio, resets or conventional")))
    }
}

/// The paper's experiment, scaled: record counts and zone size are multiplied by `scale`, so
/// occupancies and reset counts stay comparable with the paper's at any scale.
#[derive(Clone, Debug)]
pub struct TreeExperiment {
    pub scale: f64,
    pub sections: Vec<Section>,
    pub seed: u64,
    /// Every run's record value and node fan-out cap: the fitted defaults
    /// ([`CALIBRATED_VALUE_SIZE_BYTES`], [`CALIBRATED_INNER_ENTRIES_MAX`]), or others to see
    /// which results depend on the fit.
    pub value_size_bytes: usize,
    pub inner_entries_max: usize,
    /// How every CoW run splits and merges.
    pub cow_rebalance: CowRebalance,
    /// When the CoW runs with zones in order (the resets section) collect a zone; the other
    /// sections choose zones dynamically and keep the default.
    pub cow_collect: CowCollect,
    pub threads: usize,
    pub out: std::path::PathBuf,
}

fn scaled(count: f64, scale: f64) -> u64 {
    ((count * scale).round() as u64).max(1)
}

impl TreeExperiment {
    fn zone_size_bytes(&self) -> u64 {
        let blocks = ((2 * GIB) as f64 * self.scale / BLOCK_BYTES as f64).round() as u64;
        blocks.max(64) * BLOCK_BYTES
    }

    /// Every run of the selected sections, in order.
    pub fn specs(&self) -> Vec<(Section, TreeSpec)> {
        let base = TreeSpec {
            seed: self.seed,
            zone_size_bytes: self.zone_size_bytes(),
            value_size_bytes: self.value_size_bytes,
            inner_entries_max: self.inner_entries_max,
            ..TreeSpec::default()
        };
        let zipf_w1_w2 = |records: f64, extra: &dyn Fn(&mut TreeSpec)| -> Vec<TreeSpec> {
            let mut out = Vec::new();
            for (_, mix) in &WORKLOADS[..2] {
                for tree in TreeKind::ALL {
                    let mut spec = TreeSpec { tree, mix: *mix, records: scaled(records, self.scale), operations: scaled(records, self.scale), ..base.clone() };
                    spec.cow_rebalance = if tree == TreeKind::Cow { self.cow_rebalance } else { CowRebalance::default() };
                    extra(&mut spec);
                    out.push(spec);
                }
            }
            out
        };
        let mut runs = Vec::new();
        for &section in &self.sections {
            match section {
                Section::Grid => {
                    for records in [0.5e6, 1.5e6, 2.5e6] {
                        for distribution in KeyDistribution::ALL {
                            for (_, mix) in WORKLOADS {
                                for tree in TreeKind::ALL {
                                    let n = scaled(records, self.scale);
                                    let cow_rebalance = if tree == TreeKind::Cow { self.cow_rebalance } else { CowRebalance::default() };
                                    runs.push((section, TreeSpec { tree, mix, distribution, records: n, operations: n, cow_rebalance, ..base.clone() }));
                                }
                            }
                        }
                    }
                }
                Section::Ratio => {
                    for seq in [32, 48, 64] {
                        runs.extend(zipf_w1_w2(1e6, &|s| s.sequential_zones = seq).into_iter().map(|s| (section, s)));
                    }
                }
                Section::Resets => {
                    for records in [2.5e6, 5e6, 7.5e6] {
                        runs.extend(
                            zipf_w1_w2(records, &|s| {
                                s.sequential_zones = 1;
                                s.dynamic_zone_choice = false;
                                if s.tree == TreeKind::Cow {
                                    s.cow_collect = self.cow_collect;
                                }
                            })
                            .into_iter()
                            .map(|s| (section, s)),
                        );
                    }
                }
                Section::Conventional => {
                    for records in [1e6, 2.5e6, 5e6, 7.5e6, 10e6] {
                        runs.extend(zipf_w1_w2(records, &|_| {}).into_iter().filter(|s| s.tree == TreeKind::Zb).map(|s| (section, s)));
                    }
                }
            }
        }
        runs
    }
}

/// Columns of `results.csv`: the settings of a run, then what it measured.
pub const RESULTS_HEADER: [&str; 32] = [
    "section",
    "tree",
    "workload",
    "distribution",
    "records",
    "operations",
    "sequential_zones",
    "conventional_zones",
    "zone_size_bytes",
    "dynamic_zone_choice",
    // The CoW tree's rebalancing and collection rules (the ZB+-tree's rows hold the defaults).
    "cow_rebalance",
    "cow_collect",
    "value_size_bytes",
    "inner_entries_max",
    "seed",
    // "model" (the paper's device emulated in memory, time from the timing model) or the
    // zoned device the run measured its wall time on.
    "device",
    "run_node_reads",
    "run_node_writes",
    "run_node_writes_sequential",
    "run_device_ms",
    "run_wall_s",
    "run_cpu_s",
    "run_ops_per_s",
    "load_node_writes",
    "zone_resets",
    "sequential_occupancy",
    "conventional_occupancy",
    "height",
    "records_at_end",
    "deletes_missing",
    "run_zone_resets",
    // A fingerprint of the other cells: a damaged row is recomputed, not reused.
    "check",
];
const SETTINGS_COLUMNS: usize = 16;

fn settings_row(section: Section, s: &TreeSpec, device: &str) -> Vec<String> {
    vec![
        section.name().into(),
        s.tree.name().into(),
        s.mix.name(),
        s.distribution.name().into(),
        s.records.to_string(),
        s.operations.to_string(),
        s.sequential_zones.to_string(),
        s.conventional_zones.to_string(),
        s.zone_size_bytes.to_string(),
        s.dynamic_zone_choice.to_string(),
        s.cow_rebalance.name().into(),
        s.cow_collect.name().into(),
        s.value_size_bytes.to_string(),
        s.inner_entries_max.to_string(),
        s.seed.to_string(),
        device.to_string(),
    ]
}

fn result_row(section: Section, o: &TreeOutcome, device: &str) -> Vec<String> {
    let mut row = settings_row(section, &o.spec, device);
    row.extend([
        o.run.node_reads.to_string(),
        o.run.node_writes.to_string(),
        o.run.node_writes_sequential.to_string(),
        format!("{:.1}", o.run.device_ns as f64 / 1e6),
        format!("{:.3}", o.run.wall_s),
        format!("{:.3}", o.run.cpu_s),
        format!("{:.0}", o.run.ops_per_sec()),
        o.load.node_writes.to_string(),
        o.stats.io.zone_resets.to_string(),
        format!("{:.6}", o.stats.sequential_occupancy),
        format!("{:.6}", o.stats.conventional_occupancy),
        o.stats.height.to_string(),
        o.stats.records.to_string(),
        o.run.deletes_missing.to_string(),
        o.run.zone_resets.to_string(),
    ]);
    crate::harness::results::sealed(row)
}

/// The header and writer of the experiment's `results.csv`, for [`crate::harness::results`].
const RESULTS_FILE: crate::harness::results::ResultsFile = crate::harness::results::ResultsFile { header: &RESULTS_HEADER, writer: "tree experiment" };

/// What [`run_experiment`] did besides the summary, for the caller to print.
#[derive(Clone, Debug)]
pub struct TreeExperimentOutcome {
    /// The tables beside the paper's (also in `summary.md`).
    pub summary: String,
    /// Damaged rows of `results.csv` (a cell changed, a row cut, bytes not UTF-8) moved, byte
    /// for byte, to `results.previous.csv`; those of this experiment were recomputed.
    pub damaged: usize,
    /// Intact rows of other settings (another seed, value size, scale or section) moved to
    /// `results.previous.csv`: `results.csv` holds this experiment's rows only.
    pub set_aside: usize,
}

/// Where the experiment's runs happen.
pub enum Backend {
    /// The paper's device emulated in memory, the ZN540 timing model's device time; runs in
    /// parallel ([`run_tree`]).
    Model,
    /// A zoned device (an image or `/dev`), its name as the rows record it: runs take turns on
    /// it and their wall time is measured on it ([`run_tree_on`]).
    Device { name: String, device: Box<dyn ZonedDevice + Send> },
}

impl Backend {
    /// The `device` cell of the rows it runs.
    pub fn name(&self) -> &str {
        match self {
            Backend::Model => "model",
            Backend::Device { name, .. } => name,
        }
    }
}

/// Runs the experiment, writes `results.csv`, `summary.md` and the charts, and returns the
/// summary with the counts of rows moved aside. An earlier `results.csv` is read back as every resumable results file is
/// (`crate::harness::results`): a row is reused only when its check holds and its settings are a run
/// of this experiment; damaged rows and rows of other settings are moved to
/// `results.previous.csv`, never dropped; a file from before the check column is refused
/// naming line 1. On a [`Backend::Device`] every run must fit the device ([`fits_device`]),
/// checked before any starts. `progress` gets (runs finished, runs in all, the run just
/// finished).
pub fn run_experiment(exp: &TreeExperiment, backend: Backend, progress: &(dyn Fn(usize, usize, &str) + Sync)) -> Result<TreeExperimentOutcome> {
    if !(exp.scale > 0.0 && exp.scale <= 4.0) {
        return Err(LabError::Usage(format!("--scale {} is out of range: (0, 4]", exp.scale)));
    }
    if exp.cow_collect != CowCollect::default() && !exp.sections.contains(&Section::Resets) {
        return Err(LabError::Usage(format!(
            "--cow-collect {}: only the resets section uses zones in order, and --sections {} does not run it",
            exp.cow_collect.name(),
            exp.sections.iter().map(|s| s.name()).collect::<Vec<_>>().join(",")
        )));
    }
    let specs = exp.specs();
    for (section, spec) in &specs {
        spec.validate()?;
        if let Backend::Device { name, device } = &backend {
            fits_device(spec, device.geometry()).map_err(|e| {
                let zone_bytes = device.geometry().zone_size_bytes();
                let hint = if zone_bytes != spec.zone_size_bytes { format!(" (its zones match --scale {})", zone_bytes as f64 / (2 * GIB) as f64) } else { String::new() };
                LabError::Usage(format!("{name}: cannot hold the {} section's runs at --scale {}{hint}: {e}", section.name(), exp.scale))
            })?;
        }
    }
    let device_name = backend.name().to_string();
    crate::harness::results::prepare_out(&exp.out)?;
    // Each run's own command, in the order of the rows.
    let device = matches!(backend, Backend::Device { .. }).then_some(device_name.as_str());
    let mut commands = String::from("section\ttree\tworkload\tdistribution\trecords\tcommand\n");
    for (section, spec) in &specs {
        commands.push_str(&format!("{}\t{}\t{}\t{}\t{}\t{}\n", section.name(), spec.tree.name(), spec.mix.name(), spec.distribution.name(), spec.records, spec.command(device)));
    }
    crate::harness::results::write_atomically(&exp.out.join("commands.tsv"), &commands)?;
    let results_path = exp.out.join("results.csv");
    let resumed = crate::harness::results::resume(&results_path, &RESULTS_FILE, crate::harness::results::Reading::Run)?;
    let total = specs.len();
    let keys: Vec<Vec<String>> = specs.iter().map(|(section, spec)| settings_row(*section, spec, &device_name)).collect();
    let mut reused: Vec<Option<Vec<String>>> = vec![None; total];
    let mut other = Vec::new();
    for row in resumed.rows {
        match keys.iter().position(|k| row[..SETTINGS_COLUMNS] == k[..]).filter(|&i| reused[i].is_none()) {
            Some(i) => reused[i] = Some(row),
            None => other.push(row.join(",")),
        }
    }
    // Aside before the file is rewritten without them (after the first run finishes).
    crate::harness::results::set_aside(&results_path, &RESULTS_HEADER, &other.iter().map(|l| l.as_bytes()).collect::<Vec<_>>())?;
    let todo: Vec<usize> = (0..total).filter(|&i| reused[i].is_none()).collect();
    let rows = std::sync::Mutex::new(reused);
    let done = std::sync::atomic::AtomicUsize::new(total - todo.len());
    let failures = std::sync::Mutex::new(Vec::new());
    let label = |i: usize| {
        let (section, spec) = &specs[i];
        format!("{} {} {} {} {} records", section.name(), spec.tree.name(), spec.mix.name(), spec.distribution.name(), spec.records)
    };
    let finish = |i: usize, outcome: Result<TreeOutcome>| {
        let label = label(i);
        match outcome {
            Ok(outcome) => {
                let mut rows = rows.lock().expect("rows");
                rows[i] = Some(result_row(specs[i].0, &outcome, &device_name));
                // Written after every run, so an interrupted experiment resumes.
                let finished: Vec<Vec<String>> = rows.iter().flatten().cloned().collect();
                if let Err(e) = crate::harness::results::write_atomically(&results_path, &zonekit_report::csv(&RESULTS_HEADER, &finished)) {
                    failures.lock().expect("failures").push(format!("{label}: {e}"));
                }
            }
            Err(e) => failures.lock().expect("failures").push(format!("{label}: {e}")),
        }
        progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, total, &label);
    };
    match backend {
        Backend::Model => crate::harness::parallel::for_each(todo.len(), exp.threads, |n| finish(todo[n], run_tree(&specs[todo[n]].1, &mut |_, _| {}))),
        Backend::Device { mut device, .. } => {
            // One device: the runs take turns, each handing it to the next. A failed run ends
            // the experiment: the device went with it, in a state no later run should inherit.
            for &i in &todo {
                match run_tree_on(&specs[i].1, device, &mut |_, _| {}) {
                    Ok((outcome, back)) => {
                        device = back;
                        finish(i, Ok(outcome));
                    }
                    Err(e) => {
                        finish(i, Err(e));
                        break;
                    }
                }
            }
        }
    }
    let rows: Vec<Vec<String>> = rows.into_inner().expect("rows").into_iter().flatten().collect();
    crate::harness::results::write_atomically(&results_path, &zonekit_report::csv(&RESULTS_HEADER, &rows))?;
    let summary = summarize(&rows, exp.scale, &exp.out)?;
    crate::harness::results::write_atomically(&exp.out.join("summary.md"), &summary)?;
    let failed = failures.into_inner().expect("failures");
    if !failed.is_empty() {
        return Err(LabError::Runs { failed, total });
    }
    Ok(TreeExperimentOutcome { summary, damaged: resumed.damaged, set_aside: other.len() })
}

/// The paper's Tables 2–6 (Seq-Zone occupancy, zipfian, ZB+-tree then CoW, at 0.5/1.5/2.5 M).
const PAPER_OCCUPANCY: [(&str, [f64; 3], [f64; 3]); 5] = [
    ("w1", [0.000469, 0.001543, 0.002439], [0.120431, 0.402918, 0.678303]),
    ("w2", [0.000385, 0.001161, 0.001882], [0.086633, 0.300859, 0.513317]),
    ("w3", [0.000417, 0.001371, 0.002141], [0.103262, 0.353144, 0.599624]),
    ("w4", [0.000498, 0.001617, 0.002613], [0.132233, 0.432777, 0.739822]),
    ("w5", [0.000363, 0.001025, 0.001729], [0.073475, 0.262106, 0.450943]),
];
/// Tables 7–8 (1 M records, zipfian, Cov:Seq 1:32/1:48/1:64).
const PAPER_RATIO: [(&str, [f64; 3], [f64; 3]); 2] =
    [("w1", [0.001125, 0.000751, 0.000562], [0.321145, 0.216282, 0.163043]), ("w2", [0.000959, 0.000638, 0.000478], [0.240339, 0.161861, 0.122018])];
/// §4.2.5: CoW resets at 2.5/5/7.5 M records (the ZB+-tree had none).
const PAPER_RESETS: [(&str, [u64; 3]); 2] = [("w1", [10, 22, 37]), ("w2", [2, 6, 9])];

fn col(name: &str) -> usize {
    RESULTS_HEADER.iter().position(|c| *c == name).expect("a results column")
}

/// Tables beside the paper's, and charts, from the rows.
pub fn summarize(rows: &[Vec<String>], scale: f64, out: &std::path::Path) -> Result<String> {
    use std::fmt::Write as _;
    let num = |r: &Vec<String>, c: &str| r[col(c)].parse::<f64>().unwrap_or(f64::NAN);
    let find = |section: &str, tree: &str, w: &str, d: &str, records: u64, seq: u32| {
        rows.iter().find(|r| {
            r[col("section")] == section
                && r[col("tree")] == tree
                && r[col("workload")] == w
                && r[col("distribution")] == d
                && r[col("records")] == records.to_string()
                && r[col("sequential_zones")] == seq.to_string()
        })
    };
    let mut text = format!("# Seed 003 reproduced at scale {scale} (records and zone size × {scale})\n");
    if let Some(r) = rows.first() {
        let (value, inner) = (&r[col("value_size_bytes")], &r[col("inner_entries_max")]);
        let fitted = *value == CALIBRATED_VALUE_SIZE_BYTES.to_string() && *inner == CALIBRATED_INNER_ENTRIES_MAX.to_string();
        let _ = writeln!(
            text,
            "\nValues of {value} bytes, interior fan-out capped at {inner} entries (0: as many as fit){}.",
            if fitted { " — the values fitted to the paper's load-phase figures" } else { " — not the fitted values: a sensitivity run" }
        );
    }
    let cow_rule = |c: &str, default: &str| rows.iter().find(|r| r[col("tree")] == "cow" && r[col(c)] != default).map(|r| r[col(c)].clone());
    if let Some(rebalance) = cow_rule("cow_rebalance", CowRebalance::default().name()) {
        let _ = writeln!(text, "\nCoW rebalancing: {rebalance} (splits and merges on the way down; the default is bottom-up).");
    }
    if let Some(collect) = cow_rule("cow_collect", CowCollect::default().name()) {
        let _ = writeln!(text, "\nCoW zone collection in the resets section: {collect} (a zone is collected when it fills, zones written one at a time in a cycle; the default, reserve, collects before free room falls below twice the live tree).");
    }
    let on_device = rows.iter().find(|r| r[col("device")] != "model").map(|r| r[col("device")].clone());
    match &on_device {
        Some(device) => {
            let _ = writeln!(
                text,
                "\nMeasured on {device}: every node is read from and written to it. cpu ms is the run phase's CPU time, system calls included (on a memory-backed device, its running time without what other processes took); Δ wall compares wall-clock times; model ms is the ZN540 timing model's for the same requests."
            );
        }
        None => {
            let _ = writeln!(text, "\nOn the emulated device: model ms is the ZN540 timing model's device time; cpu ms and Δ wall are the trees' own computation, without device I/O (`--device` measures on a zoned device).");
        }
    }
    let sizes = [0.5e6, 1.5e6, 2.5e6].map(|r| scaled(r, scale));
    // Rows from before the CPU column hold "-" there: shown as not measured.
    let seconds_as_ms = |r: &Vec<String>, c: &str| {
        let s = num(r, c);
        if s.is_nan() {
            "-".to_string()
        } else {
            format!("{:.1}", s * 1e3)
        }
    };
    // Grid: reads, writes, device time per distribution, at each size.
    if rows.iter().any(|r| r[col("section")] == "grid") {
        for d in KeyDistribution::ALL {
            let _ = writeln!(text, "\n## Run phase, {} keys: ZB+-tree vs CoW (reads, writes in nodes; time in ms)\n", d.name());
            let mut table = Vec::new();
            let mut bars_time = Vec::new();
            let mut bars_writes = Vec::new();
            for &records in &sizes {
                for (w, _) in WORKLOADS {
                    let (Some(zb), Some(cow)) = (find("grid", "zbtree", w, d.name(), records, 40), find("grid", "cow", w, d.name(), records, 40)) else { continue };
                    let ratio = |c: &str| {
                        let (a, b) = (num(zb, c), num(cow, c));
                        if b > 0.0 && !a.is_nan() {
                            format!("{:+.0}%", (a / b - 1.0) * 100.0)
                        } else {
                            "-".into()
                        }
                    };
                    table.push(vec![
                        records.to_string(),
                        w.to_string(),
                        zb[col("run_node_reads")].clone(),
                        cow[col("run_node_reads")].clone(),
                        ratio("run_node_reads"),
                        zb[col("run_node_writes")].clone(),
                        cow[col("run_node_writes")].clone(),
                        ratio("run_node_writes"),
                        zb[col("run_device_ms")].clone(),
                        cow[col("run_device_ms")].clone(),
                        ratio("run_device_ms"),
                        seconds_as_ms(zb, "run_cpu_s"),
                        seconds_as_ms(cow, "run_cpu_s"),
                        ratio("run_cpu_s"),
                        ratio("run_wall_s"),
                    ]);
                    if records == sizes[2] {
                        let time = if on_device.is_some() { "run_cpu_s" } else { "run_device_ms" };
                        bars_time.push((format!("{w} zb+"), num(zb, time)));
                        bars_time.push((format!("{w} cow"), num(cow, time)));
                        bars_writes.push((format!("{w} zb+"), num(zb, "run_node_writes")));
                        bars_writes.push((format!("{w} cow"), num(cow, "run_node_writes")));
                    }
                }
            }
            text.push_str(&zonekit_report::markdown_table(
                &[
                    "records",
                    "workload",
                    "reads zb+",
                    "reads cow",
                    "Δ reads",
                    "writes zb+",
                    "writes cow",
                    "Δ writes",
                    "model ms zb+",
                    "model ms cow",
                    "Δ model",
                    "cpu ms zb+",
                    "cpu ms cow",
                    "Δ cpu",
                    "Δ wall",
                ],
                &table,
            ));
            if !bars_time.is_empty() {
                let (title, unit) = match &on_device {
                    Some(device) => (format!("Run phase measured on {device}, {} keys, {} records", d.name(), sizes[2]), "s (CPU time, system calls included)"),
                    None => (format!("Device time of the run phase, {} keys, {} records", d.name(), sizes[2]), "ms (ZN540 timing, QD1)"),
                };
                write_chart(out, &format!("time-{}.svg", d.name()), zonekit_report::bar_chart(&title, unit, &bars_time))?;
                let title = format!("Node writes of the run phase, {} keys, {} records", d.name(), sizes[2]);
                write_chart(out, &format!("writes-{}.svg", d.name()), zonekit_report::bar_chart(&title, "node writes", &bars_writes))?;
            }
        }
        let _ = writeln!(text, "\n## Seq-Zone occupancy, zipfian (paper Tables 2–6 beside ours)\n");
        let mut table = Vec::new();
        for (w, paper_zb, paper_cow) in PAPER_OCCUPANCY {
            for (i, &records) in sizes.iter().enumerate() {
                let ours = |tree: &str| find("grid", tree, w, "zipfian", records, 40).map_or("-".into(), |r| r[col("sequential_occupancy")].clone());
                table.push(vec![w.into(), records.to_string(), ours("zbtree"), format!("{:.6}", paper_zb[i]), ours("cow"), format!("{:.6}", paper_cow[i])]);
            }
        }
        text.push_str(&zonekit_report::markdown_table(&["workload", "records", "zb+ ours", "zb+ paper", "cow ours", "cow paper"], &table));
    }
    if rows.iter().any(|r| r[col("section")] == "ratio") {
        let _ = writeln!(text, "\n## Cov:Seq ratio, {} records, zipfian: Seq-Zone occupancy (paper Tables 7–8 beside ours)\n", scaled(1e6, scale));
        let mut table = Vec::new();
        for (w, paper_zb, paper_cow) in PAPER_RATIO {
            for (i, seq) in [32u32, 48, 64].into_iter().enumerate() {
                let r = |tree: &str| find("ratio", tree, w, "zipfian", scaled(1e6, scale), seq);
                let ours = |tree: &str| r(tree).map_or("-".into(), |r| r[col("sequential_occupancy")].clone());
                let ms = |tree: &str| r(tree).map_or("-".into(), |r| r[col("run_device_ms")].clone());
                let cpu = |tree: &str| r(tree).map_or("-".into(), |r| seconds_as_ms(r, "run_cpu_s"));
                table.push(vec![
                    w.into(),
                    format!("1:{seq}"),
                    ours("zbtree"),
                    format!("{:.6}", paper_zb[i]),
                    ours("cow"),
                    format!("{:.6}", paper_cow[i]),
                    ms("zbtree"),
                    ms("cow"),
                    cpu("zbtree"),
                    cpu("cow"),
                ]);
            }
        }
        text.push_str(&zonekit_report::markdown_table(
            &["workload", "Cov:Seq", "zb+ ours", "zb+ paper", "cow ours", "cow paper", "model ms zb+", "model ms cow", "cpu ms zb+", "cpu ms cow"],
            &table,
        ));
    }
    if rows.iter().any(|r| r[col("section")] == "resets") {
        let _ = writeln!(text, "\n## Zone resets with 1 Seq + 1 Cov zone, no dynamic choice, zipfian (paper §4.2.5 beside ours; run phase, and with the load)\n");
        let mut table = Vec::new();
        for (w, paper_cow) in PAPER_RESETS {
            for (i, records) in [2.5e6, 5e6, 7.5e6].into_iter().enumerate() {
                let n = scaled(records, scale);
                let ours = |tree: &str| {
                    rows.iter()
                        .find(|r| r[col("section")] == "resets" && r[col("tree")] == tree && r[col("workload")] == w && r[col("records")] == n.to_string())
                        .map_or("-".into(), |r| format!("{} ({})", r[col("run_zone_resets")], r[col("zone_resets")]))
                };
                table.push(vec![w.into(), n.to_string(), ours("zbtree"), "0".into(), ours("cow"), paper_cow[i].to_string()]);
            }
        }
        text.push_str(&zonekit_report::markdown_table(&["workload", "records", "zb+ ours, run (all)", "zb+ paper", "cow ours, run (all)", "cow paper"], &table));
    }
    if rows.iter().any(|r| r[col("section")] == "conventional") {
        let _ = writeln!(text, "\n## ZB+-tree Cov-Zone occupancy, zipfian (paper Fig. 21: linear, < 0.50 at 10 M)\n");
        let mut table = Vec::new();
        let mut series = Vec::new();
        for (w, _) in &WORKLOADS[..2] {
            let mut points = Vec::new();
            for records in [1e6, 2.5e6, 5e6, 7.5e6, 10e6] {
                let n = scaled(records, scale);
                if let Some(r) = rows.iter().find(|r| r[col("section")] == "conventional" && r[col("workload")] == *w && r[col("records")] == n.to_string()) {
                    table.push(vec![w.to_string(), n.to_string(), r[col("conventional_occupancy")].clone(), r[col("sequential_occupancy")].clone()]);
                    points.push((n as f64, num(r, "conventional_occupancy")));
                }
            }
            series.push(zonekit_report::Series { name: w.to_string(), points });
        }
        text.push_str(&zonekit_report::markdown_table(&["workload", "records", "Cov occupancy", "Seq occupancy"], &table));
        write_chart(out, "conventional-occupancy.svg", zonekit_report::line_chart("ZB+-tree Cov-Zone occupancy (zipfian)", "records", "occupancy", &series, false))?;
    }
    Ok(text)
}

fn write_chart(out: &std::path::Path, name: &str, svg: String) -> Result<()> {
    let path = out.join(name);
    std::fs::write(&path, svg).map_err(LabError::io(&path))
}

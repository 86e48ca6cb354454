//! Seed 003's experiment: YCSB-style workloads on the ZB+-tree and the copy-on-write B+-tree.
//!
//! A run loads `records` keys, then runs `operations` inserts / deletes / searches in the mix
//! of one of the paper's workloads (W1–W5) or a custom one, with keys chosen as YCSB 0.17.0's
//! CoreWorkload chooses them: record `i`'s key is `fnvhash64(i)` (YCSB's default hashed insert
//! order); the run's zipfian chooser is the scrambled zipfian over `records + 2 × expected
//! inserts` key numbers, uniform is over the loaded key numbers, latest is YCSB's skewed-latest;
//! a chosen key number not inserted yet is drawn again (CoreWorkload.nextKeynum). Inserts take
//! the next key number. YCSB has no delete; the paper's deletes choose their key like a search
//! ([`DeleteKeys::Redraw`], the default; [`DeleteKeys::Once`] and [`DeleteKeys::PlainZipfian`]
//! are other readings the paper leaves open).
//!
//! The device is the paper's: sequential zones plus conventional zones of one size (40 + 1 of
//! 2 GiB, 4 KiB blocks), emulated in memory without payload while the tree keeps its live nodes'
//! bytes (so an 82 GiB device costs memory in proportion to the tree), with the ZN540 flash
//! timing as assumed before issue 48 fitted the preset (`preset::ZN540_ASSUMED_FLASH`), at queue
//! depth 1, for the device time. Reported: the run phase's node reads and writes, its
//! device time and wall-clock rate, and at the end the occupancy of both zone kinds and resets.

use std::time::Instant;

use serde::Serialize;
use zonekit_base::Rng;
use zonekit_device::timing::TimedDevice;
use zonekit_device::{FirstZones, Geometry, MemDevice, StorageMode, ZoneBehavior, ZonedDevice};
use zonekit_trace::synth::ycsb::{fnv_hash64, KeyChooser, Latest, ScrambledZipfian, Uniform, Zipfian, ZIPFIAN_CONSTANT};
use zonekit_trace::synth::YcsbDist;
use zonekit_zbtree::{CowCollect, CowRebalance, CowTree, Index, Payload, TreeConfig, TreeError, TreeStats, ZbTree};

use crate::harness::error::{LabError, Result};

/// The two trees.
///
/// Serialised as `--tree` names them (`zbtree`, `cow`), so JSON output can be fed back as a
/// flag; nothing reads the JSON back into this type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum TreeKind {
    #[serde(rename = "zbtree")]
    Zb,
    #[serde(rename = "cow")]
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
        // On a device the zone size is the device's, but how many of its zones the trees take
        // is the spec's (the ratio section takes 32, 48 or 64): without it a rerun took 40.
        parts.push(format!("--sequential-zones {} --conventional-zones {}", self.sequential_zones, self.conventional_zones));
        match device {
            Some(d) => parts.push(format!("--device {}", zonekit_report::shell_word(d))),
            None => parts.push(format!("--zone-size-mib {}", self.zone_size_bytes >> 20)),
        }
        parts.push(format!("--node-size-bytes {} --value-size-bytes {} --inner-entries-max {}", self.node_size_bytes, self.value_size_bytes, self.inner_entries_max));
        if !self.dynamic_zone_choice {
            parts.push("--no-dynamic-zone-choice".into());
        }
        parts.push(format!("--cow-rebalance {} --cow-collect {} --timing {} --seed {}", self.cow_rebalance.name(), self.cow_collect.name(), self.timing.name(), self.seed));
        // Spelt out only when not the default, so that the commands the committed rows print
        // (all of them redraw) stay as they were.
        if self.delete_keys != DeleteKeys::default() {
            parts.push(format!("--delete-keys {}", self.delete_keys.name()));
        }
        parts.join(" ")
    }
}

/// Which ZN540 figures charge the trees' device time (`--timing`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TreeTiming {
    /// The `zn540` preset as fitted to the drive's published measurements (issue 48).
    #[default]
    Zn540,
    /// The figures the preset had before the fit ([`zonekit_device::preset::ZN540_ASSUMED_FLASH`]),
    /// which seed 003's results made before issue 48 used; kept so that they rerun.
    Zn540Assumed,
}

impl TreeTiming {
    pub const ALL: [TreeTiming; 2] = [TreeTiming::Zn540, TreeTiming::Zn540Assumed];

    pub fn name(self) -> &'static str {
        match self {
            TreeTiming::Zn540 => "zn540",
            TreeTiming::Zn540Assumed => "zn540-assumed",
        }
    }

    pub fn flash(self) -> zonekit_device::timing::FlashConfig {
        match self {
            TreeTiming::Zn540 => zonekit_device::preset::ZN540_FLASH,
            TreeTiming::Zn540Assumed => zonekit_device::preset::ZN540_ASSUMED_FLASH,
        }
    }

    /// What the model gives ([`zonekit_device::bench::timing_fingerprint`]), worked out once
    /// a process.
    pub fn fingerprint(self) -> &'static str {
        static FINGERPRINTS: [std::sync::OnceLock<String>; 2] = [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
        let i = TreeTiming::ALL.iter().position(|t| *t == self).expect("ALL holds every timing");
        FINGERPRINTS[i].get_or_init(|| zonekit_device::bench::timing_fingerprint(&self.flash()))
    }

    /// How the tables name the model: "the fitted ZN540 model" or "the ZN540 as assumed
    /// before the fit".
    pub fn describe(self) -> &'static str {
        match self {
            TreeTiming::Zn540 => "the ZN540 timing model (fitted to the drive, docs/results/devices.md)",
            TreeTiming::Zn540Assumed => "the ZN540 timing as assumed before its fit (58 µs reads, 561 µs programs)",
        }
    }
}

/// `zn540` or `zn540-assumed` (`--timing`).
pub fn tree_timing(name: &str) -> Result<TreeTiming> {
    TreeTiming::ALL.into_iter().find(|t| t.name() == name).ok_or_else(|| LabError::Usage(format!("--timing {name:?}: zn540 (fitted) or zn540-assumed")))
}

/// `zipfian`, `uniform` or `latest`.
pub fn parse_distribution(name: &str) -> Result<KeyDistribution> {
    YcsbDist::from_name(name).ok_or_else(|| LabError::Usage(format!("unknown distribution {name:?}: zipfian, uniform or latest")))
}

/// `bottom-up` or `top-down` (`--cow-rebalance`).
pub fn cow_rebalance(name: &str) -> Result<CowRebalance> {
    CowRebalance::from_name(name).ok_or_else(|| LabError::Usage(format!("--cow-rebalance {name:?}: bottom-up or top-down")))
}

/// How a run-phase delete chooses its key. YCSB (0.17.0) has no delete operation and the paper
/// does not say how it added one, so this is a reading, not the paper's rule.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeleteKeys {
    /// As a search chooses its key (CoreWorkload.nextKeynum): a key number not inserted yet is
    /// drawn again. Every committed result uses this.
    #[default]
    Redraw,
    /// One draw from the same chooser: a key number not inserted yet is not drawn again, and
    /// the delete looks for a key that is not there (it reads, writes nothing, and counts in
    /// `deletes_missing`).
    Once,
    /// One draw from YCSB's plain `ZipfianGenerator` over the loaded records' key numbers
    /// (0 the most popular, not scrambled), whatever the run's distribution: the hot keys are
    /// the same few all run long, so a delete finds its key less often than with either rule
    /// above.
    PlainZipfian,
}

impl DeleteKeys {
    pub const ALL: [DeleteKeys; 3] = [DeleteKeys::Redraw, DeleteKeys::Once, DeleteKeys::PlainZipfian];

    pub fn name(self) -> &'static str {
        match self {
            DeleteKeys::Redraw => "redraw",
            DeleteKeys::Once => "once",
            DeleteKeys::PlainZipfian => "plain-zipfian",
        }
    }
}

/// `redraw`, `once` or `plain-zipfian` (`--delete-keys`).
pub fn delete_keys(name: &str) -> Result<DeleteKeys> {
    DeleteKeys::ALL.into_iter().find(|d| d.name() == name).ok_or_else(|| LabError::Usage(format!("--delete-keys {name:?}: redraw, once or plain-zipfian")))
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
    /// How a run-phase delete chooses its key (both trees).
    pub delete_keys: DeleteKeys,
    /// Whose figures charge the device time.
    pub timing: TreeTiming,
}

pub(crate) const GIB: u64 = 1 << 30;

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
pub(crate) const BLOCK_BYTES: u64 = 4096;
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
            delete_keys: DeleteKeys::Redraw,
            timing: TreeTiming::default(),
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
        // The cow tree lists its conventional zones' node slots up front (8 bytes each): a
        // zone of 2^32 MiB would have the process take memory without end.
        let conventional_slots = self.conventional_zones as u64 * (self.zone_size_bytes / self.node_size_bytes as u64);
        if let Some(total) = zonekit_base::mem::beyond_memory(conventional_slots.saturating_mul(8)) {
            return bad(format!(
                "{zones} --zone-size-mib {} --node-size-bytes {}: {conventional_slots} conventional node slots need more memory than the machine's {total} bytes",
                self.zone_size_bytes >> 20,
                self.node_size_bytes
            ));
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
    /// Deletes of keys that were not there (already deleted, or with [`DeleteKeys::Once`] not
    /// inserted yet).
    pub deletes_missing: u64,
    pub node_reads: u64,
    pub node_writes: u64,
    /// Of `node_writes`, those made during inserts and during deletes (a collection counted
    /// with the operation it came before); searches write nothing.
    pub insert_node_writes: u64,
    pub delete_node_writes: u64,
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

impl TreeOutcome {
    /// Why some of this run's figures mean less than they seem, each naming the flag to change:
    /// a run phase of no operations (its time, reads and writes are over zero samples), or a
    /// tree of one level (no inner node, so the layers the trees differ in never came into play).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.run.operations == 0 {
            w.push(format!("{}: the run phase had no operations: its time, reads and writes are over zero samples; give --operations", self.spec.tree.name()));
        }
        if self.stats.height <= 1 {
            w.push(format!(
                "{}: {} records fit one node (height {}): the inner layers the trees differ in never came into play; load more --records",
                self.spec.tree.name(),
                self.spec.records,
                self.stats.height
            ));
        }
        w
    }
}

/// The run phase's key numbers (YCSB CoreWorkload: the chooser, and a chosen key number not
/// inserted yet is drawn again).
struct Keys {
    chooser: KeyChooser,
    /// [`DeleteKeys::PlainZipfian`]'s chooser, over the loaded key numbers (made on first use:
    /// its ζ sums a term per record).
    plain: Option<Zipfian>,
    records: u64,
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
        Keys { chooser, plain: None, records, inserted: records }
    }

    fn choose(&mut self, rng: &mut Rng) -> u64 {
        loop {
            let keynum = self.chooser.next(rng);
            if keynum < self.inserted {
                return keynum;
            }
        }
    }

    /// A delete's key number by `rule`; with [`DeleteKeys::Once`] it may be one not inserted
    /// yet, whose key is in no tree (as the load, this takes distinct key numbers' hashes to
    /// differ).
    fn choose_delete(&mut self, rule: DeleteKeys, rng: &mut Rng) -> u64 {
        match rule {
            DeleteKeys::Redraw => self.choose(rng),
            DeleteKeys::Once => self.chooser.next(rng),
            DeleteKeys::PlainZipfian => {
                let records = self.records;
                self.plain.get_or_insert_with(|| Zipfian::new(0, records - 1, ZIPFIAN_CONSTANT)).next(rng)
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
        let device = TimedDevice::new(device, spec.timing.flash(), 1)?;
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

    /// Nodes written so far (cheap: no statistics are gathered).
    fn node_writes(&self) -> u64 {
        match self {
            AnyTree::Zb(t) => t.store().stats().node_writes(),
            AnyTree::Cow(t) => t.store().stats().node_writes(),
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
        let writes_before = tree.node_writes();
        if dice < spec.mix.insert_pct {
            let key = key_of(keys.insert());
            tree.index().insert(key, &value_of(key, spec.value_size_bytes)).map_err(engine_error(spec, "run", op))?;
            run.inserts += 1;
            run.insert_node_writes += tree.node_writes() - writes_before;
        } else if dice < spec.mix.insert_pct + spec.mix.delete_pct {
            let key = key_of(keys.choose_delete(spec.delete_keys, &mut rng));
            if !tree.index().delete(key).map_err(engine_error(spec, "run", op))? {
                run.deletes_missing += 1;
            }
            run.deletes += 1;
            run.delete_node_writes += tree.node_writes() - writes_before;
        } else {
            let index = tree.index();
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
mod tests;

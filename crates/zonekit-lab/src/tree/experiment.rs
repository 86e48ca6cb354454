//! Seed 003's section 4 as one experiment (`zonekit tree experiment`): the grid of workloads,
//! record counts and trees, the Cov:Seq ratio, zone resets and Cov-zone occupancy, at scaled
//! record counts and zone size, resumable by settings, on the emulated device (model time) or
//! on a zoned device's first zones (wall and CPU time measured on it); `results.csv`,
//! `summary.md`, charts and each row's own `zonekit tree run` (`commands.tsv`). One run is
//! [`crate::tree::bench`]'s.

use zonekit_device::ZonedDevice;
use zonekit_zbtree::{CowCollect, CowRebalance};

use crate::harness::error::{LabError, Result};
use crate::tree::bench::*;

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
    /// Whose ZN540 figures charge every run's device time.
    pub timing: TreeTiming,
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
            timing: self.timing,
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
pub const RESULTS_HEADER: [&str; 34] = [
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
    // Whose ZN540 figures charge run_device_ms: zn540 (fitted) or zn540-assumed (before the
    // fit; the rows made before issue 48 added this column).
    "timing",
    // What that timing model gives (`zonekit_device::bench::timing_fingerprint`): a row made
    // under other figures of the same name is another run's, not one to resume.
    "timing_fingerprint",
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
const SETTINGS_COLUMNS: usize = 18;

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
        s.timing.name().into(),
        s.timing.fingerprint().into(),
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
    /// The paper's device emulated in memory, the ZN540 timing model's device time (the
    /// experiment's `timing`); runs in
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

pub(crate) fn col(name: &str) -> usize {
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
    let timing = rows.first().and_then(|r| TreeTiming::ALL.into_iter().find(|t| t.name() == r[col("timing")])).unwrap_or_default();
    let model = timing.describe();
    match &on_device {
        Some(device) => {
            let _ = writeln!(
                text,
                "\nMeasured on {device}: every node is read from and written to it. cpu ms is the run phase's CPU time, system calls included (on a memory-backed device, its running time without what other processes took); Δ wall compares wall-clock times; model ms is the time {model} gives the same requests."
            );
        }
        None => {
            let _ = writeln!(text, "\nOn the emulated device: model ms is the device time under {model}; cpu ms and Δ wall are the trees' own computation, without device I/O (`--device` measures on a zoned device).");
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
                    None => (
                        format!("Device time of the run phase, {} keys, {} records", d.name(), sizes[2]),
                        if timing == TreeTiming::Zn540 { "ms (fitted ZN540 timing, QD1)" } else { "ms (ZN540 timing as assumed, QD1)" },
                    ),
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
    zonekit_base::atomic::write(&path, svg).map_err(LabError::io(&path))
}

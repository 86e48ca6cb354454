//! `zonekit tree`: seed 003's ZB+-tree and copy-on-write B+-tree under YCSB-style workloads
//! (`zonekit_lab::tree::bench` runs them).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use zonekit_lab::tree::bench::{cow_collect, cow_rebalance, fits_device, run_tree, run_tree_on, tree_timing, DeleteKeys, TreeKind, TreeOutcome, TreeSpec};
use zonekit_lab::tree::experiment::{run_experiment, Backend, Section, TreeExperiment};
use zonekit_lab::tree::run::TreeRunSettings;

use crate::error::lab;
use crate::error::Usage;

#[derive(Subcommand)]
pub enum TreeCommand {
    /// Load records into one or both trees, run a workload, print reads, writes, device time,
    /// occupancy and resets.
    Run(RunArgs),
    /// Reproduce the paper's section 4: tables beside the paper's and SVG charts.
    Experiment(ExperimentArgs),
    /// Create an empty durable ZB+-tree on a zoned device (an image or /dev) with a
    /// conventional zone; over an existing tree only with --force.
    Create(crate::tree_image::CreateArgs),
    /// Insert records into the tree on a device, each committed durably before the next.
    Load(crate::tree_image::LoadArgs),
    /// Print records of the tree on a device (read-only).
    Get(crate::tree_image::GetArgs),
    /// Delete records from the tree on a device, each committed durably.
    Delete(crate::tree_image::DeleteArgs),
    /// Open the tree on a device (completing an operation a crash interrupted after its
    /// commit), walk it and check every invariant and, with --seed, every value.
    Check(crate::tree_image::CheckArgs),
}

#[derive(Args)]
pub struct RunArgs {
    /// zbtree, cow, or both (one after the other on the same workload).
    #[arg(long, default_value_t = TreeRunSettings::default().tree)]
    tree: String,
    /// w1..w5 (the paper's mixes) or INSERT/DELETE/SEARCH percentages, e.g. 40/30/30.
    #[arg(long, default_value_t = TreeRunSettings::default().workload)]
    workload: String,
    /// zipfian, uniform or latest (YCSB's key choosers).
    #[arg(long, default_value_t = TreeRunSettings::default().distribution)]
    distribution: String,
    /// Records loaded first (suffixes K and M allowed).
    #[arg(long, default_value_t = TreeRunSettings::default().records, value_parser = count)]
    records: u64,
    /// Operations run after the load (default: as many as records).
    #[arg(long, value_parser = count)]
    operations: Option<u64>,
    #[arg(long, default_value_t = TreeRunSettings::default().sequential_zones)]
    sequential_zones: u32,
    #[arg(long, default_value_t = TreeRunSettings::default().conventional_zones)]
    conventional_zones: u32,
    /// Zone size of the emulated device (default 2048, the paper's); with --device the
    /// device's, and the flag is refused.
    #[arg(long)]
    zone_size_mib: Option<u64>,
    /// Run on this zoned device (an image or /dev) instead of the emulated one: nodes are
    /// written to it and read back, and wall time is measured on it. The trees take its first
    /// conventional + sequential zones (its conventional zones come first); what they held is
    /// overwritten.
    #[arg(long)]
    device: Option<PathBuf>,
    #[arg(long, default_value_t = TreeRunSettings::default().node_size_bytes)]
    node_size_bytes: usize,
    /// Value bytes per record (default: fitted to the paper's load-phase figures, see
    /// docs/results/seed-003.md).
    #[arg(long, default_value_t = TreeRunSettings::default().value_size_bytes)]
    value_size_bytes: usize,
    /// Cap on entries of interior, head and CoW inner nodes, 0 for as many as fit (default:
    /// fitted like the value size).
    #[arg(long, default_value_t = TreeRunSettings::default().inner_entries_max)]
    inner_entries_max: usize,
    /// Fill sequential zones in order instead of the paper's hot/cold (most/least free) choice.
    #[arg(long)]
    no_dynamic_zone_choice: bool,
    /// How the cow tree splits and merges: bottom-up (on the way back up, a sibling read only
    /// when a node falls below half) or top-down (Rodeh's: on the way down, a delete reading a
    /// sibling at every level whose node is at its minimum). cow tree only.
    #[arg(long, default_value_t = TreeRunSettings::default().cow_rebalance)]
    cow_rebalance: String,
    /// When the cow tree collects a zone: reserve (before free room falls below twice the live
    /// tree, the zone with the fewest live nodes) or when-full (§4.2.5: a zone as soon as it
    /// fills, zones written one at a time in a cycle; needs --no-dynamic-zone-choice). cow tree
    /// only.
    #[arg(long, default_value_t = TreeRunSettings::default().cow_collect)]
    cow_collect: String,
    /// How a run-phase delete chooses its key: redraw (as a search: a key number not inserted
    /// yet is drawn again) or once (one draw; a key number not inserted yet is a delete that
    /// finds nothing) or plain-zipfian (one draw from YCSB's unscrambled zipfian over the loaded
    /// records: the same hot keys all run long). YCSB has no delete and the paper does not say;
    /// both trees.
    #[arg(long, default_value_t = TreeRunSettings::default().delete_keys)]
    delete_keys: String,
    /// Whose ZN540 figures charge the model ms: zn540 (the preset fitted to the drive's
    /// published measurements) or zn540-assumed (the figures before that fit, which seed 003's
    /// earlier results used).
    #[arg(long, default_value_t = TreeRunSettings::default().timing)]
    timing: String,
    #[arg(long, default_value_t = TreeRunSettings::default().seed)]
    seed: u64,
    /// Print the full outcome as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    fn settings(&self) -> TreeRunSettings {
        TreeRunSettings {
            tree: self.tree.clone(),
            workload: self.workload.clone(),
            distribution: self.distribution.clone(),
            records: self.records,
            operations: self.operations,
            sequential_zones: self.sequential_zones,
            conventional_zones: self.conventional_zones,
            zone_size_mib: self.zone_size_mib,
            node_size_bytes: self.node_size_bytes,
            value_size_bytes: self.value_size_bytes,
            inner_entries_max: self.inner_entries_max,
            no_dynamic_zone_choice: self.no_dynamic_zone_choice,
            cow_rebalance: self.cow_rebalance.clone(),
            cow_collect: self.cow_collect.clone(),
            delete_keys: self.delete_keys.clone(),
            timing: self.timing.clone(),
            seed: self.seed,
        }
    }
}

#[derive(Args)]
pub struct ExperimentArgs {
    /// Multiplies the paper's record counts and zone size (1 = the paper's 0.5-10 M records on
    /// 2 GiB zones; occupancies and resets stay comparable at any scale).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Sections of §4 to run: grid, ratio, resets, conventional.
    #[arg(long, value_delimiter = ',', default_value = "grid,ratio,resets,conventional")]
    sections: Vec<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Value bytes per record in every run (default: fitted to the paper's load-phase figures;
    /// change it to see which results depend on the fit).
    #[arg(long, default_value_t = zonekit_lab::tree::bench::CALIBRATED_VALUE_SIZE_BYTES)]
    value_size_bytes: usize,
    /// Cap on entries of interior, head and CoW inner nodes in every run, 0 for as many as fit
    /// (default: fitted like the value size).
    #[arg(long, default_value_t = zonekit_lab::tree::bench::CALIBRATED_INNER_ENTRIES_MAX)]
    inner_entries_max: usize,
    /// How every cow run splits and merges: bottom-up or top-down (see `tree run`). The zbtree
    /// runs do not depend on it (a rerun into the same --out reuses them).
    #[arg(long, default_value = "bottom-up")]
    cow_rebalance: String,
    /// When the cow runs of the resets section (zones in order) collect a zone: reserve or
    /// when-full (§4.2.5's rule; see `tree run`). Refused without the resets section.
    #[arg(long, default_value = "reserve")]
    cow_collect: String,
    /// Whose ZN540 figures charge the model ms: zn540 (the preset fitted to the drive's
    /// published measurements) or zn540-assumed (the figures before that fit, which seed 003's
    /// earlier results used).
    #[arg(long, default_value_t = TreeRunSettings::default().timing)]
    timing: String,
    /// Runs in parallel (default: the machine's cores; with --device 1, the only value).
    #[arg(long)]
    threads: Option<usize>,
    /// Run every cell on this zoned device (an image or /dev) instead of the emulated one, one
    /// after another, with wall time measured on it beside the model's. Its zones must be the
    /// experiment's (2 GiB × --scale), one conventional zone first, and as many sequential
    /// zones as the sections need (grid 40, ratio 64, resets 1, conventional 40).
    #[arg(long)]
    device: Option<PathBuf>,
    #[arg(long, default_value = "zonekit-out/tree")]
    out: PathBuf,
}

/// A count with an optional K or M suffix (`100K`, `2.5M`): [`zonekit_lab::tree::bench::parse_count`].
fn count(text: &str) -> Result<u64, String> {
    zonekit_lab::tree::bench::parse_count(text)
}

pub fn run(cmd: TreeCommand) -> Result<ExitCode> {
    match cmd {
        TreeCommand::Run(a) => run_cmd(a),
        TreeCommand::Experiment(a) => experiment_cmd(a),
        TreeCommand::Create(a) => crate::tree_image::create(a),
        TreeCommand::Load(a) => crate::tree_image::load(a),
        TreeCommand::Get(a) => crate::tree_image::get(a),
        TreeCommand::Delete(a) => crate::tree_image::delete(a),
        TreeCommand::Check(a) => crate::tree_image::check(a),
    }
}

fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    let settings = a.settings();
    let trees = settings.trees().map_err(lab)?;
    if let (Some(_), Some(mib)) = (&a.device, a.zone_size_mib) {
        return Err(Usage(format!("--zone-size-mib {mib}: with --device the zones are the device's")).into());
    }
    let (base, mut device) = match &a.device {
        Some(path) => {
            let device = crate::open::open_read_write(path)?.device;
            let base = settings.spec_with_zones_of(device.geometry().zone_size_bytes()).map_err(lab)?;
            fits_device(&base, device.geometry()).map_err(|e| Usage(format!("--device {}: {e}", path.display())))?;
            (base, Some(device))
        }
        None => (settings.spec().map_err(lab)?, None),
    };
    let mut outcomes = Vec::new();
    for tree in trees {
        let spec = TreeSpec { tree, ..base.clone() };
        let bar = crate::progress::Progress::bar(spec.records + spec.operations, "ops");
        bar.set_message(tree.name());
        let mut tick = |done, _| bar.set_position(done);
        let outcome = match device.take() {
            Some(on) => {
                let (outcome, back) = run_tree_on(&spec, on, &mut tick).map_err(lab)?;
                device = Some(back);
                outcome
            }
            None => run_tree(&spec, &mut tick).map_err(lab)?,
        };
        bar.finish_and_clear();
        outcomes.push(outcome);
    }
    crate::sweep_run::print_warnings(&outcomes.iter().flat_map(TreeOutcome::warnings).collect::<Vec<_>>());
    if a.json {
        println!("{}", serde_json::to_string_pretty(&outcomes)?);
        return Ok(ExitCode::SUCCESS);
    }
    say!(
        "{} records loaded, then {} operations of {} ({}% insert, {}% delete, {}% search), {} keys; {} sequential + {} conventional zones of {} MiB",
        base.records,
        base.operations,
        base.mix.name(),
        base.mix.insert_pct,
        base.mix.delete_pct,
        base.mix.search_pct,
        base.distribution.name(),
        base.sequential_zones,
        base.conventional_zones,
        base.zone_size_bytes >> 20
    );
    if outcomes.iter().any(|o| o.spec.tree == TreeKind::Cow) {
        println!("the cow tree: {} rebalancing, {} collection", base.cow_rebalance.name(), base.cow_collect.name());
    }
    if base.delete_keys != DeleteKeys::default() {
        println!("deletes choose their key {}: {} of {} found none", base.delete_keys.name(), outcomes[0].run.deletes_missing, outcomes[0].run.deletes);
    }
    match &a.device {
        Some(path) => {
            println!(
                "measured on {}: the run phase's wall and CPU time (system calls included) on it; model ms the time {} gives the same requests",
                path.display(),
                base.timing.describe()
            )
        }
        None => say!("on the emulated device: model ms is the device time under {}; wall and CPU ms the trees' own computation (no device I/O)", base.timing.describe()),
    }
    // Two tables, so each fits a terminal: the run's I/O and time, then the space it left.
    let header = ["tree", "run reads", "run writes", "to seq zones", "model ms", "wall ms", "cpu ms", "wall ops/s"];
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| {
            vec![
                o.spec.tree.name().to_string(),
                o.run.node_reads.to_string(),
                o.run.node_writes.to_string(),
                o.run.node_writes_sequential.to_string(),
                format!("{:.1}", o.run.device_ns as f64 / 1e6),
                format!("{:.1}", o.run.wall_s * 1e3),
                format!("{:.1}", o.run.cpu_s * 1e3),
                format!("{:.0}", o.run.ops_per_sec()),
            ]
        })
        .collect();
    print!("{}", zonekit_report::fitted_table(&header, &rows, zonekit_report::TERMINAL_COLUMNS));
    let header = ["tree", "seq occupancy", "cov occupancy", "resets", "height"];
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| {
            vec![
                o.spec.tree.name().to_string(),
                format!("{:.6}", o.stats.sequential_occupancy),
                format!("{:.6}", o.stats.conventional_occupancy),
                o.stats.io.zone_resets.to_string(),
                o.stats.height.to_string(),
            ]
        })
        .collect();
    print!("\n{}", zonekit_report::fitted_table(&header, &rows, zonekit_report::TERMINAL_COLUMNS));
    Ok(ExitCode::SUCCESS)
}

fn experiment_cmd(a: ExperimentArgs) -> Result<ExitCode> {
    let sections = a.sections.iter().map(|s| Section::parse(s)).collect::<Result<Vec<_>, _>>().map_err(lab)?;
    let threads = match (&a.device, a.threads) {
        (Some(_), Some(n)) if n != 1 => return Err(Usage(format!("--threads {n}: runs on one --device take turns (--threads 1)")).into()),
        (Some(_), _) => 1,
        (None, threads) => crate::experiment_run::threads(threads)?,
    };
    // Before the runs are listed: their record counts are the paper's times the scale.
    if !(a.scale > 0.0 && a.scale <= 4.0) {
        return Err(Usage(format!("--scale {} is out of range: (0, 4]", a.scale)).into());
    }
    let exp = TreeExperiment {
        scale: a.scale,
        sections,
        seed: a.seed,
        value_size_bytes: a.value_size_bytes,
        inner_entries_max: a.inner_entries_max,
        cow_rebalance: cow_rebalance(&a.cow_rebalance).map_err(lab)?,
        cow_collect: cow_collect(&a.cow_collect).map_err(lab)?,
        timing: tree_timing(&a.timing).map_err(lab)?,
        threads,
        out: a.out.clone(),
    };
    crate::out_dir::claim_out(&a.out, "tree experiment", true)?;
    let backend = match &a.device {
        Some(path) => Backend::Device { name: path.display().to_string(), device: crate::open::open_read_write(path)?.device },
        None => Backend::Model,
    };
    let runs = exp.specs().len() as u64;
    let bar = crate::progress::Progress::bar(runs, "runs");
    let outcome = run_experiment(&exp, backend, &|done, _, label| {
        bar.set_position(done as u64);
        bar.set_message(label);
    })
    .map_err(lab)?;
    bar.finish_and_clear();
    let previous = a.out.join("results.previous.csv");
    if outcome.damaged > 0 {
        println!("tree experiment: {} damaged rows of results.csv moved to {}, recomputed", outcome.damaged, previous.display());
    }
    if outcome.set_aside > 0 {
        println!("tree experiment: {} rows of other settings moved to {}", outcome.set_aside, previous.display());
    }
    print!("{}", zonekit_report::for_terminal(&outcome.summary, zonekit_report::TERMINAL_COLUMNS));
    println!("\nresults: {}/results.csv, summary.md and charts", a.out.display());
    crate::out_dir::seed_figures(3, &a.out);
    crate::out_dir::finish(&a.out)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Run {
        #[command(flatten)]
        run: RunArgs,
    }

    /// A bare `tree run` is the lab's default settings, and each flag reaches its setting.
    #[test]
    fn the_flags_are_the_lab_settings() {
        assert_eq!(Run::parse_from(["run"]).run.settings(), TreeRunSettings::default());
        let given = Run::parse_from([
            "run",
            "--tree",
            "cow",
            "--records",
            "2K",
            "--operations",
            "3K",
            "--workload",
            "w4",
            "--distribution",
            "uniform",
            "--seed",
            "7",
            "--sequential-zones",
            "9",
            "--conventional-zones",
            "2",
            "--zone-size-mib",
            "64",
            "--node-size-bytes",
            "8192",
            "--value-size-bytes",
            "40",
            "--inner-entries-max",
            "50",
            "--no-dynamic-zone-choice",
            "--cow-rebalance",
            "top-down",
            "--cow-collect",
            "when-full",
            "--delete-keys",
            "once",
            "--timing",
            "zn540-assumed",
        ])
        .run
        .settings();
        let expected = TreeRunSettings {
            tree: "cow".into(),
            records: 2000,
            operations: Some(3000),
            workload: "w4".into(),
            distribution: "uniform".into(),
            seed: 7,
            sequential_zones: 9,
            conventional_zones: 2,
            zone_size_mib: Some(64),
            node_size_bytes: 8192,
            value_size_bytes: 40,
            inner_entries_max: 50,
            no_dynamic_zone_choice: true,
            cow_rebalance: "top-down".into(),
            cow_collect: "when-full".into(),
            delete_keys: "once".into(),
            timing: "zn540-assumed".into(),
        };
        assert_eq!(given, expected);
    }
}

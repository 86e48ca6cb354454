//! `zonekit replay` and `zonekit sweep`: the block FTL on traces and workloads.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use zonekit_ftl::engine::DEFAULT_GC_THRESHOLD;
use zonekit_ftl::placement::{self, Params};
use zonekit_ftl::{victim, CapacityMode, FtlConfig, GcTrigger};
use zonekit_lab::block::replay::{replay, ReplayReport, ReplaySpec, DEFAULT_PRESET, DEFAULT_UTILIZATION};
use zonekit_lab::block::sweep::{self, Shard, Sweep, SweepInput};
use zonekit_lab::harness::interface::Interface;
use zonekit_lab::LabError;
use zonekit_report::{bar_chart, text_table};

use crate::progress::Progress;
use crate::trace_cmd::InputArgs;
use crate::Usage;

/// Device and FTL settings shared by replay and sweep.
#[derive(Args, Clone, Debug)]
pub struct FtlArgs {
    /// Device preset (zone size, open limit, flash timing): tiny, ocssd-thesis, femu-zns, zn540, nvmevirt-zns.
    #[arg(long, default_value = DEFAULT_PRESET)]
    pub preset: String,
    /// Size the device so the working set fills this share of it (over-provisioning = 1 − u).
    #[arg(long, default_value_t = DEFAULT_UTILIZATION, conflicts_with_all = ["unbounded", "preset_size"])]
    pub utilization: f64,
    /// Use the preset's own size instead of sizing by --utilization.
    #[arg(long)]
    pub preset_size: bool,
    /// The SepBIT simulator's unbounded log instead of a fixed capacity.
    #[arg(long)]
    pub unbounded: bool,
    /// Garbage proportion that triggers GC under gp-sealed and gp-all, the least a zone a
    /// garbage-triggered GC takes must hold, and the share CBE victims must exceed.
    #[arg(long, default_value_t = DEFAULT_GC_THRESHOLD)]
    pub gc_threshold: f64,
    /// When a fixed-capacity ZNS device collects: free-zones (only when free zones run short,
    /// so --utilization sets the over-provisioning GC works with; what an SSD's own GC does),
    /// gp-sealed (the SepBIT prototype and seed 000: sealed garbage at or over the threshold) or
    /// gp-all (all garbage, open zones' included, over the threshold). A GC the garbage calls
    /// for takes only zones at or over the threshold. The unbounded log has its own rule; an
    /// FDP or conventional SSD collects when its free space runs short (free-zones only).
    #[arg(long, default_value = "free-zones", value_parser = ["free-zones", "gp-sealed", "gp-all"], conflicts_with = "unbounded")]
    pub gc_trigger: String,
    /// Charge operations to the preset's flash timing model (reports device time).
    #[arg(long)]
    pub timing: bool,
    /// Replay onto an existing device at its own size: an emulated image (`zonekit device
    /// create`) or a /dev zoned device, every sequential zone empty (`zonekit device reset --all`).
    /// Its data is overwritten.
    #[arg(long, conflicts_with_all = ["preset", "utilization", "preset_size", "timing"])]
    pub device: Option<PathBuf>,
    /// Zone size (= capacity) in MiB instead of the preset's, a power of two: e.g. 32 to match
    /// the SepBIT simulator's --setSegmentSize 33554432.
    #[arg(long, conflicts_with = "device")]
    pub zone_mib: Option<u64>,
    /// What the flash is reached through, at the same raw capacity: zns (the FTL's host GC),
    /// fdp:N or fdp:N:persistent (an FDP SSD with N initially or persistently isolated
    /// handles: each placement class is written under a handle, the device collects) or
    /// conventional (an SSD that takes no hint). On an SSD the host writes in place.
    #[arg(long, default_value = "zns", value_parser = parse_interface)]
    pub interface: Interface,
}

fn parse_interface(s: &str) -> std::result::Result<Interface, String> {
    Interface::parse(s)
}

impl Default for FtlArgs {
    /// The same defaults as the flags (the harness' constants).
    fn default() -> Self {
        FtlArgs {
            preset: DEFAULT_PRESET.into(),
            utilization: DEFAULT_UTILIZATION,
            preset_size: false,
            unbounded: false,
            gc_threshold: DEFAULT_GC_THRESHOLD,
            gc_trigger: GcTrigger::default().name().into(),
            timing: false,
            device: None,
            zone_mib: None,
            interface: Interface::Zns,
        }
    }
}

impl FtlArgs {
    pub fn spec(&self, placement: &str, victim: &str, params: Params, seed: u64) -> ReplaySpec {
        ReplaySpec {
            placement: placement.to_string(),
            params,
            victim: victim.to_string(),
            config: FtlConfig {
                gc_threshold: self.gc_threshold,
                capacity: if self.unbounded { CapacityMode::Unbounded } else { CapacityMode::Fixed },
                trigger: GcTrigger::from_name(&self.gc_trigger).expect("clap checked the name"),
                store_data: false,
            },
            preset: self.preset.clone(),
            utilization: (!self.unbounded && !self.preset_size && self.device.is_none()).then_some(self.utilization),
            timing: self.timing,
            device: self.device.clone(),
            zone_mib: self.zone_mib,
            interface: self.interface,
            seed,
        }
    }
}

#[derive(Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    ftl: FtlArgs,
    /// Placement policy (`zonekit policies` lists them with their parameters).
    #[arg(long, default_value = placement::bhbdp::BHBDP.name)]
    placement: String,
    /// GC victim policy, `NAME` or `NAME:VALUE` (`zonekit policies` lists them).
    #[arg(long, default_value = victim::cbe::CBE.name)]
    victim: String,
    /// Placement parameter, e.g. --param r1=0.5 (repeatable).
    #[arg(long = "param")]
    params: Vec<String>,
    #[arg(long, default_value = "zonekit-out/replay")]
    out: PathBuf,
}

fn progress_bar(total: Option<u64>, what: &str) -> Progress {
    match total {
        Some(n) => Progress::bar(n, "runs"),
        None => Progress::counter("block writes"),
    }
    .with_message(what)
}

pub fn replay_cmd(a: ReplayArgs) -> Result<ExitCode> {
    let input = a.input.input()?;
    let spec = a.ftl.spec(&a.placement, &a.victim, crate::params::parse_params("--param", &a.params)?, a.input.seed);
    spec.validate().map_err(lab)?;
    crate::report_cmd::claim_out(&a.out, "replay", false)?;
    let bar = progress_bar(None, &format!("replaying {} + {}", a.placement, a.victim));
    let report = replay(&input, &spec, &mut |n| bar.set_position(n)).map_err(lab)?;
    bar.finish_and_clear();
    crate::trace_cmd::report_skipped(&input);
    if report.user_blocks == 0 {
        return Err(crate::trace_cmd::nothing_left(&input, "writes to replay"));
    }
    print_report(&report);
    std::fs::create_dir_all(&a.out).map_err(|e| Usage(format!("--out {}: {e}", a.out.display())))?;
    std::fs::write(a.out.join("report.json"), serde_json::to_string_pretty(&report)?)?;
    let classes: Vec<(String, f64)> = report
        .user_blocks_by_class
        .iter()
        .zip(&report.gc_blocks_by_class)
        .enumerate()
        .map(|(c, (u, g))| (format!("class {} (user/GC)", c + 1), (*u + *g) as f64 * 4096.0 / 1e9))
        .collect();
    std::fs::write(a.out.join("class_traffic.svg"), bar_chart("Writes per class (user + GC)", "GB", &classes))?;
    std::fs::write(a.out.join("reclaimed_gp.svg"), gp_chart(&report))?;
    println!("\nwrote {}/{{report.json, class_traffic.svg, reclaimed_gp.svg}}", a.out.display());
    crate::report_cmd::finish(&a.out)?;
    Ok(ExitCode::SUCCESS)
}

fn gp_chart(r: &ReplayReport) -> String {
    // 5 % bins are easier to read than the 1 % bins recorded.
    let bins: Vec<(String, f64)> = (0..20).map(|b| (format!("{}", b * 5), r.gp_histogram[b * 5..(b * 5 + 5).min(101)].iter().sum::<u64>() as f64)).collect();
    bar_chart(&format!("Garbage proportion of reclaimed zones ({} + {})", r.placement, r.victim), "zones reclaimed", &bins)
}

fn print_report(r: &ReplayReport) {
    println!("replay of {}\n", r.workload);
    let q = r.reclaimed_gp_q1_median_q3.map_or("-".into(), |q| format!("{:.2} / {:.2} / {:.2}", q[0], q[1], q[2]));
    let rows = vec![
        vec!["placement + victim".into(), format!("{} + {}", r.placement, r.victim)],
        vec!["interface".into(), r.interface.clone()],
        match &r.ssd {
            None => vec![
                "device".into(),
                format!("{} zones of {:.0} MiB ({})", r.zones, r.zone_mib, if r.capacity_mode == CapacityMode::Unbounded { "unbounded log" } else { "fixed capacity" }),
            ],
            Some(s) => vec!["device".into(), format!("SSD: {} reclaim units of {:.0} MiB, {:.1} % spare", r.zones, r.zone_mib, s.spare * 100.0)],
        },
        vec!["GC trigger".into(), r.gc_trigger.clone()],
        vec!["working set".into(), format!("{} blocks", r.distinct_blocks)],
        vec!["user writes".into(), format!("{} blocks ({:.2} GiB)", r.user_blocks, r.user_gib)],
        vec!["GC writes".into(), format!("{} blocks ({:.2} GiB)", r.gc_blocks, r.gc_gib)],
        vec!["WAF (host × device)".into(), format!("{:.3} = {:.3} × {:.3}", r.waf, r.host_waf, r.device_waf)],
        vec![if r.ssd.is_some() { "GC count (reclaim units erased)" } else { "GC count (zones reclaimed)" }.into(), r.gc_count.to_string()],
        vec!["reclaimed GP mean".into(), r.reclaimed_gp_mean.map_or("-".into(), |m| format!("{m:.3}"))],
        vec!["reclaimed GP Q1 / median / Q3".into(), q],
        vec!["zone resets min / max / mean".into(), format!("{} / {} / {:.1}", r.resets_min_max_mean.0, r.resets_min_max_mean.1, r.resets_min_max_mean.2)],
        vec!["device time (timing model)".into(), r.device_time_s.map_or("-".into(), |t| format!("{t:.2} s"))],
        vec!["write latency p99 (timing model)".into(), r.write_latency_us_p99.map_or("-".into(), |t| format!("{t:.0} µs"))],
        vec!["staging (one pass over the input)".into(), format!("{:.2} s", r.stage_s)],
        vec!["replay speed".into(), format!("{:.2} M blocks/s ({:.2} s)", r.blocks_per_s / 1e6, r.wall_s)],
        vec!["FTL state".into(), format!("{:.1} B per live block", r.ftl_bytes_per_block)],
    ];
    let mut rows = rows;
    if let Some(s) = &r.ssd {
        rows.insert(3, vec!["classes → handles".into(), s.class_to_handle.iter().enumerate().map(|(c, h)| format!("{}→{h}", c + 1)).collect::<Vec<_>>().join(" ")]);
    }
    print!("{}", text_table(&["metric", "value"], &rows));
    print_warnings(&r.warnings);
}

/// Each warning of a report, wrapped to the terminal, on standard error.
pub fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprint!("{}", zonekit_report::wrapped("warning: ", w, zonekit_report::TERMINAL_COLUMNS));
    }
}

// ---- sweep -------------------------------------------------------------------------------

/// Turns a harness error into the CLI's: usage errors exit with status 2, failed runs with 1.
pub fn lab(e: LabError) -> anyhow::Error {
    if e.is_usage() {
        Usage(e.to_string()).into()
    } else {
        e.into()
    }
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepCmd {
    #[command(subcommand)]
    command: Option<SweepSub>,
    #[command(flatten)]
    args: SweepArgs,
}

#[derive(Subcommand)]
enum SweepSub {
    /// Combine the directories of every shard of one sweep (`--shard I/N`) into the results and
    /// charts one process would have written.
    Merge {
        /// The shard directories, one per shard.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        #[arg(long, default_value = "zonekit-out/sweep")]
        out: PathBuf,
    },
}

#[derive(Args)]
pub struct SweepArgs {
    /// Trace files (text, vscsi or .zkt).
    #[arg(long, value_delimiter = ',')]
    traces: Vec<PathBuf>,
    /// Generated workloads, separated by ';'.
    #[arg(long, value_delimiter = ';')]
    workloads: Vec<String>,
    /// Placements (default: every placement of the standard comparison; `zonekit policies`).
    #[arg(long, value_delimiter = ',')]
    placements: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = victim::cbe::CBE.name)]
    victims: Vec<String>,
    /// Parameter grid for the placements, e.g. "r1=0.25,0.5,1;r2=2,4" (every combination, for
    /// each placement that takes those parameters); the axis `interface` runs every point on
    /// each interface, e.g. "interface=zns,fdp:4,conventional" (see --interface).
    #[arg(long)]
    grid: Option<String>,
    #[command(flatten)]
    ftl: FtlArgs,
    /// Seed of the generated workloads (and of randomised victim policies).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Parallel replays.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Run only slice I of N of the grid (I from 0), for job arrays; combine with `sweep merge`.
    #[arg(long)]
    shard: Option<String>,
    #[arg(long, default_value = "zonekit-out/sweep")]
    out: PathBuf,
}

pub fn sweep_cmd(c: SweepCmd) -> Result<ExitCode> {
    if let Some(SweepSub::Merge { dirs, out }) = c.command {
        crate::report_cmd::claim_out(&out, "sweep", true)?;
        sweep::merge(&out, &dirs).map_err(lab)?;
        println!("merged {} shards into {}/results.csv", dirs.len(), out.display());
        summarize(&out)?;
        crate::report_cmd::finish(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let a = c.args;
    if a.traces.is_empty() && a.workloads.is_empty() {
        return Err(Usage("name at least one --traces file or --workloads spec".into()).into());
    }
    let shard = a.shard.as_deref().map(str::parse::<Shard>).transpose().map_err(lab)?;
    let placements = if a.placements.is_empty() { placement::compared().map(|p| p.name.to_string()).collect() } else { a.placements.clone() };
    // A shard's directory is a sweep's too: its rows carry their settings, a resume sets
    // aside those of other settings.
    crate::report_cmd::claim_out(&a.out, "sweep", true)?;
    run_grid(&a.workloads, &a.traces, &placements, &a.victims, a.grid.as_deref(), &a.ftl, a.seed, a.jobs, shard, &a.out)?;
    // A shard's page would show a slice: the merged directory gets the report.
    if shard.is_none() {
        crate::report_cmd::finish(&a.out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Replays every workload and trace with every placement and victim (and grid point), writes
/// `results.csv`, prints the tables and writes the charts (a shard leaves those to `merge`).
#[allow(clippy::too_many_arguments)]
pub fn run_grid(
    workloads: &[String],
    traces: &[PathBuf],
    placements: &[String],
    victims: &[String],
    grid_spec: Option<&str>,
    ftl: &FtlArgs,
    seed: u64,
    parallel: usize,
    shard: Option<Shard>,
    out: &Path,
) -> Result<()> {
    let mut inputs = Vec::new();
    for t in traces {
        inputs.push(SweepInput::trace(t).map_err(lab)?);
    }
    for w in workloads {
        inputs.push(SweepInput::workload(w, seed).map_err(lab)?);
    }
    run_inputs(inputs, placements, victims, grid_spec, ftl, seed, parallel, shard, out)
}

/// [`run_grid`] over inputs made by the caller (each may bring its own device size).
#[allow(clippy::too_many_arguments)]
pub fn run_inputs(
    inputs: Vec<SweepInput>,
    placements: &[String],
    victims: &[String],
    grid_spec: Option<&str>,
    ftl: &FtlArgs,
    seed: u64,
    parallel: usize,
    shard: Option<Shard>,
    out: &Path,
) -> Result<()> {
    let grid = sweep::parse_grid(grid_spec.unwrap_or("")).map_err(lab)?;
    let base = ftl.spec(placement::bhbdp::BHBDP.name, victim::cbe::CBE.name, Params::new(), seed);
    let sweep = Sweep { inputs, placements: placements.to_vec(), victims: victims.to_vec(), grid, base };
    let bar = std::sync::Mutex::new(None::<Progress>);
    let results = out.join("results.csv");
    let on_start = |todo: usize, done: usize| {
        if todo == 0 {
            println!("all {done} runs already in {}", results.display());
        } else {
            println!("{todo} runs to do ({done} already done), {} at a time", parallel.min(todo));
            *bar.lock().unwrap() = Some(progress_bar(Some(todo as u64), "sweep"));
        }
    };
    let on_done = || {
        if let Some(b) = bar.lock().unwrap().as_ref() {
            b.inc(1);
        }
    };
    // Ctrl-C ends the process; every finished row is already on disk for the resume.
    let never = std::sync::atomic::AtomicBool::new(false);
    let outcome = sweep.run(out, parallel, shard, &on_start, &on_done, &never);
    if let Some(b) = bar.lock().unwrap().take() {
        b.finish_and_clear();
    }
    let outcome = outcome.map_err(lab)?;
    if outcome.damaged > 0 {
        println!("{} damaged rows of results.csv moved to {}, recomputed", outcome.damaged, out.join("results.previous.csv").display());
    }
    if outcome.set_aside > 0 {
        println!("{} rows of other settings or grids moved to {}", outcome.set_aside, out.join("results.previous.csv").display());
    }
    match shard {
        Some(s) => println!("shard {}/{}: {} rows in {} (combine the shards with `zonekit sweep merge`)", s.index, s.count, outcome.rows, results.display()),
        None => summarize(out)?,
    }
    println!("every row's own `zonekit replay` command: {}", out.join("commands.tsv").display());
    print_warnings(&outcome.warnings);
    Ok(())
}

/// Prints the tables of a sweep's results and writes its charts.
fn summarize(out: &Path) -> Result<()> {
    let rows = sweep::load_results(&out.join("results.csv")).map_err(lab)?;
    print!("{}", sweep::summarize(&rows, out).map_err(lab)?);
    say!("\nwrote {}/{{results.csv, results_with_ratios.csv, speed.csv, waf_*.svg, gc_writes_*.svg, gc_count_vs_zbopt_*.svg, gp_box_*.svg}}", out.display());
    Ok(())
}

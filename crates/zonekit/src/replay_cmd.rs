//! `zonekit replay` and `zonekit sweep`: the block FTL on traces and workloads.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use zonekit_ftl::placement::{self};
use zonekit_ftl::{victim, CapacityMode};
use zonekit_lab::block::replay::{replay, ReplayReport};
use zonekit_lab::block::sweep::{self, Shard};
use zonekit_report::{bar_chart, text_table};

use crate::args::{FtlArgs, InputArgs};
use crate::error::lab;
use crate::sweep_run::{print_warnings, progress_bar, run_grid, summarize};

use crate::error::Usage;

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

pub fn replay_cmd(a: ReplayArgs) -> Result<ExitCode> {
    let input = a.input.input()?;
    let spec = a.ftl.spec(&a.placement, &a.victim, crate::params::parse_params("--param", &a.params)?, a.input.seed);
    spec.validate().map_err(lab)?;
    crate::out_dir::claim_out(&a.out, "replay", false)?;
    let bar = progress_bar(None, &format!("replaying {} + {}", a.placement, a.victim));
    let report = replay(&input, &spec, &mut |n| bar.set_position(n)).map_err(lab)?;
    bar.finish_and_clear();
    crate::args::report_skipped(&input);
    if report.user_blocks == 0 {
        return Err(crate::args::nothing_left(&input, "writes to replay"));
    }
    print_report(&report);
    std::fs::create_dir_all(&a.out).map_err(|e| Usage(format!("--out {}: {e}", a.out.display())))?;
    zonekit_base::atomic::write(a.out.join("report.json"), serde_json::to_string_pretty(&report)?)?;
    let classes: Vec<(String, f64)> = report
        .user_blocks_by_class
        .iter()
        .zip(&report.gc_blocks_by_class)
        .enumerate()
        .map(|(c, (u, g))| (format!("class {} (user/GC)", c + 1), (*u + *g) as f64 * 4096.0 / 1e9))
        .collect();
    zonekit_base::atomic::write(a.out.join("class_traffic.svg"), bar_chart("Writes per class (user + GC)", "GB", &classes))?;
    zonekit_base::atomic::write(a.out.join("reclaimed_gp.svg"), gp_chart(&report))?;
    crate::out_dir::write_warnings(&a.out, &report.warnings)?;
    println!("\nwrote {}/{{report.json, class_traffic.svg, reclaimed_gp.svg}}", a.out.display());
    crate::out_dir::finish(&a.out)?;
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
        crate::out_dir::claim_out(&out, "sweep", true)?;
        sweep::merge(&out, &dirs).map_err(lab)?;
        println!("merged {} shards into {}/results.csv", dirs.len(), out.display());
        summarize(&out)?;
        crate::out_dir::finish(&out)?;
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
    crate::out_dir::claim_out(&a.out, "sweep", true)?;
    run_grid(&a.workloads, &a.traces, &placements, &a.victims, a.grid.as_deref(), &a.ftl, a.seed, a.jobs, shard, &a.out)?;
    // A shard's page would show a slice: the merged directory gets the report.
    if shard.is_none() {
        crate::out_dir::finish(&a.out)?;
    }
    Ok(ExitCode::SUCCESS)
}

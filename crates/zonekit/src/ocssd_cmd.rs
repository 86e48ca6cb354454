//! `zonekit ocssd`: seed 002's host FTLs on an open-channel SSD (`zonekit_lab::ocssd_bench`
//! runs them).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use zonekit_base::policy::Params;
use zonekit_lab::ocssd_bench::{report_table, run_experiment, run_ocssd, OcssdExperiment, OcssdSpec};
use zonekit_ocssd::{OcGeometry, Timing};

use crate::replay_cmd::lab;
use crate::trace_cmd::InputArgs;

#[derive(Subcommand)]
pub enum OcssdCommand {
    /// Replay a trace or workload through one FTL; print throughput, WAF, erases, map cost.
    Run(Box<RunArgs>),
    /// Reproduce the thesis' chapter 4: tables beside the thesis', charts and wear maps.
    Experiment(ExperimentArgs),
}

/// The open-channel device (default: the thesis' 8 × 4 × 16 × 32 × 32 KiB).
#[derive(Args)]
pub struct GeometryArgs {
    #[arg(long, default_value_t = OcGeometry::THESIS.channels)]
    channels: u32,
    #[arg(long, default_value_t = OcGeometry::THESIS.luns_per_channel)]
    luns: u32,
    #[arg(long, default_value_t = OcGeometry::THESIS.blocks_per_lun)]
    blocks_per_lun: u32,
    #[arg(long, default_value_t = OcGeometry::THESIS.pages_per_block)]
    pages_per_block: u32,
    /// Flash page (the mapping unit) in KiB, a multiple of 4.
    #[arg(long, default_value_t = OcGeometry::THESIS.page_bytes / 1024)]
    page_kib: u32,
}

#[derive(Args)]
pub struct RunArgs {
    /// pm-gcl, pm-gcc, sbm-gcl, hsbm-gcl, dftl or fast (`zonekit policies` lists their
    /// parameters).
    #[arg(long, default_value = "pm-gcl")]
    ftl: String,
    /// An FTL parameter, KEY=VALUE (repeatable), e.g. pn=2, logs=16, no_free=erase-in-place.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    #[command(flatten)]
    geometry: GeometryArgs,
    /// Pack the block-sized regions a real trace touches into a dense logical space.
    #[arg(long)]
    compact: bool,
    #[command(flatten)]
    input: InputArgs,
    /// synchronous (the thesis' replay: one command at a time) or parallel (every page of a
    /// request at once over 40 MB/s channels).
    #[arg(long, default_value = "synchronous")]
    timing: String,
    /// Print the full report as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ExperimentArgs {
    /// Multiplies the bytes the LAMMPS-like and MACDRP-like generators write (1 = the
    /// thesis' 7 and 8.3 GB).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// A real trace for the throughput table, replayed with its regions packed (e.g.
    /// ../shared/traces/cloudPhysicsIO.csv).
    #[arg(long)]
    real_trace: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs in parallel (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    #[arg(long, default_value = "zonekit-out/ocssd")]
    out: PathBuf,
}

pub fn run(cmd: OcssdCommand) -> Result<ExitCode> {
    match cmd {
        OcssdCommand::Run(a) => run_cmd(*a),
        OcssdCommand::Experiment(a) => experiment_cmd(a),
    }
}

/// `--param KEY=VALUE` flags as a map (a key given twice is refused).
pub fn parse_params(raw: &[String]) -> Result<Params> {
    let mut params = Params::new();
    for p in raw {
        let Some((k, v)) = p.split_once('=') else { usage!("--param {p:?}: expected KEY=VALUE") };
        if params.insert(k.trim().to_string(), v.trim().to_string()).is_some() {
            usage!("--param {k} given twice");
        }
    }
    Ok(params)
}

fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    if a.input.block_size != 4096 {
        usage!("--block-size does not apply here: the FTL maps flash pages (--page-kib)");
    }
    if a.input.sample.is_some() || a.input.nodes.is_some() || a.input.window.is_some() {
        usage!("--sample, --nodes and --window select blocks, not whole requests: an FTL replay needs the requests as issued");
    }
    let g = &a.geometry;
    let geometry = OcGeometry {
        channels: g.channels,
        luns_per_channel: g.luns,
        blocks_per_lun: g.blocks_per_lun,
        pages_per_block: g.pages_per_block,
        page_bytes: g.page_kib.checked_mul(1024).ok_or_else(|| crate::Usage(format!("--page-kib {}: at most 1024", g.page_kib)))?,
    };
    let spec = OcssdSpec {
        ftl: a.ftl.clone(),
        params: parse_params(&a.params)?,
        geometry,
        input: a.input.input()?,
        compact: a.compact,
        sample_every_bytes: 64 << 20,
        timing: Timing::parse(&a.timing).map_err(|e| crate::Usage(e.to_string()))?,
    };
    let bar = crate::progress::Progress::counter("");
    let run = run_ocssd(&spec, &mut |written| bar.set_message(&format!("{} MB written", written / 1_000_000))).map_err(lab)?;
    bar.finish_and_clear();
    crate::trace_cmd::report_skipped(&spec.input);
    if run.request_mb_per_sec.is_empty() {
        return Err(crate::trace_cmd::nothing_left(&spec.input, "requests"));
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&run.report)?);
    } else {
        println!("{} through {}\n", spec.input.describe(), spec.ftl);
        print!("{}", report_table(&run));
    }
    Ok(ExitCode::SUCCESS)
}

fn experiment_cmd(a: ExperimentArgs) -> Result<ExitCode> {
    let threads = crate::experiment_run::threads(a.threads)?;
    if let Some(path) = &a.real_trace {
        if !path.exists() {
            usage!("--real-trace {}: no such file", path.display());
        }
    }
    let exp = OcssdExperiment { scale: a.scale, real_trace: a.real_trace.clone(), seed: a.seed, threads, out: a.out.clone() };
    let summary = crate::experiment_run::with_runs_bar(|progress| run_experiment(&exp, progress))?;
    print!("{summary}");
    println!("\nresults: {}/results.csv, series.csv, summary.md and charts", a.out.display());
    crate::report_cmd::finish(&a.out)?;
    Ok(ExitCode::SUCCESS)
}

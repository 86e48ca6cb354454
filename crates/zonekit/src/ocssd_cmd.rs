//! `zonekit ocssd`: seed 002's host FTLs on an open-channel SSD (`zonekit_lab::ocssd::bench`
//! runs them).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use zonekit_lab::ocssd::bench::{report_table, run_ocssd};
use zonekit_lab::ocssd::experiment::{run_experiment, OcssdExperiment};
use zonekit_lab::ocssd::run::OcssdRunSettings;

use crate::args::InputArgs;
use crate::error::lab;

#[derive(Subcommand)]
pub enum OcssdCommand {
    /// Replay a trace or workload through one FTL; print throughput, WAF, erases, map cost.
    Run(Box<RunArgs>),
    /// Reproduce the thesis' chapter 4: tables beside the thesis', charts and wear maps.
    Experiment(ExperimentArgs),
    /// Draw the thesis' Figs. 2.2–2.7 from the LAMMPS-like and MACDRP-like generators and
    /// check every characteristic the thesis states about its traces.
    Workload(WorkloadArgs),
}

#[derive(Args)]
pub struct WorkloadArgs {
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value = "zonekit-out/ocssd-workload")]
    out: PathBuf,
}

/// The open-channel device (default: the thesis' 8 × 4 × 16 × 32 × 32 KiB).
#[derive(Args)]
pub struct GeometryArgs {
    #[arg(long, default_value_t = OcssdRunSettings::default().channels)]
    channels: u32,
    #[arg(long, default_value_t = OcssdRunSettings::default().luns)]
    luns: u32,
    #[arg(long, default_value_t = OcssdRunSettings::default().blocks_per_lun)]
    blocks_per_lun: u32,
    #[arg(long, default_value_t = OcssdRunSettings::default().pages_per_block)]
    pages_per_block: u32,
    /// Flash page (the mapping unit) in KiB, a multiple of 4.
    #[arg(long, default_value_t = OcssdRunSettings::default().page_kib)]
    page_kib: u32,
}

#[derive(Args)]
pub struct RunArgs {
    /// pm-gcl, pm-gcc, sbm-gcl, hsbm-gcl, dftl or fast (`zonekit policies` lists their
    /// parameters).
    #[arg(long, default_value_t = OcssdRunSettings::default().ftl)]
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
    /// synchronous (the thesis' replay: one command at a time, table 3.1's latencies), fitted
    /// (the same with per-command and per-request costs fitted to table 4.2) or parallel (every
    /// page of a request at once over 40 MB/s channels).
    #[arg(long, default_value_t = OcssdRunSettings::default().timing)]
    timing: String,
    /// Let the host address only this many MiB of logical space (default: all the FTL
    /// exposes); the FTL keeps the rest as spare. Refused above the FTL's own logical space.
    #[arg(long, value_name = "MIB")]
    logical_mib: Option<u64>,
    /// The same in KiB, for a space that is not whole MiB (`ocssd experiment`'s common space,
    /// the smallest any FTL exposes).
    #[arg(long, value_name = "KIB", conflicts_with = "logical_mib")]
    logical_kib: Option<u64>,
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
    /// A real trace for the throughput table, replayed with its regions packed (e.g. the
    /// CloudPhysics sample `cloudPhysicsIO.csv`, as libCacheSim distributes it).
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
        OcssdCommand::Workload(a) => {
            crate::out_dir::claim_out(&a.out, "ocssd workload", false)?;
            let table = zonekit_lab::ocssd::workload::characterise(a.seed, &a.out).map_err(lab)?;
            print!("{}", zonekit_report::for_terminal(&table, zonekit_report::TERMINAL_COLUMNS));
            println!("\nresults: {}/workload.csv and Figs. 2.2-2.7 as SVG", a.out.display());
            // Its settings and page, as every command that writes a directory leaves them.
            crate::out_dir::finish(&a.out)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

impl RunArgs {
    fn settings(&self) -> Result<OcssdRunSettings> {
        Ok(OcssdRunSettings {
            ftl: self.ftl.clone(),
            params: crate::params::parse_params("--param", &self.params)?,
            channels: self.geometry.channels,
            luns: self.geometry.luns,
            blocks_per_lun: self.geometry.blocks_per_lun,
            pages_per_block: self.geometry.pages_per_block,
            page_kib: self.geometry.page_kib,
            compact: self.compact,
            timing: self.timing.clone(),
            logical_mib: self.logical_mib,
            logical_kib: self.logical_kib,
        })
    }
}

fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    if a.input.block_size != 4096 {
        usage!("--block-size does not apply here: the FTL maps flash pages (--page-kib)");
    }
    if a.input.sample.is_some() || a.input.nodes.is_some() || a.input.window.is_some() {
        usage!("--sample, --nodes and --window select blocks, not whole requests: an FTL replay needs the requests as issued");
    }
    let settings = a.settings()?;
    let spec = settings.spec(a.input.input()?).map_err(lab)?;
    let bar = crate::progress::Progress::counter("");
    // An FTL that refuses the geometry or its parameters is named by the flags that set them.
    let run = run_ocssd(&spec, &mut |written| bar.set_message(&format!("{} MB written", written / 1_000_000))).map_err(|e| match e {
        zonekit_lab::LabError::Ocssd { context, error } if matches!(*error, zonekit_ocssd::OcError::Geometry(_) | zonekit_ocssd::OcError::Config(_)) => {
            anyhow::Error::new(crate::error::Usage(format!(
                "--ftl {} --channels {} --luns {} --blocks-per-lun {} --pages-per-block {} --page-kib {}: {context}: {error}",
                a.ftl, a.geometry.channels, a.geometry.luns, a.geometry.blocks_per_lun, a.geometry.pages_per_block, a.geometry.page_kib
            )))
        }
        zonekit_lab::LabError::Ocssd { context, error } if matches!(*error, zonekit_ocssd::OcError::LogicalSpace { .. }) => {
            let (flag, n) = settings.logical_flag().unwrap_or(("--logical-mib", 0));
            anyhow::Error::new(crate::error::Usage(format!("{flag} {n}: {context}: {error}")))
        }
        e => lab(e),
    })?;
    bar.finish_and_clear();
    crate::args::report_skipped(&spec.input);
    if run.request_mb_per_sec.is_empty() {
        return Err(crate::args::nothing_left(&spec.input, "requests"));
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&run.report)?);
    } else {
        println!("{} through {}\n", spec.input.describe(), spec.ftl);
        print!("{}", report_table(&run));
    }
    crate::sweep_run::print_warnings(&run.warnings());
    Ok(ExitCode::SUCCESS)
}

fn experiment_cmd(a: ExperimentArgs) -> Result<ExitCode> {
    let threads = crate::experiment_run::threads(a.threads)?;
    if let Some(path) = &a.real_trace {
        if !path.exists() {
            usage!("--real-trace {}: no such file", path.display());
        }
    }
    crate::out_dir::claim_out(&a.out, "ocssd experiment", true)?;
    let exp = OcssdExperiment { scale: a.scale, real_trace: a.real_trace.clone(), seed: a.seed, threads, out: a.out.clone() };
    let summary = crate::experiment_run::with_runs_bar(|progress| run_experiment(&exp, progress))?;
    print!("{}", zonekit_report::for_terminal(&summary, zonekit_report::TERMINAL_COLUMNS));
    println!("\nresults: {}/results.csv, series.csv, request-throughput.csv, wear.csv, summary.md and charts", a.out.display());
    println!("each row's own `zonekit ocssd run` command: {}", a.out.join("commands.tsv").display());
    crate::out_dir::seed_figures(2, &a.out);
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

    /// A bare `ocssd run` is the lab's default settings, and each flag reaches its setting.
    #[test]
    fn the_flags_are_the_lab_settings() {
        assert_eq!(Run::parse_from(["run"]).run.settings().unwrap(), OcssdRunSettings::default());
        let given = Run::parse_from([
            "run",
            "--ftl",
            "dftl",
            "--param",
            "k=v",
            "--channels",
            "2",
            "--luns",
            "3",
            "--blocks-per-lun",
            "5",
            "--pages-per-block",
            "7",
            "--page-kib",
            "8",
            "--compact",
            "--timing",
            "parallel",
            "--logical-kib",
            "11",
        ])
        .run
        .settings()
        .unwrap();
        let expected = OcssdRunSettings {
            ftl: "dftl".into(),
            params: [("k".to_string(), "v".to_string())].into(),
            channels: 2,
            luns: 3,
            blocks_per_lun: 5,
            pages_per_block: 7,
            page_kib: 8,
            compact: true,
            timing: "parallel".into(),
            logical_mib: None,
            logical_kib: Some(11),
        };
        assert_eq!(given, expected);
    }
}

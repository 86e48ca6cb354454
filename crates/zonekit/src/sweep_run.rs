//! Running a sweep from the CLI (replay's grids, `sweep`, the seed-000 experiments and the
//! demo): the inputs, the progress bar, the tables printed and the charts written.

use std::path::{Path, PathBuf};

use anyhow::Result;
use zonekit_ftl::placement::{self, Params};
use zonekit_ftl::victim;
use zonekit_lab::block::cbs::{CbsNode, DEVICE_GIB};
use zonekit_lab::block::sweep::{self, Shard, Sweep, SweepInput};
use zonekit_trace::input::Input;

use crate::args::FtlArgs;
use crate::error::lab;
use crate::progress::Progress;

pub(crate) fn progress_bar(total: Option<u64>, what: &str) -> Progress {
    match total {
        Some(n) => Progress::bar(n, "runs"),
        None => Progress::counter("block writes"),
    }
    .with_message(what)
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
pub(crate) fn summarize(out: &Path) -> Result<()> {
    let rows = sweep::load_results(&out.join("results.csv")).map_err(lab)?;
    print!("{}", sweep::summarize(&rows, out).map_err(lab)?);
    say!("\nwrote {}/{{results.csv, results_with_ratios.csv, speed.csv, waf_*.svg, gc_writes_*.svg, gc_count_vs_zbopt_*.svg, gp_box_*.svg}}", out.display());
    Ok(())
}

/// Each node as a sweep input on its own device: the thesis' 100 GB × `scale`, which its
/// working set fills as in the thesis.
pub fn node_inputs(nodes: &[CbsNode], scale: f64) -> Result<Vec<SweepInput>> {
    let mut inputs = Vec::new();
    for n in nodes {
        let w = n.workload(scale).map_err(lab)?;
        println!("  node {:>2}: {w} (seed {})", n.node, n.seed());
        println!("           device {:.1} GiB", DEVICE_GIB * scale);
        inputs.push(SweepInput { label: format!("node{} {}", n.node, w.to_string().replace(',', " ")), input: Input::generated(w, n.seed()), utilization: Some(n.utilization()) });
    }
    Ok(inputs)
}

/// Each warning of a report, wrapped to the terminal, on standard error.
pub fn print_warnings(warnings: &[String]) {
    for w in warnings {
        eprint!("{}", zonekit_report::wrapped("warning: ", w, zonekit_report::TERMINAL_COLUMNS));
    }
}

// ---- sweep -------------------------------------------------------------------------------

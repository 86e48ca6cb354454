//! The main job (`zonekit` with no arguments): node 1 of seed 000's Table 2.1 (a Tencent cloud
//! block storage node, generated to its published statistics) at a fifth of its size,
//! replayed through the block FTL with every placement policy (CBE victims) on an emulated
//! femu-zns device as the thesis configured it, then the comparison table, charts and
//! `report.html`.
//!
//! The scale is chosen so the working set spans about 400 zones: below ~350 BHB-DP's class-1
//! threshold can lock in and BHB-DP fall behind BHB-DP_pre, the opposite of the thesis (the
//! granularity sweep of docs/results/seed-000.md; at 258 and 298 zones it did, at 248 it did
//! not), so a smaller default would contradict the research it shows. About ten seconds on
//! two cores.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use zonekit_lab::block::cbs::{CbsNode, DEVICE_GIB};

use crate::args::thesis_ftl;
use crate::sweep_run::node_inputs;

/// Table 2.1's node the demo replays.
pub const NODE: u32 = 1;
/// Its share of the node's size: 62.1 GiB × 0.2 = 12.4 GiB of working set = 397 zones of
/// 32 MiB, 25.3 M block writes.
pub const SCALE: f64 = 0.2;
/// The femu-zns zone the thesis used (Table 4.2).
const ZONE_GIB: f64 = 32.0 / 1024.0;
/// Zones per working set below which BHB-DP's threshold can lock in (docs/results/seed-000.md:
/// BHB-DP behind BHB-DP_pre at 50, 99, 258 and 298 zones of node 1, ahead at 248 and from 397).
const LOCK_IN_ZONES: f64 = 350.0;

#[derive(Args)]
pub struct DemoArgs {
    /// Directory for the results (CSV, SVG, report.html) [default: zonekit-out/demo, or
    /// zonekit-out/demo-scale-S at another --scale, so the default demo's results stay].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Share of node 1's size to replay, in (0, 1] (writes, working set and device scale
    /// together); 1 is the thesis' scale (~2,000 zones per working set, minutes).
    #[arg(long, default_value_t = SCALE)]
    pub scale: f64,
    /// Parallel replays.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs { out: None, scale: SCALE, jobs: 2 }
    }
}

pub fn run(args: &DemoArgs) -> Result<ExitCode> {
    let out =
        args.out.clone().unwrap_or_else(|| PathBuf::from(if args.scale == SCALE { "zonekit-out/demo".to_string() } else { format!("zonekit-out/demo-scale-{}", args.scale) }));
    let node = CbsNode::find(NODE).map_err(crate::error::lab)?;
    let zones = node.wss_gib * args.scale / ZONE_GIB;
    say!("zonekit: the block FTL on an emulated ZNS device (femu-zns: 32 MiB zones, 7 open; GC at 15 % sealed garbage; CBE victims), as seed 000 replays a cloud node");
    say!("workload: node {NODE} of the thesis' Table 2.1 at {} of its size (a multi-tenant Tencent CBS node, generated to its published statistics):", args.scale);
    let inputs = node_inputs(&[node], args.scale)?;
    let placements: Vec<String> = zonekit_ftl::placement::compared().map(|p| p.name.to_string()).collect();
    say!("placements: {}", placements.join(", "));
    println!();
    // The demo always recomputes (a stale file from an older build would mislead), and a
    // directory of another scale's demo starts clean.
    crate::out_dir::claim_out(&out, "demo", false)?;
    let _ = std::fs::remove_file(out.join("results.csv"));
    let cbe = zonekit_ftl::victim::cbe::CBE.name.to_string();
    crate::sweep_run::run_inputs(inputs, &placements, &[cbe], None, &thesis_ftl(), 1, args.jobs, None, &out)?;
    say!("\nWAF = (user + GC writes) / user writes, and GC count relative to the ZB-OPT oracle: lower is better. GP, the garbage proportion of the zones GC reclaimed: higher is better (less live data to copy).");
    say!(
        "fk and zbopt know every block's next write: they bound what any placement can reach on this workload. Granularity: the working set spans {zones:.0} zones of 32 MiB on a {:.1} GiB device (the thesis: ~2,000 zones, 100 GB).",
        DEVICE_GIB * args.scale
    );
    if zones < LOCK_IN_ZONES {
        say!("Below ~{LOCK_IN_ZONES:.0} zones per working set BHB-DP's class-1 threshold can lock in, and BHB-DP then trails BHB-DP_pre, unlike the thesis: a property of the granularity, not of the policies (docs/results/seed-000.md).");
    }
    crate::out_dir::finish(&out)?;
    Ok(ExitCode::SUCCESS)
}

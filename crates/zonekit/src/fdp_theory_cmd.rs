//! `zonekit experiment fdp-theory`: its flags to the lab's spec, a progress bar and the
//! tables; `zonekit_lab::block::fdp_theory` runs the model and writes the files
//! (docs/results/fdp-theory.md).

use std::path::Path;

use anyhow::Result;
use clap::Args;
use zonekit_lab::block::fdp_theory::{self, FdpTheorySpec, TheoryRow, DRIVE_RUNS};
use zonekit_report::{fitted_table, TERMINAL_COLUMNS};

use crate::error::lab;

/// The flags only fdp-theory takes.
#[derive(Args, Default)]
pub struct FdpTheoryArgs {
    /// fdp-theory: the SOC's shares of the cache, each in (0, 1) (default 0.02,0.04,0.08,0.16,0.32).
    #[arg(long, value_delimiter = ',')]
    soc_shares: Option<Vec<f64>>,
    /// fdp-theory: shares of the device the cache uses, each in (0, 1] (default 0.5,0.75,0.9,1).
    #[arg(long, value_delimiter = ',')]
    utilizations: Option<Vec<f64>>,
    /// fdp-theory: the SOC's share of host writes, in (0, 1) (default 0.5).
    #[arg(long)]
    soc_writes: Option<f64>,
    /// fdp-theory: over-provisioning of the modelled device, in (0, 1) (default 0.07).
    #[arg(long)]
    spare: Option<f64>,
    /// fdp-theory: logical space of the modelled device, 16 to 65536 MiB (default 4096; 1024
    /// with --quick).
    #[arg(long)]
    logical_mib: Option<u64>,
    /// fdp-theory: reclaim unit of the grid, whole 4 KiB blocks, at most 1/256 of the device
    /// (default 1024; 256 with --quick).
    #[arg(long)]
    ru_kib: Option<u64>,
}

impl FdpTheoryArgs {
    /// The first of these flags given, by name.
    pub fn given(&self) -> Option<&'static str> {
        [
            (self.soc_shares.is_some(), "--soc-shares"),
            (self.utilizations.is_some(), "--utilizations"),
            (self.soc_writes.is_some(), "--soc-writes"),
            (self.spare.is_some(), "--spare"),
            (self.logical_mib.is_some(), "--logical-mib"),
            (self.ru_kib.is_some(), "--ru-kib"),
        ]
        .into_iter()
        .find(|g| g.0)
        .map(|g| g.1)
    }

    /// The lab's spec, every bad value refused by its flag.
    pub fn spec(&self, quick: bool, jobs: usize) -> Result<FdpTheorySpec> {
        let mut spec = FdpTheorySpec::default_grid();
        if quick {
            spec =
                FdpTheorySpec { logical_blocks: 1 << 18, ru_blocks: 64, soc_shares: vec![0.04, 0.16], utilizations: vec![0.75, 1.0], ru_sweep_blocks: vec![16, 64, 256], ..spec };
        }
        spec.threads = jobs.max(1);
        if let Some(v) = &self.soc_shares {
            spec.soc_shares = v.clone();
        }
        if let Some(v) = &self.utilizations {
            spec.utilizations = v.clone();
        }
        spec.soc_writes = self.soc_writes.unwrap_or(spec.soc_writes);
        spec.spare = self.spare.unwrap_or(spec.spare);
        if let Some(mib) = self.logical_mib {
            if !(16..=65536).contains(&mib) {
                usage!("--logical-mib {mib}: from 16 to 65536 MiB");
            }
            spec.logical_blocks = mib * 256;
        }
        if let Some(kib) = self.ru_kib {
            if kib == 0 || kib % 4 != 0 || kib / 4 > spec.logical_blocks / 256 {
                usage!("--ru-kib {kib}: whole 4 KiB blocks, at most 1/256 of the device ({} KiB)", spec.logical_blocks / 256 * 4);
            }
            spec.ru_blocks = kib / 4;
        }
        spec.ru_sweep_blocks.retain(|&b| b <= spec.logical_blocks / 256);
        spec.validate().map_err(lab)?;
        Ok(spec)
    }
}

pub fn run(spec: &FdpTheorySpec, out: &Path) -> Result<()> {
    // Each finished run is kept: a rerun after an interruption computes only the missing ones.
    let spec = FdpTheorySpec { keep_runs_in: Some(out.to_path_buf()), ..spec.clone() };
    let preset = zonekit_ssd::preset::find("fdp-pm9d3").expect("the preset exists");
    say!(
        "FDP's device GC against Theorem 1 (Allison et al., EuroSys '25; the closed form as derived in zonekit_ssd::theory): a SOC overwriting random 4 KiB blocks and a LOC log, {} MiB of logical space, {:.0} % spare, {} KiB reclaim units ({} of them), greedy device GC, the SOC taking {:.0} % of host writes; FDP with persistently isolated handles (each cache's moves counted apart), and one write point without FDP.",
        spec.logical_blocks / 256,
        spec.spare * 100.0,
        spec.ru_blocks * 4,
        (spec.logical_blocks as f64 * (1.0 + spec.spare) / spec.ru_blocks as f64).ceil(),
        spec.soc_writes * 100.0
    );
    let bar = std::sync::Mutex::new(None::<crate::progress::Progress>);
    let on_start = |n: usize| *bar.lock().unwrap() = Some(crate::progress::Progress::bar((n + DRIVE_RUNS) as u64, "runs").with_message("fdp-theory"));
    let on_done = || {
        if let Some(b) = bar.lock().unwrap().as_ref() {
            b.inc(1);
        }
    };
    let result = fdp_theory::run(&spec, &on_start, &on_done).map_err(lab)?;
    let (share, drive) = fdp_theory::drive(&spec, preset, &on_done).map_err(lab)?;
    if let Some(b) = bar.lock().unwrap().take() {
        b.finish_and_clear();
    }
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:+.1} %", v * 100.0));
    let conventional = |r: &TheoryRow| result.grid.iter().find(|c| !c.fdp && c.soc_share == r.soc_share && c.utilization == r.utilization).map_or(f64::NAN, |c| c.counts.waf());
    let rows: Vec<Vec<String>> = result
        .grid
        .iter()
        .filter(|r| r.fdp)
        .map(|r| {
            vec![
                format!("{:.0} %", r.utilization * 100.0),
                format!("{:.0} %", r.soc_share * 100.0),
                format!("{:.3}", r.alpha),
                format!("{:.3}", r.counts.small_waf()),
                r.theorem_soc.map_or("-".into(), |t| format!("{t:.3}")),
                pct(r.soc_error()),
                pct(r.held_back_error()),
                format!("{:.3}", r.counts.large_moves_per_write()),
                format!("{:.3}", r.counts.waf()),
                r.theorem_device.map_or("-".into(), |t| format!("{t:.3}")),
                format!("{:.3}", conventional(r)),
            ]
        })
        .collect();
    println!();
    let header = ["used", "SOC", "α", "SOC DLWA", "Theorem 1", "error", "held back", "LOC moves", "device", "Theorem 1", "no FDP"];
    print!("{}", fitted_table(&header, &rows, TERMINAL_COLUMNS));
    let (n, median, max) = fdp_theory::summary(&result.grid);
    say!(
        "\nSOC DLWA with FDP against Theorem 1 over {n} grid points: median |error| {:.1} %, max {:.1} % (\"held back\": the form with the spare less the units the model keeps free and open; \"LOC moves\": GC moves of the LOC's data per LOC write, which the form takes as 0).",
        median * 100.0,
        max * 100.0
    );
    let g: Vec<Vec<String>> = result
        .granularity
        .iter()
        .map(|r| {
            vec![
                format!("{} KiB", r.ru_blocks * 4),
                (r.counts.physical_blocks / r.ru_blocks).to_string(),
                format!("{:.3}", r.counts.small_waf()),
                r.theorem_soc.map_or("-".into(), |t| format!("{t:.3}")),
                pct(r.soc_error()),
                pct(r.held_back_error()),
                format!("{:.3}", r.counts.large_moves_per_write()),
            ]
        })
        .collect();
    if let Some(r) = result.granularity.first() {
        say!("\nThe reclaim unit at one point (SOC {:.0} % of the cache, {:.0} % used, FDP):", r.soc_share * 100.0, r.utilization * 100.0);
        print!("{}", fitted_table(&["reclaim unit", "units", "SOC DLWA", "Theorem 1", "error", "held back", "LOC moves"], &g, TERMINAL_COLUMNS));
    }
    say!(
        "\nThe 1.88 TB FDP drive (CacheLib's FDP documentation: SOC 4 % of the cache) on fdp-pm9d3's spare ({:.0} %, assumed) and handle type; the SOC's share of host writes fitted to the no-FDP figure at 100 %: {share:.3}.",
        preset.spare * 100.0
    );
    print!(
        "{}",
        fitted_table(&["used", "placement", "published", "Theorem 1", "model", "model vs pub.", "theorem vs pub.", "role"], &fdp_theory::drive_cells(&drive), TERMINAL_COLUMNS)
    );
    let files = fdp_theory::write(out, &spec, &result, &drive).map_err(lab)?;
    say!("wrote {}/{{{}}}", out.display(), files.join(", "));
    Ok(())
}

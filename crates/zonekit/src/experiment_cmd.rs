//! `zonekit experiment NAME`: the seed-000 experiments, one command each. Results and charts go
//! to `--out`; docs/results/seed-000.md records a run beside the thesis' numbers.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use zonekit_ftl::engine::gp_quantile;
use zonekit_ftl::placement::{self, bhbdp::BHBDP, fk::FK, zbopt::ZBOPT};
use zonekit_ftl::victim::cbe::{CBE, CBE_LN, CBE_SQRT};
use zonekit_lab::replay::{replay, ReplaySpec};
use zonekit_report::{csv, line_chart, text_table, Series};
use zonekit_trace::input::Input;

use crate::replay_cmd::{lab, run_grid, FtlArgs};

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum Experiment {
    /// Table 4.3: every placement with CBE (WAF, GC writes, GC count relative to ZB-OPT).
    #[value(name = "table-4.3")]
    Table43,
    /// Table 2.2 and Figs. 2.10–2.11: FK vs ZB-OPT and the GP of their reclaimed zones by class.
    #[value(name = "table-2.2")]
    Table22,
    /// Table 3.2: CBE with f(t) = t, √t, ln t for BHB-DP and ZB-OPT.
    #[value(name = "table-3.2")]
    Table32,
    /// BHB-DP's R1, R2 and M (not given by the thesis): a sensitivity sweep.
    #[value(name = "bhbdp-sensitivity")]
    BhbdpSensitivity,
}

#[derive(Args)]
pub struct ExperimentArgs {
    experiment: Experiment,
    /// Real trace(s) to include (default: ../shared/traces/cloudPhysicsIO.csv when present).
    #[arg(long, value_delimiter = ',')]
    traces: Option<Vec<PathBuf>>,
    /// Smaller workloads, for a quick look (the full set takes a few minutes).
    #[arg(long)]
    quick: bool,
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    #[arg(long)]
    out: Option<PathBuf>,
}

fn workloads(quick: bool) -> Vec<String> {
    if quick {
        return vec!["cloud:volumes=32,blocks=256K,writes=2M,hours=24".into(), "zipf:blocks=256K,alpha=0.9,writes=2M".into()];
    }
    vec![
        // Generated cloud nodes built to match seed 000's workload statistics.
        "cloud:volumes=64,blocks=1M,writes=8M,hours=24".into(),
        "cloud:volumes=128,blocks=2M,writes=16M,hours=24".into(),
        // Plain skew, from mild to strong.
        "zipf:blocks=1M,alpha=0.8,writes=10M".into(),
        "zipf:blocks=1M,alpha=1.1,writes=10M".into(),
        "hotcold:blocks=1M,writes=10M,hot=0.2,hot-writes=0.8".into(),
    ]
}

fn default_traces() -> Vec<PathBuf> {
    let p = PathBuf::from("../shared/traces/cloudPhysicsIO.csv");
    if p.exists() {
        vec![p]
    } else {
        Vec::new()
    }
}

pub fn run(a: ExperimentArgs) -> Result<ExitCode> {
    let traces = a.traces.clone().unwrap_or_else(default_traces);
    let name = format!("{:?}", a.experiment).to_lowercase();
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from(format!("zonekit-out/experiment-{name}")));
    let all = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let compared: Vec<String> = placement::compared().map(|p| p.name.to_string()).collect();
    let ftl = FtlArgs::default;
    match a.experiment {
        Experiment::Table43 => {
            println!("Table 4.3 of seed 000: placements with CBE on femu-zns-like zones (32 MiB, 7 open), 85 % utilisation, GC at 15 % garbage.");
            run_grid(&workloads(a.quick), &traces, &compared, &all(&[CBE.name]), None, &ftl(), 1, a.jobs, None, &out)?;
        }
        Experiment::Table32 => {
            println!("Table 3.2 of seed 000: CBE with f(t) = t, √t, ln t.");
            run_grid(&workloads(a.quick), &traces, &all(&[BHBDP.name, ZBOPT.name]), &all(&[CBE.name, CBE_SQRT.name, CBE_LN.name]), None, &ftl(), 1, a.jobs, None, &out)?;
        }
        Experiment::BhbdpSensitivity => {
            println!("BHB-DP parameters: R1 and R2 in multiples of the device capacity, M reclaimed zones per class.");
            run_grid(&workloads(a.quick)[..2], &traces, &all(&[BHBDP.name]), &all(&[CBE.name]), Some("r1=0.1,0.25,0.5,1;r2=1.5,3,6;m=2,8,32"), &ftl(), 1, a.jobs, None, &out)?;
        }
        Experiment::Table22 => table_22(&workloads(a.quick), &traces, &out)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// FK against ZB-OPT: WAF, GC writes, and the garbage proportion of reclaimed zones per class.
fn table_22(workloads: &[String], traces: &[PathBuf], out: &Path) -> Result<()> {
    println!("Table 2.2 / Figs. 2.10–2.11 of seed 000: FK vs ZB-OPT with CBE; GP of reclaimed zones by class.\n");
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut inputs: Vec<(String, Input)> = traces.iter().map(|t| (t.display().to_string(), Input::path(t, None, false))).collect();
    for w in workloads {
        inputs.push((w.clone(), Input::generated(w.parse::<zonekit_trace::synth::Workload>().map_err(|e| crate::Usage(e.to_string()))?, 1)));
    }
    let mut rows = Vec::new();
    for (name, input) in &inputs {
        let mut series = Vec::new();
        for placement in [FK.name, ZBOPT.name] {
            let spec = ReplaySpec { placement: placement.into(), victim: CBE.name.into(), ..ReplaySpec::default() };
            let r = replay(input, &spec, &mut |_| {}).map_err(lab).with_context(|| format!("{placement} on {name}"))?;
            let median = |h: &Vec<u64>| gp_quantile(h, 0.5).map_or("-".to_string(), |m| format!("{m:.2}"));
            let per_class: Vec<String> = r.gp_histogram_by_class.iter().map(median).collect();
            rows.push(vec![name.clone(), placement.to_string(), format!("{:.3}", r.waf), format!("{:.2}", r.gc_gib), r.gc_count.to_string(), per_class.join(" ")]);
            // CDF of reclaimed-zone GP, all classes (Fig. 2.11's view).
            let total: u64 = r.gp_histogram.iter().sum::<u64>().max(1);
            let mut acc = 0;
            let points = r.gp_histogram.iter().enumerate().map(|(i, n)| {
                acc += n;
                (i as f64 / 100.0, acc as f64 / total as f64)
            });
            series.push(Series { name: placement.to_uppercase(), points: points.collect() });
        }
        let file = out.join(format!("gp_cdf_{}.svg", rows.len() / 2 - 1));
        std::fs::write(&file, line_chart(&format!("GP of reclaimed zones — {}", short(name)), "garbage proportion", "CDF", &series, false))?;
    }
    let header = ["workload", "placement", "WAF", "GC GiB", "GC count", "median GP by class 1..7"];
    print!("{}", text_table(&header, &rows));
    std::fs::write(out.join("results.csv"), csv(&header, &rows))?;
    println!("\nwrote {}/{{results.csv, gp_cdf_*.svg}}", out.display());
    if rows.is_empty() {
        usage!("no workloads");
    }
    Ok(())
}

fn short(s: &str) -> String {
    if s.len() > 50 {
        format!("{}…", &s[..50])
    } else {
        s.to_string()
    }
}

//! `zonekit experiment NAME`: the seed-000 experiments, one command each. Results and charts go
//! to `--out`; docs/results/seed-000.md records a run beside the thesis' numbers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use zonekit_ftl::engine::gp_quantile;
use zonekit_ftl::placement::{bhbdp::BHBDP, bhbdp::BHBDP_PRE, fk::FK, normal::NORMAL, sepbit::SEPBIT, warcip::WARCIP, zbopt::ZBOPT};
use zonekit_ftl::victim::cbe::{CBE, CBE_LN, CBE_SQRT};
use zonekit_ftl::GcTrigger;
use zonekit_lab::block::cbs::{CbsNode, DEVICE_GIB};
use zonekit_lab::block::replay::replay;
use zonekit_lab::block::sweep::{self, SweepInput, C_GC_COUNT, C_GC_GIB, C_PLACEMENT, C_VS_ZBOPT, C_WAF, C_WORKLOAD};
use zonekit_report::{bar_chart, csv, line_chart, BarChart, Series, Spread};
use zonekit_trace::input::Input;

use crate::args::{thesis_ftl, FtlArgs};
use crate::error::lab;
use crate::sweep_run::{node_inputs, run_grid, run_inputs};

#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum Experiment {
    /// Table 4.3 at the thesis' scale: Table 2.1's ten nodes on its 100 GB device of 32 MiB
    /// zones, every placement with CBE (WAF, GC writes, GC count relative to ZB-OPT).
    #[value(name = "table-4.3")]
    Table43,
    /// Table 4.3's placements as the device's granularity changes: one node scaled so its
    /// working set spans ~50 to ~2,000 zones.
    #[value(name = "granularity")]
    Granularity,
    /// Table 2.2 and Figs. 2.10–2.11: FK vs ZB-OPT and the GP of their reclaimed zones by class
    /// (with --nodes or --scale: on Table 2.1's nodes, as Figs. 2.8 and 2.11 ran).
    #[value(name = "table-2.2")]
    Table22,
    /// Table 3.2: CBE with f(t) = t, √t, ln t for BHB-DP and ZB-OPT.
    #[value(name = "table-3.2")]
    Table32,
    /// BHB-DP's R1, R2 and M (not given by the thesis): a sensitivity sweep.
    #[value(name = "bhbdp-sensitivity")]
    BhbdpSensitivity,
    /// One placement, every interface: Table 2.1's nodes × Table 4.3's placements on ZNS, FDP
    /// SSDs with 2, 4 and 8 handles and a conventional SSD at the same raw capacity (host,
    /// device and total WAF, write latency p99 from the timing model).
    #[value(name = "interfaces")]
    Interfaces,
    /// The published FDP anchor (CacheLib on a 1.88 TB FDP SSD: WAF 1.03 with FDP against 3.22
    /// without at 100 % of the device, 1.03 against 1.22 at 50 %) as Navy's write pattern on
    /// the SSD model: calibrated on one figure, measured on the other three.
    #[value(name = "fdp-anchor")]
    FdpAnchor,
    /// FDP's device GC against theory and the drive: CacheLib's two streams (random SOC writes,
    /// a LOC log) on the SSD model over a grid of SOC shares and utilisations, against Theorem 1
    /// of Allison et al. (EuroSys '25; DLWA = 1/(1 − δ), δ by the Lambert W function), the
    /// reclaim unit's size, and the published figures of the 1.88 TB FDP drive (fdp-pm9d3).
    #[value(name = "fdp-theory")]
    FdpTheory,
    /// Every characterised experiment of the ZN540 (Doekemeijer et al., CLUSTER 2023: fio and
    /// SPDK runs) rerun on a preset's timing model: per metric the drive's value, ours and the
    /// error, fit and validation rows apart, with charts (`--doc` writes the write-up section).
    #[value(name = "device-fidelity")]
    DeviceFidelity,
}

impl Experiment {
    /// What kind of question the experiment answers, as `zonekit --help` groups them: a match
    /// with no catch-all, so a new experiment must say where it belongs.
    fn kind(self) -> &'static str {
        match self {
            Experiment::Table43 | Experiment::Granularity | Experiment::Table22 | Experiment::Table32 | Experiment::BhbdpSensitivity => "reproduce a seed-000 experiment",
            Experiment::Interfaces | Experiment::FdpAnchor | Experiment::FdpTheory => "compare interfaces",
            Experiment::DeviceFidelity => "check a preset's timing model against the ZN540",
        }
    }

    /// The one-line summary of `zonekit experiment` in the help, built from the experiments
    /// themselves so that it names every one of them.
    pub fn summary() -> String {
        let mut kinds: Vec<(&str, Vec<String>)> = Vec::new();
        for e in Experiment::value_variants() {
            let name = e.to_possible_value().expect("every experiment is named").get_name().to_string();
            match kinds.iter_mut().find(|(k, _)| *k == e.kind()) {
                Some((_, names)) => names.push(name),
                None => kinds.push((e.kind(), vec![name])),
            }
        }
        let parts: Vec<String> = kinds.iter().map(|(kind, names)| format!("{kind} ({})", names.join(", "))).collect();
        let text = match parts.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        let mut chars = text.chars();
        chars.next().map_or(String::new(), |first| first.to_uppercase().chain(chars).collect())
    }
}

#[derive(Args)]
pub struct ExperimentArgs {
    experiment: Experiment,
    /// Real trace(s) to include beside the generated workloads, e.g. the CloudPhysics sample
    /// (`cloudPhysicsIO.csv`, as libCacheSim distributes it) that docs/results/seed-000.md
    /// ran with (default: none; table-4.3 runs a named trace at the nodes' mean utilisation;
    /// granularity refuses one).
    #[arg(long, value_delimiter = ',')]
    traces: Option<Vec<PathBuf>>,
    /// Smaller workloads, for a quick look (table-4.3: nodes 1 and 2 at 2 % of their size).
    #[arg(long)]
    quick: bool,
    /// table-4.3, granularity, interfaces and table-2.2: which of Table 2.1's nodes, e.g. 1,3,5
    /// (default: all ten; granularity: node 1; table-2.2 runs the nodes only when given this or
    /// --scale, then 1-4 by default).
    #[arg(long, value_delimiter = ',')]
    nodes: Option<Vec<u32>>,
    /// table-4.3, interfaces and table-2.2's nodes: share of each node's size to replay (writes,
    /// working set and device scale together), in (0, 1] (interfaces: default 0.1).
    #[arg(long)]
    scale: Option<f64>,
    /// Runs at a time (each one replay or device model).
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Directory for the results, charts and report.html (default:
    /// zonekit-out/experiment-NAME, e.g. zonekit-out/experiment-table-4.3).
    #[arg(long)]
    out: Option<PathBuf>,
    /// device-fidelity: the preset to compare with the drive (default zn540; with `--drive
    /// conventional` an SSD preset of `zonekit ssd presets` for both drives, `dc-7` for the
    /// unfitted figures; default: each drive its fitted preset, 980pro and sn540).
    #[arg(long)]
    preset: Option<String>,
    /// device-fidelity: which drives' measurements: zn540 (the default), or conventional (the
    /// 980 PRO's and SN540's fio runs against the conventional SSD model).
    #[arg(long)]
    drive: Option<String>,
    /// device-fidelity: the measurements' directory (default: the checkout's
    /// crates/zonekit-device/data).
    #[arg(long)]
    data: Option<PathBuf>,
    /// device-fidelity: also write the generated section into this Markdown page (between its
    /// markers; the prose around them stays), e.g. docs/results/devices.md.
    #[arg(long)]
    doc: Option<PathBuf>,
    #[command(flatten)]
    fdp: crate::fdp_theory_cmd::FdpTheoryArgs,
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

pub fn run(a: ExperimentArgs) -> Result<ExitCode> {
    let node_experiment = matches!(a.experiment, Experiment::Table43 | Experiment::Granularity | Experiment::Interfaces | Experiment::Table22);
    if !node_experiment && a.nodes.is_some() {
        usage!("--nodes is for table-4.3, granularity, interfaces and table-2.2 (Table 2.1's nodes)");
    }
    if !matches!(a.experiment, Experiment::Table43 | Experiment::Interfaces | Experiment::Table22) && a.scale.is_some() {
        usage!("--scale is for table-4.3, interfaces and table-2.2 (granularity runs its own scales)");
    }
    // table-2.2 on the nodes replaces its smaller inputs rather than adding to them: the
    // per-class GP of the two settings would otherwise share one file.
    let table_22_nodes = matches!(a.experiment, Experiment::Table22) && (a.nodes.is_some() || a.scale.is_some());
    if table_22_nodes && (a.traces.is_some() || a.quick) {
        usage!("table-2.2 with --nodes or --scale runs Table 2.1's nodes: no --traces or --quick (give a smaller --scale)");
    }
    if matches!(a.experiment, Experiment::Interfaces | Experiment::FdpAnchor) && a.traces.is_some() {
        usage!("--traces: interfaces runs Table 2.1's nodes and fdp-anchor Navy's pattern (replay a trace with --interface)");
    }
    if matches!(a.experiment, Experiment::Granularity) && a.traces.is_some() {
        usage!("--traces: granularity scales Table 2.1's nodes, not traces");
    }
    let fidelity = matches!(a.experiment, Experiment::DeviceFidelity);
    if !fidelity && (a.preset.is_some() || a.data.is_some() || a.doc.is_some() || a.drive.is_some()) {
        usage!("--preset, --drive, --data and --doc are for device-fidelity");
    }
    if let Some(d) = a.drive.as_deref().filter(|d| !["zn540", "conventional"].contains(d)) {
        usage!("--drive {d:?}: valid: zn540, conventional");
    }
    if fidelity && (a.traces.is_some() || a.quick || a.scale.is_some()) {
        usage!("device-fidelity reruns the drive's characterisation: no --traces, --quick or --scale");
    }
    let fdp_theory = matches!(a.experiment, Experiment::FdpTheory);
    if let Some(flag) = a.fdp.given().filter(|_| !fdp_theory) {
        usage!("{flag} is for fdp-theory");
    }
    if fdp_theory && a.traces.is_some() {
        usage!("--traces: fdp-theory runs CacheLib's two streams as a generated pattern");
    }
    // Its settings checked before the output directory is claimed.
    let fdp_spec = if fdp_theory { Some(a.fdp.spec(a.quick, a.jobs)?) } else { None };
    // The node experiments run real traces only when named.
    // No trace unless named: a run must not depend on which files happen to lie around.
    let traces = a.traces.clone().unwrap_or_default();
    // The name a person typed, so the directory is found by it.
    let name = a.experiment.to_possible_value().expect("every experiment is named").get_name().to_string();
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from(format!("zonekit-out/experiment-{name}")));
    // The sweeps' experiments resume row by row (rows carry their settings); the others
    // write their tables whole.
    let resumable = matches!(a.experiment, Experiment::Table43 | Experiment::Granularity | Experiment::Table32 | Experiment::BhbdpSensitivity);
    crate::out_dir::claim_out(&out, &format!("experiment {name}"), resumable)?;
    let all = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Every seed-000 table at the thesis' device and GC rule, as Table 4.3 is.
    let ftl = thesis_ftl;
    match a.experiment {
        Experiment::Table43 => table_43(&a, &traces, &out)?,
        Experiment::Granularity => granularity(&a, &out)?,
        Experiment::Table32 => {
            println!("Table 3.2 of seed 000: CBE with f(t) = t, √t, ln t (femu-zns, GC at 15 % sealed garbage).");
            run_grid(&workloads(a.quick), &traces, &all(&[BHBDP.name, ZBOPT.name]), &all(&[CBE.name, CBE_SQRT.name, CBE_LN.name]), None, &ftl(), 1, a.jobs, None, &out)?;
        }
        Experiment::BhbdpSensitivity => {
            print!("{}", bhbdp_sensitivity_intro());
            run_grid(&workloads(a.quick)[..2], &traces, &all(&[BHBDP.name]), &all(&[CBE.name]), Some("r1=0.1,0.25,0.5,1;r2=1.5,3,6;m=2,8,32"), &ftl(), 1, a.jobs, None, &out)?;
        }
        Experiment::Table22 if table_22_nodes => table_22_nodes_gp(&a, &out)?,
        Experiment::Table22 => table_22(&workloads(a.quick), &traces, &out)?,
        Experiment::Interfaces => interfaces(&a, &out)?,
        Experiment::FdpAnchor => fdp_anchor(&a, &out)?,
        Experiment::FdpTheory => crate::fdp_theory_cmd::run(&fdp_spec.expect("built above"), &out)?,
        Experiment::DeviceFidelity if a.drive.as_deref() == Some("conventional") => {
            crate::fidelity_cmd::run_conventional(a.preset.as_deref(), a.data.as_deref(), a.doc.as_deref(), &out)?
        }
        Experiment::DeviceFidelity => crate::fidelity_cmd::run(a.preset.as_deref().unwrap_or("zn540"), a.data.as_deref(), a.doc.as_deref(), &out)?,
    }
    crate::out_dir::finish(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// What `experiment bhbdp-sensitivity` says first, fitted to the terminal (a function, so a
/// test can check its width without running the experiment's 72 replays).
fn bhbdp_sensitivity_intro() -> String {
    zonekit_report::wrapped(
        "",
        "BHB-DP parameters: R1 and R2 in multiples of the device capacity, M reclaimed zones per class (femu-zns, GC at 15 % sealed garbage).",
        zonekit_report::TERMINAL_COLUMNS,
    )
}

/// FK against ZB-OPT: WAF, GC writes, and the garbage proportion of reclaimed zones per class.
fn table_22(workloads: &[String], traces: &[PathBuf], out: &Path) -> Result<()> {
    println!("Table 2.2 / Figs. 2.10–2.11 of seed 000: FK vs ZB-OPT with CBE (femu-zns, GC at 15 % sealed garbage); GP of reclaimed zones by class.\n");
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut inputs: Vec<(String, Input)> = traces.iter().map(|t| (t.display().to_string(), Input::path(t, None, false))).collect();
    for w in workloads {
        inputs.push((w.clone(), Input::generated(w.parse::<zonekit_trace::synth::Workload>().map_err(|e| crate::error::Usage(e.to_string()))?, 1)));
    }
    let mut rows = Vec::new();
    // Each row's own `zonekit replay` command, as a sweep writes them.
    let mut commands = String::from("workload\tplacement\tcommand\n");
    for (name, input) in &inputs {
        let mut series = Vec::new();
        for placement in [FK.name, ZBOPT.name] {
            let spec = thesis_ftl().spec(placement, CBE.name, Default::default(), 1);
            let r = replay(input, &spec, &mut |_| {}).map_err(lab).with_context(|| format!("{placement} on {name}"))?;
            let median = |h: &Vec<u64>| gp_quantile(h, 0.5).map_or("-".to_string(), |m| format!("{m:.2}"));
            let per_class: Vec<String> = r.gp_histogram_by_class.iter().map(median).collect();
            rows.push(vec![name.clone(), placement.to_string(), format!("{:.3}", r.waf), format!("{:.2}", r.gc_gib), r.gc_count.to_string(), per_class.join(" ")]);
            commands.push_str(&format!("{name}\t{placement}\t{}\n", spec.command(input)));
            // CDF of reclaimed-zone GP, all classes (Fig. 2.11's view).
            series.push(Series::cdf_of_histogram(&placement.to_uppercase(), &r.gp_histogram, 0.01));
        }
        let file = out.join(format!("gp_cdf_{}.svg", rows.len() / 2 - 1));
        zonekit_base::atomic::write(&file, line_chart(&format!("GP of reclaimed zones — {}", short(name)), "garbage proportion", "CDF", &series, false))?;
    }
    let header = ["workload", "placement", "WAF", "GC GiB", "GC count", "median GP by class 1..7"];
    print!("{}", zonekit_report::fitted_table(&header, &rows, zonekit_report::TERMINAL_COLUMNS));
    zonekit_base::atomic::write(out.join("results.csv"), csv(&header, &rows))?;
    zonekit_base::atomic::write(out.join("commands.tsv"), commands)?;
    say!("\nwrote {}/{{results.csv, commands.tsv, gp_cdf_*.svg}}", out.display());
    if rows.is_empty() {
        usage!("no workloads");
    }
    Ok(())
}

/// The per-class GP file's columns: one row per node, placement and class (`all`: every class).
const GP_BY_CLASS_HEADER: [&str; 10] = ["node", "placement", "class", "zones_reclaimed", "gp_p05", "gp_q1", "gp_median", "gp_q3", "gp_p95", "gp_mean"];

/// One row of [`GP_BY_CLASS_HEADER`] from a 1 %-bin GP histogram; a class never reclaimed
/// leaves its quantiles empty rather than 0, which would read as zones reclaimed full.
fn gp_row(node: &str, placement: &str, class: &str, histogram: &[u64]) -> Vec<String> {
    let zones: u64 = histogram.iter().sum();
    let quantile = |q: f64| gp_quantile(histogram, q).map_or(String::new(), |v| format!("{v:.2}"));
    // Bin i holds GP in [i %, i + 1 %): its lower edge, as the sweep's gp_mean takes it.
    let mean = (zones > 0).then(|| histogram.iter().enumerate().map(|(i, n)| i as f64 / 100.0 * *n as f64).sum::<f64>() / zones as f64);
    vec![
        node.to_string(),
        placement.to_string(),
        class.to_string(),
        zones.to_string(),
        quantile(0.05),
        quantile(0.25),
        quantile(0.5),
        quantile(0.75),
        quantile(0.95),
        mean.map_or(String::new(), |m| format!("{m:.4}")),
    ]
}

/// Figs. 2.8 and 2.11 as the thesis ran them: FK and ZB-OPT (CBE, the thesis' device and GC
/// rule) on Table 2.1's nodes (default 1-4) at its scale, each node on the device table-4.3
/// gives it, so the WAF of each run is table-4.3's for the same node and placement. Writes the
/// GP of the reclaimed zones per class (`gp_by_class.csv`), each run's totals (`runs.csv`) and
/// each run's `zonekit replay` command (`commands.tsv`).
fn table_22_nodes_gp(a: &ExperimentArgs, out: &Path) -> Result<()> {
    let nodes = chosen_nodes(a, &[1, 2, 3, 4])?;
    let scale = a.scale.unwrap_or(1.0);
    say!(
        "Figs. 2.8 and 2.11 of seed 000 at {}: FK and ZB-OPT on Table 2.1's nodes {} (femu-zns, 32 MiB zones, 7 open, GC at 15 % sealed garbage, CBE); GP of reclaimed zones by class.",
        if scale == 1.0 { "the thesis' scale".to_string() } else { format!("{scale} of the thesis' scale") },
        nodes.iter().map(|n| n.node.to_string()).collect::<Vec<_>>().join(", ")
    );
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let inputs = node_inputs(&nodes, scale)?;
    let mut runs = Vec::new();
    for input in &inputs {
        for placement in [FK.name, ZBOPT.name] {
            let mut spec = thesis_ftl().spec(placement, CBE.name, Default::default(), 1);
            spec.utilization = input.utilization;
            spec.validate().map_err(lab)?;
            runs.push((input, placement, spec));
        }
    }
    println!("{} replays, {} at a time", runs.len(), a.jobs.clamp(1, runs.len().max(1)));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let reports = std::sync::Mutex::new(vec![None; runs.len()]);
    let first_error = std::sync::Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..a.jobs.clamp(1, runs.len().max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((input, placement, spec)) = runs.get(k) else { break };
                if first_error.lock().unwrap().is_some() {
                    break;
                }
                let node = node_label(&input.label);
                match replay(&input.input, spec, &mut |_| {}).map_err(lab).with_context(|| format!("{placement} on {node}")) {
                    Ok(r) => {
                        println!("  {node} {placement}: WAF {:.4}, {} zones reclaimed", r.waf, r.gc_count);
                        reports.lock().unwrap()[k] = Some(r);
                    }
                    Err(e) => *first_error.lock().unwrap() = Some(e),
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().unwrap() {
        return Err(e);
    }
    let reports = reports.into_inner().unwrap();
    let mut gp_rows = Vec::new();
    let mut run_rows = Vec::new();
    let mut commands = String::from("workload\tplacement\tcommand\n");
    for ((input, placement, spec), report) in runs.iter().zip(&reports) {
        let r = report.as_ref().expect("every run reported or the first error returned");
        let node = node_label(&input.label);
        for (class, histogram) in r.gp_histogram_by_class.iter().enumerate() {
            gp_rows.push(gp_row(&node, placement, &(class + 1).to_string(), histogram));
        }
        gp_rows.push(gp_row(&node, placement, "all", &r.gp_histogram));
        run_rows.push(vec![node.clone(), placement.to_string(), format!("{:.4}", r.waf), format!("{:.4}", r.gc_gib), r.gc_count.to_string()]);
        commands.push_str(&format!("{node}\t{placement}\t{}\n", spec.command(&input.input)));
    }
    let shown: Vec<Vec<String>> = gp_rows.iter().filter(|r| r[3] != "0").cloned().collect();
    print!("{}", zonekit_report::fitted_table(&GP_BY_CLASS_HEADER, &shown, zonekit_report::TERMINAL_COLUMNS));
    zonekit_base::atomic::write(out.join("gp_by_class.csv"), csv(&GP_BY_CLASS_HEADER, &gp_rows))?;
    zonekit_base::atomic::write(out.join("runs.csv"), csv(&["node", "placement", "waf", "gc_gib", "gc_count"], &run_rows))?;
    zonekit_base::atomic::write(out.join("commands.tsv"), commands)?;
    println!("\nwrote {}/{{gp_by_class.csv, runs.csv, commands.tsv}}", out.display());
    Ok(())
}

fn short(s: &str) -> String {
    if s.len() > 50 {
        format!("{}…", &s[..50])
    } else {
        s.to_string()
    }
}

/// Table 4.3 of seed 000 (§4.3.1): mean WAF, mean GC writes (GB) and mean GC count relative
/// to ZB-OPT over the ten nodes.
const THESIS_TABLE_4_3: [(&str, f64, f64, f64); 7] = [
    (NORMAL.name, 2.008, 442.5, 2.028),
    (WARCIP.name, 1.639, 280.6, 1.729),
    (SEPBIT.name, 1.615, 270.1, 1.700),
    (BHBDP_PRE.name, 1.493, 216.5, 1.557),
    (BHBDP.name, 1.309, 135.7, 1.341),
    (FK.name, 1.206, 90.3, 1.222),
    (ZBOPT.name, 1.017, 7.3, 1.0),
];

fn chosen_nodes(a: &ExperimentArgs, default: &[u32]) -> Result<Vec<CbsNode>> {
    let numbers = a.nodes.clone().unwrap_or_else(|| default.to_vec());
    numbers.iter().map(|&n| CbsNode::find(n).map_err(lab)).collect()
}

fn node_label(workload: &str) -> String {
    workload.split_whitespace().next().unwrap_or(workload).to_string()
}

/// `zonekit experiment table-4.3`: the thesis' ten nodes at its scale, per-node rows, the
/// means beside Table 4.3 and the per-node ranges §4.3.2–4.3.4 give.
fn table_43(a: &ExperimentArgs, traces: &[PathBuf], out: &Path) -> Result<()> {
    let (default_nodes, default_scale): (Vec<u32>, f64) = if a.quick { (vec![1, 2], 0.02) } else { ((1..=10).collect(), 1.0) };
    let nodes = chosen_nodes(a, &default_nodes)?;
    let scale = a.scale.unwrap_or(default_scale);
    say!(
        "Table 4.3 of seed 000 at {}: Table 2.1's nodes on femu-zns (32 MiB zones, 7 open) of {} each, GC at 15 % sealed garbage, CBE.",
        if scale == 1.0 { "the thesis' scale".to_string() } else { format!("{scale} of the thesis' scale") },
        gib_text(DEVICE_GIB * scale)
    );
    println!("Generating the nodes' workloads (address space calibrated to each node's working set):");
    let mut inputs = node_inputs(&nodes, scale)?;
    let mean_utilization = nodes.iter().map(CbsNode::utilization).sum::<f64>() / nodes.len().max(1) as f64;
    for t in traces {
        inputs.push(SweepInput { utilization: Some(mean_utilization), ..SweepInput::trace(t).map_err(lab)? });
    }
    let placements: Vec<String> = THESIS_TABLE_4_3.iter().map(|t| t.0.to_string()).collect();
    run_inputs(inputs, &placements, &[CBE.name.to_string()], None, &thesis_ftl(), 1, a.jobs, None, out)?;
    let rows = sweep::load_results(&out.join("results.csv")).map_err(lab)?;
    let rows: Vec<&Vec<String>> = rows.iter().filter(|r| r[C_WORKLOAD].starts_with("node")).collect();
    // Per placement: WAF, GC GiB and GC count vs ZB-OPT of every node.
    let metric = |placement: &str, column: usize| -> Vec<f64> { rows.iter().filter(|r| r[C_PLACEMENT] == placement).filter_map(|r| r[column].parse().ok()).collect() };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let span = |v: &[f64]| Spread::of(v.to_vec()).map_or("-".into(), |s| format!("{:.3} ({:.3}–{:.3})", mean(v), s.min, s.max));
    let mut table = Vec::new();
    let (mut ours, mut thesis) = (Vec::new(), Vec::new());
    for &(p, waf, gc_gb, vs_zbopt) in &THESIS_TABLE_4_3 {
        let (w, g, c) = (metric(p, C_WAF), metric(p, C_GC_GIB), metric(p, C_VS_ZBOPT));
        table.push(vec![p.to_string(), span(&w), format!("{waf:.3}"), span(&g), format!("{gc_gb:.1}"), span(&c), format!("{vs_zbopt:.3}")]);
        ours.push(if w.is_empty() { f64::NAN } else { mean(&w) });
        thesis.push(waf);
    }
    let header = ["placement", "WAF mean (min–max)", "thesis", "GC GiB mean (min–max)", "thesis GB", "GC count / ZB-OPT mean (min–max)", "thesis"];
    println!("\nOver {} node(s) (the thesis' GC GB are at full scale):", nodes.len());
    print!("{}", zonekit_report::fitted_table(&header, &table, zonekit_report::TERMINAL_COLUMNS));
    // The per-node comparisons the thesis states (§4.3.2–4.3.4), BHB-DP against SepBIT.
    let per_node = |column: usize| -> Vec<f64> {
        let of = |p: &str| rows.iter().filter(|r| r[C_PLACEMENT] == p).map(|r| (r[C_WORKLOAD].clone(), r[column].parse::<f64>().unwrap_or(f64::NAN))).collect::<BTreeMap<_, _>>();
        let (b, s) = (of(BHBDP.name), of(SEPBIT.name));
        b.iter().filter_map(|(k, v)| s.get(k).map(|sv| 100.0 * (1.0 - v / sv))).collect()
    };
    let reductions = [("WAF", C_WAF, "11.5–23.2 %"), ("GC writes", C_GC_GIB, "35.9–59.4 %"), ("GC count", C_GC_COUNT, "13.8–25.4 %")];
    println!("\nBHB-DP below SepBIT, per node (negative = above):");
    let mut lines = Vec::new();
    for (what, column, thesis) in reductions {
        let range = Spread::of(per_node(column)).map_or("-".into(), |s| format!("{:.1}–{:.1} %", s.min, s.max));
        println!("  {what:<9} {range} (thesis {thesis})");
        lines.push(vec![what.to_string(), range, thesis.to_string()]);
    }
    let by_node: Vec<Vec<String>> =
        rows.iter().map(|r| vec![node_label(&r[C_WORKLOAD]), r[C_PLACEMENT].clone(), r[C_WAF].clone(), r[C_GC_GIB].clone(), r[C_VS_ZBOPT].clone()]).collect();
    zonekit_base::atomic::write(out.join("table_4_3.csv"), csv(&header, &table))?;
    zonekit_base::atomic::write(out.join("bhbdp_vs_sepbit.csv"), csv(&["metric", "reduction per node (min–max)", "thesis"], &lines))?;
    zonekit_base::atomic::write(out.join("by_node.csv"), csv(&["node", "placement", "waf", "gc_gib", "gc_count_vs_zbopt"], &by_node))?;
    let setting = format!(
        "node{} {} at {}, femu-zns (32 MiB zones, 7 open), GC at 15 % sealed garbage, CBE",
        if nodes.len() == 1 { "" } else { "s" },
        nodes.iter().map(|n| n.node.to_string()).collect::<Vec<_>>().join(", "),
        if scale == 1.0 { "the thesis' scale".to_string() } else { format!("{scale} of the thesis' scale") },
    );
    let vs_thesis = BarChart::new("Table 4.3: mean WAF, ours beside the thesis'", "mean WAF", "", "placement", placements.clone())
        .series(&format!("ours (mean of {} node{})", nodes.len(), if nodes.len() == 1 { "" } else { "s" }), ours)
        .series("thesis (mean of 10 nodes)", thesis)
        .caption(&format!("Mirrors seed 000's Table 4.3, column mean WAF. Ours: {setting}."));
    zonekit_base::atomic::write(out.join("waf_vs_thesis.svg"), vs_thesis.svg())?;
    // The placements compared across nodes in one grouped chart, as the thesis compares them.
    let node_names: Vec<String> = nodes.iter().map(|n| format!("node{}", n.node)).collect();
    let waf_of = |node: &str, placement: &str| {
        rows.iter().find(|r| node_label(&r[C_WORKLOAD]) == node && r[C_PLACEMENT] == placement).and_then(|r| r[C_WAF].parse().ok()).unwrap_or(f64::NAN)
    };
    let by_node = placements.iter().fold(BarChart::new("WAF per node and placement", "WAF", "", "node (Table 2.1)", node_names.clone()), |chart, p| {
        chart.series(p, node_names.iter().map(|node| waf_of(node, p)).collect())
    });
    let by_node = by_node.caption(&format!("Mirrors seed 000's Table 4.3 (mean WAF of each placement over ten nodes), drawn per node. Ours: {setting}."));
    // Not `fig-4.3.svg`: the thesis' Fig. 4.3 is GC writes (`report figures` draws it as that).
    zonekit_base::atomic::write(out.join("waf-by-node.svg"), by_node.svg())?;
    say!("wrote {}/{{table_4_3.csv, bhbdp_vs_sepbit.csv, by_node.csv}}", out.display());
    say!("wrote {}/{{waf_vs_thesis.svg, waf-by-node.svg}}", out.display());
    Ok(())
}

/// Zones per working set of the granularity sweep: the node scaled from 1/40 to its full size.
const GRANULARITY_SCALES: [f64; 6] = [0.025, 0.05, 0.125, 0.25, 0.5, 1.0];

/// `zonekit experiment granularity`: how the placements order as the device gets coarser —
/// one node scaled so its working set spans ~50 to ~2,000 zones of 32 MiB.
fn granularity(a: &ExperimentArgs, out: &Path) -> Result<()> {
    let nodes = chosen_nodes(a, &[1])?;
    let scales: &[f64] = if a.quick { &GRANULARITY_SCALES[..3] } else { &GRANULARITY_SCALES };
    let zone_gib = 32.0 / 1024.0;
    print!("{}", granularity_intro(&nodes.iter().map(|n| n.node).collect::<Vec<_>>(), scales));
    let mut inputs = Vec::new();
    // (node, scale, the input's label in results)
    let mut points_of = Vec::new();
    for &s in scales {
        for (n, input) in nodes.iter().zip(node_inputs(&nodes, s)?) {
            points_of.push((n.node, s, input.label.clone()));
            inputs.push(input);
        }
    }
    let placements: Vec<String> = THESIS_TABLE_4_3.iter().map(|t| t.0.to_string()).collect();
    run_inputs(inputs, &placements, &[CBE.name.to_string()], None, &thesis_ftl(), 1, a.jobs, None, out)?;
    let rows = sweep::load_results(&out.join("results.csv")).map_err(lab)?;
    let mut table = Vec::new();
    let mut series = Vec::new();
    for n in &nodes {
        for p in &placements {
            let mut points = Vec::new();
            for (_, s, label) in points_of.iter().filter(|(node, _, _)| *node == n.node) {
                if let Some(r) = rows.iter().find(|r| r[C_WORKLOAD] == *label && r[C_PLACEMENT] == *p) {
                    let zones = n.wss_gib * s / zone_gib;
                    table.push(vec![n.node.to_string(), format!("{zones:.0}"), p.clone(), r[C_WAF].clone(), r[C_VS_ZBOPT].clone()]);
                    points.push((zones, r[C_WAF].parse().unwrap_or(f64::NAN)));
                }
            }
            series.push(Series { name: format!("{p} (node {})", n.node), points });
        }
    }
    let header = ["node", "zones per working set", "placement", "WAF", "GC count / ZB-OPT"];
    print!("\n{}", zonekit_report::fitted_table(&header, &table, zonekit_report::TERMINAL_COLUMNS));
    zonekit_base::atomic::write(out.join("granularity.csv"), csv(&header, &table))?;
    zonekit_base::atomic::write(out.join("granularity.svg"), line_chart("WAF as zones per working set grow (32 MiB zones)", "zones per working set", "WAF", &series, true))?;
    say!("wrote {}/{{granularity.csv, granularity.svg}}", out.display());
    Ok(())
}

/// What `experiment granularity` says first: its nodes and scales as a person writes them
/// ("node 1 at 2.5, 5 and 12.5 % of its size"), fitted to the terminal.
fn granularity_intro(nodes: &[u32], scales: &[f64]) -> String {
    let list = |items: Vec<String>| match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => items.join(""),
    };
    let nodes_text = format!("node{} {}", if nodes.len() == 1 { "" } else { "s" }, list(nodes.iter().map(u32::to_string).collect()));
    let scales_text = list(scales.iter().map(|s| format!("{}", s * 100.0)).collect());
    zonekit_report::wrapped(
        "",
        &format!(
            "Granularity: Table 4.3's placements on {nodes_text} at {scales_text} % of {} size (femu-zns zones, GC at 15 % sealed garbage, CBE).",
            if nodes.len() == 1 { "its" } else { "their" }
        ),
        zonekit_report::TERMINAL_COLUMNS,
    )
}

/// The interfaces experiment's default share of each node (node 1: ~200 zones per working set,
/// every run timed; about 25 minutes on 2 cores for the ten nodes).
const INTERFACES_SCALE: f64 = 0.1;

/// `zonekit experiment interfaces`: Table 4.3's placements on every interface, at the same raw
/// capacity (docs/results/interfaces.md).
fn interfaces(a: &ExperimentArgs, out: &Path) -> Result<()> {
    use zonekit_lab::block::interfaces::{self, InterfacesSpec};
    use zonekit_lab::harness::interface::Interface;
    use zonekit_ssd::RuhType;
    // Quick: node 1 at 0.05, where the ZNS device's fixed reserve of zones still leaves the SSD
    // a spare under 1 (at 0.02 it is 1.09, which the SSD model refuses).
    let (default_nodes, default_scale): (Vec<u32>, f64) = if a.quick { (vec![1], 0.05) } else { ((1..=10).collect(), INTERFACES_SCALE) };
    let nodes = chosen_nodes(a, &default_nodes)?;
    let scale = a.scale.unwrap_or(default_scale);
    let fdp = |handles| Interface::Fdp { handles, ruh_type: RuhType::InitiallyIsolated };
    let compared = vec![Interface::Zns, fdp(2), fdp(4), fdp(8), Interface::Conventional];
    say!(
        "One placement, every interface: Table 2.1's nodes at {scale} of their size, femu-zns raw capacity ({} per node), 32 MiB zones = reclaim units, CBE victims on the host (ZNS) and in the device (FDP, conventional), timed.",
        gib_text(DEVICE_GIB * scale)
    );
    say!("GC when free space runs short on every interface (ZNS: --gc-trigger free-zones); ZNS under the thesis' trigger (gp-sealed at 15 %) beside it as zns/gp-sealed.");
    let inputs = node_inputs(&nodes, scale)?;
    let placements: Vec<String> = THESIS_TABLE_4_3.iter().map(|t| t.0.to_string()).collect();
    let lazy = FtlArgs { gc_trigger: GcTrigger::FreeZones.name().into(), timing: true, ..thesis_ftl() };
    let eager = FtlArgs { timing: true, ..thesis_ftl() };
    let spec = |ftl: &FtlArgs, interfaces: Vec<Interface>, inputs: Vec<zonekit_lab::block::sweep::SweepInput>| InterfacesSpec {
        inputs,
        placements: placements.clone(),
        interfaces,
        base: ftl.spec(BHBDP.name, CBE.name, Default::default(), 1),
        threads: a.jobs,
        keep_runs_in: Some(out.to_path_buf()),
    };
    let bar = std::sync::Mutex::new(None::<crate::progress::Progress>);
    let on_start = |n: usize| *bar.lock().unwrap() = Some(crate::progress::Progress::bar(n as u64, "runs").with_message("interfaces"));
    let on_done = || {
        if let Some(b) = bar.lock().unwrap().as_ref() {
            b.inc(1);
        }
    };
    let main = spec(&lazy, compared.clone(), inputs.clone());
    let mut rows = interfaces::run(&main, &on_start, &on_done).map_err(lab)?;
    let mut thesis_rows = interfaces::run(&spec(&eager, vec![Interface::Zns], inputs), &on_start, &on_done).map_err(lab)?;
    if let Some(b) = bar.lock().unwrap().take() {
        b.finish_and_clear();
    }
    for r in &mut thesis_rows {
        r.interface = "zns/gp-sealed".into();
    }
    rows.extend(thesis_rows);
    let mut names: Vec<String> = compared.iter().map(Interface::name).collect();
    names.insert(1, "zns/gp-sealed".into());
    let text = interfaces::write(out, &placements, &names, &rows).map_err(lab)?;
    print!("\n{}", zonekit_report::for_terminal(&text, zonekit_report::TERMINAL_COLUMNS));
    say!("wrote {}/{{interfaces.csv, summary.csv, waf.svg, write_p99.svg}}", out.display());
    Ok(())
}

/// The fdp-anchor's device: 2 GiB of logical space (a quarter with --quick), the drive's
/// reclaim-unit count kept.
const ANCHOR_LOGICAL_BLOCKS: u64 = 1 << 19;

/// `zonekit experiment fdp-anchor` (docs/results/interfaces.md, "The published anchor").
fn fdp_anchor(a: &ExperimentArgs, out: &Path) -> Result<()> {
    let logical = if a.quick { ANCHOR_LOGICAL_BLOCKS / 4 } else { ANCHOR_LOGICAL_BLOCKS };
    say!(
        "CacheLib's Navy on an FDP SSD (fdp-pm9d3's shape, {} MiB of logical space, its reclaim-unit count kept): BigHash {:.0} % of the cache (assumed) rewriting random 4 KiB buckets, BlockCache writing regions in a ring; FDP puts each under a handle of its own.",
        logical * 4 / 1024,
        zonekit_lab::block::interfaces::NAVY_SMALL_SHARE * 100.0
    );
    let (share, rows) = zonekit_lab::block::interfaces::navy_anchor(logical, 1).map_err(lab)?;
    say!("BigHash's share of host writes, calibrated so the conventional drive at 100 % gives the published 3.22: {:.3}", share);
    println!();
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let status = if (r.used, r.fdp) == (1.0, false) { "calibrated".to_string() } else { format!("{:+.1} %", 100.0 * (r.waf / r.published_waf - 1.0)) };
            vec![format!("{:.0} %", r.used * 100.0), if r.fdp { "FDP" } else { "no FDP" }.into(), format!("{:.2}", r.published_waf), format!("{:.3}", r.waf), status]
        })
        .collect();
    let header = ["device used", "placement", "published WAF", "ours", "ours vs published"];
    print!("{}", zonekit_report::fitted_table(&header, &table, zonekit_report::TERMINAL_COLUMNS));
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    zonekit_base::atomic::write(out.join("anchor.csv"), csv(&header, &table))?;
    let bars: Vec<(String, f64)> = rows
        .iter()
        .flat_map(|r| {
            let what = format!("{:.0} % {}", r.used * 100.0, if r.fdp { "FDP" } else { "no FDP" });
            [(format!("{what} (published)"), r.published_waf), (format!("{what} (ours)"), r.waf)]
        })
        .collect();
    zonekit_base::atomic::write(out.join("anchor.svg"), bar_chart("Navy's pattern on an FDP SSD: device WAF, published and ours", "WAF", &bars))?;
    // Each row's command: every row shares the one calibration of BigHash's share (made on
    // the 100 % no-FDP row), so what reproduces a row is the whole experiment, which takes
    // seconds.
    let command = format!("zonekit experiment fdp-anchor{}", if a.quick { " --quick" } else { "" });
    let mut commands = String::from("device used\tplacement\tcommand\n");
    for row in &table {
        commands.push_str(&format!("{}\t{}\t{command}\n", row[0], row[1]));
    }
    zonekit_base::atomic::write(out.join("commands.tsv"), commands)?;
    say!("wrote {}/{{anchor.csv, anchor.svg, commands.tsv}}", out.display());
    Ok(())
}

/// A device size given in GiB, as a person reads it: whole GiB from 10, one decimal from 1,
/// MiB below (0.002 of the thesis' 64 GiB is 131 MiB, not "0 GiB").
fn gib_text(gib: f64) -> String {
    match gib {
        g if g >= 10.0 => format!("{g:.0} GiB"),
        g if g >= 1.0 => format!("{g:.1} GiB"),
        g => format!("{:.0} MiB", g * 1024.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granularity_intro_reads_as_prose() {
        let text = granularity_intro(&[1], &GRANULARITY_SCALES[..3]);
        assert!(text.contains("on node 1 at 2.5, 5 and 12.5 % of its size"), "{text}");
        // No Rust debug lists ([1], [0.025, 0.05]).
        assert!(!text.contains('['), "{text}");
        let text = granularity_intro(&[1, 3], &[1.0]);
        assert!(text.contains("on nodes 1 and 3 at 100 % of their size"), "{text}");
    }

    #[test]
    fn bhbdp_sensitivity_intro_fits_the_terminal() {
        // The experiment itself runs 72 replays, too long for contract.rs's width test.
        for line in bhbdp_sensitivity_intro().lines() {
            assert!(line.chars().count() <= zonekit_report::TERMINAL_COLUMNS, "{line}");
        }
    }
}

//! `zonekit replay` and `zonekit sweep`: the block FTL on traces and workloads.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use zonekit_ftl::placement::Params;
use zonekit_ftl::replay::{replay, ReplayReport, ReplaySpec};
use zonekit_ftl::{CapacityMode, FtlConfig};
use zonekit_report::{bar_chart, box_chart, csv, text_table};
use zonekit_trace::input::Input;

use crate::trace_cmd::InputArgs;

/// Device and FTL settings shared by replay and sweep.
#[derive(Args, Clone, Debug)]
pub struct FtlArgs {
    /// Device preset (zone size, open limit, flash timing): tiny, ocssd-thesis, femu-zns, zn540, nvmevirt-zns.
    #[arg(long, default_value = "femu-zns")]
    pub preset: String,
    /// Size the device so the working set fills this share of it (over-provisioning = 1 − u).
    #[arg(long, default_value_t = 0.85, conflicts_with_all = ["unbounded", "preset_size"])]
    pub utilization: f64,
    /// Use the preset's own size instead of sizing by --utilization.
    #[arg(long)]
    pub preset_size: bool,
    /// The SepBIT simulator's unbounded log instead of a fixed capacity.
    #[arg(long)]
    pub unbounded: bool,
    /// Garbage proportion that triggers GC.
    #[arg(long, default_value_t = 0.15)]
    pub gc_threshold: f64,
    /// Charge operations to the preset's flash timing model (reports device time).
    #[arg(long)]
    pub timing: bool,
}

impl FtlArgs {
    fn spec(&self, placement: &str, victim: &str, params: Params, seed: u64) -> ReplaySpec {
        ReplaySpec {
            placement: placement.to_string(),
            params,
            victim: victim.to_string(),
            config: FtlConfig { gc_threshold: self.gc_threshold, capacity: if self.unbounded { CapacityMode::Unbounded } else { CapacityMode::Fixed }, store_data: false },
            preset: self.preset.clone(),
            utilization: (!self.unbounded && !self.preset_size).then_some(self.utilization),
            timing: self.timing,
            seed,
        }
    }
}

fn parse_params(list: &[String]) -> Result<Params> {
    let mut p = Params::new();
    for kv in list {
        let (k, v) = kv.split_once('=').with_context(|| format!("--param {kv:?}: expected key=value"))?;
        p.insert(k.to_string(), v.to_string());
    }
    Ok(p)
}

#[derive(Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    input: InputArgs,
    #[command(flatten)]
    ftl: FtlArgs,
    /// Placement policy: normal, sepgc, warcip, sepbit, sepbit6, bhbdp-pre, bhbdp, fk, zbopt, lifespan.
    #[arg(long, default_value = "bhbdp")]
    placement: String,
    /// GC victim policy: greedy, cb, cb-sqrt, cb-ln, cb-sepbit, cbe, cbe-sqrt, cbe-ln, d-choices:D.
    #[arg(long, default_value = "cbe")]
    victim: String,
    /// Placement parameter, e.g. --param r1=0.5 (repeatable).
    #[arg(long = "param")]
    params: Vec<String>,
    #[arg(long, default_value = "zonekit-out/replay")]
    out: PathBuf,
}

fn progress_bar(total: Option<u64>, what: &str) -> ProgressBar {
    let bar = match total {
        Some(n) => ProgressBar::new(n).with_style(ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({eta})").expect("template")),
        None => ProgressBar::new_spinner().with_style(ProgressStyle::with_template("{spinner} {msg} {human_pos} block writes ({per_sec})").expect("template")),
    };
    bar.set_message(what.to_string());
    bar
}

pub fn replay_cmd(a: ReplayArgs) -> Result<ExitCode> {
    let input = a.input.input()?;
    let spec = a.ftl.spec(&a.placement, &a.victim, parse_params(&a.params)?, a.input.seed);
    let bar = progress_bar(None, &format!("replaying {} + {}", a.placement, a.victim));
    let report = replay(&input, &spec, &mut |n| bar.set_position(n))?;
    bar.finish_and_clear();
    print_report(&report);
    std::fs::create_dir_all(&a.out).with_context(|| format!("creating {}", a.out.display()))?;
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
        vec!["device".into(), format!("{} zones of {:.0} MiB ({:?})", r.zones, r.zone_mib, r.capacity_mode)],
        vec!["working set".into(), format!("{} blocks", r.distinct_blocks)],
        vec!["user writes".into(), format!("{} blocks ({:.2} GiB)", r.user_blocks, r.user_gib)],
        vec!["GC writes".into(), format!("{} blocks ({:.2} GiB)", r.gc_blocks, r.gc_gib)],
        vec!["WAF".into(), format!("{:.3}", r.waf)],
        vec!["GC count (zones reclaimed)".into(), r.gc_count.to_string()],
        vec!["reclaimed GP mean".into(), r.reclaimed_gp_mean.map_or("-".into(), |m| format!("{m:.3}"))],
        vec!["reclaimed GP Q1 / median / Q3".into(), q],
        vec!["zone resets min / max / mean".into(), format!("{} / {} / {:.1}", r.resets_min_max_mean.0, r.resets_min_max_mean.1, r.resets_min_max_mean.2)],
        vec!["device time (timing model)".into(), r.device_time_s.map_or("-".into(), |t| format!("{t:.2} s"))],
        vec!["replay speed".into(), format!("{:.2} M blocks/s ({:.2} s)", r.blocks_per_s / 1e6, r.wall_s)],
        vec!["FTL state".into(), format!("{:.1} B per live block", r.ftl_bytes_per_block)],
    ];
    print!("{}", text_table(&["metric", "value"], &rows));
}

// ---- sweep -------------------------------------------------------------------------------

#[derive(Args)]
pub struct SweepArgs {
    /// Trace files (text, vscsi or .zkt).
    #[arg(long, value_delimiter = ',')]
    traces: Vec<PathBuf>,
    /// Generated workloads, separated by ';'.
    #[arg(long, value_delimiter = ';')]
    workloads: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "normal,warcip,sepbit,bhbdp-pre,bhbdp,lifespan,fk,zbopt")]
    placements: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "cbe")]
    victims: Vec<String>,
    /// Parameter grid for the placement, e.g. "r1=0.25,0.5,1;r2=2,4" (every combination).
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
    #[arg(long, default_value = "zonekit-out/sweep")]
    out: PathBuf,
}

/// One point of a sweep.
#[derive(Clone, Debug)]
struct Job {
    workload: String,
    input: Input,
    placement: String,
    victim: String,
    params: Params,
}

impl Job {
    fn key(&self) -> String {
        let params: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{}|{}|{}|{}", self.workload, self.placement, self.victim, params.join(" "))
    }
}

pub const SWEEP_HEADER: [&str; 16] = [
    "workload",
    "placement",
    "victim",
    "params",
    "waf",
    "user_gib",
    "gc_gib",
    "gc_count",
    "gc_count_vs_zbopt",
    "gp_mean",
    "gp_q1",
    "gp_median",
    "gp_q3",
    "blocks_per_s",
    "gp_p05",
    "gp_p95",
];

fn grid(spec: Option<&str>) -> Result<Vec<Params>> {
    let mut out = vec![Params::new()];
    for dim in spec.unwrap_or("").split(';').filter(|s| !s.trim().is_empty()) {
        let (k, values) = dim.split_once('=').with_context(|| format!("--grid {dim:?}: expected key=v1,v2"))?;
        let mut next = Vec::new();
        for p in &out {
            for v in values.split(',') {
                let mut q = p.clone();
                q.insert(k.trim().to_string(), v.trim().to_string());
                next.push(q);
            }
        }
        out = next;
    }
    Ok(out)
}

/// Runs the jobs in parallel, appending a CSV row per finished job to `results`, and skipping
/// jobs whose key is already there (so an interrupted sweep resumes).
fn run_jobs(jobs: Vec<Job>, ftl: &FtlArgs, seed: u64, parallel: usize, results: &Path) -> Result<()> {
    let done: BTreeSet<String> = std::fs::read_to_string(results)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() >= 4).then(|| format!("{}|{}|{}|{}", f[0], f[1], f[2], f[3]))
        })
        .collect();
    let todo: Vec<Job> = jobs.into_iter().filter(|j| !done.contains(&j.key())).collect();
    if !results.exists() {
        std::fs::write(results, SWEEP_HEADER.join(",") + "\n")?;
    }
    if todo.is_empty() {
        println!("all {} runs already in {}", done.len(), results.display());
        return Ok(());
    }
    println!("{} runs to do ({} already done), {parallel} at a time", todo.len(), done.len());
    let bar = progress_bar(Some(todo.len() as u64), "sweep");
    let queue = Arc::new(Mutex::new(todo));
    let out = Arc::new(Mutex::new(()));
    let errors = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|s| {
        for _ in 0..parallel.max(1) {
            let (queue, out, errors, bar) = (queue.clone(), out.clone(), errors.clone(), bar.clone());
            s.spawn(move || loop {
                let Some(job) = queue.lock().unwrap().pop() else { break };
                let spec = ftl.spec(&job.placement, &job.victim, job.params.clone(), seed);
                match replay(&job.input, &spec, &mut |_| {}) {
                    Ok(r) => {
                        let q = r.reclaimed_gp_q1_median_q3.unwrap_or([0.0; 3]);
                        let params: Vec<String> = job.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        let row = [
                            job.workload.clone(),
                            job.placement.clone(),
                            job.victim.clone(),
                            params.join(" "),
                            format!("{:.4}", r.waf),
                            format!("{:.4}", r.user_gib),
                            format!("{:.4}", r.gc_gib),
                            r.gc_count.to_string(),
                            String::new(),
                            format!("{:.4}", r.reclaimed_gp_mean.unwrap_or(0.0)),
                            format!("{:.2}", q[0]),
                            format!("{:.2}", q[1]),
                            format!("{:.2}", q[2]),
                            format!("{:.0}", r.blocks_per_s),
                            format!("{:.2}", percentile(&r.gp_histogram, 0.05)),
                            format!("{:.2}", percentile(&r.gp_histogram, 0.95)),
                        ];
                        let _guard = out.lock().unwrap();
                        let mut f = std::fs::OpenOptions::new().append(true).open(results).expect("results file");
                        std::io::Write::write_all(&mut f, (row.join(",") + "\n").as_bytes()).expect("append result");
                    }
                    Err(e) => errors.lock().unwrap().push(format!("{}: {e}", job.key())),
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let errors = errors.lock().unwrap();
    if !errors.is_empty() {
        bail!("{} runs failed:\n  {}", errors.len(), errors.join("\n  "));
    }
    Ok(())
}

fn percentile(hist: &[u64], q: f64) -> f64 {
    let total: u64 = hist.iter().sum();
    let mut seen = 0;
    for (i, n) in hist.iter().enumerate() {
        seen += n;
        if total > 0 && seen as f64 >= q * total as f64 {
            return i as f64 / 100.0;
        }
    }
    0.0
}

/// Reads a sweep's results and fills in GC count relative to ZB-OPT on the same workload.
pub fn load_results(results: &Path) -> Result<Vec<Vec<String>>> {
    let text = std::fs::read_to_string(results).with_context(|| format!("reading {}", results.display()))?;
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let row: Vec<String> = line.split(',').map(String::from).collect();
        if row.len() != SWEEP_HEADER.len() {
            bail!(
                "{}:{}: {} fields, expected {} (a results file from another zonekit version? move it away to start over)",
                results.display(),
                i + 1,
                row.len(),
                SWEEP_HEADER.len()
            );
        }
        rows.push(row);
    }
    let zbopt: std::collections::BTreeMap<(String, String), f64> =
        rows.iter().filter(|r| r[1] == "zbopt").map(|r| ((r[0].clone(), r[2].clone()), r[7].parse::<f64>().unwrap_or(0.0))).collect();
    for r in &mut rows {
        if let Some(&z) = zbopt.get(&(r[0].clone(), r[2].clone())) {
            if z > 0.0 {
                r[8] = format!("{:.3}", r[7].parse::<f64>().unwrap_or(0.0) / z);
            }
        }
    }
    Ok(rows)
}

/// Tables and charts of a results file, grouped by workload.
pub fn summarize(rows: &[Vec<String>], out: &Path) -> Result<()> {
    let workloads: BTreeSet<String> = rows.iter().map(|r| r[0].clone()).collect();
    for (wi, w) in workloads.iter().enumerate() {
        let mut mine: Vec<&Vec<String>> = rows.iter().filter(|r| &r[0] == w).collect();
        // Worst first, as the thesis' tables run from Normal to ZB-OPT.
        mine.sort_by(|a, b| b[4].parse::<f64>().unwrap_or(0.0).total_cmp(&a[4].parse::<f64>().unwrap_or(0.0)));
        println!("\n{w}");
        let table: Vec<Vec<String>> = mine
            .iter()
            .map(|r| {
                let label = if r[3].is_empty() { format!("{} + {}", r[1], r[2]) } else { format!("{} + {} ({})", r[1], r[2], r[3]) };
                vec![label, r[4].clone(), r[6].clone(), r[7].clone(), if r[8].is_empty() { "-".into() } else { r[8].clone() }, format!("{} / {} / {}", r[10], r[11], r[12])]
            })
            .collect();
        print!("{}", text_table(&["run", "WAF", "GC GiB", "GC count", "vs ZB-OPT", "GP Q1/med/Q3"], &table));
        let label = |r: &Vec<String>| if r[3].is_empty() { format!("{}+{}", r[1], r[2]) } else { format!("{}+{} {}", r[1], r[2], r[3]) };
        let bars = |col: usize| mine.iter().map(|r| (label(r), r[col].parse::<f64>().unwrap_or(0.0))).collect::<Vec<_>>();
        let short = if w.len() > 60 { format!("{}…", &w[..60]) } else { w.clone() };
        std::fs::write(out.join(format!("waf_{wi}.svg")), bar_chart(&format!("WAF — {short}"), "WAF", &bars(4)))?;
        std::fs::write(out.join(format!("gc_writes_{wi}.svg")), bar_chart(&format!("GC writes — {short}"), "GiB", &bars(6)))?;
        if mine.iter().any(|r| !r[8].is_empty()) {
            std::fs::write(out.join(format!("gc_count_vs_zbopt_{wi}.svg")), bar_chart(&format!("GC count / ZB-OPT — {short}"), "ratio", &bars(8)))?;
        }
        let num = |r: &Vec<String>, c: usize| r[c].parse::<f64>().unwrap_or(0.0);
        let boxes: Vec<(String, [f64; 5])> = mine.iter().map(|r| (label(r), [num(r, 14), num(r, 10), num(r, 11), num(r, 12), num(r, 15)])).collect();
        std::fs::write(out.join(format!("gp_box_{wi}.svg")), box_chart(&format!("GP of reclaimed zones (P5, Q1, median, Q3, P95) — {short}"), "garbage proportion", 1.0, &boxes))?;
    }
    let header: Vec<&str> = SWEEP_HEADER.to_vec();
    std::fs::write(out.join("results_with_ratios.csv"), csv(&header, rows))?;
    Ok(())
}

pub fn sweep_cmd(a: SweepArgs) -> Result<ExitCode> {
    if a.traces.is_empty() && a.workloads.is_empty() {
        bail!("name at least one --traces file or --workloads spec");
    }
    run_grid(&a.workloads, &a.traces, &a.placements, &a.victims, a.grid.as_deref(), &a.ftl, a.seed, a.jobs, &a.out)?;
    Ok(ExitCode::SUCCESS)
}

/// Replays every workload and trace with every placement and victim (and grid point), writes
/// `results.csv`, prints the tables and writes the charts.
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
    out: &Path,
) -> Result<()> {
    let mut inputs: Vec<(String, Input)> = Vec::new();
    for t in traces {
        if !t.exists() {
            bail!("{}: no such file", t.display());
        }
        inputs.push((t.display().to_string().replace(',', " "), Input::path(t, None, false)));
    }
    for w in workloads {
        let workload = w.parse().map_err(anyhow::Error::msg).with_context(|| format!("workload {w:?}"))?;
        // Results are CSV: the label must not contain commas.
        inputs.push((w.replace(',', " "), Input::generated(workload, seed)));
    }
    let grid = grid(grid_spec)?;
    let mut jobs = Vec::new();
    for (name, input) in &inputs {
        for p in placements {
            for v in victims {
                // A grid applies to the placements that take those parameters.
                let points: Vec<Params> = if grid.len() > 1 && matches!(p.as_str(), "bhbdp" | "bhbdp-pre") { grid.clone() } else { vec![Params::new()] };
                for params in points {
                    jobs.push(Job { workload: name.clone(), input: input.clone(), placement: p.clone(), victim: v.clone(), params });
                }
            }
        }
    }
    // Validate names before spending time.
    for j in &jobs {
        let env = zonekit_ftl::placement::PolicyEnv { zone_blocks: 1024, capacity_blocks: 1 << 20 };
        zonekit_ftl::placement::create(&j.placement, &mut j.params.clone(), env).map_err(anyhow::Error::msg)?;
        zonekit_ftl::victim::create(&j.victim, 1).map_err(anyhow::Error::msg)?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let results = out.join("results.csv");
    run_jobs(jobs, ftl, seed, parallel, &results)?;
    let rows = load_results(&results)?;
    summarize(&rows, out)?;
    println!("\nwrote {}/{{results.csv, results_with_ratios.csv, waf_*.svg, gc_writes_*.svg, gc_count_vs_zbopt_*.svg, gp_box_*.svg}}", out.display());
    Ok(())
}

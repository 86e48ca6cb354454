//! The kv-bench's tables and charts: a sweep's largest key count, WAF, space and throughput
//! per configuration, and rounds' throughput relative to a baseline (seed 001's Figure 16).

use std::collections::BTreeMap;
use std::path::Path;

use zonekit_report::{bar_chart, box_chart, csv, line_chart, text_table, Series, Spread};

use crate::harness::error::{LabError, Result};
use crate::kv::config::{seed_name, REFERENCE};
use crate::kv::db_bench::{opt, workload_ops_s, RunResult};

/// The order of round `repeat`: as given, reversed every other round, so each configuration
/// runs before and after each of its neighbours equally often (slow drift of the machine then
/// does not favour the one that always runs first).
pub fn round_order<T>(targets: &[T], repeat: u32) -> Vec<&T> {
    let mut order: Vec<&T> = targets.iter().collect();
    if repeat % 2 == 1 {
        order.reverse();
    }
    order
}

/// One configuration's throughput relative to the baseline's in the same round.
#[derive(Clone, Debug, PartialEq)]
pub struct RatioRow {
    pub config: String,
    pub completed_rounds: usize,
    pub fillseq: Option<Spread>,
    pub overwrite: Option<Spread>,
    pub workload: Option<Spread>,
    pub waf: Option<Spread>,
}

/// Per configuration, the ratios of its ops/s to `baseline`'s over the rounds in which both
/// completed (a round the baseline did not complete gives no ratio).
pub fn throughput_ratios(names: &[&str], baseline: &str, rounds: &BTreeMap<(String, u32), RunResult>) -> Vec<RatioRow> {
    names
        .iter()
        .map(|name| {
            let mine: Vec<(u32, &RunResult)> = rounds.iter().filter(|((c, _), _)| c == name).map(|((_, rep), r)| (*rep, r)).collect();
            let ratio = |value: &dyn Fn(&RunResult) -> Option<f64>| {
                let v: Vec<f64> = mine
                    .iter()
                    .filter_map(|(rep, r)| {
                        let base = rounds.get(&(baseline.to_string(), *rep))?;
                        if !(r.completed && base.completed) {
                            return None;
                        }
                        Some(value(r)? / value(base).filter(|b| *b > 0.0)?)
                    })
                    .collect();
                Spread::of(v)
            };
            RatioRow {
                config: name.to_string(),
                completed_rounds: mine.iter().filter(|(_, r)| r.completed).count(),
                fillseq: ratio(&|r| Some(r.fillseq_ops_s? as f64)),
                overwrite: ratio(&|r| Some(r.overwrite_ops_s? as f64)),
                workload: ratio(&workload_ops_s),
                waf: Spread::of(mine.iter().filter(|(_, r)| r.completed).filter_map(|(_, r)| r.waf()).collect()),
            }
        })
        .collect()
}

/// The rounds' table (returned) and `PREFIX-ratios.csv` and `.svg` (written to `out`).
pub(crate) fn report_rounds(out: &Path, prefix: &str, names: &[&str], baseline: &str, rounds: &BTreeMap<(String, u32), RunResult>) -> Result<String> {
    let rows = throughput_ratios(names, baseline, rounds);
    let spread = |s: &Option<Spread>, digits: usize| match s {
        Some(s) => [format!("{:.digits$}", s.min), format!("{:.digits$}", s.median), format!("{:.digits$}", s.max)],
        None => [String::new(), String::new(), String::new()],
    };
    let mut cells = Vec::new();
    for r in &rows {
        let mut line = vec![r.config.clone(), seed_name(&r.config).into(), r.completed_rounds.to_string(), r.workload.map_or(0, |s| s.count).to_string()];
        for s in [&r.workload, &r.fillseq, &r.overwrite] {
            line.extend(spread(s, 3));
        }
        line.extend(spread(&r.waf, 3));
        cells.push(line);
    }
    let header = [
        "config",
        "seed",
        "completed",
        "ratios",
        "workload_min",
        "workload_median",
        "workload_max",
        "fillseq_min",
        "fillseq_median",
        "fillseq_max",
        "overwrite_min",
        "overwrite_median",
        "overwrite_max",
        "waf_min",
        "waf_median",
        "waf_max",
    ];
    let path = out.join(format!("{prefix}-ratios.csv"));
    zonekit_base::atomic::write(&path, csv(&header, &cells)).map_err(LabError::io(&path))?;
    let boxes: Vec<(String, [f64; 5])> = rows.iter().filter_map(|r| Some((r.config.clone(), r.workload.map(|s| [s.min, s.min, s.median, s.max, s.max])?))).collect();
    let y_max = boxes.iter().map(|(_, b)| b[4]).fold(1.0, f64::max) * 1.15;
    let svg = box_chart(&format!("fillseq+overwrite ops/s relative to {baseline}, same round ({prefix}; min, median, max)"), "ratio", y_max, &boxes);
    let path_svg = out.join(format!("{prefix}-ratios.svg"));
    zonekit_base::atomic::write(&path_svg, svg).map_err(LabError::io(&path_svg))?;
    let short: Vec<Vec<String>> = cells.iter().map(|c| c[..13].iter().chain(&c[14..15]).cloned().collect()).collect();
    let mut text = format!(
        "\nops/s relative to {baseline} in the same round (min / median / max over rounds):\n{}",
        text_table(
            &[
                "config",
                "seed",
                "completed",
                "ratios",
                "f+o min",
                "f+o median",
                "f+o max",
                "fillseq min",
                "fillseq median",
                "fillseq max",
                "overwrite min",
                "overwrite median",
                "overwrite max",
                "WAF median"
            ],
            &short
        )
    );
    text.push_str(&format!("results: {}/results.csv and {prefix}-ratios.{{csv,svg}}\n", out.display()));
    Ok(text)
}

/// The summary table (returned) and the charts (written to `out`).
pub(crate) fn report(out: &Path, prefix: &str, by_config: &BTreeMap<String, Vec<(f64, RunResult)>>, capacity: u64) -> Result<String> {
    let posix: BTreeMap<String, &RunResult> = by_config.get(REFERENCE).map(|v| v.iter().map(|(k, r)| (k.to_string(), r)).collect()).unwrap_or_default();
    let ratio = |ops: Option<u64>, reference: Option<u64>| match (ops, reference) {
        (Some(a), Some(b)) if b > 0 => format!("{:.2}x", a as f64 / b as f64),
        _ => String::new(),
    };
    let mut rows = Vec::new();
    let mut max_keys = Vec::new();
    for (config, runs) in by_config.iter().filter(|(c, _)| c.as_str() != REFERENCE) {
        let best = runs.iter().filter(|(_, r)| r.completed).map(|(k, _)| *k).fold(0.0, f64::max);
        max_keys.push((config.clone(), best));
        for (k, r) in runs {
            let reference = posix.get(&k.to_string());
            rows.push(vec![
                config.clone(),
                seed_name(config).into(),
                k.to_string(),
                if r.completed { "yes".into() } else { "NO".into() },
                opt(r.waf().map(|w| format!("{w:.3}"))),
                // The seed's WAF: extra writes / the writes asked for.
                opt(r.waf().map(|w| format!("{:.3}", w - 1.0))),
                opt(r.peak_file_bytes.map(|b| b >> 20)),
                opt(reference.and_then(|p| p.peak_file_bytes).map(|b| b >> 20)),
                ratio(r.fillseq_ops_s, reference.and_then(|p| p.fillseq_ops_s)),
                ratio(r.overwrite_ops_s, reference.and_then(|p| p.overwrite_ops_s)),
            ]);
        }
    }
    let mut text = format!(
        "\n{}",
        text_table(&["config", "seed", "M keys", "completed", "WAF", "extra/asked", "peak MiB", "POSIX peak MiB", "fillseq vs POSIX", "overwrite vs POSIX"], &rows)
    );
    text.push_str(&format!("file-system data capacity: {} MiB\n", capacity >> 20));
    let profile = prefix;
    let write_chart = |name: &str, svg: String| {
        let path = out.join(format!("{prefix}-{name}.svg"));
        zonekit_base::atomic::write(&path, svg).map_err(LabError::io(&path))
    };
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    write_chart("max-keys", bar_chart(&format!("Largest key count that completes ({profile})"), "million keys", &max_keys))?;
    let series = |value: &dyn Fn(&RunResult) -> Option<f64>, completed_only: bool| -> Vec<Series> {
        by_config
            .iter()
            .map(|(c, runs)| Series { name: c.clone(), points: runs.iter().filter(|(_, r)| r.completed || !completed_only).filter_map(|(k, r)| Some((*k, value(r)?))).collect() })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let waf = series(&|r| r.waf(), true);
    write_chart("waf", line_chart(&format!("Write amplification vs keys ({profile})"), "million keys", "WAF", &waf, false))?;
    let mut space = series(&|r| r.peak_file_bytes.map(gib), false);
    let xs: Vec<f64> = by_config.values().flat_map(|v| v.iter().map(|(k, _)| *k)).collect();
    let (lo, hi) = xs.iter().fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    if lo <= hi {
        space.push(Series { name: "FS capacity".into(), points: vec![(lo, gib(capacity)), (hi, gib(capacity))] });
    }
    write_chart("space", line_chart(&format!("Peak bytes in RocksDB's files ({profile})"), "million keys", "GiB", &space, false))?;
    let throughput: Vec<(String, f64)> = by_config
        .iter()
        .filter_map(|(c, runs)| {
            let (k, r) = runs.iter().rfind(|(_, r)| r.completed)?;
            Some((format!("{c} {k}M"), r.overwrite_ops_s? as f64 / 1000.0))
        })
        .collect();
    write_chart("throughput", bar_chart(&format!("overwrite kops/s at the largest completed count ({profile})"), "kops/s", &throughput))?;
    text.push_str(&format!("results: {}/results.csv and {profile}-{{max-keys,waf,space,throughput}}.svg\n", out.display()));
    Ok(text)
}

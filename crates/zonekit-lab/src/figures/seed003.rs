//! Seed 003 (ZB+-tree on ZNS): Figs. 11–21 from `results.csv` of `zonekit experiment tree`.
//!
//! Figs. 11–19 compare the trees over the five workloads at three record counts, one figure per
//! metric (time, reads, writes) and key distribution: here three panels, one per record count,
//! each with W1–W5 along x and a bar per tree. Fig. 20 is the running time at three Cov:Seq
//! ratios for W1 and W2; Fig. 21 the ZB+-tree's Cov-Zone occupancy as records grow.

use std::path::Path;

use zonekit_report::{panels, BarChart, LineChart, Series, Width};

use super::{Compare, Figure, NotDrawn, SeedFigures, Table};
use crate::LabError;

const WORKLOADS: [&str; 5] = ["w1", "w2", "w3", "w4", "w5"];
/// The paper's three record counts of Figs. 11–19; a run at another `--scale` has its own.
const PAPER_RECORDS: [u64; 3] = [500_000, 1_500_000, 2_500_000];
/// Tree names in the file, and as the paper names them.
const TREES: [(&str, &str); 2] = [("zbtree", "ZB+-tree"), ("cow", "CoW B+-tree")];

/// What all of the grid's runs share, for the captions.
const SETTING: &str = "40 Seq-Zones + 1 Cov-Zone of 2 GiB, 4 KiB nodes, 33-byte values, run phase after the load, seed 1; time is the \
                       ZN540-assumed timing model's device time";

fn records_label(records: u64) -> String {
    let millions = records as f64 / 1e6;
    format!("{millions} M records")
}

/// The grid's record counts, smallest first (the paper's at scale 1).
fn grid_records(table: &Table) -> Result<Vec<u64>, LabError> {
    let mut records = Vec::new();
    for r in table.rows_where(&[("section", "grid")])? {
        let n = r.number("records")? as u64;
        if !records.contains(&n) {
            records.push(n);
        }
    }
    records.sort_unstable();
    Ok(records)
}

pub(super) fn draw(results: &Path) -> Result<SeedFigures, LabError> {
    let table = Table::read(&results.join("results.csv"))?;
    let records = grid_records(&table)?;
    let mut figures = Vec::new();
    // (y label, unit, column, multiplier to the unit)
    let metrics: [(&str, &str, &str, f64); 3] =
        [("running time", "s", "run_device_ms", 1e-3), ("node reads", "millions", "run_node_reads", 1e-6), ("node writes", "millions", "run_node_writes", 1e-6)];
    let mut number = 11;
    for (metric, unit, column, scale) in metrics {
        for distribution in ["zipfian", "uniform", "latest"] {
            let mut charts = Vec::new();
            for (k, records) in records.iter().enumerate() {
                let categories: Vec<String> = WORKLOADS.iter().map(|w| w.to_uppercase()).collect();
                let mut chart = BarChart::new(&format!("({}) {}", (b'a' + k as u8) as char, records_label(*records)), metric, unit, "workload", categories).width(Width::Column);
                for (tree, name) in TREES {
                    let values = WORKLOADS
                        .iter()
                        .map(|w| {
                            table
                                .one(&[("section", "grid"), ("tree", tree), ("workload", w), ("distribution", distribution), ("records", &records.to_string())])?
                                .number(column)
                                .map(|v| v * scale)
                        })
                        .collect::<Result<Vec<f64>, LabError>>()?;
                    chart = chart.series(name, values);
                }
                charts.push(chart.svg());
            }
            let seed_figure = format!("Fig. {number}");
            let counts: Vec<String> = records.iter().map(|r| format!("{}", *r as f64 / 1e6)).collect();
            let scaled = if records.as_slice() == PAPER_RECORDS { String::new() } else { " (the paper's 0.5, 1.5 and 2.5 M scaled)".into() };
            let caption = format!(
                "Mirrors seed 003 {seed_figure} ({metric} under the {distribution} distribution; W1–W5 at {} M records{scaled}, a panel each). {SETTING}.",
                counts.join(", ")
            );
            let svg = panels(&format!("{seed_figure}: {metric}, {distribution} keys"), &caption, 2, &charts);
            let compare = compare_grid(&table, &records, column, distribution, number)?;
            figures.push(Figure { file_name: format!("fig-{number}.svg"), seed_figure, caption, svg, compare });
            number += 1;
        }
    }
    figures.push(fig20(&table)?);
    figures.push(fig21(&table)?);
    Ok(SeedFigures { seed: 3, figures, not_drawn: Vec::<NotDrawn>::new() })
}

/// The paper's words on Figs. 11–19 as numbers: ZB+-tree below CoW in time everywhere, about
/// 25 % fewer reads, 75 % fewer writes on average. Ours: the mean change over the figure's
/// 15 cells (W5 has no writes and is left out of the writes' mean).
fn compare_grid(table: &Table, records: &[u64], column: &str, distribution: &str, number: u32) -> Result<Vec<Compare>, LabError> {
    let mut changes = Vec::new();
    let (mut faster, mut tied) = (0, 0);
    for records in records {
        for w in WORKLOADS {
            let value =
                |tree: &str| table.one(&[("section", "grid"), ("tree", tree), ("workload", w), ("distribution", distribution), ("records", &records.to_string())])?.number(column);
            let (zb, cow) = (value("zbtree")?, value("cow")?);
            if cow > 0.0 {
                changes.push(zb / cow - 1.0);
            }
            faster += usize::from(zb < cow);
            tied += usize::from(zb == cow);
        }
    }
    let mean = changes.iter().sum::<f64>() / changes.len().max(1) as f64;
    let cells = records.len() * WORKLOADS.len();
    Ok(match number {
        11..=13 => vec![Compare {
            quantity: "cells where the ZB+-tree's time is below CoW's".into(),
            seed: format!("all {cells} (§4.2.1)"),
            ours: format!("{faster} of {cells}, {tied} tied (W5 writes nothing); mean change {:+.0} %", mean * 100.0),
        }],
        14..=16 => vec![Compare { quantity: "ZB+-tree reads against CoW's".into(), seed: "about −25 % (§4.2.2)".into(), ours: format!("mean {:+.0} %", mean * 100.0) }],
        _ => vec![Compare { quantity: "ZB+-tree writes against CoW's".into(), seed: "−75 % on average (§4.2.2)".into(), ours: format!("mean {:+.0} %", mean * 100.0) }],
    })
}

fn fig20(table: &Table) -> Result<Figure, LabError> {
    let ratios = [32, 48, 64];
    let categories: Vec<String> = ["W1", "W2"].iter().flat_map(|w| ratios.iter().map(move |r| format!("{w}, 1:{r}"))).collect();
    let mut chart = BarChart::new("Fig. 20: running time at Cov:Seq ratios", "running time", "s", "workload, Cov-Zone : Seq-Zone", categories);
    let mut compare = Vec::new();
    for (tree, name) in TREES {
        let mut values = Vec::new();
        for w in ["w1", "w2"] {
            for r in ratios {
                values.push(table.one(&[("section", "ratio"), ("tree", tree), ("workload", w), ("sequential_zones", &r.to_string())])?.number("run_device_ms")? / 1e3);
            }
        }
        chart = chart.series(name, values);
    }
    let faster = ["w1", "w2"]
        .iter()
        .flat_map(|w| ratios.iter().map(move |r| (w, r)))
        .map(|(w, r)| {
            let t = |tree: &str| table.one(&[("section", "ratio"), ("tree", tree), ("workload", w), ("sequential_zones", &r.to_string())])?.number("run_device_ms");
            Ok(t("zbtree")? < t("cow")?)
        })
        .collect::<Result<Vec<bool>, LabError>>()?;
    compare.push(Compare {
        quantity: "ratios where the ZB+-tree's time is below CoW's".into(),
        seed: "all 6 (§4.2.4)".into(),
        ours: format!("{} of 6", faster.iter().filter(|f| **f).count()),
    });
    let records = table.one(&[("section", "ratio"), ("tree", "zbtree"), ("workload", "w1"), ("sequential_zones", "32")])?.number("records")?;
    let caption = format!(
        "Mirrors seed 003 Fig. 20 (running time at Cov:Seq of 1:32, 1:48 and 1:64; W1 and W2, Zipfian keys, {} M records; the paper's 1 M). 1 \
         Cov-Zone and 32, 48 or 64 Seq-Zones of 2 GiB; time is the ZN540-assumed timing model's device time of the run phase.",
        records / 1e6
    );
    Ok(Figure { file_name: "fig-20.svg".into(), seed_figure: "Fig. 20".into(), svg: chart.caption(&caption).svg(), caption, compare })
}

fn fig21(table: &Table) -> Result<Figure, LabError> {
    let mut chart = LineChart::new("Fig. 21: ZB+-tree's Cov-Zone occupancy", "records", "millions", "Cov-Zone occupancy", "");
    let mut at_10m = Vec::new();
    for w in ["w1", "w2"] {
        let rows = table.rows_where(&[("section", "conventional"), ("tree", "zbtree"), ("workload", w)])?;
        let mut points = rows.iter().map(|r| Ok((r.number("records")? / 1e6, r.number("conventional_occupancy")?))).collect::<Result<Vec<(f64, f64)>, LabError>>()?;
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        if let Some(last) = points.last() {
            at_10m.push(format!("{}: {:.3} at {} M", w.to_uppercase(), last.1, last.0));
        }
        chart = chart.series(Series { name: w.to_uppercase(), points });
    }
    let caption = "Mirrors seed 003 Fig. 21 (the ZB+-tree's Cov-Zone occupancy as records grow, the paper's 1, 2.5, 5, 7.5 and 10 M; W1 and W2, \
                   Zipfian keys). 40 Seq-Zones + 1 Cov-Zone of 2 GiB, after the run phase.";
    let compare = vec![Compare { quantity: "Cov-Zone occupancy at 10 M records".into(), seed: "linear growth, below 0.50 (§4.2.6)".into(), ours: at_10m.join("; ") }];
    Ok(Figure { file_name: "fig-21.svg".into(), seed_figure: "Fig. 21".into(), caption: caption.into(), svg: chart.caption(caption).svg(), compare })
}

#[cfg(test)]
mod tests {
    use super::super::check::{assert_figure, charts, results};
    use super::*;

    #[test]
    fn figs_11_to_21_are_drawn_in_order_with_their_series_legends_units_and_round_ticks() {
        let figures = draw(&results(3)).unwrap();
        let names: Vec<&str> = figures.figures.iter().map(|f| f.file_name.as_str()).collect();
        let expected: Vec<String> = (11..=21).map(|n| format!("fig-{n}.svg")).collect();
        assert_eq!(names, expected);
        for (k, f) in figures.figures[..9].iter().enumerate() {
            assert_eq!(charts(&f.svg).len(), 3, "{}: a panel per record count", f.seed_figure);
            assert_figure(&f.svg, &f.seed_figure, 2, if k < 3 { "s" } else { "millions" });
            assert!(f.svg.contains(">W5</text>") && f.svg.contains("ZB+-tree") && f.svg.contains("CoW B+-tree"));
        }
        assert_figure(&figures.figures[9].svg, "Fig. 20", 2, "s");
        assert_figure(&figures.figures[10].svg, "Fig. 21", 2, "");
        assert!(figures.figures[10].svg.contains("records (millions)"));
    }

    #[test]
    fn a_missing_cell_is_an_error_that_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(results(3).join("results.csv")).unwrap();
        // Drop the CoW row of one grid cell.
        let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with("grid,cow,w3,latest,1500000,")).collect();
        std::fs::write(dir.path().join("results.csv"), kept.join("\n") + "\n").unwrap();
        let error = draw(dir.path()).unwrap_err().to_string();
        assert!(error.contains("results.csv") && error.contains("0 rows"), "{error}");
    }
}

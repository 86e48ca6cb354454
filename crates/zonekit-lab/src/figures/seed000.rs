//! Seed 000 (BHB-DP on ZNS, cloud block storage): Tables 2.2, 3.2, 4.3 and Figs. 2.8, 2.10,
//! 2.11, 4.1–4.6 from the results of `zonekit experiment table-4.3` (ten generated nodes at
//! the thesis' scale, `scale/`), `zonekit experiment table-2.2 --nodes 1,2,3,4` (FK and ZB-OPT
//! on nodes 1–4 at that scale, the GP of their reclaimed zones per class, `gp-by-class/`) and
//! `zonekit experiment table-3.2` (the smaller inputs).
//!
//! The thesis' tables are drawn as it would chart them: categories along x, a bar per
//! placement or setting, the thesis' own value as a second series where it gives one.

use std::path::Path;

use zonekit_report::{grouped_box_chart, panels, BarChart, Width};

use super::{Compare, Figure, NotDrawn, SeedFigures, Table};
use crate::LabError;

/// The thesis' placements in its Table 4.3 order, as the files and as the thesis name them.
const PLACEMENTS: [(&str, &str); 7] =
    [("normal", "Normal"), ("warcip", "Warcip"), ("sepbit", "Sepbit"), ("bhbdp-pre", "BHB-DP_pre"), ("bhbdp", "BHB-DP"), ("fk", "FK"), ("zbopt", "ZB-OPT")];
/// Table 2.2: FK on nodes 1–4, GC writes (GB) and WAF.
const THESIS_TABLE_2_2: [(f64, f64); 4] = [(78.0, 1.161), (108.0, 1.186), (90.0, 1.208), (157.0, 1.335)];
/// Table 3.2: GC writes (GB) on node 1 under f(t) = t, √t, ln t.
const THESIS_TABLE_3_2: [(&str, [f64; 3]); 2] = [("bhbdp", [123.4, 167.3, 357.8]), ("zbopt", [3.7, 3.9, 6.9])];
/// The directory of `zonekit experiment table-2.2 --nodes 1,2,3,4`'s run, under the results.
const GP_BY_CLASS_DIR: &str = "gp-by-class";
/// FK's and ZB-OPT's classes (the thesis' type_id): 1–5 by lifetime, 6 the longest lived
/// (FK: beyond five zones of writes; ZB-OPT: beyond 256), 7 the blocks never rewritten.
const CLASSES: usize = 7;
const GP_SETTING: &str = "Ours: nodes 1–4 of Table 2.1 generated at the thesis' scale (six days each), each on the femu-zns device table-4.3 \
                          gives it (32 MiB zones, 7 open, the working set filling 58–64 % of it), GC at 15 % garbage of sealed zones, CBE; \
                          boxes P5, Q1, median, Q3, P95 of the reclaimed zones' GP (1 % bins); a class with no zone reclaimed has no box";
const SCALE_SETTING: &str = "Ours: the ten generated nodes of Table 2.1 at the thesis' scale (six days each), the femu-zns device (32 MiB zones, 7 \
                             open, the working set filling 58–64 % of it), GC at 15 % garbage of sealed zones, CBE";

fn placement_name(p: &str) -> &str {
    PLACEMENTS.iter().find(|x| x.0 == p).map_or(p, |x| x.1)
}

pub(super) fn draw(results: &Path) -> Result<SeedFigures, LabError> {
    let by_node = Table::read(&results.join("scale/by_node.csv"))?;
    let table_4_3 = Table::read(&results.join("scale/table_4_3.csv"))?;
    let table_3_2 = Table::read(&results.join("table-3.2.csv"))?;
    let gp_by_class = Table::read(&results.join(GP_BY_CLASS_DIR).join("gp_by_class.csv"))?;
    let figures = vec![
        table_2_2(&by_node)?,
        fig_2_8(&gp_by_class)?,
        fig_2_10(&by_node)?,
        fig_2_11(&gp_by_class)?,
        table_3_2_figure(&table_3_2)?,
        table_4_3_figure(&table_4_3)?,
        per_node(&by_node, "4.1", 1..=5, "waf", "WAF", "")?,
        per_node(&by_node, "4.2", 6..=10, "waf", "WAF", "")?,
        per_node(&by_node, "4.3", 1..=5, "gc_gib", "GC writes", "GiB")?,
        per_node(&by_node, "4.4", 6..=10, "gc_gib", "GC writes", "GiB")?,
        per_node(&by_node, "4.5", 1..=5, "gc_count_vs_zbopt", "GC count / ZB-OPT's", "")?,
        per_node(&by_node, "4.6", 6..=10, "gc_count_vs_zbopt", "GC count / ZB-OPT's", "")?,
    ];
    let not_drawn = vec![NotDrawn {
        seed_figure: "Figs. 2.1–2.5".into(),
        why: "the workload analysis of the Tencent CBS traces, which we do not have; our nodes are generated to match Table 2.1 and \
                  chapter 2's statistics (`zonekit analyze` on a node states them, docs/results/seed-000.md)"
            .into(),
    }];
    Ok(SeedFigures { seed: 0, figures, not_drawn })
}

fn node_value(by_node: &Table, node: usize, placement: &str, column: &str) -> Result<f64, LabError> {
    by_node.one(&[("node", &format!("node{node}")), ("placement", placement)])?.number(column)
}

fn table_2_2(by_node: &Table) -> Result<Figure, LabError> {
    let nodes: Vec<String> = (1..=4).map(|n| format!("node {n}")).collect();
    let mut compare = Vec::new();
    let mut ours_waf = Vec::new();
    let mut ours_gc = Vec::new();
    for (k, (gc, waf)) in THESIS_TABLE_2_2.iter().enumerate() {
        let (w, g) = (node_value(by_node, k + 1, "fk", "waf")?, node_value(by_node, k + 1, "fk", "gc_gib")?);
        compare.push(Compare { quantity: format!("node {}: FK's WAF", k + 1), seed: format!("{waf:.3}"), ours: format!("{w:.3}") });
        compare.push(Compare { quantity: format!("node {}: FK's GC writes (GB; ours GiB)", k + 1), seed: format!("{gc:.0}"), ours: format!("{g:.1}") });
        ours_waf.push(w);
        ours_gc.push(g);
    }
    let waf =
        BarChart::new("(a) WAF", "WAF", "", "", nodes.clone()).series("ours", ours_waf).series("thesis", THESIS_TABLE_2_2.iter().map(|t| t.1).collect()).width(Width::Column).svg();
    let gc = BarChart::new("(b) GC writes", "GC writes", "GB", "", nodes)
        .series("ours", ours_gc)
        .series("thesis", THESIS_TABLE_2_2.iter().map(|t| t.0).collect())
        .width(Width::Column)
        .svg();
    let caption = format!("Mirrors seed 000 Table 2.2 (FK with future knowledge on nodes 1–4: WAF and GC writes). {SCALE_SETTING}; ours in GiB.");
    Ok(Figure { file_name: "table-2.2.svg".into(), seed_figure: "Table 2.2".into(), svg: panels("Table 2.2: FK on nodes 1–4", &caption, 2, &[waf, gc]), caption, compare })
}

/// One class's box, `[P5, Q1, median, Q3, P95]`, of a placement on a node; `None` when the
/// class had no zone reclaimed (its quantile cells are empty).
fn gp_box(gp: &Table, node: usize, placement: &str, class: &str) -> Result<Option<[f64; 5]>, LabError> {
    let row = gp.one(&[("node", &format!("node{node}")), ("placement", placement), ("class", class)])?;
    if row.number("zones_reclaimed")? == 0.0 {
        return Ok(None);
    }
    let mut b = [0.0; 5];
    for (v, column) in b.iter_mut().zip(["gp_p05", "gp_q1", "gp_median", "gp_q3", "gp_p95"]) {
        *v = row.number(column)?;
    }
    Ok(Some(b))
}

/// A series of [`grouped_box_chart`]: its name and a box (or none) per class.
type BoxSeries = (String, Vec<Option<[f64; 5]>>);

/// The boxes of every class, as a series of [`grouped_box_chart`].
fn gp_series(gp: &Table, node: usize, placement: &str) -> Result<BoxSeries, LabError> {
    let boxes = (1..=CLASSES).map(|c| gp_box(gp, node, placement, &c.to_string())).collect::<Result<Vec<_>, LabError>>()?;
    Ok((placement_name(placement).to_string(), boxes))
}

/// A number of the per-class GP file, for one node, placement and class (`all` for every class).
fn gp_value(gp: &Table, node: usize, placement: &str, class: &str, column: &str) -> Result<f64, LabError> {
    gp.one(&[("node", &format!("node{node}")), ("placement", placement), ("class", class)])?.number(column)
}

/// Each node's value, `node 1 0.45; node 2 …`.
fn per_node_text(values: impl Fn(usize) -> Result<String, LabError>) -> Result<String, LabError> {
    Ok((1..=4).map(|n| values(n).map(|v| format!("node {n} {v}"))).collect::<Result<Vec<_>, LabError>>()?.join("; "))
}

/// The share of a placement's copied blocks that came from `class`'s zones, from each class's
/// zones reclaimed × (1 − mean GP): what the thesis reads off Fig. 2.8's box sizes.
fn copied_share(gp: &Table, node: usize, placement: &str, class: usize) -> Result<f64, LabError> {
    let copied = |c: usize| -> Result<f64, LabError> {
        let zones = gp_value(gp, node, placement, &c.to_string(), "zones_reclaimed")?;
        Ok(if zones == 0.0 { 0.0 } else { zones * (1.0 - gp_value(gp, node, placement, &c.to_string(), "gp_mean")?) })
    };
    let all = (1..=CLASSES).map(copied).collect::<Result<Vec<f64>, LabError>>()?;
    Ok(all[class - 1] / all.iter().sum::<f64>().max(f64::MIN_POSITIVE))
}

fn class_categories() -> Vec<String> {
    (1..=CLASSES).map(|c| c.to_string()).collect()
}

fn fig_2_8(gp: &Table) -> Result<Figure, LabError> {
    let mut charts = Vec::new();
    for node in 1..=4 {
        let series = [gp_series(gp, node, "fk")?];
        charts.push(grouped_box_chart(
            &format!("({}) node {node}", (b'a' + node as u8 - 1) as char),
            "GP",
            "",
            1.0,
            "type_id (class)",
            Width::Column,
            &class_categories(),
            &series,
        ));
    }
    let median = |n: usize, class: &str| gp_value(gp, n, "fk", class, "gp_median").map(|v| format!("{v:.2}"));
    let compare = vec![
        Compare {
            quantity: "FK: where the copies come from (l. 500)".into(),
            seed: "\"全部节点的有效数据迁移绝大部分来源于 `type_id` 为 6 的分区\" (on every node most valid-data migration comes from type_id 6's zones)".into(),
            ours: format!(
                "class 6's share of the copied blocks, zones × (1 − mean GP): {}",
                per_node_text(|n| copied_share(gp, n, "fk", 6).map(|v| format!("{:.1} %", 100.0 * v)))?
            ),
        },
        Compare {
            quantity: "FK: median GP of the reclaimed zones (l. 500)".into(),
            seed: "\"其中有超过 50% 回收分区的 GP 值小于 0.7\" (over 50 % of the reclaimed zones have GP below 0.7)".into(),
            ours: format!("class 6: {}; all classes: {}", per_node_text(|n| median(n, "6"))?, per_node_text(|n| median(n, "all"))?),
        },
    ];
    let caption = format!("Mirrors seed 000 Fig. 2.8 (FK: the GP distribution of the reclaimed zones per type_id, nodes 1–4). {GP_SETTING}.");
    Ok(Figure {
        file_name: "fig-2.8.svg".into(),
        seed_figure: "Fig. 2.8".into(),
        svg: panels("Fig. 2.8: GP of FK's reclaimed zones per class", &caption, 2, &charts),
        caption,
        compare,
    })
}

fn fig_2_11(gp: &Table) -> Result<Figure, LabError> {
    let mut charts = Vec::new();
    for node in 1..=4 {
        let series = [gp_series(gp, node, "fk")?, gp_series(gp, node, "zbopt")?];
        charts.push(grouped_box_chart(
            &format!("({}) node {node}", (b'a' + node as u8 - 1) as char),
            "GP",
            "",
            1.0,
            "type_id (class)",
            Width::Column,
            &class_categories(),
            &series,
        ));
    }
    let class_6 = |column: &'static str| {
        move |n: usize| -> Result<String, LabError> {
            let (fk, zbopt) = (gp_value(gp, n, "fk", "6", column)?, gp_value(gp, n, "zbopt", "6", column)?);
            Ok(format!("{fk:.2} → {zbopt:.2} ({:+.0} %)", 100.0 * (zbopt / fk - 1.0)))
        }
    };
    let zones_2_5 = |n: usize, placement: &str| -> Result<f64, LabError> { (2..=5).map(|c| gp_value(gp, n, placement, &c.to_string(), "zones_reclaimed")).sum() };
    let compare = vec![
        Compare {
            quantity: "zones reclaimed from type_id 2–5, FK → ZB-OPT (l. 559)".into(),
            seed: "\"在垃圾回收时增加了微量来自这些分区的 GC 写\" (a slight increase of GC writes from these zones)".into(),
            ours: per_node_text(|n| Ok(format!("{:.0} → {:.0}", zones_2_5(n, "fk")?, zones_2_5(n, "zbopt")?)))?,
        },
        Compare {
            quantity: "type_id 6: mean GP of the reclaimed zones, FK → ZB-OPT (l. 559)".into(),
            seed: "\"GP 平均值由 0.7 左右提升到了 0.9 左右，提高了约 30%\" (from about 0.7 to about 0.9, about 30 % higher)".into(),
            ours: per_node_text(class_6("gp_mean"))?,
        },
        Compare {
            quantity: "type_id 6: lower quartile of the reclaimed zones' GP, FK → ZB-OPT (l. 559-561)".into(),
            seed: "\"下四分位由 0.5 提升到了 0.8，提高了 60%\" (the lower quartile from 0.5 to 0.8, 60 % higher)".into(),
            ours: per_node_text(class_6("gp_q1"))?,
        },
    ];
    let caption = format!("Mirrors seed 000 Fig. 2.11 (FK against ZB-OPT: the GP distribution of the reclaimed zones per type_id, nodes 1–4). {GP_SETTING}.");
    Ok(Figure {
        file_name: "fig-2.11.svg".into(),
        seed_figure: "Fig. 2.11".into(),
        svg: panels("Fig. 2.11: GP of reclaimed zones per class, FK against ZB-OPT", &caption, 2, &charts),
        caption,
        compare,
    })
}

fn fig_2_10(by_node: &Table) -> Result<Figure, LabError> {
    let nodes: Vec<String> = (1..=4).map(|n| format!("node {n}")).collect();
    let mut charts = Vec::new();
    let mut means = Vec::new();
    for (title, column, label, unit) in [("(a) WAF", "waf", "WAF", ""), ("(b) GC writes", "gc_gib", "GC writes", "GiB")] {
        let mut chart = BarChart::new(title, label, unit, "", nodes.clone()).width(Width::Column);
        for p in ["fk", "zbopt"] {
            let values = (1..=4).map(|n| node_value(by_node, n, p, column)).collect::<Result<Vec<f64>, LabError>>()?;
            means.push(values.iter().sum::<f64>() / 4.0);
            chart = chart.series(placement_name(p), values);
        }
        charts.push(chart.svg());
    }
    let compare = vec![
        Compare { quantity: "mean WAF, FK → ZB-OPT".into(), seed: "1.220 → 1.018".into(), ours: format!("{:.3} → {:.3}", means[0], means[1]) },
        Compare { quantity: "mean GC writes, FK → ZB-OPT".into(), seed: "108.25 → 8.75 GB".into(), ours: format!("{:.1} → {:.1} GiB", means[2], means[3]) },
    ];
    let caption = format!("Mirrors seed 000 Fig. 2.10 (FK against ZB-OPT on nodes 1–4: (a) WAF, (b) GC writes). {SCALE_SETTING}.");
    Ok(Figure { file_name: "fig-2.10.svg".into(), seed_figure: "Fig. 2.10".into(), svg: panels("Fig. 2.10: FK against ZB-OPT", &caption, 2, &charts), caption, compare })
}

/// A workload's short name, as the write-up names the smaller inputs.
fn workload_name(workload: &str) -> String {
    match workload {
        w if w.contains("cloudPhysics") => "CloudPhysics".into(),
        w if w.starts_with("cloud:volumes=64") => "cloud 64 vol.".into(),
        w if w.starts_with("cloud:volumes=128") => "cloud 128 vol.".into(),
        w if w.starts_with("zipf:") && w.contains("alpha=0.8") => "Zipf 0.8".into(),
        w if w.starts_with("zipf:") && w.contains("alpha=1.1") => "Zipf 1.1".into(),
        w if w.starts_with("hotcold:") => "hot/cold".into(),
        w => w.chars().take(16).collect(),
    }
}

fn table_3_2_figure(table: &Table) -> Result<Figure, LabError> {
    let rows = table.rows_where(&[])?;
    let mut workloads: Vec<String> = Vec::new();
    for r in &rows {
        let w = r.text("workload")?.to_string();
        if !workloads.contains(&w) {
            workloads.push(w);
        }
    }
    let names: Vec<String> = workloads.iter().map(|w| workload_name(w)).collect();
    let mut charts = Vec::new();
    let mut compare = Vec::new();
    for (k, (placement, thesis)) in THESIS_TABLE_3_2.iter().enumerate() {
        let mut chart = BarChart::new(&format!("({}) {}", (b'a' + k as u8) as char, placement_name(placement)), "GC writes", "GiB", "", names.clone()).width(Width::Column);
        for (i, (victim, f)) in [("cbe", "f(t) = t"), ("cbe-sqrt", "f(t) = √t"), ("cbe-ln", "f(t) = ln t")].iter().enumerate() {
            let values =
                workloads.iter().map(|w| table.one(&[("workload", w), ("placement", placement), ("victim", victim)])?.number("gc_gib")).collect::<Result<Vec<f64>, LabError>>()?;
            compare.push(Compare {
                quantity: format!("{}, {f}: GC writes", placement_name(placement)),
                seed: format!("{} GB (node 1)", thesis[i]),
                ours: names.iter().zip(&values).map(|(n, v)| format!("{n} {v:.1}")).collect::<Vec<_>>().join("; ") + " GiB",
            });
            chart = chart.series(f, values);
        }
        charts.push(chart.svg());
    }
    let caption = "Mirrors seed 000 Table 3.2 (GC writes of BHB-DP and ZB-OPT under CBE's f(t) = t, √t and ln t). The thesis ran node 1; ours are \
                   the smaller inputs (node 1 at scale ran with f(t) = t only): CloudPhysics, two small generated nodes, Zipf 0.8 and 1.1, hot/cold \
                   80/20, 32 MiB zones, the working set filling 85 % before the 16 zones kept for GC, GC at 15 % garbage of sealed zones.";
    Ok(Figure {
        file_name: "table-3.2.svg".into(),
        seed_figure: "Table 3.2".into(),
        svg: panels("Table 3.2: GC writes under each f(t)", caption, 2, &charts),
        caption: caption.into(),
        compare,
    })
}

/// The mean of a "mean (min–max)" cell.
fn mean_of(cell: &str) -> Option<f64> {
    cell.split_whitespace().next()?.parse().ok()
}

fn table_4_3_figure(table: &Table) -> Result<Figure, LabError> {
    let categories: Vec<String> = PLACEMENTS.iter().map(|p| p.1.to_string()).collect();
    let mut charts = Vec::new();
    let mut compare = Vec::new();
    for (k, (title, label, unit, ours_column, thesis_column)) in [
        ("mean WAF", "WAF", "", "WAF mean (min–max)", 2usize),
        ("mean GC writes", "GC writes", "GB", "GC GiB mean (min–max)", 4),
        ("mean GC count", "GC count / ZB-OPT's", "", "GC count / ZB-OPT mean (min–max)", 6),
    ]
    .into_iter()
    .enumerate()
    {
        let (mut ours, mut thesis) = (Vec::new(), Vec::new());
        for (p, name) in PLACEMENTS {
            let row = table.one(&[("placement", p)])?;
            let cell = row.text(ours_column)?;
            let mean = mean_of(cell).ok_or_else(|| LabError::Results { path: "scale/table_4_3.csv".into(), line: 0, reason: format!("{p}: {cell:?} has no mean") })?;
            // By position: the file names all three of the thesis' columns `thesis`.
            let theirs = row.number_at(thesis_column)?;
            // Both sides as the file writes them, so the thesis' 1.700 keeps its precision.
            compare.push(Compare {
                quantity: format!("{name}: {title}{}", if unit.is_empty() { String::new() } else { format!(" ({unit}; ours GiB)") }),
                seed: row.text_at(thesis_column)?.to_string(),
                ours: cell.split_whitespace().next().unwrap_or(cell).to_string(),
            });
            ours.push(mean);
            thesis.push(theirs);
        }
        let chart = BarChart::new(&format!("({}) {title}", (b'a' + k as u8) as char), label, unit, "", categories.clone())
            .series("ours", ours)
            .series("thesis", thesis)
            .width(Width::Column);
        charts.push(chart.svg());
    }
    let caption =
        format!("Mirrors seed 000 Table 4.3 (each placement's mean WAF, GC writes and GC count over the ten nodes, ours beside the thesis'). {SCALE_SETTING}; ours in GiB.");
    Ok(Figure {
        file_name: "table-4.3.svg".into(),
        seed_figure: "Table 4.3".into(),
        svg: panels("Table 4.3: the placements over ten nodes", &caption, 2, &charts),
        caption,
        compare,
    })
}

/// Figs. 4.1–4.6: a metric per node, a bar per placement, five nodes a figure.
fn per_node(by_node: &Table, number: &str, nodes: std::ops::RangeInclusive<usize>, column: &str, label: &str, unit: &str) -> Result<Figure, LabError> {
    let categories: Vec<String> = nodes.clone().map(|n| format!("node {n}")).collect();
    let what = match column {
        "waf" => "WAF",
        "gc_gib" => "GC writes",
        _ => "GC count normalised to ZB-OPT's",
    };
    let mut chart = BarChart::new(&format!("Fig. {number}: {what}, nodes {}–{}", nodes.start(), nodes.end()), label, unit, "node (Table 2.1)", categories);
    for (p, name) in PLACEMENTS {
        let values = nodes.clone().map(|n| node_value(by_node, n, p, column)).collect::<Result<Vec<f64>, LabError>>()?;
        chart = chart.series(name, values);
    }
    let caption = format!("Mirrors seed 000 Fig. {number} ({what} of the seven placements on nodes {}–{}). {SCALE_SETTING}.", nodes.start(), nodes.end());
    Ok(Figure { file_name: format!("fig-{number}.svg"), seed_figure: format!("Fig. {number}"), svg: chart.caption(&caption).svg(), caption, compare: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::super::check::{assert_figure, charts, legend, results};
    use super::*;

    #[test]
    fn tables_2_2_3_2_4_3_and_figs_2_8_2_10_2_11_4_1_to_4_6_are_drawn_with_their_series_legends_units_and_round_ticks() {
        let mut figures = draw(&results(0)).unwrap();
        let names: Vec<&str> = figures.figures.iter().map(|f| f.file_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "table-2.2.svg",
                "fig-2.8.svg",
                "fig-2.10.svg",
                "fig-2.11.svg",
                "table-3.2.svg",
                "table-4.3.svg",
                "fig-4.1.svg",
                "fig-4.2.svg",
                "fig-4.3.svg",
                "fig-4.4.svg",
                "fig-4.5.svg",
                "fig-4.6.svg"
            ]
        );
        assert_eq!(figures.not_drawn.iter().map(|n| n.seed_figure.as_str()).collect::<Vec<_>>(), ["Figs. 2.1–2.5"], "only the trace analysis is not drawn");
        // Figs. 2.8 and 2.11: a panel per node, a box per class reclaimed (FK alone, then FK
        // beside ZB-OPT), each comparison quoting the thesis beside all four nodes.
        let fig_2_8 = figures.figures.remove(1);
        let fig_2_11 = figures.figures.remove(2);
        for (figure, series_count) in [(&fig_2_8, 1), (&fig_2_11, 2)] {
            assert_eq!(charts(&figure.svg).len(), 4, "{}: a panel per node", figure.seed_figure);
            assert_figure(&figure.svg, &figure.seed_figure, series_count, "");
            assert!(figure.caption.contains("P5, Q1, median, Q3, P95"), "the caption says what the boxes are");
            for c in &figure.compare {
                assert!(c.seed.starts_with('"') && (1..=4).all(|n| c.ours.contains(&format!("node {n} "))), "{c:?}");
            }
        }
        assert_eq!(legend(charts(&fig_2_11.svg)[0]), ["FK", "ZB-OPT"]);
        assert!(fig_2_8.compare.iter().any(|c| c.seed.contains("超过 50% 回收分区的 GP 值小于 0.7")));
        assert!(fig_2_11.compare.iter().any(|c| c.seed.contains("由 0.7 左右提升到了 0.9 左右")));
        assert!(fig_2_11.compare.iter().any(|c| c.seed.contains("下四分位由 0.5 提升到了 0.8")));
        let f = &figures.figures;
        assert_eq!(charts(&f[0].svg).len(), 2);
        assert_figure(&f[0].svg, "Table 2.2", 2, "");
        assert_eq!(f[0].compare.len(), 8, "Table 2.2's eight cells beside ours");
        assert_figure(&f[1].svg, "Fig. 2.10", 2, "");
        assert_figure(&f[2].svg, "Table 3.2", 3, "GiB");
        assert_eq!(legend(charts(&f[2].svg)[0]), ["f(t) = t", "f(t) = √t", "f(t) = ln t"]);
        assert_eq!(charts(&f[3].svg).len(), 3, "WAF, GC writes, GC count");
        assert_figure(&f[3].svg, "Table 4.3", 2, "");
        let thesis = |quantity: &str| f[3].compare.iter().find(|c| c.quantity == quantity).map(|c| c.seed.clone());
        assert_eq!(thesis("Normal: mean WAF").as_deref(), Some("2.008"));
        assert_eq!(thesis("Normal: mean GC writes (GB; ours GiB)").as_deref(), Some("442.5"));
        assert_eq!(thesis("Normal: mean GC count").as_deref(), Some("2.028"), "each measure beside its own thesis column");
        for (k, unit) in [(4, ""), (5, ""), (6, "GiB"), (7, "GiB"), (8, ""), (9, "")] {
            assert_figure(&f[k].svg, &f[k].seed_figure, 7, unit);
            assert_eq!(legend(&f[k].svg)[4], "BHB-DP");
        }
    }
}

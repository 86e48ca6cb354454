//! Seed 002 (open-channel FTLs for HPC traces): Figs. 4.1–4.11 from `results.csv` and
//! `series.csv` of `zonekit ocssd experiment`.
//!
//! The thesis draws each figure for LAMMPS and MACDRP side by side: here a panel per trace
//! (over time: Figs. 4.2, 4.4–4.6), and for the sensitivity figures (4.8–4.11) a row per metric
//! (throughput, mapping-update traffic, erases, WAF) with LAMMPS left and MACDRP right. Only
//! the thesis' four FTLs are drawn (DFTL and FAST are beyond it; they are in the CSV files).

use std::path::Path;

use zonekit_report::{panels, BarChart, LineChart, Series, Width};

use super::{Compare, Figure, NotDrawn, SeedFigures, Table};
use crate::ocssd::experiment::THESIS_UPDATE_KB;
use crate::ocssd::fit::THESIS_TABLE_4_2;
use crate::LabError;

/// The thesis' FTLs in its order, as the files and as the thesis name them.
const FTLS: [(&str, &str); 4] = [("pm-gcl", "PM_GCL"), ("pm-gcc", "PM_GCC"), ("sbm-gcl", "SBM_GCL"), ("hsbm-gcl", "HSBM_GCL")];
const TRACES: [(&str, &str); 2] = [("lammps", "LAMMPS"), ("macdrp", "MACDRP")];
/// (y label, unit, results.csv column, series.csv column)
const METRICS: [(&str, &str, &str, &str); 4] = [
    ("throughput", "MB/s", "mb_per_sec", "mb_per_sec"),
    ("mapping-update traffic", "KB", "map_update_kb", "map_update_kb"),
    ("blocks erased", "blocks", "blocks_erased", "blocks_erased"),
    ("write amplification", "", "waf", "waf"),
];
const SETTING: &str = "The HPC generators at scale 1 (seed 1) replayed synchronously on table 4.1's device (8 channels × 4 LUNs × 16 blocks × \
                       32 pages of 32 KiB), every FTL at one common logical space of 452 MB (10^6 B; the files' MB throughout)";
/// The files' MB, and the thesis' MB as the write-up reads it.
const MB_BYTES: f64 = 1e6;
const MIB_BYTES: f64 = 1_048_576.0;
const GIB_BYTES: f64 = 1_073_741_824.0;

pub(super) fn draw(results: &Path) -> Result<SeedFigures, LabError> {
    let table = Table::read(&results.join("results.csv"))?;
    let series = Table::read(&results.join("series.csv"))?;
    let mut figures = vec![fig_4_1(&table)?];
    for (number, (metric, unit, _, column)) in [("4.2", METRICS[0]), ("4.4", METRICS[1]), ("4.5", METRICS[2]), ("4.6", METRICS[3])] {
        figures.push(over_time(&table, &series, number, metric, unit, column)?);
    }
    let sensitivity = [
        ("4.8", "capacity", "device capacity", "× data written", &FTLS[..], "capacity at 2, 4 and 8 times the data written (blocks per LUN changed)"),
        ("4.9", "pages-per-block", "pages per block", "", &FTLS[..], "8, 16, 32 and 64 pages per block (blocks per LUN changed to keep the capacity)"),
        ("4.10", "superblock", "superblock size", "blocks", &FTLS[2..], "superblocks of 1, 2, 4 and 8 blocks at 8 pages per block"),
        ("4.11", "logs", "log blocks", "", &FTLS[3..], "2, 4, 8 and 16 log blocks"),
    ];
    for (number, section, x_label, x_unit, ftls, setting) in sensitivity {
        figures.push(sensitivity_figure(&table, number, section, x_label, x_unit, ftls, setting)?);
    }
    // In the thesis' order: 4.1, 4.2, (4.3), 4.4, 4.5, 4.6, (4.7), 4.8–4.11.
    let not_drawn = vec![
        NotDrawn {
            seed_figure: "Fig. 4.3".into(),
            why: "each request's throughput is kept only in the experiment's run store (`OUT/runs/`, not committed); the committed results hold \
                  the experiment's own box plots of it (`request-throughput-*.svg`), not the numbers to redraw the thesis' per-request scatter"
                .into(),
        },
        NotDrawn {
            seed_figure: "Fig. 4.7".into(),
            why: "the wear maps (writes per page, erases per block) are kept only in the run store, not in a committed CSV; the experiment's \
                  own heat maps of them are committed (`wear-{writes,erases}-TRACE-FTL.svg`)"
                .into(),
        },
    ];
    Ok(SeedFigures { seed: 2, figures, not_drawn })
}

fn ftl_name(ftl: &str) -> &str {
    FTLS.iter().find(|f| f.0 == ftl).map_or(ftl, |f| f.1)
}

/// Fig. 4.1 (Table 4.2's numbers as bars): throughput per FTL, LAMMPS and MACDRP side by side,
/// in MiB/s: the write-up reads the thesis' MB as 2^20 bytes, and the files keep 10^6 B/s.
fn fig_4_1(table: &Table) -> Result<Figure, LabError> {
    let categories: Vec<String> = FTLS.iter().map(|f| f.1.to_string()).collect();
    let mut chart = BarChart::new("Fig. 4.1: IO throughput of the FTLs", "throughput", "MiB/s", "FTL", categories);
    let mut compare = Vec::new();
    for (trace, name) in TRACES {
        let mut values = Vec::new();
        for (ftl, _) in FTLS {
            let ours = table.one(&[("section", "main"), ("trace", trace), ("ftl", ftl)])?.number("mb_per_sec")? * MB_BYTES / MIB_BYTES;
            values.push(ours);
            if let Some(cell) = THESIS_TABLE_4_2.iter().find(|c| c.trace == trace && c.ftl == ftl) {
                compare.push(Compare {
                    quantity: format!("{name}, {} (MiB/s, Table 4.2)", ftl_name(ftl)),
                    seed: format!("{:.1}", cell.mb_per_sec),
                    ours: format!("{ours:.1}"),
                });
            }
        }
        chart = chart.series(name, values);
    }
    let caption = format!(
        "Mirrors seed 002 Fig. 4.1 (the IO throughput of Table 4.2: the four FTLs on LAMMPS and MACDRP), in MiB/s (results.csv's 10^6 B/s ÷ 1.048576; \
         the thesis' MB read as 2^20 bytes, as in the write-up's claims). {SETTING}."
    );
    Ok(Figure { file_name: "fig-4.1.svg".into(), seed_figure: "Fig. 4.1".into(), svg: chart.caption(&caption).svg(), caption, compare })
}

/// Figs. 4.2, 4.4, 4.5, 4.6: a metric against the data written so far, a panel per trace.
fn over_time(table: &Table, series: &Table, number: &str, metric: &str, unit: &str, column: &str) -> Result<Figure, LabError> {
    let mut charts = Vec::new();
    let mut compare = Vec::new();
    for (k, (trace, name)) in TRACES.iter().enumerate() {
        let mut chart = LineChart::new(&format!("({}) {name}", (b'a' + k as u8) as char), "data written", "MB", metric, unit).markers(false).width(Width::Column);
        for (ftl, ftl_label) in FTLS {
            let rows = series.rows_where(&[("trace", trace), ("ftl", ftl)])?;
            let points = rows.iter().map(|r| Ok((r.number("written_mb")?, r.number(column)?))).collect::<Result<Vec<(f64, f64)>, LabError>>()?;
            if points.is_empty() {
                return Err(LabError::Results { path: "series.csv".into(), line: 0, reason: format!("no rows of {trace} on {ftl}") });
            }
            chart = chart.series(Series { name: ftl_label.into(), points });
        }
        if number == "4.4" {
            if let Some((_, thesis)) = THESIS_UPDATE_KB.iter().find(|(t, _)| t == trace) {
                for (i, (ftl, ftl_label)) in FTLS.iter().enumerate() {
                    let row = table.one(&[("section", "main"), ("trace", trace), ("ftl", ftl)])?;
                    let (ours, written) = (row.number("map_update_kb")?, row.number("written_mb")?);
                    compare.push(Compare {
                        quantity: format!("{name}, {ftl_label}: mapping-update KB over the whole trace"),
                        // The thesis' "7G" and "8GB" read as GiB, as all its MB; the file's MB is 10^6 B.
                        seed: format!("{:.0} per {} GiB", thesis[i], if *trace == "lammps" { 7 } else { 8 }),
                        ours: format!("{ours:.0} per {:.1} GiB", written * MB_BYTES / GIB_BYTES),
                    });
                }
            }
        }
        charts.push(chart.svg());
    }
    let what = match number {
        "4.2" => "the average IO throughput as the replay goes on",
        "4.4" => "the mapping-update traffic as the replay goes on",
        "4.5" => "the blocks erased as the replay goes on",
        _ => "the write amplification as the replay goes on",
    };
    let caption = format!("Mirrors seed 002 Fig. {number} ({what}, against the data written; LAMMPS and MACDRP, a panel each). {SETTING}.");
    let svg = panels(&format!("Fig. {number}: {metric} over the replay"), &caption, 2, &charts);
    Ok(Figure { file_name: format!("fig-{number}.svg"), seed_figure: format!("Fig. {number}"), caption, svg, compare })
}

/// Figs. 4.8–4.11: each metric against a setting, a row per metric, LAMMPS left, MACDRP right.
fn sensitivity_figure(table: &Table, number: &str, section: &str, x_label: &str, x_unit: &str, ftls: &[(&str, &str)], setting: &str) -> Result<Figure, LabError> {
    let mut charts = Vec::new();
    for (metric, unit, column, _) in METRICS {
        for (trace, name) in TRACES {
            let mut chart = LineChart::new(&format!("{metric}, {name}"), x_label, x_unit, metric, unit).width(Width::Column);
            for (ftl, ftl_label) in ftls {
                let rows = table.rows_where(&[("section", section), ("trace", trace), ("ftl", ftl)])?;
                let mut points = rows.iter().map(|r| Ok((r.number("value")?, r.number(column)?))).collect::<Result<Vec<(f64, f64)>, LabError>>()?;
                if points.is_empty() {
                    return Err(LabError::Results { path: "results.csv".into(), line: 0, reason: format!("no {section} rows of {trace} on {ftl}") });
                }
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                chart = chart.series(Series { name: ftl_label.to_string(), points });
            }
            charts.push(chart.svg());
        }
    }
    let caption = format!(
        "Mirrors seed 002 Fig. {number} (throughput, mapping-update traffic, erases and WAF against the {x_label}; a row per metric, LAMMPS left, \
         MACDRP right): {setting}. Otherwise as Fig. 4.1."
    );
    let title = format!("Fig. {number}: the {x_label}'s effect");
    Ok(Figure { file_name: format!("fig-{number}.svg"), seed_figure: format!("Fig. {number}"), svg: panels(&title, &caption, 2, &charts), caption, compare: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::super::check::{assert_caption, assert_chart, assert_figure, charts, results};
    use super::*;

    #[test]
    fn figs_4_1_to_4_11_are_drawn_in_order_with_their_series_legends_units_and_round_ticks() {
        let figures = draw(&results(2)).unwrap();
        let names: Vec<&str> = figures.figures.iter().map(|f| f.file_name.as_str()).collect();
        assert_eq!(names, ["fig-4.1.svg", "fig-4.2.svg", "fig-4.4.svg", "fig-4.5.svg", "fig-4.6.svg", "fig-4.8.svg", "fig-4.9.svg", "fig-4.10.svg", "fig-4.11.svg"]);
        let not_drawn: Vec<&str> = figures.not_drawn.iter().map(|n| n.seed_figure.as_str()).collect();
        assert_eq!(not_drawn, ["Fig. 4.3", "Fig. 4.7"]);
        let f = &figures.figures;
        assert_figure(&f[0].svg, "Fig. 4.1", 2, "MiB/s");
        assert_eq!(f[0].compare.len(), 8, "Table 4.2's eight cells beside ours");
        for (figure, unit) in [(&f[1], "MB/s"), (&f[2], "KB"), (&f[3], "blocks"), (&f[4], "")] {
            assert_eq!(charts(&figure.svg).len(), 2, "{}: a panel per trace", figure.seed_figure);
            assert_figure(&figure.svg, &figure.seed_figure, 4, unit);
            assert!(figure.svg.contains("data written (MB)"));
        }
        assert_eq!(f[2].compare.len(), 8, "the update traffic the thesis states, per trace and FTL");
        for (figure, series) in [(&f[5], 4), (&f[6], 4), (&f[7], 2), (&f[8], 1)] {
            assert_caption(&figure.svg, &figure.seed_figure);
            let panels = charts(&figure.svg);
            assert_eq!(panels.len(), 8, "{}: four metrics × two traces", figure.seed_figure);
            for (k, panel) in panels.iter().enumerate() {
                assert_chart(panel, &format!("{}, panel {k}", figure.seed_figure), series, ["MB/s", "KB", "blocks", ""][k / 2]);
            }
        }
    }
}

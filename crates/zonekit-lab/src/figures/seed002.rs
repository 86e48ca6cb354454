//! Seed 002 (open-channel FTLs for HPC traces): Figs. 4.1–4.11 from `results.csv`,
//! `series.csv`, `request-throughput.csv` (Fig. 4.3) and `wear.csv` (Fig. 4.7) of
//! `zonekit ocssd experiment`.
//!
//! The thesis draws each figure for LAMMPS and MACDRP side by side: here a panel per trace
//! (over time: Figs. 4.2, 4.4–4.6), and for the sensitivity figures (4.8–4.11) a row per metric
//! (throughput, mapping-update traffic, erases, WAF) with LAMMPS left and MACDRP right; the
//! per-request throughput (4.3) and the wear maps (4.7) a panel per trace and FTL. Only
//! the thesis' four FTLs are drawn (DFTL and FAST are beyond it; they are in the CSV files).

use std::path::Path;

use zonekit_report::{heat_map, panels, BarChart, LineChart, Series, Width};

use super::{Compare, Figure, SeedFigures, Table};
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
    let requests = Table::read(&results.join("request-throughput.csv"))?;
    let wear = Table::read(&results.join("wear.csv"))?;
    let mut figures = vec![fig_4_1(&table)?];
    for (number, (metric, unit, _, column)) in [("4.2", METRICS[0]), ("4.4", METRICS[1]), ("4.5", METRICS[2]), ("4.6", METRICS[3])] {
        figures.push(over_time(&table, &series, number, metric, unit, column)?);
        if number == "4.2" {
            figures.push(fig_4_3(&requests)?);
        }
    }
    figures.push(fig_4_7(&wear)?);
    let sensitivity = [
        ("4.8", "capacity", "device capacity", "× data written", &FTLS[..], "capacity at 2, 4 and 8 times the data written (blocks per LUN changed)"),
        ("4.9", "pages-per-block", "pages per block", "", &FTLS[..], "8, 16, 32 and 64 pages per block (blocks per LUN changed to keep the capacity)"),
        ("4.10", "superblock", "superblock size", "blocks", &FTLS[2..], "superblocks of 1, 2, 4 and 8 blocks at 8 pages per block"),
        ("4.11", "logs", "log blocks", "", &FTLS[3..], "2, 4, 8 and 16 log blocks"),
    ];
    for (number, section, x_label, x_unit, ftls, setting) in sensitivity {
        figures.push(sensitivity_figure(&table, number, section, x_label, x_unit, ftls, setting)?);
    }
    // Every figure of chapter 4 is drawn, in the thesis' order: 4.1–4.11.
    Ok(SeedFigures { seed: 2, figures, not_drawn: Vec::new() })
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
                compare.push(Compare { quantity: format!("{name}, {} (MiB/s, Table 4.2)", ftl_name(ftl)), seed: format!("{:.1}", cell.mb_per_sec), ours: format!("{ours:.1}") });
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

/// Fig. 4.3: each request's throughput in issue order, a row per trace and a panel per FTL in
/// the thesis' order; the thesis draws every request as a point, here each bucket of
/// consecutive requests in `request-throughput.csv` as its minimum, median and maximum.
fn fig_4_3(requests: &Table) -> Result<Figure, LabError> {
    let mut charts = Vec::new();
    let mut compare = Vec::new();
    let mut buckets_max = 0;
    for (t, (trace, name)) in TRACES.iter().enumerate() {
        for (f, (ftl, ftl_label)) in FTLS.iter().enumerate() {
            let rows = requests.rows_where(&[("trace", trace), ("ftl", ftl)])?;
            if rows.is_empty() {
                return Err(LabError::Results { path: "request-throughput.csv".into(), line: 0, reason: format!("no rows of {trace} on {ftl}") });
            }
            buckets_max = buckets_max.max(rows.len());
            let column = |c: &str| rows.iter().map(|r| Ok((r.number("first_request")?, r.number(c)?))).collect::<Result<Vec<(f64, f64)>, LabError>>();
            let (min, p50, max) = (column("mb_per_sec_min")?, column("mb_per_sec_p50")?, column("mb_per_sec_max")?);
            if *ftl == "pm-gcc" {
                // "Many requests at the sequential rate": the rate of the median bucket's median;
                // "GC requests near 0": the slowest request of the run.
                let mut medians: Vec<f64> = p50.iter().map(|p| p.1).collect();
                medians.sort_by(f64::total_cmp);
                let typical = medians[(medians.len() - 1) / 2];
                let slowest = min.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
                compare.push(Compare {
                    quantity: format!("{name}, PM_GCC: the rate most requests are written at (the median of the buckets' medians)"),
                    seed: "\"约 300MB/s\" (about 300 MB/s, the sequential rate)".into(),
                    ours: format!("{typical:.1} MB/s (10^6 B/s) = {:.1} MiB/s", typical * MB_BYTES / MIB_BYTES),
                });
                compare.push(Compare {
                    quantity: format!("{name}, PM_GCC: requests that collect garbage (the slowest request)"),
                    seed: "\"接近 0\" (near 0)".into(),
                    ours: format!("{slowest:.2} MB/s"),
                });
            }
            let label = (b'a' + (t * FTLS.len() + f) as u8) as char;
            let chart = LineChart::new(&format!("({label}) {name}, {ftl_label}"), "request, in issue order", "", "throughput", "MB/s")
                .markers(false)
                .width(Width::Column)
                .series(Series { name: "max".into(), points: max })
                .series(Series { name: "median".into(), points: p50 })
                .series(Series { name: "min".into(), points: min });
            charts.push(chart.svg());
        }
    }
    let caption = format!(
        "Mirrors seed 002 Fig. 4.3 (each IO request's throughput in issue order; a row per trace, LAMMPS above MACDRP, and from left to right PM_GCL, \
         PM_GCC, SBM_GCL, HSBM_GCL). The thesis draws every request; here the requests of a run go in at most {buckets_max} buckets of consecutive \
         requests (request-throughput.csv), each drawn at its first request as its maximum, median and minimum: a request's bytes over its latency, in MB/s \
         (10^6 B/s). {SETTING}."
    );
    let svg = panels("Fig. 4.3: each request's throughput over the replay", &caption, FTLS.len(), &charts);
    Ok(Figure { file_name: "fig-4.3.svg".into(), seed_figure: "Fig. 4.3".into(), caption, svg, compare })
}

/// A heat map's values: rows of cells.
type Grid = Vec<Vec<f64>>;

/// One run's wear maps from `wear.csv`: (programs per page: a row per block in block-id order,
/// a column per page; erases per block: a row per parallel unit, a column per block in its LUN).
fn wear_maps(wear: &Table, trace: &str, ftl: &str) -> Result<(Grid, Grid), LabError> {
    let rows = wear.rows_where(&[("trace", trace), ("ftl", ftl)])?;
    let bad = |reason: String| LabError::Results { path: "wear.csv".into(), line: 0, reason };
    if rows.is_empty() {
        return Err(bad(format!("no rows of {trace} on {ftl}")));
    }
    let mut blocks = Vec::new();
    for r in &rows {
        let pu = r.number("parallel_unit")? as usize;
        let block = r.number("block_in_lun")? as usize;
        let mut pages = Vec::new();
        for run in r.text("page_programs")?.split_whitespace() {
            let parsed = run.split_once('x').and_then(|(count, n)| Some((count.parse::<u32>().ok()?, n.parse::<usize>().ok()?)));
            let (count, n) = parsed.ok_or_else(|| bad(format!("{trace} on {ftl}: page_programs run {run:?} is not COUNTxPAGES")))?;
            pages.extend(std::iter::repeat_n(count as f64, n));
        }
        blocks.push((pu, block, r.number("erases")?, pages));
    }
    let pus = blocks.iter().map(|b| b.0 + 1).max().unwrap_or(0);
    let blocks_per_lun = blocks.iter().map(|b| b.1 + 1).max().unwrap_or(0);
    let pages_per_block = blocks[0].3.len();
    if blocks.len() != pus * blocks_per_lun || blocks.iter().any(|b| b.3.len() != pages_per_block) {
        return Err(bad(format!("{trace} on {ftl}: {} rows do not make {pus} parallel units × {blocks_per_lun} blocks of {pages_per_block} pages", blocks.len())));
    }
    let mut erases = vec![vec![0.0; blocks_per_lun]; pus];
    let mut programs = vec![Vec::new(); pus * blocks_per_lun];
    for (pu, block, erased, pages) in blocks {
        erases[pu][block] = erased;
        programs[block * pus + pu] = pages;
    }
    Ok((programs, erases))
}

/// Fig. 4.7: the wear maps, a row per trace and FTL, programs per page left and erases per
/// block right (the thesis puts each FTL's two maps side by side, four FTLs to a trace).
fn fig_4_7(wear: &Table) -> Result<Figure, LabError> {
    let mut charts = Vec::new();
    let mut compare = Vec::new();
    let range = |grid: &[Vec<f64>]| {
        let all = grid.iter().flatten().copied();
        let (lo, hi) = all.clone().fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        (lo, hi, all.sum::<f64>() / grid.iter().map(Vec::len).sum::<usize>().max(1) as f64)
    };
    for (t, (trace, name)) in TRACES.iter().enumerate() {
        for (ftl, ftl_label) in FTLS {
            let (programs, erases) = wear_maps(wear, trace, ftl)?;
            let label = (b'a' + t as u8) as char;
            charts.push(heat_map(&format!("({label}) {name}, {ftl_label}: programs per page"), "page", "block", &programs));
            charts.push(heat_map(&format!("({label}) {name}, {ftl_label}: erases per block"), "block in LUN", "parallel unit", &erases));
            if ftl == "pm-gcc" {
                for (what, grid) in [("programs per page", &programs), ("erases per block", &erases)] {
                    let (lo, hi, mean) = range(grid);
                    compare.push(Compare {
                        quantity: format!("{name}, PM_GCC: {what}, min–max (mean)"),
                        seed: "\"所有位置的写入次数和擦除次数均几乎相同\" (programs and erases nearly the same everywhere)".into(),
                        ours: format!("{lo:.0}–{hi:.0} ({mean:.1})"),
                    });
                }
            }
        }
    }
    let caption = format!(
        "Mirrors seed 002 Fig. 4.7 (the wear maps: how often each page was programmed and each block erased, (a) LAMMPS and (b) MACDRP, PM_GCL, PM_GCC, \
         SBM_GCL and HSBM_GCL on each). A row per trace and FTL: programs per page left (a row per block in block-id order, a column per page; the \
         device's 512 blocks drawn as rows of 3 averaged), erases per block right (a row per parallel unit, a column per block in its LUN), from \
         wear.csv; each map is coloured from 0 to its own maximum. {SETTING}."
    );
    let svg = panels("Fig. 4.7: wear maps, programs per page and erases per block", &caption, 2, &charts);
    Ok(Figure { file_name: "fig-4.7.svg".into(), seed_figure: "Fig. 4.7".into(), caption, svg, compare })
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
    use super::super::check::{assert_caption, assert_chart, assert_figure, charts, legend, results};
    use super::*;

    #[test]
    fn figs_4_1_to_4_11_are_drawn_in_order_with_their_series_legends_units_and_round_ticks() {
        let figures = draw(&results(2)).unwrap();
        let names: Vec<&str> = figures.figures.iter().map(|f| f.file_name.as_str()).collect();
        assert_eq!(
            names,
            ["fig-4.1.svg", "fig-4.2.svg", "fig-4.3.svg", "fig-4.4.svg", "fig-4.5.svg", "fig-4.6.svg", "fig-4.7.svg", "fig-4.8.svg", "fig-4.9.svg", "fig-4.10.svg", "fig-4.11.svg"]
        );
        assert!(figures.not_drawn.is_empty(), "every figure of chapter 4 is drawn");
        let f = &figures.figures;
        assert_figure(&f[0].svg, "Fig. 4.1", 2, "MiB/s");
        assert_eq!(f[0].compare.len(), 8, "Table 4.2's eight cells beside ours");
        for (figure, unit) in [(&f[1], "MB/s"), (&f[3], "KB"), (&f[4], "blocks"), (&f[5], "")] {
            assert_eq!(charts(&figure.svg).len(), 2, "{}: a panel per trace", figure.seed_figure);
            assert_figure(&figure.svg, &figure.seed_figure, 4, unit);
            assert!(figure.svg.contains("data written (MB)"));
        }
        assert_eq!(f[3].compare.len(), 8, "the update traffic the thesis states, per trace and FTL");
        // Fig. 4.3: a panel per trace and FTL in the thesis' order, each bucket's max, median and min.
        let per_request = charts(&f[2].svg);
        assert_eq!(per_request.len(), 8, "Fig. 4.3: two traces × four FTLs");
        for (k, panel) in per_request.iter().enumerate() {
            assert_chart(panel, &format!("Fig. 4.3, panel {k}"), 3, "MB/s");
            assert_eq!(legend(panel), ["max", "median", "min"]);
            let (trace, ftl) = (TRACES[k / 4].1, FTLS[k % 4].1);
            assert!(panel.contains(&format!("{trace}, {ftl}</text>")), "Fig. 4.3, panel {k}: {trace} and {ftl}");
            assert!(panel.contains("request, in issue order"));
        }
        assert_caption(&f[2].svg, "Fig. 4.3");
        assert!(f[2].caption.contains("(10^6 B/s)"), "the unit of the files' MB");
        assert_eq!(f[2].compare.len(), 4, "PM_GCC's sequential rate and its slowest requests, per trace");
        assert!(f[2].compare.iter().all(|c| c.seed.contains("300MB/s") || c.seed.contains("接近 0")));
        // Fig. 4.7: each run's two wear maps, side by side, with one legend gradient each.
        assert_caption(&f[6].svg, "Fig. 4.7");
        let maps = charts(&f[6].svg);
        assert_eq!(maps.len(), 16, "Fig. 4.7: two traces × four FTLs × two maps");
        for (k, map) in maps.iter().enumerate() {
            let (trace, ftl) = (TRACES[k / 8].1, FTLS[k / 2 % 4].1);
            let what = ["programs per page", "erases per block"][k % 2];
            assert!(map.contains(&format!("{trace}, {ftl}: {what}</text>")), "Fig. 4.7, map {k}: {trace}, {ftl}, {what}");
            let (x, y) = [("page", "block"), ("block in LUN", "parallel unit")][k % 2];
            assert!(map.contains(&format!(">{x}</text>")) && map.contains(&format!(">{y}</text>")), "Fig. 4.7, map {k}: axes {x} and {y}");
        }
        let mut ids: Vec<&str> = f[6].svg.split("<linearGradient id=\"").skip(1).map(|s| &s[..s.find('"').unwrap()]).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 16, "one gradient id a map, none repeated in the figure");
        assert_eq!(f[6].compare.len(), 4, "PM_GCC's programs and erases, per trace");
        for (figure, series) in [(&f[7], 4), (&f[8], 4), (&f[9], 2), (&f[10], 1)] {
            assert_caption(&figure.svg, &figure.seed_figure);
            let panels = charts(&figure.svg);
            assert_eq!(panels.len(), 8, "{}: four metrics × two traces", figure.seed_figure);
            for (k, panel) in panels.iter().enumerate() {
                assert_chart(panel, &format!("{}, panel {k}", figure.seed_figure), series, ["MB/s", "KB", "blocks", ""][k / 2]);
            }
        }
    }

    #[test]
    fn a_wear_row_with_a_malformed_run_is_refused_with_the_file_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wear.csv");
        std::fs::write(&path, "trace,ftl,parallel_unit,block_in_lun,erases,page_programs\nlammps,pm-gcl,0,0,1,3x2 2x1\nlammps,pm-gcl,1,0,2,3*3\n").unwrap();
        let e = wear_maps(&Table::read(&path).unwrap(), "lammps", "pm-gcl").unwrap_err().to_string();
        assert!(e.contains("wear.csv") && e.contains("3*3"), "{e}");
        std::fs::write(&path, "trace,ftl,parallel_unit,block_in_lun,erases,page_programs\nlammps,pm-gcl,0,0,1,3x2 2x1\nlammps,pm-gcl,1,0,2,1x3\n").unwrap();
        let (programs, erases) = wear_maps(&Table::read(&path).unwrap(), "lammps", "pm-gcl").unwrap();
        assert_eq!(programs, [vec![3.0, 3.0, 2.0], vec![1.0, 1.0, 1.0]], "block-id order: block 0 of PU 0, then of PU 1");
        assert_eq!(erases, [vec![1.0], vec![2.0]], "a row per parallel unit");
    }
}

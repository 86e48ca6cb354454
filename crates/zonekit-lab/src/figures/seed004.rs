//! Seed 004 (bcache on ZNS): Figs. 2.4, 4.1 and 5.1–5.3 from `results.csv` and `gc-waf.csv` of
//! `zonekit cache experiment` (the synthetic YCSB reads at the thesis' 1:8 cache).

use std::path::Path;

use zonekit_report::{BarChart, LineChart, Series};

use super::{Compare, Figure, SeedFigures, Table};
use crate::LabError;

const ORIGINAL: &str = "bcache original (conventional SSD, zone/128 buckets, bcache LRU)";
const SAMPLERS: [&str; 5] = ["LRU", "ARC", "SLRU", "DAM", "MBF"];
const SETTING: &str = "Synthetic YCSB reads (zipfian, 12.8 M reads of 6.4 M records) through an 8 GiB cache over 64 GiB (the thesis' 1:8), \
                       ZNS buckets of a 128 MiB zone, hit ratios after a 50 % warm-up; scale 1, seed 1";

fn hit_percent(table: &Table, section: &str, label: &str) -> Result<f64, LabError> {
    Ok(table.one(&[("section", section), ("label", label)])?.number("hit_ratio")? * 100.0)
}

pub(super) fn draw(results: &Path) -> Result<SeedFigures, LabError> {
    let table = Table::read(&results.join("results.csv"))?;
    let gc = Table::read(&results.join("gc-waf.csv"))?;
    let original = hit_percent(&table, "fig5.1", ORIGINAL)?;
    let figures = vec![fig_2_4(&table, &gc)?, fig_4_1(&table, original)?, fig_5_1(&table, original)?, fig_5_2(&table)?, fig_5_3(&table)?];
    Ok(SeedFigures { seed: 4, figures, not_drawn: Vec::new() })
}

fn fig_2_4(table: &Table, gc: &Table) -> Result<Figure, LabError> {
    let mut chart = LineChart::new("Fig. 2.4: WAF of each device GC, bcache on a conventional SSD", "device GC, in order", "", "WAF of the GC", "").markers(false);
    let mut mean_original = 0.0;
    for (label, name) in [(ORIGINAL, "bcache original"), ("bcache original + bcache metadata", "with bcache's metadata")] {
        let rows = gc.rows_where(&[("label", label)])?;
        let points = rows.iter().map(|r| Ok((r.number("gc")?, r.number("waf")?))).collect::<Result<Vec<(f64, f64)>, LabError>>()?;
        if label == ORIGINAL {
            mean_original = points.iter().map(|p| p.1).sum::<f64>() / points.len().max(1) as f64;
        }
        chart = chart.series(Series { name: name.into(), points });
    }
    let cumulative = table.one(&[("section", "fig5.1"), ("label", ORIGINAL)])?.number("device_waf")?;
    let caption = format!(
        "Mirrors seed 004 Fig. 2.4 (the WAF inside the conventional SSD at each of its GCs, bcache caching on it). {SETTING}; the SSD has 7 % \
         spare and 16 MiB erase units, which the thesis does not give."
    );
    let compare = vec![
        Compare { quantity: "WAF of each GC".into(), seed: "close to 8".into(), ours: format!("mean {mean_original:.2}") },
        Compare { quantity: "cumulative WAF at the end".into(), seed: "about 4".into(), ours: format!("{cumulative:.2}") },
    ];
    Ok(Figure { file_name: "fig-2.4.svg".into(), seed_figure: "Fig. 2.4".into(), svg: chart.caption(&caption).svg(), caption, compare })
}

fn fig_4_1(table: &Table, original: f64) -> Result<Figure, LabError> {
    let naive = [("ZNS-naive (bcache rule, exact live count)", "ZNS-naive (exact count)"), ("ZNS-naive (bcache rule, stock 13-bit live count)", "ZNS-naive (13-bit count)")];
    let mut categories = vec!["bcache original".to_string()];
    let mut values = vec![original];
    for (label, name) in naive {
        categories.push(name.into());
        values.push(hit_percent(table, "fig4.1", label)?);
    }
    let chart = BarChart::new("Fig. 4.1: hit ratio, conventional bcache against ZNS-naive", "hit ratio", "%", "", categories).series("", values.clone());
    let caption = format!(
        "Mirrors seed 004 Fig. 4.1 (bcache on a conventional SSD, 1 MiB buckets, against buckets mapped to 128 MiB zones, bcache's own eviction \
         rule). {SETTING}."
    );
    let compare = vec![Compare {
        quantity: "ZNS-naive against bcache original".into(),
        seed: "a large drop (no number given)".into(),
        ours: format!("{:+.1} and {:+.1} points", values[1] - original, values[2] - original),
    }];
    Ok(Figure { file_name: "fig-4.1.svg".into(), seed_figure: "Fig. 4.1".into(), svg: chart.caption(&caption).svg(), caption, compare })
}

fn fig_5_1(table: &Table, original: f64) -> Result<Figure, LabError> {
    let rows = table.rows_where(&[("section", "fig5.1")])?;
    let mut categories = Vec::new();
    let mut values = Vec::new();
    for r in &rows {
        let label = r.text("label")?;
        categories.push(if label == ORIGINAL { "bcache original".to_string() } else { label.trim_end_matches(" (LFU)").to_string() });
        values.push(r.number("hit_ratio")? * 100.0);
    }
    let chart = BarChart::new("Fig. 5.1: hit ratio by placement policy", "hit ratio", "%", "", categories).series("", values);
    let caption = format!(
        "Mirrors seed 004 Fig. 5.1 (hit ratio of bcache original, LRU eviction on a conventional SSD, and of each placement policy on ZNS with \
         LFU eviction and a 16 KiB sampler; SFR stands for ZNS-AutoStream, unbounded). {SETTING}."
    );
    let compare = vec![Compare { quantity: "bcache original's hit ratio".into(), seed: "97 %".into(), ours: format!("{original:.2} %") }];
    Ok(Figure { file_name: "fig-5.1.svg".into(), seed_figure: "Fig. 5.1".into(), svg: chart.caption(&caption).svg(), caption, compare })
}

fn fig_5_2(table: &Table) -> Result<Figure, LabError> {
    let categories: Vec<String> = SAMPLERS.iter().map(|s| format!("ZNS-{s}")).collect();
    let two_mib = SAMPLERS.iter().map(|s| hit_percent(table, "fig5.1", &format!("ZNS-{s} (LFU)"))).collect::<Result<Vec<f64>, LabError>>()?;
    let sixteen_kib = SAMPLERS.iter().map(|s| hit_percent(table, "fig5.2", &format!("ZNS-{s} (LFU), 16 KiB chunks"))).collect::<Result<Vec<f64>, LabError>>()?;
    let chart =
        BarChart::new("Fig. 5.2: hit ratio by chunk size", "hit ratio", "%", "placement policy", categories).series("2 MiB chunks", two_mib).series("16 KiB chunks", sixteen_kib);
    let caption = format!("Mirrors seed 004 Fig. 5.2 (each sampler's hit ratio with LBAs grouped in 2 MiB chunks, blue, and 16 KiB chunks, red). {SETTING}.");
    Ok(Figure { file_name: "fig-5.2.svg".into(), seed_figure: "Fig. 5.2".into(), svg: chart.caption(&caption).svg(), caption, compare: Vec::new() })
}

fn fig_5_3(table: &Table) -> Result<Figure, LabError> {
    let configurations = ["ZNS-naive", "ZNS-LRU"];
    let lru = configurations.iter().map(|c| hit_percent(table, "fig5.3", &format!("{c} (LRU eviction)"))).collect::<Result<Vec<f64>, LabError>>()?;
    let lfu = configurations.iter().map(|c| hit_percent(table, "fig5.1", &format!("{c} (LFU)"))).collect::<Result<Vec<f64>, LabError>>()?;
    let chart = BarChart::new("Fig. 5.3: LRU against LFU bucket eviction", "hit ratio", "%", "", configurations.iter().map(|c| c.to_string()).collect())
        .series("LRU eviction", lru)
        .series("LFU eviction", lfu);
    let caption = format!("Mirrors seed 004 Fig. 5.3 (ZNS-naive and ZNS-LRU, each with LRU and with LFU eviction of whole zone buckets). {SETTING}.");
    Ok(Figure { file_name: "fig-5.3.svg".into(), seed_figure: "Fig. 5.3".into(), svg: chart.caption(&caption).svg(), caption, compare: Vec::new() })
}

#[cfg(test)]
mod tests {
    use super::super::check::{assert_figure, legend, results};
    use super::*;

    #[test]
    fn figs_2_4_4_1_and_5_1_to_5_3_are_drawn_with_their_series_legends_units_and_round_ticks() {
        let figures = draw(&results(4)).unwrap();
        let names: Vec<&str> = figures.figures.iter().map(|f| f.file_name.as_str()).collect();
        assert_eq!(names, ["fig-2.4.svg", "fig-4.1.svg", "fig-5.1.svg", "fig-5.2.svg", "fig-5.3.svg"]);
        let f = &figures.figures;
        assert_figure(&f[0].svg, "Fig. 2.4", 2, "");
        assert!(f[0].svg.contains("device GC, in order"));
        assert_figure(&f[1].svg, "Fig. 4.1", 1, "%");
        assert_eq!(f[1].svg.matches("<rect x=").count(), 3, "bcache original and two ZNS-naive bars");
        assert_figure(&f[2].svg, "Fig. 5.1", 1, "%");
        assert_eq!(f[2].svg.matches("<rect x=").count(), 8, "every configuration of the thesis' Fig. 5.1");
        assert_figure(&f[3].svg, "Fig. 5.2", 2, "%");
        assert_eq!(legend(&f[3].svg), ["2 MiB chunks", "16 KiB chunks"]);
        assert_figure(&f[4].svg, "Fig. 5.3", 2, "%");
    }
}

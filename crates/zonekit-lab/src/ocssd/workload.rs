//! Seed 002's chapter 2, regenerated from our generators: Figs. 2.2–2.7 (the LAMMPS and
//! MACDRP traces' addresses, request sizes and alignment) drawn from the LAMMPS-like and
//! MACDRP-like patterns, and every characteristic the thesis states about its traces beside
//! ours, with whether it holds. The thesis' traces are not public; this is how a reader checks
//! that the generators are what the thesis describes (`zonekit ocssd workload`).

use std::path::Path;

use zonekit_report::{bar_chart, csv, line_chart, markdown_table, Series};
use zonekit_trace::record::Record;
use zonekit_trace::synth::hpc::{HpcPattern, HpcProfile, BLOCK_BYTES, LAMMPS_FOOTPRINT_BYTES, PAGE_BYTES};
use zonekit_trace::synth::Hpc;

use crate::harness::error::{LabError, Result};

const MIB: f64 = 1024.0 * 1024.0;
/// Requests drawn in the zoomed view (Figs. 2.2b and 2.5b).
const ZOOM_REQUESTS: usize = 60;
/// Points of the whole-trace view: every n-th request, so the chart stays small.
const OVERVIEW_POINTS: usize = 1500;

/// One characteristic: what the thesis says, what we measure, and whether it holds.
struct Check {
    what: &'static str,
    source: &'static str,
    thesis: String,
    ours: String,
    holds: bool,
    /// Derived from the thesis' results and set in the generator: not evidence of anything.
    calibrated: bool,
}

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

fn sequential(p: &HpcProfile) -> Check {
    Check {
        what: "requests starting where the previous one ended",
        source: "§4.9",
        thesis: "sequential writes dominate".into(),
        ours: pct(p.sequential_share()),
        holds: p.sequential_share() > 0.5,
        calibrated: false,
    }
}

fn checks(pattern: HpcPattern, p: &HpcProfile) -> Vec<Check> {
    let (thesis_written, thesis_range) = pattern.thesis_scale();
    let mib = |b: f64| format!("{:.1} MiB", b / MIB);
    let (start_block, start_half) = p.start_shares();
    let (end_block, end_half) = p.end_shares();
    let half_half = |a: f64, b: f64| (0.4..=0.6).contains(&a) && (0.4..=0.6).contains(&b) && a + b > 0.95;
    let check = |what, source, thesis: &str, ours: String, holds, calibrated| Check { what, source, thesis: thesis.into(), ours, holds, calibrated };
    let mut out = vec![
        check("requests that are writes", "§2.2", "all", pct(1.0 - p.reads as f64 / (p.requests + p.reads).max(1) as f64), p.reads == 0, false),
        check("bytes written", "§2.2", &mib(thesis_written as f64), mib(p.written_bytes as f64), (p.written_bytes as f64 / thesis_written as f64 - 1.0).abs() < 0.01, false),
        check("highest address", "Figs. 2.2a, 2.5a", &mib(thesis_range as f64), mib(p.max_address_bytes as f64), p.max_address_bytes <= thesis_range, false),
    ];
    let starts = format!("{} at 0, {} at 512 KiB", pct(start_block), pct(start_half));
    let ends = format!("{} at 0, {} at 512 KiB", pct(end_block), pct(end_half));
    let page_aligned = 1.0 - (p.start_off_page + p.end_off_page) as f64 / (2 * p.requests.max(1)) as f64;
    match pattern {
        HpcPattern::Lammps => out.extend([
            check("requests longer than 500 KB", "Fig. 2.3a", "almost all", pct(p.share_longer_than(500_000)), p.share_longer_than(500_000) >= 0.95, false),
            check("starts and ends on a page", "Figs. 2.3b, c", "all", pct(page_aligned), page_aligned == 1.0, false),
            check("requests longer than a block", "§2.2.1", "about 90 %", pct(p.share_longer_than(BLOCK_BYTES)), (0.85..=0.95).contains(&p.share_longer_than(BLOCK_BYTES)), false),
            check("starts in a block", "Fig. 2.4a", "about half at 0, half at 512 KiB", starts, half_half(start_block, start_half), false),
            check("ends in a block", "Fig. 2.4b", "likewise", ends, half_half(end_block, end_half), false),
            check(
                "median request",
                "§4.8",
                "often about 8 blocks of 256 KiB",
                mib(p.median_request_bytes() as f64),
                (1.5 * MIB..=3.0 * MIB).contains(&(p.median_request_bytes() as f64)),
                false,
            ),
            sequential(p),
            check(
                "live data (footprint)",
                "PM_GCC's 3674 KB, Fig. 4.4",
                &format!("about {}", mib(LAMMPS_FOOTPRINT_BYTES as f64)),
                mib(p.footprint_bytes as f64),
                (p.footprint_bytes as f64 / LAMMPS_FOOTPRINT_BYTES as f64 - 1.0).abs() < 0.1,
                true,
            ),
            check("mean request", "SBM_GCL's 63 KB, Fig. 4.4", "about 3.5 MiB", mib(p.mean_request_bytes()), (3.0 * MIB..=4.0 * MIB).contains(&p.mean_request_bytes()), true),
        ]),
        HpcPattern::Macdrp => out.extend([
            check("requests of exactly 512 KiB", "Fig. 2.6a", "almost all", pct(p.share_exactly(BLOCK_BYTES / 2)), p.share_exactly(BLOCK_BYTES / 2) >= 0.95, false),
            check("starts and ends on a page", "Figs. 2.6b, c", "most; a few not", pct(page_aligned), (0.95..1.0).contains(&page_aligned), false),
            check("starts in a block", "Fig. 2.7a", "about half at 0, half at 512 KiB", starts, half_half(start_block, start_half), false),
            check("ends in a block", "Fig. 2.7b", "likewise", ends, half_half(end_block, end_half), false),
            check("requests longer than 2 blocks of 256 KiB", "§4.8", "a low share", pct(p.share_longer_than(BLOCK_BYTES / 2)), p.share_longer_than(BLOCK_BYTES / 2) < 0.05, false),
            sequential(p),
            check(
                "live data (footprint)",
                "PM_GCC's 2481 KB, Fig. 4.4",
                "about 91 MiB (the whole range)",
                mib(p.footprint_bytes as f64),
                p.footprint_bytes as f64 >= 88.0 * MIB,
                true,
            ),
            check(
                "slabs starting in mid-block",
                "HSBM_GCL's 183.8 MB/s, Table 4.2",
                "about 10 %",
                pct(p.run_starts_in_mid_block_share()),
                (0.05..=0.15).contains(&p.run_starts_in_mid_block_share()),
                true,
            ),
            check(
                "requests not on a page",
                "SBM_GCL's 130 KB, Fig. 4.4",
                "about 1.5 %",
                pct(p.start_off_page as f64 / p.requests.max(1) as f64),
                (0.01..=0.02).contains(&(p.start_off_page as f64 / p.requests.max(1) as f64)),
                true,
            ),
        ]),
    }
    out
}

fn name(pattern: HpcPattern) -> &'static str {
    match pattern {
        HpcPattern::Lammps => "lammps",
        HpcPattern::Macdrp => "macdrp",
    }
}

fn charts(pattern: HpcPattern, label: &str, records: &[Record], p: &HpcProfile, out: &Path) -> Result<()> {
    let (first, second) = match pattern {
        HpcPattern::Lammps => (2, 3),
        HpcPattern::Macdrp => (5, 6),
    };
    let write = |file: String, svg: String| zonekit_base::atomic::write(out.join(&file), svg).map_err(LabError::io(&out.join(file)));
    let step = records.len().div_ceil(OVERVIEW_POINTS).max(1);
    let overview = Series { name: "request start".into(), points: records.iter().enumerate().step_by(step).map(|(i, r)| (i as f64, r.offset_bytes as f64 / MIB)).collect() };
    write(
        format!("fig2.{first}a-{label}-addresses.svg"),
        line_chart(&format!("Fig. 2.{first}(a): {label}, every {step}th request"), "request", "start (MiB)", &[overview], false),
    )?;
    let zoom = &records[..records.len().min(ZOOM_REQUESTS)];
    let starts = Series { name: "start".into(), points: zoom.iter().enumerate().map(|(i, r)| (i as f64, r.offset_bytes as f64 / MIB)).collect() };
    let ends = Series { name: "end".into(), points: zoom.iter().enumerate().map(|(i, r)| (i as f64, (r.offset_bytes + r.len_bytes) as f64 / MIB)).collect() };
    write(format!("fig2.{first}b-{label}-zoom.svg"), line_chart(&format!("Fig. 2.{first}(b): {label}, first {ZOOM_REQUESTS} requests"), "request", "MiB", &[starts, ends], false))?;
    let mut sizes = p.request_bytes.clone();
    sizes.sort_unstable();
    let cdf = Series {
        name: "requests".into(),
        points: sizes
            .iter()
            .enumerate()
            .filter(|(i, _)| i % sizes.len().div_ceil(400).max(1) == 0 || *i + 1 == sizes.len())
            .map(|(i, &b)| (b as f64 / 1024.0, (i + 1) as f64 / sizes.len() as f64))
            .collect(),
    };
    write(
        format!("fig2.{second}a-{label}-request-sizes.svg"),
        line_chart(&format!("Fig. 2.{second}(a): {label}, request size CDF"), "request (KiB)", "share of requests", &[cdf], false),
    )?;
    let in_page = |off_page: u64| {
        vec![("on a page".to_string(), (p.requests - off_page) as f64 / p.requests.max(1) as f64), ("not on a page".to_string(), off_page as f64 / p.requests.max(1) as f64)]
    };
    write(
        format!("fig2.{second}b-{label}-start-in-page.svg"),
        bar_chart(&format!("Fig. 2.{second}(b): {label}, request starts"), "share of requests", &in_page(p.start_off_page)),
    )?;
    write(format!("fig2.{second}c-{label}-end-in-page.svg"), bar_chart(&format!("Fig. 2.{second}(c): {label}, request ends"), "share of requests", &in_page(p.end_off_page)))?;
    let third = second + 1;
    let in_block = |bins: &[u64]| Series {
        name: "requests".into(),
        points: bins.iter().enumerate().map(|(i, &n)| ((i as u64 * PAGE_BYTES / 1024) as f64, n as f64 / p.requests.max(1) as f64)).collect(),
    };
    write(
        format!("fig2.{third}a-{label}-start-in-block.svg"),
        line_chart(
            &format!("Fig. 2.{third}(a): {label}, where requests start in a block"),
            "offset in the block (KiB, by page)",
            "share of requests",
            &[in_block(&p.start_in_block)],
            false,
        ),
    )?;
    write(
        format!("fig2.{third}b-{label}-end-in-block.svg"),
        line_chart(
            &format!("Fig. 2.{third}(b): {label}, where requests end in a block"),
            "offset in the block (KiB, by page)",
            "share of requests",
            &[in_block(&p.end_in_block)],
            false,
        ),
    )?;
    Ok(())
}

/// Profiles both generators at the thesis' scale, draws Figs. 2.2–2.7 into `out` and writes
/// `workload.csv` (each characteristic beside the thesis'); returns the markdown table.
pub fn characterise(seed: u64, out: &Path) -> Result<String> {
    std::fs::create_dir_all(out).map_err(LabError::io(out))?;
    let header = ["trace", "characteristic", "source", "thesis", "ours", "holds"];
    let mut rows = Vec::new();
    for pattern in [HpcPattern::Lammps, HpcPattern::Macdrp] {
        let records: Vec<Record> = Hpc::new(pattern, 1.0, seed).collect();
        let profile = HpcProfile::measure(records.iter().copied());
        charts(pattern, name(pattern), &records, &profile, out)?;
        for c in checks(pattern, &profile) {
            let holds = match (c.holds, c.calibrated) {
                (true, false) => "yes",
                (true, true) => "calibrated",
                (false, _) => "NO",
            };
            rows.push(vec![name(pattern).into(), c.what.into(), c.source.into(), c.thesis, c.ours, holds.into()]);
        }
    }
    let path = out.join("workload.csv");
    zonekit_base::atomic::write(&path, csv(&header, &rows)).map_err(LabError::io(&path))?;
    Ok(markdown_table(&header, &rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_characteristic_the_thesis_states_holds_and_the_figures_are_drawn() {
        let dir = std::env::temp_dir().join(format!("zonekit-ocssd-workload-{}", std::process::id()));
        let table = characterise(1, &dir).unwrap();
        assert!(!table.contains("| NO |"), "{table}");
        for fig in ["fig2.2a-lammps-addresses.svg", "fig2.4b-lammps-end-in-block.svg", "fig2.6a-macdrp-request-sizes.svg", "fig2.7a-macdrp-start-in-block.svg", "workload.csv"] {
            assert!(dir.join(fig).exists(), "{fig}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

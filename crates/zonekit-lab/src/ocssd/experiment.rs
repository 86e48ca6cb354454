//! Seed 002's chapter 4 as one experiment (`zonekit ocssd experiment`): the throughput table
//! on LAMMPS-like, MACDRP-like and one real trace at one common logical space and at each
//! FTL's own, parallel issue, the wear maps, and the sensitivity to device capacity, pages
//! per block, superblock size, log count and MACDRP's slab split; `results.csv`, `series.csv`,
//! `request-throughput.csv` and `wear.csv` (Figs. 4.3 and 4.7's data), `summary.md`, SVG charts and each row's own `zonekit ocssd run` (`commands.tsv`). One
//! replay is [`crate::ocssd::bench`]'s.

use std::path::Path;

use serde::Serialize;
use zonekit_base::policy::Params;
use zonekit_ocssd::{Ftl, OcError, OcGeometry, SsdReport, Timing, FTLS};
use zonekit_report::{csv, heat_map, line_chart, markdown_table, Series};
use zonekit_trace::input::Input;
use zonekit_trace::synth::{HpcPattern, Workload};

use crate::harness::error::{LabError, Result};
use crate::harness::parallel;
use crate::harness::runs::{RunStore, Stored};
use crate::ocssd::bench::*;
use crate::ocssd::figure_data::{page_program_runs, request_buckets, REQUEST_THROUGHPUT_COLUMNS, WEAR_COLUMNS};
use crate::ocssd::fit::{self, CommandCounts, FitError, TimingFit};

/// What the experiment varies from the thesis' defaults.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Axis {
    /// The throughput table at the thesis' settings, every FTL at one common logical space:
    /// the smallest any FTL exposes on the device (the thesis states no spare).
    Main,
    /// The main table again, every FTL at its own (native) logical space.
    Native,
    /// SBM_GCL's two strategies for a move with no free superblock (§3.2.3.3); the value is
    /// the superblocks the device has beyond the trace's range.
    SbmNoFree(u32),
    /// Device capacity as a multiple of the live data (blocks per LUN vary).
    Capacity(u32),
    /// Pages per block, at the thesis' capacity.
    PagesPerBlock(u32),
    /// Superblock of this many PUs × 1 block, 8-page blocks (§4.8).
    Superblock(u32),
    /// Log superblocks of HSBM_GCL.
    Logs(u32),
    /// MACDRP-like with this percentage of the boundaries between its slabs in mid-block, a
    /// setting the thesis does not determine ([`zonekit_trace::synth::hpc::MACDRP_SPLIT_SHARE`]).
    MacdrpSplit(u32),
    /// The main table again with every page of a request issued at once over the preset's
    /// channels ([`Timing::Parallel`]), beyond the thesis.
    Parallel,
}

impl Axis {
    pub fn section(self) -> &'static str {
        match self {
            Axis::Main => "main",
            Axis::Native => "native",
            Axis::SbmNoFree(_) => "sbm-no-free",
            Axis::Capacity(_) => "capacity",
            Axis::PagesPerBlock(_) => "pages-per-block",
            Axis::Superblock(_) => "superblock",
            Axis::Logs(_) => "logs",
            Axis::MacdrpSplit(_) => "macdrp-split",
            Axis::Parallel => "parallel",
        }
    }

    pub fn value(self) -> u32 {
        match self {
            Axis::Main | Axis::Native | Axis::Parallel => 0,
            Axis::SbmNoFree(v) | Axis::Capacity(v) | Axis::PagesPerBlock(v) | Axis::Superblock(v) | Axis::Logs(v) | Axis::MacdrpSplit(v) => v,
        }
    }
}

/// The chapter-4 experiment.
#[derive(Clone, Debug)]
pub struct OcssdExperiment {
    /// Multiplies the bytes the HPC generators write (1.0: the thesis' 7 and 8.3 GB).
    pub scale: f64,
    /// The real trace for the throughput table (replayed compacted), if any.
    pub real_trace: Option<std::path::PathBuf>,
    pub seed: u64,
    pub threads: usize,
    pub out: std::path::PathBuf,
}

/// Every FTL's own logical space on `geometry`, in bytes, in [`FTLS`] order.
fn native_logical_bytes(geometry: OcGeometry) -> std::result::Result<Vec<(&'static str, u64)>, OcError> {
    FTLS.iter().map(|f| zonekit_ocssd::ftl::find(f.name, &Params::new(), geometry).map(|ftl| (f.name, ftl.logical_pages() * geometry.page_bytes as u64))).collect()
}

/// The main table's common logical space on `geometry`: the smallest any FTL exposes, and
/// that FTL.
pub(crate) fn common_logical_bytes(geometry: OcGeometry) -> std::result::Result<(&'static str, u64), OcError> {
    Ok(native_logical_bytes(geometry)?.into_iter().min_by_key(|&(_, bytes)| bytes).unwrap_or(("none", 0)))
}

/// The thesis' FTLs (the sensitivity sections run these); DFTL and FAST join the main table.
const THESIS_FTLS: [&str; 4] = ["pm-gcl", "pm-gcc", "sbm-gcl", "hsbm-gcl"];

struct Job {
    trace: String,
    axis: Axis,
    spec: OcssdSpec,
}

impl OcssdExperiment {
    fn hpc(&self, pattern: HpcPattern) -> Input {
        Input::generated(Workload::Hpc { pattern, scale: self.scale, split: None }, self.seed)
    }

    fn jobs(&self) -> Result<Vec<Job>> {
        let thesis = OcGeometry::THESIS;
        let mut jobs = Vec::new();
        let mut traces: Vec<(String, Input, bool, OcGeometry)> =
            vec![("lammps".into(), self.hpc(HpcPattern::Lammps), false, thesis), ("macdrp".into(), self.hpc(HpcPattern::Macdrp), false, thesis)];
        if let Some(path) = &self.real_trace {
            let input = Input::path(path, None, false);
            // Any request longer than the largest device a geometry allows is refused.
            let footprint = footprint_bytes(&input, thesis.block_bytes(), true, 1 << 46)?;
            // The thesis' LAMMPS ratio, 512 MiB of flash for 358 MB of live data, or more if an
            // FTL keeps a larger spare (DFTL's depends on its translation pages): one device
            // for every FTL.
            let mut blocks_per_lun = (footprint as f64 * 512.0 * 1.048576 / 358.0 / (thesis.pus() as f64 * thesis.block_bytes() as f64)).ceil() as u32;
            blocks_per_lun = blocks_per_lun.max(thesis.blocks_per_lun);
            loop {
                let geometry = OcGeometry { blocks_per_lun, ..thesis };
                let (_, smallest) = common_logical_bytes(geometry).map_err(engine_error(path.display().to_string()))?;
                if smallest >= footprint {
                    break;
                }
                blocks_per_lun += (blocks_per_lun as u64 * (footprint - smallest)).div_ceil(smallest.max(1)) as u32;
            }
            let name = path.file_name().map_or("real".into(), |n| n.to_string_lossy().into_owned());
            traces.push((name, input, true, OcGeometry { blocks_per_lun, ..thesis }));
        }
        let spec = |ftl: &str, params: &[(&str, String)], geometry: OcGeometry, input: &Input, compact: bool| OcssdSpec {
            ftl: ftl.into(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            geometry,
            input: input.clone(),
            compact,
            sample_every_bytes: (64.0 * MB * self.scale.min(1.0)).max(MB) as u64,
            timing: Timing::Synchronous,
            logical_bytes_max: None,
        };
        for (name, input, compact, geometry) in &traces {
            let (_, common) = common_logical_bytes(*geometry).map_err(engine_error(name.clone()))?;
            for info in FTLS {
                let native = spec(info.name, &[], *geometry, input, *compact);
                jobs.push(Job { trace: name.clone(), axis: Axis::Main, spec: OcssdSpec { logical_bytes_max: Some(common), ..native.clone() } });
                jobs.push(Job { trace: name.clone(), axis: Axis::Native, spec: native });
            }
        }
        let (_, thesis_common) = common_logical_bytes(thesis).map_err(engine_error(thesis.to_string()))?;
        for (name, input, _, _) in traces.iter().take(2) {
            for info in FTLS {
                jobs.push(Job {
                    trace: name.clone(),
                    axis: Axis::Parallel,
                    spec: OcssdSpec { timing: Timing::Parallel, logical_bytes_max: Some(thesis_common), ..spec(info.name, &[], thesis, input, false) },
                });
            }
            // §4.6 sizes the device by the valid data written: the pattern's footprint.
            let pattern = if name == "lammps" { HpcPattern::Lammps } else { HpcPattern::Macdrp };
            let live = pattern.live_bytes(self.seed) as f64;
            for times in [2u32, 4, 8] {
                let blocks_per_lun = (times as f64 * live / (thesis.pus() as f64 * thesis.block_bytes() as f64)).ceil() as u32;
                for ftl in THESIS_FTLS {
                    jobs.push(Job { trace: name.clone(), axis: Axis::Capacity(times), spec: spec(ftl, &[], OcGeometry { blocks_per_lun, ..thesis }, input, false) });
                }
            }
            for ppb in [8u32, 16, 32, 64] {
                let g = OcGeometry { pages_per_block: ppb, blocks_per_lun: thesis.blocks_per_lun * thesis.pages_per_block / ppb, ..thesis };
                for ftl in THESIS_FTLS {
                    jobs.push(Job { trace: name.clone(), axis: Axis::PagesPerBlock(ppb), spec: spec(ftl, &[], g, input, false) });
                }
            }
            let eight_page = OcGeometry { pages_per_block: 8, blocks_per_lun: thesis.blocks_per_lun * 4, ..thesis };
            for pn in [1u32, 2, 4, 8] {
                for ftl in ["sbm-gcl", "hsbm-gcl"] {
                    jobs.push(Job { trace: name.clone(), axis: Axis::Superblock(pn), spec: spec(ftl, &[("pn", pn.to_string())], eight_page, input, false) });
                }
            }
            for logs in [2u32, 4, 8, 16] {
                jobs.push(Job { trace: name.clone(), axis: Axis::Logs(logs), spec: spec("hsbm-gcl", &[("logs", logs.to_string())], thesis, input, false) });
            }
            // SBM_GCL maps every superblock of the device, so a move finds no free superblock
            // once the erased ones are used up: at once with erase-in-place, which never
            // collects garbage for a move; with gc-first only when every superblock is mapped,
            // i.e. on a device no larger than the trace's range (`exact_fit`).
            let range_blocks = (pattern.thesis_scale().1 / thesis.block_bytes()) as u32;
            for (geometry, beyond) in [(thesis, thesis.blocks() - range_blocks), (exact_fit(range_blocks, thesis), 0)] {
                for no_free in ["gc-first", "erase-in-place"] {
                    jobs.push(Job { trace: name.clone(), axis: Axis::SbmNoFree(beyond), spec: spec("sbm-gcl", &[("no_free", no_free.into())], geometry, input, false) });
                }
            }
        }
        for percent in [0u32, 25, 50, 75, 100] {
            let input = Input::generated(Workload::Hpc { pattern: HpcPattern::Macdrp, scale: self.scale, split: Some(percent as f64 / 100.0) }, self.seed);
            for ftl in THESIS_FTLS {
                jobs.push(Job { trace: "macdrp".into(), axis: Axis::MacdrpSplit(percent), spec: spec(ftl, &[], thesis, &input, false) });
            }
        }
        Ok(jobs)
    }
}

/// A device of thesis blocks and one LUN per channel holding exactly `blocks` blocks, the
/// channel count the divisor of `blocks` nearest the thesis' 8 (88 blocks: 8 × 11; 93: 3 × 31;
/// 358: 2 × 179), so that a trace over `blocks` blocks maps every 1-block superblock.
pub(crate) fn exact_fit(blocks: u32, thesis: OcGeometry) -> OcGeometry {
    let channels = (1..=blocks).filter(|d| blocks % d == 0).min_by_key(|d| d.abs_diff(thesis.channels)).unwrap_or(1);
    OcGeometry { channels, luns_per_channel: 1, blocks_per_lun: blocks / channels.max(1), ..thesis }
}

/// Columns of `results.csv`. `map_update_kb` is entries rewritten without the log-open charge,
/// which is `log_open_kb` (see [`zonekit_ocssd::MapCounters`]); `logical_mb` is the space the
/// host could address (the common space in `main`), `native_logical_mb` the FTL's own, and
/// `spare_percent` = (physical − logical) / physical; `mb_per_sec_fitted` is the fitted timing
/// model's throughput (see [`crate::ocssd::fit`]). New columns go at the end.
pub const RESULT_COLUMNS: [&str; 35] = [
    "section",
    "value",
    "trace",
    "ftl",
    "channels",
    "luns",
    "blocks_per_lun",
    "pages_per_block",
    "written_mb",
    "mb_per_sec",
    "waf",
    "blocks_erased",
    "map_table_bytes",
    "map_update_kb",
    "pages_copied",
    "pages_padded",
    "switch_merges",
    "partial_merges",
    "full_merges",
    "erase_in_place",
    "translation_reads",
    "translation_writes",
    "write_latency_us_p50",
    "write_latency_us_p99",
    "params",
    "logical_mb",
    "native_logical_mb",
    "spare_percent",
    "map_entries_updated",
    "log_entries_updated",
    "logs_opened",
    "log_open_kb",
    "erase_count_min",
    "erase_count_max",
    "mb_per_sec_fitted",
];

fn result_row(job: &Job, r: &SsdReport) -> Vec<String> {
    let g = &r.geometry;
    vec![
        job.axis.section().into(),
        job.axis.value().to_string(),
        job.trace.clone(),
        job.spec.ftl.clone(),
        g.channels.to_string(),
        g.luns_per_channel.to_string(),
        g.blocks_per_lun.to_string(),
        g.pages_per_block.to_string(),
        format!("{:.1}", r.user_bytes_written as f64 / MB),
        format!("{:.1}", r.mb_per_sec),
        format!("{:.3}", r.waf),
        r.flash.blocks_erased.to_string(),
        r.map_table_bytes.to_string(),
        format!("{:.0}", r.map.map_update_bytes as f64 / 1024.0),
        r.map.pages_copied.to_string(),
        r.flash.pages_padded.to_string(),
        r.map.switch_merges.to_string(),
        r.map.partial_merges.to_string(),
        r.map.full_merges.to_string(),
        r.map.erase_in_place.to_string(),
        r.map.translation_reads.to_string(),
        r.map.translation_writes.to_string(),
        format!("{:.0}", r.write_latency_us_p50),
        format!("{:.0}", r.write_latency_us_p99),
        job.spec.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";"),
        format!("{:.1}", r.logical_bytes as f64 / MB),
        format!("{:.1}", r.native_logical_bytes as f64 / MB),
        format!("{:.1}", r.spare_percent),
        r.map.map_entries_updated.to_string(),
        r.map.log_entries_updated.to_string(),
        r.map.logs_opened.to_string(),
        format!("{:.1}", r.map.log_open_bytes as f64 / 1024.0),
        r.erase_count_min.to_string(),
        r.erase_count_max.to_string(),
    ]
}

/// Runs the experiment, writes its files into `exp.out` and returns the summary (markdown).
/// `progress(done, total, last)` is called after each run.
pub fn run_experiment(exp: &OcssdExperiment, progress: &(dyn Fn(usize, usize, &str) + Sync)) -> Result<String> {
    if !(exp.scale > 0.0 && exp.scale <= 1.0) {
        return Err(LabError::Usage(format!("--scale {}: must be in (0, 1]", exp.scale)));
    }
    std::fs::create_dir_all(&exp.out).map_err(LabError::io(&exp.out))?;
    let jobs = exp.jobs()?;
    // Each row's own command, in the rows' order.
    let mut commands = String::from("trace\tsection\tvalue\tftl\tcommand\n");
    for job in &jobs {
        let command = job.spec.command().unwrap_or_else(|why| format!("# not one command: {why}"));
        commands.push_str(&format!("{}\t{}\t{}\t{}\t{command}\n", job.trace, job.axis.section(), job.axis.value(), job.spec.ftl));
    }
    crate::harness::results::write_atomically(&exp.out.join("commands.tsv"), &commands)?;
    // Each finished run is kept under OUT/runs/, so an interrupted experiment resumes there.
    let store = RunStore::open(&exp.out)?;
    let keys: Vec<String> = jobs.iter().map(|job| run_key(&job.spec)).collect();
    let results: Vec<std::sync::Mutex<Option<Result<OcssdRun>>>> = jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    parallel::for_each(jobs.len(), exp.threads, |i| {
        let run = match store.load(&keys[i]) {
            Stored::Run(run) => Ok(run),
            Stored::Missing | Stored::Damaged => run_ocssd(&jobs[i].spec, &mut |_| {}).and_then(|run| store.save(&keys[i], &run).map(|()| run)),
        };
        *results[i].lock().expect("no panics while holding") = Some(run);
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(n, jobs.len(), &format!("{} {} {}", jobs[i].trace, jobs[i].axis.section(), jobs[i].spec.ftl));
    });
    let mut runs = Vec::new();
    let mut failed = Vec::new();
    for (job, slot) in jobs.iter().zip(results) {
        match slot.into_inner().expect("no panics while holding").expect("every job ran") {
            Ok(run) => runs.push((job, run)),
            Err(e) => failed.push(format!("{} {} {}: {e}", job.trace, job.axis.section(), job.spec.ftl)),
        }
    }
    let summary = write_outputs(exp, &runs)?;
    if !failed.is_empty() {
        return Err(LabError::Runs { failed, total: jobs.len() });
    }
    Ok(summary)
}

/// Everything that defines a run, as [`RunStore`] keys it: its own command (every setting
/// spelt out), or where no command gives it its whole spec; for a trace, the file's length and
/// modification time, so that a changed trace is replayed again.
fn run_key(spec: &OcssdSpec) -> String {
    let mut key = spec.command().unwrap_or_else(|_| format!("{spec:?}").replace('\n', " "));
    // What the timing named in the command gives, so that a run kept from other figures of
    // the same name is run again.
    let per_request = spec.timing.costs().map_or(0, |c| c.write_request_ns);
    key.push_str(&format!(" # timing {} + {per_request} ns a request", zonekit_device::bench::timing_fingerprint(&spec.timing.flash())));
    if let zonekit_trace::input::Source::Binary(path) | zonekit_trace::input::Source::Trace { path, .. } = &spec.input.source {
        if let Ok(meta) = std::fs::metadata(path) {
            let modified = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
            key.push_str(&format!(" # {} bytes, modified {modified} ns", meta.len()));
        }
    }
    key
}

/// The thesis' §4.3 update traffic (KB per trace) and map sizes, for the summary; its table
/// 4.2 is [`fit::THESIS_TABLE_4_2`].
pub(crate) const THESIS_UPDATE_KB: [(&str, [f64; 4]); 2] = [("lammps", [1768.0, 3674.0, 63.0, 487.0]), ("macdrp", [2065.0, 2481.0, 130.0, 571.0])];
const THESIS_MAP_BYTES: [f64; 4] = [131072.0, 131072.0, 4096.0, 4736.0];

fn write_file(out: &Path, name: &str, text: String) -> Result<()> {
    let path = out.join(name);
    zonekit_base::atomic::write(&path, text).map_err(LabError::io(&path))
}

fn write_outputs(exp: &OcssdExperiment, runs: &[(&Job, OcssdRun)]) -> Result<String> {
    let out = &exp.out;
    let timing_fit = fit_timing(runs);
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|(job, run)| {
            let mut row = result_row(job, &run.report);
            row.push(fitted_mb_per_sec(job, &run.report, timing_fit.as_ref().ok()));
            row
        })
        .collect();
    write_file(out, "results.csv", csv(&RESULT_COLUMNS, &rows))?;
    let mut series_rows = Vec::new();
    for (job, run) in runs.iter().filter(|(j, _)| j.axis == Axis::Main) {
        for s in &run.series {
            series_rows.push(vec![
                job.trace.clone(),
                job.spec.ftl.clone(),
                format!("{:.1}", s.written_mb),
                format!("{:.1}", s.mb_per_sec),
                s.blocks_erased.to_string(),
                format!("{:.3}", s.waf),
                format!("{:.1}", s.map_update_kb),
            ]);
        }
    }
    write_file(out, "series.csv", csv(&["trace", "ftl", "written_mb", "mb_per_sec", "blocks_erased", "waf", "map_update_kb"], &series_rows))?;
    // Figs. 4.3 and 4.7's data, for the runs the experiment's own wear maps draw: the main
    // section's thesis FTLs on the two HPC traces.
    let figure_runs: Vec<&(&Job, OcssdRun)> =
        runs.iter().filter(|(j, _)| j.axis == Axis::Main && THESIS_FTLS.contains(&j.spec.ftl.as_str()) && (j.trace == "lammps" || j.trace == "macdrp")).collect();
    let mut request_rows = Vec::new();
    let mut wear_rows = Vec::new();
    for (job, run) in &figure_runs {
        for b in request_buckets(&run.request_mb_per_sec) {
            request_rows.push(vec![
                job.trace.clone(),
                job.spec.ftl.clone(),
                b.first_request.to_string(),
                b.requests.to_string(),
                format!("{:.2}", b.mb_per_sec_min),
                format!("{:.2}", b.mb_per_sec_p50),
                format!("{:.2}", b.mb_per_sec_max),
                format!("{:.2}", b.mb_per_sec_mean),
            ]);
        }
        let g = &run.report.geometry;
        for (block_id, pages) in run.page_write_map.iter().enumerate() {
            let block_id = block_id as u32;
            let (pu, block_in_lun) = (g.pu_of(block_id), g.block_in_lun(block_id));
            let erases = run.erase_map.get(pu as usize).and_then(|row| row.get(block_in_lun as usize)).copied().unwrap_or(0);
            wear_rows.push(vec![job.trace.clone(), job.spec.ftl.clone(), pu.to_string(), block_in_lun.to_string(), erases.to_string(), page_program_runs(pages)]);
        }
    }
    write_file(out, "request-throughput.csv", csv(&REQUEST_THROUGHPUT_COLUMNS, &request_rows))?;
    write_file(out, "wear.csv", csv(&WEAR_COLUMNS, &wear_rows))?;

    let mut text = String::from("# Seed 002, chapter 4: open-channel FTLs\n\n");
    text.push_str(&format!("HPC generators at scale {} (seed {}); every number below is from `results.csv`.\n\n", exp.scale, exp.seed));
    let main: Vec<&(&Job, OcssdRun)> = runs.iter().filter(|(j, _)| j.axis == Axis::Main).collect();
    let traces: Vec<String> = main.iter().map(|(j, _)| j.trace.clone()).fold(Vec::new(), |mut v, t| {
        if !v.contains(&t) {
            v.push(t);
        }
        v
    });
    // Table 4.2 beside ours.
    text.push_str("## Throughput (MB/s), thesis table 4.2 beside ours\n\n");
    let mut table = Vec::new();
    for trace in &traces {
        let mut row = vec![trace.clone()];
        for ftl in THESIS_FTLS {
            let ours = main.iter().find(|(j, _)| &j.trace == trace && j.spec.ftl == ftl).map_or("—".into(), |(_, r)| format!("{:.1}", r.report.mb_per_sec));
            let thesis = fit::THESIS_TABLE_4_2.iter().find(|c| c.trace == trace && c.ftl == ftl).map_or("—".into(), |c| format!("{:.1}", c.mb_per_sec));
            row.push(format!("{ours} ({thesis})"));
        }
        for ftl in ["dftl", "fast"] {
            row.push(main.iter().find(|(j, _)| &j.trace == trace && j.spec.ftl == ftl).map_or("—".into(), |(_, r)| format!("{:.1}", r.report.mb_per_sec)));
        }
        table.push(row);
    }
    text.push_str("Ours (thesis). DFTL and FAST are beyond the thesis.\n\n");
    text.push_str(&markdown_table(&["trace", "PM_GCL", "PM_GCC", "SBM_GCL", "HSBM_GCL", "DFTL", "FAST"], &table));
    text.push_str(&logical_space_section(&main, runs));
    // Everything else of the main runs.
    text.push_str("\n## Every FTL on every trace\n\n");
    let header = [
        "trace",
        "FTL",
        "MB/s",
        "WAF",
        "erases",
        "map bytes",
        "map updates KB",
        "map entries",
        "log entries",
        "logs opened (KB)",
        "copied pages",
        "padded pages",
        "merges s/p/f",
        "write p50 µs",
        "write p99 µs",
    ];
    let detail: Vec<Vec<String>> = main
        .iter()
        .map(|(j, r)| {
            let r = &r.report;
            vec![
                j.trace.clone(),
                j.spec.ftl.clone(),
                format!("{:.1}", r.mb_per_sec),
                format!("{:.3}", r.waf),
                r.flash.blocks_erased.to_string(),
                r.map_table_bytes.to_string(),
                format!("{:.0}", r.map.map_update_bytes as f64 / 1024.0),
                r.map.map_entries_updated.to_string(),
                r.map.log_entries_updated.to_string(),
                format!("{} ({:.0})", r.map.logs_opened, r.map.log_open_bytes as f64 / 1024.0),
                r.map.pages_copied.to_string(),
                r.flash.pages_padded.to_string(),
                format!("{}/{}/{}", r.map.switch_merges, r.map.partial_merges, r.map.full_merges),
                format!("{:.0}", r.write_latency_us_p50),
                format!("{:.0}", r.write_latency_us_p99),
            ]
        })
        .collect();
    text.push_str(&markdown_table(&header, &detail));
    // §4.3 map sizes and update traffic.
    text.push_str("\n## Mapping table and update traffic (§4.3), thesis in parentheses\n\n");
    text.push_str(
        "Update KB are map and in-log entries rewritten, without the log-open charge (HSBM_GCL's 16 B log-table entry per log opened), \
         which the thesis does not say it counts; it is shown apart, to be added by a reader who wants it.\n\n",
    );
    let mut map_rows = Vec::new();
    for (k, ftl) in THESIS_FTLS.iter().enumerate() {
        let mut row = vec![ftl.to_string()];
        let bytes = main.iter().find(|(j, _)| j.spec.ftl == *ftl).map_or(0, |(_, r)| r.report.map_table_bytes);
        row.push(format!("{:.3} KiB ({:.3} KiB)", bytes as f64 / 1024.0, THESIS_MAP_BYTES[k] / 1024.0));
        for (trace, thesis) in THESIS_UPDATE_KB {
            let found = main.iter().find(|(j, _)| j.trace == trace && j.spec.ftl == *ftl);
            let ours = found.map_or("—".into(), |(_, r)| format!("{:.0}", r.report.map.map_update_bytes as f64 / 1024.0));
            row.push(format!("{ours} ({:.0})", thesis[k]));
            row.push(found.map_or("—".into(), |(_, r)| format!("{:.0}", r.report.map.log_open_bytes as f64 / 1024.0)));
        }
        map_rows.push(row);
    }
    text.push_str(&markdown_table(&["FTL", "map table", "update KB, LAMMPS", "log-open KB, LAMMPS", "update KB, MACDRP", "log-open KB, MACDRP"], &map_rows));

    // Over-time charts (Figs. 4.2, 4.4, 4.5, 4.6) and per-request throughput (Fig. 4.3).
    for trace in &traces {
        let pick: Vec<&&(&Job, OcssdRun)> = main.iter().filter(|(j, _)| &j.trace == trace).collect();
        let chart = |title: &str, y: &str, f: fn(&Sample) -> f64| {
            let series: Vec<Series> = pick.iter().map(|(j, r)| Series { name: j.spec.ftl.clone(), points: r.series.iter().map(|s| (s.written_mb, f(s))).collect() }).collect();
            line_chart(&format!("{title}, {trace}"), "MB written", y, &series, false)
        };
        let slug = trace.replace('.', "-");
        write_file(out, &format!("throughput-{slug}.svg"), chart("Average throughput", "MB/s", |s| s.mb_per_sec))?;
        write_file(out, &format!("map-updates-{slug}.svg"), chart("Mapping-update traffic", "KB", |s| s.map_update_kb))?;
        write_file(out, &format!("erases-{slug}.svg"), chart("Blocks erased", "blocks", |s| s.blocks_erased as f64))?;
        write_file(out, &format!("waf-{slug}.svg"), chart("Write amplification", "WAF", |s| s.waf))?;
        let boxes: Vec<(String, [f64; 5])> = pick
            .iter()
            .map(|(j, r)| {
                let mut v: Vec<f64> = r.request_mb_per_sec.iter().map(|&x| x as f64).collect();
                v.sort_by(f64::total_cmp);
                let q = |p: f64| v.get(((v.len().max(1) - 1) as f64 * p) as usize).copied().unwrap_or(0.0);
                (j.spec.ftl.clone(), [q(0.0), q(0.25), q(0.5), q(0.75), q(1.0)])
            })
            .collect();
        let top = boxes.iter().map(|(_, b)| b[4]).fold(1.0, f64::max);
        write_file(out, &format!("request-throughput-{slug}.svg"), zonekit_report::box_chart(&format!("Per-request throughput, {trace}"), "MB/s", top, &boxes))?;
    }
    // Wear maps (Fig. 4.7).
    for (j, r) in main.iter().filter(|(j, _)| THESIS_FTLS.contains(&j.spec.ftl.as_str()) && (j.trace == "lammps" || j.trace == "macdrp")) {
        let erase: Vec<Vec<f64>> = r.erase_map.iter().map(|row| row.iter().map(|&x| x as f64).collect()).collect();
        let pages: Vec<Vec<f64>> = r.page_write_map.iter().map(|row| row.iter().map(|&x| x as f64).collect()).collect();
        write_file(
            out,
            &format!("wear-erases-{}-{}.svg", j.trace, j.spec.ftl),
            heat_map(&format!("Erases per block, {} on {}", j.spec.ftl, j.trace), "block in LUN", "parallel unit", &erase),
        )?;
        write_file(out, &format!("wear-writes-{}-{}.svg", j.trace, j.spec.ftl), heat_map(&format!("Programs per page, {} on {}", j.spec.ftl, j.trace), "page", "block", &pages))?;
    }
    text.push_str("\n## Wear (Fig. 4.7): erases per block, min / mean / max\n\n");
    let wear: Vec<Vec<String>> = main
        .iter()
        .map(|(j, r)| {
            vec![j.trace.clone(), j.spec.ftl.clone(), r.report.erase_count_min.to_string(), format!("{:.1}", r.report.erase_count_mean), r.report.erase_count_max.to_string()]
        })
        .collect();
    text.push_str(&markdown_table(&["trace", "FTL", "min", "mean", "max"], &wear));

    // Beyond the thesis: the same runs with parallel issue.
    let parallel: Vec<&(&Job, OcssdRun)> = runs.iter().filter(|(j, _)| j.axis == Axis::Parallel).collect();
    if !parallel.is_empty() {
        text.push_str("\n## Parallel issue (beyond the thesis): every page of a request at once, 40 MB/s channels\n\n");
        let rows: Vec<Vec<String>> = parallel
            .iter()
            .map(|(j, r)| {
                let r = &r.report;
                let synchronous = main.iter().find(|(m, _)| m.trace == j.trace && m.spec.ftl == j.spec.ftl).map_or("—".into(), |(_, m)| format!("{:.1}", m.report.mb_per_sec));
                vec![
                    j.trace.clone(),
                    j.spec.ftl.clone(),
                    format!("{:.1}", r.mb_per_sec),
                    synchronous,
                    format!("{:.3}", r.waf),
                    format!("{:.1}", r.pus_per_write),
                    format!("{:.0}", r.write_latency_us_p50),
                    format!("{:.0}", r.write_latency_us_p99),
                ]
            })
            .collect();
        text.push_str(&markdown_table(&["trace", "FTL", "MB/s parallel", "MB/s synchronous", "WAF", "PUs per write", "write p50 µs", "write p99 µs"], &rows));
    }
    text.push_str(&sbm_no_free_section(runs));
    // Sensitivity (Figs. 4.8–4.11).
    for section in ["capacity", "pages-per-block", "superblock", "logs", "macdrp-split"] {
        let mut picked: Vec<&(&Job, OcssdRun)> = runs.iter().filter(|(j, _)| j.axis.section() == section).collect();
        // The default split share is the main table's MACDRP run.
        let default_split = (zonekit_trace::synth::hpc::MACDRP_SPLIT_SHARE * 100.0).round() as u32;
        let value_of = |j: &Job| if j.axis == Axis::Main { default_split } else { j.axis.value() };
        if section == "macdrp-split" {
            picked.extend(main.iter().copied().filter(|(j, _)| j.trace == "macdrp" && THESIS_FTLS.contains(&j.spec.ftl.as_str())));
            picked.sort_by_key(|(j, _)| (value_of(j), THESIS_FTLS.iter().position(|f| *f == j.spec.ftl)));
        }
        if picked.is_empty() {
            continue;
        }
        text.push_str(&format!("\n## Sensitivity: {section}\n\n"));
        let rows: Vec<Vec<String>> = picked
            .iter()
            .map(|(j, r)| {
                let r = &r.report;
                vec![
                    j.trace.clone(),
                    j.spec.ftl.clone(),
                    value_of(j).to_string(),
                    format!("{:.1}", r.mb_per_sec),
                    format!("{:.3}", r.waf),
                    r.flash.blocks_erased.to_string(),
                    format!("{:.0}", r.map.map_update_bytes as f64 / 1024.0),
                ]
            })
            .collect();
        text.push_str(&markdown_table(&["trace", "FTL", section, "MB/s", "WAF", "erases", "map updates KB"], &rows));
        for trace in ["lammps", "macdrp"] {
            for (metric, y, f) in [
                ("throughput", "MB/s", (|r: &SsdReport| r.mb_per_sec) as fn(&SsdReport) -> f64),
                ("waf", "WAF", |r| r.waf),
                ("erases", "blocks", |r| r.flash.blocks_erased as f64),
                ("map-updates", "KB", |r| r.map.map_update_bytes as f64 / 1024.0),
            ] {
                let mut series: Vec<Series> = Vec::new();
                for (j, r) in picked.iter().filter(|(j, _)| j.trace == trace) {
                    let point = (value_of(j) as f64, f(&r.report));
                    match series.iter_mut().find(|s| s.name == j.spec.ftl) {
                        Some(s) => s.points.push(point),
                        None => series.push(Series { name: j.spec.ftl.clone(), points: vec![point] }),
                    }
                }
                if series.is_empty() {
                    continue;
                }
                // Shares start at 0: no log axis.
                let x_log = section != "macdrp-split";
                write_file(out, &format!("sensitivity-{section}-{metric}-{trace}.svg"), line_chart(&format!("{metric} vs {section}, {trace}"), section, y, &series, x_log))?;
            }
        }
    }
    match &timing_fit {
        Ok(fit) => {
            write_file(out, "timing-fit.csv", csv(&fit::FIT_COLUMNS, &fit::fit_rows(fit)))?;
            text.push_str(&fit::summary_section(fit, exp.scale));
        }
        Err(e) => text.push_str(&format!("\n## Timing model fit (issue 32)\n\nNot computed: {e}.\n")),
    }
    write_file(out, "summary.md", text.clone())?;
    Ok(text)
}

/// Each FTL's native logical space beside the main table's common one, and the main runs
/// against the same runs at native spaces.
fn logical_space_section(main: &[&(&Job, OcssdRun)], runs: &[(&Job, OcssdRun)]) -> String {
    let mut text = String::from("\n## Logical space and spare\n\n");
    text.push_str(
        "The thesis states no spare, and each FTL picks its own logical space on the same flash. The main table runs every FTL at one \
         common logical space, the smallest native one among the FTLs in the table; spare = (physical − logical) / physical.\n\n",
    );
    let mut rows = Vec::new();
    let mut devices: Vec<OcGeometry> = Vec::new();
    for (j, r) in main {
        let r = &r.report;
        if !devices.contains(&r.geometry) {
            devices.push(r.geometry);
            let smallest = main.iter().filter(|(m, _)| m.spec.geometry == r.geometry).min_by_key(|(_, m)| m.report.native_logical_bytes);
            if let Some((m, s)) = smallest {
                text.push_str(&format!(
                    "- {} ({}): common logical space {:.1} MB, {}'s native space ({:.1} % spare).\n",
                    r.geometry,
                    m.trace,
                    s.report.logical_bytes as f64 / MB,
                    m.spec.ftl,
                    s.report.spare_percent
                ));
            }
        }
        let physical = r.geometry.capacity_bytes() as f64;
        rows.push(vec![
            j.trace.clone(),
            j.spec.ftl.clone(),
            format!("{:.1}", r.native_logical_bytes as f64 / MB),
            format!("{:.1}", 100.0 * (physical - r.native_logical_bytes as f64) / physical),
            format!("{:.1}", r.logical_bytes as f64 / MB),
            format!("{:.1}", r.spare_percent),
        ]);
    }
    text.push('\n');
    text.push_str(&markdown_table(&["trace", "FTL", "native logical MB", "native spare %", "common logical MB", "common spare %"], &rows));
    text.push_str("\n### Common against native logical space\n\n");
    let mut same = 0;
    let rows: Vec<Vec<String>> = main
        .iter()
        .map(|(j, r)| {
            let native = runs.iter().find(|(n, _)| n.axis == Axis::Native && n.trace == j.trace && n.spec.ftl == j.spec.ftl).map(|(_, n)| &n.report);
            let (c, n) = (&r.report, native);
            if n.is_some_and(|n| n.elapsed_ns == c.elapsed_ns && n.flash == c.flash && n.map == c.map) {
                same += 1;
            }
            let opt = |f: &dyn Fn(&SsdReport) -> String| n.map_or("—".into(), f);
            vec![
                j.trace.clone(),
                j.spec.ftl.clone(),
                format!("{:.1}", c.mb_per_sec),
                opt(&|n| format!("{:.1}", n.mb_per_sec)),
                format!("{:.3}", c.waf),
                opt(&|n| format!("{:.3}", n.waf)),
                c.flash.blocks_erased.to_string(),
                opt(&|n| n.flash.blocks_erased.to_string()),
            ]
        })
        .collect();
    text.push_str(&markdown_table(&["trace", "FTL", "MB/s common", "MB/s native", "WAF common", "WAF native", "erases common", "erases native"], &rows));
    text.push_str(&format!(
        "\n{same} of {} runs are identical at both spaces (same virtual time, flash and map counters): no FTL here pre-fills or reserves \
         its logical space, so logical pages a trace never writes are spare either way, and a trace that fits the common space never \
         writes above it. The cap changes the stated spare, not the effective one (flash − pages written).\n",
        main.len()
    ));
    text
}

/// SBM_GCL with no free superblock for a move: gc-first against erase-in-place (§3.2.3.3).
fn sbm_no_free_section(runs: &[(&Job, OcssdRun)]) -> String {
    let picked: Vec<&(&Job, OcssdRun)> = runs.iter().filter(|(j, _)| matches!(j.axis, Axis::SbmNoFree(_))).collect();
    if picked.is_empty() {
        return String::new();
    }
    let mut text = String::from("\n## SBM_GCL with no free superblock (§3.2.3.3): gc-first against erase-in-place\n\n");
    text.push_str(
        "SBM_GCL maps every superblock of the device (no spare), so a superblock that must move (an overwrite behind the write pointer) \
         finds no erased one once they are used up. erase-in-place then rewrites it where it is at once; gc-first first erases a \
         superblock with no live page (the garbage earlier moves left) and moves there, erasing in place only when every superblock \
         is mapped. On the thesis device the traces reach 358 (LAMMPS) and 93 (MACDRP) of 512 superblocks; the exact-fit devices hold \
         just the trace's range, so every superblock is mapped.\n\n",
    );
    let rows: Vec<Vec<String>> = picked
        .iter()
        .map(|(j, r)| {
            let r = &r.report;
            vec![
                j.trace.clone(),
                r.geometry.to_string(),
                j.axis.value().to_string(),
                j.spec.params.get("no_free").cloned().unwrap_or_default(),
                format!("{:.1}", r.mb_per_sec),
                format!("{:.3}", r.waf),
                r.flash.blocks_erased.to_string(),
                r.map.erase_in_place.to_string(),
                r.map.gc_victims.to_string(),
                format!("{} / {:.1} / {}", r.erase_count_min, r.erase_count_mean, r.erase_count_max),
            ]
        })
        .collect();
    text.push_str(&markdown_table(
        &["trace", "device", "superblocks beyond the range", "no_free", "MB/s", "WAF", "erases", "erase in place", "GC victims", "erases per block min / mean / max"],
        &rows,
    ));
    text.push_str(
        "\nAn erase in place costs what a move costs (read the kept pages, one erase, program them again) and so does gc-first's move \
         (its erase of the garbage superblock happens before instead of later), so throughput, WAF and erases agree under the \
         synchronous replay. What differs is where the erases land: erase-in-place keeps a hot logical superblock on one physical \
         superblock, so the blocks under the trace's hot range wear out while the rest are never erased (min 0), whereas gc-first \
         moves round the whole device. With no superblock beyond the trace's range, gc-first finds garbage only while part of the \
         range is still unmapped, and otherwise erases in place like the other strategy.\n",
    );
    text
}

/// Issue 32: the timing model fitted to the thesis' table 4.2 from the main rows.
fn fit_timing(runs: &[(&Job, OcssdRun)]) -> std::result::Result<TimingFit, FitError> {
    let (cells, missing) =
        fit::cells(|trace, ftl| runs.iter().find(|(j, _)| j.axis == Axis::Main && j.trace == trace && j.spec.ftl == ftl).map(|(_, r)| CommandCounts::of(&r.report)));
    fit::fit_table(cells, missing)
}

/// A row's MB/s under the fitted costs ([`fit::FITTED_MODEL`]), from its counts, after the fact. The
/// synchronous engine's time is this linear function of the counts (to ~30 ns of transfer per
/// page) and the FTLs' decisions do not depend on time, so it is what the engine would measure
/// with those costs. Parallel rows have none: their time depends on overlap, not only counts.
fn fitted_mb_per_sec(job: &Job, report: &SsdReport, fit: Option<&TimingFit>) -> String {
    match (job.spec.timing.costs(), fit.and_then(|f| f.model(fit::FITTED_MODEL))) {
        (Some(_), Some(b)) => format!("{:.1}", b.model.mb_per_sec(&CommandCounts::of(report), MB)),
        _ => String::new(),
    }
}

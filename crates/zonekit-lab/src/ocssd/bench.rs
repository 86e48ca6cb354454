//! Seed 002's experiment: host FTLs on an open-channel SSD, replaying HPC write traces
//! (chapter 4 of the thesis).
//!
//! [`run_ocssd`] replays one trace or workload through one FTL ([`OcssdSpec`]), request by
//! request, and samples the running counters as it goes (the thesis' Figs. 4.2, 4.4–4.6 plot
//! them against bytes written). [`crate::ocssd::experiment`] runs the chapter: the throughput table on
//! LAMMPS-like, MACDRP-like and one real trace, the wear maps, and the sensitivity to device
//! capacity, pages per block, superblock size and log count; it writes `results.csv`,
//! `series.csv`, `summary.md` and SVG charts.
//!
//! Real traces address far more space than the thesis' 512 MiB device. With `compact`, each
//! block-sized region the trace touches gets the next free region of the logical space, in
//! order of first touch, so offsets within a block (and so alignment) are kept; a request
//! crossing into a region that did not land next to its predecessor is issued in pieces.

use std::collections::HashMap;

use serde::Serialize;
use zonekit_base::policy::Params;
use zonekit_ocssd::{OcError, OcGeometry, Ssd, SsdReport, Timing, FTLS};
use zonekit_report::text_table;
use zonekit_trace::input::Input;
use zonekit_trace::record::{Op, Record};

use crate::harness::error::{LabError, Result};

pub(crate) const MB: f64 = 1e6;

/// The geometry of an FTL run from its dimensions, each checked against the flag that sets it
/// (`zonekit ocssd run`'s, which Python's `ocssd_run` shares): the limits of
/// [`OcGeometry::validate`], which stays behind them, but named.
pub fn geometry(channels: u32, luns: u32, blocks_per_lun: u32, pages_per_block: u32, page_kib: u32) -> Result<OcGeometry> {
    use zonekit_ocssd::geometry::{MAX_BLOCKS, MAX_PAGES, MAX_PAGE_BYTES, MAX_PUS, SECTOR_BYTES};
    let bad = |m: String| Err(LabError::Usage(m));
    for (flag, v) in [("--channels", channels), ("--luns", luns), ("--blocks-per-lun", blocks_per_lun), ("--pages-per-block", pages_per_block)] {
        if v == 0 {
            return bad(format!("{flag} 0: every dimension of the device must be at least 1"));
        }
    }
    if pages_per_block > u16::MAX as u32 {
        return bad(format!("--pages-per-block {pages_per_block}: at most {}", u16::MAX));
    }
    let (sector_kib, page_kib_max) = (SECTOR_BYTES / 1024, MAX_PAGE_BYTES / 1024);
    if page_kib == 0 || page_kib % sector_kib != 0 || page_kib > page_kib_max {
        return bad(format!("--page-kib {page_kib}: a page must be a positive multiple of {SECTOR_BYTES} bytes ({sector_kib} KiB), at most {page_kib_max} KiB"));
    }
    // Products in u64: no dimension can wrap.
    let pus = channels as u64 * luns as u64;
    if pus > MAX_PUS {
        return bad(format!("--channels {channels} --luns {luns}: {pus} parallel units; at most {MAX_PUS} parallel units"));
    }
    let blocks = pus * blocks_per_lun as u64;
    if blocks > MAX_BLOCKS {
        return bad(format!("--blocks-per-lun {blocks_per_lun}: {blocks} blocks on {pus} parallel units (--channels {channels} --luns {luns}); at most {MAX_BLOCKS} blocks"));
    }
    let pages = blocks * pages_per_block as u64;
    if pages > MAX_PAGES {
        return bad(format!("--pages-per-block {pages_per_block}: {pages} pages on {blocks} blocks; at most {MAX_PAGES} pages"));
    }
    Ok(OcGeometry { channels, luns_per_channel: luns, blocks_per_lun, pages_per_block, page_bytes: page_kib * 1024 })
}

/// One replay of a trace through one FTL.
#[derive(Clone, Debug)]
pub struct OcssdSpec {
    /// FTL name (`pm-gcl`, ...; `NAME:VALUE` sets a one-parameter FTL's parameter).
    pub ftl: String,
    pub params: Params,
    pub geometry: OcGeometry,
    pub input: Input,
    /// Pack the block-sized regions the trace touches densely (see the module doc).
    pub compact: bool,
    /// Take a sample of the running counters every this many bytes written.
    pub sample_every_bytes: u64,
    pub timing: Timing,
    /// Cap on the logical space the host may address, in bytes (`None`: the FTL's own, see
    /// [`Ssd::cap_logical_bytes`]); the trace's footprint is checked against the cap.
    pub logical_bytes_max: Option<u64>,
}

impl OcssdSpec {
    /// The `zonekit ocssd run` command that replays this spec, every setting spelt out; an
    /// error names what no flag gives (the running counters' sampling interval is not one:
    /// it changes the series, not the report).
    pub fn command(&self) -> std::result::Result<String, String> {
        use zonekit_trace::input::Source;
        let quote = zonekit_report::shell_word;
        let mut parts = vec!["zonekit ocssd run".to_string()];
        match &self.input.source {
            Source::Generated { workload, seed } => parts.push(format!("--workload {} --seed {seed}", quote(&workload.to_string()))),
            Source::Binary(path) | Source::Trace { path, format: None, lenient: false } => parts.push(quote(&path.display().to_string())),
            Source::Trace { .. } => return Err(format!("the input {} has a format or leniency of its own", self.input.describe())),
        }
        if self.input.filters.drops_blocks() {
            return Err(format!("the input {} is filtered", self.input.describe()));
        }
        parts.push(format!("--ftl {}", quote(&self.ftl)));
        parts.extend(self.params.iter().map(|(k, v)| format!("--param {}", quote(&format!("{k}={v}")))));
        let g = self.geometry;
        if g.page_bytes % 1024 != 0 {
            return Err(format!("a page of {} bytes is not whole KiB", g.page_bytes));
        }
        parts.push(format!(
            "--channels {} --luns {} --blocks-per-lun {} --pages-per-block {} --page-kib {}",
            g.channels,
            g.luns_per_channel,
            g.blocks_per_lun,
            g.pages_per_block,
            g.page_bytes / 1024
        ));
        parts.extend(self.compact.then(|| "--compact".to_string()));
        parts.push(format!("--timing {}", self.timing.name()));
        match self.logical_bytes_max {
            Some(bytes) if bytes % (1 << 20) == 0 => parts.push(format!("--logical-mib {}", bytes >> 20)),
            Some(bytes) if bytes % 1024 == 0 => parts.push(format!("--logical-kib {}", bytes >> 10)),
            Some(bytes) => return Err(format!("a logical space of {bytes} bytes is not whole KiB")),
            None => {}
        }
        Ok(parts.join(" "))
    }
}

/// The running counters after some bytes were written.
#[derive(Copy, Clone, Debug, Serialize, serde::Deserialize)]
pub struct Sample {
    pub written_mb: f64,
    /// User bytes moved so far per second of virtual time so far.
    pub mb_per_sec: f64,
    pub blocks_erased: u64,
    pub waf: f64,
    pub map_update_kb: f64,
}

#[derive(Serialize, serde::Deserialize)]
pub struct OcssdRun {
    pub report: SsdReport,
    pub series: Vec<Sample>,
    /// Erases per block: rows are PUs, columns blocks within the LUN.
    pub erase_map: Vec<Vec<u32>>,
    /// Programs per page: rows are blocks, columns pages.
    pub page_write_map: Vec<Vec<u32>>,
    /// MB/s of each request (bytes over its latency), for the per-request distribution.
    pub request_mb_per_sec: Vec<f32>,
}

pub(crate) fn engine_error(context: String) -> impl FnOnce(OcError) -> LabError {
    move |error| LabError::Ocssd { context, error: Box::new(error) }
}

/// Maps trace offsets into a dense space of block-sized regions.
struct Compactor {
    region_bytes: u64,
    regions: HashMap<(u32, u64), u64>,
}

impl Compactor {
    fn new(region_bytes: u64) -> Compactor {
        Compactor { region_bytes, regions: HashMap::new() }
    }

    /// The pieces of `r` in the packed space, as (offset, length), merging pieces that land
    /// next to each other.
    fn map(&mut self, r: &Record, out: &mut Vec<(u64, u64)>) {
        out.clear();
        let mut at = r.offset_bytes;
        let end = r.offset_bytes + r.len_bytes;
        while at < end {
            let region = at / self.region_bytes;
            let piece_end = ((region + 1) * self.region_bytes).min(end);
            let next = self.regions.len() as u64;
            let id = *self.regions.entry((r.volume, region)).or_insert(next);
            let offset = id * self.region_bytes + at % self.region_bytes;
            match out.last_mut() {
                Some((o, l)) if *o + *l == offset => *l += piece_end - at,
                _ => out.push((offset, piece_end - at)),
            }
            at = piece_end;
        }
    }

    fn footprint_bytes(&self) -> u64 {
        self.regions.len() as u64 * self.region_bytes
    }
}

/// Bytes of logical space the input's requests reach (after compaction if asked). A request
/// whose end overflows, or longer than `max_request_bytes` (no device could hold it), is
/// refused by its position, before any packing.
pub fn footprint_bytes(input: &Input, region_bytes: u64, compact: bool, max_request_bytes: u64) -> Result<u64> {
    let mut compactor = Compactor::new(region_bytes);
    let mut pieces = Vec::new();
    let mut end = 0;
    for (i, r) in input.requests().map_err(LabError::input(input))?.enumerate() {
        let r = r.map_err(LabError::input(input))?;
        if r.len_bytes == 0 {
            continue;
        }
        if r.offset_bytes.checked_add(r.len_bytes).is_none() || r.len_bytes > max_request_bytes {
            return Err(LabError::Usage(format!(
                "{}: request {} ({} bytes at offset {}) does not fit any {max_request_bytes}-byte device",
                input.describe(),
                i + 1,
                r.len_bytes,
                r.offset_bytes
            )));
        }
        if compact {
            compactor.map(&r, &mut pieces);
        } else {
            end = end.max(r.offset_bytes + r.len_bytes);
        }
    }
    Ok(if compact { compactor.footprint_bytes() } else { end })
}

/// Replays `spec.input` through `spec.ftl`; `progress` gets the bytes written so far.
pub fn run_ocssd(spec: &OcssdSpec, progress: &mut dyn FnMut(u64)) -> Result<OcssdRun> {
    let context = format!("{} on {}", spec.ftl, spec.input.describe());
    let ftl = zonekit_ocssd::ftl::find(&spec.ftl, &spec.params, spec.geometry).map_err(engine_error(context.clone()))?;
    let device = zonekit_device::MemDevice::new(spec.geometry.zoned(), spec.geometry.behavior(), zonekit_device::StorageMode::MetadataOnly)?;
    let mut ssd = Ssd::new(device, spec.geometry, ftl, spec.timing).map_err(engine_error(context.clone()))?;
    if let Some(bytes) = spec.logical_bytes_max {
        ssd.cap_logical_bytes(bytes).map_err(engine_error(context.clone()))?;
    }
    // Refuse a trace that does not fit before replaying any of it.
    let footprint = footprint_bytes(&spec.input, spec.geometry.block_bytes(), spec.compact, ssd.logical_bytes())?;
    if footprint > ssd.logical_bytes() {
        let detail = format!(
            "the trace reaches {:.1} MB{} but {} on {} exposes {:.1} MB{}; give a larger device (more blocks per LUN){}",
            footprint as f64 / MB,
            if spec.compact { " of packed regions" } else { "" },
            spec.ftl,
            spec.geometry,
            ssd.logical_bytes() as f64 / MB,
            if spec.logical_bytes_max.is_some() { " (capped)" } else { "" },
            if spec.logical_bytes_max.is_some() {
                ", a larger logical space"
            } else if spec.compact {
                ""
            } else {
                " or pack the trace's regions (--compact)"
            }
        );
        // Too small a cap is the cap's fault, refused as the FTL refuses one it cannot honour.
        return Err(match spec.logical_bytes_max {
            Some(cap) => engine_error(context)(OcError::LogicalSpace { ftl: zonekit_ocssd::ftl::Ftl::name(ssd.ftl()), requested_bytes: cap, detail }),
            None => LabError::Usage(format!("{context}: {detail}")),
        });
    }
    let mut compactor = Compactor::new(spec.geometry.block_bytes());
    let mut pieces = Vec::new();
    let mut series = Vec::new();
    let mut request_mb_per_sec = Vec::new();
    let mut next_sample = spec.sample_every_bytes.max(1);
    let sample = |ssd: &Ssd<zonekit_device::MemDevice>| {
        let r = ssd.report();
        Sample {
            written_mb: r.user_bytes_written as f64 / MB,
            mb_per_sec: r.mb_per_sec,
            blocks_erased: r.flash.blocks_erased,
            waf: r.waf,
            map_update_kb: r.map.map_update_bytes as f64 / 1024.0,
        }
    };
    for (index, r) in spec.input.requests().map_err(LabError::input(&spec.input))?.enumerate() {
        let r = r.map_err(LabError::input(&spec.input))?;
        if r.len_bytes == 0 {
            continue;
        }
        if spec.compact {
            compactor.map(&r, &mut pieces);
        } else {
            pieces.clear();
            pieces.push((r.offset_bytes, r.len_bytes));
        }
        for &(offset, len) in &pieces {
            let at = || format!("{context}, request {} (offset {offset}, {len} bytes)", index + 1);
            let latency_ns = match r.op {
                Op::Write => ssd.write_zeros(offset, len).map_err(|e| engine_error(at())(e))?,
                Op::Read => ssd.read_discard(offset, len).map_err(|e| engine_error(at())(e))?,
            };
            request_mb_per_sec.push((len as f64 / MB / (latency_ns.max(1) as f64 / 1e9)) as f32);
        }
        let written = ssd.report_written_bytes();
        if written >= next_sample {
            series.push(sample(&ssd));
            progress(written);
            next_sample = (written / spec.sample_every_bytes.max(1) + 1) * spec.sample_every_bytes.max(1);
        }
    }
    ssd.check_invariants().map_err(engine_error(context))?;
    series.push(sample(&ssd));
    let flash = ssd.flash();
    Ok(OcssdRun { report: ssd.report(), series, erase_map: flash.erase_map(), page_write_map: flash.page_write_map(), request_mb_per_sec })
}

impl OcssdRun {
    /// Why some of this run's figures mean less than they seem, each naming what to change: no
    /// write request (latency, throughput and WAF over zero writes), or writes that never made
    /// the FTL erase a block (its GC, the point of comparing FTLs, never ran).
    pub fn warnings(&self) -> Vec<String> {
        let r = &self.report;
        let mut w = Vec::new();
        if r.write_requests == 0 {
            w.push("no write request: the write latency, throughput and WAF are over zero writes; replay a trace with writes".to_string());
        } else if r.flash.blocks_erased == 0 {
            w.push(format!(
                "no block was erased: {:.1} MB written into {:.1} MB of logical space never made the FTL collect garbage, so WAF {:.3} and the throughput say nothing about its GC; replay more data than the logical space or give a smaller one (--logical-mib, --blocks-per-lun)",
                r.user_bytes_written as f64 / MB,
                r.logical_bytes as f64 / MB,
                r.waf
            ));
        }
        w
    }
}

/// One run's report as a text table (for `zonekit ocssd run`).
pub fn report_table(run: &OcssdRun) -> String {
    let r = &run.report;
    let rows = vec![
        vec!["FTL".into(), r.ftl.to_string()],
        vec!["device".into(), r.geometry.to_string()],
        vec![
            "logical space".into(),
            format!("{:.1} MB ({:.1} % spare; the FTL exposes {:.1} MB)", r.logical_bytes as f64 / MB, r.spare_percent, r.native_logical_bytes as f64 / MB),
        ],
        vec![
            "written / read".into(),
            format!("{:.1} / {:.1} MB in {} / {} requests", r.user_bytes_written as f64 / MB, r.user_bytes_read as f64 / MB, r.write_requests, r.read_requests),
        ],
        vec!["throughput".into(), format!("{:.1} MB/s over {:.3} s of device time", r.mb_per_sec, r.elapsed_ns as f64 / 1e9)],
        vec!["write latency".into(), format!("p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs", r.write_latency_us_p50, r.write_latency_us_p99, r.write_latency_us_max)],
        vec!["WAF".into(), format!("{:.3} ({} pages copied, {} padded, {} read-modify-write)", r.waf, r.map.pages_copied, r.flash.pages_padded, r.rmw_pages)],
        vec!["erases".into(), format!("{} blocks (per block min {} / mean {:.1} / max {})", r.flash.blocks_erased, r.erase_count_min, r.erase_count_mean, r.erase_count_max)],
        vec!["parallel units".into(), format!("{:.1} programmed per write request", r.pus_per_write)],
        vec!["mapping table".into(), format!("{} bytes", r.map_table_bytes)],
        vec![
            "mapping updates".into(),
            format!("{:.0} KB: {} map entries, {} in-log entries", r.map.map_update_bytes as f64 / 1024.0, r.map.map_entries_updated, r.map.log_entries_updated),
        ],
        vec!["logs opened".into(), format!("{}, {:.0} KB of log-table entries", r.map.logs_opened, r.map.log_open_bytes as f64 / 1024.0)],
        vec!["merges".into(), format!("{} switch, {} partial, {} full, {} erase-in-place", r.map.switch_merges, r.map.partial_merges, r.map.full_merges, r.map.erase_in_place)],
        vec![
            "map cache".into(),
            format!("{} hits, {} misses, {} translation reads, {} writes", r.map.map_cache_hits, r.map.map_cache_misses, r.map.translation_reads, r.map.translation_writes),
        ],
    ];
    text_table(&["", ""], &rows)
}

/// Names of every FTL, for help and validation.
pub fn ftl_names() -> Vec<&'static str> {
    FTLS.iter().map(|f| f.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ocssd::experiment::*;
    use zonekit_trace::synth::{HpcPattern, Workload};

    #[test]
    fn compaction_keeps_offsets_within_a_region_and_merges_neighbours() {
        let mut c = Compactor::new(1 << 20);
        let mut out = Vec::new();
        let r = |offset_bytes, len_bytes| Record { time_us: 0, volume: 0, offset_bytes, len_bytes, op: Op::Write };
        c.map(&r(50 << 20 | 4096, 8192), &mut out);
        assert_eq!(out, vec![(4096, 8192)]);
        // Crosses into region 51, which lands next to region 50's slot: one piece.
        c.map(&r((51 << 20) - 4096, 8192), &mut out);
        assert_eq!(out, vec![((1 << 20) - 4096, 8192)]);
        // Region 7 is new (slot 2); region 8 follows it.
        c.map(&r((8 << 20) - 4096, 8192), &mut out);
        assert_eq!(out, vec![((3 << 20) - 4096, 8192)]);
        // Region 50 again, then region 9 (new, slot 4): two pieces.
        c.map(&r((51 << 20) - 4096, 4096), &mut out);
        assert_eq!(out, vec![((1 << 20) - 4096, 4096)]);
        assert_eq!(c.footprint_bytes(), 4 << 20);
    }

    #[test]
    fn a_small_replay_reports_consistent_counters() {
        let input = Input::generated(Workload::Hpc { pattern: HpcPattern::Macdrp, scale: 0.02, split: None }, 1);
        let geometry = OcGeometry::THESIS;
        for info in FTLS {
            let spec = OcssdSpec {
                ftl: info.name.into(),
                params: Params::new(),
                geometry,
                input: input.clone(),
                compact: false,
                sample_every_bytes: 16 << 20,
                timing: Timing::Synchronous,
                logical_bytes_max: None,
            };
            let run = run_ocssd(&spec, &mut |_| {}).unwrap();
            let r = &run.report;
            assert!(r.user_bytes_written >= 160_000_000, "{}: {}", info.name, r.user_bytes_written);
            assert!(r.waf >= 1.0 && r.mb_per_sec > 0.0 && r.mb_per_sec < 330.0, "{}: WAF {} at {} MB/s", info.name, r.waf, r.mb_per_sec);
            assert!(run.series.len() >= 9 && run.series.windows(2).all(|w| w[0].written_mb <= w[1].written_mb), "{}", info.name);
            assert_eq!(run.erase_map.iter().flatten().map(|&e| e as u64).sum::<u64>(), r.flash.blocks_erased);
            assert_eq!(run.page_write_map.iter().flatten().map(|&e| e as u64).sum::<u64>(), r.flash.pages_programmed);
        }
    }

    #[test]
    fn a_trace_larger_than_the_device_is_refused_by_name() {
        let input = Input::generated(Workload::Hpc { pattern: HpcPattern::Lammps, scale: 0.01, split: None }, 1);
        let geometry = OcGeometry { blocks_per_lun: 2, ..OcGeometry::THESIS };
        let spec = OcssdSpec {
            ftl: "pm-gcl".into(),
            params: Params::new(),
            geometry,
            input,
            compact: false,
            sample_every_bytes: 1 << 20,
            timing: Timing::Synchronous,
            logical_bytes_max: None,
        };
        let err = run_ocssd(&spec, &mut |_| {}).err().expect("70 MB do not fit 32 MiB");
        assert!(err.is_usage());
        let err = err.to_string();
        assert!(err.contains("pm-gcl on lammps") && err.contains("exposes 33.6 MB"), "{err}");
    }

    fn macdrp_spec(ftl: &str, params: &[(&str, &str)], geometry: OcGeometry, scale: f64) -> OcssdSpec {
        OcssdSpec {
            ftl: ftl.into(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            geometry,
            input: Input::generated(Workload::Hpc { pattern: HpcPattern::Macdrp, scale, split: None }, 1),
            compact: false,
            sample_every_bytes: 64 << 20,
            timing: Timing::Synchronous,
            logical_bytes_max: None,
        }
    }

    #[test]
    fn a_logical_cap_is_checked_against_the_ftl_and_the_trace() {
        let thesis = OcGeometry::THESIS;
        let (smallest, common) = common_logical_bytes(thesis).unwrap();
        assert_eq!((smallest, common), ("dftl", 13_793 * 32 * 1024));
        // Above what PM_GCC exposes (448 MiB): refused as a usage error naming it.
        let spec = OcssdSpec { logical_bytes_max: Some(480 << 20), ..macdrp_spec("pm-gcc", &[], thesis, 0.01) };
        let err = run_ocssd(&spec, &mut |_| {}).err().expect("above pm-gcc's logical space");
        assert!(err.is_usage() && err.to_string().contains("pm-gcc exposes at most 469762048 bytes"), "{err}");
        // Below the trace's 93 MiB range: refused before replaying, naming the cap.
        let spec = OcssdSpec { logical_bytes_max: Some(64 << 20), ..macdrp_spec("pm-gcl", &[], thesis, 0.01) };
        let err = run_ocssd(&spec, &mut |_| {}).err().expect("the range is above the cap").to_string();
        assert!(err.contains("exposes 67.1 MB (capped)"), "{err}");
        let spec = OcssdSpec { logical_bytes_max: Some(common), ..macdrp_spec("sbm-gcl", &[], thesis, 0.01) };
        let r = run_ocssd(&spec, &mut |_| {}).unwrap().report;
        assert_eq!((r.logical_bytes, r.native_logical_bytes), (common, thesis.capacity_bytes()));
        assert!((r.spare_percent - 15.8).abs() < 0.1, "{}", r.spare_percent);
    }

    #[test]
    fn sbm_no_free_strategies_differ_where_the_experiment_runs_them() {
        assert_eq!(exact_fit(88, OcGeometry::THESIS), OcGeometry { channels: 8, luns_per_channel: 1, blocks_per_lun: 11, ..OcGeometry::THESIS });
        assert_eq!(exact_fit(93, OcGeometry::THESIS), OcGeometry { channels: 3, luns_per_channel: 1, blocks_per_lun: 31, ..OcGeometry::THESIS });
        assert_eq!(exact_fit(358, OcGeometry::THESIS).blocks(), 358);
        let run = |no_free: &str, geometry: OcGeometry| run_ocssd(&macdrp_spec("sbm-gcl", &[("no_free", no_free)], geometry, 0.1), &mut |_| {}).unwrap().report;
        // The thesis device: 419 superblocks beyond MACDRP's 93 MiB range.
        let (in_place, gc_first) = (run("erase-in-place", OcGeometry::THESIS), run("gc-first", OcGeometry::THESIS));
        assert!(in_place.map.erase_in_place > 1000, "{:?}", in_place.map);
        assert_eq!(gc_first.map.erase_in_place, 0);
        assert_eq!(in_place.flash.blocks_erased, gc_first.flash.blocks_erased);
        assert!(in_place.erase_count_max > 2 * gc_first.erase_count_max, "{} vs {}", in_place.erase_count_max, gc_first.erase_count_max);
        // No superblock beyond the range: gc-first finds no garbage and erases in place too.
        let exact = run("gc-first", exact_fit(93, OcGeometry::THESIS));
        assert!(exact.map.erase_in_place > 1000, "{:?}", exact.map);
    }
}

//! `zonekit device fit`: the `zn540` preset's timing figures derived from the drive's published
//! measurements (`role = fit` rows only; the validation rows are never read here).
//!
//! Most figures are closed forms of one or a few rows (a saturated throughput is one over an
//! engine's time; a latency at QD1 is the sum of the stages a command passes). Others need the
//! model itself, each found by bisection on one measured figure that rises or falls with it:
//! the die's read time (4 KiB reads at QD256), the engine's hand-off (4 KiB writes to two zones
//! at QD1), and the seal of an open zone (finish of a zone one block short of full); the slow
//! stripes by a grid search on the tails of the deep single-zone appends. Figures the data
//! cannot fix are assumed and said so ([`Figure::provenance`]).

use std::collections::BTreeMap;

use zonekit_device::bench::{self, BenchSpec, Job, Rw};
use zonekit_device::preset::{self, Provenance};
use zonekit_device::timing::{ControllerConfig, FlashConfig};
use zonekit_device::Geometry;

use crate::device::data::{select, Measurement};
use crate::device::fidelity::{io_job, spec};
use crate::LabError;

/// One fitted (or assumed) figure and how it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub name: &'static str,
    pub value: String,
    pub provenance: Provenance,
    pub how: String,
}

/// The fit: the flash config, the host's time between fio's I/Os (for replaying fio's runs,
/// not part of the device) and every figure's derivation.
#[derive(Clone, Debug)]
pub struct Fit {
    pub flash: FlashConfig,
    pub fio_think_ns: u64,
    pub figures: Vec<Figure>,
}

const KIB: u64 = 1024;
/// What the data cannot fix (see each figure's reason in [`fit`]).
const PAGE_BYTES: u32 = 32 * KIB as u32;
const CHANNELS: u32 = 8;
const DIES_PER_CHANNEL: u32 = 2;
const DISPATCH_NS: u64 = 1000;
const OVERLAP_BYTES: u64 = 8 * KIB;
/// The shortest append that costs the engine no more (assumed: the data has 4 and 8 KiB).
const SHORT_APPEND_BYTES: u64 = 8 * KIB;
const MIB: u64 = 1024 * KIB;
/// The slow stripes' grid: one stripe in this many, of this mean extra time (µs).
/// The slow pages a drive's 4 KiB reads at QD1 show (`ControllerConfig::slow_page_one_in`,
/// `slow_page_read_ns`): their p99 less their p50 is the longer sense, one page in three
/// (assumed: TLC with 2-3-2 coding has one page of each wordline's three needing a third read
/// level; the WD drives' QD1 reads are about a third slow, their mean says).
pub(crate) fn slow_pages(r_p50: f64, r_p99: f64) -> (u32, u64) {
    (3, round((r_p99 - r_p50).max(0.0), 10))
}
const SLOW_ONE_IN: [u32; 8] = [10, 15, 20, 30, 40, 50, 70, 100];
const SLOW_US: [u64; 6] = [300, 400, 500, 700, 1000, 1400];

/// The slow stripes' grid search: of `start` (error, one in, extra ns) and every point of the
/// grid (one stripe in `one_in`, `slow_us` more on average), the one `error` finds least.
pub(crate) fn slow_stripe_search(one_in: &[u32], slow_us: &[u64], start: (f64, u32, u64), error: impl Fn(u32, u64) -> f64) -> (f64, u32, u64) {
    let mut best = start;
    for &n in one_in {
        for &us in slow_us {
            let e = error(n, us * 1000);
            if e < best.0 {
                best = (e, n, us * 1000);
            }
        }
    }
    best
}

/// Whether a drive's host link carries one write's bytes at a time, from its fit runs of
/// writes with others in flight (block size, commands in flight, p50 each): on such a link
/// a write waits for the bytes in flight ahead of it, so no run of 16 KiB or more has its p50
/// below the time they take at `link_bytes_per_sec`. Returns that and the lowest ratio.
pub(crate) fn serial_link(runs: impl Iterator<Item = (u64, u32, f64)>, link_bytes_per_sec: u64) -> (bool, f64) {
    let lowest = runs.filter(|r| r.0 >= 16 * KIB && r.1 >= 2).map(|(bs, n, p50)| p50 * link_bytes_per_sec as f64 / (bs as f64 * n as f64 * 1e9)).fold(f64::INFINITY, f64::min);
    (lowest.is_finite() && lowest >= 1.0, lowest)
}

/// The host link's figure and where it comes from: its rate, from `slope` (how the fit found
/// it), and whether it carries one write at a time, from the lowest ratio [`serial_link`] found.
pub(crate) fn link_figure(bytes_per_sec: u64, serial: bool, lowest: f64, slope: &str) -> (String, String) {
    let kind = if serial { "one write at a time" } else { "writes overlap" };
    (
        format!("{:.2} GB/s, {kind}", bytes_per_sec as f64 / 1e9),
        format!("{slope}; {kind}: of the runs of 16 KiB or more with others in flight the lowest p50 is {lowest:.2} of the time their bytes take over it"),
    )
}

/// The median of `v` (the mean of the middle two when even); an error when the fit found no row.
pub(crate) fn median(mut v: Vec<f64>) -> Result<f64, LabError> {
    if v.is_empty() {
        return Err(LabError::Usage("the fit needs rows the data does not have".into()));
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Ok(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

/// The one fit row of `experiment`/`metric` matching `keep`.
fn one(rows: &[Measurement], experiment: &str, metric: &str, keep: impl Fn(&Measurement) -> bool + 'static) -> Result<f64, LabError> {
    let v: Vec<f64> = select(rows, experiment, metric, move |r| r.is_fit() && keep(r)).map(|r| r.value).collect();
    match v.len() {
        0 => Err(LabError::Usage(format!("the fit needs the {experiment} {metric} row, which the data does not have"))),
        _ => median(v),
    }
}

fn quick(job: Job) -> BenchSpec {
    BenchSpec { job, ops: 20_000, ramp_ops: 2_000, ..BenchSpec::default() }
}

fn run(g: &Geometry, flash: &FlashConfig, spec: &BenchSpec) -> bench::JobStats {
    bench::run(g, flash, spec).expect("the fit's jobs are valid").job
}

/// Bisection of `f` (monotone in x) for `f(x) = target` over `[lo, hi]`, to 1 ns.
fn solve(mut lo: u64, mut hi: u64, target: f64, increasing: bool, mut f: impl FnMut(u64) -> f64) -> u64 {
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if (f(mid) < target) == increasing {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Rounds to `unit`.
fn round(x: f64, unit: u64) -> u64 {
    ((x / unit as f64).round().max(0.0) as u64) * unit
}

/// The host: fio's time between a completion and its next submission, from the ZN540's 4 KiB
/// writes at QD1 (one over their IOPS less their mean latency). A figure of fio over SPDK on
/// the characterisation's host, which the conventional drives' comparison takes too.
pub fn fio_think_ns(rows: &[Measurement]) -> Result<u64, LabError> {
    let qd1_4k = |r: &Measurement| r.engine == "fio-spdk" && r.bs_bytes == 4096 && r.zones == 1 && r.qd == 1;
    let w_lat = one(rows, "write", "lat_ns_mean", qd1_4k)?;
    let w_iops = one(rows, "write", "iops", qd1_4k)?;
    Ok(round(1e9 / w_iops - w_lat, 10))
}

/// Fits the ZN540 preset's figures to the `fit` rows of `rows`.
pub fn fit(rows: &[Measurement]) -> Result<Fit, LabError> {
    let g = preset::find("zn540").expect("the zn540 preset exists").geometry;
    let fio = |r: &Measurement| r.engine == "fio-spdk";
    let harness = |r: &Measurement| r.engine == "spdk-harness";
    let mut figures = Vec::new();
    let mut note = |name: &'static str, value: String, provenance: Provenance, how: String| figures.push(Figure { name, value, provenance, how });

    let fio_think_ns = fio_think_ns(rows)?;
    let w_lat = one(rows, "write", "lat_ns_mean", move |r| fio(r) && r.bs_bytes == 4096 && r.zones == 1 && r.qd == 1)?;

    // The flash: its write bandwidth is the drain's (every write or append run that is
    // bandwidth-bound: 8 KiB and up at QD ≥ 4 or over ≥ 4 zones, 64 KiB and up at QD1).
    let bound = |r: &Measurement| r.is_fit() && fio(r) && r.bs_bytes >= 8192 && (r.qd >= 4 || r.zones >= 4 || r.bs_bytes >= 65536);
    let bw: Vec<f64> = rows.iter().filter(|r| (r.experiment == "write" || r.experiment == "append") && r.metric == "bw_bytes_per_s" && bound(r)).map(|r| r.value).collect();
    let write_bw = median(bw.clone())?;
    let dies = CHANNELS * DIES_PER_CHANNEL;
    let stripe = PAGE_BYTES as u64 * dies as u64;
    let program_ns = round(stripe as f64 / write_bw * 1e9, 100);
    let read_bw = select(rows, "randread", "bw_bytes_per_s", move |r| r.is_fit() && fio(r)).map(|r| r.value).fold(0.0, f64::max);
    let channel_bytes_per_sec = round(read_bw / CHANNELS as f64, 1_000_000);

    let mut ctl = ControllerConfig {
        dispatch_ns: DISPATCH_NS,
        host_overlap_bytes: OVERLAP_BYTES,
        write_buffer_bytes: (g.open_zones_max.unwrap_or(14) as u64 + 2) * stripe,
        stripe_dies: dies,
        seed: 48,
        ..ControllerConfig::NONE
    };
    let mut flash = FlashConfig {
        channels: CHANNELS,
        dies_per_channel: DIES_PER_CHANNEL,
        page_size_bytes: PAGE_BYTES,
        pages_per_block: 1536,
        read_ns: 0,
        program_ns,
        erase_ns: 3_500_000,
        channel_bytes_per_sec,
        dies_per_zone: dies,
        controller: ctl,
    };

    // Reads: a 4 KiB read at QD1 is dispatch + sense + channel transfer + completion; at
    // QD256 the dies saturate, so the sense time is what makes QD256's throughput.
    let r_p50 = one(rows, "randread", "clat_ns_p50", move |r| fio(r) && r.bs_bytes == 4096 && r.qd == 1 && r.zones == 1)?;
    // QD1's reads take one of two times (fio's percentiles: 67-69 µs up to the 60th, 80-82 µs
    // from the 70th), one page in three the longer: the slow pages' extra sense is QD1's p99
    // less its p50, the dies' mean sense (below) counts them.
    let r_p99 = one(rows, "randread", "clat_ns_p99", move |r| fio(r) && r.bs_bytes == 4096 && r.qd == 1 && r.zones == 1)?;
    (ctl.slow_page_one_in, ctl.slow_page_read_ns) = slow_pages(r_p50, r_p99);
    flash.controller = ctl;
    let r_peak = one(rows, "randread", "iops", move |r| fio(r) && r.bs_bytes == 4096 && r.qd == 256 && r.zones == 1)?;
    let transfer_4k = 4096 * 1_000_000_000 / channel_bytes_per_sec;
    let read_job = |qd: u32| quick(Job { rw: Rw::RandRead, bs_bytes: 4096, qd, think_ns: fio_think_ns, ..Job::default() });
    let read_ns = solve(1_000, 80_000, r_peak, false, |t_r| {
        let mut f = flash;
        f.read_ns = t_r;
        f.controller.read_done_ns = (r_p50 as u64).saturating_sub(DISPATCH_NS + t_r + transfer_4k);
        run(&g, &f, &read_job(256)).iops
    });
    flash.read_ns = round(read_ns as f64, 100);
    ctl.read_done_ns = round(r_p50 - (DISPATCH_NS + flash.read_ns + transfer_4k) as f64, 10);

    // Writes: bytes past the first 8 KiB cross the host link (QD1 latency against block size,
    // 16 KiB and up, least squares); the engine's time is one over 4 KiB writes' plateau over
    // 8-14 zones; QD1's p99 above its median is the jitter's exponential tail (ln 50 means).
    let pts: Vec<(f64, f64)> =
        select(rows, "write", "clat_ns_p50", move |r| r.is_fit() && fio(r) && r.zones == 1 && r.qd == 1 && r.bs_bytes >= 16384).map(|r| (r.bs_bytes as f64, r.value)).collect();
    let n = pts.len() as f64;
    let (sx, sy) = (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
    let slope = pts.iter().map(|p| (p.0 - sx) * (p.1 - sy)).sum::<f64>() / pts.iter().map(|p| (p.0 - sx).powi(2)).sum::<f64>();
    ctl.host_bytes_per_sec = round(1e9 / slope, 10_000_000);
    let in_flight = rows
        .iter()
        .filter(|r| r.is_fit() && fio(r) && (r.experiment == "write" || r.experiment == "append") && r.metric == "clat_ns_p50")
        .map(|r| (r.bs_bytes, r.qd * r.zones.max(1), r.value));
    let (serial, serial_lowest) = serial_link(in_flight, ctl.host_bytes_per_sec);
    ctl.host_link_serial = serial;
    let h_p50 = one(rows, "write", "lat_ns_p50", move |r| harness(r) && r.source_path.contains("explicit_versus"))?;
    let h_p99 = one(rows, "write", "lat_ns_p99", move |r| harness(r) && r.source_path.contains("explicit_versus"))?;
    ctl.jitter_ns = round((h_p99 - h_p50) / (50f64).ln(), 10);
    let plateau = median(select(rows, "write", "iops", move |r| r.is_fit() && fio(r) && r.bs_bytes == 4096 && r.zones >= 8).map(|r| r.value).collect())?;
    let write_engine = 1e9 / plateau;
    let a_plateau = median(select(rows, "append", "iops", move |r| r.is_fit() && fio(r) && r.bs_bytes == 4096 && r.zones == 1 && r.qd >= 4).map(|r| r.value).collect())?;
    let append_engine = 1e9 / a_plateau;
    let a_lat = one(rows, "append", "lat_ns_mean", move |r| fio(r) && r.bs_bytes == 4096 && r.zones == 1 && r.qd == 1)?;
    // A 4 KiB append costs more than an 8 KiB one (the latter within the host overlap, so
    // nothing else differs at QD1); 4 KiB appends' plateau then holds the longer time.
    let a_lat_8k = one(rows, "append", "lat_ns_mean", move |r| fio(r) && r.bs_bytes == SHORT_APPEND_BYTES && r.zones == 1 && r.qd == 1)?;
    ctl.short_append_bytes = SHORT_APPEND_BYTES;
    ctl.short_append_ns = round((a_lat - a_lat_8k).max(0.0), 10);
    let two_zones = one(rows, "write", "iops", move |r| fio(r) && r.bs_bytes == 4096 && r.zones == 2 && r.qd == 1)?;
    // A 4 KiB append at QD1 is dispatch, engine, short append and spread, then this.
    let append_done_ns = |c: &ControllerConfig| (a_lat - (DISPATCH_NS + c.append_ns + c.short_append_ns + c.jitter_ns) as f64).max(0.0) as u64;
    // Hand-off, write and append times together: the engines' totals are fixed, the QD1
    // latencies fix the completion times, and the hand-off is what two zones at QD1 lose.
    let with_handoff = |handoff: u64, c: &ControllerConfig| {
        let mut c = *c;
        c.handoff_ns = handoff;
        c.write_ns = (write_engine - (handoff + c.jitter_ns) as f64).max(0.0) as u64;
        c.append_ns = (append_engine - (handoff + c.jitter_ns + c.short_append_ns) as f64).max(0.0) as u64;
        c.write_done_ns = (w_lat - (DISPATCH_NS + c.write_ns + c.jitter_ns) as f64).max(0.0) as u64;
        c.append_done_ns = append_done_ns(&c);
        c
    };
    let handoff = solve(0, write_engine as u64, two_zones, false, |h| {
        let mut f = flash;
        f.controller = with_handoff(h, &ctl);
        run(&g, &f, &quick(Job { rw: Rw::Write, zones: 2, think_ns: fio_think_ns, ..Job::default() })).iops
    });
    ctl = with_handoff(round(handoff as f64, 10), &ctl);
    // 8 KiB appends pass the engine faster than 4 KiB ones by more than a lone append's
    // latency says: at QD4 their p50 (bursts between the flash's stalls) is well under four
    // 4 KiB appends' engine times. The append engine is what makes that p50 (bisection on the
    // model); a short append holds the engine the rest of its plateau's time after its
    // completion, and a lone append's latency keeps the QD1 means.
    let a8_p50 = one(rows, "append", "clat_ns_p50", move |r| r.is_fit() && fio(r) && r.bs_bytes == SHORT_APPEND_BYTES && r.zones == 1 && r.qd == 4)?;
    let with_append = |append_ns: u64, c: &ControllerConfig| {
        let mut c = *c;
        c.short_append_after_ns = c.append_ns.saturating_sub(append_ns);
        c.append_ns = append_ns.min(c.append_ns);
        c.append_done_ns = append_done_ns(&c);
        c
    };
    let append_8k = |append_ns: u64| {
        let mut f = flash;
        f.controller = with_append(append_ns, &ctl);
        run(&g, &f, &spec(io_job(Rw::Append, SHORT_APPEND_BYTES, 4, 1, fio_think_ns), None)).lat_ns_p50 as f64
    };
    let append_ns = solve(0, ctl.append_ns, a8_p50, true, append_8k);
    ctl = with_append(round(append_ns as f64, 10), &ctl);
    for v in [&mut ctl.write_ns, &mut ctl.append_ns, &mut ctl.short_append_after_ns, &mut ctl.write_done_ns, &mut ctl.append_done_ns] {
        *v = round(*v as f64, 10);
    }

    // Zone management.
    let first_w = one(rows, "first_write_implicit_open", "lat_ns_p50", |_| true)?;
    let first_a = one(rows, "first_append_implicit_open", "lat_ns_p50", |_| true)?;
    let steady_a = one(rows, "append", "lat_ns_p50", move |r| harness(r) && r.source_path.contains("explicit_versus"))?;
    ctl.implicit_open_ns = round(((first_w - h_p50) + (first_a - steady_a)) / 2.0, 10);
    ctl.open_ns = round(median(select(rows, "open", "lat_ns_p50", |r| r.is_fit()).map(|r| r.value).collect())? - DISPATCH_NS as f64, 10);
    ctl.close_ns = round(median(select(rows, "close", "lat_ns_p50", |r| r.is_fit()).map(|r| r.value).collect())? - DISPATCH_NS as f64, 10);
    ctl.finish_empty_ns = round(one(rows, "finish", "lat_ns_p50", |r| r.fill_lbas == Some(0))? - DISPATCH_NS as f64, 10);
    // A reset's spread: its p99 over its p50 is an exponential's ln 50 means, the median over
    // every fit reset of a zone the host wrote (reset of an open zone and after a finish).
    let spreads: Vec<f64> = rows
        .iter()
        .filter(|r| r.is_fit() && (r.experiment == "reset" || r.experiment == "reset_after_finish") && r.metric == "lat_ns_p99" && r.fill_lbas.is_some_and(|f| f > 0))
        .filter_map(|p99| {
            let p50 = rows.iter().find(|r| r.metric == "lat_ns_p50" && r.experiment == p99.experiment && r.fill_lbas == p99.fill_lbas && r.source_path == p99.source_path)?;
            Some((p99.value - p50.value) / (50f64).ln())
        })
        .collect();
    let reset_spreads = spreads.len();
    ctl.reset_jitter_ns = round(median(spreads)?, 1000);
    // A reset after a finish: fixed time plus time per MiB the host wrote (least squares on
    // the p50s less the spread's median where there is one).
    let spread_p50 = ctl.reset_jitter_ns as f64 * (2f64).ln();
    let resets: Vec<(f64, f64)> = select(rows, "reset_after_finish", "lat_ns_p50", |r| r.is_fit())
        .map(|r| {
            let fill = r.fill_lbas.unwrap_or(0);
            ((fill * 4096) as f64 / (1u64 << 20) as f64, r.value - if fill > 0 { spread_p50 } else { 0.0 })
        })
        .collect();
    let n = resets.len() as f64;
    let (sx, sy) = (resets.iter().map(|p| p.0).sum::<f64>() / n, resets.iter().map(|p| p.1).sum::<f64>() / n);
    let per_mib = resets.iter().map(|p| (p.0 - sx) * (p.1 - sy)).sum::<f64>() / resets.iter().map(|p| (p.0 - sx).powi(2)).sum::<f64>();
    ctl.reset_ns_per_mib = round(per_mib, 10);
    ctl.reset_ns = round(sy - per_mib * sx - DISPATCH_NS as f64, 1000);
    // The seal: what a finish of a zone one block short of full costs beyond its padding.
    let last = g.zone_capacity_blocks - 1;
    let finish_last = one(rows, "finish", "lat_ns_p50", move |r| r.fill_lbas == Some(last))?;
    flash.controller = ctl;
    let unsealed = run(&g, &flash, &BenchSpec { job: Job { rw: Rw::Finish, fill_bytes: last * 4096, ..Job::default() }, ops: 4, ..BenchSpec::default() }).lat_ns_p50;
    ctl.seal_ns = round(finish_last - unsealed as f64, 1000);
    // A reset of an open zone with programmed data costs more than the same zone's reset after
    // a finish (which paid its seal then): the median of the differences over the fills where
    // both were measured, the zone partly programmed.
    let after_finish: Vec<(u64, f64)> = select(rows, "reset_after_finish", "lat_ns_p50", |r| r.is_fit()).map(|r| (r.fill_lbas.unwrap_or(0), r.value)).collect();
    let stripe_blocks = stripe / 4096;
    let reset_extra: Vec<f64> = select(rows, "reset", "lat_ns_p50", move |r| r.is_fit() && r.fill_lbas.is_some_and(|f| f >= stripe_blocks && f < last))
        .filter_map(|r| after_finish.iter().find(|a| Some(a.0) == r.fill_lbas).map(|a| r.value - a.1))
        .collect();
    let reset_fills = reset_extra.len();
    ctl.reset_seal_ns = round(median(reset_extra)?, 1000);
    flash.controller = ctl;

    // Slow stripes: once the buffer is full a single-zone append's latency is the time the
    // flash takes to drain the bytes queued ahead of it. The drive's p50 there is its mean
    // (Little's law) but its p99 and p99.9 sit 2.5-4.7 ms above, from 4 to 64 MiB queued: a
    // spread that barely grows with the bytes in the window is a few rare long programs, not
    // many small variations (those would grow as the square root of the window). The rate
    // and mean of the slow stripes come from a grid search on those tails (the p99 and p99.9
    // of 16-128 KiB appends to one zone with ≥ 4 MiB queued), the program time giving back
    // their mean share so the drain keeps its bandwidth.
    // Each run's job, and the drive's p99 and p99.9 of it.
    let mut deep: BTreeMap<(u64, u32), (Option<f64>, Option<f64>)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.is_fit() && fio(r) && r.experiment == "append" && r.zones == 1 && r.bs_bytes >= 16 * KIB && r.bs_bytes * r.qd as u64 >= 4 * MIB) {
        let tails = deep.entry((r.bs_bytes, r.qd)).or_default();
        match r.metric.as_str() {
            "clat_ns_p99" => tails.0 = Some(r.value),
            "clat_ns_p999" => tails.1 = Some(r.value),
            _ => {}
        }
    }
    if deep.is_empty() {
        return Err(LabError::Usage("the fit needs the deep single-zone append rows, which the data does not have".into()));
    }
    let with_slow = |one_in: u32, slow_ns: u64| {
        let mut f = flash;
        f.controller.slow_stripe_one_in = one_in;
        f.controller.slow_stripe_ns = slow_ns;
        f.program_ns = round(program_ns as f64 - slow_ns as f64 / one_in as f64, 100);
        f
    };
    // Root mean square of the log ratios, ours over the drive's.
    let tail_error = |f: &FlashConfig| {
        let (mut sum, mut n) = (0.0, 0);
        for (&(bs, qd), &(p99, p999)) in &deep {
            let stats = run(&g, f, &spec(io_job(Rw::Append, bs, qd, 1, fio_think_ns), None));
            for (ours, drive) in [(stats.lat_ns_p99, p99), (stats.lat_ns_p999, p999)] {
                if let Some(drive) = drive {
                    sum += (ours as f64 / drive).ln().powi(2);
                    n += 1;
                }
            }
        }
        (sum / n.max(1) as f64).sqrt()
    };
    let (tail_rms, slow_one_in, slow_ns) = slow_stripe_search(&SLOW_ONE_IN, &SLOW_US, (f64::INFINITY, 0, 0), |one_in, slow_ns| tail_error(&with_slow(one_in, slow_ns)));
    flash = with_slow(slow_one_in, slow_ns);
    ctl = flash.controller;

    use Provenance::{Assumed, Fitted};
    let us = |ns: u64| format!("{:.2} µs", ns as f64 / 1e3);
    let ms = |ns: u64| format!("{:.3} ms", ns as f64 / 1e6);
    note(
        "channels × dies",
        format!("{CHANNELS} × {DIES_PER_CHANNEL}"),
        Assumed,
        "16 dies fit the read curve's rise with queue depth (8 saturate early, 32 late); 8 channels carry the peak read bandwidth".into(),
    );
    note("page", format!("{} KiB", PAGE_BYTES / 1024), Assumed, "a two-plane 16 KiB TLC page; the data does not fix it".into());
    note(
        "stripe",
        format!("{dies} dies ({} KiB)", stripe / KIB),
        Assumed,
        "programmed together: a bandwidth-bound QD1 writer's median stays at its unstalled latency, a few writes wait a whole stripe".into(),
    );
    note(
        "program",
        us(flash.program_ns),
        Fitted,
        format!("stripe ÷ {:.3} GB/s ({}), the median of {} bandwidth-bound write and append runs, less the slow stripes' mean share", write_bw / 1e9, us(program_ns), bw.len()),
    );
    note(
        "slow stripes",
        format!("1 in {slow_one_in}, {} more on average", us(slow_ns)),
        Fitted,
        format!(
            "an exponential extra program time; grid search on the p99 and p99.9 of {} single-zone append runs of 16-128 KiB with ≥ 4 MiB queued (rms log error {tail_rms:.3})",
            deep.len()
        ),
    );
    note("channel", format!("{} MB/s", channel_bytes_per_sec / 1_000_000), Fitted, format!("peak random-read bandwidth {:.2} GB/s ÷ {CHANNELS} channels", read_bw / 1e9));
    note("read (sense)", us(flash.read_ns), Fitted, format!("4 KiB random reads at QD256 run at {:.0} KIOPS (bisection on the model)", r_peak / 1e3));
    note("read completion", us(ctl.read_done_ns), Fitted, format!("4 KiB read at QD1, p50 {} = dispatch + sense + transfer + this", us(r_p50 as u64)));
    note(
        "slow pages",
        format!("1 in {}, {} more to sense", ctl.slow_page_one_in, us(ctl.slow_page_read_ns)),
        Fitted,
        format!("4 KiB reads at QD1 take one of two times: the extra sense is p99 {} less p50 {}; 1 in 3 assumed (TLC with 2-3-2 coding)", us(r_p99 as u64), us(r_p50 as u64)),
    );
    note("dispatch", us(DISPATCH_NS), Assumed, "below the cheapest command seen (a reset of a never-opened zone, 2.1 µs)".into());
    note(
        "write buffer",
        format!("{} MiB", ctl.write_buffer_bytes >> 20),
        Assumed,
        "one stripe for each of the 14 open zones and two more: 14 zones written at once do not stall".into(),
    );
    let (link, link_how) = link_figure(ctl.host_bytes_per_sec, serial, serial_lowest, &format!("slope of QD1 write p50 against block size, 16-128 KiB ({} runs)", pts.len()));
    note("host link", link, Fitted, link_how);
    note("host overlap", format!("{} KiB", OVERLAP_BYTES / KIB), Assumed, "4 and 8 KiB writes take the same time at QD1".into());
    note("jitter", us(ctl.jitter_ns), Fitted, format!("(p99 − p50) ÷ ln 50 of the harness's 4 KiB writes at QD1 ({} − {})", us(h_p99 as u64), us(h_p50 as u64)));
    note("hand-off", us(ctl.handoff_ns), Fitted, format!("4 KiB writes to 2 zones at QD1 run at {:.1} KIOPS (bisection on the model)", two_zones / 1e3));
    note("write engine", us(ctl.write_ns), Fitted, format!("1 ÷ {:.1} KIOPS (4 KiB writes over 8-14 zones) − hand-off − jitter", plateau / 1e3));
    note("append engine", us(ctl.append_ns), Fitted, format!("8 KiB appends to one zone at QD4 have p50 {} (bisection on the model)", us(a8_p50 as u64)));
    note(
        "short appends",
        format!(
            "under {} KiB, {} more in the engine before completion, {} after",
            ctl.short_append_bytes / KIB,
            us(ctl.short_append_ns),
            us(ctl.short_append_after_ns)
        ),
        Fitted,
        format!(
            "before: 4 KiB against 8 KiB appends at QD1, means {} and {} (4 and 8 KiB writes take the same time); after: the rest of 1 ÷ {:.1} KIOPS (4 KiB appends to one zone, QD ≥ 4) − hand-off − jitter",
            us(a_lat as u64),
            us(a_lat_8k as u64),
            a_plateau / 1e3
        ),
    );
    note("write completion", us(ctl.write_done_ns), Fitted, format!("4 KiB write at QD1, mean {} = dispatch + engine + jitter + this", us(w_lat as u64)));
    note("append completion", us(ctl.append_done_ns), Fitted, format!("4 KiB append at QD1, mean {} = dispatch + engine + short append + jitter + this", us(a_lat as u64)));
    note("implicit open", us(ctl.implicit_open_ns), Fitted, "first write or append to an empty zone against the steady ones (harness p50s, mean of the two)".into());
    note("open / close / finish of an empty zone", format!("{} / {} / {}", us(ctl.open_ns), us(ctl.close_ns), us(ctl.finish_empty_ns)), Fitted, "harness p50s − dispatch".into());
    note(
        "reset",
        format!("{} + {} per MiB written", ms(ctl.reset_ns), us(ctl.reset_ns_per_mib)),
        Fitted,
        format!("least squares over the {} fills of reset after finish (p50)", resets.len()),
    );
    note(
        "reset spread",
        ms(ctl.reset_jitter_ns),
        Fitted,
        format!("mean of an exponential: (p99 − p50) ÷ ln 50 of the fit resets of written zones, median over {reset_spreads} runs and fills"),
    );
    note("seal", ms(ctl.seal_ns), Fitted, "finish of a zone one block short of full (p50) − its padding's program in the model".into());
    note(
        "reset's seal",
        ms(ctl.reset_seal_ns),
        Fitted,
        format!("reset of an open, partly programmed zone − reset after finish, same fill (p50s; median over {reset_fills} fills)"),
    );
    note(
        "fio host time",
        us(fio_think_ns),
        Fitted,
        "1 ÷ IOPS − mean latency of 4 KiB writes at QD1 (fio's own time per I/O; used to replay fio's runs, not a device figure)".into(),
    );
    Ok(Fit { flash, fio_think_ns, figures })
}

#[cfg(test)]
mod tests {
    use super::serial_link;

    #[test]
    fn a_link_is_serial_only_when_no_shared_run_beats_its_queue() {
        // 32 KiB at 2 GB/s: 16.384 µs each. Four in flight take 65.5 µs over a serial link.
        let run = |in_flight: u32, p50_ns: f64| (32_768, in_flight, p50_ns);
        let (serial, lowest) = serial_link([run(4, 70_000.0), run(2, 40_000.0)].into_iter(), 2_000_000_000);
        assert!(serial && (lowest - 70_000.0 / 65_536.0).abs() < 1e-9, "{lowest}");
        // One run faster than its queue over the link: transfers overlap.
        assert!(!serial_link([run(4, 70_000.0), run(4, 50_000.0)].into_iter(), 2_000_000_000).0);
        // Lone writes and writes under 16 KiB say nothing, and nothing is no evidence.
        assert!(!serial_link([run(1, 1.0), (8192, 8, 1.0)].into_iter(), 2_000_000_000).0);
    }
}

//! `zonekit experiment device-fidelity`: every characterised experiment of the ZN540 rerun on
//! a preset's timing model, each measured value beside ours (issue 48).
//!
//! Each measurement row ([`crate::device::data`]) becomes a [`zonekit_device::bench`] job as the
//! characterisation ran it: fio's sequential writes and appends per block size, queue depth and
//! zone count, random reads inside a zone, the harness's resets and finishes of zones filled to
//! a given point (after a finish for `reset_after_finish`), opens and closes, the first write
//! to a zone that opens it, the write after a close; and the validation runs with a second job
//! beside the measured one (reads beside rate-limited writes or appends, I/O beside resets of
//! full zones queued every 400 operations, reads beside 4 × 32 queued 1 MiB appends). Rows the
//! device model cannot answer say why (io_uring through mq-deadline: the kernel merges writes).

use std::collections::BTreeMap;

use zonekit_device::bench::{self, BenchReport, BenchSpec, Job, JobStats, Rw};
use zonekit_device::timing::{FlashConfig, TimingModel};
use zonekit_device::Geometry;

use crate::device::data::Measurement;

/// Commands measured per I/O run (as many as the runs' virtual time allows, below).
const IO_OPS: u64 = 20_000;
/// Zone-management commands measured per run where the row does not say how many the drive's
/// run had; where it does, as many as it had (its p99 and p99.9 are then over as many samples,
/// not a few dozen runs' maximum), up to `ZONE_OPS_MAX`. A finish of a near-empty zone
/// programs 1 GiB of padding, so its 1,806 replays program 1.8 TiB: about 1 s here.
const ZONE_OPS: u64 = 40;
const ZONE_OPS_MAX: u64 = 2_000;
/// Virtual time one run may take, as fio's runtime bounds a job.
const RUN_LIMIT_NS: u64 = 10_000_000_000;
/// The same for zone management: 1,806 finishes of a near-empty zone take 1,700 s.
const ZONE_RUN_LIMIT_NS: u64 = 2_000_000_000_000;
/// How many times `IO_OPS` a run whose streams share CPUs measures (400,000 commands: about
/// 200 of the ZN540 runs' 14.5 ms slices at 4 KiB).
const SHARED_CPU_RUNS: u64 = 20;

/// Which job's figures a row compares with.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Side {
    Job,
    Background,
}

/// What to run for a row.
#[derive(Clone, Debug, PartialEq)]
enum Probe {
    Bench(BenchSpec),
    /// The first 4 KiB write (or append) to an empty zone, which opens it.
    FirstWrite(Rw),
    /// The 4 KiB write of a closed zone's last block.
    WriteAfterClose,
}

/// One measured value and ours.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub m: Measurement,
    pub ours: Option<f64>,
    /// Why there is no `ours`.
    pub not_compared: Option<String>,
    /// The bench command that reproduces ours.
    pub command: String,
}

impl Comparison {
    /// Signed relative error, ours against the drive's.
    pub fn error(&self) -> Option<f64> {
        self.ours.filter(|_| self.m.value != 0.0).map(|o| (o - self.m.value) / self.m.value)
    }

    /// The experiment family a row's error is summarised under: experiment and metric, the
    /// fio grid's clat and lat percentiles together.
    pub fn family(&self) -> String {
        let metric = self.m.metric.replace("clat_ns", "lat_ns");
        format!("{} {}", self.m.experiment, metric)
    }
}

pub(crate) fn io_job(rw: Rw, bs: u64, qd: u32, zones: u32, think_ns: u64) -> Job {
    Job { rw, bs_bytes: bs, qd: qd.max(1), zones: zones.max(1), think_ns, ..Job::default() }
}

pub(crate) fn spec(job: Job, background: Option<Job>) -> BenchSpec {
    // Streams taking turns on fewer CPUs see completions up to a slice late: the run spans a
    // few hundred slices (fio's ran 3 minutes), so the last ones do not shorten its IOPS.
    let ops = match (job.rw.is_io(), job.cpus > 0) {
        (true, true) => IO_OPS * SHARED_CPU_RUNS,
        (true, false) => IO_OPS,
        (false, _) => ZONE_OPS,
    };
    let ramp = if job.rw.is_io() { (ops / 10).max(job.qd as u64 * job.zones as u64 * 2) } else { 2 };
    BenchSpec { job, background, ops, ramp_ops: ramp, time_limit_ns: RUN_LIMIT_NS, seed: 48 }
}

/// A zone-management run replaying row `m`: as many commands as the drive's run had, up to
/// `ZONE_OPS_MAX`.
fn zone_spec(job: Job, m: &Measurement) -> BenchSpec {
    let ops = m.n.parse::<u64>().ok().filter(|&n| n > 0).map_or(ZONE_OPS, |n| n.min(ZONE_OPS_MAX));
    BenchSpec { ops, time_limit_ns: ZONE_RUN_LIMIT_NS, ..spec(job, None) }
}

/// The rate limit of a rate-limited job, from the row of the other job of the same run.
pub(crate) fn paired_rate(rows: &[Measurement], m: &Measurement) -> u64 {
    rows.iter().find(|r| r.source_path == m.source_path && r.bg_rate_bytes_per_sec > 0 && r.experiment.starts_with("randread_beside")).map_or(0, |r| r.bg_rate_bytes_per_sec)
}

/// The probe for one row and which job of it the row describes, or why none.
fn probe(rows: &[Measurement], m: &Measurement, g: &Geometry, fio_think_ns: u64) -> Result<(Probe, Side), String> {
    let rw = |name: &str| Rw::parse(name).ok_or_else(|| format!("no bench job does {name:?}"));
    let block = 4096;
    let fill = m.fill_lbas.unwrap_or(0) * block;
    if m.engine == "fio-io_uring-mq-deadline" {
        return Err("io_uring through mq-deadline: the kernel's scheduler merges writes, not a device figure".into());
    }
    let think = if m.engine.starts_with("fio") { fio_think_ns } else { 0 };
    let probe = match m.experiment.as_str() {
        "write" | "append" | "randread" | "randread_long" => {
            let name = m.experiment.trim_end_matches("_long");
            // The run's host threads shared fewer CPUs than they were: so do the model's.
            let job = Job { cpus: m.host_cpus, cpu_slice_ns: m.host_slice_ns, ..io_job(rw(name)?, m.bs_bytes.max(block), m.qd, m.zones, think) };
            (Probe::Bench(spec(job, None)), Side::Job)
        }
        "reset" | "finish" | "close" | "open" => {
            let fill = fill.min(g.zone_capacity_bytes());
            (Probe::Bench(zone_spec(Job { rw: rw(&m.experiment)?, fill_bytes: fill, ..Job::default() }, m)), Side::Job)
        }
        "reset_after_finish" => (Probe::Bench(zone_spec(Job { rw: Rw::Reset, fill_bytes: fill, finished: true, ..Job::default() }, m)), Side::Job),
        "first_write_implicit_open" => (Probe::FirstWrite(Rw::Write), Side::Job),
        "first_append_implicit_open" => (Probe::FirstWrite(Rw::Append), Side::Job),
        "write_after_close" => (Probe::WriteAfterClose, Side::Job),
        e if e.ends_with("_beside_reset") || e.starts_with("reset_beside_") => {
            let (io, side) = match e.strip_suffix("_beside_reset") {
                Some(io) => (io, Side::Job),
                None => (e.trim_start_matches("reset_beside_"), Side::Background),
            };
            let resets = Job { rw: Rw::Reset, every_ops: 400, ..Job::default() };
            (Probe::Bench(spec(io_job(rw(io)?, block, 1, 1, 0), Some(resets))), side)
        }
        e if e.starts_with("randread_beside_") => {
            let writes = Job { rate_bytes_per_sec: m.bg_rate_bytes_per_sec, ..io_job(rw(m.bg_op.as_str())?, m.bg_bs_bytes, m.bg_qd, m.bg_jobs, think) };
            (Probe::Bench(spec(io_job(Rw::RandRead, m.bs_bytes, m.qd, m.zones, think), Some(writes))), Side::Job)
        }
        e if e.contains("_beside_randread") => {
            let op = e.split("_beside_").next().expect("split yields one part");
            let writes = Job { rate_bytes_per_sec: paired_rate(rows, m), ..io_job(rw(op)?, m.bs_bytes, m.qd, m.zones, think) };
            (Probe::Bench(spec(io_job(Rw::RandRead, m.bg_bs_bytes, m.bg_qd, m.bg_jobs, think), Some(writes))), Side::Background)
        }
        e => return Err(format!("no probe for experiment {e:?}")),
    };
    Ok(probe)
}

pub(crate) fn pick(stats: &JobStats, metric: &str) -> Option<f64> {
    Some(match metric {
        "lat_ns_mean" => stats.lat_ns_mean,
        "clat_ns_p50" | "lat_ns_p50" => stats.lat_ns_p50 as f64,
        "clat_ns_p99" | "lat_ns_p99" => stats.lat_ns_p99 as f64,
        "clat_ns_p999" | "lat_ns_p999" => stats.lat_ns_p999 as f64,
        "lat_ns_max" => stats.lat_ns_max as f64,
        "iops" => stats.iops,
        "bw_bytes_per_s" => stats.bytes_per_sec,
        _ => return None,
    })
}

/// Latencies of the harness's single-command probes, over `samples` zones.
fn sequence(g: &Geometry, flash: &FlashConfig, probe: &Probe, samples: u32) -> JobStats {
    let mut model = TimingModel::new(*flash, g).expect("a validated preset");
    let block = g.block_size_bytes as u64;
    let mut lat = Vec::new();
    let span = g.zone_count - g.conventional_zone_count;
    // Each sample starts once the device is idle and the previous one has completed (the
    // device is idle before a write completes: a write still in flight would cost the next
    // its hand-off).
    let mut last_done = 0;
    for i in 0..samples {
        let zone = g.conventional_zone_count + i % span;
        if i >= span {
            // Every zone had its sample: reset this one (its time not measured) for another.
            let t = model.drained_ns().max(last_done);
            last_done = model.reset(t, zone);
        }
        let t = model.drained_ns().max(last_done);
        let (submit, done) = match probe {
            Probe::FirstWrite(Rw::Append) => (t, model.append(t, zone, 0, block)),
            Probe::FirstWrite(_) => (t, model.write(t, zone, 0, block)),
            Probe::WriteAfterClose => {
                let last = g.zone_capacity_bytes() - block;
                model.assume_written(zone, last, true);
                let closed = model.close(t, zone);
                (closed, model.write(closed, zone, last, block))
            }
            Probe::Bench(_) => unreachable!("a bench probe"),
        };
        lat.push(done - submit);
        last_done = done;
    }
    lat.sort_unstable();
    let n = lat.len();
    let rank = |q: f64| lat[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    JobStats {
        ops: n as u64,
        lat_ns_mean: lat.iter().sum::<u64>() as f64 / n as f64,
        lat_ns_p50: rank(0.5),
        lat_ns_p99: rank(0.99),
        lat_ns_p999: rank(0.999),
        lat_ns_max: lat[n - 1],
        ..JobStats::default()
    }
}

/// The `zonekit device bench` command line that runs `spec` on `preset`.
pub fn bench_command(preset: &str, spec: &BenchSpec) -> String {
    let job_flags = |j: &Job, p: &str| {
        let mut f = format!(" --{p}rw {}", j.rw.name());
        if j.rw.is_io() {
            f += &format!(" --{p}bs {} --{p}qd {} --{p}zones {}", j.bs_bytes, j.qd, j.zones);
        }
        if j.fill_bytes > 0 {
            f += &format!(" --{p}fill-blocks {}", j.fill_bytes / 4096);
        }
        if j.finished {
            f += &format!(" --{p}finished");
        }
        if j.rate_bytes_per_sec > 0 {
            f += &format!(" --{p}rate {}", j.rate_bytes_per_sec);
        }
        if j.every_ops > 0 {
            f += &format!(" --{p}every {}", j.every_ops);
        }
        if j.think_ns > 0 {
            f += &format!(" --{p}think-ns {}", j.think_ns);
        }
        if j.cpus > 0 {
            f += &format!(" --{p}cpus {} --{p}cpu-slice-ns {}", j.cpus, j.cpu_slice_ns);
        }
        f
    };
    let mut cmd = format!("zonekit device bench --preset {preset}{}", job_flags(&spec.job, ""));
    if let Some(bg) = &spec.background {
        cmd += &job_flags(bg, "bg-");
    }
    cmd += &format!(" --ops {} --ramp {} --time-limit-ms {} --seed {}", spec.ops, spec.ramp_ops, spec.time_limit_ns / 1_000_000, spec.seed);
    cmd
}

/// What a fidelity run measured: every row compared, and the device commands simulated.
pub struct Fidelity {
    pub rows: Vec<Comparison>,
    pub runs: usize,
    pub device_commands: u64,
}

/// Runs every row's experiment on `flash` (the preset named `preset`) and compares.
/// `progress` is told how many runs are done out of how many.
pub fn compare(preset: &str, g: &Geometry, flash: &FlashConfig, rows: &[Measurement], fio_think_ns: u64, progress: &mut dyn FnMut(usize, usize)) -> Fidelity {
    let probes: Vec<Result<(Probe, Side), String>> = rows.iter().map(|m| probe(rows, m, g, fio_think_ns)).collect();
    // Each distinct probe runs once.
    let mut distinct: Vec<&Probe> = Vec::new();
    for p in probes.iter().flatten() {
        if !distinct.contains(&&p.0) {
            distinct.push(&p.0);
        }
    }
    let mut results: Vec<(JobStats, Option<JobStats>)> = Vec::new();
    let mut commands = 0;
    for (i, p) in distinct.iter().enumerate() {
        progress(i, distinct.len());
        let r = match p {
            Probe::Bench(s) => {
                let BenchReport { job, background, device_commands, .. } = bench::run(g, flash, s).unwrap_or_else(|e| panic!("a fidelity probe the bench refuses: {e}: {s:?}"));
                commands += device_commands;
                (job, background)
            }
            other => (sequence(g, flash, other, ZONE_OPS_MAX as u32), None),
        };
        results.push(r);
    }
    progress(distinct.len(), distinct.len());
    let mut out = Vec::new();
    for (m, p) in rows.iter().zip(&probes) {
        let c = match p {
            Err(why) => Comparison { m: m.clone(), ours: None, not_compared: Some(why.clone()), command: String::new() },
            Ok((probe, side)) => {
                let i = distinct.iter().position(|d| *d == probe).expect("every probe ran");
                let stats = match side {
                    Side::Job => Some(&results[i].0),
                    Side::Background => results[i].1.as_ref(),
                };
                let ours = stats.and_then(|s| pick(s, &m.metric));
                let command = match probe {
                    Probe::Bench(s) => bench_command(preset, s),
                    Probe::FirstWrite(rw) => format!("(sequence) first 4 KiB {} to an empty zone, {ZONE_OPS_MAX} times (a zone reset before its reuse)", rw.name()),
                    Probe::WriteAfterClose => format!("(sequence) 4 KiB write of the last block of a closed zone, {ZONE_OPS_MAX} times (a zone reset before its reuse)"),
                };
                Comparison { m: m.clone(), not_compared: ours.is_none().then(|| format!("no model figure for metric {}", m.metric)), ours, command }
            }
        };
        out.push(c);
    }
    Fidelity { rows: out, runs: distinct.len(), device_commands: commands }
}

/// Median and largest absolute error of some comparisons, and how many pass 25 %.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorSummary {
    pub count: usize,
    pub median_abs: f64,
    pub max_abs: f64,
    pub within_10: usize,
    pub beyond_25: usize,
}

pub fn summarise<'a>(rows: impl Iterator<Item = &'a Comparison>) -> ErrorSummary {
    let mut errors: Vec<f64> = rows.filter_map(Comparison::error).map(f64::abs).collect();
    if errors.is_empty() {
        return ErrorSummary::default();
    }
    errors.sort_by(f64::total_cmp);
    let n = errors.len();
    let median = if n % 2 == 1 { errors[n / 2] } else { (errors[n / 2 - 1] + errors[n / 2]) / 2.0 };
    ErrorSummary {
        count: n,
        median_abs: median,
        max_abs: errors[n - 1],
        within_10: errors.iter().filter(|e| **e <= 0.10).count(),
        beyond_25: errors.iter().filter(|e| **e > 0.25).count(),
    }
}

/// Per experiment family (experiment × metric), fit and validation apart.
pub fn by_family(rows: &[Comparison]) -> BTreeMap<(String, String), ErrorSummary> {
    let mut groups: BTreeMap<(String, String), Vec<&Comparison>> = BTreeMap::new();
    for c in rows.iter().filter(|c| c.ours.is_some()) {
        groups.entry((c.m.role.clone(), c.family())).or_default().push(c);
    }
    groups.into_iter().map(|(k, v)| (k, summarise(v.into_iter()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonekit_device::preset;

    #[test]
    fn single_writes_are_timed_one_after_another_over_more_samples_than_zones() {
        let p = preset::find("zn540").unwrap();
        let c = p.flash.controller;
        // A lone first write: dispatch, engine, completion and the zone's implicit open, plus
        // the engine's spread (mean `jitter_ns`); never the hand-off of a write in flight.
        let lone_ns = (c.dispatch_ns + c.write_ns + c.write_done_ns + c.implicit_open_ns) as f64;
        let samples = p.geometry.zone_count + 100;
        let s = sequence(&p.geometry, &p.flash, &Probe::FirstWrite(Rw::Write), samples);
        assert_eq!(s.ops, samples as u64, "zones are reset and used again");
        assert!(s.lat_ns_mean >= lone_ns && s.lat_ns_mean < lone_ns + 2.0 * c.jitter_ns as f64, "mean {} against {lone_ns}", s.lat_ns_mean);
        assert!(s.lat_ns_p50 < (lone_ns + c.handoff_ns as f64) as u64, "p50 {}", s.lat_ns_p50);
    }
}

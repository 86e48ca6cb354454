//! `zonekit experiment device-fidelity --drive conventional`: the conventional SSD model's
//! timing ([`zonekit_ssd::Ssd`] with a preset's flash) against the published fio runs of two
//! conventional drives, a Samsung 980 PRO and a WD SN540 (issue 48, build item 3: "where the
//! data allows, the conventional SSD model's timing against the 980 PRO's runs the same way").
//!
//! Each row of `980pro/io.csv` and `sn540/io.csv` ([`crate::device::data::read_conventional`])
//! becomes an [`SsdJob`] as fio ran it: sequential writes (`write`), random writes
//! (`randwrite`) or random reads (`randread`) of one block size at one queue depth over the
//! runs' 40 GiB range, each command one host command of the model ([`Ssd::write_at`],
//! [`Ssd::read_at`]), a closed loop of `qd` slots, fio's host time between a completion and
//! the next submission as the ZN540's comparison takes it. The model is fresh (nothing the
//! data says of the drives' state before a run), so a write job never meets device GC; a read
//! job reads a range written whole beforehand. Each drive runs on its own fitted preset
//! (`980pro`, `sn540`: a write buffer and controller in front of the flash,
//! `crate::device::conventional_fit`), or every row on one preset named (`dc-7`, the unfitted
//! FEMU figures); [`role`] says which rows the fit read. A row of `sn540/interference.csv`
//! runs its two jobs on one model ([`run_beside`]: reads beside rate-limited writes). Rows the
//! harness cannot express are kept, with why (fio's 20-minute random-write runs).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use zonekit_base::Rng;
use zonekit_device::bench::JobStats;
use zonekit_ssd::preset::SsdPreset;
use zonekit_ssd::{Ssd, SsdConfig, SsdError};

use crate::device::data::Measurement;
use crate::device::fidelity::{paired_rate, pick, Comparison, Fidelity};

/// The range every run of the conventional drives wrote or read (the data's note: "40 GiB
/// range; 30 s runs").
pub const RANGE_BYTES: u64 = 40 << 30;
/// Commands measured per run, and the warm-up before them (at least two rounds of the queue).
const OPS: u64 = 20_000;
const BLOCK_BYTES: u64 = 4096;
const SEED: u64 = 48;

/// The kind of command a job issues.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SsdRw {
    Write,
    RandWrite,
    RandRead,
}

impl SsdRw {
    pub fn name(self) -> &'static str {
        match self {
            SsdRw::Write => "write",
            SsdRw::RandWrite => "randwrite",
            SsdRw::RandRead => "randread",
        }
    }
}

/// One fio job on the SSD model.
#[derive(Clone, Debug, PartialEq)]
pub struct SsdJob {
    pub rw: SsdRw,
    pub bs_bytes: u64,
    pub qd: u32,
    /// Host time between a completion and the next submission in its slot.
    pub think_ns: u64,
    pub ops: u64,
    pub ramp_ops: u64,
    /// Logical blocks of the range the job addresses (and of the model).
    pub range_blocks: u64,
    pub seed: u64,
}

/// A job beside the measured one: fio's second job of the same run, its bytes limited to
/// `rate_bytes_per_sec` as fio's `--rate` limits them (0: unlimited).
#[derive(Clone, Debug, PartialEq)]
pub struct Beside {
    pub job: SsdJob,
    pub rate_bytes_per_sec: u64,
}

/// What one model run does: the measured job (its commands count to `ops`), maybe a job
/// beside it for as long as the measured one runs.
#[derive(Clone, Debug, PartialEq)]
pub struct SsdRun {
    pub job: SsdJob,
    pub beside: Option<Beside>,
}

/// Which job of a run a row's figure belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Side {
    Job,
    Beside,
}

/// The figures of one run: the measured job's, the job beside it (over the measured job's
/// window), and every host command issued.
#[derive(Clone, Debug, PartialEq)]
pub struct SsdReport {
    pub job: JobStats,
    pub beside: Option<JobStats>,
    pub commands: u64,
}

fn rw_of(name: &str) -> Result<SsdRw, String> {
    Ok(match name {
        "write" => SsdRw::Write,
        "randwrite" => SsdRw::RandWrite,
        "randread" => SsdRw::RandRead,
        e => return Err(format!("no SSD job does {e:?}")),
    })
}

fn job(rw: SsdRw, bs_bytes: u64, qd: u32, think_ns: u64) -> Result<SsdJob, String> {
    if bs_bytes == 0 || bs_bytes % BLOCK_BYTES != 0 {
        return Err(format!("block size {bs_bytes} bytes: the model's commands are whole 4 KiB blocks"));
    }
    if qd == 0 {
        return Err("queue depth 0".into());
    }
    Ok(SsdJob { rw, bs_bytes, qd, think_ns, ops: OPS, ramp_ops: (OPS / 10).max(2 * qd as u64), range_blocks: RANGE_BYTES / BLOCK_BYTES, seed: SEED })
}

/// The run a row describes and which of its jobs the row's figure is, or why the harness
/// cannot express it. `rows` are the row's file's, for the rate of a rate-limited job that
/// only the other job's row names.
///
/// The SN540's interference runs are fio's `rate_inteference/nvme_<rate>_<qd>` (the
/// characterisation's `io_inteference_rate.sh`): 4 KiB random reads at `qd` over the whole
/// drive beside one job of 128 KiB sequential writes at QD1 from its start, limited to `rate`.
/// The model reads its 40 GiB range, written whole first, and writes sequentially from its
/// start over the data the reads find.
pub fn run_of(rows: &[Measurement], m: &Measurement, think_ns: u64) -> Result<(SsdRun, Side), String> {
    if m.engine != "fio-spdk" {
        return Err(format!("engine {:?}: only fio's SPDK runs are replayed", m.engine));
    }
    if m.experiment.ends_with("_long") {
        return Err("fio's 20-minute `long2` run, 4 jobs of 1 MiB random writes at QD32 over 400 GB beside 4 KiB random reads: the drive's writes ran at \
                    about 600 MB/s there, half its 1.24 GB/s sequential, and what the drive held and had been written before the run, which decides that, is not \
                    in the data; the model's fresh 40 GiB range would not show it"
            .into());
    }
    if m.bg_op.is_empty() {
        return Ok((SsdRun { job: job(rw_of(&m.experiment)?, m.bs_bytes, m.qd, think_ns)?, beside: None }, Side::Job));
    }
    if m.bg_jobs != 1 {
        return Err(format!("{} jobs beside the measured one: the harness runs one", m.bg_jobs));
    }
    match m.experiment.split_once("_beside_") {
        Some(("randread", _)) => {
            let writes = Beside { job: job(rw_of(&m.bg_op)?, m.bg_bs_bytes, m.bg_qd, think_ns)?, rate_bytes_per_sec: m.bg_rate_bytes_per_sec };
            Ok((SsdRun { job: job(SsdRw::RandRead, m.bs_bytes, m.qd, think_ns)?, beside: Some(writes) }, Side::Job))
        }
        Some((op, "randread")) => {
            // The writes' figure, measured beside the reads: the same run as the reads' row.
            let writes = Beside { job: job(rw_of(op)?, m.bs_bytes, m.qd, think_ns)?, rate_bytes_per_sec: paired_rate(rows, m) };
            Ok((SsdRun { job: job(SsdRw::RandRead, m.bg_bs_bytes, m.bg_qd, think_ns)?, beside: Some(writes) }, Side::Beside))
        }
        _ => Err(format!("no run of the harness does {:?}", m.experiment)),
    }
}

/// What reproduces a run's figures, in words (the harness has no command line of its own).
pub fn describe(preset: &str, run: &SsdRun) -> String {
    let job = &run.job;
    let beside = run.beside.as_ref().map_or(String::new(), |b| {
        let rate = match b.rate_bytes_per_sec {
            0 => String::new(),
            r => format!(" limited to {r} B/s"),
        };
        format!("; beside it {} bs {} QD{}{rate}, think {} ns", b.job.rw.name(), b.job.bs_bytes, b.job.qd, b.job.think_ns)
    });
    let reads = job.rw == SsdRw::RandRead || run.beside.as_ref().is_some_and(|b| b.job.rw == SsdRw::RandRead);
    format!(
        "(ssd preset {preset}, fresh, {} GiB range{}) {} bs {} QD{}, {} commands after {}, think {} ns{beside}, seed {}",
        (job.range_blocks * BLOCK_BYTES) >> 30,
        if reads { " written whole first" } else { "" },
        job.rw.name(),
        job.bs_bytes,
        job.qd,
        job.ops,
        job.ramp_ops,
        job.think_ns,
        job.seed
    )
}

/// The model a job runs on: `preset`'s shape over the job's range, timed by its flash.
pub fn model_config(preset: &SsdPreset, job: &SsdJob) -> SsdConfig {
    SsdConfig { flash: Some(preset.flash()), queue_depth: job.qd as usize, seed: job.seed, ..preset.config_for(job.range_blocks) }
}

/// Runs `job` on a model of `cfg`: the measured commands' figures and the commands issued.
pub fn run(cfg: &SsdConfig, job: &SsdJob) -> Result<(JobStats, u64), SsdError> {
    let r = run_beside(cfg, &SsdRun { job: job.clone(), beside: None })?;
    Ok((r.job, r.commands))
}

/// Where one job's commands go: whole commands of `blocks` over `places` places of the range.
struct Stream<'a> {
    job: &'a SsdJob,
    rate_bytes_per_sec: u64,
    blocks: u64,
    places: u64,
    next_place: u64,
    issued_bytes: u64,
}

/// Runs `run` on a model of `cfg`: each job a closed loop of its `qd` slots with fio's host
/// time between a completion and the next submission; a rate-limited job's command waits, as
/// fio's `--rate` makes it, until its bytes so far are within the rate. The measured job's
/// first `ramp_ops` commands warm up and its next `ops` are measured; the job beside it runs
/// meanwhile and its figures are the commands it issued in the measured window.
pub fn run_beside(cfg: &SsdConfig, run: &SsdRun) -> Result<SsdReport, SsdError> {
    let mut ssd = Ssd::new(cfg.clone())?;
    let jobs: Vec<(&SsdJob, u64)> = std::iter::once((&run.job, 0)).chain(run.beside.iter().map(|b| (&b.job, b.rate_bytes_per_sec))).collect();
    let mut streams = Vec::with_capacity(jobs.len());
    for (job, rate_bytes_per_sec) in jobs {
        assert!(job.qd > 0 && job.bs_bytes % BLOCK_BYTES == 0 && job.bs_bytes > 0, "a job run_of built");
        let blocks = job.bs_bytes / BLOCK_BYTES;
        let places = job.range_blocks.min(cfg.logical_blocks) / blocks;
        if places == 0 {
            return Err(SsdError::Config(format!("a {} byte command does not fit the {} block range", job.bs_bytes, job.range_blocks)));
        }
        streams.push(Stream { job, rate_bytes_per_sec, blocks, places, next_place: 0, issued_bytes: 0 });
    }
    if let Some(read) = streams.iter().filter(|s| s.job.rw == SsdRw::RandRead).map(|s| s.places * s.blocks).max() {
        for lba in 0..read {
            ssd.write_meta(lba, None)?;
        }
    }
    let start = ssd.idle_ns().ok_or_else(|| SsdError::Config("the model has no flash timing".into()))?;
    let mut rng = Rng::new(run.job.seed);
    // Slots by (when free, order queued, job): the earliest free slot issues next.
    let mut ready: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut queued = 0u64;
    for (j, s) in streams.iter().enumerate() {
        for _ in 0..s.job.qd {
            ready.push(Reverse((start, queued, j)));
            queued += 1;
        }
    }
    let (measured_total, ramp) = (run.job.ramp_ops + run.job.ops, run.job.ramp_ops);
    let (mut measured_issued, mut commands) = (0u64, 0u64);
    let mut latencies = [Vec::with_capacity(run.job.ops as usize), Vec::new()];
    let (mut first_submit, mut last_done) = (None, 0u64);
    while measured_issued < measured_total {
        let Reverse((free, _, j)) = ready.pop().expect("qd slots are always queued");
        let s = &mut streams[j];
        let submit = match s.rate_bytes_per_sec {
            0 => free,
            rate => free.max(start + (s.issued_bytes as u128 * 1_000_000_000 / rate as u128) as u64),
        };
        if submit > free {
            ready.push(Reverse((submit, queued, j)));
            queued += 1;
            continue;
        }
        let place = match s.job.rw {
            SsdRw::Write => {
                let p = s.next_place % s.places;
                s.next_place += 1;
                p
            }
            SsdRw::RandWrite | SsdRw::RandRead => rng.below(s.places),
        };
        let lba = place * s.blocks;
        let done = match s.job.rw {
            SsdRw::RandRead => ssd.read_at(submit, lba, s.blocks)?,
            SsdRw::Write | SsdRw::RandWrite => ssd.write_at(submit, lba, s.blocks, None)?,
        };
        s.issued_bytes += s.job.bs_bytes;
        commands += 1;
        if j == 0 {
            measured_issued += 1;
            if measured_issued > ramp {
                first_submit.get_or_insert(submit);
                last_done = last_done.max(done);
            }
        }
        // The job beside counts from the measured window's first command on.
        if first_submit.is_some() {
            latencies[j.min(1)].push(done - submit);
        }
        ready.push(Reverse((done + s.job.think_ns, queued, j)));
        queued += 1;
    }
    let window = last_done.saturating_sub(first_submit.unwrap_or(0));
    let [measured, beside] = latencies;
    let stats = |l: Vec<u64>, bs: u64| {
        let bytes = l.len() as u64 * bs;
        JobStats::of(l, bytes, window)
    };
    Ok(SsdReport { job: stats(measured, run.job.bs_bytes), beside: run.beside.as_ref().map(|b| stats(beside, b.job.bs_bytes)), commands })
}

/// Whether the conventional drives' fit reads a row (`fit`) or not (`validation`, held out).
/// The data marks every row of these drives `fit` (the drive alone, one stream); the split is
/// ours, the same for every preset compared so that their errors line up. The fit
/// (`crate::device::conventional_fit`) reads the QD1 writes (per-command costs, the host
/// link, the jitter), the writes at QD512 (the drain and the command rate), and, on the SN540,
/// random reads at QD1, QD32 and QD256 (completion, die count, sense time). Held out: the rest
/// of each QD grid and every random write.
pub fn role(m: &Measurement) -> &'static str {
    let fit = match m.experiment.as_str() {
        "write" => m.qd == 1 || m.qd == 512,
        "randread" => [1, 32, 256].contains(&m.qd),
        _ => false,
    };
    if fit && m.bg_op.is_empty() {
        "fit"
    } else {
        "validation"
    }
}

/// Runs every row's job on the preset `preset_of` gives its drive and compares; a row the
/// harness cannot express, or whose metric the model has no figure for, is kept with why.
/// Each row's role is [`role`]'s. `progress` is told how many runs are done out of how many.
pub fn compare(preset_of: &dyn Fn(&str) -> &'static SsdPreset, rows: &[Measurement], think_ns: u64, progress: &mut dyn FnMut(usize, usize)) -> Result<Fidelity, SsdError> {
    let runs: Vec<Result<(&'static SsdPreset, SsdRun, Side), String>> = rows.iter().map(|m| run_of(rows, m, think_ns).map(|(r, side)| (preset_of(&m.device), r, side))).collect();
    let mut distinct: Vec<(&'static SsdPreset, &SsdRun)> = Vec::new();
    for (preset, r, _) in runs.iter().flatten() {
        if !distinct.iter().any(|d| d.0.name == preset.name && d.1 == r) {
            distinct.push((preset, r));
        }
    }
    let mut results = Vec::with_capacity(distinct.len());
    let mut commands = 0;
    for (i, (preset, r)) in distinct.iter().enumerate() {
        progress(i, distinct.len());
        let report = run_beside(&model_config(preset, &r.job), r)?;
        commands += report.commands;
        results.push(report);
    }
    progress(distinct.len(), distinct.len());
    let out = rows
        .iter()
        .zip(&runs)
        .map(|(m, r)| {
            let m = Measurement { role: role(m).to_string(), ..m.clone() };
            match r {
                Err(why) => Comparison { m, ours: None, not_compared: Some(why.clone()), command: String::new() },
                Ok((preset, r, side)) => {
                    let i = distinct.iter().position(|d| d.0.name == preset.name && d.1 == r).expect("every run ran");
                    let stats = match side {
                        Side::Job => Some(&results[i].job),
                        Side::Beside => results[i].beside.as_ref(),
                    };
                    let ours = stats.and_then(|s| pick(s, &m.metric));
                    let not_compared = ours.is_none().then(|| format!("no model figure for metric {}", m.metric));
                    Comparison { m, not_compared, ours, command: describe(preset.name, r) }
                }
            }
        })
        .collect();
    Ok(Fidelity { rows: out, runs: distinct.len(), device_commands: commands })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(experiment: &str, bs: u64, qd: u32, metric: &str, value: f64) -> Measurement {
        Measurement {
            device: "980pro".into(),
            experiment: experiment.into(),
            role: "fit".into(),
            engine: "fio-spdk".into(),
            bs_bytes: bs,
            qd,
            metric: metric.into(),
            value,
            ..Measurement::default()
        }
    }

    fn job_of(m: &Measurement, think_ns: u64) -> Result<SsdJob, String> {
        run_of(&[], m, think_ns).map(|(r, _)| r.job)
    }

    #[test]
    fn a_row_maps_to_the_job_fio_ran() {
        let j = job_of(&row("randwrite", 131072, 64, "iops", 1.0), 250).unwrap();
        assert_eq!((j.rw, j.bs_bytes, j.qd, j.think_ns, j.range_blocks), (SsdRw::RandWrite, 131072, 64, 250, 10 << 20));
        assert!(j.ramp_ops >= 128);
        assert_eq!(job_of(&row("write", 4096, 1, "iops", 1.0), 0).unwrap().rw, SsdRw::Write);
        assert_eq!(job_of(&row("randread", 4096, 1, "iops", 1.0), 0).unwrap().rw, SsdRw::RandRead);
        // What it cannot express says why.
        let long = Measurement { bg_op: "randwrite".into(), bg_bs_bytes: 1 << 20, bg_qd: 32, bg_jobs: 4, ..row("randread_beside_randwrite_long", 4096, 1, "lat_ns_p50", 1.0) };
        assert!(job_of(&long, 0).unwrap_err().contains("20-minute"));
        let two = Measurement { bg_op: "write".into(), bg_bs_bytes: 131072, bg_qd: 1, bg_jobs: 2, ..row("randread_beside_write", 4096, 1, "lat_ns_p50", 1.0) };
        assert!(job_of(&two, 0).unwrap_err().contains("2 jobs"));
        assert!(job_of(&row("trim", 4096, 1, "iops", 1.0), 0).unwrap_err().contains("trim"));
        assert!(job_of(&row("write", 512, 1, "iops", 1.0), 0).unwrap_err().contains("block size"));
        assert!(job_of(&Measurement { engine: "fio-io_uring".into(), ..row("write", 4096, 1, "iops", 1.0) }, 0).unwrap_err().contains("engine"));
    }

    #[test]
    fn the_fit_reads_qd1_and_qd512_writes_and_three_read_depths_only() {
        let r = |exp: &str, qd: u32| role(&row(exp, 4096, qd, "iops", 1.0));
        assert_eq!((r("write", 1), r("write", 512)), ("fit", "fit"));
        assert_eq!((r("write", 2), r("write", 256)), ("validation", "validation"));
        assert_eq!((r("randwrite", 1), r("randwrite", 512)), ("validation", "validation"), "random writes are held out whole");
        assert_eq!((r("randread", 1), r("randread", 32), r("randread", 256), r("randread", 64)), ("fit", "fit", "fit", "validation"));
        let beside = Measurement { bg_op: "write".into(), ..row("randread", 4096, 1, "iops", 1.0) };
        assert_eq!(role(&beside), "validation");
    }

    #[test]
    fn every_row_comes_back_compared_or_with_why() {
        let rows = vec![
            row("write", 4096, 1, "clat_ns_p50", 8640.0),
            row("write", 4096, 1, "iops", 110_500.0),
            row("write", 4096, 1, "lat_ns_max", 1.0),
            Measurement { bg_op: "randwrite".into(), bg_jobs: 4, ..row("randread_beside_randwrite_long", 4096, 1, "lat_ns_p50", 69_120.0) },
        ];
        let f = compare(&|_| zonekit_ssd::preset::find("dc-7").unwrap(), &rows, 0, &mut |_, _| {}).unwrap();
        assert_eq!(f.rows.len(), rows.len());
        // The two write rows share one run.
        assert_eq!(f.runs, 1);
        assert!(f.rows[0].ours.is_some() && f.rows[1].ours.is_some());
        assert!(f.rows[0].command.contains("write bs 4096 QD1"));
        // lat_ns_max is a figure of the run (the comparison keeps every metric it can pick).
        assert!(f.rows[2].ours.is_some());
        assert_eq!((f.rows[0].m.role.as_str(), f.rows[3].m.role.as_str()), ("fit", "validation"));
        assert!(f.rows[3].ours.is_none() && f.rows[3].not_compared.as_deref().unwrap().contains("not in the data"));
    }

    #[test]
    fn a_run_is_deterministic_and_its_queue_bounds_its_commands() {
        let preset = zonekit_ssd::preset::find("dc-7").unwrap();
        let job = SsdJob { rw: SsdRw::RandRead, bs_bytes: 8192, qd: 4, think_ns: 100, ops: 2000, ramp_ops: 200, range_blocks: 1 << 16, seed: 3 };
        // A small model of the preset's flash (its own shape needs more than 64 Ki blocks).
        let cfg = SsdConfig { flash: Some(preset.flash()), ..SsdConfig::conventional(job.range_blocks, 0.2, 256) };
        let (a, issued) = run(&cfg, &job).unwrap();
        let (b, _) = run(&cfg, &job).unwrap();
        assert_eq!(a, b);
        assert_eq!((a.ops, issued, a.bytes), (2000, 2200, 2000 * 8192));
        // A read senses flash: no faster than the flash's read time.
        assert!(a.lat_ns_p50 >= preset.flash().read_ns);
        // Four slots: at most four commands' worth of the window is in flight at once.
        assert!(a.iops * a.lat_ns_mean / 1e9 <= 4.0 + 1e-9, "{a:?}");
    }
    fn beside_rows(rate: u64) -> Vec<Measurement> {
        let src = format!("rate_inteference/nvme_{rate}_4");
        let reads = Measurement {
            bg_op: "write".into(),
            bg_bs_bytes: 131072,
            bg_qd: 1,
            bg_jobs: 1,
            bg_rate_bytes_per_sec: rate << 20,
            source_path: src.clone(),
            ..row("randread_beside_write", 4096, 4, "lat_ns_p50", 1.0)
        };
        let writes =
            Measurement { bg_op: "randread".into(), bg_bs_bytes: 4096, bg_qd: 4, bg_jobs: 1, source_path: src, ..row("write_beside_randread", 131072, 1, "bw_bytes_per_s", 1.0) };
        vec![reads, writes]
    }

    #[test]
    fn reads_beside_writes_and_the_writes_beside_them_are_one_run() {
        let rows = beside_rows(500);
        let (a, side_a) = run_of(&rows, &rows[0], 390).unwrap();
        let (b, side_b) = run_of(&rows, &rows[1], 390).unwrap();
        assert_eq!(a, b, "both rows are figures of the same fio run");
        assert_eq!((side_a, side_b), (Side::Job, Side::Beside));
        assert_eq!((a.job.rw, a.job.bs_bytes, a.job.qd), (SsdRw::RandRead, 4096, 4));
        let w = a.beside.unwrap();
        // The writes' rate is only on the reads' row: the writes' row takes it from there.
        assert_eq!((w.job.rw, w.job.bs_bytes, w.job.qd, w.rate_bytes_per_sec), (SsdRw::Write, 131072, 1, 500 << 20));
    }

    #[test]
    fn a_rate_limited_job_beside_keeps_its_rate_and_slows_the_reads() {
        let preset = zonekit_ssd::preset::find("sn540").unwrap();
        let reads = SsdJob { rw: SsdRw::RandRead, bs_bytes: 4096, qd: 1, think_ns: 390, ops: 3000, ramp_ops: 300, range_blocks: 1 << 18, seed: 5 };
        let cfg = SsdConfig { flash: Some(preset.flash()), ..SsdConfig::conventional(reads.range_blocks, 0.07, 256) };
        let alone = run_beside(&cfg, &SsdRun { job: reads.clone(), beside: None }).unwrap();
        assert!(alone.beside.is_none());
        let mut means = vec![alone.job.lat_ns_mean];
        for rate_mib in [10u64, 500] {
            let writes = Beside { job: SsdJob { rw: SsdRw::Write, bs_bytes: 131072, qd: 1, ..reads.clone() }, rate_bytes_per_sec: rate_mib << 20 };
            let r = run_beside(&cfg, &SsdRun { job: reads.clone(), beside: Some(writes) }).unwrap();
            let w = r.beside.expect("the writes' figures");
            // fio's --rate: the writes keep to it over the measured window.
            let rate = (rate_mib << 20) as f64;
            assert!((w.bytes_per_sec - rate).abs() < rate * 0.05, "{rate_mib} MiB/s: {w:?}");
            assert_eq!(r.job.ops, 3000);
            assert!(r.commands > 3300, "the writes' commands count too: {}", r.commands);
            means.push(r.job.lat_ns_mean);
        }
        // Reads meet programs on their dies more often as the writes' rate grows.
        assert!(means[0] < means[1] && means[1] < means[2], "{means:?}");
    }
}

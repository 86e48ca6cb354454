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
//! FEMU figures); [`role`] says which rows the fit read. Rows the harness cannot express are
//! kept, with why (a job beside another, as `sn540/interference.csv` holds).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use zonekit_base::Rng;
use zonekit_device::bench::JobStats;
use zonekit_ssd::preset::SsdPreset;
use zonekit_ssd::{Ssd, SsdConfig, SsdError};

use crate::device::data::Measurement;
use crate::device::fidelity::{pick, Comparison, Fidelity};

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

/// The job a row describes, or why the harness cannot express it.
pub fn job_of(m: &Measurement, think_ns: u64) -> Result<SsdJob, String> {
    if !m.bg_op.is_empty() {
        return Err(format!(
            "a job beside another ({} beside it): the harness runs one job on one host queue; two jobs, one rate-limited, are not built for the SSD model",
            m.bg_op
        ));
    }
    if m.engine != "fio-spdk" {
        return Err(format!("engine {:?}: only fio's SPDK runs are replayed", m.engine));
    }
    let rw = match m.experiment.as_str() {
        "write" => SsdRw::Write,
        "randwrite" => SsdRw::RandWrite,
        "randread" => SsdRw::RandRead,
        e => return Err(format!("no SSD job does {e:?}")),
    };
    if m.bs_bytes == 0 || m.bs_bytes % BLOCK_BYTES != 0 {
        return Err(format!("block size {} bytes: the model's commands are whole 4 KiB blocks", m.bs_bytes));
    }
    if m.qd == 0 {
        return Err("queue depth 0".into());
    }
    Ok(SsdJob { rw, bs_bytes: m.bs_bytes, qd: m.qd, think_ns, ops: OPS, ramp_ops: (OPS / 10).max(2 * m.qd as u64), range_blocks: RANGE_BYTES / BLOCK_BYTES, seed: SEED })
}

/// What reproduces a job's figures, in words (the harness has no command line of its own).
pub fn describe(preset: &str, job: &SsdJob) -> String {
    format!(
        "(ssd preset {preset}, fresh, {} GiB range{}) {} bs {} QD{}, {} commands after {}, think {} ns, seed {}",
        (job.range_blocks * BLOCK_BYTES) >> 30,
        if job.rw == SsdRw::RandRead { " written whole first" } else { "" },
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
    assert!(job.qd > 0 && job.bs_bytes % BLOCK_BYTES == 0 && job.bs_bytes > 0, "a job job_of built");
    let mut ssd = Ssd::new(cfg.clone())?;
    let blocks = job.bs_bytes / BLOCK_BYTES;
    let places = job.range_blocks.min(cfg.logical_blocks) / blocks;
    if places == 0 {
        return Err(SsdError::Config(format!("a {} byte command does not fit the {} block range", job.bs_bytes, job.range_blocks)));
    }
    if job.rw == SsdRw::RandRead {
        for lba in 0..places * blocks {
            ssd.write_meta(lba, None)?;
        }
    }
    let start = ssd.idle_ns().ok_or_else(|| SsdError::Config("the model has no flash timing".into()))?;
    let mut rng = Rng::new(job.seed);
    // Slots by (when free, order queued): the earliest free slot issues next.
    let mut ready: BinaryHeap<Reverse<(u64, u64)>> = (0..job.qd as u64).map(|i| Reverse((start, i))).collect();
    let mut queued = job.qd as u64;
    let (mut issued, mut next_place) = (0u64, 0u64);
    let mut latencies = Vec::with_capacity(job.ops as usize);
    let (mut first_submit, mut last_done) = (None, 0u64);
    while issued < job.ramp_ops + job.ops {
        let Reverse((submit, _)) = ready.pop().expect("qd slots are always queued");
        let place = match job.rw {
            SsdRw::Write => {
                let p = next_place % places;
                next_place += 1;
                p
            }
            SsdRw::RandWrite | SsdRw::RandRead => rng.below(places),
        };
        let lba = place * blocks;
        let done = match job.rw {
            SsdRw::RandRead => ssd.read_at(submit, lba, blocks)?,
            SsdRw::Write | SsdRw::RandWrite => ssd.write_at(submit, lba, blocks, None)?,
        };
        issued += 1;
        if issued > job.ramp_ops {
            first_submit.get_or_insert(submit);
            latencies.push(done - submit);
            last_done = last_done.max(done);
        }
        ready.push(Reverse((done + job.think_ns, queued)));
        queued += 1;
    }
    let bytes = latencies.len() as u64 * job.bs_bytes;
    Ok((JobStats::of(latencies, bytes, last_done.saturating_sub(first_submit.unwrap_or(0))), issued))
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
    let jobs: Vec<Result<(&'static SsdPreset, SsdJob), String>> = rows.iter().map(|m| job_of(m, think_ns).map(|j| (preset_of(&m.device), j))).collect();
    let mut distinct: Vec<&(&'static SsdPreset, SsdJob)> = Vec::new();
    for j in jobs.iter().flatten() {
        if !distinct.iter().any(|d| d.0.name == j.0.name && d.1 == j.1) {
            distinct.push(j);
        }
    }
    let mut results = Vec::with_capacity(distinct.len());
    let mut commands = 0;
    for (i, (preset, job)) in distinct.iter().enumerate() {
        progress(i, distinct.len());
        let (stats, issued) = run(&model_config(preset, job), job)?;
        commands += issued;
        results.push(stats);
    }
    progress(distinct.len(), distinct.len());
    let out = rows
        .iter()
        .zip(&jobs)
        .map(|(m, j)| {
            let m = Measurement { role: role(m).to_string(), ..m.clone() };
            match j {
                Err(why) => Comparison { m, ours: None, not_compared: Some(why.clone()), command: String::new() },
                Ok((preset, job)) => {
                    let i = distinct.iter().position(|d| d.0.name == preset.name && d.1 == *job).expect("every job ran");
                    let ours = pick(&results[i], &m.metric);
                    let not_compared = ours.is_none().then(|| format!("no model figure for metric {}", m.metric));
                    Comparison { m, not_compared, ours, command: describe(preset.name, job) }
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

    #[test]
    fn a_row_maps_to_the_job_fio_ran() {
        let j = job_of(&row("randwrite", 131072, 64, "iops", 1.0), 250).unwrap();
        assert_eq!((j.rw, j.bs_bytes, j.qd, j.think_ns, j.range_blocks), (SsdRw::RandWrite, 131072, 64, 250, 10 << 20));
        assert!(j.ramp_ops >= 128);
        assert_eq!(job_of(&row("write", 4096, 1, "iops", 1.0), 0).unwrap().rw, SsdRw::Write);
        assert_eq!(job_of(&row("randread", 4096, 1, "iops", 1.0), 0).unwrap().rw, SsdRw::RandRead);
        // What it cannot express says why.
        let beside = Measurement { bg_op: "write".into(), bg_bs_bytes: 131072, bg_qd: 1, ..row("randread_beside_write", 4096, 1, "lat_ns_p50", 1.0) };
        assert!(job_of(&beside, 0).unwrap_err().contains("beside"));
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
            Measurement { bg_op: "write".into(), ..row("randread_beside_write", 4096, 1, "lat_ns_p50", 69_120.0) },
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
        assert!(f.rows[3].ours.is_none() && f.rows[3].not_compared.as_deref().unwrap().contains("beside"));
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
}

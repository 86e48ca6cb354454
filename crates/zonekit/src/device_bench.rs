//! `zonekit device bench` (fio-like jobs on a preset's timing model, in virtual time) and
//! `zonekit device fit` (the zn540 preset's figures from the drive's published data). The
//! logic is `zonekit_device::bench` and `zonekit_lab::device::fit`; this parses and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use zonekit_device::bench::{self, BenchReport, BenchSpec, Job, JobStats, Rw};
use zonekit_device::preset;
use zonekit_device::timing::FlashConfig;
use zonekit_report::{bar_chart, csv, fitted_table, TERMINAL_COLUMNS};

/// A size in bytes: a number with an optional k, m or g (binary units), e.g. 4k, 128k, 1m.
fn size(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (num, unit) = match t.strip_suffix(['k', 'm', 'g']) {
        Some(n) => (n, t.chars().last().expect("a suffix")),
        None => (t.as_str(), ' '),
    };
    let n: u64 = num.parse().map_err(|_| format!("{text:?} is not a size (a number with an optional k, m or g)"))?;
    let shift = match unit {
        'k' => 10,
        'm' => 20,
        'g' => 30,
        _ => 0,
    };
    n.checked_mul(1 << shift).ok_or_else(|| format!("{text:?} is too large"))
}

fn rw(text: &str) -> Result<Rw, String> {
    Rw::parse(text).ok_or_else(|| format!("{text:?}: one of {}", Rw::ALL.map(Rw::name).join(", ")))
}

#[derive(Args)]
pub struct BenchArgs {
    /// Device preset whose timing model runs the job (see `zonekit device presets`).
    #[arg(long, default_value = "zn540")]
    preset: String,
    /// What the job does: write, append, read, randread, reset, finish, open, close.
    #[arg(long, value_parser = rw, default_value = "write")]
    rw: Rw,
    /// Bytes per command (4096, 4k, 128k, 1m); a whole number of the device's blocks.
    #[arg(long, value_parser = size, default_value = "4k")]
    bs: u64,
    /// Commands each stream keeps in flight (writes: 1; appends and reads: up to 65536).
    #[arg(long, default_value_t = 1)]
    qd: u32,
    /// Zones driven at once, one stream each (writes and appends: at most the open limit).
    #[arg(long, default_value_t = 1)]
    zones: u32,
    /// reset, finish, close: blocks written into the zone before (opened explicitly, written
    /// long before, the device idle since).
    #[arg(long, conflicts_with = "fill")]
    fill_blocks: Option<u64>,
    /// The same as a share of the zone's capacity, 0 to 1 (`1` is full).
    #[arg(long)]
    fill: Option<f64>,
    /// reset: finish (pad) the zone after its fill, before the reset.
    #[arg(long)]
    finished: bool,
    /// Bytes per second each stream may issue (e.g. 100m); default: no limit.
    #[arg(long, value_parser = size)]
    rate: Option<u64>,
    /// Host time between a completion and the next submission, ns (fio with SPDK: about 390).
    #[arg(long, default_value_t = 0)]
    think_ns: u64,
    /// CPUs the streams' host threads share, fewer than --zones (default: one each); they
    /// then run in turn, --cpu-slice-ns at a time, and a completion waits for its thread
    /// (give --ops enough for the run to span many slices).
    #[arg(long)]
    cpus: Option<u32>,
    /// How long a switched-out stream waits for a CPU, ns (with --cpus).
    #[arg(long)]
    cpu_slice_ns: Option<u64>,
    /// A background job beside the measured one: its kind (then the --bg-* flags apply).
    #[arg(long, value_parser = rw)]
    bg_rw: Option<Rw>,
    #[arg(long, value_parser = size, default_value = "4k")]
    bg_bs: u64,
    #[arg(long, default_value_t = 1)]
    bg_qd: u32,
    #[arg(long, default_value_t = 1)]
    bg_zones: u32,
    #[arg(long, value_parser = size)]
    bg_rate: Option<u64>,
    /// One background command each time the measured job completes this many (a reset
    /// queued every 400 operations, as the characterisation did); default: a closed loop.
    #[arg(long)]
    bg_every: Option<u64>,
    #[arg(long, default_value_t = 0)]
    bg_think_ns: u64,
    /// Measured commands (after --ramp).
    #[arg(long, default_value_t = 20_000)]
    ops: u64,
    /// Warm-up commands, not measured.
    #[arg(long, default_value_t = 2_000)]
    ramp: u64,
    /// Stop after this much virtual time, if sooner (0: no limit).
    #[arg(long, default_value_t = 0)]
    time_limit_ms: u64,
    /// Seed of the random offsets and the model's jitter stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print the spec and report as JSON.
    #[arg(long)]
    json: bool,
    /// Directory for bench.json, bench.csv and latency.svg.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn fill_bytes(blocks: Option<u64>, share: Option<f64>, g: &zonekit_device::Geometry) -> Result<u64> {
    let block = g.block_size_bytes as u64;
    match (blocks, share) {
        (Some(b), _) => match b.checked_mul(block) {
            Some(bytes) => Ok(bytes),
            None => usage!("--fill-blocks {b}: too large"),
        },
        (None, Some(f)) => {
            if !(0.0..=1.0).contains(&f) {
                usage!("--fill {f}: a share of the zone's capacity, 0 to 1");
            }
            Ok((f * g.zone_capacity_blocks as f64).round() as u64 * block)
        }
        (None, None) => Ok(0),
    }
}

/// The spec the flags describe.
fn spec_of(a: &BenchArgs, g: &zonekit_device::Geometry) -> Result<BenchSpec> {
    let job = Job {
        rw: a.rw,
        bs_bytes: a.bs,
        qd: a.qd,
        zones: a.zones,
        fill_bytes: fill_bytes(a.fill_blocks, a.fill, g)?,
        finished: a.finished,
        rate_bytes_per_sec: a.rate.unwrap_or(0),
        every_ops: 0,
        think_ns: a.think_ns,
        cpus: a.cpus.unwrap_or(0),
        cpu_slice_ns: a.cpu_slice_ns.unwrap_or(0),
    };
    if a.cpus == Some(0) {
        usage!("--cpus 0: give at least one CPU, or leave the flag out for one per stream");
    }
    let background = a.bg_rw.map(|rw| Job {
        rw,
        bs_bytes: a.bg_bs,
        qd: a.bg_qd,
        zones: a.bg_zones,
        fill_bytes: 0,
        finished: false,
        rate_bytes_per_sec: a.bg_rate.unwrap_or(0),
        every_ops: a.bg_every.unwrap_or(0),
        think_ns: a.bg_think_ns,
        ..Job::default()
    });
    if background.is_none() && (a.bg_every.is_some() || a.bg_rate.is_some()) {
        usage!("--bg-every and --bg-rate describe a background job: give its kind with --bg-rw");
    }
    let Some(time_limit_ns) = a.time_limit_ms.checked_mul(1_000_000) else { usage!("--time-limit-ms {}: too large", a.time_limit_ms) };
    Ok(BenchSpec { job, background, ops: a.ops, ramp_ops: a.ramp, time_limit_ns, seed: a.seed })
}

fn row(name: &str, s: &JobStats) -> Vec<String> {
    let us = |ns: f64| format!("{:.2}", ns / 1e3);
    vec![
        name.to_string(),
        s.ops.to_string(),
        format!("{:.1}", s.iops / 1e3),
        format!("{:.1}", s.bytes_per_sec / 1e6),
        us(s.lat_ns_mean),
        us(s.lat_ns_p50 as f64),
        us(s.lat_ns_p99 as f64),
        us(s.lat_ns_p999 as f64),
        us(s.lat_ns_max as f64),
    ]
}

const HEADER: [&str; 9] = ["job", "ops", "KIOPS", "MB/s", "mean µs", "p50 µs", "p99 µs", "p99.9 µs", "max µs"];

pub fn run(a: &BenchArgs) -> Result<ExitCode> {
    let Some(p) = preset::find(&a.preset) else { usage!("--preset {:?}: no such preset; valid: {}", a.preset, preset::names().join(", ")) };
    let spec = spec_of(a, &p.geometry)?;
    if let Err(e) = bench::check(&p.geometry, &spec) {
        // The job's fill is one field, given by either flag: named as the user gave it.
        match (e.field.as_str(), a.fill_blocks, a.fill) {
            ("fill", Some(blocks), _) => usage!("--fill-blocks {blocks}: {}", e.reason),
            ("fill", None, Some(share)) => usage!("--fill {share}: {}", e.reason),
            _ => usage!("--{e}"),
        }
    }
    if let Some(out) = &a.out {
        crate::out_dir::claim_out(out, "device bench", false)?;
    }
    let started = std::time::Instant::now();
    let report: BenchReport = bench::run(&p.geometry, &p.flash, &spec).map_err(|e| crate::error::Usage(format!("--{e}")))?;
    let wall = started.elapsed().as_secs_f64();
    let mut rows = vec![row(spec.job.rw.name(), &report.job)];
    if let (Some(bg), Some(s)) = (&spec.background, &report.background) {
        rows.push(row(&format!("bg {}", bg.rw.name()), s));
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "preset": p.name, "spec": spec, "report": report }))?);
    } else {
        say!(
            "{} on {} in virtual time ({:.3} s of it; {} device commands in {:.2} s of wall time)",
            describe(&spec),
            p.name,
            report.elapsed_ns as f64 / 1e9,
            report.device_commands,
            wall
        );
        print!("{}", fitted_table(&HEADER, &rows, TERMINAL_COLUMNS));
    }
    if let Some(out) = &a.out {
        let write = |name: &str, text: &str| zonekit_base::atomic::write(out.join(name), text).with_context(|| format!("writing {}", out.join(name).display()));
        write("bench.json", &serde_json::to_string_pretty(&serde_json::json!({ "preset": p.name, "spec": spec, "report": report }))?)?;
        write("bench.csv", &csv(&HEADER, &rows))?;
        let s = &report.job;
        let bars: Vec<(String, f64)> = [("mean", s.lat_ns_mean), ("p50", s.lat_ns_p50 as f64), ("p99", s.lat_ns_p99 as f64), ("p99.9", s.lat_ns_p999 as f64)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v / 1e3))
            .collect();
        write("latency.svg", &bar_chart(&format!("{} on {}: latency", describe(&spec), p.name), "µs", &bars))?;
        println!("wrote {}/{{bench.json, bench.csv, latency.svg}}", out.display());
        crate::out_dir::finish(out)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(spec: &BenchSpec) -> String {
    let job = |j: &Job| {
        if j.rw.is_io() {
            format!("{} {} KiB, QD {}, {} zone(s)", j.rw.name(), j.bs_bytes / 1024, j.qd, j.zones)
        } else {
            format!("{} (fill {} blocks{})", j.rw.name(), j.fill_bytes / 4096, if j.finished { ", finished" } else { "" })
        }
    };
    match &spec.background {
        Some(bg) => format!("{} beside {}", job(&spec.job), job(bg)),
        None => job(&spec.job),
    }
}

#[derive(Args)]
pub struct FitArgs {
    /// The measurements' directory (holding zn540/*.csv); default: the checkout's
    /// crates/zonekit-device/data.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Print the fitted flash config as JSON.
    #[arg(long)]
    json: bool,
    /// Which drive's preset to fit: zn540 (the default), or a conventional drive's flash
    /// timing, 980pro or sn540 (its fio runs' QD1 and QD512 writes, the SN540's reads at QD1,
    /// 32 and 256).
    #[arg(long)]
    drive: Option<String>,
}

pub fn fit(a: &FitArgs) -> Result<ExitCode> {
    match a.drive.as_deref() {
        None | Some("zn540") => {}
        Some(d @ ("980pro" | "sn540")) => return fit_conventional(a, d),
        Some(d) => usage!("--drive {d:?}: valid: zn540, 980pro, sn540"),
    }
    let dir = a.data.clone().unwrap_or_else(zonekit_lab::device::data::default_dir);
    if !dir.join("zn540").is_dir() {
        usage!("--data {}: no zn540/ directory of measurements there", dir.display());
    }
    let rows = zonekit_lab::device::data::read_zn540(&dir).map_err(crate::error::lab)?;
    let fit = zonekit_lab::device::fit::fit(&rows).map_err(crate::error::lab)?;
    let heading = format!("The zn540 preset fitted to the ZN540's published measurements ({} rows read from {}, only role = fit used):", rows.len(), dir.display());
    let shipped = preset::find("zn540").expect("the zn540 preset exists").flash;
    print_fit(a.json, &heading, &fit.figures, &fit.flash, &shipped, "The zn540 preset", "preset.rs")
}

/// What `device fit` prints: the fitted config as JSON, or the figures' table and whether the
/// shipped preset (`name`, defined in `file`) holds exactly them.
fn print_fit(json: bool, heading: &str, figures: &[zonekit_lab::device::fit::Figure], fitted: &FlashConfig, shipped: &FlashConfig, name: &str, file: &str) -> Result<ExitCode> {
    if json {
        println!("{}", serde_json::to_string_pretty(fitted)?);
        return Ok(ExitCode::SUCCESS);
    }
    say!("{heading}");
    let table: Vec<Vec<String>> = figures.iter().map(|f| vec![f.name.to_string(), f.value.clone(), f.provenance.name().to_string(), f.how.clone()]).collect();
    print!("{}", fitted_table(&["figure", "value", "provenance", "from"], &table, TERMINAL_COLUMNS));
    if shipped == fitted {
        println!("\n{name} holds exactly these figures.");
    } else {
        println!("\n{name} differs from this fit; the fitted config (paste into {file}):\n{fitted:#?}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `device fit --drive 980pro|sn540`: a conventional drive's flash timing from its fit rows.
fn fit_conventional(a: &FitArgs, drive: &str) -> Result<ExitCode> {
    let dir = a.data.clone().unwrap_or_else(zonekit_lab::device::data::default_dir);
    for d in ["zn540", drive] {
        if !dir.join(d).is_dir() {
            usage!("--data {}: no {d}/ directory of measurements there", dir.display());
        }
    }
    let rows = zonekit_lab::device::data::read_conventional(&dir).map_err(crate::error::lab)?;
    // fio's host time between I/Os, the ZN540 fit's (how the comparison replays fio's runs).
    let think_ns = zonekit_lab::device::fit::fio_think_ns(&zonekit_lab::device::data::read_zn540(&dir).map_err(crate::error::lab)?).map_err(crate::error::lab)?;
    let fit = zonekit_lab::device::conventional_fit::fit(&rows, drive, think_ns).map_err(crate::error::lab)?;
    let heading = format!("The {drive} flash timing fitted to the drive's published fio runs (rows read from {}; only the rows marked fit used):", dir.display());
    let shipped = preset::find_flash(drive).expect("the drive's flash preset exists");
    print_fit(a.json, &heading, &fit.figures, &fit.flash, &shipped, &format!("The {drive} flash preset"), "preset/conventional.rs")
}

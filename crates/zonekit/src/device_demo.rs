//! `zonekit device demo`: every preset device, emulated in metadata-only mode under its flash
//! timing model, runs the same zoned workload (streamed appends, random reads, resets) in
//! virtual time.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde::Serialize;
use zonekit_device::timing::TimedDevice;
use zonekit_device::{preset, Lba, MemDevice, StorageMode, ZoneAction, ZoneFilter, ZoneId, ZoneState, ZonedDevice};

use zonekit_report::bar_chart;

#[derive(Args)]
pub struct DeviceDemoArgs {
    /// Directory for the results (CSV, JSON, SVG).
    #[arg(long, default_value = "zonekit-out/device-demo")]
    pub out: PathBuf,
}

const WRITE_CHUNK_BYTES: usize = 128 << 10;
const READ_BYTES: usize = 4 << 10;
const QUEUE_DEPTH: usize = 32;
const TARGET_WRITE_BYTES: u64 = 256 << 20;
const READS: u32 = 4000;

#[derive(Serialize)]
struct PresetResult {
    preset: &'static str,
    streams: u32,
    written_mib: u64,
    write_mb_per_s: f64,
    read_kiops: f64,
    read_p50_us: f64,
    read_p99_us: f64,
    reset_mean_ms: f64,
    zones_reset: u64,
}

/// SplitMix64: a tiny seeded generator, so the demo is the same on every run.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn run_preset(p: &preset::Preset) -> Result<PresetResult> {
    let g = p.geometry;
    let mem = MemDevice::new(g, p.behavior, StorageMode::MetadataOnly)?;
    let mut dev = TimedDevice::new(mem, p.flash, QUEUE_DEPTH)?;
    let streams = g.open_zones_max.unwrap_or(4).min(4);
    let chunk_blocks = (WRITE_CHUNK_BYTES / g.block_size_bytes as usize) as u64;
    let target = TARGET_WRITE_BYTES.min(g.usable_bytes() / 2);
    let chunk = vec![0u8; WRITE_CHUNK_BYTES.min(g.zone_capacity_bytes() as usize)];
    let mut next_zone = g.conventional_zone_count;
    let mut open: Vec<ZoneId> = Vec::new();
    let mut written = 0u64;
    let mut turn = 0usize;
    // Phase 1: `streams` zones written round-robin, a new zone as each fills.
    while written < target {
        while open.len() < streams as usize && next_zone < g.zone_count {
            open.push(ZoneId(next_zone));
            next_zone += 1;
        }
        if open.is_empty() {
            break;
        }
        let i = turn % open.len();
        turn += 1;
        let zone = open[i];
        let left = g.zone_capacity_blocks - dev.zone(zone)?.written_blocks();
        let blocks = left.min(chunk_blocks).min(chunk.len() as u64 / g.block_size_bytes as u64);
        dev.append(zone, &chunk[..(blocks * g.block_size_bytes as u64) as usize])?;
        written += blocks * g.block_size_bytes as u64;
        if blocks == left {
            open.remove(i);
        }
    }
    dev.flush()?;
    let write_ns = dev.report().elapsed_ns;

    // Phase 2: random 4 KiB reads over what was written.
    let written_blocks = written / g.block_size_bytes as u64;
    let zone_data = dev.report_all(ZoneFilter::All)?.into_iter().filter(|z| z.state != ZoneState::Empty && z.state != ZoneState::NotWritePointer).collect::<Vec<_>>();
    let mut rng = SplitMix(0x2025);
    let read_start = dev.host_now_ns();
    let mut buf = vec![0u8; READ_BYTES];
    let read_blocks = (READ_BYTES / g.block_size_bytes as usize) as u64;
    for _ in 0..READS {
        let z = &zone_data[(rng.next() % zone_data.len() as u64) as usize];
        let used = if z.state == ZoneState::Full { z.capacity_blocks } else { z.written_blocks() };
        let off = rng.next() % used.saturating_sub(read_blocks - 1).max(1);
        dev.read(Lba(z.start.0 + off), &mut buf)?;
    }
    dev.flush()?;
    let read_ns = dev.host_now_ns() - read_start;

    // Phase 3: reset everything written.
    let zones_reset = dev.manage_all(ZoneAction::Reset)? as u64;
    dev.flush()?;
    let r = dev.report();
    debug_assert!(written_blocks > 0);
    Ok(PresetResult {
        preset: p.name,
        streams,
        written_mib: written >> 20,
        write_mb_per_s: written as f64 / 1e6 / (write_ns as f64 / 1e9),
        read_kiops: READS as f64 / (read_ns as f64 / 1e9) / 1e3,
        read_p50_us: r.read_latency.quantile(0.5) as f64 / 1e3,
        read_p99_us: r.read_latency.quantile(0.99) as f64 / 1e3,
        reset_mean_ms: r.reset_latency.mean() / 1e6,
        zones_reset,
    })
}

fn write_file(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}

pub fn run(args: &DeviceDemoArgs) -> Result<ExitCode> {
    say!("zonekit device demo: every preset device, emulated under its flash timing model (virtual time, QD {QUEUE_DEPTH})");
    say!("workload: up to {} MiB of 128 KiB appends over up to 4 zones at once, {READS} random 4 KiB reads, reset of every written zone", TARGET_WRITE_BYTES >> 20);
    println!();
    let mut results = Vec::new();
    for p in preset::PRESETS.iter() {
        results.push(run_preset(p).with_context(|| format!("preset {}", p.name))?);
    }
    println!("{:<14} {:>7} {:>9} {:>10} {:>10} {:>11} {:>11} {:>10}", "preset", "streams", "MiB", "write MB/s", "read kIOPS", "read p50 us", "read p99 us", "reset ms");
    for r in &results {
        println!(
            "{:<14} {:>7} {:>9} {:>10.0} {:>10.1} {:>11.0} {:>11.0} {:>10.2}",
            r.preset, r.streams, r.written_mib, r.write_mb_per_s, r.read_kiops, r.read_p50_us, r.read_p99_us, r.reset_mean_ms
        );
    }
    crate::out_dir::claim_out(&args.out, "device demo", false)?;
    let mut csv = String::from("preset,streams,written_mib,write_mb_per_s,read_kiops,read_p50_us,read_p99_us,reset_mean_ms,zones_reset\n");
    for r in &results {
        csv.push_str(&format!(
            "{},{},{},{:.1},{:.2},{:.1},{:.1},{:.3},{}\n",
            r.preset, r.streams, r.written_mib, r.write_mb_per_s, r.read_kiops, r.read_p50_us, r.read_p99_us, r.reset_mean_ms, r.zones_reset
        ));
    }
    write_file(&args.out.join("devices.csv"), &csv)?;
    write_file(&args.out.join("devices.json"), &serde_json::to_string_pretty(&results)?)?;
    let bars = |f: fn(&PresetResult) -> f64| results.iter().map(|r| (r.preset.to_string(), f(r))).collect::<Vec<_>>();
    write_file(&args.out.join("write_throughput.svg"), &bar_chart("Sequential append throughput (virtual time)", "MB/s", &bars(|r| r.write_mb_per_s)))?;
    write_file(&args.out.join("read_latency_p99.svg"), &bar_chart("Random 4 KiB read latency, p99 at QD 32", "µs", &bars(|r| r.read_p99_us)))?;
    println!("\nwrote {}/{{devices.csv, devices.json, write_throughput.svg,", args.out.display());
    println!("      read_latency_p99.svg}}");
    crate::out_dir::finish(&args.out)?;
    Ok(ExitCode::SUCCESS)
}

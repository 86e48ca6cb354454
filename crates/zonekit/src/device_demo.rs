//! `zonekit device demo`: every preset device under the same zoned workload in virtual time
//! (`zonekit_lab::device::demo`), printed and charted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use zonekit_device::preset;
use zonekit_lab::device::demo::{run_preset, PresetResult, QUEUE_DEPTH, READS, TARGET_WRITE_BYTES};

use zonekit_report::bar_chart;

#[derive(Args)]
pub struct DeviceDemoArgs {
    /// Directory for the results (CSV, JSON, SVG).
    #[arg(long, default_value = "zonekit-out/device-demo")]
    pub out: PathBuf,
}

fn write_file(path: &Path, contents: &str) -> Result<()> {
    zonekit_base::atomic::write(path, contents).with_context(|| format!("writing {}", path.display()))
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

//! `zonekit serve ...`: Zonekit devices as kernel block devices, for unmodified software.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use zonekit_device::emu::{Emulator, Media};
use zonekit_device::fault::{FaultOn, FaultyDevice};
use zonekit_device::timing::TimedDevice;
use zonekit_device::{preset, FileDevice, MemDevice, OpenOptions, StorageMode, ZoneId, ZonedDevice};
use zonekit_serve::nbd::{Export, Listen, NbdOptions};
use zonekit_serve::timed::WallClockTimed;
use zonekit_serve::ublk::{self, UblkOptions};
use zonekit_serve::volume::{Volume, VolumeError, VolumeSpec};
use zonekit_serve::Snapshot;

use crate::device_cmd::{GeometryArgs, ResolvedDevice};

#[derive(Subcommand)]
pub enum ServeCommand {
    /// Export a zoned device as a host-managed zoned /dev/ublkbN (Linux 6.6 or newer, ublk_drv
    /// loaded; as root): blkzone, fio --zonemode=zbd, f2fs and btrfs run on it unmodified.
    /// Serves until SIGINT or SIGTERM, then removes the device and prints the counters. Needs a
    /// zonekit built with `--features ublk`.
    Ublk(UblkArgs),
    /// Export the block FTL as a random-write volume over NBD (fixed newstyle; a Unix socket
    /// or TCP), on an emulated device or a /dev zoned device, with any placement and victim
    /// policy. A flush makes every write before it durable (the mapping is journaled on the
    /// device): after a kill the volume reopens with everything flushed. Serves until SIGINT
    /// or SIGTERM.
    Nbd(NbdArgs),
}

#[derive(Args)]
pub struct NbdArgs {
    /// The zoned device to hold the volume: an emulated image or a /dev zoned device, every
    /// sequential zone empty (a new volume) or holding a volume from an earlier run. Without
    /// one, a memory emulator from --preset and the geometry flags (gone on exit).
    device: Option<PathBuf>,
    #[command(flatten)]
    geometry: GeometryArgs,
    /// Listen on this Unix socket (default: zonekit-nbd.sock in the current directory).
    #[arg(long, conflicts_with = "tcp", value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Listen on this TCP address instead, e.g. 127.0.0.1:10809.
    #[arg(long, value_name = "ADDR")]
    tcp: Option<std::net::SocketAddr>,
    /// The export's name (clients may also ask for the default, empty name).
    #[arg(long, default_value = "zonekit")]
    name: String,
    /// Placement policy (`zonekit policies` lists them).
    #[arg(long, default_value = "sepbit")]
    placement: String,
    /// Placement parameter, e.g. --param r1=0.5 (repeatable).
    #[arg(long = "param")]
    params: Vec<String>,
    /// GC victim policy, NAME or NAME:VALUE.
    #[arg(long, default_value = "greedy")]
    victim: String,
    /// Share of the data zones exported when the volume is created (the rest is
    /// over-provisioning for GC), at most what the FTL holds beside its open zones and GC's
    /// reserve; a volume from an earlier run keeps its size.
    #[arg(long, default_value_t = 0.8)]
    utilization: f64,
    /// When GC runs: free-zones (as late as the space allows), gp-all or gp-sealed.
    #[arg(long, default_value = "free-zones", value_parser = ["gp-all", "gp-sealed", "free-zones"])]
    gc_trigger: String,
    #[arg(long, default_value_t = zonekit_ftl::engine::DEFAULT_GC_THRESHOLD)]
    gc_threshold: f64,
    /// Write the counters as JSON to this file while serving and at exit.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    stats_interval_ms: u64,
    /// Log every read and write served, block by block, as a Zonekit binary trace (replay it
    /// with `zonekit cache run --trace`, `replay`, `trace analyze`). Complete when the server
    /// stops on SIGINT or SIGTERM.
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
}

#[derive(Copy, Clone, ValueEnum)]
enum FailOnName {
    Any,
    Writes,
    Reads,
    Flushes,
    ZoneManagement,
}

#[derive(Args)]
pub struct UblkArgs {
    /// An emulated device image to serve (from `zonekit device create`; kept on exit). Without
    /// one, a memory emulator from --preset and the geometry flags (gone on exit).
    image: Option<PathBuf>,
    #[command(flatten)]
    geometry: GeometryArgs,
    /// Charge every request to the preset's flash timing model, its clock following the wall
    /// clock; the counters then carry the modelled latencies.
    #[arg(long)]
    timing: bool,
    /// Complete each request when the timing model says the drive would (needs --timing), so
    /// latency and bandwidth look like the preset's.
    #[arg(long, requires = "timing")]
    pace: bool,
    /// The ublk device number (/dev/ublkbN); by default the first free one.
    #[arg(long)]
    id: Option<u32>,
    /// Requests the kernel may have in flight.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=4096))]
    queue_depth: u16,
    /// Largest request, in KiB (also the zone-append limit).
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(4..=65536))]
    max_io_kib: u32,
    /// Write the counters as JSON to this file while serving (every --stats-interval-ms) and
    /// at exit.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..))]
    stats_interval_ms: u64,
    /// Log every read, write and zone append served (appends where they landed), block by
    /// block, as a Zonekit binary trace. Complete when the server stops on SIGINT or SIGTERM.
    #[arg(long, value_name = "FILE")]
    trace_out: Option<PathBuf>,
    /// Take this zone offline before serving (repeatable).
    #[arg(long = "offline-zone", value_name = "ZONE")]
    offline_zones: Vec<u32>,
    /// Make this zone read-only before serving (repeatable).
    #[arg(long = "read-only-zone", value_name = "ZONE")]
    read_only_zones: Vec<u32>,
    /// Fail the Nth (0-based) operation --fail-on matches with EIO.
    #[arg(long, value_name = "N")]
    fail_nth: Option<u64>,
    /// Which operations --fail-nth counts.
    #[arg(long, value_enum, requires = "fail_nth")]
    fail_on: Option<FailOnName>,
    /// Keep failing every later matching operation (a device that died).
    #[arg(long, requires = "fail_nth")]
    fail_sticky: bool,
}

pub fn run(cmd: ServeCommand) -> Result<ExitCode> {
    match cmd {
        ServeCommand::Ublk(args) => serve_ublk(args),
        ServeCommand::Nbd(args) => serve_nbd(args),
    }
}

/// The emulator to serve, with the zone faults applied, and the preset whose flash it models.
fn emulator(a: &UblkArgs) -> Result<(Box<dyn ZonedDevice + Send>, Option<preset::Preset>)> {
    match &a.image {
        Some(path) => {
            if a.geometry.any_given() {
                usage!("{}: an image has its own geometry; the geometry flags describe a memory device (leave out the image or the flags)", path.display());
            }
            let mut dev = FileDevice::open_with_options(path, &OpenOptions::default()).with_context(|| format!("opening {}", path.display()))?;
            inject_zone_faults(&mut dev, a)?;
            let preset = preset::find(dev.media().preset());
            Ok((Box::new(dev), preset))
        }
        None => {
            let ResolvedDevice { geometry, behavior, preset, .. } = a.geometry.resolve()?;
            let mut dev = MemDevice::new(geometry, behavior, StorageMode::Data)?;
            inject_zone_faults(&mut dev, a)?;
            Ok((Box::new(dev), Some(preset)))
        }
    }
}

/// The zone faults of the command line, on the emulator before it is served.
fn inject_zone_faults<M: Media>(dev: &mut Emulator<M>, a: &UblkArgs) -> Result<()> {
    for &z in &a.read_only_zones {
        dev.inject_read_only(ZoneId(z)).map_err(|e| crate::error::Usage(format!("--read-only-zone {z}: {e}")))?;
    }
    // A zone goes offline through read-only, as a failing drive's do (ZNS: only a read-only
    // zone may go offline).
    for &z in &a.offline_zones {
        dev.inject_read_only(ZoneId(z)).and_then(|_| dev.inject_offline(ZoneId(z))).map_err(|e| crate::error::Usage(format!("--offline-zone {z}: {e}")))?;
    }
    Ok(())
}

fn arm<D: ZonedDevice>(dev: &mut FaultyDevice<D>, a: &UblkArgs) {
    if let Some(nth) = a.fail_nth {
        let on = match a.fail_on.unwrap_or(FailOnName::Any) {
            FailOnName::Any => FaultOn::Any,
            FailOnName::Writes => FaultOn::Writes,
            FailOnName::Reads => FaultOn::Reads,
            FailOnName::Flushes => FaultOn::Flushes,
            FailOnName::ZoneManagement => FaultOn::ZoneManagement,
        };
        dev.fail_nth(on, nth, a.fail_sticky);
    }
}

fn serve_ublk(a: UblkArgs) -> Result<ExitCode> {
    let (base, preset) = emulator(&a)?;
    let g = *base.geometry();
    let Some(max_io_bytes) = a.max_io_kib.checked_mul(1024) else { usage!("--max-io-kib {}: over 4 GiB", a.max_io_kib) };
    let what = a.image.as_ref().map_or_else(|| a.geometry.size_flags(), |p| p.display().to_string());
    ublk::check_geometry(&g, max_io_bytes).map_err(|e| crate::error::Usage(format!("{what} --max-io-kib {}: {e}", a.max_io_kib)))?;
    let options = UblkOptions {
        dev_id: a.id.map_or(-1, |id| id as i32),
        queue_depth: a.queue_depth,
        max_io_bytes,
        stats_path: a.stats.clone(),
        stats_interval: Duration::from_millis(a.stats_interval_ms),
        pace: a.pace,
        trace_out: a.trace_out.clone(),
    };
    let describe = format!(
        "{} zones of {} MiB ({} MiB capacity, {} conventional), open limit {}, active limit {}, {} B blocks{}",
        g.zone_count,
        g.zone_size_bytes() >> 20,
        g.zone_capacity_bytes() >> 20,
        g.conventional_zone_count,
        g.open_zones_max.map_or("none".into(), |n| n.to_string()),
        g.active_zones_max.map_or("none".into(), |n| n.to_string()),
        g.block_size_bytes,
        if a.pace {
            ", paced to the flash model"
        } else if a.timing {
            ", timed"
        } else {
            ""
        },
    );
    let ready = move |id: i32| {
        println!("zonekit serve ublk: /dev/ublkb{id} ready: {describe}; stop with Ctrl-C or SIGTERM");
    };
    let snapshot = if a.timing {
        let Some(preset) = preset else { usage!("--timing: the image was created with a custom geometry, so it has no preset flash model to time against") };
        let timed = TimedDevice::new(base, preset.flash, a.queue_depth as usize).with_context(|| format!("the {} flash model on this geometry", preset.name))?;
        let mut dev = FaultyDevice::new(WallClockTimed::new(timed));
        arm(&mut dev, &a);
        ublk::serve(dev, &options, ready)?
    } else {
        let mut dev = FaultyDevice::new(base);
        arm(&mut dev, &a);
        ublk::serve(dev, &options, ready)?
    };
    print_summary("ublk", &snapshot);
    Ok(ExitCode::SUCCESS)
}

fn print_summary(what: &str, s: &Snapshot) {
    println!("zonekit serve {what}: stopped after {:.1} s", s.uptime_s);
    for (kind, row) in &s.requests {
        if row.ops + row.failed > 0 {
            println!("  {kind:<16} {:>10} ok {:>8} failed {:>14} bytes  p50 {} ns  p99 {} ns", row.ops, row.failed, row.bytes, row.service_ns_p50, row.service_ns_p99);
        }
    }
    let errors: Vec<String> = s.errors_by_errno.iter().map(|(e, n)| format!("{e} {n}")).collect();
    println!(
        "  host wrote {} B, media {} B (WAF {}), resets {} (max per zone {}){}",
        s.host_bytes_written,
        s.media_bytes_written,
        s.waf.map_or("-".into(), |w| format!("{w:.3}")),
        s.resets,
        s.resets_per_zone_max,
        if errors.is_empty() { String::new() } else { format!(", errors: {}", errors.join(", ")) }
    );
    if let Some(log) = &s.request_log {
        println!("  request log: {} requests, {} block records in {}", log.requests, log.records, log.path.display());
    }
}

fn serve_nbd(a: NbdArgs) -> Result<ExitCode> {
    let dev: Box<dyn ZonedDevice + Send> = match &a.device {
        Some(path) => {
            if a.geometry.any_given() {
                usage!("{}: the device has its own geometry; the geometry flags describe a memory device", path.display());
            }
            zonekit_device::open_path(path).with_context(|| format!("opening {}", path.display()))?.device
        }
        None => {
            let ResolvedDevice { geometry: g, behavior, .. } = a.geometry.resolve()?;
            // The FTL's slots are u32: refuse a larger device before its zones are allocated.
            let blocks = g.zone_count as u64 * g.zone_capacity_blocks;
            if blocks > zonekit_ftl::engine::PHYSICAL_BLOCKS_MAX {
                usage!(
                    "{}: {} zones of {} blocks are {blocks} blocks; the FTL maps at most {}",
                    a.geometry.size_flags(),
                    g.zone_count,
                    g.zone_capacity_blocks,
                    zonekit_ftl::engine::PHYSICAL_BLOCKS_MAX
                );
            }
            Box::new(MemDevice::new(g, behavior, StorageMode::Data)?)
        }
    };
    if !(0.0..1.0).contains(&a.gc_threshold) {
        usage!("--gc-threshold {}: a share of free space in [0, 1)", a.gc_threshold);
    }
    if !(a.utilization > 0.0 && a.utilization < 1.0) {
        usage!("--utilization {}: must be between 0 and 1", a.utilization);
    }
    let spec = VolumeSpec {
        placement: a.placement.clone(),
        placement_params: crate::params::parse_params("--param", &a.params)?,
        victim: a.victim.clone(),
        utilization: a.utilization,
        trigger: zonekit_ftl::GcTrigger::from_name(&a.gc_trigger).expect("clap checked the name"),
        gc_threshold: a.gc_threshold,
    };
    // A memory device is named by the flags that sized it, so a refusal names them.
    let what = a.device.as_ref().map_or_else(|| format!("the memory device ({})", a.geometry.size_flags()), |p| p.display().to_string());
    let volume = Volume::open(dev, &spec).map_err(|e| match e {
        VolumeError::Usage(m) => anyhow::Error::new(crate::error::Usage(format!("{what}: {m}"))),
        e => anyhow::Error::new(e).context(format!("opening the volume on {what}")),
    })?;
    let (blocks, block_bytes) = (volume.blocks(), volume.block_bytes());
    let listen = match (a.tcp, &a.socket) {
        (Some(addr), _) => Listen::Tcp(addr),
        (None, Some(p)) => Listen::Unix(p.clone()),
        (None, None) => Listen::Unix(PathBuf::from("zonekit-nbd.sock")),
    };
    let options = NbdOptions { listen, stats_path: a.stats.clone(), stats_interval: Duration::from_millis(a.stats_interval_ms), trace_out: a.trace_out.clone() };
    let export = Export::new(&a.name, volume);
    let describe = format!("{} MiB ({blocks} blocks of {block_bytes} B), {} + {}", (blocks * block_bytes as u64) >> 20, a.placement, a.victim);
    let s = zonekit_serve::nbd::serve(export, &options, |l| println!("zonekit serve nbd: {l} (export {:?}) ready: {describe}; stop with Ctrl-C or SIGTERM", a.name))?;
    print_summary("nbd", &s);
    if let Some(e) = &s.engine {
        println!(
            "  FTL: user blocks {}, GC blocks {}, GC count {}, FTL WAF {}, journal commits {}",
            e["user_blocks"], e["gc_blocks"], e["gc_count"], e["ftl_waf"], e["journal_commits"]
        );
    }
    Ok(ExitCode::SUCCESS)
}

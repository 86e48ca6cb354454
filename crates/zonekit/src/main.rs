//! `zonekit`: the command-line front door. Parses arguments, wires the crates together, prints.

/// Returns a usage error (exit status 2) from the enclosing function: the request is at fault
/// (a bad value, name or path), not the run.
macro_rules! usage {
    ($($arg:tt)*) => {
        return Err($crate::error::Usage(format!($($arg)*)).into())
    };
}

/// Prints a line of prose wrapped to the terminal's 100 columns (a leading `\n` kept).
macro_rules! say {
    ($($arg:tt)*) => {{
        let text = format!($($arg)*);
        let body = text.trim_start_matches('\n');
        print!("{}{}", "\n".repeat(text.len() - body.len()), zonekit_report::wrapped("", body, zonekit_report::TERMINAL_COLUMNS));
    }};
}

mod args;
mod cache_cmd;
mod cache_image;
mod claims_cmd;
mod demo;
mod device_bench;
mod device_cmd;
mod device_demo;
mod error;
mod experiment_cmd;
mod experiment_run;
mod fdp_theory_cmd;
mod fidelity_cmd;
mod fs_cmd;
mod kv_bench_cmd;
mod ocssd_cmd;
mod open;
mod out_dir;
mod params;
mod progress;
mod replay_cmd;
mod report_cmd;
mod serve_cmd;
mod ssd_cmd;
mod sweep_run;
mod trace_cmd;
mod tree_cmd;
mod tree_image;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::Usage;

#[derive(Parser)]
#[command(name = "zonekit", version, about = "Toolkit for host-managed zoned flash storage (NVMe ZNS, Open-Channel SSDs)", term_width = 100, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The main job on built-in defaults (what `zonekit` with no arguments runs).
    Demo(demo::DemoArgs),
    /// Create, inspect and manage zoned devices: emulated images and /dev zoned block devices.
    Device(DeviceGroup),
    /// Read, convert and generate block traces.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCommand),
    /// Characterise a workload: write counts, lifetimes, thresholds (tables + SVG charts).
    Analyze(trace_cmd::AnalyzeArgs),
    /// Replay a trace or workload through the block FTL: WAF, GC traffic, GP, wear.
    ///
    /// A trace is read once into a replay stream (each write's dense block id and time, 12
    /// bytes a write), kept beside the trace as TRACE.zkr and reused while the trace and the
    /// way it is read are unchanged (in the temporary directory when the trace's directory
    /// cannot be written); delete it freely.
    Replay(replay_cmd::ReplayArgs),
    /// Run a grid of workloads x placements x victims x parameters in parallel (resumable,
    /// shardable with --shard I/N; `sweep merge` combines the shards).
    Sweep(replay_cmd::SweepCmd),
    /// List every policy family's policies with their parameters and defaults.
    Policies,
    // The summary names every experiment, from their list (it cannot fall behind it).
    #[command(about = experiment_cmd::Experiment::summary())]
    Experiment(experiment_cmd::ExperimentArgs),
    /// One self-contained HTML page (settings, tables, inline charts) of a results directory;
    /// every experiment also writes it at its end, as DIR/report.html.
    Report(report_cmd::ReportArgs),
    /// A seed's evaluation claims as data: `claims render DIR` writes the acceptance table
    /// (verdicts by rule) into the write-up, `claims check DIR` fails when the write-up, the
    /// claims and the result files disagree.
    #[command(subcommand)]
    Claims(claims_cmd::ClaimsCommand),
    /// The zoned file system: mkfs, ls, df, fsck, dump, put, cat.
    Fs(FsGroup),
    /// Seed 001's experiment: RocksDB's db_bench on the zoned file system, six configurations,
    /// growing key counts, against RocksDB on tmpfs (needs db_bench and the plugin).
    KvBench(kv_bench_cmd::KvBenchArgs),
    /// Seed 003: the ZB+-tree and the copy-on-write B+-tree under YCSB-style workloads.
    #[command(subcommand)]
    Tree(tree_cmd::TreeCommand),
    /// Seed 002: host FTLs (page, superblock, hybrid; DFTL, FAST) on an open-channel SSD.
    #[command(subcommand)]
    Ocssd(ocssd_cmd::OcssdCommand),
    /// Seed 004: the block cache on flash over an HDD; item-level cache policies (LRU, FIFO,
    /// S3-FIFO, SIEVE, Belady) replayed over traces.
    #[command(subcommand)]
    Cache(cache_cmd::CacheCommand),
    /// Zonekit devices as kernel block devices for unmodified software: `serve ublk` exports
    /// an emulated zoned drive as /dev/ublkbN.
    #[command(subcommand)]
    Serve(serve_cmd::ServeCommand),
    /// Conventional and NVMe FDP SSD models (device GC, reclaim units and handles, FDP's log
    /// pages): `ssd presets`, and `ssd run` to drive one with a generated workload.
    #[command(subcommand)]
    Ssd(ssd_cmd::SsdCommand),
}

/// `zonekit device ...` with the lock flag its commands share.
#[derive(clap::Args)]
struct DeviceGroup {
    #[command(flatten)]
    lock: open::LockArgs,
    #[command(subcommand)]
    command: device_cmd::DeviceCommand,
}

/// `zonekit fs ...` with the lock flag its commands share.
#[derive(clap::Args)]
struct FsGroup {
    #[command(flatten)]
    lock: open::LockArgs,
    #[command(subcommand)]
    command: fs_cmd::FsCommand,
}

fn main() -> ExitCode {
    // Output piped into `head` and closed early ends the program quietly, as it does every
    // Unix tool; Rust's runtime ignores SIGPIPE and `println!` would panic on the broken pipe.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    stdout_failure_is_an_error();
    let cli = Cli::parse();
    let result = match cli.command {
        None => demo::run(&demo::DemoArgs::default()),
        Some(Command::Demo(args)) => demo::run(&args),
        Some(Command::Device(group)) => {
            open::set_lock(group.lock);
            device_cmd::run(group.command)
        }
        Some(Command::Trace(cmd)) => trace_cmd::run(cmd),
        Some(Command::Analyze(args)) => trace_cmd::analyze_cmd(args),
        Some(Command::Replay(args)) => replay_cmd::replay_cmd(args),
        Some(Command::Sweep(args)) => replay_cmd::sweep_cmd(args),
        Some(Command::Policies) => policies(),
        Some(Command::Report(args)) => report_cmd::run(args),
        Some(Command::Claims(cmd)) => claims_cmd::run(cmd),
        Some(Command::Experiment(args)) => experiment_cmd::run(args),
        Some(Command::Fs(group)) => {
            open::set_lock(group.lock);
            fs_cmd::run(group.command)
        }
        Some(Command::KvBench(args)) => kv_bench_cmd::run(args),
        Some(Command::Tree(cmd)) => tree_cmd::run(cmd),
        Some(Command::Ocssd(cmd)) => ocssd_cmd::run(cmd),
        Some(Command::Cache(cmd)) => cache_cmd::run(cmd),
        Some(Command::Serve(cmd)) => serve_cmd::run(cmd),
        Some(Command::Ssd(cmd)) => ssd_cmd::run(cmd),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("zonekit: error: {e:#}");
            // A bad request exits like a bad flag (clap's 2); a run that failed, with 1. An
            // input that is not there (a trace, an image, a device path) is a bad request in
            // every command, whichever layer found it missing.
            let missing = |c: &(dyn std::error::Error + 'static)| {
                c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
                    || c.downcast_ref::<zonekit_device::DeviceError>().is_some_and(zonekit_device::DeviceError::is_not_found)
            };
            if e.chain().any(|c| c.is::<Usage>() || missing(c)) {
                out_dir::release_fresh_claim();
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Standard output that cannot be written (a full disk, a closed file) ends the run with an
/// error naming it, exit status 1, like any failed run: `println!` panics there, and a panic's
/// message and backtrace would read as a bug in zonekit.
fn stdout_failure_is_an_error() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload.downcast_ref::<String>().map(String::as_str).or_else(|| payload.downcast_ref::<&str>().copied());
        if let Some(reason) = message.and_then(|m| m.strip_prefix("failed printing to stdout: ")) {
            eprintln!("zonekit: error: cannot write to standard output: {reason}");
            std::process::exit(1);
        }
        default(info);
    }));
}

/// `zonekit policies`: every policy table with its parameters and defaults.
fn policies() -> anyhow::Result<ExitCode> {
    use zonekit_base::policy::help;
    println!("Placement policies (replay --placement, sweep --placements; parameters with --param k=v or --grid):\n{}", help(zonekit_ftl::placement::PLACEMENTS));
    println!("GC victim policies (--victim NAME or NAME:VALUE):\n{}", help(zonekit_ftl::victim::VICTIMS));
    println!("File-system allocation (zonekit:// option alloc=NAME):\n{}", help(zonekit_zfs::alloc::ALLOCATORS));
    println!("Open-channel FTLs (ocssd run --ftl NAME, --param k=v):\n{}", help(zonekit_ocssd::FTLS));
    println!("Item cache policies (cache sim --policy NAME, --param k=v):\n{}", help(zonekit_lab::cache::sim::ITEM_POLICIES));
    Ok(ExitCode::SUCCESS)
}

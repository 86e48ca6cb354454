//! `zonekit`: the command-line front door. Parses arguments, wires the crates together, prints.

mod demo;
mod device_cmd;
mod device_demo;
mod experiment_cmd;
mod fs_cmd;
mod kv_bench_cmd;
mod replay_cmd;
mod trace_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "zonekit", version, about = "Toolkit for host-managed zoned flash storage (NVMe ZNS, Open-Channel SSDs)")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The main job on built-in defaults (what `zonekit` with no arguments runs).
    Demo(demo::DemoArgs),
    /// Create, inspect and manage zoned devices: emulated images and /dev zoned block devices.
    #[command(subcommand)]
    Device(device_cmd::DeviceCommand),
    /// Read, convert and generate block traces.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCommand),
    /// Characterise a workload: write counts, lifetimes, thresholds (tables + SVG charts).
    Analyze(trace_cmd::AnalyzeArgs),
    /// Replay a trace or workload through the block FTL: WAF, GC traffic, GP, wear.
    Replay(replay_cmd::ReplayArgs),
    /// Run a grid of workloads x placements x victims x parameters in parallel (resumable).
    Sweep(replay_cmd::SweepArgs),
    /// Reproduce a seed-000 experiment (table-4.3, table-2.2, table-3.2, bhbdp-sensitivity).
    Experiment(experiment_cmd::ExperimentArgs),
    /// The zoned file system: mkfs, ls, df, fsck, dump, put, cat.
    #[command(subcommand)]
    Fs(fs_cmd::FsCommand),
    /// Seed 001's experiment: RocksDB's db_bench on the zoned file system, four configurations,
    /// growing key counts, against RocksDB on tmpfs (needs db_bench and the plugin).
    KvBench(kv_bench_cmd::KvBenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => demo::run(&demo::DemoArgs::default()),
        Some(Command::Demo(args)) => demo::run(&args),
        Some(Command::Device(cmd)) => device_cmd::run(cmd),
        Some(Command::Trace(cmd)) => trace_cmd::run(cmd),
        Some(Command::Analyze(args)) => trace_cmd::analyze_cmd(args),
        Some(Command::Replay(args)) => replay_cmd::replay_cmd(args),
        Some(Command::Sweep(args)) => replay_cmd::sweep_cmd(args),
        Some(Command::Experiment(args)) => experiment_cmd::run(args),
        Some(Command::Fs(cmd)) => fs_cmd::run(cmd),
        Some(Command::KvBench(args)) => kv_bench_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("zonekit: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

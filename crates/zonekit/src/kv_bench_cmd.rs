//! `zonekit kv-bench`: seed 001's experiment (`zonekit_lab::kv::bench` runs it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::builder::PossibleValuesParser;
use clap::Args;
use zonekit_lab::kv::bench::{self as kv_bench, describe_run, KvBench, CONFIGS, PROFILES};

use crate::error::lab;

#[derive(Args)]
pub struct KvBenchArgs {
    /// File-system configurations, in order. The seed's four: zenfs (stock ZenFS's
    /// lifetime-score allocation, no GC: "original"), zenfs-gc ("original + GC"), lifetime
    /// (lifetime allocation, no GC: "hot/cold"), both ("hot/cold + GC"); and first fit, which
    /// the seed did not run: stock (no GC), stock-gc (with GC).
    #[arg(long, value_delimiter = ',', default_value = "zenfs,zenfs-gc,lifetime,both,stock,stock-gc", value_parser = PossibleValuesParser::new(CONFIGS.iter().map(|c| c.name)))]
    configs: Vec<String>,
    /// Key counts in millions, tried in increasing order until one fails (with --repeats > 1:
    /// exactly one).
    #[arg(long, value_delimiter = ',', default_value = "2,3,4,5,6,7,8")]
    keys: Vec<f64>,
    /// The emulated device (`mem:PRESET`, formatted fresh for every run).
    #[arg(long, default_value = "mem:nvmevirt-zns")]
    device: String,
    /// Zones of this many MiB instead of the preset's; the device's capacity stays, so the
    /// zone count changes (nvmevirt-zns: 64 -> 128 zones, 256 -> 32).
    #[arg(long)]
    zone_mib: Option<u64>,
    /// Rounds at one key count: every configuration once per round, the order reversed every
    /// other round; reports ops/s relative to --baseline in the same round (min/median/max).
    #[arg(long, default_value_t = 1)]
    repeats: u32,
    /// The configuration throughput is relative to in rounds (the seed's "original").
    #[arg(long, default_value = "zenfs", value_parser = PossibleValuesParser::new(CONFIGS.iter().map(|c| c.name)))]
    baseline: String,
    /// RocksDB options: `bounded` caps compaction debt so RocksDB's own space need stays
    /// near its data (see docs/results/seed-001.md); `defaults` is db_bench's defaults.
    #[arg(long, default_value = "bounded", value_parser = PossibleValuesParser::new(PROFILES.iter().map(|p| p.name)))]
    profile: String,
    /// Skip the POSIX (tmpfs) reference runs.
    #[arg(long)]
    no_reference: bool,
    /// Run nothing: report and chart the rows already in --out's results.csv (rows of the
    /// given configurations, key counts, profile and zone size), leaving out missing ones.
    #[arg(long)]
    report_only: bool,
    /// Directory for the POSIX reference database (must be tmpfs for a fair speed reference).
    #[arg(long, default_value = "/dev/shm")]
    tmpfs: PathBuf,
    /// The plugin (default: target/plugin/libzonekit_rocksdb.so beside this binary's target dir).
    #[arg(long)]
    plugin: Option<PathBuf>,
    #[arg(long, default_value = "db_bench")]
    db_bench: PathBuf,
    #[arg(long, default_value = "zonekit-out/kv-bench")]
    out: PathBuf,
}

fn default_plugin() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    // target/<profile>/zonekit -> target/plugin/
    let target = exe.parent().and_then(Path::parent).context("cannot locate the target directory")?;
    Ok(target.join("plugin").join("libzonekit_rocksdb.so"))
}

pub fn run(args: KvBenchArgs) -> Result<ExitCode> {
    let name = |c: &kv_bench::KvConfig| c.name;
    let configs = args.configs.iter().map(|c| kv_bench::find(CONFIGS, "configuration", c, name)).collect::<Result<Vec<_>, _>>().map_err(lab)?;
    let profile = kv_bench::find(PROFILES, "profile", &args.profile, |p| p.name).map_err(lab)?;
    let baseline = kv_bench::find(CONFIGS, "configuration", &args.baseline, name).map_err(lab)?;
    let plugin = match args.plugin {
        Some(p) => p,
        None => default_plugin()?,
    };
    let bench = KvBench {
        configs,
        keys: args.keys,
        device: args.device,
        zone_size_mib: args.zone_mib,
        profile,
        repeats: args.repeats,
        baseline,
        reference: !args.no_reference,
        report_only: args.report_only,
        tmpfs: args.tmpfs,
        plugin,
        db_bench: args.db_bench,
        out: args.out.clone(),
    };
    // --report-only rewrites the report of rows already there: nothing to claim.
    if !args.report_only {
        crate::out_dir::claim_out(&args.out, "kv-bench", true)?;
    }
    let rounds = bench.repeats > 1;
    let outcome = bench.run(&mut |config, k, repeat, r| println!("{}", describe_run(config, k, rounds.then_some(repeat), r))).map_err(lab)?;
    if outcome.set_aside > 0 {
        println!("kv-bench: {} damaged rows of results.csv moved to {}, not reused", outcome.set_aside, args.out.join("results.previous.csv").display());
    }
    print!("{}", zonekit_report::for_terminal(&outcome.table, zonekit_report::TERMINAL_COLUMNS));
    println!("each row's own `zonekit kv-bench` command: {}", args.out.join("commands.tsv").display());
    crate::out_dir::finish(&args.out)?;
    if !outcome.failed.is_empty() {
        anyhow::bail!("{} runs failed for another reason than space (see their logs in the output directory):\n  {}", outcome.failed.len(), outcome.failed.join("\n  "));
    }
    Ok(ExitCode::SUCCESS)
}

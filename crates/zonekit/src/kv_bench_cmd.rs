//! `zonekit kv-bench`: seed 001's experiment (`zonekit_lab::kv_bench` runs it).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::builder::PossibleValuesParser;
use clap::Args;
use zonekit_lab::kv_bench::{self, describe_run, KvBench, CONFIGS, PROFILES};

use crate::replay_cmd::lab;

#[derive(Args)]
pub struct KvBenchArgs {
    /// File-system configurations, in order: stock (first fit, no GC), gc (first fit + GC),
    /// lifetime (lifetime allocation, no GC), both, zenfs (stock ZenFS's lifetime-score
    /// allocation, no GC: the seed's "original").
    #[arg(long, value_delimiter = ',', default_value = "stock,gc,lifetime,both,zenfs", value_parser = PossibleValuesParser::new(CONFIGS.iter().map(|c| c.name)))]
    configs: Vec<String>,
    /// Key counts in millions, tried in increasing order until one fails.
    #[arg(long, value_delimiter = ',', default_value = "2,3,4,5,6,7,8")]
    keys: Vec<f64>,
    /// The emulated device (`mem:PRESET`, formatted fresh for every run).
    #[arg(long, default_value = "mem:nvmevirt-zns")]
    device: String,
    /// RocksDB options: `bounded` caps compaction debt so RocksDB's own space need stays
    /// near its data (see docs/results/seed-001.md); `defaults` is db_bench's defaults.
    #[arg(long, default_value = "bounded", value_parser = PossibleValuesParser::new(PROFILES.iter().map(|p| p.name)))]
    profile: String,
    /// Skip the POSIX (tmpfs) reference runs.
    #[arg(long)]
    no_reference: bool,
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
    let plugin = match args.plugin {
        Some(p) => p,
        None => default_plugin()?,
    };
    let bench =
        KvBench { configs, keys: args.keys, device: args.device, profile, reference: !args.no_reference, tmpfs: args.tmpfs, plugin, db_bench: args.db_bench, out: args.out };
    let outcome = bench.run(&mut |config, k, r| println!("{}", describe_run(config, k, r))).map_err(lab)?;
    print!("{}", outcome.table);
    if !outcome.failed.is_empty() {
        anyhow::bail!("{} runs failed for another reason than space (see their logs in the output directory):\n  {}", outcome.failed.len(), outcome.failed.join("\n  "));
    }
    Ok(ExitCode::SUCCESS)
}

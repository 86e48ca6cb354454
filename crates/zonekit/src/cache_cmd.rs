//! `zonekit cache`: seed 004's block cache. `run` runs one bucket-cache configuration on
//! YCSB-like reads or a trace, `experiment` the thesis' comparisons
//! (`zonekit_lab::cache::bench`); `sim` replays a trace or workload through the item-level
//! policies (`zonekit_lab::cache::sim`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use zonekit_lab::cache::bench::{Layout, RECORD_BYTES};
use zonekit_lab::cache::experiment::{run_experiment, CacheExperiment, TraceExperiment};
use zonekit_lab::cache::run::{self as cache_run, CacheRunSettings};
use zonekit_lab::cache::sim::{params_for_each, report_table, simulate, validate};

use crate::args::InputArgs;
use crate::error::lab;
use crate::params::parse_params;

#[derive(Subcommand)]
pub enum CacheCommand {
    /// Replay every block of a trace or workload, reads and writes alike, through item-level
    /// cache policies (lru, fifo, s3fifo, sieve, belady); print hits, hit ratio, requests/s.
    Sim(Box<SimArgs>),
    /// One bucket-cache configuration (device, eviction, sampler) on YCSB-like reads or a
    /// trace: hit ratio, device WAF, evictions, latency.
    Run(Box<RunArgs>),
    /// The thesis' comparisons (Figs. 5.1–5.3, 2.4) and today's policies, with the Belady
    /// bound: tables and charts.
    Experiment(ExperimentArgs),
    /// Create an empty durable cache on a zoned device (an image or /dev) in front of a
    /// backing disk file; over an existing one only with --force.
    Create(crate::cache_image::CreateArgs),
    /// Write (and read) blocks through the durable cache, each request committed before the
    /// next, so a kill at any moment loses nothing committed.
    Load(crate::cache_image::LoadArgs),
    /// Open the durable cache (recovering its keys), read every block through it and check
    /// every checksum, every invariant and, with --seed, every block's contents.
    Check(crate::cache_image::CheckArgs),
    /// Write every dirty block of the durable cache back to its disk.
    Flush(crate::cache_image::FlushArgs),
}

#[derive(Args)]
pub struct RunArgs {
    /// Renamed --interface (everywhere else --device is a path): refused with a pointer to it.
    #[arg(long, hide = true)]
    device: Option<String>,
    /// The interface the cache writes through: zns (bucket = zones, eviction = reset),
    /// fdp:N or fdp:N:persistent (an NVMe FDP SSD with N reclaim-unit handles: each bucket
    /// written under its placement class's handle, trimmed when evicted) or conventional (an
    /// SSD without hints) [default: zns]. The SSDs take --bucket-kib, --op and
    /// --erase-unit-kib.
    #[arg(long)]
    interface: Option<String>,
    /// Conventional only: trim evicted buckets (bcache's discard option; off by default, as
    /// in bcache). FDP always trims.
    #[arg(long)]
    discard: bool,
    /// Cache size in MiB.
    #[arg(long, default_value_t = CacheRunSettings::default().cache_mib)]
    cache_mib: u64,
    /// Conventional and FDP only, instead of --cache-mib: the cache in KiB, for an SSD's
    /// logical space that is not whole MiB (the interface comparison's).
    #[arg(long, conflicts_with = "cache_mib")]
    cache_kib: Option<u64>,
    /// ZNS only: zone size in MiB [default: 8] (a bucket is --zones-per-bucket zones [1]).
    #[arg(long)]
    zone_mib: Option<u64>,
    #[arg(long)]
    zones_per_bucket: Option<u32>,
    /// Conventional and FDP only: bucket size in KiB [1024], spare fraction [0.07], erase unit
    /// (the reclaim unit) in KiB [2048: the SSD model needs its spare to hold an open unit per
    /// write point and its GC reserve beside the data, which the default 512 MiB cache's 7 %
    /// does not in 16 MiB units].
    #[arg(long)]
    bucket_kib: Option<u64>,
    #[arg(long)]
    op: Option<f64>,
    #[arg(long)]
    erase_unit_kib: Option<u64>,
    /// Bucket eviction: bcache, lru, fifo, lfu, sieve, region-fifo.
    #[arg(long, default_value_t = CacheRunSettings::default().eviction)]
    eviction: String,
    /// Admission sampler: none, lru, arc, slru, dam, mbf, sfr.
    #[arg(long, default_value_t = CacheRunSettings::default().sampler)]
    sampler: String,
    /// A sampler parameter, KEY=VALUE (repeatable).
    #[arg(long = "sampler-param", value_name = "KEY=VALUE")]
    sampler_params: Vec<String>,
    /// Sampler memory budget in bytes [default: 16384; not for none or sfr] and LBA chunk in KiB.
    #[arg(long)]
    sampler_bytes: Option<u64>,
    #[arg(long, default_value_t = CacheRunSettings::default().chunk_kib)]
    chunk_kib: u64,
    /// writethrough, writeback or writearound.
    #[arg(long, default_value_t = CacheRunSettings::default().mode)]
    mode: String,
    /// Sequential cutoff in KiB (0: off).
    #[arg(long, default_value_t = CacheRunSettings::default().cutoff_kib)]
    cutoff_kib: u64,
    /// Read-miss admission: all (bcache) or ghost (S3-FIFO's ghost rule: only blocks that
    /// missed recently, among the last --ghost-blocks distinct misses).
    #[arg(long, default_value_t = CacheRunSettings::default().admission)]
    admission: String,
    /// Ghost size in blocks for --admission ghost (default: 0.9 × the cache's blocks).
    #[arg(long)]
    ghost_blocks: Option<u64>,
    /// Open buckets per placement class (chosen by the requesting thread).
    #[arg(long, default_value_t = CacheRunSettings::default().write_points)]
    write_points: u32,
    /// Model bcache's own metadata: btree nodes (a bucket each), journal and priority
    /// buckets take buckets and device writes (docs/cache.md, "bcache's own metadata").
    #[arg(long)]
    metadata: bool,
    /// With --metadata: journal buckets [default: bcache's buckets / 128, 2 to 256].
    #[arg(long, requires = "metadata")]
    journal_buckets: Option<u32>,
    /// With --metadata: btree node size in KiB, whole 4 KiB blocks, at least 8, at most a
    /// bucket [default: bcache's rule: the bucket up to 256 KiB, else a quarter of up to
    /// 4 MiB of it, at least 256 KiB].
    #[arg(long, requires = "metadata")]
    btree_node_kib: Option<u64>,
    /// With --metadata: free buckets kept for btree nodes, at least 3 [default: 8, bcache's
    /// RESERVE_BTREE].
    #[arg(long, requires = "metadata")]
    btree_reserve: Option<u32>,
    /// With --metadata: prio buckets written whole (bcache) or only the blocks their
    /// entries take: whole or used [default: whole].
    #[arg(long, requires = "metadata")]
    prio_write: Option<String>,
    /// YCSB-like reads: records, data set in MiB, threads, operations (default 2 per record),
    /// update share (0 = YCSB-C, 0.05 = B, 0.5 = A), warm-up share.
    #[arg(long, default_value_t = cache_run::RECORDS)]
    records: u64,
    /// Data set (the backing disk) in MiB [default: 4096 with --layout strided, the records'
    /// footprint with packed]; with --trace, the disk's size (the trace must fit), else sized
    /// to the trace.
    #[arg(long)]
    data_mib: Option<u64>,
    /// Where the 1040-byte records sit: strided (record i at i × data / records, one record
    /// per block read) or packed (back to back, 3.94 to a 4 KiB block) [default: strided].
    #[arg(long)]
    layout: Option<String>,
    /// Bytes of a record, 1 to 4096 (the thesis' 16 B key + 1 KiB value: 1040). Packed, a
    /// size dividing 4096 puts exactly 4096 / B records in each block (1024: four).
    #[arg(long)]
    record_bytes: Option<u64>,
    #[arg(long, default_value_t = cache_run::THREADS)]
    threads: u32,
    #[arg(long)]
    operations: Option<u64>,
    #[arg(long, default_value_t = 0.0)]
    update_fraction: f64,
    /// Share of the requests that warm the cache before hits are counted [default: 0.5 of
    /// the YCSB-like reads; 0 with --trace, whose hit ratio then counts every request].
    #[arg(long)]
    warmup_fraction: Option<f64>,
    /// Plain zipfian (hot records side by side) instead of YCSB's scrambled zipfian.
    #[arg(long)]
    clustered: bool,
    #[arg(long, default_value_t = cache_run::SEED)]
    seed: u64,
    /// Replay this block trace (text, or a Zonekit binary trace such as `serve nbd
    /// --trace-out` writes) instead of the YCSB-like reads; the backing disk is --data-mib or
    /// sized to the trace. --warmup-fraction applies (default 0); the other YCSB flags do not
    /// and are refused.
    #[arg(long, conflicts_with_all = ["records", "threads", "operations", "update_fraction", "clustered", "seed", "layout", "record_bytes"])]
    trace: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ExperimentArgs {
    /// 1 = the thesis' 8 GiB cache of 64 × 128 MiB zones over 64 GiB and 6.4 M records; smaller
    /// scales shrink the zone and everything with it (at least 1 MiB zones) [default: 1].
    #[arg(long)]
    scale: Option<f64>,
    /// Read operations per record (the cache must cycle for eviction to matter) [default: 2].
    #[arg(long)]
    passes: Option<f64>,
    /// The YCSB-like reads' seed [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// The records' layout: strided (the thesis' 6.4 M records over its stated 64 GiB, one
    /// per 10 KiB; the cache an eighth of the data) or packed (back to back: 6.2 GiB of
    /// records under the 8 GiB cache) [default: strided].
    #[arg(long)]
    layout: Option<String>,
    /// Bytes of a synthetic record, 1 to 4096 [default: 1040, the thesis' 16 B key + 1 KiB
    /// value]; with --layout packed, 1024 puts exactly four records in each 4 KiB block.
    #[arg(long)]
    record_bytes: Option<u64>,
    /// Run the configurations on this block trace (text or `.zkt`) instead of the YCSB-like
    /// reads: needs --cache-mib; --scale, --passes and --seed do not apply and are refused.
    #[arg(long, requires = "cache_mib", conflicts_with_all = ["scale", "passes", "seed", "layout", "record_bytes"])]
    trace: Option<PathBuf>,
    /// With --trace: the cache in MiB, and its zone (the ZNS bucket) in MiB [default: a
    /// 64th of the cache, as the thesis' 64 zones]; the conventional baseline's buckets are a
    /// 128th of the zone.
    #[arg(long, requires = "trace")]
    cache_mib: Option<u64>,
    #[arg(long, requires = "trace")]
    zone_mib: Option<u64>,
    /// Share of the reads (with --trace: of its requests) that warm the cache before hits
    /// count [default: 0.5; 0 with --trace].
    #[arg(long)]
    warmup_fraction: Option<f64>,
    /// Open buckets per placement class, the same in every configuration, ZNS and
    /// conventional (bcache keeps one per task; the thesis ran 8 reader threads).
    #[arg(long, default_value_t = 8)]
    write_points: u32,
    /// Runs in parallel (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Instead of the thesis' sections: the cache on every interface at the same raw
    /// capacity (ZNS, FDP with 2, 4 and 8 handles, conventional without and with discard),
    /// hit ratio and host, device and total WAF (docs/results/interfaces.md).
    #[arg(long, conflicts_with = "trace")]
    interfaces: bool,
    /// Where the results go [default: zonekit-out/cache-experiment; with --interfaces
    /// zonekit-out/cache-interfaces].
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub struct SimArgs {
    /// The item policy (`zonekit policies` lists them with their parameters).
    #[arg(long, default_value = "lru", conflicts_with = "policies")]
    policy: String,
    /// Several policies, one after the other over the same input, in one table, e.g.
    /// lru,fifo,s3fifo,sieve,belady.
    #[arg(long, value_delimiter = ',')]
    policies: Option<Vec<String>>,
    /// Cache capacity in blocks (of --block-size bytes).
    #[arg(long)]
    cache_blocks: usize,
    /// A policy parameter, KEY=VALUE (repeatable), e.g. small_ratio=0.2; with --policies, it goes
    /// to the policies that take it.
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
    #[command(flatten)]
    input: InputArgs,
    /// Print the reports as JSON (an array, one object per policy) instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: CacheCommand) -> Result<ExitCode> {
    match cmd {
        CacheCommand::Sim(a) => sim_cmd(*a),
        CacheCommand::Run(a) => run_cmd(*a),
        CacheCommand::Experiment(a) => experiment_cmd(a),
        CacheCommand::Create(a) => crate::cache_image::create(a),
        CacheCommand::Load(a) => crate::cache_image::load(a),
        CacheCommand::Check(a) => crate::cache_image::check(a),
        CacheCommand::Flush(a) => crate::cache_image::flush(a),
    }
}

fn sim_cmd(a: SimArgs) -> Result<ExitCode> {
    let policies = a.policies.clone().unwrap_or_else(|| vec![a.policy.clone()]);
    let params = params_for_each(&policies, &parse_params("--param", &a.params)?).map_err(lab)?;
    // Every policy is checked before any runs: a typo in the last one wastes no time.
    for (policy, params) in policies.iter().zip(&params) {
        validate(policy, params, a.cache_blocks).map_err(lab)?;
    }
    let input = a.input.input()?;
    let mut reports = Vec::new();
    for (policy, params) in policies.iter().zip(&params) {
        reports.push(simulate(&input, policy, params, a.cache_blocks).map_err(lab)?);
    }
    crate::args::report_skipped(&input);
    if reports[0].trace_requests == 0 {
        return Err(crate::args::nothing_left(&input, "requests"));
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(ExitCode::SUCCESS);
    }
    let first = &reports[0];
    println!("{}: {} requests, {} block requests of {} bytes\n", first.input, first.trace_requests, first.requests, a.input.block_size);
    print!("{}", report_table(&reports));
    Ok(ExitCode::SUCCESS)
}

impl RunArgs {
    /// The lab's settings (which Python's `cache_run` fills too). clap has refused the YCSB
    /// flags beside --trace, so with a trace they are left unset rather than defaulted.
    fn settings(&self) -> Result<CacheRunSettings> {
        let ycsb = self.trace.is_none();
        Ok(CacheRunSettings {
            interface: self.interface.clone(),
            device: self.device.clone(),
            discard: self.discard,
            cache_mib: self.cache_mib,
            cache_kib: self.cache_kib,
            zone_mib: self.zone_mib,
            zones_per_bucket: self.zones_per_bucket,
            bucket_kib: self.bucket_kib,
            op: self.op,
            erase_unit_kib: self.erase_unit_kib,
            eviction: self.eviction.clone(),
            sampler: self.sampler.clone(),
            sampler_params: parse_params("--sampler-param", &self.sampler_params)?,
            sampler_bytes: self.sampler_bytes,
            chunk_kib: self.chunk_kib,
            mode: self.mode.clone(),
            cutoff_kib: self.cutoff_kib,
            admission: self.admission.clone(),
            ghost_blocks: self.ghost_blocks,
            write_points: self.write_points,
            metadata: self.metadata,
            journal_buckets: self.journal_buckets,
            btree_node_kib: self.btree_node_kib,
            btree_reserve: self.btree_reserve,
            prio_write: self.prio_write.clone(),
            records: ycsb.then_some(self.records),
            threads: ycsb.then_some(self.threads),
            operations: self.operations,
            update_fraction: ycsb.then_some(self.update_fraction),
            clustered: self.clustered,
            seed: ycsb.then_some(self.seed),
            layout: self.layout.clone(),
            record_bytes: self.record_bytes,
            data_mib: self.data_mib,
            warmup_fraction: self.warmup_fraction,
            trace: self.trace.clone(),
        })
    }
}

fn run_cmd(a: RunArgs) -> Result<ExitCode> {
    let settings = a.settings()?;
    // The bar counts the YCSB-like reads; a trace's length is not known before its scan.
    let operations = settings.operations();
    let bar = crate::progress::Progress::bar(operations, "operations");
    let report = settings.run(&mut |done| {
        if operations > 0 {
            bar.set_position(done)
        }
    });
    bar.finish_and_clear();
    let report = report.map_err(lab)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let rows = vec![
        vec!["cache".into(), format!("{} buckets of {} KiB", report.buckets, report.bucket_bytes / 1024)],
        vec!["eviction / sampler".into(), format!("{} / {} ({} bytes)", report.spec.eviction, report.spec.sampler, report.sampler_memory_bytes)],
        vec![
            "hit ratio".into(),
            format!("{:.2} % of blocks, {:.2} % of requests ({} blocks read after warm-up)", report.hit_ratio * 100.0, report.request_hit_ratio * 100.0, report.read_blocks),
        ],
        vec!["interface".into(), report.interface.clone()],
        vec!["host WAF".into(), format!("{:.3} (blocks written to the device per block admitted)", report.host_waf)],
        vec!["device WAF".into(), format!("{:.3} ({} blocks moved by device GC)", report.device_waf, report.device_gc_blocks)],
        vec!["total WAF".into(), format!("{:.3}", report.total_waf)],
        vec!["evictions".into(), format!("{} buckets; {} blocks written to the cache, {} reinserted", report.evictions, report.cache_blocks_written, report.reinserted_blocks)],
        vec![
            "read latency".into(),
            if report.read_blocks == 0 { "- (no reads counted)".into() } else { format!("mean {:.0} µs, p99 {:.0} µs", report.mean_latency_us, report.latency_us_p99) },
        ],
        vec!["blocks inserted per class".into(), report.inserted_per_class.iter().map(u64::to_string).collect::<Vec<_>>().join(" ")],
    ];
    let mut rows = rows;
    if let Some(m) = &report.metadata {
        rows.push(vec![
            "bcache metadata".into(),
            format!(
                "{} buckets at most ({} btree nodes of {} KiB at most, {} journal, {} prio); blocks written: btree {}, journal {}, prio {} ({} writes)",
                m.buckets_max,
                m.btree_nodes_max,
                m.btree_node_bytes / 1024,
                m.journal_buckets,
                m.prio_buckets,
                m.btree_blocks_written,
                m.journal_blocks_written,
                m.prio_blocks_written,
                m.prio_writes
            ),
        ]);
    }
    print!("{}", zonekit_report::text_table(&["", ""], &rows));
    crate::sweep_run::print_warnings(&report.warnings);
    Ok(ExitCode::SUCCESS)
}

fn experiment_cmd(a: ExperimentArgs) -> Result<ExitCode> {
    let threads = crate::experiment_run::threads(a.threads)?;
    // The two modes write different tables: each its own directory.
    let (identity, default_out) =
        if a.interfaces { ("cache experiment --interfaces", "zonekit-out/cache-interfaces") } else { ("cache experiment", "zonekit-out/cache-experiment") };
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from(default_out));
    let mut exp = CacheExperiment::synthetic(a.scale.unwrap_or(1.0), a.passes.unwrap_or(2.0), a.seed.unwrap_or(1), threads, out.clone());
    exp.warmup_fraction = a.warmup_fraction;
    exp.layout = Layout::parse(a.layout.as_deref().unwrap_or("strided")).map_err(lab)?;
    exp.write_points = a.write_points;
    exp.record_bytes = a.record_bytes.unwrap_or(RECORD_BYTES);
    if let Some(path) = &a.trace {
        if !path.exists() {
            usage!("--trace {}: no such file", path.display());
        }
        let cache_mib = a.cache_mib.expect("clap requires --cache-mib with --trace");
        let zone_mib = match a.zone_mib {
            Some(z) => z,
            None if cache_mib % 64 == 0 => cache_mib / 64,
            None => usage!("--cache-mib {cache_mib}: not 64 zones of whole MiB; name the zone with --zone-mib"),
        };
        let (cache_bytes, zone_bytes) = (cache_run::mib(cache_mib, "--cache-mib").map_err(lab)?, cache_run::mib(zone_mib, "--zone-mib").map_err(lab)?);
        let input = zonekit_trace::input::Input::path(path, None, false);
        exp.trace = Some(TraceExperiment::new(input, cache_bytes, zone_bytes).map_err(lab)?);
    }
    crate::out_dir::claim_out(&out, identity, true)?;
    if a.interfaces {
        let summary = crate::experiment_run::with_runs_bar(|progress| zonekit_lab::cache::interfaces::run(&exp, progress))?;
        print!("{}", zonekit_report::for_terminal(&summary, zonekit_report::TERMINAL_COLUMNS));
        println!("\nresults: {}/cache-interfaces.csv, summary.md", out.display());
        println!("each row's own `zonekit cache run` command: {}", out.join("commands.tsv").display());
    } else {
        let summary = crate::experiment_run::with_runs_bar(|progress| run_experiment(&exp, progress))?;
        print!("{}", zonekit_report::for_terminal(&summary, zonekit_report::TERMINAL_COLUMNS));
        println!("\nresults: {}/results.csv, waf.csv, summary.md and charts", out.display());
        println!("each row's own `zonekit cache run` command: {}", out.join("commands.tsv").display());
        crate::out_dir::seed_figures(4, &out);
    }
    crate::out_dir::finish(&out)?;
    Ok(ExitCode::SUCCESS)
}

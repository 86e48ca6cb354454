//! Seed 004's comparisons as one experiment (`zonekit cache experiment`): the configurations
//! of the thesis' figures and ours beyond them ([`CacheExperiment::specs`]), run in parallel on
//! the YCSB-like reads or a trace, beside item-level references and static bounds, into
//! `results.csv`, `summary.md`, the GC and WAF series, charts and each row's own `zonekit cache
//! run` command (`commands.tsv`). One run of the cache is [`crate::cache::bench`]'s.

use std::path::Path;

use zonekit_base::policy::Params;
use zonekit_cache::sampler::SamplerBudget;
use zonekit_cache::{CacheConfig, MetadataConfig};
use zonekit_report::{csv, line_chart, markdown_table, Series};

use crate::cache::bench::*;
use crate::cache::reads::*;
use crate::cache::trace::*;
use crate::harness::error::{LabError, Result};
use crate::harness::parallel;
use crate::harness::runs::{RunStore, Stored};

const GIB: u64 = 1024 * MIB;

/// A trace to run the experiment on instead of the YCSB-like reads.
#[derive(Clone, Debug)]
pub struct TraceExperiment {
    pub input: zonekit_trace::input::Input,
    pub scan: TraceScan,
    pub cache_bytes: u64,
    pub zone_bytes: u64,
}

impl TraceExperiment {
    /// Scans the trace once (its requests and reach size the backing disk).
    pub fn new(input: zonekit_trace::input::Input, cache_bytes: u64, zone_bytes: u64) -> Result<TraceExperiment> {
        let scan = scan_trace(&input)?;
        trace_backing_bytes(&input, &scan, None)?;
        Ok(TraceExperiment { input, scan, cache_bytes, zone_bytes })
    }
}

/// The thesis' comparisons and ours.
#[derive(Clone, Debug)]
pub struct CacheExperiment {
    /// 1.0: the thesis' 8 GiB cache of 64 × 128 MiB zones over 64 GiB, 6.4 M records.
    pub scale: f64,
    /// Read-phase operations per record (the thesis ran 1; the cache needs more to cycle).
    pub passes: f64,
    pub seed: u64,
    pub threads: usize,
    pub out: std::path::PathBuf,
    /// Run on this trace (its cache and zone sizes) instead of the YCSB-like reads; `scale`,
    /// `passes` and `seed` do not apply.
    pub trace: Option<TraceExperiment>,
    /// Share of the reads (of a trace: of its requests) before hits count; `None`: 0.5 of
    /// the YCSB-like reads, 0 of a trace.
    pub warmup_fraction: Option<f64>,
    /// The synthetic records' layout; with [`Layout::Packed`] the data set is the records'
    /// footprint (at scale 1, 6.2 GiB under the 8 GiB cache), not 8 × the cache.
    pub layout: Layout,
    /// Open buckets per placement class in every configuration, ZNS and conventional alike
    /// (bcache keeps a write point per task: 8 for the thesis' 8 reader threads).
    pub write_points: u32,
    /// Bytes of a synthetic record (the thesis' 16 B key + 1 KiB value: 1040). Packed, the
    /// records lie back to back, so a size dividing the block (1024: four) puts exactly
    /// that many in each block and none across two.
    pub record_bytes: u64,
}

/// The sections whose runs need the synthetic workload: `clustered` changes the key
/// distribution, `admission` the read count.
pub(crate) const SYNTHETIC_ONLY_SECTIONS: [&str; 2] = ["clustered", "admission"];

impl CacheExperiment {
    /// The synthetic experiment at `scale` with `passes`, its defaults otherwise.
    pub fn synthetic(scale: f64, passes: f64, seed: u64, threads: usize, out: std::path::PathBuf) -> CacheExperiment {
        CacheExperiment { scale, passes, seed, threads, out, trace: None, warmup_fraction: None, layout: Layout::Strided, write_points: 8, record_bytes: RECORD_BYTES }
    }

    /// The thesis' set-up scaled by its zone size: 64 zones of `128 MiB × scale` (at least
    /// 1 MiB) make the cache, the data set is 8 × the cache, and records keep the thesis'
    /// density (6.4 M per 64 GiB). On a trace: its cache and zones over a disk the size of
    /// the trace's reach.
    pub(crate) fn base(&self) -> CacheSpec {
        let zone_bytes = ((128.0 * self.scale).round() as u64).max(1) * MIB;
        let mut cache_bytes = 64 * zone_bytes;
        let mut data_bytes = 8 * cache_bytes;
        let records = (6_400_000u128 * data_bytes as u128 / (64 * GIB) as u128) as u64;
        let record_bytes = self.record_bytes;
        // The thesis' 16 KiB (4,096 chunk ids) covers an eighth of its 32,768 chunks of
        // 2 MiB: the budget scales with the data set so the coverage stays (with packed
        // records, with the data set the thesis states, so the budget is the thesis' 16 KiB
        // at scale 1 whichever the layout).
        let mut budget = SamplerBudget { memory_bytes: (16 * KIB * data_bytes / (64 * GIB)).max(64), chunk_bytes: 2 * MIB };
        if self.layout == Layout::Packed {
            // A record size out of range is refused by `Ycsb::validate`; saturate until then.
            data_bytes = records.saturating_mul(record_bytes.max(1)).div_ceil(BLOCK).saturating_mul(BLOCK);
        }
        let mut device = DeviceKind::Zoned { zone_bytes, zones_per_bucket: 1 };
        if let Some(t) = &self.trace {
            cache_bytes = t.cache_bytes;
            data_bytes = t.scan.end_bytes;
            device = DeviceKind::Zoned { zone_bytes: t.zone_bytes, zones_per_bucket: 1 };
            budget.memory_bytes = (16 * KIB * data_bytes / (64 * GIB)).max(64);
        }
        CacheSpec {
            device,
            cache_bytes,
            eviction: "lfu".into(),
            sampler: "none".into(),
            sampler_params: Params::new(),
            budget,
            config: CacheConfig { write_points: self.write_points, ..CacheConfig::default() },
            workload: Ycsb {
                records,
                record_bytes,
                data_bytes,
                threads: 8,
                operations: (records as f64 * self.passes) as u64,
                update_fraction: 0.0,
                warmup_fraction: self.warmup_fraction.unwrap_or(if self.trace.is_some() { 0.0 } else { 0.5 }),
                scrambled: true,
                layout: self.layout,
            },
            seed: self.seed,
            data: false,
        }
    }

    /// The zone of the base set-up (which is always zoned).
    pub(crate) fn zone_bytes(base: &CacheSpec) -> u64 {
        match base.device {
            DeviceKind::Zoned { zone_bytes, .. } => zone_bytes,
            _ => unreachable!("the base is zoned"),
        }
    }

    /// The reads the item-level references and static bounds see: the trace's, or the
    /// synthetic read phase's.
    fn read_stream(&self, base: &CacheSpec) -> Result<ReadStream> {
        match &self.trace {
            Some(t) => ReadStream::of_trace(&t.input, &t.scan, base.workload.warmup_fraction),
            None => Ok(ReadStream::of_workload(&base.workload, base.seed)),
        }
    }

    /// Runs one of [`Self::specs`].
    pub(crate) fn run(&self, label: &str, spec: &CacheSpec) -> Result<(CacheReport, Vec<CacheSample>)> {
        match &self.trace {
            Some(t) => replay_trace(label, spec, &t.input, &t.scan, &mut |_| {}),
            None => run_cache(label, spec, &mut |_| {}),
        }
    }

    /// [`Self::run`], or the same run as an interrupted earlier attempt into the same
    /// directory finished and kept it (`OUT/runs/`).
    pub(crate) fn run_stored(&self, store: &RunStore, label: &str, spec: &CacheSpec) -> Result<(CacheReport, Vec<CacheSample>)> {
        if let Some(run) = self.load_kept(store, label, spec) {
            return Ok(run);
        }
        let (report, samples) = self.run(label, spec)?;
        let key = self.run_key(&format!("run {label:?} {spec:?}"));
        store.save(&key, &SavedRun { report: report.clone(), gc_rounds: report.gc_rounds.clone(), samples: samples.clone() })?;
        Ok((report, samples))
    }

    /// The run an earlier attempt kept for this label and spec, if it is there whole.
    pub(crate) fn load_kept(&self, store: &RunStore, label: &str, spec: &CacheSpec) -> Option<(CacheReport, Vec<CacheSample>)> {
        let key = self.run_key(&format!("run {label:?} {spec:?}"));
        let Stored::Run(SavedRun { mut report, gc_rounds, samples }) = store.load(&key) else { return None };
        report.gc_rounds = gc_rounds;
        Some((report, samples))
    }

    /// Everything that defines one of the experiment's computations (`what`, with its spec),
    /// as [`RunStore`] keys it: for a trace, also the file's name, length and modification
    /// time, so a changed trace is run again.
    fn run_key(&self, what: &str) -> String {
        let mut key = format!("cache experiment {what}");
        if let Some(t) = &self.trace {
            key.push_str(&format!(" on {}{}", t.input.describe(), crate::harness::runs::input_identity(&t.input)));
        }
        key.replace('\n', " ")
    }

    /// (section, label, spec) of every run.
    pub fn specs(&self) -> Vec<(&'static str, String, CacheSpec)> {
        let base = self.base();
        let mut out = Vec::new();
        // 1 MiB buckets beside 128 MiB zones at full scale (8192 of them), 16-bucket erase
        // units, 7 % spare as NVMeVirt's conventional SSD; everything scales with the zone.
        let zone_bytes = CacheExperiment::zone_bytes(&base);
        let bucket_bytes = (zone_bytes / 128).max(BLOCK);
        let conventional =
            CacheSpec { device: DeviceKind::Conventional { bucket_bytes, op: 0.07, erase_unit_bytes: 16 * bucket_bytes }, eviction: "bcache".into(), ..base.clone() };
        out.push(("fig5.1", "bcache original (conventional SSD, zone/128 buckets, bcache LRU)".to_string(), conventional));
        out.push(("fig5.1", "ZNS-naive (LFU)".to_string(), base.clone()));
        // Fig. 4.1: zone-sized buckets under bcache's own rule, exact and with the stock
        // 13-bit live-sector field (which a 128 MiB bucket overflows).
        out.push(("fig4.1", "ZNS-naive (bcache rule, exact live count)".to_string(), CacheSpec { eviction: "bcache".into(), ..base.clone() }));
        out.push(("fig4.1", "ZNS-naive (bcache rule, stock 13-bit live count)".to_string(), CacheSpec { eviction: "bcache:13".into(), ..base.clone() }));
        for sampler in ["lru", "arc", "slru", "dam", "mbf", "sfr"] {
            out.push(("fig5.1", format!("ZNS-{} (LFU)", sampler.to_uppercase()), CacheSpec { sampler: sampler.into(), ..base.clone() }));
        }
        for sampler in ["lru", "arc", "slru", "dam", "mbf"] {
            let budget = SamplerBudget { chunk_bytes: 16 * KIB, ..base.budget };
            // 16 KiB chunks: 128 times as many keys for the same budget.
            out.push(("fig5.2", format!("ZNS-{} (LFU), 16 KiB chunks", sampler.to_uppercase()), CacheSpec { sampler: sampler.into(), budget, ..base.clone() }));
        }
        for (sampler, name) in [("none", "naive"), ("lru", "LRU")] {
            out.push(("fig5.3", format!("ZNS-{name} (LRU eviction)"), CacheSpec { sampler: sampler.into(), eviction: "lru".into(), ..base.clone() }));
        }
        // Hot records side by side (plain zipfian): where chunk-level history can tell hot
        // from cold.
        let clustered = CacheSpec { workload: Ycsb { scrambled: false, ..base.workload }, ..base.clone() };
        for (sampler, eviction) in [("none", "lfu"), ("lru", "lfu"), ("arc", "lfu"), ("slru", "lfu"), ("dam", "lfu"), ("sfr", "lfu"), ("none", "lru"), ("lru", "lru")] {
            out.push((
                "clustered",
                format!("ZNS-{} ({eviction} eviction), clustered keys", if sampler == "none" { "naive".to_string() } else { sampler.to_uppercase() }),
                CacheSpec { sampler: sampler.into(), eviction: eviction.into(), ..clustered.clone() },
            ));
        }
        // S3-FIFO's ghost rule as flash admission: a read miss enters only on its second miss
        // within the last 0.9 × cache-size distinct misses (S3-FIFO's ghost is the main
        // queue's size). Admitting less fills the cache later, so these runs read four times
        // as long, beside ZNS-naive over the same reads.
        let ghost = zonekit_cache::Admission::Ghost { blocks: base.cache_bytes / BLOCK * 9 / 10 };
        let longer = CacheSpec { workload: Ycsb { operations: base.workload.operations * 4, ..base.workload }, ..base.clone() };
        out.push(("admission", "ZNS-naive (LFU), 4× the reads".to_string(), longer.clone()));
        out.push((
            "admission",
            "ZNS-naive (LFU) + ghost admission, 4× the reads".to_string(),
            CacheSpec { config: CacheConfig { admission: ghost, ..base.config }, ..longer.clone() },
        ));
        out.push((
            "admission",
            "ZNS-naive (region-fifo) + ghost admission, 4× the reads".to_string(),
            CacheSpec { eviction: "region-fifo".into(), config: CacheConfig { admission: ghost, ..base.config }, ..longer },
        ));
        for eviction in ["bcache", "fifo", "sieve", "region-fifo"] {
            out.push(("beyond", format!("ZNS-LRU ({eviction} eviction)"), CacheSpec { sampler: "lru".into(), eviction: eviction.into(), ..base.clone() }));
        }
        // bcache's own metadata (btree nodes, journal, priorities) as buckets it holds and
        // rewrites, with bcache's defaults for the bucket size: beside the same runs without.
        let metadata = |spec: &CacheSpec, m: MetadataConfig| CacheSpec { config: CacheConfig { metadata: Some(m), ..spec.config }, ..spec.clone() };
        let on = MetadataConfig::default();
        let conventional_meta = metadata(&out[0].2, on);
        out.push(("metadata", "bcache original + bcache metadata".to_string(), conventional_meta));
        out.push(("metadata", "ZNS-naive (LFU) + bcache metadata".to_string(), metadata(&base, on)));
        out.push((
            "metadata",
            "ZNS-naive (LFU) + bcache metadata, prio writes of their entries only".to_string(),
            metadata(&base, MetadataConfig { prio_whole_bucket: false, ..on }),
        ));
        out.push(("metadata", "ZNS-LRU (LFU) + bcache metadata".to_string(), metadata(&CacheSpec { sampler: "lru".into(), ..base.clone() }, on)));
        if self.trace.is_some() {
            out.retain(|(section, _, _)| !SYNTHETIC_ONLY_SECTIONS.contains(section));
        }
        out
    }
}

/// One configuration's run as [`RunStore`] keeps it: the report with its GC rounds (which
/// the report's own JSON, `cache run --json`, leaves out) and its samples.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedRun {
    report: CacheReport,
    gc_rounds: Vec<GcRound>,
    samples: Vec<CacheSample>,
}

/// Columns of `results.csv`.
pub const RESULT_COLUMNS: [&str; 15] = [
    "section",
    "label",
    "device",
    "bucket_bytes",
    "write_points",
    "eviction",
    "sampler",
    "chunk_bytes",
    "hit_ratio",
    "request_hit_ratio",
    "device_waf",
    "evictions",
    "cache_blocks_written",
    "reinserted_blocks",
    "sampler_memory_bytes",
];

fn result_row(section: &str, r: &CacheReport) -> Vec<String> {
    vec![
        section.into(),
        r.label.clone(),
        r.spec.device.name(),
        r.bucket_bytes.to_string(),
        r.spec.config.write_points.to_string(),
        r.spec.eviction.clone(),
        r.spec.sampler.clone(),
        r.spec.budget.chunk_bytes.to_string(),
        format!("{:.4}", r.hit_ratio),
        format!("{:.4}", r.request_hit_ratio),
        format!("{:.3}", r.device_waf),
        r.evictions.to_string(),
        r.cache_blocks_written.to_string(),
        r.reinserted_blocks.to_string(),
        r.sampler_memory_bytes.to_string(),
    ]
}

pub(crate) fn write_file(out: &Path, name: &str, text: String) -> Result<()> {
    let path = out.join(name);
    zonekit_base::atomic::write(&path, text).map_err(LabError::io(&path))
}

/// Refuses an experiment whose settings are out of range, each by its flag.
pub(crate) fn check_experiment(exp: &CacheExperiment) -> Result<()> {
    // Before the base set-up is computed from it: a huge scale overflows the zone size.
    if exp.trace.is_none() && !(exp.scale > 0.0 && exp.scale <= 1.0) {
        return Err(LabError::Usage(format!("--scale {}: must be in (0, 1]", exp.scale)));
    }
    let base = exp.base();
    check_warmup(base.workload.warmup_fraction)?;
    match &exp.trace {
        None => {
            if !(exp.passes > 0.0 && exp.passes <= 1000.0) || base.workload.operations == 0 {
                return Err(LabError::Usage(format!("--passes {}: must be in (0, 1000] and give at least one read", exp.passes)));
            }
            base.workload.validate()?;
        }
        Some(_) if exp.layout != Layout::Strided => {
            return Err(LabError::Usage(format!("--layout {}: the layout shapes the YCSB-like reads; a trace has its own", exp.layout.name())));
        }
        Some(_) if exp.record_bytes != RECORD_BYTES => {
            return Err(LabError::Usage(format!("--record-bytes {}: the record size shapes the YCSB-like reads; a trace has its own", exp.record_bytes)));
        }
        Some(t) => {
            let (cache_mib, zone_mib) = (t.cache_bytes / MIB, t.zone_bytes / MIB);
            if t.zone_bytes == 0 || t.zone_bytes % MIB != 0 || t.cache_bytes % t.zone_bytes != 0 {
                return Err(LabError::Usage(format!("--cache-mib {cache_mib} --zone-mib {zone_mib}: the cache must be a whole number of zones of at least 1 MiB")));
            }
        }
    }
    // Every sampler's classes (at most 4) keep a bucket open per write point, and the cache
    // needs two more.
    let zone_bytes = CacheExperiment::zone_bytes(&base);
    let zones = base.cache_bytes / zone_bytes;
    let needed = 4 * exp.write_points as u64 + 2;
    if exp.write_points == 0 || zones < needed {
        let shape = exp.trace.as_ref().map_or(String::new(), |t| format!("--cache-mib {} --zone-mib {} ", t.cache_bytes / MIB, t.zone_bytes / MIB));
        return Err(LabError::Usage(format!(
            "{shape}--write-points {}: the cache has {zones} zones; the experiment's samplers keep up to 4 classes × {} write points open and the cache needs 2 more: at least 1 write point and {needed} zones",
            exp.write_points, exp.write_points
        )));
    }
    Ok(())
}

/// Runs the experiment into `exp.out`; returns the summary.
pub fn run_experiment(exp: &CacheExperiment, progress: &(dyn Fn(usize, usize, &str) + Sync)) -> Result<String> {
    check_experiment(exp)?;
    std::fs::create_dir_all(&exp.out).map_err(LabError::io(&exp.out))?;
    let specs = exp.specs();
    crate::harness::results::write_atomically(&exp.out.join("commands.tsv"), &commands_tsv(exp, &specs))?;
    let base = exp.base();
    // The references: item-level policies on the same reads with the same capacity; the
    // reads (a pass over the trace, or the synthetic draws) are gathered once for all of
    // them and the static bounds.
    let reads = exp.read_stream(&base)?;
    let references = ["belady", "lru", "s3fifo", "sieve"];
    let total = specs.len() + references.len();
    type Slot = std::sync::Mutex<Option<Result<(CacheReport, Vec<CacheSample>)>>>;
    let results: Vec<Slot> = specs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let item_results: Vec<std::sync::Mutex<Option<Result<f64>>>> = references.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    // Each finished run is kept, so a rerun after an interruption (SIGINT, SIGTERM, kill -9)
    // computes only what is missing and writes the same files an uninterrupted run does.
    let store = RunStore::open(&exp.out)?;
    parallel::for_each(total, exp.threads, |i| {
        let label = if i < specs.len() {
            let (_, label, spec) = &specs[i];
            *results[i].lock().expect("no panics while holding") = Some(exp.run_stored(&store, label, spec));
            label.clone()
        } else {
            let name = references[i - specs.len()];
            let key = exp.run_key(&format!("item {name} over {} cache bytes, reads of {:?} seed {}", base.cache_bytes, base.workload, base.seed));
            let hit_ratio = match store.load::<f64>(&key) {
                Stored::Run(h) => Ok(h),
                Stored::Missing | Stored::Damaged => item_hit_ratio(name, &reads, base.cache_bytes).and_then(|h| store.save(&key, &h).map(|()| h)),
            };
            *item_results[i - specs.len()].lock().expect("no panics while holding") = Some(hit_ratio);
            format!("item {name}")
        };
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        progress(n, total, &label);
    });
    let mut runs = Vec::new();
    let mut failed = Vec::new();
    for ((section, label, _), slot) in specs.iter().zip(results) {
        match slot.into_inner().expect("no panics while holding").expect("ran") {
            Ok(r) => runs.push((*section, r)),
            Err(e) => failed.push(format!("{label}: {e}")),
        }
    }
    let mut items = Vec::new();
    for (name, slot) in references.iter().zip(item_results) {
        match slot.into_inner().expect("no panics while holding").expect("ran") {
            Ok(h) => items.push((*name, h)),
            Err(e) => failed.push(format!("item {name}: {e}")),
        }
    }
    let summary = write_outputs(exp, &runs, &items, reads)?;
    if !failed.is_empty() {
        return Err(LabError::Runs { failed, total });
    }
    Ok(summary)
}

/// `commands.tsv`: each configuration's own `zonekit cache run` command, in the order of
/// the rows, or why no command gives it.
pub(crate) fn commands_tsv(exp: &CacheExperiment, specs: &[(&str, String, CacheSpec)]) -> String {
    use zonekit_trace::input::Source;
    let trace = exp.trace.as_ref().map(|t| match &t.input.source {
        Source::Trace { path, format: None, lenient: false } | Source::Binary(path) => Ok(path.as_path()),
        _ => Err(format!("the input {} is not a plain trace file", t.input.describe())),
    });
    let mut text = String::from("section\tlabel\tcommand\n");
    for (section, label, spec) in specs {
        let command = match trace {
            Some(Err(ref why)) => Err(why.clone()),
            Some(Ok(path)) => crate::cache::run::CacheRunSettings::of_spec(spec, Some(path)),
            None => crate::cache::run::CacheRunSettings::of_spec(spec, None),
        };
        let cell = command.map_or_else(|why| format!("# not one command: {why}"), |s| s.command());
        text.push_str(&format!("{section}\t{label}\t{cell}\n"));
    }
    text
}

/// The summary's opening: what ran on what.
pub(crate) fn describe_setup(exp: &CacheExperiment, base: &CacheSpec) -> String {
    let w = &base.workload;
    let zone_bytes = CacheExperiment::zone_bytes(base);
    let cache = format!("Cache {} MiB ({} zones of {} MiB for ZNS)", base.cache_bytes / MIB, base.cache_bytes / zone_bytes, zone_bytes / MIB);
    match &exp.trace {
        Some(t) => format!(
            "{cache} over the {} MiB the trace reaches; trace {}: {} requests ({} reads), hit ratios after the first {:.0} % of its requests.\n\n",
            w.data_bytes / MIB,
            t.input.describe(),
            t.scan.requests,
            t.scan.read_requests,
            w.warmup_fraction * 100.0
        ),
        None => format!(
            "{cache} over {} MiB of data, {} records of {} bytes ({}), {} read operations (zipfian, YCSB scrambled), hit ratios after a {:.0} % warm-up; scale {}, seed {}.\n\n",
            w.data_bytes / MIB,
            w.records,
            w.record_bytes,
            match w.layout {
                Layout::Strided => format!("one every {} bytes", w.data_bytes / w.records),
                Layout::Packed if BLOCK % w.record_bytes == 0 => format!("packed back to back, {} to a block", BLOCK / w.record_bytes),
                Layout::Packed => "packed back to back".to_string(),
            },
            w.operations,
            w.warmup_fraction * 100.0,
            exp.scale,
            exp.seed
        ),
    }
}

fn write_outputs(exp: &CacheExperiment, runs: &[(&str, (CacheReport, Vec<CacheSample>))], items: &[(&str, f64)], reads: ReadStream) -> Result<String> {
    let out = &exp.out;
    let rows: Vec<Vec<String>> = runs.iter().map(|(s, (r, _))| result_row(s, r)).collect();
    write_file(out, "results.csv", csv(&RESULT_COLUMNS, &rows))?;
    let base = exp.base();
    let mut text = String::from("# Seed 004: a block cache on ZNS vs conventional flash\n\n");
    text.push_str(&describe_setup(exp, &base));
    text.push_str(&format!("Every configuration, ZNS and conventional alike, keeps {} write point(s) (open buckets) per placement class.\n\n", base.config.write_points));
    for section in ["fig5.1", "fig4.1", "fig5.2", "fig5.3", "clustered", "beyond", "admission", "metadata"] {
        let picked: Vec<&(&str, (CacheReport, Vec<CacheSample>))> = runs.iter().filter(|(s, _)| *s == section).collect();
        if picked.is_empty() {
            continue;
        }
        text.push_str(&format!("## {section}\n\n"));
        let rows: Vec<Vec<String>> = picked
            .iter()
            .map(|(_, (r, _))| {
                vec![
                    r.label.clone(),
                    format!("{:.2} %", r.hit_ratio * 100.0),
                    format!("{:.3}", r.device_waf),
                    r.evictions.to_string(),
                    r.cache_blocks_written.to_string(),
                    r.reinserted_blocks.to_string(),
                    r.sampler_memory_bytes.to_string(),
                    format!("{:.0}", r.mean_latency_us),
                ]
            })
            .collect();
        text.push_str(&markdown_table(&["configuration", "hit ratio", "device WAF", "evictions", "cache writes", "reinserted", "sampler bytes", "mean read µs"], &rows));
        text.push('\n');
        if section == "metadata" {
            text.push_str(&metadata_table(&picked));
        }
    }
    let gc_lines: Vec<String> = runs.iter().filter_map(|(_, (r, _))| gc_summary(&r.gc_rounds).map(|line| format!("- {}: {line}\n", r.label))).collect();
    if !gc_lines.is_empty() {
        text.push_str("## The conventional SSD's WAF per GC (Fig. 2.4: \"close to 8\"; gc-waf.csv)\n\n");
        text.push_str(&gc_lines.concat());
        text.push('\n');
    }
    text.push_str("## How much an address unit's history tells (static bound: the hottest units that fit)\n\n");
    // The base's reads are the trace's, or the scrambled synthetic ones.
    let streams: Vec<(&str, ReadStream)> = match &exp.trace {
        Some(_) => vec![("trace reads", reads)],
        None => vec![("scrambled (YCSB zipfian)", reads), ("clustered (plain zipfian)", ReadStream::of_workload(&Ycsb { scrambled: false, ..base.workload }, exp.seed))],
    };
    let zone_bytes = CacheExperiment::zone_bytes(&base);
    let mut bound_rows = Vec::new();
    for (name, stream) in &streams {
        let mut row = vec![name.to_string()];
        for unit in [BLOCK, 16 * KIB, 2 * MIB, zone_bytes] {
            row.push(format!("{:.2} %", static_bound(stream, base.cache_bytes, unit) * 100.0));
        }
        bound_rows.push(row);
    }
    drop(streams);
    text.push_str(&markdown_table(&["keys", "4 KiB blocks", "16 KiB chunks", "2 MiB chunks", "buckets (zones)"], &bound_rows));
    text.push('\n');
    text.push_str("## Item-level references on the same reads (capacity = cache blocks)\n\n");
    let rows: Vec<Vec<String>> = items.iter().map(|(n, h)| vec![n.to_string(), format!("{:.2} %", h * 100.0)]).collect();
    text.push_str(&markdown_table(&["policy", "hit ratio"], &rows));
    // Device WAF over time for the conventional SSD (Fig. 2.4), hit ratio over time for all.
    let mut waf_rows = Vec::new();
    let mut waf_series = Vec::new();
    let mut hit_series = Vec::new();
    for (_, (r, series)) in runs {
        if matches!(r.spec.device, DeviceKind::Conventional { .. }) {
            for s in series {
                waf_rows.push(vec![r.label.clone(), s.operations.to_string(), format!("{:.3}", s.device_waf_window), format!("{:.3}", s.device_waf_cumulative)]);
            }
            // The baseline's series keep their names; a run with bcache's metadata is named.
            let with = if r.metadata.is_some() { ", with metadata" } else { "" };
            waf_series.push(Series { name: format!("per window{with}"), points: series.iter().map(|s| (s.operations as f64, s.device_waf_window)).collect() });
            waf_series.push(Series { name: format!("cumulative{with}"), points: series.iter().map(|s| (s.operations as f64, s.device_waf_cumulative)).collect() });
        }
        if hit_series.len() < 8 {
            hit_series.push(Series { name: r.label.chars().take(32).collect(), points: series.iter().map(|s| (s.operations as f64, s.hit_ratio_window)).collect() });
        }
    }
    write_file(out, "waf.csv", csv(&["label", "operations", "waf_window", "waf_cumulative"], &waf_rows))?;
    // Fig. 2.4's black line: the WAF of each GC, beside the windows' and the cumulative.
    let mut gc_rows = Vec::new();
    for (_, (r, series)) in runs {
        for (i, g) in r.gc_rounds.iter().enumerate() {
            gc_rows.push(vec![
                r.label.clone(),
                (i + 1).to_string(),
                g.host_blocks.to_string(),
                g.units.to_string(),
                g.copied_blocks.to_string(),
                g.freed_blocks.to_string(),
                format!("{:.3}", g.waf()),
            ]);
        }
        if !r.gc_rounds.is_empty() {
            let with = if r.metadata.is_some() { ", with metadata" } else { "" };
            waf_series.push(Series { name: format!("per GC{with}"), points: per_gc_points(&r.gc_rounds, series) });
        }
    }
    write_file(out, "gc-waf.csv", csv(&["label", "gc", "host_blocks", "erase_units", "copied_blocks", "freed_blocks", "waf"], &gc_rows))?;
    let x_axis = if exp.trace.is_some() { "trace requests" } else { "read operations" };
    write_file(out, "device-waf.svg", line_chart("Conventional SSD under bcache: device WAF", x_axis, "WAF", &waf_series, false))?;
    write_file(out, "hit-ratio-over-time.svg", line_chart("Hit ratio per window", x_axis, "hit ratio", &hit_series, false))?;
    let bars: Vec<(String, f64)> = runs.iter().filter(|(s, _)| *s == "fig5.1").map(|(_, (r, _))| (r.label.chars().take(24).collect(), r.hit_ratio * 100.0)).collect();
    write_file(out, "hit-ratio.svg", zonekit_report::bar_chart("Hit ratio (Fig. 5.1)", "%", &bars))?;
    write_file(out, "summary.md", text.clone())?;
    Ok(text)
}

/// The metadata section's own table: what bcache's metadata held and wrote beside the data.
fn metadata_table(runs: &[&(&str, (CacheReport, Vec<CacheSample>))]) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .filter_map(|(_, (r, _))| {
            let m = r.metadata.as_ref()?;
            Some(vec![
                r.label.clone(),
                format!("{} of {}", m.buckets_max, r.buckets),
                format!("{} × {} KiB", m.btree_nodes_max, m.btree_node_bytes / KIB),
                format!("{} / {}", m.journal_buckets, m.prio_buckets),
                m.btree_blocks_written.to_string(),
                m.journal_blocks_written.to_string(),
                format!("{} ({} writes)", m.prio_blocks_written, m.prio_writes),
                format!("{:.3}", (r.cache_blocks_written + m.blocks_written()) as f64 / r.cache_blocks_written.max(1) as f64),
            ])
        })
        .collect();
    let mut text = String::from("bcache's metadata (buckets held at most; btree nodes at most; blocks written; device writes per data block written):\n\n");
    text.push_str(&markdown_table(
        &["configuration", "metadata buckets", "btree nodes", "journal / prio buckets", "btree blocks", "journal blocks", "prio blocks", "writes / data write"],
        &rows,
    ));
    text.push('\n');
    text
}

/// Each GC's WAF placed on the samples' axis (read operations or trace requests): at the
/// first sample by which the device had been given the GC's host blocks.
fn per_gc_points(rounds: &[GcRound], series: &[CacheSample]) -> Vec<(f64, f64)> {
    let Some(last) = series.last() else { return Vec::new() };
    rounds
        .iter()
        .filter(|g| g.waf().is_finite())
        .map(|g| {
            let at = series.partition_point(|s| s.host_blocks < g.host_blocks);
            (series.get(at).unwrap_or(last).operations as f64, g.waf())
        })
        .collect()
}

/// A line on the conventional SSD's GCs: how many, and their WAF (mean over all, median, and
/// mean over the last quarter of the rounds, once the device is in steady state).
fn gc_summary(rounds: &[GcRound]) -> Option<String> {
    let wafs: Vec<f64> = rounds.iter().map(GcRound::waf).filter(|w| w.is_finite()).collect();
    if wafs.is_empty() {
        return None;
    }
    let mean = |w: &[f64]| w.iter().sum::<f64>() / w.len().max(1) as f64;
    let mut sorted = wafs.clone();
    sorted.sort_by(f64::total_cmp);
    let multi = rounds.iter().filter(|g| g.units > 1).count();
    Some(format!(
        "{} GC rounds ({} with several erase units at once); WAF per GC: mean {:.2}, median {:.2}, last quarter's mean {:.2}",
        rounds.len(),
        multi,
        mean(&wafs),
        sorted[sorted.len() / 2],
        mean(&wafs[wafs.len() * 3 / 4..])
    ))
}

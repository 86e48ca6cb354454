use super::*;
use crate::cache::experiment::*;
use crate::cache::reads::*;
use crate::cache::trace::*;

fn tiny() -> CacheExperiment {
    CacheExperiment::synthetic(0.0078125, 2.0, 1, 1, std::env::temp_dir())
}

#[test]
fn the_thesis_configurations_run_and_report_sane_counters() {
    let exp = tiny();
    for (section, label, spec) in exp.specs().into_iter().filter(|(s, _, _)| *s == "fig5.1").take(3) {
        let (r, series) = run_cache(&label, &spec, &mut |_| {}).unwrap_or_else(|e| panic!("{section} {label}: {e}"));
        assert!(r.hit_ratio > 0.0 && r.hit_ratio < 1.0, "{label}: {}", r.hit_ratio);
        assert!(r.evictions > 0, "{label}: the cache never cycled");
        assert_eq!(series.len(), 50, "{label}");
        match spec.device {
            DeviceKind::Zoned { .. } => assert_eq!(r.device_waf, 1.0),
            DeviceKind::Conventional { erase_unit_bytes, .. } | DeviceKind::ConventionalDiscard { erase_unit_bytes, .. } | DeviceKind::Fdp { erase_unit_bytes, .. } => {
                assert!(r.device_waf > 1.2, "{label}: WAF {}", r.device_waf);
                // The rounds account for every copy the FTL made, and each for its units.
                assert!(!r.gc_rounds.is_empty(), "{label}: no GC");
                let copied: u64 = r.gc_rounds.iter().map(|g| g.copied_blocks).sum();
                let waf = (r.cache_blocks_written + copied) as f64 / r.cache_blocks_written as f64;
                assert!((waf - r.device_waf).abs() < 1e-9, "{label}: rounds say {waf}, the FTL {}", r.device_waf);
                for g in &r.gc_rounds {
                    assert_eq!(g.copied_blocks + g.freed_blocks, g.units * erase_unit_bytes / BLOCK, "{g:?}");
                    assert!(g.waf() >= 1.0, "{g:?}");
                }
            }
        }
    }
}

#[test]
fn a_kept_run_comes_back_whole_with_its_gc_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let exp = CacheExperiment::synthetic(0.0078125, 2.0, 1, 1, dir.path().to_path_buf());
    let store = crate::harness::runs::RunStore::open(dir.path()).unwrap();
    let (_, label, spec) = exp.specs().into_iter().find(|(_, _, s)| matches!(s.device, DeviceKind::Conventional { .. })).unwrap();
    let (ran, ran_series) = exp.run_stored(&store, &label, &spec).unwrap();
    assert!(!ran.gc_rounds.is_empty(), "the conventional SSD collected");
    assert_eq!(std::fs::read_dir(dir.path().join(crate::harness::runs::RUNS_DIR)).unwrap().count(), 1, "the run is kept");
    // Kept in full: a resumed experiment's gc-waf.csv and series are those of the run itself
    // (`cache run --json` leaves the GC rounds out; the kept run must not).
    let (loaded, loaded_series) = exp.load_kept(&store, &label, &spec).expect("the kept run loads");
    assert_eq!(format!("{loaded:?}"), format!("{ran:?}"));
    assert_eq!(loaded.gc_rounds, ran.gc_rounds);
    assert_eq!(format!("{loaded_series:?}"), format!("{ran_series:?}"));
}

/// A binary trace: `blocks` one-block reads at scattered addresses, then the same again;
/// the first request is two blocks long (one request in the trace's block records).
fn read_twice_trace(path: &std::path::Path, blocks: u64) -> zonekit_trace::input::Input {
    use zonekit_trace::{BlockIo, Op};
    let mut w = zonekit_trace::binary::BinaryWriter::create(path, 4096, "test").unwrap();
    let read = |block: u64, starts_request: bool| BlockIo { time_us: 0, volume: 0, block, op: Op::Read, starts_request };
    for _ in 0..2 {
        for i in 0..blocks {
            let block = i * 7 + 1;
            w.push(&read(block, true)).unwrap();
            if i == 0 {
                w.push(&read(block + 1, false)).unwrap();
            }
        }
    }
    w.finish().unwrap();
    zonekit_trace::input::Input::path(path, None, false)
}

fn trace_spec(warmup_fraction: f64) -> CacheSpec {
    let base = tiny().base();
    CacheSpec {
        device: DeviceKind::Zoned { zone_bytes: MIB, zones_per_bucket: 1 },
        cache_bytes: 4 * MIB,
        workload: Ycsb { warmup_fraction, ..base.workload },
        config: CacheConfig { write_points: 1, ..base.config },
        ..base
    }
}

#[test]
fn a_binary_trace_replays_by_request_and_the_warmup_is_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let input = read_twice_trace(&dir.path().join("t.zkt"), 400);
    let scan = scan_trace(&input).unwrap();
    // The two-block request is one request; the trace reaches block 399 × 7 + 1.
    assert_eq!((scan.requests, scan.read_requests, scan.end_bytes), (800, 800, (399 * 7 + 2) * BLOCK));
    // The cache holds all 401 blocks: every read of the second pass hits.
    let all = run_cache_trace("t", &trace_spec(0.0), &input, Some(64 * MIB), &mut |_| {}).unwrap();
    assert_eq!((all.read_blocks, all.evictions), (802, 0));
    assert!((all.hit_ratio - 401.0 / 802.0).abs() < 1e-12, "{}", all.hit_ratio);
    let warm = run_cache_trace("t", &trace_spec(0.5), &input, Some(64 * MIB), &mut |_| {}).unwrap();
    assert_eq!((warm.read_blocks, warm.hit_ratio), (401, 1.0));
    // A warm-up of 3/4 counts the last 200 requests only.
    let later = run_cache_trace("t", &trace_spec(0.75), &input, Some(64 * MIB), &mut |_| {}).unwrap();
    assert_eq!((later.read_blocks, later.hit_ratio), (200, 1.0));
    let e = run_cache_trace("t", &trace_spec(1.0), &input, Some(64 * MIB), &mut |_| {}).unwrap_err().to_string();
    assert!(e.contains("--warmup-fraction 1"), "{e}");
}

#[test]
fn the_trace_experiment_runs_every_configuration_on_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    // 3,000 scattered blocks read twice: a 64 MiB cache holds them all, so after a warm-up
    // of half the requests every configuration and every reference hits every read.
    let input = read_twice_trace(&dir.path().join("t.zkt"), 3000);
    let mut exp = tiny();
    exp.out = dir.path().join("out");
    exp.warmup_fraction = Some(0.5);
    exp.trace = Some(TraceExperiment::new(input, 64 * MIB, MIB).unwrap());
    let specs = exp.specs();
    assert!(specs.iter().all(|(s, _, _)| !SYNTHETIC_ONLY_SECTIONS.contains(s)));
    assert!(specs.iter().any(|(s, _, spec)| *s == "fig5.1" && spec.device == DeviceKind::Conventional { bucket_bytes: 8 * KIB, op: 0.07, erase_unit_bytes: 128 * KIB }));
    let summary = run_experiment(&exp, &|_, _, _| {}).unwrap();
    assert!(summary.contains("6000 requests (6000 reads)") && !summary.contains("## clustered") && !summary.contains("## admission"), "{summary}");
    let csv = std::fs::read_to_string(exp.out.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), specs.len() + 1);
    let hit = RESULT_COLUMNS.iter().position(|c| *c == "hit_ratio").unwrap();
    for line in csv.lines().skip(1) {
        // From the end: the labels hold commas.
        assert_eq!(line.rsplit(',').nth(RESULT_COLUMNS.len() - 1 - hit), Some("1.0000"), "{line}");
    }
    for policy in ["belady", "lru", "s3fifo", "sieve"] {
        assert!(summary.lines().any(|l| l.starts_with(&format!("| {policy} ")) && l.contains("100.00 %")), "{policy}: {summary}");
    }
}

#[test]
fn packed_records_share_blocks_and_strided_ones_do_not() {
    let w = Ycsb { records: 1000, record_bytes: 1040, data_bytes: 1000 * 10240, layout: Layout::Packed, ..tiny().base().workload };
    // Bytes 0..1040, 3120..4160 (across the first block's end), 4160..5200.
    assert_eq!([record_blocks(&w, 0), record_blocks(&w, 3), record_blocks(&w, 4)], [(0, 1), (0, 2), (1, 1)]);
    let strided = Ycsb { layout: Layout::Strided, ..w };
    assert_eq!([record_blocks(&strided, 0), record_blocks(&strided, 3), record_blocks(&strided, 4)], [(0, 1), (7, 1), (10, 1)]);
    // Packed, they need only their footprint; a byte less is refused by name.
    Ycsb { data_bytes: 1_040_000, ..w }.validate().unwrap();
    let e = Ycsb { data_bytes: 1_039_999, ..w }.validate().unwrap_err().to_string();
    assert!(e.contains("--layout packed"), "{e}");
}

#[test]
fn record_bytes_1024_packs_exactly_four_records_a_block() {
    let w = Ycsb { records: 1000, record_bytes: 1024, data_bytes: 1000 * 1024, layout: Layout::Packed, ..tiny().base().workload };
    w.validate().unwrap();
    for i in 0..1000 {
        // Record i is block i / 4 alone: four to a block, none across two.
        assert_eq!(record_blocks(&w, i), (i / 4, 1), "record {i}");
    }
    // The experiment's data set is then the records' bytes exactly.
    let exp = CacheExperiment { layout: Layout::Packed, record_bytes: 1024, ..tiny() };
    let base = exp.base();
    assert_eq!((base.workload.record_bytes, base.workload.data_bytes), (1024, base.workload.records * 1024));
    assert!(describe_setup(&exp, &base).contains("packed back to back, 4 to a block"));
    // Strided, a record keeps its stride and is read from the block holding it.
    let strided = Ycsb { layout: Layout::Strided, data_bytes: 1000 * 10240, ..w };
    assert_eq!([record_blocks(&strided, 0), record_blocks(&strided, 1)], [(0, 1), (2, 1)]);
}

#[test]
fn record_bytes_out_of_range_are_refused_by_name() {
    let w = Ycsb { records: 1000, data_bytes: 1000 * 10240, layout: Layout::Packed, ..tiny().base().workload };
    for bytes in [0, BLOCK + 1, u64::MAX] {
        for layout in [Layout::Packed, Layout::Strided] {
            let e = Ycsb { record_bytes: bytes, layout, ..w }.validate().unwrap_err().to_string();
            assert!(e.contains(&format!("--record-bytes {bytes}:")) && e.contains("1 to 4096 bytes"), "{e}");
        }
        let e = check_experiment(&CacheExperiment { record_bytes: bytes, layout: Layout::Packed, ..tiny() }).unwrap_err().to_string();
        assert!(e.contains(&format!("--record-bytes {bytes}:")), "{e}");
    }
    Ycsb { record_bytes: BLOCK, ..w }.validate().unwrap();
    // Strided, a record larger than its stride is refused with the flags that set both.
    let e = Ycsb { record_bytes: 4096, data_bytes: 1000 * 4000, layout: Layout::Strided, ..w }.validate().unwrap_err().to_string();
    assert!(e.contains("--layout strided --record-bytes 4096") && e.contains("do not fit"), "{e}");
}

#[test]
fn packed_records_fit_the_cache_and_nothing_is_evicted() {
    let mut exp = tiny();
    exp.layout = Layout::Packed;
    let base = exp.base();
    // 50,000 records of 1040 bytes (12,696 blocks, 49.6 MiB) under the 64 MiB cache.
    assert_eq!((base.workload.records, base.workload.data_bytes, base.cache_bytes), (50_000, 52_002_816, 64 * MIB));
    assert_eq!(base.budget, tiny().base().budget);
    for (_, label, spec) in exp.specs().into_iter().filter(|(s, _, _)| *s == "fig5.1").take(2) {
        let (r, _) = run_cache(&label, &spec, &mut |_| {}).unwrap();
        assert_eq!(r.evictions, 0, "{label}");
        // Only first reads miss: of 100,000 reads of 50,000 records, the second half
        // misses on the records it reads first, a few percent.
        assert!(r.hit_ratio > 0.9 && r.hit_ratio < 1.0, "{label}: {}", r.hit_ratio);
    }
}

#[test]
fn every_configuration_keeps_the_same_write_points() {
    for write_points in [1, 8] {
        let exp = CacheExperiment { write_points, ..tiny() };
        for (section, label, spec) in exp.specs() {
            assert_eq!(spec.config.write_points, write_points, "{section} {label}");
        }
    }
    let e = check_experiment(&CacheExperiment { write_points: 16, ..tiny() }).unwrap_err().to_string();
    assert!(e.contains("--write-points 16") && e.contains("66 zones"), "{e}");
}

#[test]
fn bcache_metadata_takes_buckets_and_writes_on_both_devices() {
    let exp = tiny();
    let specs = exp.specs();
    // The metadata section has its own runs; nothing else models metadata.
    assert!(specs.iter().all(|(section, _, spec)| (*section == "metadata") == spec.config.metadata.is_some()));
    let without = |label: &str| specs.iter().find(|(_, l, _)| l == label).unwrap().2.clone();
    for (label, plain) in [
        ("bcache original + bcache metadata", without("bcache original (conventional SSD, zone/128 buckets, bcache LRU)")),
        ("ZNS-naive (LFU) + bcache metadata", without("ZNS-naive (LFU)")),
    ] {
        let spec = &specs.iter().find(|(_, l, _)| l == label).unwrap().2;
        let (r, _) = run_cache(label, spec, &mut |_| {}).unwrap();
        let (p, _) = run_cache(label, &plain, &mut |_| {}).unwrap();
        let m = r.metadata.clone().unwrap();
        assert!(p.metadata.is_none());
        assert!(m.buckets_max >= 4 && m.btree_blocks_written > 0 && m.prio_writes > 0, "{label}: {m:?}");
        // Metadata is written to the device: its writes are beyond the data's.
        let device_blocks = match &spec.device {
            DeviceKind::Zoned { .. } => {
                assert_eq!(r.device_waf, 1.0, "{label}");
                None
            }
            _ => Some(()),
        };
        if device_blocks.is_some() {
            assert!(r.device_waf > 1.0, "{label}");
        }
        // Fewer buckets hold data: the cache hits less.
        assert!(r.hit_ratio < p.hit_ratio, "{label}: {} with metadata, {} without", r.hit_ratio, p.hit_ratio);
        // Deterministic.
        let (again, _) = run_cache(label, spec, &mut |_| {}).unwrap();
        assert_eq!((again.hit_ratio, again.metadata), (r.hit_ratio, Some(m)));
    }
}

#[test]
fn belady_bounds_the_item_policies() {
    let stream = ReadStream::of_workload(&tiny().base().workload, 1);
    let cache = tiny().base().cache_bytes;
    let opt = item_hit_ratio("belady", &stream, cache).unwrap();
    for policy in ["lru", "fifo", "s3fifo", "sieve"] {
        let h = item_hit_ratio(policy, &stream, cache).unwrap();
        assert!(h <= opt + 1e-9 && h > 0.0, "{policy}: {h} vs OPT {opt}");
    }
}

//! `zonekit cache sim` end to end: one policy and several in one table, JSON output, a real
//! trace split into blocks, and bad input refused with exit status 2.

mod common;

use common::{ok, refused};

const ZIPF: [&str; 4] = ["--workload", "zipf:blocks=5K,alpha=0.9,writes=50K", "--seed", "3"];

#[test]
fn sim_prints_a_table_of_policies() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&[&["cache", "sim", "--policy", "sieve", "--cache-blocks", "450"], &ZIPF[..]].concat(), dir.path());
    assert!(out.contains("50000 requests, 50000 block requests of 4096 bytes"), "{out}");
    let row = out.lines().find(|l| l.starts_with("sieve")).unwrap_or_else(|| panic!("no sieve row in:\n{out}"));
    // 29551 hits of 50000: the figure libCacheSim 0.3.5 gives (crates/zonekit-lab/src/cache/sim.rs).
    assert!(row.contains(" 450 ") && row.contains(" 29551 ") && row.contains("0.5910"), "{row}");
    let out = ok(&[&["cache", "sim", "--policies", "lru,fifo,s3fifo,sieve,belady", "--cache-blocks", "450", "--param", "warmup=paper"], &ZIPF[..]].concat(), dir.path());
    for policy in ["lru ", "fifo ", "s3fifo (warmup=paper) ", "sieve ", "belady "] {
        assert!(out.lines().any(|l| l.starts_with(policy)), "no {policy:?} row in:\n{out}");
    }
}

#[test]
fn sim_json_and_a_real_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    // Alibaba CSV: an 8 KiB read, a 4 KiB write of its second block, a 12 KiB write at 2 KiB
    // (blocks 0-3): 7 block requests, 3 hits under LRU.
    std::fs::write(&trace, "0,R,0,8192,1\n0,W,4096,4096,2\n0,W,2048,12288,3\n").unwrap();
    let out = ok(&["cache", "sim", "--policies", "lru,belady", "--cache-blocks", "10", "--format", "alibaba", trace.to_str().unwrap(), "--json"], dir.path());
    let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 2);
    assert_eq!(parsed[0]["policy"], "lru");
    assert_eq!((parsed[0]["trace_requests"].as_u64(), parsed[0]["requests"].as_u64(), parsed[0]["hits"].as_u64()), (Some(3), Some(7), Some(3)));
    assert_eq!(parsed[1]["capacity_blocks"], 10);
    assert!(parsed[1]["requests_per_sec"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_requests_are_refused_with_usage_status() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sim = |extra: &[&str]| refused(&[&["cache", "sim"], &ZIPF[..], extra].concat(), d, 2);
    assert!(sim(&["--policy", "lfu", "--cache-blocks", "10"]).contains("unknown item cache policy \"lfu\""));
    assert!(sim(&["--policies", "lru,arc", "--cache-blocks", "10"]).contains("unknown item cache policy \"arc\""));
    assert!(sim(&["--cache-blocks", "0"]).contains("at least one block"));
    assert!(sim(&["--policy", "s3fifo", "--cache-blocks", "5"]).contains("leaves the small queue"));
    assert!(sim(&["--policy", "s3fifo", "--cache-blocks", "100", "--param", "small_ratio=2"]).contains("strictly between 0 and 1"));
    assert!(sim(&["--policy", "s3fifo", "--cache-blocks", "100", "--param", "move_threshold=x"]).contains("not a whole number"));
    assert!(sim(&["--policy", "lru", "--cache-blocks", "100", "--param", "small_ratio=0.2"]).contains("has a parameter \"small_ratio\""));
    assert!(sim(&["--cache-blocks", "100", "--param", "k"]).contains("expected KEY=VALUE"));
    assert!(refused(&["cache", "sim", "--cache-blocks", "10"], d, 2).contains("name a trace file or a --workload"));
    assert!(refused(&["cache", "sim", "--cache-blocks", "10", "no-such.csv"], d, 2).contains("no such file"));
    // clap's own refusals: a missing capacity, both --policy and --policies.
    refused(&["cache", "sim", "--workload", "zipf:blocks=1K,writes=1K"], d, 2);
    refused(&["cache", "sim", "--policy", "lru", "--policies", "fifo", "--cache-blocks", "10", "--workload", "zipf:blocks=1K,writes=1K"], d, 2);
}

const SMALL: [&str; 6] = ["--records", "20000", "--data-mib", "256", "--cache-mib", "32"];

#[test]
fn run_reports_hit_ratio_waf_and_placement() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&[&["cache", "run", "--zone-mib", "1", "--sampler-bytes", "512"], &SMALL[..]].concat(), dir.path());
    for field in ["hit ratio", "interface", "zns", "host WAF", "device WAF", "total WAF", "lfu / lru"] {
        assert!(out.contains(field), "{field}: {out}");
    }
    // 512 KiB erase units: the SSD model needs its 7 % spare to hold an open unit per write
    // point and its GC reserve beside the data, which 16 units of 2 MiB do not.
    let json = ok(
        &[&["cache", "run", "--interface", "conventional", "--bucket-kib", "128", "--erase-unit-kib", "512", "--eviction", "bcache", "--sampler", "lru", "--json"], &SMALL[..]]
            .concat(),
        dir.path(),
    );
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["buckets"], 256);
    assert_eq!(report["interface"], "conventional");
    assert!(report["device_waf"].as_f64().unwrap() > 1.0, "{json}");
    let hit = report["hit_ratio"].as_f64().unwrap();
    assert!(hit > 0.0 && hit < 1.0);
    let waf = |r: &serde_json::Value, field: &str| r[field].as_f64().unwrap_or_else(|| panic!("{field}: {r}"));
    assert!((waf(&report, "total_waf") - waf(&report, "host_waf") * waf(&report, "device_waf")).abs() < 1e-9, "{json}");
    // The same cache on FDP: its two temperatures' buckets under two handles, evicted
    // buckets trimmed, so device GC finds fewer live blocks to move (2.69 against 2.83).
    let fdp: serde_json::Value = serde_json::from_str(&ok(
        &[&["cache", "run", "--interface", "fdp:2", "--bucket-kib", "128", "--erase-unit-kib", "512", "--eviction", "bcache", "--sampler", "lru", "--json"], &SMALL[..]].concat(),
        dir.path(),
    ))
    .unwrap();
    assert_eq!(fdp["interface"], "fdp:2");
    assert_eq!(fdp["buckets"], 256);
    assert_eq!(waf(&fdp, "host_waf"), 1.0, "{fdp}");
    assert_eq!(fdp["hit_ratio"], report["hit_ratio"], "the interface changes where buckets go, not what is cached");
    assert!(waf(&fdp, "device_waf") >= 1.0 && waf(&fdp, "device_waf") < waf(&report, "device_waf"), "{fdp}");
}

#[test]
fn a_cache_interface_that_makes_no_sense_is_refused_with_usage_status() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |extra: &[&str]| refused(&[&["cache", "run"], &SMALL[..], extra].concat(), d, 2);
    for bad in ["fdp", "fdp:0", "fdp:x", "ssd", "fdp:4:sometimes"] {
        assert!(run(&["--interface", bad]).contains("--interface"), "{bad}");
    }
    assert!(run(&["--device", "zns"]).contains("--device \"zns\": the cache's device kind is --interface now"));
    assert!(run(&["--interface", "fdp:2", "--zone-mib", "1"]).contains("shape a zns cache, not the fdp:2 one"));
    assert!(run(&["--interface", "zns", "--op", "0.1"]).contains("not the zns cache"));
    assert!(run(&["--interface", "fdp:4", "--discard"]).contains("FDP SSD always trims"));
    assert!(run(&["--discard"]).contains("conventional SSD's option"));
    // More handles than the device holds open units for, named by the model.
    assert!(run(&["--interface", "fdp:64", "--erase-unit-kib", "512"]).contains("too small for its reclaim units"));
}

#[test]
fn run_models_bcache_metadata_and_refuses_its_flags_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let json = |extra: &[&str]| -> serde_json::Value {
        serde_json::from_str(&ok(&[&["cache", "run", "--zone-mib", "1", "--sampler", "none", "--json"], &SMALL[..], extra].concat(), d)).unwrap()
    };
    let plain = json(&[]);
    assert!(plain["metadata"].is_null(), "{plain}");
    let meta = json(&["--metadata"]);
    let m = &meta["metadata"];
    // 32 buckets of 1 MiB: bcache's 2 journal buckets, 1 prio bucket, 256 KiB btree nodes.
    assert_eq!((m["journal_buckets"].as_u64(), m["prio_buckets"].as_u64(), m["btree_node_bytes"].as_u64()), (Some(2), Some(1), Some(256 << 10)), "{meta}");
    assert!(m["btree_blocks_written"].as_u64().unwrap() > 0 && m["prio_writes"].as_u64().unwrap() > 0, "{meta}");
    assert!(meta["hit_ratio"].as_f64().unwrap() < plain["hit_ratio"].as_f64().unwrap(), "{meta}");
    // Every setting is honoured.
    let set = json(&["--metadata", "--journal-buckets", "3", "--btree-node-kib", "64", "--btree-reserve", "4", "--prio-write", "used"]);
    let m = &set["metadata"];
    assert_eq!((m["journal_buckets"].as_u64(), m["btree_node_bytes"].as_u64()), (Some(3), Some(64 << 10)), "{set}");
    assert_eq!(set["spec"]["config"]["metadata"]["btree_reserve_buckets"].as_u64(), Some(4), "{set}");
    assert_eq!(m["prio_blocks_written"].as_u64(), m["prio_writes"].as_u64(), "one block a prio write: {set}");
    let text = ok(&[&["cache", "run", "--zone-mib", "1", "--metadata"], &SMALL[..]].concat(), d);
    assert!(text.contains("bcache metadata") && text.contains("btree nodes of 256 KiB"), "{text}");
    // Refused by name.
    let run = |extra: &[&str]| refused(&[&["cache", "run", "--zone-mib", "1"], &SMALL[..], extra].concat(), d, 2);
    for (flags, says) in [
        (&["--metadata", "--journal-buckets", "0"][..], "--journal-buckets 0"),
        (&["--metadata", "--btree-node-kib", "6"][..], "--btree-node-kib 6"),
        (&["--metadata", "--btree-node-kib", "4"][..], "--btree-node-kib 4"),
        (&["--metadata", "--btree-node-kib", "2048"][..], "at most the 1024 KiB bucket"),
        (&["--metadata", "--btree-reserve", "2"][..], "--btree-reserve 2"),
        (&["--metadata", "--prio-write", "half"][..], "--prio-write \"half\""),
        (&["--metadata", "--journal-buckets", "30"][..], "--metadata: bcache's metadata takes"),
    ] {
        let e = run(flags);
        assert!(e.contains(says), "{flags:?}: {e}");
    }
    for flag in ["--journal-buckets", "--btree-node-kib", "--btree-reserve", "--prio-write"] {
        let e = run(&[flag, "8"]);
        assert!(e.contains("--metadata"), "{flag} without --metadata: {e}");
    }
}

/// A binary trace of `blocks` scattered one-block reads, then the same reads again.
fn read_twice_trace(path: &std::path::Path, blocks: u64) {
    use zonekit_trace::{BlockIo, Op};
    let mut w = zonekit_trace::binary::BinaryWriter::create(path, 4096, "test").unwrap();
    for _ in 0..2 {
        for i in 0..blocks {
            w.push(&BlockIo { time_us: i, volume: (i % 4) as u32, block: i * 5 + 3, op: Op::Read, starts_request: true }).unwrap();
        }
    }
    w.finish().unwrap();
}

#[test]
fn run_on_a_binary_trace_counts_after_the_warmup() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    read_twice_trace(&d.join("t.zkt"), 300);
    let run = |extra: &[&str]| -> serde_json::Value {
        let out = ok(&[&["cache", "run", "--trace", "t.zkt", "--cache-mib", "4", "--zone-mib", "1", "--data-mib", "16", "--json"], extra].concat(), d);
        serde_json::from_str(&out).unwrap()
    };
    // By default every request counts: the first pass misses, the second hits.
    let all = run(&[]);
    assert_eq!((all["read_blocks"].as_u64(), all["hit_ratio"].as_f64()), (Some(600), Some(0.5)), "{all}");
    let warm = run(&["--warmup-fraction", "0.5"]);
    assert_eq!((warm["read_blocks"].as_u64(), warm["hit_ratio"].as_f64()), (Some(300), Some(1.0)), "{warm}");
    let e = refused(&["cache", "run", "--trace", "t.zkt", "--cache-mib", "4", "--zone-mib", "1", "--warmup-fraction", "1"], d, 2);
    assert!(e.contains("--warmup-fraction 1"), "{e}");
}

#[test]
fn the_experiment_writes_every_section_and_chart() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&["cache", "experiment", "--scale", "0.0078125", "--passes", "1", "--threads", "2", "--out", "ce"], dir.path());
    for section in [
        "## fig5.1",
        "## fig4.1",
        "## fig5.2",
        "## fig5.3",
        "## clustered",
        "## beyond",
        "## admission",
        "## metadata",
        "bcache's metadata (buckets held",
        "belady",
        "WAF per GC: mean",
        "8 write point(s)",
    ] {
        assert!(out.contains(section), "no {section} in {out}");
    }
    for file in ["results.csv", "waf.csv", "gc-waf.csv", "summary.md", "device-waf.svg", "hit-ratio.svg", "hit-ratio-over-time.svg"] {
        assert!(dir.path().join("ce").join(file).exists(), "{file}");
    }
    let gc = std::fs::read_to_string(dir.path().join("ce/gc-waf.csv")).unwrap();
    assert!(gc.starts_with("label,gc,host_blocks,erase_units,copied_blocks,freed_blocks,waf") && gc.lines().count() > 1, "{gc}");
    // Each configuration's own command gives its row: the conventional SSD (GC), ghost
    // admission, bcache's metadata with prio writes of their entries only, clustered keys.
    rows_rerun_alone(
        dir.path(),
        "ce",
        &[
            "bcache original (conventional SSD, zone/128 buckets, bcache LRU)",
            "ZNS-naive (LFU) + ghost admission, 4× the reads",
            "ZNS-naive (LFU) + bcache metadata, prio writes of their entries only",
            "ZNS-SLRU (lfu eviction), clustered keys",
        ],
    );
}

/// Every row of `out/results.csv` has its own command in `out/commands.tsv`, and the rows
/// labelled `labels` rerun alone by it give the row's hit ratio, device WAF and evictions.
fn rows_rerun_alone(d: &std::path::Path, out: &str, labels: &[&str]) {
    let results = std::fs::read_to_string(d.join(out).join("results.csv")).unwrap();
    let commands = std::fs::read_to_string(d.join(out).join("commands.tsv")).unwrap();
    assert_eq!(commands.lines().count(), results.lines().count(), "{commands}");
    assert!(!commands.contains("not one command"), "{commands}");
    let header: Vec<&str> = results.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|c| *c == name).unwrap();
    for label in labels {
        let command =
            commands.lines().find_map(|l| l.split('\t').nth(1).filter(|l| l == label).and(l.split('\t').nth(2))).unwrap_or_else(|| panic!("no command for {label}: {commands}"));
        let row = zonekit_report::html::parse_csv(&results).into_iter().find(|cells| cells[1] == *label).unwrap_or_else(|| panic!("no row {label}"));
        let run =
            std::process::Command::new("sh").arg("-c").arg(format!("{} --json", command.replacen("zonekit", env!("CARGO_BIN_EXE_zonekit"), 1))).current_dir(d).output().unwrap();
        assert!(run.status.success(), "{command}: {}", String::from_utf8_lossy(&run.stderr));
        let alone: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(format!("{:.4}", alone["hit_ratio"].as_f64().unwrap()), row[column("hit_ratio")], "{label}: {command}");
        assert_eq!(format!("{:.3}", alone["device_waf"].as_f64().unwrap()), row[column("device_waf")], "{label}: {command}");
        assert_eq!(alone["evictions"].to_string(), row[column("evictions")], "{label}: {command}");
    }
}

#[test]
fn the_interfaces_comparison_writes_every_interface_and_refuses_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["cache", "experiment", "--interfaces", "--scale", "0.0078125", "--passes", "0.5", "--threads", "2", "--out", "ci"], d);
    // The summary as written (the terminal's copy is laid out for 100 columns).
    let out = std::fs::read_to_string(d.join("ci/summary.md")).unwrap();
    for interface in ["| zns |", "| fdp:2 |", "| fdp:4 |", "| fdp:8 |", "| fdp:8:persistent |", "| conventional |", "| conventional+discard |"] {
        assert_eq!(out.matches(interface).count(), 2, "{interface} once per placement in {out}");
    }
    let csv = std::fs::read_to_string(d.join("ci/cache-interfaces.csv")).unwrap();
    assert!(csv.starts_with("placement,interface,bucket_bytes,cache_bytes,raw_bytes,hit_ratio,host_waf,device_waf,total_waf"), "{csv}");
    assert_eq!(csv.lines().count(), 15, "{csv}");
    assert!(d.join("ci/report.html").exists(), "every experiment writes its report");
    let commands = std::fs::read_to_string(d.join("ci/commands.tsv")).unwrap();
    assert_eq!(commands.lines().count(), 15, "{commands}");
    for label in ["ZNS-naive (LFU) on zns", "LRU sampler (LFU) on fdp:8:persistent", "ZNS-naive (LFU) on conventional+discard"] {
        let command = commands.lines().find_map(|l| l.split('\t').nth(1).filter(|l| l == &label).and(l.split('\t').nth(2))).unwrap();
        let (placement, interface) = label.split_once(" on ").unwrap();
        let row = zonekit_report::html::parse_csv(&csv).into_iter().find(|c| c[0] == placement && c[1] == interface).unwrap();
        let run =
            std::process::Command::new("sh").arg("-c").arg(format!("{} --json", command.replacen("zonekit", env!("CARGO_BIN_EXE_zonekit"), 1))).current_dir(d).output().unwrap();
        assert!(run.status.success(), "{command}: {}", String::from_utf8_lossy(&run.stderr));
        let alone: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(format!("{:.4}", alone["hit_ratio"].as_f64().unwrap()), row[5], "{label}: {command}");
        assert_eq!(format!("{:.4}", alone["device_waf"].as_f64().unwrap()), row[7], "{label}: {command}");
    }
    // The thesis' sections are another table: not into the comparison's directory.
    let e = refused(&["cache", "experiment", "--scale", "0.0078125", "--passes", "0.5", "--out", "ci"], d, 2);
    assert!(e.contains("cache experiment --interfaces"), "{e}");
    std::fs::write(d.join("t.csv"), "0,R,0,4096,1\n").unwrap();
    let e = refused(&["cache", "experiment", "--interfaces", "--trace", "t.csv", "--cache-mib", "64", "--out", "ci2"], d, 2);
    assert!(e.contains("cannot be used with"), "{e}");
}

#[test]
fn the_experiment_runs_on_a_trace_and_refuses_what_does_not_apply() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 20,000 blocks read twice: 78 MiB through a 64 MiB cache, so buckets are evicted.
    read_twice_trace(&d.join("t.zkt"), 20_000);
    ok(&["cache", "experiment", "--trace", "t.zkt", "--cache-mib", "64", "--zone-mib", "1", "--warmup-fraction", "0.5", "--threads", "2", "--out", "te"], d);
    let out = std::fs::read_to_string(d.join("te/summary.md")).unwrap();
    for section in ["## fig5.1", "## fig4.1", "## fig5.2", "## fig5.3", "## beyond", "belady", "trace reads", "40000 requests (40000 reads)"] {
        assert!(out.contains(section), "no {section} in {out}");
    }
    for section in ["## clustered", "## admission"] {
        assert!(!out.contains(section), "{section} on a trace: {out}");
    }
    for file in ["results.csv", "waf.csv", "gc-waf.csv", "summary.md", "device-waf.svg", "hit-ratio.svg", "hit-ratio-over-time.svg"] {
        assert!(d.join("te").join(file).exists(), "{file}");
    }
    rows_rerun_alone(d, "te", &["ZNS-naive (LFU)", "ZNS-LRU (LFU), 16 KiB chunks", "bcache original + bcache metadata"]);
    let experiment = |extra: &[&str]| refused(&[&["cache", "experiment", "--out", "te2"], extra].concat(), d, 2);
    for flag in ["--scale", "--passes", "--seed"] {
        let e = experiment(&["--trace", "t.zkt", "--cache-mib", "64", flag, "1"]);
        assert!(e.contains("cannot be used with") && e.contains(flag), "{flag}: {e}");
    }
    assert!(experiment(&["--trace", "t.zkt"]).contains("--cache-mib"));
    assert!(experiment(&["--cache-mib", "64"]).contains("--trace"));
    assert!(experiment(&["--zone-mib", "1"]).contains("--trace"));
    assert!(experiment(&["--trace", "t.zkt", "--cache-mib", "100"]).contains("--zone-mib"));
    assert!(experiment(&["--trace", "t.zkt", "--cache-mib", "4", "--zone-mib", "1"]).contains("at least"));
    assert!(experiment(&["--trace", "t.zkt", "--cache-mib", "64", "--zone-mib", "3"]).contains("whole number of zones"));
    assert!(experiment(&["--trace", "missing.zkt", "--cache-mib", "64"]).contains("no such file"));
    assert!(experiment(&["--warmup-fraction", "1.5"]).contains("--warmup-fraction 1.5"));
}

#[test]
fn bad_cache_configurations_are_refused_with_usage_status() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |extra: &[&str]| refused(&[&["cache", "run"], &SMALL[..], extra].concat(), d, 2);
    // Flags of the other device are refused, not ignored.
    assert!(run(&["--bucket-kib", "3"]).contains("not the zns cache"));
    assert!(run(&["--interface", "conventional", "--zone-mib", "1"]).contains("shape a zns cache, not the conventional one"));
    assert!(run(&["--interface", "conventional", "--erase-unit-kib", "65536"]).contains("at most the 33554432-byte cache"));
    assert!(run(&["--interface", "conventional", "--erase-unit-kib", "2048"]).contains("--erase-unit-kib 2048: SSD model: the device is too small"));
    assert!(run(&["--admission", "ghost", "--ghost-blocks", "0"]).contains("at least 1"));
    assert!(run(&["--sampler", "sfr", "--sampler-bytes", "1"]).contains("no memory budget"));
    assert!(run(&["--sampler", "none", "--sampler-param", "levels=3"]).contains("takes no parameters"));
    assert!(run(&["--write-points", "16"]).contains("two more (one free, one to evict)"));
    // A cache larger than the data set holds all of it: nothing is evicted, and only first
    // reads of a block miss (every block read from the disk was inserted once).
    let larger = ok(&["cache", "run", "--records", "20000", "--data-mib", "256", "--cache-mib", "512", "--zone-mib", "1", "--json"], d);
    let larger: serde_json::Value = serde_json::from_str(&larger).unwrap();
    assert_eq!(larger["evictions"], 0, "{larger}");
    assert_eq!(larger["hdd_blocks_read"], larger["cache_blocks_written"], "{larger}");
    // Packed records: 20,000 × 1040 bytes are the data set (5079 blocks), under a 32 MiB cache.
    let packed: serde_json::Value =
        serde_json::from_str(&ok(&["cache", "run", "--records", "20000", "--cache-mib", "32", "--zone-mib", "1", "--layout", "packed", "--json"], d)).unwrap();
    assert_eq!((packed["spec"]["workload"]["data_bytes"].as_u64(), packed["evictions"].as_u64()), (Some(5079 * 4096), Some(0)), "{packed}");
    // --record-bytes 1024 packed: exactly four records a block, 20,000 records in 5000 blocks.
    let exact: serde_json::Value =
        serde_json::from_str(&ok(&["cache", "run", "--records", "20000", "--cache-mib", "32", "--zone-mib", "1", "--layout", "packed", "--record-bytes", "1024", "--json"], d))
            .unwrap();
    assert_eq!((exact["spec"]["workload"]["data_bytes"].as_u64(), exact["spec"]["workload"]["record_bytes"].as_u64()), (Some(5000 * 4096), Some(1024)), "{exact}");
    for bytes in ["0", "4097"] {
        let e = run(&["--record-bytes", bytes]);
        assert!(e.contains(&format!("--record-bytes {bytes}: a record must be 1 to 4096 bytes")), "{e}");
        let e = refused(&["cache", "experiment", "--scale", "0.0078125", "--record-bytes", bytes, "--out", "rb"], d, 2);
        assert!(e.contains(&format!("--record-bytes {bytes}:")), "{e}");
    }
    assert!(refused(&["cache", "run", "--trace", "x.csv", "--record-bytes", "1024"], d, 2).contains("cannot be used with"));
    assert!(refused(&["cache", "experiment", "--record-bytes", "1024", "--trace", "x.csv", "--cache-mib", "64"], d, 2).contains("cannot be used with"));
    assert!(run(&["--layout", "diagonal"]).contains("--layout \"diagonal\": expected strided or packed"));
    let e = refused(&["cache", "run", "--records", "20000", "--data-mib", "16", "--cache-mib", "32", "--zone-mib", "1", "--layout", "packed"], d, 2);
    assert!(e.contains("--records 20000 --data-mib 16 --layout packed") && e.contains("do not fit"), "{e}");
    assert!(refused(&["cache", "run", "--trace", "x.csv", "--layout", "packed"], d, 2).contains("cannot be used with"));
    assert!(refused(&["cache", "experiment", "--layout", "packed", "--trace", "x.csv", "--cache-mib", "64"], d, 2).contains("cannot be used with"));
    assert!(run(&["--interface", "conventional", "--bucket-kib", "300"]).contains("not a whole number of 307200-byte buckets"));
    let e = run(&["--interface", "conventional", "--bucket-kib", "78"]);
    assert!(e.contains("a bucket of 79872 bytes is not a whole number of 4096-byte blocks"), "{e}");
    assert!(run(&["--sampler-bytes", "2"]).contains("holds no"));
    assert!(run(&["--sampler", "lfu"]).contains("unknown sampler policy \"lfu\""));
    assert!(run(&["--eviction", "random"]).contains("unknown eviction policy \"random\""));
    assert!(run(&["--mode", "writeonce"]).contains("expected writethrough, writeback or writearound"));
    assert!(run(&["--interface", "hdd"]).contains("--interface \"hdd\""));
    assert!(refused(&["cache", "run", "--trace", "missing.csv"], d, 2).contains("no such file"));
    assert!(refused(&["cache", "run", "--trace", "x.csv", "--records", "5"], d, 2).contains("cannot be used with"));
    if let Some(trace) = zonekit_trace::fixture::shared_sample("cloudPhysicsIO.csv") {
        let trace = trace.to_str().unwrap();
        let beyond = refused(&["cache", "run", "--trace", trace, "--data-mib", "1024", "--cache-mib", "64", "--zone-mib", "1"], d, 2);
        assert!(beyond.contains("beyond the 1073741824-byte backing device"), "{beyond}");
        let out = ok(&["cache", "run", "--trace", trace, "--cache-mib", "256", "--zone-mib", "4"], d);
        assert!(out.contains("hit ratio"), "{out}");
    }
    assert!(refused(&["cache", "experiment", "--scale", "0"], d, 2).contains("must be in (0, 1]"));
}

/// A run whose figures are over nothing says so: a one-request trace with no read counts no
/// read (its latency was printed all the same), and a cache that never fills evicts nothing.
#[test]
fn a_degenerate_cache_run_warns_and_prints_no_latency() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("one.csv"), "0,W,0,4096,1\n").unwrap();
    let out = common::zonekit(&["cache", "run", "--trace", "one.csv", "--cache-mib", "4", "--zone-mib", "1", "--data-mib", "16"], d);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("- (no reads counted)") && !stdout.contains("mean 0 µs"), "{stdout}");
    assert!(stderr.contains("no block was read after the warm-up") && stderr.contains("never evicted"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["cache", "run", "--trace", "one.csv", "--cache-mib", "4", "--zone-mib", "1", "--data-mib", "16", "--json"], d)).unwrap();
    assert_eq!(json["warnings"].as_array().map(Vec::len), Some(2), "{json}");
}

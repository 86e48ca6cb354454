//! The `zonekit` binary end to end: device commands on emulated images, the demo, and bad
//! input (every refusal is a clear message and an exit status, never a panic).

use std::path::Path;
use std::process::Command;

use zonekit_trace::fixture::Compression;
use zonekit_trace::format::Format;

#[allow(dead_code)] // the shared helpers this suite does not use
mod common;
use common::{failed as refused, fnv1a, ok, zonekit};

#[test]
fn device_lifecycle_on_an_emulated_image() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out =
        ok(&["device", "create", "dev.zk", "--zones", "16", "--zone-size-mib", "8", "--zone-capacity-mib", "6", "--conventional", "2", "--open-max", "4", "--active-max", "6"], d);
    assert!(out.contains("16 zones of 8 MiB (6 MiB capacity), 2 conventional"), "{out}");
    let info = ok(&["device", "info", "dev.zk"], d);
    assert!(info.contains("max open zones   4") && info.contains("not-wp 2, empty 14"), "{info}");
    ok(&["device", "open", "dev.zk", "--zone", "3"], d);
    // State persists in the image between processes.
    let report = ok(&["device", "report", "dev.zk", "--state", "exp-open"], d);
    assert!(report.lines().any(|l| l.trim_start().starts_with("3 ") && l.contains("exp-open")), "{report}");
    ok(&["device", "finish", "dev.zk", "--zone", "3"], d);
    let json = ok(&["device", "report", "dev.zk", "--start-zone", "3", "--count", "1", "--json"], d);
    let zones: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(zones[0]["state"], "Full");
    assert_eq!(zones.as_array().unwrap().len(), 1);
    let out = ok(&["device", "reset", "dev.zk", "--all"], d);
    assert!(out.contains("reset: 1 zones"), "{out}");
    let conformance = ok(&["device", "conformance", "dev.zk", "--yes-erase-everything"], d);
    assert!(conformance.contains(" passed, 0 failed"), "{conformance}");
    let info: serde_json::Value = serde_json::from_str(&ok(&["device", "info", "dev.zk", "--json"], d)).unwrap();
    assert_eq!(info["geometry"]["zone_count"], 16);
}

#[test]
fn create_from_preset_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["device", "create", "z.zk", "--preset", "nvmevirt-zns"], d);
    let info = ok(&["device", "info", "z.zk"], d);
    assert!(info.contains("preset           nvmevirt-zns") && info.contains("zones            64"), "{info}");
    std::fs::write(d.join("geo.json"), r#"{"zone_count": 8, "zone_size_blocks": 512, "zone_capacity_blocks": 500}"#).unwrap();
    ok(&["device", "create", "c.zk", "--config", "geo.json"], d);
    let info = ok(&["device", "info", "c.zk"], d);
    assert!(info.contains("zone capacity    500 blocks"), "{info}");
    assert!(ok(&["device", "presets"], d).contains("zn540"));
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = refused(&["device", "create", "x.zk", "--preset", "nope"], d);
    assert!(e.contains("unknown preset \"nope\"") && e.contains("zn540"), "{e}");
    let e = refused(&["device", "create", "x.zk", "--zone-size-mib", "4", "--zone-capacity-mib", "8"], d);
    assert!(e.contains("zone capacity") && e.contains("exceeds zone size"), "{e}");
    let e = refused(&["device", "create", "x.zk", "--zones", "0"], d);
    assert!(e.contains("zero zones"), "{e}");
    let e = refused(&["device", "create", "x.zk", "--block-size", "3000"], d);
    assert!(e.contains("power of two"), "{e}");
    let e = refused(&["device", "create", "x.zk", "--open-max", "20", "--active-max", "10"], d);
    assert!(e.contains("max open zones (20) exceeds max active zones (10)"), "{e}");
    std::fs::write(d.join("geo.json"), r#"{"zone_cont": 8}"#).unwrap();
    let e = refused(&["device", "create", "x.zk", "--config", "geo.json"], d);
    assert!(e.contains("geo.json: not a geometry config") && e.contains("zone_cont"), "{e}");

    ok(&["device", "create", "dev.zk", "--zones", "4", "--zone-size-mib", "1"], d);
    let e = refused(&["device", "create", "dev.zk"], d);
    assert!(e.contains("already exists"), "{e}");
    let e = refused(&["device", "open", "dev.zk", "--zone", "9"], d);
    assert!(e.contains("zone 9 does not exist"), "{e}");
    let e = refused(&["device", "close", "dev.zk", "--zone", "1"], d);
    assert!(e.contains("cannot close zone 1 in state empty"), "{e}");
    let e = refused(&["device", "report", "dev.zk", "--state", "opened"], d);
    assert!(e.contains("unknown zone state \"opened\"") && e.contains("imp-open"), "{e}");
    let e = refused(&["device", "conformance", "dev.zk"], d);
    assert!(e.contains("--yes-erase-everything"), "{e}");

    // A file from another tool, a corrupt image, a truncated image, a directory, nothing.
    std::fs::write(d.join("foreign.img"), vec![0x42u8; 8192]).unwrap();
    let e = refused(&["device", "info", "foreign.img"], d);
    assert!(e.contains("not a zonekit device image"), "{e}");
    let mut image = std::fs::read(d.join("dev.zk")).unwrap();
    image[30] ^= 0xFF;
    std::fs::write(d.join("corrupt.zk"), &image).unwrap();
    let e = refused(&["device", "info", "corrupt.zk"], d);
    assert!(e.contains("header checksum mismatch"), "{e}");
    let mut image = std::fs::read(d.join("dev.zk")).unwrap();
    image[4096 + 32 + 3] ^= 0x01; // zone 1's record
    std::fs::write(d.join("record.zk"), &image).unwrap();
    let e = refused(&["device", "info", "record.zk"], d);
    assert!(e.contains("zone 1: record checksum mismatch"), "{e}");
    std::fs::write(d.join("short.zk"), &std::fs::read(d.join("dev.zk")).unwrap()[..5000]).unwrap();
    let e = refused(&["device", "info", "short.zk"], d);
    assert!(e.contains("truncated"), "{e}");
    let e = refused(&["device", "info", "."], d);
    assert!(e.contains("not a zoned block device"), "{e}");
    let e = refused(&["device", "info", "missing.zk"], d);
    assert!(e.contains("missing.zk"), "{e}");
    if Path::new("/dev/null").exists() {
        let e = refused(&["device", "info", "/dev/null"], d);
        assert!(e.contains("not a zoned block device"), "{e}");
    }
}

#[test]
fn device_demo_writes_results_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&["device", "demo", "--out", "res"], dir.path());
    for preset in ["tiny", "ocssd-thesis", "femu-zns", "zn540", "nvmevirt-zns"] {
        assert!(out.contains(preset), "{out}");
    }
    let csv = std::fs::read_to_string(dir.path().join("res/devices.csv")).unwrap();
    assert_eq!(csv.lines().count(), 6, "{csv}");
    // The open-channel preset is channel-bound near the thesis' ~300 MB/s sequential rate.
    let ocssd: Vec<&str> = csv.lines().find(|l| l.starts_with("ocssd-thesis")).unwrap().split(',').collect();
    let mb_s: f64 = ocssd[3].parse().unwrap();
    assert!((250.0..350.0).contains(&mb_s), "ocssd-thesis write {mb_s} MB/s");
    let svg = std::fs::read_to_string(dir.path().join("res/write_throughput.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
}

#[test]
fn main_job_compares_every_placement() {
    let dir = tempfile::tempdir().unwrap();
    // Node 1 at 0.5 % of its size: 10 zones of working set, 630 K writes.
    let out = ok(&["demo", "--scale", "0.005", "--out", "res"], dir.path());
    assert!(out.contains("spans 10 zones of 32 MiB") && out.contains("threshold can lock in"), "{out}");
    for p in ["normal", "sepbit", "bhbdp", "lifespan", "zbopt"] {
        assert!(out.contains(&format!("{p} + cbe")), "{out}");
    }
    let csv = std::fs::read_to_string(dir.path().join("res/results_with_ratios.csv")).unwrap();
    assert_eq!(csv.lines().count(), 10, "{csv}");
    let waf = |p: &str| -> f64 { csv.lines().find(|l| l.split(',').nth(1) == Some(p)).unwrap().split(',').nth(4).unwrap().parse().unwrap() };
    assert!(waf("zbopt") < waf("normal"), "the oracle must beat no separation");
    assert!(std::fs::read_to_string(dir.path().join("res/waf_0.svg")).unwrap().starts_with("<svg"));
    // The experiment's page: its command, every chart inline, every table.
    let page = std::fs::read_to_string(dir.path().join("res/report.html")).unwrap();
    assert!(page.contains("<title>zonekit demo --scale 0.005 --out res</title>"), "{}", &page[..200.min(page.len())]);
    let charts = std::fs::read_dir(dir.path().join("res")).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "svg")).count();
    assert_eq!(page.matches("<figure class=\"chart\"><svg").count(), charts);
    assert!(page.contains("<summary>results_with_ratios.csv (9 rows)</summary>"));
    // `zonekit report DIR` makes the same page again from the directory alone.
    std::fs::remove_file(dir.path().join("res/report.html")).unwrap();
    assert!(ok(&["report", "res"], dir.path()).contains("report.html"));
    assert_eq!(std::fs::read_to_string(dir.path().join("res/report.html")).unwrap(), page);
    assert!(refused(&["report", "nowhere"], dir.path()).contains("nowhere: not a results directory"));
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    assert!(refused(&["report", "empty"], dir.path()).contains("no CSV table or SVG chart"));
    assert!(!dir.path().join("empty/report.html").exists());
}

/// `report figures` redraws a seed's figures from a results directory's CSV files alone (here
/// a copy of seed 004's committed ones), fills the write-up's figures section beside it, and
/// refuses a seed without figures as a bad request.
#[test]
fn report_figures_draws_a_seeds_figures_from_its_results_and_fills_the_write_up() {
    let dir = tempfile::tempdir().unwrap();
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results/seed-004");
    std::fs::create_dir(dir.path().join("seed-004")).unwrap();
    for name in ["results.csv", "gc-waf.csv"] {
        std::fs::copy(committed.join(name), dir.path().join("seed-004").join(name)).unwrap();
    }
    std::fs::write(dir.path().join("seed-004.md"), "# Seed 004\n<!-- figures:begin -->\n<!-- figures:end -->\nend\n").unwrap();
    let out = ok(&["report", "figures", "--seed", "4", "--results", "seed-004"], dir.path());
    assert!(out.contains("wrote 5 figures of seed 004") && out.contains("figures section of seed-004.md"), "{out}");
    for name in ["fig-2.4.svg", "fig-4.1.svg", "fig-5.1.svg", "fig-5.2.svg", "fig-5.3.svg", "figures.tsv", "README.md"] {
        assert!(dir.path().join("seed-004/figures").join(name).exists(), "{name}");
    }
    let write_up = std::fs::read_to_string(dir.path().join("seed-004.md")).unwrap();
    assert!(write_up.contains("![Fig. 5.2](seed-004/figures/fig-5.2.svg)") && write_up.ends_with("<!-- figures:end -->\nend\n"), "{write_up}");
    assert!(!dir.path().join("seed-004/report.html").exists(), "no page where there was none");
    assert!(common::refused(&["report", "figures", "--seed", "9", "--results", "seed-004"], dir.path(), 2).contains("seed 9 has no figures"));
    std::fs::remove_file(dir.path().join("seed-004/gc-waf.csv")).unwrap();
    assert!(
        common::refused(&["report", "figures", "--seed", "4", "--results", "seed-004"], dir.path(), 2).contains("gc-waf.csv"),
        "a missing result file is named, a bad request as a missing trace is"
    );
}

#[test]
fn replay_and_resumable_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = ok(&["replay", "--workload", "zipf:blocks=50K,writes=400K", "--placement", "sepbit", "--victim", "greedy", "--preset", "tiny", "--out", "r"], d);
    assert!(out.contains("sepbit + greedy") && out.contains("WAF"), "{out}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("r/report.json")).unwrap()).unwrap();
    assert!(report["waf"].as_f64().unwrap() > 1.0);
    assert_eq!(report["user_blocks"], 400_000);
    // Unbounded (SepBIT simulator) mode and the timing model.
    let out = ok(&["replay", "--workload", "zipf:blocks=50K,writes=300K", "--unbounded", "--timing", "--preset", "tiny", "--out", "u"], d);
    assert!(out.contains("(unbounded log)") && !out.lines().any(|l| l.starts_with("device time (timing model)") && l.trim_end().ends_with(" -")), "{out}");
    let args = ["sweep", "--workloads", "uniform:blocks=20K,writes=100K", "--placements", "sepgc,bhbdp", "--victims", "greedy,cbe", "--preset", "tiny", "--out", "s"];
    let first = ok(&args, d);
    assert!(first.contains("4 runs to do (0 already done)"), "{first}");
    let again = ok(&args, d);
    assert!(again.contains("all 4 runs already in"), "{again}");
}

#[test]
fn replay_bad_input_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = refused(&["replay", "--workload", "zipf:blocks=1K,writes=1K", "--placement", "oracle"], d);
    assert!(e.contains("unknown placement policy \"oracle\"") && e.contains("bhbdp"), "{e}");
    let e = refused(&["replay", "--workload", "zipf:blocks=1K,writes=1K", "--victim", "random"], d);
    assert!(e.contains("unknown victim policy") && e.contains("cbe"), "{e}");
    let e = refused(&["replay", "--workload", "zipf:blocks=1K,writes=1K", "--utilization", "1.2"], d);
    assert!(e.contains("utilisation 1.2 must be in (0, 1)"), "{e}");
    let e = refused(&["replay", "--workload", "uniform:blocks=200K,writes=300K", "--preset", "tiny", "--preset-size"], d);
    assert!(e.contains("does not fit the device"), "{e}");
    let e = refused(&["replay", "--workload", "zipf:blocks=1K,writes=1K", "--param", "r1"], d);
    assert!(e.contains("--param \"r1\": expected KEY=VALUE"), "{e}");
    let e = refused(&["replay", "--workload", "zipf:blocks=1K,writes=1K", "--placement", "sepbit", "--param", "r1=2"], d);
    assert!(e.contains("has no parameter \"r1\""), "{e}");
    let e = refused(&["replay", "--workload", "zipf:blocks=1K,writes=1K", "--preset", "ssd"], d);
    assert!(e.contains("unknown device preset") && e.contains("femu-zns"), "{e}");
    let e = refused(&["replay", "--workload", "zipf:blocks=1K,writes=1K", "--zone-mib", "3"], d);
    assert!(e.contains("zone size 3 MiB") && e.contains("power of two"), "{e}");
    let e = refused(&["sweep", "--placements", "bhbdp"], d);
    assert!(e.contains("--traces") && e.contains("--workloads"), "{e}");
}

/// The real sample `name` in ../shared/traces, or `None` where it is absent (said on stderr;
/// under CI=true its absence fails the test).
fn shared_trace(name: &str) -> Option<String> {
    zonekit_trace::fixture::shared_sample(name).map(|p| p.display().to_string())
}

/// A trace of `format` written by zonekit's own fixture writer into `dir`: its file name.
fn fixture_trace(dir: &Path, format: &str, compression: Compression) -> String {
    let format: Format = format.parse().unwrap();
    let (path, _) = zonekit_trace::fixture::write(dir, &format, compression, 2_000, 3).unwrap();
    path.file_name().unwrap().to_str().unwrap().to_string()
}

#[test]
fn trace_info_convert_and_analyze_the_cloudphysics_sample() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(csv) = shared_trace("cloudPhysicsIO.csv") else { return };
    let info = ok(&["trace", "info", &csv], d);
    assert!(info.contains("records          113872") && info.contains("2297.0 MiB"), "{info}");
    let out = ok(&["trace", "convert", &csv, "-o", "cp.zkt", "--next-write"], d);
    assert!(out.contains("656169 writes") && out.contains("208696 distinct blocks"), "{out}");
    let info = ok(&["trace", "info", "cp.zkt"], d);
    assert!(info.contains("next-write times present"), "{info}");
    let a = ok(&["analyze", "cp.zkt", "--out", "an"], d);
    assert!(a.contains("working set (distinct written blocks)") && a.contains("0.80 GiB"), "{a}");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("an/analysis.json")).unwrap()).unwrap();
    assert_eq!(json["distinct_blocks"], 208696);
    let share = json["write_request_share"].as_f64().unwrap();
    assert!((share - 0.587).abs() < 0.001, "write-request share {share}");
    // A window of the first hour only.
    ok(&["analyze", &csv, "--window", "0:3600", "--out", "first-hour"], d);
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("first-hour/analysis.json")).unwrap()).unwrap();
    assert!(j["span_hours"].as_f64().unwrap() <= 1.0 && j["block_writes"].as_u64().unwrap() < 656169);
    for chart in ["bilt_cdf.svg", "bipt_cdf.svg", "traffic.svg", "thresholds.svg", "write_counts.svg"] {
        assert!(std::fs::read_to_string(d.join("an").join(chart)).unwrap().starts_with("<svg"), "{chart}");
    }
    // Sampling at 1/10 keeps about a tenth of the working set.
    let sampled = ok(&["analyze", &csv, "--sample", "10/1", "--out", "an10"], d);
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("an10/analysis.json")).unwrap()).unwrap();
    let wss = j["distinct_blocks"].as_u64().unwrap();
    assert!((17_000..25_000).contains(&wss), "sampled working set {wss}\n{sampled}");
}

#[test]
fn trace_gen_and_node_sharding() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = ok(&["trace", "gen", "cloud:volumes=8,blocks=64K,writes=200K", "--seed", "3", "-o", "node.csv"], d);
    assert!(out.contains("requests (Alibaba CSV format)"), "{out}");
    let info = ok(&["trace", "info", "node.csv"], d);
    assert!(info.contains("format           alibaba") && info.contains("volumes          8"), "{info}");
    ok(&["trace", "gen", "zipf:blocks=10K,writes=50K", "-o", "z.zkt", "--next-write"], d);
    assert!(ok(&["trace", "info", "z.zkt"], d).contains("50000 writes"));
    // Four nodes split the blocks: each gets some, none gets all.
    let mut total = 0;
    for node in 0..4 {
        ok(&["analyze", "node.csv", "--nodes", "4", "--node", &node.to_string(), "--chunk-mib", "1", "--out", &format!("n{node}")], d);
        let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join(format!("n{node}/analysis.json"))).unwrap()).unwrap();
        let w = j["block_writes"].as_u64().unwrap();
        assert!(w > 0, "node {node} got nothing");
        total += w;
    }
    assert!(total >= 200_000, "the nodes together see every write ({total})");
}

#[test]
fn trace_bad_input_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("bad.csv"), "1,W,0,4096,10\n2,X,0,4096,20\n").unwrap();
    let e = refused(&["trace", "info", "bad.csv", "--format", "alibaba"], d);
    assert!(e.contains("bad.csv:line 2") && e.contains("opcode") && e.contains("\"X\""), "{e}");
    let out = ok(&["trace", "info", "bad.csv", "--format", "alibaba", "--lenient"], d);
    assert!(out.contains("skipped          1 malformed records"), "{out}");
    let e = refused(&["trace", "info", "bad.csv", "--format", "nope"], d);
    assert!(e.contains("unknown trace format \"nope\"") && e.contains("tencent"), "{e}");
    let e = refused(&["analyze", "missing.csv"], d);
    assert!(e.contains("missing.csv: no such file"), "{e}");
    let e = refused(&["analyze", "--workload", "zipf:alpha=0"], d);
    assert!(e.contains("exponent must be positive"), "{e}");
    let e = refused(&["analyze", "bad.csv", "--format", "alibaba", "--sample", "ten"], d);
    assert!(e.contains("expected P/T"), "{e}");
    let e = refused(&["analyze", "bad.csv", "--nodes", "4", "--node", "4"], d);
    assert!(e.contains("--node 4 is not one of --nodes 4"), "{e}");
    let e = refused(&["trace", "info", "bad.csv", "--format", "delimited"], d);
    assert!(e.contains("--columns"), "{e}");
    std::fs::write(d.join("x.zkt"), "ZKTRACE\0 but nothing else").unwrap();
    let e = refused(&["trace", "info", "x.zkt"], d);
    assert!(e.contains("x.zkt"), "{e}");
}

#[test]
fn kv_bench_refuses_bad_input_before_running_anything() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plugin = d.join("plugin.so");
    std::fs::write(&plugin, b"").unwrap();
    let plugin = plugin.to_str().unwrap();
    let e = refused(&["kv-bench", "--keys", "0", "--plugin", plugin], d);
    assert!(e.contains("must be positive"), "{e}");
    let e = refused(&["kv-bench", "--plugin", "/nonexistent/plugin.so"], d);
    assert!(e.contains("/nonexistent/plugin.so not found") && e.contains("plugin/build"), "{e}");
    let e = refused(&["kv-bench", "--plugin", plugin, "--device", "/dev/nvme0n1"], d);
    assert!(e.contains("give mem:PRESET"), "{e}");
    let e = refused(&["kv-bench", "--plugin", plugin, "--configs", "fast"], d);
    assert!(e.contains("invalid value 'fast'"), "{e}");
    // The old name of first fit + GC is gone: it was not the seed's "original + GC".
    let e = refused(&["kv-bench", "--plugin", plugin, "--configs", "gc"], d);
    assert!(e.contains("invalid value 'gc'") && e.contains("stock-gc") && e.contains("zenfs-gc"), "{e}");
    let e = refused(&["kv-bench", "--plugin", plugin, "--zone-mib", "100"], d);
    assert!(e.contains("--zone-mib 100") && e.contains("does not divide"), "{e}");
    let e = refused(&["kv-bench", "--plugin", plugin, "--repeats", "3", "--keys", "4,5"], d);
    assert!(e.contains("give one --keys value"), "{e}");
    let e = refused(&["kv-bench", "--plugin", plugin, "--repeats", "3", "--keys", "4", "--configs", "both"], d);
    assert!(e.contains("--baseline zenfs") && e.contains("must include it"), "{e}");
    let e = refused(&["kv-bench", "--plugin", plugin, "--repeats", "0"], d);
    assert!(e.contains("--repeats"), "{e}");
    let e = refused(&["kv-bench", "--plugin", plugin, "--db-bench", "/nonexistent/db_bench", "--keys", "0.001", "--out", "out"], d);
    assert!(e.contains("/nonexistent/db_bench") && e.contains("setup kv"), "{e}");
}

/// `--param` reads KEY=VALUE as every other KEY=VALUE flag does (ocssd's and cache's trimmed,
/// replay's did not): spaces around the key and the value are dropped, so `" r1 = 0.5 "` is
/// the parameter r1 (replay refused it: no parameter " r1 ").
#[test]
fn param_flags_drop_spaces_around_key_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let replay = |param: &str, out: &str| {
        ok(&["replay", "--workload", "zipf:blocks=2K,writes=20K", "--preset", "tiny", "--placement", "bhbdp", "--param", param, "--out", out], d);
        std::fs::read_to_string(d.join(out).join("report.json")).unwrap()
    };
    let waf = |report: String| serde_json::from_str::<serde_json::Value>(&report).unwrap()["waf"].clone();
    assert_eq!(waf(replay(" r1 = 0.5 ", "spaced")), waf(replay("r1=0.5", "plain")));
}

/// `--report-only` reports the rows a results file has (of the requested profile and zone
/// size) and runs nothing: db_bench here is /bin/false, which would fail any run.
#[test]
fn kv_bench_report_only_reports_existing_rows_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let e = refused(&["kv-bench", "--report-only", "--out", "kv"], d);
    assert!(e.contains("--report-only: no kv/results.csv"), "{e}");
    std::fs::create_dir(d.join("kv")).unwrap();
    let header = "profile,config,million_keys,repeat,completed,fillseq_ops_s,overwrite_ops_s,appended_bytes,device_written_bytes,waf,zone_resets,peak_file_bytes,capacity_bytes,zone_size_bytes,detail";
    let rows = [
        "bounded,zenfs-gc,4,0,true,200000,80000,100,125,1.250,5,1000,8321499136,134217728,",
        "bounded,zenfs-gc,5,0,false,200000,,100,130,1.300,5,1000,8321499136,134217728,no space",
        // Another zone size: not this report's.
        "bounded,zenfs-gc,6,0,true,200000,80000,100,170,1.700,5,1000,8053063680,268435456,",
    ];
    let args = ["kv-bench", "--report-only", "--db-bench", "/bin/false", "--plugin", "/nonexistent.so", "--configs", "zenfs-gc,both", "--keys", "3,4,5,6", "--out", "kv"];
    // A file from before rows carried a check is refused whole, as the sweep refuses one.
    std::fs::write(d.join("kv/results.csv"), format!("{header}\n{}\n", rows.join("\n"))).unwrap();
    let e = refused(&args, d);
    assert!(e.contains("kv/results.csv:1: not a kv-bench results file of this version"), "{e}");
    let sealed: Vec<String> = rows.iter().map(|r| format!("{r},{}", fnv1a(r))).collect();
    std::fs::write(d.join("kv/results.csv"), format!("{header},check\n{}\n", sealed.join("\n"))).unwrap();
    let out = ok(&args, d);
    assert!(out.contains("original + GC") && out.contains("1.250") && out.contains("0.250") && out.contains("1.300"), "{out}");
    assert!(!out.contains("1.700"), "a row of another zone size was reported: {out}");
    assert!(d.join("kv/bounded-waf.svg").exists());
    assert_eq!(std::fs::read_to_string(d.join("kv/results.csv")).unwrap().lines().count(), 4, "nothing ran");
    // Each row's own command, written by the report too.
    let commands = std::fs::read_to_string(d.join("kv/commands.tsv")).unwrap();
    assert_eq!(commands.lines().count(), 4, "{commands}");
    assert!(commands.contains("bounded\tzenfs-gc\t4\t0\tzonekit kv-bench --device "), "{commands}");
    assert!(commands.contains("--profile bounded --configs zenfs-gc --keys 4 --no-reference"), "{commands}");
}

/// A resumed sweep reuses a row only under the same settings: rerunning with another
/// `--gc-threshold` into the same directory must recompute, not report the old numbers.
#[test]
fn resumed_sweep_never_reports_rows_of_other_settings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Under gp-sealed the threshold decides when GC runs (under free-zones only CBE reads it).
    let base = [
        "sweep",
        "--workloads",
        "zipf:blocks=20K,alpha=0.9,writes=150K",
        "--placements",
        "sepbit",
        "--victims",
        "greedy",
        "--preset",
        "tiny",
        "--gc-trigger",
        "gp-sealed",
        "--out",
        "s",
    ];
    ok(&base, d);
    let waf = |d: &Path| -> String { std::fs::read_to_string(d.join("s/results.csv")).unwrap().lines().nth(1).unwrap().split(',').nth(4).unwrap().to_string() };
    let first = waf(d);
    let mut other = base.to_vec();
    other.extend(["--gc-threshold", "0.3"]);
    let out = ok(&other, d);
    assert!(out.contains("1 runs to do (0 already done)"), "{out}");
    assert!(out.contains("1 rows of other settings or grids moved to"), "{out}");
    let rows = std::fs::read_to_string(d.join("s/results.csv")).unwrap();
    assert_eq!(rows.lines().count(), 2, "only the current settings' row is reported: {rows}");
    assert_ne!(waf(d), first, "a GC threshold of 0.3 cannot give the WAF of 0.15");
    assert!(std::fs::read_to_string(d.join("s/results.previous.csv")).unwrap().contains(&first), "the old row is kept aside, not lost");
}

/// A grid axis with one value is used, not dropped; an axis no placement takes and an empty
/// value are refused; `--jobs 0` and an unwritable `--out` are refused before anything runs.
#[test]
fn sweep_grids_and_settings_are_used_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let w = ["sweep", "--workloads", "zipf:blocks=20K,alpha=0.9,writes=150K", "--victims", "cbe", "--preset", "tiny"];
    let run = |extra: &[&'static str]| cat(&w, extra);
    ok(&run(&["--placements", "bhbdp,sepbit", "--grid", "r1=0.25", "--out", "g"]), d);
    let rows = std::fs::read_to_string(d.join("g/results.csv")).unwrap();
    assert!(rows.lines().any(|l| l.starts_with("zipf") && l.contains(",bhbdp,cbe,r1=0.25,")), "{rows}");
    assert!(rows.lines().any(|l| l.contains(",sepbit,cbe,,")), "sepbit takes no r1 and runs once: {rows}");
    let e = refused(&run(&["--placements", "sepbit", "--grid", "r1=0.25,0.5"]), d);
    assert!(e.contains("no placement of this sweep (sepbit) takes a parameter \"r1\""), "{e}");
    let e = refused(&run(&["--placements", "bhbdp", "--grid", "r1=0.25,"]), d);
    assert!(e.contains("no empty key or value"), "{e}");
    let out = zonekit(&run(&["--placements", "bhbdp", "--jobs", "0"]), d);
    assert_eq!(out.status.code(), Some(2), "a usage error exits with 2");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--jobs must be at least 1"));
    std::fs::write(d.join("file"), "").unwrap();
    let e = refused(&run(&["--placements", "bhbdp", "--out", "file/sub"]), d);
    assert!(e.contains("--out file/sub: cannot write there"), "{e}");
    assert!(!d.join("zonekit-out").exists(), "nothing ran");
}

/// N shards of a sweep merged give the results file one process writes, byte for byte.
#[test]
fn sweep_shards_merge_into_the_single_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = [
        "sweep",
        "--workloads",
        "zipf:blocks=20K,alpha=0.9,writes=150K;hotcold:blocks=20K,writes=150K",
        "--placements",
        "normal,sepbit,bhbdp,zbopt",
        "--victims",
        "greedy,cbe",
        "--preset",
        "tiny",
    ];
    ok(&cat(&args, &["--out", "single"]), d);
    for i in 0..3 {
        let shard = format!("{i}/3");
        let out = format!("shard-{i}");
        ok(&cat(&args, &["--shard", &shard, "--out", &out]), d);
    }
    let e = refused(&["sweep", "merge", "--out", "merged", "shard-0", "shard-1"], d);
    assert!(e.contains("shard 2/3 is missing"), "{e}");
    let e = refused(&["sweep", "merge", "--out", "merged", "shard-0", "shard-0", "shard-1"], d);
    assert!(e.contains("given twice"), "{e}");
    let out = ok(&["sweep", "merge", "--out", "merged", "shard-2", "shard-0", "shard-1"], d);
    assert!(out.contains("zbopt + cbe"), "merge prints the tables: {out}");
    let single = std::fs::read(d.join("single/results.csv")).unwrap();
    assert_eq!(std::fs::read(d.join("merged/results.csv")).unwrap(), single);
    assert_eq!(String::from_utf8_lossy(&single).lines().count(), 1 + 2 * 4 * 2);
    assert_eq!(std::fs::read(d.join("merged/results_with_ratios.csv")).unwrap(), std::fs::read(d.join("single/results_with_ratios.csv")).unwrap());
    let e = refused(&["sweep", "--workloads", "zipf:blocks=1K,writes=1K", "--shard", "3/3"], d);
    assert!(e.contains("expected I/N with 0 <= I < N"), "{e}");
}

fn cat<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().chain(b).copied().collect()
}

/// The harness replays onto an existing device at its own size (here an emulated image; the
/// QEMU test does /dev devices through the same `open_path`).
#[test]
fn replay_onto_an_emulated_image() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["device", "create", "d.zk", "--preset", "tiny"], d);
    let out = ok(&["replay", "--workload", "zipf:blocks=10K,writes=60K", "--placement", "sepgc", "--victim", "greedy", "--device", "d.zk", "--out", "r"], d);
    assert!(out.contains("64 zones of 4 MiB"), "{out}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("r/report.json")).unwrap()).unwrap();
    assert_eq!(report["user_blocks"], 60_000);
    let e = refused(&["replay", "--workload", "zipf:blocks=1K,writes=1K", "--device", "nothing.zk"], d);
    assert!(e.contains("nothing.zk: no such device or image"), "{e}");
}

/// A reader that closes the pipe early (`zonekit ... | head`) ends zonekit quietly, not with a
/// panic about a broken pipe.
#[test]
fn a_closed_pipe_ends_output_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["device", "create", "big.zk", "--zones", "20000", "--zone-size-mib", "1"], d);
    let mut child = Command::new(env!("CARGO_BIN_EXE_zonekit"))
        .args(["device", "report", "big.zk"])
        .current_dir(d)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take()); // the reader goes away before most of the report is written
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
}

/// Standard output on a full disk is a failed run (exit 1, the reason named), not a panic.
#[test]
fn a_full_disk_under_standard_output_is_an_error_not_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("skipped: no /dev/full here");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zonekit")).args(["device", "presets"]).current_dir(dir.path()).stdout(full).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot write to standard output: No space left on device") && !stderr.contains("panicked"), "{stderr}");
}

/// Sizes and counts are checked arithmetic: a size that would wrap or a count beyond its type
/// is a usage error naming the value, never a silently smaller device or workload.
#[test]
fn overflowing_sizes_and_counts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = zonekit(&["device", "create", "x.zk", "--zones", "8", "--zone-size-mib", "17592186044417"], d);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--zone-size-mib 17592186044417: too large"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!d.join("x.zk").exists());
    let e = refused(&["trace", "gen", "cloud:volumes=5G,blocks=1K,writes=1K", "-o", "x.zkt"], d);
    assert!(e.contains("volumes=5000000000: at most 4294967295 volumes"), "{e}");
    let e = refused(&["trace", "gen", "zipf:blocks=1K,writes=1e30", "-o", "x.zkt"], d);
    assert!(e.contains("writes=1e30: too large"), "{e}");
}

/// Every format can be analysed, from a fixture and from every shared sample (the Alibaba-format
/// sample has timestamps that run backwards; the analysis once panicked on it).
#[test]
fn analyze_every_format_and_shared_sample() {
    let dir = tempfile::tempdir().unwrap();
    for (i, format) in Format::NAMES.iter().filter(|n| **n != "delimited").enumerate() {
        let trace = fixture_trace(dir.path(), format, Compression::ALL[i % 4]);
        let out = ok(&["analyze", &trace, "--out", "an"], dir.path());
        assert!(out.contains("working set"), "{format}: {out}");
    }
    for name in ["cloud_storage-sample.bz2", "msr-cambridge1-sample.csv", "systor17-traces-sample.csv.gz", "cloudPhysicsIO.csv"] {
        let Some(path) = shared_trace(name) else { return };
        let out = ok(&["analyze", &path, "--out", "an"], dir.path());
        assert!(out.contains("working set"), "{name}: {out}");
    }
}

/// `conformance --only` that selects no check is an error, not an empty pass.
#[test]
fn conformance_only_matching_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["device", "create", "c.zk", "--preset", "tiny"], d);
    let e = refused(&["device", "conformance", "c.zk", "--yes-erase-everything", "--only", "no-such-check"], d);
    assert!(e.contains("--only \"no-such-check\" matches no check"), "{e}");
}

/// Format detection is sure or refuses: five whitespace-separated numbers with byte sizes (as
/// other tools write them) are not taken for DiskSim's sectors; `trace info` says which format
/// and units it assumed, and flags a zero time span.
#[test]
fn format_detection_is_sure_or_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lines: String = (0..50).map(|i| format!("{} {} {} 4096 {}\n", i * 3, i % 4, i * 8192, i % 2)).collect();
    std::fs::write(d.join("bytes.trace"), &lines).unwrap();
    let e = refused(&["trace", "info", "bytes.trace"], d);
    assert!(e.contains("every size is a multiple of 512") && e.contains("--format"), "{e}");
    let info = ok(&["trace", "info", "bytes.trace", "--format", "disksim"], d);
    assert!(info.contains("disksim") && info.contains("time ns") && info.contains("512-B sectors"), "{info}");
    let info = ok(&["trace", "info", &fixture_trace(d, "disksim", Compression::None)], d);
    assert!(info.contains("disksim (detected)") && info.contains("fields, units"), "{info}");
    // Every record at one instant: flagged.
    std::fs::write(d.join("flat.csv"), "1,W,0,4096,5\n1,W,4096,4096,5\n").unwrap();
    let info = ok(&["trace", "info", "flat.csv"], d);
    assert!(info.contains("WARNING: every record has the same time"), "{info}");
}

/// `trace info` honours every input flag it lists: filters and generated workloads.
#[test]
fn trace_info_honours_filters_and_workloads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let info = ok(&["trace", "info", "--workload", "zipf:blocks=1K,writes=10K"], d);
    assert!(info.contains("block accesses   10000 of 4096 B (10000 writes, 0 reads)"), "{info}");
    let sampled = ok(&["trace", "info", "--workload", "zipf:blocks=1K,writes=10K", "--sample", "10/1"], d);
    assert!(!sampled.contains("block accesses   10000 ") && sampled.contains("after the filters"), "{sampled}");
    let csv = fixture_trace(d, "tencent", Compression::Bzip2);
    let whole = ok(&["trace", "info", &csv], d);
    assert!(whole.contains("volumes          4\n"), "{whole}");
    let one = ok(&["trace", "info", &csv, "--volume", "2"], d);
    assert!(one.contains("volumes          1\n") && one.contains("after the filters"), "{one}");
}

// ---- image locks: shared for readers, exclusive for writers --------------------------------

/// Every sweep row's `zonekit replay` command (commands.tsv), run as written, gives the row's
/// WAF: no setting is left to a default the sweep did not use.
#[test]
fn a_sweep_rows_command_reruns_it() {
    let dir = tempfile::tempdir().unwrap();
    let w = "zipf:blocks=20000,alpha=0.9,writes=120000";
    ok(
        &[
            "sweep",
            "--workloads",
            w,
            "--placements",
            "sepbit",
            "--victims",
            "greedy",
            "--preset",
            "tiny",
            "--zone-mib",
            "1",
            "--gc-trigger",
            "gp-sealed",
            "--utilization",
            "0.7",
            "--seed",
            "3",
            "--out",
            "s",
        ],
        dir.path(),
    );
    let commands = std::fs::read_to_string(dir.path().join("s/commands.tsv")).unwrap();
    let command = commands.lines().nth(1).unwrap().rsplit_once('\t').unwrap().1.to_string();
    for flag in ["--gc-trigger gp-sealed", "--utilization 0.7", "--zone-mib 1", "--seed 3", "--preset tiny", "--gc-threshold 0.15"] {
        assert!(command.contains(flag), "{command}");
    }
    let results = std::fs::read_to_string(dir.path().join("s/results.csv")).unwrap();
    let row_waf: f64 = results.lines().nth(1).unwrap().split(',').nth(4).unwrap().parse().unwrap();
    let run = Command::new("sh").arg("-c").arg(format!("{} --out r", command.replacen("zonekit", env!("CARGO_BIN_EXE_zonekit"), 1))).current_dir(dir.path()).output().unwrap();
    assert!(run.status.success(), "{command}: {}", String::from_utf8_lossy(&run.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("r/report.json")).unwrap()).unwrap();
    assert!((report["waf"].as_f64().unwrap() - row_waf).abs() < 1e-4, "{command}: {} against the row's {row_waf}", report["waf"]);
}

//! `zonekit ssd` end to end: the presets, a run of a conventional and an FDP model (counters,
//! log pages, JSON), and bad shapes refused with exit status 2 by the flag that sets them.

#[allow(dead_code)] // the shared helpers this suite does not use
mod common;

use common::{ok, refused};

#[test]
fn presets_list_every_shape_with_its_sources() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&["ssd", "presets"], dir.path());
    for name in ["dc-7", "dc-28", "fdp-pm9d3"] {
        assert!(out.contains(name), "{out}");
    }
    assert!(out.contains("sources:") && out.contains("assumed"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&ok(&["ssd", "presets", "--json"], dir.path())).unwrap();
    let pm = json.as_array().unwrap().iter().find(|p| p["name"] == "fdp-pm9d3").unwrap();
    assert_eq!((pm["handles"].as_u64(), pm["ru_bytes"].as_u64()), (Some(8), Some(6 << 30)));
    assert_eq!(pm["kind"], "fdp");
}

#[test]
fn an_fdp_run_prints_counters_and_the_four_log_pages() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["ssd", "run", "--logical-mib", "16", "--erase-block-kib", "256", "--ru-erase-blocks", "1", "--handles", "2", "--writes", "8192"];
    let out = ok(&args, d);
    for want in ["device WAF", "wear (erases/RU)", "FDP Configurations (log page 20h)", "log page 21h", "Host Bytes with Metadata Written (HBMW): 50331648", "log page 23h"] {
        assert!(out.contains(want), "no {want:?} in {out}");
    }
    // 4096 blocks filled + 8192 overwrites = 12288 blocks = HBMW above.
    let json: serde_json::Value = serde_json::from_str(&ok(&[&args[..], &["--json"]].concat(), d)).unwrap();
    let r = &json["report"];
    assert_eq!(r["counters"]["host_blocks"], 12288);
    assert_eq!(r["kind"], "fdp");
    assert_eq!(r["config_log"]["nruh"], 2);
    assert_eq!(r["usage_log"]["attributes"], serde_json::json!(["host-specified", "host-specified"]));
    assert!(r["waf"].as_f64().unwrap() >= 1.0);
    assert_eq!(r["stats_log"]["mbmw"].as_u64().unwrap(), r["media_blocks"].as_u64().unwrap() * 4096);
    // The same seed, the same run; --log picks the pages.
    let again: serde_json::Value = serde_json::from_str(&ok(&[&args[..], &["--json", "--log", "stats"]].concat(), d)).unwrap();
    assert_eq!(again["report"]["counters"], r["counters"]);
    assert!(again["report"]["config_log"].is_null() && !again["report"]["stats_log"].is_null());
    let only_events = ok(&[&args[..], &["--log", "events"]].concat(), d);
    assert!(only_events.contains("log page 23h") && !only_events.contains("log page 20h"), "{only_events}");
}

#[test]
fn a_scaled_preset_and_a_conventional_run_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = ok(&["ssd", "run", "--preset", "dc-28", "--logical-mib", "64", "--writes", "20000"], d);
    assert!(out.starts_with("conventional SSD (preset dc-28, scaled from 1.60 TB)") && !out.contains("log page"), "{out}");
    let json: serde_json::Value = serde_json::from_str(&ok(&["ssd", "run", "--preset", "fdp-pm9d3", "--logical-mib", "256", "--handles", "2", "--json"], d)).unwrap();
    // The preset's spare and erase block, its reclaim unit scaled to whole erase blocks.
    assert_eq!((json["report"]["spare"].as_f64(), json["report"]["erase_block_blocks"].as_u64()), (Some(0.07), Some(768)));
    assert_eq!(json["report"]["ru_blocks"], 768);
    let persistent = ok(
        &["ssd", "run", "--logical-mib", "16", "--erase-block-kib", "256", "--ru-erase-blocks", "1", "--handles", "2", "--handle-type", "persistently-isolated", "--writes", "100"],
        d,
    );
    assert!(persistent.contains("type 2h (persistently-isolated)"), "{persistent}");
    // --timed charges the flash timing model: device time and write latency in the report.
    let timed: serde_json::Value =
        serde_json::from_str(&ok(&["ssd", "run", "--logical-mib", "16", "--erase-block-kib", "256", "--ru-erase-blocks", "1", "--writes", "4096", "--timed", "--json"], d))
            .unwrap();
    assert!(timed["report"]["timing"]["elapsed_s"].as_f64().unwrap() > 0.0, "{timed}");
    let untimed: serde_json::Value =
        serde_json::from_str(&ok(&["ssd", "run", "--logical-mib", "16", "--erase-block-kib", "256", "--ru-erase-blocks", "1", "--writes", "4096", "--json"], d)).unwrap();
    assert!(untimed["report"]["timing"].is_null());
    assert_eq!(untimed["report"]["counters"], timed["report"]["counters"], "time decides nothing the device does");
}

#[test]
fn bad_shapes_are_refused_by_the_flag_that_sets_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = |extra: &[&'static str]| [&["ssd", "run", "--logical-mib", "16"][..], extra].concat();
    for (args, flag) in [
        // Handles beyond what fits: the refusal says how many do.
        (small(&["--erase-block-kib", "256", "--handles", "40"]), "--handles 40: at most"),
        // A reclaim unit that is not whole erase blocks.
        (small(&["--ru-mib", "1", "--erase-block-kib", "384"]), "--ru-mib 1"),
        (small(&["--erase-block-kib", "6"]), "--erase-block-kib 6"),
        (small(&["--ru-erase-blocks", "0"]), "--ru-erase-blocks 0"),
        (small(&["--ru-erase-blocks", "4294967296"]), "--ru-erase-blocks 4294967296"),
        // Spare outside (0, 1).
        (small(&["--spare", "0"]), "--spare 0"),
        (small(&["--spare", "1"]), "--spare 1"),
        (small(&["--spare", "NaN"]), "--spare NaN"),
        // A device too small for one reclaim unit per handle.
        (small(&["--erase-block-kib", "256", "--ru-erase-blocks", "64", "--handles", "1"]), "--logical-mib 16"),
        (small(&["--groups", "0", "--handles", "2"]), "--groups 0"),
        (small(&["--groups", "2"]), "--groups 2"),
        (small(&["--handle-type", "persistently-isolated"]), "--handle-type"),
        (small(&["--victim", "nope"]), "--victim \"nope\""),
        (small(&["--preset", "nope"]), "--preset \"nope\""),
        (small(&["--hot-share", "0"]), "--hot-share 0"),
        (small(&["--hot-writes", "2"]), "--hot-writes 2"),
        (small(&["--erase-block-kib", "256", "--ru-erase-blocks", "1", "--log", "usage"]), "--log usage"),
        (vec!["ssd", "run", "--logical-mib", "0"], "--logical-mib 0"),
        (vec!["ssd", "run", "--logical-mib", "4294967296"], "--logical-mib 4294967296"),
    ] {
        let err = refused(&args, d, 2);
        assert!(err.contains(flag), "{args:?}: no {flag:?} in {err}");
    }
    // A preset at its full capacity is more than the command holds in memory.
    let err = refused(&["ssd", "run", "--preset", "fdp-pm9d3", "--logical-mib", "1792000"], d, 2);
    assert!(err.contains("--logical-mib 1792000"), "{err}");
}

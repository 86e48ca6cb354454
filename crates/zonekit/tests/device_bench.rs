//! `zonekit device bench`, `device fit`, `device presets` and `experiment device-fidelity` end
//! to end: results and files, and every bad job spec refused with exit status 2 naming its
//! flag.

#[allow(dead_code)] // the shared helpers this suite does not use
mod common;
use common::{ok, refused};

#[test]
fn bad_job_specs_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (args, flag) in [
        (&["--rw", "append", "--qd", "0"][..], "--qd"),
        (&["--rw", "append", "--qd", "1000000"], "--qd"),
        (&["--rw", "write", "--qd", "4"], "--qd"),
        (&["--bs", "4097"], "--bs"),
        (&["--bs", "3k"], "--bs"),
        (&["--bs", "0"], "--bs"),
        (&["--bs", "1g"], "--bs"),
        (&["--zones", "15"], "--zones"),
        (&["--zones", "0"], "--zones"),
        (&["--rw", "reset", "--fill-blocks", "275713"], "--fill"),
        (&["--rw", "finish", "--fill", "1.5"], "--fill"),
        (&["--rw", "write", "--fill-blocks", "8"], "--fill"),
        (&["--rw", "reset", "--qd", "2"], "--qd"),
        (&["--rw", "write", "--zones", "8", "--bg-rw", "append", "--bg-zones", "8"], "--bg-zones"),
        (&["--bg-rw", "randread", "--bg-qd", "0"], "--bg-qd"),
        (&["--ops", "0"], "--ops"),
        (&["--preset", "nope"], "--preset"),
        (&["--bg-every", "400"], "--bg-every"),
        (&["--rw", "randread", "--zones", "14", "--cpus", "0"], "--cpus"),
        (&["--rw", "randread", "--zones", "14", "--cpus", "10"], "--cpu-slice-ns"),
        (&["--rw", "randread", "--zones", "4", "--cpu-slice-ns", "1000"], "--cpu-slice-ns"),
    ] {
        let mut full = vec!["device", "bench"];
        full.extend_from_slice(args);
        let e = refused(&full, d, 2);
        assert!(e.contains(flag), "zonekit {full:?}: {e}");
    }
    // A value clap cannot parse is its usage error, exit 2 too.
    let e = refused(&["device", "bench", "--rw", "trim"], d, 2);
    assert!(e.contains("--rw"), "{e}");
}

#[test]
fn the_conventional_comparison_refuses_a_drive_or_preset_it_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (args, flag) in [
        (&["--drive", "980pro"][..], "--drive"),
        (&["--drive", "conventional", "--preset", "nope"], "--preset"),
        (&["--drive", "conventional", "--preset", "fdp-pm9d3"], "--preset"),
    ] {
        let mut full = vec!["experiment", "device-fidelity", "--out", "f"];
        full.extend_from_slice(args);
        let e = refused(&full, d, 2);
        assert!(e.contains(flag), "zonekit {full:?}: {e}");
        std::fs::remove_dir_all(d.join("f")).ok();
    }
    let e = refused(&["experiment", "table-2.2", "--drive", "conventional"], d, 2);
    assert!(e.contains("--drive"), "{e}");
    // A data directory without the file a fit reads is a bad request, named.
    std::fs::create_dir_all(d.join("data/zn540")).unwrap();
    let e = refused(&["device", "fit", "--data", "data"], d, 2);
    assert!(e.contains("zn540/io.csv"), "{e}");
}

#[test]
fn bench_prints_latency_and_throughput_and_writes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = ok(&["device", "bench", "--rw", "randread", "--qd", "8", "--bg-rw", "write", "--bg-bs", "128k", "--bg-rate", "100m", "--ops", "3000", "--out", "b"], d);
    assert!(out.contains("randread") && out.contains("bg write") && out.contains("p99.9 µs") && out.contains("KIOPS"), "{out}");
    for f in ["bench.json", "bench.csv", "latency.svg", "report.html"] {
        assert!(d.join("b").join(f).exists(), "{f}");
    }
    let json: serde_json::Value = serde_json::from_str(&ok(&["device", "bench", "--rw", "append", "--qd", "4", "--ops", "2000", "--json"], d)).unwrap();
    let iops = json["report"]["job"]["iops"].as_f64().unwrap();
    assert!((120e3..145e3).contains(&iops), "4 KiB appends to one zone at QD4: {iops}");
    // The same spec, the same numbers.
    let again: serde_json::Value = serde_json::from_str(&ok(&["device", "bench", "--rw", "append", "--qd", "4", "--ops", "2000", "--json"], d)).unwrap();
    assert_eq!(json, again);
    let reset = ok(&["device", "bench", "--rw", "reset", "--fill", "1", "--ops", "3"], d);
    assert!(reset.contains("reset"), "{reset}");
}

#[test]
fn presets_say_where_each_figure_comes_from_and_the_fit_matches_the_preset() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let presets = ok(&["device", "presets"], d);
    for word in ["fitted", "published", "assumed", "write buffer", "reset"] {
        assert!(presets.contains(word), "{word}: {presets}");
    }
    let fit = ok(&["device", "fit"], d);
    assert!(fit.contains("The zn540 preset holds exactly these figures."), "{fit}");
}

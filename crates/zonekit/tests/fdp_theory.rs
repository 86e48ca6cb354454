//! `zonekit experiment fdp-theory` from the command line: a small run writes its files, and
//! every bad value of its flags is refused with exit status 2 naming the flag.

mod common;

use common::{ok, refused};

#[test]
fn a_small_run_writes_the_grid_the_sweep_and_the_drive_table() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let out = ok(&["experiment", "fdp-theory", "--quick", "--soc-shares", "0.16", "--utilizations", "1", "--logical-mib", "64", "--ru-kib", "64", "--out", "ft"], d);
    assert!(out.contains("Theorem 1") && out.contains("median |error|") && out.contains("fitted"), "{out}");
    for file in ["results.csv", "granularity.csv", "drive.csv", "commands.tsv", "soc_dlwa.svg", "granularity.svg", "report.html"] {
        assert!(d.join("ft").join(file).exists(), "no {file}");
    }
    let results = std::fs::read_to_string(d.join("ft/results.csv")).unwrap();
    assert!(results.starts_with("soc_share,utilization,ru_blocks,placement,alpha"), "{results}");
    // One FDP and one conventional row for the one point.
    assert_eq!(results.lines().count(), 3, "{results}");
    let commands = std::fs::read_to_string(d.join("ft/commands.tsv")).unwrap();
    assert!(commands.contains("zonekit experiment fdp-theory --soc-shares 0.16 --utilizations 1"), "{commands}");
}

#[test]
fn bad_values_are_refused_by_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let max = "18446744073709551615";
    for (flag, value) in [
        ("--soc-shares", "0"),
        ("--soc-shares", "1"),
        ("--soc-shares", "NaN"),
        ("--soc-shares", "0.00001"),
        ("--utilizations", "0"),
        ("--utilizations", "1.5"),
        ("--utilizations", "-1"),
        ("--soc-writes", "0"),
        ("--soc-writes", "1"),
        ("--soc-writes", "inf"),
        ("--spare", "0"),
        ("--spare", "1"),
        ("--logical-mib", "0"),
        ("--logical-mib", "1"),
        ("--logical-mib", max),
        ("--ru-kib", "0"),
        ("--ru-kib", "6"),
        ("--ru-kib", max),
    ] {
        let arg = format!("{flag}={value}");
        let err = refused(&["experiment", "fdp-theory", &arg, "--out", "bad"], d, 2);
        // A share too small for the device is refused naming both flags that make it.
        assert!(err.contains(flag) || (value == "0.00001" && err.contains("--soc-shares and --utilizations")), "{flag} {value}: {err}");
        assert!(!d.join("bad/results.csv").exists(), "{flag} {value} wrote results");
    }
    // The flags are fdp-theory's alone.
    let err = refused(&["experiment", "fdp-anchor", "--soc-writes", "0.5", "--out", "anchor"], d, 2);
    assert!(err.contains("--soc-writes is for fdp-theory"), "{err}");
    let err = refused(&["experiment", "fdp-theory", "--traces", "x.csv", "--out", "t"], d, 2);
    assert!(err.contains("--traces"), "{err}");
}

//! `--interface` on replay and sweep, and `zonekit experiment interfaces`: every placement on
//! ZNS, FDP and a conventional SSD, at the same raw capacity, from the command line.

mod common;

use common::{ok, refused};

const WORKLOAD: &str = "hotcold:blocks=40000,writes=400000,hot=0.1,hot-writes=0.9";

fn report(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
}

#[test]
fn replay_reports_host_device_and_total_waf_on_every_interface() {
    let tmp = tempfile::tempdir().unwrap();
    let mut raw = None;
    for interface in ["zns", "fdp:2", "fdp:4:persistent", "conventional"] {
        let out = tmp.path().join(interface.replace(':', "-"));
        let text = ok(
            &[
                "replay",
                "--workload",
                WORKLOAD,
                "--placement",
                "sepbit",
                "--preset",
                "tiny",
                "--gc-trigger",
                "free-zones",
                "--timing",
                "--interface",
                interface,
                "--out",
                out.to_str().unwrap(),
            ],
            tmp.path(),
        );
        assert!(text.contains("interface") && text.contains(interface), "{text}");
        let r = report(&out);
        assert_eq!(r["interface"], interface);
        let (host, device, total) = (r["host_waf"].as_f64().unwrap(), r["device_waf"].as_f64().unwrap(), r["waf"].as_f64().unwrap());
        assert!((total - host * device).abs() < 1e-9, "{interface}: {total} != {host} × {device}");
        assert!(total > 1.0, "{interface}: no GC at all");
        assert!(r["write_latency_us_p99"].as_f64().unwrap() > 0.0);
        if interface == "zns" {
            assert_eq!(device, 1.0);
            assert!(r["ssd"].is_null());
            raw = Some(r["zones"].as_u64().unwrap());
        } else {
            assert_eq!(host, 1.0);
            let ssd = &r["ssd"];
            // The same raw capacity: the SSD has as many reclaim units as ZNS has zones.
            assert_eq!(Some(r["zones"].as_u64().unwrap()), raw, "{interface}");
            assert_eq!(ssd["physical_blocks"].as_u64().unwrap(), raw.unwrap() * ssd["reclaim_unit_blocks"].as_u64().unwrap());
            assert_eq!(ssd["invalid_placements"], 0);
        }
    }
}

#[test]
fn bad_interfaces_and_combinations_are_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o");
    let o = out.to_str().unwrap();
    for bad in ["fdp", "fdp:0", "fdp:x", "fdp:4:sometimes", "ssd"] {
        let e = refused(&["replay", "--workload", WORKLOAD, "--interface", bad, "--out", o], tmp.path(), 2);
        assert!(e.contains("--interface"), "{bad}: {e}");
    }
    let e = refused(&["replay", "--workload", WORKLOAD, "--interface", "fdp:4", "--unbounded", "--out", o], tmp.path(), 2);
    assert!(e.contains("--interface fdp:4") && e.contains("--unbounded"), "{e}");
    // A spare beyond the SSD model's range.
    let e = refused(&["replay", "--workload", WORKLOAD, "--interface", "conventional", "--utilization", "0.3", "--out", o], tmp.path(), 2);
    assert!(e.contains("--interface conventional") && e.contains("spare"), "{e}");
    // Given twice, in the flag and as a grid axis.
    let e = refused(&["sweep", "--workloads", WORKLOAD, "--placements", "normal", "--interface", "fdp:2", "--grid", "interface=zns,conventional", "--out", o], tmp.path(), 2);
    assert!(e.contains("interface"), "{e}");
    let e = refused(&["sweep", "--workloads", WORKLOAD, "--placements", "normal", "--grid", "interface=zns,fdp:0", "--out", o], tmp.path(), 2);
    assert!(e.contains("--interface \"fdp:0\""), "{e}");
    let e = refused(&["experiment", "interfaces", "--traces", "x.csv", "--out", o], tmp.path(), 2);
    assert!(e.contains("--traces"), "{e}");
}

#[test]
fn a_sweep_runs_the_interface_axis_and_tells_its_rows_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sweep");
    let args = [
        "sweep",
        "--workloads",
        WORKLOAD,
        "--placements",
        "normal,sepbit",
        "--preset",
        "tiny",
        "--gc-trigger",
        "free-zones",
        "--grid",
        "interface=zns,fdp:2,conventional",
        "--jobs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ];
    ok(&args, tmp.path());
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let rows: Vec<&str> = results.lines().skip(1).collect();
    assert_eq!(rows.len(), 6, "{results}");
    for interface in ["interface=fdp:2", "interface=conventional"] {
        assert_eq!(rows.iter().filter(|r| r.contains(interface)).count(), 2, "{results}");
    }
    // A rerun resumes: every row is reused.
    let again = ok(&args, tmp.path());
    assert!(again.contains("all 6 runs already in"), "{again}");
}

//! `zonekit ocssd` end to end: a run of one FTL, the chapter-4 experiment at a tiny scale
//! (tables, charts, wear maps), and bad input refused with exit status 2.

mod common;

use common::{ok, refused};

#[test]
fn run_prints_the_report_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&["ocssd", "run", "--ftl", "hsbm-gcl", "--param", "logs=4", "--workload", "macdrp:scale=0.01"], dir.path());
    assert!(out.contains("hsbm-gcl") && out.contains("throughput") && out.contains("switch"), "{out}");
    let json = ok(&["ocssd", "run", "--ftl", "sbm-gcl", "--workload", "macdrp:scale=0.01", "--json"], dir.path());
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["ftl"], "sbm-gcl");
    assert_eq!(report["map_table_bytes"], 4096);
    assert_eq!(report["spare_percent"], 0.0);
    assert!(report["waf"].as_f64().unwrap() > 1.0);
    // At 100 MiB of the 512 MiB device, 80.5 % of the flash is spare.
    let json = ok(&["ocssd", "run", "--ftl", "pm-gcl", "--logical-mib", "100", "--workload", "macdrp:scale=0.01", "--json"], dir.path());
    let capped: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!((capped["logical_bytes"].as_u64(), capped["native_logical_bytes"].as_u64()), (Some(100 << 20), Some(480 << 20)));
    assert!((capped["spare_percent"].as_f64().unwrap() - 80.47).abs() < 0.01, "{capped}");
    assert!(capped["map"]["map_entries_updated"].as_u64().unwrap() > 0);
    let fitted = ok(&["ocssd", "run", "--ftl", "sbm-gcl", "--workload", "macdrp:scale=0.01", "--json", "--timing", "fitted"], dir.path());
    let fitted: serde_json::Value = serde_json::from_str(&fitted).unwrap();
    assert_eq!(fitted["flash"], report["flash"], "the FTL decides nothing by time");
    assert_ne!(fitted["elapsed_ns"], report["elapsed_ns"]);
}

#[test]
fn the_experiment_writes_tables_charts_and_wear_maps() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&["ocssd", "experiment", "--scale", "0.01", "--threads", "2", "--out", "oc"], dir.path());
    assert!(out.contains("## Throughput (MB/s), thesis table 4.2 beside ours"), "{out}");
    // Issue 32: the timing fit from the main rows, with a fitted MB/s on every synchronous row.
    assert!(out.contains("## Timing model fit") && out.contains("(b) four costs fitted") && out.contains("LOO"), "{out}");
    let fit = std::fs::read_to_string(dir.path().join("oc/timing-fit.csv")).unwrap();
    assert_eq!(fit.lines().count(), 1 + 3 * 8, "{fit}");
    let results = std::fs::read_to_string(dir.path().join("oc/results.csv")).unwrap();
    let sections = ["main", "native", "parallel", "sbm-no-free", "capacity", "pages-per-block", "superblock", "logs", "macdrp-split"];
    for section in sections {
        assert!(results.lines().any(|l| l.starts_with(&format!("{section},"))), "no {section} rows");
    }
    let header = results.lines().next().unwrap();
    for column in ["map_update_kb", "map_entries_updated", "log_entries_updated", "logs_opened", "log_open_kb", "logical_mb", "native_logical_mb", "spare_percent"] {
        assert!(header.split(',').any(|c| c == column), "no {column} column in {header}");
    }
    // Every row has its own `zonekit ocssd run` command, in the rows' order; rows of several
    // sections rerun alone give their row's WAF, erases and throughput.
    let commands = std::fs::read_to_string(dir.path().join("oc/commands.tsv")).unwrap();
    assert_eq!(commands.lines().count(), results.lines().count(), "{commands}");
    assert!(!commands.contains("not one command"), "{commands}");
    let header = zonekit_report::html::parse_csv(&results).swap_remove(0);
    let column = |name: &str| header.iter().position(|c| c == name).unwrap();
    let mut rerun = 0;
    for (row, command) in results.lines().zip(commands.lines()).skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        let wanted = [("main", "hsbm-gcl"), ("parallel", "dftl"), ("superblock", "sbm-gcl"), ("macdrp-split", "pm-gcc"), ("sbm-no-free", "sbm-gcl")];
        if !wanted.contains(&(cells[0], cells[3])) {
            continue;
        }
        let command = command.rsplit('\t').next().unwrap();
        let run = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{} --json", command.replacen("zonekit", env!("CARGO_BIN_EXE_zonekit"), 1)))
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(run.status.success(), "{command}: {}", String::from_utf8_lossy(&run.stderr));
        let alone: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
        assert_eq!(format!("{:.3}", alone["waf"].as_f64().unwrap()), cells[column("waf")], "{command}");
        assert_eq!(format!("{:.1}", alone["mb_per_sec"].as_f64().unwrap()), cells[column("mb_per_sec")], "{command}");
        assert_eq!(alone["flash"]["blocks_erased"].to_string(), cells[column("blocks_erased")], "{command}");
        rerun += 1;
    }
    assert!(rerun >= 5, "{rerun} rows rerun");
    // The main table runs every FTL at DFTL's 452.0 MB, its native space beside.
    let main_hsbm = results.lines().find(|l| l.starts_with("main,") && l.contains(",hsbm-gcl,")).unwrap();
    assert!(main_hsbm.contains(",452.0,527.4,15.8,"), "{main_hsbm}");
    let summary = std::fs::read_to_string(dir.path().join("oc/summary.md")).unwrap();
    assert!(summary.contains("## Logical space and spare") && summary.contains("dftl's native space"), "{summary}");
    assert!(summary.contains("gc-first against erase-in-place"), "{summary}");
    assert!(results.lines().next().unwrap().ends_with(",mb_per_sec_fitted"));
    for line in results.lines().skip(1) {
        let fitted = line.rsplit(',').next().unwrap();
        assert_eq!(fitted.is_empty(), line.starts_with("parallel,"), "{line}");
    }
    for file in [
        "summary.md",
        "series.csv",
        "request-throughput.csv",
        "wear.csv",
        "throughput-lammps.svg",
        "wear-erases-macdrp-pm-gcc.svg",
        "wear-writes-lammps-hsbm-gcl.svg",
        "sensitivity-superblock-waf-macdrp.svg",
    ] {
        assert!(dir.path().join("oc").join(file).exists(), "{file}");
    }
    // Interrupted and resumed (issues 44 and 47): with half the finished runs gone and one
    // damaged, a rerun loads the rest and every output is the uninterrupted run's, byte for byte.
    let outputs = |dir: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file() && !p.file_name().unwrap().to_string_lossy().starts_with('.') && p.file_name().unwrap() != "report.html")
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
            .collect();
        files.sort();
        files
    };
    let whole = outputs(&dir.path().join("oc"));
    let mut runs: Vec<_> = std::fs::read_dir(dir.path().join("oc/runs")).unwrap().map(|e| e.unwrap().path()).collect();
    runs.sort();
    let distinct: std::collections::BTreeSet<&str> = commands.lines().skip(1).map(|l| l.rsplit('\t').next().unwrap()).collect();
    assert_eq!(runs.len(), distinct.len(), "one file a run (a run two sections share, once)");
    for run in runs.iter().step_by(2) {
        std::fs::remove_file(run).unwrap();
    }
    let damaged = &runs[1];
    let text = std::fs::read_to_string(damaged).unwrap();
    std::fs::write(damaged, &text[..text.len() - 10]).unwrap();
    let kept = &runs[3];
    let kept_before = std::fs::metadata(kept).unwrap().modified().unwrap();
    ok(&["ocssd", "experiment", "--scale", "0.01", "--threads", "2", "--out", "oc"], dir.path());
    assert_eq!(std::fs::metadata(kept).unwrap().modified().unwrap(), kept_before, "a finished run is loaded, not run again");
    let resumed = outputs(&dir.path().join("oc"));
    assert_eq!(resumed.iter().map(|(n, _)| n).collect::<Vec<_>>(), whole.iter().map(|(n, _)| n).collect::<Vec<_>>());
    for ((name, a), (_, b)) in whole.iter().zip(&resumed) {
        assert!(a == b, "{name} differs after a resumed run");
    }
    assert_eq!(std::fs::read_to_string(damaged).unwrap(), text, "the damaged run was recomputed");
}

#[test]
fn the_workload_command_draws_chapter_2_and_checks_the_thesis_statements() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&["ocssd", "workload", "--out", "wl"], dir.path());
    // The table is too wide for a terminal: one row at a time, `column: value`.
    assert!(out.contains("characteristic: requests longer than a block   source: §2.2.1   thesis: about 90 %") && !out.contains("holds: NO"), "{out}");
    let csv = std::fs::read_to_string(dir.path().join("wl/workload.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + out.lines().filter(|l| *l == "lammps" || *l == "macdrp").count(), "{out}");
    for fig in ["fig2.2b-lammps-zoom.svg", "fig2.3c-lammps-end-in-page.svg", "fig2.5a-macdrp-addresses.svg", "fig2.7b-macdrp-end-in-block.svg"] {
        assert!(dir.path().join("wl").join(fig).exists(), "{fig}");
    }
}

#[test]
fn bad_requests_are_refused_with_usage_status() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |extra: &[&str]| refused(&[&["ocssd", "run", "--workload", "macdrp:scale=0.01"], extra].concat(), d, 2);
    assert!(run(&["--ftl", "bast"]).contains("unknown FTL policy \"bast\""));
    assert!(run(&["--ftl", "sbm-gcl", "--param", "pn=3"]).contains("must divide the device's 32 PUs"));
    assert!(run(&["--ftl", "sbm-gcl", "--param", "bn=64"]).contains("16 blocks per LUN"));
    assert!(run(&["--ftl", "sbm-gcl", "--param", "no_free=never"]).contains("expected one of gc-first, erase-in-place"));
    assert!(run(&["--ftl", "pm-gcl", "--param", "logs=4"]).contains("has no parameter \"logs\""));
    assert!(run(&["--param", "pn"]).contains("expected KEY=VALUE"));
    assert!(run(&["--channels", "0"]).contains("at least 1"));
    assert!(run(&["--page-kib", "6"]).contains("multiple of 4096"));
    assert!(run(&["--page-kib", "4194304"]).contains("at most 1024"));
    assert!(run(&["--channels", "2000000"]).contains("at most 65536 parallel units"));
    assert!(run(&["--ftl", "hsbm-gcl", "--param", "logs=4294967294"]).contains("leave no data superblock"));
    assert!(refused(&["ocssd", "run", "--workload", "macdrp:scale=inf"], d, 2).contains("must be in (0, 1000]"));
    assert!(run(&["--logical-mib", "0"]).contains("--logical-mib 0: the host must be able to address at least one page"));
    let err = run(&["--ftl", "pm-gcc", "--logical-mib", "449"]);
    assert!(err.contains("--logical-mib 449: ") && err.contains("pm-gcc exposes at most 469762048 bytes (448.0 MiB"), "{err}");
    let err = run(&["--logical-mib", "64"]);
    assert!(err.contains("error: --logical-mib 64: ") && err.contains("the trace reaches") && err.contains("(capped)"), "{err}");
    let err = run(&["--timing", "bogus"]);
    assert!(err.contains("--timing \"bogus\": expected one of synchronous, fitted, parallel"), "{err}");
    assert!(run(&["--block-size", "8192"]).contains("--block-size does not apply"));
    assert!(run(&["--sample", "10/1"]).contains("select blocks, not whole requests"));
    assert!(run(&["--window", "0:10"]).contains("select blocks, not whole requests"));
    // The LAMMPS-like range (358 MB) does not fit a 4-block-per-LUN device.
    let err = refused(&["ocssd", "run", "--blocks-per-lun", "4", "--workload", "lammps:scale=0.1"], d, 2);
    assert!(err.contains("the trace reaches") && err.contains("give a larger device"), "{err}");
    assert!(refused(&["ocssd", "experiment", "--scale", "2"], d, 2).contains("must be in (0, 1]"));
    assert!(refused(&["ocssd", "experiment", "--real-trace", "nope.csv"], d, 2).contains("no such file"));
}

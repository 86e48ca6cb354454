//! `zonekit tree` end to end: a run of both trees, the experiment at a tiny scale (tables,
//! charts, resume only under the same settings), and bad input refused with exit status 2.

mod common;

use common::{ok, refused};

const SMALL: [&str; 6] = ["--records", "3000", "--sequential-zones", "4", "--zone-size-mib", "8"];

#[test]
fn run_prints_both_trees() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["tree", "run", "--workload", "w4", "--distribution", "latest"];
    args.extend(SMALL);
    let out = ok(&args, dir.path());
    assert!(out.contains("3000 records loaded, then 3000 operations of w4 (50% insert, 50% delete, 0% search), latest keys"), "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("zbtree") || l.starts_with("cow")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    let json = ok(&[&args[..], &["--tree", "zbtree", "--json"]].concat(), dir.path());
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(parsed[0]["spec"]["tree"], "Zb");
    assert_eq!(parsed[0]["run"]["operations"], 3000);
}

#[test]
fn bad_requests_are_refused_with_usage_status() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |extra: &[&str]| refused(&[&["tree", "run"], &SMALL[..], extra].concat(), d, 2);
    assert!(run(&["--tree", "btree"]).contains("unknown tree \"btree\""));
    assert!(run(&["--workload", "50/50/10"]).contains("summing to 100"));
    assert!(run(&["--distribution", "hot"]).contains("zipfian, uniform or latest"));
    assert!(run(&["--conventional-zones", "0"]).contains("at least one sequential and one conventional zone"));
    assert!(run(&["--value-size-bytes", "3000"]).contains("at least 3 are needed"));
    assert!(run(&["--node-size-bytes", "1000"]).contains("multiple of the 4096-byte block"));
    assert!(refused(&["tree", "run", "--records", "0"], d, 2).contains("--records must be at least 1"));
    assert!(refused(&["tree", "run", "--records", "lots"], d, 2).contains("is not a count"));
    assert!(refused(&["tree", "experiment", "--scale", "0"], d, 2).contains("out of range"));
    assert!(refused(&["tree", "experiment", "--sections", "grid,speed"], d, 2).contains("unknown section \"speed\""));
}

#[test]
fn a_tree_that_runs_out_of_space_fails_the_run_not_the_request() {
    let dir = tempfile::tempdir().unwrap();
    // One tiny sequential zone and one conventional zone cannot hold 20000 records.
    let err = refused(&["tree", "run", "--tree", "zbtree", "--records", "20000", "--sequential-zones", "1", "--zone-size-mib", "1"], dir.path(), 1);
    assert!(err.contains("zbtree w1 zipfian at load operation") && err.contains("no space"), "{err}");
}

#[test]
fn experiment_writes_tables_and_charts_and_resumes_only_same_settings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["tree", "experiment", "--scale", "0.002", "--sections", "ratio,resets,conventional", "--out", "out", "--threads", "2"];
    let summary = ok(&args, d);
    for needle in ["Cov:Seq ratio", "Zone resets with 1 Seq + 1 Cov zone", "Cov-Zone occupancy", "| w1 | 1:32 |"] {
        assert!(summary.contains(needle), "{needle} missing from:\n{summary}");
    }
    assert!(d.join("out/conventional-occupancy.svg").exists() && d.join("out/summary.md").exists());
    let results = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    let rows = results.lines().count() - 1;
    assert_eq!(rows, 12 + 12 + 10, "{results}");
    // Mark one row: a rerun under the same settings keeps it, a rerun with another seed does not.
    let mut lines: Vec<String> = results.lines().map(str::to_string).collect();
    let fields: Vec<&str> = lines[1].split(',').collect();
    let mut changed: Vec<String> = fields.iter().map(|s| s.to_string()).collect();
    changed[13] = "424242".into();
    lines[1] = changed.join(",");
    std::fs::write(d.join("out/results.csv"), lines.join("\n") + "\n").unwrap();
    ok(&args, d);
    assert!(std::fs::read_to_string(d.join("out/results.csv")).unwrap().contains(",424242,"), "a finished row was recomputed");
    ok(&[&args[..], &["--seed", "2"]].concat(), d);
    let rerun = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    assert!(!rerun.contains(",424242,"), "a row computed under seed 1 was reported for seed 2");
    assert_eq!(rerun.lines().count() - 1, rows);
}

//! `zonekit tree` end to end: a run of both trees, the experiment at a tiny scale (tables,
//! charts, resume only under the same settings), and bad input refused with exit status 2.

mod common;

use common::{fnv1a, ok, refused};

const SMALL: [&str; 6] = ["--records", "3000", "--sequential-zones", "4", "--zone-size-mib", "8"];

/// The index of a column of a results file's header.
fn column(results: &str, name: &str) -> usize {
    results.lines().next().unwrap().split(',').position(|c| c == name).unwrap_or_else(|| panic!("no column {name}"))
}

#[test]
fn run_prints_both_trees() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["tree", "run", "--workload", "w4", "--distribution", "latest"];
    args.extend(SMALL);
    let out = ok(&args, dir.path());
    assert!(out.contains("3000 records loaded, then 3000 operations of w4 (50% insert, 50% delete, 0% search), latest keys"), "{out}");
    // Two tables (the run's I/O and time, then the space it left), a row per tree in each.
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("zbtree") || l.starts_with("cow")).collect();
    assert_eq!(rows.len(), 4, "{out}");
    assert!(out.contains("wall ops/s") && out.contains("seq occupancy"), "{out}");
    let json = ok(&[&args[..], &["--tree", "zbtree", "--json"]].concat(), dir.path());
    let parsed: serde_json::Value = serde_json::from_str(&json).unwrap();
    // The tree as --tree names it, so it can be given back as the flag.
    assert_eq!(parsed[0]["spec"]["tree"], "zbtree");
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

/// `--device`: the trees run on a zoned image, doing what they do on the emulated device (the
/// same node counts), with the time measured on it; flags the device decides are refused.
#[test]
fn run_and_experiment_measure_on_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["device", "create", "z.zk", "--zones", "6", "--conventional", "1", "--zone-size-mib", "8"], d);
    let base = ["tree", "run", "--workload", "w1", "--records", "3000", "--sequential-zones", "4", "--json"];
    let counts = |json: &str| {
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        v.as_array().unwrap().iter().map(|o| (o["run"]["node_reads"].clone(), o["run"]["node_writes"].clone(), o["stats"]["sequential_occupancy"].clone())).collect::<Vec<_>>()
    };
    let model = ok(&[&base[..], &["--zone-size-mib", "8"]].concat(), d);
    let measured = ok(&[&base[..], &["--device", "z.zk"]].concat(), d);
    assert_eq!(counts(&measured), counts(&model), "the device changes the time, not what the trees do");
    let table = ok(&["tree", "run", "--records", "2000", "--sequential-zones", "4", "--device", "z.zk"], d);
    assert!(table.contains("measured on z.zk") && table.contains("wall ms"), "{table}");
    assert!(refused(&["tree", "run", "--device", "z.zk", "--zone-size-mib", "8"], d, 2).contains("--zone-size-mib 8: with --device the zones are the device's"));
    assert!(refused(&["tree", "run", "--device", "z.zk"], d, 2).contains("--device z.zk: --sequential-zones 40: the device has 5 sequential zones"));
    assert!(refused(&["tree", "run", "--device", "z.zk", "--sequential-zones", "2", "--conventional-zones", "2"], d, 2).contains("--conventional-zones 2: the device has 1"));
    // The experiment: its zones must be the device's (2 GiB × scale), runs take turns.
    let exp = ["tree", "experiment", "--sections", "resets", "--out", "out", "--device", "z.zk"];
    let e = refused(&[&exp[..], &["--scale", "0.002"]].concat(), d, 2);
    assert!(e.contains("z.zk: cannot hold the resets section's runs at --scale 0.002 (its zones match --scale 0.00390625)"), "{e}");
    assert!(refused(&[&exp[..], &["--scale", "0.00390625", "--threads", "2"]].concat(), d, 2).contains("--threads 2: runs on one --device take turns"));
    let summary = ok(&[&exp[..], &["--scale", "0.00390625"]].concat(), d);
    assert!(summary.contains("Measured on z.zk"), "{summary}");
    let rows = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    assert_eq!(rows.lines().skip(1).filter(|l| l.contains(",z.zk,")).count(), 12, "{rows}");
}

/// `--cow-rebalance` and `--cow-collect`: honoured by the cow tree (its reads and resets
/// change, its row says which rules ran), refused by name where they would not be.
#[test]
fn cow_rebalance_and_collect_are_honoured_or_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let base = ["tree", "run", "--tree", "cow", "--workload", "w4", "--records", "3000", "--inner-entries-max", "8", "--json"];
    let run = |extra: &[&str]| -> serde_json::Value { serde_json::from_str(&ok(&[&base[..], extra].concat(), d)).unwrap() };
    let reads = |v: &serde_json::Value| v[0]["run"]["node_reads"].as_u64().unwrap();
    let roomy = ["--sequential-zones", "4", "--zone-size-mib", "8"];
    let (bottom_up, top_down) = (run(&roomy), run(&[&roomy[..], &["--cow-rebalance", "top-down"]].concat()));
    assert_eq!(top_down[0]["spec"]["cow_rebalance"], "TopDown");
    assert!(reads(&top_down) > reads(&bottom_up), "top-down deletes read siblings on the way down: {} vs {}", reads(&top_down), reads(&bottom_up));
    assert_eq!(top_down[0]["stats"]["records"], bottom_up[0]["stats"]["records"]);
    let tight = ["--sequential-zones", "1", "--zone-size-mib", "1", "--no-dynamic-zone-choice"];
    let when_full = run(&[&tight[..], &["--cow-collect", "when-full"]].concat());
    assert_eq!(when_full[0]["spec"]["cow_collect"], "WhenFull");
    assert!(when_full[0]["stats"]["io"]["zone_resets"].as_u64().unwrap() > 0, "{when_full}");
    let table = ok(&["tree", "run", "--tree", "cow", "--records", "2000", "--sequential-zones", "4", "--zone-size-mib", "8", "--cow-rebalance", "top-down"], d);
    assert!(table.contains("the cow tree: top-down rebalancing, reserve collection"), "{table}");
    let refuse = |extra: &[&str]| refused(&[&["tree", "run", "--records", "2000", "--sequential-zones", "4", "--zone-size-mib", "8"], extra].concat(), d, 2);
    assert!(refuse(&["--cow-rebalance", "sideways"]).contains("--cow-rebalance \"sideways\": bottom-up or top-down"));
    assert!(refuse(&["--cow-collect", "never"]).contains("--cow-collect \"never\": reserve or when-full"));
    assert!(refuse(&["--cow-rebalance", "top-down"]).contains("--cow-rebalance top-down: a setting of the cow tree"), "both trees: the zbtree refuses it");
    assert!(refuse(&["--tree", "cow", "--cow-collect", "when-full"]).contains("needs zones used in order (--no-dynamic-zone-choice)"));
    assert!(refuse(&["--tree", "cow", "--cow-rebalance", "top-down", "--inner-entries-max", "3"]).contains("needs inner nodes of at least 4 entries"));
    let exp = ["tree", "experiment", "--scale", "0.002", "--out", "out", "--threads", "2"];
    assert!(refused(&[&exp[..], &["--sections", "ratio", "--cow-collect", "when-full"]].concat(), d, 2)
        .contains("--cow-collect when-full: only the resets section uses zones in order, and --sections ratio does not run it"));
    assert!(refused(&[&exp[..], &["--cow-rebalance", "up"]].concat(), d, 2).contains("bottom-up or top-down"));
    let summary = ok(&[&exp[..], &["--sections", "resets", "--cow-rebalance", "top-down", "--cow-collect", "when-full"]].concat(), d);
    assert!(summary.contains("CoW rebalancing: top-down") && summary.contains("CoW zone collection in the resets section: when-full"), "{summary}");
    let results = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    let (tree, rebalance, collect) = (column(&results, "tree"), column(&results, "cow_rebalance"), column(&results, "cow_collect"));
    for line in results.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let want = if cells[tree] == "cow" { ("top-down", "when-full") } else { ("bottom-up", "reserve") };
        assert_eq!((cells[rebalance], cells[collect]), want, "{line}");
    }
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
    ok(&args, d);
    let summary = std::fs::read_to_string(d.join("out/summary.md")).unwrap();
    for needle in ["Cov:Seq ratio", "Zone resets with 1 Seq + 1 Cov zone", "Cov-Zone occupancy", "| w1 | 1:32 |"] {
        assert!(summary.contains(needle), "{needle} missing from:\n{summary}");
    }
    assert!(d.join("out/conventional-occupancy.svg").exists() && d.join("out/summary.md").exists());
    let results = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    let rows = results.lines().count() - 1;
    assert_eq!(rows, 12 + 12 + 10, "{results}");
    // Every row has its own command (commands.tsv, in the rows' order), and running the last
    // one alone gives that row's node reads and writes.
    let commands = std::fs::read_to_string(d.join("out/commands.tsv")).unwrap();
    assert_eq!(commands.lines().count() - 1, rows, "{commands}");
    let command = commands.lines().last().unwrap().rsplit_once('\t').unwrap().1;
    let words: Vec<&str> = command.split_whitespace().skip(1).collect();
    let alone: serde_json::Value = serde_json::from_str(&ok(&[&words[..], &["--json"]].concat(), d)).unwrap();
    let row: Vec<&str> = results.lines().last().unwrap().split(',').collect();
    assert_eq!(alone[0]["run"]["node_reads"].to_string(), row[column(&results, "run_node_reads")], "{command}");
    assert_eq!(alone[0]["run"]["node_writes"].to_string(), row[column(&results, "run_node_writes")], "{command}");
    // Mark one row: a rerun under the same settings keeps it (when its check vouches for it:
    // a changed cell alone is damage, and recomputed), a rerun with another seed does not.
    let mut lines: Vec<String> = results.lines().map(str::to_string).collect();
    let mut changed: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    changed[column(&results, "run_node_reads")] = "424242".into();
    lines[1] = changed.join(",");
    std::fs::write(d.join("out/results.csv"), lines.join("\n") + "\n").unwrap();
    ok(&args, d);
    assert!(!std::fs::read_to_string(d.join("out/results.csv")).unwrap().contains(",424242,"), "a damaged row was reused");
    changed.pop();
    let check = fnv1a(&changed.join(","));
    changed.push(check);
    lines[1] = changed.join(",");
    std::fs::write(d.join("out/results.csv"), lines.join("\n") + "\n").unwrap();
    ok(&args, d);
    assert!(std::fs::read_to_string(d.join("out/results.csv")).unwrap().contains(",424242,"), "a finished row was recomputed");
    let out = ok(&[&args[..], &["--seed", "2"]].concat(), d);
    let rerun = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    assert!(!rerun.contains(",424242,"), "a row computed under seed 1 was reported for seed 2");
    assert_eq!(rerun.lines().count() - 1, rows);
    // Not dropped either: moved aside, as the sweep moves rows of other settings.
    assert!(out.contains(&format!("tree experiment: {rows} rows of other settings moved to out/results.previous.csv")), "{out}");
    assert!(std::fs::read_to_string(d.join("out/results.previous.csv")).unwrap().contains(",424242,"), "the seed 1 rows were lost");
    // Other values and fan-outs (a sensitivity run): every row under them, none kept from the
    // fitted runs, and the summary says so.
    let sensitivity = ok(&[&args[..], &["--value-size-bytes", "8", "--inner-entries-max", "0"]].concat(), d);
    assert!(sensitivity.contains("Values of 8 bytes, interior fan-out capped at 0 entries") && sensitivity.contains("a sensitivity run"), "{sensitivity}");
    let results = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    let header: Vec<&str> = results.lines().next().unwrap().split(',').collect();
    let (value, inner) = (header.iter().position(|&c| c == "value_size_bytes").unwrap(), header.iter().position(|&c| c == "inner_entries_max").unwrap());
    assert!(results.lines().skip(1).all(|l| {
        let cells: Vec<&str> = l.split(',').collect();
        cells[value] == "8" && cells[inner] == "0"
    }));
    assert!(summary.contains("the values fitted to the paper's load-phase figures"), "{summary}");
}

/// Damaged rows of the experiment's `results.csv` (a cell changed, a row cut, bytes that are
/// not UTF-8) are moved byte for byte to `results.previous.csv`, counted on stdout and
/// recomputed; they used to be dropped without a word. A file from before the check column is
/// refused naming line 1; its rows used to be dropped and recomputed.
#[test]
fn experiment_moves_damaged_rows_aside_and_recomputes_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["tree", "experiment", "--scale", "0.002", "--sections", "ratio", "--out", "out", "--threads", "2"];
    ok(&args, d);
    let clean = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    let lines: Vec<&str> = clean.lines().collect();
    let header = lines[0];
    let wall = |l: &str| -> Vec<String> {
        // Wall-clock cells (run_wall_s, run_cpu_s, run_ops_per_s) and the check differ between runs.
        let cells: Vec<&str> = l.split(',').collect();
        cells
            .iter()
            .enumerate()
            .filter(|(i, _)| ![column(&clean, "run_wall_s"), column(&clean, "run_cpu_s"), column(&clean, "run_ops_per_s"), cells.len() - 1].contains(i))
            .map(|(_, c)| c.to_string())
            .collect()
    };
    // One more node read than the run measured: a plausible number.
    let mut cells: Vec<String> = lines[1].split(',').map(String::from).collect();
    let reads = column(&clean, "run_node_reads");
    cells[reads] = (cells[reads].parse::<u64>().unwrap() + 1).to_string();
    let changed = cells.join(",");
    let mut damaged = format!("{header}\n{changed}\n{}\n", &lines[2][..30]).into_bytes();
    damaged.extend_from_slice(b"ratio,zbtree,w\xff\n");
    for l in &lines[3..] {
        damaged.extend_from_slice(format!("{l}\n").as_bytes());
    }
    std::fs::write(d.join("out/results.csv"), &damaged).unwrap();
    let out = ok(&args, d);
    assert!(out.contains("3 damaged rows of results.csv moved to out/results.previous.csv"), "{out}");
    let resumed = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    assert_eq!(resumed.lines().map(wall).collect::<Vec<_>>(), clean.lines().map(wall).collect::<Vec<_>>(), "the damaged rows are recomputed");
    let aside = std::fs::read(d.join("out/results.previous.csv")).unwrap();
    let mut expected = format!("{header}\n{changed}\n{}\n", &lines[2][..30]).into_bytes();
    expected.extend_from_slice(b"ratio,zbtree,w\xff\n");
    assert_eq!(aside, expected, "the damaged rows, byte for byte");
    // A file from before the check column: refused, not started over.
    let old: String = clean.lines().map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n").collect();
    std::fs::write(d.join("out/results.csv"), &old).unwrap();
    let e = refused(&args, d, 1);
    assert!(e.contains("out/results.csv:1: not a tree experiment results file of this version"), "{e}");
    assert_eq!(std::fs::read_to_string(d.join("out/results.csv")).unwrap(), old, "the refused file is left as it was");
}

/// The number of records `tree check --seed 1` finds clean, and that they are keys 0..n
/// (inserted in order, each committed before the next: what survives is a prefix).
fn clean_prefix(d: &std::path::Path, image: &str, ctx: &str) -> u64 {
    let out = common::zonekit(&["tree", "check", image, "--seed", "1"], d);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{ctx}: check: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    let n: u64 = stdout.split("clean (").nth(1).and_then(|s| s.split(' ').next()).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{ctx}: {stdout}"));
    if n > 0 {
        let got = ok(&["tree", "get", image, &(n - 1).to_string(), &n.to_string()], d);
        assert!(
            got.lines().next().is_some_and(|l| !l.ends_with("absent")) && got.lines().nth(1).is_some_and(|l| l.ends_with("absent")),
            "{ctx}: {n} records but not keys 0..{n}: {got}"
        );
    }
    n
}

/// A durable tree on a device image, reopened by later commands; a load SIGKILLed at seeded
/// moments leaves the tree clean at a prefix of the keys, and a later load completes it.
#[test]
fn a_tree_on_an_image_survives_kill_9_and_reopens() {
    let dir = common::sync_free_tempdir();
    let d = dir.path();
    let (seed, mut next) = common::seeded_rng(0x7EE5);
    ok(&["device", "create", "t.zk", "--zones", "10", "--conventional", "2", "--zone-size-mib", "4"], d);
    ok(&["tree", "create", "t.zk"], d);
    assert!(refused(&["tree", "create", "t.zk"], d, 1).contains("add --force"));
    let started = std::time::Instant::now();
    ok(&["tree", "load", "t.zk", "--count", "3000"], d);
    let load_us = started.elapsed().as_micros().max(100) as u64;
    assert_eq!(clean_prefix(d, "t.zk", "after the first load"), 3000);
    let (mut previous, mut interrupted) = (3000, 0);
    for round in 0..20 {
        // Each round loads 4000 more keys from where the tree is, killed somewhere inside.
        common::killed_after(&["tree", "load", "t.zk", "--from", &previous.to_string(), "--count", "4000"], d, next() % (load_us * 4 / 3));
        let n = clean_prefix(d, "t.zk", &format!("round {round} (ZK_SEED={seed})"));
        assert!(n >= previous, "round {round}: {n} records after a load from {previous} (ZK_SEED={seed})");
        interrupted += (n < previous + 4000) as u32;
        previous = n;
    }
    assert!(interrupted >= 5, "only {interrupted} of 20 loads were killed before they finished (ZK_SEED={seed})");
    ok(&["tree", "load", "t.zk", "--from", &previous.to_string(), "--count", "100"], d);
    assert_eq!(clean_prefix(d, "t.zk", "after the last load"), previous + 100);
    assert!(ok(&["tree", "delete", "t.zk", "0", "99999999"], d).contains("0 deleted\n99999999 absent"));
    assert!(ok(&["tree", "get", "t.zk", "0", "1"], d).starts_with("0 absent\n1 "));
}

/// Flipped bytes in a tree image (a seeded sample of the blocks that hold data): `tree check`
/// fails, or every record is there with the value written.
#[test]
fn a_flipped_byte_in_a_tree_image_is_detected_or_harmless() {
    let dir = common::sync_free_tempdir();
    let d = dir.path();
    let (seed, mut next) = common::seeded_rng(0x7EE5);
    ok(&["device", "create", "t.zk", "--zones", "6", "--conventional", "1", "--zone-size-mib", "2"], d);
    ok(&["tree", "create", "t.zk"], d);
    ok(&["tree", "load", "t.zk", "--count", "5000"], d);
    let image = std::fs::read(d.join("t.zk")).unwrap();
    let data_offset = u64::from_le_bytes(image[104..112].try_into().unwrap()) as usize;
    // Blocks that hold something: the header and zone records, and written nodes.
    let written: Vec<usize> = (0..image.len() / 4096).filter(|&b| image[b * 4096..(b + 1) * 4096].iter().any(|&x| x != 0)).collect();
    assert!(written.iter().any(|&b| b * 4096 >= data_offset), "no node reached the image");
    let (mut detected, flips) = (0, 200);
    for i in 0..flips {
        let block = written[next() as usize % written.len()];
        let at = block * 4096 + next() as usize % 4096;
        let mut damaged = image.clone();
        damaged[at] ^= 1 << (next() % 8);
        std::fs::write(d.join("t.zk"), &damaged).unwrap();
        let out = common::zonekit(&["tree", "check", "t.zk", "--seed", "1"], d);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(!stderr.contains("panicked") && out.status.code().is_some(), "flip {i} at byte {at} (ZK_SEED={seed}): {stderr}");
        if out.status.success() {
            assert!(stdout.contains("clean (5000 records"), "flip {i} at byte {at} (ZK_SEED={seed}): clean with records missing: {stdout}");
        } else {
            detected += 1;
        }
    }
    eprintln!("{flips} flips: {detected} detected, the rest harmless (ZK_SEED={seed})");
}

use super::*;
use crate::tree::experiment::*;

#[test]
fn zone_counts_are_refused_by_flag_not_wrapped() {
    let refused = |sequential_zones: u32, conventional_zones: u32| {
        let spec = TreeSpec { sequential_zones, conventional_zones, ..TreeSpec::default() };
        match spec.validate() {
            Err(LabError::Usage(m)) => m,
            other => panic!("{sequential_zones} + {conventional_zones}: {other:?}"),
        }
    };
    // 4294967295 + 1 wrapped to a device of zero zones; 1 + 4294967295 to one of 39 zones
    // with 4294967295 conventional; 100000000 aborted allocating the zone tables.
    for (s, c) in [(u32::MAX, 1), (40, u32::MAX), (100_000_000, 1), (0, 1)] {
        let m = refused(s, c);
        assert!(m.contains(&format!("--sequential-zones {s} --conventional-zones {c}")), "{m}");
    }
    // A million zones is still a run.
    assert!(TreeSpec { sequential_zones: (1 << 20) - 1, ..TreeSpec::default() }.validate().is_ok());
    let m = match (TreeSpec { zone_size_bytes: 1 << 62, sequential_zones: 1000, ..TreeSpec::default() }).validate() {
        Err(LabError::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(m.contains("over 2^64 bytes"), "{m}");
    // A 2^32 MiB zone: the cow tree listed its conventional node slots up front and the
    // process grew past 20 GB within a minute. Refused before anything is allocated.
    let m = match (TreeSpec { zone_size_bytes: 1 << 52, ..TreeSpec::default() }).validate() {
        Err(LabError::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(m.contains("--zone-size-mib 4294967296") && m.contains("conventional node slots"), "{m}");
}

#[test]
fn mixes_parse() {
    assert_eq!(Mix::parse("W4").unwrap(), WORKLOADS[3].1);
    assert_eq!(Mix::parse("20/0/80").unwrap(), Mix { insert_pct: 20, delete_pct: 0, search_pct: 80 });
    assert!(Mix::parse("20/0/70").unwrap_err().to_string().contains("summing to 100"));
    assert!(Mix::parse("w9").is_err());
    // Sums to 100 only modulo 2^32 (and 2^64).
    for wraps in ["4294967295/1/100", "4294967196/100/100", "18446744073709551615/1/100"] {
        assert!(Mix::parse(wraps).unwrap_err().to_string().contains("summing to 100"), "{wraps}");
    }
}

/// The ratio section at a tiny scale into `out` (12 runs of 2,000 records).
fn tiny_experiment(out: &std::path::Path) -> TreeExperiment {
    TreeExperiment {
        scale: 0.002,
        sections: vec![Section::Ratio],
        seed: 1,
        value_size_bytes: CALIBRATED_VALUE_SIZE_BYTES,
        inner_entries_max: CALIBRATED_INNER_ENTRIES_MAX,
        cow_rebalance: CowRebalance::BottomUp,
        cow_collect: CowCollect::Reserve,
        timing: TreeTiming::Zn540,
        threads: 2,
        out: out.into(),
    }
}

/// The timing setting charges the device time and nothing else: the same nodes read and
/// written under either figures, other times; a rerun under the other timing recomputes
/// every row and sets the old ones aside.
#[test]
fn the_timing_moves_device_time_only() {
    let spec = TreeSpec { records: 2000, operations: 2000, zone_size_bytes: 16 << 20, sequential_zones: 8, ..TreeSpec::default() };
    let fitted = run_tree(&spec, &mut |_, _| {}).unwrap();
    let assumed = run_tree(&TreeSpec { timing: TreeTiming::Zn540Assumed, ..spec }, &mut |_, _| {}).unwrap();
    assert_eq!((fitted.run.node_reads, fitted.run.node_writes), (assumed.run.node_reads, assumed.run.node_writes));
    assert_ne!(fitted.run.device_ns, assumed.run.device_ns);
    let dir = tempfile::tempdir().unwrap();
    let exp = tiny_experiment(dir.path());
    run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
    let outcome = run_experiment(&TreeExperiment { timing: TreeTiming::Zn540Assumed, ..exp.clone() }, Backend::Model, &|_, _, _| {}).unwrap();
    assert_eq!(outcome.set_aside, exp.specs().len());
    assert!(outcome.summary.contains("as assumed before its fit"), "{}", outcome.summary);
    let rows = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
    assert!(rows.lines().skip(1).all(|l| l.split(',').nth(col("timing")) == Some("zn540-assumed")), "{rows}");
}

/// A row is keyed on what its timing model gives, not only on the model's name: rows made
/// under other figures of the same name (an older preset) are set aside and recomputed, never
/// resumed as this model's.
#[test]
fn rows_made_under_other_figures_of_the_same_timing_are_recomputed() {
    let dir = tempfile::tempdir().unwrap();
    let exp = tiny_experiment(dir.path());
    run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
    let path = dir.path().join("results.csv");
    let made = std::fs::read_to_string(&path).unwrap();
    assert!(made.lines().skip(1).all(|l| l.split(',').nth(col("timing_fingerprint")) == Some(TreeTiming::Zn540.fingerprint())), "{made}");
    // The same rows, as an older zn540 preset would have made them: intact, another fingerprint.
    let older: Vec<String> = made
        .lines()
        .skip(1)
        .map(|l| {
            let mut cells: Vec<String> = l.split(',').map(String::from).collect();
            cells.pop();
            cells[col("timing_fingerprint")] = "0123456789abcdef".into();
            crate::harness::results::sealed(cells).join(",")
        })
        .collect();
    std::fs::write(&path, format!("{}\n{}\n", RESULTS_HEADER.join(","), older.join("\n"))).unwrap();
    let outcome = run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
    assert_eq!((outcome.set_aside, outcome.damaged), (exp.specs().len(), 0usize), "every older row is another run's");
    let determined = |text: &str| -> Vec<Vec<String>> {
        let keep = ["timing_fingerprint", "run_node_reads", "run_node_writes", "run_device_ms", "zone_resets"].map(col);
        text.lines().skip(1).map(|l| l.split(',').enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, c)| c.to_string()).collect()).collect()
    };
    assert_eq!(determined(&std::fs::read_to_string(&path).unwrap()), determined(&made), "recomputed under this model's figures");
    let aside = std::fs::read_to_string(dir.path().join("results.previous.csv")).unwrap();
    assert_eq!(aside.lines().count(), exp.specs().len() + 1, "kept, not dropped: {aside}");
}

/// The CoW settings are honoured where they apply and refused, naming the flag, where
/// they would not be.
#[test]
fn cow_settings_are_honoured_or_refused_by_flag() {
    let refused = |spec: TreeSpec| match spec.validate() {
        Err(LabError::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    let zb = TreeSpec { tree: TreeKind::Zb, ..TreeSpec::default() };
    assert!(refused(TreeSpec { cow_rebalance: CowRebalance::TopDown, ..zb.clone() }).contains("--cow-rebalance top-down: a setting of the cow tree"));
    assert!(refused(TreeSpec { cow_collect: CowCollect::WhenFull, dynamic_zone_choice: false, ..zb }).contains("--cow-collect when-full: a setting of the cow tree"));
    let cow = TreeSpec { tree: TreeKind::Cow, ..TreeSpec::default() };
    assert!(refused(TreeSpec { cow_collect: CowCollect::WhenFull, ..cow.clone() })
        .contains("--cow-collect when-full collects a zone when it fills, which needs zones used in order (--no-dynamic-zone-choice)"));
    let m = refused(TreeSpec { cow_rebalance: CowRebalance::TopDown, inner_entries_max: 3, ..cow.clone() });
    assert!(m.contains("--cow-rebalance top-down needs inner nodes of at least 4 entries") && m.contains("--inner-entries-max 3"), "{m}");
    TreeSpec { cow_rebalance: CowRebalance::TopDown, cow_collect: CowCollect::WhenFull, dynamic_zone_choice: false, ..cow }.validate().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let exp = TreeExperiment { cow_collect: CowCollect::WhenFull, ..tiny_experiment(dir.path()) };
    let e = run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap_err().to_string();
    assert!(e.contains("--cow-collect when-full: only the resets section uses zones in order, and --sections ratio does not run it"), "{e}");
}

/// Top-down rebalancing and collection when full reach the CoW runs (and their rows), not
/// the ZB+-tree's: a rerun with another CoW setting reuses the ZB+-tree's rows and
/// recomputes the CoW ones.
#[test]
fn cow_settings_reach_the_cow_rows_only() {
    let dir = tempfile::tempdir().unwrap();
    let exp = TreeExperiment { sections: vec![Section::Resets], scale: 0.0005, threads: 2, ..tiny_experiment(dir.path()) };
    run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
    let before = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
    let changed = TreeExperiment { cow_rebalance: CowRebalance::TopDown, cow_collect: CowCollect::WhenFull, ..exp.clone() };
    let outcome = run_experiment(&changed, Backend::Model, &|_, _, _| {}).unwrap();
    assert_eq!(outcome.set_aside, exp.specs().len() / 2, "the CoW rows, of other settings");
    assert!(outcome.summary.contains("CoW rebalancing: top-down") && outcome.summary.contains("CoW zone collection in the resets section: when-full"), "{}", outcome.summary);
    let after = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
    let cells = |text: &str, tree: &str| -> Vec<Vec<String>> {
        text.lines().skip(1).map(|l| l.split(',').map(String::from).collect::<Vec<_>>()).filter(|r| r[col("tree")] == tree).collect()
    };
    assert_eq!(cells(&before, "zbtree"), cells(&after, "zbtree"), "the ZB+-tree's rows are reused");
    for row in cells(&after, "cow") {
        assert_eq!((row[col("cow_rebalance")].as_str(), row[col("cow_collect")].as_str()), ("top-down", "when-full"));
        assert!(row[col("run_zone_resets")].parse::<u64>().unwrap() > 0, "{row:?}");
    }
    assert!(cells(&after, "zbtree").iter().all(|r| (r[col("cow_rebalance")].as_str(), r[col("cow_collect")].as_str()) == ("bottom-up", "reserve")));
}

/// Top-down splits and merges on the way down: the same keys and answers, reads never fewer
/// (a delete may read siblings), and the tree stays whole.
#[test]
fn top_down_runs_read_at_least_the_paths() {
    let spec = TreeSpec { tree: TreeKind::Cow, records: 3000, operations: 3000, zone_size_bytes: 16 << 20, sequential_zones: 8, mix: WORKLOADS[3].1, ..TreeSpec::default() };
    let bottom_up = run_tree(&spec, &mut |_, _| {}).unwrap();
    let top_down = run_tree(&TreeSpec { cow_rebalance: CowRebalance::TopDown, ..spec }, &mut |_, _| {}).unwrap();
    assert_eq!(top_down.stats.records, bottom_up.stats.records);
    assert_eq!(top_down.run.deletes_missing, bottom_up.run.deletes_missing);
    assert!(top_down.run.node_reads >= bottom_up.run.node_reads, "{} < {}", top_down.run.node_reads, bottom_up.run.node_reads);
}

#[test]
fn damaged_rows_are_moved_aside_byte_for_byte_and_a_file_without_checks_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exp = tiny_experiment(dir.path());
    let path = dir.path().join("results.csv");
    run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
    let clean = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = clean.lines().collect();
    // A row with one more node write than the run made, one cut before its check, one
    // not UTF-8, and the last row without its newline.
    let mut cells: Vec<String> = lines[1].split(',').map(String::from).collect();
    cells[col("run_node_writes")] = (cells[col("run_node_writes")].parse::<u64>().unwrap() + 1).to_string();
    let changed = cells.join(",");
    let mut damage = format!("{changed}\n{}\n", &lines[2][..50]).into_bytes();
    damage.extend_from_slice(b"ratio,cow,w1,zipf\xffan\n");
    let mut text = format!("{}\n", lines[0]).into_bytes();
    text.extend_from_slice(&damage);
    text.extend_from_slice(lines[3..].join("\n").as_bytes());
    std::fs::write(&path, &text).unwrap();
    run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
    let aside = std::fs::read(dir.path().join("results.previous.csv")).unwrap();
    assert_eq!(aside, [format!("{}\n", lines[0]).into_bytes(), damage].concat(), "the damaged rows, as they were");
    let resumed = std::fs::read_to_string(&path).unwrap();
    assert_eq!(resumed.lines().count(), lines.len(), "every row is there again: {resumed}");
    assert!(resumed.lines().skip(1).all(|l| crate::harness::results::seal_holds(&l.split(',').map(String::from).collect::<Vec<_>>())));
    assert!(resumed.lines().skip(3).eq(lines[3..].iter().copied()), "intact rows are reused as they were");
    // A file from before the check column is refused naming its first line, and kept.
    let old: String = lines.iter().map(|l| l.rsplit_once(',').unwrap().0.to_string() + "\n").collect();
    std::fs::write(&path, &old).unwrap();
    let e = run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap_err().to_string();
    assert!(e.contains("results.csv:1: not a tree experiment results file of this version"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
}

#[test]
fn small_run_counts_add_up() {
    let spec = TreeSpec { records: 3000, operations: 3000, zone_size_bytes: 16 << 20, sequential_zones: 8, ..TreeSpec::default() };
    let out = run_tree(&spec, &mut |_, _| {}).unwrap();
    assert_eq!(out.run.inserts + out.run.deletes + out.run.searches, 3000);
    assert_eq!(out.stats.records, 3000 + out.run.inserts - (out.run.deletes - out.run.deletes_missing));
    assert!(out.run.node_reads > 0 && out.run.node_writes > 0 && out.run.device_ns > 0);
}

/// The run's writes split into its inserts' and its deletes' (searches write nothing), on
/// both trees and with either delete-key rule.
#[test]
fn run_writes_split_into_inserts_and_deletes() {
    for tree in TreeKind::ALL {
        for delete_keys in DeleteKeys::ALL {
            let spec = TreeSpec { tree, delete_keys, records: 3000, operations: 3000, zone_size_bytes: 16 << 20, sequential_zones: 8, ..TreeSpec::default() };
            let out = run_tree(&spec, &mut |_, _| {}).unwrap();
            assert_eq!(out.run.insert_node_writes + out.run.delete_node_writes, out.run.node_writes, "{tree:?} {delete_keys:?}");
            assert!(out.run.insert_node_writes > 0 && out.run.delete_node_writes > 0, "{tree:?} {delete_keys:?}");
        }
    }
}

/// `DeleteKeys::Once` draws a delete's key number once, so that one not inserted yet is a
/// delete that finds nothing, and `PlainZipfian` draws the loaded key numbers with 0 the most
/// popular: both find their key less often than a redraw, and the runs' counts add up.
#[test]
fn deletes_drawn_once_or_plain_zipfian_find_their_key_less_often() {
    let mut keys = Keys::new(KeyDistribution::Zipfian, 1000, WORKLOADS[0].1, 1000);
    let mut rng = Rng::new(3);
    // Key numbers 0..1000 exist; the chooser covers 1000 + 2 × 400 of them.
    let once: Vec<u64> = (0..10_000).map(|_| keys.choose_delete(DeleteKeys::Once, &mut rng)).collect();
    let redraw: Vec<u64> = (0..10_000).map(|_| keys.choose_delete(DeleteKeys::Redraw, &mut rng)).collect();
    assert!(redraw.iter().all(|&k| k < 1000));
    let beyond = once.iter().filter(|&&k| k >= 1000).count();
    assert!((3000..6000).contains(&beyond), "{beyond} of 10000 draws beyond the inserted keys, about 800/1800 expected");

    let plain: Vec<u64> = (0..10_000).map(|_| keys.choose_delete(DeleteKeys::PlainZipfian, &mut rng)).collect();
    assert!(plain.iter().all(|&k| k < 1000), "over the loaded key numbers only");
    let zeros = plain.iter().filter(|&&k| k == 0).count();
    assert!(zeros > 1000, "key number 0 is the most popular: {zeros} of 10000 draws");

    let spec = TreeSpec { tree: TreeKind::Cow, mix: WORKLOADS[3].1, records: 3000, operations: 3000, zone_size_bytes: 16 << 20, sequential_zones: 8, ..TreeSpec::default() };
    let redraw = run_tree(&spec, &mut |_, _| {}).unwrap();
    let hit_rate = |o: &TreeOutcome| (o.run.deletes - o.run.deletes_missing) as f64 / o.run.deletes as f64;
    for rule in [DeleteKeys::Once, DeleteKeys::PlainZipfian] {
        let out = run_tree(&TreeSpec { delete_keys: rule, ..spec.clone() }, &mut |_, _| {}).unwrap();
        assert_eq!(out.run.inserts + out.run.deletes, 3000);
        assert!(hit_rate(&out) < hit_rate(&redraw), "{rule:?}: {} against {}", hit_rate(&out), hit_rate(&redraw));
        assert_eq!(out.stats.records, 3000 + out.run.inserts - (out.run.deletes - out.run.deletes_missing));
        assert!(TreeSpec { delete_keys: rule, ..spec.clone() }.command(None).ends_with(&format!("--delete-keys {}", rule.name())));
    }
    assert!(!spec.command(None).contains("--delete-keys"), "the default is not spelt out");
}

/// A row run on a device reruns alone only if its command names how many of the device's zones
/// it took (the ratio section takes 32, 48 or 64; `tree run` defaults to 40).
#[test]
fn a_device_rows_command_names_its_zone_counts() {
    let spec = TreeSpec { sequential_zones: 48, conventional_zones: 1, ..TreeSpec::default() };
    let on_device = spec.command(Some("/dev/shm/zb8.zk"));
    assert!(on_device.contains("--sequential-zones 48 --conventional-zones 1 --device /dev/shm/zb8.zk"), "{on_device}");
    assert!(!on_device.contains("--zone-size-mib"), "the device's zone size is its own: {on_device}");
    let emulated = spec.command(None);
    assert!(emulated.contains("--sequential-zones 48 --conventional-zones 1 --zone-size-mib 2048"), "{emulated}");
}

/// A device with data, `extra` sequential zones more than `spec` takes.
fn data_device(spec: &TreeSpec, extra: u32) -> MemDevice {
    let g = Geometry { zone_count: spec.geometry().zone_count + extra, ..spec.geometry() };
    MemDevice::new(g, ZoneBehavior::default(), StorageMode::Data).unwrap()
}

/// On a device the trees write every node to it and read it back, and do exactly what they
/// do on the emulated one (same reads, writes, resets, occupancy, model time); the zones
/// past their window stay untouched.
#[test]
fn a_run_on_a_device_does_what_the_model_run_does() {
    for tree in TreeKind::ALL {
        let spec = TreeSpec { tree, records: 3000, operations: 3000, zone_size_bytes: 1 << 20, sequential_zones: 3, ..TreeSpec::default() };
        let model = run_tree(&spec, &mut |_, _| {}).unwrap();
        let (measured, mut device) = run_tree_on(&spec, data_device(&spec, 2), &mut |_, _| {}).unwrap();
        assert_eq!((measured.load.node_writes, &measured.stats), (model.load.node_writes, &model.stats), "{}", tree.name());
        assert_eq!(
            (measured.run.node_reads, measured.run.node_writes, measured.run.device_ns),
            (model.run.node_reads, model.run.node_writes, model.run.device_ns),
            "{}",
            tree.name()
        );
        let io = device.stats();
        assert!(io.reads.ops >= measured.run.node_reads, "the nodes were read from the device");
        assert!(io.writes.ops + io.appends.ops >= measured.load.node_writes + measured.run.node_writes, "the nodes were written to the device");
        let zones = device.report_all(zonekit_device::ZoneFilter::All).unwrap();
        assert!(zones[4..].iter().all(|z| z.write_pointer == z.start), "{}: zones past the window were written", tree.name());
    }
}

#[test]
fn a_device_that_cannot_hold_the_run_is_refused_naming_why() {
    let spec = TreeSpec { records: 100, operations: 100, zone_size_bytes: 1 << 20, sequential_zones: 3, ..TreeSpec::default() };
    let refused = |g: Geometry| fits_device(&spec, &g).unwrap_err().to_string();
    let g = spec.geometry();
    assert!(refused(Geometry { zone_size_blocks: 512, zone_capacity_blocks: 512, ..g }).contains("the device's zones are 2097152 bytes (2 MiB), this run's 1048576"));
    assert!(refused(Geometry { conventional_zone_count: 0, ..g }).contains("--conventional-zones 1: the device has 0 conventional zones"));
    assert!(refused(Geometry { zone_count: 3, ..g }).contains("--sequential-zones 3: the device has 2 sequential zones"));
    assert!(refused(Geometry { block_size_bytes: 512, zone_size_blocks: 2048, zone_capacity_blocks: 2048, ..g }).contains("blocks are 512 bytes"));
    assert!(refused(Geometry { active_zones_max: Some(2), ..g }).contains("--sequential-zones 3: the device allows 2 active zones"));
    fits_device(&spec, &Geometry { open_zones_max: Some(3), ..g }).unwrap();
    fits_device(&spec, &Geometry { zone_count: 9, ..g }).unwrap();
}

/// On a device the experiment's rows say so (its `device` cell), run one after another on
/// it, and a rerun on the emulated device moves them aside rather than reusing them.
#[test]
fn an_experiment_on_a_device_records_it_and_is_not_reused_by_a_model_run() {
    let dir = tempfile::tempdir().unwrap();
    let exp = TreeExperiment { sections: vec![Section::Resets], scale: 0.0005, threads: 1, ..tiny_experiment(dir.path()) };
    let spec = &exp.specs()[0].1;
    let refused = run_experiment(
        &exp,
        Backend::Device {
            name: "small".into(),
            device: Box::new(MemDevice::new(Geometry { zone_count: 1, ..spec.geometry() }, ZoneBehavior::default(), StorageMode::Data).unwrap()),
        },
        &|_, _, _| {},
    );
    assert!(refused.unwrap_err().to_string().contains("small: cannot hold the resets section's runs at --scale 0.0005"));
    let small_zones = Geometry { zone_size_blocks: 64, zone_capacity_blocks: 64, ..spec.geometry() };
    let e = run_experiment(
        &exp,
        Backend::Device { name: "z".into(), device: Box::new(MemDevice::new(small_zones, ZoneBehavior::default(), StorageMode::Data).unwrap()) },
        &|_, _, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(&format!("(its zones match --scale {})", (64 * 4096) as f64 / (2u64 << 30) as f64)), "{e}");
    let device = Box::new(data_device(spec, 3));
    let outcome = run_experiment(&exp, Backend::Device { name: "mem0".into(), device }, &|_, _, _| {}).unwrap();
    assert!(outcome.summary.contains("Measured on mem0"), "{}", outcome.summary);
    let rows = std::fs::read_to_string(dir.path().join("results.csv")).unwrap();
    assert!(rows.lines().skip(1).all(|l| l.split(',').nth(col("device")) == Some("mem0")), "{rows}");
    let model = run_experiment(&exp, Backend::Model, &|_, _, _| {}).unwrap();
    assert_eq!(model.set_aside, exp.specs().len(), "the device's rows are not the model's");
}

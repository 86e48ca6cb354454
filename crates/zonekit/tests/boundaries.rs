//! Every numeric flag of every command at its boundaries (issue 31): the commands and their
//! flags are read from `--help`, not listed by hand, so a flag added tomorrow is tested too.
//! Each flag gets 0, 1, 2^32, 2^64 - 1, 2^64, -1, NaN and inf. The run must succeed (or still
//! be running after a second: accepted), or be refused with exit status 2 and a message that
//! names the flag, or fail at run time with exit status 1 through zonekit's own error path
//! (`zonekit: error: ...`, such as a tree that does not fit a one-MiB zone). Never a panic, an
//! abort or another signal.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[allow(dead_code)] // the shared helpers this test does not use
mod common;
use common::ok;

/// The values every numeric flag is given.
const VALUES: [&str; 8] = ["0", "1", "4294967296", "18446744073709551615", "18446744073709551616", "-1", "NaN", "inf"];

/// Placeholders of flags that take names, paths or specs rather than numbers.
const NOT_NUMBERS: &[&str] = &[
    "OUT",
    "WORKLOAD",
    "COLUMNS",
    "FORMAT",
    "DELIMITER",
    "CONFIG",
    "BEHAVIOR",
    "PRESET",
    "DEVICE",
    "NAME",
    "FILE",
    "PATH",
    "TRACES",
    "TRACE",
    "REAL_TRACE",
    "TMPFS",
    "TITLE",
    "POLICY",
    "POLICIES",
    "TIMING",
    "STATE",
    "PLUGIN",
    "PROFILE",
    "SECTIONS",
    "SAMPLER",
    "TREE",
    "PLACEMENT",
    "VICTIM",
    "PARAMS",
    "GC_TRIGGER",
    "WINDOW",
    "SAMPLE",
    "DB_BENCH",
    "SOCKET",
    "FTL",
    "EVICTION",
    "ADMISSION",
    "KIND",
    "MODE",
    "DISTRIBUTION",
    "CONFIGS",
    "SAMPLER_PARAMS",
    "SHARD",
    "GRID",
    "WORKLOADS",
    "PLACEMENTS",
    "VICTIMS",
    "DIR",
    "SECS",
    "ONLY",
    "FAIL_ON",
];

/// What a command needs besides the flag under test: its positional arguments, and options
/// that keep a run small (left out when they are the flag under test).
fn base(leaf: &str, run: usize) -> (Vec<String>, Vec<(&'static str, &'static str)>) {
    let p = |args: &[&str]| args.iter().map(|a| a.replace("NEW", &format!("new{run}"))).collect::<Vec<_>>();
    match leaf {
        "device info" | "device report" | "device reset" | "device open" | "device close" | "device finish" => (p(&["dev.zk"]), vec![]),
        "device conformance" => (p(&["dev.zk", "--yes-erase-everything"]), vec![]),
        "device create" => (p(&["NEW.zk"]), vec![]),
        "trace info" | "cache sim" | "ocssd run" => (p(&["good.csv"]), vec![("--cache-blocks", "64")].into_iter().filter(|_| leaf == "cache sim").collect()),
        "trace convert" => (p(&["good.csv", "-o", "NEW.zkt"]), vec![]),
        "trace gen" => (p(&["zipf:blocks=1K,writes=2K", "-o", "NEW.zkt"]), vec![]),
        "analyze" | "replay" => (p(&["good.csv", "--out", "out/NEW"]), vec![]),
        "fs put" => (p(&["fs.zk", "src.bin", "--name", "NEW"]), vec![]),
        "fs cat" => (p(&["fs.zk", "f"]), vec![]),
        "tree create" => (p(&["treec.zk", "--force"]), vec![]),
        "tree load" | "tree check" => (p(&["tree.zk"]), vec![("--count", "10")].into_iter().filter(|_| leaf == "tree load").collect()),
        "cache create" => (p(&["cachec.zk", "--disk", "cachec.img", "--force"]), vec![("--disk-mib", "8")]),
        "cache load" | "cache check" | "cache flush" => (p(&["cache.zk", "--disk", "cache.img"]), vec![("--count", "10")].into_iter().filter(|_| leaf == "cache load").collect()),
        "tree run" => (vec![], vec![("--records", "2000"), ("--operations", "2000"), ("--sequential-zones", "4"), ("--zone-size-mib", "8")]),
        "cache run" => (vec![], vec![("--records", "2000"), ("--operations", "2000"), ("--cache-mib", "64"), ("--data-mib", "512")]),
        "demo" | "experiment" | "tree experiment" | "ocssd experiment" | "cache experiment" | "kv-bench" => (p(&["--out", "out/NEW"]), vec![]),
        _ => (vec![], vec![]),
    }
}

/// Leaf commands, e.g. "device create", from the help of each group.
fn leaves(d: &Path, path: &[String], out: &mut Vec<String>) {
    let help = ok(&[path.iter().map(String::as_str).collect::<Vec<_>>(), vec!["--help"]].concat(), d);
    let subs: Vec<String> = help.split("\nCommands:\n").nth(1).map_or_else(Vec::new, |rest| {
        // A command's line is indented two spaces; its wrapped description, more.
        rest.lines()
            .take_while(|l| !l.trim().is_empty())
            .filter(|l| !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|s| *s != "help")
            .map(String::from)
            .collect()
    });
    if subs.is_empty() {
        out.push(path.join(" "));
    }
    for s in subs {
        leaves(d, &[path, &[s]].concat(), out);
    }
}

/// The numeric flags of a leaf command: `--name <PLACEHOLDER>` lines of its help.
fn numeric_flags(d: &Path, leaf: &str) -> Vec<String> {
    let help = ok(&[leaf.split(' ').collect::<Vec<_>>(), vec!["--help"]].concat(), d);
    let mut flags = Vec::new();
    for line in help.lines() {
        let Some(at) = line.find("--") else { continue };
        if !line[..at].trim().trim_end_matches(',').trim_start_matches('-').chars().all(|c| c.is_ascii_alphabetic()) {
            continue; // a flag mentioned in a description, not one listed
        }
        let rest = &line[at..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        let Some(placeholder) = rest[name.len()..].strip_prefix(" <").or_else(|| rest[name.len()..].strip_prefix("=<")).and_then(|r| r.split('>').next()) else { continue };
        if !NOT_NUMBERS.contains(&placeholder) && !flags.contains(&name) {
            flags.push(name);
        }
    }
    flags
}

/// Runs zonekit for at most `limit`; `None` if it was still running (and was killed).
fn run_for(d: &Path, args: &[String], limit: Duration) -> Option<(Option<i32>, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zonekit")).args(args).current_dir(d).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("run zonekit");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait for zonekit") {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().expect("piped"), &mut stderr).expect("read stderr");
            return Some((status.code(), stderr));
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What is wrong with an outcome, if anything (see the module doc).
fn judge(leaf: &str, flag: &str, outcome: &(Option<i32>, String)) -> Option<String> {
    let (code, stderr) = outcome;
    let last = stderr.lines().last().unwrap_or("");
    if stderr.contains("panicked") || code.is_none() {
        return Some(format!("panicked or killed by a signal: {last}"));
    }
    match code {
        Some(0) => None,
        Some(2) if stderr.contains(flag) => None,
        // Missing prerequisites of the machine, not of the flag.
        Some(2) if leaf == "kv-bench" && stderr.contains("plugin") => None,
        Some(1) if stderr.starts_with("zonekit: error:") => None,
        Some(c) => Some(format!("exit {c} without naming {flag}: {last}")),
        None => unreachable!(),
    }
}

#[test]
fn every_numeric_flag_at_its_boundaries_is_accepted_or_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for args in [
        &["device", "create", "dev.zk", "--zones", "8", "--zone-size-mib", "1"][..],
        &["device", "create", "fs.zk", "--zones", "8", "--zone-size-mib", "1"],
        &["fs", "mkfs", "fs.zk"],
        &["device", "create", "tree.zk", "--zones", "6", "--conventional", "1", "--zone-size-mib", "1"],
        &["tree", "create", "tree.zk"],
        &["tree", "load", "tree.zk", "--count", "100"],
        &["device", "create", "treec.zk", "--zones", "6", "--conventional", "1", "--zone-size-mib", "1"],
        &["device", "create", "cache.zk", "--zones", "12", "--zone-size-mib", "1"],
        &["cache", "create", "cache.zk", "--disk", "cache.img", "--disk-mib", "8"],
        &["device", "create", "cachec.zk", "--zones", "12", "--zone-size-mib", "1"],
    ] {
        ok(args, d);
    }
    std::fs::write(d.join("src.bin"), vec![5u8; 5000]).unwrap();
    ok(&["fs", "put", "fs.zk", "src.bin", "--name", "f"], d);
    let csv: String = (0..2000).map(|i| format!("1,W,{},4096,{}\n", (i * 7919 % 500) * 4096, i * 1000)).collect();
    std::fs::write(d.join("good.csv"), csv).unwrap();
    std::fs::create_dir(d.join("out")).unwrap();

    let mut all = Vec::new();
    leaves(d, &[], &mut all);
    assert!(all.len() > 30 && all.iter().any(|l| l == "device create"), "{all:?}");
    let mut cases = Vec::new();
    for leaf in &all {
        for flag in numeric_flags(d, leaf) {
            for value in VALUES {
                cases.push((leaf.clone(), flag.clone(), value));
            }
        }
    }
    assert!(cases.len() > 800, "only {} cases: is --help still parsed?", cases.len());

    // Two runners (the machines have two cores); a second is enough for a refusal.
    let (failures, still_running): (Vec<String>, usize) = std::thread::scope(|s| {
        let halves: Vec<_> = cases
            .chunks(cases.len().div_ceil(2))
            .enumerate()
            .map(|(half, chunk)| {
                s.spawn(move || {
                    let (mut failures, mut running) = (Vec::new(), 0);
                    for (i, (leaf, flag, value)) in chunk.iter().enumerate() {
                        let (mut args, small) = base(leaf, half * 100_000 + i);
                        args.splice(0..0, leaf.split(' ').map(String::from));
                        args.extend(small.iter().filter(|(f, _)| f != flag).flat_map(|(f, v)| [f.to_string(), v.to_string()]));
                        // `--flag=-1`: a separate "-1" would be taken for a flag by the parser.
                        args.push(format!("{flag}={value}"));
                        match run_for(d, &args, Duration::from_secs(1)) {
                            None => running += 1,
                            Some(outcome) => {
                                if let Some(why) = judge(leaf, flag, &outcome) {
                                    failures.push(format!("zonekit {}: {why}", args.join(" ")));
                                }
                            }
                        }
                    }
                    (failures, running)
                })
            })
            .collect();
        halves.into_iter().map(|h| h.join().expect("runner")).fold((Vec::new(), 0), |(mut f, r), (f2, r2)| {
            f.extend(f2);
            (f, r + r2)
        })
    });
    eprintln!("{} cases over {} commands: {} still running after a second (accepted), {} wrong", cases.len(), all.len(), still_running, failures.len());
    assert!(failures.is_empty(), "{} of {} boundary values misbehave:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

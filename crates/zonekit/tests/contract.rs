//! One contract for every subcommand: a missing input path is a bad request (exit status 2, a
//! message naming the path, no panic), as a bad flag is. The table names every leaf subcommand
//! `zonekit --help` lists, so a new one cannot join without saying how it takes its input.
//! And a run that fails once accepted (a corrupt input, a full disk) exits 1, in every
//! subcommand where one can; the second table says how, or why none can.

use std::path::Path;

#[allow(dead_code)] // the shared helpers this suite does not use
mod common;
use common::{ok, refused};

/// `None`: the subcommand reads no input path (it generates its input, or lists something).
#[rustfmt::skip]
const MISSING_INPUT: &[(&str, Option<&[&str]>)] = &[
    ("demo", None),
    ("device create", None), // creates its path
    ("device info", Some(&["device", "info", "nope.zk"])),
    ("device report", Some(&["device", "report", "nope.zk"])),
    ("device reset", Some(&["device", "reset", "--all", "nope.zk"])),
    ("device open", Some(&["device", "open", "--zone", "0", "nope.zk"])),
    ("device close", Some(&["device", "close", "--zone", "0", "nope.zk"])),
    ("device finish", Some(&["device", "finish", "--zone", "0", "nope.zk"])),
    ("device conformance", Some(&["device", "conformance", "nope.zk"])),
    ("device demo", None),
    ("device presets", None),
    ("device bench", None), // runs a preset's timing model
    ("device fit", Some(&["device", "fit", "--data", "nope-dir"])),
    ("trace info", Some(&["trace", "info", "nope.csv"])),
    ("trace convert", Some(&["trace", "convert", "nope.csv", "--out", "x.zkt"])),
    ("trace gen", None),
    ("analyze", Some(&["analyze", "nope.csv"])),
    ("replay", Some(&["replay", "nope.csv"])),
    ("sweep", Some(&["sweep", "--traces", "nope.csv"])),
    ("sweep merge", Some(&["sweep", "merge", "nope-shard"])),
    ("policies", None),
    ("experiment", Some(&["experiment", "table-3.2", "--traces", "nope.csv"])),
    ("report", Some(&["report", "nope-dir"])),
    ("report figures", Some(&["report", "figures", "--seed", "3", "--results", "nope-dir"])),
    ("fs mkfs", Some(&["fs", "mkfs", "nope.img"])),
    ("fs ls", Some(&["fs", "ls", "nope.img"])),
    ("fs df", Some(&["fs", "df", "nope.img"])),
    ("fs fsck", Some(&["fs", "fsck", "nope.img"])),
    ("fs dump", Some(&["fs", "dump", "nope.img"])),
    ("fs put", Some(&["fs", "put", "nope.img", "nope.src"])),
    ("fs cat", Some(&["fs", "cat", "nope.img", "a"])),
    ("fs rm", Some(&["fs", "rm", "nope.img", "a"])),
    ("fs mv", Some(&["fs", "mv", "nope.img", "a", "b"])),
    ("kv-bench", None), // formats a fresh emulated device per run
    ("tree run", Some(&["tree", "run", "--device", "nope.zk"])),
    ("tree experiment", None),
    ("tree create", Some(&["tree", "create", "nope.zk"])),
    ("tree load", Some(&["tree", "load", "--count", "3", "nope.zk"])),
    ("tree get", Some(&["tree", "get", "nope.zk", "1"])),
    ("tree delete", Some(&["tree", "delete", "nope.zk", "1"])),
    ("tree check", Some(&["tree", "check", "nope.zk"])),
    ("ocssd run", Some(&["ocssd", "run", "nope.csv"])),
    ("ocssd experiment", None),
    ("ocssd workload", None),
    ("cache sim", Some(&["cache", "sim", "--cache-blocks", "8", "nope.csv"])),
    ("cache run", Some(&["cache", "run", "--trace", "nope.csv"])),
    ("cache experiment", Some(&["cache", "experiment", "--trace", "nope.csv", "--cache-mib", "64"])),
    ("cache create", Some(&["cache", "create", "--disk", "nope.disk", "nope.zk"])),
    ("cache load", Some(&["cache", "load", "--disk", "nope.disk", "--count", "3", "nope.zk"])),
    ("cache check", Some(&["cache", "check", "--disk", "nope.disk", "nope.zk"])),
    ("cache flush", Some(&["cache", "flush", "--disk", "nope.disk", "nope.zk"])),
    ("serve ublk", Some(&["serve", "ublk", "nope.zk"])),
    ("serve nbd", Some(&["serve", "nbd", "nope.zk"])),
    ("claims render", Some(&["claims", "render", "nope-dir"])),
    ("claims check", Some(&["claims", "check", "nope-dir"])),
    ("ssd presets", None),
    ("ssd run", None),
];

/// How a subcommand's run can fail once its request was accepted, for the exit-status-1 table.
enum Failing {
    /// Arguments whose run fails on what it reads (the fixtures of
    /// [`a_failed_run_exits_1_everywhere`]: a trace malformed at line 3001, an image that is
    /// not one, a device with no file system, tree or cache on it, a device too full).
    Run(&'static [&'static str]),
    /// Arguments whose run fails writing its results: the disk is full (a file-size limit).
    DiskFull(&'static [&'static str]),
    /// No run can fail after its input was accepted, and why.
    Never(&'static str),
}

/// One failing run per subcommand: it exits 1 (a request that could not be run exits 2, the
/// table above). The subcommands marked `Never` read nothing that can turn out bad and write
/// nothing, or can fail only where a test cannot put them.
#[rustfmt::skip]
const FAILED_RUN: &[(&str, Failing)] = &[
    ("demo", Failing::DiskFull(&["demo", "--scale", "0.005", "--out", "dm"])),
    ("device create", Failing::Never("its one failure after its checks is writing the image, which it first sizes against the file system's file-size limit (refused, exit 2); a disk filling up mid-write needs a small mounted file system, which a test cannot make unprivileged")),
    ("device info", Failing::Run(&["device", "info", "bad.zk"])),
    ("device report", Failing::Run(&["device", "report", "bad.zk"])),
    ("device reset", Failing::Run(&["device", "reset", "--all", "bad.zk"])),
    ("device open", Failing::Run(&["device", "open", "--zone", "0", "bad.zk"])),
    ("device close", Failing::Run(&["device", "close", "--zone", "0", "bad.zk"])),
    ("device finish", Failing::Run(&["device", "finish", "--zone", "0", "bad.zk"])),
    ("device conformance", Failing::Run(&["device", "conformance", "--yes-erase-everything", "bad.zk"])),
    ("device demo", Failing::DiskFull(&["device", "demo", "--out", "dd"])),
    ("device presets", Failing::Never("prints a built-in table")),
    ("device bench", Failing::DiskFull(&["device", "bench", "--rw", "randread", "--qd", "4", "--ops", "500", "--out", "db"])),
    ("device fit", Failing::Run(&["device", "fit", "--data", "fit-data"])),
    ("trace info", Failing::Run(&["trace", "info", "bad.csv"])),
    ("trace convert", Failing::Run(&["trace", "convert", "bad.csv", "--out", "x.zkt"])),
    ("trace gen", Failing::DiskFull(&["trace", "gen", "zipf:blocks=1000,writes=5000", "--out", "g.csv"])),
    ("analyze", Failing::Run(&["analyze", "bad.csv", "--out", "an-bad"])),
    ("replay", Failing::Run(&["replay", "bad.csv", "--preset", "tiny", "--out", "rp"])),
    ("sweep", Failing::Run(&["sweep", "--traces", "bad.csv", "--preset", "tiny", "--placements", "sepbit", "--victims", "greedy", "--out", "sw"])),
    ("sweep merge", Failing::Run(&["sweep", "merge", "bad-shard"])),
    ("policies", Failing::Never("prints the built-in policy tables")),
    ("experiment", Failing::Run(&["experiment", "table-2.2", "--quick", "--traces", "bad.csv", "--out", "e22"])),
    ("report", Failing::DiskFull(&["report", "an"])),
    ("report figures", Failing::Run(&["report", "figures", "--seed", "3", "--results", "bad-results"])),
    ("fs mkfs", Failing::Run(&["fs", "mkfs", "bad.zk"])),
    ("fs ls", Failing::Run(&["fs", "ls", "blank.zk"])),
    ("fs df", Failing::Run(&["fs", "df", "blank.zk"])),
    ("fs fsck", Failing::Run(&["fs", "fsck", "blank.zk"])),
    ("fs dump", Failing::Run(&["fs", "dump", "blank.zk"])),
    ("fs put", Failing::Run(&["fs", "put", "fs.zk", "big.bin"])), // more than the device holds
    ("fs cat", Failing::Run(&["fs", "cat", "blank.zk", "a"])),
    ("fs rm", Failing::Run(&["fs", "rm", "blank.zk", "a"])),
    ("fs mv", Failing::Run(&["fs", "mv", "blank.zk", "a", "b"])),
    ("kv-bench", Failing::Never("runs RocksDB's db_bench through the plugin, which a test machine need not have (without them it is refused, exit 2); scripts/kv-test runs it where they are")),
    ("tree run", Failing::Run(&["tree", "run", "--device", "bad.zk"])),
    ("tree experiment", Failing::DiskFull(&["tree", "experiment", "--scale", "0.001", "--out", "te"])),
    ("tree create", Failing::Run(&["tree", "create", "bad.zk"])),
    ("tree load", Failing::Run(&["tree", "load", "--count", "3", "blank.zk"])),
    ("tree get", Failing::Run(&["tree", "get", "blank.zk", "1"])),
    ("tree delete", Failing::Run(&["tree", "delete", "blank.zk", "1"])),
    ("tree check", Failing::Run(&["tree", "check", "blank.zk"])),
    ("ocssd run", Failing::Run(&["ocssd", "run", "bad.csv"])),
    ("ocssd experiment", Failing::Run(&["ocssd", "experiment", "--scale", "0.01", "--real-trace", "bad.csv", "--out", "oe"])),
    ("ocssd workload", Failing::DiskFull(&["ocssd", "workload", "--out", "ow"])),
    ("cache sim", Failing::Run(&["cache", "sim", "--cache-blocks", "8", "bad.csv"])),
    ("cache run", Failing::Run(&["cache", "run", "--trace", "bad.csv"])),
    ("cache experiment", Failing::Run(&["cache", "experiment", "--trace", "bad.csv", "--cache-mib", "64", "--out", "ce"])),
    ("cache create", Failing::Run(&["cache", "create", "--disk", "d.disk", "bad.zk"])),
    ("cache load", Failing::Run(&["cache", "load", "--disk", "d.disk", "--count", "3", "blank.zk"])),
    ("cache check", Failing::Run(&["cache", "check", "--disk", "d.disk", "blank.zk"])),
    ("cache flush", Failing::Run(&["cache", "flush", "--disk", "d.disk", "blank.zk"])),
    ("serve ublk", Failing::Run(&["serve", "ublk", "bad.zk"])),
    ("serve nbd", Failing::Run(&["serve", "nbd", "bad.zk"])),
    ("claims render", Failing::Run(&["claims", "render", "bad-claims"])),
    ("claims check", Failing::Run(&["claims", "check", "bad-claims"])),
    ("ssd presets", Failing::Never("prints a built-in table")),
    ("ssd run", Failing::Never("generates its workload and writes no file; a shape the model cannot hold is refused before the run (exit 2)")),
];

/// The leaf subcommands `zonekit --help` lists, as "group leaf" (or "leaf").
fn leaf_subcommands(dir: &Path) -> Vec<String> {
    let commands = |help: &str| -> Vec<String> {
        help.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            // A command's line is indented two spaces; its wrapped description, more.
            .filter(|l| !l.starts_with("   "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|c| c != "help")
            .collect()
    };
    let mut leaves = Vec::new();
    for c in commands(&ok(&["--help"], dir)) {
        let nested = commands(&ok(&[&c, "--help"], dir));
        // `sweep` both runs and has `sweep merge`; `report` both writes a page and has
        // `report figures`.
        if nested.is_empty() || c == "sweep" || c == "report" {
            leaves.push(c.clone());
        }
        leaves.extend(nested.into_iter().map(|n| format!("{c} {n}")));
    }
    leaves
}

#[test]
fn every_subcommand_is_in_the_contract_table() {
    let dir = tempfile::tempdir().unwrap();
    let listed: Vec<&str> = MISSING_INPUT.iter().map(|(c, _)| *c).collect();
    for leaf in leaf_subcommands(dir.path()) {
        assert!(listed.contains(&leaf.as_str()), "`zonekit {leaf}` is not in MISSING_INPUT: say how it takes its input");
    }
}

#[test]
fn a_missing_input_is_a_bad_request_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    for (command, args) in MISSING_INPUT {
        let Some(args) = args else { continue };
        let stderr = refused(args, dir.path(), 2);
        // Our own refusal, after the flags parsed: not clap's (which would mean the table's
        // arguments are wrong, and the path was never looked at).
        assert!(stderr.starts_with("zonekit: error:") && stderr.contains("nope"), "`zonekit {command}`: {stderr}");
    }
}

#[test]
fn every_subcommand_is_in_the_failed_run_table() {
    let dir = tempfile::tempdir().unwrap();
    let listed: Vec<&str> = FAILED_RUN.iter().map(|(c, _)| *c).collect();
    for (command, failing) in FAILED_RUN {
        if let Failing::Never(why) = failing {
            assert!(why.len() > 10, "`zonekit {command}`: say why no run of it can fail");
        }
    }
    for leaf in leaf_subcommands(dir.path()) {
        assert!(listed.contains(&leaf.as_str()), "`zonekit {leaf}` is not in FAILED_RUN: give a run of it that fails, or say why none can");
    }
}

/// `zonekit args` in `cwd` on a full disk: under a file-size limit of `blocks` (the shell's
/// units), with SIGXFSZ ignored so a write past it fails as ENOSPC would, with an error.
fn on_a_full_disk(blocks: u32, args: &[&str], cwd: &Path) -> std::process::Output {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_zonekit"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

#[test]
fn a_failed_run_exits_1_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A trace whose line 3001 is malformed: past the head its format is told from, so the run
    // has started when it meets it.
    ok(&["trace", "gen", "zipf:blocks=1000,writes=5000", "--out", "good.csv"], d);
    let good = std::fs::read_to_string(d.join("good.csv")).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines.insert(3000, "0,W,notanumber,4096,300000");
    std::fs::write(d.join("bad.csv"), lines.join("\n") + "\n").unwrap();
    // Not a device image; a device with nothing on it; one with a file system too small for
    // big.bin.
    std::fs::write(d.join("bad.zk"), vec![b'x'; 64 << 10]).unwrap();
    ok(&["device", "create", "--preset", "tiny", "--zones", "8", "blank.zk"], d);
    ok(&["device", "create", "--preset", "tiny", "--zones", "8", "fs.zk"], d);
    ok(&["fs", "mkfs", "fs.zk"], d);
    std::fs::write(d.join("big.bin"), vec![0u8; 40 << 20]).unwrap();
    // The drive's measurements with a malformed line; a shard, a results directory and
    // claims that are not what they should be; a directory to write a page of.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../zonekit-device/data/zn540");
    std::fs::create_dir_all(d.join("fit-data/zn540")).unwrap();
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, d.join("fit-data/zn540").join(path.file_name().unwrap())).unwrap();
    }
    let io = d.join("fit-data/zn540/io.csv");
    std::fs::write(&io, std::fs::read_to_string(&io).unwrap() + "garbage,x,y\n").unwrap();
    for (dir, file, text) in [("bad-shard", "shard.json", "{"), ("bad-results", "results.csv", "x\n"), ("bad-claims", "claims.csv", "id\n")] {
        std::fs::create_dir_all(d.join(dir)).unwrap();
        std::fs::write(d.join(dir).join(file), text).unwrap();
    }
    ok(&["analyze", "good.csv", "--out", "an"], d);
    for (command, failing) in FAILED_RUN {
        let out = match failing {
            Failing::Run(args) => common::zonekit(args, d),
            // 512 bytes: the claim of an output directory fits; results do not.
            Failing::DiskFull(args) => on_a_full_disk(1, args, d),
            Failing::Never(_) => continue,
        };
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "`zonekit {command}` should fail with status 1: {stderr}");
        assert!(stderr.starts_with("zonekit") && !stderr.contains("panicked"), "`zonekit {command}`: {stderr}");
    }
}

/// Every command that only reads leaves its inputs byte for byte as it found them: device
/// images with a file system, a tree and a cache on them, and a trace.
#[test]
fn read_only_commands_change_no_input() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("h.txt"), "hello\n").unwrap();
    ok(&["device", "create", "--preset", "tiny", "f.zk"], d);
    ok(&["fs", "mkfs", "f.zk"], d);
    ok(&["fs", "put", "f.zk", "h.txt"], d);
    ok(&["device", "create", "--preset", "tiny", "--conventional", "8", "t.zk"], d);
    ok(&["tree", "create", "t.zk"], d);
    ok(&["tree", "load", "--count", "500", "t.zk"], d);
    ok(&["device", "create", "--preset", "tiny", "--zones", "8", "c.zk"], d);
    ok(&["cache", "create", "--disk", "d.img", "c.zk"], d);
    ok(&["cache", "load", "--disk", "d.img", "--count", "9000", "c.zk"], d);
    ok(&["trace", "gen", "zipf:blocks=1000,writes=5000", "--out", "w.csv"], d);
    let inputs = ["f.zk", "t.zk", "c.zk", "d.img", "w.csv"];
    let snapshot = || inputs.iter().map(|f| std::fs::read(d.join(f)).unwrap()).collect::<Vec<_>>();
    let before = snapshot();
    let read_only: &[&[&str]] = &[
        &["device", "info", "f.zk"],
        &["device", "report", "f.zk"],
        &["fs", "ls", "f.zk"],
        &["fs", "df", "f.zk"],
        &["fs", "fsck", "f.zk"],
        &["fs", "dump", "f.zk"],
        &["fs", "cat", "f.zk", "h.txt"],
        &["tree", "check", "t.zk"],
        &["tree", "get", "t.zk", "5"],
        &["cache", "check", "--disk", "d.img", "c.zk"],
        &["cache", "check", "--disk", "d.img", "--disk-only", "c.zk"],
        &["trace", "info", "w.csv"],
        &["analyze", "w.csv", "--out", "an"],
    ];
    for args in read_only {
        ok(args, d);
        let after = snapshot();
        for (i, f) in inputs.iter().enumerate() {
            assert!(after[i] == before[i], "`zonekit {}` changed {f}", args.join(" "));
        }
    }
}

/// An output directory holds one run's results: another command's directory is refused, the
/// same command under other settings starts clean (unless it resumes row by row), and a
/// directory of results no run claimed is refused.
#[test]
fn an_output_directory_never_mixes_two_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let replay = |placement: &str| ok(&["replay", "--workload", "zipf:blocks=2000,writes=20000", "--preset", "tiny", "--placement", placement, "--out", "o"], d);
    replay("sepbit");
    // The claim records what the run wrote.
    let claim = std::fs::read_to_string(d.join("o/.zonekit-run")).unwrap();
    assert!(claim.contains("\nwrote\treport.json\n") && claim.contains("\nwrote\treport.html\n"), "{claim}");
    // A file only the first run wrote (its record says so): kept when the same command runs
    // again, gone when the settings change; a file no run wrote (a seed's claims) stays.
    std::fs::write(d.join("o/first-run-only.svg"), "<svg/>").unwrap();
    std::fs::write(d.join("o/.zonekit-run"), claim + "wrote\tfirst-run-only.svg\n").unwrap();
    std::fs::write(d.join("o/claims.csv"), "id\n").unwrap();
    std::fs::write(d.join("o/notes.md"), "by hand\n").unwrap();
    replay("sepbit");
    assert!(d.join("o/first-run-only.svg").exists(), "the same run again keeps its directory");
    let out = replay("warcip");
    assert!(out.contains("starting clean") && !d.join("o/first-run-only.svg").exists(), "{out}");
    assert!(d.join("o/report.json").exists());
    assert!(d.join("o/claims.csv").exists() && d.join("o/notes.md").exists(), "files no run wrote are kept");
    // A committed directory's claim is its first line only, as old as the checkout; a rerun of
    // its command keeps that claim, and a hand-written file as new as the checkout is still
    // not the run's (it was recorded as written, and a later clean start removed it).
    let first_line = std::fs::read_to_string(d.join("o/.zonekit-run")).unwrap().lines().next().unwrap().to_string();
    std::fs::write(d.join("o/.zonekit-run"), format!("{first_line}\n")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(d.join("o/claims.csv"), "id\n").unwrap();
    replay("warcip");
    let claim = std::fs::read_to_string(d.join("o/.zonekit-run")).unwrap();
    assert!(claim.contains("\nwrote\treport.json\n") && !claim.contains("claims.csv"), "{claim}");
    let e = refused(&["analyze", "--workload", "zipf:blocks=2000,writes=20000", "--out", "o"], d, 2);
    assert!(e.contains("--out o") && e.contains("zonekit replay"), "{e}");
    std::fs::create_dir(d.join("old")).unwrap();
    std::fs::write(d.join("old/results.csv"), "a,b\n").unwrap();
    let e = refused(&["sweep", "--workloads", "zipf:blocks=2000,writes=20000", "--out", "old"], d, 2);
    assert!(e.contains("results.csv"), "{e}");
    // A sweep resumes in place under other settings (its rows carry their settings).
    let sweep = |victims: &str| ok(&["sweep", "--workloads", "zipf:blocks=2000,writes=20000", "--preset", "tiny", "--placements", "sepbit", "--victims", victims, "--out", "s"], d);
    sweep("greedy");
    let out = sweep("greedy,cbe");
    assert!(out.contains("1 runs to do (1 already done)"), "{out}");
}

/// The one-line summary of `zonekit experiment`, in `zonekit --help` and atop `zonekit
/// experiment --help`, names every experiment the command takes.
#[test]
fn the_experiment_summary_names_every_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let help = ok(&["experiment", "--help"], dir.path());
    // The possible values, `- NAME: description`, are the experiments.
    let names: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Possible values:"))
        .skip(1)
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .filter_map(|l| l.split(':').next())
        .collect();
    assert!(names.len() >= 9 && names.contains(&"device-fidelity"), "{names:?}");
    let summary = help.split("\n\n").next().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    let top = ok(&["--help"], dir.path());
    let listed =
        top.lines().skip_while(|l| !l.starts_with("  experiment ")).enumerate().take_while(|(i, l)| *i == 0 || l.starts_with("   ")).map(|(_, l)| l).collect::<Vec<_>>().join(" ");
    let listed = listed.split_whitespace().collect::<Vec<_>>().join(" ");
    for name in names {
        // Whole words: `table-4.3` inside a longer name would not count.
        let named = |text: &str| text.split(|c: char| c.is_whitespace() || ",()".contains(c)).any(|w| w == name);
        assert!(named(&summary), "`zonekit experiment --help` does not name {name}: {summary}");
        assert!(named(&listed), "`zonekit --help` does not name {name}: {listed}");
    }
}

/// A script's default output is not the write-up's tracked results: like the CLI it writes
/// under zonekit-out/ (or target/) unless told where, and the command in docs/results that
/// regenerates a committed file names it with --out.
#[test]
fn no_script_writes_into_docs_results_by_default() {
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts");
    for entry in std::fs::read_dir(&scripts).unwrap() {
        let path = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_start();
            // The output directory's assignment, `out=...` with its default.
            if line.starts_with("out=") && line.contains("docs/results") {
                panic!("{}:{}: the default output is tracked: {line}", path.display(), i + 1);
            }
        }
    }
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    for (page, command) in [
        ("seed-002.md", "scripts/pm-gcc-variants --out docs/results/seed-002/pm-gcc"),
        ("seed-004.md", "scripts/gc-waf-sensitivity --out docs/results/seed-004/gc-waf-sensitivity"),
    ] {
        assert!(std::fs::read_to_string(docs.join(page)).unwrap().contains(command), "{page} regenerates its files with `{command}`");
    }
}

/// What a person reads fits a 100-column terminal: help, tables and prose of the everyday
/// commands (paths kept short, as in a working directory).
#[test]
fn terminal_output_fits_100_columns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&["trace", "gen", "zipf:blocks=20K,writes=100K", "--out", "t.csv"], d);
    let commands: &[&[&str]] = &[
        &["--help"],
        &["replay", "--help"],
        &["experiment", "--help"],
        &["cache", "run", "--help"],
        &["replay", "t.csv", "--preset", "tiny", "--out", "r"],
        &["replay", "t.csv", "--preset", "tiny", "--interface", "fdp:4", "--zone-mib", "1", "--out", "r2"],
        &["sweep", "--workloads", "zipf:blocks=20K,writes=100K", "--preset", "tiny", "--placements", "sepbit,bhbdp", "--victims", "greedy", "--out", "s"],
        &["analyze", "t.csv", "--out", "a"],
        &["cache", "run", "--records", "20000", "--cache-mib", "32", "--zone-mib", "1"],
        &["device", "presets"],
        &["policies"],
        &["tree", "run", "--records", "5K"],
        &["ocssd", "run", "t.csv"],
        &["ssd", "presets"],
        &["trace", "info", "t.csv"],
        &["demo", "--scale", "0.005"],
        // The experiments' summaries, at their smallest.
        &["tree", "experiment", "--scale", "0.001", "--out", "te"],
        &["cache", "experiment", "--scale", "0.0078125", "--passes", "0.5", "--out", "ce"],
        &["cache", "experiment", "--interfaces", "--scale", "0.0078125", "--passes", "0.5", "--out", "ci"],
        &["ocssd", "experiment", "--scale", "0.01", "--out", "oe"],
        &["ocssd", "workload", "--out", "ow"],
        &["experiment", "interfaces", "--quick", "--out", "ei"],
        &["experiment", "table-4.3", "--scale", "0.002", "--nodes", "1", "--out", "t43"],
        &["device", "demo", "--out", "dd"],
        &["device", "bench", "--rw", "randread", "--qd", "4", "--ops", "500", "--bg-rw", "write", "--bg-bs", "64k"],
        &["device", "fit"],
        // The README's FDP example: every log page, 64 events.
        &["ssd", "run", "--preset", "fdp-pm9d3", "--handles", "2", "--handle-type", "persistently-isolated"],
        // Into their default directories, whose names are part of what they print.
        &["experiment", "fdp-anchor", "--quick"],
        &["experiment", "fdp-theory", "--quick", "--logical-mib", "64", "--ru-kib", "64", "--soc-shares", "0.16", "--utilizations", "1"],
        // bhbdp-sensitivity runs 72 replays even with --quick: its intro is checked by a unit
        // test (experiment_cmd.rs), its table is the sweep's.
    ];
    let mut commands = commands.to_vec();
    // Every command's help.
    let leaves = leaf_subcommands(d);
    let helps: Vec<Vec<&str>> = leaves.iter().map(|leaf| leaf.split(' ').chain(["--help"]).collect()).collect();
    commands.extend(helps.iter().map(Vec::as_slice));
    for args in commands {
        let out = common::zonekit(args, d);
        assert!(out.status.success(), "zonekit {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        for stream in [&out.stdout, &out.stderr] {
            for line in String::from_utf8_lossy(stream).lines() {
                assert!(line.chars().count() <= 100, "`zonekit {}` prints a line of {} columns:\n{line}", args.join(" "), line.chars().count());
            }
        }
    }
    // Every command that writes a directory finishes it: how it was run, and its page.
    for dir in ["r", "s", "a", "te", "ce", "ci", "oe", "ow", "ei", "t43", "dd"] {
        for file in ["settings.tsv", "report.html"] {
            assert!(d.join(dir).join(file).exists(), "{dir}/{file}: the run's directory is not finished");
        }
    }
    // An experiment's default directory is named as the experiment is typed.
    assert!(d.join("zonekit-out/experiment-fdp-anchor/anchor.csv").exists() && d.join("zonekit-out/experiment-fdp-theory/report.html").exists());
    let anchor_rows = std::fs::read_to_string(d.join("zonekit-out/experiment-fdp-anchor/anchor.csv")).unwrap().lines().count();
    let anchor_commands = std::fs::read_to_string(d.join("zonekit-out/experiment-fdp-anchor/commands.tsv")).unwrap();
    assert_eq!(anchor_commands.lines().count(), anchor_rows, "a command per row");
    assert!(anchor_commands.lines().skip(1).all(|l| l.ends_with("\tzonekit experiment fdp-anchor --quick")), "{anchor_commands}");
    let help = ok(&["experiment", "--help"], d);
    let out_help = help.lines().skip_while(|l| !l.trim_start().starts_with("--out")).nth(1).unwrap_or("");
    assert!(out_help.contains("Directory for the results"), "`experiment --out` says what it is: {help}");
    // The grouped figures: one bar per node (placement) and placement (interface), each series
    // named once in a legend.
    let svg = |path: &str| std::fs::read_to_string(d.join(path)).unwrap();
    let fig = svg("t43/waf-by-node.svg");
    assert_eq!(fig.matches("class=\"legend-entry\"").count(), 7, "Table 4.3's seven placements");
    assert_eq!(fig.matches("<rect x=").count(), 7, "one node");
    assert!(fig.contains("Mirrors seed 000's Table 4.3") && fig.contains("0.002"));
    assert_eq!(svg("t43/waf_vs_thesis.svg").matches("class=\"legend-entry\"").count(), 2);
    let waf = svg("ei/waf.svg");
    assert!(waf.matches("class=\"legend-entry\"").count() >= 3 && waf.contains(">placement</text>"));
    // The interface experiment's rows each have their own command: fdp:4's reruns alone to
    // its row's WAF.
    let rows = std::fs::read_to_string(d.join("ei/interfaces.csv")).unwrap();
    let commands = std::fs::read_to_string(d.join("ei/commands.tsv")).unwrap();
    assert_eq!(commands.lines().count(), rows.lines().count(), "{commands}");
    let row: Vec<&str> = rows.lines().find(|l| l.contains(",sepbit,fdp:4,")).unwrap().split(',').collect();
    let command = commands.lines().find(|l| l.contains("\tsepbit\tfdp:4\t")).unwrap().rsplit('\t').next().unwrap();
    let run =
        std::process::Command::new("sh").arg("-c").arg(format!("{} --out rerun", command.replacen("zonekit", env!("CARGO_BIN_EXE_zonekit"), 1))).current_dir(d).output().unwrap();
    assert!(run.status.success(), "{command}: {}", String::from_utf8_lossy(&run.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(d.join("rerun/report.json")).unwrap()).unwrap();
    assert_eq!(format!("{:.4}", report["waf"].as_f64().unwrap()), format!("{:.4}", row[5].parse::<f64>().unwrap()), "{command}");
}

//! Outputs appear whole or not at all, and a long command stopped at a random moment and run
//! again writes exactly what an uninterrupted run writes (issue 44, items 2 and 3).
//!
//! Each command runs once to completion in one directory; then, in a fresh one, it is started
//! and stopped after a seeded random delay (SIGINT, SIGTERM and SIGKILL in turn) one or more
//! times, run again to completion, and every file of the two directories is compared byte for
//! byte. `ZONEKIT_INTERRUPT_SEED=N` replays one seed; `ZONEKIT_INTERRUPT_ROUNDS=N` runs N seeds
//! in a row (`scripts/interrupt-soak` runs it for as long as it is given).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use zonekit_base::Rng;

use common::ok;

fn spawn(args: &[&str], cwd: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_zonekit")).args(args).current_dir(cwd).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("run zonekit")
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child, which has not been waited for, so its pid is still its.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// Every file under `dir` (recursively) by its path relative to `dir`, with its bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// The CSV files with `columns` blanked in every row.
fn without_timing(mut files: BTreeMap<PathBuf, Vec<u8>>, columns: &[&str]) -> BTreeMap<PathBuf, Vec<u8>> {
    if columns.is_empty() {
        return files;
    }
    for (path, bytes) in files.iter_mut() {
        if path.extension().is_none_or(|e| e != "csv") {
            continue;
        }
        let text = String::from_utf8_lossy(bytes).into_owned();
        let mut lines = text.lines();
        let Some(header) = lines.next() else { continue };
        let blank: Vec<usize> = header.split(',').enumerate().filter(|(_, name)| columns.contains(name)).map(|(i, _)| i).collect();
        let mut out = format!("{header}\n");
        for line in lines {
            let cells: Vec<&str> = line.split(',').enumerate().map(|(i, c)| if blank.contains(&i) { "" } else { c }).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        *bytes = out.into_bytes();
    }
    files
}

#[test]
fn a_killed_trace_gen_leaves_nothing_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for name in ["big.csv", "big.zkt"] {
        // Far more than the test waits for: it is killed while it writes.
        let mut child = spawn(&["trace", "gen", "zipf:blocks=1M,alpha=0.9,writes=500M", "--out", name], d);
        let started = Instant::now();
        // Killed once it has written a few MiB, wherever they are.
        while files(d).values().map(Vec::len).sum::<usize>() < 4 << 20 {
            assert!(started.elapsed() < Duration::from_secs(30), "{name}: nothing written in 30 s");
            assert!(child.try_wait().unwrap().is_none(), "{name}: the generation ended before it was killed");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!d.join(name).exists(), "{name}: a killed generation left a file under the output's name, which a replay would read as a trace");
        let visible: Vec<PathBuf> = files(d).into_keys().filter(|p| !p.to_string_lossy().starts_with('.')).collect();
        assert!(visible.is_empty(), "{name}: partial files visible: {visible:?}");
        // A rerun writes the whole trace and removes what the killed writer left.
        ok(&["trace", "gen", "zipf:blocks=1K,alpha=0.9,writes=10K", "--out", name], d);
        assert_eq!(files(d).into_keys().collect::<Vec<_>>(), vec![PathBuf::from(name)], "{name}: only the trace is left");
        std::fs::remove_file(d.join(name)).unwrap();
    }
}

/// A long command and where it writes.
struct Long {
    name: &'static str,
    args: &'static [&'static str],
    /// Run first, once, in both directories (inputs).
    setup: &'static [&'static [&'static str]],
    /// Files that record how long the runs took, not what they computed: not compared.
    timing: &'static [&'static str],
    /// Columns of its CSV files that are measured times (and the row check that covers them):
    /// blanked before the files are compared.
    timing_columns: &'static [&'static str],
}

/// The long commands at small settings (each a few seconds). Not here: `experiment
/// interfaces` (its smallest run, `--quick`, takes over a minute on 2 cores; it resumes from
/// `OUT/runs/` as fdp-theory does), kv-bench (needs the RocksDB plugin; it resumes from its
/// `results.csv` rows as the sweep does), and the commands that finish in a second or two,
/// which restart from the beginning (their outputs appear whole or not at all).
const LONG: &[Long] = &[
    Long {
        name: "sweep",
        args: &["sweep", "--workloads", "uniform:blocks=20K,writes=500K", "--placements", "sepgc,bhbdp,nosep", "--victims", "greedy,cbe", "--preset", "tiny", "--out", "out"],
        setup: &[],
        // Each run's wall-clock time, in the order runs finished, and the page that shows it.
        timing: &["speed.csv", "report.html"],
        timing_columns: &[],
    },
    Long {
        name: "cache experiment",
        args: &["cache", "experiment", "--scale", "0.0078125", "--passes", "0.5", "--threads", "2", "--out", "out"],
        setup: &[],
        timing: &[],
        timing_columns: &[],
    },
    Long { name: "ocssd experiment", args: &["ocssd", "experiment", "--scale", "0.01", "--threads", "2", "--out", "out"], setup: &[], timing: &[], timing_columns: &[] },
    Long {
        name: "tree experiment",
        args: &["tree", "experiment", "--scale", "0.001", "--threads", "2", "--out", "out"],
        setup: &[],
        // The trees' own CPU and wall time per run, by design beside the device's model time,
        // and the tables and page that show them.
        timing: &["summary.md", "report.html"],
        timing_columns: &["run_wall_s", "run_cpu_s", "run_ops_per_s", "check"],
    },
    Long {
        name: "experiment fdp-theory",
        args: &["experiment", "fdp-theory", "--quick", "--soc-shares", "0.16", "--utilizations", "1.0", "--logical-mib", "64", "--ru-kib", "64", "--out", "out"],
        setup: &[],
        timing: &[],
        timing_columns: &[],
    },
    Long {
        name: "trace convert",
        args: &["trace", "convert", "in.csv", "--next-write", "--out", "out/t.zkt"],
        setup: &[&["trace", "gen", "zipf:blocks=256K,alpha=0.9,writes=4M", "--out", "in.csv"]],
        timing: &[],
        timing_columns: &[],
    },
];

fn run_all(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut kill_index = 0usize;
    for long in LONG {
        let whole = tempfile::tempdir().unwrap();
        let interrupted = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(whole.path().join("out")).unwrap();
        std::fs::create_dir_all(interrupted.path().join("out")).unwrap();
        for setup in long.setup {
            ok(setup, whole.path());
            std::fs::copy(whole.path().join(setup.last().unwrap()), interrupted.path().join(setup.last().unwrap())).unwrap();
        }
        let started = Instant::now();
        ok(long.args, whole.path());
        let took = started.elapsed();
        let kills = 1 + rng.next_u64() % 2;
        let mut how = Vec::new();
        for _ in 0..kills {
            let (sig, sig_name) = [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM"), (libc::SIGKILL, "SIGKILL")][kill_index % 3];
            kill_index += 1;
            let delay = Duration::from_micros(rng.next_u64() % (took.as_micros() as u64).max(1));
            let mut child = spawn(long.args, interrupted.path());
            std::thread::sleep(delay);
            signal(&child, sig);
            let status = child.wait().unwrap();
            how.push(format!("{sig_name} after {delay:?} ({status})"));
        }
        ok(long.args, interrupted.path());
        eprintln!("{}: {took:?} uninterrupted; {}", long.name, how.join(", "));
        let (a, b) = (without_timing(files(whole.path()), long.timing_columns), without_timing(files(interrupted.path()), long.timing_columns));
        let differ: Vec<String> = a
            .keys()
            .chain(b.keys())
            .filter(|p| !long.timing.iter().any(|t| p.ends_with(t)))
            .filter(|p| a.get(*p) != b.get(*p))
            .map(|p| format!("{} ({})", p.display(), if a.contains_key(p) && b.contains_key(p) { "contents" } else { "only in one" }))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !differ.is_empty() {
            // Kept for a look: the two directories, named.
            eprintln!("uninterrupted: {}\ninterrupted: {}", whole.keep().display(), interrupted.keep().display());
        }
        assert!(
            differ.is_empty(),
            "zonekit {} interrupted ({}) and rerun differs from an uninterrupted run in {differ:?}; reproduce with ZONEKIT_INTERRUPT_SEED={seed}",
            long.name,
            how.join(", ")
        );
    }
}

#[test]
fn long_commands_interrupted_and_rerun_write_what_an_uninterrupted_run_writes() {
    let seed = std::env::var("ZONEKIT_INTERRUPT_SEED")
        .ok()
        .map(|s| s.parse::<u64>().expect("ZONEKIT_INTERRUPT_SEED is a number"))
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64);
    let rounds: u64 = std::env::var("ZONEKIT_INTERRUPT_ROUNDS").ok().map_or(1, |s| s.parse().expect("ZONEKIT_INTERRUPT_ROUNDS is a number"));
    for round in 0..rounds {
        let seed = seed.wrapping_add(round);
        eprintln!("interrupt round {round}: ZONEKIT_INTERRUPT_SEED={seed}");
        run_all(seed);
    }
}

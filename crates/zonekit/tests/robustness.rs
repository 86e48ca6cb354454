//! The CLI robustness suite: a table of bad inputs, hand-made and generated (truncations, bit
//! flips, overflowing numbers, wrong formats, directories, missing files), run against every
//! subcommand. Each must exit non-zero with a message that names the input, and never panic.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

#[allow(dead_code)] // the shared helpers this suite does not use
mod common;

/// Seed of the generated rows; a failure prints it (`ZK_SEED=<n>` reruns that case).
fn seed() -> u64 {
    std::env::var("ZK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED)
}

/// xorshift64*: enough to pick bytes to flip; the project's own RNG is not a dependency here.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Runs zonekit and checks the refusal: non-zero exit, no panic, and `names` in the message.
fn refused(d: &Path, args: &[&str], names: &str, seed: u64) -> Result<(), String> {
    let out = zonekit(d, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        return Err(format!("zonekit {args:?} succeeded (ZK_SEED={seed})"));
    }
    if stderr.contains("panicked") || out.status.code().is_none() {
        return Err(format!("zonekit {args:?} panicked or was killed (ZK_SEED={seed}): {stderr}"));
    }
    if !stderr.contains(names) {
        return Err(format!("zonekit {args:?}: the message does not name {names:?} (ZK_SEED={seed}): {stderr}"));
    }
    Ok(())
}

fn run(d: &Path, args: &[&str]) {
    let out = zonekit(d, args);
    assert!(out.status.success(), "zonekit {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_subcommand_refuses_bad_input_clearly() {
    let seed = seed();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Material: a good image with a file system, a good binary trace, a good CSV trace.
    run(d, &["device", "create", "good.zk", "--zones", "16", "--zone-size-mib", "2"]);
    run(d, &["fs", "mkfs", "good.zk"]);
    std::fs::write(d.join("data.bin"), vec![7u8; 50_000]).unwrap();
    run(d, &["fs", "put", "good.zk", "data.bin", "--name", "f"]);
    run(d, &["trace", "gen", "zipf:blocks=2K,writes=20K", "-o", "good.zkt"]);
    let csv: String = (0..200).map(|i| format!("{},W,{},4096,{}\n", i % 3, (i * 7919 % 500) * 4096, i * 1000)).collect();
    std::fs::write(d.join("good.csv"), &csv).unwrap();
    std::fs::create_dir(d.join("adir")).unwrap();
    std::fs::write(d.join("empty"), b"").unwrap();
    std::fs::write(d.join("text.txt"), b"hello, this is not a trace\nnor an image\n").unwrap();
    std::fs::write(d.join("huge.csv"), b"0,W,0,18446744073709551615,1\n0,W,0,4096,2\n").unwrap();

    // Generated damage: truncations and bit flips of the binary trace and of the image.
    let mut state = seed | 1;
    let zkt = std::fs::read(d.join("good.zkt")).unwrap();
    let image = std::fs::read(d.join("good.zk")).unwrap();
    std::fs::write(d.join("cut.zkt"), &zkt[..(next(&mut state) as usize % 100).max(1)]).unwrap();
    std::fs::write(d.join("cut.zk"), &image[..(next(&mut state) as usize % 4000).max(1)]).unwrap();
    let mut flipped = zkt.clone();
    for _ in 0..4 {
        // Only in the header (the first 128 bytes): record flips may still be valid records.
        let at = next(&mut state) as usize % 24;
        flipped[at] ^= 1 << (next(&mut state) % 8);
    }
    std::fs::write(d.join("flip.zkt"), &flipped).unwrap();
    let mut bad_csv = csv.clone().into_bytes();
    bad_csv.truncate(bad_csv.len() / 2 + (next(&mut state) as usize % 40));
    bad_csv.extend_from_slice(b"\n1,X,zz,4096,5\n");
    std::fs::write(d.join("bad.csv"), &bad_csv).unwrap();

    let table: &[(&[&str], &str)] = &[
        // device
        (&["device", "info", "missing.zk"], "missing.zk"),
        // serve ublk: what the kernel would refuse, and bad flags, are named before any kernel
        // is asked (so they are refused the same on a machine without ublk).
        (&["serve", "ublk", "--zone-size-mib", "3", "--zones", "4"], "power-of-two zone size"),
        (&["serve", "ublk", "good.zk", "--zones", "4"], "has its own geometry"),
        (&["serve", "ublk", "--offline-zone", "999"], "--offline-zone 999"),
        (&["serve", "ublk", "--read-only-zone", "99999"], "--read-only-zone 99999"),
        (&["serve", "ublk", "missing.zk"], "missing.zk"),
        (&["serve", "ublk", "cut.zk"], "cut.zk"),
        (&["serve", "ublk", "--fail-sticky"], "--fail-nth"),
        (&["serve", "ublk", "--queue-depth", "0"], "--queue-depth"),
        // serve nbd: refused before it listens.
        (&["serve", "nbd", "good.zk"], "no volume journal"),
        (&["serve", "nbd", "--utilization", "1.5"], "utilization 1.5"),
        (&["serve", "nbd", "--placement", "zbopt"], "oracle"),
        (&["serve", "nbd", "--placement", "nope"], "nope"),
        (&["serve", "nbd", "--socket", "text.txt"], "not a socket"),
        (&["serve", "nbd", "missing.zk"], "missing.zk"),
        (&["serve", "nbd", "--trace-out", "nodir/served.zkt"], "nodir/served.zkt"),
        (&["device", "info", "adir"], "adir"),
        (&["device", "info", "text.txt"], "text.txt"),
        (&["device", "info", "cut.zk"], "cut.zk"),
        (&["device", "report", "empty"], "empty"),
        (&["device", "report", "good.zk", "--start-zone", "99"], "--start-zone 99"),
        (&["device", "reset", "good.zk", "--zone", "4294967295"], "4294967295"),
        (&["device", "create", "good.zk"], "good.zk"),
        (&["device", "create", "n.zk", "--zones", "99999999999"], "99999999999"),
        (&["device", "create", "n.zk", "--zone-size-mib", "18446744073709551615"], "18446744073709551615"),
        (&["device", "create", "n.zk", "--config", "text.txt"], "text.txt"),
        (&["device", "conformance", "good.zk"], "--yes-erase-everything"),
        // trace
        (&["trace", "info", "missing.csv"], "missing.csv"),
        (&["trace", "info", "adir"], "adir"),
        (&["trace", "info", "text.txt"], "text.txt"),
        (&["trace", "info", "empty"], "empty"),
        (&["trace", "info", "cut.zkt"], "cut.zkt"),
        (&["trace", "info", "flip.zkt"], "flip.zkt"),
        (&["trace", "info", "bad.csv"], "bad.csv"),
        (&["trace", "info", "good.csv", "--format", "nope"], "nope"),
        (&["trace", "info", "huge.csv", "--format", "alibaba"], "huge.csv: record 1"),
        (&["trace", "info", "good.csv", "--sample", "0/0"], "0/0"),
        (&["trace", "info", "good.csv", "--window", "9:1"], "9:1"),
        (&["trace", "convert", "bad.csv", "-o", "x.zkt"], "bad.csv"),
        (&["trace", "convert", "good.csv", "-o", "adir"], "adir"),
        (&["trace", "gen", "zipf:blocks=-1", "-o", "x.zkt"], "blocks=-1"),
        (&["trace", "gen", "zipf:blocks=1K,writes=1e40", "-o", "x.zkt"], "writes=1e40"),
        (&["trace", "gen", "warp:speed=9", "-o", "x.zkt"], "warp"),
        (&["analyze", "bad.csv", "--out", "an"], "bad.csv"),
        (&["analyze", "cut.zkt", "--out", "an"], "cut.zkt"),
        // replay, sweep, experiment
        (&["replay", "missing.zkt"], "missing.zkt"),
        (&["replay", "bad.csv", "--preset", "tiny"], "bad.csv"),
        (&["replay", "good.zkt", "--placement", "oracle"], "oracle"),
        (&["replay", "good.zkt", "--victim", "d-choices:0"], "d-choices"),
        (&["replay", "good.zkt", "--param", "r1=abc"], "r1=abc"),
        (&["replay", "good.zkt", "--gc-threshold", "1.5"], "1.5"),
        (&["replay", "good.zkt", "--device", "text.txt"], "text.txt"),
        (&["sweep", "--traces", "missing.zkt"], "missing.zkt"),
        (&["sweep", "--workloads", "zipf:blocks=1K", "--placements", "nope"], "nope"),
        (&["sweep", "--workloads", "zipf:blocks=1K", "--grid", "r1"], "r1"),
        (&["sweep", "--workloads", "zipf:blocks=1K", "--shard", "1/0"], "1/0"),
        (&["sweep", "merge", "--out", "m", "adir"], "adir"),
        (&["experiment", "table-4.3", "--traces", "missing.csv", "--quick"], "missing.csv"),
        (&["experiment", "table-4.3", "--nodes", "11", "--quick"], "node 11"),
        (&["experiment", "table-4.3", "--scale", "1.5", "--quick"], "scale 1.5"),
        (&["experiment", "table-3.2", "--nodes", "1"], "--nodes"),
        (&["experiment", "granularity", "--scale", "0.5"], "--scale"),
        (&["experiment", "granularity", "--traces", "good.zkt"], "--traces"),
        // fs
        (&["fs", "ls", "missing.zk"], "missing.zk"),
        (&["fs", "ls", "cut.zk"], "cut.zk"),
        (&["fs", "cat", "good.zk", "nothing"], "nothing"),
        (&["fs", "put", "good.zk", "missing.bin"], "missing.bin"),
        (&["fs", "put", "good.zk", "adir"], "adir"),
        // kv-bench
        (&["kv-bench", "--keys", "-3"], "-3"),
    ];
    let mut failures = Vec::new();
    for (args, names) in table {
        if let Err(e) = refused(d, args, names, seed) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{} of {} bad inputs were not refused clearly:\n{}", failures.len(), table.len(), failures.join("\n"));
    eprintln!("robustness: {} bad inputs refused clearly (ZK_SEED={seed})", table.len());
}

/// kv-bench exits non-zero when db_bench fails for another reason than space (here a
/// "db_bench" that fails at once), instead of reporting a key count of zero as a result.
#[test]
fn kv_bench_fails_when_its_runs_fail_for_another_reason_than_space() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("plugin.so"), b"").unwrap();
    let out = zonekit(d, &["kv-bench", "--plugin", "plugin.so", "--db-bench", "/bin/false", "--configs", "both", "--keys", "0.001", "--no-reference", "--out", "kv"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1 runs failed for another reason than space") && stderr.contains("both at 0.001 M keys"), "{stderr}");
    assert!(d.join("kv/results.csv").exists(), "the rows are still written");
}

fn zonekit(d: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_zonekit")).args(args).current_dir(d).output().expect("run zonekit")
}

fn cat(d: &Path, image: &str, name: &str) -> Option<Vec<u8>> {
    let out = zonekit(d, &["fs", "cat", image, name]);
    out.status.success().then_some(out.stdout)
}

/// Kills `args` with SIGKILL after `delay` (or lets it finish first).
fn kill_after(d: &Path, args: &[&str], delay: Duration) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zonekit")).args(args).current_dir(d).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(delay);
    let _ = child.kill();
    child.wait().unwrap();
}

/// How long `args` takes to run whole, in µs (at least 100): the span kills are spread over.
fn timed_us(d: &Path, args: &[&str]) -> (u64, std::process::Output) {
    let started = std::time::Instant::now();
    let out = zonekit(d, args);
    (started.elapsed().as_micros().max(100) as u64, out)
}

fn assert_fsck_clean(d: &Path, image: &str, ctx: &str) {
    let fsck = zonekit(d, &["fs", "fsck", image]);
    assert!(fsck.status.success(), "{ctx}: fsck: {}{}", String::from_utf8_lossy(&fsck.stdout), String::from_utf8_lossy(&fsck.stderr));
}

/// SIGKILL during `fs rm` and `fs put` on a small device: afterwards fsck is clean, every
/// other file reads back whole, and the operation is all or nothing. (GC under a kill is
/// `killed_gc_is_all_or_nothing`.)
#[test]
fn killed_rm_and_put_are_all_or_nothing() {
    let seed = seed();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run(d, &["device", "create", "g.zk", "--zones", "16", "--zone-size-mib", "1"]);
    run(d, &["fs", "mkfs", "g.zk"]);
    let file = |i: u64| -> Vec<u8> { (0..3u64 << 20).map(|b| (b.wrapping_mul(0x9E37_79B9) >> 7 ^ i) as u8).collect() };
    for i in 0..4 {
        std::fs::write(d.join(format!("src{i}")), file(i)).unwrap();
    }
    let mut state = seed | 1;
    let mut present: std::collections::BTreeMap<String, u64> = Default::default();
    let (mut whole, mut absent) = (0, 0);
    for round in 0..12u64 {
        let ctx = format!("ZK_SEED={seed}, round {round}");
        // Alternate: remove a file, or put one.
        let delay = Duration::from_millis(next(&mut state) % 120);
        let (name, src) = (format!("f{}", round % 5), round % 4);
        if let Some(&old) = present.get(&name) {
            kill_after(d, &["fs", "rm", "g.zk", &name], delay);
            match cat(d, "g.zk", &name) {
                Some(bytes) => {
                    assert!(bytes == file(old), "{ctx}: {name} changed by a killed rm");
                    whole += 1;
                }
                None => {
                    present.remove(&name);
                    absent += 1;
                }
            }
        } else {
            kill_after(d, &["fs", "put", "g.zk", &format!("src{src}"), "--name", &name], delay);
            match cat(d, "g.zk", &name) {
                Some(bytes) => {
                    assert!(bytes == file(src), "{ctx}: {name} is not the whole file after a killed put");
                    present.insert(name, src);
                    whole += 1;
                }
                None => absent += 1,
            }
        }
        assert_fsck_clean(d, "g.zk", &ctx);
        for (other, src) in &present {
            assert!(cat(d, "g.zk", other).as_deref() == Some(&file(*src)[..]), "{ctx}: {other} does not read back whole");
        }
    }
    let info = String::from_utf8_lossy(&zonekit(d, &["device", "info", "g.zk"]).stdout).into_owned();
    let resets = info.lines().find(|l| l.starts_with("zone resets")).unwrap_or("zone resets ?").to_string();
    eprintln!("killed rm/put rounds (ZK_SEED={seed}): {whole} left the operation done, {absent} left it undone; {resets}");
}

/// SIGKILL during `fs mkfs --force` over a file system: afterwards the device holds either the
/// old file system, whole, or the new empty one; never neither.
#[test]
fn killed_mkfs_leaves_the_old_or_the_new_file_system() {
    let seed = seed();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run(d, &["device", "create", "m.zk", "--zones", "64", "--zone-size-mib", "1"]);
    run(d, &["fs", "mkfs", "m.zk"]);
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8).collect();
    std::fs::write(d.join("src"), &data).unwrap();
    run(d, &["fs", "put", "m.zk", "src", "--name", "old"]);
    let image = std::fs::read(d.join("m.zk")).unwrap();
    // Timed on a restored copy, as every round runs on one (a rewritten image is no longer sparse).
    std::fs::write(d.join("m.zk"), &image).unwrap();
    let (mkfs_us, out) = timed_us(d, &["fs", "mkfs", "m.zk", "--force"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut state = seed | 1;
    let (mut old, mut new) = (0, 0);
    for round in 0..16 {
        std::fs::write(d.join("m.zk"), &image).unwrap();
        let delay_us = next(&mut state) % (mkfs_us + mkfs_us / 2);
        let ctx = format!("ZK_SEED={seed}, round {round}, kill after {delay_us} of {mkfs_us} µs");
        kill_after(d, &["fs", "mkfs", "m.zk", "--force"], Duration::from_micros(delay_us));
        let ls = zonekit(d, &["fs", "ls", "m.zk"]);
        assert!(ls.status.success(), "{ctx}: neither file system: {}", String::from_utf8_lossy(&ls.stderr));
        match cat(d, "m.zk", "old") {
            Some(bytes) => {
                assert!(bytes == data, "{ctx}: the old file system's file is damaged");
                old += 1;
            }
            None => new += 1,
        }
        assert_fsck_clean(d, "m.zk", &ctx);
    }
    eprintln!("killed mkfs (ZK_SEED={seed}): the old file system {old} times, the new one {new} times");
}

/// SIGKILL during a put that needs GC (the device is prepared so that the put must relocate
/// live data out of half-garbage zones): afterwards fsck is clean, every other file reads back
/// whole, and the put is all or nothing.
#[test]
fn killed_gc_is_all_or_nothing() {
    let seed = seed();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    run(d, &["device", "create", "g.zk", "--zones", "16", "--zone-size-mib", "1"]);
    run(d, &["fs", "mkfs", "g.zk"]);
    // 1.5 MiB files of one lifetime share zones; removing every other one leaves zones half
    // garbage, which only GC can turn into free space.
    let file = |i: u64, len: u64| -> Vec<u8> { (0..len).map(|b| (b.wrapping_mul(0x9E37_79B9) >> 9 ^ i) as u8).collect() };
    let mut kept = Vec::new();
    for i in 0..9 {
        std::fs::write(d.join("src"), file(i, 3 << 19)).unwrap();
        run(d, &["fs", "put", "g.zk", "src", "--name", &format!("f{i}")]);
    }
    for i in 0..9 {
        if i % 2 == 0 {
            run(d, &["fs", "rm", "g.zk", &format!("f{i}")]);
        } else {
            kept.push(i);
        }
    }
    // 6 MiB live and 2.5 MiB of garbage in shared zones on 14 MiB: a 6 MiB put needs GC.
    let big = file(99, 6 << 20);
    std::fs::write(d.join("big"), &big).unwrap();
    let image = std::fs::read(d.join("g.zk")).unwrap();
    // The put needs GC: prove it once, and time it.
    let (put_us, out) = timed_us(d, &["fs", "put", "g.zk", "big"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.contains("GC relocated"), "the prepared put must need GC: {said}{}", String::from_utf8_lossy(&out.stderr));
    let mut state = seed | 1;
    let (mut done, mut undone) = (0, 0);
    for round in 0..10 {
        std::fs::write(d.join("g.zk"), &image).unwrap();
        let delay_us = next(&mut state) % (put_us + put_us / 2);
        let ctx = format!("ZK_SEED={seed}, round {round}, kill after {delay_us} of {put_us} µs");
        kill_after(d, &["fs", "put", "g.zk", "big"], Duration::from_micros(delay_us));
        assert_fsck_clean(d, "g.zk", &ctx);
        for i in &kept {
            assert!(cat(d, "g.zk", &format!("f{i}")).as_deref() == Some(&file(*i, 3 << 19)[..]), "{ctx}: f{i} does not read back whole");
        }
        match cat(d, "g.zk", "big") {
            Some(bytes) => {
                assert!(bytes == big, "{ctx}: big is not the whole file");
                done += 1;
            }
            None => undone += 1,
        }
    }
    eprintln!("killed puts during GC (ZK_SEED={seed}): {done} done, {undone} undone");
}

/// Runs zonekit under a virtual-memory limit (KiB): what a bounded reader needs fits, a
/// reader that holds its input whole aborts.
fn zonekit_limited(d: &Path, limit_kib: u64, args: &[&str]) -> std::process::Output {
    common::limited(limit_kib, args, d).output().expect("run zonekit under sh")
}

/// The trace input every command shares (issue 31): bounded reads, malformed lines named,
/// lenient readings that report what they skipped, flags that do not apply refused, and
/// filters that leave nothing refused instead of an all-zero report.
#[test]
fn the_shared_trace_input_bounds_names_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let good: String = (0..300).map(|i| format!("1,W,{},4096,{}\n", (i * 7919 % 500) * 4096, i * 1000)).collect();
    std::fs::write(d.join("good.csv"), &good).unwrap();
    // Line 3 is not UTF-8, line 5 has a bad opcode.
    let mut bad = b"1,W,0,4096,1\n1,W,4096,4096,2\n1,W,\xff\xfe,4096,3\n1,W,8192,4096,4\n1,X,0,4096,5\n".to_vec();
    bad.extend_from_slice(good.as_bytes());
    std::fs::write(d.join("bad.csv"), &bad).unwrap();
    // 16 GiB of NULs without a line end (sparse), and a request of 256 GiB.
    std::fs::File::create(d.join("endless.csv")).unwrap().set_len(16 << 30).unwrap();
    std::fs::write(d.join("long.csv"), format!("1,W,0,4096,1\n1,W,0,{},2\n1,R,0,4096,3\n", 256u64 << 30)).unwrap();

    // Bounded: each would hold gigabytes whole (and abort under the limit) before.
    let limit_kib = 2 << 20;
    for (args, names) in [
        (&["trace", "info", "endless.csv", "--format", "alibaba"][..], "line 1: line \"\": a line of more than 1 MiB without a line end, from byte 0"),
        (&["analyze", "endless.csv", "--format", "alibaba", "--out", "an"][..], "from byte 0"),
    ] {
        let out = zonekit_limited(d, limit_kib, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(1) && stderr.contains(names), "{args:?}: {:?} {stderr}", out.status);
    }
    let out = zonekit_limited(d, limit_kib, &["trace", "info", "long.csv", "--format", "alibaba", "--volume", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains(&format!("block accesses   {} ", (256u64 << 18) + 2)), "{:?} {stdout}{}", out.status, String::from_utf8_lossy(&out.stderr));

    // A malformed line is named with its line (strictly), skipped and reported (leniently)
    // by every command that reads a trace.
    let out = zonekit(d, &["trace", "info", "bad.csv", "--format", "alibaba"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && stderr.contains("bad.csv:line 3: line") && stderr.contains("not UTF-8"), "{stderr}");
    for args in [
        &["replay", "bad.csv", "--out", "r"][..],
        &["cache", "sim", "bad.csv", "--cache-blocks", "64"][..],
        &["ocssd", "run", "bad.csv"][..],
        &["analyze", "bad.csv", "--out", "an"][..],
        &["trace", "convert", "bad.csv", "-o", "bad.zkt"][..],
        &["trace", "info", "bad.csv", "--volume", "1"][..],
    ] {
        let args = [args, &["--format", "alibaba", "--lenient"][..]].concat();
        let out = zonekit(d, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains("skipped          2 malformed records (1 bad line, 1 bad opcode)"), "{args:?} does not report what it skipped: {stderr}");
    }
    // Twice: a lenient replay is not served a cached stream that would hide the skips.
    let out = zonekit(d, &["replay", "bad.csv", "--format", "alibaba", "--lenient", "--out", "r"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("skipped          2"));

    // Filters that leave nothing, flags that would be ignored, keys given twice, sums that wrap.
    let table: &[(&[&str], &str)] = &[
        (&["replay", "good.csv", "--volume", "99", "--out", "r"], "no writes to replay after the filters"),
        (&["cache", "sim", "good.csv", "--cache-blocks", "64", "--volume", "99"], "no requests after the filters"),
        (&["ocssd", "run", "good.csv", "--volume", "99"], "no requests after the filters"),
        (&["analyze", "good.csv", "--volume", "99", "--out", "an"], "no block accesses after the filters"),
        (&["trace", "info", "good.csv", "--volume", "99"], "no block accesses after the filters"),
        (&["trace", "convert", "good.csv", "--volume", "99", "-o", "none.zkt"], "no block accesses after the filters"),
        (&["replay", "--workload", "zipf:blocks=1K,writes=2K", "--format", "alibaba"], "--format"),
        (&["replay", "--workload", "zipf:blocks=1K,writes=2K", "--lenient"], "--lenient"),
        (&["cache", "sim", "--cache-blocks", "64", "--workload", "zipf:blocks=1K,writes=2K", "--columns", "time=0"], "--columns"),
        (&["trace", "info", "good.csv", "--header"], "--header applies to --format delimited only"),
        (&["replay", "good.csv", "--seed", "7"], "--seed"),
        (&["replay", "--workload", "zipf:blocks=1K,blocks=2K,writes=2K"], "blocks: given twice"),
        (&["replay", "good.csv", "--param", "r1=2", "--param", "r1=3"], "--param r1: given twice"),
        // Every KEY=VALUE flag is read by one parser: spaces around a key do not make another
        // key, a key given twice is named the same way, a missing key is refused.
        (&["replay", "good.csv", "--param", "r1=2", "--param", " r1 =3"], "--param r1: given twice (r1=2 and  r1 =3)"),
        (&["replay", "good.csv", "--param", "=5"], "--param \"=5\": expected KEY=VALUE"),
        (&["ocssd", "run", "good.csv", "--param", "pn=2", "--param", "pn=4"], "--param pn: given twice (pn=2 and pn=4)"),
        (
            &["cache", "sim", "good.csv", "--cache-blocks", "64", "--policy", "s3fifo", "--param", "small_ratio=0.2", "--param", "small_ratio =0.3"],
            "--param small_ratio: given twice",
        ),
        (&["cache", "run", "--records", "2000", "--sampler", "slru", "--sampler-param", "levels=3", "--sampler-param", " levels=4"], "--sampler-param levels: given twice"),
        (&["trace", "info", "good.csv", "--format", "delimited", "--columns", "time=0 offset=1 offset=2 size=3 op=4:R/W"], "mapped twice"),
        (&["tree", "run", "--workload", "4294967295/1/100"], "summing to 100"),
    ];
    let mut failures = Vec::new();
    for (args, names) in table {
        if let Err(e) = refused(d, args, names, 0) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(!d.join("none.zkt").exists(), "a refused conversion leaves no file");
}

/// A copy of `bytes` with the bit `bit` of byte `at` flipped.
fn flipped(bytes: &[u8], at: usize, bit: u64) -> Vec<u8> {
    let mut b = bytes.to_vec();
    b[at] ^= 1 << (bit % 8);
    b
}

/// Seeded byte flips in each persistent format the CLI reads back (the file system image, a
/// binary trace, a cached replay stream): each is detected, or what is read back is what was
/// written — never another result with exit 0, never fsck clean with a file missing.
#[test]
fn flipped_bytes_in_every_persistent_format_are_detected_or_harmless() {
    let seed = seed();
    let mut state = seed | 1;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // File system image: flips in the blocks that hold anything (header, zone records,
    // metadata log, file data).
    run(d, &["device", "create", "fs.zk", "--zones", "8", "--zone-size-mib", "1"]);
    run(d, &["fs", "mkfs", "fs.zk"]);
    let files: Vec<(String, Vec<u8>)> = (0..3).map(|i| (format!("f{i}"), (0..20_000 + i * 7_000).map(|j| (j * 31 + i) as u8).collect())).collect();
    for (name, data) in &files {
        std::fs::write(d.join("src"), data).unwrap();
        run(d, &["fs", "put", "fs.zk", "src", "--name", name]);
    }
    let image = std::fs::read(d.join("fs.zk")).unwrap();
    let used: Vec<usize> = (0..image.len() / 4096).filter(|&b| image[b * 4096..(b + 1) * 4096].iter().any(|&x| x != 0)).collect();
    let (mut fs_flips, mut fs_detected) = (0, 0);
    for _ in 0..150 {
        let at = used[next(&mut state) as usize % used.len()] * 4096 + next(&mut state) as usize % 4096;
        std::fs::write(d.join("fs.zk"), flipped(&image, at, next(&mut state))).unwrap();
        fs_flips += 1;
        let clean = zonekit(d, &["fs", "fsck", "fs.zk"]);
        let whole = files.iter().all(|(name, data)| cat(d, "fs.zk", name).as_deref() == Some(&data[..]));
        assert!(!clean.status.success() || whole, "fs image byte {at} flipped (ZK_SEED={seed}): fsck says clean but a file does not read back whole");
        fs_detected += !clean.status.success() as u32;
    }

    // Binary trace: any flipped byte is refused by the replay that reads it.
    run(d, &["trace", "gen", "zipf:blocks=2K,writes=40K", "-o", "t.zkt"]);
    let trace = std::fs::read(d.join("t.zkt")).unwrap();
    for _ in 0..40 {
        let at = next(&mut state) as usize % trace.len();
        std::fs::write(d.join("bad.zkt"), flipped(&trace, at, next(&mut state))).unwrap();
        refused(d, &["replay", "bad.zkt", "--out", "r"], "bad.zkt", seed).unwrap_or_else(|e| panic!("binary trace byte {at} flipped: {e}"));
    }

    // Replay stream cached beside a trace: damaged, it is rebuilt and the results are the same.
    let csv: String = (0..6000).map(|i| format!("1,W,{},4096,{}\n", (i * 7919 % 1500) * 4096, i * 100)).collect();
    std::fs::write(d.join("t.csv"), csv).unwrap();
    let result = |out: &str| -> serde_json::Value {
        run(d, &["replay", "t.csv", "--out", out]);
        let mut r: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join(out).join("report.json")).unwrap()).unwrap();
        for timing in ["stage_s", "wall_s", "blocks_per_s"] {
            r.as_object_mut().unwrap().remove(timing);
        }
        r
    };
    let first = result("r0");
    let stream = std::fs::read(d.join("t.csv.zkr")).expect("the replay stream is cached beside the trace");
    for i in 0..20 {
        let at = next(&mut state) as usize % stream.len();
        std::fs::write(d.join("t.csv.zkr"), flipped(&stream, at, next(&mut state))).unwrap();
        assert_eq!(result(&format!("r{}", i + 1)), first, "replay stream byte {at} flipped (ZK_SEED={seed})");
    }
    eprintln!("fs image: {fs_flips} flips, {fs_detected} detected, the rest harmless; 40 binary trace and 20 replay stream flips (ZK_SEED={seed})");
}

/// A resumable `results.csv` with a damaged cell: the rerun recomputes the row instead of
/// reporting the damaged value (it used to be reused, exit 0), keeps the damaged row in
/// `results.previous.csv`, and the summaries refuse the damaged file naming its line.
#[test]
fn a_damaged_row_of_a_resumable_results_file_is_recomputed_not_reused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One shard of one: the directory `sweep merge` takes.
    let sweep =
        ["sweep", "--workloads", "zipf:blocks=5K,alpha=0.9,writes=40K", "--placements", "sepbit,nosep", "--victims", "greedy", "--preset", "tiny", "--shard", "0/1", "--out", "s"];
    run(d, &sweep);
    run(d, &["sweep", "merge", "--out", "m0", "s"]);
    let clean = std::fs::read_to_string(d.join("s/results.csv")).unwrap();
    let line = clean.lines().nth(1).unwrap();
    let cells: Vec<&str> = line.split(',').collect();
    // The WAF of the first row, one digit changed: a plausible number.
    let waf = cells[4];
    let damaged_waf = format!("{}{}", &waf[..waf.len() - 1], if waf.ends_with('9') { '8' } else { '9' });
    let damaged = clean.replacen(line, &line.replacen(waf, &damaged_waf, 1), 1);
    std::fs::write(d.join("s/results.csv"), &damaged).unwrap();
    refused(d, &["sweep", "merge", "--out", "m", "s"], "s/results.csv:2: the row does not match its check", 0).unwrap_or_else(|e| panic!("{e}"));
    run(d, &sweep);
    assert_eq!(std::fs::read_to_string(d.join("s/results.csv")).unwrap(), clean, "the damaged row was reused");
    assert!(std::fs::read_to_string(d.join("s/results.previous.csv")).unwrap().contains(&damaged_waf), "the damaged row was lost");
}

/// A cut row (fewer fields, as an interrupted write leaves one) or a row that is not UTF-8 in
/// a sweep's `results.csv`: the rerun moves it byte for byte to `results.previous.csv` and
/// recomputes it, as kv-bench and the tree experiment do (it used to refuse the whole resume,
/// naming the line); `sweep merge`, which only reports, refuses it naming its line.
#[test]
fn a_cut_row_of_a_sweep_is_moved_aside_and_recomputed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sweep =
        ["sweep", "--workloads", "zipf:blocks=5K,alpha=0.9,writes=40K", "--placements", "sepbit,nosep", "--victims", "greedy", "--preset", "tiny", "--shard", "0/1", "--out", "s"];
    run(d, &sweep);
    let clean = std::fs::read_to_string(d.join("s/results.csv")).unwrap();
    let lines: Vec<&str> = clean.lines().collect();
    let mut damaged = format!("{}\n{}\n", lines[0], &lines[1][..40]).into_bytes();
    damaged.extend_from_slice(&lines[2].as_bytes()[..30]);
    damaged.extend_from_slice(b"\xff\n");
    std::fs::write(d.join("s/results.csv"), &damaged).unwrap();
    let fields = lines[1][..40].split(',').count();
    refused(d, &["sweep", "merge", "--out", "m", "s"], &format!("s/results.csv:2: the row has {fields} fields, expected 17"), 0).unwrap_or_else(|e| panic!("{e}"));
    let out = zonekit(d, &sweep);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the resume was refused: {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("2 damaged rows of results.csv moved to s/results.previous.csv"), "{stdout}");
    assert_eq!(std::fs::read_to_string(d.join("s/results.csv")).unwrap(), clean, "the cut rows are recomputed");
    let header_len = lines[0].len() + 1;
    assert_eq!(std::fs::read(d.join("s/results.previous.csv")).unwrap()[header_len..], damaged[header_len..], "the cut rows, byte for byte");
}

/// The same for kv-bench's `results.csv`, without RocksDB: a stand-in db_bench prints the
/// lines of a completed run (and counts its runs). A row whose bytes written were changed
/// used to be reused and reported (a WAF of 1.290 where the run measured 1.250).
#[test]
fn a_damaged_row_of_kv_benchs_results_file_is_recomputed_not_reused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("plugin.so"), b"").unwrap();
    let runs = d.join("runs");
    let db_bench = d.join("db_bench");
    std::fs::write(
        &db_bench,
        format!(
            "#!/bin/sh\necho run >> '{}'\ncat <<'EOF'\n\
fillseq      :       5.126 micros/op 195080 ops/sec 0.005 seconds 1000 operations;  151.8 MB/s\n\
overwrite    :      18.597 micros/op 53771 ops/sec 0.018 seconds 1000 operations;   41.8 MB/s\n\
zonekit: appended 1000000 bytes, device wrote 1250000 bytes, WAF 1.250, zone resets 3, live 1 MiB, garbage 0 MiB, free 7000 MiB, peak file bytes 2 MiB\n\
EOF\n",
            runs.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&db_bench, std::fs::Permissions::from_mode(0o755)).unwrap();
    let runs_count = || std::fs::read_to_string(&runs).unwrap_or_default().lines().count();
    let db_bench = db_bench.to_str().unwrap();
    let kv = ["kv-bench", "--plugin", "plugin.so", "--db-bench", db_bench, "--configs", "both", "--keys", "0.001,0.002", "--no-reference", "--out", "kv"];
    let report = ["kv-bench", "--report-only", "--configs", "both", "--keys", "0.001,0.002", "--no-reference", "--out", "kv"];
    run(d, &kv);
    assert_eq!(runs_count(), 2);
    let clean = std::fs::read_to_string(d.join("kv/results.csv")).unwrap();
    let line = clean.lines().nth(1).unwrap();
    assert!(line.contains(",1250000,"), "{line}");
    let damaged_line = line.replacen(",1250000,", ",1290000,", 1);
    std::fs::write(d.join("kv/results.csv"), clean.replacen(line, &damaged_line, 1)).unwrap();
    refused(d, &report, "kv/results.csv:2: the row does not match its check", 0).unwrap_or_else(|e| panic!("{e}"));
    run(d, &kv);
    assert_eq!(runs_count(), 3, "the damaged row was reused, not recomputed");
    let resumed = std::fs::read_to_string(d.join("kv/results.csv")).unwrap();
    let sorted = |text: &str| {
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines.sort();
        lines
    };
    // The recomputed row comes after the intact one: appended as it ran.
    assert_eq!(sorted(&resumed), sorted(&clean), "the recomputed row is the intact one");
    assert!(std::fs::read_to_string(d.join("kv/results.previous.csv")).unwrap().contains(&damaged_line), "the damaged row was lost");
    let out = zonekit(d, &report);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("1.250") && !stdout.contains("1.290"), "{stdout}");
}

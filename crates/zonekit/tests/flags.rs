//! Out-of-range counts and sizes are refused where their flag is parsed: exit status 2, a
//! message naming the flag and its value, and no panic or allocator abort. Before, such values
//! reached the device layer ("invalid geometry: the device has zero zones"), wrapped in u32 or
//! u64 arithmetic, or aborted allocating zone tables for billions of zones.

use std::path::Path;
use std::process::Command;

#[allow(dead_code)] // the shared helpers these tests do not use
mod common;

/// Address space a refusal may use: every case must be refused before its tables are
/// allocated, and an old binary that tries aborts here instead of taking the machine's memory.
const ADDRESS_SPACE_BYTES: u64 = 4 << 30;

/// Runs zonekit and checks the refusal: exit status 2, no panic or abort, `names` in the message.
fn refused(d: &Path, args: &[&str], names: &str) -> Result<(), String> {
    let out = common::limited(ADDRESS_SPACE_BYTES >> 10, args, d).output().expect("run zonekit");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("panicked") || stderr.contains("memory allocation") || out.status.code().is_none() {
        return Err(format!("zonekit {args:?} panicked or aborted ({:?}): {stderr}", out.status));
    }
    if out.status.code() != Some(2) {
        return Err(format!("zonekit {args:?} exited with {:?}, not 2: {stderr}", out.status.code()));
    }
    if !stderr.contains(names) {
        return Err(format!("zonekit {args:?}: the message does not name {names:?}: {stderr}"));
    }
    Ok(())
}

#[test]
fn out_of_range_counts_and_sizes_name_their_flag() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let made = Command::new(env!("CARGO_BIN_EXE_zonekit")).args(["device", "create", "one.zk", "--zones", "1"]).current_dir(d).output().unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let w = "zipf:blocks=1K,writes=2K";
    let ocssd = |flag: &'static str, value: &'static str| vec!["ocssd", "run", "--workload", w, flag, value];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // device create: zero and huge zone counts, more conventional zones than zones.
        (vec!["device", "create", "a.zk", "--zones", "0"], "--zones 0"),
        (vec!["device", "create", "a.zk", "--zones", "4294967295"], "--zones 4294967295"),
        (vec!["device", "create", "a.zk", "--conventional", "4294967295"], "--conventional 4294967295"),
        (vec!["device", "create", "a.zk", "--zone-size-mib", "0"], "--zone-size-mib 0"),
        // serve: zero, too few for the volume, beyond the FTL, beyond memory (aborted).
        (vec!["serve", "nbd", "--zones", "0"], "--zones 0"),
        (vec!["serve", "ublk", "--zones", "0"], "--zones 0"),
        (vec!["serve", "nbd", "--zones", "1", "--socket", "s.sock"], "--zones 1"),
        (vec!["serve", "nbd", "--zones", "100000000"], "--zones 100000000"),
        (vec!["serve", "nbd", "--zones", "4294967295"], "--zones 4294967295"),
        (vec!["serve", "ublk", "--zones", "4294967295"], "--zones 4294967295"),
        // tree run: the u32 sum wrapped (to zero zones, or to 39); 100000000 aborted.
        (vec!["tree", "run", "--records", "1K", "--sequential-zones", "4294967295"], "--sequential-zones 4294967295"),
        (vec!["tree", "run", "--records", "1K", "--conventional-zones", "4294967295"], "--conventional-zones 4294967295"),
        (vec!["tree", "run", "--records", "1K", "--sequential-zones", "100000000"], "--sequential-zones 100000000"),
        // cache run: zones of 0 or 3 MiB, buckets of 0 zones, too few buckets, a wrapped bucket.
        (vec!["cache", "run", "--zone-mib", "0"], "--zone-mib 0"),
        // Inside the documented data limit, but tables beyond any machine's memory (aborted).
        (vec!["cache", "run", "--cache-mib", "33554432", "--data-mib", "67108864", "--records", "1000", "--operations", "1000"], "of memory for its tables"),
        (vec!["cache", "run", "--zone-mib", "3"], "--zone-mib 3"),
        (vec!["cache", "run", "--zones-per-bucket", "0"], "--zones-per-bucket 0"),
        (vec!["cache", "run", "--zones-per-bucket", "100"], "--zones-per-bucket 100"),
        (vec!["cache", "run", "--zones-per-bucket", "524289"], "--zones-per-bucket 524289"),
        (vec!["cache", "run", "--cache-mib", "33554432", "--zone-mib", "33554432", "--data-mib", "67108864", "--zones-per-bucket", "524289"], "--zones-per-bucket 524289"),
        (vec!["cache", "run", "--cache-mib", "8"], "--cache-mib 8"),
        // cache run: a record past any block, metadata counts past the cache's buckets.
        (vec!["cache", "run", "--record-bytes", "18446744073709551615"], "--record-bytes 18446744073709551615"),
        (vec!["cache", "run", "--metadata", "--journal-buckets", "4294967295"], "--journal-buckets 4294967295"),
        (vec!["cache", "run", "--metadata", "--btree-reserve", "4294967295"], "--btree-reserve 4294967295"),
        (vec!["cache", "run", "--metadata", "--btree-node-kib", "18446744073709551615"], "--btree-node-kib 18446744073709551615"),
        // replay: the zone size, a device of too few zones (by path), sized devices whose zone
        // count wrapped, was truncated or aborted.
        (vec!["replay", "--workload", w, "--zone-mib", "0", "--out", "o"], "--zone-mib 0"),
        (vec!["replay", "--workload", w, "--device", "one.zk", "--out", "o"], "--device one.zk"),
        (vec!["replay", "--workload", w, "--utilization", "1e-9", "--out", "o"], "--utilization 1e-9"),
        (vec!["replay", "--workload", w, "--utilization", "1.165e-12", "--out", "o"], "--utilization 1.165e-12"),
        (vec!["replay", "--workload", w, "--unbounded", "--gc-threshold", "0.99999999999999", "--out", "o"], "--gc-threshold 0.99999999999999"),
        // ocssd run: every dimension by its flag.
        (ocssd("--channels", "0"), "--channels 0"),
        (ocssd("--luns", "0"), "--luns 0"),
        (ocssd("--blocks-per-lun", "0"), "--blocks-per-lun 0"),
        (ocssd("--pages-per-block", "0"), "--pages-per-block 0"),
        (ocssd("--channels", "4294967295"), "--channels 4294967295"),
        (ocssd("--blocks-per-lun", "4294967295"), "--blocks-per-lun 4294967295"),
        (ocssd("--pages-per-block", "4294967295"), "--pages-per-block 4294967295"),
        (ocssd("--page-kib", "0"), "--page-kib 0"),
        (ocssd("--page-kib", "2048"), "--page-kib 2048"),
        (vec!["ocssd", "run", "--workload", w, "--channels", "65536", "--luns", "65536"], "--channels 65536 --luns 65536"),
        // Sharding over nodes: the ring's points (aborted), the chunk size (shifted).
        (vec!["trace", "info", "--workload", w, "--nodes", "4294967295", "--node", "0"], "--nodes 4294967295"),
        (vec!["trace", "info", "--workload", w, "--nodes", "4", "--node", "0", "--chunk-mib", "17592186044417"], "--chunk-mib 17592186044417"),
        // A workload whose offsets block × 4096 wrapped: the spec's key is named.
        (vec!["trace", "gen", "uniform:blocks=9e18,writes=5", "-o", "u.csv"], "blocks=9000000000000000000"),
        // kv-bench: `mib << 20` kept only the low bits (a 1 MiB zone).
        (vec!["kv-bench", "--report-only", "--zone-mib", "17592186044417", "--out", "kv"], "--zone-mib 17592186044417"),
    ];
    let failures: Vec<String> = cases.iter().filter_map(|(args, names)| refused(d, args, names).err()).collect();
    assert!(failures.is_empty(), "{} of {} cases:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// An image larger than its file system allows names the flags that sized it (it was "set
/// length: File too large", exit 1). A file system that holds a 16 PiB sparse file (tmpfs,
/// XFS) creates it: 16 zones cost nothing.
#[test]
fn an_image_too_large_for_its_file_system_names_the_size_flags() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["device", "create", "big.zk", "--zones", "16", "--zone-size-mib", "1073741824"];
    let out = Command::new(env!("CARGO_BIN_EXE_zonekit")).args(args).current_dir(dir.path()).output().unwrap();
    if !out.status.success() {
        refused(dir.path(), &args, "--zones 16 --zone-size-mib 1073741824").unwrap();
        assert!(!dir.path().join("big.zk").exists());
    }
}

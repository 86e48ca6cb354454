//! Every sample in ../shared/traces parses with its format and matches the counts SOURCES.md
//! gives; bad input is refused with file, line and field. The traces are read in place, never
//! copied into the repository.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use zonekit_trace::blocks::{SplitOptions, Splitter};
use zonekit_trace::format::{self, Format, ReadOptions};
use zonekit_trace::{Op, Record};

fn trace(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces").join(name)
}

fn read_all(name: &str, fmt: &Format) -> Vec<Record> {
    format::open(&trace(name), fmt, &ReadOptions::default()).unwrap().map(|r| r.unwrap()).collect()
}

struct Summary {
    records: usize,
    write_share: f64,
    written_mib: f64,
    volumes: usize,
}

fn summary(recs: &[Record]) -> Summary {
    let writes: Vec<&Record> = recs.iter().filter(|r| r.op == Op::Write).collect();
    Summary {
        records: recs.len(),
        write_share: writes.len() as f64 / recs.len() as f64,
        written_mib: writes.iter().map(|r| r.len_bytes).sum::<u64>() as f64 / (1 << 20) as f64,
        volumes: recs.iter().map(|r| r.volume).collect::<HashSet<_>>().len(),
    }
}

fn close(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= tolerance
}

#[test]
fn cloudphysics_matches_sources_md() {
    let recs = read_all("cloudPhysicsIO.csv", &Format::CloudPhysicsCsv);
    let s = summary(&recs);
    assert_eq!(s.records, 113_872);
    assert!(close(s.write_share * 100.0, 58.7, 0.05), "write share {}", s.write_share);
    assert!(close(s.written_mib, 2297.0, 0.5), "written {} MiB", s.written_mib);
    let writes = recs.iter().filter(|r| r.op == Op::Write).cloned().map(Ok);
    let pages: HashSet<u64> = Splitter::new(writes, SplitOptions::default()).unwrap().map(|b| b.unwrap().key()).collect();
    let distinct_gib = pages.len() as f64 * 4096.0 / (1u64 << 30) as f64;
    assert!(close(distinct_gib, 0.80, 0.005), "distinct written pages {distinct_gib} GiB");
}

#[test]
fn cloudphysics_vscsi_and_csv_give_identical_block_streams() {
    let blocks = |name: &str, f: Format| -> Vec<(u64, u64, Op)> {
        let recs = format::open(&trace(name), &f, &ReadOptions::default()).unwrap();
        // The CSV has whole seconds, the binary microseconds: compare at one-second resolution.
        Splitter::new(recs, SplitOptions::default()).unwrap().map(|b| b.unwrap()).map(|b| (b.time_us / 1_000_000, b.key(), b.op)).collect()
    };
    let csv = blocks("cloudPhysicsIO.csv", Format::CloudPhysicsCsv);
    let bin = blocks("cloudPhysicsIO.vscsi", Format::Vscsi);
    assert_eq!(csv.len(), bin.len());
    assert!(csv == bin, "the two CloudPhysics files give different block streams");
    assert!(csv.len() > 500_000);
}

#[test]
fn tencent_multi_volume_bzip2() {
    let s = summary(&read_all("cloud_storage-sample.bz2", &Format::Tencent));
    assert_eq!(s.records, 50_000);
    assert!(close(s.write_share * 100.0, 51.0, 0.5), "write share {}", s.write_share);
    assert!(close(s.written_mib, 831.0, 0.5), "written {} MiB", s.written_mib);
    assert_eq!(s.volumes, 2_038);
}

#[test]
fn msr_disksim_systor_samples() {
    let msr = read_all("msr-cambridge1-sample.csv", &Format::Msr);
    let s = summary(&msr);
    assert_eq!((s.records, s.volumes), (1_000, 1));
    assert!(close(s.write_share * 100.0, 49.0, 0.5), "msr write share {}", s.write_share);
    // FILETIME converted to unix time: the MSR traces are from February 2007.
    let t = msr[0].time_us / 1_000_000;
    assert!((1_170_000_000..1_175_000_000).contains(&t), "msr time {t}");

    let tpcc = summary(&read_all("tpcc-small.trace", &Format::DiskSim));
    assert_eq!((tpcc.records, tpcc.volumes), (6_999, 16));
    assert!(close(tpcc.write_share * 100.0, 37.0, 0.5), "disksim write share {}", tpcc.write_share);

    let systor = summary(&read_all("systor17-traces-sample.csv.gz", &Format::Systor));
    assert_eq!(systor.records, 999);
    assert!(close(systor.write_share * 100.0, 17.0, 0.5), "systor write share {}", systor.write_share);
}

#[test]
fn zstd_streams_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let gz = format::decompressed(&trace("systor17-traces-sample.csv.gz")).unwrap();
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut { gz }, &mut plain).unwrap();
    let zst = dir.path().join("systor.csv.zst");
    std::fs::write(&zst, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    let recs: Vec<Record> = format::open(&zst, &Format::Systor, &ReadOptions::default()).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(recs, read_all("systor17-traces-sample.csv.gz", &Format::Systor));
    assert_eq!(format::detect(&zst).unwrap().name(), "systor");
    let cut = dir.path().join("cut.zst");
    let bytes = std::fs::read(&zst).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert!(format::open(&cut, &Format::Systor, &ReadOptions::default()).unwrap().any(|r| r.is_err()));
}

#[test]
fn shards_working_set_scales_with_the_rate() {
    let writes: Vec<(u32, u64)> = {
        let recs = format::open(&trace("cloudPhysicsIO.csv"), &Format::CloudPhysicsCsv, &ReadOptions::default()).unwrap();
        Splitter::new(recs, SplitOptions { only: Some(Op::Write), ..Default::default() }).unwrap().map(|b| b.unwrap()).map(|b| (b.volume, b.block)).collect()
    };
    let full: HashSet<(u32, u64)> = writes.iter().copied().collect();
    for t in [1u32, 2, 5] {
        let s = zonekit_trace::sample::Shards::new(10, t, 0).unwrap();
        let kept: HashSet<(u32, u64)> = writes.iter().copied().filter(|&(v, b)| s.keeps(v, b)).collect();
        let ratio = kept.len() as f64 / full.len() as f64;
        assert!((ratio - s.rate()).abs() < 0.01, "rate {}: working set ratio {ratio}", s.rate());
        // Every access to a kept block is kept: per-block write counts are exact in the sample.
        let kept_writes = writes.iter().filter(|&&(v, b)| s.keeps(v, b)).count();
        let from_full = writes.iter().filter(|w| kept.contains(w)).count();
        assert_eq!(kept_writes, from_full);
    }
}

#[test]
fn formats_are_detected() {
    for (name, want) in [
        ("cloudPhysicsIO.csv", "cloudphysics-csv"),
        ("cloudPhysicsIO.vscsi", "vscsi"),
        ("cloud_storage-sample.bz2", "tencent"),
        ("msr-cambridge1-sample.csv", "msr"),
        ("tpcc-small.trace", "disksim"),
        ("systor17-traces-sample.csv.gz", "systor"),
    ] {
        assert_eq!(format::detect(&trace(name)).unwrap().name(), want, "{name}");
    }
}

#[test]
fn delimited_mapping_reads_what_the_named_format_reads() {
    // Tencent CBS expressed as a generic mapping.
    let d = format::Delimited::parse("time=0:s offset=1:sector size=2:sector op=3:0/1 volume=4", Some(','), false).unwrap();
    let generic = read_all("cloud_storage-sample.bz2", &Format::Delimited(d));
    assert_eq!(generic, read_all("cloud_storage-sample.bz2", &Format::Tencent));
    for bad in ["time=0 offset=1", "time=x:s offset=1 size=2 op=3:R/W", "time=0:fortnight offset=1 size=2 op=3:R/W", "colour=1"] {
        assert!(format::Delimited::parse(bad, Some(','), false).is_err(), "{bad}");
    }
}

// ---- bad input -------------------------------------------------------------------------------

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn malformed_lines_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "bad.csv", b"1,0,8,1,7\n2,16,8,banana,7\n3,0,8,1,7\n");
    let mut recs = format::open(&p, &Format::Tencent, &ReadOptions::default()).unwrap();
    assert!(recs.next().unwrap().is_ok());
    let e = recs.next().unwrap().unwrap_err().to_string();
    assert!(e.contains("bad.csv:line 2") && e.contains("IOType") && e.contains("banana"), "{e}");
    assert!(recs.next().is_none(), "reading stops at the first error");

    // Lenient: skipped and counted by field, with examples.
    let p = write(dir.path(), "mixed.csv", b"1,0,8,1,7\nnot,a,record\n2,16,8,9,7\n3,0,8,0,7\n");
    let mut recs = format::open(&p, &Format::Tencent, &ReadOptions { lenient: true }).unwrap();
    let good: Vec<_> = recs.by_ref().map(|r| r.unwrap()).collect();
    assert_eq!(good.len(), 2);
    let stats = recs.stats();
    assert_eq!(stats.skipped_total(), 2);
    assert_eq!(stats.skipped.get("IOType"), Some(&1));
    assert!(stats.skipped_examples[0].contains("line 2"), "{:?}", stats.skipped_examples);
}

#[test]
fn truncated_compressed_empty_and_wrong_format_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let gz = std::fs::read(trace("systor17-traces-sample.csv.gz")).unwrap();
    let p = write(dir.path(), "cut.csv.gz", &gz[..gz.len() / 2]);
    let err = format::open(&p, &Format::Systor, &ReadOptions::default()).unwrap().find_map(|r| r.err()).expect("a truncated gzip must fail");
    assert!(err.to_string().contains("truncated or corrupt"), "{err}");
    let bz = std::fs::read(trace("cloud_storage-sample.bz2")).unwrap();
    let p = write(dir.path(), "cut.bz2", &bz[..bz.len() / 3]);
    assert!(format::open(&p, &Format::Tencent, &ReadOptions::default()).unwrap().any(|r| r.is_err()));

    let p = write(dir.path(), "empty.csv", b"");
    assert_eq!(format::open(&p, &Format::Tencent, &ReadOptions::default()).unwrap().count(), 0);
    assert!(format::detect(&p).unwrap_err().to_string().contains("cannot tell the trace format"));

    // MSR read as Tencent: the first line's problem is named.
    let e = format::open(&trace("msr-cambridge1-sample.csv"), &Format::Tencent, &ReadOptions::default()).unwrap().next().unwrap().unwrap_err().to_string();
    assert!(e.contains("line 1"), "{e}");
    let p = write(dir.path(), "short.vscsi", &std::fs::read(trace("cloudPhysicsIO.vscsi")).unwrap()[..100]);
    let e = format::open(&p, &Format::Vscsi, &ReadOptions::default()).unwrap().find_map(|r| r.err()).unwrap().to_string();
    assert!(e.contains("byte 96") && e.contains("truncated"), "{e}");
    assert!("nope".parse::<Format>().unwrap_err().to_string().contains("valid formats"));
    assert!(format::open(&dir.path().join("missing.csv"), &Format::Tencent, &ReadOptions::default()).err().unwrap().to_string().contains("missing.csv"));
}

//! Every sample in ../shared/traces parses with its format and matches the counts SOURCES.md
//! gives (skipped, visibly, where the samples are absent; failing under CI=true); bad input is
//! refused with file, line and field, on fixtures Zonekit writes itself. The samples are read in
//! place, never copied into the repository.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use zonekit_trace::blocks::{SplitOptions, Splitter};
use zonekit_trace::fixture::{self, shared_sample, Compression};
use zonekit_trace::format::{self, Format, ReadOptions};
use zonekit_trace::{Op, Record};

fn read_all(path: &Path, fmt: &Format) -> Vec<Record> {
    format::open(path, fmt, &ReadOptions::default()).unwrap().map(|r| r.unwrap()).collect()
}

/// A fixture of `format` written into `dir`, compressed: its path and records.
fn fixture_file(dir: &Path, format: &Format, compression: Compression) -> (PathBuf, Vec<Record>) {
    fixture::write(dir, format, compression, 2_000, 5).unwrap()
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
    let Some(path) = shared_sample("cloudPhysicsIO.csv") else { return };
    let recs = read_all(&path, &Format::CloudPhysicsCsv);
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
    let (Some(csv_path), Some(vscsi_path)) = (shared_sample("cloudPhysicsIO.csv"), shared_sample("cloudPhysicsIO.vscsi")) else { return };
    let blocks = |path: &Path, f: Format| -> Vec<(u64, u64, Op)> {
        let recs = format::open(path, &f, &ReadOptions::default()).unwrap();
        // The CSV has whole seconds, the binary microseconds: compare at one-second resolution.
        Splitter::new(recs, SplitOptions::default()).unwrap().map(|b| b.unwrap()).map(|b| (b.time_us / 1_000_000, b.key(), b.op)).collect()
    };
    let csv = blocks(&csv_path, Format::CloudPhysicsCsv);
    let bin = blocks(&vscsi_path, Format::Vscsi);
    assert_eq!(csv.len(), bin.len());
    assert!(csv == bin, "the two CloudPhysics files give different block streams");
    assert!(csv.len() > 500_000);
}

#[test]
fn tencent_multi_volume_bzip2() {
    let Some(path) = shared_sample("cloud_storage-sample.bz2") else { return };
    let s = summary(&read_all(&path, &Format::Tencent));
    assert_eq!(s.records, 50_000);
    assert!(close(s.write_share * 100.0, 51.0, 0.5), "write share {}", s.write_share);
    assert!(close(s.written_mib, 831.0, 0.5), "written {} MiB", s.written_mib);
    assert_eq!(s.volumes, 2_038);
}

#[test]
fn msr_disksim_systor_samples() {
    let (Some(msr), Some(tpcc), Some(systor)) = (shared_sample("msr-cambridge1-sample.csv"), shared_sample("tpcc-small.trace"), shared_sample("systor17-traces-sample.csv.gz"))
    else {
        return;
    };
    let msr = read_all(&msr, &Format::Msr);
    let s = summary(&msr);
    assert_eq!((s.records, s.volumes), (1_000, 1));
    assert!(close(s.write_share * 100.0, 49.0, 0.5), "msr write share {}", s.write_share);
    // FILETIME converted to unix time: the MSR traces are from February 2007.
    let t = msr[0].time_us / 1_000_000;
    assert!((1_170_000_000..1_175_000_000).contains(&t), "msr time {t}");

    let tpcc = summary(&read_all(&tpcc, &Format::DiskSim));
    assert_eq!((tpcc.records, tpcc.volumes), (6_999, 16));
    assert!(close(tpcc.write_share * 100.0, 37.0, 0.5), "disksim write share {}", tpcc.write_share);

    let systor = summary(&read_all(&systor, &Format::Systor));
    assert_eq!(systor.records, 999);
    assert!(close(systor.write_share * 100.0, 17.0, 0.5), "systor write share {}", systor.write_share);
}

#[test]
fn zstd_streams_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let (zst, written) = fixture_file(dir.path(), &Format::Systor, Compression::Zstd);
    assert_eq!(read_all(&zst, &Format::Systor), written);
    assert_eq!(format::detect(&zst).unwrap().name(), "systor");
    // Two frames one after the other (`cat a.zst b.zst`) read as one stream.
    let plain = fixture::render(&Format::Systor, &written);
    let cut = plain[..plain.len() / 2].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let mut two = fixture::compress(&plain[..cut], Compression::Zstd);
    two.extend(fixture::compress(&plain[cut..], Compression::Zstd));
    std::fs::write(dir.path().join("two.zst"), &two).unwrap();
    assert_eq!(read_all(&dir.path().join("two.zst"), &Format::Systor), written);
    // The zstd tool's own frames (the C library's encoder), where the machine has it.
    let plain_path = dir.path().join("plain.csv");
    std::fs::write(&plain_path, &plain).unwrap();
    match std::process::Command::new("zstd").args(["-q", "-3", "-f"]).arg(&plain_path).arg("-o").arg(dir.path().join("c.zst")).status() {
        Ok(s) if s.success() => assert_eq!(read_all(&dir.path().join("c.zst"), &Format::Systor), written),
        _ => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "skipped: no zstd command to write frames with the C library");
        }
    }
    let cut = dir.path().join("cut.zst");
    let bytes = std::fs::read(&zst).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    assert!(format::open(&cut, &Format::Systor, &ReadOptions::default()).unwrap().any(|r| r.is_err()));
}

#[test]
fn shards_working_set_scales_with_the_rate() {
    let dir = tempfile::tempdir().unwrap();
    // Enough distinct blocks for the sampled share to sit within a point of the rate.
    let (path, _) = fixture::write(dir.path(), &Format::Alibaba, Compression::None, 40_000, 9).unwrap();
    let writes: Vec<(u32, u64)> = {
        let recs = format::open(&path, &Format::Alibaba, &ReadOptions::default()).unwrap();
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
    let dir = tempfile::tempdir().unwrap();
    for format in [Format::Alibaba, Format::Tencent, Format::Msr, Format::Umass, Format::Systor, Format::CloudPhysicsCsv, Format::Vscsi, Format::DiskSim] {
        for compression in Compression::ALL {
            let (path, _) = fixture_file(dir.path(), &format, compression);
            assert_eq!(format::detect(&path).unwrap().name(), format.name(), "{}", path.display());
        }
    }
    if shared_sample("cloudPhysicsIO.csv").is_none() {
        return;
    }
    for (name, want) in [
        ("cloudPhysicsIO.csv", "cloudphysics-csv"),
        ("cloudPhysicsIO.vscsi", "vscsi"),
        ("cloud_storage-sample.bz2", "tencent"),
        ("msr-cambridge1-sample.csv", "msr"),
        ("tpcc-small.trace", "disksim"),
        ("systor17-traces-sample.csv.gz", "systor"),
    ] {
        assert_eq!(format::detect(&shared_sample(name).unwrap()).unwrap().name(), want, "{name}");
    }
}

#[test]
fn delimited_mapping_reads_what_the_named_format_reads() {
    // Tencent CBS expressed as a generic mapping.
    let dir = tempfile::tempdir().unwrap();
    let (path, written) = fixture_file(dir.path(), &Format::Tencent, Compression::Bzip2);
    let d = format::Delimited::parse("time=0:s offset=1:sector size=2:sector op=3:0/1 volume=4", Some(','), false).unwrap();
    assert_eq!(read_all(&path, &Format::Delimited(d)), written);
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
    let mut recs = format::open(&p, &Format::Tencent, &ReadOptions { lenient: true, ..ReadOptions::default() }).unwrap();
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
    let (gz, _) = fixture_file(dir.path(), &Format::Systor, Compression::Gzip);
    let gz = std::fs::read(gz).unwrap();
    let p = write(dir.path(), "cut.csv.gz", &gz[..gz.len() / 2]);
    let err = format::open(&p, &Format::Systor, &ReadOptions::default()).unwrap().find_map(|r| r.err()).expect("a truncated gzip must fail");
    assert!(err.to_string().contains("truncated or corrupt"), "{err}");
    let (bz, _) = fixture_file(dir.path(), &Format::Tencent, Compression::Bzip2);
    let bz = std::fs::read(bz).unwrap();
    let p = write(dir.path(), "cut.bz2", &bz[..bz.len() / 3]);
    assert!(format::open(&p, &Format::Tencent, &ReadOptions::default()).unwrap().any(|r| r.is_err()));

    let p = write(dir.path(), "empty.csv", b"");
    assert_eq!(format::open(&p, &Format::Tencent, &ReadOptions::default()).unwrap().count(), 0);
    assert!(format::detect(&p).unwrap_err().to_string().contains("cannot tell the trace format"));

    // MSR read as Tencent: the first line's problem is named.
    let (msr, _) = fixture_file(dir.path(), &Format::Msr, Compression::None);
    let e = format::open(&msr, &Format::Tencent, &ReadOptions::default()).unwrap().next().unwrap().unwrap_err().to_string();
    assert!(e.contains("line 1"), "{e}");
    let (vscsi, _) = fixture_file(dir.path(), &Format::Vscsi, Compression::None);
    let p = write(dir.path(), "short.vscsi", &std::fs::read(vscsi).unwrap()[..100]);
    let e = format::open(&p, &Format::Vscsi, &ReadOptions::default()).unwrap().find_map(|r| r.err()).unwrap().to_string();
    assert!(e.contains("byte 96") && e.contains("truncated"), "{e}");
    assert!("nope".parse::<Format>().unwrap_err().to_string().contains("valid formats"));
    assert!(format::open(&dir.path().join("missing.csv"), &Format::Tencent, &ReadOptions::default()).err().unwrap().to_string().contains("missing.csv"));
}

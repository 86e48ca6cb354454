//! Trace hot paths. Run: `cargo bench -p zonekit-trace --bench trace`; figures in
//! docs/benchmarks.md. Each benchmark has a reference in the same run (a bare line read, a
//! bare scan of the mapped bytes) so the ratio is machine-independent.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use zonekit_trace::binary::{BinaryTrace, BinaryWriter};
use zonekit_trace::blocks::{SplitOptions, Splitter};
use zonekit_trace::format::{self, Format, ReadOptions};
use zonekit_trace::synth::Workload;

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join("zonekit-trace-bench");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 60 MB Alibaba-format text trace from the cloud-node generator, made once.
fn alibaba_file() -> PathBuf {
    let path = temp_dir().join("cloud.csv");
    if !path.exists() {
        use std::io::Write;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        let w: Workload = "cloud:volumes=64,blocks=1M,writes=6M".parse().unwrap();
        for r in w.records(1).unwrap() {
            writeln!(out, "{},W,{},{},{}", r.volume, r.offset_bytes, r.len_bytes, r.time_us).unwrap();
        }
    }
    path
}

fn parse_and_split(path: &Path, fmt: &Format) -> u64 {
    let recs = format::open(path, fmt, &ReadOptions::default()).unwrap();
    Splitter::new(recs, SplitOptions::default()).unwrap().map(|b| b.unwrap().block).fold(0, |a, b| a ^ b)
}

/// The records alone, without the splitter.
fn parse_only(path: &Path, fmt: &Format) -> u64 {
    format::open(path, fmt, &ReadOptions::default()).unwrap().fold(0, |a, r| {
        let r = r.unwrap();
        a ^ r.offset_bytes ^ r.len_bytes ^ r.time_us
    })
}

fn bare_lines(path: &Path) -> u64 {
    let mut input = format::decompressed(path).unwrap();
    let mut line = String::new();
    let mut n = 0u64;
    while input.read_line(&mut line).unwrap() > 0 {
        n += line.len() as u64;
        line.clear();
    }
    n
}

fn text(c: &mut Criterion) {
    let cloudphysics = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces/cloudPhysicsIO.csv");
    let mut group = c.benchmark_group("parse_and_split");
    group.sample_size(10);
    for (name, path, fmt) in [("cloudphysics_csv", cloudphysics, Format::CloudPhysicsCsv), ("alibaba_60MB", alibaba_file(), Format::Alibaba)] {
        group.throughput(Throughput::Bytes(std::fs::metadata(&path).unwrap().len()));
        group.bench_function(name, |b| b.iter(|| black_box(parse_and_split(&path, &fmt))));
        group.bench_function(format!("{name}/parse_only"), |b| b.iter(|| black_box(parse_only(&path, &fmt))));
        group.bench_function(format!("{name}/reference_read_lines"), |b| b.iter(|| black_box(bare_lines(&path))));
    }
    group.finish();
}

fn binary(c: &mut Criterion) {
    let path = temp_dir().join("zipf.zkt");
    let records = 10_000_000u64;
    if !path.exists() {
        let w: Workload = format!("zipf:blocks=1M,writes={records}").parse().unwrap();
        let mut out = BinaryWriter::create(&path, 4096, "bench").unwrap();
        for b in Splitter::new(w.records(1).unwrap().map(Ok), SplitOptions::default()).unwrap() {
            out.push(&b.unwrap()).unwrap();
        }
        out.finish().unwrap();
    }
    let trace = BinaryTrace::open(&path).unwrap();
    let mut group = c.benchmark_group("binary_read");
    group.sample_size(10);
    group.throughput(Throughput::Elements(records));
    group.bench_function("iterate_10M_records", |b| b.iter(|| trace.iter().fold(0u64, |a, r| a ^ r.io.block ^ r.next_write)));
    let bytes = std::fs::read(&path).unwrap();
    group.bench_function("reference_scan_bytes", |b| {
        b.iter(|| bytes[128..].chunks_exact(32).fold(0u64, |a, r| a ^ u64::from_le_bytes(r[8..16].try_into().unwrap()) ^ u64::from_le_bytes(r[24..32].try_into().unwrap())))
    });
    group.finish();
}

criterion_group!(benches, text, binary);
criterion_main!(benches);

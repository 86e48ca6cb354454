//! Small traces in every format Zonekit reads, written by Zonekit itself, so that its tests
//! (and a user's) need no downloaded sample: [`records`] makes a deterministic request stream
//! that a format can hold exactly, [`render`] writes it in that format's own layout, and
//! [`compress`] wraps it in gzip, bzip2 or zstd. Reading the result back with
//! [`crate::format::open`] must give the same records; the tests hold every reader to that.
//!
//! The real samples in `../shared/traces` (beside a checkout, never copied into it) are found
//! with [`shared_sample`], which says visibly when they are absent and fails under `CI=true`.
//!
//! ```
//! use zonekit_trace::fixture::{records, render};
//! use zonekit_trace::format::{from_reader, Format, ReadOptions};
//!
//! let written = records(&Format::Msr, 100, 7);
//! let bytes = render(&Format::Msr, &written);
//! let input = Box::new(std::io::Cursor::new(bytes));
//! let read: Vec<_> = from_reader(input, "msr.csv".as_ref(), &Format::Msr, &ReadOptions::default()).map(|r| r.unwrap()).collect();
//! assert_eq!(read, written);
//! ```

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use zonekit_base::Rng;

use crate::format::text::FILETIME_UNIX_OFFSET_S;
use crate::format::Format;
use crate::record::{Op, Record};

/// The compressions the readers recognise by their magic bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Bzip2,
    Zstd,
}

impl Compression {
    pub const ALL: [Compression; 4] = [Compression::None, Compression::Gzip, Compression::Bzip2, Compression::Zstd];

    /// The file-name suffix these tools give it (`""` for none).
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => ".gz",
            Compression::Bzip2 => ".bz2",
            Compression::Zstd => ".zst",
        }
    }
}

/// 2020-01-01 00:00:00 UTC, where the generated times start (MSR's FILETIME needs a time
/// after 1970, SYSTOR's are Unix seconds).
const START_US: u64 = 1_577_836_800_000_000;
/// Volumes of the multi-volume formats.
const VOLUMES: u32 = 4;

/// `n` requests that `format` holds exactly, a pure function of (format, n, seed): times rising
/// in whole microseconds (whole seconds where the format keeps no more, nanoseconds never),
/// offsets and lengths in whole 512-byte sectors (1 to 64 KiB, within 64 MiB a volume), a
/// mix of reads and writes, and the volumes the format can name: one for the single-volume
/// formats, otherwise four, numbered in order of first appearance (as MSR's host:disk names
/// are numbered when read).
pub fn records(format: &Format, n: usize, seed: u64) -> Vec<Record> {
    let mut rng = Rng::new(seed ^ 0x7a6b_6669_7874);
    let whole_seconds = matches!(format, Format::CloudPhysicsCsv);
    let volumes = if matches!(format, Format::CloudPhysicsCsv | Format::Vscsi) { 1 } else { VOLUMES };
    let mut time_us = START_US;
    (0..n)
        .map(|i| {
            time_us += if whole_seconds { 1_000_000 * rng.below(3) } else { rng.below(2_000_000) };
            let volume = if i < volumes as usize { i as u32 } else { rng.below(volumes as u64) as u32 };
            let len_sectors = 1 + rng.below(128);
            let offset_sectors = rng.below((64 << 20) / 512 - len_sectors);
            Record { time_us, volume, offset_bytes: offset_sectors * 512, len_bytes: len_sectors * 512, op: if rng.below(10) < 6 { Op::Write } else { Op::Read } }
        })
        .collect()
}

/// `records` in `format`'s own layout, with the header line the format has. A delimited
/// format is written in its column order with its separator and units (as its spec reads
/// them); only byte, sector and KiB sizes, and s/ms/µs/ns times, are written.
pub fn render(format: &Format, records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    let secs = |us: u64| format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    let rw = |op: Op| if op == Op::Write { "W" } else { "R" };
    match format {
        Format::Systor => out.extend_from_slice(b"Timestamp,Response,IOType,LUN,Offset,Size\n"),
        Format::CloudPhysicsCsv => out.extend_from_slice(b"version,time,op,size,lbn\n"),
        _ => {}
    }
    for r in records {
        let sectors = |bytes: u64| bytes / 512;
        let line = match format {
            Format::Alibaba => format!("{},{},{},{},{}", r.volume, rw(r.op), r.offset_bytes, r.len_bytes, r.time_us),
            Format::Tencent => format!("{},{},{},{},{}", secs(r.time_us), sectors(r.offset_bytes), sectors(r.len_bytes), (r.op == Op::Write) as u8, r.volume),
            Format::Msr => format!(
                "{},host{},0,{},{},{},{}",
                (r.time_us + FILETIME_UNIX_OFFSET_S * 1_000_000) * 10,
                r.volume,
                if r.op == Op::Write { "Write" } else { "Read" },
                r.offset_bytes,
                r.len_bytes,
                1234
            ),
            Format::Umass => format!("{},{},{},{},{}", r.volume, sectors(r.offset_bytes), r.len_bytes, if r.op == Op::Write { "w" } else { "r" }, secs(r.time_us)),
            Format::Systor => format!("{},0.000150,{},{},{},{}", secs(r.time_us), rw(r.op), r.volume, r.offset_bytes, r.len_bytes),
            Format::CloudPhysicsCsv => format!("1,{},{},{},{}", r.time_us / 1_000_000, if r.op == Op::Write { "2a" } else { "28" }, r.len_bytes, sectors(r.offset_bytes)),
            Format::DiskSim => format!("{} {} {} {} {}", r.time_us * 1000, r.volume, sectors(r.offset_bytes), sectors(r.len_bytes), (r.op == Op::Read) as u8),
            Format::Vscsi => {
                out.extend_from_slice(&vscsi_record(r));
                continue;
            }
            Format::Delimited(d) => d.render(r),
        };
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out
}

/// One 32-byte vscsi v1 record (see `format/vscsi.rs`).
fn vscsi_record(r: &Record) -> [u8; 32] {
    let mut b = [0u8; 32];
    b[4..8].copy_from_slice(&(r.len_bytes as u32).to_le_bytes());
    b[12..14].copy_from_slice(&(if r.op == Op::Write { 0x2A_u16 } else { 0x28 }).to_le_bytes());
    b[14..16].copy_from_slice(&0x100_u16.to_le_bytes());
    b[16..24].copy_from_slice(&(r.offset_bytes / 512).to_le_bytes());
    b[24..32].copy_from_slice(&r.time_us.to_le_bytes());
    b
}

/// `bytes` compressed as the tools of that format write them.
pub fn compress(bytes: &[u8], compression: Compression) -> Vec<u8> {
    match compression {
        Compression::None => bytes.to_vec(),
        Compression::Gzip => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(bytes).expect("writing to memory");
            gz.finish().expect("writing to memory")
        }
        Compression::Bzip2 => {
            let mut out = Vec::new();
            bzip2::read::BzEncoder::new(bytes, bzip2::Compression::fast()).read_to_end(&mut out).expect("reading from memory");
            out
        }
        Compression::Zstd => ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest),
    }
}

/// Writes `n` records of `format` (see [`records`]) into `dir`, compressed, as
/// `fixture.FORMAT[.gz|.bz2|.zst]`; returns the path and the records it holds.
pub fn write(dir: &Path, format: &Format, compression: Compression, n: usize, seed: u64) -> std::io::Result<(PathBuf, Vec<Record>)> {
    let recs = records(format, n, seed);
    let extension = if matches!(format, Format::Vscsi) { "vscsi" } else { format.name() };
    let path = dir.join(format!("fixture.{extension}{}", compression.suffix()));
    std::fs::write(&path, compress(&render(format, &recs), compression))?;
    Ok((path, recs))
}

/// The real sample `name` in `../shared/traces` beside the checkout (or in
/// `$ZONEKIT_SHARED_TRACES`), for the tests that check a reader against the counts a sample's
/// source publishes. When the folder is absent it prints `skipped: ../shared/traces not found`
/// on the test's own stderr (past the test harness's capture, so it shows) and returns `None`;
/// under `CI=true` it panics instead, so CI never passes without them.
pub fn shared_sample(name: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os("ZONEKIT_SHARED_TRACES") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces"),
    };
    if dir.is_dir() {
        let path = dir.join(name);
        assert!(path.exists(), "{} is missing from {}", name, dir.display());
        return Some(path);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("../shared/traces not found at {} and CI=true: the tests of the real samples must run in CI", dir.display());
    }
    let _ = writeln!(std::io::stderr(), "skipped: ../shared/traces not found ({name}, looked in {})", dir.display());
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{from_reader, Delimited, ReadOptions};

    fn every_format() -> Vec<Format> {
        let mut all: Vec<Format> = Format::NAMES.iter().filter(|n| **n != "delimited").map(|n| n.parse().unwrap()).collect();
        all.push(Format::Delimited(Delimited::parse("time=0:ms offset=1:sector size=3:sector op=4:R/W volume=6", Some(';'), false).unwrap()));
        all
    }

    #[test]
    fn every_reader_reads_back_what_was_rendered_under_every_compression() {
        for format in every_format() {
            for compression in Compression::ALL {
                let written = records(&format, 500, 11);
                let bytes = compress(&render(&format, &written), compression);
                let input = crate::format::decompress_reader(Box::new(std::io::Cursor::new(bytes)), Path::new("fixture")).unwrap();
                let read: Vec<Record> = from_reader(input, Path::new("fixture"), &format, &ReadOptions::default()).map(|r| r.unwrap()).collect();
                assert!(
                    read == written,
                    "{} under {compression:?}: read back {} records, the first difference at {:?}",
                    format.name(),
                    read.len(),
                    read.iter().zip(&written).position(|(a, b)| a != b)
                );
            }
        }
    }

    #[test]
    fn records_are_a_function_of_format_count_and_seed() {
        assert_eq!(records(&Format::Alibaba, 50, 3), records(&Format::Alibaba, 50, 3));
        assert_ne!(records(&Format::Alibaba, 50, 3), records(&Format::Alibaba, 50, 4));
        assert!(records(&Format::Vscsi, 50, 3).iter().all(|r| r.volume == 0));
        assert_eq!(records(&Format::Tencent, 50, 3).iter().map(|r| r.volume).max(), Some(VOLUMES - 1));
    }
}

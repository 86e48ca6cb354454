//! The Zonekit binary block trace: fixed-size records, memory-mapped for fast repeated replays.
//!
//! # Format (version 1, little-endian)
//!
//! Header, 128 bytes: `0` magic `ZKTRACE\0`; `8` version u32; `12` block size u32; `16` record
//! count u64; `24` write count u64; `32` flags u32 (bit 0: next-write times present); `36`
//! reserved u32; `40` source, 64 bytes NUL-padded UTF-8; `104` reserved; `124` CRC-32 of bytes
//! 0..124.
//!
//! Records, 32 bytes each, from byte 128: `0` time µs u64; `8` block number u64; `16` volume
//! u32; `20` op u8 (0 read, 1 write); `21` reserved 3 bytes; `24` next write u64: for a write,
//! the write index (0-based count of block writes) of the next write of the same block, or
//! `u64::MAX` if there is none (or not annotated); `u64::MAX` for reads.
//!
//! Invariants: the file length is exactly 128 + 32 × record count; the header's write count
//! equals the number of write records; when flag bit 0 is set, every next-write index is
//! greater than the record's own write index and less than the write count, or `u64::MAX`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapMut};

use crate::blocks::{BlockIo, BlockMap, DistinctCounter};
use crate::record::{Op, Result, TraceError};

const MAGIC: &[u8; 8] = b"ZKTRACE\0";
const VERSION: u32 = 1;
pub const HEADER_BYTES: usize = 128;
pub const RECORD_BYTES: usize = 32;
const SOURCE_BYTES: usize = 64;
const FLAG_NEXT_WRITE: u32 = 1;
/// "No next write".
pub const NEVER: u64 = u64::MAX;

/// A block access with its future knowledge.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockRecord {
    pub io: BlockIo,
    /// Write index of the next write to the same block ([`NEVER`] if none or not annotated).
    pub next_write: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Header {
    pub block_size_bytes: u32,
    pub records: u64,
    pub writes: u64,
    pub has_next_write: bool,
    pub source: String,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut h = [0u8; HEADER_BYTES];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&self.block_size_bytes.to_le_bytes());
        h[16..24].copy_from_slice(&self.records.to_le_bytes());
        h[24..32].copy_from_slice(&self.writes.to_le_bytes());
        h[32..36].copy_from_slice(&(if self.has_next_write { FLAG_NEXT_WRITE } else { 0 }).to_le_bytes());
        let src = self.source.as_bytes();
        let n = src.len().min(SOURCE_BYTES);
        h[40..40 + n].copy_from_slice(&src[..n]);
        let crc = crc32(&h[..124]);
        h[124..128].copy_from_slice(&crc.to_le_bytes());
        h
    }

    fn decode(h: &[u8], path: &Path) -> Result<Header> {
        let bad = |reason: &str| TraceError::Format { path: path.to_path_buf(), reason: reason.to_string() };
        if h.len() < HEADER_BYTES || &h[0..8] != MAGIC {
            return Err(bad("not a zonekit binary trace (bad magic)"));
        }
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().unwrap());
        if u32_at(8) != VERSION {
            return Err(bad(&format!("binary trace version {} (this build reads {VERSION})", u32_at(8))));
        }
        if crc32(&h[..124]) != u32_at(124) {
            return Err(bad("header checksum mismatch: the file is corrupt"));
        }
        let src = &h[40..40 + SOURCE_BYTES];
        let len = src.iter().position(|&b| b == 0).unwrap_or(SOURCE_BYTES);
        Ok(Header {
            block_size_bytes: u32_at(12),
            records: u64_at(16),
            writes: u64_at(24),
            has_next_write: u32_at(32) & FLAG_NEXT_WRITE != 0,
            source: String::from_utf8_lossy(&src[..len]).into_owned(),
        })
    }
}

/// CRC-32 (IEEE), bitwise: only headers are checksummed, so speed does not matter.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[inline]
fn encode_record(r: &BlockRecord) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    b[0..8].copy_from_slice(&r.io.time_us.to_le_bytes());
    b[8..16].copy_from_slice(&r.io.block.to_le_bytes());
    b[16..20].copy_from_slice(&r.io.volume.to_le_bytes());
    b[20] = (r.io.op == Op::Write) as u8;
    b[24..32].copy_from_slice(&r.next_write.to_le_bytes());
    b
}

#[inline]
fn decode_record(b: &[u8]) -> BlockRecord {
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    BlockRecord {
        io: BlockIo {
            time_us: u64_at(0),
            block: u64_at(8),
            volume: u32::from_le_bytes(b[16..20].try_into().unwrap()),
            op: if b[20] == 1 { Op::Write } else { Op::Read },
        },
        next_write: u64_at(24),
    }
}

/// Writes a binary trace record by record; [`BinaryWriter::finish`] writes the header.
pub struct BinaryWriter {
    out: BufWriter<File>,
    path: PathBuf,
    header: Header,
}

impl BinaryWriter {
    pub fn create(path: &Path, block_size_bytes: u32, source: &str) -> Result<BinaryWriter> {
        let io = |e| TraceError::Io { context: format!("{}: create", path.display()), source: e };
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path).map_err(io)?);
        out.write_all(&[0u8; HEADER_BYTES]).map_err(io)?;
        let header = Header { block_size_bytes, records: 0, writes: 0, has_next_write: false, source: source.to_string() };
        Ok(BinaryWriter { out, path: path.to_path_buf(), header })
    }

    #[inline]
    pub fn push(&mut self, io: &BlockIo) -> Result<()> {
        self.out
            .write_all(&encode_record(&BlockRecord { io: *io, next_write: NEVER }))
            .map_err(|e| TraceError::Io { context: format!("{}: write", self.path.display()), source: e })?;
        self.header.records += 1;
        self.header.writes += (io.op == Op::Write) as u64;
        Ok(())
    }

    pub fn finish(mut self) -> Result<Header> {
        let io = |e| TraceError::Io { context: format!("{}: finish", self.path.display()), source: e };
        self.out.seek(SeekFrom::Start(0)).map_err(io)?;
        self.out.write_all(&self.header.encode()).map_err(io)?;
        self.out.flush().map_err(io)?;
        Ok(self.header)
    }
}

/// A memory-mapped binary trace.
pub struct BinaryTrace {
    map: Mmap,
    header: Header,
}

fn check_len(path: &Path, len: u64, header: &Header) -> Result<()> {
    let expected = HEADER_BYTES as u64 + header.records * RECORD_BYTES as u64;
    if len != expected {
        return Err(TraceError::Format {
            path: path.to_path_buf(),
            reason: format!("file is {len} bytes, the header's {} records need {expected}: truncated or corrupt", header.records),
        });
    }
    Ok(())
}

impl BinaryTrace {
    pub fn open(path: &Path) -> Result<BinaryTrace> {
        let file = File::open(path).map_err(|e| TraceError::Io { context: format!("{}: open", path.display()), source: e })?;
        // SAFETY: the map is read-only; a concurrent writer could change the bytes under us but
        // not make them unsafe to read as plain integers.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| TraceError::Io { context: format!("{}: mmap", path.display()), source: e })?;
        let header = Header::decode(&map[..map.len().min(HEADER_BYTES)], path)?;
        check_len(path, map.len() as u64, &header)?;
        Ok(BinaryTrace { map, header })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn len(&self) -> usize {
        self.header.records as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, i: usize) -> BlockRecord {
        decode_record(&self.map[HEADER_BYTES + i * RECORD_BYTES..][..RECORD_BYTES])
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = BlockRecord> + ExactSizeIterator + '_ {
        self.map[HEADER_BYTES..].chunks_exact(RECORD_BYTES).map(decode_record)
    }
}

/// What [`annotate_next_write`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AnnotateStats {
    pub writes: u64,
    pub distinct_blocks: u64,
    pub never_rewritten: u64,
    pub map_bytes: u64,
}

/// Adds future knowledge to a binary trace in place: a backward pass stores, in every write
/// record, the write index of the next write of the same block. Memory is one [`BlockMap`]
/// entry (15 B) per distinct written block; records are streamed through the mapping.
pub fn annotate_next_write(path: &Path) -> Result<AnnotateStats> {
    let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| TraceError::Io { context: format!("{}: open", path.display()), source: e })?;
    // SAFETY: we hold the only writable mapping of a file this process created or owns.
    let mut map = unsafe { MmapMut::map_mut(&file) }.map_err(|e| TraceError::Io { context: format!("{}: mmap", path.display()), source: e })?;
    let mut header = Header::decode(&map[..map.len().min(HEADER_BYTES)], path)?;
    check_len(path, map.len() as u64, &header)?;
    if header.writes >= u32::MAX as u64 {
        return Err(TraceError::Invalid(format!("{}: {} writes exceed the 2^32 the annotation pass supports", path.display(), header.writes)));
    }
    let records = &mut map[HEADER_BYTES..];
    // Pass 1: estimate distinct written blocks so the map is sized once.
    let mut counter = DistinctCounter::new();
    for r in records.chunks_exact(RECORD_BYTES) {
        let rec = decode_record(r);
        if rec.io.op == Op::Write {
            counter.add(rec.io.key());
        }
    }
    let mut next: BlockMap<u32> = BlockMap::with_capacity((counter.estimate() as f64 * 1.04) as usize + 16);
    // Pass 2, backward: remember each block's most recent (in reverse: next) write index.
    let mut write_index = header.writes;
    let mut never = 0;
    for r in records.chunks_exact_mut(RECORD_BYTES).rev() {
        let rec = decode_record(r);
        if rec.io.op != Op::Write {
            continue;
        }
        write_index -= 1;
        // Stored as index + 1 so that the map's default 0 means "no later write".
        let (slot, _) = next.entry(rec.io.key());
        let later = if *slot == 0 { NEVER } else { (*slot - 1) as u64 };
        never += (later == NEVER) as u64;
        r[24..32].copy_from_slice(&later.to_le_bytes());
        *slot = (write_index + 1) as u32;
    }
    debug_assert_eq!(write_index, 0);
    header.has_next_write = true;
    map[..HEADER_BYTES].copy_from_slice(&header.encode());
    map.flush().map_err(|e| TraceError::Io { context: format!("{}: flush", path.display()), source: e })?;
    Ok(AnnotateStats { writes: header.writes, distinct_blocks: next.len() as u64, never_rewritten: never, map_bytes: next.memory_bytes() as u64 })
}

/// Future knowledge for a write stream already in memory (generated workloads): for each write
/// `i` of `keys`, the index of the next write of the same key, or [`NEVER`].
pub fn next_write_indices(keys: &[u64]) -> Vec<u64> {
    let mut next: BlockMap<u64> = BlockMap::with_capacity(keys.len().min(1 << 24));
    let mut out = vec![NEVER; keys.len()];
    for (i, &k) in keys.iter().enumerate().rev() {
        let (slot, _) = next.entry(k);
        out[i] = if *slot == 0 { NEVER } else { *slot - 1 };
        *slot = i as u64 + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(t: u64, block: u64, op: Op) -> BlockIo {
        BlockIo { time_us: t, volume: 1, block, op }
    }

    #[test]
    fn round_trip_and_annotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.zkt");
        let mut w = BinaryWriter::create(&path, 4096, "unit-test").unwrap();
        // writes: #0 b5, #1 b6, read b5, #2 b5, #3 b7, #4 b6
        let stream = [io(1, 5, Op::Write), io(2, 6, Op::Write), io(3, 5, Op::Read), io(4, 5, Op::Write), io(5, 7, Op::Write), io(6, 6, Op::Write)];
        for s in &stream {
            w.push(s).unwrap();
        }
        let h = w.finish().unwrap();
        assert_eq!((h.records, h.writes), (6, 5));
        let stats = annotate_next_write(&path).unwrap();
        assert_eq!((stats.distinct_blocks, stats.never_rewritten), (3, 3));
        let t = BinaryTrace::open(&path).unwrap();
        assert!(t.header().has_next_write);
        assert_eq!(t.header().source, "unit-test");
        let got: Vec<(BlockIo, u64)> = t.iter().map(|r| (r.io, r.next_write)).collect();
        let next: Vec<u64> = got.iter().map(|g| g.1).collect();
        assert_eq!(next, vec![2, 4, NEVER, NEVER, NEVER, NEVER]);
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), stream);
        assert_eq!(next_write_indices(&[5, 6, 5, 7, 6]), vec![2, 4, NEVER, NEVER, NEVER]);
    }

    #[test]
    fn corrupt_and_truncated_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.zkt");
        let mut w = BinaryWriter::create(&path, 4096, "x").unwrap();
        w.push(&io(1, 1, Op::Write)).unwrap();
        w.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(BinaryTrace::open(&path).err().unwrap().to_string().contains("truncated"));
        let mut b = bytes.clone();
        b[13] ^= 1;
        std::fs::write(&path, &b).unwrap();
        assert!(BinaryTrace::open(&path).err().unwrap().to_string().contains("checksum"));
        std::fs::write(&path, b"hello").unwrap();
        assert!(BinaryTrace::open(&path).err().unwrap().to_string().contains("bad magic"));
    }
}

//! The Zonekit binary block trace: fixed-size records, memory-mapped for fast repeated replays.
//!
//! # Format (version 1, little-endian)
//!
//! Header, 128 bytes: `0` magic `ZKTRACE\0`; `8` version u32; `12` block size u32; `16` record
//! count u64; `24` write count u64; `32` flags u32 (bit 0: next-write times present; bit 1:
//! distinct-block estimate present; bit 2: window checksums present); `36` reserved u32; `40` source, 64 bytes NUL-padded UTF-8;
//! `104` distinct written blocks, the HyperLogLog estimate of [`DistinctCounter`] over the write
//! records' keys, u64 (0 unless flag bit 1); `112` reserved; `124` CRC-32 of bytes 0..124.
//! Files written before the estimate existed have zeros there and flag bit 1 clear, so they
//! read as "no estimate".
//!
//! Records, 32 bytes each, from byte 128: `0` time µs u64; `8` block number u64; `16` volume
//! u32; `20` op u8 (0 read, 1 write); `21` flags u8 (bit 0: first block of its request); `22`
//! reserved 2 bytes; `24` next write u64: for a write,
//! the write index (0-based count of block writes) of the next write of the same block, or
//! `u64::MAX` if there is none (or not annotated); `u64::MAX` for reads.
//!
//! Window checksums (flag bit 2), after the records: the CRC-32 (IEEE) of each window of
//! [`WINDOW_RECORDS`] records' bytes (the last window may be shorter), u32 each. Every reader
//! verifies a window before it hands out any of its records, so a flipped byte anywhere in a
//! record is an error naming the window, not another valid record replayed in silence (a
//! record has no room for a checksum of its own, and per-record plausibility checks cannot
//! tell a flipped time or block number from a real one). Files written before the checksums
//! have flag bit 2 clear and are read unverified, as before.
//!
//! Invariants: the file length is exactly 128 + 32 × record count (+ 4 × windows with the
//! checksums); the header's write count equals the number of write records; when flag bit 0 is
//! set, every next-write index is greater than the record's own write index and less than the
//! write count, or `u64::MAX`.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use zonekit_base::atomic::AtomicFile;

use crate::blocks::{BlockIo, BlockMap, DistinctCounter};
use crate::record::{Op, Result, TraceError};

const MAGIC: &[u8; 8] = b"ZKTRACE\0";
const VERSION: u32 = 1;
pub const HEADER_BYTES: usize = 128;
pub const RECORD_BYTES: usize = 32;
const SOURCE_BYTES: usize = 64;
const FLAG_NEXT_WRITE: u32 = 1;
const FLAG_DISTINCT: u32 = 2;
const FLAG_CHECKSUMS: u32 = 4;
/// "No next write".
pub use zonekit_base::NEVER;

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
    /// [`DistinctCounter::estimate`] over the keys of every write record, as the writer saw
    /// them: a replay sizes its device from it without a pass over the trace.
    pub distinct_writes_estimate: Option<u64>,
    /// The records' windows carry checksums (see the module doc).
    pub checksums: bool,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut h = [0u8; HEADER_BYTES];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&self.block_size_bytes.to_le_bytes());
        h[16..24].copy_from_slice(&self.records.to_le_bytes());
        h[24..32].copy_from_slice(&self.writes.to_le_bytes());
        let flags = if self.has_next_write { FLAG_NEXT_WRITE } else { 0 }
            | if self.distinct_writes_estimate.is_some() { FLAG_DISTINCT } else { 0 }
            | if self.checksums { FLAG_CHECKSUMS } else { 0 };
        h[32..36].copy_from_slice(&flags.to_le_bytes());
        h[104..112].copy_from_slice(&self.distinct_writes_estimate.unwrap_or(0).to_le_bytes());
        let src = self.source.as_bytes();
        let n = src.len().min(SOURCE_BYTES);
        h[40..40 + n].copy_from_slice(&src[..n]);
        let crc = crc32fast::hash(&h[..124]);
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
        if crc32fast::hash(&h[..124]) != u32_at(124) {
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
            distinct_writes_estimate: (u32_at(32) & FLAG_DISTINCT != 0).then(|| u64_at(104)),
            checksums: u32_at(32) & FLAG_CHECKSUMS != 0,
        })
    }

    fn windows(&self) -> u64 {
        self.records.div_ceil(WINDOW_RECORDS as u64)
    }

    /// Bytes of the window checksums after the records.
    fn trailer_bytes(&self) -> u64 {
        if self.checksums {
            4 * self.windows()
        } else {
            0
        }
    }

    fn trailer_offset(&self) -> u64 {
        HEADER_BYTES as u64 + self.records * RECORD_BYTES as u64
    }
}

/// The window checksums of a trace (empty without them), read from after its records.
fn read_checksums(file: &File, path: &Path, header: &Header) -> Result<Vec<u32>> {
    let mut bytes = vec![0u8; header.trailer_bytes() as usize];
    std::os::unix::fs::FileExt::read_exact_at(file, &mut bytes, header.trailer_offset())
        .map_err(|e| TraceError::Io { context: format!("{}: read checksums", path.display()), error: e })?;
    Ok(bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect())
}

/// Checks window `k`'s records (`bytes`) against its checksum, if the trace has them.
fn verify_window(path: &Path, checksums: &[u32], k: u64, bytes: &[u8]) -> Result<()> {
    match checksums.get(k as usize) {
        Some(&crc) if crc32fast::hash(bytes) != crc => {
            let first = k * WINDOW_RECORDS as u64;
            let last = first + (bytes.len() / RECORD_BYTES) as u64 - 1;
            Err(TraceError::Format {
                path: path.to_path_buf(),
                reason: format!(
                    "records {first}..={last} (bytes {}..{}) do not match their checksum: the file is damaged",
                    HEADER_BYTES as u64 + first * RECORD_BYTES as u64,
                    HEADER_BYTES as u64 + (last + 1) * RECORD_BYTES as u64
                ),
            })
        }
        _ => Ok(()),
    }
}

#[inline]
fn encode_record(r: &BlockRecord) -> [u8; RECORD_BYTES] {
    let mut b = [0u8; RECORD_BYTES];
    b[0..8].copy_from_slice(&r.io.time_us.to_le_bytes());
    b[8..16].copy_from_slice(&r.io.block.to_le_bytes());
    b[16..20].copy_from_slice(&r.io.volume.to_le_bytes());
    b[20] = (r.io.op == Op::Write) as u8;
    b[21] = r.io.starts_request as u8;
    b[24..32].copy_from_slice(&r.next_write.to_le_bytes());
    b
}

#[inline(always)]
fn decode_record(b: &[u8]) -> BlockRecord {
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    BlockRecord {
        io: BlockIo {
            time_us: u64_at(0),
            block: u64_at(8),
            volume: u32::from_le_bytes(b[16..20].try_into().unwrap()),
            op: if b[20] == 1 { Op::Write } else { Op::Read },
            starts_request: b[21] & 1 == 1,
        },
        next_write: u64_at(24),
    }
}

/// Why a record cannot have been written by [`BinaryWriter`] (a damaged or foreign file), if it
/// cannot (the slow path of [`BinaryStream`]'s per-record test, which it must agree with).
fn impossible(raw: &[u8], r: &BlockRecord, write_index: u64, annotated: bool) -> Option<String> {
    if raw[20] > 1 || raw[21] > 1 || raw[22] != 0 || raw[23] != 0 {
        return Some(format!("flag bytes {:?} are not 0 or 1 (op, request start) and zero padding", &raw[20..24]));
    }
    if r.io.volume > crate::blocks::MAX_VOLUME || r.io.block >> crate::blocks::BLOCK_BITS != 0 {
        return Some(format!("volume {} block {} is beyond the format's range (volume < 2^24, block < 2^40)", r.io.volume, r.io.block));
    }
    if r.next_write != NEVER {
        if !annotated || r.io.op == Op::Read {
            return Some(format!(
                "next write {} on a {} (only annotated writes carry one)",
                r.next_write,
                if r.io.op == Op::Read { "read" } else { "write of a trace without next-write times" }
            ));
        }
        if r.next_write <= write_index {
            return Some(format!("next write {} is not after this write (write {write_index})", r.next_write));
        }
    }
    None
}

/// Writes a binary trace record by record; [`BinaryWriter::finish`] writes the header.
pub struct BinaryWriter {
    /// Written aside, so that a writer killed before [`BinaryWriter::finish`] leaves no file
    /// under the trace's name.
    out: AtomicFile,
    path: PathBuf,
    header: Header,
    distinct: DistinctCounter,
    /// The checksum of the window being written, and of those before it.
    window: crc32fast::Hasher,
    checksums: Vec<u32>,
}

impl BinaryWriter {
    pub fn create(path: &Path, block_size_bytes: u32, source: &str) -> Result<BinaryWriter> {
        let io = |e| TraceError::Io { context: format!("{}: create", path.display()), error: e };
        let mut out = AtomicFile::create(path).map_err(io)?;
        out.write_all(&[0u8; HEADER_BYTES]).map_err(io)?;
        let header = Header { block_size_bytes, records: 0, writes: 0, has_next_write: false, source: source.to_string(), distinct_writes_estimate: None, checksums: true };
        Ok(BinaryWriter { out, path: path.to_path_buf(), header, distinct: DistinctCounter::new(), window: crc32fast::Hasher::new(), checksums: Vec::new() })
    }

    #[inline]
    pub fn push(&mut self, io: &BlockIo) -> Result<()> {
        let record = encode_record(&BlockRecord { io: *io, next_write: NEVER });
        self.out.write_all(&record).map_err(|e| TraceError::Io { context: format!("{}: write", self.path.display()), error: e })?;
        self.window.update(&record);
        self.header.records += 1;
        if self.header.records % WINDOW_RECORDS as u64 == 0 {
            self.checksums.push(std::mem::take(&mut self.window).finalize());
        }
        if io.op == Op::Write {
            self.header.writes += 1;
            self.distinct.add(io.key());
        }
        Ok(())
    }

    /// Completes the trace under its temporary name ([`AtomicFile::temp_path`]), for a writer
    /// that annotates it ([`annotate_next_write`]) before [`AtomicFile::commit`] publishes it.
    pub fn finish_aside(mut self) -> Result<(Header, AtomicFile)> {
        let io = |e| TraceError::Io { context: format!("{}: finish", self.path.display()), error: e };
        self.header.distinct_writes_estimate = Some(self.distinct.estimate());
        if self.header.records % WINDOW_RECORDS as u64 != 0 {
            self.checksums.push(std::mem::take(&mut self.window).finalize());
        }
        let trailer: Vec<u8> = self.checksums.iter().flat_map(|c| c.to_le_bytes()).collect();
        self.out.write_all(&trailer).map_err(io)?;
        let file = self.out.file_mut().map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(&self.header.encode()).map_err(io)?;
        Ok((self.header, self.out))
    }

    /// Completes the trace and publishes it under its name, whole.
    pub fn finish(self) -> Result<Header> {
        let path = self.path.clone();
        let (header, out) = self.finish_aside()?;
        out.commit().map_err(|e| TraceError::Io { context: format!("{}: commit", path.display()), error: e })?;
        Ok(header)
    }
}

/// A memory-mapped binary trace.
pub struct BinaryTrace {
    map: Mmap,
    header: Header,
}

fn check_len(path: &Path, len: u64, header: &Header) -> Result<()> {
    let expected = header.records.checked_mul(RECORD_BYTES as u64).and_then(|r| r.checked_add(HEADER_BYTES as u64 + header.trailer_bytes()));
    if Some(len) != expected {
        return Err(TraceError::Format {
            path: path.to_path_buf(),
            reason: match expected {
                Some(expected) => format!("file is {len} bytes, the header's {} records need {expected}: truncated or corrupt", header.records),
                None => format!("the header's {} records are more than a file can hold: corrupt", header.records),
            },
        });
    }
    Ok(())
}

impl BinaryTrace {
    pub fn open(path: &Path) -> Result<BinaryTrace> {
        let file = File::open(path).map_err(|e| TraceError::Io { context: format!("{}: open", path.display()), error: e })?;
        // SAFETY: the map is read-only; a concurrent writer could change the bytes under us but
        // not make them unsafe to read as plain integers.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| TraceError::Io { context: format!("{}: mmap", path.display()), error: e })?;
        let header = Header::decode(&map[..map.len().min(HEADER_BYTES)], path)?;
        check_len(path, map.len() as u64, &header)?;
        // Random access cannot check a window per read: every window is checked here.
        let checksums = read_checksums(&file, path, &header)?;
        let records = &map[HEADER_BYTES..header.trailer_offset() as usize];
        for (k, window) in records.chunks(WINDOW_RECORDS * RECORD_BYTES).enumerate() {
            verify_window(path, &checksums, k as u64, window)?;
        }
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
        self.map[HEADER_BYTES..self.header.trailer_offset() as usize].chunks_exact(RECORD_BYTES).map(decode_record)
    }
}

/// Window of records a streaming pass holds in memory (4 MiB), and the unit of checksums.
pub const WINDOW_RECORDS: usize = 128 * 1024;

/// Reads a binary trace front to back through a fixed 4 MiB window, so a pass over a trace of
/// any size keeps only the window resident (a memory map would make the whole file resident).
pub struct BinaryStream {
    file: File,
    path: PathBuf,
    header: Header,
    checksums: Vec<u32>,
    next: u64,
    buf: Vec<u8>,
    at: usize,
    /// Write records in the windows read so far.
    writes_seen: u64,
    /// Offset in `buf` of the window's first impossible record (`usize::MAX`: none), and its
    /// write index: checked once per window in a tight loop, so `next` only compares offsets.
    bad_at: usize,
    bad_write_index: u64,
}

impl BinaryStream {
    pub fn open(path: &Path) -> Result<BinaryStream> {
        let file = File::open(path).map_err(|e| TraceError::Io { context: format!("{}: open", path.display()), error: e })?;
        let len = file.metadata().map_err(|e| TraceError::Io { context: format!("{}: stat", path.display()), error: e })?.len();
        let mut h = vec![0u8; HEADER_BYTES.min(len as usize)];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut h, 0).map_err(|e| TraceError::Io { context: format!("{}: read header", path.display()), error: e })?;
        let header = Header::decode(&h, path)?;
        check_len(path, len, &header)?;
        let checksums = read_checksums(&file, path, &header)?;
        Ok(BinaryStream { file, path: path.to_path_buf(), header, checksums, next: 0, buf: Vec::new(), at: 0, writes_seen: 0, bad_at: usize::MAX, bad_write_index: 0 })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }
}

impl BinaryStream {
    /// Finds the window's first record that [`BinaryWriter`] cannot have written: one cheap
    /// test per record (op and request-start bytes 0 or 1, zero padding, volume and block in
    /// range, a next write only on annotated writes and after them); the reason is worked out
    /// by [`impossible`] only for a record that fails it.
    fn check_window(&mut self) {
        self.bad_at = usize::MAX;
        // Branch-free over the whole window (it is read twice per replay, so it must cost
        // about nothing); only a window that fails is scanned again for its first bad record.
        let annotated = self.header.has_next_write as u64;
        let (mut bad, mut write_index) = (0u64, self.writes_seen);
        for raw in self.buf.chunks_exact(RECORD_BYTES) {
            let word = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().unwrap());
            let (block, volume_flags, next) = (word(8), word(16), word(24));
            let is_write = (volume_flags >> 32) & 1;
            // Op and request-start bytes 0 or 1, zero padding; volume < 2^24; block < 2^40.
            bad |= (volume_flags & 0xFFFF_FEFE_FF00_0000) | (block >> crate::blocks::BLOCK_BITS);
            // A next write only on an annotated write, and after it.
            let has_next = (next != NEVER) as u64;
            bad |= has_next & ((annotated ^ 1) | (is_write ^ 1) | (next <= write_index) as u64);
            write_index += is_write;
        }
        if bad == 0 {
            self.writes_seen = write_index;
            return;
        }
        for (i, raw) in self.buf.chunks_exact(RECORD_BYTES).enumerate() {
            let r = decode_record(raw);
            if impossible(raw, &r, self.writes_seen, self.header.has_next_write).is_some() {
                (self.bad_at, self.bad_write_index) = (i * RECORD_BYTES, self.writes_seen);
                return;
            }
            self.writes_seen += (r.io.op == Op::Write) as u64;
        }
    }

    /// The error for the impossible record at `self.at`; the stream ends there, since what
    /// follows a damaged record cannot be trusted either.
    #[cold]
    fn refuse(&mut self) -> TraceError {
        let index = self.next - (self.buf.len() / RECORD_BYTES) as u64 + (self.at / RECORD_BYTES) as u64;
        let raw = &self.buf[self.at..self.at + RECORD_BYTES];
        let why = impossible(raw, &decode_record(raw), self.bad_write_index, self.header.has_next_write).unwrap_or_else(|| "impossible record".into());
        self.next = self.header.records;
        self.buf.clear();
        self.at = 0;
        self.bad_at = usize::MAX;
        TraceError::Format { path: self.path.clone(), reason: format!("record {index} (byte {}): {why}", HEADER_BYTES as u64 + index * RECORD_BYTES as u64) }
    }
}

impl BinaryStream {
    /// Reads the next window into `buf` if the current one is used up: `false` at the end.
    fn fill(&mut self) -> Result<bool> {
        if self.at < self.buf.len() {
            return Ok(true);
        }
        let left = self.header.records - self.next;
        if left == 0 {
            return Ok(false);
        }
        let n = (left as usize).min(WINDOW_RECORDS);
        self.buf.resize(n * RECORD_BYTES, 0);
        let offset = HEADER_BYTES as u64 + self.next * RECORD_BYTES as u64;
        let read = std::os::unix::fs::FileExt::read_exact_at(&self.file, &mut self.buf, offset)
            .map_err(|e| TraceError::Io { context: format!("{}: read", self.path.display()), error: e })
            .and_then(|()| verify_window(&self.path, &self.checksums, self.next / WINDOW_RECORDS as u64, &self.buf));
        if let Err(e) = read {
            self.next = self.header.records;
            self.buf.clear();
            self.at = 0;
            return Err(e);
        }
        self.next += n as u64;
        self.at = 0;
        self.check_window();
        Ok(true)
    }

    /// Appends up to `max` records to `batch`, a window's worth at a time (one tight loop
    /// instead of a call per record): fewer only at the end of the trace. A damaged record
    /// ends the stream with its error, after the records before it were appended.
    pub fn read_batch(&mut self, batch: &mut Vec<BlockRecord>, max: usize) -> Result<()> {
        let target = batch.len() + max;
        while batch.len() < target && self.fill()? {
            let end = self.buf.len().min(self.at + (target - batch.len()) * RECORD_BYTES).min(self.bad_at);
            batch.extend(self.buf[self.at..end].chunks_exact(RECORD_BYTES).map(decode_record));
            self.at = end;
            if self.at == self.bad_at {
                return Err(self.refuse());
            }
        }
        Ok(())
    }
}

impl Iterator for BinaryStream {
    type Item = Result<BlockRecord>;

    #[inline]
    fn next(&mut self) -> Option<Result<BlockRecord>> {
        match self.fill() {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some(Err(e)),
        }
        if self.at == self.bad_at {
            return Some(Err(self.refuse()));
        }
        let r = decode_record(&self.buf[self.at..self.at + RECORD_BYTES]);
        self.at += RECORD_BYTES;
        Some(Ok(r))
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
/// entry (about 15.6 B) per distinct written block plus a 4 MiB window of records.
pub fn annotate_next_write(path: &Path) -> Result<AnnotateStats> {
    use std::os::unix::fs::FileExt;
    let io = |what: &'static str| move |e| TraceError::Io { context: format!("{}: {what}", path.display()), error: e };
    let file = OpenOptions::new().read(true).write(true).open(path).map_err(io("open"))?;
    let len = file.metadata().map_err(io("stat"))?.len();
    let mut h = vec![0u8; HEADER_BYTES.min(len as usize)];
    file.read_exact_at(&mut h, 0).map_err(io("read header"))?;
    let mut header = Header::decode(&h, path)?;
    check_len(path, len, &header)?;
    if header.writes >= u32::MAX as u64 {
        return Err(TraceError::Invalid(format!("{}: {} writes exceed the 2^32 the annotation pass supports", path.display(), header.writes)));
    }
    // Pass 1: estimate distinct written blocks so the map is sized once.
    let mut counter = DistinctCounter::new();
    for r in BinaryStream::open(path)? {
        let r = r?;
        if r.io.op == Op::Write {
            counter.add(r.io.key());
        }
    }
    let mut next: BlockMap<u32> = BlockMap::with_capacity(DistinctCounter::with_margin(counter.estimate()) as usize);
    // Pass 2, backward through the 4 MiB windows: remember each block's next write index.
    // Each window is checked before it is rewritten (a checksum over damaged records would
    // vouch for them), and gets its new checksum; a trace without checksums gains them.
    let old_checksums = read_checksums(&file, path, &header)?;
    let mut checksums = vec![0u32; header.windows() as usize];
    let mut write_index = header.writes;
    let mut never = 0;
    let mut window = vec![0u8; WINDOW_RECORDS * RECORD_BYTES];
    for k in (0..header.windows()).rev() {
        let (start, end) = (k * WINDOW_RECORDS as u64, ((k + 1) * WINDOW_RECORDS as u64).min(header.records));
        let bytes = &mut window[..((end - start) as usize) * RECORD_BYTES];
        let offset = HEADER_BYTES as u64 + start * RECORD_BYTES as u64;
        file.read_exact_at(bytes, offset).map_err(io("read"))?;
        verify_window(path, &old_checksums, k, bytes)?;
        for r in bytes.chunks_exact_mut(RECORD_BYTES).rev() {
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
        file.write_all_at(bytes, offset).map_err(io("write"))?;
        checksums[k as usize] = crc32fast::hash(bytes);
    }
    debug_assert_eq!(write_index, 0);
    header.has_next_write = true;
    header.checksums = true;
    let trailer: Vec<u8> = checksums.iter().flat_map(|c| c.to_le_bytes()).collect();
    file.write_all_at(&trailer, header.trailer_offset()).map_err(io("write checksums"))?;
    file.write_all_at(&header.encode(), 0).map_err(io("write header"))?;
    file.sync_data().map_err(io("sync"))?;
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
        BlockIo { time_us: t, volume: 1, block, op, starts_request: true }
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
    fn windowed_annotation_matches_the_in_memory_pass() {
        // Several 4 MiB windows, reads mixed in, blocks reused across window edges.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.zkt");
        let mut w = BinaryWriter::create(&path, 4096, "windows").unwrap();
        let mut keys = Vec::new();
        let mut x = 12345u64;
        for i in 0..(3 * WINDOW_RECORDS as u64 + 777) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let block = (x >> 33) % 5000;
            let op = if i % 7 == 0 { Op::Read } else { Op::Write };
            if op == Op::Write {
                keys.push(crate::blocks::block_key(1, block));
            }
            w.push(&io(i, block, op)).unwrap();
        }
        w.finish().unwrap();
        annotate_next_write(&path).unwrap();
        let got: Vec<u64> = BinaryStream::open(&path).unwrap().map(|r| r.unwrap()).filter(|r| r.io.op == Op::Write).map(|r| r.next_write).collect();
        assert_eq!(got, next_write_indices(&keys));
        let streamed: Vec<BlockRecord> = BinaryStream::open(&path).unwrap().map(|r| r.unwrap()).collect();
        let mapped: Vec<BlockRecord> = BinaryTrace::open(&path).unwrap().iter().collect();
        assert_eq!(streamed, mapped);
    }

    /// Every record of `path` read `max` at a time with [`BinaryStream::read_batch`], and the
    /// error that ended them; checks that only the last batch came short.
    fn read_in_batches(path: &Path, max: usize) -> (Vec<BlockRecord>, Option<String>) {
        let mut stream = BinaryStream::open(path).unwrap();
        let mut all = Vec::new();
        loop {
            let mut batch = Vec::new();
            let read = stream.read_batch(&mut batch, max);
            all.extend_from_slice(&batch);
            match read {
                Err(e) => return (all, Some(e.to_string())),
                Ok(()) if batch.len() < max => return (all, None),
                Ok(()) => assert_eq!(batch.len(), max),
            }
        }
    }

    /// The records and the error the record iterator gives.
    fn read_one_by_one(path: &Path) -> (Vec<BlockRecord>, Option<String>) {
        let results: Vec<Result<BlockRecord>> = BinaryStream::open(path).unwrap().collect();
        let error = results.iter().find_map(|r| r.as_ref().err().map(|e| e.to_string()));
        (results.into_iter().filter_map(|r| r.ok()).collect(), error)
    }

    /// The file as a writer from before window checksums wrote it: the per-record checks
    /// are all that stands between such a file's damage and a replay.
    fn without_checksums(mut bytes: Vec<u8>) -> Vec<u8> {
        let records = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
        bytes.truncate(HEADER_BYTES + records * RECORD_BYTES);
        let flags = u32::from_le_bytes(bytes[32..36].try_into().unwrap()) & !FLAG_CHECKSUMS;
        bytes[32..36].copy_from_slice(&flags.to_le_bytes());
        let crc = crc32fast::hash(&bytes[..124]);
        bytes[124..128].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    #[test]
    fn every_flipped_record_byte_fails_its_window_and_no_record_of_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.zkt");
        let mut w = BinaryWriter::create(&path, 4096, "windows").unwrap();
        let records = WINDOW_RECORDS + 5;
        for i in 0..records as u64 {
            w.push(&io(i, i % 977, if i % 5 == 0 { Op::Read } else { Op::Write })).unwrap();
        }
        w.finish().unwrap();
        annotate_next_write(&path).unwrap();
        let clean = std::fs::read(&path).unwrap();
        assert_eq!(clean.len(), HEADER_BYTES + records * RECORD_BYTES + 8);
        // Every byte of a record at each end of the first window, of the last record, and of
        // the checksums: a time or block number changed by one bit is as plausible as any.
        let places = [0, WINDOW_RECORDS - 1, records - 1].map(|r| HEADER_BYTES + r * RECORD_BYTES);
        for at in places.iter().flat_map(|&p| p..p + RECORD_BYTES).chain(clean.len() - 8..clean.len()) {
            let mut bytes = clean.clone();
            bytes[at] ^= 0x04;
            std::fs::write(&path, &bytes).unwrap();
            let (read, error) = read_one_by_one(&path);
            let window = (at.min(HEADER_BYTES + (records - 1) * RECORD_BYTES) - HEADER_BYTES) / RECORD_BYTES / WINDOW_RECORDS;
            let window = if at >= clean.len() - 8 { (at - (clean.len() - 8)) / 4 } else { window };
            assert_eq!(read.len(), window * WINDOW_RECORDS, "byte {at}: records of the damaged window were read");
            let error = error.unwrap_or_else(|| panic!("byte {at}: no error"));
            assert!(error.contains("do not match their checksum"), "byte {at}: {error}");
            assert!(BinaryTrace::open(&path).is_err(), "byte {at}: the memory map opened a damaged trace");
            let (batched, batch_error) = read_in_batches(&path, 4096);
            assert!(batched == read && batch_error == Some(error), "byte {at}");
        }
    }

    #[test]
    fn batches_hold_what_the_record_iterator_reads_and_stop_at_the_same_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.zkt");
        let mut w = BinaryWriter::create(&path, 4096, "batches").unwrap();
        let records = 2 * WINDOW_RECORDS + 333;
        for i in 0..records as u64 {
            w.push(&io(i, i % 977, if i % 5 == 0 { Op::Read } else { Op::Write })).unwrap();
        }
        w.finish().unwrap();
        let clean = without_checksums(std::fs::read(&path).unwrap());
        // Intact; damaged in the first record, mid-window, on a window's last record and on
        // the trace's last record.
        for damaged in [None, Some(0), Some(1000), Some(WINDOW_RECORDS - 1), Some(records - 1)] {
            let mut bytes = clean.clone();
            if let Some(record) = damaged {
                bytes[HEADER_BYTES + record * RECORD_BYTES + 20] = 9;
            }
            std::fs::write(&path, &bytes).unwrap();
            let (expected, expected_error) = read_one_by_one(&path);
            assert_eq!(expected.len(), damaged.unwrap_or(records), "damaged {damaged:?}");
            for max in [1, 7, 4096, WINDOW_RECORDS, WINDOW_RECORDS + 3, 3 * WINDOW_RECORDS] {
                let (got, error) = read_in_batches(&path, max);
                assert!(got == expected, "damaged {damaged:?}, batches of {max}: {} records, expected {}", got.len(), expected.len());
                assert_eq!(error, expected_error, "damaged {damaged:?}, batches of {max}");
            }
        }
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

    #[test]
    fn impossible_records_are_refused_with_their_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.zkt");
        let mut w = BinaryWriter::create(&path, 4096, "unit-test").unwrap();
        for t in 0..10 {
            w.push(&io(t, t % 3, Op::Write)).unwrap();
        }
        w.finish().unwrap();
        annotate_next_write(&path).unwrap();
        let clean = without_checksums(std::fs::read(&path).unwrap());
        let at = |record: usize, field: usize| HEADER_BYTES + record * RECORD_BYTES + field;
        // (record, byte offset in it, new byte, what the message names)
        for (record, field, value, says) in [(4, 20, 7u8, "flag bytes"), (6, 19, 0xFF, "beyond the format's range"), (7, 24, 0, "is not after this write")] {
            let mut bytes = clean.clone();
            bytes[at(record, field)] = value;
            if field == 24 {
                bytes[at(record, 24)..at(record, 32)].copy_from_slice(&1u64.to_le_bytes());
            }
            std::fs::write(&path, &bytes).unwrap();
            let results: Vec<Result<BlockRecord>> = BinaryStream::open(&path).unwrap().collect();
            assert_eq!(results.iter().filter(|r| r.is_ok()).count(), record, "records before the damaged one are read");
            let e = results.last().unwrap().as_ref().unwrap_err().to_string();
            assert!(e.contains(&format!("record {record} ")) && e.contains(says), "{e}");
        }
    }
}

//! The metadata log: every change to the file table is a checksummed record appended to one of
//! two metadata zones; a batch of records becomes durable atomically at [`MetaLog::commit`].
//! When the active zone fills, the log rolls over: the other zone is reset and receives a
//! snapshot of the whole file table (a higher generation), then logging continues there.
//!
//! # On-device format
//!
//! Each metadata zone starts with a header block: `0` magic `ZKFS-META\0\0\0` (12 bytes); `12`
//! format version u32; `16` generation u64; `24` block size u32; `28` CRC-32 of bytes 0..28.
//! The rest of the zone is log blocks, each: `0` magic `ZKML` u32; `4` CRC-32 of bytes 8..end
//! of block; `8` block sequence number u64 (counting from 0 in each generation); `16` payload
//! length u32; `20` payload. Payloads concatenate into a byte stream of records (a record may
//! span blocks): `type u8, length u32, body`. A `Commit` record ends every batch, and a *seal*
//! follows every batch: a log block with an empty payload (no other block is empty). Bodies
//! (integers little-endian, a string is `length u32, UTF-8 bytes`, an extent is `zone u32,
//! lba u64, len_bytes u64, crc32 u32` = 24 bytes):
//!
//! | type | record         | body                                   |
//! |------|----------------|----------------------------------------|
//! | 1    | `CreateFile`   | `id u64, lifetime u8, name string`     |
//! | 2    | `AppendExtent` | `id u64, extent`                       |
//! | 3    | `SetExtents`   | `id u64, count u32, count × extent`    |
//! | 4    | `Rename`       | `id u64, name string`                  |
//! | 5    | `Delete`       | `id u64`                               |
//! | 6    | `SetLifetime`  | `id u64, lifetime u8`                  |
//! | 7    | `Commit`       | empty                                  |
//!
//! An extent's `crc32` is the CRC-32 (IEEE, as `crc32fast`) of exactly its `len_bytes` bytes,
//! not of the padding after them in its last block (see [`crate::fs`] for what it costs).
//!
//! # Format versions
//!
//! Version 2 (this one) added the extent's `crc32`; version 1 extents were 20 bytes. A header
//! with a valid CRC and another version is [`LogError::Version`]: mount refuses the device with
//! a message naming both versions rather than decode records of another layout (reading a
//! version-1 image without checksums was not kept: one decoder, and no file that reads
//! unverified).
//!
//! # Recovery
//!
//! Mount reads both headers, takes the valid one with the higher generation and replays its log
//! up to the last `Commit`. If the newer zone holds no committed batch (a crash during
//! roll-over, before its snapshot committed) the older zone is used.
//!
//! Torn tail or corruption: blocks are appended one at a time, in order, and a crash stops the
//! writer, so a crash damages only the end of the zone: uncommitted blocks after the last
//! `Commit`, and at most a torn (bad magic, CRC or length) block after them with nothing written
//! behind it. So a bad block is a torn tail only when it is the zone's last written block: an
//! intact block after it means committed batches follow the damage, and replaying up to it
//! would silently drop them; two bad blocks at the end are not what a crash leaves either
//! (several damaged blocks could otherwise swallow whole sealed batches as one "torn tail"). The seal is what makes this rule
//! hold for the newest batch too: [`MetaLog::commit`] returns only after the batch *and* its
//! seal are on the device, so damage to any block of an acknowledged batch has an intact block
//! (at least the seal) behind it, while a batch torn by a crash has no seal. Damage to a seal
//! alone loses nothing (the batch before it is whole) and is treated as a torn tail. Without
//! the seal, a flipped byte in the newest batch was indistinguishable from a crash during it and
//! the batch was dropped as uncommitted: a file the log had committed was gone and fsck said
//! clean. (Images written before seals existed have none; their newest batch keeps that
//! weakness until the next commit seals it.)
//!
//! That, a block whose sequence number is not its position, an undecodable record in an intact
//! block, a seal that does not follow a `Commit`, and a damaged header in front of intact log
//! blocks are [`LogError::Corrupt`], naming the zone and the block: mount fails and writes
//! nothing. (A device that persisted a batch's blocks out of order and tore one in the middle
//! would be reported as corrupt too: refusing is the side that never loses data.)
//!
//! Recovery ([`MetaLog::recover`]) only reads. A read-write mount then calls
//! [`MetaLog::make_writable`]: if blocks follow the last commit (a torn tail), it starts a new
//! generation in the other zone from the committed records, so that nothing is ever appended
//! after a torn tail. A device where neither zone has a valid header is not a zonekit file
//! system.
//!
//! Invariants: a batch is never partly applied; a committed batch is durable (the device is
//! flushed); the snapshot that starts a generation is committed before the previous zone is
//! ever reset, so one zone always holds a complete committed state.

use zonekit_device::{DeviceError, Lba, ZoneId, ZonedDevice};

const HEADER_MAGIC: &[u8; 12] = b"ZKFS-META\0\0\0";
/// The on-device format version (see the module doc's "Format versions").
pub const VERSION: u32 = 2;
/// Bytes of one encoded [`Extent`].
const EXTENT_BYTES: usize = 24;
const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"ZKML");
const BLOCK_HEADER: usize = 20;

/// Where a piece of a file lives: `len_bytes` from `lba` in `zone` (never crossing zones),
/// and the CRC-32 of exactly those bytes as they were written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    pub zone: u32,
    pub lba: u64,
    pub len_bytes: u64,
    pub crc32: u32,
}

/// One change to the file table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    CreateFile {
        id: u64,
        name: String,
        lifetime: u8,
    },
    AppendExtent {
        id: u64,
        extent: Extent,
    },
    /// The file's extents, replaced as a whole (GC relocation, snapshots).
    SetExtents {
        id: u64,
        extents: Vec<Extent>,
    },
    Rename {
        id: u64,
        name: String,
    },
    Delete {
        id: u64,
    },
    SetLifetime {
        id: u64,
        lifetime: u8,
    },
    /// Ends a batch: everything since the previous `Commit` applies, or nothing does.
    Commit,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    #[error("not a zonekit file system: neither metadata zone {0} nor {1} has a valid header (run mkfs)")]
    NotFormatted(u32, u32),
    /// Damage in committed metadata (not a torn tail): mount refuses and writes nothing.
    #[error("corrupt metadata in zone {zone}, block {block} (byte {offset_bytes} of the zone): {reason}")]
    Corrupt { zone: u32, block: u64, offset_bytes: u64, reason: String },
    /// A valid header of another format version.
    #[error("metadata zone {zone} holds format version {found}; this zonekit reads format version {VERSION} only (version 2 added data checksums): copy the files out with the zonekit that wrote them, then mkfs")]
    Version { zone: u32, found: u32 },
    #[error("no committed metadata in either metadata zone ({0} or {1})")]
    NothingCommitted(u32, u32),
    /// A commit on a log recovered read-only (see [`MetaLog::make_writable`]).
    #[error("the metadata log is read-only (mounted read-only)")]
    ReadOnly,
    #[error("a metadata batch of {bytes} bytes does not fit a metadata zone of {capacity} bytes")]
    TooLarge { bytes: usize, capacity: usize },
    #[error(transparent)]
    Device(#[from] DeviceError),
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_extent(out: &mut Vec<u8>, e: &Extent) {
    out.extend_from_slice(&e.zone.to_le_bytes());
    out.extend_from_slice(&e.lba.to_le_bytes());
    out.extend_from_slice(&e.len_bytes.to_le_bytes());
    out.extend_from_slice(&e.crc32.to_le_bytes());
}

impl Record {
    fn kind(&self) -> u8 {
        match self {
            Record::CreateFile { .. } => 1,
            Record::AppendExtent { .. } => 2,
            Record::SetExtents { .. } => 3,
            Record::Rename { .. } => 4,
            Record::Delete { .. } => 5,
            Record::SetLifetime { .. } => 6,
            Record::Commit => 7,
        }
    }

    /// Appends the record's encoding to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut body = Vec::new();
        match self {
            Record::CreateFile { id, name, lifetime } => {
                body.extend_from_slice(&id.to_le_bytes());
                body.push(*lifetime);
                put_str(&mut body, name);
            }
            Record::AppendExtent { id, extent } => {
                body.extend_from_slice(&id.to_le_bytes());
                put_extent(&mut body, extent);
            }
            Record::SetExtents { id, extents } => {
                body.extend_from_slice(&id.to_le_bytes());
                body.extend_from_slice(&(extents.len() as u32).to_le_bytes());
                for e in extents {
                    put_extent(&mut body, e);
                }
            }
            Record::Rename { id, name } => {
                body.extend_from_slice(&id.to_le_bytes());
                put_str(&mut body, name);
            }
            Record::Delete { id } => body.extend_from_slice(&id.to_le_bytes()),
            Record::SetLifetime { id, lifetime } => {
                body.extend_from_slice(&id.to_le_bytes());
                body.push(*lifetime);
            }
            Record::Commit => {}
        }
        out.push(self.kind());
        out.extend_from_slice(&(body.len() as u32).to_le_bytes());
        out.extend_from_slice(&body);
    }

    /// Decodes the record at the start of `buf`: `Ok(None)` if `buf` ends inside it.
    pub fn decode(buf: &[u8]) -> Result<Option<(Record, usize)>, String> {
        if buf.len() < 5 {
            return Ok(None);
        }
        let len = u32::from_le_bytes(buf[1..5].try_into().unwrap()) as usize;
        let Some(body) = buf.get(5..5 + len) else { return Ok(None) };
        let mut r = Reader { buf: body, at: 0 };
        let rec = match buf[0] {
            1 => Record::CreateFile { id: r.u64()?, lifetime: r.u8()?, name: r.string()? },
            2 => Record::AppendExtent { id: r.u64()?, extent: r.extent()? },
            3 => {
                let id = r.u64()?;
                let n = r.u32()? as usize;
                if n > body.len() / EXTENT_BYTES {
                    return Err(format!("extent count {n} exceeds the record"));
                }
                Record::SetExtents { id, extents: (0..n).map(|_| r.extent()).collect::<Result<_, _>>()? }
            }
            4 => Record::Rename { id: r.u64()?, name: r.string()? },
            5 => Record::Delete { id: r.u64()? },
            6 => Record::SetLifetime { id: r.u64()?, lifetime: r.u8()? },
            7 => Record::Commit,
            other => return Err(format!("unknown record type {other}")),
        };
        if r.at != body.len() {
            return Err(format!("record type {} has {} trailing bytes", buf[0], body.len() - r.at));
        }
        Ok(Some((rec, 5 + len)))
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let s = self.buf.get(self.at..self.at + n).ok_or("record body is truncated")?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn string(&mut self) -> Result<String, String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "file name is not UTF-8".to_string())
    }
    fn extent(&mut self) -> Result<Extent, String> {
        Ok(Extent { zone: self.u32()?, lba: self.u64()?, len_bytes: self.u64()?, crc32: self.u32()? })
    }
}

/// The log writer, positioned after the last committed batch of the active zone.
pub struct MetaLog {
    zones: [ZoneId; 2],
    active: usize,
    generation: u64,
    next_seq: u64,
    block_bytes: usize,
    zone_blocks: u64,
    /// Blocks written in the active zone, header included.
    used_blocks: u64,
    pending: Vec<u8>,
    /// Blocks follow the last commit in the active zone: appending there would hide later
    /// batches from replay, so [`MetaLog::make_writable`] rolls over first.
    torn_tail: bool,
    /// False after [`MetaLog::recover`] until [`MetaLog::make_writable`]: commits are refused.
    writable: bool,
}

/// What one metadata zone's log holds.
struct Replayed {
    records: Vec<Record>,
    /// Blocks up to and including the last commit, header included.
    committed_blocks: u64,
    next_seq: u64,
    /// Blocks after the last commit (intact but uncommitted, or one torn block).
    torn_tail: bool,
}

fn header_block(generation: u64, block_bytes: usize) -> Vec<u8> {
    let mut b = vec![0u8; block_bytes];
    b[0..12].copy_from_slice(HEADER_MAGIC);
    b[12..16].copy_from_slice(&VERSION.to_le_bytes());
    b[16..24].copy_from_slice(&generation.to_le_bytes());
    b[24..28].copy_from_slice(&(block_bytes as u32).to_le_bytes());
    let crc = crc32fast::hash(&b[..28]);
    b[28..32].copy_from_slice(&crc.to_le_bytes());
    b
}

/// A log block as it was written: right magic, a payload length that fits, and its CRC.
fn intact(block: &[u8]) -> bool {
    let magic = u32::from_le_bytes(block[0..4].try_into().unwrap());
    let crc = u32::from_le_bytes(block[4..8].try_into().unwrap());
    let len = u32::from_le_bytes(block[16..20].try_into().unwrap()) as usize;
    magic == BLOCK_MAGIC && len <= block.len() - BLOCK_HEADER && crc32fast::hash(&block[8..]) == crc
}

/// A header block's generation; `Err(version)` for a valid header of another format version;
/// `Ok(None)` for no valid header.
fn parse_header(b: &[u8]) -> Result<Option<u64>, u32> {
    // The writer zeroes the rest of the block: anything else there is damage, not a header.
    if &b[0..12] != HEADER_MAGIC || crc32fast::hash(&b[..28]) != u32::from_le_bytes(b[28..32].try_into().unwrap()) || b[32..].iter().any(|&x| x != 0) {
        return Ok(None);
    }
    match u32::from_le_bytes(b[12..16].try_into().unwrap()) {
        VERSION => Ok(Some(u64::from_le_bytes(b[16..24].try_into().unwrap()))),
        other => Err(other),
    }
}

impl MetaLog {
    /// Formats the two zones: generation 1 holding an empty, committed file table.
    pub fn format(dev: &mut dyn ZonedDevice, zones: [ZoneId; 2]) -> Result<MetaLog, LogError> {
        // Over a log that recovers, the new, empty generation commits in the zone the old one
        // is not using, as a roll-over does: until that commit the old state is what mounts,
        // after it the new one, so a crash in between leaves one of them whole.
        if let Ok((old, _)) = MetaLog::recover(dev, zones) {
            let mut log = MetaLog::empty(dev, zones, 1 - old.active, old.generation + 1);
            log.writable = true;
            log.start_generation(dev, &[])?;
            return Ok(log);
        }
        for z in zones {
            dev.reset_zone(z)?;
        }
        let mut log = MetaLog::empty(dev, zones, 0, 1);
        log.writable = true;
        log.start_generation(dev, &[])?;
        Ok(log)
    }

    fn empty(dev: &dyn ZonedDevice, zones: [ZoneId; 2], active: usize, generation: u64) -> MetaLog {
        let g = dev.geometry();
        MetaLog {
            zones,
            active,
            generation,
            next_seq: 0,
            block_bytes: g.block_size_bytes as usize,
            zone_blocks: g.zone_capacity_blocks,
            used_blocks: 0,
            pending: Vec::new(),
            torn_tail: false,
            writable: false,
        }
    }

    /// Mounts read-write: [`MetaLog::recover`], then [`MetaLog::make_writable`].
    pub fn open(dev: &mut dyn ZonedDevice, zones: [ZoneId; 2]) -> Result<(MetaLog, Vec<Record>), LogError> {
        let (mut log, records) = MetaLog::recover(dev, zones)?;
        log.make_writable(dev, &records)?;
        Ok((log, records))
    }

    /// Recovers the committed records without writing anything: the log is read-only until
    /// [`MetaLog::make_writable`]. Corruption in committed records is [`LogError::Corrupt`].
    pub fn recover(dev: &mut dyn ZonedDevice, zones: [ZoneId; 2]) -> Result<(MetaLog, Vec<Record>), LogError> {
        let bs = dev.geometry().block_size_bytes as usize;
        let mut headers = Vec::new();
        for (i, z) in zones.iter().enumerate() {
            let mut b = vec![0u8; bs];
            dev.read(dev.geometry().zone_start(*z), &mut b)?;
            match parse_header(&b) {
                Ok(Some(generation)) => headers.push((generation, i)),
                Ok(None) => Self::check_headerless(dev, *z)?,
                Err(found) => return Err(LogError::Version { zone: z.0, found }),
            }
        }
        if headers.is_empty() {
            return Err(LogError::NotFormatted(zones[0].0, zones[1].0));
        }
        headers.sort_unstable_by(|a, b| b.cmp(a));
        for &(generation, i) in &headers {
            let replayed = Self::replay(dev, zones[i])?;
            if replayed.committed_blocks == 1 {
                continue; // no commit after the header: a roll-over that did not complete
            }
            let mut log = MetaLog::empty(dev, zones, i, generation);
            log.used_blocks = replayed.committed_blocks;
            log.next_seq = replayed.next_seq;
            log.torn_tail = replayed.torn_tail;
            return Ok((log, replayed.records));
        }
        Err(LogError::NothingCommitted(zones[0].0, zones[1].0))
    }

    /// Makes a recovered log writable. After a torn tail this writes: it starts a new
    /// generation in the other zone from `committed` (the records [`MetaLog::recover`]
    /// returned), so that nothing is ever appended after the torn tail.
    pub fn make_writable(&mut self, dev: &mut dyn ZonedDevice, committed: &[Record]) -> Result<(), LogError> {
        self.writable = true;
        if self.torn_tail {
            self.active = 1 - self.active;
            self.generation += 1;
            self.start_generation(dev, committed)?;
            self.torn_tail = false;
        }
        Ok(())
    }

    /// A zone without a valid header is empty, foreign, or a roll-over torn at its header; if
    /// intact log blocks follow, the header of a written log was damaged: corruption.
    fn check_headerless(dev: &mut dyn ZonedDevice, zone: ZoneId) -> Result<(), LogError> {
        let g = *dev.geometry();
        let written = dev.zone(zone)?.written_blocks().min(g.zone_capacity_blocks);
        let mut block = vec![0u8; g.block_size_bytes as usize];
        for b in 1..written {
            dev.read(Lba(g.zone_start(zone).0 + b), &mut block)?;
            if intact(&block) {
                return Err(LogError::Corrupt { zone: zone.0, block: 0, offset_bytes: 0, reason: format!("the header is damaged, but log block {b} after it is intact") });
            }
        }
        Ok(())
    }

    /// Reads a zone's log; tells a torn tail from corruption (see the module doc).
    fn replay(dev: &mut dyn ZonedDevice, zone: ZoneId) -> Result<Replayed, LogError> {
        let g = *dev.geometry();
        let bs = g.block_size_bytes as usize;
        let start = g.zone_start(zone).0;
        let written = dev.zone(zone)?.written_blocks().min(g.zone_capacity_blocks);
        let corrupt = |block: u64, reason: String| LogError::Corrupt { zone: zone.0, block, offset_bytes: block * bs as u64, reason };
        let mut stream = Vec::new();
        let mut block = vec![0u8; bs];
        let mut blocks_read = 1u64; // the header
        let mut out = Replayed { records: Vec::new(), committed_blocks: 1, next_seq: 0, torn_tail: false };
        let mut batch = Vec::new();
        let (mut parsed, mut records_parsed) = (0usize, 0u64);
        // The last record read was a `Commit` that no seal followed yet.
        let mut unsealed_commit = false;
        for b in 1..written {
            dev.read(Lba(start + b), &mut block)?;
            if !intact(&block) {
                // A torn block is the last thing a crash leaves; anything intact after it was
                // written later, so this damage is not a torn tail. Nor are two damaged blocks:
                // blocks are appended one at a time, so a crash tears at most the last.
                for later in b + 1..written {
                    dev.read(Lba(start + later), &mut block)?;
                    if intact(&block) {
                        return Err(corrupt(b, format!("bad magic, length or checksum, but block {later} after it is intact: committed records follow the damage")));
                    }
                }
                if b + 1 < written {
                    return Err(corrupt(b, format!("bad magic, length or checksum in the {} blocks from here to the end: a crash tears at most the last block", written - b)));
                }
                break;
            }
            // Blocks are written in order from sequence number 0 at block 1.
            let block_seq = u64::from_le_bytes(block[8..16].try_into().unwrap());
            if block_seq != b - 1 {
                return Err(corrupt(b, format!("sequence number {block_seq} where {} belongs", b - 1)));
            }
            let len = u32::from_le_bytes(block[16..20].try_into().unwrap()) as usize;
            blocks_read += 1;
            if len == 0 {
                // A seal: it must directly follow a batch's `Commit`.
                if !unsealed_commit || parsed != stream.len() {
                    return Err(corrupt(b, "a seal block where no batch ends".to_string()));
                }
                unsealed_commit = false;
                out.committed_blocks = blocks_read;
                out.next_seq = b;
                continue;
            }
            stream.extend_from_slice(&block[BLOCK_HEADER..BLOCK_HEADER + len]);
            loop {
                match Record::decode(&stream[parsed..]) {
                    Ok(Some((rec, n))) => {
                        parsed += n;
                        records_parsed += 1;
                        unsealed_commit = rec == Record::Commit;
                        if rec == Record::Commit {
                            out.records.append(&mut batch);
                            out.committed_blocks = blocks_read;
                            out.next_seq = b;
                        } else {
                            batch.push(rec);
                        }
                    }
                    Ok(None) => break,
                    Err(reason) => return Err(corrupt(b, format!("record {records_parsed} of the log: {reason}"))),
                }
            }
        }
        // A last batch without its seal (a crash after its `Commit` block, before the seal) is
        // replayed, but a flipped bit in its block would later look like a torn tail and drop
        // it silently: a read-write mount rolls over, so a sealed snapshot holds it (found by
        // the fault simulator, `tests/sim.rs` seed 1033131).
        out.torn_tail = written > out.committed_blocks || unsealed_commit;
        Ok(out)
    }

    /// Queues a record for the next commit.
    pub fn append(&mut self, record: &Record) {
        record.encode(&mut self.pending);
    }

    fn payload_per_block(&self) -> usize {
        self.block_bytes - BLOCK_HEADER
    }

    fn blocks_for(&self, bytes: usize) -> u64 {
        bytes.div_ceil(self.payload_per_block()) as u64
    }

    /// Writes the queued records and a `Commit`, then flushes the device: the batch is
    /// durable when this returns. If the active zone has no room, rolls over to the other zone
    /// with a snapshot (`snapshot` returns the records that rebuild the whole file table,
    /// including the batch being committed).
    pub fn commit(&mut self, dev: &mut dyn ZonedDevice, snapshot: &dyn Fn() -> Vec<Record>) -> Result<(), LogError> {
        if !self.writable {
            return Err(LogError::ReadOnly);
        }
        Record::Commit.encode(&mut self.pending);
        let needed = self.blocks_for(self.pending.len()) + 1; // and the seal
        if self.used_blocks + needed > self.zone_blocks {
            self.pending.clear();
            self.active = 1 - self.active;
            self.generation += 1;
            return self.start_generation(dev, &snapshot());
        }
        let bytes = std::mem::take(&mut self.pending);
        self.write_sealed(dev, &bytes)?;
        dev.flush()?;
        Ok(())
    }

    /// Resets the (new) active zone and writes its header and a committed snapshot.
    fn start_generation(&mut self, dev: &mut dyn ZonedDevice, snapshot: &[Record]) -> Result<(), LogError> {
        let zone = self.zones[self.active];
        dev.reset_zone(zone)?;
        dev.write(dev.geometry().zone_start(zone), &header_block(self.generation, self.block_bytes))?;
        self.used_blocks = 1;
        self.next_seq = 0;
        let mut bytes = Vec::new();
        for r in snapshot {
            r.encode(&mut bytes);
        }
        Record::Commit.encode(&mut bytes);
        // The header and the seal take a block each.
        let capacity = (self.zone_blocks as usize).saturating_sub(2) * self.payload_per_block();
        if bytes.len() > capacity {
            return Err(LogError::TooLarge { bytes: bytes.len(), capacity });
        }
        self.write_sealed(dev, &bytes)?;
        dev.flush()?;
        Ok(())
    }

    /// Appends a batch's bytes (ending in a `Commit`) as log blocks, then its seal.
    fn write_sealed(&mut self, dev: &mut dyn ZonedDevice, bytes: &[u8]) -> Result<(), LogError> {
        let mut block = vec![0u8; self.block_bytes];
        for chunk in bytes.chunks(self.payload_per_block()) {
            self.write_block(dev, &mut block, chunk)?;
        }
        self.write_block(dev, &mut block, &[])
    }

    fn write_block(&mut self, dev: &mut dyn ZonedDevice, block: &mut [u8], payload: &[u8]) -> Result<(), LogError> {
        block.fill(0);
        block[0..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
        block[8..16].copy_from_slice(&self.next_seq.to_le_bytes());
        block[16..20].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        block[BLOCK_HEADER..BLOCK_HEADER + payload.len()].copy_from_slice(payload);
        let crc = crc32fast::hash(&block[8..]);
        block[4..8].copy_from_slice(&crc.to_le_bytes());
        dev.append(self.zones[self.active], block)?;
        self.next_seq += 1;
        self.used_blocks += 1;
        Ok(())
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn active_zone(&self) -> ZoneId {
        self.zones[self.active]
    }

    /// Blocks of the active zone in use (header and log).
    pub fn used_blocks(&self) -> u64 {
        self.used_blocks
    }
}

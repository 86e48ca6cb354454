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
//! span blocks): `type u8, length u32, body`. A `Commit` record ends every batch.
//!
//! # Recovery
//!
//! Mount reads both headers, takes the valid one with the higher generation and replays its log
//! up to the last `Commit` whose blocks are all intact (right magic, CRC, consecutive sequence
//! numbers); a torn or unwritten block ends the log. If the newer zone holds no committed batch
//! (a crash during roll-over, before its snapshot committed) the older zone is used. If blocks
//! follow the last commit (a batch torn by a crash), mount starts a new generation in the other
//! zone from the committed records, so that nothing is ever appended after a torn tail. A
//! device where neither zone has a valid header is not a zonekit file system.
//!
//! Invariants: a batch is never partly applied; a committed batch is durable (the device is
//! flushed); the snapshot that starts a generation is committed before the previous zone is
//! ever reset, so one zone always holds a complete committed state.

use zonekit_device::{DeviceError, Lba, ZoneId, ZonedDevice};

const HEADER_MAGIC: &[u8; 12] = b"ZKFS-META\0\0\0";
const VERSION: u32 = 1;
const BLOCK_MAGIC: u32 = u32::from_le_bytes(*b"ZKML");
const BLOCK_HEADER: usize = 20;

/// Where a piece of a file lives: `len_bytes` from `lba` in `zone` (never crossing zones).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    pub zone: u32,
    pub lba: u64,
    pub len_bytes: u64,
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
    #[error("metadata zone {zone}: {reason}")]
    Corrupt { zone: u32, reason: String },
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
                if n > body.len() / 20 {
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
        Ok(Extent { zone: self.u32()?, lba: self.u64()?, len_bytes: self.u64()? })
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

fn parse_header(b: &[u8]) -> Option<u64> {
    if &b[0..12] != HEADER_MAGIC || crc32fast::hash(&b[..28]) != u32::from_le_bytes(b[28..32].try_into().unwrap()) {
        return None;
    }
    (u32::from_le_bytes(b[12..16].try_into().unwrap()) == VERSION).then(|| u64::from_le_bytes(b[16..24].try_into().unwrap()))
}

impl MetaLog {
    /// Formats the two zones: generation 1 holding an empty, committed file table.
    pub fn format(dev: &mut dyn ZonedDevice, zones: [ZoneId; 2]) -> Result<MetaLog, LogError> {
        for z in zones {
            dev.reset_zone(z)?;
        }
        let mut log = MetaLog::empty(dev, zones, 0, 1);
        log.start_generation(dev, &[])?;
        Ok(log)
    }

    fn empty(dev: &dyn ZonedDevice, zones: [ZoneId; 2], active: usize, generation: u64) -> MetaLog {
        let g = dev.geometry();
        MetaLog { zones, active, generation, next_seq: 0, block_bytes: g.block_size_bytes as usize, zone_blocks: g.zone_capacity_blocks, used_blocks: 0, pending: Vec::new() }
    }

    /// Mounts: returns the log, positioned for appending, and the committed records to replay.
    pub fn open(dev: &mut dyn ZonedDevice, zones: [ZoneId; 2]) -> Result<(MetaLog, Vec<Record>), LogError> {
        let bs = dev.geometry().block_size_bytes as usize;
        let mut headers = Vec::new();
        for (i, z) in zones.iter().enumerate() {
            let mut b = vec![0u8; bs];
            dev.read(dev.geometry().zone_start(*z), &mut b)?;
            if let Some(generation) = parse_header(&b) {
                headers.push((generation, i));
            }
        }
        if headers.is_empty() {
            return Err(LogError::NotFormatted(zones[0].0, zones[1].0));
        }
        headers.sort_unstable_by(|a, b| b.cmp(a));
        for &(generation, i) in &headers {
            let (records, blocks, next_seq) = Self::replay(dev, zones[i])?;
            if blocks == 1 {
                continue; // no commit after the header: a roll-over that did not complete
            }
            let mut log = MetaLog::empty(dev, zones, i, generation);
            log.used_blocks = blocks;
            log.next_seq = next_seq;
            if dev.zone(zones[i])?.written_blocks() > blocks {
                // A torn tail follows the last commit; appending after it would hide later
                // batches from replay. Start a new generation from the committed records.
                log.active = 1 - i;
                log.generation = generation + 1;
                log.start_generation(dev, &records)?;
            }
            return Ok((log, records));
        }
        Err(LogError::Corrupt { zone: zones[headers[0].1].0, reason: "no committed metadata in either zone".into() })
    }

    /// Reads a zone's log: committed records, blocks up to the last commit, next sequence number.
    fn replay(dev: &mut dyn ZonedDevice, zone: ZoneId) -> Result<(Vec<Record>, u64, u64), LogError> {
        let g = *dev.geometry();
        let bs = g.block_size_bytes as usize;
        let start = g.zone_start(zone).0;
        let written = dev.zone(zone)?.written_blocks().min(g.zone_capacity_blocks);
        let mut stream = Vec::new();
        let mut block = vec![0u8; bs];
        let mut seq = 0u64;
        let mut blocks_read = 1u64; // the header
        let (mut committed, mut committed_blocks, mut committed_seq) = (Vec::new(), 1u64, 0u64);
        let mut batch = Vec::new();
        let mut parsed = 0usize;
        for b in 1..written {
            dev.read(Lba(start + b), &mut block)?;
            let magic = u32::from_le_bytes(block[0..4].try_into().unwrap());
            let crc = u32::from_le_bytes(block[4..8].try_into().unwrap());
            let block_seq = u64::from_le_bytes(block[8..16].try_into().unwrap());
            let len = u32::from_le_bytes(block[16..20].try_into().unwrap()) as usize;
            if magic != BLOCK_MAGIC || block_seq != seq || len > bs - BLOCK_HEADER || crc32fast::hash(&block[8..]) != crc {
                break; // a torn or foreign block ends the log
            }
            stream.extend_from_slice(&block[BLOCK_HEADER..BLOCK_HEADER + len]);
            seq += 1;
            blocks_read += 1;
            loop {
                match Record::decode(&stream[parsed..]) {
                    Ok(Some((rec, n))) => {
                        parsed += n;
                        if rec == Record::Commit {
                            committed.append(&mut batch);
                            committed_blocks = blocks_read;
                            committed_seq = seq;
                        } else {
                            batch.push(rec);
                        }
                    }
                    Ok(None) => break,
                    Err(reason) => return Err(LogError::Corrupt { zone: zone.0, reason: format!("block {b}: {reason}") }),
                }
            }
        }
        Ok((committed, committed_blocks, committed_seq))
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
        Record::Commit.encode(&mut self.pending);
        let needed = self.blocks_for(self.pending.len());
        if self.used_blocks + needed > self.zone_blocks {
            self.pending.clear();
            self.active = 1 - self.active;
            self.generation += 1;
            return self.start_generation(dev, &snapshot());
        }
        let bytes = std::mem::take(&mut self.pending);
        self.write_blocks(dev, &bytes)?;
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
        let capacity = (self.zone_blocks as usize - 1) * self.payload_per_block();
        if bytes.len() > capacity {
            return Err(LogError::TooLarge { bytes: bytes.len(), capacity });
        }
        self.write_blocks(dev, &bytes)?;
        dev.flush()?;
        Ok(())
    }

    fn write_blocks(&mut self, dev: &mut dyn ZonedDevice, bytes: &[u8]) -> Result<(), LogError> {
        let zone = self.zones[self.active];
        let mut block = vec![0u8; self.block_bytes];
        for chunk in bytes.chunks(self.payload_per_block()) {
            block.fill(0);
            block[0..4].copy_from_slice(&BLOCK_MAGIC.to_le_bytes());
            block[8..16].copy_from_slice(&self.next_seq.to_le_bytes());
            block[16..20].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
            block[BLOCK_HEADER..BLOCK_HEADER + chunk.len()].copy_from_slice(chunk);
            let crc = crc32fast::hash(&block[8..]);
            block[4..8].copy_from_slice(&crc.to_le_bytes());
            dev.append(zone, &block)?;
            self.next_seq += 1;
            self.used_blocks += 1;
        }
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

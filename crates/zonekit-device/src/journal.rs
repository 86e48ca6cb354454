//! A durable key → value map in the last zones of a zoned device: what the served volume keeps
//! its block mapping in, and the durable cache its slot keys.
//!
//! The journal lives in one of two halves of its zones: a half starts with a snapshot of the
//! whole map, then holds batches of records, each an [`Entry`] (key, value and, for data the
//! value points to, a checksum of that data). A commit ([`Writer::commit`]) flushes the device
//! (the data a record points to is durable first), appends the records since the last commit and
//! a *seal*, and flushes again. When a commit does not fit in its half, the other half is reset
//! and takes a fresh snapshot (sealed too), which covers the commit. Recovery ([`recover`])
//! reads both halves, takes the one whose snapshot is whole and newest, and applies its records
//! in sequence up to the end or a torn tail (the records of a commit a crash interrupted point
//! to data flushed before them, so those that reached the device are safe to apply). A user
//! then starts a fresh snapshot in the other half, so nothing is ever appended after a torn
//! block. A record whose value is [`REMOVED`] takes its key out of the map.
//!
//! # Torn tail or corruption
//!
//! Journal blocks are appended one at a time, in order, and a crash stops the writer, so a
//! crash damages only the end of a half: the blocks of a commit that did not complete, at most
//! one of them torn (bad magic, version or CRC) with nothing written behind it. So a damaged
//! block is a torn tail only when it is the half's last written block (two damaged blocks at
//! the end could swallow a whole sealed commit, and a crash leaves one); an intact block after
//! it means committed blocks follow the damage, and replaying up to it would silently drop them.
//! The seal makes this rule hold for the newest commit too: it is a records block without
//! entries, with the next sequence number, appended after every commit's records and after
//! every snapshot, before the final flush. So damage to any block of an acknowledged commit or
//! snapshot has an intact block (at least the seal) behind it, while a commit a crash tore has
//! no seal. Damage to the newest seal alone loses nothing (everything before it is whole) and is
//! taken as a torn tail. Without seals a flipped byte in the newest commit's last block was
//! indistinguishable from a crash while writing it, and the commit was dropped without a word.
//!
//! That damage, a sequence number that is not the next one, a tag (the user's fixed setting,
//! e.g. the volume's size) other than the snapshot's, a block of the wrong kind for its place,
//! and blocks in a zone of a half after a partly written one that do not continue the log are
//! [`JournalError::Corrupt`],
//! naming the zone, block and LBA; recovery only reads, so a refused open writes nothing. A
//! device that persisted a commit's blocks out of order and tore one in the middle would be
//! refused too: refusing is the side that never serves stale data. Blocks after a partly
//! written zone that continue the log are not damage: a drive writes zones independently, so
//! of a commit a crash interrupted (every earlier one was flushed whole) it may keep the blocks
//! in a later zone and lose those at the end of an earlier one; they are dropped as a torn
//! tail. Two more things are not damage:
//! blocks in a half after an *empty* zone, which a crash between a snapshot's zone resets
//! leaves of the half's previous use (that half has no snapshot; the other is taken); and
//! damage in the half not taken when every intact block in it is older than the taken half's
//! snapshot (nothing in it is needed any more, and the next snapshot resets it).
//!
//! A commit that fails part-way (a device error) leaves its blocks in the half without a seal;
//! the writer then takes its next commit as a snapshot in the other half, so nothing is
//! appended after blocks whose fate is unknown.
//!
//! # Format
//!
//! Journal block (the device's block size, little endian): magic (4 bytes, the user's), version
//! u16, kind u8 (1 snapshot, 2 records), reserved u8, sequence u64, snapshot's first sequence
//! u64, snapshot's block count u32, entries u32, tag u64, CRC-32 u32 (of the block with this
//! field zeroed), reserved u32; then the entries. Version 2 entries: key u64, value u64,
//! check u32, flags u32 (bit 0: the check is present), 24 bytes. Version 1 (the served volume's
//! journals before data checksums) has entries of key u64 and value u64 and no check; recovery
//! reads both, writers write version 2. Records blocks carry 0 as the snapshot's first
//! sequence and block count; a seal is a records block with no entries. Journals written
//! before seals existed have none (a seal is an ordinary records block): damage with intact
//! blocks after it is detected in them too, but damage to the newest commit's last block still
//! looks like a torn tail.

use std::collections::HashMap;

use crate::{DeviceError, Geometry, Lba, ZoneAction, ZoneDescriptor, ZoneId, ZoneState, ZoneType, ZonedDevice};

/// The value that takes a key out of the map.
pub const REMOVED: u64 = u64::MAX;

const VERSION: u16 = 2;
const KIND_SNAPSHOT: u8 = 1;
const KIND_RECORDS: u8 = 2;
const HEADER_BYTES: usize = 48;
const ENTRY_BYTES_V1: usize = 16;
const ENTRY_BYTES: usize = 24;

/// One key's value, and a checksum of the data the value points to, if the user keeps one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: u64,
    pub value: u64,
    pub check: Option<u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The device cannot hold the journal and the data it serves.
    #[error("{0}")]
    Usage(String),
    /// Damage that is not a torn tail (the message names zone, block and LBA).
    #[error("{0}")]
    Corrupt(String),
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Where the journal lives: the last `2 × zones_per_half` zones of the device.
#[derive(Copy, Clone, Debug)]
pub struct Layout {
    magic: [u8; 4],
    /// First zone of each half.
    halves: [u32; 2],
    zones_per_half: u32,
    block_bytes: usize,
    zone_size_blocks: u64,
    zone_capacity_blocks: u64,
}

impl Layout {
    /// A journal whose halves each hold a snapshot of `max_entries` entries plus a zone of
    /// records, leaving at least `min_data_zones` sequential zones to `user` (named in the
    /// refusal). `magic` tells this user's journal from any other.
    pub fn for_geometry(g: &Geometry, magic: [u8; 4], max_entries: u64, min_data_zones: u32, user: &str) -> Result<Layout, JournalError> {
        let block_bytes = g.block_size_bytes as usize;
        if block_bytes < 512 {
            return Err(JournalError::Usage(format!("{block_bytes}-byte blocks are too small for the journal")));
        }
        let per_block = ((block_bytes - HEADER_BYTES) / ENTRY_BYTES) as u64;
        let snapshot_blocks = max_entries.div_ceil(per_block).max(1);
        let zones_per_half = u32::try_from(snapshot_blocks.div_ceil(g.zone_capacity_blocks) + 1).unwrap_or(u32::MAX);
        let sequential = g.zone_count - g.conventional_zone_count;
        if (sequential as u64) < 2 * zones_per_half as u64 + min_data_zones as u64 {
            return Err(JournalError::Usage(format!(
                "{sequential} sequential zones are too few: the journal needs {} and {user} at least {min_data_zones}",
                2 * zones_per_half as u64
            )));
        }
        let first = g.zone_count - 2 * zones_per_half;
        Ok(Layout {
            magic,
            halves: [first, first + zones_per_half],
            zones_per_half,
            block_bytes,
            zone_size_blocks: g.zone_size_blocks,
            zone_capacity_blocks: g.zone_capacity_blocks,
        })
    }

    /// The first journal zone: every zone below it is the user's.
    pub fn first_zone(&self) -> u32 {
        self.halves[0]
    }

    fn entries_per_block(&self) -> usize {
        (self.block_bytes - HEADER_BYTES) / ENTRY_BYTES
    }

    fn zones(&self, half: usize) -> std::ops::Range<u32> {
        self.halves[half]..self.halves[half] + self.zones_per_half
    }

    fn lba(&self, zone: u32, block: u64) -> u64 {
        zone as u64 * self.zone_size_blocks + block
    }
}

/// One decoded journal block.
struct Block {
    kind: u8,
    seq: u64,
    snapshot_first: u64,
    snapshot_blocks: u32,
    tag: u64,
    entries: Vec<Entry>,
}

fn encode(layout: &Layout, kind: u8, seq: u64, snapshot: (u64, u32), tag: u64, entries: &[Entry]) -> Vec<u8> {
    let mut b = vec![0u8; layout.block_bytes];
    b[0..4].copy_from_slice(&layout.magic);
    b[4..6].copy_from_slice(&VERSION.to_le_bytes());
    b[6] = kind;
    b[8..16].copy_from_slice(&seq.to_le_bytes());
    b[16..24].copy_from_slice(&snapshot.0.to_le_bytes());
    b[24..28].copy_from_slice(&snapshot.1.to_le_bytes());
    b[28..32].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    b[32..40].copy_from_slice(&tag.to_le_bytes());
    for (i, e) in entries.iter().enumerate() {
        let at = HEADER_BYTES + i * ENTRY_BYTES;
        b[at..at + 8].copy_from_slice(&e.key.to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&e.value.to_le_bytes());
        b[at + 16..at + 20].copy_from_slice(&e.check.unwrap_or(0).to_le_bytes());
        b[at + 20..at + 24].copy_from_slice(&(e.check.is_some() as u32).to_le_bytes());
    }
    let crc = block_crc(&b);
    b[40..44].copy_from_slice(&crc.to_le_bytes());
    b
}

/// The CRC-32 of a journal block with its CRC field taken as zeros.
fn block_crc(b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&b[..40]);
    h.update(&[0; 4]);
    h.update(&b[44..]);
    h.finalize()
}

/// Decodes a journal block; `None` for anything that is not a whole one (unwritten, torn).
fn decode(magic: &[u8; 4], b: &[u8]) -> Option<Block> {
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let width = match u16::from_le_bytes([b[4], b[5]]) {
        1 => ENTRY_BYTES_V1,
        VERSION => ENTRY_BYTES,
        _ => return None,
    };
    if &b[0..4] != magic || block_crc(b) != u32_at(40) {
        return None;
    }
    let count = u32_at(28) as usize;
    if HEADER_BYTES + count * width > b.len() || !matches!(b[6], KIND_SNAPSHOT | KIND_RECORDS) {
        return None;
    }
    let entry = |i: usize| {
        let at = HEADER_BYTES + i * width;
        let check = (width == ENTRY_BYTES && u32_at(at + 20) & 1 == 1).then(|| u32_at(at + 16));
        Entry { key: u64_at(at), value: u64_at(at + 8), check }
    };
    Some(Block { kind: b[6], seq: u64_at(8), snapshot_first: u64_at(16), snapshot_blocks: u32_at(24), tag: u64_at(32), entries: (0..count).map(entry).collect() })
}

/// The map read back from a journal half.
pub struct Recovered {
    /// The sequence number of the half's snapshot (its first block).
    first_seq: u64,
    /// One past the sequence number of the last block applied.
    seq: u64,
    half: usize,
    /// The snapshot's tag.
    pub tag: u64,
    /// Every key's newest entry (none [`REMOVED`]), in the order keys first appeared.
    pub entries: Vec<Entry>,
}

/// Damage in a half that is not a torn tail.
struct Damage {
    zone: u32,
    block: u64,
    lba: u64,
    reason: String,
    /// The highest sequence number of an intact block in the half: a whole half whose snapshot
    /// is newer supersedes the damage.
    newest_seq: u64,
}

/// What one half of the journal holds.
enum Half {
    /// No whole snapshot: never written, reset, left so by a crash during its resets, or a
    /// snapshot a crash tore before its seal.
    Unusable,
    Whole(Recovered),
    Corrupt(Damage),
}

/// Reads one half (and only reads): its snapshot and the records after it, in sequence, up
/// to a torn tail; tells a torn tail from corruption (see the module doc).
fn read_half<D: ZonedDevice>(dev: &mut D, layout: &Layout, half: usize) -> Result<Half, DeviceError> {
    // Every written block of the half in zone order: (zone, block in zone, decoded if intact).
    let mut blocks: Vec<(u32, u64, Option<Block>)> = Vec::new();
    // How many of them lie in the zones up to the first one that is not full, and the first
    // zone with blocks after that one.
    let (mut in_order, mut short, mut stray) = (None, None, None);
    let mut buf = vec![0u8; layout.block_bytes];
    for z in layout.zones(half) {
        let written = dev.zone(ZoneId(z))?.written_blocks().min(layout.zone_capacity_blocks);
        if short.is_some() && written > 0 && stray.is_none() {
            stray = Some(z);
        }
        for i in 0..written {
            dev.read(Lba(layout.lba(z, i)), &mut buf)?;
            blocks.push((z, i, decode(&layout.magic, &buf)));
        }
        if written < layout.zone_capacity_blocks && short.is_none() {
            (short, in_order) = (Some(z), Some(blocks.len()));
        }
    }
    let newest_seq = blocks.iter().filter_map(|b| b.2.as_ref().map(|j| j.seq)).max().unwrap_or(0);
    let corrupt = |(zone, block): (u32, u64), reason: String| Ok(Half::Corrupt(Damage { zone, block, lba: layout.lba(zone, block), reason, newest_seq }));
    let in_order = in_order.unwrap_or(blocks.len());
    if let (Some(short), Some(stray)) = (short, stray) {
        // Zones fill in order, and a snapshot resets all of them before it writes any: blocks
        // after an empty zone are what a crash during those resets left of the half's previous
        // use, blocks after a partly written one are not the journal's.
        if in_order == 0 {
            return Ok(Half::Unusable);
        }
        // Blocks after a partly written zone that continue the log are the end of the one
        // commit (or snapshot) a crash interrupted: the writer flushes before each, so every
        // earlier one is durable whole, and a drive may keep a later zone's blocks of an
        // unflushed commit while losing an earlier zone's (zones are written independently).
        // Not acknowledged, so dropped as a torn tail (found by the fault simulator: the
        // cache's `tests/sim.rs` seed 688 was refused as damaged). Anything else is not the
        // journal's.
        let before = blocks[..in_order].iter().filter_map(|b| b.2.as_ref().map(|j| j.seq)).max().unwrap_or(0);
        let continues = blocks[in_order..].iter().all(|b| b.2.as_ref().is_some_and(|j| j.seq > before));
        if !continues {
            return corrupt((stray, 0), format!("the zone holds blocks, but zone {short} before it in the journal is not full"));
        }
    }
    let blocks = &blocks[..in_order];
    // A crash leaves at most one torn block, at the end: an intact block after a damaged one
    // was written later, so committed blocks follow the damage.
    let end = blocks.iter().position(|b| b.2.is_none()).unwrap_or(blocks.len());
    if let Some(later) = blocks[end..].iter().find(|b| b.2.is_some()) {
        let (zone, block, _) = blocks[end];
        return corrupt(
            (zone, block),
            format!("bad magic, version or checksum, but zone {} block {} after it is intact: committed journal blocks follow the damage", later.0, later.1),
        );
    }
    // Nor are two damaged blocks at the end: they could swallow a whole sealed commit.
    if blocks.len() - end > 1 {
        let (zone, block, _) = blocks[end];
        return corrupt((zone, block), format!("bad magic, version or checksum in the {} blocks from here to the end: a crash tears at most the last block", blocks.len() - end));
    }
    let Some((_, _, Some(head))) = blocks.first() else { return Ok(Half::Unusable) };
    let at = |b: &(u32, u64, Option<Block>)| (b.0, b.1);
    if head.kind != KIND_SNAPSHOT || head.snapshot_first != head.seq || head.snapshot_blocks == 0 {
        return corrupt(at(&blocks[0]), format!("the half starts with block {} of kind {}, not with a snapshot", head.seq, head.kind));
    }
    let (first, count, tag) = (head.seq, head.snapshot_blocks as u64, head.tag);
    let mut map: HashMap<u64, Entry> = HashMap::new();
    let mut order = Vec::new();
    let mut seq = first;
    for b in &blocks[..end] {
        let j = b.2.as_ref().expect("blocks before `end` are intact");
        if j.seq != seq {
            return corrupt(at(b), format!("sequence number {} where {seq} belongs", j.seq));
        }
        if j.tag != tag {
            return corrupt(at(b), format!("a tag of {}, but the half's snapshot says {tag}", j.tag));
        }
        let in_snapshot = seq < first + count;
        if in_snapshot && (j.kind != KIND_SNAPSHOT || (j.snapshot_first, j.snapshot_blocks as u64) != (first, count)) {
            return corrupt(at(b), format!("block {seq} of kind {} is not part {} of the snapshot of {count} blocks from {first}", j.kind, seq - first));
        }
        if !in_snapshot && j.kind != KIND_RECORDS {
            return corrupt(at(b), format!("block {seq} of kind {} after the snapshot, where only records belong", j.kind));
        }
        if in_snapshot && j.entries.iter().any(|e| e.value == REMOVED) {
            return corrupt(at(b), format!("snapshot block {seq} holds a removal"));
        }
        for e in &j.entries {
            if e.value == REMOVED {
                map.remove(&e.key);
            } else if map.insert(e.key, *e).is_none() {
                order.push(e.key);
            }
        }
        seq += 1;
    }
    if seq < first + count {
        return Ok(Half::Unusable); // a crash tore the snapshot itself
    }
    // A key removed and written again keeps its first place; one removed for good has none.
    let mut seen = std::collections::HashSet::new();
    let entries = order.into_iter().filter(|k| seen.insert(*k)).filter_map(|k| map.get(&k).copied()).collect();
    Ok(Half::Whole(Recovered { first_seq: first, seq, half, tag, entries }))
}

/// Reads the journal of `layout` (and only reads): the map of the whole half with the newer
/// snapshot, or `None` when neither half holds a whole one (a device the journal never
/// reached). Damage in the other half is ignored only when all of its intact blocks are older
/// than that snapshot; otherwise it is the error.
pub fn recover<D: ZonedDevice>(dev: &mut D, layout: &Layout) -> Result<Option<Recovered>, JournalError> {
    let halves = [read_half(dev, layout, 0)?, read_half(dev, layout, 1)?];
    Ok(match halves {
        [Half::Unusable, Half::Unusable] => None,
        [Half::Whole(a), Half::Whole(b)] => Some(if b.seq > a.seq { b } else { a }),
        [Half::Whole(w), Half::Unusable] | [Half::Unusable, Half::Whole(w)] => Some(w),
        [Half::Corrupt(d), Half::Whole(w)] | [Half::Whole(w), Half::Corrupt(d)] if d.newest_seq < w.first_seq => Some(w),
        [Half::Corrupt(d), _] | [_, Half::Corrupt(d)] => {
            return Err(JournalError::Corrupt(format!("zone {} block {} (LBA {}): {}; nothing was opened and nothing was written", d.zone, d.block, d.lba, d.reason)))
        }
    })
}

/// Checks recovered placements against the zones under the journal, before anything is
/// written: each `(key, lba)` at an LBA below the write pointer of a sequential zone, no two
/// at one LBA. The first that is not: its key, LBA and why.
pub fn check_written(placements: impl IntoIterator<Item = (u64, u64)>, zones: &[ZoneDescriptor], layout: &Layout) -> Result<(), (u64, u64, String)> {
    let mut taken = std::collections::HashSet::new();
    for (key, lba) in placements {
        let (zone, offset) = (lba / layout.zone_size_blocks, lba % layout.zone_size_blocks);
        let Some(d) = zones.get(zone as usize).filter(|_| zone < layout.first_zone() as u64) else {
            return Err((key, lba, "outside the data zones".into()));
        };
        let readable = match d.state {
            ZoneState::Full => d.capacity_blocks,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed => d.written_blocks(),
            _ => 0,
        };
        if d.zone_type != ZoneType::SequentialWriteRequired || offset >= readable {
            return Err((key, lba, format!("where zone {zone} ({:?}) holds nothing written", d.state)));
        }
        if !taken.insert(lba) {
            return Err((key, lba, "where another block of the mapping is".into()));
        }
    }
    Ok(())
}

/// Appends to the journal: snapshots and sealed commits.
pub struct Writer {
    layout: Layout,
    tag: u64,
    half: usize,
    /// Next journal block to append in the current half (zone, blocks written in it).
    cursor: (u32, u64),
    seq: u64,
    /// A snapshot or commit failed part-way (or none was written yet): the next commit is a
    /// snapshot in the other half.
    broken: bool,
    commits: u64,
}

impl Writer {
    /// A writer that continues after `recovered` (or starts a new journal), with the user's
    /// fixed `tag`. Its first write must be a [`Writer::snapshot`]: it goes to the half not
    /// recovered from, so nothing is ever appended after a torn block.
    pub fn new(layout: Layout, tag: u64, recovered: Option<&Recovered>) -> Writer {
        let half = recovered.map_or(1, |r| r.half);
        Writer { layout, tag, half, cursor: (layout.halves[half], 0), seq: recovered.map_or(0, |r| r.seq), broken: true, commits: 0 }
    }

    /// Commits since the writer was made.
    pub fn commits(&self) -> u64 {
        self.commits
    }

    /// Appends one journal block in the current half (whose [`Writer::room`] the caller
    /// checked).
    fn append<D: ZonedDevice>(&mut self, dev: &mut D, block: &[u8]) -> Result<(), DeviceError> {
        let (mut zone, mut used) = self.cursor;
        if used == self.layout.zone_capacity_blocks {
            assert!(zone + 1 < self.layout.zones(self.half).end, "a journal append past the end of its half");
            (zone, used) = (zone + 1, 0);
        }
        dev.append(ZoneId(zone), block)?;
        self.cursor = (zone, used + 1);
        Ok(())
    }

    /// Blocks still free in the current half.
    fn room(&self) -> u64 {
        let (zone, used) = self.cursor;
        let zones_after = (self.layout.zones(self.half).end - zone - 1) as u64;
        self.layout.zone_capacity_blocks - used + zones_after * self.layout.zone_capacity_blocks
    }

    /// Appends the seal that ends every commit and snapshot: a records block without entries
    /// (see the module doc's "Torn tail or corruption").
    fn seal<D: ZonedDevice>(&mut self, dev: &mut D) -> Result<(), DeviceError> {
        let b = encode(&self.layout, KIND_RECORDS, self.seq, (0, 0), self.tag, &[]);
        self.append(dev, &b)?;
        self.seq += 1;
        Ok(())
    }

    /// Resets the other half and writes the whole map (`entries`, none [`REMOVED`]) there,
    /// sealed, and flushes; it becomes current. The caller flushes the data it points to first.
    pub fn snapshot<D: ZonedDevice>(&mut self, dev: &mut D, entries: &[Entry]) -> Result<(), DeviceError> {
        self.broken = true;
        let other = 1 - self.half;
        let per = self.layout.entries_per_block();
        let blocks = entries.len().div_ceil(per).max(1) as u32;
        if blocks as u64 + 1 > self.layout.zones_per_half as u64 * self.layout.zone_capacity_blocks {
            return Err(DeviceError::InvalidArgument("the journal's half cannot hold a snapshot".into()));
        }
        for z in self.layout.zones(other) {
            dev.manage(ZoneAction::Reset, ZoneId(z))?;
        }
        let first = self.seq;
        self.half = other;
        self.cursor = (self.layout.halves[other], 0);
        for i in 0..blocks as usize {
            let chunk = &entries[(i * per).min(entries.len())..((i + 1) * per).min(entries.len())];
            let b = encode(&self.layout, KIND_SNAPSHOT, self.seq, (first, blocks), self.tag, chunk);
            self.append(dev, &b)?;
            self.seq += 1;
        }
        self.seal(dev)?;
        dev.flush()?;
        self.broken = false;
        Ok(())
    }

    /// Makes `records` durable: flushes the device (the data they point to first), appends
    /// them and a seal, flushes again. When they do not fit in the current half, or an earlier
    /// write failed part-way, a snapshot of `all()` (the whole map, records applied) in the
    /// other half stands for them. On an error nothing is known to be durable: the caller
    /// keeps its records for the next commit.
    pub fn commit<D: ZonedDevice>(&mut self, dev: &mut D, records: &[Entry], all: impl FnOnce() -> Vec<Entry>) -> Result<(), DeviceError> {
        dev.flush()?;
        if records.is_empty() && !self.broken {
            return Ok(());
        }
        let per = self.layout.entries_per_block();
        if self.broken || records.len().div_ceil(per) as u64 + 1 > self.room() {
            self.snapshot(dev, &all())?;
        } else {
            self.broken = true;
            for chunk in records.chunks(per) {
                let b = encode(&self.layout, KIND_RECORDS, self.seq, (0, 0), self.tag, chunk);
                self.append(dev, &b)?;
                self.seq += 1;
            }
            self.seal(dev)?;
            dev.flush()?;
            self.broken = false;
        }
        self.commits += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DeviceStats, MemDevice, StorageMode, ZoneBehavior, ZoneFilter};

    const MAGIC: [u8; 4] = *b"TEST";

    fn device() -> MemDevice {
        let g = Geometry {
            block_size_bytes: 512,
            zone_size_blocks: 8,
            zone_capacity_blocks: 8,
            zone_count: 12,
            conventional_zone_count: 0,
            open_zones_max: None,
            active_zones_max: None,
        };
        MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap()
    }

    fn layout(dev: &MemDevice) -> Layout {
        Layout::for_geometry(dev.geometry(), MAGIC, 40, 4, "the test").unwrap()
    }

    fn entry(key: u64, value: u64) -> Entry {
        Entry { key, value, check: Some((key * 31 + value) as u32) }
    }

    #[test]
    fn removals_take_keys_out_and_checks_come_back() {
        let mut dev = device();
        let layout = layout(&dev);
        let mut w = Writer::new(layout, 7, None);
        w.snapshot(&mut dev, &[entry(1, 10), entry(2, 20)]).unwrap();
        w.commit(&mut dev, &[entry(3, 30), Entry { key: 1, value: REMOVED, check: None }], Vec::new).unwrap();
        w.commit(&mut dev, &[Entry { key: 2, value: 21, check: None }, entry(1, 11)], Vec::new).unwrap();
        dev.power_loss();
        let r = recover(&mut dev, &layout).unwrap().unwrap();
        assert_eq!(r.tag, 7);
        assert_eq!(r.entries, vec![entry(1, 11), Entry { key: 2, value: 21, check: None }, entry(3, 30)]);
    }

    /// A version 1 block (16-byte entries, no checks) as the served volume wrote before data
    /// checksums: it decodes, with no checks.
    #[test]
    fn version_1_blocks_decode_without_checks() {
        let layout = layout(&device());
        let mut b = vec![0u8; 512];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..6].copy_from_slice(&1u16.to_le_bytes());
        b[6] = KIND_RECORDS;
        b[8..16].copy_from_slice(&5u64.to_le_bytes());
        b[28..32].copy_from_slice(&2u32.to_le_bytes());
        for (i, (k, v)) in [(4u64, 40u64), (6, 60)].into_iter().enumerate() {
            b[HEADER_BYTES + i * 16..HEADER_BYTES + i * 16 + 8].copy_from_slice(&k.to_le_bytes());
            b[HEADER_BYTES + i * 16 + 8..HEADER_BYTES + i * 16 + 16].copy_from_slice(&v.to_le_bytes());
        }
        let crc = block_crc(&b);
        b[40..44].copy_from_slice(&crc.to_le_bytes());
        let got = decode(&layout.magic, &b).unwrap();
        assert_eq!((got.seq, got.entries), (5, vec![Entry { key: 4, value: 40, check: None }, Entry { key: 6, value: 60, check: None }]));
        // A current block with another user's magic is not this journal's.
        let other = encode(&Layout { magic: *b"ELSE", ..layout }, KIND_RECORDS, 0, (0, 0), 0, &[]);
        assert!(decode(&layout.magic, &other).is_none());
    }

    /// A device whose `nth` append tears: it writes a damaged block and fails, as a write
    /// the device half did before reporting an error.
    struct TearsOnce {
        inner: MemDevice,
        appends_left: Option<u64>,
    }

    impl ZonedDevice for TearsOnce {
        fn geometry(&self) -> &Geometry {
            self.inner.geometry()
        }
        fn behavior(&self) -> ZoneBehavior {
            self.inner.behavior()
        }
        fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max: usize, out: &mut Vec<ZoneDescriptor>) -> crate::Result<usize> {
            self.inner.report_zones(start, filter, max, out)
        }
        fn read(&mut self, lba: Lba, buf: &mut [u8]) -> crate::Result<()> {
            self.inner.read(lba, buf)
        }
        fn write(&mut self, lba: Lba, data: &[u8]) -> crate::Result<()> {
            self.inner.write(lba, data)
        }
        fn append(&mut self, zone: ZoneId, data: &[u8]) -> crate::Result<Lba> {
            match self.appends_left {
                Some(0) => {
                    self.appends_left = None;
                    let mut torn = data.to_vec();
                    torn[data.len() / 2..].fill(0xEE);
                    self.inner.append(zone, &torn)?;
                    Err(DeviceError::InjectedFault { op_index: 0 })
                }
                left => {
                    self.appends_left = left.map(|n| n - 1);
                    self.inner.append(zone, data)
                }
            }
        }
        fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> crate::Result<()> {
            self.inner.manage(action, zone)
        }
        fn flush(&mut self) -> crate::Result<()> {
            self.inner.flush()
        }
        fn stats(&self) -> &DeviceStats {
            self.inner.stats()
        }
    }

    /// A commit whose append tears (the device wrote part of the block, then failed) leaves
    /// nothing half-done: the next commit is a snapshot of the whole map in the other half,
    /// and recovery finds every entry. Appending the retry after the torn block would leave
    /// intact blocks behind damage, which recovery must refuse as corruption.
    #[test]
    fn a_commit_that_tears_part_way_is_followed_by_a_snapshot() {
        for nth in 0..3 {
            let mut dev = TearsOnce { inner: device(), appends_left: None };
            let layout = layout(&dev.inner);
            let mut w = Writer::new(layout, 0, None);
            w.snapshot(&mut dev, &[]).unwrap();
            // 30 entries are two records blocks and a seal: appends 0, 1 and 2 of the commit.
            let batch: Vec<Entry> = (0..30).map(|k| entry(k, k + 100)).collect();
            let mut all = batch.clone();
            dev.appends_left = Some(nth);
            assert!(w.commit(&mut dev, &batch, || all.clone()).is_err(), "append {nth} did not fail the commit");
            all.push(entry(50, 150));
            let records: Vec<Entry> = batch.iter().chain([&entry(50, 150)]).copied().collect();
            w.commit(&mut dev, &records, || all.clone()).unwrap();
            dev.inner.power_loss();
            let r = recover(&mut dev, &layout).unwrap_or_else(|e| panic!("after a tear at append {nth}: {e}")).unwrap();
            assert_eq!(r.entries, all, "after a tear at append {nth}");
        }
    }
}

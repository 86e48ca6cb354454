//! A random-write block volume on a zoned device: the block FTL (any placement and victim
//! policy) with its mapping made durable, so that a served volume survives a kill.
//!
//! The last zones of the device hold the mapping journal; the FTL sees the device without them
//! ([`VolumeDevice`]). The journal lives in one of two halves of those zones: a half starts
//! with a snapshot of the whole mapping, then holds batches of records, each (block, LBA).
//! A commit flushes the device (the data a record points to is durable first), appends the
//! records of every placement since the last commit and a *seal*, and flushes again. Commits
//! happen at every flush of the volume and before the FTL erases any zone (its observer), so
//! nothing durable ever points into an erased zone. When a commit does not fit in its half,
//! the other half is reset and takes a fresh snapshot (sealed too), which covers the commit.
//! Opening reads both halves, takes the one whose snapshot is whole and newest, applies its
//! records in sequence up to the end or a torn tail (the records of a commit a crash
//! interrupted point to data flushed before them, so those that reached the device are safe to
//! apply), rebuilds the FTL with [`Ftl::restore`], and starts a fresh snapshot in the other
//! half (so nothing is ever appended after a torn block).
//!
//! # Torn tail or corruption
//!
//! Journal blocks are appended one at a time, in order, and a crash stops the writer, so a
//! crash damages only the end of a half: the blocks of a commit that did not complete, at most
//! one of them torn (bad magic, version or CRC) with nothing written behind it. So a damaged
//! block is a torn tail only when it is the half's last written block (two damaged blocks at
//! the end could swallow a whole sealed commit, and a crash leaves one); an intact block after
//! it means committed blocks follow the damage, and replaying up to it would silently drop them
//! (the volume would serve old data for every block they moved). The seal makes this rule hold
//! for the newest commit too: it is a records block without entries, with the next sequence
//! number, appended after every commit's records and after every snapshot, before the final
//! flush. So damage to any block of an acknowledged commit or snapshot has an intact block (at
//! least the seal) behind it, while a commit a crash tore has no seal. Damage to the newest
//! seal alone loses nothing (everything before it is whole) and is taken as a torn tail. Without seals a
//! flipped byte in the newest commit's last block was indistinguishable from a crash while
//! writing it, and the commit was dropped without a word.
//!
//! That damage, a sequence number that is not the next one, a volume size other than the
//! snapshot's, a block of the wrong kind for its place, and blocks in a zone of a half after a
//! partly written one are [`VolumeError::Corrupt`], naming the zone, block and LBA: the open
//! fails and writes nothing (it only reads until it has decided). A device that persisted a
//! commit's blocks out of order and tore one in the middle would be refused too: refusing is
//! the side that never serves stale data. Two things are not damage: blocks in a half after an
//! *empty* zone, which a crash between a snapshot's zone resets leaves of the half's previous
//! use (that half has no snapshot; the other is taken); and damage in the half not taken when
//! every intact block in it is older than the taken half's snapshot (nothing in it is needed
//! any more, and the open resets it). The recovered mapping is also checked against the data
//! zones before anything is written: every block inside the volume, below the write pointer of
//! a sequential data zone, no two at one LBA.
//!
//! Journals written before seals existed have none (the format version stayed 1: a seal is an
//! ordinary records block, so earlier builds read sealed journals too). Damage with intact
//! blocks after it is detected in them as well, but damage to the newest commit's last block,
//! or to the last block of the snapshot an open wrote, still looks like a torn tail and loses
//! that commit. The first open by a build with seals writes a sealed snapshot, and every
//! commit after it is sealed.
//!
//! Journal block (the device's block size, little endian): magic `ZKVJ`, version u16, kind
//! u8 (1 snapshot, 2 records), reserved u8, sequence u64, snapshot's first sequence u64,
//! snapshot's block count u32, entries u32, volume blocks u64, CRC-32 u32 (of the block with
//! this field zeroed), reserved u32; then entries of (block u64, LBA u64). Records blocks
//! carry 0 as the snapshot's first sequence and block count; a seal is a records block with
//! no entries.

use std::sync::{Arc, Mutex};

use zonekit_device::{DeviceError, DeviceStats, Geometry, Lba, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZoneType, ZonedDevice};
use zonekit_ftl::placement::{self, Params, PolicyEnv};
use zonekit_ftl::{victim, CapacityMode, Ftl, FtlConfig, FtlError, FtlObserver, FtlStats, GcTrigger};

const MAGIC: &[u8; 4] = b"ZKVJ";
const VERSION: u16 = 1;
const KIND_SNAPSHOT: u8 = 1;
const KIND_RECORDS: u8 = 2;
const HEADER_BYTES: usize = 48;
const ENTRY_BYTES: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    #[error("{0}")]
    Usage(String),
    #[error("the volume's journal is damaged: {0}")]
    Corrupt(String),
    #[error(transparent)]
    Ftl(#[from] FtlError),
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// How to build the volume.
#[derive(Clone, Debug)]
pub struct VolumeSpec {
    pub placement: String,
    pub placement_params: Params,
    pub victim: String,
    /// Share of the data zones' capacity exported as the volume when it is created (the rest
    /// is over-provisioning for GC). An existing volume keeps its size.
    pub utilization: f64,
    pub trigger: GcTrigger,
    pub gc_threshold: f64,
}

impl Default for VolumeSpec {
    fn default() -> Self {
        VolumeSpec { placement: "sepbit".into(), placement_params: Params::new(), victim: "greedy".into(), utilization: 0.8, trigger: GcTrigger::FreeZones, gc_threshold: 0.15 }
    }
}

/// The device as the FTL sees it: without the journal's zones at its end.
pub struct VolumeDevice<D> {
    inner: D,
    geometry: Geometry,
}

impl<D: ZonedDevice> VolumeDevice<D> {
    fn check(&self, zone: u64) -> Result<(), DeviceError> {
        if zone >= self.geometry.zone_count as u64 {
            return Err(DeviceError::InvalidArgument(format!("zone {zone} belongs to the volume's journal")));
        }
        Ok(())
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }
}

impl<D: ZonedDevice> ZonedDevice for VolumeDevice<D> {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn behavior(&self) -> ZoneBehavior {
        self.inner.behavior()
    }

    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> zonekit_device::Result<usize> {
        let first = start.0 / self.geometry.zone_size_blocks;
        let left = (self.geometry.zone_count as u64).saturating_sub(first) as usize;
        if left == 0 {
            out.clear();
            return Ok(0);
        }
        // Filtered reports may skip zones: ask for everything up to the journal and filter here.
        let mut all = Vec::new();
        self.inner.report_zones(start, ZoneFilter::All, left, &mut all)?;
        out.clear();
        out.extend(all.into_iter().filter(|z| filter.matches(z.state)).take(max_zones));
        Ok(out.len())
    }

    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> zonekit_device::Result<()> {
        self.check(lba.0 / self.geometry.zone_size_blocks)?;
        self.inner.read(lba, buf)
    }

    fn write(&mut self, lba: Lba, data: &[u8]) -> zonekit_device::Result<()> {
        self.check(lba.0 / self.geometry.zone_size_blocks)?;
        self.inner.write(lba, data)
    }

    fn append(&mut self, zone: ZoneId, data: &[u8]) -> zonekit_device::Result<Lba> {
        self.check(zone.0 as u64)?;
        self.inner.append(zone, data)
    }

    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> zonekit_device::Result<()> {
        self.check(zone.0 as u64)?;
        self.inner.manage(action, zone)
    }

    fn flush(&mut self) -> zonekit_device::Result<()> {
        self.inner.flush()
    }

    fn stats(&self) -> &DeviceStats {
        self.inner.stats()
    }
}

/// Where the journal lives and how big a snapshot can get.
#[derive(Copy, Clone, Debug)]
struct Layout {
    /// First zone of each half.
    halves: [u32; 2],
    zones_per_half: u32,
    block_bytes: usize,
    zone_size_blocks: u64,
    zone_capacity_blocks: u64,
}

impl Layout {
    fn entries_per_block(&self) -> usize {
        (self.block_bytes - HEADER_BYTES) / ENTRY_BYTES
    }

    /// Half of the journal's zones hold a snapshot of `blocks` entries plus a zone of records.
    fn for_geometry(g: &Geometry, max_entries: u64) -> Result<Layout, VolumeError> {
        let block_bytes = g.block_size_bytes as usize;
        if block_bytes < 512 {
            return Err(VolumeError::Usage(format!("{block_bytes}-byte blocks are too small for the journal")));
        }
        let per_block = ((block_bytes - HEADER_BYTES) / ENTRY_BYTES) as u64;
        let snapshot_blocks = max_entries.div_ceil(per_block).max(1);
        let zones_per_half = (snapshot_blocks.div_ceil(g.zone_capacity_blocks) + 1) as u32;
        let sequential = g.zone_count - g.conventional_zone_count;
        if sequential < 2 * zones_per_half + 8 {
            return Err(VolumeError::Usage(format!("{sequential} sequential zones are too few: the journal needs {} and the FTL at least 8", 2 * zones_per_half)));
        }
        let first = g.zone_count - 2 * zones_per_half;
        Ok(Layout { halves: [first, first + zones_per_half], zones_per_half, block_bytes, zone_size_blocks: g.zone_size_blocks, zone_capacity_blocks: g.zone_capacity_blocks })
    }

    fn zones(&self, half: usize) -> std::ops::Range<u32> {
        self.halves[half]..self.halves[half] + self.zones_per_half
    }
}

/// One decoded journal block.
struct JournalBlock {
    kind: u8,
    seq: u64,
    snapshot_first: u64,
    snapshot_blocks: u32,
    volume_blocks: u64,
    entries: Vec<(u64, u64)>,
}

fn encode(layout: &Layout, kind: u8, seq: u64, snapshot: (u64, u32), volume_blocks: u64, entries: &[(u64, u64)]) -> Vec<u8> {
    let mut b = vec![0u8; layout.block_bytes];
    b[0..4].copy_from_slice(MAGIC);
    b[4..6].copy_from_slice(&VERSION.to_le_bytes());
    b[6] = kind;
    b[8..16].copy_from_slice(&seq.to_le_bytes());
    b[16..24].copy_from_slice(&snapshot.0.to_le_bytes());
    b[24..28].copy_from_slice(&snapshot.1.to_le_bytes());
    b[28..32].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    b[32..40].copy_from_slice(&volume_blocks.to_le_bytes());
    for (i, (block, lba)) in entries.iter().enumerate() {
        let at = HEADER_BYTES + i * ENTRY_BYTES;
        b[at..at + 8].copy_from_slice(&block.to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&lba.to_le_bytes());
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
fn decode(b: &[u8]) -> Option<JournalBlock> {
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    if &b[0..4] != MAGIC || u16::from_le_bytes([b[4], b[5]]) != VERSION {
        return None;
    }
    if block_crc(b) != u32_at(40) {
        return None;
    }
    let count = u32_at(28) as usize;
    if HEADER_BYTES + count * ENTRY_BYTES > b.len() || !matches!(b[6], KIND_SNAPSHOT | KIND_RECORDS) {
        return None;
    }
    let entries = (0..count).map(|i| (u64_at(HEADER_BYTES + i * ENTRY_BYTES), u64_at(HEADER_BYTES + i * ENTRY_BYTES + 8))).collect();
    Some(JournalBlock { kind: b[6], seq: u64_at(8), snapshot_first: u64_at(16), snapshot_blocks: u32_at(24), volume_blocks: u64_at(32), entries })
}

/// The mapping journal: the FTL's observer, shared with the volume.
struct Journal {
    layout: Layout,
    volume_blocks: u64,
    /// Dense id → volume block, and → where it lives now.
    keys: Vec<u64>,
    lbas: Vec<u64>,
    /// Ids placed since the last commit (each once).
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    half: usize,
    /// Next journal LBA to append to in the current half (zone, blocks written in it).
    cursor: (u32, u64),
    seq: u64,
    commits: u64,
}

impl Journal {
    fn placed(&mut self, id: u32, lba: Lba) {
        let i = id as usize;
        if self.lbas.len() <= i {
            self.lbas.resize(i + 1, u64::MAX);
            self.is_dirty.resize(i + 1, false);
        }
        self.lbas[i] = lba.0;
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(id);
        }
    }

    /// Appends one journal block in the current half (whose [`Journal::room`] the caller
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
        let b = encode(&self.layout, KIND_RECORDS, self.seq, (0, 0), self.volume_blocks, &[]);
        self.append(dev, &b)?;
        self.seq += 1;
        Ok(())
    }

    /// Resets the other half and writes the whole mapping there, sealed; it becomes current.
    fn snapshot<D: ZonedDevice>(&mut self, dev: &mut D) -> Result<(), DeviceError> {
        let other = 1 - self.half;
        let entries: Vec<(u64, u64)> = self.keys.iter().zip(&self.lbas).map(|(&k, &l)| (k, l)).collect();
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
            let b = encode(&self.layout, KIND_SNAPSHOT, self.seq, (first, blocks), self.volume_blocks, chunk);
            self.append(dev, &b)?;
            self.seq += 1;
        }
        self.seal(dev)
    }

    /// Makes every placement so far durable (see the module doc).
    fn commit<D: ZonedDevice>(&mut self, dev: &mut D) -> Result<(), DeviceError> {
        dev.flush()?;
        if self.dirty.is_empty() {
            return Ok(());
        }
        let dirty = std::mem::take(&mut self.dirty);
        let per = self.layout.entries_per_block();
        if dirty.len().div_ceil(per) as u64 + 1 > self.room() {
            // The records and their seal do not fit the half: a snapshot in the other one
            // covers everything.
            self.snapshot(dev)?;
        } else {
            for chunk in dirty.chunks(per) {
                let entries: Vec<(u64, u64)> = chunk.iter().map(|&id| (self.keys[id as usize], self.lbas[id as usize])).collect();
                let b = encode(&self.layout, KIND_RECORDS, self.seq, (0, 0), self.volume_blocks, &entries);
                self.append(dev, &b)?;
                self.seq += 1;
            }
            self.seal(dev)?;
        }
        for id in dirty {
            self.is_dirty[id as usize] = false;
        }
        self.commits += 1;
        dev.flush()
    }
}

/// The FTL's observer: the journal behind a shared handle.
struct Observer(Arc<Mutex<Journal>>);

impl<D: ZonedDevice> FtlObserver<VolumeDevice<D>> for Observer {
    fn placed(&mut self, id: u32, lba: Lba) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).placed(id, lba);
    }

    fn before_reset(&mut self, dev: &mut VolumeDevice<D>, _zone: ZoneId) -> Result<(), DeviceError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).commit(&mut dev.inner)
    }
}

/// The durable mapping read back from a journal half.
struct Recovered {
    /// The sequence number of the half's snapshot (its first block).
    first_seq: u64,
    /// One past the sequence number of the last block applied.
    seq: u64,
    volume_blocks: u64,
    mapping: Vec<(u64, u64)>,
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

impl Damage {
    fn into_error(self) -> VolumeError {
        VolumeError::Corrupt(format!("zone {} block {} (LBA {}): {}; the volume was not opened and nothing was written", self.zone, self.block, self.lba, self.reason))
    }
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
    let mut blocks: Vec<(u32, u64, Option<JournalBlock>)> = Vec::new();
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
            dev.read(Lba(z as u64 * layout.zone_size_blocks + i), &mut buf)?;
            blocks.push((z, i, decode(&buf)));
        }
        if written < layout.zone_capacity_blocks && short.is_none() {
            (short, in_order) = (Some(z), Some(blocks.len()));
        }
    }
    let newest_seq = blocks.iter().filter_map(|b| b.2.as_ref().map(|j| j.seq)).max().unwrap_or(0);
    let lba = |zone: u32, block: u64| zone as u64 * layout.zone_size_blocks + block;
    let corrupt = |(zone, block): (u32, u64), reason: String| Ok(Half::Corrupt(Damage { zone, block, lba: lba(zone, block), reason, newest_seq }));
    let in_order = in_order.unwrap_or(blocks.len());
    if let (Some(short), Some(stray)) = (short, stray) {
        // Zones fill in order, and a snapshot resets all of them before it writes any: blocks
        // after an empty zone are what a crash during those resets left of the half's previous
        // use, blocks after a partly written one are not the journal's.
        if in_order == 0 {
            return Ok(Half::Unusable);
        }
        return corrupt((stray, 0), format!("the zone holds blocks, but zone {short} before it in the journal is not full"));
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
    let at = |b: &(u32, u64, Option<JournalBlock>)| (b.0, b.1);
    if head.kind != KIND_SNAPSHOT || head.snapshot_first != head.seq || head.snapshot_blocks == 0 {
        return corrupt(at(&blocks[0]), format!("the half starts with block {} of kind {}, not with a snapshot", head.seq, head.kind));
    }
    let (first, count, volume_blocks) = (head.seq, head.snapshot_blocks as u64, head.volume_blocks);
    let mut map: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    let mut order = Vec::new();
    let mut seq = first;
    for b in &blocks[..end] {
        let j = b.2.as_ref().expect("blocks before `end` are intact");
        if j.seq != seq {
            return corrupt(at(b), format!("sequence number {} where {seq} belongs", j.seq));
        }
        if j.volume_blocks != volume_blocks {
            return corrupt(at(b), format!("a volume of {} blocks, but the half's snapshot says {volume_blocks}", j.volume_blocks));
        }
        let in_snapshot = seq < first + count;
        if in_snapshot && (j.kind != KIND_SNAPSHOT || (j.snapshot_first, j.snapshot_blocks as u64) != (first, count)) {
            return corrupt(at(b), format!("block {seq} of kind {} is not part {} of the snapshot of {count} blocks from {first}", j.kind, seq - first));
        }
        if !in_snapshot && j.kind != KIND_RECORDS {
            return corrupt(at(b), format!("block {seq} of kind {} after the snapshot, where only records belong", j.kind));
        }
        for &(block, lba) in &j.entries {
            if map.insert(block, lba).is_none() {
                order.push(block);
            }
        }
        seq += 1;
    }
    if seq < first + count {
        return Ok(Half::Unusable); // a crash tore the snapshot itself
    }
    let mapping = order.into_iter().map(|b| (b, map[&b])).collect();
    Ok(Half::Whole(Recovered { first_seq: first, seq, volume_blocks, mapping }))
}

/// Picks the half to recover from: the whole one with the newer snapshot. Damage in the other
/// half is ignored only when all of its intact blocks are older than that snapshot (the open
/// resets that half); otherwise it is the error.
fn choose(halves: [Half; 2]) -> Result<Option<(Recovered, usize)>, VolumeError> {
    Ok(match halves {
        [Half::Unusable, Half::Unusable] => None,
        [Half::Whole(a), Half::Whole(b)] if b.seq > a.seq => Some((b, 1)),
        [Half::Whole(a), Half::Whole(_) | Half::Unusable] => Some((a, 0)),
        [Half::Unusable, Half::Whole(b)] => Some((b, 1)),
        [Half::Corrupt(d), Half::Whole(w)] if d.newest_seq < w.first_seq => Some((w, 1)),
        [Half::Whole(w), Half::Corrupt(d)] if d.newest_seq < w.first_seq => Some((w, 0)),
        [Half::Corrupt(d), _] | [_, Half::Corrupt(d)] => return Err(d.into_error()),
    })
}

/// Checks a recovered mapping against the data zones, before anything is written: every block
/// inside the volume, at an LBA below the write pointer of a sequential data zone, no two at
/// one LBA ([`Ftl::restore`] would find some of this only after sealing the zones).
fn check_mapping(mapping: &[(u64, u64)], zones: &[ZoneDescriptor], layout: &Layout, volume_blocks: u64) -> Result<(), VolumeError> {
    let mut taken = std::collections::HashSet::with_capacity(mapping.len());
    for &(block, lba) in mapping {
        let bad = |why: String| Err(VolumeError::Corrupt(format!("the mapping puts block {block} at LBA {lba}, {why}; the volume was not opened and nothing was written")));
        if block >= volume_blocks {
            return bad(format!("but the volume has {volume_blocks} blocks"));
        }
        let (zone, offset) = (lba / layout.zone_size_blocks, lba % layout.zone_size_blocks);
        let Some(d) = zones.get(zone as usize).filter(|_| zone < layout.halves[0] as u64) else {
            return bad("outside the data zones".into());
        };
        let readable = match d.state {
            ZoneState::Full => d.capacity_blocks,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed => d.written_blocks(),
            _ => 0,
        };
        if d.zone_type != ZoneType::SequentialWriteRequired || offset >= readable {
            return bad(format!("where zone {zone} ({:?}) holds nothing written", d.state));
        }
        if !taken.insert(lba) {
            return bad("where another block of the mapping is".into());
        }
    }
    Ok(())
}

/// A random-write volume of `blocks()` blocks over a zoned device.
pub struct Volume<D: ZonedDevice + Send + 'static> {
    ftl: Ftl<VolumeDevice<D>>,
    journal: Arc<Mutex<Journal>>,
    volume_blocks: u64,
    block_bytes: usize,
}

impl<D: ZonedDevice + Send + 'static> Volume<D> {
    /// Opens the volume on `dev`: creates it on a device whose sequential zones are all
    /// empty, or recovers the one there.
    pub fn open(mut dev: D, spec: &VolumeSpec) -> Result<Volume<D>, VolumeError> {
        let g = *dev.geometry();
        if !(spec.utilization > 0.0 && spec.utilization < 1.0) {
            return Err(VolumeError::Usage(format!("utilization {}: must be between 0 and 1", spec.utilization)));
        }
        // The journal is sized for every block of the device (a bound on any volume's size).
        let layout = Layout::for_geometry(&g, g.zone_count as u64 * g.zone_capacity_blocks)?;
        let data_geometry = Geometry { zone_count: layout.halves[0], ..g };
        let zones = dev.report_all(ZoneFilter::All)?;
        let written = zones.iter().any(|z| z.state != ZoneState::Empty && z.state != ZoneState::NotWritePointer);
        // Everything up to the FTL's restore only reads: a refused open writes nothing.
        let halves = [read_half(&mut dev, &layout, 0)?, read_half(&mut dev, &layout, 1)?];
        let (recovered, half) = match choose(halves)? {
            Some((r, half)) => (Some(r), half),
            None if written => return Err(VolumeError::Usage("the device holds data but no volume journal (reset every zone to create a volume on it)".into())),
            None => (None, 1),
        };
        let data_blocks = (layout.halves[0] - g.conventional_zone_count) as u64 * g.zone_capacity_blocks;
        let volume_blocks = match &recovered {
            Some(r) => r.volume_blocks,
            None => (data_blocks as f64 * spec.utilization) as u64,
        };
        let info = placement::find(&spec.placement, &spec.placement_params).map_err(|e| VolumeError::Usage(e.to_string()))?;
        if info.role == zonekit_base::policy::Role::Oracle {
            return Err(VolumeError::Usage(format!("{} is an oracle (it knows each block's next write): a live volume cannot run it", info.name)));
        }
        let env = PolicyEnv { zone_blocks: g.zone_capacity_blocks, capacity_blocks: volume_blocks };
        let placement = placement::create(&spec.placement, &spec.placement_params, env).map_err(|e| VolumeError::Usage(e.to_string()))?;
        let victim = victim::create(&spec.victim, 1).map_err(|e| VolumeError::Usage(e.to_string()))?;
        let config = FtlConfig { gc_threshold: spec.gc_threshold, capacity: CapacityMode::Fixed, trigger: spec.trigger, store_data: true };
        let vdev = VolumeDevice { inner: dev, geometry: data_geometry };
        if let Some(r) = &recovered {
            check_mapping(&r.mapping, &zones, &layout, volume_blocks)?;
        }
        let mapping: Vec<(u64, Lba)> = recovered.as_ref().map_or(Vec::new(), |r| r.mapping.iter().map(|&(b, l)| (b, Lba(l))).collect());
        let mut ftl = match &recovered {
            Some(_) => Ftl::restore(vdev, placement, victim, config, &mapping)?,
            None => Ftl::new(vdev, placement, victim, config, volume_blocks as usize)?,
        };
        let journal = Journal {
            layout,
            volume_blocks,
            keys: mapping.iter().map(|m| m.0).collect(),
            lbas: mapping.iter().map(|m| m.1 .0).collect(),
            dirty: Vec::new(),
            is_dirty: vec![false; mapping.len()],
            half,
            cursor: (layout.halves[half], 0),
            seq: recovered.as_ref().map_or(0, |r| r.seq),
            commits: 0,
        };
        let journal = Arc::new(Mutex::new(journal));
        {
            // A fresh snapshot in the other half: nothing is ever appended after a torn block.
            let mut j = journal.lock().unwrap_or_else(|p| p.into_inner());
            let dev = &mut ftl.device_mut().inner;
            j.snapshot(dev)?;
            dev.flush()?;
        }
        ftl.set_observer(Box::new(Observer(journal.clone())));
        Ok(Volume { ftl, journal, volume_blocks, block_bytes: g.block_size_bytes as usize })
    }

    pub fn blocks(&self) -> u64 {
        self.volume_blocks
    }

    pub fn block_bytes(&self) -> usize {
        self.block_bytes
    }

    fn check(&self, block: u64) -> Result<(), VolumeError> {
        if block >= self.volume_blocks {
            return Err(VolumeError::Usage(format!("block {block} is beyond the volume's {} blocks", self.volume_blocks)));
        }
        Ok(())
    }

    /// Reads one block (zeros if never written).
    pub fn read(&mut self, block: u64, buf: &mut [u8]) -> Result<(), VolumeError> {
        self.check(block)?;
        self.ftl.read(block, buf)?;
        Ok(())
    }

    /// Writes one block (durable at the next [`Volume::flush`]).
    pub fn write(&mut self, block: u64, data: &[u8]) -> Result<(), VolumeError> {
        self.check(block)?;
        if self.ftl.prefetch_block(block).is_none() {
            self.journal.lock().unwrap_or_else(|p| p.into_inner()).keys.push(block);
        }
        self.ftl.write(block, Some(data), 0, zonekit_ftl::NEVER)?;
        Ok(())
    }

    /// Makes every write so far durable.
    pub fn flush(&mut self) -> Result<(), VolumeError> {
        let mut j = self.journal.lock().unwrap_or_else(|p| p.into_inner());
        j.commit(&mut self.ftl.device_mut().inner)?;
        Ok(())
    }

    pub fn ftl_stats(&self) -> &FtlStats {
        self.ftl.stats()
    }

    pub fn device(&self) -> &D {
        &self.ftl.device().inner
    }

    /// Journal commits since the volume was opened.
    pub fn commits(&self) -> u64 {
        self.journal.lock().unwrap_or_else(|p| p.into_inner()).commits
    }

    /// The device back (nothing is flushed: call [`Volume::flush`] first to keep writes).
    pub fn into_device(self) -> Result<D, VolumeError> {
        Ok(self.ftl.into_device()?.inner)
    }
}

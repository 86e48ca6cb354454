//! A random-write block volume on a zoned device: the block FTL (any placement and victim
//! policy) with its mapping made durable, so that a served volume survives a kill.
//!
//! The last zones of the device hold the mapping journal; the FTL sees the device without them
//! ([`VolumeDevice`]). The journal lives in one of two halves of those zones: a half starts
//! with a snapshot of the whole mapping, then holds batches of records, each (block, LBA).
//! A commit flushes the device (the data a record points to is durable first), appends the
//! records of every placement since the last commit, and flushes again. Commits happen at
//! every flush of the volume and before the FTL erases any zone (its observer), so nothing
//! durable ever points into an erased zone. When a half is full, the other half is reset and
//! takes a fresh snapshot. Opening reads both halves, takes the one whose snapshot is whole
//! and newest, applies its records in sequence up to the first torn or missing block, rebuilds
//! the FTL with [`Ftl::restore`], and starts a fresh snapshot in the other half (so nothing
//! is ever appended after a torn block).
//!
//! Journal block (the device's block size, little endian): magic `ZKVJ`, version u16, kind
//! u8 (1 snapshot, 2 records), reserved u8, sequence u64, snapshot's first sequence u64,
//! snapshot's block count u32, entries u32, volume blocks u64, CRC-32 u32 (of the block with
//! this field zeroed), reserved u32; then entries of (block u64, LBA u64).

use std::sync::{Arc, Mutex};

use zonekit_device::{DeviceError, DeviceStats, Geometry, Lba, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZonedDevice};
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

    /// Appends one journal block in the current half; `false` when the half is full.
    fn append<D: ZonedDevice>(&mut self, dev: &mut D, block: &[u8]) -> Result<bool, DeviceError> {
        let (mut zone, mut used) = self.cursor;
        if used == self.layout.zone_capacity_blocks {
            if zone + 1 == self.layout.zones(self.half).end {
                return Ok(false);
            }
            (zone, used) = (zone + 1, 0);
        }
        dev.append(ZoneId(zone), block)?;
        self.cursor = (zone, used + 1);
        Ok(true)
    }

    /// Resets the other half and writes the whole mapping there; it becomes current.
    fn snapshot<D: ZonedDevice>(&mut self, dev: &mut D) -> Result<(), DeviceError> {
        let other = 1 - self.half;
        for z in self.layout.zones(other) {
            dev.manage(ZoneAction::Reset, ZoneId(z))?;
        }
        let entries: Vec<(u64, u64)> = self.keys.iter().zip(&self.lbas).map(|(&k, &l)| (k, l)).collect();
        let per = self.layout.entries_per_block();
        let blocks = entries.len().div_ceil(per).max(1) as u32;
        let first = self.seq;
        self.half = other;
        self.cursor = (self.layout.halves[other], 0);
        for i in 0..blocks as usize {
            let chunk = &entries[(i * per).min(entries.len())..((i + 1) * per).min(entries.len())];
            let b = encode(&self.layout, KIND_SNAPSHOT, self.seq, (first, blocks), self.volume_blocks, chunk);
            self.seq += 1;
            if !self.append(dev, &b)? {
                return Err(DeviceError::InvalidArgument("the journal's half cannot hold a snapshot".into()));
            }
        }
        Ok(())
    }

    /// Makes every placement so far durable (see the module doc).
    fn commit<D: ZonedDevice>(&mut self, dev: &mut D) -> Result<(), DeviceError> {
        dev.flush()?;
        if self.dirty.is_empty() {
            return Ok(());
        }
        let dirty = std::mem::take(&mut self.dirty);
        let per = self.layout.entries_per_block();
        for chunk in dirty.chunks(per) {
            let entries: Vec<(u64, u64)> = chunk.iter().map(|&id| (self.keys[id as usize], self.lbas[id as usize])).collect();
            let b = encode(&self.layout, KIND_RECORDS, self.seq, (0, 0), self.volume_blocks, &entries);
            if self.append(dev, &b)? {
                self.seq += 1;
            } else {
                // The half is full: a snapshot in the other one covers everything.
                self.snapshot(dev)?;
                break;
            }
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
    seq: u64,
    volume_blocks: u64,
    mapping: Vec<(u64, u64)>,
}

/// Reads one half: its snapshot (must be whole) and the records after it, in sequence.
fn read_half<D: ZonedDevice>(dev: &mut D, layout: &Layout, half: usize) -> Result<Option<Recovered>, VolumeError> {
    let mut blocks = Vec::new();
    let mut buf = vec![0u8; layout.block_bytes];
    'zones: for z in layout.zones(half) {
        let d = dev.zone(ZoneId(z))?;
        for i in 0..d.written_blocks().min(layout.zone_capacity_blocks) {
            dev.read(Lba(z as u64 * layout.zone_size_blocks + i), &mut buf)?;
            match decode(&buf) {
                Some(b) => blocks.push(b),
                None => break 'zones,
            }
        }
    }
    let Some(head) = blocks.first() else { return Ok(None) };
    if head.kind != KIND_SNAPSHOT || head.snapshot_first != head.seq {
        return Ok(None);
    }
    let (first, count, volume_blocks) = (head.seq, head.snapshot_blocks as u64, head.volume_blocks);
    let mut map: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    let mut order = Vec::new();
    let mut seq = first;
    for b in &blocks {
        if b.seq != seq || b.volume_blocks != volume_blocks {
            break;
        }
        let in_snapshot = seq < first + count;
        if in_snapshot != (b.kind == KIND_SNAPSHOT) {
            break;
        }
        for &(block, lba) in &b.entries {
            if map.insert(block, lba).is_none() {
                order.push(block);
            }
        }
        seq += 1;
    }
    if seq < first + count {
        return Ok(None); // the snapshot itself is torn
    }
    let mapping = order.into_iter().map(|b| (b, map[&b])).collect();
    Ok(Some(Recovered { seq, volume_blocks, mapping }))
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
        let halves = [read_half(&mut dev, &layout, 0)?, read_half(&mut dev, &layout, 1)?];
        let (recovered, half) = match halves {
            [None, None] => {
                if written {
                    return Err(VolumeError::Usage("the device holds data but no volume journal (reset every zone to create a volume on it)".into()));
                }
                (None, 1)
            }
            [Some(a), Some(b)] if b.seq > a.seq => (Some(b), 1),
            [Some(a), _] => (Some(a), 0),
            [None, Some(b)] => (Some(b), 1),
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
        let mapping: Vec<(u64, Lba)> = recovered.as_ref().map_or(Vec::new(), |r| r.mapping.iter().map(|&(b, l)| (b, Lba(l))).collect());
        if let Some(&(block, _)) = mapping.iter().find(|(b, _)| *b >= volume_blocks) {
            return Err(VolumeError::Corrupt(format!("block {block} is beyond the volume's {volume_blocks} blocks")));
        }
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

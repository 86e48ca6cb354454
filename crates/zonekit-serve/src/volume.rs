//! A random-write block volume on a zoned device: the block FTL (any placement and victim
//! policy) with its mapping made durable, so that a served volume survives a kill, and every
//! block's data checked against a checksum taken when it was written.
//!
//! The last zones of the device hold the mapping journal ([`zonekit_device::journal`], which
//! documents the format and how a torn tail is told from damage); the FTL sees the device
//! without them ([`FirstZones`]). Each journal entry is (volume block, LBA, CRC-32 of the block's
//! data). A commit happens at every flush of the volume and before the FTL erases any zone (its
//! observer), so nothing durable ever points into an erased zone. Opening recovers the newest
//! whole snapshot and its records, checks the mapping against the data zones before anything
//! is written (every block inside the volume, below the write pointer of a sequential data
//! zone, no two at one LBA), rebuilds the FTL with [`Ftl::restore`], and writes a fresh
//! snapshot in the other half.
//!
//! # Data checksums
//!
//! A write takes the CRC-32 of the block's data; the entry placing it carries the CRC, and a
//! GC move keeps it (the FTL tells the observer which placements are moves): the check rides
//! with the data through every relocation and is never taken again from bytes read back. A
//! read whose data does not match is [`VolumeError::Corrupt`] naming the block and LBA, so a
//! flipped byte in user data is an I/O error, not data. Blocks recovered from a journal written
//! before checksums (format version 1) have none until they are written again.

use std::sync::{Arc, Mutex};

use zonekit_device::journal::{self, Entry, JournalError, Layout, Writer};
use zonekit_device::{DeviceError, FirstZones, Lba, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZonedDevice};
use zonekit_ftl::placement::{self, Params, PolicyEnv};
use zonekit_ftl::{victim, CapacityMode, Ftl, FtlConfig, FtlError, FtlObserver, FtlStats, GcTrigger};

const MAGIC: [u8; 4] = *b"ZKVJ";

#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    #[error("{0}")]
    Usage(String),
    #[error("the volume's journal is damaged: {0}")]
    Corrupt(String),
    /// A block whose data does not match the checksum taken when it was written.
    #[error("block {block} at LBA {lba}: its data does not match the checksum taken when it was written (CRC-32 {found:08x}, written {written:08x})")]
    Data { block: u64, lba: u64, found: u32, written: u32 },
    #[error(transparent)]
    Ftl(#[from] FtlError),
    #[error(transparent)]
    Device(#[from] DeviceError),
}

impl From<JournalError> for VolumeError {
    fn from(e: JournalError) -> VolumeError {
        match e {
            JournalError::Usage(m) => VolumeError::Usage(m),
            JournalError::Corrupt(m) => VolumeError::Corrupt(m.replace("nothing was opened", "the volume was not opened")),
            JournalError::Device(e) => VolumeError::Device(e),
        }
    }
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

/// The mapping and its journal: the FTL's observer, shared with the volume.
struct Journal {
    writer: Writer,
    /// Dense id → volume block, where it lives now, and its data's CRC-32.
    keys: Vec<u64>,
    lbas: Vec<u64>,
    checks: Vec<Option<u32>>,
    /// The CRC-32 of the block a user write is placing.
    incoming: Option<u32>,
    /// Ids placed since the last durable commit (each once).
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
}

impl Journal {
    fn placed(&mut self, id: u32, lba: Lba, by_gc: bool) {
        let i = id as usize;
        if self.lbas.len() <= i {
            self.lbas.resize(i + 1, u64::MAX);
            self.checks.resize(i + 1, None);
            self.is_dirty.resize(i + 1, false);
        }
        self.lbas[i] = lba.0;
        if !by_gc {
            self.checks[i] = self.incoming.take();
        }
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(id);
        }
    }

    /// Makes every placement so far durable. The placements stay pending until the commit
    /// succeeds: one that fails part-way leaves them for the next.
    fn commit<D: ZonedDevice>(&mut self, dev: &mut D) -> Result<(), DeviceError> {
        let (keys, lbas, checks) = (&self.keys, &self.lbas, &self.checks);
        let entry = |id: u32| Entry { key: keys[id as usize], value: lbas[id as usize], check: checks[id as usize] };
        let records: Vec<Entry> = self.dirty.iter().map(|&id| entry(id)).collect();
        self.writer.commit(dev, &records, || (0..lbas.len() as u32).map(entry).collect())?;
        for id in self.dirty.drain(..) {
            self.is_dirty[id as usize] = false;
        }
        Ok(())
    }
}

/// The FTL's observer: the journal behind a shared handle.
struct Observer(Arc<Mutex<Journal>>);

impl<D: ZonedDevice> FtlObserver<FirstZones<D>> for Observer {
    fn placed(&mut self, id: u32, lba: Lba, by_gc: bool) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).placed(id, lba, by_gc);
    }

    fn before_reset(&mut self, dev: &mut FirstZones<D>, _zone: ZoneId) -> Result<(), DeviceError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).commit(dev.inner_mut())
    }
}

/// Checks a recovered mapping against the data zones, before anything is written: every block
/// inside the volume, at an LBA below the write pointer of a sequential data zone, no two at
/// one LBA ([`Ftl::restore`] would find some of this only after sealing the zones).
fn check_mapping(mapping: &[Entry], zones: &[ZoneDescriptor], layout: &Layout, volume_blocks: u64) -> Result<(), VolumeError> {
    let bad = |block: u64, lba: u64, why: String| {
        Err(VolumeError::Corrupt(format!("the mapping puts block {block} at LBA {lba}, {why}; the volume was not opened and nothing was written")))
    };
    if let Some(e) = mapping.iter().find(|e| e.key >= volume_blocks) {
        return bad(e.key, e.value, format!("but the volume has {volume_blocks} blocks"));
    }
    match journal::check_written(mapping.iter().map(|e| (e.key, e.value)), zones, layout) {
        Ok(()) => Ok(()),
        Err((block, lba, why)) => bad(block, lba, why),
    }
}

/// A random-write volume of `blocks()` blocks over a zoned device.
pub struct Volume<D: ZonedDevice + Send + 'static> {
    ftl: Ftl<FirstZones<D>>,
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
        let layout = Layout::for_geometry(&g, MAGIC, g.zone_count as u64 * g.zone_capacity_blocks, 8, "the FTL")?;
        let zones = dev.report_all(ZoneFilter::All)?;
        let written = zones.iter().any(|z| z.state != ZoneState::Empty && z.state != ZoneState::NotWritePointer);
        // Everything up to the FTL's restore only reads: a refused open writes nothing.
        let recovered = journal::recover(&mut dev, &layout)?;
        if recovered.is_none() && written {
            return Err(VolumeError::Usage("the device holds data but no volume journal (reset every zone to create a volume on it)".into()));
        }
        let data_blocks = (layout.first_zone() - g.conventional_zone_count) as u64 * g.zone_capacity_blocks;
        let volume_blocks = match &recovered {
            Some(r) => r.tag,
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
        let entries = recovered.as_ref().map_or(&[][..], |r| &r.entries[..]);
        if recovered.is_some() {
            check_mapping(entries, &zones, &layout, volume_blocks)?;
        }
        let vdev = FirstZones::new(dev, layout.first_zone())?;
        let mut ftl = match &recovered {
            Some(_) => Ftl::restore(vdev, placement, victim, config, &entries.iter().map(|e| (e.key, Lba(e.value))).collect::<Vec<_>>())?,
            None => Ftl::new(vdev, placement, victim, config, volume_blocks as usize)?,
        };
        // A new volume exports no more blocks than the FTL holds beside its open zones and
        // GC's reserve: sized by utilisation alone, a small device's volume was larger (tiny's
        // by 4 %, a 20-zone image's six times over) and its last blocks failed every write.
        let volume_blocks = if recovered.is_some() { volume_blocks } else { volume_blocks.min(ftl.capacity_blocks()) };
        let mut journal = Journal {
            writer: Writer::new(layout, volume_blocks, recovered.as_ref()),
            keys: entries.iter().map(|e| e.key).collect(),
            lbas: entries.iter().map(|e| e.value).collect(),
            checks: entries.iter().map(|e| e.check).collect(),
            incoming: None,
            dirty: Vec::new(),
            is_dirty: vec![false; entries.len()],
        };
        // A fresh snapshot in the other half: nothing is ever appended after a torn block.
        journal.writer.snapshot(ftl.device_mut().inner_mut(), entries)?;
        let journal = Arc::new(Mutex::new(journal));
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

    fn journal(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads one block (zeros if never written); data that does not match its checksum is
    /// [`VolumeError::Data`].
    pub fn read(&mut self, block: u64, buf: &mut [u8]) -> Result<(), VolumeError> {
        self.check(block)?;
        self.ftl.read(block, buf)?;
        if let Some(id) = self.ftl.prefetch_block(block) {
            let j = self.journal();
            if let Some(written) = j.checks[id as usize] {
                let found = crc32fast::hash(buf);
                if found != written {
                    return Err(VolumeError::Data { block, lba: j.lbas[id as usize], found, written });
                }
            }
        }
        Ok(())
    }

    /// Writes one block (durable at the next [`Volume::flush`]).
    pub fn write(&mut self, block: u64, data: &[u8]) -> Result<(), VolumeError> {
        self.check(block)?;
        let new = self.ftl.prefetch_block(block).is_none();
        {
            let mut j = self.journal();
            if new {
                j.keys.push(block);
            }
            j.incoming = Some(crc32fast::hash(data));
        }
        let written = self.ftl.write(block, Some(data), 0, zonekit_ftl::NEVER);
        let mut j = self.journal();
        // A write that failed before placing the block leaves nothing to check, and a new
        // block that got no id no key (ids are dense, in order of first write).
        j.incoming = None;
        if new && self.ftl.prefetch_block(block).is_none() {
            j.keys.pop();
        }
        drop(j);
        written?;
        Ok(())
    }

    /// Makes every write so far durable.
    pub fn flush(&mut self) -> Result<(), VolumeError> {
        let mut j = self.journal.lock().unwrap_or_else(|p| p.into_inner());
        j.commit(self.ftl.device_mut().inner_mut())?;
        Ok(())
    }

    pub fn ftl_stats(&self) -> &FtlStats {
        self.ftl.stats()
    }

    pub fn device(&self) -> &D {
        self.ftl.device().inner()
    }

    /// Journal commits since the volume was opened.
    pub fn commits(&self) -> u64 {
        self.journal().writer.commits()
    }

    /// The device back (nothing is flushed: call [`Volume::flush`] first to keep writes).
    pub fn into_device(self) -> Result<D, VolumeError> {
        Ok(self.ftl.into_device()?.into_inner())
    }
}

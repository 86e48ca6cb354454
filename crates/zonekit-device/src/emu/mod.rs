//! Emulated zoned devices: one zone state machine ([`zones`]) over a storage medium
//! ([`Media`]) that is either memory ([`MemMedia`]) or a file ([`FileMedia`]).
//!
//! # Durability (both media)
//!
//! - Data written and the write pointers it moves become durable at [`ZonedDevice::flush`].
//! - Zone management (open, close, finish, reset) and the read-only/offline fault events are
//!   durable when they return. A reset is made durable *before* the zone's old data is
//!   discarded, so a crash never shows a zone with a stale write pointer over discarded data;
//!   a finish makes the zone's data durable first.
//! - A process restart is not a power cycle: reopening an image restores every zone exactly,
//!   open zones included, as a real drive keeps its zones open between two programs. A power
//!   cycle ([`MemDevice::power_loss`], [`FileDevice::open_power_cycled`]) brings open zones
//!   back Closed (Empty when nothing was written).
//!
//! So after a crash each sequential zone is in the state of its last durable event, and every
//! block below its write pointer reads back what was written there. Writes after the last
//! flush are lost (on the file medium they may linger past the write pointer, where they are
//! never read while the device reads unwritten blocks as zeros). Conventional-zone blocks
//! written since the last flush may hold the old or the new data.

pub mod file;
pub mod mem;
pub(crate) mod zones;

use crate::{DeviceError, DeviceStats, FlashWrites, Geometry, Lba, Result, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZonedDevice};
pub use file::{FileMedia, ImageIo};
pub use mem::{MemMedia, StorageMode};
pub use zones::DurableZone;
use zones::{WriteTarget, ZoneTable};

/// Memory an emulator holds per zone before any data is written, on either medium (an upper
/// bound): the zone's entry in the state table, its durable record, its wear counter (two while
/// the device is built) and dirty flag, and the larger of a memory zone's buffer header and a
/// file image's encoded record with its decoding (held while an image is opened).
pub const ZONE_MEMORY_BYTES: u64 = (zones::ZONE_BYTES
    + std::mem::size_of::<ZoneRecord>()
    + 2 * std::mem::size_of::<u64>()
    + std::mem::size_of::<bool>()
    + max(std::mem::size_of::<Vec<u8>>(), file::RECORD_BYTES + std::mem::size_of::<ZoneRecord>())) as u64;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// Memory the zone tables of an emulated device of `zone_count` zones take (data not counted).
pub fn zone_memory_bytes(zone_count: u64) -> u64 {
    zone_count.saturating_mul(ZONE_MEMORY_BYTES)
}

/// Refuses, before anything is allocated, a geometry whose zone tables alone need more memory
/// than the machine has ([`zonekit_base::mem::total_memory_bytes`]); the allocator would abort
/// the process instead. Where the memory size cannot be read, nothing is refused.
pub fn check_zone_memory(geometry: &Geometry) -> Result<()> {
    let needed = zone_memory_bytes(geometry.zone_count as u64);
    match zonekit_base::mem::beyond_memory(needed) {
        Some(total) => Err(DeviceError::InvalidGeometry(format!(
            "{} zones need {needed} bytes of memory for their tables ({ZONE_MEMORY_BYTES} a zone); the machine has {total}",
            geometry.zone_count
        ))),
        None => Ok(()),
    }
}

/// A zone as it is persisted: its durable state and its wear.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ZoneRecord {
    pub zone: DurableZone,
    pub resets: u64,
}

/// Where an emulator keeps zone data and durable zone records.
///
/// The emulator calls it only with transfers it has validated: writes land inside the zone at
/// offsets the state machine allows, reads cover only the part of a zone that holds data.
pub trait Media {
    /// Stores `data` at byte `offset_bytes` of `zone`.
    fn write(&mut self, zone: u32, offset_bytes: u64, data: &[u8]) -> Result<()>;
    /// Fills `buf` from byte `offset_bytes` of `zone`; bytes never written read as zero.
    fn read(&mut self, zone: u32, offset_bytes: u64, buf: &mut [u8]) -> Result<()>;
    /// Drops the zone's data; called after its reset is durable.
    fn discard(&mut self, zone: u32) -> Result<()>;
    /// Makes all data written so far durable.
    fn sync_data(&mut self) -> Result<()>;
    /// Makes the given zone records durable. The data they cover is already durable.
    fn persist(&mut self, records: &[(u32, ZoneRecord)]) -> Result<()>;
    /// Refuses `what` (a mutating call) on a medium opened read-only. The emulator asks before
    /// it touches the zone table, so a refused call changes nothing.
    fn check_writable(&self, _what: &'static str) -> Result<()> {
        Ok(())
    }
    /// [`ZonedDevice::hint_zone`] for a sequential zone of the device (a medium that places
    /// data by class uses it; memory and files do not).
    fn hint_zone(&mut self, _zone: u32, _lifetime: u8) {}
    /// [`ZonedDevice::flash_writes`]: what the flash beneath programmed, for a medium with an
    /// FTL of its own.
    fn flash_writes(&self) -> Option<FlashWrites> {
        None
    }
}

/// An emulated zoned device: exact ZNS zone semantics over a [`Media`].
pub struct Emulator<M: Media> {
    table: ZoneTable,
    media: M,
    stats: DeviceStats,
    /// Zones written since the last flush, whose write pointers the flush must persist.
    dirty_zones: Vec<u32>,
    dirty: Vec<bool>,
}

/// The in-memory emulator.
pub type MemDevice = Emulator<MemMedia>;
/// The file-backed emulator.
pub type FileDevice = Emulator<FileMedia>;

impl<M: Media> Emulator<M> {
    fn from_parts(table: ZoneTable, media: M, resets_per_zone: Vec<u64>) -> Emulator<M> {
        let zone_count = table.geometry().zone_count as usize;
        let mut stats = DeviceStats::new(zone_count as u32);
        stats.resets_per_zone = resets_per_zone;
        Emulator { table, media, stats, dirty_zones: Vec::new(), dirty: vec![false; zone_count] }
    }

    pub fn media(&self) -> &M {
        &self.media
    }

    /// A fresh device with every sequential zone Empty over a medium of the caller's (which
    /// starts with nothing written): the zone semantics are the emulator's whatever holds the
    /// data.
    pub fn with_media(geometry: Geometry, behavior: ZoneBehavior, media: M) -> Result<Emulator<M>> {
        geometry.validate()?;
        check_zone_memory(&geometry)?;
        Ok(Emulator::from_parts(ZoneTable::new(geometry, behavior), media, vec![0; geometry.zone_count as usize]))
    }

    /// Fault injection: the zone becomes Read Only (durably).
    pub fn inject_read_only(&mut self, zone: ZoneId) -> Result<()> {
        self.media.check_writable("inject read-only")?;
        self.table.set_read_only(zone)?;
        self.persist_zone(zone.0)
    }

    /// Fault injection: a Read Only zone goes Offline (durably); its data is gone.
    pub fn inject_offline(&mut self, zone: ZoneId) -> Result<()> {
        self.media.check_writable("inject offline")?;
        self.table.set_offline(zone)?;
        self.persist_zone(zone.0)?;
        self.media.discard(zone.0)
    }

    /// Panics if the zone table is inconsistent. Cheap enough for tests, not for hot loops.
    pub fn check_invariants(&self) {
        self.table.check_invariants();
    }

    fn record(&self, zone: u32) -> ZoneRecord {
        ZoneRecord { zone: self.table.durable(zone), resets: self.stats.resets_per_zone[zone as usize] }
    }

    fn persist_zone(&mut self, zone: u32) -> Result<()> {
        let record = self.record(zone);
        self.media.persist(&[(zone, record)])
    }

    #[inline]
    fn mark_dirty(&mut self, zone: u32) {
        if !self.dirty[zone as usize] {
            self.dirty[zone as usize] = true;
            self.dirty_zones.push(zone);
        }
    }

    #[inline]
    fn store(&mut self, target: WriteTarget, data: &[u8]) -> Result<crate::emu::zones::WriteSlot> {
        self.media.check_writable(match target {
            WriteTarget::At(_) => "write",
            WriteTarget::Append(_) => "append",
        })?;
        let blocks = self.table.geometry().blocks_in(data.len())?;
        let slot = self.table.begin_write(target, blocks)?;
        let block_size = self.table.geometry().block_size_bytes as u64;
        self.media.write(slot.zone, slot.offset_blocks * block_size, data)?;
        self.table.end_write(slot);
        self.mark_dirty(slot.zone);
        Ok(slot)
    }
}

impl<M: Media> ZonedDevice for Emulator<M> {
    fn geometry(&self) -> &Geometry {
        self.table.geometry()
    }

    fn behavior(&self) -> ZoneBehavior {
        self.table.behavior()
    }

    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> Result<usize> {
        let geometry = *self.table.geometry();
        let first = geometry.zone_of(start).ok_or(DeviceError::OutOfRange { lba: start, blocks: 0, device_blocks: geometry.total_blocks() })?;
        let before = out.len();
        for z in first.0..geometry.zone_count {
            if out.len() - before == max_zones {
                break;
            }
            if filter.matches(self.table.state(z)) {
                out.push(self.table.descriptor(z));
            }
        }
        Ok(out.len() - before)
    }

    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> Result<()> {
        let geometry = *self.table.geometry();
        let blocks = geometry.blocks_in(buf.len())?;
        self.table.check_read(lba, blocks)?;
        let block_size = geometry.block_size_bytes as u64;
        let mut next = lba.0;
        let mut rest = &mut buf[..];
        while !rest.is_empty() {
            let zone = (next / geometry.zone_size_blocks) as u32;
            let offset_blocks = next % geometry.zone_size_blocks;
            let in_zone = (geometry.zone_size_blocks - offset_blocks).min(rest.len() as u64 / block_size);
            let (chunk, tail) = rest.split_at_mut((in_zone * block_size) as usize);
            let data_blocks = if self.table.behavior().unwritten_reads_zero {
                self.table.data_blocks(zone).saturating_sub(offset_blocks).min(in_zone)
            } else {
                in_zone // whatever the medium still holds, as null_blk returns old data
            };
            let (stored, unwritten) = chunk.split_at_mut((data_blocks * block_size) as usize);
            if !stored.is_empty() {
                self.media.read(zone, offset_blocks * block_size, stored)?;
            }
            unwritten.fill(0);
            next += in_zone;
            rest = tail;
        }
        self.stats.reads.add(buf.len() as u64);
        Ok(())
    }

    #[inline]
    fn write(&mut self, lba: Lba, data: &[u8]) -> Result<()> {
        self.store(WriteTarget::At(lba), data)?;
        self.stats.writes.add(data.len() as u64);
        Ok(())
    }

    #[inline]
    fn append(&mut self, zone: ZoneId, data: &[u8]) -> Result<Lba> {
        let slot = self.store(WriteTarget::Append(zone), data)?;
        self.stats.appends.add(data.len() as u64);
        Ok(slot.lba)
    }

    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()> {
        self.media.check_writable(action.name())?;
        if action != ZoneAction::Reset && zone.0 < self.dirty.len() as u32 && self.dirty[zone.0 as usize] {
            // The zone's record, persisted below, will cover its data: make that durable first.
            self.media.sync_data()?;
        }
        let erased = self.table.manage(action, zone)?;
        self.stats.record_action(action, zone, erased);
        match action {
            ZoneAction::Reset if erased => {
                self.persist_zone(zone.0)?;
                if self.table.behavior().unwritten_reads_zero {
                    self.media.discard(zone.0)?;
                }
            }
            ZoneAction::Reset => {}
            ZoneAction::Finish | ZoneAction::Open | ZoneAction::Close => self.persist_zone(zone.0)?,
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.media.sync_data()?;
        let records: Vec<(u32, ZoneRecord)> = self.dirty_zones.iter().map(|&z| (z, self.record(z))).collect();
        if !records.is_empty() {
            self.media.persist(&records)?;
        }
        for z in self.dirty_zones.drain(..) {
            self.dirty[z as usize] = false;
        }
        self.stats.flushes += 1;
        Ok(())
    }

    fn stats(&self) -> &DeviceStats {
        &self.stats
    }

    fn hint_zone(&mut self, zone: ZoneId, lifetime: u8) {
        // A hint names a sequential zone; any other is a caller's slip the device ignores, as
        // a hint never changes what operations do.
        let g = self.table.geometry();
        if zone.0 < g.zone_count && g.zone_type(zone) == crate::ZoneType::SequentialWriteRequired {
            self.media.hint_zone(zone.0, lifetime);
        }
    }

    fn flash_writes(&self) -> Option<FlashWrites> {
        self.media.flash_writes()
    }
}

impl MemDevice {
    /// A fresh in-memory device with every sequential zone Empty.
    pub fn new(geometry: Geometry, behavior: ZoneBehavior, mode: StorageMode) -> Result<MemDevice> {
        geometry.validate()?;
        check_zone_memory(&geometry)?;
        let table = ZoneTable::new(geometry, behavior);
        let media = MemMedia::new(&table, mode);
        Ok(Emulator::from_parts(table, media, vec![0; geometry.zone_count as usize]))
    }

    /// Simulates power loss and restart: every zone returns to its last durable state, data
    /// written since then is dropped, open zones come back Closed (Empty if nothing written).
    pub fn power_loss(&mut self) {
        let geometry = *self.table.geometry();
        let durable: Vec<DurableZone> = self.media.durable_records().iter().map(|r| r.zone).collect();
        self.table = ZoneTable::restore(geometry, self.table.behavior(), &durable, true).expect("durable records of a memory device are always valid");
        // Drop the lost writes, unless this device keeps old data past the write pointer
        // anyway (then the lost writes are just more old data, as on the file medium).
        if self.table.behavior().unwritten_reads_zero {
            for (z, d) in durable.iter().enumerate() {
                self.media.truncate(z as u32, d.written_blocks * geometry.block_size_bytes as u64);
            }
        }
        for z in self.dirty_zones.drain(..) {
            self.dirty[z as usize] = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn huge() -> Geometry {
        Geometry {
            block_size_bytes: 4096,
            zone_size_blocks: 256,
            zone_capacity_blocks: 256,
            zone_count: u32::MAX,
            conventional_zone_count: 0,
            open_zones_max: None,
            active_zones_max: None,
        }
    }

    #[test]
    fn zone_tables_larger_than_memory_are_refused_before_allocation() {
        if zonekit_base::mem::total_memory_bytes().is_none_or(|m| m >= zone_memory_bytes(u32::MAX as u64)) {
            return; // A machine with memory for these tables: nothing to refuse.
        }
        // Allocating these tables used to abort the process ("memory allocation of ... failed").
        for mode in [StorageMode::Data, StorageMode::MetadataOnly] {
            let e = MemDevice::new(huge(), ZoneBehavior::default(), mode).err().expect("refused");
            assert!(e.to_string().contains("4294967295 zones need") && e.to_string().contains("memory"), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.zk");
        let e = FileDevice::create(&path, huge(), ZoneBehavior::default(), "").err().expect("refused");
        assert!(e.to_string().contains("memory"), "{e}");
        assert!(!path.exists());
        // A small device is unaffected.
        MemDevice::new(Geometry { zone_count: 8, ..huge() }, ZoneBehavior::default(), StorageMode::Data).unwrap();
    }
}

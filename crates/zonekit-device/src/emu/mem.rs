//! The memory medium: zone data in per-zone buffers, or none at all.

use super::zones::ZoneTable;
use super::{Media, ZoneRecord};
use crate::emu::DurableZone;
use crate::{Result, ZoneState};

/// Whether a memory device keeps the data written to it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StorageMode {
    /// Payload kept; reads return what was written.
    Data,
    /// No payload: reads return zeros. Zone states and write pointers are exact, so trace
    /// replays of hundreds of gigabytes run in memory proportional to the zone count.
    MetadataOnly,
}

pub struct MemMedia {
    mode: StorageMode,
    /// Per zone, the bytes written from the zone start (empty in metadata-only mode).
    zones: Vec<Vec<u8>>,
    zone_capacity_bytes: usize,
    /// What survives a power loss.
    durable: Vec<ZoneRecord>,
}

impl MemMedia {
    pub(crate) fn new(table: &ZoneTable, mode: StorageMode) -> MemMedia {
        let g = table.geometry();
        let zone_count = g.zone_count as usize;
        MemMedia {
            mode,
            zones: vec![Vec::new(); if mode == StorageMode::Data { zone_count } else { 0 }],
            zone_capacity_bytes: g.zone_size_bytes() as usize,
            durable: (0..g.zone_count).map(|z| ZoneRecord { zone: table.durable(z), resets: 0 }).collect(),
        }
    }

    pub fn mode(&self) -> StorageMode {
        self.mode
    }

    pub(crate) fn durable_records(&self) -> &[ZoneRecord] {
        &self.durable
    }

    /// Keeps only the first `len_bytes` of a zone's data (power loss).
    pub(crate) fn truncate(&mut self, zone: u32, len_bytes: u64) {
        let conventional = self.durable[zone as usize].zone.state == ZoneState::NotWritePointer;
        if let Some(data) = self.zones.get_mut(zone as usize) {
            if !conventional {
                data.truncate(len_bytes as usize);
            }
        }
    }

    /// Durable state of a zone, for tests of power-loss behaviour.
    pub fn durable_zone(&self, zone: u32) -> DurableZone {
        self.durable[zone as usize].zone
    }
}

impl Media for MemMedia {
    #[inline]
    fn write(&mut self, zone: u32, offset_bytes: u64, data: &[u8]) -> Result<()> {
        if self.mode == StorageMode::MetadataOnly {
            return Ok(());
        }
        let buf = &mut self.zones[zone as usize];
        let offset = offset_bytes as usize;
        if buf.capacity() == 0 {
            // Reserve the whole zone up front: address space is cheap, pages are touched only
            // when written, and the sequential write path then never reallocates.
            buf.reserve_exact(self.zone_capacity_bytes);
        }
        if offset == buf.len() {
            buf.extend_from_slice(data);
        } else {
            let end = offset + data.len();
            if buf.len() < end {
                buf.resize(end, 0);
            }
            buf[offset..end].copy_from_slice(data);
        }
        Ok(())
    }

    fn read(&mut self, zone: u32, offset_bytes: u64, buf: &mut [u8]) -> Result<()> {
        let Some(data) = self.zones.get(zone as usize) else {
            buf.fill(0);
            return Ok(());
        };
        let offset = (offset_bytes as usize).min(data.len());
        let available = (data.len() - offset).min(buf.len());
        buf[..available].copy_from_slice(&data[offset..offset + available]);
        buf[available..].fill(0);
        Ok(())
    }

    fn discard(&mut self, zone: u32) -> Result<()> {
        // Keep the allocation: a reset zone is written again soon (GC recycles zones), and
        // reusing its resident pages spares a page fault per 4 KiB. Memory stays bounded by
        // the device size, which data mode holds anyway.
        if let Some(data) = self.zones.get_mut(zone as usize) {
            data.clear();
        }
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }

    fn persist(&mut self, records: &[(u32, ZoneRecord)]) -> Result<()> {
        for &(zone, record) in records {
            self.durable[zone as usize] = record;
        }
        Ok(())
    }
}

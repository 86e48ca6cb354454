//! [`FirstZones`]: a device seen as its first zones only. The journal's users write their data
//! through it (the journal keeps the last zones, [`crate::journal::Layout::first_zone`]), and
//! an experiment that runs on part of a larger device (a B+-tree on 1 + 40 zones of a zoned
//! null_blk) through it.

use crate::{DeviceError, DeviceStats, Geometry, Lba, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZonedDevice};

/// `inner` with only its first `geometry.zone_count` zones: an operation on any other zone is
/// refused before it reaches `inner`.
pub struct FirstZones<D> {
    inner: D,
    geometry: Geometry,
}

impl<D: ZonedDevice> FirstZones<D> {
    /// `device` as its first `zone_count` zones (refused when it has fewer, or for none).
    pub fn new(device: D, zone_count: u32) -> Result<FirstZones<D>, DeviceError> {
        let g = *device.geometry();
        if zone_count == 0 || zone_count > g.zone_count {
            return Err(DeviceError::InvalidArgument(format!("the first {zone_count} zones of a device of {} zones", g.zone_count)));
        }
        let geometry = Geometry { zone_count, conventional_zone_count: g.conventional_zone_count.min(zone_count), ..g };
        Ok(FirstZones { inner: device, geometry })
    }

    fn check(&self, zone: u64) -> Result<(), DeviceError> {
        if zone >= self.geometry.zone_count as u64 {
            return Err(DeviceError::InvalidArgument(format!("zone {zone} is outside the first {} zones this user may touch", self.geometry.zone_count)));
        }
        Ok(())
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The whole device, every zone (for the journal's writer).
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    pub fn into_inner(self) -> D {
        self.inner
    }
}

impl<D: ZonedDevice> ZonedDevice for FirstZones<D> {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn behavior(&self) -> ZoneBehavior {
        self.inner.behavior()
    }

    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> crate::Result<usize> {
        let first = start.0 / self.geometry.zone_size_blocks;
        let left = (self.geometry.zone_count as u64).saturating_sub(first) as usize;
        if left == 0 {
            out.clear();
            return Ok(0);
        }
        // Filtered reports may skip zones: ask for every zone of the window and filter here.
        let mut all = Vec::new();
        self.inner.report_zones(start, ZoneFilter::All, left, &mut all)?;
        out.clear();
        out.extend(all.into_iter().filter(|z| filter.matches(z.state)).take(max_zones));
        Ok(out.len())
    }

    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> crate::Result<()> {
        self.check(lba.0 / self.geometry.zone_size_blocks)?;
        self.inner.read(lba, buf)
    }

    fn write(&mut self, lba: Lba, data: &[u8]) -> crate::Result<()> {
        self.check(lba.0 / self.geometry.zone_size_blocks)?;
        self.inner.write(lba, data)
    }

    fn append(&mut self, zone: ZoneId, data: &[u8]) -> crate::Result<Lba> {
        self.check(zone.0 as u64)?;
        self.inner.append(zone, data)
    }

    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> crate::Result<()> {
        self.check(zone.0 as u64)?;
        self.inner.manage(action, zone)
    }

    fn flush(&mut self) -> crate::Result<()> {
        self.inner.flush()
    }

    fn stats(&self) -> &DeviceStats {
        self.inner.stats()
    }
    // Hints and flash counters pass through: a wrapper changes neither placement nor GC.
    fn hint_zone(&mut self, zone: ZoneId, lifetime: u8) {
        self.inner.hint_zone(zone, lifetime)
    }
    fn flash_writes(&self) -> Option<crate::FlashWrites> {
        self.inner.flash_writes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemDevice, StorageMode};

    #[test]
    fn only_the_first_zones_are_seen_and_touched() {
        let g = Geometry {
            block_size_bytes: 4096,
            zone_size_blocks: 8,
            zone_capacity_blocks: 8,
            zone_count: 6,
            conventional_zone_count: 1,
            open_zones_max: None,
            active_zones_max: None,
        };
        let dev = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
        assert!(FirstZones::new(MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap(), 7).is_err());
        assert!(FirstZones::new(MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap(), 0).is_err());
        let mut window = FirstZones::new(dev, 3).unwrap();
        assert_eq!((window.geometry().zone_count, window.geometry().conventional_zone_count), (3, 1));
        let zones = window.report_all(ZoneFilter::All).unwrap();
        assert_eq!(zones.iter().map(|z| z.id.0).collect::<Vec<_>>(), [0, 1, 2]);
        let block = [5u8; 4096];
        window.append(ZoneId(2), &block).unwrap();
        assert!(window.append(ZoneId(3), &block).is_err(), "zone 3 is outside the window");
        assert!(window.write(Lba(3 * 8), &block).is_err());
        assert!(window.manage(ZoneAction::Reset, ZoneId(5)).is_err());
        // Nothing reached the zones past the window.
        let inner = window.into_inner().report_all(ZoneFilter::All).unwrap();
        assert!(inner[3..].iter().all(|z| z.write_pointer == z.start), "{inner:?}");
    }
}

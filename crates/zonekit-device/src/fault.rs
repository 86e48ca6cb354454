//! [`FaultyDevice`]: wraps any device and fails chosen operations, to test how engines handle
//! device errors. Zone faults (read-only, offline) and power loss are emulator features:
//! [`crate::emu::Emulator::inject_read_only`], [`crate::MemDevice::power_loss`].

use crate::{DeviceError, DeviceStats, Geometry, Lba, Result, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZonedDevice};

/// Which operations count towards a fault's trigger.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FaultOn {
    /// Every operation (report, read, write, append, manage, flush).
    Any,
    /// Writes and appends.
    Writes,
    Reads,
    Flushes,
    ZoneManagement,
}

/// Fails the `nth` (0-based) operation matching `on`, and every later one if `sticky` (a
/// device that died); the failed operation does not reach the inner device.
pub struct FaultyDevice<D> {
    inner: D,
    on: FaultOn,
    fail_at: Option<u64>,
    sticky: bool,
    seen: u64,
}

impl<D: ZonedDevice> FaultyDevice<D> {
    pub fn new(inner: D) -> FaultyDevice<D> {
        FaultyDevice { inner, on: FaultOn::Any, fail_at: None, sticky: false, seen: 0 }
    }

    /// Arms a fault at the `nth` matching operation from now.
    pub fn fail_nth(&mut self, on: FaultOn, nth: u64, sticky: bool) {
        self.on = on;
        self.fail_at = Some(nth);
        self.sticky = sticky;
        self.seen = 0;
    }

    pub fn disarm(&mut self) {
        self.fail_at = None;
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    fn gate(&mut self, kind: FaultOn) -> Result<()> {
        let Some(at) = self.fail_at else { return Ok(()) };
        if self.on != FaultOn::Any && self.on != kind {
            return Ok(());
        }
        let index = self.seen;
        self.seen += 1;
        if index == at || (self.sticky && index > at) {
            return Err(DeviceError::InjectedFault { op_index: index });
        }
        Ok(())
    }
}

impl<D: ZonedDevice> ZonedDevice for FaultyDevice<D> {
    fn geometry(&self) -> &Geometry {
        self.inner.geometry()
    }
    fn behavior(&self) -> ZoneBehavior {
        self.inner.behavior()
    }
    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> Result<usize> {
        self.gate(FaultOn::Any)?;
        self.inner.report_zones(start, filter, max_zones, out)
    }
    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> Result<()> {
        self.gate(FaultOn::Reads)?;
        self.inner.read(lba, buf)
    }
    fn write(&mut self, lba: Lba, data: &[u8]) -> Result<()> {
        self.gate(FaultOn::Writes)?;
        self.inner.write(lba, data)
    }
    fn append(&mut self, zone: ZoneId, data: &[u8]) -> Result<Lba> {
        self.gate(FaultOn::Writes)?;
        self.inner.append(zone, data)
    }
    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()> {
        self.gate(FaultOn::ZoneManagement)?;
        self.inner.manage(action, zone)
    }
    fn flush(&mut self) -> Result<()> {
        self.gate(FaultOn::Flushes)?;
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
    use crate::{preset, MemDevice, StorageMode};

    #[test]
    fn fails_exactly_the_nth_write_and_passes_the_rest() {
        let g = preset::find("tiny").unwrap().geometry;
        let mut dev = FaultyDevice::new(MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap());
        dev.fail_nth(FaultOn::Writes, 2, false);
        let block = vec![1u8; 4096];
        dev.append(ZoneId(0), &block).unwrap();
        dev.flush().unwrap(); // not a write: does not count
        dev.append(ZoneId(0), &block).unwrap();
        let err = dev.append(ZoneId(0), &block).unwrap_err();
        assert_eq!(err.kind(), "injected-fault");
        assert_eq!(dev.append(ZoneId(0), &block).unwrap(), Lba(2), "the failed append must not reach the device");
    }

    #[test]
    fn sticky_fault_fails_everything_after() {
        let g = preset::find("tiny").unwrap().geometry;
        let mut dev = FaultyDevice::new(MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::MetadataOnly).unwrap());
        dev.fail_nth(FaultOn::Any, 0, true);
        assert!(dev.flush().is_err());
        assert!(dev.zone(ZoneId(0)).is_err());
        dev.disarm();
        dev.flush().unwrap();
    }
}

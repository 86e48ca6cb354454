//! A served device under the flash timing model, with the model's host clock following the
//! wall clock: a request arriving after an idle second does not queue behind the previous
//! burst, so the modelled latencies are what the preset's drive would show under the arrival
//! pattern the kernel really produced.

use std::time::Instant;

use zonekit_device::timing::TimedDevice;
use zonekit_device::{DeviceStats, Geometry, Lba, Result, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZonedDevice};

pub struct WallClockTimed<D> {
    inner: TimedDevice<D>,
    started: Instant,
}

impl<D: ZonedDevice> WallClockTimed<D> {
    pub fn new(inner: TimedDevice<D>) -> WallClockTimed<D> {
        WallClockTimed { inner, started: Instant::now() }
    }

    pub fn timed(&self) -> &TimedDevice<D> {
        &self.inner
    }

    /// (operations charged, the wall-clock instant the latest completes in the model).
    pub fn last_completion(&self) -> (u64, Instant) {
        let (ops, done_ns) = self.inner.last_completion();
        (ops, self.started + std::time::Duration::from_nanos(done_ns))
    }

    fn tick(&mut self) -> &mut TimedDevice<D> {
        self.inner.advance_host_to(self.started.elapsed().as_nanos() as u64);
        &mut self.inner
    }

    /// The model's latencies (ns) for the counters.
    pub fn model_json(&self) -> serde_json::Value {
        let r = self.inner.report();
        let row = |h: &zonekit_base::LogHistogram| serde_json::json!({ "ops": h.count, "p50": h.quantile(0.5), "p99": h.quantile(0.99), "max": h.max, "mean": h.mean() });
        serde_json::json!({
            "modelled_latency_ns": { "read": row(&r.read_latency), "write": row(&r.write_latency), "reset": row(&r.reset_latency) },
            "modelled_busy_until_ns": r.elapsed_ns,
        })
    }
}

impl<D: ZonedDevice> ZonedDevice for WallClockTimed<D> {
    fn geometry(&self) -> &Geometry {
        self.inner.geometry()
    }

    fn behavior(&self) -> ZoneBehavior {
        self.inner.behavior()
    }

    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> Result<usize> {
        self.inner.report_zones(start, filter, max_zones, out)
    }

    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> Result<()> {
        self.tick().read(lba, buf)
    }

    fn write(&mut self, lba: Lba, data: &[u8]) -> Result<()> {
        self.tick().write(lba, data)
    }

    fn append(&mut self, zone: ZoneId, data: &[u8]) -> Result<Lba> {
        self.tick().append(zone, data)
    }

    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()> {
        self.tick().manage(action, zone)
    }

    fn flush(&mut self) -> Result<()> {
        self.tick().flush()
    }

    fn stats(&self) -> &DeviceStats {
        self.inner.stats()
    }
    // Hints and flash counters pass through: a wrapper changes neither placement nor GC.
    fn hint_zone(&mut self, zone: ZoneId, lifetime: u8) {
        self.inner.hint_zone(zone, lifetime)
    }
    fn flash_writes(&self) -> Option<zonekit_device::FlashWrites> {
        self.inner.flash_writes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonekit_device::{preset, MemDevice, StorageMode};

    #[test]
    fn an_idle_gap_does_not_queue_the_next_request() {
        let p = preset::find("tiny").unwrap();
        let dev = MemDevice::new(p.geometry, p.behavior, StorageMode::Data).unwrap();
        let mut d = WallClockTimed::new(TimedDevice::new(dev, p.flash, 1).unwrap());
        let block = vec![0u8; p.geometry.block_size_bytes as usize];
        d.write(Lba(0), &block).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        d.write(Lba(1), &block).unwrap();
        let v = d.model_json();
        // Both writes see an idle device: the same modelled latency, not one queued behind the other.
        let w = &v["modelled_latency_ns"]["write"];
        assert_eq!(w["ops"], 2);
        assert_eq!(w["max"], w["p50"]);
        assert!(v["modelled_busy_until_ns"].as_u64().unwrap() >= 20_000_000);
    }
}

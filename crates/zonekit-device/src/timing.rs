//! A deterministic flash timing model in virtual time, and [`TimedDevice`], a wrapper that
//! charges every operation of any [`ZonedDevice`] to it.
//!
//! Flash is channels × dies. The pages of a zone are striped round-robin over the zone's
//! `dies_per_zone` consecutive dies; die *d* sits on channel *d* mod channels, so consecutive
//! dies rotate over channels (the Open-Channel address layout). Every die and every channel
//! keeps a busy-until time. A page write transfers its bytes over the channel, then, once the
//! page is full, programs it on the die; a read senses the page on the die, then transfers it.
//! An operation completes when its last page does:
//! `max(submit, die free, channel free) + transfer + cell latency`, as FEMU, NVMeVirt and
//! ConfZNS model it. Partial pages wait in the controller until filled (or the zone is
//! finished). A reset erases, on each of the zone's dies, the blocks that were programmed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

pub use zonekit_base::LogHistogram as LatencyHistogram;

use crate::controller::{Controller, WriteKind};
use crate::flash::Dies;
pub use crate::flash::{BufferRelease, ControllerConfig, FlashConfig};
use crate::{DeviceError, DeviceStats, Geometry, Lba, Result, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZonedDevice};

/// The die (an Open-Channel parallel unit, numbered with the channel in the low digits) and
/// the channel a zone's pages go to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ParallelUnit {
    pub die: u32,
    pub channel: u32,
}

/// Busy-until times of every die and channel, in virtual nanoseconds.
#[derive(Clone, Debug)]
pub struct TimingModel {
    dies: Dies,
    zone_size_bytes: u64,
    /// Bytes written into each zone since its last reset (which pages are programmed).
    zone_written_bytes: Vec<u64>,
    /// The controller model, when the flash config has one.
    pub(crate) controller: Option<Controller>,
}

impl TimingModel {
    pub fn new(flash: FlashConfig, geometry: &Geometry) -> Result<TimingModel> {
        flash.validate()?;
        Ok(TimingModel {
            dies: Dies::new(flash, geometry.zone_capacity_bytes()),
            zone_size_bytes: geometry.zone_size_bytes(),
            zone_written_bytes: vec![0; geometry.zone_count as usize],
            controller: flash.controller.enabled().then(|| Controller::new(flash.controller, geometry.zone_count, geometry.conventional_zone_count, flash.die_count())),
        })
    }

    pub fn flash(&self) -> &FlashConfig {
        &self.dies.flash
    }

    /// Where a zone lives when it is pinned to one die (`dies_per_zone == 1`, an Open-Channel
    /// 2.0 chunk); `None` when its pages are striped over several dies.
    pub fn parallel_unit(&self, zone: u32) -> Option<ParallelUnit> {
        if self.dies.flash.dies_per_zone != 1 || zone as usize >= self.zone_written_bytes.len() {
            return None;
        }
        let die = self.dies.die_of(zone, 0);
        Some(ParallelUnit { die: die as u32, channel: self.dies.channel_of(die) as u32 })
    }

    /// Writes `len` bytes at byte `offset` of `zone`; returns the completion time.
    pub fn write(&mut self, submit_ns: u64, zone: u32, offset: u64, len: u64) -> u64 {
        if self.controller.is_some() {
            self.note_written(zone, offset + len);
            return self.controller.as_mut().expect("checked").write(&mut self.dies, submit_ns, zone, offset, len, WriteKind::Write);
        }
        self.flash_write(submit_ns, zone, offset, len)
    }

    /// A zone append of `len` bytes that landed at byte `offset` of `zone`: a write, but for
    /// the controller model's append engine.
    pub fn append(&mut self, submit_ns: u64, zone: u32, offset: u64, len: u64) -> u64 {
        if self.controller.is_some() {
            self.note_written(zone, offset + len);
            return self.controller.as_mut().expect("checked").write(&mut self.dies, submit_ns, zone, offset, len, WriteKind::Append);
        }
        self.flash_write(submit_ns, zone, offset, len)
    }

    /// One write command whose bytes land in several places (`(zone, offset, len)` each): a
    /// conventional SSD's host command, whose blocks its mapping places. Under a controller
    /// model it is one command (one dispatch, one engine pass, one completion); on the plain
    /// flash each place is written as [`TimingModel::write`] would, and the command completes
    /// with the last.
    pub fn write_parts(&mut self, submit_ns: u64, parts: &[(u32, u64, u64)]) -> u64 {
        if self.controller.is_some() {
            for &(zone, offset, len) in parts {
                self.note_written(zone, offset + len);
            }
            return self.controller.as_mut().expect("checked").write_parts(&mut self.dies, submit_ns, parts, WriteKind::Write);
        }
        parts.iter().fold(submit_ns, |done, &(zone, offset, len)| done.max(self.flash_write(submit_ns, zone, offset, len)))
    }

    fn note_written(&mut self, zone: u32, end: u64) {
        let written = &mut self.zone_written_bytes[zone as usize];
        *written = (*written).max(end);
    }

    /// Checks the controller model's bookkeeping (tests).
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        if let Some(c) = &self.controller {
            c.check_invariants();
        }
    }

    /// Whether a controller model sits in front of the flash.
    pub fn has_controller(&self) -> bool {
        self.controller.is_some()
    }

    /// An explicit open (free without a controller model).
    pub fn open(&mut self, submit_ns: u64, zone: u32) -> u64 {
        match &mut self.controller {
            Some(c) => c.manage(&mut self.dies, submit_ns, zone, ZoneAction::Open),
            None => submit_ns,
        }
    }

    /// A close (free without a controller model).
    pub fn close(&mut self, submit_ns: u64, zone: u32) -> u64 {
        match &mut self.controller {
            Some(c) => c.manage(&mut self.dies, submit_ns, zone, ZoneAction::Close),
            None => submit_ns,
        }
    }

    /// The zone as if `bytes` had been written into it long ago, explicitly opened when
    /// `open` (a benchmark's fill before a reset or finish, without simulating it).
    pub fn assume_written(&mut self, zone: u32, bytes: u64, open: bool) {
        self.zone_written_bytes[zone as usize] = bytes;
        if let Some(c) = &mut self.controller {
            c.assume_written(&self.dies, zone, bytes, open);
        }
    }

    fn flash_write(&mut self, submit_ns: u64, zone: u32, offset: u64, len: u64) -> u64 {
        let page_size = self.dies.flash.page_size_bytes as u64;
        let mut done = submit_ns;
        let mut at = offset;
        let end = offset + len;
        while at < end {
            let page = at / page_size;
            let page_end = (page + 1) * page_size;
            let bytes = page_end.min(end) - at;
            let die = self.dies.die_of(zone, page);
            let channel = self.dies.channel_of(die);
            let transferred = submit_ns.max(self.dies.channel_free_ns[channel]) + self.dies.flash.transfer_ns(bytes);
            self.dies.channel_free_ns[channel] = transferred;
            let page_done = if at + bytes == page_end {
                let programmed = transferred.max(self.dies.die_free_ns[die]) + self.dies.flash.program_ns;
                self.dies.die_free_ns[die] = programmed;
                programmed
            } else {
                transferred
            };
            done = done.max(page_done);
            at += bytes;
        }
        let written = &mut self.zone_written_bytes[zone as usize];
        *written = (*written).max(end);
        done
    }

    /// Reads `len` bytes at byte `offset` of `zone`; returns the completion time.
    pub fn read(&mut self, submit_ns: u64, zone: u32, offset: u64, len: u64) -> u64 {
        let submit_ns = match &mut self.controller {
            Some(c) => c.read_start(submit_ns),
            None => submit_ns,
        };
        let page_size = self.dies.flash.page_size_bytes as u64;
        let mut done = submit_ns;
        let mut at = offset;
        let end = offset + len;
        while at < end {
            let page = at / page_size;
            let bytes = ((page + 1) * page_size).min(end) - at;
            let die = self.dies.die_of(zone, page);
            let channel = self.dies.channel_of(die);
            let sensed = if let Some(c) = &mut self.controller {
                c.sense(&mut self.dies, die, submit_ns)
            } else {
                let sensed = submit_ns.max(self.dies.die_free_ns[die]) + self.dies.flash.read_ns;
                self.dies.die_free_ns[die] = sensed;
                sensed
            };
            let transferred = sensed.max(self.dies.channel_free_ns[channel]) + self.dies.flash.transfer_ns(bytes);
            self.dies.channel_free_ns[channel] = transferred;
            done = done.max(transferred);
            at += bytes;
        }
        done + self.controller.as_ref().map_or(0, |c| c.cfg.read_done_ns)
    }

    /// Programs the partially filled last page of a finished zone (under a controller model:
    /// pads the zone to its capacity).
    pub fn finish(&mut self, submit_ns: u64, zone: u32) -> u64 {
        if let Some(c) = &mut self.controller {
            return c.manage(&mut self.dies, submit_ns, zone, ZoneAction::Finish);
        }
        let page_size = self.dies.flash.page_size_bytes as u64;
        let written = self.zone_written_bytes[zone as usize];
        if written % page_size == 0 {
            return submit_ns;
        }
        let die = self.dies.die_of(zone, written / page_size);
        let programmed = submit_ns.max(self.dies.die_free_ns[die]) + self.dies.flash.program_ns;
        self.dies.die_free_ns[die] = programmed;
        programmed
    }

    /// Erases the programmed blocks of a zone on each of its dies.
    pub fn reset(&mut self, submit_ns: u64, zone: u32) -> u64 {
        if let Some(c) = &mut self.controller {
            self.zone_written_bytes[zone as usize] = 0;
            return c.manage(&mut self.dies, submit_ns, zone, ZoneAction::Reset);
        }
        let page_size = self.dies.flash.page_size_bytes as u64;
        let pages = self.zone_written_bytes[zone as usize].div_ceil(page_size);
        self.zone_written_bytes[zone as usize] = 0;
        if pages == 0 {
            return submit_ns;
        }
        let dies = self.dies.flash.dies_per_zone as u64;
        let mut done = submit_ns;
        for i in 0..dies.min(pages) {
            let pages_on_die = (pages - i).div_ceil(dies);
            let blocks = pages_on_die.div_ceil(self.dies.flash.pages_per_block as u64);
            let die = self.dies.die_of(zone, i);
            let erased = submit_ns.max(self.dies.die_free_ns[die]) + blocks * self.dies.flash.erase_ns;
            self.dies.die_free_ns[die] = erased;
            done = done.max(erased);
        }
        done
    }

    /// When every die and channel is idle.
    pub fn drained_ns(&self) -> u64 {
        self.dies.die_free_ns.iter().chain(&self.dies.channel_free_ns).copied().max().unwrap_or(0).max(self.controller.as_ref().map_or(0, Controller::idle_ns))
    }

    /// Zone size in bytes (for callers mapping LBAs).
    pub fn zone_size_bytes(&self) -> u64 {
        self.zone_size_bytes
    }
}

/// What a [`TimedDevice`] measured.
#[derive(Clone, Debug, Default)]
pub struct TimingReport {
    /// Virtual time when the last operation completed.
    pub elapsed_ns: u64,
    pub read_latency: LatencyHistogram,
    pub write_latency: LatencyHistogram,
    pub reset_latency: LatencyHistogram,
}

impl TimingReport {
    /// Throughput of `bytes` over the elapsed virtual time.
    pub fn mb_per_sec(&self, bytes: u64) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            bytes as f64 / 1e6 / (self.elapsed_ns as f64 / 1e9)
        }
    }
}

/// Wraps a device and charges each successful operation to a [`TimingModel`].
///
/// The host keeps up to `queue_depth` operations in flight: an operation is submitted when the
/// host clock allows it and a queue slot is free (the earliest in-flight completion). With
/// depth 1 every operation waits for the previous one. A replay with timestamps can move the
/// host clock forward with [`TimedDevice::advance_host_to`].
pub struct TimedDevice<D> {
    inner: D,
    model: TimingModel,
    queue_depth: usize,
    in_flight: BinaryHeap<Reverse<u64>>,
    host_now_ns: u64,
    report: TimingReport,
    /// Operations charged so far, and when the latest of them completes.
    charged: (u64, u64),
    /// The submission time of the first operation since [`TimedDevice::mark`], if any.
    first_since_mark: Option<u64>,
}

impl<D: ZonedDevice> TimedDevice<D> {
    pub fn new(inner: D, flash: FlashConfig, queue_depth: usize) -> Result<TimedDevice<D>> {
        if queue_depth == 0 {
            return Err(DeviceError::InvalidArgument("queue depth must be at least 1".into()));
        }
        let model = TimingModel::new(flash, inner.geometry())?;
        Ok(TimedDevice { inner, model, queue_depth, in_flight: BinaryHeap::new(), host_now_ns: 0, report: TimingReport::default(), charged: (0, 0), first_since_mark: None })
    }

    pub fn inner(&self) -> &D {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    pub fn into_inner(self) -> D {
        self.inner
    }

    pub fn report(&self) -> &TimingReport {
        &self.report
    }

    /// The device's topology: the flash it models and where each zone lives.
    pub fn flash(&self) -> &FlashConfig {
        self.model.flash()
    }

    /// The die and channel of `zone` when zones are pinned to one die (see
    /// [`TimingModel::parallel_unit`]).
    pub fn parallel_unit(&self, zone: ZoneId) -> Option<ParallelUnit> {
        self.model.parallel_unit(zone.0)
    }

    /// The host clock: when the next operation would be submitted, at the earliest.
    pub fn host_now_ns(&self) -> u64 {
        self.host_now_ns
    }

    /// Moves the host clock forward (an open-loop replay issuing at trace timestamps).
    pub fn advance_host_to(&mut self, ns: u64) {
        self.host_now_ns = self.host_now_ns.max(ns);
    }

    fn submit_ns(&mut self) -> u64 {
        if self.in_flight.len() >= self.queue_depth {
            let Reverse(freed) = self.in_flight.pop().expect("queue is full");
            self.host_now_ns = self.host_now_ns.max(freed);
        }
        self.host_now_ns
    }

    /// (operations charged to the model so far, the virtual time the latest one completes):
    /// a server pacing completions to the model reads it after each operation.
    pub fn last_completion(&self) -> (u64, u64) {
        self.charged
    }

    /// Starts a host request: [`TimedDevice::since_mark`] then spans the operations charged
    /// from here on (a request of an engine above may cause several, its GC's included).
    pub fn mark(&mut self) {
        self.first_since_mark = None;
    }

    /// (when the first operation since [`TimedDevice::mark`] was submitted, when the latest
    /// completes), or `None` if there was none: the host-visible latency of a request.
    pub fn since_mark(&self) -> Option<(u64, u64)> {
        self.first_since_mark.map(|first| (first, self.charged.1))
    }

    fn complete(&mut self, submit: u64, done: u64, kind: OpKind) {
        self.first_since_mark.get_or_insert(submit);
        self.charged = (self.charged.0 + 1, done);
        self.in_flight.push(Reverse(done));
        self.report.elapsed_ns = self.report.elapsed_ns.max(done);
        let histogram = match kind {
            OpKind::Read => &mut self.report.read_latency,
            OpKind::Write => &mut self.report.write_latency,
            OpKind::Reset => &mut self.report.reset_latency,
            OpKind::Other => return,
        };
        histogram.record(done - submit);
    }

    fn zone_offset(&self, lba: Lba) -> (u32, u64) {
        let g = self.inner.geometry();
        ((lba.0 / g.zone_size_blocks) as u32, (lba.0 % g.zone_size_blocks) * g.block_size_bytes as u64)
    }
}

#[derive(Copy, Clone)]
enum OpKind {
    Read,
    Write,
    Reset,
    Other,
}

impl<D: ZonedDevice> ZonedDevice for TimedDevice<D> {
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
        self.inner.read(lba, buf)?;
        let submit = self.submit_ns();
        // A read may cross zones (where the device allows it): charge each zone's part.
        let g = *self.inner.geometry();
        let mut done = submit;
        let mut next = lba.0;
        let mut left = buf.len() as u64 / g.block_size_bytes as u64;
        while left > 0 {
            let (zone, offset) = self.zone_offset(Lba(next));
            let blocks = (g.zone_size_blocks - next % g.zone_size_blocks).min(left);
            done = done.max(self.model.read(submit, zone, offset, blocks * g.block_size_bytes as u64));
            next += blocks;
            left -= blocks;
        }
        self.complete(submit, done, OpKind::Read);
        Ok(())
    }

    fn write(&mut self, lba: Lba, data: &[u8]) -> Result<()> {
        self.inner.write(lba, data)?;
        let submit = self.submit_ns();
        let (zone, offset) = self.zone_offset(lba);
        let done = self.model.write(submit, zone, offset, data.len() as u64);
        self.complete(submit, done, OpKind::Write);
        Ok(())
    }

    fn append(&mut self, zone: ZoneId, data: &[u8]) -> Result<Lba> {
        let lba = self.inner.append(zone, data)?;
        let submit = self.submit_ns();
        let (z, offset) = self.zone_offset(lba);
        let done = self.model.append(submit, z, offset, data.len() as u64);
        self.complete(submit, done, OpKind::Write);
        Ok(lba)
    }

    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()> {
        self.inner.manage(action, zone)?;
        let submit = self.submit_ns();
        let (done, kind) = match action {
            ZoneAction::Reset => (self.model.reset(submit, zone.0), OpKind::Reset),
            ZoneAction::Finish => (self.model.finish(submit, zone.0), OpKind::Other),
            ZoneAction::Open => (self.model.open(submit, zone.0), OpKind::Other),
            ZoneAction::Close => (self.model.close(submit, zone.0), OpKind::Other),
        };
        self.complete(submit, done, kind);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()?;
        // A flush waits for everything in flight and for the flash to go idle.
        let done = self.model.drained_ns().max(self.host_now_ns);
        self.in_flight.clear();
        self.host_now_ns = done;
        self.report.elapsed_ns = self.report.elapsed_ns.max(done);
        Ok(())
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

    fn flash() -> FlashConfig {
        FlashConfig {
            channels: 2,
            dies_per_channel: 2,
            page_size_bytes: 16384,
            pages_per_block: 4,
            read_ns: 50_000,
            program_ns: 500_000,
            erase_ns: 3_000_000,
            channel_bytes_per_sec: 1_000_000_000,
            dies_per_zone: 4,
            controller: ControllerConfig::NONE,
        }
    }

    fn geometry() -> Geometry {
        Geometry {
            block_size_bytes: 4096,
            zone_size_blocks: 256,
            zone_capacity_blocks: 256,
            zone_count: 8,
            conventional_zone_count: 0,
            open_zones_max: None,
            active_zones_max: None,
        }
    }

    #[test]
    fn one_full_page_costs_transfer_plus_program() {
        let mut m = TimingModel::new(flash(), &geometry()).unwrap();
        let done = m.write(0, 0, 0, 16384);
        assert_eq!(done, 16_384 + 500_000);
    }

    #[test]
    fn partial_page_completes_after_transfer_and_programs_when_filled() {
        let mut m = TimingModel::new(flash(), &geometry()).unwrap();
        assert_eq!(m.write(0, 0, 0, 4096), 4096);
        assert_eq!(m.write(0, 0, 4096, 12288), 4096 + 12288 + 500_000);
    }

    #[test]
    fn pages_on_different_dies_program_in_parallel() {
        let mut m = TimingModel::new(flash(), &geometry()).unwrap();
        // Four pages over four dies on two channels: two transfers queue on each channel.
        let done = m.write(0, 0, 0, 4 * 16384);
        assert_eq!(done, 2 * 16_384 + 500_000);
        // The same pages on one die would take four program times.
        let mut serial = flash();
        serial.dies_per_zone = 1;
        let mut m = TimingModel::new(serial, &geometry()).unwrap();
        assert!(m.write(0, 0, 0, 4 * 16384) >= 4 * 500_000);
    }

    #[test]
    fn reset_erases_only_programmed_blocks() {
        let mut m = TimingModel::new(flash(), &geometry()).unwrap();
        assert_eq!(m.reset(10, 3), 10, "an empty zone costs nothing to reset");
        let written = m.write(0, 3, 0, 16384);
        assert_eq!(m.reset(written, 3), written + 3_000_000);
    }
}

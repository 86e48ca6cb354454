//! One kernel block request executed on a [`ZonedDevice`].
//!
//! The kernel speaks in 512-byte sectors; the device in blocks. A request that is not a whole
//! number of blocks is refused with `EINVAL` before it reaches the device. Errors take the
//! errno Linux gives for the same NVMe status ([`errno_of`]), so software above the block
//! device (and Zonekit's own Linux backend, which names errors from the errno and the zone
//! descriptor) sees what it would see on a real drive.

use std::time::Instant;

use zonekit_device::{DeviceError, Lba, ZoneAction, ZoneDescriptor, ZoneFilter, ZoneId, ZoneType, ZonedDevice};

use zonekit_trace::record::Op;

use crate::counters::{Counters, Kind};
use crate::request_log::RequestLog;

/// The kernel's sector.
pub const SECTOR_BYTES: u64 = 512;
/// Size of one `struct blk_zone` in a zone report (`<linux/blkzoned.h>`).
pub const BLK_ZONE_BYTES: usize = 64;

/// A block request, addressed in 512-byte sectors as the kernel sends it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Request {
    Read {
        sector: u64,
        sectors: u32,
    },
    Write {
        sector: u64,
        sectors: u32,
    },
    /// Zone append to the zone holding `sector` (its start, as the kernel sends it).
    Append {
        sector: u64,
        sectors: u32,
    },
    Flush,
    /// Report `zones` zones from the one holding `sector`.
    ReportZones {
        sector: u64,
        zones: u32,
    },
    Manage {
        action: ZoneAction,
        sector: u64,
    },
    ResetAll,
}

/// What a request returns to the kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Bytes transferred (≥ 0), or a negative errno.
    pub result: i32,
    /// Where a zone append landed, in sectors.
    pub append_sector: Option<u64>,
}

impl Outcome {
    fn ok(bytes: u64) -> Outcome {
        Outcome { result: bytes as i32, append_sector: None }
    }

    fn err(errno: i32) -> Outcome {
        Outcome { result: -errno, append_sector: None }
    }
}

/// The errno Linux reports for a device error: the two zone-resource errors have their own
/// (the block layer's `BLK_STS_ZONE_OPEN_RESOURCE` and `_ACTIVE_RESOURCE`), a malformed
/// request is `EINVAL`, every other zone error is `EIO`, as NVMe's are.
pub fn errno_of(e: &DeviceError) -> i32 {
    match e {
        DeviceError::TooManyOpen { .. } => libc::ETOOMANYREFS,
        DeviceError::TooManyActive { .. } => libc::EOVERFLOW,
        DeviceError::OutOfRange { .. } | DeviceError::InvalidArgument(_) => libc::EINVAL,
        _ => libc::EIO,
    }
}

/// A device served to the kernel: executes requests and counts them.
pub struct Target<D> {
    dev: D,
    block_bytes: u64,
    zone_sectors: u64,
    device_sectors: u64,
    counters: Counters,
    report: Vec<ZoneDescriptor>,
    /// The request log (`--trace-out`), when there is one.
    log: Option<RequestLog>,
}

impl<D: ZonedDevice> Target<D> {
    pub fn new(dev: D) -> Target<D> {
        let g = *dev.geometry();
        let block_bytes = g.block_size_bytes as u64;
        Target {
            block_bytes,
            zone_sectors: g.zone_size_bytes() / SECTOR_BYTES,
            device_sectors: g.zone_count as u64 * g.zone_size_bytes() / SECTOR_BYTES,
            counters: Counters::new(),
            report: Vec::new(),
            log: None,
            dev,
        }
    }

    pub fn device(&self) -> &D {
        &self.dev
    }

    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Logs every read, write and append that succeeds from now on.
    pub fn set_log(&mut self, log: RequestLog) {
        self.log = Some(log);
    }

    pub fn take_log(&mut self) -> Option<RequestLog> {
        self.log.take()
    }

    /// Executes one request. `buf` holds a write's data on entry, and a read's data or a zone
    /// report on return; it must hold the request's bytes (zones × 64 for a report).
    pub fn execute(&mut self, request: Request, buf: &mut [u8]) -> Outcome {
        let started = Instant::now();
        let (kind, outcome) = self.dispatch(request, buf);
        let bytes = match request {
            Request::Read { sectors, .. } | Request::Write { sectors, .. } | Request::Append { sectors, .. } => sectors as u64 * SECTOR_BYTES,
            _ => 0,
        };
        self.counters.record(kind, bytes, outcome.result, started.elapsed().as_nanos() as u64);
        if let Some(log) = self.log.as_mut().filter(|_| outcome.result >= 0) {
            match request {
                Request::Read { sector, .. } => log.record(Op::Read, sector * SECTOR_BYTES, bytes),
                Request::Write { sector, .. } => log.record(Op::Write, sector * SECTOR_BYTES, bytes),
                Request::Append { .. } => {
                    if let Some(sector) = outcome.append_sector {
                        log.record(Op::Write, sector * SECTOR_BYTES, bytes);
                    }
                }
                _ => {}
            }
        }
        outcome
    }

    fn dispatch(&mut self, request: Request, buf: &mut [u8]) -> (Kind, Outcome) {
        match request {
            Request::Read { sector, sectors } => (Kind::Read, self.transfer(sector, sectors, buf, |dev, lba, data| dev.read(lba, data))),
            Request::Write { sector, sectors } => (Kind::Write, self.transfer(sector, sectors, buf, |dev, lba, data| dev.write(lba, data))),
            Request::Append { sector, sectors } => (Kind::Append, self.append(sector, sectors, buf)),
            Request::Flush => (Kind::Flush, self.result(|dev| dev.flush().map(|_| 0))),
            Request::ReportZones { sector, zones } => (Kind::Report, self.report_zones(sector, zones, buf)),
            Request::Manage { action, sector } => {
                let Some(zone) = self.zone_of(sector) else { return (Kind::Manage, Outcome::err(libc::EINVAL)) };
                (Kind::Manage, self.result(|dev| dev.manage(action, zone).map(|_| 0)))
            }
            Request::ResetAll => (Kind::Manage, self.result(|dev| dev.manage_all(ZoneAction::Reset).map(|_| 0))),
        }
    }

    fn result(&mut self, op: impl FnOnce(&mut D) -> Result<u64, DeviceError>) -> Outcome {
        match op(&mut self.dev) {
            Ok(bytes) => Outcome::ok(bytes),
            Err(e) => Outcome::err(errno_of(&e)),
        }
    }

    /// The zone holding `sector`, if the sector is on the device.
    fn zone_of(&self, sector: u64) -> Option<ZoneId> {
        (sector < self.device_sectors).then(|| ZoneId((sector / self.zone_sectors) as u32))
    }

    /// The device blocks a sector range covers, or `None` if it is not whole blocks.
    fn blocks(&self, sector: u64, sectors: u32) -> Option<(Lba, usize)> {
        let (offset, bytes) = (sector * SECTOR_BYTES, sectors as u64 * SECTOR_BYTES);
        (bytes > 0 && offset % self.block_bytes == 0 && bytes % self.block_bytes == 0).then_some((Lba(offset / self.block_bytes), bytes as usize))
    }

    fn transfer(&mut self, sector: u64, sectors: u32, buf: &mut [u8], op: impl FnOnce(&mut D, Lba, &mut [u8]) -> Result<(), DeviceError>) -> Outcome {
        let Some((lba, bytes)) = self.blocks(sector, sectors) else { return Outcome::err(libc::EINVAL) };
        if bytes > buf.len() {
            return Outcome::err(libc::EINVAL);
        }
        self.result(|dev| op(dev, lba, &mut buf[..bytes]).map(|_| bytes as u64))
    }

    fn append(&mut self, sector: u64, sectors: u32, buf: &[u8]) -> Outcome {
        let (Some((_, bytes)), Some(zone)) = (self.blocks(sector, sectors), self.zone_of(sector)) else { return Outcome::err(libc::EINVAL) };
        if bytes > buf.len() {
            return Outcome::err(libc::EINVAL);
        }
        match self.dev.append(zone, &buf[..bytes]) {
            Ok(lba) => Outcome { result: bytes as i32, append_sector: Some(lba.0 * self.block_bytes / SECTOR_BYTES) },
            Err(e) => Outcome::err(errno_of(&e)),
        }
    }

    fn report_zones(&mut self, sector: u64, zones: u32, buf: &mut [u8]) -> Outcome {
        let Some(zone) = self.zone_of(sector) else { return Outcome::ok(0) };
        let max = (zones as usize).min(buf.len() / BLK_ZONE_BYTES);
        let start = Lba(zone.0 as u64 * self.zone_sectors * SECTOR_BYTES / self.block_bytes);
        let mut report = std::mem::take(&mut self.report);
        report.clear();
        let outcome = match self.dev.report_zones(start, ZoneFilter::All, max, &mut report) {
            Ok(_) => {
                let sectors_per_block = self.block_bytes / SECTOR_BYTES;
                for (z, out) in report.iter().zip(buf.chunks_exact_mut(BLK_ZONE_BYTES)) {
                    encode_blk_zone(z, self.zone_sectors, sectors_per_block, out);
                }
                Outcome::ok((report.len().min(max) * BLK_ZONE_BYTES) as u64)
            }
            Err(e) => Outcome::err(errno_of(&e)),
        };
        self.report = report;
        outcome
    }
}

/// Writes one `struct blk_zone` (native endian, as the kernel reads it): start, len, wp (u64
/// sectors), type, cond, non_seq, reset, 4 reserved bytes, capacity (u64 sectors), 24
/// reserved bytes.
fn encode_blk_zone(z: &ZoneDescriptor, zone_sectors: u64, sectors_per_block: u64, out: &mut [u8]) {
    out.fill(0);
    out[0..8].copy_from_slice(&(z.start.0 * sectors_per_block).to_ne_bytes());
    out[8..16].copy_from_slice(&zone_sectors.to_ne_bytes());
    out[16..24].copy_from_slice(&(z.write_pointer.0 * sectors_per_block).to_ne_bytes());
    out[24] = match z.zone_type {
        ZoneType::Conventional => 1,
        ZoneType::SequentialWriteRequired => 2,
    };
    // The NVMe zone state codes are Linux's BLK_ZONE_COND_* values.
    out[25] = z.state.nvme_code();
    out[27] = z.reset_recommended as u8;
    out[32..40].copy_from_slice(&(z.capacity_blocks * sectors_per_block).to_ne_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior, ZoneState};

    fn target() -> Target<MemDevice> {
        let g = Geometry {
            block_size_bytes: 4096,
            zone_size_blocks: 256,
            zone_capacity_blocks: 192,
            zone_count: 8,
            conventional_zone_count: 1,
            open_zones_max: Some(2),
            active_zones_max: Some(3),
        };
        Target::new(MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap())
    }

    const ZONE: u64 = 256 * 8; // sectors

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn write_read_append_round_trip_in_sectors() {
        let mut t = target();
        let mut data = vec![0xAB; 8192];
        assert_eq!(t.execute(Request::Write { sector: ZONE, sectors: 16 }, &mut data).result, 8192);
        let mut more = vec![0xCD; 4096];
        let out = t.execute(Request::Append { sector: ZONE, sectors: 8 }, &mut more);
        assert_eq!(out, Outcome { result: 4096, append_sector: Some(ZONE + 16) });
        let mut back = vec![0; 12288];
        assert_eq!(t.execute(Request::Read { sector: ZONE, sectors: 24 }, &mut back).result, 12288);
        assert!(back[..8192].iter().all(|&b| b == 0xAB) && back[8192..].iter().all(|&b| b == 0xCD));
        let c = t.counters();
        assert_eq!((c.get(Kind::Write).ops, c.get(Kind::Append).bytes, c.get(Kind::Read).bytes), (1, 4096, 12288));
    }

    #[test]
    fn the_request_log_has_appends_where_they_landed_and_no_failures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ublk.zkt");
        let mut t = target();
        t.set_log(RequestLog::create(&path, 4096, "test").unwrap());
        let mut data = vec![0xAB; 8192];
        t.execute(Request::Write { sector: ZONE, sectors: 16 }, &mut data);
        t.execute(Request::Append { sector: ZONE, sectors: 8 }, &mut data[..4096]);
        // Not at the write pointer: refused, not logged.
        assert!(t.execute(Request::Write { sector: ZONE + 64, sectors: 8 }, &mut data[..4096]).result < 0);
        t.execute(Request::Read { sector: ZONE, sectors: 8 }, &mut data[..4096]);
        t.execute(Request::Flush, &mut []);
        t.take_log().unwrap().finish().unwrap();
        let trace = zonekit_trace::binary::BinaryTrace::open(&path).unwrap();
        let zone_block = ZONE / 8;
        let got: Vec<(u64, Op)> = trace.iter().map(|r| (r.io.block, r.io.op)).collect();
        assert_eq!(got, vec![(zone_block, Op::Write), (zone_block + 1, Op::Write), (zone_block + 2, Op::Write), (zone_block, Op::Read)]);
    }

    #[test]
    fn zone_errors_take_the_errno_linux_gives() {
        let mut t = target();
        let mut data = vec![0; 4096];
        // Not at the write pointer: EIO, as NVMe's Zone Invalid Write.
        assert_eq!(t.execute(Request::Write { sector: ZONE + 8, sectors: 8 }, &mut data).result, -libc::EIO);
        // Half a block: refused before the device.
        assert_eq!(t.execute(Request::Write { sector: ZONE, sectors: 1 }, &mut data).result, -libc::EINVAL);
        // Past the end of the device.
        assert_eq!(t.execute(Request::Read { sector: 8 * ZONE, sectors: 8 }, &mut data).result, -libc::EINVAL);
        // Open limit 2: the third explicit open is ETOOMANYREFS.
        for z in 1..3 {
            assert_eq!(t.execute(Request::Manage { action: ZoneAction::Open, sector: z * ZONE }, &mut []).result, 0);
        }
        assert_eq!(t.execute(Request::Manage { action: ZoneAction::Open, sector: 3 * ZONE }, &mut []).result, -libc::ETOOMANYREFS);
        // Active limit 3: close both, a third write activates, a fourth zone is EOVERFLOW.
        for z in 1..3 {
            assert_eq!(t.execute(Request::Manage { action: ZoneAction::Close, sector: z * ZONE }, &mut []).result, 0);
        }
        assert_eq!(t.execute(Request::Write { sector: 3 * ZONE, sectors: 8 }, &mut data).result, 4096);
        assert_eq!(t.execute(Request::Write { sector: 4 * ZONE, sectors: 8 }, &mut data).result, -libc::EOVERFLOW);
        assert_eq!(t.counters().errors_by_errno().get(&libc::EIO), Some(&1));
    }

    #[test]
    fn zone_report_has_the_blk_zone_layout() {
        let mut t = target();
        let mut data = vec![1; 8192];
        t.execute(Request::Write { sector: 2 * ZONE, sectors: 16 }, &mut data);
        let mut buf = vec![0xFF; 4 * BLK_ZONE_BYTES];
        assert_eq!(t.execute(Request::ReportZones { sector: 0, zones: 4 }, &mut buf).result, 4 * BLK_ZONE_BYTES as i32);
        let zone = |i: usize| &buf[i * BLK_ZONE_BYTES..(i + 1) * BLK_ZONE_BYTES];
        // Zone 0 is conventional (type 1, cond NOT_WP); zone 2 is implicitly open with its wp.
        assert_eq!((zone(0)[24], zone(0)[25]), (1, 0));
        assert_eq!((u64_at(zone(2), 0), u64_at(zone(2), 8), u64_at(zone(2), 16)), (2 * ZONE, ZONE, 2 * ZONE + 16));
        assert_eq!((zone(2)[24], zone(2)[25], u64_at(zone(2), 32)), (2, 2, 192 * 8));
        assert_eq!(zone(3)[25], 1);
        assert!(zone(3)[40..].iter().all(|&b| b == 0));
        // From the last zone, only one is left; past the end, none.
        assert_eq!(t.execute(Request::ReportZones { sector: 7 * ZONE, zones: 4 }, &mut buf).result, BLK_ZONE_BYTES as i32);
        assert_eq!(t.execute(Request::ReportZones { sector: 8 * ZONE, zones: 4 }, &mut buf).result, 0);
    }

    #[test]
    fn reset_all_empties_every_sequential_zone() {
        let mut t = target();
        let mut data = vec![1; 4096];
        for z in 1..3 {
            t.execute(Request::Write { sector: z * ZONE, sectors: 8 }, &mut data);
        }
        assert_eq!(t.execute(Request::ResetAll, &mut []).result, 0);
        let zones = t.device_mut().report_all(ZoneFilter::All).unwrap();
        assert!(zones[1..].iter().all(|z| z.state == ZoneState::Empty));
        assert_eq!(t.device().stats().resets, 2);
    }
}

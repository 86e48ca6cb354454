//! The [`ZonedDevice`] trait every engine writes through, and its counters.

use serde::Serialize;

use crate::{DeviceError, Geometry, Lba, Result, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZoneType};

/// A host-managed zoned block device.
///
/// # Contract
///
/// Addresses are logical blocks of `geometry().block_size_bytes`; every transfer length is a
/// positive multiple of the block size (else [`DeviceError::InvalidArgument`]).
///
/// Implementations follow the NVMe ZNS zone state machine as QEMU's controller implements it,
/// with the choices on which real devices differ reported by [`ZonedDevice::behavior`]:
///
/// - A write or append to an Empty or Closed sequential zone implicitly opens it. Opening takes
///   an open resource, and an active one when the zone was Empty. When none is free the device
///   first auto-closes its oldest implicitly opened zone (per [`crate::AutoClose`]); then a
///   missing active resource fails with [`DeviceError::TooManyActive`], a missing open one with
///   [`DeviceError::TooManyOpen`].
/// - Write checks, in order: Full, Read Only, Offline, start ≠ write pointer
///   ([`DeviceError::InvalidWrite`]), end past the zone capacity ([`DeviceError::Boundary`]);
///   only then resources. A failed write changes nothing.
/// - A zone whose write pointer reaches its capacity becomes Full and releases its resources.
/// - Reads are allowed in every state but Offline; blocks at or past the write pointer (and
///   never-written blocks of a finished zone) read as zeros.
/// - Conventional zones accept writes anywhere, refuse append and zone management.
/// - Read Only and Offline are reached only through device events (fault injection).
///
/// Durability: data written is durable after [`ZonedDevice::flush`] returns. What a backend
/// guarantees between flushes is documented on the backend.
///
/// Engines are generic over this trait and never learn which backend they run on.
pub trait ZonedDevice {
    fn geometry(&self) -> &Geometry;

    fn behavior(&self) -> ZoneBehavior;

    /// Appends to `out` the descriptors of up to `max_zones` zones matching `filter`, scanning
    /// from the zone that holds `start`. Returns how many were appended.
    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> Result<usize>;

    /// Reads `buf.len()` bytes starting at `lba`.
    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> Result<()>;

    /// Writes `data` at `lba`, which must be the zone's write pointer (or anywhere within a
    /// conventional zone).
    fn write(&mut self, lba: Lba, data: &[u8]) -> Result<()>;

    /// Zone Append: writes `data` at the zone's write pointer and returns where it landed.
    fn append(&mut self, zone: ZoneId, data: &[u8]) -> Result<Lba>;

    /// Open, close, finish or reset one sequential zone.
    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()>;

    /// Makes everything written so far durable.
    fn flush(&mut self) -> Result<()>;

    /// Counters since the device was opened (wear: resets per zone).
    fn stats(&self) -> &DeviceStats;

    // ---- Hints and flash counters: provided, for devices with a flash FTL beneath ---------

    /// The host says what an empty zone it is about to write will hold: data of write-lifetime
    /// `lifetime`, numbered as RocksDB's and NVMe's hints are (0 not set, 1 none, 2 short …
    /// [`LIFETIME_HINT_MAX`] extreme). A device whose zones are an adapter over a random-write
    /// SSD uses it to pick the placement handle the zone's writes carry; a ZNS device has no use
    /// for it (the default does nothing). It never changes what reads return, nor which zone
    /// operations succeed; the hint holds until the zone is reset.
    fn hint_zone(&mut self, _zone: ZoneId, _lifetime: u8) {}

    /// What the flash beneath the device programmed, where the device has an FTL of its own
    /// that may move data (a zoned adapter over an FDP or conventional SSD); `None` for a device
    /// that programs every block once between resets (ZNS).
    fn flash_writes(&self) -> Option<FlashWrites> {
        None
    }

    // ---- Provided conveniences -------------------------------------------------------------

    fn open_zone(&mut self, zone: ZoneId) -> Result<()> {
        self.manage(ZoneAction::Open, zone)
    }

    fn close_zone(&mut self, zone: ZoneId) -> Result<()> {
        self.manage(ZoneAction::Close, zone)
    }

    fn finish_zone(&mut self, zone: ZoneId) -> Result<()> {
        self.manage(ZoneAction::Finish, zone)
    }

    fn reset_zone(&mut self, zone: ZoneId) -> Result<()> {
        self.manage(ZoneAction::Reset, zone)
    }

    /// The descriptor of one zone.
    fn zone(&mut self, zone: ZoneId) -> Result<ZoneDescriptor> {
        let geometry = *self.geometry();
        if zone.0 >= geometry.zone_count {
            return Err(DeviceError::InvalidArgument(format!("zone {zone} does not exist (the device has {} zones)", geometry.zone_count)));
        }
        let mut out = Vec::with_capacity(1);
        self.report_zones(geometry.zone_start(zone), ZoneFilter::All, 1, &mut out)?;
        Ok(out[0])
    }

    /// Every zone's descriptor.
    fn report_all(&mut self, filter: ZoneFilter) -> Result<Vec<ZoneDescriptor>> {
        let mut out = Vec::new();
        self.report_zones(Lba(0), filter, usize::MAX, &mut out)?;
        Ok(out)
    }

    /// NVMe "Select All": applies `action` to every sequential zone in a state it applies to
    /// (reset: open, closed, full; close: open; finish: open, closed; open: closed). Returns the
    /// number of zones acted on.
    fn manage_all(&mut self, action: ZoneAction) -> Result<u32> {
        let zones = self.report_all(ZoneFilter::All)?;
        let mut count = 0;
        for z in zones.iter().filter(|z| z.zone_type == ZoneType::SequentialWriteRequired) {
            let applies = match action {
                ZoneAction::Reset => z.state.is_active() || z.state == ZoneState::Full,
                ZoneAction::Close => z.state.is_open(),
                ZoneAction::Finish => z.state.is_active(),
                ZoneAction::Open => z.state == ZoneState::Closed,
            };
            if applies {
                self.manage(action, z.id)?;
                count += 1;
            }
        }
        Ok(count)
    }
}

impl<D: ZonedDevice + ?Sized> ZonedDevice for Box<D> {
    fn geometry(&self) -> &Geometry {
        (**self).geometry()
    }
    fn behavior(&self) -> ZoneBehavior {
        (**self).behavior()
    }
    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> Result<usize> {
        (**self).report_zones(start, filter, max_zones, out)
    }
    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> Result<()> {
        (**self).read(lba, buf)
    }
    fn write(&mut self, lba: Lba, data: &[u8]) -> Result<()> {
        (**self).write(lba, data)
    }
    fn append(&mut self, zone: ZoneId, data: &[u8]) -> Result<Lba> {
        (**self).append(zone, data)
    }
    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()> {
        (**self).manage(action, zone)
    }
    fn flush(&mut self) -> Result<()> {
        (**self).flush()
    }
    fn stats(&self) -> &DeviceStats {
        (**self).stats()
    }
    fn hint_zone(&mut self, zone: ZoneId, lifetime: u8) {
        (**self).hint_zone(zone, lifetime)
    }
    fn flash_writes(&self) -> Option<FlashWrites> {
        (**self).flash_writes()
    }
}

/// The highest write-lifetime hint (RocksDB's `WLTH_EXTREME`, NVMe's streams of the same
/// number): hints run 0 ..= this.
pub const LIFETIME_HINT_MAX: u8 = 5;

/// Bytes the host wrote to a device with its own FTL, and bytes that FTL programmed into flash
/// (the host's and its GC's moves): their ratio is the device's write amplification.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlashWrites {
    pub host_bytes: u64,
    pub media_bytes: u64,
}

impl FlashWrites {
    /// Device WAF: media over host bytes (1 before any write).
    pub fn waf(&self) -> f64 {
        if self.host_bytes == 0 {
            1.0
        } else {
            self.media_bytes as f64 / self.host_bytes as f64
        }
    }
}

/// Operations and bytes of one kind.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCounter {
    pub ops: u64,
    pub bytes: u64,
}

impl OpCounter {
    #[inline]
    pub fn add(&mut self, bytes: u64) {
        self.ops += 1;
        self.bytes += bytes;
    }
}

/// Counters of successful operations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceStats {
    pub reads: OpCounter,
    pub writes: OpCounter,
    pub appends: OpCounter,
    pub opens: u64,
    pub closes: u64,
    pub finishes: u64,
    /// Resets that erased a non-empty zone.
    pub resets: u64,
    pub flushes: u64,
    /// Resets of each zone (wear), indexed by zone id.
    pub resets_per_zone: Vec<u64>,
}

impl DeviceStats {
    pub fn new(zone_count: u32) -> DeviceStats {
        DeviceStats { resets_per_zone: vec![0; zone_count as usize], ..DeviceStats::default() }
    }

    /// Bytes written by writes and appends together.
    pub fn bytes_written(&self) -> u64 {
        self.writes.bytes + self.appends.bytes
    }

    pub(crate) fn record_action(&mut self, action: ZoneAction, zone: ZoneId, erased: bool) {
        match action {
            ZoneAction::Open => self.opens += 1,
            ZoneAction::Close => self.closes += 1,
            ZoneAction::Finish => self.finishes += 1,
            ZoneAction::Reset if erased => {
                self.resets += 1;
                self.resets_per_zone[zone.0 as usize] += 1;
            }
            ZoneAction::Reset => {}
        }
    }

    /// Wear spread: (min, max, mean) resets over the sequential zones from `first`.
    pub fn wear_summary(&self, first: ZoneId) -> (u64, u64, f64) {
        let zones = &self.resets_per_zone[first.0 as usize..];
        if zones.is_empty() {
            return (0, 0, 0.0);
        }
        let min = *zones.iter().min().unwrap();
        let max = *zones.iter().max().unwrap();
        let mean = zones.iter().sum::<u64>() as f64 / zones.len() as f64;
        (min, max, mean)
    }
}

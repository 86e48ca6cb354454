//! Real Linux zoned block devices (`/dev/nvmeXnY`, `/dev/nullbN`, SMR `/dev/sdX`) through the
//! `<linux/blkzoned.h>` ioctls and sysfs; no libzbd.
//!
//! The device is the authority: this backend keeps no zone state machine of its own. Data goes
//! with `O_DIRECT` through an aligned bounce buffer. Linux reports most zone errors as `EIO`;
//! the backend then asks the device for the zone's descriptor and names the error the way the
//! ZNS check order would (full, read-only, offline, write pointer, boundary). A write that
//! would cross a zone's writable end is classified the same way *before* it is sent, because
//! the kernel would split it and apply the first part. Zone Append cannot be issued from user
//! space through a block device, so it is a write at the write pointer this backend tracks.
//!
//! Sequential-zone writes need the `mq-deadline` scheduler; [`LinuxZonedDevice::scheduler`]
//! tells which one is active. The device is opened `O_EXCL`, so nothing else may have it open
//! for writing or mounted.

use std::alloc::{self, Layout};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use crate::{AutoClose, DeviceError, DeviceStats, Geometry, Lba, Result, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZoneType, ZonedDevice};

const SECTOR_BYTES: u64 = 512;

// ioctl numbers: _IOWR/_IOW/_IOR(0x12, nr, size), from <linux/blkzoned.h> and <linux/fs.h>.
const BLKREPORTZONE: libc::c_ulong = 0xC010_1282;
const BLKRESETZONE: libc::c_ulong = 0x4010_1283;
const BLKOPENZONE: libc::c_ulong = 0x4010_1286;
const BLKCLOSEZONE: libc::c_ulong = 0x4010_1287;
const BLKFINISHZONE: libc::c_ulong = 0x4010_1288;
const BLK_ZONE_REP_CAPACITY: u32 = 1;
const BLK_ZONE_TYPE_CONVENTIONAL: u8 = 1;

/// `struct blk_zone`.
#[repr(C)]
#[derive(Copy, Clone, Default)]
struct BlkZone {
    start: u64,
    len: u64,
    wp: u64,
    zone_type: u8,
    cond: u8,
    non_seq: u8,
    reset: u8,
    resv: [u8; 4],
    capacity: u64,
    reserved: [u8; 24],
}

/// `struct blk_zone_report` (header; the zones follow it).
#[repr(C)]
struct BlkZoneReport {
    sector: u64,
    nr_zones: u32,
    flags: u32,
}

/// `struct blk_zone_range`.
#[repr(C)]
struct BlkZoneRange {
    sector: u64,
    nr_sectors: u64,
}

const _: () = assert!(std::mem::size_of::<BlkZone>() == 64);
const _: () = assert!(std::mem::size_of::<BlkZoneReport>() == 16);
const _: () = assert!(std::mem::size_of::<BlkZoneRange>() == 16);

/// A heap buffer aligned for `O_DIRECT`.
struct AlignedBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl AlignedBuf {
    const ALIGN: usize = 4096;

    fn new(len: usize) -> AlignedBuf {
        let layout = Layout::from_size_align(len.max(Self::ALIGN), Self::ALIGN).expect("buffer layout");
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { alloc::alloc_zeroed(layout) };
        AlignedBuf { ptr: NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(layout)), layout }
    }

    fn slice(&mut self, len: usize) -> &mut [u8] {
        assert!(len <= self.layout.size());
        // SAFETY: ptr is valid for layout.size() initialised bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), len) }
    }
}

// SAFETY: the buffer is a unique heap allocation owned by this value; moving it to another
// thread moves that ownership, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// A kernel zoned block device.
pub struct LinuxZonedDevice {
    file: File,
    path: PathBuf,
    geometry: Geometry,
    behavior: ZoneBehavior,
    sectors_per_block: u64,
    /// Write pointer of each zone (blocks from its start) as of our last write or report.
    write_pointers: Vec<u64>,
    bounce: AlignedBuf,
    stats: DeviceStats,
    scheduler: String,
    driver: String,
}

fn sysfs_read(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(name)).ok().map(|s| s.trim().to_string())
}

impl LinuxZonedDevice {
    /// Opens a zoned block device for reading and writing.
    pub fn open(path: &Path) -> Result<LinuxZonedDevice> {
        let not_zoned = |reason: String| DeviceError::NotZoned { path: path.to_path_buf(), reason };
        let meta = std::fs::metadata(path).map_err(|e| DeviceError::io(format!("{}: stat", path.display()), e))?;
        if !meta.file_type().is_block_device() {
            return Err(not_zoned("not a block device".into()));
        }
        let rdev = meta.rdev();
        let (major, minor) = (libc::major(rdev), libc::minor(rdev));
        let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
        let queue = sys.join("queue");
        let zoned = sysfs_read(&queue, "zoned").ok_or_else(|| not_zoned(format!("{} has no queue/zoned attribute", sys.display())))?;
        if zoned != "host-managed" && zoned != "host-aware" {
            return Err(not_zoned(format!("queue/zoned is {zoned:?}")));
        }
        let number = |name: &str| -> Result<u64> { sysfs_read(&queue, name).and_then(|s| s.parse().ok()).ok_or_else(|| not_zoned(format!("cannot read queue/{name}"))) };
        let block_size_bytes = number("logical_block_size")? as u32;
        let zone_sectors = number("chunk_sectors")?;
        let zone_count = number("nr_zones")? as u32;
        let limit = |v: u64| (v != 0).then_some(v as u32);
        let open_zones_max = limit(number("max_open_zones").unwrap_or(0));
        let active_zones_max = limit(number("max_active_zones").unwrap_or(0));
        let scheduler = sysfs_read(&queue, "scheduler").unwrap_or_default();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let driver = if name.starts_with("nullb") {
            "null_blk"
        } else if name.starts_with("nvme") {
            "nvme"
        } else {
            "other"
        };

        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_EXCL)
            .open(path)
            .map_err(|e| DeviceError::io(format!("{}: open for writing (O_DIRECT, O_EXCL)", path.display()), e))?;

        let sectors_per_block = block_size_bytes as u64 / SECTOR_BYTES;
        if sectors_per_block == 0 || zone_sectors == 0 || zone_sectors % sectors_per_block != 0 {
            return Err(not_zoned(format!("zone size {zone_sectors} sectors is not a whole number of {block_size_bytes}-byte blocks")));
        }
        let mut dev = LinuxZonedDevice {
            file,
            path: path.to_path_buf(),
            geometry: Geometry {
                block_size_bytes,
                zone_size_blocks: zone_sectors / sectors_per_block,
                zone_capacity_blocks: zone_sectors / sectors_per_block,
                zone_count,
                conventional_zone_count: 0,
                open_zones_max,
                active_zones_max,
            },
            behavior: if driver == "null_blk" {
                ZoneBehavior::NULL_BLK
            } else {
                // NVMe ZNS controllers auto-close implicitly opened zones (QEMU does); the
                // block layer splits reads at zone boundaries, so cross-zone reads succeed.
                // QEMU zeroes a zone on reset; ZNS drives report deallocated blocks as zeros.
                ZoneBehavior { close_empty_to_empty: false, auto_close: AutoClose::Always, cross_zone_reads: true, unwritten_reads_zero: true }
            },
            sectors_per_block,
            write_pointers: vec![0; zone_count as usize],
            bounce: AlignedBuf::new(1 << 20),
            stats: DeviceStats::new(zone_count),
            scheduler,
            driver: driver.to_string(),
        };
        let zones = dev.report_raw(0, zone_count as usize)?;
        if zones.len() != zone_count as usize {
            return Err(not_zoned(format!("reported {} zones, sysfs says {zone_count}", zones.len())));
        }
        let conventional = zones.iter().take_while(|z| z.zone_type == BLK_ZONE_TYPE_CONVENTIONAL).count();
        if zones[conventional..].iter().any(|z| z.zone_type == BLK_ZONE_TYPE_CONVENTIONAL) {
            return Err(not_zoned("conventional zones are not all at the start of the device".into()));
        }
        let capacities: Vec<u64> = zones[conventional..].iter().map(|z| z.capacity).collect();
        if let Some(&cap) = capacities.first() {
            if capacities.iter().any(|&c| c != cap) {
                return Err(not_zoned("sequential zones have different capacities".into()));
            }
            dev.geometry.zone_capacity_blocks = cap / sectors_per_block;
        }
        dev.geometry.conventional_zone_count = conventional as u32;
        dev.geometry.validate()?;
        for (i, z) in zones.iter().enumerate() {
            dev.write_pointers[i] = dev.wp_blocks(z);
        }
        Ok(dev)
    }

    /// The active I/O scheduler, as sysfs shows it (`[mq-deadline] none`).
    pub fn scheduler(&self) -> &str {
        &self.scheduler
    }

    /// `nvme`, `null_blk` or `other`.
    pub fn driver(&self) -> &str {
        &self.driver
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, what: &str, e: io::Error) -> DeviceError {
        DeviceError::io(format!("{}: {what}", self.path.display()), e)
    }

    fn wp_blocks(&self, z: &BlkZone) -> u64 {
        if z.zone_type == BLK_ZONE_TYPE_CONVENTIONAL {
            return 0;
        }
        // Linux reports a Full zone's write pointer at the zone *end* (start + size), past
        // its capacity: clamp, so an append never computes an LBA in the next zone.
        z.wp.saturating_sub(z.start).min(z.capacity) / self.sectors_per_block
    }

    /// BLKREPORTZONE from `sector`, up to `max` zones.
    fn report_raw(&mut self, mut sector: u64, max: usize) -> Result<Vec<BlkZone>> {
        const BATCH: usize = 256;
        let mut out = Vec::new();
        let device_sectors = self.geometry.total_blocks() * self.sectors_per_block;
        let header = std::mem::size_of::<BlkZoneReport>();
        // u64 storage keeps the header and zones 8-byte aligned.
        let mut buf = vec![0u64; (header + BATCH * std::mem::size_of::<BlkZone>()) / 8];
        while out.len() < max && sector < device_sectors {
            let want = BATCH.min(max - out.len());
            let report = buf.as_mut_ptr() as *mut BlkZoneReport;
            // SAFETY: buf is large enough for the header and `want` zones, and aligned.
            unsafe {
                (*report).sector = sector;
                (*report).nr_zones = want as u32;
                (*report).flags = 0;
                if libc::ioctl(self.file.as_raw_fd(), BLKREPORTZONE, report) != 0 {
                    return Err(self.err("BLKREPORTZONE", io::Error::last_os_error()));
                }
            }
            // SAFETY: the kernel filled the header; nr_zones ≤ want descriptors follow it.
            let (got, flags) = unsafe { ((*report).nr_zones as usize, (*report).flags) };
            if got == 0 {
                break;
            }
            let zones = unsafe { std::slice::from_raw_parts((buf.as_ptr() as *const u8).add(header) as *const BlkZone, got) };
            for z in zones {
                let mut z = *z;
                if flags & BLK_ZONE_REP_CAPACITY == 0 {
                    z.capacity = z.len;
                }
                sector = z.start + z.len;
                out.push(z);
            }
        }
        Ok(out)
    }

    fn descriptor(&self, z: &BlkZone) -> ZoneDescriptor {
        let id = ZoneId((z.start / (self.geometry.zone_size_blocks * self.sectors_per_block)) as u32);
        let conventional = z.zone_type == BLK_ZONE_TYPE_CONVENTIONAL;
        let state = if conventional { ZoneState::NotWritePointer } else { ZoneState::from_nvme_code(z.cond).unwrap_or(ZoneState::Offline) };
        let start = Lba(z.start / self.sectors_per_block);
        let has_wp = matches!(state, ZoneState::Empty | ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed);
        ZoneDescriptor {
            id,
            zone_type: if conventional { ZoneType::Conventional } else { ZoneType::SequentialWriteRequired },
            state,
            start,
            capacity_blocks: z.capacity / self.sectors_per_block,
            write_pointer: if has_wp { Lba(z.wp / self.sectors_per_block) } else { Lba(start.0 + self.geometry.zone_size_blocks) },
            reset_recommended: z.reset != 0,
        }
    }

    /// Fresh descriptor of one zone from the device; also refreshes the tracked write pointer.
    fn refresh(&mut self, zone: u32) -> Result<ZoneDescriptor> {
        let sector = self.geometry.zone_start(ZoneId(zone)).0 * self.sectors_per_block;
        let z = self.report_raw(sector, 1)?.into_iter().next().ok_or_else(|| DeviceError::InvalidArgument(format!("zone {zone} not reported")))?;
        self.write_pointers[zone as usize] = self.wp_blocks(&z);
        Ok(self.descriptor(&z))
    }

    /// Names a refused write the way the ZNS check order does, from the zone's descriptor.
    fn classify_write(&mut self, zone: u32, lba: Lba, blocks: u64) -> Result<Option<DeviceError>> {
        let d = self.refresh(zone)?;
        let id = ZoneId(zone);
        Ok(match d.state {
            ZoneState::Full => Some(DeviceError::ZoneFull { zone: id }),
            ZoneState::ReadOnly => Some(DeviceError::ZoneReadOnly { zone: id }),
            ZoneState::Offline => Some(DeviceError::ZoneOffline { zone: id }),
            ZoneState::NotWritePointer => None,
            _ if lba != d.write_pointer => Some(DeviceError::InvalidWrite { zone: id, lba, write_pointer: d.write_pointer }),
            _ if lba.0 + blocks > d.start.0 + d.capacity_blocks => Some(DeviceError::Boundary { zone: id, lba, blocks, limit: Lba(d.start.0 + d.capacity_blocks) }),
            _ => None,
        })
    }

    fn resource_error(&self, e: &io::Error) -> Option<DeviceError> {
        match e.raw_os_error() {
            Some(libc::ETOOMANYREFS) => Some(DeviceError::TooManyOpen { limit: self.geometry.open_zones_max.unwrap_or(0) }),
            Some(libc::EOVERFLOW) => Some(DeviceError::TooManyActive { limit: self.geometry.active_zones_max.unwrap_or(0) }),
            _ => None,
        }
    }

    fn check_range(&self, lba: Lba, blocks: u64) -> Result<()> {
        let device_blocks = self.geometry.total_blocks();
        match lba.0.checked_add(blocks) {
            Some(end) if end <= device_blocks => Ok(()),
            _ => Err(DeviceError::OutOfRange { lba, blocks, device_blocks }),
        }
    }

    fn do_write(&mut self, lba: Lba, data: &[u8]) -> Result<()> {
        let blocks = self.geometry.blocks_in(data.len())?;
        self.check_range(lba, blocks)?;
        let zone = (lba.0 / self.geometry.zone_size_blocks) as u32;
        let id = ZoneId(zone);
        let zone_start = self.geometry.zone_start(id).0;
        let conventional = self.geometry.zone_type(id) == ZoneType::Conventional;
        let writable_end = zone_start + if conventional { self.geometry.zone_size_blocks } else { self.geometry.zone_capacity_blocks };
        if lba.0 + blocks > writable_end {
            // The kernel would split this at the zone end and write the first part.
            if !conventional {
                if let Some(e) = self.classify_write(zone, lba, blocks)? {
                    return Err(e);
                }
            }
            return Err(DeviceError::Boundary { zone: id, lba, blocks, limit: Lba(writable_end) });
        }
        if self.bounce.layout.size() < data.len() {
            self.bounce = AlignedBuf::new(data.len());
        }
        self.bounce.slice(data.len()).copy_from_slice(data);
        let offset = lba.0 * self.geometry.block_size_bytes as u64;
        let buf = self.bounce.slice(data.len());
        if let Err(e) = self.file.write_all_at(buf, offset) {
            if let Some(r) = self.resource_error(&e) {
                return Err(r);
            }
            if e.raw_os_error() == Some(libc::EIO) && !conventional {
                if let Some(classified) = self.classify_write(zone, lba, blocks)? {
                    return Err(classified);
                }
            }
            return Err(self.err(&format!("write {blocks} blocks at LBA {lba}"), e));
        }
        if !conventional {
            self.write_pointers[zone as usize] = lba.0 + blocks - zone_start;
        }
        Ok(())
    }

    fn zone_ioctl(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()> {
        let request = match action {
            ZoneAction::Open => BLKOPENZONE,
            ZoneAction::Close => BLKCLOSEZONE,
            ZoneAction::Finish => BLKFINISHZONE,
            ZoneAction::Reset => BLKRESETZONE,
        };
        let range = BlkZoneRange { sector: self.geometry.zone_start(zone).0 * self.sectors_per_block, nr_sectors: self.geometry.zone_size_blocks * self.sectors_per_block };
        // SAFETY: the request takes a pointer to a blk_zone_range that outlives the call.
        if unsafe { libc::ioctl(self.file.as_raw_fd(), request, &range as *const BlkZoneRange) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if let Some(r) = self.resource_error(&e) {
            return Err(r);
        }
        if e.raw_os_error() == Some(libc::EIO) {
            let state = self.refresh(zone.0)?.state;
            return Err(DeviceError::InvalidTransition { zone, action, state });
        }
        Err(self.err(&format!("{action} zone {zone}"), e))
    }
}

impl ZonedDevice for LinuxZonedDevice {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn behavior(&self) -> ZoneBehavior {
        self.behavior
    }

    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> Result<usize> {
        let first = self.geometry.zone_of(start).ok_or(DeviceError::OutOfRange { lba: start, blocks: 0, device_blocks: self.geometry.total_blocks() })?;
        let sector = self.geometry.zone_start(first).0 * self.sectors_per_block;
        let before = out.len();
        for z in self.report_raw(sector, usize::MAX)? {
            if out.len() - before == max_zones {
                break;
            }
            let d = self.descriptor(&z);
            self.write_pointers[d.id.0 as usize] = self.wp_blocks(&z);
            if filter.matches(d.state) {
                out.push(d);
            }
        }
        Ok(out.len() - before)
    }

    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> Result<()> {
        let blocks = self.geometry.blocks_in(buf.len())?;
        self.check_range(lba, blocks)?;
        if self.bounce.layout.size() < buf.len() {
            self.bounce = AlignedBuf::new(buf.len());
        }
        let offset = lba.0 * self.geometry.block_size_bytes as u64;
        let len = buf.len();
        if let Err(e) = self.file.read_exact_at(self.bounce.slice(len), offset) {
            let zone = (lba.0 / self.geometry.zone_size_blocks) as u32;
            if self.refresh(zone)?.state == ZoneState::Offline {
                return Err(DeviceError::ZoneOffline { zone: ZoneId(zone) });
            }
            return Err(self.err(&format!("read {blocks} blocks at LBA {lba}"), e));
        }
        buf.copy_from_slice(self.bounce.slice(len));
        self.stats.reads.add(len as u64);
        Ok(())
    }

    fn write(&mut self, lba: Lba, data: &[u8]) -> Result<()> {
        self.do_write(lba, data)?;
        self.stats.writes.add(data.len() as u64);
        Ok(())
    }

    fn append(&mut self, zone: ZoneId, data: &[u8]) -> Result<Lba> {
        if zone.0 >= self.geometry.zone_count {
            return Err(DeviceError::InvalidArgument(format!("zone {zone} does not exist (the device has {} zones)", self.geometry.zone_count)));
        }
        if self.geometry.zone_type(zone) == ZoneType::Conventional {
            return Err(DeviceError::ConventionalZone { zone, what: "zone append" });
        }
        let wp = self.write_pointers[zone.0 as usize];
        if wp >= self.geometry.zone_capacity_blocks {
            let blocks = self.geometry.blocks_in(data.len())?;
            let lba = Lba(self.geometry.zone_start(zone).0 + wp);
            return Err(self.classify_write(zone.0, lba, blocks)?.unwrap_or(DeviceError::ZoneFull { zone }));
        }
        let lba = Lba(self.geometry.zone_start(zone).0 + wp);
        self.do_write(lba, data)?;
        self.stats.appends.add(data.len() as u64);
        Ok(lba)
    }

    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()> {
        if zone.0 >= self.geometry.zone_count {
            return Err(DeviceError::InvalidArgument(format!("zone {zone} does not exist (the device has {} zones)", self.geometry.zone_count)));
        }
        if self.geometry.zone_type(zone) == ZoneType::Conventional {
            return Err(DeviceError::ConventionalZone { zone, what: action.name() });
        }
        let erased = action == ZoneAction::Reset && {
            let d = self.refresh(zone.0)?;
            d.state == ZoneState::Full || d.written_blocks() > 0
        };
        self.zone_ioctl(action, zone)?;
        match action {
            ZoneAction::Reset => self.write_pointers[zone.0 as usize] = 0,
            ZoneAction::Finish => self.write_pointers[zone.0 as usize] = self.geometry.zone_capacity_blocks,
            _ => {}
        }
        self.stats.record_action(action, zone, erased);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.file.sync_data().map_err(|e| self.err("flush", e))?;
        self.stats.flushes += 1;
        Ok(())
    }

    fn stats(&self) -> &DeviceStats {
        &self.stats
    }
}

/// Whether `path` names a block device (so callers pick this backend over the image file).
pub fn is_block_device(path: &Path) -> bool {
    std::fs::metadata(path).map(|m| m.file_type().is_block_device()).unwrap_or(false)
}

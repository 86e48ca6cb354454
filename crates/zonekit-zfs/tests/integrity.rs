//! Integrity of the metadata: corruption in committed records is reported, never taken for a
//! torn tail, and leaves the device untouched; a damaged last batch is still a torn tail; a
//! read-only mount never writes to the device.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use zonekit_device::fault::{FaultOn, FaultyDevice};
use zonekit_device::{DeviceError, DeviceStats, Geometry, Lba, MemDevice, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneState, ZonedDevice};
use zonekit_zfs::fs::{FsConfig, FsError, Zfs};
use zonekit_zfs::metalog::{LogError, MetaLog, Record};
use zonekit_zfs::FileTable;

mod common;
use common::device;

const BLOCK_BYTES: usize = 4096;

/// Wraps a device shared with the test (so the test can inspect it after a failed mount
/// consumed the wrapper): flips one byte of what reads return at a chosen place (media
/// corruption), and counts every operation that would change the device. With
/// `deny_mutations` those operations fail without reaching the device; otherwise they go
/// through (and are counted).
struct Watched<D> {
    inner: Rc<RefCell<D>>,
    /// A copy: `geometry()` returns a reference, which cannot borrow through the `RefCell`.
    geometry: Geometry,
    /// The file system never reads the counters; the wrapper reports none.
    stats: DeviceStats,
    /// (block, byte within the block) to flip on every read that covers it.
    flip: Option<(Lba, usize)>,
    deny_mutations: bool,
    /// Writes, appends, zone management and flushes attempted.
    mutations: Rc<Cell<u64>>,
}

// By hand: a derive would require `D: Clone`, but clones share the one device.
impl<D> Clone for Watched<D> {
    fn clone(&self) -> Self {
        Watched {
            inner: self.inner.clone(),
            geometry: self.geometry,
            stats: self.stats.clone(),
            flip: self.flip,
            deny_mutations: self.deny_mutations,
            mutations: self.mutations.clone(),
        }
    }
}

impl<D: ZonedDevice> Watched<D> {
    fn new(inner: D, deny_mutations: bool) -> Watched<D> {
        let geometry = *inner.geometry();
        Watched { inner: Rc::new(RefCell::new(inner)), geometry, stats: DeviceStats::default(), flip: None, deny_mutations, mutations: Rc::new(Cell::new(0)) }
    }

    fn mutate(&mut self, what: &str) -> zonekit_device::Result<()> {
        self.mutations.set(self.mutations.get() + 1);
        if self.deny_mutations {
            return Err(DeviceError::InvalidArgument(format!("{what} on a device that must not be written")));
        }
        Ok(())
    }
}

impl<D: ZonedDevice> ZonedDevice for Watched<D> {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }
    fn behavior(&self) -> ZoneBehavior {
        self.inner.borrow().behavior()
    }
    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> zonekit_device::Result<usize> {
        self.inner.borrow_mut().report_zones(start, filter, max_zones, out)
    }
    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> zonekit_device::Result<()> {
        self.inner.borrow_mut().read(lba, buf)?;
        if let Some((at, byte)) = self.flip {
            let blocks = (buf.len() / BLOCK_BYTES) as u64;
            if at.0 >= lba.0 && at.0 < lba.0 + blocks {
                buf[(at.0 - lba.0) as usize * BLOCK_BYTES + byte] ^= 0x40;
            }
        }
        Ok(())
    }
    fn write(&mut self, lba: Lba, data: &[u8]) -> zonekit_device::Result<()> {
        self.mutate("write")?;
        self.inner.borrow_mut().write(lba, data)
    }
    fn append(&mut self, zone: ZoneId, data: &[u8]) -> zonekit_device::Result<Lba> {
        self.mutate("append")?;
        self.inner.borrow_mut().append(zone, data)
    }
    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> zonekit_device::Result<()> {
        self.mutate("zone management")?;
        self.inner.borrow_mut().manage(action, zone)
    }
    fn flush(&mut self) -> zonekit_device::Result<()> {
        self.mutate("flush")?;
        self.inner.borrow_mut().flush()
    }
    fn stats(&self) -> &DeviceStats {
        &self.stats
    }
}

/// Everything observable about the device: every zone's descriptor and every written block.
fn image(dev: &mut dyn ZonedDevice) -> (Vec<ZoneDescriptor>, Vec<u8>) {
    let zones = dev.report_all(ZoneFilter::All).unwrap();
    let g = *dev.geometry();
    let mut bytes = Vec::new();
    for z in &zones {
        let written = if z.state == ZoneState::Full { g.zone_capacity_blocks } else { z.written_blocks() };
        if written > 0 {
            let mut buf = vec![0u8; written as usize * BLOCK_BYTES];
            dev.read(z.start, &mut buf).unwrap();
            bytes.extend_from_slice(&buf);
        }
    }
    (zones, bytes)
}

fn content(name: &str, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31) ^ name.len() as u8).collect()
}

/// A file system with `files` synced files (each: one batch for its creation, one for its
/// extent), on a device with room for more.
fn populated(files: usize) -> Zfs<MemDevice> {
    let mut fs = Zfs::mkfs(device(24, 64), FsConfig::default()).unwrap();
    for i in 0..files {
        let name = format!("{i:06}.sst");
        fs.create(&name, 2).unwrap();
        fs.append(&name, &content(&name, 10_000 + i * 777)).unwrap();
        fs.sync(&name).unwrap();
    }
    fs
}

/// Metadata log blocks are numbered from the zone's start: block 0 is the header, log blocks
/// follow. After mkfs (block 1: the empty snapshot) each file of [`populated`] adds blocks
/// 2 + 2i (creation) and 3 + 2i (extent).
fn meta_block(dev: &dyn ZonedDevice, block: u64) -> Lba {
    Lba(dev.geometry().zone_start(ZoneId(0)).0 + block)
}

#[test]
fn a_read_only_mount_never_writes_even_when_recovery_has_work_to_do() {
    // A file system that a read-write mount would repair: a torn metadata tail (a batch whose
    // second block never reached the device) and a data zone written but never committed.
    let fs = populated(4);
    let mut fs = Zfs::mount(FaultyDevice::new(fs.into_device()), FsConfig::default()).unwrap();
    fs.create("unsynced", 1).unwrap();
    fs.append("unsynced", &content("unsynced", 70 * BLOCK_BYTES)).unwrap(); // written out, never synced
    fs.device_mut().fail_nth(FaultOn::Writes, 1, true);
    let long_name = "n".repeat(3 * BLOCK_BYTES); // a three-block batch: torn after its first block
    assert!(fs.create(&long_name, 1).is_err());
    let mut dev = fs.into_device();
    dev.disarm();
    let mut dev = Watched::new(dev, true);
    let before = image(&mut dev);
    let mutations = dev.mutations.clone();

    let mut fs = Zfs::mount_read_only(dev.clone(), FsConfig::default()).unwrap();
    // ls, df, fsck, dump, cat: all read.
    let names: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
    assert_eq!(names, ["000000.sst", "000001.sst", "000002.sst", "000003.sst", "unsynced"]);
    let space = fs.space();
    assert!(space.live_bytes > 0 && space.garbage_bytes >= 64 * BLOCK_BYTES as u64, "{space:?}");
    assert_eq!(fs.fsck().unwrap(), Vec::<String>::new());
    for i in 0..4 {
        let name = format!("{i:06}.sst");
        let size = fs.size(&name).unwrap() as usize;
        let mut buf = vec![0u8; size];
        assert_eq!(fs.read_at(&name, 0, &mut buf).unwrap(), size);
        assert!(buf == content(&name, 10_000 + i * 777), "{name}");
    }
    // Every mutating call is refused with a typed error before it reaches the device.
    assert!(matches!(fs.create("new", 1), Err(FsError::ReadOnly(_))));
    assert!(matches!(fs.append("000000.sst", b"x"), Err(FsError::ReadOnly(_))));
    assert!(matches!(fs.sync("000000.sst"), Err(FsError::ReadOnly(_))));
    assert!(matches!(fs.set_lifetime("000000.sst", 4), Err(FsError::ReadOnly(_))));
    assert!(matches!(fs.rename("000000.sst", "x"), Err(FsError::ReadOnly(_))));
    assert!(matches!(fs.delete("000001.sst"), Err(FsError::ReadOnly(_))));
    assert!(matches!(fs.collect(), Err(FsError::ReadOnly(_))));
    drop(fs);
    assert_eq!(mutations.get(), 0, "a read-only mount wrote to the device");
    assert!(image(&mut dev) == before, "the device changed under a read-only mount");

    // A read-write mount of the same device does the repairs (and still loses nothing).
    dev.deny_mutations = false;
    let mut fs = Zfs::mount(dev, FsConfig::default()).unwrap();
    assert_eq!(fs.table().files().count(), 5);
    assert_eq!(fs.fsck().unwrap(), Vec::<String>::new());
}

#[test]
fn a_flipped_byte_in_a_committed_record_is_corruption_and_the_device_is_untouched() {
    let fs = populated(6);
    let mut dev = Watched::new(fs.into_device(), false);
    let before = image(&mut dev);
    // Block 4 holds the second file's creation: nine committed batches follow it.
    dev.flip = Some((meta_block(&dev, 4), 30));
    let mutations = dev.mutations.clone();

    let e = MetaLog::open(&mut dev, [ZoneId(0), ZoneId(1)]).err().expect("corruption must not mount");
    assert!(matches!(e, LogError::Corrupt { zone: 0, .. }), "expected corruption in zone 0, got {e:?}");
    let message = e.to_string();
    assert!(message.contains("corrupt") && message.contains("zone 0") && message.contains("block 4"), "{message}");

    for read_only in [false, true] {
        let mounted = if read_only { Zfs::mount_read_only(dev.clone(), FsConfig::default()) } else { Zfs::mount(dev.clone(), FsConfig::default()) };
        let e = mounted.err().expect("corruption must not mount");
        let message = e.to_string();
        assert!(matches!(e, FsError::Log(LogError::Corrupt { zone: 0, .. })), "read-only {read_only}: {message}");
        assert!(message.contains("corrupt") && message.contains("zone 0") && message.contains("block 4"), "{message}");
    }
    assert_eq!(mutations.get(), 0, "mounting a corrupt file system wrote to the device");
    dev.flip = None;
    assert!(image(&mut dev) == before, "mounting a corrupt file system changed the device");
}

#[test]
fn damage_to_only_the_last_batch_is_a_torn_tail() {
    for last_batch_blocks in [1usize, 3] {
        let mut dev = device(8, 64);
        let zones = [ZoneId(0), ZoneId(1)];
        let mut log = MetaLog::format(&mut dev, zones).unwrap();
        for id in 1..=5u64 {
            log.append(&Record::CreateFile { id, name: format!("file-{id}"), lifetime: 1 });
            log.commit(&mut dev, &|| unreachable!()).unwrap();
        }
        // The last batch: one block, or three (a long name); its last block gets damaged.
        log.append(&Record::CreateFile { id: 6, name: "z".repeat((last_batch_blocks - 1) * BLOCK_BYTES + 10), lifetime: 1 });
        log.commit(&mut dev, &|| unreachable!()).unwrap();
        let last = dev.zone(ZoneId(0)).unwrap().written_blocks() - 1;
        let mut dev = Watched::new(dev, false);
        dev.flip = Some((meta_block(&dev, last), 100));
        let (_, records) = MetaLog::open(&mut dev, zones).unwrap_or_else(|e| panic!("last batch of {last_batch_blocks} blocks: {e}"));
        let table = FileTable::from_records(&records).unwrap();
        let names: Vec<&str> = table.files().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["file-1", "file-2", "file-3", "file-4", "file-5"], "last batch of {last_batch_blocks} blocks");
    }
}

#[test]
fn a_damaged_header_in_front_of_a_written_log_is_corruption_not_an_older_generation() {
    // Small zones: the log rolls over to zone 1 (generation 2) after a few batches.
    let mut dev = device(8, 8);
    let zones = [ZoneId(0), ZoneId(1)];
    let mut log = MetaLog::format(&mut dev, zones).unwrap();
    let mut table = FileTable::default();
    for id in 1..=12u64 {
        let r = Record::CreateFile { id, name: format!("file-{id}"), lifetime: 1 };
        table.apply(&r).unwrap();
        log.append(&r);
        let snapshot = table.snapshot();
        log.commit(&mut dev, &|| snapshot.clone()).unwrap();
    }
    assert!(log.generation() >= 2 && log.active_zone() == ZoneId(1), "the test needs a roll-over to zone 1");
    let mut dev = Watched::new(dev, false);
    // Without its header, zone 1 must not be mistaken for an unused zone: mounting the older
    // generation in zone 0 would silently drop every batch since the roll-over.
    dev.flip = Some((dev.geometry().zone_start(ZoneId(1)), 20));
    let e = MetaLog::recover(&mut dev, zones).err().expect("a damaged header in front of a log must not mount");
    assert!(matches!(e, LogError::Corrupt { zone: 1, block: 0, .. }), "{e:?}");
    assert!(e.to_string().contains("zone 1"), "{e}");
    assert_eq!(dev.mutations.get(), 0);
}

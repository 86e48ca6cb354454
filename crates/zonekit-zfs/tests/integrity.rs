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
    /// A second place to flip (two faults).
    flip_too: Option<(Lba, usize)>,
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
            flip_too: self.flip_too,
            deny_mutations: self.deny_mutations,
            mutations: self.mutations.clone(),
        }
    }
}

impl<D: ZonedDevice> Watched<D> {
    fn new(inner: D, deny_mutations: bool) -> Watched<D> {
        let geometry = *inner.geometry();
        Watched { inner: Rc::new(RefCell::new(inner)), geometry, stats: DeviceStats::default(), flip: None, flip_too: None, deny_mutations, mutations: Rc::new(Cell::new(0)) }
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
        for (at, byte) in self.flip.into_iter().chain(self.flip_too) {
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

/// A log of five one-file batches, then a sixth of `last_batch_blocks` blocks (a long name);
/// the sixth batch's writes from the `fail_write`-th on never reach the device (a crash).
fn six_batches(last_batch_blocks: usize, fail_write: Option<u64>) -> FaultyDevice<MemDevice> {
    let mut dev = FaultyDevice::new(device(8, 64));
    let zones = [ZoneId(0), ZoneId(1)];
    let mut log = MetaLog::format(&mut dev, zones).unwrap();
    for id in 1..=5u64 {
        log.append(&Record::CreateFile { id, name: format!("file-{id}"), lifetime: 1 });
        log.commit(&mut dev, &|| unreachable!()).unwrap();
    }
    if let Some(nth) = fail_write {
        dev.fail_nth(FaultOn::Writes, nth, true);
    }
    log.append(&Record::CreateFile { id: 6, name: "z".repeat((last_batch_blocks - 1) * BLOCK_BYTES + 10), lifetime: 1 });
    assert_eq!(log.commit(&mut dev, &|| unreachable!()).is_ok(), fail_write.is_none());
    dev.disarm();
    dev
}

fn names_after_open(dev: &mut dyn ZonedDevice) -> Result<Vec<String>, LogError> {
    let (_, records) = MetaLog::open(dev, [ZoneId(0), ZoneId(1)])?;
    Ok(FileTable::from_records(&records).unwrap().files().map(|f| f.name.clone()).collect())
}

#[test]
fn damage_to_the_newest_committed_batch_is_corruption_not_a_torn_tail() {
    for last_batch_blocks in [1usize, 3] {
        let mut dev = six_batches(last_batch_blocks, None);
        let seal = dev.zone(ZoneId(0)).unwrap().written_blocks() - 1;
        // Every block of the acknowledged batch: the seal behind it vouches that it was whole.
        for block in seal - last_batch_blocks as u64..seal {
            let mut dev = Watched::new(six_batches(last_batch_blocks, None), false);
            dev.flip = Some((meta_block(&dev, block), 100));
            let e = names_after_open(&mut dev).err().unwrap_or_else(|| panic!("a flipped byte in block {block} of the newest batch ({last_batch_blocks} blocks) mounted"));
            assert!(matches!(e, LogError::Corrupt { zone: 0, .. }), "block {block}: {e:?}");
            assert_eq!(dev.mutations.get(), 0);
        }
        // The newest batch's last block and its seal both damaged: not what a crash leaves (it
        // tears one block at most), so corruption, not a torn tail that drops the batch.
        let mut dev = Watched::new(six_batches(last_batch_blocks, None), false);
        dev.flip = Some((meta_block(&dev, seal - 1), 100));
        dev.flip_too = Some((meta_block(&dev, seal), 100));
        let e = names_after_open(&mut dev).err().unwrap_or_else(|| panic!("the newest batch ({last_batch_blocks} blocks) and its seal damaged mounted"));
        assert!(matches!(e, LogError::Corrupt { zone: 0, .. }), "{e:?}");
        // Damage to the seal alone loses nothing.
        let mut dev = Watched::new(six_batches(last_batch_blocks, None), false);
        dev.flip = Some((meta_block(&dev, seal), 100));
        let names = names_after_open(&mut dev).unwrap_or_else(|e| panic!("a damaged seal: {e}"));
        assert_eq!(names.len(), 6, "a damaged seal after a batch of {last_batch_blocks} blocks: {names:?}");
    }
}

#[test]
fn a_batch_torn_by_a_crash_before_its_seal_is_a_torn_tail() {
    // Three blocks and a seal are four writes (0..=3): the crash takes the second, third or
    // fourth (the seal), and the last block that reached the device is then torn as well.
    for failed_write in 1..=3u64 {
        let mut dev = six_batches(3, Some(failed_write));
        let last = dev.zone(ZoneId(0)).unwrap().written_blocks() - 1;
        let mut dev = Watched::new(dev, false);
        dev.flip = Some((meta_block(&dev, last), 100));
        let names = names_after_open(&mut dev).unwrap_or_else(|e| panic!("crash at write {failed_write}: {e}"));
        assert_eq!(names, ["file-1", "file-2", "file-3", "file-4", "file-5"], "crash at write {failed_write}");
    }
}

#[test]
fn a_damaged_header_in_front_of_a_written_log_is_corruption_not_an_older_generation() {
    // Small zones: the log rolls over to zone 1 (generation 2) after a few batches.
    let mut dev = device(8, 8);
    let zones = [ZoneId(0), ZoneId(1)];
    let mut log = MetaLog::format(&mut dev, zones).unwrap();
    let mut table = FileTable::default();
    for id in 1..=10u64 {
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

/// Media corruption, exhaustively: a small file system (puts, a delete, a rename, a roll-over of
/// the metadata log) read back with one byte flipped, for every byte of every written block's
/// header and payload (and a stride through zero padding, which the same CRC covers). Each flip
/// is detected (the mount fails, fsck reports a problem, or the read of the damaged file fails)
/// or changes nothing a reader sees; fsck never says clean while a file is missing, extra, or
/// reads back other bytes than were written.
#[test]
fn every_flipped_byte_is_detected_or_harmless() {
    // 8-block metadata zones: the log rolls over between the operations below.
    let mut fs = Zfs::mkfs(device(8, 8), FsConfig::default()).unwrap();
    let mut expected: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, len) in [("a", 5_000), ("b", 9_000), ("c", 100), ("d", 4_096)] {
        fs.put(name, 1, &content(name, len)).unwrap();
        expected.push((name.to_string(), content(name, len)));
    }
    fs.delete("c").unwrap();
    fs.rename("d", "e").unwrap();
    expected.retain(|(n, _)| n != "c");
    expected.iter_mut().filter(|(n, _)| n == "d").for_each(|(n, _)| *n = "e".to_string());
    expected.sort();
    let mut dev = Watched::new(fs.into_device(), true);

    let g = *dev.geometry();
    let zones = dev.report_all(ZoneFilter::All).unwrap();
    let (mut flips, mut detected) = (0u64, 0u64);
    let mut block = vec![0u8; BLOCK_BYTES];
    for z in &zones {
        for b in 0..z.written_blocks().min(g.zone_capacity_blocks) {
            let lba = Lba(z.start.0 + b);
            dev.read(lba, &mut block).unwrap();
            // A metadata log block's payload ends where its length says; data blocks and
            // headers are all payload.
            let payload_end = if &block[0..4] == b"ZKML" { 20 + u32::from_le_bytes(block[16..20].try_into().unwrap()) as usize } else { BLOCK_BYTES };
            for byte in (0..BLOCK_BYTES).filter(|&i| i < payload_end.min(BLOCK_BYTES) || i % 97 == 0) {
                flips += 1;
                let mut flipped = dev.clone();
                flipped.flip = Some((lba, byte));
                let place = format!("zone {} block {b} byte {byte}", z.id.0);
                let Ok(mut fs) = Zfs::mount_read_only(flipped, FsConfig::default()) else {
                    detected += 1;
                    continue;
                };
                let problems = fs.fsck().unwrap_or_else(|e| vec![e.to_string()]);
                let names: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
                let mut wrong = Vec::new();
                if names != expected.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>() {
                    wrong.push(format!("files {names:?}"));
                }
                for (name, data) in &expected {
                    let mut buf = vec![0u8; data.len() + 1];
                    match fs.read_at(name, 0, &mut buf) {
                        Ok(n) if buf[..n] == data[..] => {}
                        Ok(n) => panic!("{place}: {name} read back {n} bytes that differ from the {} written, without an error", data.len()),
                        Err(_) => wrong.push(format!("{name} unreadable")),
                    }
                }
                if !wrong.is_empty() {
                    assert!(!problems.is_empty(), "{place}: fsck says clean but {wrong:?}");
                }
                if !problems.is_empty() || !wrong.is_empty() {
                    detected += 1;
                }
            }
        }
    }
    eprintln!("{flips} flipped bytes, {detected} detected, the rest harmless");
    assert_eq!(dev.mutations.get(), 0);
    assert!(flips > 10_000 && detected > 0, "{flips} flips, {detected} detected");
}

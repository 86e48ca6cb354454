//! Image locks: a read-only open takes a shared lock, a read-write open an exclusive one, and
//! `replace` (what `device create --force` does) never replaces an image someone holds. flock
//! locks belong to an open file, so two opens in one process conflict as two processes would.

use std::path::Path;
use std::time::{Duration, Instant};

use zonekit_device::{open_path_with, FileDevice, Geometry, Lba, OpenOptions, ZoneAction, ZoneBehavior, ZoneId, ZonedDevice};

fn geometry(zones: u32) -> Geometry {
    Geometry { block_size_bytes: 4096, zone_size_blocks: 64, zone_capacity_blocks: 64, zone_count: zones, conventional_zone_count: 0, open_zones_max: None, active_zones_max: None }
}

fn image(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("lock.zk");
    let mut dev = FileDevice::create(&path, geometry(8), ZoneBehavior::QEMU_NVME, "").unwrap();
    dev.append(ZoneId(1), &[5u8; 8192]).unwrap();
    dev.flush().unwrap();
    path
}

const READ: OpenOptions = OpenOptions { read_only: true, wait: None };
const WRITE: OpenOptions = OpenOptions { read_only: false, wait: None };

#[test]
fn readers_share_an_image_and_never_write_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = image(dir.path());
    let before = std::fs::read(&path).unwrap();
    let mut a = FileDevice::open_with_options(&path, &READ).unwrap();
    let mut b = open_path_with(&path, &READ).unwrap().device;
    let mut buf = vec![0u8; 8192];
    a.read(Lba(64), &mut buf).unwrap();
    assert!(buf.iter().all(|&x| x == 5));
    b.read(Lba(64), &mut buf).unwrap();
    assert!(buf.iter().all(|&x| x == 5));
    // Every mutating call is refused before it changes anything, naming the image.
    let block = [1u8; 4096];
    for e in [
        a.append(ZoneId(2), &block).unwrap_err(),
        a.write(Lba(64 + 2), &block).unwrap_err(),
        a.manage(ZoneAction::Reset, ZoneId(1)).unwrap_err(),
        a.manage(ZoneAction::Finish, ZoneId(1)).unwrap_err(),
        a.manage(ZoneAction::Open, ZoneId(3)).unwrap_err(),
        a.inject_read_only(ZoneId(1)).unwrap_err(),
        b.append(ZoneId(2), &block).unwrap_err(),
    ] {
        assert_eq!(e.kind(), "read-only-device", "{e}");
        assert!(e.to_string().contains("lock.zk") && e.to_string().contains("read-only"), "{e}");
    }
    a.flush().unwrap();
    a.check_invariants();
    assert_eq!(a.zone(ZoneId(1)).unwrap().written_blocks(), 2);
    drop((a, b));
    assert!(std::fs::read(&path).unwrap() == before, "a read-only open changed the image");
}

#[test]
fn a_reader_and_a_writer_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = image(dir.path());
    let writer = FileDevice::open(&path).unwrap();
    let e = FileDevice::open_with_options(&path, &READ).err().unwrap();
    assert_eq!(e.kind(), "image-in-use");
    assert!(e.to_string().contains("lock.zk") && e.to_string().contains("in use by a writer"), "{e}");
    let e = open_path_with(&path, &WRITE).err().unwrap();
    assert!(e.to_string().contains("in use by a writer"), "{e}");
    drop(writer);

    let reader = FileDevice::open_with_options(&path, &READ).unwrap();
    let e = FileDevice::open(&path).err().unwrap();
    assert_eq!(e.kind(), "image-in-use");
    assert!(e.to_string().contains("lock.zk") && e.to_string().contains("in use by readers"), "{e}");
    drop(reader);
    FileDevice::open(&path).unwrap();
}

#[test]
fn the_wait_option_waits_until_the_holder_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = image(dir.path());
    let writer = FileDevice::open(&path).unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        drop(writer);
    });
    let started = Instant::now();
    let mut reader = FileDevice::open_with_options(&path, &OpenOptions { read_only: true, wait: Some(Duration::from_secs(10)) }).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150), "opened while the writer still held the image");
    assert_eq!(reader.zone(ZoneId(1)).unwrap().written_blocks(), 2);
    release.join().unwrap();

    // A bounded wait gives up, saying it waited.
    let started = Instant::now();
    let e = FileDevice::open_with_options(&path, &OpenOptions { read_only: false, wait: Some(Duration::from_millis(100)) }).err().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert_eq!(e.kind(), "image-in-use");
    assert!(e.to_string().contains("in use by readers") && e.to_string().contains("waited"), "{e}");
}

#[test]
fn replace_refuses_a_held_image_and_leaves_it_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = image(dir.path());
    let before = std::fs::read(&path).unwrap();
    for opts in [READ, WRITE] {
        let holder = FileDevice::open_with_options(&path, &opts).unwrap();
        let e = FileDevice::replace(&path, geometry(4), ZoneBehavior::QEMU_NVME, "", None).err().unwrap();
        assert_eq!(e.kind(), "image-in-use", "{e}");
        drop(holder);
        assert!(std::fs::read(&path).unwrap() == before, "a refused replace changed the image");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a refused replace left files behind");
    let dev = FileDevice::replace(&path, geometry(4), ZoneBehavior::QEMU_NVME, "", None).unwrap();
    assert_eq!(dev.geometry().zone_count, 4);
    assert_eq!(dev.media().path(), path);
    drop(dev);
    assert_eq!(FileDevice::open(&path).unwrap().geometry().zone_count, 4);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_waiter_on_a_replaced_image_opens_the_new_one() {
    use std::os::unix::io::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let path = image(dir.path());
    // Held as `replace` holds it: an exclusive lock on the old file while the new one is
    // renamed over its name.
    let old = std::fs::File::open(&path).unwrap();
    // SAFETY: flock on an fd we own.
    assert_eq!(unsafe { libc::flock(old.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    let waiter = {
        let path = path.clone();
        std::thread::spawn(move || FileDevice::open_with_options(&path, &OpenOptions { read_only: true, wait: Some(Duration::from_secs(10)) }).map(|d| d.geometry().zone_count))
    };
    std::thread::sleep(Duration::from_millis(150));
    let new = dir.path().join("new.zk");
    drop(FileDevice::create(&new, geometry(3), ZoneBehavior::QEMU_NVME, "").unwrap());
    std::fs::rename(&new, &path).unwrap();
    drop(old);
    assert_eq!(waiter.join().unwrap().unwrap(), 3, "the waiter opened the replaced (unlinked) image");
}

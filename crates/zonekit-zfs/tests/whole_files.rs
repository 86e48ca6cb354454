//! Whole-file writes are all or nothing (issue 12): a put that crashes or runs out of space
//! leaves no file behind under its name; mkfs refuses devices whose limits cannot run the file
//! system; names and lifetime hints are validated.
//! Randomised tests print the seed that reproduces a failure (`ZK_SEED=<n>`).

use zonekit_base::Rng;
use zonekit_device::fault::{FaultOn, FaultyDevice};
use zonekit_device::MemDevice;
use zonekit_zfs::fs::{FsConfig, FsError, Zfs};

mod common;
use common::device_with_limits;

fn device(zones: u32, zone_blocks: u64) -> MemDevice {
    device_with_limits(zones, zone_blocks, Some(12))
}

fn seeds(n: u64) -> Vec<u64> {
    match std::env::var("ZK_SEED") {
        Ok(s) => vec![s.parse().unwrap()],
        Err(_) => (0..n).map(|i| 0xA70A_0000 + i).collect(),
    }
}

fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..len).map(|_| rng.below(256) as u8).collect()
}

/// Writes, appends, resets and finishes the device has seen.
fn device_writes(fs: &Zfs<MemDevice>) -> u64 {
    let s = zonekit_device::ZonedDevice::stats(fs.device());
    s.writes.ops + s.appends.ops + s.resets + s.finishes
}

/// A put that does not fit is refused before any data is written, and leaves the name free.
#[test]
fn a_put_larger_than_the_free_space_is_refused_before_writing_and_leaves_no_file() {
    let mut fs = Zfs::mkfs(device(12, 32), FsConfig::default()).unwrap();
    let free = fs.space().free_bytes as usize;
    let writes_before = device_writes(&fs);
    let e = fs.put("big", 2, &content(1, free + 4096)).unwrap_err();
    assert!(matches!(e, FsError::NoSpace { .. }), "{e}");
    assert_eq!(device_writes(&fs), writes_before, "the refused put wrote to the device");
    assert!(fs.table().files().next().is_none(), "the refused put left a file");
    // The name is free: a put that fits takes it.
    let small = content(2, 10_000);
    fs.put("big", 2, &small).unwrap();
    let mut buf = vec![0u8; small.len()];
    assert_eq!(fs.read_at("big", 0, &mut buf).unwrap(), small.len());
    assert_eq!(buf, small);
    assert!(fs.fsck().unwrap().is_empty());
}

/// A crash at any device write inside a put: after the power loss and a read-write mount the
/// name either does not exist or holds the whole content, no temporary file is left, and the
/// name can be put again.
#[test]
fn a_crash_at_any_write_inside_a_put_leaves_all_or_nothing() {
    let mut outcomes = [0u32; 2];
    for seed in seeds(4) {
        for fail_at in 0..12u64 {
            let ctx = format!("seed {seed} (ZK_SEED={seed}), failing write {fail_at}");
            let mut fs = Zfs::mkfs(FaultyDevice::new(device(16, 32)), FsConfig::default()).unwrap();
            fs.put("keep", 1, &content(seed ^ 1, 30_000)).unwrap();
            let data = content(seed, 300_000 + (seed % 7) as usize * 4099);
            fs.device_mut().fail_nth(FaultOn::Writes, fail_at, true);
            let result = fs.put("file", 2, &data);
            let mut dev = fs.into_device();
            dev.disarm();
            dev.inner_mut().power_loss();
            let mut fs = Zfs::mount(dev, FsConfig::default()).unwrap_or_else(|e| panic!("{ctx}: mount: {e}"));
            assert!(fs.fsck().unwrap().is_empty(), "{ctx}: fsck: {:?}", fs.fsck().unwrap());
            let names: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
            assert!(names.iter().all(|n| n == "keep" || n == "file"), "{ctx}: leftover files {names:?}");
            match fs.size("file") {
                Ok(size) => {
                    assert_eq!(size as usize, data.len(), "{ctx}: a partial file under its name");
                    let mut buf = vec![0u8; data.len()];
                    fs.read_at("file", 0, &mut buf).unwrap();
                    assert!(buf == data, "{ctx}: wrong content");
                    outcomes[1] += 1;
                }
                Err(FsError::NotFound(_)) => {
                    assert!(result.is_err(), "{ctx}: the put returned Ok but the file is gone");
                    outcomes[0] += 1;
                    fs.put("file", 2, &data).unwrap_or_else(|e| panic!("{ctx}: the name stays blocked: {e}"));
                }
                Err(e) => panic!("{ctx}: {e}"),
            }
        }
    }
    println!("puts lost entirely: {}, complete: {}", outcomes[0], outcomes[1]);
    assert!(outcomes[0] >= 20 && outcomes[1] >= 4, "the crash points missed the put: {outcomes:?}");
}

#[test]
fn bad_names_and_lifetime_hints_are_refused() {
    let mut fs = Zfs::mkfs(device(12, 32), FsConfig::default()).unwrap();
    let long = "x".repeat(zonekit_zfs::fs::NAME_MAX_BYTES + 1);
    for name in ["", "..", "a/../b", "../a", "a/..", ".", "a\0b", long.as_str()] {
        let e = fs.create(name, 1).unwrap_err();
        assert!(matches!(e, FsError::BadName { .. }), "{name:?}: {e}");
        let e = fs.put(name, 1, b"data").unwrap_err();
        assert!(matches!(e, FsError::BadName { .. }), "{name:?}: {e}");
    }
    // Names that RocksDB uses pass.
    for name in ["000001.log", "/tmp/db/CURRENT", "db/MANIFEST-000005", "a..b"] {
        fs.create(name, 1).unwrap_or_else(|e| panic!("{name:?}: {e}"));
    }
    fs.create("ok", 2).unwrap();
    let e = fs.rename("ok", "..").unwrap_err();
    assert!(matches!(e, FsError::BadName { .. }), "{e}");
    for lifetime in [6u8, 9, 255] {
        let e = fs.create("hinted", lifetime).unwrap_err();
        assert!(matches!(e, FsError::BadLifetime(l) if l == lifetime), "{e}");
        let e = fs.set_lifetime("ok", lifetime).unwrap_err();
        assert!(matches!(e, FsError::BadLifetime(_)), "{e}");
    }
    assert!(fs.fsck().unwrap().is_empty());
}

/// The file system keeps both metadata zones active and needs one more for data: a device with
/// fewer active (or open) zones is refused at mkfs and at mount, not at the first write.
#[test]
fn mkfs_refuses_a_device_whose_limits_cannot_run_the_file_system() {
    for limit in [1u32, 2] {
        let e = Zfs::mkfs(device_with_limits(16, 32, Some(limit)), FsConfig::default()).err().expect("mkfs should refuse");
        assert!(e.to_string().contains(&format!("{limit} active zones")) && e.to_string().contains("at least 3"), "{e}");
    }
    let mut fs = Zfs::mkfs(device_with_limits(16, 32, Some(3)), FsConfig::default()).unwrap();
    // Enough writes to roll the metadata log over and use several lifetimes.
    for i in 0..60 {
        let name = format!("{i:04}");
        fs.put(&name, 1 + (i % 4) as u8, &content(i, 9_000)).unwrap_or_else(|e| panic!("{name}: {e}"));
        if i >= 10 {
            fs.delete(&format!("{:04}", i - 10)).unwrap();
        }
    }
    assert!(fs.fsck().unwrap().is_empty());
}

/// `is_formatted` tells mkfs whether it would erase a file system.
#[test]
fn an_existing_file_system_is_detected() {
    let mut dev = device(12, 32);
    assert!(!Zfs::is_formatted(&mut dev).unwrap());
    let fs = Zfs::mkfs(dev, FsConfig::default()).unwrap();
    let mut dev = fs.into_device();
    assert!(Zfs::is_formatted(&mut dev).unwrap());
}

/// `len` bytes of a fixed pattern, handed out in odd-sized pieces as a pipe gives them.
struct Stream {
    at: u64,
    len: u64,
}

fn stream_byte(i: u64) -> u8 {
    (i.wrapping_mul(0x9E37_79B9) >> 11) as u8
}

impl std::io::Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (buf.len() as u64).min(self.len - self.at).min(100_003) as usize;
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = stream_byte(self.at + i as u64);
        }
        self.at += n as u64;
        Ok(n)
    }
}

/// A source without end is written until space runs out, then undone: the error says how much
/// fit, no file (nor temporary) is left, and the space is writable again.
#[test]
fn a_stream_that_does_not_fit_is_undone_and_says_how_much_fit() {
    let mut fs = Zfs::mkfs(device(12, 32), FsConfig::default()).unwrap();
    fs.put("keep", 1, &content(1, 30_000)).unwrap();
    let free = fs.space().free_bytes;
    let e = fs.put_from("endless", 2, &mut std::io::repeat(5), None).unwrap_err();
    let FsError::PutNoSpace { size_bytes: None, fit_bytes, written: true } = e else { panic!("{e}") };
    assert!(fit_bytes > 0 && fit_bytes <= free, "{fit_bytes} of {free} free bytes fit");
    let names: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
    assert_eq!(names, ["keep"]);
    assert!(fs.fsck().unwrap().is_empty(), "{:?}", fs.fsck().unwrap());
    assert_eq!(fs.space().live_bytes, 30_000);
    // A regular file that cannot fit is refused before anything is written.
    let writes = device_writes(&fs);
    let e = fs.put_from("sized", 2, &mut Stream { at: 0, len: 1 << 30 }, Some(1 << 30)).unwrap_err();
    assert!(matches!(e, FsError::PutNoSpace { size_bytes: Some(_), written: false, .. }), "{e}");
    assert_eq!(device_writes(&fs), writes, "the refused put wrote to the device");
    let data = content(2, free as usize / 2);
    fs.put("half", 2, &data).unwrap();
    assert!(fs.fsck().unwrap().is_empty());
}

/// A streaming put longer than one sync (64 MiB) reads back whole; one whose device dies after
/// that sync has its temporary committed, which the next read-write mount deletes: the name is
/// never there, and fsck is clean.
#[test]
fn a_long_streaming_put_is_all_or_nothing_across_its_syncs() {
    let len = (80 << 20) + 4099;
    let mut fs = Zfs::mkfs(device(48, 512), FsConfig::default()).unwrap();
    assert_eq!(fs.put_from("s", 3, &mut Stream { at: 0, len }, None).unwrap(), len);
    assert_eq!(fs.size("s").unwrap(), len);
    let mut buf = vec![0u8; 1 << 20];
    let mut at = 0;
    while at < len {
        let n = fs.read_at("s", at, &mut buf).unwrap();
        assert!(buf[..n].iter().enumerate().all(|(i, b)| *b == stream_byte(at + i as u64)), "wrong content in the 1 MiB at byte {at}");
        at += n as u64;
    }
    assert!(fs.fsck().unwrap().is_empty());

    let mut partial_after_sync = 0;
    for fail_at in 0..6 {
        let ctx = format!("failing flush {fail_at}");
        let mut fs = Zfs::mkfs(FaultyDevice::new(device(48, 512)), FsConfig::default()).unwrap();
        fs.put("keep", 1, &content(3, 30_000)).unwrap();
        fs.device_mut().fail_nth(FaultOn::Flushes, fail_at, true);
        assert!(fs.put_from("s", 3, &mut Stream { at: 0, len }, None).is_err(), "{ctx}: the put succeeded");
        let mut dev = fs.into_device();
        dev.disarm();
        dev.inner_mut().power_loss();
        // What the crash left: at some failing flushes, the temporary with the synced 64 MiB.
        let seen = Zfs::mount_read_only(dev, FsConfig::default()).unwrap_or_else(|e| panic!("{ctx}: mount: {e}"));
        assert!(seen.size("s").is_err(), "{ctx}: a partial file under its name");
        if seen.table().files().any(|f| f.name.starts_with(zonekit_zfs::fs::PUT_TEMP_PREFIX) && f.size_bytes() >= 64 << 20) {
            partial_after_sync += 1;
        }
        let mut fs = Zfs::mount(seen.into_device(), FsConfig::default()).unwrap_or_else(|e| panic!("{ctx}: mount: {e}"));
        let names: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
        assert_eq!(names, ["keep"], "{ctx}");
        assert!(fs.fsck().unwrap().is_empty(), "{ctx}: fsck: {:?}", fs.fsck().unwrap());
    }
    assert!(partial_after_sync > 0, "no failing flush came after the put's first sync");
}

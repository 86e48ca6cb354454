//! Data checksums (issue 12): a damaged data byte fails the read and fsck instead of being
//! returned; reads past a zone's write pointer are errors, not zeros; fsck reports offline and
//! read-only zones that hold live data; an image of the previous metadata format is refused.

use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior, ZoneId, ZonedDevice};
use zonekit_zfs::fs::{FsConfig, FsError, Zfs};
use zonekit_zfs::metalog::Extent;

fn device() -> MemDevice {
    let g = Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 64,
        zone_capacity_blocks: 64,
        zone_count: 16,
        conventional_zone_count: 0,
        open_zones_max: Some(12),
        active_zones_max: Some(12),
    };
    MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap()
}

fn content(name: &str, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31) ^ (i >> 9) as u8 ^ name.len() as u8 ^ 0x5A).collect()
}

/// A file system with three synced files; returns it and the first extent of `b`.
fn populated() -> (Zfs<MemDevice>, Extent) {
    let mut fs = Zfs::mkfs(device(), FsConfig::default()).unwrap();
    for (name, len) in [("a", 10_000), ("b", 50_000), ("c", 3_000)] {
        fs.create(name, 2).unwrap();
        fs.append(name, &content(name, len)).unwrap();
        fs.sync(name).unwrap();
    }
    let e = fs.table().by_name("b").unwrap().extents[0];
    (fs, e)
}

/// Rewrites a zone's written blocks with one byte flipped: bit rot, through the zoned interface.
fn flip_byte(dev: &mut MemDevice, zone: u32, at_bytes: u64) {
    let g = *dev.geometry();
    let written = dev.zone(ZoneId(zone)).unwrap().written_blocks();
    let mut data = vec![0u8; (written * g.block_size_bytes as u64) as usize];
    dev.read(g.zone_start(ZoneId(zone)), &mut data).unwrap();
    data[at_bytes as usize] ^= 0x10;
    dev.reset_zone(ZoneId(zone)).unwrap();
    dev.append(ZoneId(zone), &data).unwrap();
    dev.flush().unwrap();
}

fn remount_read_only(fs: Zfs<MemDevice>) -> Zfs<MemDevice> {
    Zfs::mount_read_only(fs.into_device(), FsConfig::default()).unwrap()
}

#[test]
fn a_flipped_data_byte_fails_the_read_and_fsck() {
    let (mut fs, e) = populated();
    let zone_start = fs.device().geometry().zone_start(ZoneId(e.zone)).0;
    let at = (e.lba - zone_start) * 4096 + 12_345;
    flip_byte(fs.device_mut(), e.zone, at);
    let mut fs = remount_read_only(fs);
    let mut buf = vec![0u8; 50_000];
    let err = fs.read_at("b", 0, &mut buf).unwrap_err();
    assert!(matches!(err, FsError::Checksum { .. }), "{err}");
    assert!(err.to_string().contains("b") && err.to_string().contains(&format!("zone {}", e.zone)), "{err}");
    // A read of a few bytes of the damaged extent fails too, whatever part it asks for.
    let err = fs.read_at("b", 100, &mut buf[..10]).unwrap_err();
    assert!(matches!(err, FsError::Checksum { .. }), "{err}");
    // The other files read fine.
    let mut a = vec![0u8; 10_000];
    fs.read_at("a", 0, &mut a).unwrap();
    assert_eq!(a, content("a", 10_000));
    let problems = fs.fsck().unwrap();
    assert!(problems.iter().any(|p| p.contains("b") && p.contains("checksum")), "{problems:?}");
    assert_eq!(problems.len(), 1, "{problems:?}");
}

#[test]
fn a_read_past_the_write_pointer_is_an_error_not_zeros() {
    let (mut fs, e) = populated();
    // The zone of `b` loses its data (a reset behind the file system's back); the same zone
    // written again only up to the first block.
    let g = *fs.device().geometry();
    let mut first = vec![0u8; 4096];
    fs.device_mut().read(g.zone_start(ZoneId(e.zone)), &mut first).unwrap();
    fs.device_mut().reset_zone(ZoneId(e.zone)).unwrap();
    fs.device_mut().append(ZoneId(e.zone), &first).unwrap();
    let mut fs = remount_read_only(fs);
    let mut buf = vec![0u8; 50_000];
    let err = fs.read_at("b", 0, &mut buf).unwrap_err();
    assert!(err.to_string().contains("write pointer"), "{err}");
    let problems = fs.fsck().unwrap();
    assert!(problems.iter().any(|p| p.contains("b") && p.contains("write pointer")), "{problems:?}");
}

#[test]
fn fsck_reports_offline_and_read_only_zones_that_hold_live_data() {
    for offline in [false, true] {
        let (mut fs, e) = populated();
        let dev = fs.device_mut();
        // A zone goes offline from read-only (the NVMe zone state machine).
        dev.inject_read_only(ZoneId(e.zone)).unwrap();
        if offline {
            dev.inject_offline(ZoneId(e.zone)).unwrap();
        }
        let mut fs = remount_read_only(fs);
        let problems = fs.fsck().unwrap();
        let word = if offline { "offline" } else { "read-only" };
        assert!(problems.iter().any(|p| p.contains(&format!("zone {}", e.zone)) && p.contains(word) && p.contains("b")), "{word}: {problems:?}");
    }
}

/// GC copies carry valid checksums: after relocations every file still reads and fsck (which
/// verifies every extent) is clean.
#[test]
fn gc_copies_carry_valid_checksums() {
    let config = FsConfig { gc_empty_zones_low: 6, ..FsConfig::default() };
    let mut fs = Zfs::mkfs(device(), config).unwrap();
    let mut live = std::collections::BTreeMap::new();
    for i in 0..600u32 {
        let name = format!("{i:05}");
        let data = content(&name, 20_000 + (i as usize * 977) % 30_000);
        fs.put(&name, 1 + (i % 3) as u8, &data).unwrap();
        live.insert(name, data);
        if live.len() > 40 {
            let victim = live.keys().nth((i as usize * 7) % live.len()).unwrap().clone();
            fs.delete(&victim).unwrap();
            live.remove(&victim);
        }
    }
    assert!(fs.gc_relocations() > 5, "GC relocated only {} zones", fs.gc_relocations());
    let mut fs = Zfs::mount(fs.into_device(), config).unwrap();
    assert!(fs.fsck().unwrap().is_empty(), "{:?}", fs.fsck().unwrap());
    for (name, data) in &live {
        let mut buf = vec![0u8; data.len()];
        fs.read_at(name, 0, &mut buf).unwrap();
        assert!(&buf == data, "{name}");
    }
}

/// An image written by the previous format (no data checksums, version 1) is refused with a
/// message naming the versions, not read as if it had checksums or called corrupt.
#[test]
fn an_image_of_the_previous_format_is_refused_clearly() {
    let (fs, _) = populated();
    let mut dev = fs.into_device();
    let g = *dev.geometry();
    for zone in [0u32, 1] {
        let start = g.zone_start(ZoneId(zone));
        let written = dev.zone(ZoneId(zone)).unwrap().written_blocks();
        if written == 0 {
            continue;
        }
        let mut data = vec![0u8; (written * 4096) as usize];
        dev.read(start, &mut data).unwrap();
        data[12..16].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32fast::hash(&data[..28]);
        data[28..32].copy_from_slice(&crc.to_le_bytes());
        dev.reset_zone(ZoneId(zone)).unwrap();
        dev.append(ZoneId(zone), &data).unwrap();
    }
    let e = Zfs::mount_read_only(dev, FsConfig::default()).err().expect("a version-1 image must be refused");
    assert!(e.to_string().contains("format version 1") && e.to_string().contains("version 2"), "{e}");
}

/// An extent is verified whole once per mount; later small reads of it read only the blocks
/// they need (a 4 KiB read of a verified 1 MiB extent must not read 1 MiB again).
#[test]
fn a_verified_extent_is_not_read_whole_again() {
    let mut fs = Zfs::mkfs(device(), FsConfig::default()).unwrap();
    fs.create("big", 2).unwrap();
    fs.append("big", &content("big", 200_000)).unwrap();
    fs.sync("big").unwrap();
    let mut fs = remount_read_only(fs);
    let mut buf = vec![0u8; 4096];
    let read_bytes = |fs: &Zfs<MemDevice>| fs.device().stats().reads.bytes;
    let before = read_bytes(&fs);
    fs.read_at("big", 100_000, &mut buf).unwrap();
    let first = read_bytes(&fs) - before;
    assert!(first >= 100_000, "the first read verifies the whole extent ({first} bytes read)");
    assert_eq!(buf, content("big", 200_000)[100_000..104_096]);
    let before = read_bytes(&fs);
    fs.read_at("big", 150_000, &mut buf).unwrap();
    let again = read_bytes(&fs) - before;
    assert!(again <= 2 * 4096, "a verified extent reads only its blocks ({again} bytes read)");
    assert_eq!(buf, content("big", 200_000)[150_000..154_096]);
}

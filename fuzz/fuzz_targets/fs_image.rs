//! A file system whose device bytes were mutated (metadata log and data zones): mount, fsck
//! and reading every file either succeed or fail with an error; none of them panics. A
//! mutated committed metadata block — the newest batch's included — with the seal behind it
//! intact is corruption: the mount must fail rather than come up with a different file table.
//! And when fsck says clean, every file is there and reads back what was written, or its read
//! fails: never other bytes in silence.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use zonekit_device::{Geometry, Lba, MemDevice, StorageMode, ZoneBehavior, ZoneFilter, ZoneId, ZonedDevice};
use zonekit_zfs::fs::{FsConfig, Zfs};

fn geometry() -> Geometry {
    Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 64,
        zone_capacity_blocks: 64,
        zone_count: 16,
        conventional_zone_count: 0,
        open_zones_max: Some(8),
        active_zones_max: Some(8),
    }
}

/// The written blocks of every zone of a small file system with a few files, the last batch a
/// delete (then its seal), built once.
fn reference() -> &'static Vec<Vec<Vec<u8>>> {
    static ZONES: OnceLock<Vec<Vec<Vec<u8>>>> = OnceLock::new();
    ZONES.get_or_init(|| {
        let dev = MemDevice::new(geometry(), ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
        let mut fs = Zfs::mkfs(dev, FsConfig::default()).unwrap();
        for (i, len) in [5_000usize, 70_000, 300, 130_000].iter().enumerate() {
            let name = format!("f{i}");
            fs.create(&name, 2 + (i % 3) as u8).unwrap();
            fs.append(&name, &vec![i as u8 + 1; *len]).unwrap();
            fs.sync(&name).unwrap();
        }
        fs.delete("f2").unwrap();
        let mut dev = fs.into_device();
        let g = *dev.geometry();
        let mut zones = Vec::new();
        for z in dev.report_all(ZoneFilter::All).unwrap() {
            let mut blocks = Vec::new();
            for b in 0..z.written_blocks() {
                let mut buf = vec![0u8; g.block_size_bytes as usize];
                dev.read(Lba(g.zone_start(z.id).0 + b), &mut buf).unwrap();
                blocks.push(buf);
            }
            zones.push(blocks);
        }
        zones
    })
}

fuzz_target!(|data: &[u8]| {
    let reference_zones = reference();
    let mut zones = reference_zones.clone();
    let written: Vec<(usize, usize)> = zones.iter().enumerate().flat_map(|(z, blocks)| (0..blocks.len()).map(move |b| (z, b))).collect();
    // Each 5 bytes: which written block (u16), which byte of it (u16), what to xor in.
    for m in data.chunks_exact(5) {
        let (z, b) = written[u16::from_le_bytes([m[0], m[1]]) as usize % written.len()];
        let at = u16::from_le_bytes([m[2], m[3]]) as usize % 4096;
        zones[z][b][at] ^= m[4].max(1);
    }
    // Zone 0 holds the log (no roll-over in so small a file system; block 0 is its header, the
    // last block the newest batch's seal). Compared after all mutations: two flips cancel.
    let seal = reference_zones[0].len() - 1;
    let hit_committed_metadata = zones[0][..seal] != reference_zones[0][..seal] && zones[0][seal] == reference_zones[0][seal];
    let mut dev = MemDevice::new(geometry(), ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
    for (z, blocks) in zones.iter().enumerate() {
        for block in blocks {
            dev.append(ZoneId(z as u32), block).unwrap();
        }
    }
    let mounted = Zfs::mount_read_only(dev, FsConfig::default());
    if hit_committed_metadata {
        if let Ok(fs) = &mounted {
            let changed: Vec<(usize, Vec<usize>)> = (0..seal)
                .filter(|&b| zones[0][b] != reference_zones[0][b])
                .map(|b| (b, (0..4096).filter(|&i| zones[0][b][i] != reference_zones[0][b][i]).collect()))
                .collect();
            let files: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
            panic!("a mutated committed metadata block mounted: changed (block, bytes) {changed:?} before the seal at block {seal}; files {files:?}");
        }
    }
    let Ok(mut fs) = mounted else { return };
    let clean = fs.fsck().is_ok_and(|problems| problems.is_empty());
    let names: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
    if clean {
        assert_eq!(names, ["f0", "f1", "f3"], "fsck says clean with other files");
    }
    let mut buf = vec![0u8; 8192];
    for name in names {
        let expected: Option<(u8, usize)> = match name.as_str() {
            "f0" => Some((1, 5_000)),
            "f1" => Some((2, 70_000)),
            "f3" => Some((4, 130_000)),
            _ => None,
        };
        let mut offset = 0;
        let mut whole = true;
        loop {
            match fs.read_at(&name, offset, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Some((byte, _)) = expected {
                        assert!(buf[..n].iter().all(|&b| b == byte), "{name}: other bytes than written read back without an error at {offset}");
                    }
                    offset += n as u64;
                }
                Err(_) => {
                    whole = false;
                    break;
                }
            }
        }
        if clean && whole {
            assert_eq!(Some(offset as usize), expected.map(|(_, len)| len), "{name}: fsck says clean but the file is {offset} bytes");
        }
    }
});

//! A file system whose device bytes were mutated (metadata log and data zones): mount, fsck
//! and reading every file either succeed or fail with an error; none of them panics.
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

/// The written blocks of every zone of a small file system with a few files, built once.
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
    let mut zones = reference().clone();
    let written: Vec<(usize, usize)> = zones.iter().enumerate().flat_map(|(z, blocks)| (0..blocks.len()).map(move |b| (z, b))).collect();
    // Each 5 bytes: which written block (u16), which byte of it (u16), what to xor in.
    for m in data.chunks_exact(5) {
        let (z, b) = written[u16::from_le_bytes([m[0], m[1]]) as usize % written.len()];
        let at = u16::from_le_bytes([m[2], m[3]]) as usize % 4096;
        zones[z][b][at] ^= m[4].max(1);
    }
    let mut dev = MemDevice::new(geometry(), ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
    for (z, blocks) in zones.iter().enumerate() {
        for block in blocks {
            dev.append(ZoneId(z as u32), block).unwrap();
        }
    }
    let Ok(mut fs) = Zfs::mount_read_only(dev, FsConfig::default()) else { return };
    let _ = fs.fsck();
    let names: Vec<String> = fs.table().files().map(|f| f.name.clone()).collect();
    let mut buf = vec![0u8; 8192];
    for name in names {
        let mut offset = 0;
        while let Ok(n) = fs.read_at(&name, offset, &mut buf) {
            if n == 0 {
                break;
            }
            offset += n as u64;
        }
    }
});

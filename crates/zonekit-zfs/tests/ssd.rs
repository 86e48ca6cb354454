//! The file system on an FDP SSD through the zoned adapter (`zonekit_ssd::zoned`), data kept:
//! each zone's writes carry the placement handle its lifetime folds to, and after file-system
//! GC and device GC every file reads back byte-exact and fsck is clean.

use std::collections::BTreeMap;

use zonekit_device::{Geometry, ZonedDevice};
use zonekit_ssd::{zoned, Interface, RuhType};
use zonekit_zfs::fs::{FsConfig, Zfs};

fn content(name: &str, len: usize) -> Vec<u8> {
    let h = name.bytes().fold(11u8, |a, b| a.wrapping_mul(31).wrapping_add(b));
    (0..len).map(|i| h ^ (i as u8).wrapping_mul(29) ^ (i >> 9) as u8).collect()
}

#[test]
fn files_on_an_fdp_ssd_use_their_lifetimes_handles_and_survive_both_gcs() {
    // The ZNS device it stands in for: 40 zones of 1 MiB, 12 open and active.
    let zns = Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 256,
        zone_capacity_blocks: 256,
        zone_count: 40,
        conventional_zone_count: 0,
        open_zones_max: Some(12),
        active_zones_max: Some(12),
    };
    let interface = Interface::Fdp { handles: 4, ruh_type: RuhType::InitiallyIsolated };
    let dev = zoned::for_zns(&zns, interface, zoned::SPARE_DEFAULT, true).unwrap();
    let config = FsConfig { gc_empty_zones_low: 4, ..FsConfig::default() };
    let mut fs = Zfs::mkfs(dev, config).unwrap();
    let mut live = BTreeMap::new();
    for i in 0..3000u32 {
        let name = format!("{i:05}.sst");
        let data = content(&name, 20_000 + (i as usize * 977) % 40_000);
        fs.put(&name, 2 + (i % 4) as u8, &data).unwrap();
        live.insert(name, data);
        if live.len() > 400 {
            let victim = live.keys().nth((i as usize * 7) % live.len()).unwrap().clone();
            fs.delete(&victim).unwrap();
            live.remove(&victim);
        }
    }
    assert!(fs.gc_relocations() > 5, "file-system GC relocated only {} zones", fs.gc_relocations());
    // Every zone holding data is written through its lifetime's handle (2, 3, 4, 5 → 1, 2, 2, 3
    // on 4 handles).
    let fold = fs.device().media().lifetime_handles().to_vec();
    assert_eq!(fold, [0, 0, 1, 2, 2, 3]);
    for (&z, u) in fs.zones() {
        if let (true, Some(lifetime)) = (u.written_blocks > 0, u.lifetime) {
            assert_eq!(fs.device().media().zone_handle(z), Some(fold[lifetime as usize]), "zone {z} of lifetime {lifetime}");
        }
    }
    let ssd = fs.device().media().ssd();
    let by_handle = &ssd.counters().host_blocks_by_handle;
    assert!(by_handle.iter().all(|&b| b > 0), "every handle carries writes (0: the metadata): {by_handle:?}");
    assert!(ssd.counters().erases > 0 && ssd.counters().trimmed_blocks > 0, "device GC must run: {:?}", ssd.counters());
    ssd.check_invariants();
    let flash = fs.device().flash_writes().unwrap();
    assert_eq!(flash.host_bytes, fs.device().stats().bytes_written(), "the SSD sees exactly the zones' writes");

    let mut fs = Zfs::mount(fs.into_device(), config).unwrap();
    assert!(fs.fsck().unwrap().is_empty(), "{:?}", fs.fsck().unwrap());
    for (name, data) in &live {
        let mut buf = vec![0u8; data.len()];
        assert_eq!(fs.read_at(name, 0, &mut buf).unwrap(), data.len());
        assert!(&buf == data, "{name} differs after both GCs");
    }
}

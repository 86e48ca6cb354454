//! A durable ZB+-tree whose device bytes were mutated (superblock, journal, nodes in
//! conventional and sequential zones): `open` either fails with an error or comes up with
//! exactly the tree that was written (every node, the superblock and the journal header carry
//! a CRC-32, so a mutation of anything reachable is refused, and a mutation of anything else
//! — a free slot, a dead node, a stale journal image — changes nothing). Never a panic.
#![no_main]
use std::collections::BTreeMap;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use zonekit_device::{Geometry, Lba, MemDevice, StorageMode, ZoneBehavior, ZoneFilter, ZonedDevice};
use zonekit_zbtree::{Index, Payload, TreeConfig, ZbTree};

fn geometry() -> Geometry {
    Geometry { block_size_bytes: 4096, zone_size_blocks: 160, zone_capacity_blocks: 160, zone_count: 4, conventional_zone_count: 1, open_zones_max: None, active_zones_max: None }
}

struct Reference {
    /// Every zone's blocks up to its write pointer (the whole zone if conventional).
    zones: Vec<Vec<Vec<u8>>>,
    contents: BTreeMap<u64, Vec<u8>>,
}

fn reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(|| {
        let config = TreeConfig { value_size_bytes: 8, leaf_entries_max: 4, inner_entries_max: 4, payload: Payload::Device, durable: true, ..TreeConfig::default() };
        let mut tree = ZbTree::create(MemDevice::new(geometry(), ZoneBehavior::default(), StorageMode::Data).unwrap(), config).unwrap();
        for k in 0..120u64 {
            tree.insert(k * 37 % 211, &k.to_le_bytes()).unwrap();
        }
        for k in (0..211u64).step_by(5) {
            tree.delete(k).unwrap();
        }
        let contents: BTreeMap<u64, Vec<u8>> = tree.scan(0, usize::MAX).unwrap().into_iter().collect();
        let mut dev = tree.into_device();
        let mut zones = Vec::new();
        for z in dev.report_all(ZoneFilter::All).unwrap() {
            let blocks = if z.zone_type == zonekit_device::ZoneType::Conventional { z.capacity_blocks } else { z.written_blocks() };
            zones.push(
                (0..blocks)
                    .map(|b| {
                        let mut buf = vec![0u8; 4096];
                        dev.read(Lba(z.start.0 + b), &mut buf).unwrap();
                        buf
                    })
                    .collect(),
            );
        }
        Reference { zones, contents }
    })
}

fuzz_target!(|data: &[u8]| {
    let reference = reference();
    let mut zones = reference.zones.clone();
    let blocks: Vec<(usize, usize)> = zones.iter().enumerate().flat_map(|(z, b)| (0..b.len()).map(move |i| (z, i))).collect();
    // Each 5 bytes: which block (u16), which byte of it (u16), what to xor in.
    for m in data.chunks_exact(5) {
        let (z, b) = blocks[u16::from_le_bytes([m[0], m[1]]) as usize % blocks.len()];
        zones[z][b][u16::from_le_bytes([m[2], m[3]]) as usize % 4096] ^= m[4].max(1);
    }
    let g = geometry();
    let mut dev = MemDevice::new(g, ZoneBehavior::default(), StorageMode::Data).unwrap();
    for (z, blocks) in zones.iter().enumerate() {
        for (b, block) in blocks.iter().enumerate() {
            dev.write(Lba(z as u64 * g.zone_size_blocks + b as u64), block).unwrap();
        }
    }
    let Ok(mut tree) = ZbTree::open(dev) else { return };
    // open walked every reachable node, so the scan reads only nodes that passed their CRC.
    let now: BTreeMap<u64, Vec<u8>> = tree.scan(0, usize::MAX).expect("a scan after a clean open").into_iter().collect();
    assert!(now == reference.contents, "a mutated image opened as a different tree");
});

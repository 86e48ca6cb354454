//! Model-based tests: random operation sequences on both trees against a `BTreeMap`, every
//! lookup and scan checked, the structural invariants checked as they go. Small node caps make
//! deep trees from a few hundred keys so that every split, sync, merge and borrow happens.

mod common;

use std::collections::BTreeMap;

use common::{geometry, seeds, small_config, value_for, with_seed};
use zonekit_base::Rng;
use zonekit_device::{MemDevice, StorageMode, ZoneBehavior};
use zonekit_zbtree::{Index, Payload, TreeConfig, ZbTree};

/// Runs `ops` random operations over keys `0..key_space`; panics (naming the seed) on the
/// first disagreement with the model or broken invariant.
fn run_model(tree: &mut dyn Index, seed: u64, ops: u64, key_space: u64) {
    let what = format!("{} model test", tree.name());
    with_seed(&what, seed, || {
        let mut rng = Rng::new(seed);
        let mut model: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        for op in 0..ops {
            let key = rng.below(key_space);
            match rng.below(100) {
                0..=44 => {
                    let value = value_for(key, op);
                    tree.insert(key, &value).unwrap_or_else(|e| panic!("op {op}: insert {key}: {e}"));
                    model.insert(key, value);
                }
                45..=74 => {
                    let found = tree.delete(key).unwrap_or_else(|e| panic!("op {op}: delete {key}: {e}"));
                    assert_eq!(found, model.remove(&key).is_some(), "op {op}: delete {key} found");
                }
                75..=89 => {
                    let got = tree.get(key).unwrap_or_else(|e| panic!("op {op}: get {key}: {e}"));
                    assert_eq!(got.as_ref(), model.get(&key), "op {op}: get {key}");
                }
                _ => {
                    let limit = rng.below(12) as usize;
                    let got = tree.scan(key, limit).unwrap_or_else(|e| panic!("op {op}: scan {key}: {e}"));
                    let want: Vec<(u64, Vec<u8>)> = model.range(key..).take(limit).map(|(k, v)| (*k, v.clone())).collect();
                    assert_eq!(got, want, "op {op}: scan from {key} limit {limit}");
                }
            }
            if op % 7 == 0 {
                tree.check_invariants();
                assert_eq!(tree.stats().records, model.len() as u64, "op {op}: record count");
            }
        }
        // Drain: delete everything, the tree must end empty and hold no node.
        let keys: Vec<u64> = model.keys().copied().collect();
        for key in keys {
            assert!(tree.delete(key).unwrap(), "drain: delete {key}");
        }
        tree.check_invariants();
        assert_eq!(tree.stats().records, 0);
    });
}

#[test]
fn zbtree_matches_model_with_data_on_the_device() {
    for seed in seeds(12) {
        let device = MemDevice::new(geometry(1, 8, 1024), ZoneBehavior::default(), StorageMode::Data).unwrap();
        let mut tree = ZbTree::create(device, small_config(Payload::Device)).unwrap();
        run_model(&mut tree, seed, 3000, 400);
    }
}

#[test]
fn zbtree_matches_model_in_shadow_mode() {
    for seed in seeds(12) {
        let device = MemDevice::new(geometry(1, 8, 1024), ZoneBehavior::default(), StorageMode::MetadataOnly).unwrap();
        let mut tree = ZbTree::create(device, small_config(Payload::Shadow)).unwrap();
        run_model(&mut tree, seed + 1000, 3000, 400);
    }
}

#[test]
fn zbtree_with_paper_sized_nodes() {
    let device = MemDevice::new(geometry(1, 4, 4096), ZoneBehavior::default(), StorageMode::Data).unwrap();
    let mut tree = ZbTree::create(device, TreeConfig { value_size_bytes: 16, ..TreeConfig::default() }).unwrap();
    run_model(&mut tree, 77, 20_000, 50_000);
}

#[test]
fn zbtree_model_runs_reach_every_path() {
    let device = MemDevice::new(geometry(1, 8, 1024), ZoneBehavior::default(), StorageMode::Data).unwrap();
    let mut tree = ZbTree::create(device, small_config(Payload::Device)).unwrap();
    run_model(&mut tree, 5, 3000, 400);
    let events = tree.stats().events;
    for path in [
        "leaf_to_sequential",
        "interior_to_sequential",
        "leaf_split",
        "interior_split",
        "normal_apply",
        "switch_apply",
        "log_allocated",
        "leaf_merge",
        "interior_merge",
        "head_split",
        "head_merge",
        "head_borrow",
    ] {
        assert!(events.get(path).copied().unwrap_or(0) > 0, "the model run never took {path}: {events:?}");
    }
}

#[test]
fn a_corrupted_node_is_an_error_naming_it_not_a_panic() {
    use zonekit_device::{Lba, ZonedDevice};
    use zonekit_zbtree::TreeError;
    let device = MemDevice::new(geometry(1, 4, 256), ZoneBehavior::default(), StorageMode::Data).unwrap();
    let mut tree = ZbTree::create(device, small_config(Payload::Device)).unwrap();
    for key in 0..200 {
        tree.insert(key, &value_for(key, 0)).unwrap();
    }
    // Flip one byte in every conventional slot holding a node (slot 0 is the superblock's).
    let mut block = vec![0u8; 4096];
    let mut corrupted = 0;
    for slot in 1..256 {
        let device = tree.store_mut().device_mut();
        device.read(Lba(slot), &mut block).unwrap();
        if block[..4] == *b"ZBT1" {
            block[100] ^= 0x40;
            device.write(Lba(slot), &block).unwrap();
            corrupted += 1;
        }
    }
    assert!(corrupted > 0);
    let mut errors = 0;
    for key in 0..200 {
        match tree.get(key) {
            Err(TreeError::CorruptNode { addr, reason }) => {
                assert!(addr < 256 && reason.contains("checksum"), "{addr}: {reason}");
                errors += 1;
            }
            other => panic!("get {key} on a corrupted tree returned {other:?}"),
        }
    }
    assert_eq!(errors, 200);
    let err = tree.insert(500, &value_for(500, 0)).unwrap_err().to_string();
    assert!(err.starts_with("corrupt tree: the node at block "), "{err}");
}

#[test]
fn a_device_without_conventional_zones_is_refused() {
    let device = MemDevice::new(geometry(0, 4, 256), ZoneBehavior::default(), StorageMode::Data).unwrap();
    let err = ZbTree::create(device, small_config(Payload::Device)).err().unwrap().to_string();
    assert!(err.contains("0 conventional zones") && err.contains("needs conventional space"), "{err}");
    let too_big = TreeConfig { value_size_bytes: 2000, ..TreeConfig::default() };
    let device = MemDevice::new(geometry(1, 4, 256), ZoneBehavior::default(), StorageMode::Data).unwrap();
    let err = ZbTree::create(device, too_big).err().unwrap().to_string();
    assert!(err.contains("holds 2 leaf entries (values 2000 bytes): at least 3 are needed"), "{err}");
}

#[test]
fn zbtree_reclaims_sequential_zones_when_they_fill() {
    for (seed, payload, mode) in [(21, Payload::Device, StorageMode::Data), (22, Payload::Shadow, StorageMode::MetadataOnly)] {
        let device = MemDevice::new(geometry(4, 8, 32), ZoneBehavior::default(), mode).unwrap();
        let mut tree = ZbTree::create(device, small_config(payload)).unwrap();
        run_model(&mut tree, seed, 5000, 150);
        let stats = tree.stats();
        assert!(stats.events.get("zone_reclaimed").copied().unwrap_or(0) >= 5, "seed {seed}: {:?}", stats.events);
        assert!(stats.io.zone_resets >= 5, "seed {seed}: {} resets", stats.io.zone_resets);
    }
}

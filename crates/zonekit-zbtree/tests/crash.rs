//! Crash consistency of the durable ZB+-tree: random operations against a `BTreeMap`, with the
//! device dying at a random write (then power loss: unflushed sequential data is gone), the tree
//! reopened from the device alone and checked against the model, before or after the operation
//! that was cut short (it may have committed before the crash). Also: what `open` refuses.

mod common;

use std::collections::BTreeMap;

use common::{geometry, seeds, small_config, value_for, with_seed};
use zonekit_base::Rng;
use zonekit_device::fault::{FaultOn, FaultyDevice};
use zonekit_device::{Geometry, Lba, MemDevice, StorageMode, ZoneBehavior, ZonedDevice};
use zonekit_zbtree::{Index, Payload, TreeConfig, TreeError, ZbTree};

type Dev = FaultyDevice<MemDevice>;

fn device() -> Dev {
    device_with(1024, 1, 8)
}

/// Zones of one size, conventional ones first (the journal takes 98 conventional slots).
fn device_with(zone_size_blocks: u64, conventional: u32, sequential: u32) -> Dev {
    FaultyDevice::new(MemDevice::new(geometry(conventional, sequential, zone_size_blocks), ZoneBehavior::default(), StorageMode::Data).unwrap())
}

fn config() -> TreeConfig {
    TreeConfig { durable: true, ..small_config(Payload::Device) }
}

fn contents(tree: &mut ZbTree<Dev>) -> BTreeMap<u64, Vec<u8>> {
    tree.scan(0, usize::MAX).unwrap().into_iter().collect()
}

/// Returns the crashes injected and the zones the device reset (reclaimed).
fn run(seed: u64, ops: u64, make: fn() -> Dev, key_space: u64) -> (u64, u64) {
    let mut rng = Rng::new(seed);
    let mut tree = ZbTree::create(make(), config()).unwrap();
    let mut model: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    let mut crashes = 0;
    for op in 0..ops {
        if rng.below(4) == 0 {
            // Die at one of the next few writes: inside this operation or a later one.
            let nth = rng.below(24);
            tree.store_mut().device_mut().fail_nth(FaultOn::Writes, nth, true);
        }
        let key = rng.below(key_space);
        let mut after = model.clone();
        let result = if rng.below(100) < 60 {
            let value = value_for(key, op);
            after.insert(key, value.clone());
            tree.insert(key, &value).map(|_| ())
        } else {
            after.remove(&key);
            tree.delete(key).map(|_| ())
        };
        match result {
            Ok(()) => model = after,
            Err(e) => {
                assert!(matches!(e, TreeError::Device(_)), "op {op}: {e}");
                // Poisoned until reopened.
                assert!(matches!(tree.get(key), Err(TreeError::Poisoned(_))), "op {op}: a failed tree kept serving");
                crashes += 1;
                let mut dev = tree.into_device();
                dev.disarm();
                dev.inner_mut().power_loss();
                tree = ZbTree::open(dev).unwrap_or_else(|e| panic!("op {op}: reopen after a crash: {e}"));
                tree.check_invariants();
                let now = contents(&mut tree);
                if now == after {
                    model = after;
                } else {
                    assert_eq!(now, model, "op {op}: after the crash the tree is neither the state before nor after the operation");
                }
            }
        }
        if op % 13 == 0 {
            tree.check_invariants();
        }
    }
    tree.store_mut().device_mut().disarm();
    // A clean reopen sees the same tree.
    let mut dev = tree.into_device();
    dev.inner_mut().power_loss();
    let mut tree = ZbTree::open(dev).unwrap();
    tree.check_invariants();
    assert_eq!(contents(&mut tree), model, "after a final power cycle");
    (crashes, tree.store().device().inner().stats().resets)
}

#[test]
fn durable_tree_survives_crashes_at_any_write() {
    let (mut crashes, mut resets) = (0, 0);
    for seed in seeds(6) {
        // Even seeds on small sequential zones, so that crashes also land while zones are reclaimed.
        let (make, key_space): (fn() -> Dev, u64) = if seed % 2 == 0 { (|| device_with(1024, 1, 8), 300) } else { (|| device_with(32, 8, 3), 150) };
        let (c, r) = with_seed("crash test", seed, || run(seed, 1500, make, key_space));
        crashes += c;
        resets += r;
    }
    assert!(crashes > 100, "only {crashes} crashes were injected");
    if std::env::var("ZBTREE_SEED").is_err() {
        assert!(resets > 10, "only {resets} zones were reclaimed: the small-zone runs should reclaim often");
    }
}

#[test]
fn open_refuses_what_is_not_a_tree() {
    // A blank device.
    let err = ZbTree::open(device()).err().unwrap().to_string();
    assert!(err.contains("holds no ZB+-tree superblock: it is blank"), "{err}");
    // A non-durable tree writes no superblock.
    let tree = ZbTree::create(device(), TreeConfig { durable: false, ..config() }).unwrap();
    let err = ZbTree::open(tree.into_device()).err().unwrap().to_string();
    assert!(err.contains("holds no ZB+-tree superblock"), "{err}");
    // Something else in the first block.
    let mut dev = device();
    dev.write(Lba(0), &[0xAB; 4096]).unwrap();
    let err = ZbTree::open(dev).err().unwrap().to_string();
    assert!(err.contains("not a zonekit tree") && err.contains("starts with [ab, ab, ab, ab]"), "{err}");
    // A damaged superblock.
    let mut tree = ZbTree::create(device(), config()).unwrap();
    tree.insert(1, &value_for(1, 1)).unwrap();
    let mut dev = tree.into_device();
    let mut block = vec![0u8; 4096];
    dev.read(Lba(0), &mut block).unwrap();
    block[41] ^= 1;
    dev.write(Lba(0), &block).unwrap();
    let err = ZbTree::open(dev).err().unwrap().to_string();
    assert!(err.contains("superblock checksum mismatch"), "{err}");
    // A device without conventional zones.
    let err = ZbTree::open(MemDevice::new(geometry(0, 2, 64), ZoneBehavior::default(), StorageMode::Data).unwrap()).err().unwrap().to_string();
    assert!(err.contains("no conventional zone"), "{err}");
}

#[test]
fn durable_mode_needs_the_payload_on_the_device() {
    let err = ZbTree::create(device(), TreeConfig { payload: Payload::Shadow, ..config() }).err().unwrap().to_string();
    assert!(err.contains("durable tree keeps its nodes on the device"), "{err}");
    let geometry = Geometry { block_size_bytes: 512, ..geometry(1, 2, 256) };
    let small = FaultyDevice::new(MemDevice::new(geometry, ZoneBehavior::default(), StorageMode::Data).unwrap());
    let err = ZbTree::create(small, TreeConfig { node_size_bytes: 512, ..config() }).err().unwrap().to_string();
    assert!(err.contains("a durable tree needs nodes of at least 1172 bytes"), "{err}");
}

#[test]
fn a_durable_tree_persists_in_an_image_file_across_processes_and_power_cycles() {
    use zonekit_device::FileDevice;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tree.zk");
    let geometry = geometry(1, 4, 256);
    let mut model = BTreeMap::new();
    {
        let device = FileDevice::create(&path, geometry, ZoneBehavior::default(), "test").unwrap();
        let mut tree = ZbTree::create(device, config()).unwrap();
        for key in 0..120 {
            tree.insert(key * 7, &value_for(key, 1)).unwrap();
            model.insert(key * 7, value_for(key, 1));
        }
        for key in (0..120).step_by(3) {
            assert!(tree.delete(key * 7).unwrap());
            model.remove(&(key * 7));
        }
    }
    // A later process: the image opened again, and once more after a power cycle.
    let mut tree = ZbTree::open(FileDevice::open(&path).unwrap()).unwrap();
    tree.check_invariants();
    assert_eq!(tree.scan(0, usize::MAX).unwrap().into_iter().collect::<BTreeMap<_, _>>(), model);
    drop(tree);
    let mut tree = ZbTree::open(FileDevice::open_power_cycled(&path).unwrap()).unwrap();
    tree.check_invariants();
    assert_eq!(tree.scan(0, usize::MAX).unwrap().into_iter().collect::<BTreeMap<_, _>>(), model);
    assert_eq!(tree.stats().records, 80);
}

#[test]
fn deleting_the_last_key_is_durable() {
    // Found by the fault simulator (tests/sim.rs, seed 142): deleting the tree's only key frees
    // the root head without writing a node, so the operation committed nothing and the key came
    // back after a power loss.
    let mut tree = ZbTree::create(device(), config()).unwrap();
    tree.insert(22, &value_for(22, 1)).unwrap();
    assert!(tree.delete(22).unwrap());
    let mut dev = tree.into_device();
    dev.inner_mut().power_loss();
    let mut tree = ZbTree::open(dev).unwrap();
    tree.check_invariants();
    assert_eq!(contents(&mut tree), BTreeMap::new(), "the acknowledged delete was lost");
}

//! An FTL rebuilt from a mapping its observer recorded ([`Ftl::restore`]) reads back every
//! block, keeps its invariants, and goes on writing and collecting on the same device.

use std::sync::{Arc, Mutex};

use zonekit_device::{DeviceError, Geometry, Lba, MemDevice, StorageMode, ZoneBehavior, ZoneId, ZonedDevice};
use zonekit_ftl::placement::{self, Params, PolicyEnv};
use zonekit_ftl::{victim, Ftl, FtlConfig, FtlObserver};
use zonekit_trace::synth::{Rng, Zipf};

fn geometry() -> Geometry {
    Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 64,
        zone_capacity_blocks: 60,
        zone_count: 40,
        conventional_zone_count: 0,
        open_zones_max: Some(8),
        active_zones_max: Some(8),
    }
}

/// Where each dense id lives, and how many resets the observer was asked about.
#[derive(Default)]
struct Seen {
    placed: Vec<Option<Lba>>,
    resets: u64,
    /// Placements by user writes and by GC moves.
    by_user: u64,
    by_gc: u64,
}

struct Recorder(Arc<Mutex<Seen>>);

impl FtlObserver<MemDevice> for Recorder {
    fn placed(&mut self, id: u32, lba: Lba, by_gc: bool) {
        let mut seen = self.0.lock().unwrap();
        if by_gc {
            seen.by_gc += 1;
        } else {
            seen.by_user += 1;
        }
        if seen.placed.len() <= id as usize {
            seen.placed.resize(id as usize + 1, None);
        }
        seen.placed[id as usize] = Some(lba);
    }

    fn before_reset(&mut self, dev: &mut MemDevice, zone: ZoneId) -> Result<(), DeviceError> {
        let mut seen = self.0.lock().unwrap();
        seen.resets += 1;
        // Nothing the observer knows may still point into the zone about to be erased.
        let zone_blocks = dev.geometry().zone_size_blocks;
        assert!(seen.placed.iter().flatten().all(|lba| lba.0 / zone_blocks != zone.0 as u64), "a placed block is in zone {zone}");
        Ok(())
    }
}

fn policies(g: &Geometry) -> (Box<dyn zonekit_ftl::placement::Placement>, Box<dyn zonekit_ftl::victim::Victim>) {
    let env = PolicyEnv { zone_blocks: g.zone_capacity_blocks, capacity_blocks: 24 * g.zone_capacity_blocks };
    (placement::create("sepbit", &Params::new(), env).unwrap(), victim::create("greedy", 1).unwrap())
}

fn block(key: u64, version: u64) -> Vec<u8> {
    let mut b = vec![0u8; 4096];
    b[..8].copy_from_slice(&key.to_le_bytes());
    b[8..16].copy_from_slice(&version.to_le_bytes());
    b
}

#[test]
fn a_restored_ftl_reads_back_every_block_and_keeps_writing() {
    let g = geometry();
    let config = FtlConfig { store_data: true, ..FtlConfig::default() };
    let dev = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
    let (p, v) = policies(&g);
    let mut ftl = Ftl::new(dev, p, v, config, 1024).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    ftl.set_observer(Box::new(Recorder(seen.clone())));

    let (blocks, zipf) = (900u64, Zipf::new(900, 0.8).unwrap());
    let mut rng = Rng::new(5);
    let mut version = vec![None; blocks as usize];
    let mut keys_by_id = Vec::new();
    for i in 0..20_000u64 {
        let key = zipf.sample(&mut rng) % blocks;
        if ftl.prefetch_block(key).is_none() {
            keys_by_id.push(key);
        }
        ftl.write(key, Some(&block(key, i)), i, zonekit_ftl::NEVER).unwrap();
        version[key as usize] = Some(i);
    }
    assert!(ftl.stats().gc_count > 0 && seen.lock().unwrap().resets == ftl.stats().gc_count);
    // Each placement is told apart: the volume's data checksums ride with GC moves.
    let by = {
        let s = seen.lock().unwrap();
        (s.by_user, s.by_gc)
    };
    assert_eq!(by, (ftl.stats().user_blocks, ftl.stats().gc_blocks));

    // The mapping as a durable journal would hold it, then the FTL is dropped (a restart).
    let mapping: Vec<(u64, Lba)> = seen.lock().unwrap().placed.iter().enumerate().map(|(id, lba)| (keys_by_id[id], lba.unwrap())).collect();
    let dev = ftl.into_device().unwrap();
    let (p, v) = policies(&g);
    let mut ftl = Ftl::restore(dev, p, v, config, &mapping).unwrap();
    ftl.check_invariants();
    let mut buf = vec![0u8; 4096];
    for key in 0..blocks {
        let mapped = ftl.read(key, &mut buf).unwrap();
        match version[key as usize] {
            Some(v) => assert!(mapped && buf == block(key, v), "block {key} after the restore"),
            None => assert!(!mapped),
        }
    }
    // It goes on: more writes, more GC (reclaiming the zones it adopted), same answers.
    let gc_before = ftl.stats().gc_count;
    for i in 20_000..40_000u64 {
        let key = zipf.sample(&mut rng) % blocks;
        ftl.write(key, Some(&block(key, i)), i, zonekit_ftl::NEVER).unwrap();
        version[key as usize] = Some(i);
    }
    assert!(ftl.stats().gc_count > gc_before);
    ftl.check_invariants();
    for key in 0..blocks {
        if let Some(v) = version[key as usize] {
            assert!(ftl.read(key, &mut buf).unwrap() && buf == block(key, v), "block {key} after more writes");
        }
    }
}

#[test]
fn a_mapping_into_unwritten_space_is_refused() {
    let g = geometry();
    let dev = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
    let (p, v) = policies(&g);
    let e = Ftl::restore(dev, p, v, FtlConfig { store_data: true, ..FtlConfig::default() }, &[(7, Lba(3))]).err().unwrap();
    assert!(e.to_string().contains("nothing was written"), "{e}");
}

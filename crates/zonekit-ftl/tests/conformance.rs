//! Every placement policy with every victim policy: the FTL keeps its invariants, WAF is sane,
//! and in data mode every block reads back what was last written to it, through GC.

use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};
use zonekit_ftl::placement::{self, Params, PolicyEnv};
use zonekit_ftl::{victim, CapacityMode, Ftl, FtlConfig, FtlError, GcTrigger};
use zonekit_trace::binary::next_write_indices;
use zonekit_trace::synth::{Rng, Zipf};

fn geometry(zones: u32) -> Geometry {
    Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 256,
        zone_capacity_blocks: 240,
        zone_count: zones,
        conventional_zone_count: 0,
        open_zones_max: Some(8),
        active_zones_max: Some(8),
    }
}

/// A skewed write stream over `blocks` keys with its next-write indices.
fn workload(seed: u64, blocks: u64, writes: usize) -> (Vec<u64>, Vec<u64>) {
    let zipf = Zipf::new(blocks, 0.9).unwrap();
    let mut rng = Rng::new(seed);
    let keys: Vec<u64> = (0..writes).map(|_| (zipf.sample(&mut rng) * 7919) % blocks).collect();
    let next = next_write_indices(&keys);
    (keys, next)
}

fn make(placement: &str, victim_name: &str, config: FtlConfig, data: bool, zones: u32) -> Result<Ftl<MemDevice>, FtlError> {
    let g = geometry(zones);
    let dev = MemDevice::new(g, ZoneBehavior::QEMU_NVME, if data { StorageMode::Data } else { StorageMode::MetadataOnly }).unwrap();
    let env = PolicyEnv { zone_blocks: g.zone_capacity_blocks, capacity_blocks: (zones as u64 - 18) * g.zone_capacity_blocks };
    let p = placement::create(placement, &Params::new(), env)?;
    let v = victim::create(victim_name, 7)?;
    Ftl::new(dev, p, v, config, 4096)
}

#[test]
fn every_placement_with_every_victim_keeps_the_invariants() {
    let (keys, next) = workload(1, 6000, 40_000);
    let mut victims: Vec<String> = victim::VICTIMS.iter().map(|v| v.name.to_string()).collect();
    victims.push("d-choices:4".into());
    for mode in [CapacityMode::Fixed, CapacityMode::Unbounded] {
        for p in placement::PLACEMENTS.iter().map(|p| p.name) {
            for v in &victims {
                let ctx = format!("{p} + {v} ({mode:?})");
                let config = FtlConfig { capacity: mode, ..FtlConfig::default() };
                let mut ftl = make(p, v, config, false, 48).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                for (i, (&k, &n)) in keys.iter().zip(&next).enumerate() {
                    ftl.write(k, None, i as u64 * 10, n).unwrap_or_else(|e| panic!("{ctx}: write {i}: {e}"));
                    if i % 9973 == 0 {
                        ftl.check_invariants();
                    }
                }
                ftl.check_invariants();
                let s = ftl.stats();
                assert_eq!(s.user_blocks, keys.len() as u64, "{ctx}");
                assert!(s.gc_count > 0, "{ctx}: GC never ran");
                assert!(s.waf() >= 1.0 && s.waf() < 20.0, "{ctx}: WAF {}", s.waf());
                assert_eq!(s.user_blocks_by_class.iter().sum::<u64>(), s.user_blocks, "{ctx}");
                assert_eq!(s.gc_blocks_by_class.iter().sum::<u64>(), s.gc_blocks, "{ctx}");
                assert!(ftl.bytes_per_block() < 64.0, "{ctx}: {} bytes per block", ftl.bytes_per_block());
            }
        }
    }
}

#[test]
fn data_mode_reads_back_the_last_write_through_gc() {
    let (keys, next) = workload(2, 3000, 25_000);
    for p in ["bhbdp", "sepbit", "zbopt", "lifespan"] {
        let config = FtlConfig { store_data: true, ..FtlConfig::default() };
        let mut ftl = make(p, "cbe", config, true, 32).unwrap();
        let mut last = std::collections::HashMap::new();
        let content = |k: u64, version: usize| {
            let mut b = vec![(k as u8) ^ (version as u8); 4096];
            b[..8].copy_from_slice(&k.to_le_bytes());
            b[8..16].copy_from_slice(&(version as u64).to_le_bytes());
            b
        };
        let mut buf = vec![0u8; 4096];
        for (i, (&k, &n)) in keys.iter().zip(&next).enumerate() {
            ftl.write(k, Some(&content(k, i)), i as u64, n).unwrap();
            last.insert(k, i);
            if i % 997 == 0 {
                let probe = keys[i / 2];
                assert!(ftl.read(probe, &mut buf).unwrap());
                assert!(buf == content(probe, last[&probe]), "{p}: block {probe} after write {i}");
            }
        }
        assert!(ftl.stats().gc_count > 10, "{p}: GC must have moved data");
        for (&k, &v) in &last {
            assert!(ftl.read(k, &mut buf).unwrap());
            assert!(buf == content(k, v), "{p}: block {k} does not hold its last write");
        }
        assert!(!ftl.read(999_999, &mut buf).unwrap(), "{p}: an unwritten block reads as absent");
        ftl.check_invariants();
    }
}

#[test]
fn refusals_name_the_problem() {
    // Seven classes on a device with six open zones.
    let mut g = geometry(32);
    g.open_zones_max = Some(6);
    g.active_zones_max = Some(6);
    let dev = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::MetadataOnly).unwrap();
    let env = PolicyEnv { zone_blocks: 240, capacity_blocks: 5000 };
    let e = Ftl::new(dev, placement::create("sepbit", &Params::new(), env).unwrap(), victim::create("cbe", 1).unwrap(), FtlConfig::default(), 10).err().unwrap();
    assert!(e.to_string().contains("needs 7 open zones, the device allows 6"), "{e}");

    // A working set larger than the device.
    let mut ftl = make("bhbdp", "cbe", FtlConfig::default(), false, 24).unwrap();
    let e = (0..100_000u64).find_map(|k| ftl.write(k, None, k, u64::MAX).err()).expect("must run out of space");
    assert!(e.to_string().contains("does not fit the device"), "{e}");

    let e = placement::create("clairvoyant", &Params::new(), env).err().unwrap();
    let e = e.to_string();
    assert!(e.contains("valid: normal") && e.contains("bhbdp"), "{e}");
    assert!(victim::create("oldest", 1).err().unwrap().to_string().contains("cbe"));
    let mut bad = Params::new();
    bad.insert("r2".into(), "0.1".into());
    assert!(placement::create("bhbdp", &bad, env).err().unwrap().to_string().contains("r1 < r2"));
    bad.insert("r3".into(), "1".into());
    assert!(placement::create("bhbdp", &bad, env).err().unwrap().to_string().contains("no parameter \"r3\""));
    let e = make("bhbdp", "cbe", FtlConfig { gc_threshold: 1.0, ..FtlConfig::default() }, false, 32).err().unwrap();
    assert!(e.to_string().contains("GC threshold"), "{e}");
}

#[test]
fn oracles_beat_no_separation_on_a_skewed_workload() {
    let (keys, next) = workload(3, 6000, 80_000);
    let waf = |p: &str| {
        let mut ftl = make(p, "cbe", FtlConfig::default(), false, 40).unwrap();
        for (i, (&k, &n)) in keys.iter().zip(&next).enumerate() {
            ftl.write(k, None, i as u64, n).unwrap();
        }
        ftl.stats().waf()
    };
    let (normal, zbopt, fk) = (waf("normal"), waf("zbopt"), waf("fk"));
    assert!(zbopt < normal && fk < normal, "normal {normal}, fk {fk}, zbopt {zbopt}");
}

#[test]
fn deferred_appends_change_nothing_but_the_device_commands() {
    let (keys, next) = workload(3, 6000, 40_000);
    for (p, mode, trigger) in
        [("bhbdp", CapacityMode::Fixed, GcTrigger::GpAll), ("sepbit", CapacityMode::Unbounded, GcTrigger::GpAll), ("warcip", CapacityMode::Fixed, GcTrigger::FreeZones)]
    {
        let config = FtlConfig { capacity: mode, trigger, ..FtlConfig::default() };
        let mut plain = make(p, "cbe", config, false, 48).unwrap();
        let mut deferred = make(p, "cbe", config, false, 48).unwrap();
        deferred.defer_appends().unwrap();
        for (i, (&k, &n)) in keys.iter().zip(&next).enumerate() {
            plain.write(k, None, i as u64 * 10, n).unwrap();
            deferred.write(k, None, i as u64 * 10, n).unwrap();
            if i % 7919 == 0 {
                // Checks the device's write pointers too, after catching it up.
                deferred.check_invariants();
            }
        }
        deferred.check_invariants();
        let (a, b) = (plain.stats(), deferred.stats());
        assert_eq!((a.user_blocks, a.gc_blocks, a.gc_count, &a.gc_blocks_by_class), (b.user_blocks, b.gc_blocks, b.gc_count, &b.gc_blocks_by_class), "{p}");
        let resets = |f: &Ftl<MemDevice>| f.zones().iter().map(|z| z.resets).collect::<Vec<_>>();
        assert_eq!(resets(&plain), resets(&deferred), "{p}");
    }
    let mut data = make("bhbdp", "cbe", FtlConfig { store_data: true, ..FtlConfig::default() }, true, 32).unwrap();
    assert!(data.defer_appends().is_err(), "a data-keeping FTL sends every block");
}

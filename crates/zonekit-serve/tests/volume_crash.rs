//! The FTL volume across power losses: after each, every block reads what it held at the last
//! flush or something written after it (never older, never another block's data), and the
//! volume goes on. Power is lost at random points, GC running throughout.

mod common;

use common::small_device;
use zonekit_serve::volume::{Volume, VolumeSpec};

fn seed() -> u64 {
    std::env::var("ZK_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5EED)
}

/// xorshift64*, enough to pick operations.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

fn data(block: u64, version: u64) -> Vec<u8> {
    let mut b = vec![(version % 251) as u8; 4096];
    b[..8].copy_from_slice(&block.to_le_bytes());
    b[8..16].copy_from_slice(&version.to_le_bytes());
    b
}

/// The version a block holds (0: never written, all zeros).
fn version_of(block: u64, b: &[u8], seed: u64) -> u64 {
    if b.iter().all(|&x| x == 0) {
        return 0;
    }
    let owner = u64::from_le_bytes(b[..8].try_into().unwrap());
    let version = u64::from_le_bytes(b[8..16].try_into().unwrap());
    assert_eq!(owner, block, "block {block} holds block {owner}'s data (ZK_SEED={seed})");
    assert_eq!(b, &data(block, version)[..], "block {block} version {version} is damaged (ZK_SEED={seed})");
    version
}

#[test]
fn every_flushed_block_survives_power_loss() {
    let seed = seed();
    let spec = VolumeSpec { utilization: 0.6, ..VolumeSpec::default() };
    let mut vol = Volume::open(small_device(48, Some(8)), &spec).unwrap();
    let blocks = vol.blocks();
    let (mut latest, mut flushed) = (vec![0u64; blocks as usize], vec![0u64; blocks as usize]);
    let mut state = seed | 1;
    let mut version = 0;
    let mut buf = vec![0u8; 4096];
    let (mut losses, mut gcs) = (0, 0);
    for op in 0..60_000u64 {
        let r = next(&mut state);
        match r % 100 {
            0..=1 => {
                vol.flush().unwrap();
                flushed.copy_from_slice(&latest);
            }
            2 if op > 0 && next(&mut state) % 8 == 0 => {
                // Power loss: the device keeps what was flushed, the volume is reopened.
                gcs += vol.ftl_stats().gc_count;
                let mut dev = vol.into_device().unwrap();
                dev.power_loss();
                vol = Volume::open(dev, &spec).unwrap_or_else(|e| panic!("reopen after loss {losses} (ZK_SEED={seed}): {e}"));
                assert_eq!(vol.blocks(), blocks);
                for b in 0..blocks {
                    vol.read(b, &mut buf).unwrap();
                    let v = version_of(b, &buf, seed);
                    assert!(
                        v >= flushed[b as usize] && v <= latest[b as usize],
                        "block {b} holds version {v} after loss {losses}; flushed {}, latest {} (ZK_SEED={seed})",
                        flushed[b as usize],
                        latest[b as usize]
                    );
                    latest[b as usize] = v;
                    flushed[b as usize] = v;
                }
                losses += 1;
            }
            3..=10 => {
                let b = next(&mut state) % blocks;
                vol.read(b, &mut buf).unwrap();
                assert_eq!(version_of(b, &buf, seed), latest[b as usize], "block {b} read back (ZK_SEED={seed})");
            }
            _ => {
                // Skewed writes, so GC finds garbage in some zones more than others.
                let b = if r % 3 == 0 { next(&mut state) % blocks } else { next(&mut state) % (blocks / 8) };
                version += 1;
                vol.write(b, &data(b, version)).unwrap();
                latest[b as usize] = version;
            }
        }
    }
    gcs += vol.ftl_stats().gc_count;
    assert!(losses >= 10 && gcs > 100, "the test exercised {losses} losses and {gcs} GCs (ZK_SEED={seed})");
}

#[test]
fn a_device_with_foreign_data_is_not_taken_for_a_volume() {
    let mut dev = small_device(32, None);
    zonekit_device::ZonedDevice::append(&mut dev, zonekit_device::ZoneId(3), &[1u8; 4096]).unwrap();
    let e = Volume::open(dev, &VolumeSpec::default()).err().unwrap();
    assert!(e.to_string().contains("no volume journal"), "{e}");
    let dev = small_device(32, None);
    let e = Volume::open(dev, &VolumeSpec { placement: "fk".into(), ..VolumeSpec::default() }).err().unwrap();
    assert!(e.to_string().contains("oracle"), "{e}");
}

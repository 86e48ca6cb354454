//! A fixed-capacity FTL that is full refuses a new block and stays whole: the refused block
//! stays unknown (reads as zeros, its next write is refused again, not taken for a rewrite),
//! and every block written before reads back and can be rewritten.

use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};
use zonekit_ftl::placement::{self, Params, PolicyEnv};
use zonekit_ftl::{victim, Ftl, FtlConfig, FtlError};

fn block(key: u64, version: u64) -> Vec<u8> {
    let mut b = vec![0u8; 4096];
    b[..8].copy_from_slice(&key.to_le_bytes());
    b[8..16].copy_from_slice(&version.to_le_bytes());
    b
}

#[test]
fn a_full_ftl_refuses_a_new_block_and_stays_whole() {
    let g = Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 64,
        zone_capacity_blocks: 64,
        zone_count: 16,
        conventional_zone_count: 0,
        open_zones_max: Some(8),
        active_zones_max: Some(8),
    };
    let dev = MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap();
    let env = PolicyEnv { zone_blocks: 64, capacity_blocks: 16 * 64 };
    let p = placement::create("sepbit", &Params::new(), env).unwrap();
    let mut ftl = Ftl::new(dev, p, victim::create("greedy", 1).unwrap(), FtlConfig { store_data: true, ..FtlConfig::default() }, 1024).unwrap();
    let mut written = 0u64;
    let refused = loop {
        match ftl.write(written, Some(&block(written, 0)), 0, zonekit_ftl::NEVER) {
            Ok(()) => written += 1,
            Err(FtlError::DoesNotFit { .. }) => break written,
            Err(e) => panic!("block {written}: {e}"),
        }
        assert!(written <= 16 * 64, "the FTL never filled");
    };
    // Written again, the refused block is refused again: before the fix its key stayed mapped
    // to no copy and this write indexed the live bits with the unmapped slot (a panic).
    assert!(matches!(ftl.write(refused, Some(&block(refused, 1)), 0, zonekit_ftl::NEVER), Err(FtlError::DoesNotFit { .. })));
    let mut buf = vec![0u8; 4096];
    assert!(!ftl.read(refused, &mut buf).unwrap(), "the refused block is unknown");
    assert_eq!(buf, vec![0u8; 4096]);
    for key in 0..written {
        ftl.write(key, Some(&block(key, 2)), 0, zonekit_ftl::NEVER).unwrap();
    }
    for key in 0..written {
        assert!(ftl.read(key, &mut buf).unwrap());
        assert_eq!(buf, block(key, 2), "block {key}");
    }
    ftl.check_invariants();
}

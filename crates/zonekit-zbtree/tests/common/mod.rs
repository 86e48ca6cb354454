//! What the tree tests share: device shapes, small-node configurations, record values, seeds
//! and the wrapper that names the seed of a failed randomized run.
#![allow(dead_code)] // each test binary uses its own part

use std::panic::{catch_unwind, AssertUnwindSafe};

use zonekit_device::Geometry;
use zonekit_zbtree::{Payload, TreeConfig};

/// Zones of one size with 4 KiB blocks, conventional ones first.
pub fn geometry(conventional: u32, sequential: u32, zone_size_blocks: u64) -> Geometry {
    Geometry {
        block_size_bytes: 4096,
        zone_size_blocks,
        zone_capacity_blocks: zone_size_blocks,
        zone_count: conventional + sequential,
        conventional_zone_count: conventional,
        open_zones_max: None,
        active_zones_max: None,
    }
}

/// 16-byte values and at most 4 entries per node: deep trees from a few hundred keys.
pub fn small_config(payload: Payload) -> TreeConfig {
    TreeConfig { value_size_bytes: 16, leaf_entries_max: 4, inner_entries_max: 4, payload, ..TreeConfig::default() }
}

/// A 16-byte value naming its key and version, so a stale value is told from a current one.
pub fn value_for(key: u64, version: u64) -> Vec<u8> {
    let mut v = vec![0u8; 16];
    v[..8].copy_from_slice(&key.to_le_bytes());
    v[8..].copy_from_slice(&version.to_le_bytes());
    v
}

/// `ZBTREE_SEED` if set (to rerun one failure), else seeds 1 to `count`.
pub fn seeds(count: u64) -> Vec<u64> {
    match std::env::var("ZBTREE_SEED") {
        Ok(s) => vec![s.parse().expect("ZBTREE_SEED is a number")],
        Err(_) => (1..=count).collect(),
    }
}

/// Runs `f`; if it panics, panics again naming `what` and the seed that reproduces it.
pub fn with_seed<T>(what: &str, seed: u64, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(e) => {
            let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            panic!("{what} failed with seed {seed} (rerun: ZBTREE_SEED={seed}): {msg}");
        }
    }
}

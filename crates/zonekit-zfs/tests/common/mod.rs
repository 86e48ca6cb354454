//! Test devices shared by the file system's integration tests.

use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};

/// An in-memory data device of `zones` zones of `zone_blocks` 4 KiB blocks, QEMU semantics,
/// with `active_max` as both the open and the active limit.
pub fn device_with_limits(zones: u32, zone_blocks: u64, active_max: Option<u32>) -> MemDevice {
    let g = Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: zone_blocks,
        zone_capacity_blocks: zone_blocks,
        zone_count: zones,
        conventional_zone_count: 0,
        open_zones_max: active_max,
        active_zones_max: active_max,
    };
    MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap()
}

/// The usual test device: 12 open and active zones.
#[allow(dead_code)] // not every test binary uses both helpers
pub fn device(zones: u32, zone_blocks: u64) -> MemDevice {
    device_with_limits(zones, zone_blocks, Some(12))
}

//! What the serve crate's integration tests share.

use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};

/// A small data-keeping device for a volume: `zone_count` zones of 64 4-KiB blocks, at most
/// `open_limit` open and active.
pub fn small_device(zone_count: u32, open_limit: Option<u32>) -> MemDevice {
    let g = Geometry {
        block_size_bytes: 4096,
        zone_size_blocks: 64,
        zone_capacity_blocks: 64,
        zone_count,
        conventional_zone_count: 0,
        open_zones_max: open_limit,
        active_zones_max: open_limit,
    };
    MemDevice::new(g, ZoneBehavior::QEMU_NVME, StorageMode::Data).unwrap()
}

//! Named device presets: the geometries and flash timings of the devices the research used.
//!
//! Where a source gives no figure (die layout of FEMU's ZNS mode, erase-block size of the
//! ZN540) the preset says what it assumes. Timings are for the emulator's [`crate::timing`]
//! model, not measurements of ours.

use crate::timing::{ControllerConfig, FlashConfig};
use crate::{Geometry, ZoneBehavior};

/// A device shape plus the flash behind it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    pub geometry: Geometry,
    pub behavior: ZoneBehavior,
    pub flash: FlashConfig,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const BLOCK: u64 = 4 * KIB;
const US: u64 = 1000;
const MS: u64 = 1000 * US;

const fn zns(zone_size_bytes: u64, zone_capacity_bytes: u64, zones: u32, open: Option<u32>, active: Option<u32>) -> Geometry {
    Geometry {
        block_size_bytes: BLOCK as u32,
        zone_size_blocks: zone_size_bytes / BLOCK,
        zone_capacity_blocks: zone_capacity_bytes / BLOCK,
        zone_count: zones,
        conventional_zone_count: 0,
        open_zones_max: open,
        active_zones_max: active,
    }
}

/// The figures the `zn540` preset had before issue 48 fitted it (58 µs read, 561 µs program,
/// 3.5 ms erase, 450 MB/s channels; die layout 8 × 4 and 48 MiB erase blocks assumed), kept
/// for `nvmevirt-zns`, seed 004's NVMeVirt device, whose results were made with them.
const ZN540_ASSUMED_FLASH: FlashConfig = FlashConfig {
    channels: 8,
    dies_per_channel: 4,
    page_size_bytes: 32 * KIB as u32,
    pages_per_block: 1536,
    read_ns: 58 * US,
    program_ns: 561 * US,
    erase_ns: 3500 * US,
    channel_bytes_per_sec: 450_000_000,
    dies_per_zone: 32,
    controller: ControllerConfig::NONE,
};

/// The ZN540 as fitted to its published measurements (issue 48; `zonekit device fit` derives
/// every fitted figure from `crates/zonekit-device/data/zn540/`, and `zonekit device presets`
/// prints where each comes from). 16 dies on 8 channels, 32 KiB pages programmed in stripes
/// over all 16, behind a write buffer and the controller of [`crate::timing::ControllerConfig`].
pub const ZN540_FLASH: FlashConfig = FlashConfig {
    channels: 8,
    dies_per_channel: 2,
    page_size_bytes: 32 * KIB as u32,
    pages_per_block: 1536,
    read_ns: 36_600,
    program_ns: 433_000,
    erase_ns: 3500 * US,
    channel_bytes_per_sec: 330_000_000,
    dies_per_zone: 16,
    controller: ControllerConfig {
        dispatch_ns: 1000,
        write_ns: 2400,
        append_ns: 4200,
        handoff_ns: 2330,
        jitter_ns: 650,
        write_done_ns: 7650,
        append_done_ns: 8800,
        host_bytes_per_sec: 2_350_000_000,
        host_overlap_bytes: 8192,
        read_done_ns: 19_100,
        write_buffer_bytes: 8 * MIB,
        stripe_dies: 16,
        implicit_open_ns: 2500,
        open_ns: 8500,
        close_ns: 9700,
        finish_empty_ns: 12_500,
        seal_ns: 2_570_000,
        reset_ns: 1_570_000,
        reset_ns_per_mib: 12_800,
        seed: 48,
    },
};

/// FEMU's TLC-class defaults (40 µs / 200 µs / 2 ms). FEMU's ZNS mode does not fix a die layout
/// for zones; we stripe each zone over all 8 × 8 dies.
const FEMU_FLASH: FlashConfig = FlashConfig {
    channels: 8,
    dies_per_channel: 8,
    page_size_bytes: 16 * KIB as u32,
    pages_per_block: 256,
    read_ns: 40 * US,
    program_ns: 200 * US,
    erase_ns: 2 * MS,
    channel_bytes_per_sec: 800_000_000,
    dies_per_zone: 64,
    controller: ControllerConfig::NONE,
};

pub const PRESETS: [Preset; 5] = [
    Preset {
        name: "tiny",
        summary: "64 zones of 4 MiB (256 MiB), 8 open / 12 active: for tests and demos",
        geometry: zns(4 * MIB, 4 * MIB, 64, Some(8), Some(12)),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: FlashConfig { channels: 4, dies_per_channel: 2, dies_per_zone: 8, ..FEMU_FLASH },
    },
    Preset {
        name: "ocssd-thesis",
        // Seed 002: 8 ch × 4 LUN × 16 blocks × 32 pages of 32 KiB; a zone is one flash block on
        // one LUN (an Open-Channel 2.0 chunk). The thesis measured ~300 MB/s sequential writes,
        // which bounds the channels at 40 MB/s each (8 × 40 = 320 MB/s).
        summary: "seed 002's open-channel SSD: 512 chunks of 1 MiB (one block on one of 32 LUNs)",
        geometry: zns(MIB, MIB, 512, None, None),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: FlashConfig {
            channels: 8,
            dies_per_channel: 4,
            page_size_bytes: 32 * KIB as u32,
            pages_per_block: 32,
            read_ns: 101 * US,
            program_ns: 116 * US,
            erase_ns: 434 * US,
            channel_bytes_per_sec: 40_000_000,
            dies_per_zone: 1,
            controller: ControllerConfig::NONE,
        },
    },
    Preset {
        name: "femu-zns",
        summary: "seed 000's FEMU ZNS device: 100 GiB in 3200 zones of 32 MiB, 7 open zones",
        geometry: zns(32 * MIB, 32 * MIB, 3200, Some(7), None),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: FEMU_FLASH,
    },
    Preset {
        name: "zn540",
        summary: "WD Ultrastar DC ZN540 1 TB: 904 zones of 2048 MiB (1077 MiB usable), 14 open/active",
        geometry: zns(2048 * MIB, 1077 * MIB, 904, Some(14), Some(14)),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: ZN540_FLASH,
    },
    Preset {
        name: "nvmevirt-zns",
        summary: "seed 004's NVMeVirt ZNS device: 64 zones of 128 MiB (8 GiB), the old assumed ZN540 flash timing",
        geometry: zns(128 * MIB, 128 * MIB, 64, None, None),
        behavior: ZoneBehavior::QEMU_NVME,
        flash: ZN540_ASSUMED_FLASH,
    },
];

pub fn find(name: &str) -> Option<Preset> {
    PRESETS.iter().find(|p| p.name == name).copied()
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

impl Preset {
    /// The same device with zones of `zone_size_bytes`: the capacity stays, so the zone count
    /// changes (seed 001 asks how zone size changes what fits on an 8 GiB device). Refused when
    /// the zones are not fully writable (zone capacity below zone size: which part of a resized
    /// zone would be writable is not defined) or the new size does not divide the device into
    /// whole zones of whole blocks.
    pub fn with_zone_size_bytes(&self, zone_size_bytes: u64) -> Result<Preset, String> {
        let g = self.geometry;
        if g.zone_capacity_blocks != g.zone_size_blocks || g.conventional_zone_count != 0 {
            return Err(format!("preset {}: zones are not fully writable sequential zones, so their size cannot be changed", self.name));
        }
        let device_bytes = g.total_blocks() * g.block_size_bytes as u64;
        let block = g.block_size_bytes as u64;
        if zone_size_bytes == 0 || zone_size_bytes % block != 0 || device_bytes % zone_size_bytes != 0 {
            return Err(format!("preset {}: a zone of {zone_size_bytes} bytes does not divide the {device_bytes}-byte device into whole zones of {block}-byte blocks", self.name));
        }
        let zone_count = u32::try_from(device_bytes / zone_size_bytes).map_err(|_| format!("preset {}: too many zones of {zone_size_bytes} bytes", self.name))?;
        let geometry = Geometry { zone_size_blocks: zone_size_bytes / block, zone_capacity_blocks: zone_size_bytes / block, zone_count, ..g };
        geometry.validate().map_err(|e| format!("preset {} with {zone_size_bytes}-byte zones: {e}", self.name))?;
        Ok(Preset { geometry, ..*self })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for p in PRESETS {
            p.geometry.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
            p.flash.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
        }
    }

    #[test]
    fn presets_match_their_sources() {
        let zn540 = find("zn540").unwrap().geometry;
        assert_eq!((zn540.zone_count, zn540.zone_size_bytes(), zn540.zone_capacity_bytes()), (904, 2048 * MIB, 1077 * MIB));
        let femu = find("femu-zns").unwrap().geometry;
        assert_eq!(femu.zone_count as u64 * femu.zone_size_bytes(), 100 * 1024 * MIB);
        let ocssd = find("ocssd-thesis").unwrap();
        assert_eq!(ocssd.geometry.zone_count as u64 * ocssd.geometry.zone_size_bytes(), 512 * MIB);
        assert_eq!(ocssd.flash.die_count(), 32);
        let nvmevirt = find("nvmevirt-zns").unwrap().geometry;
        assert_eq!(nvmevirt.zone_count as u64 * nvmevirt.zone_size_bytes(), 8 * 1024 * MIB);
    }

    #[test]
    fn resizing_zones_keeps_the_capacity_and_refuses_what_cannot_be_cut() {
        let nvmevirt = find("nvmevirt-zns").unwrap();
        for (mib, zones) in [(64, 128), (128, 64), (256, 32)] {
            let g = nvmevirt.with_zone_size_bytes(mib * MIB).unwrap().geometry;
            assert_eq!((g.zone_count, g.zone_size_bytes(), g.zone_capacity_bytes()), (zones, mib * MIB, mib * MIB));
            assert_eq!(g.total_blocks(), nvmevirt.geometry.total_blocks());
        }
        assert!(nvmevirt.with_zone_size_bytes(100 * MIB).unwrap_err().contains("does not divide"));
        assert!(nvmevirt.with_zone_size_bytes(0).is_err());
        assert!(nvmevirt.with_zone_size_bytes(MIB + 1).is_err());
        assert!(find("zn540").unwrap().with_zone_size_bytes(1024 * MIB).unwrap_err().contains("not fully writable"));
    }
}

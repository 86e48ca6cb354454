//! Named SSD shapes with their sources. Each gives a drive's capacity, spare, reclaim-unit
//! layout and handles; a replay that sizes its device from a trace keeps the shape (spare,
//! reclaim unit, handles, flash) and scales the capacity. Where a figure is not published the
//! preset says it is assumed.

use zonekit_device::timing::FlashConfig;

use crate::config::{RuhType, SsdConfig, BLOCK_BYTES};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A drive's shape.
#[derive(Clone, Debug)]
pub struct SsdPreset {
    pub name: &'static str,
    pub summary: &'static str,
    /// Where each figure comes from, and which are assumed.
    pub source: &'static str,
    pub capacity_bytes: u64,
    pub spare: f64,
    pub erase_block_bytes: u64,
    pub ru_erase_blocks: u64,
    pub reclaim_groups: u16,
    /// FDP handles (count, type); `None` for a conventional SSD.
    pub handles: Option<(u16, RuhType)>,
    /// The flash timing: a zoned preset's, or a conventional drive's fitted one
    /// (`zonekit_device::preset::find_flash`).
    pub flash_of: &'static str,
}

/// Every preset.
pub const PRESETS: &[SsdPreset] = &[
    SsdPreset {
        name: "dc-7",
        summary: "1.92 TB read-intensive datacenter SSD, 7 % spare, device GC on 96 MiB superblocks",
        source: "capacity and spare: the read-intensive datacenter class (1.92 TB, 7 % over-provisioning as makers state it); \
                 erase block 3 MiB × 32 dies per superblock: assumed (a TLC-class layout); flash timing: FEMU's defaults",
        capacity_bytes: 1_920_000_000_000,
        spare: 0.07,
        erase_block_bytes: 3 * MIB,
        ru_erase_blocks: 32,
        reclaim_groups: 1,
        handles: None,
        flash_of: "femu-zns",
    },
    SsdPreset {
        name: "dc-28",
        summary: "1.6 TB mixed-use datacenter SSD, 28 % spare, device GC on 96 MiB superblocks",
        source: "capacity and spare: the mixed-use datacenter class (28 % over-provisioning as makers state it); \
                 erase block and superblock: assumed as dc-7; flash timing: FEMU's defaults",
        capacity_bytes: 1_600_000_000_000,
        spare: 0.28,
        erase_block_bytes: 3 * MIB,
        ru_erase_blocks: 32,
        reclaim_groups: 1,
        handles: None,
        flash_of: "femu-zns",
    },
    SsdPreset {
        name: "fdp-pm9d3",
        summary: "Samsung PM9D3 1.88 TB with FDP, CacheLib's FDP drive: 1 reclaim group, 8 initially isolated handles",
        source: "capacity 1.88 TB: published (CacheLib's FDP documentation, the drive of Allison et al., EuroSys '25); \
                 one reclaim group and 8 reclaim-unit handles: published for the FDP drive of CacheLib's FDP work; \
                 handle type initially isolated: assumed (the drive reports its own; `experiment fdp-theory` shows it changes \
                 the model's WAF by how GC mixes moved data); reclaim unit 6 GiB (2048 erase blocks of 3 MiB): assumed, \
                 not published; spare 7 %: assumed (the read-intensive class), not published: with FDP it sets the SOC's \
                 DLWA through Theorem 1; flash timing: FEMU's defaults, assumed (no timing of the drive is published)",
        capacity_bytes: 1_880_000_000_000,
        spare: 0.07,
        erase_block_bytes: 3 * MIB,
        ru_erase_blocks: 2048,
        reclaim_groups: 1,
        handles: Some((8, RuhType::InitiallyIsolated)),
        flash_of: "femu-zns",
    },
    SsdPreset {
        name: "980pro",
        summary: "Samsung 980 PRO 2 TB, conventional: timing fitted to its published fio writes (issue 48)",
        source: "capacity 2 TB: published (the drive's label); spare 7 %, erase block 3 MiB × 32 dies per superblock: assumed as dc-7 \
                 (the data does not give them, and the fio runs never reach device GC); flash timing: the 980pro flash preset, \
                 fitted to the drive's fio writes (`zonekit device presets` gives each figure's provenance)",
        capacity_bytes: 2_000_000_000_000,
        spare: 0.07,
        erase_block_bytes: 3 * MIB,
        ru_erase_blocks: 32,
        reclaim_groups: 1,
        handles: None,
        flash_of: "980pro",
    },
    SsdPreset {
        name: "sn540",
        summary: "WD Ultrastar DC SN540, conventional: timing fitted to its published fio runs (issue 48)",
        source: "capacity 960 GB: assumed (the data does not give it); spare 7 %, erase block 3 MiB × 32 dies per superblock: \
                 assumed as dc-7 (the fio runs never reach device GC); flash timing: the sn540 flash preset, fitted to the drive's \
                 fio writes and random reads (`zonekit device presets` gives each figure's provenance)",
        capacity_bytes: 960_000_000_000,
        spare: 0.07,
        erase_block_bytes: 3 * MIB,
        ru_erase_blocks: 32,
        reclaim_groups: 1,
        handles: None,
        flash_of: "sn540",
    },
];

/// Names a preset went by before, and the preset they name now.
const ALIASES: &[(&str, &str)] = &[("fdp-pm9d3a", "fdp-pm9d3")];

pub fn find(name: &str) -> Option<&'static SsdPreset> {
    let name = ALIASES.iter().find(|a| a.0 == name).map_or(name, |a| a.1);
    PRESETS.iter().find(|p| p.name == name)
}

pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

impl SsdPreset {
    /// The drive at its own capacity.
    pub fn config(&self) -> SsdConfig {
        self.config_for(self.capacity_bytes / BLOCK_BYTES as u64)
    }

    /// The drive's shape with `logical_blocks` of logical space.
    pub fn config_for(&self, logical_blocks: u64) -> SsdConfig {
        let mut c = SsdConfig::conventional(logical_blocks, self.spare, self.erase_block_bytes / BLOCK_BYTES as u64);
        c.ru_erase_blocks = self.ru_erase_blocks;
        c.reclaim_groups = self.reclaim_groups;
        if let Some((n, t)) = self.handles {
            c.handles = vec![t; n as usize];
        }
        c
    }

    /// The drive's shape at `logical_blocks` (a model the machine can hold): spare, erase
    /// block, reclaim groups and handles as the drive's, the reclaim unit shrunk by the same
    /// factor as the capacity, in whole erase blocks (at least one). Keeping a 6 GiB reclaim
    /// unit on a 1 GiB model would leave it a handful of units, too few for its handles'
    /// write points and the GC's reserve.
    pub fn scaled(&self, logical_blocks: u64) -> SsdConfig {
        let mut c = self.config_for(logical_blocks);
        let full = self.capacity_bytes / BLOCK_BYTES as u64;
        if logical_blocks < full {
            let scale = logical_blocks as f64 / full as f64;
            c.ru_erase_blocks = ((self.ru_erase_blocks as f64 * scale).round() as u64).max(1);
        }
        c
    }

    pub fn flash(&self) -> FlashConfig {
        zonekit_device::preset::find_flash(self.flash_of).expect("a preset names a flash timing that exists")
    }

    /// Bytes of one reclaim unit.
    pub fn ru_bytes(&self) -> u64 {
        self.erase_block_bytes * self.ru_erase_blocks
    }
}

/// Bytes in `gib` GiB, for the docs' tables.
pub const fn gib(gib: u64) -> u64 {
    gib * GIB
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_a_valid_device_at_its_own_capacity() {
        for p in PRESETS {
            let c = p.config();
            c.validate().unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert!(p.source.contains("assumed") || !p.source.is_empty());
            assert_eq!(c.is_fdp(), p.handles.is_some(), "{}", p.name);
            p.flash().validate().unwrap();
        }
        assert_eq!(find("fdp-pm9d3").unwrap().ru_bytes(), gib(6));
        // Its old name still finds it (issue 48 renamed it to the drive the paper names).
        assert_eq!(find("fdp-pm9d3a").unwrap().name, "fdp-pm9d3");
        let pm = find("fdp-pm9d3").unwrap();
        for figure in ["capacity", "reclaim group", "handle type", "reclaim unit", "spare", "flash timing"] {
            assert!(pm.source.contains(figure), "fdp-pm9d3's source says nothing of its {figure}");
        }
    }

    #[test]
    fn every_preset_scaled_to_a_gib_is_a_valid_device_of_its_shape() {
        for p in PRESETS {
            let c = p.scaled(gib(1) / BLOCK_BYTES as u64);
            c.validate().unwrap_or_else(|e| panic!("{} at 1 GiB: {e}", p.name));
            assert_eq!((c.spare, c.reclaim_groups, c.handles.len()), (p.spare, p.reclaim_groups, p.handles.map_or(0, |h| h.0 as usize)));
            assert_eq!(c.erase_block_blocks * BLOCK_BYTES as u64, p.erase_block_bytes);
            assert!(c.ru_erase_blocks >= 1 && c.ru_erase_blocks <= p.ru_erase_blocks);
            // At its own capacity the shape is the drive's.
            assert_eq!(p.scaled(p.capacity_bytes / BLOCK_BYTES as u64).ru_erase_blocks, p.ru_erase_blocks);
        }
    }
}

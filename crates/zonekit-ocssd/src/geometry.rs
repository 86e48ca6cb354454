//! The open-channel geometry, the thesis' physical address layout (§3.1.2, Fig. 3.2) and the
//! superblock layout (§3.2.3.2, table 3.6).
//!
//! A flash block is one zone of the device, pinned to one parallel unit (PU, a LUN on a
//! channel). Zone ids are laid out so that consecutive zones rotate over PUs and PUs rotate
//! over channels first: `zone = block × PUs + PU`, `PU = LUN × channels + channel`. That is
//! the timing model's own die numbering for one-die zones, which [`crate::Flash`] checks
//! against the device it is given.

use serde::Serialize;
use zonekit_device::preset::Preset;
use zonekit_device::timing::FlashConfig;
use zonekit_device::{Geometry, ZoneBehavior};

use crate::{OcError, Result};

/// The host interface's sector: every page is a whole number of them.
pub const SECTOR_BYTES: u32 = 4096;
/// Limits [`OcGeometry::validate`] holds a geometry to (the maps and wear counters are per
/// page and per block, in memory: they stay within a few hundred MiB).
pub const MAX_PAGE_BYTES: u32 = 1 << 20;
pub const MAX_PUS: u64 = 1 << 16;
pub const MAX_BLOCKS: u64 = 1 << 22;
pub const MAX_PAGES: u64 = 1 << 26;

/// Channels × LUNs × blocks × pages of an open-channel SSD.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct OcGeometry {
    pub channels: u32,
    pub luns_per_channel: u32,
    pub blocks_per_lun: u32,
    pub pages_per_block: u32,
    /// The mapping unit: a (multi-plane) flash page.
    pub page_bytes: u32,
}

/// A decoded physical address.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PhysAddr {
    pub channel: u32,
    pub lun: u32,
    pub block: u32,
    pub page: u32,
    pub offset: u32,
}

impl OcGeometry {
    /// Table 4.1: 8 channels × 4 LUNs × 16 blocks × 32 pages of 32 KiB (512 MiB).
    pub const THESIS: OcGeometry = OcGeometry { channels: 8, luns_per_channel: 4, blocks_per_lun: 16, pages_per_block: 32, page_bytes: 32 * 1024 };

    /// The geometry of a preset whose zones are one flash block on one die.
    pub fn from_preset(preset: &Preset) -> Result<OcGeometry> {
        let f = &preset.flash;
        let g = &preset.geometry;
        if f.dies_per_zone != 1 {
            return Err(OcError::Geometry(format!(
                "preset {} stripes a zone over {} dies; an open-channel FTL needs zones pinned to one parallel unit",
                preset.name, f.dies_per_zone
            )));
        }
        let pus = f.die_count();
        if g.zone_count % pus != 0 || g.zone_size_bytes() != f.page_size_bytes as u64 * f.pages_per_block as u64 {
            return Err(OcError::Geometry(format!("preset {}: zones are not one flash block on each of {pus} parallel units", preset.name)));
        }
        let geometry = OcGeometry {
            channels: f.channels,
            luns_per_channel: f.dies_per_channel,
            blocks_per_lun: g.zone_count / pus,
            pages_per_block: f.pages_per_block,
            page_bytes: f.page_size_bytes,
        };
        geometry.validate()?;
        Ok(geometry)
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(OcError::Geometry(m));
        if self.channels == 0 || self.luns_per_channel == 0 || self.blocks_per_lun == 0 || self.pages_per_block == 0 {
            return bad(format!("{self}: every dimension must be at least 1"));
        }
        if self.page_bytes == 0 || self.page_bytes % SECTOR_BYTES != 0 {
            return bad(format!("page of {} bytes: must be a positive multiple of {SECTOR_BYTES}", self.page_bytes));
        }
        if self.page_bytes > MAX_PAGE_BYTES {
            return bad(format!("page of {} bytes: at most {MAX_PAGE_BYTES} (1 MiB)", self.page_bytes));
        }
        if self.pages_per_block > u16::MAX as u32 {
            return bad(format!("{} pages per block: at most {}", self.pages_per_block, u16::MAX));
        }
        // The maps and wear counters are per page and per block, in memory: keep them to a
        // few hundred MiB. Products in u64 so no dimension can wrap.
        let pus = self.channels as u64 * self.luns_per_channel as u64;
        let blocks = pus * self.blocks_per_lun as u64;
        let pages = blocks * self.pages_per_block as u64;
        if pus > MAX_PUS || blocks > MAX_BLOCKS || pages > MAX_PAGES {
            return bad(format!(
                "{} ch × {} LUN × {} blocks × {} pages: at most {MAX_PUS} parallel units, {MAX_BLOCKS} blocks and {MAX_PAGES} pages",
                self.channels, self.luns_per_channel, self.blocks_per_lun, self.pages_per_block
            ));
        }
        Ok(())
    }

    pub fn pus(&self) -> u32 {
        self.channels * self.luns_per_channel
    }

    pub fn blocks(&self) -> u32 {
        self.pus() * self.blocks_per_lun
    }

    pub fn pages(&self) -> u64 {
        self.blocks() as u64 * self.pages_per_block as u64
    }

    pub fn block_bytes(&self) -> u64 {
        self.page_bytes as u64 * self.pages_per_block as u64
    }

    pub fn capacity_bytes(&self) -> u64 {
        self.pages() * self.page_bytes as u64
    }

    /// The block id (= zone id) of block `block` on parallel unit `pu`.
    pub fn block_id(&self, pu: u32, block: u32) -> u32 {
        block * self.pus() + pu
    }

    pub fn pu_of(&self, block_id: u32) -> u32 {
        block_id % self.pus()
    }

    /// The block's index within its LUN.
    pub fn block_in_lun(&self, block_id: u32) -> u32 {
        block_id / self.pus()
    }

    /// The zoned device this flash is exposed as: one zone per block.
    pub fn zoned(&self) -> Geometry {
        let zone_blocks = self.block_bytes() / SECTOR_BYTES as u64;
        Geometry {
            block_size_bytes: SECTOR_BYTES,
            zone_size_blocks: zone_blocks,
            zone_capacity_blocks: zone_blocks,
            zone_count: self.blocks(),
            conventional_zone_count: 0,
            open_zones_max: None,
            active_zones_max: None,
        }
    }

    /// The timing model for this geometry, with the cell latencies and channel rate of `timing`.
    pub fn flash_config(&self, timing: &FlashConfig) -> FlashConfig {
        FlashConfig {
            channels: self.channels,
            dies_per_channel: self.luns_per_channel,
            page_size_bytes: self.page_bytes,
            pages_per_block: self.pages_per_block,
            dies_per_zone: 1,
            ..*timing
        }
    }

    pub fn behavior(&self) -> ZoneBehavior {
        ZoneBehavior::QEMU_NVME
    }

    /// Fig. 3.2: a physical address from low to high digits is offset, channel, LUN, page,
    /// block, so consecutive pages rotate over channels, then LUNs. The thesis packs bit
    /// fields; we use the same digit order in mixed radix so counts need not be powers of two.
    pub fn encode(&self, a: PhysAddr) -> u64 {
        let page_number = ((a.block as u64 * self.pages_per_block as u64 + a.page as u64) * self.luns_per_channel as u64 + a.lun as u64) * self.channels as u64 + a.channel as u64;
        page_number * self.page_bytes as u64 + a.offset as u64
    }

    pub fn decode(&self, address: u64) -> PhysAddr {
        let offset = (address % self.page_bytes as u64) as u32;
        let mut n = address / self.page_bytes as u64;
        let channel = (n % self.channels as u64) as u32;
        n /= self.channels as u64;
        let lun = (n % self.luns_per_channel as u64) as u32;
        n /= self.luns_per_channel as u64;
        let page = (n % self.pages_per_block as u64) as u32;
        let block = (n / self.pages_per_block as u64) as u32;
        PhysAddr { channel, lun, block, page, offset }
    }

    /// The (block id, page) of physical page number `ppn` in the thesis' order (the page
    /// number is the address without its offset).
    pub fn locate_ppn(&self, ppn: u64) -> (u32, u32) {
        let a = self.decode(ppn * self.page_bytes as u64);
        (self.block_id(a.lun * self.channels + a.channel, a.block), a.page)
    }
}

impl std::fmt::Display for OcGeometry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ch × {} LUN × {} blocks × {} pages of {} KiB", self.channels, self.luns_per_channel, self.blocks_per_lun, self.pages_per_block, self.page_bytes / 1024)
    }
}

/// Superblocks of PN parallel units × BN blocks (§3.2.3.2).
///
/// Within a superblock, addresses from low to high digits are offset, inner PU, page, inner
/// block, so consecutive pages still rotate over the superblock's PUs. Superblock `outer_pu ×
/// (blocks per LUN / BN) + outer_blk` is made of PUs `outer_pu × PN + inner_pu` and blocks
/// `outer_blk × BN + inner_blk`. Table 3.6 prints `inner + outer × (C·L / PN)` and `inner +
/// outer × (B / BN)`, which for its own default PN = BN = 1 would put every superblock on PU 0
/// and run past the last block; we read them as the strides PN and BN, the only ones that
/// tile the device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SuperLayout {
    pub pn: u32,
    pub bn: u32,
    geometry: OcGeometry,
}

impl SuperLayout {
    pub fn new(geometry: OcGeometry, pn: u32, bn: u32) -> Result<SuperLayout> {
        geometry.validate()?;
        let pus = geometry.pus();
        if pn == 0 || bn == 0 {
            return Err(OcError::Geometry(format!("superblock of {pn} PUs × {bn} blocks: both must be at least 1")));
        }
        if pn > pus || pus % pn != 0 {
            return Err(OcError::Geometry(format!("superblock of {pn} parallel units: must divide the device's {pus} PUs")));
        }
        if bn > geometry.blocks_per_lun || geometry.blocks_per_lun % bn != 0 {
            return Err(OcError::Geometry(format!("superblock of {bn} blocks per PU: must divide the device's {} blocks per LUN", geometry.blocks_per_lun)));
        }
        if pus / pn * (geometry.blocks_per_lun / bn) < 2 {
            return Err(OcError::Geometry(format!("superblock of {pn} PUs × {bn} blocks leaves fewer than two superblocks on {geometry}")));
        }
        Ok(SuperLayout { pn, bn, geometry })
    }

    pub fn geometry(&self) -> &OcGeometry {
        &self.geometry
    }

    /// Superblocks per super-PU (a group of PN PUs).
    pub fn per_group(&self) -> u32 {
        self.geometry.blocks_per_lun / self.bn
    }

    pub fn groups(&self) -> u32 {
        self.geometry.pus() / self.pn
    }

    pub fn count(&self) -> u32 {
        self.groups() * self.per_group()
    }

    pub fn group_of(&self, superblock: u32) -> u32 {
        superblock / self.per_group()
    }

    pub fn pages(&self) -> u32 {
        self.pn * self.bn * self.geometry.pages_per_block
    }

    pub fn blocks_per_superblock(&self) -> u32 {
        self.pn * self.bn
    }

    /// The (block id, page) holding page `s` of `superblock`.
    pub fn locate(&self, superblock: u32, s: u32) -> (u32, u32) {
        let ppb = self.geometry.pages_per_block;
        let (outer_pu, outer_blk) = (superblock / self.per_group(), superblock % self.per_group());
        let inner_pu = s % self.pn;
        let page = (s / self.pn) % ppb;
        let inner_blk = s / (self.pn * ppb);
        (self.geometry.block_id(outer_pu * self.pn + inner_pu, outer_blk * self.bn + inner_blk), page)
    }

    /// The blocks of `superblock`, in inner-block-major order.
    pub fn blocks_of(&self, superblock: u32) -> impl Iterator<Item = u32> + '_ {
        (0..self.bn).flat_map(move |b| (0..self.pn).map(move |p| self.locate(superblock, b * self.pn * self.geometry.pages_per_block + p).0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thesis_address_layout_rotates_channels_then_luns() {
        let g = OcGeometry::THESIS;
        let page = g.page_bytes as u64;
        assert_eq!(g.decode(0), PhysAddr { channel: 0, lun: 0, block: 0, page: 0, offset: 0 });
        assert_eq!(g.decode(page + 5), PhysAddr { channel: 1, lun: 0, block: 0, page: 0, offset: 5 });
        assert_eq!(g.decode(8 * page), PhysAddr { channel: 0, lun: 1, block: 0, page: 0, offset: 0 });
        assert_eq!(g.decode(32 * page), PhysAddr { channel: 0, lun: 0, block: 0, page: 1, offset: 0 });
        assert_eq!(g.decode(32 * 32 * page), PhysAddr { channel: 0, lun: 0, block: 1, page: 0, offset: 0 });
        for address in [0, 12345, 7 * page + 99, g.capacity_bytes() - 1] {
            assert_eq!(g.encode(g.decode(address)), address);
        }
        // Page 1 of the channel-1 LUN-2 block 3.
        assert_eq!(g.locate_ppn(((3 * 32 + 1) * 4 + 2) * 8 + 1), (g.block_id(2 * 8 + 1, 3), 1));
    }

    #[test]
    fn superblocks_tile_the_device_once() {
        let g = OcGeometry::THESIS;
        for (pn, bn) in [(1, 1), (2, 1), (1, 4), (4, 2), (32, 8)] {
            let layout = SuperLayout::new(g, pn, bn).unwrap();
            let mut seen = vec![0u32; g.pages() as usize];
            for sb in 0..layout.count() {
                for s in 0..layout.pages() {
                    let (block, page) = layout.locate(sb, s);
                    seen[(block * g.pages_per_block + page) as usize] += 1;
                }
                assert_eq!(layout.blocks_of(sb).count() as u32, pn * bn);
            }
            assert!(seen.iter().all(|&n| n == 1), "PN {pn} BN {bn}");
            // Consecutive pages of a superblock go to different PUs, each block in page order.
            let (b0, p0) = layout.locate(1, 0);
            let (b1, _) = layout.locate(1, 1);
            assert_eq!(p0, 0);
            if pn > 1 {
                assert_ne!(g.pu_of(b0), g.pu_of(b1));
            }
        }
    }

    #[test]
    fn superblocks_that_do_not_divide_are_refused() {
        let g = OcGeometry::THESIS;
        let msg = |pn, bn| SuperLayout::new(g, pn, bn).unwrap_err().to_string();
        assert!(msg(3, 1).contains("must divide the device's 32 PUs"), "{}", msg(3, 1));
        assert!(msg(64, 1).contains("32 PUs"));
        assert!(msg(1, 32).contains("16 blocks per LUN"));
        assert!(msg(32, 16).contains("fewer than two superblocks"));
        assert!(msg(0, 1).contains("at least 1"));
    }

    #[test]
    fn the_preset_is_the_thesis_device() {
        let preset = zonekit_device::preset::find("ocssd-thesis").unwrap();
        assert_eq!(OcGeometry::from_preset(&preset).unwrap(), OcGeometry::THESIS);
        let striped = zonekit_device::preset::find("tiny").unwrap();
        assert!(OcGeometry::from_preset(&striped).unwrap_err().to_string().contains("pinned to one parallel unit"));
    }
}

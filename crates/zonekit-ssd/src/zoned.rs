//! A zoned device over a random-write SSD: what lets an engine written for ZNS (the file
//! system for RocksDB) run unchanged on an FDP or conventional SSD.
//!
//! The SSD's logical space is cut into fixed-size zones. The zone state machine, write pointers
//! and open/active limits are the emulator's ([`zonekit_device::Emulator`]), so every ZNS rule
//! holds as on a ZNS device (a write off the write pointer is [`DeviceError::InvalidWrite`],
//! one past the capacity [`DeviceError::Boundary`], ...: the conformance suite passes); only
//! the data lives on the SSD model ([`SsdMedia`]). So:
//!
//! - a zone's writes are SSD writes at the zone's LBAs, carrying the zone's placement handle;
//! - a zone reset trims the zone's whole range, so device GC sees its blocks dead at once
//!   rather than when the zone is next written;
//! - [`ZonedDevice::hint_zone`] picks a zone's handle: a write-lifetime hint (0 ..=
//!   [`LIFETIME_HINT_MAX`]) folds onto the H handles with [`crate::fold_classes`] — lifetime c
//!   uses handle c when H ≥ 6, else handle ⌊c × H / 6⌋ (H = 2: lifetimes 0–2 → 0, 3–5 → 1;
//!   H = 4: 0,0,1,2,2,3). The hint holds until the zone's reset. A zone never hinted (the
//!   metadata zones of the file system, say) names no placement and goes where the device
//!   puts such writes (handle 0). A conventional SSD takes no hint: every write names none;
//! - [`ZonedDevice::flash_writes`] reports the SSD's host and media bytes (device WAF).
//!
//! Zone records are kept in memory only (a fresh device, like `MemDevice`); the SSD's mapping
//! is persistent, as the model's is. [`same_raw_capacity`] sizes the SSD that stands in for a
//! ZNS device.
//!
//! ```
//! use zonekit_device::{preset, ZonedDevice, ZoneId};
//! use zonekit_ssd::{zoned, Interface, RuhType};
//!
//! let zns = preset::find("tiny").unwrap().geometry;
//! let fdp = Interface::Fdp { handles: 4, ruh_type: RuhType::InitiallyIsolated };
//! let mut dev = zoned::for_zns(&zns, fdp, zoned::SPARE_DEFAULT, false).unwrap();
//! dev.hint_zone(ZoneId(3), 5); // extreme lifetime: the last handle
//! dev.append(ZoneId(3), &vec![1u8; 4096]).unwrap();
//! assert_eq!(dev.media().ssd().counters().host_blocks_by_handle, [0, 0, 0, 1]);
//! assert_eq!(dev.flash_writes().unwrap().waf(), 1.0);
//! ```

use std::io;

use zonekit_device::emu::{Media, ZoneRecord};
use zonekit_device::{DeviceError, Emulator, FlashWrites, Geometry, ZoneBehavior, LIFETIME_HINT_MAX};

use crate::{fold_classes, BlockDevice, Interface, Pid, Ssd, SsdConfig, SsdError};

#[cfg(doc)]
use zonekit_device::ZonedDevice;

/// A zoned device whose data lives on an SSD model.
pub type ZonedSsd = Emulator<SsdMedia>;

/// Reclaim units of the SSD per zone of the ZNS device it stands in for. Assumed: a drive's
/// reclaim unit is a superblock, and a zone of one reclaim unit left a device of tens of zones
/// too few units for eight handles' open units and the GC's reserve (the `tiny` preset at 7 %
/// spare: 59 data units + 9 open + 2 reserved > 64).
pub const RUS_PER_ZONE: u64 = 4;

/// The over-provisioning [`for_zns`] aims at when the caller names none: a read-intensive
/// datacenter drive's 7 % (the `dc-7` and `fdp-pm9d3` presets).
pub const SPARE_DEFAULT: f64 = 0.07;

/// The medium: an SSD model and, per zone, the placement its writes carry.
pub struct SsdMedia {
    ssd: Ssd,
    zone_size_blocks: u64,
    /// Write-lifetime hint → placement handle (empty on a conventional SSD).
    lifetime_handles: Vec<u16>,
    /// Per zone: the placement its writes carry, from its hint until its reset.
    zone_pid: Vec<Option<Pid>>,
}

impl SsdMedia {
    pub fn ssd(&self) -> &Ssd {
        &self.ssd
    }

    /// The handle each write-lifetime hint 0 ..= [`LIFETIME_HINT_MAX`] picks (empty: the SSD
    /// takes no placement).
    pub fn lifetime_handles(&self) -> &[u16] {
        &self.lifetime_handles
    }

    /// The handle zone `zone`'s writes carry now (`None`: no hint since its last reset, or a
    /// conventional SSD).
    pub fn zone_handle(&self, zone: u32) -> Option<u16> {
        self.zone_pid.get(zone as usize).copied().flatten().map(|p| p.handle)
    }

    fn lba(&self, zone: u32, offset_bytes: u64) -> u64 {
        zone as u64 * self.zone_size_blocks + offset_bytes / self.ssd.block_bytes()
    }
}

/// The SSD's error as a device error: the emulator validated the transfer, so what is left is
/// the model's own trouble (no space for its GC, a power loss), which no ZNS status names.
fn device_error(e: SsdError) -> DeviceError {
    DeviceError::Io { context: "the SSD beneath the zones".into(), error: io::Error::other(e) }
}

impl Media for SsdMedia {
    fn write(&mut self, zone: u32, offset_bytes: u64, data: &[u8]) -> zonekit_device::Result<()> {
        let (lba, pid) = (self.lba(zone, offset_bytes), self.zone_pid[zone as usize]);
        self.ssd.write(lba, pid, data).map_err(device_error)
    }

    fn read(&mut self, zone: u32, offset_bytes: u64, buf: &mut [u8]) -> zonekit_device::Result<()> {
        let lba = self.lba(zone, offset_bytes);
        self.ssd.read(lba, buf).map_err(device_error)
    }

    /// A reset zone's blocks are trimmed: device GC never copies them again.
    fn discard(&mut self, zone: u32) -> zonekit_device::Result<()> {
        self.zone_pid[zone as usize] = None;
        let lba = self.lba(zone, 0);
        self.ssd.trim(lba, self.zone_size_blocks).map_err(device_error)
    }

    /// Nothing to do: every SSD command that returned is durable (the model's mapping is
    /// persistent, as with power-loss protection).
    fn sync_data(&mut self) -> zonekit_device::Result<()> {
        Ok(())
    }

    /// Zone records stay in memory (the device is fresh at every open, as `MemDevice` is).
    fn persist(&mut self, _records: &[(u32, ZoneRecord)]) -> zonekit_device::Result<()> {
        Ok(())
    }

    fn hint_zone(&mut self, zone: u32, lifetime: u8) {
        if let Some(&handle) = self.lifetime_handles.get(lifetime.min(LIFETIME_HINT_MAX) as usize) {
            self.zone_pid[zone as usize] = Some(Pid { group: 0, handle });
        }
    }

    fn flash_writes(&self) -> Option<FlashWrites> {
        let (c, bs) = (self.ssd.counters(), self.ssd.block_bytes());
        Some(FlashWrites { host_bytes: c.host_blocks * bs, media_bytes: c.media_blocks() * bs })
    }
}

/// A zoned device of zones of `zone_size_blocks` (size = capacity) over `ssd`'s logical space
/// (whole zones; a remainder is left unused), with the zone limits given, QEMU's zone
/// behaviour (unwritten blocks read as zeros, which the trim on reset relies on) and one
/// reclaim group's handles.
pub fn over(ssd: Ssd, zone_size_blocks: u64, open_zones_max: Option<u32>, active_zones_max: Option<u32>) -> Result<ZonedSsd, SsdError> {
    let bad = |m: String| SsdError::Config(format!("zones over an SSD: {m}"));
    if ssd.config().reclaim_groups != 1 {
        return Err(bad(format!("{} reclaim groups; the zone adapter places data in group 0 and needs exactly one", ssd.config().reclaim_groups)));
    }
    let logical = ssd.logical_blocks();
    let zone_count = logical.checked_div(zone_size_blocks).unwrap_or(0);
    let zone_count = u32::try_from(zone_count).map_err(|_| bad(format!("{zone_count} zones: too many")))?;
    let geometry = Geometry {
        block_size_bytes: ssd.block_size_bytes(),
        zone_size_blocks,
        zone_capacity_blocks: zone_size_blocks,
        zone_count,
        conventional_zone_count: 0,
        open_zones_max,
        active_zones_max,
    };
    geometry.validate().map_err(|e| bad(format!("{zone_count} zones of {zone_size_blocks} blocks in {logical} logical blocks: {e}")))?;
    let lifetime_handles = fold_classes(LIFETIME_HINT_MAX as usize + 1, ssd.placement_handles() as usize);
    let media = SsdMedia { ssd, zone_size_blocks, lifetime_handles, zone_pid: vec![None; zone_count as usize] };
    Emulator::with_media(geometry, ZoneBehavior::QEMU_NVME, media).map_err(|e| bad(e.to_string()))
}

/// The SSD that stands in for a ZNS device of geometry `zns` on `interface` (FDP or
/// conventional) at the same raw capacity: the ZNS device's zone capacity × zone count of
/// flash in reclaim units of a [`RUS_PER_ZONE`]th of a zone, one reclaim group, greedy device
/// GC. Its logical space is as many of the ZNS device's zones as fit in the raw capacity with
/// at least `spare` over-provisioning; the spare is then exactly what is left (the
/// configuration's `spare`), so the flash is the ZNS device's to the block. `store_data` keeps
/// the blocks' bytes.
pub fn same_raw_capacity(zns: &Geometry, interface: Interface, spare: f64, store_data: bool) -> Result<SsdConfig, SsdError> {
    let bad = |m: String| Err(SsdError::Config(format!("an SSD in place of a {} × {}-block zoned device: {m}", zns.zone_count, zns.zone_capacity_blocks)));
    if interface == Interface::Zns {
        return bad("the interface is zns; name fdp:N or conventional".into());
    }
    if !(spare > 0.0 && spare < 1.0) {
        return bad(format!("spare {spare}: over-provisioning must be in (0, 1)"));
    }
    let zone_blocks = zns.zone_capacity_blocks;
    if zns.block_size_bytes != crate::config::BLOCK_BYTES || zone_blocks % RUS_PER_ZONE != 0 {
        return bad(format!("zones of {zone_blocks} blocks of {} bytes; the SSD model takes 4 KiB blocks and zones of a multiple of {RUS_PER_ZONE} blocks", zns.block_size_bytes));
    }
    let raw_blocks = zone_blocks * zns.zone_count as u64;
    let zones = (raw_blocks as f64 / (1.0 + spare) / zone_blocks as f64).floor() as u64;
    if zones == 0 {
        return bad(format!("spare {spare} leaves no zone of logical space"));
    }
    let logical_blocks = zones * zone_blocks;
    // The spare the whole zones leave, a hair under so that the model's rounding up of
    // logical × (1 + spare) to whole reclaim units lands on the raw capacity, not one unit over.
    let exact_spare = (raw_blocks - logical_blocks) as f64 / logical_blocks as f64 - 1e-9;
    let mut cfg = SsdConfig::conventional(logical_blocks, exact_spare, zone_blocks / RUS_PER_ZONE);
    if let Interface::Fdp { handles, ruh_type } = interface {
        cfg.handles = vec![ruh_type; handles as usize];
    }
    cfg.store_data = store_data;
    assert_eq!(cfg.physical_blocks(), raw_blocks, "the SSD's flash must be the ZNS device's");
    cfg.validate()?;
    Ok(cfg)
}

/// [`same_raw_capacity`]'s SSD behind zones of the ZNS device's zone capacity, with its open
/// and active limits (the engine above then runs exactly as on the ZNS device, on fewer zones).
pub fn for_zns(zns: &Geometry, interface: Interface, spare: f64, store_data: bool) -> Result<ZonedSsd, SsdError> {
    let ssd = Ssd::new(same_raw_capacity(zns, interface, spare, store_data)?)?;
    over(ssd, zns.zone_capacity_blocks, zns.open_zones_max, zns.active_zones_max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuhType;
    use zonekit_device::{preset, Lba, ZoneId, ZonedDevice};

    fn fdp(handles: u16) -> Interface {
        Interface::Fdp { handles, ruh_type: RuhType::InitiallyIsolated }
    }

    fn tiny() -> Geometry {
        preset::find("tiny").unwrap().geometry
    }

    #[test]
    fn the_adapter_passes_the_zns_conformance_suite() {
        for interface in [fdp(4), Interface::Conventional] {
            let mut dev = for_zns(&tiny(), interface, SPARE_DEFAULT, true).unwrap();
            let report = zonekit_device::conformance::run(&mut dev, None);
            assert_eq!(report.failed(), 0, "{interface}: {:?}", report.failures());
            assert!(report.passed() > 10, "{interface}: {:?}", report.results);
        }
    }

    #[test]
    fn write_pointer_violations_are_refused_as_on_zns_and_reach_no_flash() {
        let mut dev = for_zns(&tiny(), fdp(2), SPARE_DEFAULT, true).unwrap();
        let zb = dev.geometry().zone_size_blocks;
        let block = vec![9u8; 4096];
        dev.write(Lba(zb), &block).unwrap();
        let e = dev.write(Lba(zb + 5), &block).unwrap_err();
        assert!(matches!(e, DeviceError::InvalidWrite { write_pointer: Lba(wp), .. } if wp == zb + 1), "{e}");
        let e = dev.write(Lba(zb), &block).unwrap_err();
        assert!(matches!(e, DeviceError::InvalidWrite { .. }), "a rewrite in place is refused: {e}");
        let past = vec![0u8; 4096 * zb as usize];
        assert!(matches!(dev.append(ZoneId(1), &past).unwrap_err(), DeviceError::Boundary { .. }));
        assert_eq!(dev.media().ssd().counters().host_blocks, 1, "refused writes must not reach the SSD");
        let mut back = vec![0u8; 8192];
        dev.read(Lba(zb), &mut back).unwrap();
        assert_eq!((&back[..4096], &back[4096..]), (&block[..], &[0u8; 4096][..]));
    }

    #[test]
    fn lifetimes_fold_onto_handles_and_a_reset_drops_the_hint() {
        let expected: [(u16, [u16; 6]); 5] = [(1, [0; 6]), (2, [0, 0, 0, 1, 1, 1]), (4, [0, 0, 1, 2, 2, 3]), (6, [0, 1, 2, 3, 4, 5]), (8, [0, 1, 2, 3, 4, 5])];
        for (handles, table) in expected {
            let mut dev = for_zns(&tiny(), fdp(handles), SPARE_DEFAULT, false).unwrap();
            assert_eq!(dev.media().lifetime_handles(), table, "{handles} handles");
            for lifetime in 0..=LIFETIME_HINT_MAX {
                let zone = ZoneId(lifetime as u32);
                dev.hint_zone(zone, lifetime);
                dev.append(zone, &[0u8; 4096]).unwrap();
            }
            // Each lifetime's block went through its handle.
            let mut by_handle = vec![0u64; handles as usize];
            for h in table {
                by_handle[h as usize] += 1;
            }
            assert_eq!(dev.media().ssd().counters().host_blocks_by_handle, by_handle, "{handles} handles");
            dev.reset_zone(ZoneId(5)).unwrap();
            assert_eq!(dev.media().zone_handle(5), None);
            assert_eq!(dev.media().zone_handle(4), Some(table[4]));
        }
        // A conventional SSD takes no hint: a hinted zone's writes name no placement (which
        // the model would refuse).
        let mut dev = for_zns(&tiny(), Interface::Conventional, SPARE_DEFAULT, false).unwrap();
        dev.hint_zone(ZoneId(0), 5);
        assert_eq!(dev.media().zone_handle(0), None);
        dev.append(ZoneId(0), &[0u8; 4096]).unwrap();
    }

    #[test]
    fn a_reset_trims_the_zone_so_whole_zone_rewrites_cost_no_device_gc() {
        for interface in [fdp(2), Interface::Conventional] {
            let mut dev = for_zns(&tiny(), interface, SPARE_DEFAULT, false).unwrap();
            let g = *dev.geometry();
            let zone_bytes = (g.zone_size_blocks * 4096) as usize;
            let data = vec![0u8; zone_bytes];
            // Five times the flash, zone by zone, two lifetimes, each zone reset before its
            // rewrite (what a file system with host GC does to the device).
            let rounds = 5 * (g.zone_count as usize + 8);
            let mut trimmed_expected = 0;
            for i in 0..rounds {
                let z = ZoneId((i % g.zone_count as usize) as u32);
                if dev.zone(z).unwrap().write_pointer != g.zone_start(z) {
                    dev.reset_zone(z).unwrap();
                    trimmed_expected += g.zone_size_blocks;
                }
                dev.hint_zone(z, if z.0 % 2 == 0 { 2 } else { 5 });
                dev.append(z, &data).unwrap();
            }
            let c = dev.media().ssd().counters();
            assert_eq!(c.trimmed_blocks, trimmed_expected, "{interface}: every reset trims its zone's blocks");
            assert_eq!(c.gc_blocks, 0, "{interface}: device GC copied dead blocks");
            assert!(c.erases > 0, "{interface}: the test must make device GC run");
            let flash = dev.flash_writes().unwrap();
            assert_eq!((flash.host_bytes, flash.waf()), (rounds as u64 * zone_bytes as u64, 1.0));
        }
    }

    #[test]
    fn the_ssd_has_the_zns_devices_flash_and_bad_shapes_are_refused() {
        let zns = tiny();
        for interface in [fdp(2), fdp(4), fdp(8), Interface::Conventional] {
            let cfg = same_raw_capacity(&zns, interface, SPARE_DEFAULT, false).unwrap();
            assert_eq!(cfg.physical_blocks(), zns.total_blocks());
            assert_eq!(cfg.logical_blocks % zns.zone_size_blocks, 0);
            assert!(cfg.spare >= SPARE_DEFAULT && cfg.spare < SPARE_DEFAULT + 0.1, "{}", cfg.spare);
            assert_eq!(cfg.handles.len() as u16, interface.handles());
        }
        let e = same_raw_capacity(&zns, Interface::Zns, SPARE_DEFAULT, false).unwrap_err().to_string();
        assert!(e.contains("the interface is zns"), "{e}");
        assert!(same_raw_capacity(&zns, fdp(4), 1.5, false).unwrap_err().to_string().contains("spare 1.5"));
        // 128 handles: more open units than the device has spare for.
        let e = same_raw_capacity(&zns, fdp(128), SPARE_DEFAULT, false).unwrap_err().to_string();
        assert!(e.contains("too small for its reclaim units"), "{e}");
    }
}

//! What an SSD model is made of: its logical space, spare, erase and reclaim units, reclaim
//! groups and reclaim-unit handles, and the device GC's victim rule. [`SsdConfig::validate`]
//! refuses, by name, every setting the model cannot run.

use serde::{Deserialize, Serialize};
use zonekit_device::timing::FlashConfig;

use crate::SsdError;

/// A reclaim-unit handle's isolation (NVMe TP4146, the RUH Type of the FDP configuration).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuhType {
    /// RUHT 1h: data written through this handle is kept apart from other handles' data when
    /// it is written, but device GC may move it into reclaim units shared with other
    /// initially isolated handles.
    InitiallyIsolated,
    /// RUHT 2h: data written through this handle stays in reclaim units of its own, device GC
    /// included.
    PersistentlyIsolated,
}

impl RuhType {
    /// The RUH Type field's value.
    pub fn code(self) -> u8 {
        match self {
            RuhType::InitiallyIsolated => 1,
            RuhType::PersistentlyIsolated => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            RuhType::InitiallyIsolated => "initially-isolated",
            RuhType::PersistentlyIsolated => "persistently-isolated",
        }
    }

    pub fn from_name(name: &str) -> Option<RuhType> {
        [RuhType::InitiallyIsolated, RuhType::PersistentlyIsolated].into_iter().find(|t| t.name() == name)
    }
}

/// Everything that defines an SSD model.
#[derive(Clone, Debug, Serialize)]
pub struct SsdConfig {
    pub block_size_bytes: u32,
    /// Blocks the host can address (LBAs 0 .. logical_blocks).
    pub logical_blocks: u64,
    /// Over-provisioning, as drive makers state it: physical blocks beyond the logical space
    /// per logical block (0.07 for a "7 %" drive, 0.28 for a "28 %" one). In (0, 1).
    pub spare: f64,
    /// Blocks of one erase block.
    pub erase_block_blocks: u64,
    /// Erase blocks of one reclaim unit: the unit device GC reclaims and erases whole (an
    /// erase block, or a superblock of one erase block per die).
    pub ru_erase_blocks: u64,
    /// Reclaim groups: the reclaim units are split evenly between them, and data never moves
    /// from one to another.
    pub reclaim_groups: u16,
    /// The reclaim-unit handles of an FDP SSD, by index (placement handle i is RUH i). Empty:
    /// a conventional SSD, which takes no placement and writes host data to one write point.
    pub handles: Vec<RuhType>,
    /// The device GC's victim rule, by the name `zonekit policies` lists (greedy, cb, ...).
    pub victim: String,
    /// Keep the blocks' bytes (reads return what was written); metadata only otherwise.
    pub store_data: bool,
    /// Charge every flash operation to this timing model (device time, latency percentiles).
    pub flash: Option<FlashConfig>,
    /// Host commands in flight when timed (a closed loop).
    pub queue_depth: usize,
    pub seed: u64,
}

/// Blocks of 4 KiB, the block size every preset uses.
pub const BLOCK_BYTES: u32 = 4096;

impl SsdConfig {
    /// A conventional SSD of `logical_blocks` 4 KiB blocks with `spare` over-provisioning and
    /// reclaim units of `ru_blocks` blocks (one erase block each), greedy GC.
    pub fn conventional(logical_blocks: u64, spare: f64, ru_blocks: u64) -> SsdConfig {
        SsdConfig {
            block_size_bytes: BLOCK_BYTES,
            logical_blocks,
            spare,
            erase_block_blocks: ru_blocks,
            ru_erase_blocks: 1,
            reclaim_groups: 1,
            handles: Vec::new(),
            victim: "greedy".into(),
            store_data: false,
            flash: None,
            queue_depth: 32,
            seed: 1,
        }
    }

    /// An FDP SSD as [`SsdConfig::conventional`] with `handles` reclaim-unit handles of one type.
    pub fn fdp(logical_blocks: u64, spare: f64, ru_blocks: u64, handles: u16, ruh_type: RuhType) -> SsdConfig {
        SsdConfig { handles: vec![ruh_type; handles as usize], ..SsdConfig::conventional(logical_blocks, spare, ru_blocks) }
    }

    /// Whether writes may carry a placement identifier.
    pub fn is_fdp(&self) -> bool {
        !self.handles.is_empty()
    }

    /// Blocks of one reclaim unit.
    pub fn ru_blocks(&self) -> u64 {
        self.erase_block_blocks.saturating_mul(self.ru_erase_blocks)
    }

    /// Reclaim units in each reclaim group: the physical space (logical × (1 + spare)) in whole
    /// reclaim units, rounded up to whole groups.
    pub fn units_per_group(&self) -> u64 {
        let physical = (self.logical_blocks as f64 * (1.0 + self.spare)).ceil();
        let units = (physical / self.ru_blocks().max(1) as f64).ceil() as u64;
        units.div_ceil(self.reclaim_groups.max(1) as u64)
    }

    pub fn units(&self) -> u64 {
        self.units_per_group() * self.reclaim_groups as u64
    }

    pub fn physical_blocks(&self) -> u64 {
        self.units() * self.ru_blocks()
    }

    /// Bytes of memory the model holds for this shape (mapping, reverse map, live bits, unit
    /// records, the data when kept), saturating: what a caller checks against the machine
    /// before [`crate::Ssd::new`] allocates it.
    pub fn memory_bytes(&self) -> u64 {
        let physical = self.physical_blocks();
        let unit_bytes = std::mem::size_of::<zonekit_pool::ZoneInfo>() as u64 + 2;
        let data = if self.store_data { physical.saturating_mul(self.block_size_bytes as u64) } else { 0 };
        self.logical_blocks
            .saturating_mul(4)
            .saturating_add(physical.saturating_mul(4))
            .saturating_add(physical / 8)
            .saturating_add(self.units().saturating_mul(unit_bytes))
            .saturating_add(data)
    }

    /// The most handles of this shape's first handle type (initially isolated for a
    /// conventional shape) that [`SsdConfig::validate`] accepts at this size, up to `limit`: what
    /// a caller names when a handle count does not fit.
    pub fn handles_that_fit(&self, limit: u16) -> u16 {
        let ruh_type = self.handles.first().copied().unwrap_or(RuhType::InitiallyIsolated);
        let fits = |n: u16| SsdConfig { handles: vec![ruh_type; n as usize], ..self.clone() }.validate().is_ok();
        // Fewer handles never need more units: the largest that fits, by bisection.
        if limit == 0 || !fits(1) {
            return 0;
        }
        let (mut lo, mut hi) = (1u16, limit);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// Write points of one reclaim group: a user stream per handle (one for a conventional
    /// SSD), then the GC streams (one shared by the initially isolated handles and the
    /// conventional SSD's data, one per persistently isolated handle).
    pub(crate) fn streams_per_group(&self) -> usize {
        self.user_streams() + self.gc_streams()
    }

    pub(crate) fn user_streams(&self) -> usize {
        self.handles.len().max(1)
    }

    pub(crate) fn gc_streams(&self) -> usize {
        let persistent = self.handles.iter().filter(|t| **t == RuhType::PersistentlyIsolated).count();
        persistent + usize::from(persistent < self.user_streams())
    }

    /// Free reclaim units a group keeps for its GC: a fresh unit for every GC stream, and one
    /// more so that a victim's blocks always have somewhere to go.
    pub(crate) fn gc_reserve_units(&self) -> u64 {
        self.gc_streams() as u64 + 1
    }

    /// Reclaim units of a group that never serve as spare for GC: the free ones it keeps in
    /// reserve and one open unit per write point (half written on average). What a closed form
    /// of GC that assumes every spare block usable misses (`crate::theory`).
    pub fn units_held_back(&self) -> f64 {
        self.gc_reserve_units() as f64 + self.streams_per_group() as f64 / 2.0
    }

    /// Refuses, naming the setting, what the model cannot run.
    pub fn validate(&self) -> Result<(), SsdError> {
        let bad = |m: String| Err(SsdError::Config(m));
        if self.block_size_bytes == 0 || !self.block_size_bytes.is_power_of_two() {
            return bad(format!("block size {} bytes: expected a power of two", self.block_size_bytes));
        }
        if self.logical_blocks == 0 {
            return bad("logical space: the device needs at least one logical block".into());
        }
        if !(self.spare > 0.0 && self.spare < 1.0) {
            return bad(format!("spare {}: over-provisioning must be in (0, 1)", self.spare));
        }
        if self.erase_block_blocks == 0 || self.ru_erase_blocks == 0 {
            return bad(format!("reclaim unit: {} erase blocks of {} blocks; a reclaim unit is one or more whole erase blocks", self.ru_erase_blocks, self.erase_block_blocks));
        }
        if self.erase_block_blocks.checked_mul(self.ru_erase_blocks).is_none_or(|b| b > u32::MAX as u64) {
            return bad(format!("reclaim unit of {} × {} blocks is too large", self.ru_erase_blocks, self.erase_block_blocks));
        }
        if self.reclaim_groups == 0 {
            return bad("reclaim groups: at least one".into());
        }
        if self.handles.len() > u16::MAX as usize {
            return bad(format!("{} reclaim-unit handles: at most {}", self.handles.len(), u16::MAX));
        }
        let rgif = rgif(self.reclaim_groups);
        if self.handles.len() as u64 > handles_max(rgif) as u64 {
            return bad(format!(
                "{} reclaim-unit handles in {} reclaim groups: a placement identifier keeps {} bits for the group, leaving room for {} handles",
                self.handles.len(),
                self.reclaim_groups,
                rgif,
                handles_max(rgif)
            ));
        }
        if self.queue_depth == 0 {
            return bad("queue depth: at least 1".into());
        }
        if zonekit_pool::victim::find(&self.victim).is_err() {
            let names: Vec<&str> = zonekit_pool::victim::VICTIMS.iter().map(|v| v.name).collect();
            return bad(format!("device GC victim {:?}: valid: {}", self.victim, names.join(", ")));
        }
        let physical = self.physical_blocks();
        if physical > u32::MAX as u64 - 1 {
            return bad(format!("{physical} physical blocks: the model maps at most 2^32 - 2"));
        }
        // The logical space in whole units, plus an open unit per write point and the GC's
        // reserve, in every group: below that GC can find itself with nothing to reclaim.
        let per_group_data = (self.logical_blocks.div_ceil(self.ru_blocks())).div_ceil(self.reclaim_groups as u64);
        let needed = per_group_data + self.streams_per_group() as u64 + self.gc_reserve_units();
        if self.units_per_group() < needed {
            return bad(format!(
                "the device is too small for its reclaim units: each of {} reclaim group(s) has {} units of {} blocks, and needs {} ({} for the data, one open per each of {} write points, {} reserved for GC); raise the spare, shrink the reclaim unit or use fewer handles",
                self.reclaim_groups,
                self.units_per_group(),
                self.ru_blocks(),
                needed,
                per_group_data,
                self.streams_per_group(),
                self.gc_reserve_units()
            ));
        }
        if let Some(flash) = &self.flash {
            flash.validate().map_err(|e| SsdError::Config(format!("flash timing: {e}")))?;
        }
        Ok(())
    }
}

/// The Reclaim Group Identifier Format for `groups` reclaim groups: the bits of a placement
/// identifier that name the group. 0 for one group (the PID is the placement handle); else
/// QEMU's rule, the bit length of NRG: 2 for 2 or 3 groups, 3 for 4 to 7. That is one bit more
/// than needed when NRG is a power of two; TP4146 leaves RGIF to the controller (the host
/// decodes PIDs by the value it reports), and following QEMU makes every placement identifier
/// the same number on both (RG 1, PH 3 is 0x4003 on each), so a command sequence captured on
/// QEMU replays on the model unchanged (docs/fdp/README.md, "Our model against QEMU"). It
/// costs the placement handle field one bit: 13 bits with 2 groups, far more handles than a
/// device has.
pub fn rgif(groups: u16) -> u8 {
    if groups <= 1 {
        0
    } else {
        (u16::BITS - groups.leading_zeros()) as u8
    }
}

/// The most placement handles a PID can name under `rgif`: 2^(16 - rgif).
pub fn handles_max(rgif: u8) -> u32 {
    1u32 << (16 - rgif.min(16) as u32)
}

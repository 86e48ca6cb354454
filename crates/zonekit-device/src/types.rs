//! Addresses, zone descriptors and device geometry.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::DeviceError;

/// Logical block address, in units of the device's logical block size.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lba(pub u64);

/// Index of a zone, counted from 0 at LBA 0.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ZoneId(pub u32);

impl fmt::Display for Lba {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Display for ZoneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ZoneType {
    /// Randomly writable; no write pointer, no state machine.
    Conventional,
    /// Sequential-write-required: writes only at the write pointer.
    SequentialWriteRequired,
}

/// Zone state, with the NVMe ZNS state codes (see [`ZoneState::nvme_code`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ZoneState {
    /// Conventional zones have no state machine (Linux `BLK_ZONE_COND_NOT_WP`).
    NotWritePointer,
    Empty,
    ImplicitlyOpened,
    ExplicitlyOpened,
    Closed,
    ReadOnly,
    Full,
    Offline,
}

impl ZoneState {
    pub const ALL: [ZoneState; 8] = [
        ZoneState::NotWritePointer,
        ZoneState::Empty,
        ZoneState::ImplicitlyOpened,
        ZoneState::ExplicitlyOpened,
        ZoneState::Closed,
        ZoneState::ReadOnly,
        ZoneState::Full,
        ZoneState::Offline,
    ];

    /// The NVMe ZNS zone state code (also the Linux `BLK_ZONE_COND_*` value).
    pub fn nvme_code(self) -> u8 {
        match self {
            ZoneState::NotWritePointer => 0x0,
            ZoneState::Empty => 0x1,
            ZoneState::ImplicitlyOpened => 0x2,
            ZoneState::ExplicitlyOpened => 0x3,
            ZoneState::Closed => 0x4,
            ZoneState::ReadOnly => 0xD,
            ZoneState::Full => 0xE,
            ZoneState::Offline => 0xF,
        }
    }

    pub fn from_nvme_code(code: u8) -> Option<ZoneState> {
        ZoneState::ALL.into_iter().find(|s| s.nvme_code() == code)
    }

    /// Implicitly or explicitly opened.
    pub fn is_open(self) -> bool {
        matches!(self, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened)
    }

    /// Open or closed: holds one of the device's active-zone resources.
    pub fn is_active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }

    /// Short lower-case name, as used by the CLI (`empty`, `imp-open`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ZoneState::NotWritePointer => "not-wp",
            ZoneState::Empty => "empty",
            ZoneState::ImplicitlyOpened => "imp-open",
            ZoneState::ExplicitlyOpened => "exp-open",
            ZoneState::Closed => "closed",
            ZoneState::ReadOnly => "read-only",
            ZoneState::Full => "full",
            ZoneState::Offline => "offline",
        }
    }

    pub fn from_name(name: &str) -> Option<ZoneState> {
        ZoneState::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for ZoneState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which zones a report returns (the NVMe Zone Receive "reporting options").
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum ZoneFilter {
    #[default]
    All,
    Only(ZoneState),
}

impl ZoneFilter {
    pub fn matches(self, state: ZoneState) -> bool {
        match self {
            ZoneFilter::All => true,
            ZoneFilter::Only(s) => s == state,
        }
    }
}

/// One zone as Report Zones describes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneDescriptor {
    pub id: ZoneId,
    pub zone_type: ZoneType,
    pub state: ZoneState,
    pub start: Lba,
    /// Writable blocks from `start` (ZCAP). Equals the zone size for conventional zones.
    pub capacity_blocks: u64,
    /// Next LBA a write must target. Meaningful only for sequential zones that are not Full,
    /// Read Only or Offline; for those and for conventional zones it is `start + zone size`
    /// (Linux reports a Full NVMe zone this way).
    pub write_pointer: Lba,
    /// The device suggests resetting this zone (NVMe zone attribute RZR).
    pub reset_recommended: bool,
}

impl ZoneDescriptor {
    /// Blocks written so far, for a sequential zone that has a meaningful write pointer.
    pub fn written_blocks(&self) -> u64 {
        self.write_pointer.0.saturating_sub(self.start.0)
    }
}

/// The zone-state-machine choices on which real devices differ. The conformance suite reads
/// these from the device and expects what it says.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ZoneBehavior {
    /// Closing an open zone whose write pointer is still at its start returns it to Empty
    /// (null_blk) instead of Closed (QEMU NVMe, the NVMe spec).
    pub close_empty_to_empty: bool,
    /// What happens when an open needs an open resource and none is free.
    pub auto_close: AutoClose,
    /// A read may span zone boundaries (Linux block devices split such reads; QEMU's NVMe
    /// controller refuses them by default).
    pub cross_zone_reads: bool,
    /// Blocks at or past the write pointer (never written since the zone's last reset) read
    /// as zeros. QEMU zeroes a zone on reset; null_blk keeps the old data, so such reads
    /// return whatever was there before.
    pub unwritten_reads_zero: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum AutoClose {
    /// Fail with too-many-open.
    Off,
    /// Close the oldest implicitly opened zone first, then check the limits (QEMU
    /// `auto_transition_zones`, default on).
    Always,
    /// Close the oldest implicitly opened zone only if the active limit still has room for the
    /// zone being opened (Linux null_blk).
    IfActiveRoom,
}

impl ZoneBehavior {
    /// QEMU's NVMe ZNS controller with its defaults.
    pub const QEMU_NVME: ZoneBehavior = ZoneBehavior { close_empty_to_empty: false, auto_close: AutoClose::Always, cross_zone_reads: false, unwritten_reads_zero: true };
    /// Linux null_blk in zoned mode.
    pub const NULL_BLK: ZoneBehavior = ZoneBehavior { close_empty_to_empty: true, auto_close: AutoClose::IfActiveRoom, cross_zone_reads: true, unwritten_reads_zero: false };
}

impl Default for ZoneBehavior {
    fn default() -> Self {
        ZoneBehavior::QEMU_NVME
    }
}

/// The shape of a zoned device. Conventional zones, if any, are the first
/// `conventional_zone_count` zones (as on null_blk and SMR drives).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub block_size_bytes: u32,
    pub zone_size_blocks: u64,
    pub zone_capacity_blocks: u64,
    pub zone_count: u32,
    pub conventional_zone_count: u32,
    /// Max open zones (MOR); `None` = no limit.
    pub open_zones_max: Option<u32>,
    /// Max active zones (MAR); `None` = no limit.
    pub active_zones_max: Option<u32>,
}

impl Geometry {
    /// Refuses shapes no device can have, naming the problem.
    pub fn validate(&self) -> Result<(), DeviceError> {
        let bad = |msg: String| Err(DeviceError::InvalidGeometry(msg));
        if !self.block_size_bytes.is_power_of_two() || self.block_size_bytes < 512 {
            return bad(format!("logical block size {} bytes is not a power of two of at least 512", self.block_size_bytes));
        }
        if self.zone_count == 0 {
            return bad("the device has zero zones".into());
        }
        if self.zone_size_blocks == 0 {
            return bad("zone size is zero blocks".into());
        }
        if self.zone_capacity_blocks == 0 {
            return bad("zone capacity is zero blocks".into());
        }
        if self.zone_capacity_blocks > self.zone_size_blocks {
            return bad(format!("zone capacity ({} blocks) exceeds zone size ({} blocks)", self.zone_capacity_blocks, self.zone_size_blocks));
        }
        if self.conventional_zone_count > self.zone_count {
            return bad(format!("{} conventional zones on a device of {} zones", self.conventional_zone_count, self.zone_count));
        }
        if self.zone_size_blocks.checked_mul(self.zone_count as u64).is_none() || self.total_blocks().checked_mul(self.block_size_bytes as u64).is_none() {
            return bad("device size overflows 64 bits".into());
        }
        if self.open_zones_max == Some(0) || self.active_zones_max == Some(0) {
            return bad("an open or active zone limit of 0 (use no limit instead)".into());
        }
        if let (Some(open), Some(active)) = (self.open_zones_max, self.active_zones_max) {
            if open > active {
                return bad(format!("max open zones ({open}) exceeds max active zones ({active})"));
            }
        }
        Ok(())
    }

    pub fn total_blocks(&self) -> u64 {
        self.zone_size_blocks * self.zone_count as u64
    }

    pub fn zone_size_bytes(&self) -> u64 {
        self.zone_size_blocks * self.block_size_bytes as u64
    }

    pub fn zone_capacity_bytes(&self) -> u64 {
        self.zone_capacity_blocks * self.block_size_bytes as u64
    }

    /// Bytes that can be written: capacity of sequential zones plus size of conventional ones.
    pub fn usable_bytes(&self) -> u64 {
        let seq = (self.zone_count - self.conventional_zone_count) as u64;
        (seq * self.zone_capacity_blocks + self.conventional_zone_count as u64 * self.zone_size_blocks) * self.block_size_bytes as u64
    }

    pub fn zone_start(&self, zone: ZoneId) -> Lba {
        Lba(zone.0 as u64 * self.zone_size_blocks)
    }

    /// The zone holding `lba`, or `None` past the end of the device.
    pub fn zone_of(&self, lba: Lba) -> Option<ZoneId> {
        let z = lba.0 / self.zone_size_blocks;
        (z < self.zone_count as u64).then_some(ZoneId(z as u32))
    }

    pub fn zone_type(&self, zone: ZoneId) -> ZoneType {
        if zone.0 < self.conventional_zone_count {
            ZoneType::Conventional
        } else {
            ZoneType::SequentialWriteRequired
        }
    }

    /// The first sequential zone.
    pub fn first_sequential_zone(&self) -> ZoneId {
        ZoneId(self.conventional_zone_count)
    }

    /// Number of whole blocks in `bytes`, or an error if `bytes` is not a positive multiple of
    /// the block size.
    #[inline]
    pub fn blocks_in(&self, bytes: usize) -> Result<u64, DeviceError> {
        // The block size is a power of two (validated): mask and shift, no division on the
        // per-I/O path.
        let bs = self.block_size_bytes as usize;
        if bytes == 0 || bytes & (bs - 1) != 0 {
            return Err(DeviceError::InvalidArgument(format!("transfer of {bytes} bytes is not a positive multiple of the {bs}-byte block size")));
        }
        Ok((bytes >> bs.trailing_zeros()) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo() -> Geometry {
        Geometry {
            block_size_bytes: 4096,
            zone_size_blocks: 256,
            zone_capacity_blocks: 200,
            zone_count: 16,
            conventional_zone_count: 2,
            open_zones_max: Some(4),
            active_zones_max: Some(6),
        }
    }

    #[test]
    fn valid_geometry_passes() {
        geo().validate().unwrap();
    }

    #[test]
    fn impossible_geometries_are_refused_with_reason() {
        type Mutation = fn(&mut Geometry);
        let cases: [(Mutation, &str); 7] = [
            (|g| g.zone_capacity_blocks = 300, "exceeds zone size"),
            (|g| g.zone_count = 0, "zero zones"),
            (|g| g.block_size_bytes = 3000, "power of two"),
            (|g| g.open_zones_max = Some(8), "exceeds max active"),
            (|g| g.conventional_zone_count = 17, "conventional zones"),
            (|g| g.zone_size_blocks = u64::MAX / 2, "overflows"),
            (|g| g.active_zones_max = Some(0), "limit of 0"),
        ];
        for (mutate, needle) in cases {
            let mut g = geo();
            mutate(&mut g);
            let msg = g.validate().unwrap_err().to_string();
            assert!(msg.contains(needle), "{msg:?} should mention {needle:?}");
        }
    }

    #[test]
    fn address_math() {
        let g = geo();
        assert_eq!(g.zone_start(ZoneId(3)), Lba(768));
        assert_eq!(g.zone_of(Lba(767)), Some(ZoneId(2)));
        assert_eq!(g.zone_of(Lba(16 * 256)), None);
        assert_eq!(g.zone_type(ZoneId(1)), ZoneType::Conventional);
        assert_eq!(g.zone_type(ZoneId(2)), ZoneType::SequentialWriteRequired);
        assert_eq!(g.usable_bytes(), (14 * 200 + 2 * 256) * 4096);
        assert!(g.blocks_in(4095).is_err());
        assert_eq!(g.blocks_in(8192).unwrap(), 2);
    }

    #[test]
    fn state_codes_round_trip() {
        for s in ZoneState::ALL {
            assert_eq!(ZoneState::from_nvme_code(s.nvme_code()), Some(s));
            assert_eq!(ZoneState::from_name(s.name()), Some(s));
        }
    }
}

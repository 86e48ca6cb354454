//! The content of FDP's log pages (NVMe TP4146, ratified 2022), as the model keeps it:
//! configurations (log identifier 20h), reclaim-unit-handle usage (21h), statistics (22h) and
//! events (23h). Each is a plain struct (JSON through serde) with a text form shaped like
//! nvme-cli's `nvme fdp configs | usage | stats | events`, so the two can be read side by side
//! (docs/fdp/ holds a capture of QEMU's FDP emulation through nvme-cli).

use serde::Serialize;

use crate::config::RuhType;
use crate::Pid;

/// Events the log keeps (the newest ones; older ones are counted, not kept). TP4146 has the
/// FDP Events log hold up to 63 events per host/controller event kind; one ring of 64 here.
pub const EVENTS_KEPT: usize = 64;

/// FDP event types (TP4146's FDP Event Type field).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// 00h, host event: a reclaim unit a handle pointed to was closed before it filled (a
    /// Reclaim Unit Handle Update, or a power cycle).
    RuNotFullyWritten,
    /// 03h, host event: a write named a reclaim group or placement handle that does not exist.
    InvalidPlacementIdentifier,
    /// 80h, controller event: device GC moved valid data to another reclaim unit.
    MediaReallocated,
}

impl EventKind {
    pub fn code(self) -> u8 {
        match self {
            EventKind::RuNotFullyWritten => 0x00,
            EventKind::InvalidPlacementIdentifier => 0x03,
            EventKind::MediaReallocated => 0x80,
        }
    }
}

/// One FDP event.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FdpEvent {
    #[serde(rename = "type")]
    pub kind: EventKind,
    /// The placement identifier involved ([`None`]: a shared GC unit's data, several handles).
    pub pid: Option<Pid>,
    /// When, in host block writes so far (the model's clock; the log page has a timestamp).
    pub host_writes: u64,
    /// Blocks: moved (media reallocated) or left unwritten (RU not fully written).
    pub blocks: u64,
}

/// A RUH's usage attribute (TP4146's RUHA): how the handle is attached to namespaces, not
/// whether anything was written through it (QEMU sets it when a namespace is attached).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuhAttribute {
    /// 00h: no namespace uses the handle.
    Unused,
    /// 01h: the handle is in a namespace's placement handle list, so the host names it in
    /// placement identifiers. The model is one namespace listing every handle: all are this.
    HostSpecified,
    /// 02h: the controller chose the handle for a namespace created without a placement
    /// handle list (not modelled).
    ControllerSpecified,
}

impl RuhAttribute {
    pub fn code(self) -> u8 {
        match self {
            RuhAttribute::Unused => 0,
            RuhAttribute::HostSpecified => 1,
            RuhAttribute::ControllerSpecified => 2,
        }
    }
}

/// FDP Configurations log (20h): the one configuration the model runs.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigLog {
    /// Reclaim Group Identifier Format: bits of a placement identifier that name the group.
    pub rgif: u8,
    pub nrg: u16,
    pub nruh: u16,
    /// Reclaim Unit Nominal Size, bytes.
    pub runs: u64,
    /// RUH descriptors: each handle's type.
    pub ruh_types: Vec<RuhType>,
}

/// Reclaim Unit Handle Usage log (21h).
#[derive(Clone, Debug, Serialize)]
pub struct UsageLog {
    pub attributes: Vec<RuhAttribute>,
}

/// FDP Statistics log (22h): host and media bytes with metadata written, media bytes erased.
#[derive(Clone, Debug, Serialize)]
pub struct StatsLog {
    pub hbmw: u64,
    pub mbmw: u64,
    pub mbe: u64,
}

/// FDP Events log (23h): the newest events, and how many there were.
#[derive(Clone, Debug, Serialize)]
pub struct EventsLog {
    pub total: u64,
    pub events: Vec<FdpEvent>,
}

pub use crate::config::{handles_max, rgif};

impl Pid {
    /// The 16-bit placement identifier: the group in the top `rgif` bits, the handle below.
    pub fn encode(self, rgif: u8) -> u16 {
        if rgif == 0 {
            self.handle
        } else {
            ((self.group as u32) << (16 - rgif.min(16) as u32)) as u16 | self.handle
        }
    }

    /// The group and handle a 16-bit placement identifier names.
    pub fn decode(pid: u16, rgif: u8) -> Pid {
        if rgif == 0 {
            Pid { group: 0, handle: pid }
        } else {
            let shift = 16 - rgif.min(16) as u32;
            Pid { group: (pid as u32 >> shift) as u16, handle: (pid as u32 & ((1 << shift) - 1)) as u16 }
        }
    }
}

impl std::fmt::Display for ConfigLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "FDP Attributes: rgif {} (placement identifier: {} group bits)", self.rgif, self.rgif)?;
        writeln!(f, "Number of Reclaim Groups: {}", self.nrg)?;
        writeln!(f, "Number of Reclaim Unit Handles: {}", self.nruh)?;
        writeln!(f, "Reclaim Unit Nominal Size: {} bytes", self.runs)?;
        writeln!(f, "Reclaim Descriptors:")?;
        for (i, t) in self.ruh_types.iter().enumerate() {
            writeln!(f, "  RUH {i}: type {}h ({})", t.code(), t.name())?;
        }
        Ok(())
    }
}

impl std::fmt::Display for UsageLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "Number of Reclaim Unit Handles: {}", self.attributes.len())?;
        for (i, a) in self.attributes.iter().enumerate() {
            writeln!(f, "  RUH {i}: attributes {}h ({a:?})", a.code())?;
        }
        Ok(())
    }
}

impl std::fmt::Display for StatsLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "Host Bytes with Metadata Written (HBMW): {}", self.hbmw)?;
        writeln!(f, "Media Bytes with Metadata Written (MBMW): {}", self.mbmw)?;
        writeln!(f, "Media Bytes Erased (MBE): {}", self.mbe)
    }
}

impl std::fmt::Display for EventsLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "Number of FDP Events: {} ({} kept)", self.total, self.events.len())?;
        for (i, e) in self.events.iter().enumerate() {
            let pid = e.pid.map_or("-".to_string(), |p| format!("group {} handle {}", p.group, p.handle));
            writeln!(f, "  Event[{i}]: type {:02x}h ({:?}), placement {pid}, at host write {}, {} blocks", e.kind.code(), e.kind, e.host_writes, e.blocks)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_identifiers_round_trip_through_their_encoding() {
        for groups in [1u16, 2, 3, 4, 16] {
            let rgif = rgif(groups);
            for group in 0..groups {
                for handle in [0u16, 1, 7, 255] {
                    let pid = Pid { group, handle };
                    assert_eq!(Pid::decode(pid.encode(rgif), rgif), pid, "groups {groups}");
                }
            }
        }
        // QEMU's rule (the bit length of NRG), checked against its capture in
        // tests/qemu_reference.rs.
        assert_eq!([1, 2, 3, 4, 5, 7, 8, u16::MAX].map(rgif), [0, 2, 2, 3, 3, 3, 4, 16]);
        assert_eq!(handles_max(2), 1 << 14);
        assert_eq!(handles_max(16), 1);
        assert_eq!(Pid::decode(0x4003, 2), Pid { group: 1, handle: 3 });
        assert_eq!(Pid { group: 1, handle: 0 }.encode(16), 1);
    }
}

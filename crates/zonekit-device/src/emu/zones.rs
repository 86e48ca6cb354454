//! The zone state machine of the emulators: states, write pointers, open/active resources and
//! auto-close, with no data. Follows QEMU's `hw/nvme` `nvme_zrm_*` functions; the places where
//! null_blk differs are switched by [`ZoneBehavior`].

use std::collections::BTreeMap;

use crate::{AutoClose, DeviceError, Geometry, Lba, Result, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneId, ZoneState, ZoneType};

#[derive(Copy, Clone, Debug)]
struct Zone {
    state: ZoneState,
    /// Blocks written from the zone start. Kept when a zone is finished early, so that reads
    /// still find its data; the *reported* write pointer of a Full zone is the zone end.
    written_blocks: u64,
    /// Order in which the zone was implicitly opened (key into `implicitly_open`).
    implicit_open_seq: u64,
}

/// Bytes of one zone's entry in the table (for [`super::ZONE_MEMORY_BYTES`]).
pub(crate) const ZONE_BYTES: usize = std::mem::size_of::<Zone>();

/// A zone's state as it is persisted: exact, open states included.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DurableZone {
    pub state: ZoneState,
    pub written_blocks: u64,
}

/// Where an accepted write goes.
#[derive(Copy, Clone, Debug)]
pub(crate) struct WriteSlot {
    pub zone: u32,
    pub offset_blocks: u64,
    pub blocks: u64,
    pub lba: Lba,
}

pub(crate) enum WriteTarget {
    At(Lba),
    Append(ZoneId),
}

pub(crate) struct ZoneTable {
    geometry: Geometry,
    behavior: ZoneBehavior,
    zones: Vec<Zone>,
    open_count: u32,
    active_count: u32,
    /// Implicitly opened zones, oldest first: the auto-close victims.
    implicitly_open: BTreeMap<u64, u32>,
    next_seq: u64,
}

impl ZoneTable {
    pub fn new(geometry: Geometry, behavior: ZoneBehavior) -> ZoneTable {
        let zones = (0..geometry.zone_count)
            .map(|z| Zone {
                state: if geometry.zone_type(ZoneId(z)) == ZoneType::Conventional { ZoneState::NotWritePointer } else { ZoneState::Empty },
                written_blocks: 0,
                implicit_open_seq: 0,
            })
            .collect();
        ZoneTable { geometry, behavior, zones, open_count: 0, active_count: 0, implicitly_open: BTreeMap::new(), next_seq: 0 }
    }

    /// Rebuilds a table from persisted zone states; `Err` names the first impossible record.
    /// With `power_cycle`, open zones come back Closed (Empty when nothing was written), as on
    /// a drive after a power cycle; without, every zone keeps its state (a process restart).
    pub fn restore(geometry: Geometry, behavior: ZoneBehavior, durable: &[DurableZone], power_cycle: bool) -> std::result::Result<ZoneTable, String> {
        let mut table = ZoneTable::new(geometry, behavior);
        for (z, d) in durable.iter().enumerate() {
            let conventional = table.zones[z].state == ZoneState::NotWritePointer;
            if conventional != (d.state == ZoneState::NotWritePointer) {
                return Err(format!("zone {z}: state {} does not fit its zone type", d.state));
            }
            if !conventional && d.written_blocks > geometry.zone_capacity_blocks {
                return Err(format!("zone {z}: write pointer {} past the zone capacity {}", d.written_blocks, geometry.zone_capacity_blocks));
            }
            if d.state == ZoneState::Empty && d.written_blocks != 0 {
                return Err(format!("zone {z}: empty zone with {} blocks written", d.written_blocks));
            }
            if d.state == ZoneState::ImplicitlyOpened && d.written_blocks == 0 {
                return Err(format!("zone {z}: implicitly opened with nothing written"));
            }
            let mut state = d.state;
            if power_cycle && (state.is_open() || state == ZoneState::Closed) {
                state = if d.written_blocks == 0 { ZoneState::Empty } else { ZoneState::Closed };
            }
            let zone = &mut table.zones[z];
            zone.state = state;
            zone.written_blocks = if conventional { 0 } else { d.written_blocks };
            if state == ZoneState::ImplicitlyOpened {
                zone.implicit_open_seq = table.next_seq;
                table.implicitly_open.insert(table.next_seq, z as u32);
                table.next_seq += 1;
            }
            table.open_count += state.is_open() as u32;
            table.active_count += state.is_active() as u32;
        }
        if let Some(max) = geometry.active_zones_max {
            if table.active_count > max {
                return Err(format!("{} active zones exceed the active limit {max}", table.active_count));
            }
        }
        if let Some(max) = geometry.open_zones_max {
            if table.open_count > max {
                return Err(format!("{} open zones exceed the open limit {max}", table.open_count));
            }
        }
        Ok(table)
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn behavior(&self) -> ZoneBehavior {
        self.behavior
    }

    pub fn state(&self, zone: u32) -> ZoneState {
        self.zones[zone as usize].state
    }

    /// Blocks of the zone that hold data (conventional zones: all of them).
    pub fn data_blocks(&self, zone: u32) -> u64 {
        let z = &self.zones[zone as usize];
        if z.state == ZoneState::NotWritePointer {
            self.geometry.zone_size_blocks
        } else {
            z.written_blocks
        }
    }

    pub fn durable(&self, zone: u32) -> DurableZone {
        let z = &self.zones[zone as usize];
        DurableZone { state: z.state, written_blocks: z.written_blocks }
    }

    pub fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        let g = &self.geometry;
        let z = &self.zones[zone as usize];
        let start = g.zone_start(ZoneId(zone));
        let conventional = z.state == ZoneState::NotWritePointer;
        let has_wp = matches!(z.state, ZoneState::Empty | ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed);
        ZoneDescriptor {
            id: ZoneId(zone),
            zone_type: if conventional { ZoneType::Conventional } else { ZoneType::SequentialWriteRequired },
            state: z.state,
            start,
            capacity_blocks: if conventional { g.zone_size_blocks } else { g.zone_capacity_blocks },
            write_pointer: if has_wp { Lba(start.0 + z.written_blocks) } else { Lba(start.0 + g.zone_size_blocks) },
            reset_recommended: false,
        }
    }

    fn zone_index(&self, zone: ZoneId) -> Result<u32> {
        if zone.0 >= self.geometry.zone_count {
            return Err(DeviceError::InvalidArgument(format!("zone {zone} does not exist (the device has {} zones)", self.geometry.zone_count)));
        }
        Ok(zone.0)
    }

    #[inline]
    pub fn check_range(&self, lba: Lba, blocks: u64) -> Result<()> {
        let device_blocks = self.geometry.total_blocks();
        match lba.0.checked_add(blocks) {
            Some(end) if end <= device_blocks => Ok(()),
            _ => Err(DeviceError::OutOfRange { lba, blocks, device_blocks }),
        }
    }

    /// Validates a write, takes the resources an implicit open needs, and says where the data
    /// goes. The write pointer moves only in [`ZoneTable::end_write`], after the data is stored.
    #[inline]
    pub fn begin_write(&mut self, target: WriteTarget, blocks: u64) -> Result<WriteSlot> {
        let zone_size = self.geometry.zone_size_blocks;
        let (z, requested) = match target {
            WriteTarget::At(lba) => {
                self.check_range(lba, blocks)?;
                ((lba.0 / zone_size) as u32, Some(lba))
            }
            WriteTarget::Append(zone) => (self.zone_index(zone)?, None),
        };
        let zone_start = z as u64 * zone_size;
        let zone = self.zones[z as usize];
        let id = ZoneId(z);
        match zone.state {
            ZoneState::NotWritePointer => {
                let Some(lba) = requested else {
                    return Err(DeviceError::ConventionalZone { zone: id, what: "zone append" });
                };
                if lba.0 + blocks > zone_start + zone_size {
                    return Err(DeviceError::Boundary { zone: id, lba, blocks, limit: Lba(zone_start + zone_size) });
                }
                return Ok(WriteSlot { zone: z, offset_blocks: lba.0 - zone_start, blocks, lba });
            }
            ZoneState::Full => return Err(DeviceError::ZoneFull { zone: id }),
            ZoneState::ReadOnly => return Err(DeviceError::ZoneReadOnly { zone: id }),
            ZoneState::Offline => return Err(DeviceError::ZoneOffline { zone: id }),
            _ => {}
        }
        let write_pointer = Lba(zone_start + zone.written_blocks);
        let lba = requested.unwrap_or(write_pointer);
        if lba != write_pointer {
            return Err(DeviceError::InvalidWrite { zone: id, lba, write_pointer });
        }
        if zone.written_blocks + blocks > self.geometry.zone_capacity_blocks {
            return Err(DeviceError::Boundary { zone: id, lba, blocks, limit: Lba(zone_start + self.geometry.zone_capacity_blocks) });
        }
        if matches!(zone.state, ZoneState::Empty | ZoneState::Closed) {
            self.open(z, false)?;
        }
        Ok(WriteSlot { zone: z, offset_blocks: zone.written_blocks, blocks, lba })
    }

    #[inline]
    pub fn end_write(&mut self, slot: WriteSlot) {
        let capacity = self.geometry.zone_capacity_blocks;
        let zone = &mut self.zones[slot.zone as usize];
        if zone.state == ZoneState::NotWritePointer {
            return;
        }
        debug_assert!(zone.state.is_open(), "write completed on a zone that is not open");
        zone.written_blocks += slot.blocks;
        assert!(zone.written_blocks <= capacity, "write pointer past zone capacity");
        if zone.written_blocks == capacity {
            self.release(slot.zone);
            self.zones[slot.zone as usize].state = ZoneState::Full;
        }
    }

    /// Checks that a read may proceed; the caller reads each zone's data below
    /// [`ZoneTable::data_blocks`] and zero-fills the rest.
    pub fn check_read(&self, lba: Lba, blocks: u64) -> Result<()> {
        self.check_range(lba, blocks)?;
        let zone_size = self.geometry.zone_size_blocks;
        let first = lba.0 / zone_size;
        let last = (lba.0 + blocks - 1) / zone_size;
        if first != last && !self.behavior.cross_zone_reads {
            return Err(DeviceError::Boundary { zone: ZoneId(first as u32), lba, blocks, limit: Lba((first + 1) * zone_size) });
        }
        for z in first..=last {
            if self.zones[z as usize].state == ZoneState::Offline {
                return Err(DeviceError::ZoneOffline { zone: ZoneId(z as u32) });
            }
        }
        Ok(())
    }

    /// Applies a zone-management action. Returns whether a reset erased data (for wear).
    pub fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<bool> {
        let z = self.zone_index(zone)?;
        let state = self.zones[z as usize].state;
        let invalid = || Err(DeviceError::InvalidTransition { zone, action, state });
        if state == ZoneState::NotWritePointer {
            return Err(DeviceError::ConventionalZone { zone, what: action.name() });
        }
        match action {
            ZoneAction::Open => {
                if matches!(state, ZoneState::Full | ZoneState::ReadOnly | ZoneState::Offline) {
                    return invalid();
                }
                self.open(z, true)?;
                Ok(false)
            }
            ZoneAction::Close => match state {
                ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => {
                    self.close_open_zone(z);
                    Ok(false)
                }
                ZoneState::Closed => Ok(false),
                _ => invalid(),
            },
            ZoneAction::Finish => match state {
                ZoneState::Full => Ok(false),
                ZoneState::Empty | ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed => {
                    self.release(z);
                    self.zones[z as usize].state = ZoneState::Full;
                    Ok(false)
                }
                _ => invalid(),
            },
            ZoneAction::Reset => match state {
                ZoneState::Empty => Ok(false),
                ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed | ZoneState::Full => {
                    self.release(z);
                    let zone = &mut self.zones[z as usize];
                    let erased = zone.written_blocks > 0 || state == ZoneState::Full;
                    zone.state = ZoneState::Empty;
                    zone.written_blocks = 0;
                    Ok(erased)
                }
                _ => invalid(),
            },
        }
    }

    /// Device event: the zone becomes Read Only (from any sequential state but Offline).
    pub fn set_read_only(&mut self, zone: ZoneId) -> Result<()> {
        let z = self.zone_index(zone)?;
        match self.zones[z as usize].state {
            ZoneState::NotWritePointer => Err(DeviceError::ConventionalZone { zone, what: "read-only fault" }),
            ZoneState::Offline => Err(DeviceError::InvalidArgument(format!("zone {zone} is already offline"))),
            _ => {
                self.release(z);
                self.zones[z as usize].state = ZoneState::ReadOnly;
                Ok(())
            }
        }
    }

    /// Device event: a Read Only zone goes Offline (the only way there, per the ZNS spec).
    pub fn set_offline(&mut self, zone: ZoneId) -> Result<()> {
        let z = self.zone_index(zone)?;
        let state = self.zones[z as usize].state;
        if state != ZoneState::ReadOnly {
            return Err(DeviceError::InvalidArgument(format!("zone {zone} is {state}; only a read-only zone can go offline")));
        }
        let zone = &mut self.zones[z as usize];
        zone.state = ZoneState::Offline;
        zone.written_blocks = 0;
        Ok(())
    }

    /// Takes an open resource (and an active one from Empty), auto-closing first if the
    /// behaviour says so. From QEMU `nvme_zrm_open_flags` and null_blk `null_check_open`.
    fn open(&mut self, z: u32, explicit: bool) -> Result<()> {
        let state = self.zones[z as usize].state;
        match state {
            ZoneState::Empty | ZoneState::Closed => {
                let needs_active = state == ZoneState::Empty;
                let active_room = |t: &ZoneTable| match t.geometry.active_zones_max {
                    Some(max) => !needs_active || t.active_count < max,
                    None => true,
                };
                if let Some(max_open) = self.geometry.open_zones_max {
                    let auto_close = match self.behavior.auto_close {
                        AutoClose::Off => false,
                        AutoClose::Always => true,
                        AutoClose::IfActiveRoom => active_room(self),
                    };
                    if self.open_count >= max_open && auto_close {
                        if let Some((&seq, &victim)) = self.implicitly_open.first_key_value() {
                            debug_assert_eq!(self.zones[victim as usize].implicit_open_seq, seq);
                            self.close_open_zone(victim);
                        }
                    }
                }
                if !active_room(self) {
                    return Err(DeviceError::TooManyActive { limit: self.geometry.active_zones_max.unwrap() });
                }
                if let Some(max_open) = self.geometry.open_zones_max {
                    if self.open_count >= max_open {
                        return Err(DeviceError::TooManyOpen { limit: max_open });
                    }
                }
                if needs_active {
                    self.active_count += 1;
                }
                self.open_count += 1;
                let zone = &mut self.zones[z as usize];
                if explicit {
                    zone.state = ZoneState::ExplicitlyOpened;
                } else {
                    zone.state = ZoneState::ImplicitlyOpened;
                    zone.implicit_open_seq = self.next_seq;
                    self.implicitly_open.insert(self.next_seq, z);
                    self.next_seq += 1;
                }
                Ok(())
            }
            ZoneState::ImplicitlyOpened => {
                if explicit {
                    let zone = &mut self.zones[z as usize];
                    self.implicitly_open.remove(&zone.implicit_open_seq);
                    zone.state = ZoneState::ExplicitlyOpened;
                }
                Ok(())
            }
            ZoneState::ExplicitlyOpened => Ok(()),
            _ => unreachable!("open of a zone in state {state}"),
        }
    }

    fn close_open_zone(&mut self, z: u32) {
        let zone = &mut self.zones[z as usize];
        debug_assert!(zone.state.is_open());
        if zone.state == ZoneState::ImplicitlyOpened {
            self.implicitly_open.remove(&zone.implicit_open_seq);
        }
        self.open_count -= 1;
        if self.behavior.close_empty_to_empty && zone.written_blocks == 0 {
            zone.state = ZoneState::Empty;
            self.active_count -= 1;
        } else {
            zone.state = ZoneState::Closed;
        }
    }

    /// Gives back whatever open and active resources the zone holds.
    fn release(&mut self, z: u32) {
        let zone = &mut self.zones[z as usize];
        if zone.state == ZoneState::ImplicitlyOpened {
            self.implicitly_open.remove(&zone.implicit_open_seq);
        }
        if zone.state.is_open() {
            self.open_count -= 1;
        }
        if zone.state.is_active() {
            self.active_count -= 1;
        }
    }

    /// Panics if the resource counts or write pointers are inconsistent.
    pub fn check_invariants(&self) {
        let open = self.zones.iter().filter(|z| z.state.is_open()).count() as u32;
        let active = self.zones.iter().filter(|z| z.state.is_active()).count() as u32;
        let implicit = self.zones.iter().filter(|z| z.state == ZoneState::ImplicitlyOpened).count();
        assert_eq!(open, self.open_count, "open zone count");
        assert_eq!(active, self.active_count, "active zone count");
        assert_eq!(implicit, self.implicitly_open.len(), "implicitly opened list");
        if let Some(max) = self.geometry.open_zones_max {
            assert!(open <= max, "{open} open zones exceed the limit {max}");
        }
        if let Some(max) = self.geometry.active_zones_max {
            assert!(active <= max, "{active} active zones exceed the limit {max}");
        }
        for (i, z) in self.zones.iter().enumerate() {
            assert!(z.written_blocks <= self.geometry.zone_capacity_blocks, "zone {i} write pointer past capacity");
            if z.state == ZoneState::Empty {
                assert_eq!(z.written_blocks, 0, "empty zone {i} has data");
            }
            if z.state == ZoneState::ImplicitlyOpened {
                assert_eq!(self.implicitly_open.get(&z.implicit_open_seq), Some(&(i as u32)));
            }
        }
    }
}

//! The SSD model: a page-mapped device FTL over reclaim units, with device GC.
//!
//! One model serves both kinds of random-write drive. A conventional SSD
//! ([`SsdConfig::handles`] empty) writes host data to one write point per reclaim group and
//! what its GC moves to another. An FDP SSD has a write point per reclaim-unit handle: a write's
//! placement identifier (reclaim group, placement handle) picks the reclaim unit its data
//! fills, so data of one class fills its own units; when one fills, the handle gets a fresh
//! unit. Device GC picks a victim among a group's full units with the pool's victim rule
//! ([`zonekit_pool::victim`]), moves its live blocks and erases it: blocks of initially
//! isolated handles go to one GC write point the group shares, those of each persistently
//! isolated handle to a GC write point of its own (TP4146's two RUH types).
//!
//! GC runs in the foreground, inside the host write that needs a fresh unit, while a group has
//! no more free units than its GC reserve ([`SsdConfig::gc_reserve_units`]): one per GC write
//! point and one more. Free units are handed out oldest-erased first, which spreads wear.
//!
//! **Power loss.** The mapping is persistent, as on a datacenter drive with power-loss
//! protection: a write, trim or GC move is applied whole or not at all, and every command that
//! returned `Ok` survives. [`Ssd::fail_after`] makes the device lose power at its Nth flash
//! program from now (a host write's or a GC move's): that command fails with
//! [`SsdError::PowerLoss`] and leaves the mapping as it was before it (GC moves already made
//! stay made: each is its own atomic step), and every command fails until [`Ssd::restart`],
//! which keeps the mapping, rebuilds what is derived from it (live counts, the reverse map),
//! and closes the units that were open: their unwritten pages are lost until the unit is
//! erased, and FDP logs an "RU not fully written" event for each.

use std::collections::{BinaryHeap, VecDeque};

use serde::Serialize;
use zonekit_base::LogHistogram;
use zonekit_device::timing::TimingModel;
use zonekit_device::Geometry;
use zonekit_pool::victim::{Victim, VictimCtx};
use zonekit_pool::{ZoneInfo, ZoneUse};

use crate::config::{RuhType, SsdConfig};
use crate::log::{EventKind, FdpEvent, RuhAttribute, EVENTS_KEPT};
use crate::{BlockDevice, Pid, SsdError};

// Host commands a caller times itself (a benchmark keeping fio's queues).
mod commands;
// FDP's log pages, read from the model's state.
mod log_pages;

const UNMAPPED: u32 = u32::MAX;
/// `unit_handle` of a unit filled by a shared GC write point: its blocks came from several
/// handles.
pub(crate) const SHARED: u16 = u16::MAX;
const NO_UNIT: u32 = u32::MAX;
/// Where a write that names no placement goes, as (group, handle): handle 0 of group 0
/// (placement handle 0 of the namespace, as QEMU places it).
const CONTROLLER_PLACEMENT: (usize, usize) = (0, 0);

/// Where one write point appends: its unit and the next offset in it.
#[derive(Copy, Clone, Debug)]
struct WritePoint {
    unit: u32,
    next: u32,
}

impl Default for WritePoint {
    fn default() -> Self {
        WritePoint { unit: NO_UNIT, next: 0 }
    }
}

/// What the device did that a host placing data by class wants to hear (FDP's event log
/// carries the same facts; [`Ssd::take_notices`]).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Notice {
    /// A unit written through `handle` filled.
    UnitFull { handle: u16 },
    /// Device GC reclaimed a unit written through `handle` ([`None`]: by a shared GC write
    /// point), opened and filled at these host-write times, with this share of garbage.
    Reclaimed { handle: Option<u16>, opened_at: u64, full_at: u64, now: u64, garbage_proportion: f64 },
}

/// Counters of everything the device did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SsdCounters {
    /// Blocks the host wrote.
    pub host_blocks: u64,
    /// Blocks device GC moved (programmed again).
    pub gc_blocks: u64,
    pub read_blocks: u64,
    /// Mapped blocks the host trimmed.
    pub trimmed_blocks: u64,
    /// Host writes whose placement identifier named no group or handle of the device.
    pub invalid_placements: u64,
    /// Reclaim units erased.
    pub erases: u64,
    /// Host blocks by placement handle (one entry for a conventional SSD).
    pub host_blocks_by_handle: Vec<u64>,
    /// Blocks device GC moved out of units of each handle (shared GC units last).
    pub gc_blocks_by_handle: Vec<u64>,
}

impl SsdCounters {
    /// Blocks programmed into flash: the host's and GC's.
    pub fn media_blocks(&self) -> u64 {
        self.host_blocks + self.gc_blocks
    }

    /// Device write amplification: media over host blocks written (1 before any write).
    pub fn waf(&self) -> f64 {
        if self.host_blocks == 0 {
            1.0
        } else {
            self.media_blocks() as f64 / self.host_blocks as f64
        }
    }
}

/// Device time, when the model is timed.
struct Timing {
    model: TimingModel,
    queue_depth: usize,
    in_flight: BinaryHeap<std::cmp::Reverse<u64>>,
    host_now_ns: u64,
    /// When the foreground GC of the current write is done: the write waits for it.
    gc_done_ns: u64,
    elapsed_ns: u64,
    write_latency: LogHistogram,
    read_latency: LogHistogram,
}

impl Timing {
    fn submit_ns(&mut self) -> u64 {
        if self.in_flight.len() >= self.queue_depth {
            let std::cmp::Reverse(freed) = self.in_flight.pop().expect("queue is full");
            self.host_now_ns = self.host_now_ns.max(freed);
        }
        self.host_now_ns
    }

    fn complete(&mut self, submit: u64, done: u64, write: bool) {
        self.in_flight.push(std::cmp::Reverse(done));
        self.elapsed_ns = self.elapsed_ns.max(done);
        if write { &mut self.write_latency } else { &mut self.read_latency }.record(done - submit);
    }
}

/// Device time and latencies of a timed model.
#[derive(Clone, Debug, Serialize)]
pub struct SsdTiming {
    pub elapsed_s: f64,
    pub write_latency_us_p50: f64,
    pub write_latency_us_p99: f64,
    pub write_latency_us_max: f64,
    pub read_latency_us_p99: f64,
}

/// The SSD model (see the module doc).
pub struct Ssd {
    cfg: SsdConfig,
    ru_blocks: u64,
    /// log2 of `ru_blocks` when it is a power of two: a slot's unit by shift (the division sat
    /// on the path of every overwrite).
    ru_shift: Option<u32>,
    units_per_group: u64,
    /// Per reclaim unit: the pool's bookkeeping (state, written, valid, times, erases).
    units: Vec<ZoneInfo>,
    /// Per reclaim unit: the handle whose data it holds ([`SHARED`] for a shared GC unit).
    unit_handle: Vec<u16>,
    /// Per group, erased units, oldest-erased first.
    free: Vec<VecDeque<u32>>,
    /// Per group × write point (user streams, then GC streams).
    points: Vec<WritePoint>,
    streams: usize,
    /// The GC write point (a stream index) that each handle's blocks move to.
    gc_stream_of_handle: Vec<usize>,
    shared_gc_stream: Option<usize>,
    /// Logical block → physical slot (unit × ru_blocks + offset).
    l2p: Vec<u32>,
    /// Physical slot → logical block (meaningful where `live` is set).
    p2l: Vec<u32>,
    live: Vec<u64>,
    victim: Box<dyn Victim>,
    /// Host writes so far: the clock units are stamped with.
    now: u64,
    counters: SsdCounters,
    ruh_usage: Vec<RuhAttribute>,
    events: VecDeque<FdpEvent>,
    events_total: u64,
    /// What a host placing by class hears ([`Ssd::keep_notices`]); `None` until asked.
    notices: Option<Vec<Notice>>,
    data: Option<Vec<u8>>,
    timing: Option<Timing>,
    /// Programs left before the power fails ([`Ssd::fail_after`]).
    programs_left: Option<u64>,
    powered: bool,
    /// Victim blocks during a GC (kept for its capacity).
    gc_slots: Vec<u32>,
}

impl Ssd {
    pub fn new(cfg: SsdConfig) -> Result<Ssd, SsdError> {
        cfg.validate()?;
        let ru_blocks = cfg.ru_blocks();
        let units_per_group = cfg.units_per_group();
        let units = cfg.units();
        let physical = cfg.physical_blocks();
        let groups = cfg.reclaim_groups as usize;
        let user_streams = cfg.user_streams();
        let mut gc_stream_of_handle = vec![0; user_streams];
        let mut next_gc = user_streams;
        for (h, t) in cfg.handles.iter().enumerate() {
            if *t == RuhType::PersistentlyIsolated {
                gc_stream_of_handle[h] = next_gc;
                next_gc += 1;
            }
        }
        let shared_gc_stream = (next_gc < cfg.streams_per_group()).then_some(next_gc);
        for (h, stream) in gc_stream_of_handle.iter_mut().enumerate() {
            if cfg.handles.get(h).is_none_or(|t| *t == RuhType::InitiallyIsolated) {
                *stream = shared_gc_stream.expect("a handle that is not persistently isolated has the shared GC stream");
            }
        }
        let victim = zonekit_pool::victim::create(&cfg.victim, cfg.seed).map_err(|e| SsdError::Config(format!("device GC victim: {e}")))?;
        let timing = match &cfg.flash {
            Some(flash) => {
                let geometry = Geometry {
                    block_size_bytes: cfg.block_size_bytes,
                    zone_size_blocks: ru_blocks,
                    zone_capacity_blocks: ru_blocks,
                    zone_count: u32::try_from(units).map_err(|_| SsdError::Config(format!("{units} reclaim units: too many to time")))?,
                    conventional_zone_count: 0,
                    open_zones_max: None,
                    active_zones_max: None,
                };
                let model = TimingModel::new(*flash, &geometry).map_err(|e| SsdError::Config(format!("flash timing: {e}")))?;
                Some(Timing {
                    model,
                    queue_depth: cfg.queue_depth,
                    in_flight: BinaryHeap::new(),
                    host_now_ns: 0,
                    gc_done_ns: 0,
                    elapsed_ns: 0,
                    write_latency: LogHistogram::default(),
                    read_latency: LogHistogram::default(),
                })
            }
            None => None,
        };
        let data = cfg
            .store_data
            .then(|| physical.checked_mul(cfg.block_size_bytes as u64).and_then(|b| usize::try_from(b).ok()).map(|b| vec![0u8; b]))
            .map(|d| d.ok_or_else(|| SsdError::Config(format!("{physical} blocks of data do not fit in memory"))))
            .transpose()?;
        let handles = cfg.handles.len().max(1);
        Ok(Ssd {
            ru_blocks,
            ru_shift: ru_blocks.is_power_of_two().then(|| ru_blocks.trailing_zeros()),
            units_per_group,
            units: vec![ZoneInfo::default(); units as usize],
            unit_handle: vec![0; units as usize],
            free: (0..groups).map(|g| (g as u64 * units_per_group..(g as u64 + 1) * units_per_group).map(|u| u as u32).collect()).collect(),
            points: vec![WritePoint::default(); groups * cfg.streams_per_group()],
            streams: cfg.streams_per_group(),
            gc_stream_of_handle,
            shared_gc_stream,
            l2p: vec![UNMAPPED; cfg.logical_blocks as usize],
            p2l: vec![UNMAPPED; physical as usize],
            live: vec![0; (physical as usize).div_ceil(64)],
            victim,
            now: 0,
            counters: SsdCounters { host_blocks_by_handle: vec![0; handles], gc_blocks_by_handle: vec![0; handles + 1], ..SsdCounters::default() },
            // TP4146's RUH usage attribute says how a handle is attached, not whether it was
            // written: Host Specified for a handle in a namespace's placement handle list. The
            // model is one namespace whose list is every handle (QEMU reports 01h for each
            // listed RUH from power-on: tests/qemu_reference.rs).
            ruh_usage: vec![RuhAttribute::HostSpecified; handles],
            events: VecDeque::new(),
            events_total: 0,
            notices: None,
            data,
            timing,
            programs_left: None,
            powered: true,
            gc_slots: Vec::new(),
            cfg,
        })
    }

    pub fn config(&self) -> &SsdConfig {
        &self.cfg
    }

    pub fn counters(&self) -> &SsdCounters {
        &self.counters
    }

    /// Starts keeping [`Notice`]s for [`Ssd::take_notices`] (a host that places by class).
    pub fn keep_notices(&mut self) {
        self.notices.get_or_insert_with(Vec::new);
    }

    /// The notices since the last call, oldest first.
    #[inline]
    pub fn take_notices(&mut self, mut each: impl FnMut(Notice)) {
        if let Some(n) = &mut self.notices {
            if !n.is_empty() {
                for notice in n.drain(..) {
                    each(notice);
                }
            }
        }
    }

    /// Per reclaim unit, erases so far (each erase block of a unit is erased with it).
    pub fn erases_per_unit(&self) -> impl Iterator<Item = u64> + '_ {
        self.units.iter().map(|u| u.resets)
    }

    /// Wear: the fewest, most and mean erases of a reclaim unit.
    pub fn wear_min_max_mean(&self) -> (u64, u64, f64) {
        let (mut min, mut max, mut sum) = (u64::MAX, 0u64, 0u64);
        for e in self.erases_per_unit() {
            (min, max, sum) = (min.min(e), max.max(e), sum + e);
        }
        let n = self.units.len() as u64;
        if n == 0 {
            (0, 0, 0.0)
        } else {
            (min, max, sum as f64 / n as f64)
        }
    }

    /// Device time and latencies, when timed.
    pub fn timing(&self) -> Option<SsdTiming> {
        self.timing.as_ref().map(|t| SsdTiming {
            elapsed_s: t.elapsed_ns as f64 / 1e9,
            write_latency_us_p50: t.write_latency.quantile(0.5) as f64 / 1e3,
            write_latency_us_p99: t.write_latency.quantile(0.99) as f64 / 1e3,
            write_latency_us_max: t.write_latency.max as f64 / 1e3,
            read_latency_us_p99: t.read_latency.quantile(0.99) as f64 / 1e3,
        })
    }

    /// The RUH usage attributes (FDP's Reclaim Unit Handle Usage log).
    pub(crate) fn ruh_usage(&self) -> &[RuhAttribute] {
        &self.ruh_usage
    }

    pub(crate) fn events(&self) -> (&VecDeque<FdpEvent>, u64) {
        (&self.events, self.events_total)
    }

    /// Bytes of one block.
    pub fn block_bytes(&self) -> u64 {
        self.cfg.block_size_bytes as u64
    }

    /// Logs an FDP event, keeping the newest [`EVENTS_KEPT`] (a conventional SSD has no log).
    fn log_event(&mut self, kind: EventKind, pid: Option<Pid>, blocks: u64) {
        if !self.cfg.is_fdp() {
            return;
        }
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(FdpEvent { kind, pid, host_writes: self.now, blocks });
        self.events_total += 1;
    }

    fn check_powered(&self) -> Result<(), SsdError> {
        if self.powered {
            Ok(())
        } else {
            Err(SsdError::PowerLoss)
        }
    }

    /// The placement a write lands in: (group, handle). A write that names a group or handle
    /// the device does not have is not aborted (TP4146): the controller places it as a write
    /// that names none, counts it and logs an Invalid Placement Identifier event. (QEMU 10
    /// places it the same way but logs no event: docs/fdp/README.md.)
    fn resolve_write(&mut self, pid: Option<Pid>) -> Result<(usize, usize), SsdError> {
        match pid {
            Some(p) if self.cfg.is_fdp() && !self.pid_valid(p) => {
                self.log_event(EventKind::InvalidPlacementIdentifier, Some(p), 1);
                self.counters.invalid_placements += 1;
                Ok(CONTROLLER_PLACEMENT)
            }
            Some(p) => self.resolve(p),
            None => Ok(CONTROLLER_PLACEMENT),
        }
    }

    fn pid_valid(&self, pid: Pid) -> bool {
        pid.group < self.cfg.reclaim_groups && (pid.handle as usize) < self.cfg.handles.len()
    }

    /// A placement identifier named by a command that must be valid (a write's is resolved
    /// by [`Ssd::resolve_write`]): the error TP4146 gives for it.
    fn resolve(&mut self, pid: Pid) -> Result<(usize, usize), SsdError> {
        if !self.cfg.is_fdp() {
            return Err(SsdError::NoPlacement);
        }
        if !self.pid_valid(pid) {
            return Err(SsdError::InvalidPlacement { pid, groups: self.cfg.reclaim_groups, handles: self.cfg.handles.len() as u16 });
        }
        Ok((pid.group as usize, pid.handle as usize))
    }

    fn check_lba(&self, lba: u64, blocks: u64) -> Result<(), SsdError> {
        if lba.checked_add(blocks).is_none_or(|end| end > self.cfg.logical_blocks) {
            return Err(SsdError::OutOfRange { lba, blocks, logical_blocks: self.cfg.logical_blocks });
        }
        Ok(())
    }

    /// Where `slot` is for the timing model: its unit and the byte offset in it.
    #[inline]
    fn timing_place(&self, slot: u32) -> (u32, u64) {
        let bs = self.cfg.block_size_bytes as u64;
        (self.unit_of(slot) as u32, (slot as u64 % self.ru_blocks) * bs)
    }

    /// The bytes of `slot` in the data (when the model keeps it).
    #[inline]
    fn data_range(&self, slot: u32) -> std::ops::Range<usize> {
        let b = self.cfg.block_size_bytes as usize;
        slot as usize * b..(slot as usize + 1) * b
    }

    #[inline]
    fn unit_of(&self, slot: u32) -> usize {
        match self.ru_shift {
            Some(shift) => (slot >> shift) as usize,
            None => (slot as u64 / self.ru_blocks) as usize,
        }
    }

    #[inline]
    fn set_live(&mut self, slot: u32, on: bool) {
        let (w, b) = (slot as usize / 64, 1u64 << (slot % 64));
        if on {
            self.live[w] |= b;
        } else {
            self.live[w] &= !b;
        }
    }

    #[inline]
    fn is_live(&self, slot: u32) -> bool {
        self.live[slot as usize / 64] & (1 << (slot % 64)) != 0
    }

    /// The current copy of `lba` is no longer needed.
    #[inline]
    fn invalidate(&mut self, slot: u32) {
        self.set_live(slot, false);
        let u = self.unit_of(slot);
        let info = &mut self.units[u];
        info.valid -= 1;
        info.last_invalidate = self.now;
    }

    /// Counts one flash program against the power budget of [`Ssd::fail_after`].
    #[inline]
    fn program_allowed(&mut self) -> Result<(), SsdError> {
        if let Some(left) = &mut self.programs_left {
            if *left == 0 {
                self.programs_left = None;
                self.powered = false;
                return Err(SsdError::PowerLoss);
            }
            *left -= 1;
        }
        Ok(())
    }

    /// A free unit of `group` for write point `stream`, opened for `handle`.
    fn open_unit(&mut self, group: usize, stream: usize, handle: u16) -> Result<(), SsdError> {
        let unit = self.free[group].pop_front().ok_or(SsdError::NoSpace { group: group as u16 })?;
        let info = &mut self.units[unit as usize];
        debug_assert!(info.state == ZoneUse::Free && info.written == 0);
        *info = ZoneInfo { state: ZoneUse::Open, class: stream.min(255) as u8, opened_at: self.now, resets: info.resets, ..ZoneInfo::default() };
        self.unit_handle[unit as usize] = handle;
        self.points[group * self.streams + stream] = WritePoint { unit, next: 0 };
        Ok(())
    }

    /// Appends `lba` to write point `stream` of `group` (which has room) and maps it there.
    #[inline(always)]
    fn append(&mut self, group: usize, stream: usize, lba: u32) -> u32 {
        let p = &mut self.points[group * self.streams + stream];
        let slot = (p.unit as u64 * self.ru_blocks) as u32 + p.next;
        p.next += 1;
        let (unit, filled) = (p.unit as usize, p.next as u64 == self.ru_blocks);
        self.p2l[slot as usize] = lba;
        self.set_live(slot, true);
        self.l2p[lba as usize] = slot;
        let info = &mut self.units[unit];
        info.written += 1;
        info.valid += 1;
        info.last_append = self.now;
        if filled {
            info.state = ZoneUse::Full;
            info.full_at = self.now;
            self.points[group * self.streams + stream] = WritePoint::default();
            let handle = self.unit_handle[unit];
            if stream < self.cfg.user_streams() {
                if let Some(n) = &mut self.notices {
                    n.push(Notice::UnitFull { handle });
                }
            }
        }
        slot
    }

    fn has_room(&self, group: usize, stream: usize) -> bool {
        self.points[group * self.streams + stream].unit != NO_UNIT
    }

    /// Foreground GC: while `group` has no more free units than its reserve, reclaims one.
    fn collect(&mut self, group: usize) -> Result<(), SsdError> {
        while self.free[group].len() as u64 <= self.cfg.gc_reserve_units() {
            self.reclaim_one(group)?;
        }
        Ok(())
    }

    fn reclaim_one(&mut self, group: usize) -> Result<(), SsdError> {
        let first = group * self.units_per_group as usize;
        let range = first..first + self.units_per_group as usize;
        let ctx = VictimCtx { zones: &self.units[range], now: self.now, now_us: self.now, min_gp: 0.0, gc_threshold: 0.0, free_zones: self.free[group].len() };
        let Some(v) = self.victim.select(&ctx) else {
            return Err(SsdError::NoSpace { group: group as u16 });
        };
        let v = first + v;
        assert_eq!(self.units[v].state, ZoneUse::Full, "the victim rule chose unit {v}, which is not full");
        // As the victim rule saw it: after the moves no block of the unit is live.
        let garbage_proportion = self.units[v].garbage_proportion();
        let handle = self.unit_handle[v];
        let to = if handle == SHARED { self.shared_gc_stream.expect("a shared unit comes from the shared stream") } else { self.gc_stream_of_handle[handle as usize] };
        let start = (v as u64 * self.ru_blocks) as u32;
        let mut slots = std::mem::take(&mut self.gc_slots);
        slots.clear();
        slots.extend((start..start + self.ru_blocks as u32).filter(|&s| self.is_live(s)));
        let mut gc_done_ns = 0;
        let mut moved = 0u64;
        let result = (|| {
            for &slot in &slots {
                if !self.has_room(group, to) {
                    self.open_unit(group, to, if Some(to) == self.shared_gc_stream { SHARED } else { handle })?;
                }
                self.program_allowed()?;
                let lba = self.p2l[slot as usize];
                self.invalidate(slot);
                let new = self.append(group, to, lba);
                let (from, to_range) = (self.data_range(slot), self.data_range(new));
                if let Some(d) = &mut self.data {
                    d.copy_within(from, to_range.start);
                }
                let ((ru, off), (nru, noff), bs) = (self.timing_place(slot), self.timing_place(new), self.cfg.block_size_bytes as u64);
                if let Some(t) = &mut self.timing {
                    let read = t.model.read(t.gc_done_ns.max(t.host_now_ns), ru, off, bs);
                    gc_done_ns = gc_done_ns.max(t.model.write(read, nru, noff, bs));
                }
                moved += 1;
                self.counters.gc_blocks += 1;
                let h = if handle == SHARED { self.counters.gc_blocks_by_handle.len() - 1 } else { handle as usize };
                self.counters.gc_blocks_by_handle[h] += 1;
            }
            Ok(())
        })();
        self.gc_slots = slots;
        result?;
        let info = self.units[v];
        debug_assert_eq!(info.valid, 0, "unit {v} still holds live blocks after GC");
        if let Some(t) = &mut self.timing {
            // The erase keeps its dies busy; the write that waits for this GC needs only the
            // moves done (it goes to a unit erased before).
            t.gc_done_ns = t.gc_done_ns.max(gc_done_ns);
            t.model.reset(gc_done_ns.max(t.host_now_ns), v as u32);
        }
        if let Some(n) = &mut self.notices {
            n.push(Notice::Reclaimed { handle: (handle != SHARED).then_some(handle), opened_at: info.opened_at, full_at: info.full_at, now: self.now, garbage_proportion });
        }
        if moved > 0 {
            let pid = (handle != SHARED).then_some(Pid { group: group as u16, handle });
            self.log_event(EventKind::MediaReallocated, pid, moved);
        }
        self.units[v] = ZoneInfo { resets: info.resets + 1, ..ZoneInfo::default() };
        self.free[group].push_back(v as u32);
        self.counters.erases += 1;
        Ok(())
    }

    /// A write of one block with an optional placement identifier and the block's bytes.
    #[inline]
    fn write_block(&mut self, lba: u64, pid: Option<Pid>, data: Option<&[u8]>) -> Result<(), SsdError> {
        self.check_powered()?;
        self.check_lba(lba, 1)?;
        let submit = self.timing.as_mut().map(|t| t.submit_ns());
        let done = self.place_block(lba, pid, data, submit)?;
        if let (Some(t), Some(submit), Some(done)) = (&mut self.timing, submit, done) {
            t.complete(submit, done, true);
        }
        Ok(())
    }

    /// Maps one block (its range checked) and charges its program from `submit`, when timed:
    /// returns when it completes.
    #[inline]
    fn place_block(&mut self, lba: u64, pid: Option<Pid>, data: Option<&[u8]>, submit: Option<u64>) -> Result<Option<u64>, SsdError> {
        let (group, handle) = self.resolve_write(pid)?;
        if !self.has_room(group, handle) {
            self.collect(group)?;
            self.open_unit(group, handle, handle as u16)?;
        }
        self.program_allowed()?;
        let old = self.l2p[lba as usize];
        if old != UNMAPPED {
            self.invalidate(old);
        }
        let slot = self.append(group, handle, lba as u32);
        let range = self.data_range(slot);
        if let Some(d) = &mut self.data {
            match data {
                Some(bytes) => d[range].copy_from_slice(bytes),
                // A metadata-only write into a model that keeps data reads back as zeros.
                None => d[range].fill(0),
            }
        }
        let ((ru, off), bs) = (self.timing_place(slot), self.cfg.block_size_bytes as u64);
        // A write that waited for GC starts when the GC's work is done: the model's dies are
        // busy until then.
        let done = match (&mut self.timing, submit) {
            (Some(t), Some(submit)) => Some(t.model.write(submit.max(t.gc_done_ns), ru, off, bs)),
            _ => None,
        };
        self.counters.host_blocks += 1;
        self.counters.host_blocks_by_handle[handle] += 1;
        self.now += 1;
        Ok(done)
    }

    /// The fast path of a metadata-only write through a known handle: what a replay calls
    /// for every block.
    #[inline]
    pub fn write_meta(&mut self, lba: u64, pid: Option<Pid>) -> Result<(), SsdError> {
        self.write_block(lba, pid, None)
    }

    /// Starts fetching what a write of `lba` touches (its mapping entry).
    #[inline]
    pub fn prefetch(&self, lba: u64) {
        if let Some(e) = self.l2p.get(lba as usize) {
            zonekit_base::mem::prefetch_read(e);
        }
    }

    /// Starts fetching what `lba`'s current copy points to (its unit and live word), once its
    /// mapping entry is in.
    #[inline]
    pub fn prefetch_pointed(&self, lba: u64) {
        if let Some(&slot) = self.l2p.get(lba as usize) {
            if slot != UNMAPPED {
                zonekit_base::mem::prefetch_read(&self.live[slot as usize / 64]);
                zonekit_base::mem::prefetch_read(&self.units[self.unit_of(slot)]);
            }
        }
    }

    /// Makes the device lose power at its `programs`-th flash program from now (0: the next).
    pub fn fail_after(&mut self, programs: u64) {
        self.programs_left = Some(programs);
    }

    /// Whether the device lost power ([`Ssd::fail_after`]) and waits for [`Ssd::restart`].
    pub fn is_powered(&self) -> bool {
        self.powered
    }

    /// Power comes back: the mapping is kept (power-loss protection), the units that were open
    /// are closed, everything derived from the mapping is rebuilt from it and checked.
    pub fn restart(&mut self) {
        self.programs_left = None;
        self.powered = true;
        if let Some(t) = &mut self.timing {
            t.in_flight.clear();
        }
        for i in 0..self.points.len() {
            let p = self.points[i];
            if p.unit == NO_UNIT {
                continue;
            }
            let (group, stream) = (i / self.streams, i % self.streams);
            self.close_point(group, stream);
        }
        // The reverse map and live bits are what GC trusts: rebuild them from the mapping.
        self.live.fill(0);
        for u in &mut self.units {
            u.valid = 0;
        }
        for lba in 0..self.l2p.len() {
            let slot = self.l2p[lba];
            if slot != UNMAPPED {
                self.p2l[slot as usize] = lba as u32;
                self.set_live(slot, true);
                let u = self.unit_of(slot);
                self.units[u].valid += 1;
            }
        }
        self.check_invariants();
    }

    /// Closes a write point's unit before it is full (its unwritten pages wait for the
    /// unit's erase), logging FDP's "RU not fully written" for a host handle's unit.
    fn close_point(&mut self, group: usize, stream: usize) {
        let p = std::mem::take(&mut self.points[group * self.streams + stream]);
        if p.unit == NO_UNIT {
            return;
        }
        let unwritten = self.ru_blocks - p.next as u64;
        let info = &mut self.units[p.unit as usize];
        if info.written == 0 {
            // Nothing was written: the unit goes back to the free list unerased.
            *info = ZoneInfo { resets: info.resets, ..ZoneInfo::default() };
            self.free[group].push_front(p.unit);
            return;
        }
        info.state = ZoneUse::Full;
        info.full_at = self.now;
        // The unwritten tail is space the unit cannot give back until it is erased: to the
        // victim rule it is garbage.
        info.written = self.ru_blocks;
        if stream < self.cfg.user_streams() {
            let handle = self.unit_handle[p.unit as usize];
            self.log_event(EventKind::RuNotFullyWritten, Some(Pid { group: group as u16, handle }), unwritten);
        }
    }

    /// FDP's Reclaim Unit Handle Update (I/O Management Send): the handle moves to a fresh
    /// reclaim unit; the one it pointed to is closed as it is.
    ///
    /// A handle always references a reclaim unit. The model takes one from the free list only
    /// at the handle's first write, so a handle nothing was written through yet references
    /// an empty unit; the update leaves it not fully written all the same (TP4146's event
    /// 00h, which QEMU logs too), though the unit goes back unerased and costs nothing.
    pub fn update_handle(&mut self, pid: Pid) -> Result<(), SsdError> {
        self.check_powered()?;
        let (group, handle) = self.resolve(pid)?;
        let point = self.points[group * self.streams + handle];
        if point.unit == NO_UNIT || self.units[point.unit as usize].written == 0 {
            self.log_event(EventKind::RuNotFullyWritten, Some(pid), self.ru_blocks);
        }
        self.close_point(group, handle);
        Ok(())
    }

    /// Checks every relation between the mapping, the reverse map, the live bits and the
    /// units' counts; panics naming the first that fails.
    pub fn check_invariants(&self) {
        let mut valid = vec![0u64; self.units.len()];
        let mut seen = 0u64;
        for (lba, &slot) in self.l2p.iter().enumerate() {
            if slot == UNMAPPED {
                continue;
            }
            assert!(self.is_live(slot), "LBA {lba} maps to slot {slot}, which is not live");
            assert_eq!(self.p2l[slot as usize] as usize, lba, "slot {slot} of LBA {lba} maps back elsewhere");
            valid[self.unit_of(slot)] += 1;
            seen += 1;
        }
        let live_bits: u64 = self.live.iter().map(|w| w.count_ones() as u64).sum();
        assert_eq!(live_bits, seen, "{live_bits} live slots for {seen} mapped LBAs: a physical page is live twice or lost");
        for (u, info) in self.units.iter().enumerate() {
            assert_eq!(info.valid, valid[u], "unit {u} counts {} valid blocks, holds {}", info.valid, valid[u]);
            assert!(info.valid <= info.written && info.written <= self.ru_blocks, "unit {u}: {} valid of {} written", info.valid, info.written);
            if info.state == ZoneUse::Free {
                assert_eq!(info.written, 0, "free unit {u} holds written blocks");
            }
        }
        for (g, free) in self.free.iter().enumerate() {
            for &u in free {
                assert_eq!(self.units[u as usize].state, ZoneUse::Free, "unit {u} in group {g}'s free list is not free");
                assert_eq!(u as u64 / self.units_per_group, g as u64, "unit {u} is in the free list of group {g}");
            }
        }
    }
}

impl BlockDevice for Ssd {
    fn block_size_bytes(&self) -> u32 {
        self.cfg.block_size_bytes
    }

    fn logical_blocks(&self) -> u64 {
        self.cfg.logical_blocks
    }

    fn placement_handles(&self) -> u16 {
        self.cfg.handles.len() as u16
    }

    fn write(&mut self, lba: u64, pid: Option<Pid>, data: &[u8]) -> Result<(), SsdError> {
        let b = self.cfg.block_size_bytes as usize;
        if data.is_empty() || data.len() % b != 0 {
            return Err(SsdError::Length { bytes: data.len(), block_size_bytes: self.cfg.block_size_bytes });
        }
        let blocks = (data.len() / b) as u64;
        self.check_lba(lba, blocks)?;
        for (i, block) in data.chunks(b).enumerate() {
            self.write_block(lba + i as u64, pid, Some(block))?;
        }
        Ok(())
    }

    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), SsdError> {
        self.check_powered()?;
        let b = self.cfg.block_size_bytes as usize;
        if buf.is_empty() || buf.len() % b != 0 {
            return Err(SsdError::Length { bytes: buf.len(), block_size_bytes: self.cfg.block_size_bytes });
        }
        self.check_lba(lba, (buf.len() / b) as u64)?;
        let submit = self.timing.as_mut().map(|t| t.submit_ns());
        let mut done = submit.unwrap_or(0);
        for (i, out) in buf.chunks_mut(b).enumerate() {
            let slot = self.l2p[(lba + i as u64) as usize];
            if slot == UNMAPPED {
                out.fill(0);
            } else {
                let (range, (ru, off)) = (self.data_range(slot), self.timing_place(slot));
                match &self.data {
                    Some(d) => out.copy_from_slice(&d[range]),
                    None => out.fill(0),
                }
                if let (Some(t), Some(submit)) = (&mut self.timing, submit) {
                    done = done.max(t.model.read(submit, ru, off, b as u64));
                }
            }
            self.counters.read_blocks += 1;
        }
        if let (Some(t), Some(submit)) = (&mut self.timing, submit) {
            t.complete(submit, done, false);
        }
        Ok(())
    }

    fn trim(&mut self, lba: u64, blocks: u64) -> Result<(), SsdError> {
        self.check_powered()?;
        self.check_lba(lba, blocks)?;
        for l in lba..lba + blocks {
            let slot = self.l2p[l as usize];
            if slot != UNMAPPED {
                self.invalidate(slot);
                self.l2p[l as usize] = UNMAPPED;
                self.counters.trimmed_blocks += 1;
            }
        }
        Ok(())
    }

    fn counters(&self) -> &SsdCounters {
        &self.counters
    }
}

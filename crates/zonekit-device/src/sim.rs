//! [`SimDevice`]: a deterministic crash simulator for the engines' persistent formats, in the
//! spirit of FoundationDB's simulator and TigerBeetle's VOPR. A seeded run drives an engine on
//! the device, the device dies at an operation chosen by the seed, and [`SimDevice::recover`]
//! builds one post-crash state a real drive could show; the engine then recovers from it and the
//! test checks what it finds against a model of what was acknowledged.
//!
//! # What a crash may do (the model)
//!
//! A *barrier* for a zone is a [`ZonedDevice::flush`] (every zone) or a zone management
//! command on that zone (open, close, finish, reset: the emulators make these durable when they
//! return, covering the zone's data, and the engines rely on that — see [`crate::emu`]).
//! Everything written before a zone's last barrier survives exactly. Of what came after:
//!
//! - **Sequential zones**: the write pointer comes back anywhere between the barrier's write
//!   pointer and the last written one, at any *block* boundary, independently for each zone. A
//!   ZNS drive programs a zone in order and reports its write pointer after power loss as the
//!   end of what it kept: the blocks below it are what the host wrote there, the blocks above
//!   read as never written. So unflushed writes may be lost (the pointer at the barrier), torn
//!   (the pointer inside a multi-block write) or kept, and writes to *different* zones may
//!   survive out of order (a later write to zone B kept, an earlier one to zone A lost), which a
//!   drive with a volatile write cache does. A block is atomic (NVMe's AWUPF of at least one
//!   logical block), so no block is half old and half new.
//! - **Conventional zones**: each block written since the last flush holds any one of its
//!   versions since then, the flushed one included, independently of every other block: a
//!   cache writes back in any order, so a newer block may survive beside an older one.
//! - Open zones come back Closed (Empty when nothing survived), as after a power cycle.
//! - **Bit flips** ([`Faults::flips`]): after the crash, single bits flipped in blocks that
//!   hold data (flushed or not): media damage an engine must report, never read as clean data.
//!
//! The crash itself ([`SimDevice::crash_at`]) happens at an operation of any kind: that
//! operation and every later one fail with [`DeviceError::InjectedFault`] (a crashing write
//! may first land in part, at a block boundary), so the engine sees the device die mid-call.
//! Reads before the crash see every write (a drive's cache serves its own writes).
//!
//! [`SimImage`] does the same one layer down, for the file-backed emulator: a simulated image
//! file whose unsynced sectors a crash keeps at any of their versions (its module doc).
//!
//! The handle is shared (`Clone`): the engine owns one, the test keeps another to arm the
//! crash, recover and count. Everything is decided by the seed, so a run replays exactly.

mod image;
mod runner;

use std::sync::{Arc, Mutex, MutexGuard};

use zonekit_base::Rng;

pub use image::{SimImage, SECTOR_BYTES};
pub use runner::{run_seeds, SeedPlan};

use crate::{DeviceError, DeviceStats, Geometry, Lba, MemDevice, Result, StorageMode, ZoneAction, ZoneBehavior, ZoneDescriptor, ZoneFilter, ZoneId, ZoneType, ZonedDevice};

/// Kinds of device operation, for crash points and coverage.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OpKind {
    Report,
    Read,
    Write,
    Append,
    Manage,
    Flush,
    /// The test crashed the device between two operations ([`SimDevice::crash_now`]).
    Between,
}

impl OpKind {
    pub const ALL: [OpKind; 7] = [OpKind::Report, OpKind::Read, OpKind::Write, OpKind::Append, OpKind::Manage, OpKind::Flush, OpKind::Between];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Report => "report",
            OpKind::Read => "read",
            OpKind::Write => "write",
            OpKind::Append => "append",
            OpKind::Manage => "manage",
            OpKind::Flush => "flush",
            OpKind::Between => "between-ops",
        }
    }
}

/// What [`SimDevice::recover`] may do beyond losing unflushed writes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Single-bit flips in blocks that hold data after the crash.
    pub flips: u32,
}

/// What one crash did: where it struck and which faults the post-crash state holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Index of the operation the device died at (operations since the device was made).
    pub op_index: u64,
    pub op_kind: Option<OpKind>,
    /// Sequential zones with unflushed writes whose write pointer came back at the barrier
    /// (every unflushed write lost), in between, or at the end (every one kept).
    pub zones_dropped: u32,
    pub zones_cut: u32,
    pub zones_kept: u32,
    /// Of the cut zones, those cut inside one write (a torn multi-block write).
    pub torn_writes: u32,
    /// Conventional blocks written since the flush that came back old, new, or as an
    /// intermediate version.
    pub blocks_old: u32,
    pub blocks_new: u32,
    pub blocks_between: u32,
    /// Whether some unflushed writes survived while an earlier one was lost (across zones, or
    /// conventional blocks).
    pub reordered: bool,
    /// Bits flipped: (block, bit within the block).
    pub flips: Vec<(Lba, u32)>,
}

impl CrashReport {
    /// Whether the post-crash state holds media damage an engine must report or survive.
    pub fn damaged(&self) -> bool {
        !self.flips.is_empty()
    }
}

/// Crash points and faults seen over many runs (what `scripts/soak` prints).
#[derive(Clone, Debug, Default)]
pub struct Coverage {
    pub runs: u64,
    pub crashes: u64,
    pub by_op: std::collections::BTreeMap<&'static str, u64>,
    pub zones_dropped: u64,
    pub zones_cut: u64,
    pub zones_kept: u64,
    pub torn_writes: u64,
    pub blocks_old: u64,
    pub blocks_new: u64,
    pub blocks_between: u64,
    pub reordered: u64,
    pub flips: u64,
    /// Damaged states the engine reported as damage (the rest read back whole).
    pub damage_reported: u64,
}

impl Coverage {
    pub fn add(&mut self, r: &CrashReport) {
        self.crashes += 1;
        *self.by_op.entry(r.op_kind.map_or("none", OpKind::name)).or_default() += 1;
        self.zones_dropped += r.zones_dropped as u64;
        self.zones_cut += r.zones_cut as u64;
        self.zones_kept += r.zones_kept as u64;
        self.torn_writes += r.torn_writes as u64;
        self.blocks_old += r.blocks_old as u64;
        self.blocks_new += r.blocks_new as u64;
        self.blocks_between += r.blocks_between as u64;
        self.reordered += r.reordered as u64;
        self.flips += r.flips.len() as u64;
    }

    pub fn merge(&mut self, o: &Coverage) {
        self.runs += o.runs;
        self.crashes += o.crashes;
        for (k, v) in &o.by_op {
            *self.by_op.entry(k).or_default() += v;
        }
        self.zones_dropped += o.zones_dropped;
        self.zones_cut += o.zones_cut;
        self.zones_kept += o.zones_kept;
        self.torn_writes += o.torn_writes;
        self.blocks_old += o.blocks_old;
        self.blocks_new += o.blocks_new;
        self.blocks_between += o.blocks_between;
        self.reordered += o.reordered;
        self.flips += o.flips;
        self.damage_reported += o.damage_reported;
    }
}

impl std::fmt::Display for Coverage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "runs {}, crashes {}", self.runs, self.crashes)?;
        let ops: Vec<String> = self.by_op.iter().map(|(k, v)| format!("{k} {v}")).collect();
        writeln!(f, "crash points: {}", ops.join(", "))?;
        writeln!(
            f,
            "sequential zones with unflushed writes: dropped {}, cut {} (torn inside a write {}), kept {}",
            self.zones_dropped, self.zones_cut, self.torn_writes, self.zones_kept
        )?;
        writeln!(f, "conventional blocks written since the flush: old {}, intermediate {}, new {}", self.blocks_old, self.blocks_between, self.blocks_new)?;
        write!(f, "crashes with writes kept out of order {}; bits flipped {} (damage reported {})", self.reordered, self.flips, self.damage_reported)
    }
}

/// Per sequential zone: what is written and what a crash must keep.
#[derive(Clone, Debug, Default)]
struct ZoneTrack {
    /// Blocks holding data (the live write pointer, minus the zone start).
    data: u64,
    /// Blocks covered by the zone's last barrier.
    durable: u64,
    finished: bool,
    /// Each unflushed write's end (in blocks from the zone start), in order.
    write_ends: Vec<u64>,
}

struct SimState {
    live: MemDevice,
    rng: Rng,
    ops: u64,
    crash_at: Option<u64>,
    crashed: Option<(u64, OpKind)>,
    zones: Vec<ZoneTrack>,
    /// Conventional blocks written since the last flush: block → versions, the flushed one first.
    pending_blocks: std::collections::BTreeMap<u64, Vec<Vec<u8>>>,
    /// Conventional blocks ever written (candidates for flips).
    conventional_written: std::collections::BTreeSet<u64>,
    /// Blocks written since the last crash: half the flips land among them, where the state
    /// recovery has to read (a journal just committed) most likely is.
    recent: std::collections::BTreeSet<u64>,
    /// Print every operation to stderr (`ZONEKIT_SIM_TRACE`), for debugging a seed.
    trace: bool,
}

/// A zoned device whose crashes are chosen by a seed (module doc: what a crash may do).
#[derive(Clone)]
pub struct SimDevice {
    state: Arc<Mutex<SimState>>,
    geometry: Geometry,
    behavior: ZoneBehavior,
    /// This handle's counters (`stats` returns a reference, which a shared state cannot lend).
    stats: DeviceStats,
}

impl SimDevice {
    /// A blank device keeping its data in memory; `seed` decides every crash's outcome.
    pub fn new(geometry: Geometry, behavior: ZoneBehavior, seed: u64) -> Result<SimDevice> {
        let live = MemDevice::new(geometry, behavior, StorageMode::Data)?;
        let state = SimState {
            live,
            rng: Rng::new(seed ^ 0x5349_4D5F_4445_5643),
            ops: 0,
            crash_at: None,
            crashed: None,
            zones: vec![ZoneTrack::default(); geometry.zone_count as usize],
            pending_blocks: Default::default(),
            conventional_written: Default::default(),
            recent: Default::default(),
            trace: std::env::var_os("ZONEKIT_SIM_TRACE").is_some(),
        };
        Ok(SimDevice { state: Arc::new(Mutex::new(state)), geometry, behavior, stats: DeviceStats::new(geometry.zone_count) })
    }

    fn lock(&self) -> MutexGuard<'_, SimState> {
        // A panic while the lock was held (a failed assertion in a test) leaves nothing half
        // done that matters: the test is over.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Operations so far (every kind counts, failed ones too).
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    /// Arms the crash: the operation with this index (see [`SimDevice::ops`]) and every later
    /// one fail. `None` disarms.
    pub fn crash_at(&self, op_index: Option<u64>) {
        self.lock().crash_at = op_index;
    }

    /// Crashes the device now, between two operations.
    pub fn crash_now(&self) {
        let mut s = self.lock();
        if s.crashed.is_none() {
            s.crashed = Some((s.ops, OpKind::Between));
        }
    }

    /// Where the device died, if it has.
    pub fn crashed(&self) -> Option<(u64, OpKind)> {
        self.lock().crashed
    }

    /// Replaces the device's contents by one post-crash state the model allows (chosen by the
    /// seed), plus `faults`, and makes it usable again (disarmed). Crashes it first if it has
    /// not crashed. Handles held by the dead engine see the new state too: drop them first.
    pub fn recover(&self, faults: Faults) -> Result<CrashReport> {
        self.crash_now();
        let mut s = self.lock();
        let (op_index, kind) = s.crashed.expect("crashed above");
        let mut report = CrashReport { op_index, op_kind: Some(kind), ..CrashReport::default() };
        let g = self.geometry;
        let bs = g.block_size_bytes as usize;
        let mut fresh = MemDevice::new(g, self.behavior, StorageMode::Data)?;
        let mut lost_some = false;
        let mut kept_some = false;
        // Conventional zones: every block ever written, at one of its versions since the flush.
        let mut conventional: Vec<(u64, Option<usize>)> = Vec::new();
        let written: Vec<u64> = s.conventional_written.iter().copied().collect();
        for lba in written {
            let versions = s.pending_blocks.get(&lba).map_or(0, Vec::len);
            if versions == 0 {
                conventional.push((lba, None));
                continue;
            }
            let pick = s.rng.below(versions as u64) as usize;
            if pick == 0 {
                report.blocks_old += 1;
                lost_some = true;
            } else if pick + 1 == versions {
                report.blocks_new += 1;
                kept_some = true;
            } else {
                report.blocks_between += 1;
                lost_some = true;
                kept_some = true;
            }
            conventional.push((lba, Some(pick)));
        }
        // Sequential zones: a prefix of the data, at least what the last barrier covered.
        let mode = s.rng.below(4); // 0 all lost, 1 all kept, 2-3 each zone on its own
        let mut keeps: Vec<(u32, u64)> = Vec::new();
        for z in g.first_sequential_zone().0..g.zone_count {
            let t = s.zones[z as usize].clone();
            let keep = if t.data == t.durable {
                t.data
            } else {
                let choice = if mode < 2 { mode } else { s.rng.below(4) };
                let keep = match choice {
                    0 => t.durable,
                    1 => t.data,
                    _ => t.durable + s.rng.below(t.data - t.durable + 1),
                };
                if keep == t.durable {
                    report.zones_dropped += 1;
                    lost_some = true;
                } else if keep == t.data {
                    report.zones_kept += 1;
                    kept_some = true;
                } else {
                    report.zones_cut += 1;
                    lost_some = true;
                    kept_some = true;
                    let mut start = t.durable;
                    for &end in &t.write_ends {
                        if start < keep && keep < end {
                            report.torn_writes += 1;
                        }
                        start = end;
                    }
                }
                keep
            };
            keeps.push((z, keep));
        }
        report.reordered = lost_some && kept_some;
        // Bit flips in blocks that hold data after the crash.
        let mut holders: Vec<u64> = conventional.iter().map(|&(lba, _)| lba).collect();
        for &(z, keep) in &keeps {
            let start = g.zone_start(ZoneId(z)).0;
            holders.extend(start..start + keep);
        }
        let mut flips: std::collections::BTreeMap<u64, Vec<u32>> = Default::default();
        let recent: Vec<u64> = holders.iter().copied().filter(|b| s.recent.contains(b)).collect();
        for _ in 0..if holders.is_empty() { 0 } else { faults.flips } {
            let pool = if !recent.is_empty() && s.rng.chance(0.5) { &recent } else { &holders };
            let lba = pool[s.rng.below(pool.len() as u64) as usize];
            let bit = s.rng.below(bs as u64 * 8) as u32;
            flips.entry(lba).or_default().push(bit);
            report.flips.push((Lba(lba), bit));
        }
        let mut buf = vec![0u8; bs];
        let put = |fresh: &mut MemDevice, lba: u64, buf: &mut [u8]| -> Result<()> {
            for &bit in flips.get(&lba).into_iter().flatten() {
                buf[bit as usize / 8] ^= 1 << (bit % 8);
            }
            fresh.write(Lba(lba), buf)
        };
        for &(lba, pick) in &conventional {
            match pick {
                Some(p) => buf.copy_from_slice(&s.pending_blocks[&lba][p]),
                None => s.live.read(Lba(lba), &mut buf)?,
            }
            put(&mut fresh, lba, &mut buf)?;
        }
        for &(z, keep) in &keeps {
            let zone_start = g.zone_start(ZoneId(z)).0;
            for b in zone_start..zone_start + keep {
                s.live.read(Lba(b), &mut buf)?;
                put(&mut fresh, b, &mut buf)?;
            }
            if s.zones[z as usize].finished {
                fresh.finish_zone(ZoneId(z))?;
            } else if keep > 0 && keep < g.zone_capacity_blocks {
                fresh.close_zone(ZoneId(z))?;
            }
        }
        fresh.flush()?;
        // The new state is the durable one.
        s.live = fresh;
        for (z, keep) in keeps {
            let t = &mut s.zones[z as usize];
            *t = ZoneTrack { data: keep, durable: keep, finished: t.finished, write_ends: Vec::new() };
        }
        s.pending_blocks.clear();
        s.recent.clear();
        s.crashed = None;
        s.crash_at = None;
        Ok(report)
    }

    /// Counts an operation and fails it if the device is dead (or dies now).
    fn gate(s: &mut SimState, kind: OpKind) -> Result<bool> {
        let index = s.ops;
        if s.trace {
            eprintln!("sim op {index}: {}", kind.name());
        }
        s.ops += 1;
        if let Some((at, _)) = s.crashed {
            return Err(DeviceError::InjectedFault { op_index: at });
        }
        if s.crash_at == Some(index) {
            s.crashed = Some((index, kind));
            return Ok(true);
        }
        Ok(false)
    }

    fn note_write(&self, s: &mut SimState, lba: Lba, data: &[u8], old: Option<Vec<Vec<u8>>>) {
        let g = self.geometry;
        let zone = g.zone_of(lba).expect("written, so in range");
        let bs = g.block_size_bytes as usize;
        s.recent.extend(lba.0..lba.0 + (data.len() / bs) as u64);
        if g.zone_type(zone) == ZoneType::Conventional {
            let old = old.expect("conventional writes keep the old blocks");
            for (i, block) in data.chunks(bs).enumerate() {
                let b = lba.0 + i as u64;
                s.conventional_written.insert(b);
                let versions = s.pending_blocks.entry(b).or_insert_with(|| vec![old[i].clone()]);
                versions.push(block.to_vec());
            }
        } else {
            let t = &mut s.zones[zone.0 as usize];
            t.data = lba.0 - g.zone_start(zone).0 + (data.len() / bs) as u64;
            t.write_ends.push(t.data);
        }
    }

    fn old_blocks(&self, s: &mut SimState, lba: Lba, blocks: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let g = self.geometry;
        let Some(zone) = g.zone_of(lba) else { return Ok(None) };
        if g.zone_type(zone) != ZoneType::Conventional || lba.0 + blocks as u64 > g.total_blocks() {
            return Ok(None);
        }
        let bs = g.block_size_bytes as usize;
        let mut out = Vec::with_capacity(blocks);
        for i in 0..blocks {
            let mut b = vec![0u8; bs];
            // A block past the conventional zones fails the write itself below.
            if s.live.read(Lba(lba.0 + i as u64), &mut b).is_err() {
                return Ok(None);
            }
            out.push(b);
        }
        Ok(Some(out))
    }

    fn barrier_zone(s: &mut SimState, zone: usize) {
        let t = &mut s.zones[zone];
        t.durable = t.data;
        t.write_ends.clear();
    }
}

impl ZonedDevice for SimDevice {
    fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    fn behavior(&self) -> ZoneBehavior {
        self.behavior
    }

    fn report_zones(&mut self, start: Lba, filter: ZoneFilter, max_zones: usize, out: &mut Vec<ZoneDescriptor>) -> Result<usize> {
        let state = self.state.clone();
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if Self::gate(&mut s, OpKind::Report)? {
            return Err(DeviceError::InjectedFault { op_index: s.ops - 1 });
        }
        s.live.report_zones(start, filter, max_zones, out)
    }

    fn read(&mut self, lba: Lba, buf: &mut [u8]) -> Result<()> {
        let state = self.state.clone();
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if Self::gate(&mut s, OpKind::Read)? {
            return Err(DeviceError::InjectedFault { op_index: s.ops - 1 });
        }
        s.live.read(lba, buf)?;
        self.stats.reads.add(buf.len() as u64);
        Ok(())
    }

    fn write(&mut self, lba: Lba, data: &[u8]) -> Result<()> {
        let state = self.state.clone();
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        let dies = Self::gate(&mut s, OpKind::Write)?;
        let bs = self.geometry.block_size_bytes as usize;
        // A dying write lands in part: a prefix of its blocks.
        let data = if dies && data.len() % bs == 0 { &data[..bs * s.rng.below((data.len() / bs) as u64 + 1) as usize] } else { data };
        if !data.is_empty() {
            let old = self.old_blocks(&mut s, lba, data.len() / bs)?;
            s.live.write(lba, data)?;
            self.note_write(&mut s, lba, data, old);
        }
        if dies {
            return Err(DeviceError::InjectedFault { op_index: s.ops - 1 });
        }
        self.stats.writes.add(data.len() as u64);
        Ok(())
    }

    fn append(&mut self, zone: ZoneId, data: &[u8]) -> Result<Lba> {
        let state = self.state.clone();
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        let dies = Self::gate(&mut s, OpKind::Append)?;
        let bs = self.geometry.block_size_bytes as usize;
        let data = if dies && data.len() % bs == 0 { &data[..bs * s.rng.below((data.len() / bs) as u64 + 1) as usize] } else { data };
        if !data.is_empty() {
            let lba = s.live.append(zone, data)?;
            self.note_write(&mut s, lba, data, None);
            if !dies {
                self.stats.appends.add(data.len() as u64);
                return Ok(lba);
            }
        }
        Err(DeviceError::InjectedFault { op_index: s.ops - 1 })
    }

    fn manage(&mut self, action: ZoneAction, zone: ZoneId) -> Result<()> {
        let state = self.state.clone();
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if Self::gate(&mut s, OpKind::Manage)? {
            return Err(DeviceError::InjectedFault { op_index: s.ops - 1 });
        }
        s.live.manage(action, zone)?;
        let t = &mut s.zones[zone.0 as usize];
        let erased = action == ZoneAction::Reset && t.data > 0;
        match action {
            ZoneAction::Reset => {
                t.data = 0;
                t.finished = false;
            }
            ZoneAction::Finish => t.finished = true,
            ZoneAction::Open | ZoneAction::Close => {}
        }
        Self::barrier_zone(&mut s, zone.0 as usize);
        self.stats.record_action(action, zone, erased);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let state = self.state.clone();
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if Self::gate(&mut s, OpKind::Flush)? {
            return Err(DeviceError::InjectedFault { op_index: s.ops - 1 });
        }
        s.live.flush()?;
        for z in 0..s.zones.len() {
            Self::barrier_zone(&mut s, z);
        }
        s.pending_blocks.clear();
        self.stats.flushes += 1;
        Ok(())
    }

    fn stats(&self) -> &DeviceStats {
        &self.stats
    }
}

#[cfg(test)]
mod tests;

//! The file system: files as extents in zones over any [`ZonedDevice`].
//!
//! - Writes are buffered per file and go to the file's current zone in whole blocks; `sync`
//!   pads the last partial block, makes the data durable, then commits the new extents to the
//!   metadata log. Extents never cross zones.
//! - Allocation: a rule from [`crate::alloc::ALLOCATORS`] picks the partly written zone a file's
//!   bytes go to, else an empty zone: `lifetime` (seed 001: same write-lifetime hint only),
//!   `first-fit`, `zenfs` (stock ZenFS: short-lived data may join longer-lived zones). Before an
//!   empty zone's first write the device hears the lifetime it will hold
//!   ([`ZonedDevice::hint_zone`]): a zoned adapter over an FDP SSD (`zonekit_ssd::zoned`) picks
//!   the zone's placement handle by it; ZNS ignores it.
//! - Space: a zone whose data is all deleted is reset. With GC on, when empty zones run short
//!   the collector takes the victim `zonekit-pool`'s `levels` policy picks (least live data by
//!   quarters, oldest first within a level; zones ≥ 75 % live only when no empty zone is left), copies
//!   its live extents to a zone of the same lifetime, commits the new extents, and resets it. A write fails with [`FsError::NoSpace`] only when no zone
//!   can take it and GC cannot make room.
//! - Read-only mounts ([`Zfs::mount_read_only`]): recovery in memory only (no roll-over past a
//!   torn metadata tail, no reset of orphaned zones); every mutating call returns
//!   [`FsError::ReadOnly`] before it reaches the device, which is never written, reset,
//!   finished or flushed. Corrupt committed metadata fails every mount and writes nothing.
//! - Data checksums: every extent carries the CRC-32 of exactly its bytes (computed as they are
//!   written, continued when an unsynced extent grows by appends, recomputed from verified data
//!   when GC copies it). The first read of an extent after mount verifies it whole (zones are
//!   append-only, so it stays verified until its zone is reset; later reads read only their
//!   blocks), GC verifies before it copies, and fsck verifies every extent; a mismatch is
//!   [`FsError::Checksum`] naming file, zone and LBA, and an extent reaching past its zone's
//!   write pointer is [`FsError::PastWritePointer`] (never zeros). Cost: 4 bytes per extent in
//!   the metadata (24 instead of 20); extents are cut at [`EXTENT_MAX_BYTES`] (1 MiB), so a
//!   first read verifies at most 1 MiB per extent it touches; CPU: one CRC-32 pass over each
//!   extent once per mount (crc32fast, several GB/s with SSE4.2/PCLMUL) and over the bytes
//!   written. Verifying every read whole cost db_bench's overwrite 2.5× and readrandom 15×;
//!   remembering verified extents brings both back to within 0.9–1.04× of no checksums
//!   (500 K keys, same session). Per-block CRCs would cost 4 bytes of metadata per block (1 MiB
//!   per GiB), which the snapshot of a metadata zone would have to hold. Bit rot after an
//!   extent was verified is caught at the next mount or by fsck, not by that mount's reads.
//! - Durability: a file's data is durable once `sync` returns; after a crash every file reads
//!   back its content as of its last sync; data written since is garbage.
//! - What RocksDB needs and is here: create, sequential append, positional read, size, rename
//!   (atomic, replacing), delete, sync, listing by name prefix. Not here, by design: directories
//!   (names are flat paths; a listing by prefix serves `GetChildren`), file locking and
//!   RocksDB's informational `LOG` — the plugin keeps those on the host file system, as ZenFS
//!   keeps them on its auxiliary path; hard links, random writes, truncation and modification
//!   times (the plugin reports "now").

use std::collections::{BTreeMap, HashSet};
use std::io::{ErrorKind, Read};

use zonekit_device::{AutoClose, DeviceError, Lba, ZoneAction, ZoneFilter, ZoneId, ZoneState, ZoneType, ZonedDevice};

use zonekit_pool::victim::{Levels, Victim, VictimCtx};
use zonekit_pool::{ZoneInfo, ZoneUse};

use crate::alloc::{self, AllocInfo, Allocator};
use crate::metalog::{Extent, LogError, MetaLog, Record};
pub use crate::usage::ZoneUsage;
use crate::FileTable;

#[derive(Copy, Clone, Debug)]
pub struct FsConfig {
    /// The allocation rule's row in [`crate::alloc::ALLOCATORS`].
    pub allocation: &'static AllocInfo,
    pub gc: bool,
    /// GC runs when fewer empty zones than this remain.
    pub gc_empty_zones_low: usize,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig { allocation: &alloc::lifetime::LIFETIME, gc: true, gc_empty_zones_low: 3 }
    }
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    #[error("no space: no zone can take the write and GC cannot make room ({empty_zones} empty zones, {live_bytes} live bytes)")]
    NoSpace { empty_zones: usize, live_bytes: u64 },
    /// A put whose source does not fit; nothing of it is kept (see [`Zfs::put_from`]).
    #[error("no space: {}", put_no_space(*size_bytes, *fit_bytes, *written))]
    PutNoSpace {
        /// The source's size, when it was known before reading it.
        size_bytes: Option<u64>,
        /// Refused up front (`written` false): the free bytes plus the garbage GC can reclaim.
        /// Stopped mid-way: the bytes written before space ran out (then deleted).
        fit_bytes: u64,
        written: bool,
    },
    /// A put's source failed to read; nothing of the put is kept.
    #[error("reading the source: {0}")]
    Source(std::io::Error),
    #[error("{0}: no such file")]
    NotFound(String),
    #[error("{0}: file exists")]
    Exists(String),
    #[error("the device is too small: {0}")]
    TooSmall(String),
    /// The device's open/active zone limits are below what the file system keeps open.
    #[error("the device's zone limits cannot run the file system: {0}")]
    Limits(String),
    #[error("file name {name:?}: {reason}")]
    BadName { name: String, reason: String },
    #[error("lifetime hint {0} is out of range: RocksDB's hints are 0 (not set) to {LIFETIME_MAX} (extreme)")]
    BadLifetime(u8),
    #[error("corrupt file system: {0}")]
    Corrupt(String),
    /// Data that does not match its extent's checksum: never returned.
    #[error("{name}: data checksum mismatch in the extent at zone {zone}, LBA {lba} ({len_bytes} bytes): stored {stored:08x}, read {computed:08x}")]
    Checksum { name: String, zone: u32, lba: u64, len_bytes: u64, stored: u32, computed: u32 },
    /// An extent whose blocks are not all below its zone's write pointer (the zone was reset or
    /// lost data behind the file system's back).
    #[error("{name}: the extent at zone {zone}, LBA {lba} (+{blocks} blocks) reaches past the write pointer of the zone (LBA {write_pointer}): its data is gone")]
    PastWritePointer { name: String, zone: u32, lba: u64, blocks: u64, write_pointer: u64 },
    /// A mutating call on a read-only mount; names the call.
    #[error("{0}: the file system is mounted read-only")]
    ReadOnly(&'static str),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Device(#[from] DeviceError),
}

fn put_no_space(size_bytes: Option<u64>, fit_bytes: u64, written: bool) -> String {
    match (size_bytes, written) {
        (Some(size), false) => format!("the source is {size} bytes and at most {fit_bytes} fit (free space and garbage GC can reclaim); nothing was written"),
        (Some(size), true) => format!("{fit_bytes} of the source's {size} bytes fit before the file system was full; the put was undone"),
        (None, _) => format!("{fit_bytes} bytes of the source fit before the file system was full; the put was undone"),
    }
}

/// An open file's unsynced state.
#[derive(Default)]
struct WriteState {
    /// Bytes not yet written to the device (less than a block after each flush).
    buffer: Vec<u8>,
    /// Extents written since the last sync, not yet in the metadata log.
    unlogged: Vec<Extent>,
    zone: Option<u32>,
}

/// Space as `df` shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Space {
    pub capacity_bytes: u64,
    pub live_bytes: u64,
    /// Written but no longer referenced.
    pub garbage_bytes: u64,
    /// Writable now: empty zones plus the unwritten part of partly written zones.
    pub free_bytes: u64,
}

pub struct Zfs<D: ZonedDevice> {
    dev: D,
    log: MetaLog,
    table: FileTable,
    meta_zones: [ZoneId; 2],
    zones: BTreeMap<u32, ZoneUsage>,
    open: BTreeMap<u64, WriteState>,
    config: FsConfig,
    allocator: Box<dyn Allocator>,
    victim: Box<dyn Victim>,
    block_bytes: u64,
    zone_blocks: u64,
    next_id: u64,
    fill_seq: u64,
    active_max: usize,
    /// Set while GC relocates data, so that allocation does not start another GC.
    in_gc: bool,
    /// Zones relocated by GC since mount.
    stats_relocations: u64,
    /// Zones holding extents of the write in progress (its state is out of `open` while it
    /// runs): GC must not take them.
    pinned: Vec<u32>,
    /// Extents (zone, lba, length, checksum) verified since mount. Zones are append-only, so a
    /// verified extent's bytes cannot change until its zone is reset (which forgets its
    /// entries): later reads of it read only the blocks they need instead of the whole extent.
    verified: HashSet<(u32, u64, u64, u32)>,
    /// Mounted with [`Zfs::mount_read_only`]: nothing may reach the device but reads.
    read_only: bool,
}

const META_ZONES: usize = 2;
/// Verified extents remembered at most (16 bytes each); past it the set starts over.
const VERIFIED_MAX: usize = 1 << 20;

/// Longest extent: a read verifies whole extents, so this bounds what a small read reads.
pub const EXTENT_MAX_BYTES: u64 = 1 << 20;

/// Longest file name, in bytes (RocksDB names are paths well below this).
pub const NAME_MAX_BYTES: usize = 1024;
/// Highest write-lifetime hint (RocksDB's `WLTH_EXTREME`).
pub const LIFETIME_MAX: u8 = zonekit_device::LIFETIME_HINT_MAX;
/// Names of files a [`Zfs::put`] is still writing: user names never start with it, so an
/// unfinished put never blocks a name; a read-write mount deletes leftovers of killed puts.
pub const PUT_TEMP_PREFIX: &str = ".zk-partial.";
/// What [`Zfs::put_from`] reads from its source at a time: with the file's write buffer and
/// one extent's copy, what a put holds in memory whatever the source's size.
pub const PUT_CHUNK_BYTES: usize = 1 << 20;
/// [`Zfs::put_from`] syncs its temporary file after every this many bytes, so the extents it
/// holds unlogged (and pinned against GC) and each metadata batch stay bounded too. A multiple
/// of the chunk, so a sync falls where whole chunks end and pads nothing (blocks are a power
/// of two of at most this).
const PUT_SYNC_BYTES: u64 = 64 << 20;
const _: () = assert!(PUT_SYNC_BYTES % PUT_CHUNK_BYTES as u64 == 0);
/// Active zones the file system needs: both metadata zones stay partly written after the
/// first roll-over (the older one until the next), plus one data zone.
const ACTIVE_ZONES_MIN: u32 = META_ZONES as u32 + 1;

/// Refuses names that cannot be told apart from paths elsewhere or from put's temporaries.
fn check_name(name: &str) -> Result<(), FsError> {
    let bad = |reason: String| Err(FsError::BadName { name: name.into(), reason });
    if name.is_empty() {
        return bad("empty".into());
    }
    if name.len() > NAME_MAX_BYTES {
        return bad(format!("{} bytes long, at most {NAME_MAX_BYTES}", name.len()));
    }
    if name.contains('\0') {
        return bad("contains a NUL byte".into());
    }
    if name.split('/').any(|c| c == "." || c == "..") {
        return bad("has a `.` or `..` component".into());
    }
    if name.starts_with(PUT_TEMP_PREFIX) {
        return bad(format!("names starting with {PUT_TEMP_PREFIX:?} are reserved for unfinished puts"));
    }
    Ok(())
}

/// Reads until `buf` is full or the source ends; returns how many bytes it holds.
fn fill(source: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match source.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

fn check_lifetime(lifetime: u8) -> Result<(), FsError> {
    if lifetime > LIFETIME_MAX {
        return Err(FsError::BadLifetime(lifetime));
    }
    Ok(())
}

/// Refuses a device whose limits the file system would exceed at its first writes.
fn check_limits(dev: &dyn ZonedDevice) -> Result<(), FsError> {
    let g = dev.geometry();
    if let Some(active) = g.active_zones_max.filter(|a| *a < ACTIVE_ZONES_MIN) {
        return Err(FsError::Limits(format!("the device allows {active} active zones; the file system needs at least {ACTIVE_ZONES_MIN} (2 metadata zones and 1 data zone)")));
    }
    // Without auto-close, zones it implicitly opened stay open: the open limit binds as well.
    if dev.behavior().auto_close == AutoClose::Off {
        if let Some(open) = g.open_zones_max.filter(|o| *o < ACTIVE_ZONES_MIN) {
            return Err(FsError::Limits(format!("the device allows {open} open zones and never closes one itself; the file system needs at least {ACTIVE_ZONES_MIN}")));
        }
    }
    Ok(())
}

fn data_zones(dev: &mut dyn ZonedDevice) -> Result<(Vec<u32>, [ZoneId; 2]), FsError> {
    let seq: Vec<u32> = dev.report_all(ZoneFilter::All)?.iter().filter(|z| z.zone_type == ZoneType::SequentialWriteRequired).map(|z| z.id.0).collect();
    if seq.len() < META_ZONES + 4 {
        return Err(FsError::TooSmall(format!("{} sequential zones; at least {} needed", seq.len(), META_ZONES + 4)));
    }
    Ok((seq[META_ZONES..].to_vec(), [ZoneId(seq[0]), ZoneId(seq[1])]))
}

impl<D: ZonedDevice> Zfs<D> {
    /// Creates an empty file system (erases the device).
    pub fn mkfs(mut dev: D, config: FsConfig) -> Result<Zfs<D>, FsError> {
        let (data, meta) = data_zones(&mut dev)?;
        check_limits(&dev)?;
        // The empty file system commits first (over an old one, atomically: see
        // `MetaLog::format`); only then are the old data zones erased. A crash in between
        // leaves the new file system with zones written but never committed, which mount
        // resets like any other crash leftover.
        let log = MetaLog::format(&mut dev, meta)?;
        for z in &data {
            dev.reset_zone(ZoneId(*z))?;
        }
        Zfs::assemble(dev, log, FileTable::default(), meta, config, false)
    }

    /// Mounts an existing file system: replays the metadata log and rebuilds zone usage, then
    /// repairs what a crash left (a torn metadata tail, zones written but never committed).
    pub fn mount(dev: D, config: FsConfig) -> Result<Zfs<D>, FsError> {
        Zfs::mount_with(dev, config, false)
    }

    /// Mounts without ever writing to the device: recovery happens in memory only, and every
    /// mutating call returns [`FsError::ReadOnly`]. For inspection (ls, df, fsck, dump, cat).
    pub fn mount_read_only(dev: D, config: FsConfig) -> Result<Zfs<D>, FsError> {
        Zfs::mount_with(dev, config, true)
    }

    /// Whether the device holds a zonekit file system (a valid metadata header, even if what
    /// follows is damaged): what mkfs would erase. Only reads.
    pub fn is_formatted(dev: &mut D) -> Result<bool, FsError> {
        let meta = match data_zones(dev) {
            Ok((_, meta)) => meta,
            Err(FsError::TooSmall(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        match MetaLog::recover(dev, meta) {
            Ok(_) => Ok(true),
            Err(LogError::NotFormatted(..)) => Ok(false),
            Err(LogError::Device(e)) => Err(e.into()),
            Err(_) => Ok(true),
        }
    }

    fn mount_with(mut dev: D, config: FsConfig, read_only: bool) -> Result<Zfs<D>, FsError> {
        let (data, meta) = data_zones(&mut dev)?;
        if !read_only {
            check_limits(&dev)?;
        }
        let (mut log, records) = MetaLog::recover(&mut dev, meta)?;
        // Checked before any repair writes: inconsistent committed records are corruption,
        // and must not be copied into a new generation.
        let table = FileTable::from_records(&records).map_err(|e| FsError::Corrupt(format!("metadata zone {}: {e}", log.active_zone())))?;
        if let Some((f, e)) = table.files().flat_map(|f| f.extents.iter().map(move |e| (f, e))).find(|(_, e)| !data.contains(&e.zone)) {
            return Err(FsError::Corrupt(format!("metadata zone {}: {}: extent in zone {} which is not a data zone", log.active_zone(), f.name, e.zone)));
        }
        if !read_only {
            log.make_writable(&mut dev, &records)?;
        }
        Zfs::assemble(dev, log, table, meta, config, read_only)
    }

    fn assemble(mut dev: D, log: MetaLog, table: FileTable, meta: [ZoneId; 2], config: FsConfig, read_only: bool) -> Result<Zfs<D>, FsError> {
        let g = *dev.geometry();
        let (data, _) = data_zones(&mut dev)?;
        let reports = dev.report_all(ZoneFilter::All)?;
        let mut zones = BTreeMap::new();
        for z in data {
            let d = reports[z as usize];
            let full = matches!(d.state, ZoneState::Full);
            let written = if full { g.zone_capacity_blocks } else { d.written_blocks() };
            zones.insert(z, ZoneUsage { written_blocks: written, full, ..ZoneUsage::default() });
        }
        let mut fs = Zfs {
            dev,
            log,
            table: FileTable::default(),
            meta_zones: meta,
            zones,
            open: BTreeMap::new(),
            allocator: alloc::create(config.allocation),
            victim: Box::new(Levels::default()),
            config,
            block_bytes: g.block_size_bytes as u64,
            zone_blocks: g.zone_capacity_blocks,
            next_id: 1,
            fill_seq: 0,
            active_max: g.active_zones_max.map_or(usize::MAX, |a| a as usize).saturating_sub(META_ZONES).max(1),
            in_gc: false,
            stats_relocations: 0,
            pinned: Vec::new(),
            verified: HashSet::new(),
            read_only,
        };
        for f in table.files() {
            fs.next_id = fs.next_id.max(f.id + 1);
            for e in &f.extents {
                let z = fs.zones.get_mut(&e.zone).ok_or_else(|| FsError::Corrupt(format!("{}: extent in zone {} which is not a data zone", f.name, e.zone)))?;
                z.live_bytes += e.len_bytes;
                z.lifetime.get_or_insert(f.lifetime);
            }
        }
        fs.table = table;
        // Partly written zones that hold nothing live (writes lost in a crash before their
        // sync) would never fill or be collected: reset them now (read-write only; read-only
        // they show as garbage).
        if fs.read_only {
            return Ok(fs);
        }
        // Unfinished puts (killed, or failed on a device that kept failing) are deleted; their
        // zones then count as orphaned below.
        let unfinished: Vec<String> = fs.table.files().filter(|f| f.name.starts_with(PUT_TEMP_PREFIX)).map(|f| f.name.clone()).collect();
        for name in unfinished {
            fs.delete(&name)?;
        }
        let orphaned: Vec<u32> = fs.zones.iter().filter(|(_, u)| u.written_blocks > 0 && u.live_bytes == 0).map(|(z, _)| *z).collect();
        for z in orphaned {
            fs.reset_zone(z)?;
        }
        // Zones that will take more writes tell a fresh device their lifetime again (a device
        // keeps hints only while it is open).
        let continued: Vec<(u32, u8)> = fs.zones.iter().filter(|(_, u)| u.written_blocks > 0 && !u.full).filter_map(|(z, u)| Some((*z, u.lifetime?))).collect();
        for (z, lifetime) in continued {
            fs.dev.hint_zone(ZoneId(z), lifetime);
        }
        Ok(fs)
    }

    pub fn device(&self) -> &D {
        &self.dev
    }

    /// Zones GC has relocated and reset since mount.
    pub fn gc_relocations(&self) -> u64 {
        self.stats_relocations
    }

    /// The device, for tests that inject faults into it.
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    pub fn into_device(self) -> D {
        self.dev
    }

    pub fn table(&self) -> &FileTable {
        &self.table
    }

    pub fn zones(&self) -> &BTreeMap<u32, ZoneUsage> {
        &self.zones
    }

    /// Refuses a mutating call on a read-only mount, before it touches anything.
    fn writable(&self, call: &'static str) -> Result<(), FsError> {
        if self.read_only {
            return Err(FsError::ReadOnly(call));
        }
        Ok(())
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    fn snapshot(table: &FileTable) -> Vec<Record> {
        table.snapshot()
    }

    fn commit(&mut self, records: &[Record]) -> Result<(), FsError> {
        for r in records {
            self.table.apply(r).map_err(FsError::Corrupt)?;
            self.log.append(r);
        }
        let table = &self.table;
        self.log.commit(&mut self.dev, &|| Self::snapshot(table))?;
        Ok(())
    }

    /// Creates an empty file with a write-lifetime hint.
    pub fn create(&mut self, name: &str, lifetime: u8) -> Result<u64, FsError> {
        self.writable("create")?;
        check_name(name)?;
        self.create_unchecked(name, lifetime)
    }

    /// [`Zfs::create`] without the name check (put's temporaries have reserved names).
    fn create_unchecked(&mut self, name: &str, lifetime: u8) -> Result<u64, FsError> {
        check_lifetime(lifetime)?;
        if self.table.by_name(name).is_some() {
            return Err(FsError::Exists(name.into()));
        }
        let id = self.next_id;
        self.next_id += 1;
        self.commit(&[Record::CreateFile { id, name: name.into(), lifetime }])?;
        Ok(id)
    }

    /// Sets a file's write-lifetime hint. RocksDB gives it after creating the file; zones are
    /// chosen when data is first written out, so a hint set before that decides placement.
    pub fn set_lifetime(&mut self, name: &str, lifetime: u8) -> Result<(), FsError> {
        self.writable("set_lifetime")?;
        check_lifetime(lifetime)?;
        let id = self.id_of(name)?;
        if self.table.by_name(name).is_some_and(|f| f.lifetime == lifetime) {
            return Ok(());
        }
        self.commit(&[Record::SetLifetime { id, lifetime }])
    }

    fn id_of(&self, name: &str) -> Result<u64, FsError> {
        self.table.by_name(name).map(|f| f.id).ok_or_else(|| FsError::NotFound(name.into()))
    }

    /// Appends bytes to a file (buffered until a block fills or `sync`).
    pub fn append(&mut self, name: &str, data: &[u8]) -> Result<(), FsError> {
        self.writable("append")?;
        let id = self.id_of(name)?;
        let state = self.open.entry(id).or_default();
        state.buffer.extend_from_slice(data);
        let full = state.buffer.len() as u64 / self.block_bytes * self.block_bytes;
        if full >= 64 * self.block_bytes {
            self.write_out(id, full as usize, false)?;
        }
        Ok(())
    }

    /// Makes the file's appended data durable.
    pub fn sync(&mut self, name: &str) -> Result<(), FsError> {
        self.writable("sync")?;
        let id = self.id_of(name)?;
        let Some(state) = self.open.get(&id) else { return Ok(()) };
        let len = state.buffer.len();
        if len > 0 {
            self.write_out(id, len, true)?;
        }
        let state = self.open.get_mut(&id).unwrap();
        let extents = std::mem::take(&mut state.unlogged);
        if extents.is_empty() {
            return Ok(());
        }
        self.dev.flush()?;
        let records: Vec<Record> = extents.into_iter().map(|extent| Record::AppendExtent { id, extent }).collect();
        self.commit(&records)
    }

    /// Writes the first `len` buffered bytes (padded to blocks when `pad`) to the device.
    fn write_out(&mut self, id: u64, len: usize, pad: bool) -> Result<(), FsError> {
        let lifetime = self.table.by_id(id).map_or(0, |f| f.lifetime);
        let mut state = self.open.remove(&id).unwrap_or_default();
        let bytes: Vec<u8> = state.buffer.drain(..len).collect();
        let result = self.write_bytes(&mut state, lifetime, &bytes, pad);
        self.open.insert(id, state);
        result
    }

    fn write_bytes(&mut self, state: &mut WriteState, lifetime: u8, bytes: &[u8], pad: bool) -> Result<(), FsError> {
        let bs = self.block_bytes as usize;
        let mut at = 0;
        while at < bytes.len() {
            // Pins stack: GC's own copies (nested writes) must not drop the outer write's pins.
            let outer = self.pinned.len();
            self.pinned.extend(state.unlogged.iter().map(|e| e.zone));
            let zone = self.zone_for(state.zone, lifetime, bytes.len() - at);
            self.pinned.truncate(outer);
            let zone = zone?;
            if self.zones[&zone].written_blocks == 0 {
                // The zone's first bytes decide its lifetime (`ZoneUsage::lifetime`): tell the
                // device, which on an FDP SSD writes the zone through that lifetime's handle.
                self.dev.hint_zone(ZoneId(zone), lifetime);
            }
            state.zone = Some(zone);
            let room_blocks = self.zone_blocks - self.zones[&zone].written_blocks;
            let take = (bytes.len() - at).min(room_blocks as usize * bs).min(self.extent_max_bytes() as usize);
            let blocks = take.div_ceil(bs);
            let mut buf = bytes[at..at + take].to_vec();
            if buf.len() % bs != 0 {
                debug_assert!(pad || at + take < bytes.len());
                buf.resize(blocks * bs, 0);
            }
            let lba = self.dev.append(ZoneId(zone), &buf)?;
            let usage = self.zones.get_mut(&zone).unwrap();
            usage.written_blocks += blocks as u64;
            usage.live_bytes += take as u64;
            usage.lifetime.get_or_insert(lifetime);
            if usage.written_blocks == self.zone_blocks {
                usage.full = true;
                usage.filled_seq = self.fill_seq;
                self.fill_seq += 1;
                state.zone = None;
            }
            // Contiguous with the last unlogged extent and within the extent limit: extend it;
            // its checksum continues over the new bytes, so it covers exactly its bytes.
            let piece = &bytes[at..at + take];
            let max = self.extent_max_bytes();
            match state.unlogged.last_mut() {
                Some(e)
                    if e.zone == zone
                        && e.lba * self.block_bytes + e.len_bytes == lba.0 * self.block_bytes
                        && e.len_bytes % self.block_bytes == 0
                        && e.len_bytes + take as u64 <= max =>
                {
                    let mut h = crc32fast::Hasher::new_with_initial(e.crc32);
                    h.update(piece);
                    e.crc32 = h.finalize();
                    e.len_bytes += take as u64;
                }
                _ => state.unlogged.push(Extent { zone, lba: lba.0, len_bytes: take as u64, crc32: crc32fast::hash(piece) }),
            }
            at += take;
        }
        Ok(())
    }

    /// [`EXTENT_MAX_BYTES`] in whole blocks (at least one).
    fn extent_max_bytes(&self) -> u64 {
        (EXTENT_MAX_BYTES / self.block_bytes).max(1) * self.block_bytes
    }

    /// Reads a whole extent of file `name` and verifies it: below the zone's write pointer and
    /// matching its checksum. Returns exactly its `len_bytes` bytes.
    fn read_extent(&mut self, name: &str, e: &Extent) -> Result<Vec<u8>, FsError> {
        let mut data = self.read_extent_blocks(name, e, 0, e.len_bytes)?;
        data.truncate(e.len_bytes as usize);
        let computed = crc32fast::hash(&data);
        if computed != e.crc32 {
            return Err(FsError::Checksum { name: name.into(), zone: e.zone, lba: e.lba, len_bytes: e.len_bytes, stored: e.crc32, computed });
        }
        Ok(data)
    }

    /// Bytes `from..from + out.len()` of an extent verified earlier: only the blocks they lie in.
    fn read_verified(&mut self, name: &str, e: &Extent, from: u64, out: &mut [u8]) -> Result<(), FsError> {
        let blocks = self.read_extent_blocks(name, e, from, from + out.len() as u64)?;
        let skip = (from % self.block_bytes) as usize;
        out.copy_from_slice(&blocks[skip..skip + out.len()]);
        Ok(())
    }

    /// The whole blocks holding bytes `from..to` of an extent, refused if any of them lies
    /// past its zone's write pointer (never zeros).
    fn read_extent_blocks(&mut self, name: &str, e: &Extent, from: u64, to: u64) -> Result<Vec<u8>, FsError> {
        let bs = self.block_bytes;
        let zone_start = self.dev.geometry().zone_start(ZoneId(e.zone)).0;
        let written = self.zones.get(&e.zone).map_or(0, |u| u.written_blocks);
        let (first, last) = (e.lba + from / bs, e.lba + to.div_ceil(bs));
        if e.lba < zone_start || last > zone_start + written {
            return Err(FsError::PastWritePointer { name: name.into(), zone: e.zone, lba: e.lba, blocks: e.len_bytes.div_ceil(bs), write_pointer: zone_start + written });
        }
        let mut data = vec![0u8; ((last - first) * bs) as usize];
        self.dev.read(Lba(first), &mut data)?;
        Ok(data)
    }

    /// Zones that are partly written and not full (they hold active resources).
    fn active_zones(&self) -> usize {
        self.zones.values().filter(|z| z.written_blocks > 0 && !z.full).count()
    }

    fn empty_zones(&self) -> usize {
        self.zones.values().filter(|z| z.written_blocks == 0).count()
    }

    /// Picks the zone for the next bytes of a file.
    fn zone_for(&mut self, current: Option<u32>, lifetime: u8, _bytes: usize) -> Result<u32, FsError> {
        if let Some(z) = current {
            if !self.zones[&z].full {
                return Ok(z);
            }
        }
        for attempt in 0..2 {
            let candidate = self.allocator.pick(&self.zones, lifetime);
            if let Some(z) = candidate {
                return Ok(z);
            }
            if self.config.gc && !self.in_gc && self.empty_zones() < self.config.gc_empty_zones_low {
                self.collect()?;
            }
            if let Some((&z, _)) = self.zones.iter().find(|(_, u)| u.written_blocks == 0) {
                if self.active_zones() >= self.active_max {
                    self.finish_one_active()?;
                }
                return Ok(z);
            }
            if attempt == 0 && self.config.gc && !self.in_gc && self.collect()? == 0 {
                // Nothing full to reclaim: partly written zones of other lifetimes hold the
                // garbage. Finish the ones no open file is writing to, so GC can take them.
                self.finish_idle_zones()?;
                self.collect()?;
            }
        }
        Err(self.no_space())
    }

    /// Finishes the active zone with the least room left (the cheapest to give up).
    fn finish_one_active(&mut self) -> Result<(), FsError> {
        let Some((&z, _)) = self.zones.iter().filter(|(_, u)| u.written_blocks > 0 && !u.full).max_by_key(|(_, u)| u.written_blocks) else { return Ok(()) };
        self.finish_zone(z)
    }

    /// Finishes partly written zones that no open file is writing to and that hold garbage.
    fn finish_idle_zones(&mut self) -> Result<(), FsError> {
        let busy: Vec<u32> = self.open.values().filter_map(|s| s.zone).collect();
        let bs = self.block_bytes;
        let idle: Vec<u32> =
            self.zones.iter().filter(|(z, u)| u.written_blocks > 0 && !u.full && !busy.contains(z) && u.live_bytes < u.written_blocks * bs).map(|(z, _)| *z).collect();
        for z in idle {
            self.finish_zone(z)?;
        }
        Ok(())
    }

    /// Finishes a zone on the device and marks it full (a GC candidate); files writing into it
    /// move on to another zone.
    fn finish_zone(&mut self, z: u32) -> Result<(), FsError> {
        self.dev.manage(ZoneAction::Finish, ZoneId(z))?;
        let u = self.zones.get_mut(&z).unwrap();
        u.full = true;
        u.written_blocks = self.zone_blocks;
        u.filled_seq = self.fill_seq;
        self.fill_seq += 1;
        for s in self.open.values_mut() {
            if s.zone == Some(z) {
                s.zone = None;
            }
        }
        Ok(())
    }

    /// GC: reclaims full zones until enough are empty (or none can be reclaimed).
    pub fn collect(&mut self) -> Result<usize, FsError> {
        self.writable("collect")?;
        let mut reclaimed = 0;
        while self.empty_zones() < self.config.gc_empty_zones_low {
            let Some(v) = self.choose_victim() else { break };
            self.relocate_zone(v)?;
            reclaimed += 1;
        }
        Ok(reclaimed)
    }

    /// The zone the victim policy picks among full zones no write in progress holds.
    fn choose_victim(&mut self) -> Option<u32> {
        let bs = self.block_bytes;
        let ids: Vec<u32> = self.zones.keys().copied().collect();
        let infos: Vec<ZoneInfo> = self
            .zones
            .iter()
            .map(|(z, u)| ZoneInfo {
                // A pinned zone is shown as open: never a candidate.
                state: if u.full && !self.pinned.contains(z) {
                    ZoneUse::Full
                } else if u.written_blocks > 0 {
                    ZoneUse::Open
                } else {
                    ZoneUse::Free
                },
                written: u.written_blocks * bs,
                valid: u.live_bytes,
                full_at: u.filled_seq,
                ..ZoneInfo::default()
            })
            .collect();
        let ctx = VictimCtx { zones: &infos, now: self.fill_seq, now_us: 0, min_gp: 0.0, gc_threshold: 0.0, free_zones: self.empty_zones() };
        self.victim.select(&ctx).map(|i| ids[i])
    }

    fn relocate_zone(&mut self, v: u32) -> Result<(), FsError> {
        self.stats_relocations += 1;
        self.in_gc = true;
        let result = self.relocate_zone_inner(v);
        self.in_gc = false;
        result
    }

    /// Copies every live extent of zone `v` (committed ones and open files' unsynced ones) to
    /// zones of the same lifetime, commits the new extents, then resets `v`.
    fn relocate_zone_inner(&mut self, v: u32) -> Result<(), FsError> {
        let files: Vec<(u64, String, u8, Vec<Extent>)> =
            self.table.files().filter(|f| f.extents.iter().any(|e| e.zone == v)).map(|f| (f.id, f.name.clone(), f.lifetime, f.extents.clone())).collect();
        let mut records = Vec::new();
        for (id, name, lifetime, extents) in files {
            let moved = self.move_out_of_zone(&name, v, extents, lifetime)?;
            records.push(Record::SetExtents { id, extents: moved });
        }
        let open_ids: Vec<u64> = self.open.iter().filter(|(_, s)| s.unlogged.iter().any(|e| e.zone == v)).map(|(id, _)| *id).collect();
        for id in open_ids {
            let (name, lifetime) = self.table.by_id(id).map_or((String::new(), 0), |f| (f.name.clone(), f.lifetime));
            let unlogged = std::mem::take(&mut self.open.get_mut(&id).unwrap().unlogged);
            let moved = self.move_out_of_zone(&name, v, unlogged, lifetime)?;
            let state = self.open.get_mut(&id).unwrap();
            state.unlogged = moved;
            if state.zone == Some(v) {
                state.zone = None;
            }
        }
        self.dev.flush()?;
        if !records.is_empty() {
            // The new copies are committed before the old ones disappear.
            self.commit(&records)?;
        }
        self.zones.get_mut(&v).unwrap().live_bytes = 0;
        self.reset_zone(v)
    }

    /// A file's extents with those in zone `v` replaced by copies elsewhere (same order).
    fn move_out_of_zone(&mut self, name: &str, v: u32, extents: Vec<Extent>, lifetime: u8) -> Result<Vec<Extent>, FsError> {
        let mut moved = Vec::with_capacity(extents.len());
        for e in extents {
            if e.zone == v {
                moved.extend(self.copy_extent(name, e, lifetime)?);
            } else {
                moved.push(e);
            }
        }
        Ok(moved)
    }

    /// Writes a copy of an extent's data to a zone of `lifetime`; returns the new extents, their
    /// checksums computed as they are written. The source is verified first: a copy must never
    /// give damaged data a valid checksum (GC then fails with [`FsError::Checksum`]).
    fn copy_extent(&mut self, name: &str, e: Extent, lifetime: u8) -> Result<Vec<Extent>, FsError> {
        let data = self.read_extent(name, &e)?;
        let mut state = WriteState::default();
        self.write_bytes(&mut state, lifetime, &data, true)?;
        Ok(state.unlogged)
    }

    fn reset_zone(&mut self, z: u32) -> Result<(), FsError> {
        self.verified.retain(|e| e.0 != z);
        self.dev.reset_zone(ZoneId(z))?;
        self.zones.insert(z, ZoneUsage::default());
        Ok(())
    }

    /// Reads up to `buf.len()` bytes at `offset`; returns how many (0 at end of file). Sees the
    /// file's unsynced appends too.
    pub fn read_at(&mut self, name: &str, offset: u64, buf: &mut [u8]) -> Result<usize, FsError> {
        let f = self.table.by_name(name).ok_or_else(|| FsError::NotFound(name.into()))?;
        let (id, mut pieces) = (f.id, f.extents.clone());
        if let Some(s) = self.open.get(&id) {
            pieces.extend(s.unlogged.iter().copied());
        }
        let mut file_pos = 0u64;
        let mut done = 0usize;
        for e in pieces {
            let end = file_pos + e.len_bytes;
            if offset + (done as u64) < end && done < buf.len() {
                let from = offset + done as u64 - file_pos;
                let n = ((e.len_bytes - from) as usize).min(buf.len() - done);
                let key = (e.zone, e.lba, e.len_bytes, e.crc32);
                if self.verified.contains(&key) {
                    self.read_verified(name, &e, from, &mut buf[done..done + n])?;
                } else {
                    // The whole extent (at most EXTENT_MAX_BYTES) once: its checksum covers all of it.
                    let data = self.read_extent(name, &e)?;
                    buf[done..done + n].copy_from_slice(&data[from as usize..from as usize + n]);
                    if self.verified.len() >= VERIFIED_MAX {
                        self.verified.clear();
                    }
                    self.verified.insert(key);
                }
                done += n;
            }
            file_pos = end;
        }
        if let Some(s) = self.open.get(&id) {
            let end = file_pos + s.buffer.len() as u64;
            if offset + (done as u64) < end && done < buf.len() {
                let from = (offset + done as u64 - file_pos) as usize;
                let n = (s.buffer.len() - from).min(buf.len() - done);
                buf[done..done + n].copy_from_slice(&s.buffer[from..from + n]);
                done += n;
            }
        }
        Ok(done)
    }

    /// File size including unsynced appends.
    pub fn size(&self, name: &str) -> Result<u64, FsError> {
        let f = self.table.by_name(name).ok_or_else(|| FsError::NotFound(name.into()))?;
        let pending = self.open.get(&f.id).map_or(0, |s| s.buffer.len() as u64 + s.unlogged.iter().map(|e| e.len_bytes).sum::<u64>());
        Ok(f.size_bytes() + pending)
    }

    /// Writes a whole file, all or nothing: the data goes to a temporary name (see
    /// [`PUT_TEMP_PREFIX`]), is synced, then renamed to `name` in one metadata commit. A crash
    /// or an error before that commit leaves no file named `name`; the temporary is deleted
    /// (here, or by the next read-write mount if the device failed). A put that cannot fit is
    /// refused with [`FsError::NoSpace`] before anything is written; `name` must not exist.
    pub fn put(&mut self, name: &str, lifetime: u8, data: &[u8]) -> Result<(), FsError> {
        match self.put_from(name, lifetime, &mut &data[..], Some(data.len() as u64)) {
            Ok(_) => Ok(()),
            Err(FsError::PutNoSpace { .. }) => Err(self.no_space()),
            Err(e) => Err(e),
        }
    }

    /// [`Zfs::put`] from a reader, in bounded memory: the source is read [`PUT_CHUNK_BYTES`] at
    /// a time and appended to the temporary file, which is synced every 64 MiB; all or nothing
    /// as `put` (a crash leaves a temporary the next read-write mount deletes; an error deletes
    /// it here). With `size_bytes` (a regular file's length) a source that cannot fit even
    /// after GC is refused before anything is written; a source of unknown size (a pipe, a
    /// character device) is written until it ends or space runs out. A source that does not fit
    /// is [`FsError::PutNoSpace`], saying how many bytes fit; one that fails to read is
    /// [`FsError::Source`]. `size_bytes` only decides the refusal: the whole source is read
    /// whatever its length turns out to be. Returns the bytes written.
    pub fn put_from(&mut self, name: &str, lifetime: u8, source: &mut dyn Read, size_bytes: Option<u64>) -> Result<u64, FsError> {
        self.writable("put")?;
        check_name(name)?;
        check_lifetime(lifetime)?;
        if self.table.by_name(name).is_some() {
            return Err(FsError::Exists(name.into()));
        }
        if let Some(size) = size_bytes {
            let room = self.room_bytes();
            if size.div_ceil(self.block_bytes) * self.block_bytes > room {
                return Err(FsError::PutNoSpace { size_bytes, fit_bytes: room, written: false });
            }
        }
        let temp = format!("{PUT_TEMP_PREFIX}{}", self.next_id);
        let id = self.create_unchecked(&temp, lifetime)?;
        let written = self.put_stream(&temp, source).and_then(|bytes| self.rename_unchecked(&temp, name).map(|()| bytes));
        written.map_err(|e| {
            let e = match e {
                FsError::NoSpace { .. } => FsError::PutNoSpace { size_bytes, fit_bytes: self.written_bytes(id), written: true },
                e => e,
            };
            // Best effort: after a device failure this may fail too, and mount cleans up.
            let _ = self.delete(&temp);
            e
        })
    }

    /// Appends the whole source to file `temp` in chunks and syncs it; returns its length.
    fn put_stream(&mut self, temp: &str, source: &mut dyn Read) -> Result<u64, FsError> {
        let mut chunk = vec![0u8; PUT_CHUNK_BYTES];
        let mut total = 0u64;
        loop {
            let filled = fill(source, &mut chunk).map_err(FsError::Source)?;
            if filled > 0 {
                self.append(temp, &chunk[..filled])?;
                total += filled as u64;
            }
            if filled < chunk.len() {
                break;
            }
            if total % PUT_SYNC_BYTES == 0 {
                self.sync(temp)?;
            }
        }
        self.sync(temp)?;
        Ok(total)
    }

    /// Bytes of file `id` on the device: committed extents and those written since its last
    /// sync (not what is still buffered).
    fn written_bytes(&self, id: u64) -> u64 {
        let committed = self.table.by_id(id).map_or(0, |f| f.size_bytes());
        committed + self.open.get(&id).map_or(0, |s| s.unlogged.iter().map(|e| e.len_bytes).sum())
    }

    fn no_space(&self) -> FsError {
        FsError::NoSpace { empty_zones: self.empty_zones(), live_bytes: self.zones.values().map(|z| z.live_bytes).sum() }
    }

    /// What a write could take if GC reclaimed every garbage byte. Passing is necessary, not
    /// sufficient (allocation rules keep lifetimes apart, so free tails of other lifetimes'
    /// zones may be unusable): a put that still runs out of space fails mid-way and leaves
    /// nothing, as any failed put does.
    fn room_bytes(&self) -> u64 {
        let s = self.space();
        s.free_bytes + if self.config.gc { s.garbage_bytes } else { 0 }
    }

    /// Renames `from` to `to` atomically, replacing `to` if it exists (as POSIX rename does).
    pub fn rename(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        self.writable("rename")?;
        check_name(to)?;
        self.rename_unchecked(from, to)
    }

    fn rename_unchecked(&mut self, from: &str, to: &str) -> Result<(), FsError> {
        let id = self.id_of(from)?;
        if let Ok(target) = self.id_of(to) {
            if target != id {
                self.release_extents(target);
            }
        }
        self.commit(&[Record::Rename { id, name: to.into() }])?;
        self.reclaim_empty_zones()
    }

    pub fn delete(&mut self, name: &str) -> Result<(), FsError> {
        self.writable("delete")?;
        let id = self.id_of(name)?;
        self.release_extents(id);
        self.commit(&[Record::Delete { id }])?;
        self.reclaim_empty_zones()
    }

    /// Drops a file's live-byte accounting (its records are committed by the caller).
    fn release_extents(&mut self, id: u64) {
        let mut extents: Vec<Extent> = self.table.by_id(id).map(|f| f.extents.clone()).unwrap_or_default();
        if let Some(s) = self.open.remove(&id) {
            extents.extend(s.unlogged);
        }
        for e in extents {
            if let Some(z) = self.zones.get_mut(&e.zone) {
                z.live_bytes -= e.len_bytes;
            }
        }
    }

    /// Resets full zones left with no live data (after their deletions were committed).
    fn reclaim_empty_zones(&mut self) -> Result<(), FsError> {
        let dead: Vec<u32> = self.zones.iter().filter(|(_, u)| u.full && u.live_bytes == 0).map(|(z, _)| *z).collect();
        for z in dead {
            self.reset_zone(z)?;
        }
        Ok(())
    }

    /// Live, garbage and free space. Free counts only what can be written now.
    pub fn space(&self) -> Space {
        let cap = self.zone_blocks * self.block_bytes;
        let mut s = Space { capacity_bytes: cap * self.zones.len() as u64, ..Space::default() };
        for u in self.zones.values() {
            let written = u.written_blocks * self.block_bytes;
            s.live_bytes += u.live_bytes;
            s.garbage_bytes += written - u.live_bytes.min(written);
            if !u.full {
                s.free_bytes += cap - written;
            }
        }
        s
    }

    /// Checks every extent (below its zone's write pointer, in a zone neither offline nor
    /// read-only, matching its checksum) and the zone accounting against the device; returns
    /// the problems.
    pub fn fsck(&mut self) -> Result<Vec<String>, FsError> {
        let mut problems = Vec::new();
        let reports = self.dev.report_all(ZoneFilter::All)?;
        let mut live: BTreeMap<u32, u64> = BTreeMap::new();
        let mut used: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        let g = *self.dev.geometry();
        let files: Vec<(String, Vec<Extent>)> = self.table.files().map(|f| (f.name.clone(), f.extents.clone())).collect();
        for (name, extents) in &files {
            for e in extents {
                let Some(d) = reports.get(e.zone as usize) else {
                    problems.push(format!("{name}: extent in zone {} past the device", e.zone));
                    continue;
                };
                let blocks = e.len_bytes.div_ceil(self.block_bytes);
                let wp = if d.state == ZoneState::Full { d.start.0 + g.zone_capacity_blocks } else { d.write_pointer.0 };
                let mut readable = true;
                match d.state {
                    ZoneState::Offline => {
                        problems.push(format!("zone {} is offline and holds live data of {name} (the extent at LBA {}, {} bytes)", e.zone, e.lba, e.len_bytes));
                        readable = false;
                    }
                    ZoneState::ReadOnly => {
                        problems.push(format!("zone {} is read-only and holds live data of {name} (the extent at LBA {}, {} bytes): copy the file out", e.zone, e.lba, e.len_bytes))
                    }
                    _ => {}
                }
                if e.lba < d.start.0 || e.lba + blocks > wp {
                    problems.push(format!("{name}: the extent at LBA {} (+{blocks} blocks) reaches past the write pointer of zone {} (LBA {wp})", e.lba, e.zone));
                    readable = false;
                }
                if self.meta_zones.contains(&ZoneId(e.zone)) {
                    problems.push(format!("{name}: extent in metadata zone {}", e.zone));
                    readable = false;
                }
                if readable {
                    match self.read_extent(name, e) {
                        Ok(_) => {}
                        Err(err @ (FsError::Checksum { .. } | FsError::PastWritePointer { .. })) => problems.push(err.to_string()),
                        Err(err) => problems.push(format!("{name}: the extent at zone {}, LBA {} cannot be read: {err}", e.zone, e.lba)),
                    }
                }
                *live.entry(e.zone).or_default() += e.len_bytes;
                used.entry(e.zone).or_default().push((e.lba, e.lba + blocks));
            }
        }
        for (z, mut ranges) in used {
            ranges.sort_unstable();
            if ranges.windows(2).any(|w| w[0].1 > w[1].0) {
                problems.push(format!("zone {z}: overlapping extents"));
            }
        }
        for (z, u) in &self.zones {
            let expected = live.get(z).copied().unwrap_or(0);
            let pending: u64 = self.open.values().flat_map(|s| s.unlogged.iter()).filter(|e| e.zone == *z).map(|e| e.len_bytes).sum();
            if u.live_bytes != expected + pending {
                problems.push(format!("zone {z}: accounted {} live bytes, extents hold {}", u.live_bytes, expected + pending));
            }
        }
        Ok(problems)
    }
}

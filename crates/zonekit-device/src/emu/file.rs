//! The file medium: an emulated device image in one sparse file.
//!
//! # Image format (version 1, little-endian)
//!
//! | Offset | Size | What |
//! |---|---|---|
//! | 0 | 4096 | header (below) |
//! | 4096 | 32 × zone count | zone records (below) |
//! | data offset (1 MiB aligned) | zone size × zone count | zone data, zone *z* at data offset + *z* × zone size |
//!
//! Header: `0` magic `ZONEKIT-EMU-DEV\0`; `16` version u32; `20` block size u32; `24` zone size
//! in blocks u64; `32` zone capacity in blocks u64; `40` zone count u32; `44` conventional zone
//! count u32; `48` max open u32 (0 = no limit); `52` max active u32 (0 = no limit); `56`
//! close-empty-to-empty u8; `57` auto-close u8 (0 off, 1 always, 2 if active room); `58`
//! cross-zone reads u8; `59` unwritten blocks keep old data (0 = read as zeros) u8; `64` preset name, 32 bytes NUL-padded; `96` records offset u64; `104`
//! data offset u64; `124` CRC-32 of bytes 0..124.
//!
//! Zone record: `0` blocks written u64; `8` resets u64 (wear); `16` state (NVMe zone state
//! code, 0 for a conventional zone) u8; `28` CRC-32 of the zone
//! index (u32) followed by bytes 0..28, so a record written to the wrong slot is caught.
//!
//! Invariants: a record never claims blocks whose data was not synced before it was written
//! (see the durability rules in [`crate::emu`]); with the default behaviour data past a
//! zone's written blocks is never read (it reads as zeros), so a torn write past the write
//! pointer is harmless. Reset punches a hole over the zone only after its record is durable
//! (and not at all when the behaviour keeps old data past the write pointer, as null_blk does).
//!
//! Locks: an open device holds a `flock` on its image for as long as it lives, taken before
//! anything is read: shared when opened read-only (the file is opened `O_RDONLY` and every
//! mutating call is refused), exclusive when read-write or just created. A held lock fails the
//! open with [`DeviceError::ImageInUse`], or is waited for when the caller asks. Replacing an
//! image ([`FileDevice::replace`]) takes the old image's exclusive lock, builds the new one
//! beside it and renames it over the name; an open that locked a file the name no longer
//! refers to opens the name again.

use std::fs::{self, File};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::zones::{DurableZone, ZoneTable};
use super::{Emulator, FileDevice, Media, ZoneRecord};
use crate::{AutoClose, DeviceError, Geometry, LockHolder, OpenOptions, Result, ZoneBehavior, ZoneState};

const MAGIC: &[u8; 16] = b"ZONEKIT-EMU-DEV\0";
const VERSION: u32 = 1;
const HEADER_BYTES: u64 = 4096;
const HEADER_CRC_AT: usize = 124;
pub(crate) const RECORD_BYTES: usize = 32;
const RECORD_CRC_AT: usize = 28;
const DATA_ALIGN_BYTES: u64 = 1 << 20;
const PRESET_NAME_BYTES: usize = 32;

/// What an image's header says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageHeader {
    pub geometry: Geometry,
    pub behavior: ZoneBehavior,
    /// The preset the image was created from (selects its timing model), or empty.
    pub preset: String,
    records_offset: u64,
    data_offset: u64,
}

impl ImageHeader {
    fn new(geometry: Geometry, behavior: ZoneBehavior, preset: &str) -> ImageHeader {
        let records_offset = HEADER_BYTES;
        let records_end = records_offset + geometry.zone_count as u64 * RECORD_BYTES as u64;
        ImageHeader { geometry, behavior, preset: preset.to_string(), records_offset, data_offset: records_end.div_ceil(DATA_ALIGN_BYTES) * DATA_ALIGN_BYTES }
    }

    fn image_len(&self) -> u64 {
        self.data_offset + self.geometry.zone_size_bytes() * self.geometry.zone_count as u64
    }

    fn encode(&self) -> Vec<u8> {
        let g = &self.geometry;
        let mut h = vec![0u8; HEADER_BYTES as usize];
        h[0..16].copy_from_slice(MAGIC);
        h[16..20].copy_from_slice(&VERSION.to_le_bytes());
        h[20..24].copy_from_slice(&g.block_size_bytes.to_le_bytes());
        h[24..32].copy_from_slice(&g.zone_size_blocks.to_le_bytes());
        h[32..40].copy_from_slice(&g.zone_capacity_blocks.to_le_bytes());
        h[40..44].copy_from_slice(&g.zone_count.to_le_bytes());
        h[44..48].copy_from_slice(&g.conventional_zone_count.to_le_bytes());
        h[48..52].copy_from_slice(&g.open_zones_max.unwrap_or(0).to_le_bytes());
        h[52..56].copy_from_slice(&g.active_zones_max.unwrap_or(0).to_le_bytes());
        h[56] = self.behavior.close_empty_to_empty as u8;
        h[57] = match self.behavior.auto_close {
            AutoClose::Off => 0,
            AutoClose::Always => 1,
            AutoClose::IfActiveRoom => 2,
        };
        h[58] = self.behavior.cross_zone_reads as u8;
        h[59] = !self.behavior.unwritten_reads_zero as u8;
        let name = self.preset.as_bytes();
        h[64..64 + name.len()].copy_from_slice(name);
        h[96..104].copy_from_slice(&self.records_offset.to_le_bytes());
        h[104..112].copy_from_slice(&self.data_offset.to_le_bytes());
        let crc = crc32fast::hash(&h[..HEADER_CRC_AT]);
        h[HEADER_CRC_AT..HEADER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
        h
    }

    fn decode(h: &[u8]) -> std::result::Result<ImageHeader, String> {
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap());
        let u64_at = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().unwrap());
        if &h[0..16] != MAGIC {
            return Err("not a zonekit device image (bad magic)".into());
        }
        if u32_at(16) != VERSION {
            return Err(format!("image format version {} (this build reads version {VERSION})", u32_at(16)));
        }
        if crc32fast::hash(&h[..HEADER_CRC_AT]) != u32_at(HEADER_CRC_AT) {
            return Err("header checksum mismatch: the image is corrupt".into());
        }
        let limit = |v: u32| (v != 0).then_some(v);
        let geometry = Geometry {
            block_size_bytes: u32_at(20),
            zone_size_blocks: u64_at(24),
            zone_capacity_blocks: u64_at(32),
            zone_count: u32_at(40),
            conventional_zone_count: u32_at(44),
            open_zones_max: limit(u32_at(48)),
            active_zones_max: limit(u32_at(52)),
        };
        geometry.validate().map_err(|e| e.to_string())?;
        let auto_close = match h[57] {
            0 => AutoClose::Off,
            1 => AutoClose::Always,
            2 => AutoClose::IfActiveRoom,
            other => return Err(format!("unknown auto-close mode {other}")),
        };
        let behavior = ZoneBehavior { close_empty_to_empty: h[56] != 0, auto_close, cross_zone_reads: h[58] != 0, unwritten_reads_zero: h[59] == 0 };
        let name = &h[64..64 + PRESET_NAME_BYTES];
        let name_len = name.iter().position(|&b| b == 0).unwrap_or(PRESET_NAME_BYTES);
        let preset = std::str::from_utf8(&name[..name_len]).map_err(|_| "preset name is not UTF-8".to_string())?;
        let header = ImageHeader::new(geometry, behavior, preset);
        if (header.records_offset, header.data_offset) != (u64_at(96), u64_at(104)) {
            return Err("record or data offset does not match the geometry".into());
        }
        Ok(header)
    }
}

fn encode_record(zone: u32, record: &ZoneRecord) -> [u8; RECORD_BYTES] {
    let mut r = [0u8; RECORD_BYTES];
    r[0..8].copy_from_slice(&record.zone.written_blocks.to_le_bytes());
    r[8..16].copy_from_slice(&record.resets.to_le_bytes());
    r[16] = record.zone.state.nvme_code();
    let crc = record_crc(zone, &r);
    r[RECORD_CRC_AT..].copy_from_slice(&crc.to_le_bytes());
    r
}

/// Every zone's record as a fresh image holds them.
fn encode_records(table: &ZoneTable, zone_count: u32) -> Vec<u8> {
    let mut records = vec![0u8; zone_count as usize * RECORD_BYTES];
    for z in 0..zone_count {
        let r = encode_record(z, &ZoneRecord { zone: table.durable(z), resets: 0 });
        records[z as usize * RECORD_BYTES..][..RECORD_BYTES].copy_from_slice(&r);
    }
    records
}

fn record_crc(zone: u32, r: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&zone.to_le_bytes());
    hasher.update(&r[..RECORD_CRC_AT]);
    hasher.finalize()
}

fn decode_record(zone: u32, r: &[u8]) -> std::result::Result<ZoneRecord, String> {
    let stored = u32::from_le_bytes(r[RECORD_CRC_AT..RECORD_BYTES].try_into().unwrap());
    if record_crc(zone, r) != stored {
        return Err(format!("zone {zone}: record checksum mismatch"));
    }
    let state = ZoneState::from_nvme_code(r[16]).ok_or_else(|| format!("zone {zone}: unknown state code {:#x}", r[16]))?;
    Ok(ZoneRecord { zone: DurableZone { state, written_blocks: u64::from_le_bytes(r[0..8].try_into().unwrap()) }, resets: u64::from_le_bytes(r[8..16].try_into().unwrap()) })
}

/// Where an image's bytes live: its file (which also holds the image's flock for as long as
/// it is open), or a simulated file whose power losses a seed decides
/// ([`crate::sim::SimImage`]). Offsets are the image's; the length never changes once made.
pub trait ImageIo: Send {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
    fn write_all_at(&self, data: &[u8], offset: u64) -> std::io::Result<()>;
    fn sync_data(&self) -> std::io::Result<()>;
    /// Gives the range's space back; it reads as zeros after. May do nothing (a file system
    /// without hole punching): the emulator never reads a discarded zone's data.
    fn punch_hole(&self, offset: u64, len: u64);
}

impl ImageIo for File {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }

    fn write_all_at(&self, data: &[u8], offset: u64) -> std::io::Result<()> {
        FileExt::write_all_at(self, data, offset)
    }

    fn sync_data(&self) -> std::io::Result<()> {
        File::sync_data(self)
    }

    fn punch_hole(&self, offset: u64, len: u64) {
        // SAFETY: fallocate on an fd we own, with in-range offsets; it touches no memory of ours.
        unsafe {
            libc::fallocate(self.as_raw_fd(), libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE, offset as libc::off_t, len as libc::off_t);
        }
    }
}

pub struct FileMedia {
    file: Box<dyn ImageIo>,
    path: PathBuf,
    header: ImageHeader,
    /// Opened read-only (under a shared lock): every mutating call is refused.
    read_only: bool,
}

impl FileMedia {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The preset the image was created from (may be empty).
    pub fn preset(&self) -> &str {
        &self.header.preset
    }

    fn data_at(&self, zone: u32, offset_bytes: u64) -> u64 {
        self.header.data_offset + zone as u64 * self.header.geometry.zone_size_bytes() + offset_bytes
    }

    fn err(&self, what: &str, e: std::io::Error) -> DeviceError {
        DeviceError::io(format!("{}: {what}", self.path.display()), e)
    }
}

impl Media for FileMedia {
    fn write(&mut self, zone: u32, offset_bytes: u64, data: &[u8]) -> Result<()> {
        self.file.write_all_at(data, self.data_at(zone, offset_bytes)).map_err(|e| self.err("write", e))
    }

    fn read(&mut self, zone: u32, offset_bytes: u64, buf: &mut [u8]) -> Result<()> {
        self.file.read_exact_at(buf, self.data_at(zone, offset_bytes)).map_err(|e| self.err("read", e))
    }

    fn discard(&mut self, zone: u32) -> Result<()> {
        // Only reclaims space: data past the write pointer is never read, so a file system
        // without hole punching loses nothing but disk space.
        self.file.punch_hole(self.data_at(zone, 0), self.header.geometry.zone_size_bytes());
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        if self.read_only {
            return Ok(()); // nothing was written through this handle
        }
        self.file.sync_data().map_err(|e| self.err("sync", e))
    }

    fn persist(&mut self, records: &[(u32, ZoneRecord)]) -> Result<()> {
        for (zone, record) in records {
            let at = self.header.records_offset + *zone as u64 * RECORD_BYTES as u64;
            self.file.write_all_at(&encode_record(*zone, record), at).map_err(|e| self.err("write zone record", e))?;
        }
        self.file.sync_data().map_err(|e| self.err("sync zone records", e))
    }

    fn check_writable(&self, what: &'static str) -> Result<()> {
        if self.read_only {
            return Err(DeviceError::ReadOnlyDevice { path: self.path.clone(), what });
        }
        Ok(())
    }
}

/// How often a waiting open retries the lock: flock has no timeout of its own.
const LOCK_POLL: Duration = Duration::from_millis(20);

/// Takes `file`'s flock, shared or exclusive, waiting up to `wait` (None: not at all).
///
/// flock locks belong to the open file, so they hold between two opens in one process as
/// between two processes, and the kernel drops them when a process dies, however it dies.
/// (The wall clock here only bounds a wait for another process; nothing simulated reads it.)
fn lock(file: &File, path: &Path, exclusive: bool, wait: Option<Duration>) -> Result<()> {
    let op = if exclusive { libc::LOCK_EX } else { libc::LOCK_SH };
    let started = Instant::now();
    // A wait too long for an Instant is a wait without a deadline.
    let deadline = wait.map(|w| started.checked_add(w));
    loop {
        // SAFETY: flock on an fd we own; it touches no memory of ours.
        if unsafe { libc::flock(file.as_raw_fd(), op | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(DeviceError::io(format!("{}: lock", path.display()), error));
        }
        let now = Instant::now();
        match deadline {
            Some(Some(deadline)) if now < deadline => std::thread::sleep(LOCK_POLL.min(deadline - now)),
            Some(None) => std::thread::sleep(LOCK_POLL),
            _ => return Err(DeviceError::ImageInUse { path: path.to_path_buf(), holder: holder(file, exclusive), waited: wait.map(|_| started.elapsed()) }),
        }
    }
}

/// Who holds the lock we could not take. A shared request is refused only by a writer; for an
/// exclusive one, a shared probe tells readers (it succeeds) from a writer. Only the message
/// depends on it, so the race with holders coming and going does not matter.
fn holder(file: &File, exclusive: bool) -> LockHolder {
    if !exclusive {
        return LockHolder::Writer;
    }
    // SAFETY: flock on an fd we own.
    unsafe {
        if libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) == 0 {
            libc::flock(file.as_raw_fd(), libc::LOCK_UN);
            return LockHolder::Readers;
        }
    }
    LockHolder::Writer
}

/// Opens the image at `path` and locks it: shared to read, exclusive to write.
///
/// If the name was given to a new image while we waited ([`FileDevice::replace`] renames one
/// over it), the lock we got is on the old, unlinked file: open the name again, so the lock
/// held is always on the image the name refers to.
fn open_locked(path: &Path, write: bool, exclusive: bool, wait: Option<Duration>) -> Result<File> {
    let started = Instant::now();
    loop {
        let file = fs::OpenOptions::new().read(true).write(write).open(path).map_err(|e| DeviceError::io(format!("{}: open", path.display()), e))?;
        let left = wait.map(|w| w.saturating_sub(started.elapsed()));
        lock(&file, path, exclusive, left).map_err(|e| match e {
            // Name the whole wait, not the last attempt's share of it.
            DeviceError::ImageInUse { path, holder, waited: Some(_) } => DeviceError::ImageInUse { path, holder, waited: Some(started.elapsed()) },
            e => e,
        })?;
        let locked = file.metadata().map_err(|e| DeviceError::io(format!("{}: stat", path.display()), e))?;
        let named = fs::metadata(path).map_err(|e| DeviceError::io(format!("{}: stat after locking", path.display()), e))?;
        if (locked.dev(), locked.ino()) == (named.dev(), named.ino()) {
            return Ok(file);
        }
    }
}

fn check_create(geometry: &Geometry, preset: &str) -> Result<()> {
    geometry.validate()?;
    super::check_zone_memory(geometry)?;
    if preset.len() > PRESET_NAME_BYTES {
        return Err(DeviceError::InvalidArgument(format!("preset name {preset:?} is longer than {PRESET_NAME_BYTES} bytes")));
    }
    Ok(())
}

impl FileDevice {
    /// Creates a new image at `path` (refusing to overwrite an existing file). The image is
    /// built beside `path` and linked to its name once formatted, so a create killed part-way
    /// leaves no image under the name (and the next create of it removes the leftover).
    pub fn create(path: &Path, geometry: Geometry, behavior: ZoneBehavior, preset: &str) -> Result<FileDevice> {
        check_create(&geometry, preset)?;
        if path.exists() {
            return Err(DeviceError::io(format!("{}: create", path.display()), std::io::Error::from_raw_os_error(libc::EEXIST)));
        }
        let temp = zonekit_base::atomic::partial_path(path).map_err(|e| DeviceError::io(format!("{}: create", path.display()), e))?;
        let file = fs::OpenOptions::new().read(true).write(true).create_new(true).open(&temp).map_err(|e| DeviceError::io(format!("{}: create", temp.display()), e))?;
        // A link, not a rename: it refuses a file that appeared under the name meanwhile.
        let built = FileDevice::init(file, &temp, path, geometry, behavior, preset)
            .and_then(|dev| fs::hard_link(&temp, path).map(|()| dev).map_err(|e| DeviceError::io(format!("{}: create", path.display()), e)));
        // create_new made the temporary, so it is ours to remove; an error here would hide
        // the one that matters.
        let _ = fs::remove_file(&temp);
        built
    }

    /// Creates a new image at `path`, replacing the file there (what `device create --force`
    /// does), but never one another open holds: the old image's exclusive lock is taken
    /// first, waiting up to `wait` for it. The new image is built beside the old one and
    /// renamed over it, so a failed replace leaves the old image as it was and no new file.
    pub fn replace(path: &Path, geometry: Geometry, behavior: ZoneBehavior, preset: &str, wait: Option<Duration>) -> Result<FileDevice> {
        check_create(&geometry, preset)?;
        // Read-only is enough to lock, and lets a file we may not write still be replaced
        // when the directory allows it, as `rm` would.
        let old = match open_locked(path, false, true, wait) {
            Ok(old) => Some(old),
            Err(DeviceError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        path.file_name().ok_or_else(|| DeviceError::InvalidArgument(format!("{}: not a file name", path.display())))?;
        let temp = zonekit_base::atomic::partial_path(path).map_err(|e| DeviceError::io(format!("{}: create", path.display()), e))?;
        let file = fs::OpenOptions::new().read(true).write(true).create_new(true).open(&temp).map_err(|e| DeviceError::io(format!("{}: create", temp.display()), e))?;
        let built = FileDevice::init(file, &temp, path, geometry, behavior, preset)
            .and_then(|dev| fs::rename(&temp, path).map(|()| dev).map_err(|e| DeviceError::io(format!("{}: rename {} over it", path.display(), temp.display()), e)));
        if built.is_err() {
            let _ = fs::remove_file(&temp);
        }
        // Released only now, once the name is the new image's: an open that waited on the
        // old one sees the name moved and opens the new one.
        drop(old);
        built
    }

    /// Writes a fresh image into `file` (just created at `at`, to be known as `path`) and
    /// holds it exclusively.
    fn init(file: File, at: &Path, path: &Path, geometry: Geometry, behavior: ZoneBehavior, preset: &str) -> Result<FileDevice> {
        lock(&file, at, true, None)?;
        let len = ImageHeader::new(geometry, behavior, preset).image_len();
        file.set_len(len).map_err(|e| DeviceError::io(format!("{}: set length", at.display()), e))?;
        FileDevice::write_fresh(Box::new(file), at, path, geometry, behavior, preset)
    }

    /// A fresh image written through `io` (a simulated file; [`FileDevice::create`] for a real
    /// one): the same bytes, made durable in the same order.
    pub fn create_on(io: Box<dyn ImageIo>, name: &Path, geometry: Geometry, behavior: ZoneBehavior, preset: &str) -> Result<FileDevice> {
        check_create(&geometry, preset)?;
        FileDevice::write_fresh(io, name, name, geometry, behavior, preset)
    }

    /// Writes a fresh image's records and then its header into `io` (at `at`, to be known as
    /// `path`), and makes them durable (fdatasync covers the file's length too).
    fn write_fresh(io: Box<dyn ImageIo>, at: &Path, path: &Path, geometry: Geometry, behavior: ZoneBehavior, preset: &str) -> Result<FileDevice> {
        let header = ImageHeader::new(geometry, behavior, preset);
        let err = |what: &str, e| DeviceError::io(format!("{}: {what}", at.display()), e);
        let table = ZoneTable::new(geometry, behavior);
        io.write_all_at(&encode_records(&table, geometry.zone_count), header.records_offset).map_err(|e| err("write zone records", e))?;
        io.write_all_at(&header.encode(), 0).map_err(|e| err("write header", e))?;
        io.sync_data().map_err(|e| err("sync", e))?;
        Ok(FileDevice::on_new_image(io, path, header, table))
    }

    fn on_new_image(io: Box<dyn ImageIo>, path: &Path, header: ImageHeader, table: ZoneTable) -> FileDevice {
        let zones = header.geometry.zone_count as usize;
        Emulator::from_parts(table, FileMedia { file: io, path: path.to_path_buf(), header, read_only: false }, vec![0; zones])
    }

    /// Opens an existing image read-write, restoring every zone's durable state and write
    /// pointer; fails at once if another open holds it.
    pub fn open(path: &Path) -> Result<FileDevice> {
        FileDevice::open_with(path, false, &OpenOptions::default())
    }

    /// Opens an existing image read-only (shared lock: other readers may open it, writers may
    /// not) or read-write (exclusive lock), waiting for the lock as `options` says.
    pub fn open_with_options(path: &Path, options: &OpenOptions) -> Result<FileDevice> {
        FileDevice::open_with(path, false, options)
    }

    /// Opens an image as a drive coming back from a power cycle: open zones return Closed
    /// (Empty when nothing was written).
    pub fn open_power_cycled(path: &Path) -> Result<FileDevice> {
        FileDevice::open_with(path, true, &OpenOptions::default())
    }

    fn open_with(path: &Path, power_cycle: bool, options: &OpenOptions) -> Result<FileDevice> {
        // Locked before anything is read: a writer may be in the middle of changing it.
        let file = open_locked(path, !options.read_only, !options.read_only, options.wait)?;
        let len = file.metadata().map_err(|e| DeviceError::io(format!("{}: stat", path.display()), e))?.len();
        FileDevice::open_on(Box::new(file), len, path, power_cycle, options.read_only)
    }

    /// Opens the image of `len` bytes that `io` holds (a simulated file; [`FileDevice::open`]
    /// for a real one), checking it as an open of a file does; `name` names it in errors.
    pub fn open_on(file: Box<dyn ImageIo>, len: u64, name: &Path, power_cycle: bool, read_only: bool) -> Result<FileDevice> {
        let path = name;
        let bad = |reason: String| DeviceError::BadImage { path: path.to_path_buf(), reason };
        if len < HEADER_BYTES {
            return Err(bad(format!("{len} bytes is too small to be a zonekit device image")));
        }
        let mut h = vec![0u8; HEADER_BYTES as usize];
        file.read_exact_at(&mut h, 0).map_err(|e| DeviceError::io(format!("{}: read header", path.display()), e))?;
        let header = ImageHeader::decode(&h).map_err(bad)?;
        if len < header.image_len() {
            return Err(bad(format!("image is truncated: {len} bytes, the geometry needs {}", header.image_len())));
        }
        let geometry = header.geometry;
        // A header's zone count is read from the file: refuse one whose tables could not fit
        // before allocating them (a damaged or hostile image must not abort the process).
        super::check_zone_memory(&geometry).map_err(|e| bad(e.to_string()))?;
        let mut raw = vec![0u8; geometry.zone_count as usize * RECORD_BYTES];
        file.read_exact_at(&mut raw, header.records_offset).map_err(|e| DeviceError::io(format!("{}: read zone records", path.display()), e))?;
        let records = raw.chunks_exact(RECORD_BYTES).enumerate().map(|(z, r)| decode_record(z as u32, r)).collect::<std::result::Result<Vec<_>, _>>().map_err(bad)?;
        let durable: Vec<DurableZone> = records.iter().map(|r| r.zone).collect();
        let table = ZoneTable::restore(geometry, header.behavior, &durable, power_cycle).map_err(bad)?;
        let resets = records.iter().map(|r| r.resets).collect();
        let media = FileMedia { file, path: path.to_path_buf(), header, read_only };
        Ok(Emulator::from_parts(table, media, resets))
    }

    /// Reads only the header of an image: a cheap way to learn its geometry and preset.
    pub fn read_header(path: &Path) -> Result<ImageHeader> {
        let bad = |reason: String| DeviceError::BadImage { path: path.to_path_buf(), reason };
        let file = File::open(path).map_err(|e| DeviceError::io(format!("{}: open", path.display()), e))?;
        let mut h = vec![0u8; HEADER_BYTES as usize];
        FileExt::read_exact_at(&file, &mut h, 0).map_err(|_| bad("too small to be a zonekit device image".into()))?;
        ImageHeader::decode(&h).map_err(bad)
    }
}

//! [`SimImage`]: a file whose power losses a seed decides, for the file-backed emulator's image
//! (its header, zone records and data) in the fault simulator.
//!
//! The model is a file on a disk with a volatile cache (the page cache, then the drive's): a
//! write lands in the cache, [`ImageIo::sync_data`] makes every write so far durable. At a
//! crash each 512-byte sector written since the last sync holds any one of its versions since
//! then, the synced one included, independently of every other sector: a page cache writes
//! pages back in any order and a disk keeps a sector whole (its atomic unit), so a 32-byte zone
//! record written beside others may survive while its neighbour in the next sector does not. A
//! crash strikes at a call (a write, a sync, a hole punch): that call and every later one fail,
//! and a crashing write may first land in part, at a sector boundary.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use zonekit_base::Rng;

use super::{CrashReport, OpKind};
use crate::emu::ImageIo;
use crate::Lba;

/// The unit a disk writes whole.
pub const SECTOR_BYTES: usize = 512;

struct ImageState {
    len: u64,
    /// Sector → what a read sees now (absent: zeros).
    live: HashMap<u64, Vec<u8>>,
    /// Sectors written since the last sync → their versions since then, the synced one first
    /// (`None`: zeros).
    pending: BTreeMap<u64, Vec<Option<Vec<u8>>>>,
    rng: Rng,
    /// Writes, syncs and hole punches so far.
    calls: u64,
    crash_at: Option<u64>,
    crashed: Option<(u64, OpKind)>,
}

impl ImageState {
    fn put(&mut self, sector: u64, content: Option<Vec<u8>>) {
        let before = self.live.get(&sector).cloned();
        self.pending.entry(sector).or_insert_with(|| vec![before]).push(content.clone());
        match content {
            Some(c) => self.live.insert(sector, c),
            None => self.live.remove(&sector),
        };
    }

    fn sector(&self, sector: u64) -> Vec<u8> {
        self.live.get(&sector).cloned().unwrap_or_else(|| vec![0; SECTOR_BYTES])
    }

    /// Counts a mutating call; fails it (and says so) when the crash strikes here or struck.
    fn call(&mut self, kind: OpKind) -> std::io::Result<bool> {
        if let Some((at, _)) = self.crashed {
            return Err(power_lost(at));
        }
        let index = self.calls;
        self.calls += 1;
        if self.crash_at == Some(index) {
            self.crashed = Some((index, kind));
            return Ok(true);
        }
        Ok(false)
    }

    fn check_range(&self, offset: u64, len: usize) -> std::io::Result<()> {
        if offset.checked_add(len as u64).is_none_or(|end| end > self.len) {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("{len} bytes at {offset} pass the image's end ({} bytes)", self.len)));
        }
        Ok(())
    }
}

fn power_lost(at: u64) -> std::io::Error {
    std::io::Error::other(format!("simulated power loss at call {at}"))
}

/// A simulated image file (module doc: what a crash may do). Cloned handles share it: the
/// device owns one, the test keeps another to arm the crash and recover.
#[derive(Clone)]
pub struct SimImage {
    state: Arc<Mutex<ImageState>>,
}

impl SimImage {
    /// An image of `len_bytes` zeros; `seed` decides every crash's outcome.
    pub fn new(len_bytes: u64, seed: u64) -> SimImage {
        let state =
            ImageState { len: len_bytes, live: HashMap::new(), pending: BTreeMap::new(), rng: Rng::new(seed ^ 0x494D_4147_455F_5349), calls: 0, crash_at: None, crashed: None };
        SimImage { state: Arc::new(Mutex::new(state)) }
    }

    fn lock(&self) -> MutexGuard<'_, ImageState> {
        // A panic while the lock was held (a failed assertion) leaves nothing half done that
        // matters: the test is over.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn len_bytes(&self) -> u64 {
        self.lock().len
    }

    /// Mutating calls so far (failed ones too).
    pub fn calls(&self) -> u64 {
        self.lock().calls
    }

    /// Arms the crash at the call with this index ([`SimImage::calls`]); `None` disarms.
    pub fn crash_at(&self, call: Option<u64>) {
        self.lock().crash_at = call;
    }

    /// Crashes now, between two calls.
    pub fn crash_now(&self) {
        let mut s = self.lock();
        if s.crashed.is_none() {
            s.crashed = Some((s.calls, OpKind::Between));
        }
    }

    pub fn crashed(&self) -> bool {
        self.lock().crashed.is_some()
    }

    /// Power comes back: each sector written since the last sync keeps one of its versions,
    /// then `flips` single bits flip at bytes in `flip_range` (media damage the image's
    /// checksums must catch). The file works again; the report says what the crash did, its
    /// blocks being sectors.
    pub fn recover(&self, flips: u32, flip_range: std::ops::Range<u64>) -> CrashReport {
        let mut s = self.lock();
        let (op_index, op_kind) = s.crashed.map_or((s.calls, None), |(i, k)| (i, Some(k)));
        let mut report = CrashReport { op_index, op_kind, ..CrashReport::default() };
        let pending = std::mem::take(&mut s.pending);
        let (mut kept_new, mut lost_old) = (false, false);
        for (sector, versions) in pending {
            let pick = s.rng.below(versions.len() as u64) as usize;
            if pick == 0 {
                report.blocks_old += 1;
                lost_old = true;
            } else if pick == versions.len() - 1 {
                report.blocks_new += 1;
                kept_new = true;
            } else {
                report.blocks_between += 1;
                kept_new = true;
            }
            match versions.into_iter().nth(pick).flatten() {
                Some(c) => s.live.insert(sector, c),
                None => s.live.remove(&sector),
            };
        }
        report.reordered = kept_new && lost_old;
        if !flip_range.is_empty() {
            for _ in 0..flips {
                let byte = flip_range.start + s.rng.below(flip_range.end - flip_range.start);
                let bit = s.rng.below(8) as u32;
                let sector = byte / SECTOR_BYTES as u64;
                let mut content = s.sector(sector);
                content[(byte % SECTOR_BYTES as u64) as usize] ^= 1 << bit;
                s.live.insert(sector, content);
                report.flips.push((Lba(byte), bit));
            }
        }
        s.crashed = None;
        s.crash_at = None;
        report
    }
}

impl ImageIo for SimImage {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let s = self.lock();
        if let Some((at, _)) = s.crashed {
            return Err(power_lost(at));
        }
        s.check_range(offset, buf.len())?;
        let mut done = 0;
        while done < buf.len() {
            let at = offset + done as u64;
            let (sector, within) = (at / SECTOR_BYTES as u64, (at % SECTOR_BYTES as u64) as usize);
            let n = (SECTOR_BYTES - within).min(buf.len() - done);
            match s.live.get(&sector) {
                Some(c) => buf[done..done + n].copy_from_slice(&c[within..within + n]),
                None => buf[done..done + n].fill(0),
            }
            done += n;
        }
        Ok(())
    }

    fn write_all_at(&self, data: &[u8], offset: u64) -> std::io::Result<()> {
        let mut s = self.lock();
        s.check_range(offset, data.len())?;
        let crashing = s.call(OpKind::Write)?;
        // A crashing write lands in part: a prefix of its sectors, chosen by the seed.
        let first = offset / SECTOR_BYTES as u64;
        let last = (offset + data.len() as u64).div_ceil(SECTOR_BYTES as u64);
        let land_until = if crashing { first + s.rng.below(last - first + 1) } else { last };
        for sector in first..land_until {
            let mut content = s.sector(sector);
            let start = (sector * SECTOR_BYTES as u64).max(offset);
            let end = ((sector + 1) * SECTOR_BYTES as u64).min(offset + data.len() as u64);
            let within = (start - sector * SECTOR_BYTES as u64) as usize;
            content[within..within + (end - start) as usize].copy_from_slice(&data[(start - offset) as usize..(end - offset) as usize]);
            s.put(sector, Some(content));
        }
        if crashing {
            return Err(power_lost(s.calls - 1));
        }
        Ok(())
    }

    fn sync_data(&self) -> std::io::Result<()> {
        let mut s = self.lock();
        if s.call(OpKind::Flush)? {
            // Power failed during the sync: some of the writes may be durable, which the
            // sectors' versions already allow.
            return Err(power_lost(s.calls - 1));
        }
        s.pending.clear();
        Ok(())
    }

    fn punch_hole(&self, offset: u64, len: u64) {
        let mut s = self.lock();
        // A failed punch changes nothing: its caller ignores the outcome, as for a file system
        // without hole punching.
        if s.check_range(offset, len as usize).is_err() || !matches!(s.call(OpKind::Manage), Ok(false)) {
            return;
        }
        let first = offset.div_ceil(SECTOR_BYTES as u64);
        let end = (offset + len) / SECTOR_BYTES as u64;
        for sector in first..end {
            if s.live.contains_key(&sector) {
                s.put(sector, None);
            }
        }
    }
}

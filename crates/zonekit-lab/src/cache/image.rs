//! A durable bcache-style cache kept on a zoned device (an emulated image or a /dev zoned
//! block device) in front of a backing disk in a file, reopened by every call: what `zonekit
//! cache create | load | check | flush` run, and Python can too.
//!
//! The cache is [`DurableBuckets`]: its keys (which backing block each cached block is, and
//! whether it is dirty) are journaled on the device, and every request of [`load`] commits
//! before the next, so a process killed at any moment leaves the cache and the disk at its last
//! committed request: in write-back mode, dirty blocks live only on the cache device and must
//! survive. Opening recovers the keys and writes (closing partly written buckets), so every
//! call but [`check`] opens read-write; [`check`] recovers in memory only.
//!
//! [`load`] writes step `s` of a seeded sequence to block `position(s)`, a permutation of the
//! disk's blocks in steps of about 0.618 of it (so no sequential run trips the cache's cutoff
//! and every block is written once per pass), with contents that name the step ([`block_of`]).
//! After `load` of N steps from a consistent state at step F, the disk as seen through the
//! cache holds, in each block, the newest step below F + N that writes it. [`check`] with a
//! seed reads every block through the cache, finds the newest step K any block holds, and
//! checks that every block holds exactly what steps 0..=K leave there: the state a crash at any
//! moment must leave.

use std::fs::File;
use std::path::Path;

use zonekit_cache::evict::{CacheShape, EVICTIONS};
use zonekit_cache::{Cache, CacheConfig, CacheDevice, DurableBuckets, DurableSettings, Hdd, HddConfig, WriteMode};
use zonekit_device::{ZoneAction, ZoneFilter, ZoneState, ZonedDevice};

use crate::harness::error::{LabError, Result};

/// A device the caller opened (with whatever lock it needs).
pub type Device = Box<dyn ZonedDevice + Send>;
/// The cache on a device, in front of its disk file.
pub type DeviceCache = Cache<DurableBuckets<Device>>;

fn disk_file(path: &Path, write: bool) -> Result<File> {
    File::options().read(true).write(write).open(path).map_err(LabError::step(|| format!("{}: opening the backing disk", path.display())))
}

/// Opens the cache on `device` (at `device_path`, for messages) in front of the disk file
/// `disk`, recovering its keys and closing partly written buckets.
pub fn open(device: Device, device_path: &Path, disk: &Path) -> Result<DeviceCache> {
    let buckets = DurableBuckets::open(device).map_err(LabError::step(|| format!("{}: opening the cache", device_path.display())))?;
    cache_on(buckets, device_path, disk_file(disk, true)?, disk)
}

/// The cache recovered in memory with the device and the disk only read: for [`check`], which
/// leaves both as it found them.
pub fn inspect(device: Device, device_path: &Path, disk: &Path) -> Result<DeviceCache> {
    let buckets = DurableBuckets::inspect(device).map_err(LabError::step(|| format!("{}: opening the cache", device_path.display())))?;
    cache_on(buckets, device_path, disk_file(disk, false)?, disk)
}

fn cache_on(buckets: DurableBuckets<Device>, device_path: &Path, disk_file: File, disk: &Path) -> Result<DeviceCache> {
    let settings = buckets.settings();
    let block_bytes = buckets.block_bytes();
    let hdd =
        Hdd::on_file(HddConfig::barracuda(settings.disk_blocks, block_bytes), disk_file).map_err(LabError::step(|| format!("{}: the cache's backing disk", disk.display())))?;
    let shape = CacheShape { buckets: buckets.buckets(), bucket_blocks: buckets.bucket_blocks() };
    let (info, params) = zonekit_base::policy::find(EVICTIONS, "eviction", "bcache")?;
    let eviction = (info.make)(&zonekit_base::policy::ParamReader::new(info, &params)?, shape).map_err(LabError::step(|| "the bcache eviction".to_string()))?;
    let config = CacheConfig { mode: settings.mode, ..CacheConfig::default() };
    Cache::new(buckets, hdd, config, eviction, None).map_err(LabError::step(|| format!("{}: opening the cache", device_path.display())))
}

/// The step sequence's permutation of `blocks` blocks: step `s` writes block
/// `(s mod blocks) × stride mod blocks`, the stride coprime to `blocks`.
struct Positions {
    blocks: u64,
    stride: u64,
    inverse: u64,
}

impl Positions {
    fn new(blocks: u64) -> Positions {
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        let mut stride = ((blocks as f64 * 0.618) as u64).max(1);
        while gcd(stride, blocks) != 1 {
            stride += 1;
        }
        // The stride's inverse modulo `blocks` (extended Euclid).
        let (mut t, mut new_t, mut r, mut new_r) = (0i128, 1i128, blocks as i128, stride as i128);
        while new_r != 0 {
            let q = r / new_r;
            (t, new_t) = (new_t, t - q * new_t);
            (r, new_r) = (new_r, r - q * new_r);
        }
        Positions { blocks, stride, inverse: t.rem_euclid(blocks as i128) as u64 }
    }

    fn block(&self, step: u64) -> u64 {
        ((step % self.blocks) as u128 * self.stride as u128 % self.blocks as u128) as u64
    }

    /// The newest step below `end` that writes `block`, if any.
    fn newest_below(&self, block: u64, end: u64) -> Option<u64> {
        let first = (block as u128 * self.inverse as u128 % self.blocks as u128) as u64;
        (first < end).then(|| first + (end - 1 - first) / self.blocks * self.blocks)
    }
}

const MAGIC: &[u8; 8] = b"ZKCACHE1";

/// What [`load`] with `seed` writes at `step` to `block`: a header naming both, then a hash
/// of both.
pub fn block_of(step: u64, block: u64, seed: u64, bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&step.to_le_bytes());
    out.extend_from_slice(&block.to_le_bytes());
    out.extend_from_slice(&seed.to_le_bytes());
    let mut state = step ^ block.rotate_left(21) ^ seed.rotate_left(42);
    while out.len() < bytes {
        state = zonekit_base::map::mix64(state);
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(bytes);
    out
}

/// The step a block read back holds (`None`: never written), or why it is not one [`load`]
/// wrote there.
fn step_in(data: &[u8], block: u64, seed: u64) -> std::result::Result<Option<u64>, String> {
    if data.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let step = u64::from_le_bytes(data[8..16].try_into().expect("8 bytes"));
    if &data[..8] != MAGIC || data != block_of(step, block, seed, data.len()) {
        return Err("contents `cache load` with this seed does not write there".into());
    }
    Ok(Some(step))
}

/// What [`create`] makes: `disk_mib` of backing disk, buckets of `bucket_mib` (default: one
/// zone), in `mode`; `force` replaces a cache the device holds and a disk file that exists.
#[derive(Clone, Debug)]
pub struct CreateSettings {
    pub disk_mib: u64,
    pub bucket_mib: Option<u64>,
    pub mode: WriteMode,
    pub force: bool,
}

/// The empty cache [`create`] made.
#[derive(Clone, Copy, Debug)]
pub struct Created {
    pub buckets: u32,
    pub bucket_bytes: u64,
}

/// The backing disk's bytes for `disk_mib`, refused by its flag out of range.
pub fn disk_bytes(disk_mib: u64) -> Result<u64> {
    match disk_mib.checked_mul(1 << 20).filter(|&b| b > 0) {
        Some(bytes) => Ok(bytes),
        None => usage!("--disk-mib {disk_mib}: a disk of 1 MiB to 16 EiB"),
    }
}

/// Makes an empty durable cache on `device` and a zeroed disk file `disk` of the settings' size.
pub fn create(mut device: Device, device_path: &Path, disk: &Path, s: &CreateSettings) -> Result<Created> {
    let disk_bytes = disk_bytes(s.disk_mib)?;
    let g = *device.geometry();
    let disk_blocks = disk_bytes / g.block_size_bytes as u64;
    let zone_bytes = g.zone_size_bytes();
    let bucket_bytes = match s.bucket_mib {
        None => zone_bytes,
        Some(mib) => match mib.checked_mul(1 << 20).filter(|b| *b > 0 && b % zone_bytes == 0) {
            Some(b) => b,
            None => usage!("--bucket-mib {mib}: a whole number of the device's {} MiB zones", zone_bytes >> 20),
        },
    };
    let Ok(zones_per_bucket) = u32::try_from(bucket_bytes / zone_bytes) else { usage!("--bucket-mib {}: more zones than the device has", bucket_bytes >> 20) };
    let written = |z: &zonekit_device::ZoneDescriptor| !matches!(z.state, ZoneState::Empty | ZoneState::NotWritePointer);
    if !s.force {
        if device.report_all(ZoneFilter::All)?.iter().any(written) {
            return Err(LabError::Failed(format!("{} holds data: create would erase it (add --force to replace it)", device_path.display())));
        }
        if disk.exists() {
            return Err(LabError::Failed(format!("{} exists: create would replace it (add --force to replace it)", disk.display())));
        }
    } else {
        for z in device.report_all(ZoneFilter::All)? {
            if written(&z) {
                device.manage(ZoneAction::Reset, z.id)?;
            }
        }
    }
    let settings = DurableSettings { zones_per_bucket, mode: s.mode, disk_blocks };
    let buckets = DurableBuckets::create(device, settings).map_err(|e| LabError::Usage(format!("--bucket-mib / --disk-mib on {}: {e}", device_path.display())))?;
    // Sized aside and renamed: a create killed here leaves no short disk under the name.
    let mut file = zonekit_base::atomic::AtomicFile::create(disk).map_err(LabError::step(|| format!("{}: creating the backing disk", disk.display())))?;
    file.file_mut().and_then(|f| f.set_len(disk_bytes)).map_err(LabError::step(|| format!("{}: sizing the backing disk to {disk_bytes} bytes", disk.display())))?;
    file.commit().map_err(LabError::step(|| format!("{}: syncing the backing disk", disk.display())))?;
    Ok(Created { buckets: buckets.buckets(), bucket_bytes })
}

/// What the cache held after [`load`] or [`check`], and what [`load`] cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Loaded {
    pub cached_blocks: u64,
    pub dirty_blocks: u64,
    pub evictions: u64,
    pub writeback_blocks: u64,
}

/// Runs steps `from..from + count` of the sequence with `seed` on the cache: each writes one
/// block, every fourth also reads one written a while ago, and each commits before the next.
/// `progress` hears the steps done now and then.
pub fn load(cache: &mut DeviceCache, device_path: &Path, from: u64, count: u64, seed: u64, progress: &mut dyn FnMut(u64)) -> Result<Loaded> {
    let Some(end) = from.checked_add(count) else { usage!("--from {from} --count {count}: steps past 2^64") };
    let bytes = cache.device().block_bytes() as usize;
    let positions = Positions::new(cache.device().settings().disk_blocks);
    let mut buf = vec![0u8; bytes];
    for step in from..end {
        let block = positions.block(step);
        let what = || format!("{}: step {step} (block {block}; {} of {count} done)", device_path.display(), step - from);
        cache.write(block, &block_of(step, block, seed, bytes)).map_err(LabError::step(what))?;
        if step % 4 == 3 {
            // A read of a block written a while ago: a hit or a miss, inserted clean.
            let back = positions.block(step - zonekit_base::map::mix64(step ^ seed) % (step + 1).min(positions.blocks));
            cache.read(back, &mut buf).map_err(LabError::step(what))?;
        }
        cache.commit().map_err(LabError::step(what))?;
        if step % 256 == 0 {
            progress(step - from);
        }
    }
    let (cached_blocks, dirty_blocks) = cache.cached_blocks();
    let s = cache.stats();
    Ok(Loaded { cached_blocks, dirty_blocks, evictions: s.evictions, writeback_blocks: s.writeback_blocks })
}

/// Where [`check`] reads: through the cache (recovered in memory), or the disk alone, as if the
/// cache device were lost (whole only after [`flush`]).
pub enum CheckSource<'a> {
    Cache(Box<DeviceCache>),
    DiskOnly { disk: &'a Path, block_bytes: usize },
}

/// What [`check`] found.
#[derive(Clone, Copy, Debug)]
pub struct Checked {
    pub blocks: u64,
    /// Through the cache: how many blocks it holds, and dirty.
    pub cached: Option<(u64, u64)>,
    /// With a seed: the steps the blocks hold (the newest, plus one).
    pub steps: Option<u64>,
}

/// Reads every block and, with `seed`, checks that they hold exactly what the steps of
/// [`load`] up to the newest one any block holds leave there; through the cache, also the
/// cache's own invariants. `source_name` names what was read in messages.
pub fn check(source: CheckSource, source_name: &str, seed: Option<u64>) -> Result<Checked> {
    let (mut cache, disk_only, blocks, bytes) = match source {
        CheckSource::Cache(c) => {
            let (blocks, bytes) = (c.device().settings().disk_blocks, c.device().block_bytes() as usize);
            (Some(c), None, blocks, bytes)
        }
        CheckSource::DiskOnly { disk, block_bytes } => {
            let file = disk_file(disk, false)?;
            let len = file.metadata().map_err(LabError::io(disk))?.len();
            (None, Some((file, disk)), len / block_bytes as u64, block_bytes)
        }
    };
    let mut buf = vec![0u8; bytes];
    let mut steps = Vec::with_capacity(blocks as usize);
    let (mut cached, mut dirty) = (0, 0);
    for block in 0..blocks {
        if let Some((f, disk)) = &disk_only {
            std::os::unix::fs::FileExt::read_exact_at(f, &mut buf, block * bytes as u64).map_err(LabError::step(|| format!("{}: reading block {block}", disk.display())))?;
        } else if let Some(c) = &mut cache {
            let (c, d) = c.inspect(block, &mut buf).map_err(LabError::step(|| format!("{source_name}: reading block {block}")))?;
            (cached, dirty) = (cached + c, dirty + d);
        }
        if let Some(seed) = seed {
            steps.push(step_in(&buf, block, seed).map_err(|why| LabError::Failed(format!("block {block}: {why} (--seed {seed})")))?);
        }
    }
    let mut end = None;
    if seed.is_some() {
        let positions = Positions::new(blocks);
        let last = steps.iter().flatten().max().map_or(0, |s| s + 1);
        for (block, &step) in steps.iter().enumerate() {
            let expected = positions.newest_below(block as u64, last);
            if step != expected {
                return Err(LabError::Failed(format!(
                    "{source_name}: block {block} holds {}, but a load that reached step {} leaves {} there: a committed write is lost or out of order",
                    step.map_or("nothing".into(), |s| format!("step {s}")),
                    last.saturating_sub(1),
                    expected.map_or("nothing".into(), |s| format!("step {s}"))
                )));
            }
        }
        end = Some(last);
    }
    if let Some(c) = &cache {
        c.check_invariants().map_err(LabError::step(|| format!("{source_name}: corrupt cache")))?;
    }
    Ok(Checked { blocks, cached: cache.is_some().then_some((cached, dirty)), steps: end })
}

/// Writes every dirty block back to the disk and commits; returns the blocks written back over
/// the whole call (opening a full cache evicts a batch first, writing its dirty blocks back
/// before the flush sees them).
pub fn flush(cache: &mut DeviceCache, device_path: &Path) -> Result<u64> {
    cache.flush().and_then(|()| cache.commit()).map_err(LabError::step(|| format!("{}: writing dirty blocks back", device_path.display())))?;
    Ok(cache.stats().writeback_blocks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_a_permutation_and_newest_below_inverts_them() {
        for blocks in [1u64, 2, 7, 64, 1000, 4096] {
            let p = Positions::new(blocks);
            let mut seen = vec![false; blocks as usize];
            for s in 0..blocks {
                seen[p.block(s) as usize] = true;
            }
            assert!(seen.iter().all(|&x| x), "{blocks} blocks");
            for end in [0, 1, blocks / 2, blocks, 3 * blocks + 5] {
                for b in 0..blocks {
                    let brute = (0..end).rev().find(|&s| p.block(s) == b);
                    assert_eq!(p.newest_below(b, end), brute, "{blocks} blocks, block {b}, end {end}");
                }
            }
        }
    }
}

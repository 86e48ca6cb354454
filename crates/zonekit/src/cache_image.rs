//! `zonekit cache create | load | check | flush`: a durable bcache-style cache kept on a zoned
//! device (an emulated image or a /dev zoned block device) in front of a backing disk in a
//! file, reopened by every command.
//!
//! The cache is [`DurableBuckets`]: its keys (which backing block each cached block is, and
//! whether it is dirty) are journaled on the device, and every request of `load` commits before
//! the next, so a process killed at any moment leaves the cache and the disk at its last
//! committed request: in write-back mode, dirty blocks live only on the cache device and must
//! survive. Opening recovers the keys and writes (closing partly written buckets), so every
//! command opens read-write.
//!
//! `load` writes step `s` of a seeded sequence to block `position(s)`, a permutation of the
//! disk's blocks in steps of about 0.618 of it (so no sequential run trips the cache's cutoff
//! and every block is written once per pass), with contents that name the step ([`block_of`]).
//! After `load --count N` from a consistent state at step F, the disk as seen through the
//! cache holds, in each block, the newest step below F + N that writes it. `check --seed`
//! reads every block through the cache, finds the newest step K any block holds, and checks
//! that every block holds exactly what steps 0..=K leave there: the state a crash at any
//! moment must leave.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use zonekit_cache::evict::{CacheShape, EVICTIONS};
use zonekit_cache::{Cache, CacheConfig, CacheDevice, DurableBuckets, DurableSettings, Hdd, HddConfig, WriteMode};
use zonekit_device::{ZoneAction, ZoneFilter, ZoneState, ZonedDevice};

use crate::Usage;

#[derive(Args)]
pub struct CreateArgs {
    /// The cache device: an emulated zoned image or a /dev zoned block device.
    device: PathBuf,
    /// The backing disk: a file, created (or, with --force, replaced) at --disk-mib.
    #[arg(long)]
    disk: PathBuf,
    #[arg(long, default_value_t = 64)]
    disk_mib: u64,
    /// Bucket size: a whole number of the device's zones (default: one zone).
    #[arg(long)]
    bucket_mib: Option<u64>,
    /// writeback (dirty blocks live only on the cache until written back), writethrough or
    /// writearound.
    #[arg(long, default_value = "writeback")]
    mode: String,
    /// Replace a cache the device holds and a disk file that exists.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub struct LoadArgs {
    device: PathBuf,
    #[arg(long)]
    disk: PathBuf,
    /// Steps to run: each writes one block, and every fourth also reads one; each commits
    /// before the next.
    #[arg(long)]
    count: u64,
    /// The first step (where an earlier load stopped: `check --seed` prints it).
    #[arg(long, default_value_t = 0)]
    from: u64,
    /// Seed of the block contents (see `check --seed`).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
pub struct CheckArgs {
    device: PathBuf,
    #[arg(long)]
    disk: PathBuf,
    /// Also check that every block holds what `cache load --seed SEED` leaves there.
    #[arg(long)]
    seed: Option<u64>,
    /// Read the backing disk alone, as if the cache device were lost (whole only after `cache
    /// flush`).
    #[arg(long)]
    disk_only: bool,
}

#[derive(Args)]
pub struct FlushArgs {
    device: PathBuf,
    #[arg(long)]
    disk: PathBuf,
}

type DeviceCache = Cache<DurableBuckets<Box<dyn ZonedDevice + Send>>>;

fn disk_file(path: &Path, write: bool) -> Result<File> {
    File::options().read(true).write(write).open(path).with_context(|| format!("{}: opening the backing disk", path.display()))
}

/// Opens the cache on `device` in front of the disk file `disk`.
fn open_cache(device: &Path, disk: &Path) -> Result<DeviceCache> {
    let dev = crate::open::open_read_write(device)?.device;
    let buckets = DurableBuckets::open(dev).with_context(|| format!("{}: opening the cache", device.display()))?;
    cache_on(buckets, device, disk_file(disk, true)?, disk)
}

/// The cache on `device` in front of `disk`, recovered in memory with both opened read-only:
/// for `cache check`, which must leave both images byte for byte as it found them.
fn inspect_cache(device: &Path, disk: &Path) -> Result<DeviceCache> {
    let dev = crate::open::open_read_only(device)?.device;
    let buckets = DurableBuckets::inspect(dev).with_context(|| format!("{}: opening the cache", device.display()))?;
    cache_on(buckets, device, disk_file(disk, false)?, disk)
}

fn cache_on(buckets: DurableBuckets<Box<dyn ZonedDevice + Send>>, device: &Path, disk_file: File, disk: &Path) -> Result<DeviceCache> {
    let settings = buckets.settings();
    let block_bytes = buckets.block_bytes();
    let hdd = Hdd::on_file(HddConfig::barracuda(settings.disk_blocks, block_bytes), disk_file).with_context(|| format!("{}: the cache's backing disk", disk.display()))?;
    let shape = CacheShape { buckets: buckets.buckets(), bucket_blocks: buckets.bucket_blocks() };
    let (info, params) = zonekit_base::policy::find(EVICTIONS, "eviction", "bcache")?;
    let eviction = (info.make)(&zonekit_base::policy::ParamReader::new(info, &params)?, shape)?;
    let config = CacheConfig { mode: settings.mode, ..CacheConfig::default() };
    Cache::new(buckets, hdd, config, eviction, None).with_context(|| format!("{}: opening the cache", device.display()))
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

/// What `cache load --seed seed` writes at `step` to `block`: a header naming both, then a
/// hash of both.
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

/// The step a block read back holds (`None`: never written), or why it is not one `load`
/// wrote there.
fn step_in(data: &[u8], block: u64, seed: u64) -> Result<Option<u64>, String> {
    if data.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let step = u64::from_le_bytes(data[8..16].try_into().expect("8 bytes"));
    if &data[..8] != MAGIC || data != block_of(step, block, seed, data.len()) {
        return Err("contents `cache load` with this seed does not write there".into());
    }
    Ok(Some(step))
}

pub fn create(a: CreateArgs) -> Result<ExitCode> {
    let mode = WriteMode::parse(&a.mode).map_err(|e| Usage(format!("--mode: {e}")))?;
    let disk_bytes = a.disk_mib.checked_mul(1 << 20).filter(|&b| b > 0).ok_or_else(|| Usage(format!("--disk-mib {}: a disk of 1 MiB to 16 EiB", a.disk_mib)))?;
    let mut dev = crate::open::open_read_write(&a.device)?.device;
    let g = *dev.geometry();
    let disk_blocks = disk_bytes / g.block_size_bytes as u64;
    let zone_bytes = g.zone_size_bytes();
    let bucket_bytes = match a.bucket_mib {
        None => zone_bytes,
        Some(mib) => mib
            .checked_mul(1 << 20)
            .filter(|b| *b > 0 && b % zone_bytes == 0)
            .ok_or_else(|| Usage(format!("--bucket-mib {mib}: a whole number of the device's {} MiB zones", zone_bytes >> 20)))?,
    };
    let zones_per_bucket = u32::try_from(bucket_bytes / zone_bytes).map_err(|_| Usage(format!("--bucket-mib {}: more zones than the device has", bucket_bytes >> 20)))?;
    if !a.force {
        if dev.report_all(ZoneFilter::All)?.iter().any(|z| !matches!(z.state, ZoneState::Empty | ZoneState::NotWritePointer)) {
            anyhow::bail!("{} holds data: create would erase it (add --force to replace it)", a.device.display());
        }
        if a.disk.exists() {
            anyhow::bail!("{} exists: create would replace it (add --force to replace it)", a.disk.display());
        }
    } else {
        for z in dev.report_all(ZoneFilter::All)? {
            if !matches!(z.state, ZoneState::Empty | ZoneState::NotWritePointer) {
                dev.manage(ZoneAction::Reset, z.id)?;
            }
        }
    }
    let settings = DurableSettings { zones_per_bucket, mode, disk_blocks };
    let buckets = DurableBuckets::create(dev, settings).map_err(|e| Usage(format!("--bucket-mib / --disk-mib on {}: {e}", a.device.display())))?;
    let disk = File::create(&a.disk).with_context(|| format!("{}: creating the backing disk", a.disk.display()))?;
    disk.set_len(disk_bytes).with_context(|| format!("{}: sizing the backing disk to {disk_bytes} bytes", a.disk.display()))?;
    disk.sync_all().with_context(|| format!("{}: syncing the backing disk", a.disk.display()))?;
    println!(
        "{}: empty durable {} cache of {} buckets of {} MiB, in front of {} ({} MiB)",
        a.device.display(),
        a.mode,
        buckets.buckets(),
        bucket_bytes >> 20,
        a.disk.display(),
        a.disk_mib
    );
    Ok(ExitCode::SUCCESS)
}

pub fn load(a: LoadArgs) -> Result<ExitCode> {
    let end = a.from.checked_add(a.count).ok_or_else(|| Usage(format!("--from {} --count {}: steps past 2^64", a.from, a.count)))?;
    let mut cache = open_cache(&a.device, &a.disk)?;
    let bytes = cache.device().block_bytes() as usize;
    let positions = Positions::new(cache.device().settings().disk_blocks);
    let bar = crate::progress::Progress::bar(a.count, "steps");
    let mut buf = vec![0u8; bytes];
    for step in a.from..end {
        let block = positions.block(step);
        let what = || format!("{}: step {step} (block {block}; {} of {} done)", a.device.display(), step - a.from, a.count);
        cache.write(block, &block_of(step, block, a.seed, bytes)).with_context(what)?;
        if step % 4 == 3 {
            // A read of a block written a while ago: a hit or a miss, inserted clean.
            let back = positions.block(step - zonekit_base::map::mix64(step ^ a.seed) % (step + 1).min(positions.blocks));
            cache.read(back, &mut buf).with_context(what)?;
        }
        cache.commit().with_context(what)?;
        if step % 256 == 0 {
            bar.set_position(step - a.from);
        }
    }
    bar.finish_and_clear();
    let (cached, dirty) = cache.cached_blocks();
    let s = cache.stats();
    println!(
        "{}: steps {}..{end} written ({cached} blocks cached, {dirty} dirty; {} evictions, {} blocks written back)",
        a.device.display(),
        a.from,
        s.evictions,
        s.writeback_blocks
    );
    Ok(ExitCode::SUCCESS)
}

pub fn check(a: CheckArgs) -> Result<ExitCode> {
    // The disk alone: read in place, the cache device not opened.
    let mut disk_only = None;
    let mut cache = None;
    let (blocks, bytes) = if a.disk_only {
        let file = disk_file(&a.disk, false)?;
        let dev = crate::open::open_read_only(&a.device)?.device;
        let bytes = dev.geometry().block_size_bytes as usize;
        let len = file.metadata()?.len();
        disk_only = Some(file);
        (len / bytes as u64, bytes)
    } else {
        let c = inspect_cache(&a.device, &a.disk)?;
        let shape = (c.device().settings().disk_blocks, c.device().block_bytes() as usize);
        cache = Some(c);
        shape
    };
    let mut buf = vec![0u8; bytes];
    let mut steps = Vec::with_capacity(blocks as usize);
    let (mut cached, mut dirty) = (0, 0);
    for block in 0..blocks {
        if let Some(f) = &disk_only {
            std::os::unix::fs::FileExt::read_exact_at(f, &mut buf, block * bytes as u64).with_context(|| format!("{}: reading block {block}", a.disk.display()))?;
        } else if let Some(c) = &mut cache {
            let (c, d) = c.inspect(block, &mut buf).with_context(|| format!("{}: reading block {block}", a.device.display()))?;
            (cached, dirty) = (cached + c, dirty + d);
        }
        if let Some(seed) = a.seed {
            steps.push(step_in(&buf, block, seed).map_err(|why| anyhow::anyhow!("block {block}: {why} (--seed {seed})"))?);
        }
    }
    let source = if a.disk_only { format!("{} alone", a.disk.display()) } else { a.device.display().to_string() };
    let mut summary = if a.disk_only { format!("{blocks} blocks read") } else { format!("{cached} blocks cached, {dirty} dirty") };
    if a.seed.is_some() {
        let positions = Positions::new(blocks);
        let end = steps.iter().flatten().max().map_or(0, |s| s + 1);
        for (block, &step) in steps.iter().enumerate() {
            let expected = positions.newest_below(block as u64, end);
            if step != expected {
                anyhow::bail!(
                    "{source}: block {block} holds {}, but a load that reached step {} leaves {} there: a committed write is lost or out of order",
                    step.map_or("nothing".into(), |s| format!("step {s}")),
                    end.saturating_sub(1),
                    expected.map_or("nothing".into(), |s| format!("step {s}"))
                );
            }
        }
        summary = format!("{end} steps, {summary}");
    }
    if let Some(c) = &cache {
        c.check_invariants().with_context(|| format!("{source}: corrupt cache"))?;
    }
    println!("{source}: clean ({summary})");
    Ok(ExitCode::SUCCESS)
}

pub fn flush(a: FlushArgs) -> Result<ExitCode> {
    let mut cache = open_cache(&a.device, &a.disk)?;
    cache.flush().and_then(|()| cache.commit()).with_context(|| format!("{}: writing dirty blocks back", a.device.display()))?;
    // Counted over the whole command: opening a full cache evicts a batch first, writing its
    // dirty blocks back before the flush sees them.
    let dirty = cache.stats().writeback_blocks;
    println!("{}: {dirty} dirty blocks written back to {}", a.device.display(), a.disk.display());
    Ok(ExitCode::SUCCESS)
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

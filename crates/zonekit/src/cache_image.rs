//! `zonekit cache create | load | check | flush`: the flags of the durable cache kept on a
//! zoned device in front of a backing disk file, and what each prints. The cache itself, its
//! load sequence and its crash-consistency check are `zonekit_lab::cache::image`'s.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use zonekit_cache::WriteMode;
use zonekit_lab::cache::image::{self, CheckSource, CreateSettings};

use crate::error::lab;
use crate::error::Usage;

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

pub fn create(a: CreateArgs) -> Result<ExitCode> {
    let mode = WriteMode::parse(&a.mode).map_err(|e| Usage(format!("--mode: {e}")))?;
    image::disk_bytes(a.disk_mib).map_err(lab)?;
    let dev = crate::open::open_read_write(&a.device)?.device;
    let settings = CreateSettings { disk_mib: a.disk_mib, bucket_mib: a.bucket_mib, mode, force: a.force };
    let made = image::create(dev, &a.device, &a.disk, &settings).map_err(lab)?;
    println!(
        "{}: empty durable {} cache of {} buckets of {} MiB, in front of {} ({} MiB)",
        a.device.display(),
        a.mode,
        made.buckets,
        made.bucket_bytes >> 20,
        a.disk.display(),
        a.disk_mib
    );
    Ok(ExitCode::SUCCESS)
}

pub fn load(a: LoadArgs) -> Result<ExitCode> {
    if a.from.checked_add(a.count).is_none() {
        return Err(Usage(format!("--from {} --count {}: steps past 2^64", a.from, a.count)).into());
    }
    let dev = crate::open::open_read_write(&a.device)?.device;
    let mut cache = image::open(dev, &a.device, &a.disk).map_err(lab)?;
    let bar = crate::progress::Progress::bar(a.count, "steps");
    let loaded = image::load(&mut cache, &a.device, a.from, a.count, a.seed, &mut |done| bar.set_position(done)).map_err(lab)?;
    bar.finish_and_clear();
    println!(
        "{}: steps {}..{} written ({} blocks cached, {} dirty; {} evictions, {} blocks written back)",
        a.device.display(),
        a.from,
        a.from + a.count,
        loaded.cached_blocks,
        loaded.dirty_blocks,
        loaded.evictions,
        loaded.writeback_blocks
    );
    Ok(ExitCode::SUCCESS)
}

pub fn check(a: CheckArgs) -> Result<ExitCode> {
    let (source, name) = if a.disk_only {
        // The disk alone: read in place, the cache device only asked its block size.
        let dev = crate::open::open_read_only(&a.device)?.device;
        let block_bytes = dev.geometry().block_size_bytes as usize;
        (CheckSource::DiskOnly { disk: &a.disk, block_bytes }, format!("{} alone", a.disk.display()))
    } else {
        let dev = crate::open::open_read_only(&a.device)?.device;
        (CheckSource::Cache(Box::new(image::inspect(dev, &a.device, &a.disk).map_err(lab)?)), a.device.display().to_string())
    };
    let checked = image::check(source, &name, a.seed).map_err(lab)?;
    let mut summary = match checked.cached {
        Some((cached, dirty)) => format!("{cached} blocks cached, {dirty} dirty"),
        None => format!("{} blocks read", checked.blocks),
    };
    if let Some(steps) = checked.steps {
        summary = format!("{steps} steps, {summary}");
    }
    println!("{name}: clean ({summary})");
    Ok(ExitCode::SUCCESS)
}

pub fn flush(a: FlushArgs) -> Result<ExitCode> {
    let dev = crate::open::open_read_write(&a.device)?.device;
    let mut cache = image::open(dev, &a.device, &a.disk).map_err(lab)?;
    let dirty = image::flush(&mut cache, &a.device).map_err(lab)?;
    println!("{}: {dirty} dirty blocks written back to {}", a.device.display(), a.disk.display());
    Ok(ExitCode::SUCCESS)
}

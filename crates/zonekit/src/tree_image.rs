//! `zonekit tree create | load | get | delete | check`: the flags of the durable ZB+-tree kept
//! on a zoned device, and what each prints. The tree's open, load and check are
//! `zonekit_lab::tree::image`'s.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use zonekit_lab::tree::image::{self, DeviceTree};
use zonekit_zbtree::Index;

use crate::error::lab;

#[derive(Args)]
pub struct CreateArgs {
    /// The zoned device: an emulated image or a /dev zoned block device.
    device: PathBuf,
    /// Value bytes per record.
    #[arg(long, default_value_t = 8)]
    value_size_bytes: usize,
    /// Node size (a whole number of the device's blocks).
    #[arg(long, default_value_t = 4096)]
    node_size_bytes: usize,
    /// Replace a tree the device already holds.
    #[arg(long)]
    force: bool,
}

#[derive(Args)]
pub struct LoadArgs {
    device: PathBuf,
    /// Records to insert: keys FROM, FROM+1, ...
    #[arg(long)]
    count: u64,
    #[arg(long, default_value_t = 0)]
    from: u64,
    /// Seed of the values (see `check --seed`).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args)]
pub struct GetArgs {
    device: PathBuf,
    /// Keys to print (their values in hex, or "absent").
    #[arg(required = true)]
    keys: Vec<u64>,
}

#[derive(Args)]
pub struct DeleteArgs {
    device: PathBuf,
    #[arg(required = true)]
    keys: Vec<u64>,
}

#[derive(Args)]
pub struct CheckArgs {
    device: PathBuf,
    /// Also check that every record holds the value `tree load --seed SEED` wrote for its key.
    #[arg(long)]
    seed: Option<u64>,
}

/// Opens the tree on `path`; read-only opens say when a committed operation waits to be applied.
fn open_tree(path: &Path, read_only: bool) -> Result<DeviceTree> {
    let device = if read_only { crate::open::open_read_only(path)? } else { crate::open::open_read_write(path)? }.device;
    image::open(device, path).map_err(lab)
}

pub fn create(a: CreateArgs) -> Result<ExitCode> {
    if !a.force {
        if let Some(records) = image::records_held(crate::open::open_read_only(&a.device)?.device) {
            anyhow::bail!("{} already holds a tree of {records} records: create would replace it (add --force to replace it)", a.device.display());
        }
    }
    // The shape's own limits first, then the device's block.
    image::config(a.node_size_bytes, a.value_size_bytes, 1).map_err(lab)?;
    let device = crate::open::open_read_write(&a.device)?.device;
    let config = image::config(a.node_size_bytes, a.value_size_bytes, device.geometry().block_size_bytes as usize).map_err(lab)?;
    let zones = image::create(device, &a.device, config).map_err(lab)?;
    println!("{}: empty durable ZB+-tree, {}-byte nodes, {}-byte values, {zones} sequential zones", a.device.display(), a.node_size_bytes, a.value_size_bytes);
    Ok(ExitCode::SUCCESS)
}

pub fn load(a: LoadArgs) -> Result<ExitCode> {
    let Some(end) = a.from.checked_add(a.count) else { return Err(crate::error::Usage(format!("--from {} --count {}: keys past 2^64", a.from, a.count)).into()) };
    let mut tree = open_tree(&a.device, false)?;
    let bar = crate::progress::Progress::bar(a.count, "records");
    let records = image::load(&mut tree, &a.device, a.from, a.count, a.seed, &mut |done| bar.set_position(done)).map_err(lab)?;
    bar.finish_and_clear();
    println!("{}: inserted keys {}..{end} ({records} records in the tree)", a.device.display(), a.from);
    Ok(ExitCode::SUCCESS)
}

pub fn get(a: GetArgs) -> Result<ExitCode> {
    let mut tree = open_tree(&a.device, true)?;
    for key in a.keys {
        match tree.get(key).with_context(|| format!("{}: reading key {key}", a.device.display()))? {
            Some(v) => println!("{key} {}", v.iter().map(|b| format!("{b:02x}")).collect::<String>()),
            None => println!("{key} absent"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn delete(a: DeleteArgs) -> Result<ExitCode> {
    let mut tree = open_tree(&a.device, false)?;
    for key in a.keys {
        let found = tree.delete(key).with_context(|| format!("{}: deleting key {key}", a.device.display()))?;
        println!("{key} {}", if found { "deleted" } else { "absent" });
    }
    Ok(ExitCode::SUCCESS)
}

pub fn check(a: CheckArgs) -> Result<ExitCode> {
    let mut tree = open_tree(&a.device, false)?;
    let checked = image::check(&mut tree, &a.device, a.seed).map_err(lab)?;
    println!("{}: clean ({} records, height {})", a.device.display(), checked.records, checked.height);
    Ok(ExitCode::SUCCESS)
}

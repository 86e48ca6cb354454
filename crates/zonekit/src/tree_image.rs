//! `zonekit tree create | load | get | delete | check`: a durable ZB+-tree kept on a zoned
//! device (an emulated image or a /dev zoned block device), reopened by every command.
//!
//! The tree is the library's journaled durable mode ([`TreeConfig::durable`]): each insert and
//! delete commits before the next, so a process killed at any moment leaves the tree at its
//! last committed operation. Opening a tree completes an operation whose commit reached the
//! device but whose nodes did not; that writes, so only the commands that change the tree, and
//! `check`, open it read-write; `get` opens it read-only and says when such an operation waits.
//!
//! `load` writes values derived from each key and a seed ([`value_of`]), so that `check
//! --seed` can tell a value that is the one written from one that is not.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use zonekit_device::{DeviceError, ZonedDevice};
use zonekit_zbtree::{Index, TreeConfig, TreeError, ZbTree};

use crate::Usage;

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

/// The value `tree load --seed seed` writes for `key`: `bytes` bytes of a hash of both.
pub fn value_of(key: u64, seed: u64, bytes: usize) -> Vec<u8> {
    let mut state = key ^ seed.rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
    let mut out = Vec::with_capacity(bytes + 8);
    while out.len() < bytes {
        state = zonekit_base::map::mix64(state);
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(bytes);
    out
}

type DeviceTree = ZbTree<Box<dyn ZonedDevice + Send>>;

/// Opens the tree on `path`; read-only opens say when a committed operation waits to be applied.
fn open_tree(path: &Path, read_only: bool) -> Result<DeviceTree> {
    let device = if read_only { crate::open::open_read_only(path)? } else { crate::open::open_read_write(path)? }.device;
    ZbTree::open(device).map_err(|e| match e {
        TreeError::Device(DeviceError::ReadOnlyDevice { .. }) => {
            anyhow::anyhow!(
                "{}: the tree's last committed operation is still to be applied (a crash interrupted it); `zonekit tree check {}` applies it",
                path.display(),
                path.display()
            )
        }
        e => anyhow::Error::new(e).context(format!("{}: opening the tree", path.display())),
    })
}

pub fn create(a: CreateArgs) -> Result<ExitCode> {
    if !a.force {
        // Anything that opens as a tree is one (read-only: looking changes nothing).
        if let Ok(tree) = ZbTree::open(crate::open::open_read_only(&a.device)?.device) {
            anyhow::bail!("{} already holds a tree of {} records: create would replace it (add --force to replace it)", a.device.display(), tree.stats().records);
        }
    }
    if a.value_size_bytes == 0 || a.value_size_bytes > a.node_size_bytes {
        return Err(Usage(format!(
            "--value-size-bytes {}: values of 1 to {} bytes fit a {}-byte node (--node-size-bytes)",
            a.value_size_bytes, a.node_size_bytes, a.node_size_bytes
        ))
        .into());
    }
    let device = crate::open::open_read_write(&a.device)?.device;
    let config = TreeConfig { node_size_bytes: a.node_size_bytes, value_size_bytes: a.value_size_bytes, durable: true, ..TreeConfig::default() };
    config.validate().map_err(|e| Usage(format!("--node-size-bytes {} --value-size-bytes {}: {e}", a.node_size_bytes, a.value_size_bytes)))?;
    let block = device.geometry().block_size_bytes as usize;
    if a.node_size_bytes % block != 0 {
        return Err(Usage(format!("--node-size-bytes {}: not a whole number of the device's {block}-byte blocks", a.node_size_bytes)).into());
    }
    // Sequential zones of an earlier tree are reset by the new tree as it needs them.
    let tree = ZbTree::create(device, config).with_context(|| format!("{}: creating the tree", a.device.display()))?;
    println!(
        "{}: empty durable ZB+-tree, {}-byte nodes, {}-byte values, {} sequential zones",
        a.device.display(),
        a.node_size_bytes,
        a.value_size_bytes,
        tree.store().sequential_zone_count()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn load(a: LoadArgs) -> Result<ExitCode> {
    let end = a.from.checked_add(a.count).ok_or_else(|| Usage(format!("--from {} --count {}: keys past 2^64", a.from, a.count)))?;
    let mut tree = open_tree(&a.device, false)?;
    let bytes = tree.config().value_size_bytes;
    let bar = crate::progress::Progress::bar(a.count, "records");
    for key in a.from..end {
        tree.insert(key, &value_of(key, a.seed, bytes)).with_context(|| format!("{}: inserting key {key} ({} of {} inserted)", a.device.display(), key - a.from, a.count))?;
        if key % 1024 == 0 {
            bar.set_position(key - a.from);
        }
    }
    bar.finish_and_clear();
    println!("{}: inserted keys {}..{} ({} records in the tree)", a.device.display(), a.from, end, tree.stats().records);
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
    let records = tree.stats().records;
    let bytes = tree.config().value_size_bytes;
    // Every record, in key order, a batch at a time.
    let (mut seen, mut next, mut previous) = (0u64, 0u64, None::<u64>);
    let mut wrong = Vec::new();
    loop {
        let batch = tree.scan(next, 4096).with_context(|| format!("{}: walking the tree from key {next}", a.device.display()))?;
        let Some(&(last, _)) = batch.last() else { break };
        for (key, value) in &batch {
            if previous.is_some_and(|p| *key <= p) {
                anyhow::bail!("{}: corrupt tree: key {key} follows key {} in a scan", a.device.display(), previous.unwrap_or_default());
            }
            previous = Some(*key);
            if let Some(seed) = a.seed {
                if *value != value_of(*key, seed, bytes) && wrong.len() < 5 {
                    wrong.push(*key);
                }
            }
        }
        seen += batch.len() as u64;
        match last.checked_add(1) {
            Some(k) => next = k,
            None => break,
        }
    }
    if seen != records {
        anyhow::bail!("{}: corrupt tree: its superblock counts {records} records, a walk finds {seen}", a.device.display());
    }
    structure_holds(&mut tree).with_context(|| format!("{}: corrupt tree", a.device.display()))?;
    if !wrong.is_empty() {
        anyhow::bail!("{}: records with other values than `tree load --seed {}` writes, e.g. keys {wrong:?}", a.device.display(), a.seed.unwrap_or_default());
    }
    println!("{}: clean ({records} records, height {})", a.device.display(), tree.stats().height);
    Ok(ExitCode::SUCCESS)
}

/// The library's invariant walk, which panics on a broken invariant (a test aid): here its
/// message becomes the error, and no panic is printed.
fn structure_holds(tree: &mut DeviceTree) -> Result<()> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tree.check_invariants()));
    std::panic::set_hook(hook);
    walked.map_err(|panic| {
        let message = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
        anyhow::anyhow!("a structural invariant does not hold: {}", message.unwrap_or_else(|| "(no message)".into()))
    })
}

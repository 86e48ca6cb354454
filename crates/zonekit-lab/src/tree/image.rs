//! A durable ZB+-tree kept on a zoned device (an emulated image or a /dev zoned block device),
//! reopened by every call: what `zonekit tree create | load | get | delete | check` run, and
//! Python can too.
//!
//! The tree is the library's journaled durable mode ([`TreeConfig::durable`]): each insert and
//! delete commits before the next, so a process killed at any moment leaves the tree at its
//! last committed operation. Opening a tree completes an operation whose commit reached the
//! device but whose nodes did not; that writes, so only the calls that change the tree, and
//! [`check`], open it read-write; a read-only open says when such an operation waits.
//!
//! [`load`] writes values derived from each key and a seed ([`value_of`]), so that [`check`]
//! with the seed can tell a value that is the one written from one that is not.

use std::path::Path;

use zonekit_device::{DeviceError, ZonedDevice};
use zonekit_zbtree::{Index, TreeConfig, TreeError, ZbTree};

use crate::harness::error::{LabError, Result};

/// A device the caller opened (read-only or read-write, with whatever lock it needs).
pub type Device = Box<dyn ZonedDevice + Send>;
/// The tree on a device.
pub type DeviceTree = ZbTree<Device>;

/// The value [`load`] with `seed` writes for `key`: `bytes` bytes of a hash of both.
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

/// Opens the tree on `device` (`path` names it in messages); a device opened read-only says
/// when a committed operation waits to be applied.
pub fn open(device: Device, path: &Path) -> Result<DeviceTree> {
    ZbTree::open(device).map_err(|e| match e {
        TreeError::Device(DeviceError::ReadOnlyDevice { .. }) => LabError::Failed(format!(
            "{}: the tree's last committed operation is still to be applied (a crash interrupted it); `zonekit tree check {}` applies it",
            path.display(),
            path.display()
        )),
        e => LabError::Step { context: format!("{}: opening the tree", path.display()), error: Box::new(e) },
    })
}

/// The records a tree on `device` holds, if it opens as a tree (read-only: looking changes
/// nothing).
pub fn records_held(device: Device) -> Option<u64> {
    ZbTree::open(device).ok().map(|tree| tree.stats().records)
}

/// Checks a new tree's shape against `block_bytes`, each setting refused by its flag.
pub fn config(node_size_bytes: usize, value_size_bytes: usize, block_bytes: usize) -> Result<TreeConfig> {
    if value_size_bytes == 0 || value_size_bytes > node_size_bytes {
        usage!("--value-size-bytes {value_size_bytes}: values of 1 to {node_size_bytes} bytes fit a {node_size_bytes}-byte node (--node-size-bytes)");
    }
    let config = TreeConfig { node_size_bytes, value_size_bytes, durable: true, ..TreeConfig::default() };
    if let Err(e) = config.validate() {
        usage!("--node-size-bytes {node_size_bytes} --value-size-bytes {value_size_bytes}: {e}");
    }
    if node_size_bytes % block_bytes != 0 {
        usage!("--node-size-bytes {node_size_bytes}: not a whole number of the device's {block_bytes}-byte blocks");
    }
    Ok(config)
}

/// Makes an empty durable tree on `device` (sequential zones of an earlier tree are reset by
/// the new one as it needs them); returns its sequential zone count.
pub fn create(device: Device, path: &Path, config: TreeConfig) -> Result<usize> {
    let tree = ZbTree::create(device, config).map_err(LabError::step(|| format!("{}: creating the tree", path.display())))?;
    Ok(tree.store().sequential_zone_count())
}

/// Inserts keys `from..from + count` with [`value_of`] their values, each committed before the
/// next; `progress` hears the keys done now and then. Returns the tree's records after.
pub fn load(tree: &mut DeviceTree, path: &Path, from: u64, count: u64, seed: u64, progress: &mut dyn FnMut(u64)) -> Result<u64> {
    let Some(end) = from.checked_add(count) else { usage!("--from {from} --count {count}: keys past 2^64") };
    let bytes = tree.config().value_size_bytes;
    for key in from..end {
        tree.insert(key, &value_of(key, seed, bytes)).map_err(LabError::step(|| format!("{}: inserting key {key} ({} of {count} inserted)", path.display(), key - from)))?;
        if key % 1024 == 0 {
            progress(key - from);
        }
    }
    Ok(tree.stats().records)
}

/// What [`check`] found: every record in key order, the count the superblock keeps, the
/// structure's invariants, and (with a seed) every value the one [`load`] wrote.
#[derive(Clone, Copy, Debug)]
pub struct Checked {
    pub records: u64,
    pub height: u32,
}

/// Walks every record and the tree's structure; an error names the first thing wrong.
pub fn check(tree: &mut DeviceTree, path: &Path, seed: Option<u64>) -> Result<Checked> {
    let records = tree.stats().records;
    let bytes = tree.config().value_size_bytes;
    // Every record, in key order, a batch at a time.
    let (mut seen, mut next, mut previous) = (0u64, 0u64, None::<u64>);
    let mut wrong = Vec::new();
    loop {
        let batch = tree.scan(next, 4096).map_err(LabError::step(|| format!("{}: walking the tree from key {next}", path.display())))?;
        let Some(&(last, _)) = batch.last() else { break };
        for (key, value) in &batch {
            if previous.is_some_and(|p| *key <= p) {
                return Err(LabError::Failed(format!("{}: corrupt tree: key {key} follows key {} in a scan", path.display(), previous.unwrap_or_default())));
            }
            previous = Some(*key);
            if let Some(seed) = seed {
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
        return Err(LabError::Failed(format!("{}: corrupt tree: its superblock counts {records} records, a walk finds {seen}", path.display())));
    }
    structure_holds(tree).map_err(|why| LabError::Failed(format!("{}: corrupt tree: {why}", path.display())))?;
    if !wrong.is_empty() {
        return Err(LabError::Failed(format!("{}: records with other values than `tree load --seed {}` writes, e.g. keys {wrong:?}", path.display(), seed.unwrap_or_default())));
    }
    Ok(Checked { records, height: tree.stats().height })
}

/// The library's invariant walk, which panics on a broken invariant (a test aid): here its
/// message becomes the error, and no panic is printed.
fn structure_holds(tree: &mut DeviceTree) -> std::result::Result<(), String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tree.check_invariants()));
    std::panic::set_hook(hook);
    walked.map_err(|panic| {
        let message = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
        format!("a structural invariant does not hold: {}", message.unwrap_or_else(|| "(no message)".into()))
    })
}

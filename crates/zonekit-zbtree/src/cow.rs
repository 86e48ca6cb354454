//! The copy-on-write B+-tree the paper compares the ZB+-tree with (seed 003, §1.3, §4.1).
//!
//! An append-only B+-tree: an operation rewrites every node it changes and the whole path
//! above it at a write pointer (a new address) and the old copies die. Nothing is written in
//! place anywhere: for fairness the paper uses the device's conventional zone as one more
//! sequential zone (§4.2), so here the conventional node space is zone 0 of the tree's zones,
//! written strictly in address order and reclaimed only as a whole, like a sequential zone.
//!
//! - Zone choice: with [`TreeConfig::dynamic_zone_choice`] every node goes to the zone with
//!   the most free space (§4.1); without it zones fill in order (§4.2.5).
//! - Garbage collection, by [`TreeConfig::cow_collect`]:
//!   - [`CowCollect::Reserve`] (the default): greedy, the zone with the fewest live nodes,
//!     before an operation when the free room would no longer cover the operation's worst case
//!     plus twice the live tree: a collection rewrites at most every live node, and with that
//!     much room free at most one zone holds so much of it that the others lack room for
//!     them, so some zone can always still be collected.
//!   - [`CowCollect::WhenFull`], §4.2.5's words ("when a zone fills, its live nodes are read
//!     and written to another zone, then it is reset"): zones are written one at a time in a
//!     cycle, and a zone that filled is collected before the next operation, its live nodes
//!     going to the write zone. With one conventional and one sequential zone the two take
//!     turns.
//!
//!   Either way, moving a node changes its address, so its parent is rewritten too, up to the
//!   root: one post-order pass rewrites every node that lives in the victim or has a rewritten
//!   child, never into the victim.
//! - Rebalancing, by [`TreeConfig::cow_rebalance`] (the paper does not say how its CoW
//!   splits and merges): [`CowRebalance::BottomUp`] (the default) splits a node when it
//!   overflows and fixes one that fell below half on the way back up, reading a sibling only
//!   then; [`CowRebalance::TopDown`] is Rodeh's shadowing B-tree (the paper's reference for
//!   CoW trees): an insert splits every full inner node it passes on the way down, and a
//!   delete fixes every node at its minimum before entering it, reading a sibling to borrow
//!   from or merge with, so a delete of a 4-level tree reads up to 3 siblings.
//! - Accounting as the paper counts it: every node visited is one device read (no cache),
//!   every node an operation changes is written once, bottom-up.
//! - An operation frees the copies it supersedes only after everything it writes is written,
//!   so an error leaves the tree as it was (what was written is freed instead).
//!
//! Node format: [`crate::node`]. Leaves are [`Kind::CowLeaf`] (key, value); inner nodes
//! [`Kind::CowInner`] (key, child address as u64 LE), whose entry 0 is the `First` sentinel
//! ([`FIRST`]), ignored by routing. A node's `low_key` is the lower bound of the key range
//! that routes to it. Non-root nodes hold between half their capacity (rounded down) and
//! their capacity; an inner node always has at least two children (with a capacity of 3 half
//! would allow one, and a lone child has no sibling to borrow from or merge with).

use std::collections::{BTreeMap, HashMap, HashSet};

use zonekit_device::{ZoneDescriptor, ZoneFilter, ZoneType, ZonedDevice};

use crate::node::{Kind, Node, TAG_LIVE};
use crate::store::{Store, ZoneChoice};
use crate::{CowCollect, CowRebalance, Index, TreeConfig, TreeError, TreeStats};

/// Key of entry 0 of every inner node: the paper's `First`, which routing ignores.
pub const FIRST: u64 = 0;

/// Superblock slots the store keeps at the start of the conventional space.
const RESERVED_SLOTS: u64 = 1;

pub struct CowTree<D: ZonedDevice> {
    store: Store<D>,
    config: TreeConfig,
    space: Space,
    /// `None` until the first insert and after the last delete.
    root: Option<u64>,
    /// Levels, leaves included: 0 for the empty tree, 1 when the root is a leaf.
    height: u32,
    records: u64,
    /// Structural events of committed operations (see [`TreeStats::events`]).
    events: BTreeMap<&'static str, u64>,
}

/// One inner node on the way down, with the child taken.
struct Step {
    addr: u64,
    node: Node,
    index: usize,
    /// Lower bound of the keys routed to this node.
    low_key: u64,
}

/// The node writes of one operation: what it wrote, the copies those supersede, and the
/// structural events to count if it commits.
#[derive(Default)]
struct Tx {
    written: Vec<u64>,
    dead: Vec<u64>,
    events: Vec<&'static str>,
}

/// What [`CowTree::shift_or_merge`] made of a node and its sibling.
enum Fix {
    /// An entry moved between `left` and `right`, now children `li` and `li + 1`.
    Borrowed { li: usize, left: Node, right: Node },
    /// The two became `merged`, child `li` (the parent lost entry `li + 1`).
    Merged { li: usize, merged: Node },
}

/// An inner node on the way down of a top-down operation, changed in memory and written
/// once everything below it is.
struct Level {
    node: Node,
    /// Lower bound of the keys routed to this node.
    low_key: u64,
    /// The child taken.
    index: usize,
    /// A child other than the one taken that the way down changed (a split half, a sibling
    /// that lent an entry): its index and contents, written before `node`.
    sibling: Option<(usize, Node)>,
}

fn child(node: &Node, i: usize) -> u64 {
    node.u64_at(i, 0)
}

fn set_child(node: &mut Node, i: usize, addr: u64) {
    node.value_mut(i).copy_from_slice(&addr.to_le_bytes());
}

/// Lower bound of the keys routed to child `i` of an inner node whose own bound is `low_key`.
fn child_low(node: &Node, low_key: u64, i: usize) -> u64 {
    if i == 0 {
        low_key
    } else {
        node.keys[i]
    }
}

impl<D: ZonedDevice> CowTree<D> {
    /// An empty tree over `device`, whose sequential zones are reset. Slot 0 of the
    /// conventional space stays reserved for a superblock, as in the ZB+-tree.
    pub fn create(mut device: D, config: TreeConfig) -> Result<CowTree<D>, TreeError> {
        config.validate()?;
        if config.durable {
            return Err(TreeError::Config("the copy-on-write tree has no durable mode (only the ZB+-tree journals its operations)".into()));
        }
        if config.cow_rebalance == CowRebalance::TopDown && config.interior_capacity() < 4 {
            return Err(TreeError::Config(format!(
                "top-down rebalancing needs inner nodes of at least 4 entries (two nodes at their minimum must merge into one); these hold {}",
                config.interior_capacity()
            )));
        }
        if config.cow_collect == CowCollect::WhenFull && config.dynamic_zone_choice {
            return Err(TreeError::Config(
                "collecting a zone when it fills needs zones used in order (no dynamic zone choice): with the most-free choice every zone fills at once".into(),
            ));
        }
        let zones = device.report_all(ZoneFilter::All)?;
        let mut store = Store::new(device, config.node_size_bytes, config.payload, RESERVED_SLOTS)?;
        let space = Space::new(&mut store, &zones);
        Ok(CowTree { store, config, space, root: None, height: 0, records: 0, events: BTreeMap::new() })
    }

    pub fn store(&self) -> &Store<D> {
        &self.store
    }

    pub fn into_device(self) -> D {
        self.store.into_device()
    }

    fn capacity(&self, leaf: bool) -> usize {
        if leaf {
            self.config.leaf_capacity()
        } else {
            self.config.interior_capacity()
        }
    }

    /// Fewest entries a non-root node may hold.
    fn min_entries(&self, leaf: bool) -> usize {
        (self.capacity(leaf) / 2).max(if leaf { 1 } else { 2 })
    }

    fn is_leaf_depth(&self, depth: usize) -> bool {
        depth + 1 == self.height as usize
    }

    /// Reads the node at `addr`, `depth` levels below the root (one device read).
    fn read_node(&mut self, addr: u64, depth: usize) -> Result<Node, TreeError> {
        let leaf = self.is_leaf_depth(depth);
        let kind = if leaf { Kind::CowLeaf } else { Kind::CowInner };
        let config = self.config;
        let node = self.store.read(addr, &[kind], |k| config.stride_of(k))?;
        let cap = self.capacity(leaf);
        if node.is_empty() || node.len() > cap {
            return Err(TreeError::CorruptNode { addr, reason: format!("a {} node of {} entries; these hold 1 to {cap} here", kind.name(), node.len()) });
        }
        Ok(node)
    }

    /// Appends `node` to the zone the configured choice picks.
    fn write_node(&mut self, tx: &mut Tx, node: &mut Node) -> Result<u64, TreeError> {
        let zone = match (self.config.cow_collect, self.config.dynamic_zone_choice) {
            (CowCollect::WhenFull, _) => self.space.choose_cyclic(&self.store),
            (CowCollect::Reserve, true) => self.space.choose(&self.store, ZoneChoice::MostFree),
            (CowCollect::Reserve, false) => self.space.choose(&self.store, ZoneChoice::InOrder),
        };
        let Some(zone) = zone else {
            // `ensure_room` and the collection plan both reserve room first.
            return Err(TreeError::NoSpace(format!("no zone has room for a node ({} zones, {} live nodes)", self.space.zone_count(), self.space.total_live_nodes(&self.store))));
        };
        let addr = self.space.append(&mut self.store, zone, node)?;
        tx.written.push(addr);
        Ok(addr)
    }

    /// Runs `op`, then frees what it superseded; on an error frees what it wrote instead,
    /// leaving the old tree (ops change `root`, `height` and `records` only after their last
    /// write).
    fn transact<T>(&mut self, op: impl FnOnce(&mut Self, &mut Tx) -> Result<T, TreeError>) -> Result<T, TreeError> {
        let mut tx = Tx::default();
        let result = op(self, &mut tx);
        let gone = if result.is_ok() {
            for name in tx.events {
                *self.events.entry(name).or_default() += 1;
            }
            tx.dead
        } else {
            tx.written
        };
        for addr in gone {
            self.space.free(&mut self.store, addr);
        }
        result
    }

    fn descend(&mut self, root: u64, key: u64) -> Result<(Vec<Step>, u64, u64), TreeError> {
        let mut path = Vec::with_capacity(self.height as usize);
        let (mut addr, mut low_key) = (root, 0);
        for depth in 0..self.height as usize - 1 {
            let node = self.read_node(addr, depth)?;
            let index = node.route(key);
            let next = (child(&node, index), child_low(&node, low_key, index));
            path.push(Step { addr, node, index, low_key });
            (addr, low_key) = next;
        }
        Ok((path, addr, low_key))
    }

    /// Writes `node`, split in two halves if it overflowed: the new address, and the
    /// separator and address of the right half.
    fn write_split(&mut self, tx: &mut Tx, mut node: Node, low_key: u64) -> Result<(u64, Option<(u64, u64)>), TreeError> {
        let leaf = node.kind == Kind::CowLeaf;
        let cap = self.capacity(leaf);
        node.low_key = low_key;
        if node.len() <= cap {
            return Ok((self.write_node(tx, &mut node)?, None));
        }
        assert_eq!(node.len(), cap + 1, "a node grew by more than one entry");
        let mut right = node.split_off(node.len() / 2);
        let separator = right.keys[0];
        if !leaf {
            right.keys[0] = FIRST;
        }
        right.low_key = separator;
        tx.events.push(if leaf { "leaf_split" } else { "inner_split" });
        let left_addr = self.write_node(tx, &mut node)?;
        let right_addr = self.write_node(tx, &mut right)?;
        Ok((left_addr, Some((separator, right_addr))))
    }

    fn insert_op(&mut self, tx: &mut Tx, key: u64, value: &[u8]) -> Result<(), TreeError> {
        let Some(root) = self.root else {
            let mut leaf = Node::new(Kind::CowLeaf, value.len(), 0);
            leaf.push(TAG_LIVE, key, value);
            let addr = self.write_node(tx, &mut leaf)?;
            (self.root, self.height, self.records) = (Some(addr), 1, 1);
            return Ok(());
        };
        let (path, leaf_addr, leaf_low) = self.descend(root, key)?;
        let mut leaf = self.read_node(leaf_addr, path.len())?;
        let added = match leaf.find(key) {
            Ok(i) => {
                leaf.value_mut(i).copy_from_slice(value);
                false
            }
            Err(i) => {
                leaf.insert(i, TAG_LIVE, key, value);
                true
            }
        };
        tx.dead.push(leaf_addr);
        let mut up = self.write_split(tx, leaf, leaf_low)?;
        for Step { addr, mut node, index, low_key } in path.into_iter().rev() {
            set_child(&mut node, index, up.0);
            if let Some((separator, right)) = up.1 {
                node.insert(index + 1, TAG_LIVE, separator, &right.to_le_bytes());
            }
            tx.dead.push(addr);
            up = self.write_split(tx, node, low_key)?;
        }
        let (root, height) = match up {
            (addr, None) => (addr, self.height),
            (left, Some((separator, right))) => {
                let mut top = Node::new(Kind::CowInner, 8, 0);
                top.push(TAG_LIVE, FIRST, &left.to_le_bytes());
                top.push(TAG_LIVE, separator, &right.to_le_bytes());
                tx.events.push("root_split");
                (self.write_node(tx, &mut top)?, self.height + 1)
            }
        };
        (self.root, self.height) = (Some(root), height);
        self.records += added as u64;
        Ok(())
    }

    fn delete_op(&mut self, tx: &mut Tx, key: u64) -> Result<bool, TreeError> {
        let Some(root) = self.root else { return Ok(false) };
        let (path, leaf_addr, leaf_low) = self.descend(root, key)?;
        let mut cur = self.read_node(leaf_addr, path.len())?;
        let Ok(i) = cur.find(key) else { return Ok(false) };
        cur.remove(i);
        tx.dead.push(leaf_addr);
        // `cur` is the changed node of the level being fixed, not yet written.
        let mut cur_low = leaf_low;
        for (depth, Step { addr, node: mut parent, index, low_key }) in path.into_iter().enumerate().rev() {
            if cur.len() >= self.min_entries(cur.kind == Kind::CowLeaf) {
                cur.low_key = cur_low;
                let new_addr = self.write_node(tx, &mut cur)?;
                set_child(&mut parent, index, new_addr);
            } else {
                self.rebalance(tx, &mut parent, low_key, index, cur, depth + 1)?;
            }
            tx.dead.push(addr);
            (cur, cur_low) = (parent, low_key);
        }
        let (root, height) = if cur.kind == Kind::CowInner && cur.len() == 1 {
            // The root's last two children merged: the child is the new root.
            tx.events.push("root_collapse");
            (Some(child(&cur, 0)), self.height - 1)
        } else if cur.is_empty() {
            assert_eq!(cur.kind, Kind::CowLeaf, "an inner root lost every child");
            (None, 0)
        } else {
            cur.low_key = 0;
            (Some(self.write_node(tx, &mut cur)?), self.height)
        };
        (self.root, self.height) = (root, height);
        self.records -= 1;
        Ok(true)
    }

    /// Fixes `cur`, child `i` of `parent` and one entry short of its minimum, by borrowing an
    /// entry from a sibling or merging with it; writes the children and updates `parent`.
    fn rebalance(&mut self, tx: &mut Tx, parent: &mut Node, parent_low: u64, i: usize, cur: Node, depth: usize) -> Result<(), TreeError> {
        assert!(parent.len() >= 2, "an inner node with a single child");
        let j = if i > 0 { i - 1 } else { i + 1 };
        let sibling_addr = child(parent, j);
        let sibling = self.read_node(sibling_addr, depth)?;
        tx.dead.push(sibling_addr);
        match self.shift_or_merge(&mut tx.events, parent, parent_low, i, cur, j, sibling) {
            Fix::Borrowed { li, mut left, mut right } => {
                let left_addr = self.write_node(tx, &mut left)?;
                let right_addr = self.write_node(tx, &mut right)?;
                set_child(parent, li, left_addr);
                set_child(parent, li + 1, right_addr);
            }
            Fix::Merged { li, mut merged } => {
                let addr = self.write_node(tx, &mut merged)?;
                set_child(parent, li, addr);
            }
        }
        Ok(())
    }

    /// Moves one entry into `cur` (child `i` of `parent`) from its sibling `j` if the sibling
    /// can spare one, else merges the two; updates `parent`'s separators (and drops the merged
    /// child's entry) but not its child addresses, and sets the low keys of what it returns.
    #[allow(clippy::too_many_arguments)]
    fn shift_or_merge(&self, events: &mut Vec<&'static str>, parent: &mut Node, parent_low: u64, i: usize, cur: Node, j: usize, sibling: Node) -> Fix {
        let leaf = cur.kind == Kind::CowLeaf;
        let can_lend = sibling.len() > self.min_entries(leaf);
        let (li, ri) = (i.min(j), i.max(j));
        assert_eq!(ri, li + 1, "a sibling that is not adjacent");
        let (mut left, mut right) = if j < i { (sibling, cur) } else { (cur, sibling) };
        if can_lend {
            if j < i {
                // The left sibling's last entry moves to the front of `cur`.
                let last = left.len() - 1;
                let (key, value) = (left.keys[last], left.value(last).to_vec());
                left.remove(last);
                if leaf {
                    right.insert(0, TAG_LIVE, key, &value);
                } else {
                    right.keys[0] = parent.keys[ri];
                    right.insert(0, TAG_LIVE, FIRST, &value);
                }
                parent.keys[ri] = key;
            } else {
                // The right sibling's first entry moves to the end of `cur`.
                let value = right.value(0).to_vec();
                let key = if leaf { right.keys[0] } else { parent.keys[ri] };
                left.push(TAG_LIVE, key, &value);
                right.remove(0);
                parent.keys[ri] = right.keys[0];
                if !leaf {
                    right.keys[0] = FIRST;
                }
            }
            left.low_key = child_low(parent, parent_low, li);
            right.low_key = parent.keys[ri];
            events.push(if leaf { "leaf_borrow" } else { "inner_borrow" });
            Fix::Borrowed { li, left, right }
        } else {
            if !leaf {
                right.keys[0] = parent.keys[ri];
            }
            left.append(&right);
            assert!(left.len() <= self.capacity(leaf), "a merge overflowed: {} entries", left.len());
            left.low_key = child_low(parent, parent_low, li);
            events.push(if leaf { "leaf_merge" } else { "inner_merge" });
            parent.remove(ri);
            Fix::Merged { li, merged: left }
        }
    }

    // ---- Top-down (Rodeh-style) operations ----------------------------------------------

    /// An insert that splits every full inner node on its way down, so that a leaf that
    /// overflows always has room in its parent and nothing splits on the way back up.
    fn insert_top_down(&mut self, tx: &mut Tx, key: u64, value: &[u8]) -> Result<(), TreeError> {
        let Some(root) = self.root else { return self.insert_op(tx, key, value) };
        let inner_cap = self.capacity(false);
        let mut levels: Vec<Level> = Vec::with_capacity(self.height as usize + 1);
        let mut height = self.height;
        let mut cur = self.read_node(root, 0)?;
        tx.dead.push(root);
        let mut cur_low = 0;
        if cur.kind == Kind::CowInner && cur.len() == inner_cap {
            // A full root: a new root above it, whose only child is then split like any other.
            let mut top = Node::new(Kind::CowInner, 8, 0);
            top.push(TAG_LIVE, FIRST, &0u64.to_le_bytes());
            levels.push(Level { node: top, low_key: 0, index: 0, sibling: None });
            height += 1;
            tx.events.push("root_split");
        }
        // Depth in the tree as it was, for reading.
        let mut depth = 0;
        loop {
            if cur.kind == Kind::CowInner && cur.len() == inner_cap {
                let parent = levels.last_mut().expect("a full non-root node has a parent on the path (a full root got one)");
                let i = parent.index;
                let mut right = cur.split_off(cur.len() / 2);
                let separator = right.keys[0];
                right.keys[0] = FIRST;
                right.low_key = separator;
                cur.low_key = cur_low;
                parent.node.insert(i + 1, TAG_LIVE, separator, &0u64.to_le_bytes());
                tx.events.push("inner_split");
                if key >= separator {
                    parent.sibling = Some((i, std::mem::replace(&mut cur, right)));
                    parent.index = i + 1;
                    cur_low = separator;
                } else {
                    parent.sibling = Some((i + 1, right));
                }
            }
            if self.is_leaf_depth(depth) {
                break;
            }
            let i = cur.route(key);
            let (child_addr, low) = (child(&cur, i), child_low(&cur, cur_low, i));
            let next = self.read_node(child_addr, depth + 1)?;
            tx.dead.push(child_addr);
            levels.push(Level { node: std::mem::replace(&mut cur, next), low_key: cur_low, index: i, sibling: None });
            cur_low = low;
            depth += 1;
        }
        let added = match cur.find(key) {
            Ok(i) => {
                cur.value_mut(i).copy_from_slice(value);
                false
            }
            Err(i) => {
                cur.insert(i, TAG_LIVE, key, value);
                true
            }
        };
        let mut up = self.write_split(tx, cur, cur_low)?;
        for level in levels.into_iter().rev() {
            let Level { mut node, low_key, index, mut sibling } = level;
            set_child(&mut node, index, up.0);
            if let Some((separator, right)) = up.1 {
                node.insert(index + 1, TAG_LIVE, separator, &right.to_le_bytes());
                if let Some((j, _)) = &mut sibling {
                    *j += (*j > index) as usize;
                }
            }
            assert!(node.len() <= inner_cap, "a node on a top-down path overflowed: {} entries", node.len());
            if let Some((j, mut half)) = sibling {
                let addr = self.write_node(tx, &mut half)?;
                set_child(&mut node, j, addr);
            }
            node.low_key = low_key;
            up = (self.write_node(tx, &mut node)?, None);
        }
        let root = match up {
            (addr, None) => addr,
            (left, Some((separator, right))) => {
                // The root was a leaf and split.
                let mut top = Node::new(Kind::CowInner, 8, 0);
                top.push(TAG_LIVE, FIRST, &left.to_le_bytes());
                top.push(TAG_LIVE, separator, &right.to_le_bytes());
                tx.events.push("root_split");
                height += 1;
                self.write_node(tx, &mut top)?
            }
        };
        (self.root, self.height) = (Some(root), height);
        self.records += added as u64;
        Ok(())
    }

    /// A delete that, on its way down, fixes every node at its minimum before entering it
    /// (borrowing from a sibling, which it reads, or merging with it), so that the leaf can
    /// lose an entry without anything propagating back up. A delete of a missing key writes
    /// nothing (its fixes were in memory only) but has read what the way down read.
    fn delete_top_down(&mut self, tx: &mut Tx, key: u64) -> Result<bool, TreeError> {
        let Some(root) = self.root else { return Ok(false) };
        let mut dead = vec![root];
        let mut events = Vec::new();
        let mut levels: Vec<Level> = Vec::with_capacity(self.height as usize);
        let (mut cur, mut cur_low) = (self.read_node(root, 0)?, 0);
        let mut depth = 0;
        while !self.is_leaf_depth(depth) {
            let mut i = cur.route(key);
            let child_addr = child(&cur, i);
            let mut next = self.read_node(child_addr, depth + 1)?;
            dead.push(child_addr);
            let mut sibling = None;
            if next.len() <= self.min_entries(self.is_leaf_depth(depth + 1)) {
                let j = if i > 0 { i - 1 } else { i + 1 };
                let sibling_addr = child(&cur, j);
                let other = self.read_node(sibling_addr, depth + 1)?;
                dead.push(sibling_addr);
                match self.shift_or_merge(&mut events, &mut cur, cur_low, i, next, j, other) {
                    Fix::Borrowed { li, left, right } if i == li => (next, sibling) = (left, Some((li + 1, right))),
                    Fix::Borrowed { li, left, right } => (next, sibling) = (right, Some((li, left))),
                    Fix::Merged { li, merged } => (next, i) = (merged, li),
                }
            }
            let low = child_low(&cur, cur_low, i);
            levels.push(Level { node: std::mem::replace(&mut cur, next), low_key: cur_low, index: i, sibling });
            cur_low = low;
            depth += 1;
        }
        let Ok(pos) = cur.find(key) else { return Ok(false) };
        cur.remove(pos);
        tx.dead.extend(dead);
        tx.events.extend(events);
        let mut up = if cur.is_empty() {
            assert!(levels.is_empty(), "a non-root leaf emptied: the way down left it at its minimum");
            None
        } else {
            cur.low_key = cur_low;
            Some(self.write_node(tx, &mut cur)?)
        };
        let mut height = self.height;
        for (d, level) in levels.into_iter().enumerate().rev() {
            let Level { mut node, low_key, index, sibling } = level;
            let below = up.expect("a child on the path was written");
            if d == 0 && node.len() == 1 {
                // The root's last two children merged: the child is the new root.
                assert!(sibling.is_none(), "a root that lost a child also changed another");
                tx.events.push("root_collapse");
                height -= 1;
                continue;
            }
            set_child(&mut node, index, below);
            if let Some((j, mut other)) = sibling {
                let addr = self.write_node(tx, &mut other)?;
                set_child(&mut node, j, addr);
            }
            node.low_key = low_key;
            up = Some(self.write_node(tx, &mut node)?);
        }
        (self.root, self.height) = (up, if up.is_some() { height } else { 0 });
        self.records -= 1;
        Ok(true)
    }

    // ---- Garbage collection -------------------------------------------------------------

    /// Makes room for an operation that may write `needed` nodes, by the configured rule.
    fn ensure_room(&mut self, needed: u64) -> Result<(), TreeError> {
        match self.config.cow_collect {
            CowCollect::Reserve => {
                // Zones until there is room for `needed` plus the collection reserve; short of
                // the reserve, settle for `needed`.
                for _ in 0..self.space.zone_count() {
                    let reserve = 2 * self.space.total_live_nodes(&self.store);
                    if self.space.free_nodes(&self.store) >= needed + reserve || !self.collect(false)? {
                        break;
                    }
                }
            }
            CowCollect::WhenFull => {
                // Every zone that filled, each once (a collection fills no zone it collects).
                for _ in 0..self.space.zone_count() {
                    if !self.collect(true)? {
                        break;
                    }
                }
            }
        }
        let free = self.space.free_nodes(&self.store);
        if free >= needed {
            return Ok(());
        }
        Err(TreeError::NoSpace(format!(
            "an operation may write {needed} nodes but only {free} node slots are free in {} zones (the conventional one used sequentially and {} sequential), \
             which hold {} live nodes; no zone can be collected for more room",
            self.space.zone_count(),
            self.space.zone_count() - 1,
            self.space.total_live_nodes(&self.store)
        )))
    }

    /// Collects one zone (only a full one if `only_full`): the one with the fewest live nodes
    /// (then the most written) whose nodes fit elsewhere and whose reset gains room. Returns
    /// whether one was collected.
    fn collect(&mut self, only_full: bool) -> Result<bool, TreeError> {
        let (space, store) = (&self.space, &self.store);
        let mut candidates: Vec<usize> =
            (0..space.zone_count()).filter(|&z| space.written_nodes(store, z) > space.live_nodes(store, z) && (!only_full || space.room_nodes(store, z) == 0)).collect();
        candidates.sort_by_key(|&z| (space.live_nodes(store, z), std::cmp::Reverse(space.written_nodes(store, z)), z));
        // Inner nodes read while planning, so that trying several victims reads each once.
        let mut inner = HashMap::new();
        for victim in candidates {
            let outside = self.space.free_nodes(&self.store) - self.space.room_nodes(&self.store, victim);
            let live = self.space.live_nodes(&self.store, victim);
            if live > outside {
                continue;
            }
            let rewrites = match self.root {
                Some(root) if live > 0 => self.plan(victim, root, 0, &mut inner)?.1,
                _ => 0,
            };
            if rewrites > outside || rewrites >= self.space.written_nodes(&self.store, victim) {
                continue;
            }
            if live > 0 {
                self.relocate_out_of(victim, &mut inner)?;
            }
            assert_eq!(self.space.live_nodes(&self.store, victim), 0, "zone {victim} still holds live nodes after its collection");
            self.space.reset(&mut self.store, victim)?;
            *self.events.entry("zone_collected").or_default() += 1;
            return Ok(true);
        }
        Ok(false)
    }

    /// Moves every live node out of `victim`, with the ancestors that must point to the copies.
    fn relocate_out_of(&mut self, victim: usize, inner: &mut HashMap<u64, Node>) -> Result<(), TreeError> {
        self.space.exclude = Some(victim);
        let moved = self.transact(|tree, tx| {
            if let Some(root) = tree.root {
                if let Some(new_root) = tree.relocate(tx, victim, root, 0, inner)? {
                    tree.root = Some(new_root);
                }
            }
            Ok(())
        });
        self.space.exclude = None;
        moved
    }

    /// Whether the subtree at `addr` has a node in `victim`, and how many of its nodes a
    /// collection of `victim` rewrites (those in it and their ancestors).
    fn plan(&mut self, victim: usize, addr: u64, depth: usize, inner: &mut HashMap<u64, Node>) -> Result<(bool, u64), TreeError> {
        let in_victim = self.space.zone_of(&self.store, addr) == victim;
        if self.is_leaf_depth(depth) {
            return Ok((in_victim, in_victim as u64));
        }
        let children_of = |node: &Node| -> Vec<u64> { (0..node.len()).map(|i| child(node, i)).collect() };
        let children = match inner.get(&addr) {
            Some(node) => children_of(node),
            None => {
                let node = self.read_node(addr, depth)?;
                let children = children_of(&node);
                inner.insert(addr, node);
                children
            }
        };
        let (mut dirty, mut rewrites) = (in_victim, 0);
        for c in children {
            let (d, n) = self.plan(victim, c, depth + 1, inner)?;
            dirty |= d;
            rewrites += n;
        }
        Ok((dirty, rewrites + dirty as u64))
    }

    /// Rewrites, outside `victim`, the nodes of the subtree at `addr` that live in it and
    /// their ancestors; returns the subtree's new address if it moved.
    fn relocate(&mut self, tx: &mut Tx, victim: usize, addr: u64, depth: usize, inner: &mut HashMap<u64, Node>) -> Result<Option<u64>, TreeError> {
        let in_victim = self.space.zone_of(&self.store, addr) == victim;
        let leaf = self.is_leaf_depth(depth);
        if leaf && !in_victim {
            return Ok(None);
        }
        let mut node = match inner.remove(&addr) {
            Some(node) if !leaf => node,
            _ => self.read_node(addr, depth)?,
        };
        let mut moved = false;
        if !leaf {
            for i in 0..node.len() {
                if let Some(new_addr) = self.relocate(tx, victim, child(&node, i), depth + 1, inner)? {
                    set_child(&mut node, i, new_addr);
                    moved = true;
                }
            }
        }
        if !moved && !in_victim {
            return Ok(None);
        }
        let new_addr = self.write_node(tx, &mut node)?;
        if in_victim {
            self.store.count_gc_copy();
        }
        tx.dead.push(addr);
        Ok(Some(new_addr))
    }

    // ---- Invariants ---------------------------------------------------------------------

    #[allow(clippy::too_many_arguments)]
    fn check_node(&mut self, addr: u64, depth: usize, low_key: u64, high_key: Option<u64>, seen: &mut HashSet<u64>, live_per_zone: &mut [u64], records: &mut u64) {
        assert!(seen.insert(addr), "the node at {addr} is reachable twice");
        live_per_zone[self.space.zone_of(&self.store, addr)] += 1;
        let node = self.read_node(addr, depth).unwrap_or_else(|e| panic!("check_invariants: {e}"));
        let leaf = self.is_leaf_depth(depth);
        let at = format!("{} node at {addr} (depth {depth})", node.kind.name());
        let min = if depth > 0 {
            self.min_entries(leaf)
        } else if leaf {
            1
        } else {
            2
        };
        assert!(node.len() >= min && node.len() <= self.capacity(leaf), "{at}: {} entries, outside {min}..={}", node.len(), self.capacity(leaf));
        assert!(node.tags.iter().all(|&t| t == TAG_LIVE), "{at}: an entry not tagged live");
        assert_eq!(node.low_key, low_key, "{at}: low key is not the lower bound of its range");
        let in_range = |k: u64| k >= low_key && high_key.is_none_or(|h| k < h);
        if leaf {
            assert!(node.keys.windows(2).all(|w| w[0] < w[1]), "{at}: keys not strictly ascending: {:?}", node.keys);
            assert!(node.keys.iter().all(|&k| in_range(k)), "{at}: keys {:?} outside [{low_key}, {high_key:?})", node.keys);
            *records += node.len() as u64;
            return;
        }
        assert_eq!(node.keys[0], FIRST, "{at}: entry 0 is not the First sentinel");
        let separators = &node.keys[1..];
        assert!(separators.windows(2).all(|w| w[0] < w[1]), "{at}: separators not strictly ascending: {:?}", node.keys);
        assert!(separators.iter().all(|&k| k > low_key && in_range(k)), "{at}: separators {separators:?} outside ({low_key}, {high_key:?})");
        for i in 0..node.len() {
            let high = if i + 1 < node.len() { Some(node.keys[i + 1]) } else { high_key };
            self.check_node(child(&node, i), depth + 1, child_low(&node, low_key, i), high, seen, live_per_zone, records);
        }
    }
}

impl<D: ZonedDevice> Index for CowTree<D> {
    fn name(&self) -> &'static str {
        "cow"
    }

    fn insert(&mut self, key: u64, value: &[u8]) -> Result<(), TreeError> {
        self.config.check_value(value)?;
        // Worst case: every level splits (two nodes each) and a new root.
        let needed = if self.root.is_none() { 1 } else { 2 * self.height as u64 + 1 };
        self.ensure_room(needed)?;
        match self.config.cow_rebalance {
            CowRebalance::BottomUp => self.transact(|tree, tx| tree.insert_op(tx, key, value)),
            CowRebalance::TopDown => self.transact(|tree, tx| tree.insert_top_down(tx, key, value)),
        }
    }

    fn delete(&mut self, key: u64) -> Result<bool, TreeError> {
        if self.root.is_none() {
            return Ok(false);
        }
        // Worst case: every level below the root writes its node and a sibling; the root.
        self.ensure_room(2 * (self.height as u64 - 1) + 1)?;
        match self.config.cow_rebalance {
            CowRebalance::BottomUp => self.transact(|tree, tx| tree.delete_op(tx, key)),
            CowRebalance::TopDown => self.transact(|tree, tx| tree.delete_top_down(tx, key)),
        }
    }

    fn get(&mut self, key: u64) -> Result<Option<Vec<u8>>, TreeError> {
        let Some(mut addr) = self.root else { return Ok(None) };
        for depth in 0..self.height as usize - 1 {
            let node = self.read_node(addr, depth)?;
            addr = child(&node, node.route(key));
        }
        let leaf = self.read_node(addr, self.height as usize - 1)?;
        Ok(leaf.find(key).ok().map(|i| leaf.value(i).to_vec()))
    }

    fn scan(&mut self, start: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, TreeError> {
        let mut out = Vec::new();
        let Some(mut addr) = self.root else { return Ok(out) };
        if limit == 0 {
            return Ok(out);
        }
        // No sibling pointers (a CoW tree cannot keep them): the inner nodes above the
        // current leaf, with the child taken, lead to the next leaf.
        let mut stack: Vec<(Node, usize)> = Vec::with_capacity(self.height as usize);
        let leaf_depth = self.height as usize - 1;
        for depth in 0..leaf_depth {
            let node = self.read_node(addr, depth)?;
            let i = node.route(start);
            addr = child(&node, i);
            stack.push((node, i));
        }
        loop {
            let leaf = self.read_node(addr, leaf_depth)?;
            for i in leaf.keys.partition_point(|&k| k < start)..leaf.len() {
                out.push((leaf.keys[i], leaf.value(i).to_vec()));
                if out.len() == limit {
                    return Ok(out);
                }
            }
            loop {
                let Some((node, i)) = stack.last_mut() else { return Ok(out) };
                if *i + 1 < node.len() {
                    *i += 1;
                    addr = child(node, *i);
                    break;
                }
                stack.pop();
            }
            while stack.len() < leaf_depth {
                let node = self.read_node(addr, stack.len())?;
                addr = child(&node, 0);
                stack.push((node, 0));
            }
        }
    }

    /// The conventional zone is used as a sequential one, so `conventional_occupancy` is, like
    /// `sequential_occupancy`, the written fraction of its node slots (dead nodes included),
    /// and `io.zone_resets` counts its reclamations with the sequential zones' resets.
    fn stats(&self) -> TreeStats {
        let (space, store) = (&self.space, &self.store);
        let mut io = store.stats().clone();
        // The store resets sequential zones only; the conventional one is reclaimed here.
        io.zone_resets += space.conv_resets;
        TreeStats {
            io,
            records: self.records,
            height: self.height,
            sequential_occupancy: if store.sequential_zone_count() == 0 { 0.0 } else { store.sequential_occupancy() },
            conventional_occupancy: space.conv_written_nodes as f64 / space.conv_slots.len() as f64,
            sequential_live_nodes: store.sequential_live_nodes(),
            conventional_live_nodes: space.conv_live_nodes,
            events: self.events.clone(),
        }
    }

    /// Also checks that the store counts every node of the tree live, in its zone, and
    /// nothing else. Reads the whole tree (counted in the read statistics).
    fn check_invariants(&mut self) {
        self.store.check_invariants();
        self.space.check_invariants(&self.store);
        let mut live_per_zone = vec![0; self.space.zone_count()];
        let mut records = 0;
        match self.root {
            None => assert_eq!(self.height, 0, "an empty tree of height {}", self.height),
            Some(root) => {
                assert!(self.height >= 1, "a root in a tree of height 0");
                self.check_node(root, 0, 0, None, &mut HashSet::new(), &mut live_per_zone, &mut records);
            }
        }
        assert_eq!(records, self.records, "the leaves hold {records} records; the tree counts {}", self.records);
        for (zone, &reached) in live_per_zone.iter().enumerate() {
            let counted = self.space.live_nodes(&self.store, zone);
            assert_eq!(reached, counted, "zone {zone}: {reached} tree nodes, {counted} counted live");
        }
    }
}

/// The zones the tree appends to, as one index space: 0 is the conventional node space used
/// as a sequential zone, `1 + i` the store's sequential zone `i`.
///
/// The store hands conventional slots out one at a time and recycles a freed one at once,
/// which would let dead slots be overwritten in place. So this takes every conventional slot at creation,
/// writes them strictly in address order behind its own cursor, gives a dead node's slot
/// back to the store at once (the store then drops its shadow copy) and takes them all back
/// on a reset. The store's own conventional counts therefore mean nothing for this tree:
/// [`CowTree::stats`] reports this cursor's. It also mirrors the store's sequential zone
/// capacities. (A store mode that treats the conventional space as one more sequential zone
/// would replace all of this; not done yet.)
struct Space {
    node_blocks: u64,
    /// Start and capacity of each of the store's sequential zones, as `Store::new` computes them.
    seq_starts: Vec<u64>,
    seq_capacity_nodes: Vec<u64>,
    /// Every conventional node slot, in address order.
    conv_slots: Vec<u64>,
    /// Cursor: slots `..conv_written_nodes` have been written since the last reset.
    conv_written_nodes: usize,
    conv_live_nodes: u64,
    conv_resets: u64,
    /// The zone being collected, which no write may land in.
    exclude: Option<usize>,
    /// The write zone of [`CowCollect::WhenFull`] ([`Space::choose_cyclic`]).
    cursor: usize,
}

impl Space {
    fn new<D: ZonedDevice>(store: &mut Store<D>, zones: &[ZoneDescriptor]) -> Space {
        let node_blocks = (store.node_bytes() / store.device().geometry().block_size_bytes as usize) as u64;
        let (mut seq_starts, mut seq_capacity_nodes) = (Vec::new(), Vec::new());
        for z in zones.iter().filter(|z| z.zone_type == ZoneType::SequentialWriteRequired && z.capacity_blocks >= node_blocks) {
            seq_starts.push(z.start.0);
            seq_capacity_nodes.push(z.capacity_blocks / node_blocks);
        }
        seq_starts.truncate(store.sequential_zone_count());
        seq_capacity_nodes.truncate(store.sequential_zone_count());
        assert_eq!(seq_starts.len(), store.sequential_zone_count(), "the store's sequential zones are not the device's");
        for (i, &start) in seq_starts.iter().enumerate() {
            assert_eq!(store.zone_range(i), (start, start), "the store's sequential zone {i} is not the device's");
        }
        // The store's only error here is running out of slots, which ends the loop.
        let mut conv_slots = Vec::new();
        while let Ok(addr) = store.alloc_conventional() {
            assert!(conv_slots.last().is_none_or(|&last| last < addr), "conventional slots handed out out of order");
            conv_slots.push(addr);
        }
        assert!(!conv_slots.is_empty(), "the store made no conventional slot");
        Space { node_blocks, seq_starts, seq_capacity_nodes, conv_slots, conv_written_nodes: 0, conv_live_nodes: 0, conv_resets: 0, exclude: None, cursor: 0 }
    }

    fn zone_count(&self) -> usize {
        1 + self.seq_starts.len()
    }

    fn zone_of<D: ZonedDevice>(&self, store: &Store<D>, addr: u64) -> usize {
        if store.is_sequential(addr) {
            self.seq_starts.partition_point(|&start| start <= addr)
        } else {
            0
        }
    }

    fn capacity_nodes(&self, zone: usize) -> u64 {
        match zone {
            0 => self.conv_slots.len() as u64,
            z => self.seq_capacity_nodes[z - 1],
        }
    }

    fn written_nodes<D: ZonedDevice>(&self, store: &Store<D>, zone: usize) -> u64 {
        match zone {
            0 => self.conv_written_nodes as u64,
            z => {
                let (start, end) = store.zone_range(z - 1);
                (end - start) / self.node_blocks
            }
        }
    }

    fn room_nodes<D: ZonedDevice>(&self, store: &Store<D>, zone: usize) -> u64 {
        self.capacity_nodes(zone) - self.written_nodes(store, zone)
    }

    fn live_nodes<D: ZonedDevice>(&self, store: &Store<D>, zone: usize) -> u64 {
        match zone {
            0 => self.conv_live_nodes,
            z => store.live_nodes_in(z - 1),
        }
    }

    fn free_nodes<D: ZonedDevice>(&self, store: &Store<D>) -> u64 {
        (0..self.zone_count()).map(|z| self.room_nodes(store, z)).sum()
    }

    fn total_live_nodes<D: ZonedDevice>(&self, store: &Store<D>) -> u64 {
        self.conv_live_nodes + store.sequential_live_nodes()
    }

    /// A zone with room for a node, other than the one being collected.
    fn choose<D: ZonedDevice>(&self, store: &Store<D>, choice: ZoneChoice) -> Option<usize> {
        let room = |z: usize| self.room_nodes(store, z);
        let mut zones = (0..self.zone_count()).filter(|&z| Some(z) != self.exclude && room(z) > 0);
        match choice {
            ZoneChoice::MostFree => zones.max_by_key(|&z| (room(z), std::cmp::Reverse(z))),
            ZoneChoice::LeastFree => zones.min_by_key(|&z| (room(z), z)),
            ZoneChoice::InOrder => zones.next(),
        }
    }

    /// Zones one at a time in a cycle: the cursor's zone while it has room, else the next
    /// one with room after it (never the one being collected), which becomes the cursor's.
    fn choose_cyclic<D: ZonedDevice>(&mut self, store: &Store<D>) -> Option<usize> {
        let n = self.zone_count();
        let zone = (0..n).map(|k| (self.cursor + k) % n).find(|&z| Some(z) != self.exclude && self.room_nodes(store, z) > 0)?;
        self.cursor = zone;
        Some(zone)
    }

    fn append<D: ZonedDevice>(&mut self, store: &mut Store<D>, zone: usize, node: &mut Node) -> Result<u64, TreeError> {
        assert_ne!(Some(zone), self.exclude, "a write into the zone being collected");
        if zone > 0 {
            return store.append_sequential(zone - 1, node);
        }
        let addr = self.conv_slots[self.conv_written_nodes];
        store.write_conventional(addr, node)?;
        self.conv_written_nodes += 1;
        self.conv_live_nodes += 1;
        Ok(addr)
    }

    fn free<D: ZonedDevice>(&mut self, store: &mut Store<D>, addr: u64) {
        if !store.is_sequential(addr) {
            assert!(self.conv_live_nodes > 0, "a conventional node freed at {addr} with none live");
            self.conv_live_nodes -= 1;
        }
        store.free(addr);
    }

    /// Makes every slot of `zone`, which holds no live node, writable again.
    fn reset<D: ZonedDevice>(&mut self, store: &mut Store<D>, zone: usize) -> Result<(), TreeError> {
        assert_eq!(self.live_nodes(store, zone), 0, "zone {zone} reset with live nodes");
        if zone > 0 {
            return store.reset_sequential(zone - 1);
        }
        if self.conv_written_nodes == 0 {
            return Ok(());
        }
        // Every written slot was freed when its node died: take them back. A conventional
        // zone has no reset command; this counts as one because it ends the same way.
        for _ in 0..self.conv_written_nodes {
            store.alloc_conventional().expect("a slot freed by this tree");
        }
        self.conv_written_nodes = 0;
        self.conv_resets += 1;
        Ok(())
    }

    fn check_invariants<D: ZonedDevice>(&self, store: &Store<D>) {
        assert!(self.conv_written_nodes <= self.conv_slots.len(), "conventional cursor past the end");
        assert!(self.conv_live_nodes <= self.conv_written_nodes as u64, "more live conventional nodes than written");
        // The store holds every slot for this tree but the written ones that died.
        let held = self.conv_slots.len() as u64 - (self.conv_written_nodes as u64 - self.conv_live_nodes);
        assert_eq!(store.conventional_live_nodes(), held, "conventional slots the store holds for this tree");
        for z in 1..self.zone_count() {
            assert!(self.written_nodes(store, z) <= self.capacity_nodes(z), "zone {z} written past capacity");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use zonekit_base::Rng;
    use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};

    use super::*;
    use crate::Payload;

    fn geometry(zone_size_blocks: u64, zone_count: u32) -> Geometry {
        Geometry {
            block_size_bytes: 4096,
            zone_size_blocks,
            zone_capacity_blocks: zone_size_blocks,
            zone_count,
            conventional_zone_count: 1,
            open_zones_max: None,
            active_zones_max: None,
        }
    }

    fn small_config(payload: Payload, dynamic_zone_choice: bool) -> TreeConfig {
        TreeConfig { leaf_entries_max: 4, inner_entries_max: 4, payload, dynamic_zone_choice, ..TreeConfig::default() }
    }

    fn tree(geometry: Geometry, mode: StorageMode, config: TreeConfig) -> CowTree<MemDevice> {
        CowTree::create(MemDevice::new(geometry, ZoneBehavior::default(), mode).unwrap(), config).unwrap()
    }

    fn value_of(key: u64, version: u64) -> Vec<u8> {
        (key.wrapping_mul(31) ^ version.wrapping_mul(0x9E37_79B9)).to_le_bytes().to_vec()
    }

    /// Prints the seed of a randomized test that panics.
    struct Seed(u64);

    impl Drop for Seed {
        fn drop(&mut self) {
            if std::thread::panicking() {
                eprintln!("failing seed: {}", self.0);
            }
        }
    }

    /// Random inserts, upserts, deletes, gets and scans over `key_space` keys, checked
    /// against a BTreeMap: a growing phase, a mixed phase, then deleting everything.
    fn run_model(seed: u64, tree: &mut CowTree<MemDevice>, key_space: u64, ops: usize, check_every: usize) {
        let _seed = Seed(seed);
        let mut rng = Rng::new(seed);
        let mut model: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        for n in 0..ops {
            let key = rng.below(key_space);
            let grow = n < ops / 3;
            match rng.below(10) {
                0..=4 => {
                    let value = value_of(key, n as u64);
                    tree.insert(key, &value).unwrap();
                    model.insert(key, value);
                }
                5..=6 if !grow => assert_eq!(tree.delete(key).unwrap(), model.remove(&key).is_some(), "op {n}: delete {key}"),
                7 => assert_eq!(tree.get(key).unwrap(), model.get(&key).cloned(), "op {n}: get {key}"),
                8 => {
                    let limit = rng.below(12) as usize;
                    let want: Vec<(u64, Vec<u8>)> = model.range(key..).take(limit).map(|(k, v)| (*k, v.clone())).collect();
                    assert_eq!(tree.scan(key, limit).unwrap(), want, "op {n}: scan from {key}, {limit}");
                }
                _ => {}
            }
            if n % check_every == 0 {
                tree.check_invariants();
                assert_eq!(tree.stats().records, model.len() as u64);
            }
        }
        tree.check_invariants();
        assert_eq!(tree.scan(0, usize::MAX).unwrap(), model.iter().map(|(k, v)| (*k, v.clone())).collect::<Vec<_>>());
        let keys: Vec<u64> = model.keys().copied().collect();
        for (n, key) in keys.into_iter().enumerate() {
            assert!(tree.delete(key).unwrap(), "draining: delete {key}");
            assert!(!tree.delete(key).unwrap(), "draining: delete {key} twice");
            if n % check_every == 0 {
                tree.check_invariants();
            }
        }
        tree.check_invariants();
        let stats = tree.stats();
        assert_eq!((stats.records, stats.height, stats.sequential_live_nodes + stats.conventional_live_nodes), (0, 0, 0));
    }

    /// Asserts that every structural path of the tree was taken.
    fn assert_every_path(t: &CowTree<MemDevice>) {
        let events = t.stats().events;
        for name in ["leaf_split", "inner_split", "root_split", "leaf_borrow", "inner_borrow", "leaf_merge", "inner_merge", "root_collapse"] {
            assert!(events.get(name).copied().unwrap_or(0) > 0, "no {name}: {events:?}");
        }
    }

    #[test]
    fn model_data_on_device() {
        for seed in 0..6 {
            let mut t = tree(geometry(256, 5), StorageMode::Data, small_config(Payload::Device, true));
            run_model(seed, &mut t, 300, 3000, 7);
            assert_every_path(&t);
        }
    }

    #[test]
    fn model_metadata_only_with_shadow_payload() {
        for seed in 100..106 {
            let mut t = tree(geometry(256, 5), StorageMode::MetadataOnly, small_config(Payload::Shadow, seed % 2 == 0));
            run_model(seed, &mut t, 300, 3000, 7);
            assert_every_path(&t);
        }
    }

    #[test]
    fn capacity_three_nodes() {
        for seed in 200..204 {
            let config = TreeConfig { leaf_entries_max: 3, inner_entries_max: 3, ..small_config(Payload::Device, true) };
            let mut t = tree(geometry(256, 5), StorageMode::Data, config);
            run_model(seed, &mut t, 150, 2000, 5);
            assert_every_path(&t);
        }
    }

    /// §4.2.5: one conventional and one sequential zone, zones in order: the tree keeps
    /// collecting one zone into the other and stays right.
    #[test]
    fn collection_with_one_conventional_and_one_sequential_zone() {
        for (seed, dynamic) in [(300, false), (301, false), (302, true), (303, true)] {
            let mut t = tree(geometry(64, 2), StorageMode::Data, small_config(Payload::Device, dynamic));
            run_model(seed, &mut t, 24, 3000, 3);
            let io = t.stats().io;
            assert!(io.zone_resets >= 20, "seed {seed}: {} resets", io.zone_resets);
            assert!(io.gc_node_copies > 0);
            assert_eq!(t.stats().events["zone_collected"], io.zone_resets);
        }
        for seed in [304, 305] {
            let mut t = tree(geometry(64, 2), StorageMode::MetadataOnly, small_config(Payload::Shadow, false));
            run_model(seed, &mut t, 24, 3000, 3);
        }
    }

    /// Many zones, full ones collected: the greedy victim is found among several.
    #[test]
    fn collection_over_many_zones() {
        for (seed, dynamic) in [(400, true), (401, false)] {
            let mut t = tree(geometry(32, 9), StorageMode::Data, small_config(Payload::Device, dynamic));
            run_model(seed, &mut t, 80, 4000, 5);
            assert!(t.stats().io.zone_resets > 0);
        }
    }

    fn top_down(config: TreeConfig) -> TreeConfig {
        TreeConfig { cow_rebalance: CowRebalance::TopDown, ..config }
    }

    /// The top-down (Rodeh-style) tree against the model over many seeds and shapes, every
    /// invariant checked after every operation.
    #[test]
    fn model_top_down() {
        for seed in 500..540 {
            let (leaf, inner) = [(4, 4), (3, 4), (5, 5), (4, 6)][seed as usize % 4];
            let payload = if seed % 3 == 0 { Payload::Shadow } else { Payload::Device };
            let mode = if payload == Payload::Shadow { StorageMode::MetadataOnly } else { StorageMode::Data };
            let config = TreeConfig { leaf_entries_max: leaf, inner_entries_max: inner, ..top_down(small_config(payload, seed % 2 == 0)) };
            let mut t = tree(geometry(256, 5), mode, config);
            run_model(seed, &mut t, 300, 2000, 1);
            assert_every_path(&t);
        }
    }

    /// Top-down with collection: one conventional and one sequential zone, both rules.
    #[test]
    fn model_top_down_with_collection() {
        for (seed, collect) in [(600, CowCollect::Reserve), (601, CowCollect::WhenFull), (602, CowCollect::WhenFull)] {
            let config = TreeConfig { cow_collect: collect, ..top_down(small_config(Payload::Device, false)) };
            let mut t = tree(geometry(64, 2), StorageMode::Data, config);
            run_model(seed, &mut t, 24, 3000, 1);
            assert!(t.stats().io.zone_resets >= 20, "seed {seed}: {} resets", t.stats().io.zone_resets);
        }
    }

    /// A top-down delete reads a sibling at every level whose node is at its minimum, even
    /// for a key that is not there (and then writes nothing); a bottom-up one reads the path.
    #[test]
    fn top_down_delete_reads_siblings_on_the_way_down() {
        for rebalance in CowRebalance::ALL {
            let config = TreeConfig { cow_rebalance: rebalance, ..small_config(Payload::Device, true) };
            let mut t = tree(geometry(256, 5), StorageMode::Data, config);
            // Ascending inserts leave every node but the rightmost at its minimum (2 of 4).
            for k in 0..64 {
                t.insert(k * 10, &value_of(k, 0)).unwrap();
            }
            let height = t.stats().height as u64;
            assert!(height >= 3, "height {height}");
            let before = t.stats().io;
            assert!(!t.delete(5).unwrap(), "a key that is not there");
            let after = t.stats().io;
            let reads = after.node_reads - before.node_reads;
            match rebalance {
                CowRebalance::BottomUp => assert_eq!(reads, height),
                CowRebalance::TopDown => assert_eq!(reads, height + (height - 1), "a sibling below every level"),
            }
            assert_eq!(after.node_writes(), before.node_writes(), "{}: a missing key writes nothing", rebalance.name());
            t.check_invariants();
        }
    }

    #[test]
    fn top_down_needs_inner_nodes_of_four_and_when_full_needs_zones_in_order() {
        let device = || MemDevice::new(geometry(64, 2), ZoneBehavior::default(), StorageMode::Data).unwrap();
        let config = TreeConfig { inner_entries_max: 3, ..top_down(small_config(Payload::Device, true)) };
        let e = CowTree::create(device(), config).err().unwrap().to_string();
        assert!(e.contains("top-down rebalancing needs inner nodes of at least 4 entries") && e.contains("these hold 3"), "{e}");
        let config = TreeConfig { cow_collect: CowCollect::WhenFull, ..small_config(Payload::Device, true) };
        let e = CowTree::create(device(), config).err().unwrap().to_string();
        assert!(e.contains("needs zones used in order"), "{e}");
        let e = crate::ZbTree::create(device(), TreeConfig { cow_rebalance: CowRebalance::TopDown, ..TreeConfig::default() }).err().unwrap().to_string();
        assert!(e.contains("the copy-on-write tree's settings"), "{e}");
    }

    /// §4.2.5's rule: a zone is collected only once it is full, and with one conventional and
    /// one sequential zone the two take turns (the reserve rule collects zones before they
    /// fill).
    #[test]
    fn when_full_collects_only_full_zones_in_turn() {
        for (seed, rebalance) in [(700, CowRebalance::BottomUp), (701, CowRebalance::TopDown)] {
            let _seed = Seed(seed);
            let config = TreeConfig { cow_collect: CowCollect::WhenFull, cow_rebalance: rebalance, ..small_config(Payload::Device, false) };
            let mut t = tree(geometry(64, 2), StorageMode::Data, config);
            let mut rng = Rng::new(seed);
            let mut model = BTreeMap::new();
            let mut collected = Vec::new();
            for n in 0..4000u64 {
                let written: Vec<u64> = (0..t.space.zone_count()).map(|z| t.space.written_nodes(&t.store, z)).collect();
                let resets = t.stats().io.zone_resets;
                let key = rng.below(40);
                if rng.below(3) == 0 {
                    assert_eq!(t.delete(key).unwrap(), model.remove(&key).is_some());
                } else {
                    t.insert(key, &value_of(key, n)).unwrap();
                    model.insert(key, value_of(key, n));
                }
                if t.stats().io.zone_resets > resets {
                    assert_eq!(t.stats().io.zone_resets, resets + 1, "op {n}: one zone at a time");
                    let zone = (0..written.len()).find(|&z| t.space.written_nodes(&t.store, z) < written[z]).expect("a zone was reset");
                    assert_eq!(written[zone], t.space.capacity_nodes(zone), "op {n}: zone {zone} collected before it was full");
                    collected.push(zone);
                }
            }
            t.check_invariants();
            assert!(collected.len() >= 20, "{} collections", collected.len());
            assert!(collected.windows(2).all(|w| w[0] != w[1]), "the zones take turns: {collected:?}");
        }
    }

    #[test]
    fn nothing_written_in_place() {
        let mut t = tree(geometry(64, 2), StorageMode::Data, small_config(Payload::Device, false));
        let (mut roots, mut resets) = (HashSet::new(), 0);
        for n in 0..400u64 {
            t.insert(n % 16, &value_of(n, n)).unwrap();
            if t.stats().io.zone_resets != resets {
                // A reset makes its zone's addresses writable again.
                (roots, resets) = (HashSet::new(), t.stats().io.zone_resets);
            }
            let root = t.root.unwrap();
            assert!(roots.insert(root), "op {n}: a root written where an earlier one was, at {root}");
        }
        assert!(resets > 0);
    }

    #[test]
    fn io_per_operation_is_the_path() {
        let mut t = tree(geometry(256, 5), StorageMode::Data, small_config(Payload::Device, true));
        for k in 0..40 {
            t.insert(k * 10, &value_of(k, 0)).unwrap();
        }
        let height = t.stats().height as u64;
        assert!(height >= 3);
        let before = t.stats().io;
        t.insert(50, &value_of(5, 1)).unwrap(); // an upsert: no split
        let after = t.stats().io;
        assert_eq!((after.node_reads - before.node_reads, after.node_writes() - before.node_writes()), (height, height));
        assert_eq!(t.get(50).unwrap(), Some(value_of(5, 1)));
        let before = t.stats().io;
        assert!(!t.delete(55).unwrap());
        let after = t.stats().io;
        assert_eq!((after.node_reads - before.node_reads, after.node_writes()), (height, before.node_writes()));
        let before = t.stats().io;
        assert_eq!(t.get(55).unwrap(), None);
        assert_eq!(t.stats().io.node_reads - before.node_reads, height);
    }

    #[test]
    fn empty_tree_and_bad_values() {
        let mut t = tree(geometry(64, 2), StorageMode::Data, small_config(Payload::Device, true));
        assert_eq!(t.name(), "cow");
        assert_eq!(t.get(1).unwrap(), None);
        assert_eq!(t.scan(0, 10).unwrap(), vec![]);
        assert!(!t.delete(1).unwrap());
        let err = t.insert(1, &[0; 7]).unwrap_err();
        assert!(matches!(err, TreeError::ValueSize { got: 7, want: 8 }), "{err}");
        assert_eq!(t.stats(), TreeStats::default());
        t.check_invariants();
        t.insert(1, &[2; 8]).unwrap();
        assert_eq!(t.scan(0, 0).unwrap(), vec![]);
        assert_eq!(t.scan(0, 5).unwrap(), vec![(1, vec![2; 8])]);
        assert_eq!(t.scan(2, 5).unwrap(), vec![]);
        let err = t.insert(2, &[0; 9]).unwrap_err();
        assert!(matches!(err, TreeError::ValueSize { got: 9, want: 8 }), "{err}");
        t.check_invariants();
    }

    #[test]
    fn too_many_records_is_no_space_and_the_tree_survives() {
        let mut t = tree(geometry(16, 2), StorageMode::Data, small_config(Payload::Device, false));
        let mut inserted = 0;
        let err = loop {
            match t.insert(inserted, &value_of(inserted, 0)) {
                Ok(()) => inserted += 1,
                Err(e) => break e,
            }
            assert!(inserted < 1000, "a 31-node device took 1000 records");
        };
        assert!(matches!(err, TreeError::NoSpace(_)), "{err}");
        assert!(err.to_string().contains("2 zones") && err.to_string().contains("live nodes"), "{err}");
        t.check_invariants();
        assert_eq!(t.stats().records, inserted);
        for k in 0..inserted {
            assert_eq!(t.get(k).unwrap(), Some(value_of(k, 0)));
        }

        // Only a conventional zone: nothing to collect into.
        let only_conventional = Geometry { zone_count: 1, ..geometry(16, 1) };
        let mut t = tree(only_conventional, StorageMode::Data, small_config(Payload::Device, true));
        let mut inserted = 0;
        while t.insert(inserted, &value_of(inserted, 0)).is_ok() {
            inserted += 1;
        }
        assert!(inserted > 3, "{inserted} records");
        t.check_invariants();
        assert_eq!(t.stats().sequential_occupancy, 0.0);
    }

    #[test]
    fn full_size_nodes() {
        let mut t = tree(geometry(256, 5), StorageMode::Data, TreeConfig::default());
        let mut rng = Rng::new(7);
        let mut model = BTreeMap::new();
        for n in 0..3000u64 {
            let key = rng.below(1 << 40);
            t.insert(key, &value_of(key, n)).unwrap();
            model.insert(key, value_of(key, n));
        }
        t.check_invariants();
        assert_eq!(t.stats().height, 2);
        let start = *model.keys().nth(1000).unwrap();
        let want: Vec<_> = model.range(start..).take(700).map(|(k, v)| (*k, v.clone())).collect();
        assert_eq!(t.scan(start, 700).unwrap(), want);
    }

    #[test]
    fn config_is_validated() {
        let device = MemDevice::new(geometry(64, 2), ZoneBehavior::default(), StorageMode::Data).unwrap();
        let config = TreeConfig { value_size_bytes: 0, ..TreeConfig::default() };
        assert!(matches!(CowTree::create(device, config), Err(TreeError::Config(_))));
        let device = MemDevice::new(geometry(64, 2), ZoneBehavior::default(), StorageMode::Data).unwrap();
        let config = TreeConfig { node_size_bytes: 1000, ..TreeConfig::default() };
        assert!(matches!(CowTree::create(device, config), Err(TreeError::Config(_))));
    }
}

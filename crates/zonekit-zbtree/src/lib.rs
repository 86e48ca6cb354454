//! Zoned B+-trees (seed 003): the ZB+-tree, which absorbs random updates in conventional zones
//! and keeps full nodes sealed in sequential zones, and the copy-on-write B+-tree the paper
//! compares it with.
//!
//! Main types: [`ZbTree`] and [`CowTree`], both behind the [`Index`] trait; [`Store`], the zone
//! store they write through (conventional slots, sequential appends with the paper's hot/cold
//! zone choice, I/O counters); [`node::Node`], the one on-device node format. Both trees are
//! generic over [`zonekit_device::ZonedDevice`] and never learn which backend they run on;
//! workloads (YCSB) come from `zonekit-lab`, which drives an [`Index`].
//!
//! ```
//! use zonekit_device::{Geometry, MemDevice, StorageMode, ZoneBehavior};
//! use zonekit_zbtree::{Index, TreeConfig, ZbTree};
//!
//! let geometry = Geometry { block_size_bytes: 4096, zone_size_blocks: 256, zone_capacity_blocks: 256, zone_count: 5,
//!                           conventional_zone_count: 1, open_zones_max: None, active_zones_max: None };
//! let device = MemDevice::new(geometry, ZoneBehavior::default(), StorageMode::Data).unwrap();
//! let mut tree = ZbTree::create(device, TreeConfig::default()).unwrap();
//! tree.insert(7, &[1; 8]).unwrap();
//! assert_eq!(tree.get(7).unwrap(), Some(vec![1; 8]));
//! ```

pub mod cow;
pub mod node;
pub mod store;
pub mod zbtree;

pub use cow::CowTree;
pub use store::{Payload, Store, StoreStats, ZoneChoice};
pub use zbtree::ZbTree;

use zonekit_device::DeviceError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    #[error("invalid tree configuration: {0}")]
    Config(String),
    #[error("value of {got} bytes: this tree stores values of exactly {want} bytes")]
    ValueSize { got: usize, want: usize },
    #[error("no space: {0}")]
    NoSpace(String),
    #[error("corrupt tree: the node at block {addr}: {reason}")]
    CorruptNode { addr: u64, reason: String },
    #[error("not a zonekit tree: {0}")]
    NotATree(String),
    /// An operation failed part-way (a device error, no space): the in-memory tree may no longer
    /// match the device. A durable tree reopens to its last committed state.
    #[error("the tree failed in an earlier operation ({0}); reopen it")]
    Poisoned(String),
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Shape of a tree's nodes. The paper's nodes are 4 KiB; keys are u64 and values a fixed size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TreeConfig {
    pub node_size_bytes: usize,
    pub value_size_bytes: usize,
    /// Caps on entries per node (0 = as many as fit): small caps make deep trees from few keys,
    /// which is how the model tests reach every split, merge and sync.
    pub leaf_entries_max: usize,
    pub inner_entries_max: usize,
    /// Keep node bytes on the device ([`Payload::Device`]) or beside a metadata-only device.
    pub payload: Payload,
    /// Where full nodes go: the paper's dynamic hot/cold choice, or zones in order (§4.2.5).
    pub dynamic_zone_choice: bool,
    /// Crash consistency: every insert and delete commits through a journal, and the tree
    /// reopens ([`ZbTree::open`]) to its last committed operation after a crash at any point.
    /// Needs [`Payload::Device`]. Off, the tree writes what the paper's algorithms write.
    pub durable: bool,
    /// How the copy-on-write tree keeps its nodes at least half full ([`CowRebalance`]). The
    /// ZB+-tree has its own rules and refuses anything but the default.
    pub cow_rebalance: CowRebalance,
    /// When the copy-on-write tree collects a zone ([`CowCollect`]). The ZB+-tree refuses
    /// anything but the default.
    pub cow_collect: CowCollect,
}

impl Default for TreeConfig {
    fn default() -> Self {
        TreeConfig {
            node_size_bytes: 4096,
            value_size_bytes: 8,
            leaf_entries_max: 0,
            inner_entries_max: 0,
            payload: Payload::Device,
            dynamic_zone_choice: true,
            durable: false,
            cow_rebalance: CowRebalance::BottomUp,
            cow_collect: CowCollect::Reserve,
        }
    }
}

/// How the copy-on-write tree splits and merges (the paper does not say how its CoW does).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum CowRebalance {
    /// The textbook B+-tree: an insert splits a node when it overflows and a delete fixes a
    /// node when it falls below half, both on the way back up; a delete reads a sibling only
    /// then.
    #[default]
    BottomUp,
    /// Rodeh's shadowing B-trees: on the way down an insert splits every full inner node it
    /// passes and a delete fixes every node at its minimum (borrowing from or merging with a
    /// sibling, which it reads), so nothing propagates back up. Needs inner nodes of at least
    /// 4 entries (two minimal nodes must fit in one).
    TopDown,
}

impl CowRebalance {
    pub const ALL: [CowRebalance; 2] = [CowRebalance::BottomUp, CowRebalance::TopDown];

    pub fn name(self) -> &'static str {
        match self {
            CowRebalance::BottomUp => "bottom-up",
            CowRebalance::TopDown => "top-down",
        }
    }

    pub fn from_name(name: &str) -> Option<CowRebalance> {
        CowRebalance::ALL.into_iter().find(|r| r.name() == name)
    }
}

/// When the copy-on-write tree collects a zone (moves its live nodes elsewhere and resets it).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub enum CowCollect {
    /// Before an operation, when the free room would no longer cover the operation's worst
    /// case plus twice the live tree: the zone with the fewest live nodes.
    #[default]
    Reserve,
    /// §4.2.5's rule: zones are written one at a time in a cycle (the write zone stays until
    /// it is full, then the next with room), and a zone is collected as soon as it is full
    /// (between operations), its live nodes going to the write zone. Needs zones in order
    /// (no dynamic zone choice): with the most-free choice every zone fills at once.
    WhenFull,
}

impl CowCollect {
    pub const ALL: [CowCollect; 2] = [CowCollect::Reserve, CowCollect::WhenFull];

    pub fn name(self) -> &'static str {
        match self {
            CowCollect::Reserve => "reserve",
            CowCollect::WhenFull => "when-full",
        }
    }

    pub fn from_name(name: &str) -> Option<CowCollect> {
        CowCollect::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl TreeConfig {
    fn cap(&self, stride: usize, max: usize) -> usize {
        let fit = node::Node::capacity(self.node_size_bytes, stride);
        if max == 0 {
            fit
        } else {
            fit.min(max)
        }
    }

    /// Entries per leaf (the paper's n).
    pub fn leaf_capacity(&self) -> usize {
        self.cap(self.value_size_bytes, self.leaf_entries_max)
    }

    /// Entries per interior / CoW inner node (n + 1 in the paper, with First).
    pub fn interior_capacity(&self) -> usize {
        self.cap(8, self.inner_entries_max)
    }

    /// Entries per head node (a `ptr` is state, address and log address).
    pub fn head_capacity(&self) -> usize {
        self.cap(HEAD_STRIDE, self.inner_entries_max)
    }

    pub fn validate(&self) -> Result<(), TreeError> {
        if self.value_size_bytes == 0 {
            return Err(TreeError::Config("values must be at least 1 byte".into()));
        }
        if self.durable && self.payload != Payload::Device {
            return Err(TreeError::Config("a durable tree keeps its nodes on the device (payload Device)".into()));
        }
        if self.durable && self.node_size_bytes < store::journal_header_bytes(zbtree::JOURNAL_IMAGE_SLOTS) {
            return Err(TreeError::Config(format!(
                "a durable tree needs nodes of at least {} bytes (its journal header lists {} images); nodes are {} bytes",
                store::journal_header_bytes(zbtree::JOURNAL_IMAGE_SLOTS),
                zbtree::JOURNAL_IMAGE_SLOTS,
                self.node_size_bytes
            )));
        }
        if self.node_size_bytes > u16::MAX as usize * 8 {
            return Err(TreeError::Config(format!("node size {} bytes is too large", self.node_size_bytes)));
        }
        for (what, cap) in [("leaf", self.leaf_capacity()), ("interior", self.interior_capacity()), ("head", self.head_capacity())] {
            if cap < 3 {
                return Err(TreeError::Config(format!(
                    "a {}-byte node holds {cap} {what} entries (values {} bytes): at least 3 are needed",
                    self.node_size_bytes, self.value_size_bytes
                )));
            }
        }
        Ok(())
    }

    pub(crate) fn stride_of(&self, kind: node::Kind) -> usize {
        use node::Kind::*;
        match kind {
            Leaf | LeafLog | CowLeaf => self.value_size_bytes,
            Interior | InteriorLog | CowInner => 8,
            Head => HEAD_STRIDE,
        }
    }

    pub(crate) fn check_value(&self, value: &[u8]) -> Result<(), TreeError> {
        if value.len() != self.value_size_bytes {
            return Err(TreeError::ValueSize { got: value.len(), want: self.value_size_bytes });
        }
        Ok(())
    }
}

/// A head entry's value: state byte, child address, log address.
pub(crate) const HEAD_STRIDE: usize = 17;

/// Counts both trees report, beside the store's I/O counters.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct TreeStats {
    pub io: StoreStats,
    pub records: u64,
    pub height: u32,
    pub sequential_occupancy: f64,
    pub conventional_occupancy: f64,
    pub sequential_live_nodes: u64,
    pub conventional_live_nodes: u64,
    /// Structural events by name (splits, syncs, merges...), for reports and for tests that
    /// must know a path was taken.
    pub events: std::collections::BTreeMap<&'static str, u64>,
}

/// An ordered map from u64 keys to fixed-size values, stored on a zoned device.
///
/// `insert` inserts or replaces; `delete` returns whether the key was there. Every method may
/// read and write the device; errors leave the tree usable only if they are
/// [`TreeError::ValueSize`] (checked before any I/O).
pub trait Index {
    fn name(&self) -> &'static str;
    fn insert(&mut self, key: u64, value: &[u8]) -> Result<(), TreeError>;
    fn delete(&mut self, key: u64) -> Result<bool, TreeError>;
    fn get(&mut self, key: u64) -> Result<Option<Vec<u8>>, TreeError>;
    /// Up to `limit` entries with keys ≥ `start`, in key order.
    fn scan(&mut self, start: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, TreeError>;
    fn stats(&self) -> TreeStats;
    /// Walks the whole tree and panics on a broken structural invariant.
    fn check_invariants(&mut self);
}

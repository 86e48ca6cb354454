//! ZB+-tree (Liu and Jin, 2023): a B+-tree whose updates are absorbed in conventional zones.
//!
//! Levels, top down: head levels above IH (only when an IH node splits; plain in-place nodes),
//! IH (interior-head nodes), Interior (interior nodes and their logs), LH (leaf-head nodes),
//! Leaf (leaves and their logs). Head nodes always live in conventional zones and hold, per
//! child, a `ptr` = {state, addr, log_addr}, so a child that moves never rewrites anything
//! above its head node. A tree of one leaf-head has no IH level yet (the paper's Algorithm 4).
//!
//! Interior nodes and leaves ("movable" nodes) follow the paper's state machine (Fig. 6):
//! `change` (in a conventional slot, not full, updated in place); when full they move whole to
//! a sequential zone — leaves to the one with the most free space (Hot), interior nodes to the
//! one with the least (Cold) — and become `steady` (immutable). Updates and deletes of a steady
//! node go to its log node in a conventional slot, positionally (entry `i` of the log changes
//! entry `i` of the node); a delete makes it `after`. An insert into a steady node without a log
//! splits it into two change nodes; with a log it first runs Sync (Normal_apply, or
//! Switch_apply when the log is full), Algorithms 1–3 and 6. Deletes (Algorithm 7) merge
//! opportunistically at the Leaf and Interior levels and strictly (borrow or merge, between
//! half and full) at the head levels.
//!
//! Where the paper is silent or loose, the choices made here:
//! - Algorithms 1 and 2 say a synced steady node goes to "the Zone with minimum capacity"; we
//!   use the level's own choice (Hot for leaves, Cold for interior nodes), as §2.2 describes.
//! - Opportunistic merge takes the left neighbour first, then the right, and merges when the
//!   two hold fewer than a full node ("二者容量之和小于 n").
//! - A leaf or interior node left with no entry is removed from its head node whatever its
//!   state (Algorithm 7 does so for change nodes; an after node emptied through its log is
//!   removed too rather than kept as an empty node).
//! - The writes are the algorithms' own: an insert that syncs an after node writes the synced
//!   node to the log's slot and then the inserted node again (Algorithm 6 lines 16–23).
//!
//! Beyond the paper: range scans; a durable mode ([`TreeConfig::durable`]) in which every
//! insert and delete commits through the store's journal and [`ZbTree::open`] reopens the tree
//! at its last committed operation after a crash at any point; and the paper's own future work,
//! reclaiming sequential zones (greedy, between operations; see `reclaim_if_needed`). Neither
//! changes what the paper's experiments count: the journal is off there, and with 40 zones of
//! 2 GiB no zone is ever reclaimed.

use zonekit_device::ZonedDevice;

use crate::node::{Kind, Node, NULL_ADDR, TAG_DELETE, TAG_EMPTY, TAG_LIVE};
use crate::store::{Store, ZoneChoice};
use crate::{Index, TreeConfig, TreeError, TreeStats};

/// States of a `ptr` (Fig. 6), plus `Head` for a ptr to a head node (always in place).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum State {
    Change = 1,
    SteadyHot = 2,
    SteadyCold = 3,
    After = 4,
    Head = 5,
}

impl State {
    fn from_u8(v: u8) -> Option<State> {
        Some(match v {
            1 => State::Change,
            2 => State::SteadyHot,
            3 => State::SteadyCold,
            4 => State::After,
            5 => State::Head,
            _ => return None,
        })
    }

    fn is_steady(self) -> bool {
        matches!(self, State::SteadyHot | State::SteadyCold)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ptr {
    pub state: State,
    pub addr: u64,
    pub log: u64,
}

impl Ptr {
    fn change(addr: u64) -> Ptr {
        Ptr { state: State::Change, addr, log: NULL_ADDR }
    }

    fn head(addr: u64) -> Ptr {
        Ptr { state: State::Head, addr, log: NULL_ADDR }
    }

    fn encode(&self) -> [u8; 17] {
        let mut v = [0u8; 17];
        v[0] = self.state as u8;
        v[1..9].copy_from_slice(&self.addr.to_le_bytes());
        v[9..17].copy_from_slice(&self.log.to_le_bytes());
        v
    }
}

/// The two levels whose nodes move between conventional and sequential zones.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Level {
    Leaf,
    Interior,
}

impl Level {
    fn kind(self) -> Kind {
        match self {
            Level::Leaf => Kind::Leaf,
            Level::Interior => Kind::Interior,
        }
    }

    fn log_kind(self) -> Kind {
        match self {
            Level::Leaf => Kind::LeafLog,
            Level::Interior => Kind::InteriorLog,
        }
    }

    fn steady(self) -> State {
        match self {
            Level::Leaf => State::SteadyHot,
            Level::Interior => State::SteadyCold,
        }
    }

    fn choice(self) -> ZoneChoice {
        match self {
            Level::Leaf => ZoneChoice::MostFree,
            Level::Interior => ZoneChoice::LeastFree,
        }
    }
}

/// A movable node as read: the node and, if it has one, its log with the view they make
/// together (built once, in memory only, as Search's apply_*_log).
struct Loaded {
    base: Node,
    log: Option<Node>,
    /// With a log: the node with the log applied, and for each of its entries the position
    /// of that entry in `base`. Without one the view is `base` itself.
    applied: Option<(Node, Vec<usize>)>,
}

impl Loaded {
    fn new(base: Node, log: Option<Node>) -> Loaded {
        let applied = log.as_ref().map(|log| {
            let mut view = Node::new(base.kind, base.stride, base.low_key);
            let mut positions = Vec::with_capacity(base.len());
            for i in 0..base.len() {
                match log.tags[i] {
                    TAG_EMPTY => view.push(TAG_LIVE, base.keys[i], base.value(i)),
                    TAG_LIVE => view.push(TAG_LIVE, log.keys[i], log.value(i)),
                    _ => continue,
                }
                positions.push(i);
            }
            (view, positions)
        });
        Loaded { base, log, applied }
    }

    /// The node as it reads now.
    fn view(&self) -> &Node {
        self.applied.as_ref().map_or(&self.base, |(view, _)| view)
    }

    /// Where entry `view_pos` of the view sits in the node itself (logs are positional).
    fn base_position(&self, view_pos: usize) -> usize {
        self.applied.as_ref().map_or(view_pos, |(_, positions)| positions[view_pos])
    }

    fn into_view(self) -> Node {
        match self.applied {
            Some((view, _)) => view,
            None => self.base,
        }
    }
}

fn log_is_full(log: &Node) -> bool {
    log.tags.iter().all(|&t| t != TAG_EMPTY)
}

fn addr_value(addr: u64) -> [u8; 8] {
    addr.to_le_bytes()
}

/// What a removal left for [`ZbTree::settle`].
enum Shrunk {
    /// A change node with the entry removed, not yet written.
    InMemory(Node),
    /// A delete record went to the log; the node's view has `left` entries.
    Logged { left: usize },
}

/// Conventional slots the journal holds: the most nodes one operation may change (a split at
/// every level of a deep tree changes about three per level).
pub(crate) const JOURNAL_IMAGE_SLOTS: u64 = 96;
/// Reserved conventional slots: the superblock, then (durable trees) the journal header and
/// images.
const SUPERBLOCK_SLOT: u64 = 0;
const JOURNAL_HEADER_SLOT: u64 = 1;

const SUPERBLOCK_MAGIC: [u8; 4] = *b"ZBSB";

/// Sequential room (in nodes) kept free between operations: one operation appends at most a
/// leaf and an interior node (each moved when full or rewritten by Sync).
const SEQUENTIAL_RESERVE_NODES: u64 = 4;
const SUPERBLOCK_VERSION: u32 = 1;

/// The superblock, in reserved slot 0 (one node-sized block, little endian):
///
/// ```text
/// 0 magic "ZBSB"  4 version u32  8 node_size_bytes u32  12 value_size_bytes u32
/// 16 leaf_entries_max u32  20 inner_entries_max u32  24 dynamic_zone_choice u8
/// 25 root level u8 (0: empty)  32 root address u64  40 records u64
/// 48 sequence u64 (of the last committed operation)   last 4 bytes: CRC-32 of the rest
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
struct Superblock {
    config: TreeConfig,
    root: Option<(u64, u32)>,
    records: u64,
    sequence: u64,
}

impl Superblock {
    fn encode(&self, out: &mut [u8]) {
        out.fill(0);
        out[0..4].copy_from_slice(&SUPERBLOCK_MAGIC);
        out[4..8].copy_from_slice(&SUPERBLOCK_VERSION.to_le_bytes());
        out[8..12].copy_from_slice(&(self.config.node_size_bytes as u32).to_le_bytes());
        out[12..16].copy_from_slice(&(self.config.value_size_bytes as u32).to_le_bytes());
        out[16..20].copy_from_slice(&(self.config.leaf_entries_max as u32).to_le_bytes());
        out[20..24].copy_from_slice(&(self.config.inner_entries_max as u32).to_le_bytes());
        out[24] = self.config.dynamic_zone_choice as u8;
        let (root, level) = self.root.unwrap_or((NULL_ADDR, 0));
        out[25] = level as u8;
        out[32..40].copy_from_slice(&root.to_le_bytes());
        out[40..48].copy_from_slice(&self.records.to_le_bytes());
        out[48..56].copy_from_slice(&self.sequence.to_le_bytes());
        let end = out.len() - 4;
        let crc = crc32fast::hash(&out[..end]);
        out[end..].copy_from_slice(&crc.to_le_bytes());
    }

    fn decode(buf: &[u8], addr: u64) -> Result<Superblock, TreeError> {
        let word = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes")) as usize;
        let long = |at: usize| u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
        if buf[0..4] != SUPERBLOCK_MAGIC {
            let what = if buf.iter().all(|&b| b == 0) { "it is blank".to_string() } else { format!("it starts with {:02x?}", &buf[..4]) };
            return Err(TreeError::NotATree(format!("block {addr} (the first conventional slot) holds no ZB+-tree superblock: {what}")));
        }
        let end = buf.len() - 4;
        if crc32fast::hash(&buf[..end]).to_le_bytes() != buf[end..] {
            return Err(TreeError::CorruptNode { addr, reason: "superblock checksum mismatch".into() });
        }
        if word(4) as u32 != SUPERBLOCK_VERSION {
            return Err(TreeError::NotATree(format!("superblock version {} (this build reads version {SUPERBLOCK_VERSION})", word(4))));
        }
        let config = TreeConfig {
            node_size_bytes: word(8),
            value_size_bytes: word(12),
            leaf_entries_max: word(16),
            inner_entries_max: word(20),
            payload: crate::Payload::Device,
            dynamic_zone_choice: buf[24] != 0,
            durable: true,
            ..TreeConfig::default()
        };
        if config.node_size_bytes != buf.len() {
            return Err(TreeError::CorruptNode { addr, reason: format!("superblock says {}-byte nodes in a {}-byte slot", config.node_size_bytes, buf.len()) });
        }
        config.validate().map_err(|e| TreeError::CorruptNode { addr, reason: format!("superblock: {e}") })?;
        let level = buf[25] as u32;
        let root = if level == 0 { None } else { Some((long(32), level)) };
        Ok(Superblock { config, root, records: long(40), sequence: long(48) })
    }
}

pub struct ZbTree<D: ZonedDevice> {
    store: Store<D>,
    config: TreeConfig,
    /// The top head node, and its level: 1 = a leaf-head (no IH yet), 2 = an IH node, 3+ = a
    /// head above IH nodes.
    root: Option<(u64, u32)>,
    records: u64,
    events: std::collections::BTreeMap<&'static str, u64>,
    /// Sequence of the last committed operation (durable trees).
    sequence: u64,
    /// Root and records as last committed (deleting the last key changes only these).
    committed: (Option<(u64, u32)>, u64),
    /// Set when an operation failed part-way: the in-memory tree no longer matches the device.
    poisoned: Option<String>,
    leaf_cap: usize,
    interior_cap: usize,
    head_cap: usize,
}

impl<D: ZonedDevice> ZbTree<D> {
    /// A new, empty tree on `device`, which must have a conventional zone.
    pub fn create(device: D, config: TreeConfig) -> Result<ZbTree<D>, TreeError> {
        config.validate()?;
        let defaults = TreeConfig::default();
        if (config.cow_rebalance, config.cow_collect) != (defaults.cow_rebalance, defaults.cow_collect) {
            return Err(TreeError::Config(format!(
                "cow_rebalance {} and cow_collect {} are the copy-on-write tree's settings; the ZB+-tree takes only the defaults ({}, {})",
                config.cow_rebalance.name(),
                config.cow_collect.name(),
                defaults.cow_rebalance.name(),
                defaults.cow_collect.name()
            )));
        }
        let reserved = if config.durable { JOURNAL_HEADER_SLOT + 1 + JOURNAL_IMAGE_SLOTS } else { SUPERBLOCK_SLOT + 1 };
        let mut store = Store::new(device, config.node_size_bytes, config.payload, reserved)?;
        if store.sequential_zone_count() == 0 {
            return Err(TreeError::Config("the device has no sequential zone large enough for one node".into()));
        }
        if config.durable {
            store.enable_journal(JOURNAL_HEADER_SLOT, JOURNAL_IMAGE_SLOTS);
        }
        let mut tree = ZbTree::with_store(store, config);
        if config.durable {
            tree.commit_superblock()?;
        }
        Ok(tree)
    }

    fn with_store(store: Store<D>, config: TreeConfig) -> ZbTree<D> {
        ZbTree {
            store,
            leaf_cap: config.leaf_capacity(),
            interior_cap: config.interior_capacity(),
            head_cap: config.head_capacity(),
            config,
            root: None,
            records: 0,
            events: Default::default(),
            sequence: 0,
            committed: (None, 0),
            poisoned: None,
        }
    }

    /// Opens the durable tree on `device` at its last committed operation: redoes a committed
    /// journal, then walks the tree to rebuild which slots and zones hold live nodes.
    pub fn open(mut device: D) -> Result<ZbTree<D>, TreeError> {
        let block = device.geometry().block_size_bytes as usize;
        let zones = device.report_all(zonekit_device::ZoneFilter::All)?;
        let first = zones
            .iter()
            .find(|z| z.zone_type == zonekit_device::ZoneType::Conventional)
            .ok_or_else(|| TreeError::NotATree("the device has no conventional zone, so it holds no ZB+-tree".into()))?;
        // The node size is in the superblock, which starts the first conventional slot.
        let mut head = vec![0u8; block];
        device.read(first.start, &mut head)?;
        if head[0..4] != SUPERBLOCK_MAGIC {
            Superblock::decode(&head, first.start.0)?;
        }
        let node_size = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes")) as usize;
        if node_size == 0 || node_size % block != 0 || node_size > 1 << 20 {
            return Err(TreeError::CorruptNode { addr: first.start.0, reason: format!("superblock says {node_size}-byte nodes on a device of {block}-byte blocks") });
        }
        let mut store = Store::open(device, node_size, crate::Payload::Device, JOURNAL_HEADER_SLOT + 1 + JOURNAL_IMAGE_SLOTS)?;
        store.enable_journal(JOURNAL_HEADER_SLOT, JOURNAL_IMAGE_SLOTS);
        let sb_addr = store.reserved_addr(SUPERBLOCK_SLOT);
        let sb = Superblock::decode(&store.read_raw(sb_addr)?, sb_addr)?;
        store.recover_journal(sb.sequence)?;
        let sb = Superblock::decode(&store.read_raw(sb_addr)?, sb_addr)?;
        let mut tree = ZbTree::with_store(store, sb.config);
        tree.root = sb.root;
        tree.records = sb.records;
        tree.sequence = sb.sequence;
        tree.committed = (sb.root, sb.records);
        let records = match sb.root {
            Some((addr, level)) => tree.mark_reachable(addr, level)?,
            None => 0,
        };
        tree.store.finish_open()?;
        if records != sb.records {
            return Err(TreeError::CorruptNode { addr: sb_addr, reason: format!("the superblock counts {} records; the tree holds {records}", sb.records) });
        }
        Ok(tree)
    }

    /// Marks every node below head `addr` live in the store; returns the records found.
    fn mark_reachable(&mut self, addr: u64, level: u32) -> Result<u64, TreeError> {
        let head = self.read_head(addr)?;
        self.store.mark_live(addr)?;
        let mut records = 0;
        for i in 0..head.len() {
            let p = Self::ptr(&head, i);
            match level {
                1 | 2 => {
                    let lvl = if level == 1 { Level::Leaf } else { Level::Interior };
                    let view = self.load(lvl, p)?.into_view();
                    self.store.mark_live(p.addr)?;
                    if p.log != NULL_ADDR {
                        self.store.mark_live(p.log)?;
                    }
                    if level == 1 {
                        records += view.len() as u64;
                    } else {
                        for j in 0..view.len() {
                            records += self.mark_reachable(view.u64_at(j, 0), 1)?;
                        }
                    }
                }
                _ => records += self.mark_reachable(p.addr, level - 1)?,
            }
        }
        Ok(records)
    }

    /// Ends an operation: in a durable tree, the superblock and every held-back write commit
    /// atomically.
    fn commit(&mut self) -> Result<(), TreeError> {
        if !self.config.durable || (!self.store.has_pending() && (self.root, self.records) == self.committed) {
            // Nothing changed (a search, a delete of an absent key).
            return Ok(());
        }
        self.commit_superblock()
    }

    /// Commits the superblock with whatever else the operation wrote.
    fn commit_superblock(&mut self) -> Result<(), TreeError> {
        let sb = Superblock { config: self.config, root: self.root, records: self.records, sequence: self.sequence + 1 };
        let mut buf = vec![0u8; self.config.node_size_bytes];
        sb.encode(&mut buf);
        let addr = self.store.reserved_addr(SUPERBLOCK_SLOT);
        self.store.write_raw(addr, &buf)?;
        self.store.commit(sb.sequence)?;
        self.sequence = sb.sequence;
        self.committed = (sb.root, sb.records);
        Ok(())
    }

    fn check_usable(&self) -> Result<(), TreeError> {
        match &self.poisoned {
            Some(why) => Err(TreeError::Poisoned(why.clone())),
            None => Ok(()),
        }
    }

    /// Runs a mutating operation; a failure part-way poisons the tree.
    fn mutate<T>(&mut self, op: impl FnOnce(&mut Self) -> Result<T, TreeError>) -> Result<T, TreeError> {
        self.check_usable()?;
        let result = self.reclaim_if_needed().and_then(|()| op(self)).and_then(|v| self.commit().map(|()| v));
        if let Err(e) = &result {
            self.poisoned = Some(e.to_string());
        }
        result
    }

    pub fn store(&self) -> &Store<D> {
        &self.store
    }

    pub fn config(&self) -> &TreeConfig {
        &self.config
    }

    pub fn store_mut(&mut self) -> &mut Store<D> {
        &mut self.store
    }

    pub fn into_device(self) -> D {
        self.store.into_device()
    }

    fn event(&mut self, name: &'static str) {
        *self.events.entry(name).or_default() += 1;
    }

    fn cap(&self, level: Level) -> usize {
        match level {
            Level::Leaf => self.leaf_cap,
            Level::Interior => self.interior_cap,
        }
    }

    fn choice(&self, level: Level) -> ZoneChoice {
        if self.config.dynamic_zone_choice {
            level.choice()
        } else {
            ZoneChoice::InOrder
        }
    }

    // ---- node I/O --------------------------------------------------------------------------

    fn read_head(&mut self, addr: u64) -> Result<Node, TreeError> {
        let config = self.config;
        let node = self.store.read(addr, &[Kind::Head], |k| config.stride_of(k))?;
        for i in 0..node.len() {
            if State::from_u8(node.value(i)[0]).is_none() {
                return Err(TreeError::CorruptNode { addr, reason: format!("entry {i} has an unknown ptr state {}", node.value(i)[0]) });
            }
        }
        if node.is_empty() {
            return Err(TreeError::CorruptNode { addr, reason: "a head node with no entry".into() });
        }
        Ok(node)
    }

    fn ptr(node: &Node, i: usize) -> Ptr {
        let v = node.value(i);
        Ptr {
            state: State::from_u8(v[0]).expect("checked on read"),
            addr: u64::from_le_bytes(v[1..9].try_into().expect("8 bytes")),
            log: u64::from_le_bytes(v[9..17].try_into().expect("8 bytes")),
        }
    }

    fn set_ptr(node: &mut Node, i: usize, p: Ptr) {
        node.value_mut(i).copy_from_slice(&p.encode());
    }

    /// Reads a movable node and its log. A full log is the whole node (every entry was updated
    /// or deleted), so then the node itself is not read, as in Switch_apply.
    fn load(&mut self, level: Level, p: Ptr) -> Result<Loaded, TreeError> {
        let config = self.config;
        if p.log == NULL_ADDR {
            let base = self.store.read(p.addr, &[level.kind()], |k| config.stride_of(k))?;
            return Ok(Loaded::new(base, None));
        }
        let log = self.store.read(p.log, &[level.log_kind()], |k| config.stride_of(k))?;
        let base = if log_is_full(&log) {
            let mut base = log.clone();
            base.kind = level.kind();
            base.tags.fill(TAG_LIVE);
            base
        } else {
            let base = self.store.read(p.addr, &[level.kind()], |k| config.stride_of(k))?;
            if log.len() != base.len() {
                return Err(TreeError::CorruptNode { addr: p.log, reason: format!("a log of {} entries for a node of {}", log.len(), base.len()) });
            }
            base
        };
        Ok(Loaded::new(base, Some(log)))
    }

    fn write_in_place(&mut self, addr: u64, node: &mut Node) -> Result<(), TreeError> {
        self.store.write_conventional(addr, node)
    }

    fn write_new_conventional(&mut self, node: &mut Node) -> Result<u64, TreeError> {
        let addr = self.store.alloc_conventional()?;
        self.store.write_conventional(addr, node)?;
        Ok(addr)
    }

    fn write_sequential(&mut self, level: Level, node: &mut Node) -> Result<u64, TreeError> {
        self.write_sequential_except(level, node, None)
    }

    fn write_sequential_except(&mut self, level: Level, node: &mut Node, except: Option<usize>) -> Result<u64, TreeError> {
        let Some(zone) = self.store.choose_sequential_except(self.choice(level), except) else {
            return Err(TreeError::NoSpace(format!(
                "every sequential zone is full ({} zones, {} live nodes in them) and none can be reclaimed",
                self.store.sequential_zone_count(),
                self.store.sequential_live_nodes()
            )));
        };
        self.store.append_sequential(zone, node)
    }

    // ---- Reclaiming sequential zones (the paper's future work) -----------------------------

    /// Reclaims sequential zones before the room left falls below the best victim's live nodes
    /// plus [`SEQUENTIAL_RESERVE_NODES`] (the victim: the zone with the fewest live nodes among
    /// those holding dead ones whose live nodes fit elsewhere): its live nodes are appended
    /// elsewhere, their head nodes updated, and the zone reset. Runs between operations (each relocation commits on its own in a durable
    /// tree), never inside one.
    fn reclaim_if_needed(&mut self) -> Result<(), TreeError> {
        // Reclaim once the room left would soon no longer hold the best victim's live nodes:
        // waiting until the zones are full leaves nowhere to copy them to, and reclaiming
        // earlier resets zones (wear) that still have room.
        while let Some(victim) = self.store.reclaim_victim() {
            if self.store.sequential_room_nodes(None) >= self.store.live_nodes_in(victim) + SEQUENTIAL_RESERVE_NODES {
                break;
            }
            self.reclaim(victim)?;
        }
        Ok(())
    }

    fn reclaim(&mut self, victim: usize) -> Result<(), TreeError> {
        self.event("zone_reclaimed");
        let (start, end) = self.store.zone_range(victim);
        let mut addr = start;
        while addr < end && self.store.live_nodes_in(victim) > 0 {
            if let Some((head_addr, i, level, mut node)) = self.owner_of(addr)? {
                let new_addr = self.write_sequential_except(level, &mut node, Some(victim))?;
                let mut head = self.read_head(head_addr)?;
                let mut p = Self::ptr(&head, i);
                p.addr = new_addr;
                Self::set_ptr(&mut head, i, p);
                self.write_in_place(head_addr, &mut head)?;
                self.store.free_sequential(addr);
                self.event("node_relocated");
                self.commit()?;
            }
            addr += self.store.node_blocks();
        }
        let left = self.store.live_nodes_in(victim);
        if left > 0 {
            return Err(TreeError::CorruptNode { addr: start, reason: format!("reclaiming its zone: {left} live nodes that no head node points to") });
        }
        self.store.reset_sequential(victim)
    }

    /// The head node and entry that point to the node at `addr` in a sequential zone, if it
    /// is live. A node's low key was in its range when written and ranges only grow until the
    /// node is replaced, so routing by it finds the one entry that can point to it.
    fn owner_of(&mut self, addr: u64) -> Result<Option<(u64, usize, Level, Node)>, TreeError> {
        let config = self.config;
        let node = match self.store.read(addr, &[Kind::Leaf, Kind::Interior], |k| config.stride_of(k)) {
            Ok(node) => node,
            // Not a node (a torn or never-referenced append): dead. A live node that does not
            // decode is caught by the live count before the reset.
            Err(TreeError::CorruptNode { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        let level = if node.kind == Kind::Leaf { Level::Leaf } else { Level::Interior };
        let target = if level == Level::Leaf { 1 } else { 2 };
        let Some((mut head_addr, mut at)) = self.root else { return Ok(None) };
        if at < target {
            return Ok(None);
        }
        loop {
            let head = self.read_head(head_addr)?;
            let i = head.route(node.low_key);
            let p = Self::ptr(&head, i);
            if at == target {
                return Ok((p.addr == addr && p.state != State::Change).then_some((head_addr, i, level, node)));
            }
            if at == 2 {
                let interior = self.load(Level::Interior, p)?.into_view();
                head_addr = interior.u64_at(interior.route(node.low_key), 0);
            } else {
                head_addr = p.addr;
            }
            at -= 1;
        }
    }

    // ---- Sync (Algorithms 1–3) -------------------------------------------------------------

    /// Merges a node with its log; updates `p`. Returns the merged node.
    fn sync(&mut self, level: Level, p: &mut Ptr, loaded: Loaded) -> Result<Node, TreeError> {
        let log = loaded.log.as_ref().expect("sync needs a log");
        let full = log_is_full(log);
        self.event(if full { "switch_apply" } else { "normal_apply" });
        let mut node = if full {
            // Switch_apply: every entry was updated or deleted, the log alone is the node.
            let mut node = Node::new(level.kind(), log.stride, loaded.base.low_key);
            for i in 0..log.len() {
                if log.tags[i] == TAG_LIVE {
                    node.push(TAG_LIVE, log.keys[i], log.value(i));
                }
            }
            node
        } else {
            // Normal_apply.
            let mut view = loaded.view().clone();
            view.kind = level.kind();
            view
        };
        node.low_key = loaded.base.low_key;
        let old_addr = p.addr;
        if p.state == State::After {
            // Deletes happened: the node is no longer full; it becomes a change node in the
            // log's slot.
            self.write_in_place(p.log, &mut node)?;
            *p = Ptr::change(p.log);
        } else {
            debug_assert!(p.state.is_steady());
            let addr = self.write_sequential(level, &mut node)?;
            self.store.free_conventional(p.log);
            *p = Ptr { state: level.steady(), addr, log: NULL_ADDR };
        }
        self.store.free_sequential(old_addr);
        Ok(node)
    }

    // ---- Insert (Algorithm 6) --------------------------------------------------------------

    /// Inserts the entry (`key`, `value`) into the movable node `p` points to (already read
    /// as `loaded`). Returns a new sibling to add to the head node after `p`'s entry.
    fn movable_insert(&mut self, level: Level, p: &mut Ptr, loaded: Loaded, key: u64, value: &[u8]) -> Result<Option<(u64, Ptr)>, TreeError> {
        let mut node = match p.state {
            State::Change => loaded.base,
            s if s.is_steady() && loaded.log.is_none() => return self.split(level, p, loaded.base, key, value).map(Some),
            State::After | State::SteadyHot | State::SteadyCold => {
                let node = self.sync(level, p, loaded)?;
                if p.state != State::Change {
                    return self.split(level, p, node, key, value).map(Some);
                }
                node
            }
            State::Head => unreachable!("a movable node with a head ptr"),
        };
        let at = Self::insert_position(level, &node, key);
        node.insert(at, TAG_LIVE, key, value);
        if node.len() >= self.cap(level) {
            self.event(match level {
                Level::Leaf => "leaf_to_sequential",
                Level::Interior => "interior_to_sequential",
            });
            let old = p.addr;
            let addr = self.write_sequential(level, &mut node)?;
            self.store.free_conventional(old);
            *p = Ptr { state: level.steady(), addr, log: NULL_ADDR };
        } else {
            self.write_in_place(p.addr, &mut node)?;
        }
        Ok(None)
    }

    fn insert_position(level: Level, node: &Node, key: u64) -> usize {
        match level {
            Level::Leaf => node.find(key).expect_err("insert of a key the leaf holds"),
            // A new separator goes right after the child it split from.
            Level::Interior => node.route(key) + 1,
        }
    }

    /// Splits a full steady node plus one entry into two change nodes in conventional slots.
    fn split(&mut self, level: Level, p: &mut Ptr, mut node: Node, key: u64, value: &[u8]) -> Result<(u64, Ptr), TreeError> {
        debug_assert!(p.state.is_steady());
        self.event(match level {
            Level::Leaf => "leaf_split",
            Level::Interior => "interior_split",
        });
        let at = Self::insert_position(level, &node, key);
        node.insert(at, TAG_LIVE, key, value);
        let mut right = node.split_off(node.len() / 2);
        let separator = right.keys[0];
        right.low_key = separator;
        let left_addr = self.write_new_conventional(&mut node)?;
        let right_addr = self.write_new_conventional(&mut right)?;
        self.store.free_sequential(p.addr);
        *p = Ptr::change(left_addr);
        Ok((separator, Ptr::change(right_addr)))
    }

    /// Updates the value of a key a leaf holds. Returns whether `p` changed.
    fn leaf_update(&mut self, p: &mut Ptr, mut loaded: Loaded, key: u64, value: &[u8]) -> Result<bool, TreeError> {
        if p.state == State::Change {
            let i = loaded.base.find(key).expect("the key is in the leaf");
            loaded.base.set(i, TAG_LIVE, key, value);
            self.write_in_place(p.addr, &mut loaded.base)?;
            return Ok(false);
        }
        let i = loaded.base.find(key).expect("a log never changes a leaf's keys");
        self.log_record(p, loaded, i, TAG_LIVE, key, value)
    }

    /// Records a change of entry `i` of a steady or after node in its log (allocating the log
    /// if the node has none). Returns whether `p` changed.
    fn log_record(&mut self, p: &mut Ptr, loaded: Loaded, i: usize, tag: u8, key: u64, value: &[u8]) -> Result<bool, TreeError> {
        let old = *p;
        let mut log = match loaded.log {
            Some(log) => log,
            None => {
                let kind = if loaded.base.kind == Kind::Leaf { Kind::LeafLog } else { Kind::InteriorLog };
                let mut log = Node::new(kind, loaded.base.stride, loaded.base.low_key);
                for j in 0..loaded.base.len() {
                    log.push(TAG_EMPTY, loaded.base.keys[j], loaded.base.value(j));
                }
                log
            }
        };
        log.set(i, tag, key, value);
        if p.log == NULL_ADDR {
            self.event("log_allocated");
            p.log = self.write_new_conventional(&mut log)?;
        } else {
            self.write_in_place(p.log, &mut log)?;
        }
        if tag == TAG_DELETE {
            p.state = State::After;
        }
        Ok(*p != old)
    }

    /// Insert below head node `addr` at `level`. Returns a new right sibling of the head node
    /// if it split, and whether the key was new.
    fn insert_head(&mut self, addr: u64, level: u32, key: u64, value: &[u8]) -> Result<(Option<(u64, u64)>, bool), TreeError> {
        let mut head = self.read_head(addr)?;
        let i = head.route(key);
        let mut p = Self::ptr(&head, i);
        let before = p;
        let (child_split, added) = match level {
            1 => {
                let loaded = self.load(Level::Leaf, p)?;
                if loaded.view().find(key).is_ok() {
                    self.leaf_update(&mut p, loaded, key, value)?;
                    (None, false)
                } else {
                    (self.movable_insert(Level::Leaf, &mut p, loaded, key, value)?, true)
                }
            }
            2 => {
                let loaded = self.load(Level::Interior, p)?;
                let view = loaded.view();
                let lh = view.u64_at(view.route(key), 0);
                let (lh_split, added) = self.insert_head(lh, 1, key, value)?;
                let split = match lh_split {
                    Some((separator, right)) => self.movable_insert(Level::Interior, &mut p, loaded, separator, &addr_value(right))?,
                    None => None,
                };
                (split, added)
            }
            _ => {
                let (split, added) = self.insert_head(p.addr, level - 1, key, value)?;
                (split.map(|(separator, right)| (separator, Ptr::head(right))), added)
            }
        };
        let mut dirty = p != before;
        Self::set_ptr(&mut head, i, p);
        if let Some((separator, right)) = child_split {
            head.insert(i + 1, TAG_LIVE, separator, &right.encode());
            dirty = true;
        }
        if head.len() > self.head_cap {
            self.event("head_split");
            let mut right = head.split_off(head.len() / 2);
            let separator = right.keys[0];
            right.low_key = separator;
            self.write_in_place(addr, &mut head)?;
            let right_addr = self.write_new_conventional(&mut right)?;
            return Ok((Some((separator, right_addr)), added));
        }
        if dirty {
            self.write_in_place(addr, &mut head)?;
        }
        Ok((None, added))
    }

    fn grow(&mut self, separator: u64, right: u64) -> Result<(), TreeError> {
        let (old_root, level) = self.root.expect("grow a tree with a root");
        let first = |n: &mut Node, p: Ptr| n.push(TAG_LIVE, 0, &p.encode());
        if level == 1 {
            // The first leaf-head split: an interior node over the two, and an IH over it.
            let mut interior = Node::new(Kind::Interior, 8, 0);
            interior.push(TAG_LIVE, 0, &addr_value(old_root));
            interior.push(TAG_LIVE, separator, &addr_value(right));
            let interior_addr = self.write_new_conventional(&mut interior)?;
            let mut ih = Node::new(Kind::Head, crate::HEAD_STRIDE, 0);
            first(&mut ih, Ptr::change(interior_addr));
            let ih_addr = self.write_new_conventional(&mut ih)?;
            self.root = Some((ih_addr, 2));
        } else {
            let mut top = Node::new(Kind::Head, crate::HEAD_STRIDE, 0);
            first(&mut top, Ptr::head(old_root));
            top.push(TAG_LIVE, separator, &Ptr::head(right).encode());
            let top_addr = self.write_new_conventional(&mut top)?;
            self.root = Some((top_addr, level + 1));
        }
        Ok(())
    }

    // ---- Delete (Algorithm 7) --------------------------------------------------------------

    /// Removes entry `view_pos` of a movable node: in place for a change node (returned unwritten,
    /// for [`ZbTree::settle`]), as a delete record in the log otherwise. Returns whether `p`
    /// changed.
    fn movable_remove(&mut self, p: &mut Ptr, loaded: Loaded, view_pos: usize) -> Result<(bool, Shrunk), TreeError> {
        if p.state == State::Change {
            let mut node = loaded.base;
            node.remove(view_pos);
            return Ok((false, Shrunk::InMemory(node)));
        }
        let (at, key, left) = (loaded.base_position(view_pos), loaded.view().keys[view_pos], loaded.view().len() - 1);
        let zero = vec![0; loaded.base.stride];
        let changed = self.log_record(p, loaded, at, TAG_DELETE, key, &zero)?;
        Ok((changed, Shrunk::Logged { left }))
    }

    /// Frees a movable node and its log.
    fn free_movable(&mut self, p: Ptr) {
        self.store.free(p.addr);
        if p.log != NULL_ADDR {
            self.store.free_conventional(p.log);
        }
    }

    /// Finishes a removal from movable node `i` of `head`: an empty node leaves the head node
    /// (LH_delete); a change node merges into a change-state neighbour when the two hold fewer
    /// than a full node (opportunistic merging), else is written in place. Returns whether
    /// `head` changed.
    fn settle(&mut self, level: Level, head: &mut Node, i: usize, shrunk: Shrunk) -> Result<bool, TreeError> {
        let p = Self::ptr(head, i);
        let mut node = match shrunk {
            Shrunk::Logged { left } => {
                if left == 0 {
                    self.free_movable(p);
                    head.remove(i);
                    return Ok(true);
                }
                return Ok(false);
            }
            Shrunk::InMemory(node) => node,
        };
        if node.is_empty() {
            self.free_movable(p);
            head.remove(i);
            return Ok(true);
        }
        for neighbour in [i.wrapping_sub(1), i + 1] {
            if neighbour >= head.len() || Self::ptr(head, neighbour).state != State::Change {
                continue;
            }
            let np = Self::ptr(head, neighbour);
            let config = self.config;
            let other = self.store.read(np.addr, &[level.kind()], |k| config.stride_of(k))?;
            if node.len() + other.len() >= self.cap(level) {
                continue;
            }
            let (r, mut left, mut right, left_addr, right_addr) = if neighbour < i { (i, other, node, np.addr, p.addr) } else { (neighbour, node, other, p.addr, np.addr) };
            if level == Level::Interior {
                // The right node's First entry takes the separator that routed to it.
                right.keys[0] = head.keys[r];
            }
            self.event(match level {
                Level::Leaf => "leaf_merge",
                Level::Interior => "interior_merge",
            });
            left.append(&right);
            self.write_in_place(left_addr, &mut left)?;
            self.store.free_conventional(right_addr);
            head.remove(r);
            return Ok(true);
        }
        self.write_in_place(p.addr, &mut node)?;
        Ok(false)
    }

    /// Delete below head node `addr` at `level`. Returns whether the key was found and the
    /// head node's entry count afterwards (0: it has been freed and the caller drops it).
    fn delete_head(&mut self, addr: u64, level: u32, key: u64) -> Result<(bool, usize), TreeError> {
        let mut head = self.read_head(addr)?;
        let i = head.route(key);
        let mut p = Self::ptr(&head, i);
        let dirty = match level {
            1 => {
                let loaded = self.load(Level::Leaf, p)?;
                let Ok(pos) = loaded.view().find(key) else {
                    return Ok((false, head.len()));
                };
                let (changed, shrunk) = self.movable_remove(&mut p, loaded, pos)?;
                Self::set_ptr(&mut head, i, p);
                let settled = self.settle(Level::Leaf, &mut head, i, shrunk)?;
                changed | settled
            }
            2 => {
                let loaded = self.load(Level::Interior, p)?;
                let (j, siblings) = (loaded.view().route(key), loaded.view().len());
                let (found, lh_len) = self.delete_head(loaded.view().u64_at(j, 0), 1, key)?;
                if !found {
                    return Ok((false, head.len()));
                }
                if lh_len == 0 || (lh_len < self.head_cap / 2 && siblings > 1) {
                    let (changed, shrunk) = self.fix_lh(&mut p, loaded, j, lh_len)?;
                    Self::set_ptr(&mut head, i, p);
                    let settled = match shrunk {
                        Some(shrunk) => self.settle(Level::Interior, &mut head, i, shrunk)?,
                        None => false,
                    };
                    changed | settled
                } else {
                    false
                }
            }
            _ => {
                let (found, child_len) = self.delete_head(p.addr, level - 1, key)?;
                if !found {
                    return Ok((false, head.len()));
                }
                if child_len == 0 {
                    head.remove(i);
                    true
                } else if child_len < self.head_cap / 2 && head.len() > 1 {
                    self.fix_head_in_head(&mut head, i)?;
                    true
                } else {
                    false
                }
            }
        };
        if head.is_empty() {
            self.store.free_conventional(addr);
            return Ok((true, 0));
        }
        if dirty {
            self.write_in_place(addr, &mut head)?;
        }
        Ok((true, head.len()))
    }

    /// Strict merging of leaf-head `j` of an interior node (`loaded`, ptr `p`) that fell below
    /// half or emptied: merge with a neighbour if they fit, else borrow one entry. Returns
    /// whether `p` changed and, if the interior node lost an entry, the removal to settle.
    fn fix_lh(&mut self, p: &mut Ptr, loaded: Loaded, j: usize, lh_len: usize) -> Result<(bool, Option<Shrunk>), TreeError> {
        if lh_len == 0 {
            // delete_head freed the leaf-head; drop its entry.
            let (changed, shrunk) = self.movable_remove(p, loaded, j)?;
            return Ok((changed, Some(shrunk)));
        }
        let view = loaded.view();
        let (l, r) = if j > 0 { (j - 1, j) } else { (j, j + 1) };
        let (la, ra) = (view.u64_at(l, 0), view.u64_at(r, 0));
        let mut ln = self.read_head(la)?;
        let mut rn = self.read_head(ra)?;
        let separator = view.keys[r];
        if ln.len() + rn.len() <= self.head_cap {
            self.event("head_merge");
            rn.keys[0] = separator;
            ln.append(&rn);
            self.write_in_place(la, &mut ln)?;
            self.store.free_conventional(ra);
            let (changed, shrunk) = self.movable_remove(p, loaded, r)?;
            return Ok((changed, Some(shrunk)));
        }
        let new_separator = self.borrow(&mut ln, &mut rn, separator);
        self.write_in_place(la, &mut ln)?;
        self.write_in_place(ra, &mut rn)?;
        let changed = self.movable_set_key(p, loaded, r, new_separator)?;
        Ok((changed, None))
    }

    /// Moves one entry from the fuller of two adjacent head nodes to the other; returns the new
    /// separator between them. `separator` is the current one; entry 0 of each is First.
    fn borrow(&mut self, left: &mut Node, right: &mut Node, separator: u64) -> u64 {
        self.event("head_borrow");
        if left.len() > right.len() {
            let last = left.len() - 1;
            let (key, value) = (left.keys[last], left.value(last).to_vec());
            left.remove(last);
            right.keys[0] = separator;
            right.insert(0, TAG_LIVE, key, &value);
            key
        } else {
            let value = right.value(0).to_vec();
            left.push(TAG_LIVE, separator, &value);
            right.remove(0);
            right.keys[0]
        }
    }

    /// Sets the key of entry `view_pos` of a movable node. Returns whether `p` changed.
    fn movable_set_key(&mut self, p: &mut Ptr, loaded: Loaded, view_pos: usize, key: u64) -> Result<bool, TreeError> {
        if p.state == State::Change {
            let mut node = loaded.base;
            node.keys[view_pos] = key;
            self.write_in_place(p.addr, &mut node)?;
            return Ok(false);
        }
        let (at, value) = (loaded.base_position(view_pos), loaded.view().value(view_pos).to_vec());
        self.log_record(p, loaded, at, TAG_LIVE, key, &value)
    }

    /// Strict merging between head node `i` of `head` (fell below half) and a neighbour.
    fn fix_head_in_head(&mut self, head: &mut Node, i: usize) -> Result<(), TreeError> {
        let (l, r) = if i > 0 { (i - 1, i) } else { (i, i + 1) };
        let (la, ra) = (Self::ptr(head, l).addr, Self::ptr(head, r).addr);
        let mut ln = self.read_head(la)?;
        let mut rn = self.read_head(ra)?;
        let separator = head.keys[r];
        if ln.len() + rn.len() <= self.head_cap {
            self.event("head_merge");
            rn.keys[0] = separator;
            ln.append(&rn);
            self.write_in_place(la, &mut ln)?;
            self.store.free_conventional(ra);
            head.remove(r);
        } else {
            head.keys[r] = self.borrow(&mut ln, &mut rn, separator);
            self.write_in_place(la, &mut ln)?;
            self.write_in_place(ra, &mut rn)?;
        }
        Ok(())
    }

    /// Removes levels the tree no longer needs after a delete.
    fn shrink(&mut self) -> Result<(), TreeError> {
        loop {
            let Some((addr, level)) = self.root else { return Ok(()) };
            let head = self.read_head(addr)?;
            if head.len() > 1 || level == 1 {
                return Ok(());
            }
            let p = Self::ptr(&head, 0);
            if level >= 3 {
                self.store.free_conventional(addr);
                self.root = Some((p.addr, level - 1));
                continue;
            }
            // An IH with one interior node: collapse to its leaf-head if that is its only child.
            let view = self.load(Level::Interior, p)?.into_view();
            if view.len() > 1 {
                return Ok(());
            }
            let lh = view.u64_at(0, 0);
            self.free_movable(p);
            self.store.free_conventional(addr);
            self.root = Some((lh, 1));
        }
    }

    // ---- Search and scan (Algorithms 4–5) --------------------------------------------------

    fn search(&mut self, key: u64) -> Result<Option<Vec<u8>>, TreeError> {
        let Some((mut addr, mut level)) = self.root else { return Ok(None) };
        loop {
            let head = self.read_head(addr)?;
            let p = Self::ptr(&head, head.route(key));
            match level {
                1 => {
                    let leaf = self.load(Level::Leaf, p)?.into_view();
                    return Ok(leaf.find(key).ok().map(|i| leaf.value(i).to_vec()));
                }
                2 => {
                    let interior = self.load(Level::Interior, p)?.into_view();
                    addr = interior.u64_at(interior.route(key), 0);
                    level = 1;
                }
                _ => {
                    addr = p.addr;
                    level -= 1;
                }
            }
        }
    }

    fn scan_head(&mut self, addr: u64, level: u32, start: u64, limit: usize, out: &mut Vec<(u64, Vec<u8>)>) -> Result<(), TreeError> {
        let head = self.read_head(addr)?;
        for i in head.route(start)..head.len() {
            if out.len() >= limit {
                return Ok(());
            }
            let p = Self::ptr(&head, i);
            match level {
                1 => {
                    let leaf = self.load(Level::Leaf, p)?.into_view();
                    for j in 0..leaf.len() {
                        if leaf.keys[j] >= start && out.len() < limit {
                            out.push((leaf.keys[j], leaf.value(j).to_vec()));
                        }
                    }
                }
                2 => {
                    let interior = self.load(Level::Interior, p)?.into_view();
                    for j in interior.route(start)..interior.len() {
                        if out.len() >= limit {
                            break;
                        }
                        self.scan_head(interior.u64_at(j, 0), 1, start, limit, out)?;
                    }
                }
                _ => self.scan_head(p.addr, level - 1, start, limit, out)?,
            }
        }
        Ok(())
    }

    // ---- Invariants ------------------------------------------------------------------------

    /// Checks one head node and everything below it; returns (records, key range seen).
    fn check_head(&mut self, addr: u64, level: u32, low: u64, high: Option<u64>, seen: &mut Vec<u64>) -> u64 {
        let head = self.read_head(addr).unwrap_or_else(|e| panic!("{e}"));
        seen.push(addr);
        assert!(head.len() <= self.head_cap, "head node {addr} holds {} entries > {}", head.len(), self.head_cap);
        assert!(!self.store.is_sequential(addr), "head node {addr} is in a sequential zone");
        let mut records = 0;
        for i in 0..head.len() {
            if i > 1 {
                assert!(head.keys[i - 1] < head.keys[i], "head node {addr}: keys out of order at {i}");
            }
            let lo = if i == 0 { low } else { head.keys[i] };
            if i > 0 {
                assert!(lo >= low && high.is_none_or(|h| lo < h), "head node {addr}: separator {lo} outside [{low}, {high:?})");
            }
            let hi = if i + 1 < head.len() { Some(head.keys[i + 1]) } else { high };
            let p = Self::ptr(&head, i);
            match level {
                1 => records += self.check_movable(Level::Leaf, p, lo, hi, seen).len() as u64,
                2 => {
                    let interior = self.check_movable(Level::Interior, p, lo, hi, seen);
                    for j in 0..interior.len() {
                        let clo = if j == 0 { lo } else { interior.keys[j] };
                        let chi = if j + 1 < interior.len() { Some(interior.keys[j + 1]) } else { hi };
                        records += self.check_head(interior.u64_at(j, 0), 1, clo, chi, seen);
                    }
                }
                _ => {
                    assert_eq!(p.state, State::Head, "head node {addr} entry {i}: a head ptr in state {:?}", p.state);
                    records += self.check_head(p.addr, level - 1, lo, hi, seen);
                }
            }
        }
        records
    }

    /// Checks a movable node against its ptr; returns its view.
    fn check_movable(&mut self, level: Level, p: Ptr, low: u64, high: Option<u64>, seen: &mut Vec<u64>) -> Node {
        let loaded = self.load(level, p).unwrap_or_else(|e| panic!("{e}"));
        let addr = p.addr;
        seen.push(addr);
        let sequential = self.store.is_sequential(addr);
        let cap = self.cap(level);
        match p.state {
            State::Change => {
                assert!(!sequential, "change node {addr} is in a sequential zone");
                assert!(loaded.base.len() < cap, "change node {addr} is full ({} entries)", loaded.base.len());
                assert_eq!(p.log, NULL_ADDR, "change node {addr} has a log");
            }
            State::SteadyHot | State::SteadyCold => {
                assert_eq!(p.state, level.steady(), "{level:?} node {addr} in state {:?}", p.state);
                assert!(sequential, "steady node {addr} is not in a sequential zone");
                assert_eq!(loaded.base.len(), cap, "steady node {addr} is not full");
                if let Some(log) = &loaded.log {
                    assert!(!log.tags.contains(&TAG_DELETE), "steady node {addr} has deletes in its log (should be after)");
                }
            }
            State::After => {
                assert!(sequential, "after node {addr} is not in a sequential zone");
                let log = loaded.log.as_ref().unwrap_or_else(|| panic!("after node {addr} has no log"));
                assert!(log.tags.contains(&TAG_DELETE), "after node {addr} has no delete in its log");
            }
            State::Head => panic!("movable node {addr} has a head ptr"),
        }
        if p.log != NULL_ADDR {
            assert!(!self.store.is_sequential(p.log), "log {} of node {addr} is in a sequential zone", p.log);
            seen.push(p.log);
        }
        let view = loaded.into_view();
        assert!(!view.is_empty(), "{level:?} node {addr} is empty");
        for j in 0..view.len() {
            let k = view.keys[j];
            if j > 0 {
                assert!(view.keys[j - 1] < k, "node {addr}: keys out of order at {j}");
            }
            if level == Level::Leaf || j > 0 {
                assert!(k >= low && high.is_none_or(|h| k < h), "node {addr}: key {k} outside [{low}, {high:?})");
            }
        }
        view
    }
}

impl<D: ZonedDevice> Index for ZbTree<D> {
    fn name(&self) -> &'static str {
        "zbtree"
    }

    fn insert(&mut self, key: u64, value: &[u8]) -> Result<(), TreeError> {
        self.config.check_value(value)?;
        self.mutate(|t| t.insert_op(key, value))
    }

    fn delete(&mut self, key: u64) -> Result<bool, TreeError> {
        self.mutate(|t| t.delete_op(key))
    }

    fn get(&mut self, key: u64) -> Result<Option<Vec<u8>>, TreeError> {
        self.check_usable()?;
        self.search(key)
    }

    fn scan(&mut self, start: u64, limit: usize) -> Result<Vec<(u64, Vec<u8>)>, TreeError> {
        self.check_usable()?;
        let mut out = Vec::new();
        if let Some((root, level)) = self.root {
            if limit > 0 {
                self.scan_head(root, level, start, limit, &mut out)?;
            }
        }
        Ok(out)
    }

    fn stats(&self) -> TreeStats {
        TreeStats {
            io: self.store.stats().clone(),
            records: self.records,
            height: self.root.map_or(0, |(_, level)| if level == 1 { 2 } else { level + 2 }),
            sequential_occupancy: self.store.sequential_occupancy(),
            conventional_occupancy: self.store.conventional_occupancy(),
            sequential_live_nodes: self.store.sequential_live_nodes(),
            conventional_live_nodes: self.store.conventional_live_nodes(),
            events: self.events.clone(),
        }
    }

    fn check_invariants(&mut self) {
        self.store.check_invariants();
        let Some((root, level)) = self.root else {
            assert_eq!(self.records, 0);
            assert_eq!(self.store.conventional_live_nodes() + self.store.sequential_live_nodes(), 0, "nodes live in an empty tree");
            return;
        };
        let mut seen = Vec::new();
        let records = self.check_head(root, level, 0, None, &mut seen);
        assert_eq!(records, self.records, "record count");
        let total = seen.len() as u64;
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len() as u64, total, "a node is reachable twice");
        assert_eq!(total, self.store.conventional_live_nodes() + self.store.sequential_live_nodes(), "nodes the store holds live vs nodes reachable");
    }
}

impl<D: ZonedDevice> ZbTree<D> {
    fn insert_op(&mut self, key: u64, value: &[u8]) -> Result<(), TreeError> {
        let Some((root, level)) = self.root else {
            // The first leaf's range is everything: its low key is the smallest.
            let mut leaf = Node::new(Kind::Leaf, self.config.value_size_bytes, 0);
            leaf.push(TAG_LIVE, key, value);
            let leaf_addr = self.write_new_conventional(&mut leaf)?;
            let mut lh = Node::new(Kind::Head, crate::HEAD_STRIDE, 0);
            lh.push(TAG_LIVE, 0, &Ptr::change(leaf_addr).encode());
            let lh_addr = self.write_new_conventional(&mut lh)?;
            self.root = Some((lh_addr, 1));
            self.records = 1;
            return Ok(());
        };
        let (split, added) = self.insert_head(root, level, key, value)?;
        if let Some((separator, right)) = split {
            self.grow(separator, right)?;
        }
        self.records += added as u64;
        Ok(())
    }

    fn delete_op(&mut self, key: u64) -> Result<bool, TreeError> {
        let Some((root, level)) = self.root else { return Ok(false) };
        let (found, left) = self.delete_head(root, level, key)?;
        if !found {
            return Ok(false);
        }
        self.records -= 1;
        if left == 0 {
            self.root = None;
        } else {
            self.shrink()?;
        }
        Ok(true)
    }
}

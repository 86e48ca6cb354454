//! The zone store both trees write through: node slots in conventional zones, appends to
//! sequential zones with the paper's zone choices, per-zone live counts, I/O counters.
//!
//! Two storage modes. In [`Payload::Device`] node bytes go to the device and come back from
//! it (a file-backed or real device, the model tests). In [`Payload::Shadow`] the device runs
//! in metadata mode (exact zone states, write pointers, counters and timing, no payload) and
//! the store keeps the encoded bytes of *live* nodes beside it, so the paper's 84 GiB device
//! fits in memory proportional to the tree, not to what was ever written. Both modes encode
//! and decode every node the same way.

use std::collections::HashMap;

use zonekit_device::{Lba, ZoneFilter, ZoneId, ZoneState, ZoneType, ZonedDevice};

use crate::node::{Kind, Node};
use crate::TreeError;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    Device,
    Shadow,
}

/// Which sequential zone a node moving out of the conventional zones goes to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ZoneChoice {
    /// The zone with the most free space (the paper's Hot-Seq-Zone, for leaves).
    MostFree,
    /// The zone with the least free space that still has room (Cold-Seq-Zone, interior nodes).
    LeastFree,
    /// No dynamic choice (§4.2.5): fill zones in order.
    InOrder,
}

/// Counters in nodes; one node is `node_blocks` device blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct StoreStats {
    pub node_reads: u64,
    pub node_writes_conventional: u64,
    pub node_writes_sequential: u64,
    pub zone_resets: u64,
    /// Live nodes copied out of a sequential zone before its reset.
    pub gc_node_copies: u64,
}

impl StoreStats {
    pub fn node_writes(&self) -> u64 {
        self.node_writes_conventional + self.node_writes_sequential
    }
}

#[derive(Clone, Debug)]
struct SeqZone {
    id: ZoneId,
    start: u64,
    capacity_blocks: u64,
    written_blocks: u64,
    live_nodes: u64,
}

#[derive(Clone, Debug)]
struct ConvZone {
    start: u64,
    slots: u64,
}

pub struct Store<D: ZonedDevice> {
    device: D,
    payload: Payload,
    node_bytes: usize,
    node_blocks: u64,
    zone_size_blocks: u64,
    conv: Vec<ConvZone>,
    /// Conventional slots handed out, in (zone, slot) order; freed slots are reused first.
    conv_next: u64,
    conv_free: Vec<u64>,
    conv_live: u64,
    conv_reserved: u64,
    seq: Vec<SeqZone>,
    /// Sequential zones the store may use (the zone-count experiments use fewer than exist).
    seq_used: usize,
    shadow: HashMap<u64, Box<[u8]>>,
    buf: Vec<u8>,
    sequence: u64,
    stats: StoreStats,
}

impl<D: ZonedDevice> Store<D> {
    /// Takes over `device`: its conventional zones hold `reserved_slots` fixed slots (a
    /// superblock) and then node slots; its sequential zones are reset.
    pub fn new(mut device: D, node_bytes: usize, payload: Payload, reserved_slots: u64) -> Result<Store<D>, TreeError> {
        let g = *device.geometry();
        let block = g.block_size_bytes as usize;
        if node_bytes == 0 || node_bytes % block != 0 {
            return Err(TreeError::Config(format!("node size {node_bytes} bytes is not a whole number of the device's {block}-byte blocks")));
        }
        let node_blocks = (node_bytes / block) as u64;
        let zones = device.report_all(ZoneFilter::All)?;
        let mut conv = Vec::new();
        let mut seq = Vec::new();
        for z in &zones {
            match z.zone_type {
                ZoneType::Conventional => conv.push(ConvZone { start: z.start.0, slots: z.capacity_blocks / node_blocks }),
                ZoneType::SequentialWriteRequired => {
                    if z.capacity_blocks >= node_blocks {
                        seq.push(SeqZone { id: z.id, start: z.start.0, capacity_blocks: z.capacity_blocks - z.capacity_blocks % node_blocks, written_blocks: 0, live_nodes: 0 });
                    }
                }
            }
        }
        let conv_slots: u64 = conv.iter().map(|c| c.slots).sum();
        if conv_slots <= reserved_slots {
            return Err(TreeError::Config(format!(
                "the device has {} conventional zones ({conv_slots} node slots of {node_bytes} bytes): the tree needs conventional space for more than {reserved_slots} slots",
                conv.len()
            )));
        }
        for z in zones.iter().filter(|z| z.zone_type == ZoneType::SequentialWriteRequired && z.state != ZoneState::Empty) {
            device.reset_zone(z.id)?;
        }
        let seq_used = seq.len();
        Ok(Store {
            device,
            payload,
            node_bytes,
            node_blocks,
            zone_size_blocks: g.zone_size_blocks,
            conv,
            conv_next: reserved_slots,
            conv_free: Vec::new(),
            conv_live: 0,
            conv_reserved: reserved_slots,
            seq,
            seq_used,
            shadow: HashMap::new(),
            buf: vec![0; node_bytes],
            sequence: 0,
            stats: StoreStats::default(),
        })
    }

    /// Uses only the first `count` sequential zones (the Cov:Seq ratio experiments).
    pub fn limit_sequential_zones(&mut self, count: usize) -> Result<(), TreeError> {
        if count == 0 || count > self.seq.len() {
            return Err(TreeError::Config(format!("{count} sequential zones asked for; the device has {}", self.seq.len())));
        }
        self.seq_used = count;
        Ok(())
    }

    pub fn device(&self) -> &D {
        &self.device
    }

    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    pub fn into_device(self) -> D {
        self.device
    }

    pub fn stats(&self) -> &StoreStats {
        &self.stats
    }

    pub fn node_bytes(&self) -> usize {
        self.node_bytes
    }

    pub fn sequential_zone_count(&self) -> usize {
        self.seq_used
    }

    /// Address of a reserved conventional slot (the superblock is slot 0).
    pub fn reserved_addr(&self, slot: u64) -> u64 {
        assert!(slot < self.conv_reserved);
        self.conv_slot_addr(slot)
    }

    fn conv_slot_addr(&self, mut slot: u64) -> u64 {
        for z in &self.conv {
            if slot < z.slots {
                return z.start + slot * self.node_blocks;
            }
            slot -= z.slots;
        }
        unreachable!("conventional slot {slot} out of range")
    }

    fn zone_of(&self, addr: u64) -> u64 {
        addr / self.zone_size_blocks
    }

    fn seq_index(&self, addr: u64) -> Option<usize> {
        let zone = self.zone_of(addr);
        self.seq[..self.seq_used].iter().position(|z| z.id.0 as u64 == zone)
    }

    pub fn is_sequential(&self, addr: u64) -> bool {
        self.seq_index(addr).is_some()
    }

    /// Reads and decodes the node at `addr`.
    pub fn read(&mut self, addr: u64, expect: &[Kind], stride_of: impl Fn(Kind) -> usize) -> Result<Node, TreeError> {
        self.stats.node_reads += 1;
        self.device.read(Lba(addr), &mut self.buf)?;
        match self.payload {
            Payload::Device => Node::decode(&self.buf, addr, expect, stride_of),
            Payload::Shadow => match self.shadow.get(&addr) {
                Some(bytes) => Node::decode(bytes, addr, expect, stride_of),
                None => Node::decode(&self.buf, addr, expect, stride_of),
            },
        }
    }

    fn put(&mut self, addr: u64, node: &mut Node) -> Result<(), TreeError> {
        self.sequence += 1;
        node.sequence = self.sequence;
        node.encode(&mut self.buf);
        self.device.write(Lba(addr), &self.buf)?;
        if self.payload == Payload::Shadow {
            self.shadow.insert(addr, self.buf.clone().into_boxed_slice());
        }
        Ok(())
    }

    /// A free conventional slot.
    pub fn alloc_conventional(&mut self) -> Result<u64, TreeError> {
        let slot = match self.conv_free.pop() {
            Some(slot) => slot,
            None => {
                let total: u64 = self.conv.iter().map(|c| c.slots).sum();
                if self.conv_next >= total {
                    return Err(TreeError::NoSpace(format!("the conventional zones are full ({} node slots in use)", self.conv_live)));
                }
                self.conv_next += 1;
                self.conv_next - 1
            }
        };
        self.conv_live += 1;
        Ok(self.conv_slot_addr(slot))
    }

    /// Writes `node` in place at a conventional slot.
    pub fn write_conventional(&mut self, addr: u64, node: &mut Node) -> Result<(), TreeError> {
        debug_assert!(!self.is_sequential(addr));
        self.stats.node_writes_conventional += 1;
        self.put(addr, node)
    }

    /// Writes a reserved slot (not counted as a node write).
    pub fn write_reserved(&mut self, addr: u64, node: &mut Node) -> Result<(), TreeError> {
        self.put(addr, node)
    }

    pub fn free_conventional(&mut self, addr: u64) {
        let mut slot = 0;
        let zone_start = self.zone_of(addr) * self.zone_size_blocks;
        for z in &self.conv {
            if z.start == zone_start {
                slot += (addr - z.start) / self.node_blocks;
                break;
            }
            slot += z.slots;
        }
        debug_assert!(slot >= self.conv_reserved && !self.conv_free.contains(&slot), "conventional slot {slot} freed twice");
        self.conv_free.push(slot);
        self.conv_live -= 1;
        self.shadow.remove(&addr);
    }

    /// A sequential zone with room for one node, by `choice`; `None` when every zone is full.
    pub fn choose_sequential(&self, choice: ZoneChoice) -> Option<usize> {
        let nb = self.node_blocks;
        let room = |z: &SeqZone| z.capacity_blocks - z.written_blocks;
        let zones = self.seq[..self.seq_used].iter().enumerate().filter(|(_, z)| room(z) >= nb);
        match choice {
            ZoneChoice::MostFree => zones.max_by_key(|(i, z)| (room(z), std::cmp::Reverse(*i))).map(|(i, _)| i),
            ZoneChoice::LeastFree => zones.min_by_key(|(i, z)| (room(z), *i)).map(|(i, _)| i),
            ZoneChoice::InOrder => zones.map(|(i, _)| i).next(),
        }
    }

    /// Appends `node` to sequential zone `index` (from [`Store::choose_sequential`]).
    pub fn append_sequential(&mut self, index: usize, node: &mut Node) -> Result<u64, TreeError> {
        let z = &self.seq[index];
        assert!(z.capacity_blocks - z.written_blocks >= self.node_blocks, "zone {} has no room", z.id);
        let addr = z.start + z.written_blocks;
        self.stats.node_writes_sequential += 1;
        self.put(addr, node)?;
        let z = &mut self.seq[index];
        z.written_blocks += self.node_blocks;
        z.live_nodes += 1;
        Ok(addr)
    }

    /// The node at `addr` in a sequential zone is dead (superseded).
    pub fn free_sequential(&mut self, addr: u64) {
        let i = self.seq_index(addr).expect("address in a sequential zone");
        let z = &mut self.seq[i];
        assert!(z.live_nodes > 0, "zone {} has no live node to free at {addr}", z.id);
        z.live_nodes -= 1;
        self.shadow.remove(&addr);
    }

    /// Frees `addr` wherever it lives.
    pub fn free(&mut self, addr: u64) {
        if self.is_sequential(addr) {
            self.free_sequential(addr)
        } else {
            self.free_conventional(addr)
        }
    }

    pub fn live_nodes_in(&self, index: usize) -> u64 {
        self.seq[index].live_nodes
    }

    pub fn zone_range(&self, index: usize) -> (u64, u64) {
        let z = &self.seq[index];
        (z.start, z.start + z.written_blocks)
    }

    /// Resets sequential zone `index`, which must hold no live node.
    pub fn reset_sequential(&mut self, index: usize) -> Result<(), TreeError> {
        let z = &self.seq[index];
        assert_eq!(z.live_nodes, 0, "zone {} reset with live nodes", z.id);
        if z.written_blocks == 0 {
            return Ok(());
        }
        let (id, start, end) = (z.id, z.start, z.start + z.written_blocks);
        self.device.reset_zone(id)?;
        self.stats.zone_resets += 1;
        self.seq[index].written_blocks = 0;
        if self.payload == Payload::Shadow {
            self.shadow.retain(|&a, _| a < start || a >= end);
        }
        Ok(())
    }

    pub fn count_gc_copy(&mut self) {
        self.stats.gc_node_copies += 1;
    }

    /// Mean over the sequential zones in use of written / capacity (the paper's occupancy).
    pub fn sequential_occupancy(&self) -> f64 {
        let zones = &self.seq[..self.seq_used];
        zones.iter().map(|z| z.written_blocks as f64 / z.capacity_blocks as f64).sum::<f64>() / zones.len() as f64
    }

    /// Live conventional slots over all conventional slots.
    pub fn conventional_occupancy(&self) -> f64 {
        let total: u64 = self.conv.iter().map(|c| c.slots).sum();
        (self.conv_live + self.conv_reserved) as f64 / total as f64
    }

    pub fn conventional_live_nodes(&self) -> u64 {
        self.conv_live
    }

    pub fn sequential_live_nodes(&self) -> u64 {
        self.seq[..self.seq_used].iter().map(|z| z.live_nodes).sum()
    }

    /// Checks the store's own bookkeeping.
    pub fn check_invariants(&self) {
        for z in &self.seq {
            assert!(z.written_blocks <= z.capacity_blocks, "zone {} written past capacity", z.id);
            assert!(z.live_nodes * self.node_blocks <= z.written_blocks, "zone {}: {} live nodes in {} written blocks", z.id, z.live_nodes, z.written_blocks);
        }
        assert_eq!(self.conv_next - self.conv_reserved, self.conv_live + self.conv_free.len() as u64, "conventional slots leaked");
    }
}

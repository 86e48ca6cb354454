//! The zone store both trees write through: node slots in conventional zones, appends to
//! sequential zones with the paper's zone choices, per-zone live counts, I/O counters.
//!
//! Two storage modes. In [`Payload::Device`] node bytes go to the device and come back from
//! it (a file-backed or real device, the model tests). In [`Payload::Shadow`] the device runs
//! in metadata mode (exact zone states, write pointers, counters and timing, no payload) and
//! the store keeps the encoded bytes of *live* nodes beside it, so the paper's 82 GiB device
//! fits in memory proportional to the tree, not to what was ever written. Both modes encode
//! and decode every node the same way.
//!
//! With a journal ([`Store::enable_journal`], the durable mode) an operation's writes to
//! conventional slots are held back and [`Store::commit`] makes them atomic: it writes the held
//! images to the journal slots, flushes (which also makes the operation's sequential appends
//! durable), writes the journal header (one block: sequence, target addresses, CRC-32 of every
//! image and of itself), flushes, then writes the images in place and, last, the superblock
//! (reserved slot 0), flushing before and after it. A crash before the header is durable leaves
//! the old state (the new sequential nodes are unreferenced garbage); after it,
//! [`Store::recover_journal`] redoes the images. Sequential appends need no journal: they go to
//! new addresses that nothing committed refers to.

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
    /// Durable mode: blocks written to the journal (images and headers) and flushes.
    pub journal_block_writes: u64,
    pub flushes: u64,
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
    /// For each device zone, its index in `seq` (`NOT_SEQUENTIAL` for the others): every write
    /// and free asks which zone kind an address is in.
    seq_of_zone: Vec<u32>,
    shadow: HashMap<u64, Box<[u8]>>,
    buf: Vec<u8>,
    sequence: u64,
    stats: StoreStats,
    journal: Option<Journal>,
}

/// Held-back conventional writes of the operation in progress, and where the journal lives.
struct Journal {
    header_addr: u64,
    image_addrs: Vec<u64>,
    pending: Vec<(u64, Box<[u8]>)>,
    index: HashMap<u64, usize>,
}

const JOURNAL_MAGIC: [u8; 4] = *b"ZBJ1";
const NOT_SEQUENTIAL: u32 = u32::MAX;
/// Journal header: magic, sequence u64, count u32, then per image (addr u64, crc u32), and the
/// header's own CRC-32 in its last 4 bytes.
const JOURNAL_FIXED_BYTES: usize = 16;
const JOURNAL_ENTRY_BYTES: usize = 12;

/// Bytes a journal header listing `images` images needs (it must fit in one node).
pub(crate) const fn journal_header_bytes(images: u64) -> usize {
    JOURNAL_FIXED_BYTES + images as usize * JOURNAL_ENTRY_BYTES + 4
}

impl<D: ZonedDevice> Store<D> {
    /// Takes over `device`: its conventional zones hold `reserved_slots` fixed slots (a
    /// superblock) and then node slots; its sequential zones are reset.
    pub fn new(device: D, node_bytes: usize, payload: Payload, reserved_slots: u64) -> Result<Store<D>, TreeError> {
        Store::new_inner(device, node_bytes, payload, reserved_slots, true)
    }

    fn new_inner(mut device: D, node_bytes: usize, payload: Payload, reserved_slots: u64, reset: bool) -> Result<Store<D>, TreeError> {
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
        for z in zones.iter().filter(|z| reset && z.zone_type == ZoneType::SequentialWriteRequired && z.state != ZoneState::Empty) {
            device.reset_zone(z.id)?;
        }
        let mut seq_of_zone = vec![NOT_SEQUENTIAL; g.zone_count as usize];
        for (i, z) in seq.iter().enumerate() {
            seq_of_zone[z.id.0 as usize] = i as u32;
        }
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
            seq_of_zone,
            shadow: HashMap::new(),
            buf: vec![0; node_bytes],
            sequence: 0,
            stats: StoreStats::default(),
            journal: None,
        })
    }

    /// Takes over a device that already holds a tree: nothing is reset, sequential zones keep
    /// their write pointers, and no node is live until [`Store::mark_live`] is called for each
    /// reachable node and [`Store::finish_open`] rebuilds the free conventional slots.
    pub fn open(device: D, node_bytes: usize, payload: Payload, reserved_slots: u64) -> Result<Store<D>, TreeError> {
        let mut store = Store::new_inner(device, node_bytes, payload, reserved_slots, false)?;
        let zones = store.device.report_all(ZoneFilter::All)?;
        for z in &mut store.seq {
            let d = zones.iter().find(|d| d.id == z.id).expect("the zone exists");
            z.written_blocks = match d.state {
                ZoneState::Full => z.capacity_blocks,
                _ => d.written_blocks().min(z.capacity_blocks),
            };
            // A partial node at the end (a torn append) is never referenced; skip past it.
            z.written_blocks = z.written_blocks.div_ceil(store.node_blocks) * store.node_blocks;
            z.written_blocks = z.written_blocks.min(z.capacity_blocks);
        }
        store.conv_next = u64::MAX; // in use until finish_open
        Ok(store)
    }

    /// Marks a reachable node live while opening.
    pub fn mark_live(&mut self, addr: u64) -> Result<(), TreeError> {
        let nb = self.node_blocks;
        if let Some(i) = self.seq_index(addr) {
            let z = &mut self.seq[i];
            if (addr - z.start) % nb != 0 || addr + nb > z.start + z.written_blocks {
                return Err(TreeError::CorruptNode { addr, reason: format!("referenced but not below the write pointer of zone {} (or not node-aligned)", z.id) });
            }
            z.live_nodes += 1;
            return Ok(());
        }
        let slot = self.conv_slot_of(addr).ok_or_else(|| TreeError::CorruptNode { addr, reason: "referenced but not a node slot of this tree".into() })?;
        self.conv_free.push(slot); // collected here; finish_open turns it into the free list
        self.conv_live += 1;
        Ok(())
    }

    /// Ends an open: every conventional slot not marked live (and not reserved) is free.
    pub fn finish_open(&mut self) -> Result<(), TreeError> {
        let mut used = std::mem::take(&mut self.conv_free);
        used.sort_unstable();
        if let Some(w) = used.windows(2).find(|w| w[0] == w[1]) {
            return Err(TreeError::CorruptNode { addr: self.conv_slot_addr(w[0]), reason: "reachable twice in the tree".into() });
        }
        self.conv_next = used.last().map_or(self.conv_reserved, |&last| last + 1);
        let mut it = used.iter().peekable();
        for slot in self.conv_reserved..self.conv_next {
            if it.peek() == Some(&&slot) {
                it.next();
            } else {
                self.conv_free.push(slot);
            }
        }
        self.conv_free.reverse(); // lowest slots are reused first
        Ok(())
    }

    fn conv_slot_of(&self, addr: u64) -> Option<u64> {
        let mut slot = 0;
        for z in &self.conv {
            if addr >= z.start && addr < z.start + z.slots * self.node_blocks {
                let offset = addr - z.start;
                return (offset % self.node_blocks == 0 && slot + offset / self.node_blocks >= self.conv_reserved).then_some(slot + offset / self.node_blocks);
            }
            slot += z.slots;
        }
        None
    }

    /// Holds conventional writes back until [`Store::commit`]: the journal header goes to
    /// reserved slot `header_slot`, images to the `image_slots` reserved slots after it.
    pub fn enable_journal(&mut self, header_slot: u64, image_slots: u64) {
        assert!(header_slot + image_slots < self.conv_reserved, "journal slots must be reserved");
        let max_images = (self.node_bytes - JOURNAL_FIXED_BYTES - 4) / JOURNAL_ENTRY_BYTES;
        assert!(image_slots as usize <= max_images, "{image_slots} journal images do not fit one header");
        self.journal = Some(Journal {
            header_addr: self.conv_slot_addr(header_slot),
            image_addrs: (header_slot + 1..=header_slot + image_slots).map(|s| self.conv_slot_addr(s)).collect(),
            pending: Vec::new(),
            index: HashMap::new(),
        });
    }

    /// Whether the operation in progress has held-back writes.
    pub fn has_pending(&self) -> bool {
        self.journal.as_ref().is_some_and(|j| !j.pending.is_empty())
    }

    fn flush(&mut self) -> Result<(), TreeError> {
        self.stats.flushes += 1;
        self.device.flush()?;
        Ok(())
    }

    /// Makes the operation's held-back writes durable and applies them (see the module doc).
    pub fn commit(&mut self, sequence: u64) -> Result<(), TreeError> {
        let Some(journal) = self.journal.as_mut() else { return Ok(()) };
        if journal.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut journal.pending);
        journal.index.clear();
        if pending.len() > journal.image_addrs.len() {
            return Err(TreeError::NoSpace(format!("an operation changed {} conventional nodes; the journal holds {}", pending.len(), journal.image_addrs.len())));
        }
        let (header_addr, image_addrs) = (journal.header_addr, journal.image_addrs.clone());
        let mut header = vec![0u8; self.node_bytes];
        header[..4].copy_from_slice(&JOURNAL_MAGIC);
        header[4..12].copy_from_slice(&sequence.to_le_bytes());
        header[12..16].copy_from_slice(&(pending.len() as u32).to_le_bytes());
        for (i, (addr, bytes)) in pending.iter().enumerate() {
            self.device.write(Lba(image_addrs[i]), bytes)?;
            self.stats.journal_block_writes += 1;
            let at = JOURNAL_FIXED_BYTES + i * JOURNAL_ENTRY_BYTES;
            header[at..at + 8].copy_from_slice(&addr.to_le_bytes());
            header[at + 8..at + 12].copy_from_slice(&crc32fast::hash(bytes).to_le_bytes());
        }
        let end = header.len() - 4;
        let crc = crc32fast::hash(&header[..end]);
        header[end..].copy_from_slice(&crc.to_le_bytes());
        // One flush makes the images and the operation's sequential appends durable before the
        // header that commits them.
        self.flush()?;
        self.device.write(Lba(header_addr), &header)?;
        self.stats.journal_block_writes += 1;
        self.flush()?;
        self.apply(&pending)
    }

    /// Writes images in place, the superblock (reserved slot 0) last, flushing before it.
    fn apply(&mut self, images: &[(u64, Box<[u8]>)]) -> Result<(), TreeError> {
        let superblock = self.conv_slot_addr(0);
        for (addr, bytes) in images.iter().filter(|(a, _)| *a != superblock) {
            self.device.write(Lba(*addr), bytes)?;
        }
        if let Some((addr, bytes)) = images.iter().find(|(a, _)| *a == superblock) {
            self.flush()?;
            self.device.write(Lba(*addr), bytes)?;
        }
        self.flush()
    }

    /// Redoes the journal's operation if it committed after `applied_sequence` (the
    /// superblock's). Returns the sequence redone. A torn or stale journal is left alone.
    pub fn recover_journal(&mut self, applied_sequence: u64) -> Result<Option<u64>, TreeError> {
        let Some(journal) = self.journal.as_ref() else { return Ok(None) };
        let (header_addr, image_addrs) = (journal.header_addr, journal.image_addrs.clone());
        let mut header = vec![0u8; self.node_bytes];
        self.device.read(Lba(header_addr), &mut header)?;
        let end = header.len() - 4;
        if header[..4] != JOURNAL_MAGIC || crc32fast::hash(&header[..end]).to_le_bytes() != header[end..] {
            return Ok(None);
        }
        let sequence = u64::from_le_bytes(header[4..12].try_into().expect("8 bytes"));
        let count = u32::from_le_bytes(header[12..16].try_into().expect("4 bytes")) as usize;
        if sequence <= applied_sequence {
            return Ok(None);
        }
        if count > image_addrs.len() {
            return Err(TreeError::CorruptNode { addr: header_addr, reason: format!("journal header lists {count} images; the journal holds {}", image_addrs.len()) });
        }
        let mut images = Vec::with_capacity(count);
        for (i, &slot_addr) in image_addrs.iter().enumerate().take(count) {
            let at = JOURNAL_FIXED_BYTES + i * JOURNAL_ENTRY_BYTES;
            let target = u64::from_le_bytes(header[at..at + 8].try_into().expect("8 bytes"));
            let crc = u32::from_le_bytes(header[at + 8..at + 12].try_into().expect("4 bytes"));
            let mut bytes = vec![0u8; self.node_bytes].into_boxed_slice();
            self.device.read(Lba(slot_addr), &mut bytes)?;
            if crc32fast::hash(&bytes) != crc {
                // The header is written only after every image is durable: a mismatch is damage.
                return Err(TreeError::CorruptNode { addr: slot_addr, reason: format!("journal image {i} of committed sequence {sequence} does not match its checksum") });
            }
            if self.is_sequential(target) || (target != self.conv_slot_addr(0) && self.conv_slot_of(target).is_none()) {
                return Err(TreeError::CorruptNode { addr: header_addr, reason: format!("journal image {i} targets block {target}, not a conventional node slot") });
            }
            images.push((target, bytes));
        }
        self.apply(&images)?;
        Ok(Some(sequence))
    }

    /// Reads one raw node-sized block (the superblock), seeing held-back writes.
    pub fn read_raw(&mut self, addr: u64) -> Result<Vec<u8>, TreeError> {
        if let Some(j) = &self.journal {
            if let Some(&i) = j.index.get(&addr) {
                return Ok(j.pending[i].1.to_vec());
            }
        }
        let mut buf = vec![0u8; self.node_bytes];
        self.device.read(Lba(addr), &mut buf)?;
        Ok(buf)
    }

    /// Writes one raw block to a reserved slot (held back in durable mode).
    pub fn write_raw(&mut self, addr: u64, bytes: &[u8]) -> Result<(), TreeError> {
        self.buf.copy_from_slice(bytes);
        self.store_buf(addr)
    }

    /// Writes `self.buf` at `addr`: held back if the journal is on and `addr` is conventional.
    fn store_buf(&mut self, addr: u64) -> Result<(), TreeError> {
        if self.journal.is_some() && !self.is_sequential(addr) {
            if let Some(j) = self.journal.as_mut() {
                let bytes = self.buf.clone().into_boxed_slice();
                match j.index.get(&addr) {
                    Some(&i) => j.pending[i].1 = bytes,
                    None => {
                        j.index.insert(addr, j.pending.len());
                        j.pending.push((addr, bytes));
                    }
                }
                return Ok(());
            }
        }
        self.device.write(Lba(addr), &self.buf)?;
        if self.payload == Payload::Shadow {
            self.shadow.insert(addr, self.buf.clone().into_boxed_slice());
        }
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
        self.seq.len()
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
        match self.seq_of_zone.get(self.zone_of(addr) as usize) {
            Some(&i) if i != NOT_SEQUENTIAL => Some(i as usize),
            _ => None,
        }
    }

    pub fn is_sequential(&self, addr: u64) -> bool {
        self.seq_index(addr).is_some()
    }

    /// Reads and decodes the node at `addr`.
    pub fn read(&mut self, addr: u64, expect: &[Kind], stride_of: impl Fn(Kind) -> usize) -> Result<Node, TreeError> {
        self.stats.node_reads += 1;
        if let Some(j) = &self.journal {
            if let Some(&i) = j.index.get(&addr) {
                return Node::decode(&j.pending[i].1, addr, expect, stride_of);
            }
        }
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
        self.store_buf(addr)
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
        self.choose_sequential_except(choice, None)
    }

    /// As [`Store::choose_sequential`], never choosing zone `except` (a zone being reclaimed).
    pub fn choose_sequential_except(&self, choice: ZoneChoice, except: Option<usize>) -> Option<usize> {
        let nb = self.node_blocks;
        let room = |z: &SeqZone| z.capacity_blocks - z.written_blocks;
        let zones = self.seq.iter().enumerate().filter(|(i, z)| room(z) >= nb && Some(*i) != except);
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

    /// Nodes that still fit in the sequential zones in use, but zone `except`.
    pub fn sequential_room_nodes(&self, except: Option<usize>) -> u64 {
        self.seq.iter().enumerate().filter(|(i, _)| Some(*i) != except).map(|(_, z)| (z.capacity_blocks - z.written_blocks) / self.node_blocks).sum()
    }

    /// The zone to reclaim: the fewest live nodes among zones holding dead ones, if the other
    /// zones have room for its live nodes.
    pub fn reclaim_victim(&self) -> Option<usize> {
        let nb = self.node_blocks;
        let room_nodes = |z: &SeqZone| (z.capacity_blocks - z.written_blocks) / nb;
        let total = self.sequential_room_nodes(None);
        self.seq
            .iter()
            .enumerate()
            .filter(|(_, z)| z.written_blocks > z.live_nodes * nb && z.live_nodes <= total - room_nodes(z))
            .min_by_key(|(i, z)| (z.live_nodes, *i))
            .map(|(i, _)| i)
    }

    pub fn node_blocks(&self) -> u64 {
        self.node_blocks
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
        let zones = &self.seq;
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
        self.seq.iter().map(|z| z.live_nodes).sum()
    }

    /// Checks the store's own bookkeeping.
    pub fn check_invariants(&self) {
        for z in &self.seq {
            assert!(z.written_blocks <= z.capacity_blocks, "zone {} written past capacity", z.id);
            assert!(z.live_nodes * self.node_blocks <= z.written_blocks, "zone {}: {} live nodes in {} written blocks", z.id, z.live_nodes, z.written_blocks);
        }
        assert_eq!(self.conv_next - self.conv_reserved, self.conv_live + self.conv_free.len() as u64, "conventional slots leaked");
        if let Some(j) = &self.journal {
            assert!(j.pending.is_empty(), "{} conventional writes held back outside an operation", j.pending.len());
        }
    }
}

//! bcache's own metadata as buckets of the cache device: an option of [`crate::Cache`]
//! ([`MetadataConfig`], off by default), so that the index, the journal and the bucket
//! priorities take space and device writes as they do in bcache.
//!
//! What bcache does (Linux `drivers/md/bcache`, kernel 5.10 as the thesis ran; public facts,
//! the constants below name their source or say "assumed"):
//!
//! - **Btree** (the thesis, §2.1: "an append-only b+tree as the index"). Every node is
//!   allocated a whole bucket, of which it uses `btree_pages`: the bucket's pages if at most
//!   256 KiB, else a quarter of them but at least 256 KiB, counting at most 4 MiB of a bucket
//!   (`meta_bucket_pages`): 256 KiB nodes in 1 MiB buckets, 1 MiB nodes in 128 MiB ones. A leaf
//!   collects new keys in memory and appends them to its node as a new sorted set once they
//!   pass a page less 48 bytes (or after 30 s, not modelled); an interior node is written at
//!   every change. A node whose sets fill it is compacted (stale keys dropped) into a new
//!   bucket, and split (3/5 of its keys to the first half) when the compacted node is over
//!   4/5 full; its parent then takes the new pointers. Garbage collection coalesces up to
//!   four neighbours that fit in fewer nodes; here a rewritten leaf takes in right-hand
//!   neighbours while their keys fit in 2/3 of a node (assumed: bcache's own test differs).
//!   A key is 24 bytes (header, offset, one pointer). One key per cached 4 KiB block here
//!   (bcache's extents may cover several blocks of one request: an upper bound for
//!   multi-block requests, exact for the strided synthetic reads). The keys of a bucket
//!   evicted go stale at once (its generation) but stay in their leaves until rewritten.
//! - **Journal**: `nbuckets / 128` buckets, at least 2 and at most 256, used as a ring.
//!   Inserts that write data (writes, and writearound's invalidations) are journaled; a read
//!   miss's fill is not (it replaces a check key; a crash only loses clean copies). A journal
//!   write is one entry of about 256 header bytes (assumed) and its keys, in whole blocks;
//!   here one per write request (bcache may batch requests within 100 ms: an upper bound),
//!   and one whenever the btree root moves or priorities are written (`bch_journal_meta`).
//! - **Priorities and generations**: 3 bytes a bucket (prio 16 bits, gen 8) in prio buckets
//!   of `(meta bucket − 40) / 3` entries. Whenever the allocator has invalidated a batch of
//!   buckets (the cache's eviction batch) it writes all of them to freshly allocated buckets,
//!   each written whole (the meta bucket: at most 4 MiB), and frees the old ones.
//! - **Reserves**: the allocator keeps buckets ready for btree nodes (8, `RESERVE_BTREE`) and
//!   for the prio write (`RESERVE_PRIO`); data never takes them.
//!
//! On a ZNS cache every one of these buckets is a zone: freeing one resets it. On the
//! conventional SSD a freed bucket is not discarded, so its pages stay valid to the SSD until
//! the bucket is written again, as data buckets'.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{CacheError, Result};

/// A btree key with one pointer: header, offset, pointer (bcache's `struct bkey`).
pub const KEY_BYTES: u64 = 24;
/// A sorted set's fixed fields (bcache's `struct bset`).
pub const BSET_HEADER_BYTES: u64 = 32;
/// A journal entry's fixed fields, the btree root and the prio buckets' addresses (assumed).
pub const JSET_HEADER_BYTES: u64 = 256;
/// A leaf's unwritten keys are appended to its node past a page less 48 bytes.
pub const LEAF_WRITE_BYTES: u64 = 4096 - 48;
/// A prio bucket's header (bcache's `struct prio_set`) and bytes per bucket entry.
pub const PRIO_HEADER_BYTES: u64 = 40;
pub const PRIO_ENTRY_BYTES: u64 = 3;
/// The most of a bucket bcache's metadata uses (`meta_bucket_pages`: 1024 pages on x86).
pub const META_BUCKET_BYTES_MAX: u64 = 4 << 20;
/// bcache's `BTREE_MAX_PAGES` in bytes.
pub const BTREE_MAX_BYTES: u64 = 256 << 10;
/// Buckets bcache's allocator keeps for btree nodes (`RESERVE_BTREE`).
pub const BTREE_RESERVE_BUCKETS: u32 = 8;

/// The metadata model's settings; zeros take bcache's rule.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataConfig {
    /// Journal buckets; 0: `nbuckets / 128` clamped to 2..=256.
    pub journal_buckets: u32,
    /// Btree node bytes (each node still takes a whole bucket); 0: bcache's rule.
    pub btree_node_bytes: u64,
    /// Free buckets kept for btree nodes (at least 3: a split and its parent's rewrite).
    pub btree_reserve_buckets: u32,
    /// Prio buckets written whole (bcache: the meta bucket, at most 4 MiB) or only as many
    /// blocks as their entries take.
    pub prio_whole_bucket: bool,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        MetadataConfig { journal_buckets: 0, btree_node_bytes: 0, btree_reserve_buckets: BTREE_RESERVE_BUCKETS, prio_whole_bucket: true }
    }
}

/// bcache's journal bucket count for a cache of `buckets`.
pub fn default_journal_buckets(buckets: u32) -> u32 {
    (buckets / 128).clamp(2, 256)
}

/// bcache's btree node size for buckets of `bucket_bytes`.
pub fn default_btree_node_bytes(bucket_bytes: u64) -> u64 {
    let meta = bucket_bytes.min(META_BUCKET_BYTES_MAX);
    if meta > BTREE_MAX_BYTES {
        (meta / 4).max(BTREE_MAX_BYTES)
    } else {
        meta
    }
}

/// What the metadata wrote and held.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataStats {
    pub btree_blocks_written: u64,
    pub journal_blocks_written: u64,
    pub prio_blocks_written: u64,
    /// Leaves and interior nodes now.
    pub btree_nodes: u64,
    pub btree_nodes_max: u64,
    /// Nodes compacted, split or merged into new buckets.
    pub btree_node_rewrites: u64,
    pub prio_writes: u64,
    pub journal_buckets: u32,
    pub prio_buckets: u32,
    pub btree_node_bytes: u64,
    /// Buckets the metadata held at most (btree, journal, prio; not the reserve).
    pub buckets_max: u64,
}

impl MetadataStats {
    pub fn blocks_written(&self) -> u64 {
        self.btree_blocks_written + self.journal_blocks_written + self.prio_blocks_written
    }
}

/// What the metadata needs of the cache: buckets and writes.
pub(crate) trait MetaIo {
    /// A free bucket (the reserve included).
    fn alloc(&mut self) -> Result<u32>;
    /// The bucket's contents are dead: evicted (a zone reset) and freed.
    fn release(&mut self, bucket: u32) -> Result<()>;
    /// The bucket will be written again from its start (a journal bucket reused).
    fn reuse(&mut self, bucket: u32) -> Result<()>;
    fn write(&mut self, bucket: u32, offset: u64, blocks: u64) -> Result<()>;
}

#[derive(Copy, Clone, Debug)]
struct Node {
    bucket: u32,
    written_blocks: u64,
    pending_bytes: u64,
}

/// The metadata's state: which buckets it holds and how full its nodes are.
pub(crate) struct Meta {
    block_bytes: u64,
    bucket_blocks: u64,
    node_bytes: u64,
    node_blocks: u64,
    reserve: u32,
    prio_count: u32,
    prio_write_blocks: u64,
    journal: Vec<u32>,
    journal_index: usize,
    journal_offset: u64,
    prio: Vec<u32>,
    /// Live keys per granule of the backing disk (what compaction keeps).
    granule_blocks: u64,
    live: Vec<u32>,
    /// Leaves by their first granule; a leaf covers up to the next one's.
    leaves: BTreeMap<u64, Node>,
    /// Interior levels, lowest first; the last holds the root (one node).
    interior: Vec<Vec<Node>>,
    pub(crate) stats: MetadataStats,
}

fn blocks_of(bytes: u64, block_bytes: u64) -> u64 {
    bytes.div_ceil(block_bytes).max(1)
}

impl Meta {
    /// Resolves `config` for a cache of `buckets` × `bucket_blocks` over `disk_blocks`; the
    /// buckets it takes at start come from `io`.
    pub(crate) fn new(config: MetadataConfig, buckets: u32, bucket_blocks: u64, block_bytes: u64, disk_blocks: u64) -> Result<Meta> {
        let bucket_bytes = bucket_blocks * block_bytes;
        let journal = if config.journal_buckets == 0 { default_journal_buckets(buckets) } else { config.journal_buckets };
        let node_bytes = if config.btree_node_bytes == 0 { default_btree_node_bytes(bucket_bytes) } else { config.btree_node_bytes };
        if node_bytes < 2 * block_bytes || node_bytes % block_bytes != 0 || node_bytes > bucket_bytes {
            return Err(CacheError::Config(format!(
                "btree nodes of {node_bytes} bytes: whole {block_bytes}-byte blocks, at least two, and at most the {bucket_bytes}-byte bucket"
            )));
        }
        // Checked before the journal's table is allocated: a count past the cache's buckets
        // can never fit.
        if journal > buckets || config.btree_reserve_buckets > buckets {
            return Err(CacheError::Config(format!(
                "{journal} journal buckets and a btree reserve of {} buckets: each at most the cache's {buckets} buckets",
                config.btree_reserve_buckets
            )));
        }
        if config.btree_reserve_buckets < 3 {
            return Err(CacheError::Config(format!("a btree reserve of {} buckets: at least 3 (a split and its parent's rewrite)", config.btree_reserve_buckets)));
        }
        let meta_bytes = bucket_bytes.min(META_BUCKET_BYTES_MAX);
        let per_prio = ((meta_bytes.saturating_sub(PRIO_HEADER_BYTES)) / PRIO_ENTRY_BYTES).max(1);
        let prio_count = (buckets as u64).div_ceil(per_prio) as u32;
        let prio_write_blocks = if config.prio_whole_bucket {
            meta_bytes.div_ceil(block_bytes)
        } else {
            blocks_of(PRIO_HEADER_BYTES + PRIO_ENTRY_BYTES * (buckets as u64).div_ceil(prio_count as u64), block_bytes)
        };
        // At most 4 M granules of at least 8 blocks: 16 MiB of counters.
        let granule_blocks = 8u64.max((disk_blocks >> 22).next_power_of_two());
        let granules = disk_blocks.div_ceil(granule_blocks).max(1);
        let stats = MetadataStats { journal_buckets: journal, prio_buckets: prio_count, btree_node_bytes: node_bytes, ..MetadataStats::default() };
        Ok(Meta {
            block_bytes,
            bucket_blocks,
            node_bytes,
            node_blocks: node_bytes / block_bytes,
            reserve: config.btree_reserve_buckets,
            prio_count,
            prio_write_blocks,
            journal: vec![0; journal as usize],
            journal_index: 0,
            journal_offset: 0,
            prio: Vec::new(),
            granule_blocks,
            live: vec![0; granules as usize],
            leaves: BTreeMap::new(),
            interior: Vec::new(),
            stats,
        })
    }

    /// Buckets the metadata takes before any data: journal, prio (and the ones its first
    /// rewrite needs), the root, the reserve.
    pub(crate) fn startup_buckets(&self) -> u64 {
        self.journal.len() as u64 + 2 * self.prio_count as u64 + 1 + self.reserve as u64
    }

    /// Free buckets data allocation leaves alone.
    pub(crate) fn floor(&self) -> usize {
        self.reserve as usize + self.prio_count as usize
    }

    /// Buckets held now (not the reserve).
    pub(crate) fn held(&self) -> u64 {
        (self.journal.len() + self.prio.len() + self.leaves.len() + self.interior.iter().map(Vec::len).sum::<usize>()) as u64
    }

    pub(crate) fn holds(&self, bucket: u32) -> bool {
        self.journal.contains(&bucket)
            || self.prio.contains(&bucket)
            || self.leaves.values().any(|n| n.bucket == bucket)
            || self.interior.iter().flatten().any(|n| n.bucket == bucket)
    }

    /// Takes the journal, writes the first priorities and an empty root leaf.
    pub(crate) fn start(&mut self, io: &mut dyn MetaIo) -> Result<()> {
        for j in 0..self.journal.len() {
            self.journal[j] = io.alloc()?;
        }
        self.prio_write(io)?;
        let bucket = io.alloc()?;
        io.write(bucket, 0, 1)?;
        self.stats.btree_blocks_written += 1;
        self.leaves.insert(0, Node { bucket, written_blocks: 1, pending_bytes: 0 });
        self.note_size();
        Ok(())
    }

    fn granule(&self, lba: u64) -> u64 {
        (lba / self.granule_blocks).min(self.live.len() as u64 - 1)
    }

    /// A key of `lba` became live (inserted) or stale (invalidated, or its bucket evicted).
    pub(crate) fn live_changed(&mut self, lba: u64, live: bool) {
        let g = self.granule(lba) as usize;
        if live {
            self.live[g] += 1;
        } else {
            self.live[g] = self.live[g].checked_sub(1).expect("a key went stale that was never live");
        }
    }

    /// The live keys are these blocks' (after a crash, from the rebuilt index).
    pub(crate) fn reset_live(&mut self, lbas: impl Iterator<Item = u64>) {
        self.live.iter_mut().for_each(|n| *n = 0);
        for lba in lbas {
            self.live_changed(lba, true);
        }
    }

    /// A key for `lba` enters its leaf (an insertion, or an invalidation's key).
    pub(crate) fn append_key(&mut self, lba: u64, io: &mut dyn MetaIo) -> Result<()> {
        let g = self.granule(lba);
        let (&first, leaf) = self.leaves.range_mut(..=g).next_back().expect("the first leaf starts at granule 0");
        leaf.pending_bytes += KEY_BYTES;
        if leaf.pending_bytes >= LEAF_WRITE_BYTES {
            self.write_leaf(first, io)?;
        }
        Ok(())
    }

    /// A journal entry with `keys` keys (0: a metadata entry).
    pub(crate) fn journal_write(&mut self, keys: u64, io: &mut dyn MetaIo) -> Result<()> {
        let mut remaining = blocks_of(JSET_HEADER_BYTES + keys * KEY_BYTES, self.block_bytes);
        while remaining > 0 {
            if self.journal_offset == self.bucket_blocks {
                self.journal_index = (self.journal_index + 1) % self.journal.len();
                self.journal_offset = 0;
                io.reuse(self.journal[self.journal_index])?;
            }
            let n = remaining.min(self.bucket_blocks - self.journal_offset);
            io.write(self.journal[self.journal_index], self.journal_offset, n)?;
            self.journal_offset += n;
            self.stats.journal_blocks_written += n;
            remaining -= n;
        }
        Ok(())
    }

    /// Every bucket's priority and generation to new prio buckets; the old ones are freed.
    pub(crate) fn prio_write(&mut self, io: &mut dyn MetaIo) -> Result<()> {
        let old = std::mem::take(&mut self.prio);
        for _ in 0..self.prio_count {
            let bucket = io.alloc()?;
            io.write(bucket, 0, self.prio_write_blocks)?;
            self.stats.prio_blocks_written += self.prio_write_blocks;
            self.prio.push(bucket);
        }
        for bucket in old {
            io.release(bucket)?;
        }
        self.stats.prio_writes += 1;
        self.journal_write(0, io)
    }

    fn leaf_end(&self, first: u64) -> u64 {
        self.leaves.range(first + 1..).next().map_or(self.live.len() as u64, |(&g, _)| g)
    }

    fn live_keys(&self, from: u64, to: u64) -> u64 {
        self.live[from as usize..to as usize].iter().map(|&n| n as u64).sum()
    }

    fn write_leaf(&mut self, first: u64, io: &mut dyn MetaIo) -> Result<()> {
        let leaf = self.leaves[&first];
        let blocks = blocks_of(BSET_HEADER_BYTES + leaf.pending_bytes, self.block_bytes);
        if leaf.written_blocks + blocks > self.node_blocks {
            return self.rewrite_leaf(first, io);
        }
        io.write(leaf.bucket, leaf.written_blocks, blocks)?;
        self.stats.btree_blocks_written += blocks;
        let leaf = self.leaves.get_mut(&first).expect("looked up above");
        leaf.written_blocks += blocks;
        leaf.pending_bytes = 0;
        Ok(())
    }

    /// A new leaf over granules `from..to` holding their live keys.
    fn new_leaf(&mut self, from: u64, to: u64, io: &mut dyn MetaIo) -> Result<()> {
        let blocks = blocks_of(BSET_HEADER_BYTES + self.live_keys(from, to) * KEY_BYTES, self.block_bytes).min(self.node_blocks);
        let bucket = io.alloc()?;
        io.write(bucket, 0, blocks)?;
        self.stats.btree_blocks_written += blocks;
        self.leaves.insert(from, Node { bucket, written_blocks: blocks, pending_bytes: 0 });
        Ok(())
    }

    /// The leaf is full: compacted into a new bucket with its right-hand neighbours while
    /// they fit 2/3 of a node (at most four), or split when over 4/5.
    fn rewrite_leaf(&mut self, first: u64, io: &mut dyn MetaIo) -> Result<()> {
        let mut end = self.leaf_end(first);
        let mut old = vec![self.leaves.remove(&first).expect("the leaf exists").bucket];
        let node_bytes = self.node_bytes;
        let fits = move |keys: u64| BSET_HEADER_BYTES + keys * KEY_BYTES <= node_bytes * 2 / 3;
        while old.len() < 4 && end < self.live.len() as u64 {
            let next_end = self.leaf_end(end);
            if !fits(self.live_keys(first, next_end)) {
                break;
            }
            old.push(self.leaves.remove(&end).expect("the neighbour exists").bucket);
            end = next_end;
        }
        let live = self.live_keys(first, end);
        let mut pointers = 1;
        if BSET_HEADER_BYTES + live * KEY_BYTES > self.node_bytes * 4 / 5 && end - first >= 2 {
            // 3/5 of the keys to the first half, at a granule boundary inside the range.
            let mut split = first + 1;
            let mut sum = self.live[first as usize] as u64;
            while split < end - 1 && sum * 5 < live * 3 {
                sum += self.live[split as usize] as u64;
                split += 1;
            }
            self.new_leaf(first, split, io)?;
            self.new_leaf(split, end, io)?;
            pointers = 2;
        } else {
            self.new_leaf(first, end, io)?;
        }
        for bucket in old {
            io.release(bucket)?;
        }
        self.stats.btree_node_rewrites += 1;
        let leaves = self.live.len() as u64;
        self.grow(io)?;
        self.parent_update(0, first, leaves, pointers, io)?;
        self.note_size();
        Ok(())
    }

    /// Pointers per interior node before it splits.
    fn fanout(&self) -> u64 {
        ((self.node_bytes * 4 / 5 - BSET_HEADER_BYTES) / KEY_BYTES).max(2)
    }

    /// Adds interior nodes (and levels) the leaves' count needs; nodes never merge here.
    fn grow(&mut self, io: &mut dyn MetaIo) -> Result<()> {
        let fanout = self.fanout();
        let mut children = self.leaves.len() as u64;
        let mut level = 0;
        while children > 1 {
            let need = children.div_ceil(fanout);
            if self.interior.len() == level {
                self.interior.push(Vec::new());
                // A new root: its pointer goes to the journal.
                self.journal_write(0, io)?;
            }
            while (self.interior[level].len() as u64) < need {
                let blocks = blocks_of(BSET_HEADER_BYTES + children.div_ceil(need) * KEY_BYTES, self.block_bytes).min(self.node_blocks);
                let bucket = io.alloc()?;
                io.write(bucket, 0, blocks)?;
                self.stats.btree_blocks_written += blocks;
                self.interior[level].push(Node { bucket, written_blocks: blocks, pending_bytes: 0 });
            }
            children = self.interior[level].len() as u64;
            level += 1;
        }
        Ok(())
    }

    /// The node at `position` of `of` at child level `level` (0: the leaves) moved: its parent
    /// takes `pointers` new keys in one write, or the journal takes the root's.
    fn parent_update(&mut self, level: usize, position: u64, of: u64, pointers: u64, io: &mut dyn MetaIo) -> Result<()> {
        if level >= self.interior.len() {
            return self.journal_write(0, io);
        }
        let parents = self.interior[level].len() as u64;
        let p = ((position as u128 * parents as u128 / of.max(1) as u128) as u64).min(parents - 1) as usize;
        let node = self.interior[level][p];
        let blocks = blocks_of(BSET_HEADER_BYTES + pointers * KEY_BYTES, self.block_bytes);
        if node.written_blocks + blocks <= self.node_blocks {
            io.write(node.bucket, node.written_blocks, blocks)?;
            self.stats.btree_blocks_written += blocks;
            self.interior[level][p].written_blocks += blocks;
            return Ok(());
        }
        // Full: compacted into a new bucket with its share of the children.
        let children = if level == 0 { self.leaves.len() as u64 } else { self.interior[level - 1].len() as u64 };
        let blocks = blocks_of(BSET_HEADER_BYTES + children.div_ceil(parents) * KEY_BYTES, self.block_bytes).min(self.node_blocks);
        let bucket = io.alloc()?;
        io.write(bucket, 0, blocks)?;
        self.stats.btree_blocks_written += blocks;
        self.stats.btree_node_rewrites += 1;
        io.release(node.bucket)?;
        self.interior[level][p] = Node { bucket, written_blocks: blocks, pending_bytes: 0 };
        self.parent_update(level + 1, p as u64, parents, 1, io)
    }

    fn note_size(&mut self) {
        let nodes = (self.leaves.len() + self.interior.iter().map(Vec::len).sum::<usize>()) as u64;
        self.stats.btree_nodes = nodes;
        self.stats.btree_nodes_max = self.stats.btree_nodes_max.max(nodes);
        self.stats.buckets_max = self.stats.buckets_max.max(self.held());
    }

    /// Live keys counted per granule match `count` (the cache's live blocks).
    pub(crate) fn check(&self, live_blocks: u64) -> Result<()> {
        let keys: u64 = self.live.iter().map(|&n| n as u64).sum();
        if keys != live_blocks {
            return Err(CacheError::Internal(format!("the btree counts {keys} live keys, the cache {live_blocks} live blocks")));
        }
        if self.leaves.keys().next() != Some(&0) {
            return Err(CacheError::Internal("no leaf starts at the disk's first block".into()));
        }
        if self.prio.len() != self.prio_count as usize {
            return Err(CacheError::Internal(format!("{} prio buckets held, {} expected", self.prio.len(), self.prio_count)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buckets handed out and written in order from their start, as zones must be.
    struct Zones {
        free: Vec<u32>,
        write_pointer: Vec<u64>,
        held: Vec<bool>,
        bucket_blocks: u64,
        blocks_written: u64,
    }

    impl Zones {
        fn new(buckets: u32, bucket_blocks: u64) -> Zones {
            Zones { free: (0..buckets).rev().collect(), write_pointer: vec![0; buckets as usize], held: vec![false; buckets as usize], bucket_blocks, blocks_written: 0 }
        }
    }

    impl MetaIo for Zones {
        fn alloc(&mut self) -> Result<u32> {
            let b = self.free.pop().ok_or_else(|| CacheError::Internal("out of buckets".into()))?;
            assert!(!self.held[b as usize] && self.write_pointer[b as usize] == 0);
            self.held[b as usize] = true;
            Ok(b)
        }
        fn release(&mut self, bucket: u32) -> Result<()> {
            assert!(self.held[bucket as usize], "bucket {bucket} released twice");
            self.held[bucket as usize] = false;
            self.write_pointer[bucket as usize] = 0;
            self.free.push(bucket);
            Ok(())
        }
        fn reuse(&mut self, bucket: u32) -> Result<()> {
            assert!(self.held[bucket as usize]);
            self.write_pointer[bucket as usize] = 0;
            Ok(())
        }
        fn write(&mut self, bucket: u32, offset: u64, blocks: u64) -> Result<()> {
            assert!(self.held[bucket as usize], "write to bucket {bucket}, which the metadata does not hold");
            assert_eq!(offset, self.write_pointer[bucket as usize], "bucket {bucket} written out of order");
            assert!(offset + blocks <= self.bucket_blocks, "bucket {bucket} overfilled");
            self.write_pointer[bucket as usize] += blocks;
            self.blocks_written += blocks;
            Ok(())
        }
    }

    #[test]
    fn defaults_are_bcaches() {
        // 1 MiB buckets: 256 KiB nodes; 128 MiB buckets: a quarter of the 4 MiB meta bucket.
        assert_eq!(
            [default_btree_node_bytes(8 << 10), default_btree_node_bytes(256 << 10), default_btree_node_bytes(1 << 20), default_btree_node_bytes(128 << 20)],
            [8 << 10, 256 << 10, 256 << 10, 1 << 20]
        );
        assert_eq!([default_journal_buckets(64), default_journal_buckets(8192), default_journal_buckets(1 << 20)], [2, 64, 256]);
        // 8192 buckets of 1 MiB: one prio bucket (349,512 entries), written whole (256 blocks).
        let m = Meta::new(MetadataConfig::default(), 8192, 256, 4096, 1 << 24).unwrap();
        assert_eq!((m.prio_count, m.prio_write_blocks, m.node_blocks, m.journal.len(), m.floor()), (1, 256, 64, 64, 9));
        // 128 MiB zones: the prio write is the 4 MiB meta bucket, not the zone.
        let m = Meta::new(MetadataConfig::default(), 64, 32768, 4096, 1 << 24).unwrap();
        assert_eq!((m.prio_write_blocks, m.node_blocks, m.journal.len()), (1024, 256, 2));
        let used = Meta::new(MetadataConfig { prio_whole_bucket: false, ..MetadataConfig::default() }, 64, 32768, 4096, 1 << 24).unwrap();
        assert_eq!(used.prio_write_blocks, 1);
        for (config, what) in [
            (MetadataConfig { btree_node_bytes: 4096, ..MetadataConfig::default() }, "btree nodes of 4096 bytes"),
            (MetadataConfig { btree_node_bytes: 6000, ..MetadataConfig::default() }, "btree nodes of 6000 bytes"),
            (MetadataConfig { btree_node_bytes: 2 << 20, ..MetadataConfig::default() }, "at most the 1048576-byte bucket"),
            (MetadataConfig { btree_reserve_buckets: 2, ..MetadataConfig::default() }, "a btree reserve of 2 buckets"),
            (MetadataConfig { journal_buckets: u32::MAX, ..MetadataConfig::default() }, "4294967295 journal buckets"),
            (MetadataConfig { btree_reserve_buckets: 8193, ..MetadataConfig::default() }, "each at most the cache's 8192 buckets"),
        ] {
            let e = Meta::new(config, 8192, 256, 4096, 1 << 24).err().unwrap().to_string();
            assert!(e.contains(what), "{e}");
        }
    }

    #[test]
    fn the_btree_splits_merges_and_writes_its_buckets_in_order() {
        // 8 KiB nodes (271 keys before a split) over 64 Ki blocks of disk; buckets of 4 blocks.
        let config = MetadataConfig { btree_node_bytes: 8192, journal_buckets: 2, ..MetadataConfig::default() };
        let mut io = Zones::new(4096, 4);
        let mut m = Meta::new(config, 4096, 4, 4096, 1 << 16).unwrap();
        m.start(&mut io).unwrap();
        let mut rng = zonekit_base::Rng::new(7);
        let mut live = std::collections::BTreeSet::new();
        let mut order = std::collections::VecDeque::new();
        for step in 0..40_000u32 {
            let lba = rng.below(1 << 16);
            if live.insert(lba) {
                m.live_changed(lba, true);
                order.push_back(lba);
            }
            m.append_key(lba, &mut io).unwrap();
            // Keys go stale too: the btree must shrink back by merging.
            if step >= 20_000 {
                let old = order.pop_front().unwrap();
                live.remove(&old);
                m.live_changed(old, false);
            }
            if step % 64 == 0 {
                m.journal_write(3, &mut io).unwrap();
            }
            if step % 5000 == 0 {
                m.prio_write(&mut io).unwrap();
            }
        }
        m.check(live.len() as u64).unwrap();
        let s = m.stats.clone();
        // Interior nodes grew (a root over the leaves), leaves were rewritten and split.
        assert!(!m.interior.is_empty() && s.btree_node_rewrites > 100, "{s:?}");
        assert!(s.btree_nodes_max > m.leaves.len() as u64, "the btree never shrank: {s:?}");
        // Every bucket the metadata holds is one the fake device handed out, and no other.
        let held = io.held.iter().filter(|&&h| h).count() as u64;
        assert_eq!(held, m.held(), "{s:?}");
        assert_eq!(io.blocks_written, s.blocks_written());
        assert!(s.journal_blocks_written >= 40_000 / 64 && s.prio_writes == 9, "{s:?}");
    }
}

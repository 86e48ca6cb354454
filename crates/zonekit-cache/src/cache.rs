//! [`Cache`]: a bcache-style block cache of a backing [`Hdd`] on a [`CacheDevice`].
//!
//! - The index maps a backing block to (bucket, offset, generation). Buckets are never
//!   rewritten in place: evicting one bumps its generation, which turns every index entry
//!   pointing into it stale at once, as bcache's bucket generations do.
//! - Buckets fill append-only through open buckets, one per placement class: with a sampler,
//!   a block goes to the open bucket of its chunk's class (hot and cold apart), without one
//!   everything shares one. Open buckets are never evicted.
//! - The device hears each bucket's placement class as the bucket opens
//!   ([`CacheDevice::bucket_opened`]), numbered shortest-lived first: bcache's metadata (when
//!   modelled, class 0; its journal and prio buckets are rewritten constantly), then each
//!   temperature from the hottest, its write points in order. On ZNS every open bucket is a
//!   zone of its own anyway; an FDP SSD folds the classes onto its placement handles.
//! - When no bucket is free, the eviction policy picks victims, a batch at a time as bcache
//!   does (`roundup_pow2(buckets) / 1024 × 4`, at least one). A victim's dirty blocks are
//!   written back to the disk first; with region reinsertion its blocks hit since insertion
//!   are written again.
//! - Reads that miss are inserted (unless bypassed); writes follow the write mode. Requests
//!   continuing a sequential run of `sequential_cutoff_bytes` or more bypass the cache
//!   (bcache's sequential cutoff), reads and writes alike.
//! - Hit and miss are counted per block and per request (a request hits if all its blocks
//!   do). Latency is simulated: a hit block costs a flash read, misses cost the disk's time.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use zonekit_base::{BlockMap, LogHistogram};

use crate::device::{CacheDevice, RecoveredKeys};
use crate::evict::{CacheShape, Candidate, Eviction};
use crate::hdd::{Hdd, HddStats};
use crate::meta::{Meta, MetaIo, MetadataConfig, MetadataStats};
use crate::sampler::Sampler;
use crate::{CacheError, Result};

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteMode {
    /// Write to the disk and the cache (bcache's default).
    #[default]
    Writethrough,
    /// Write to the cache only; dirty blocks reach the disk when their bucket is evicted or
    /// on flush.
    Writeback,
    /// Write to the disk only; cached copies are dropped.
    Writearound,
}

impl WriteMode {
    pub fn parse(name: &str) -> Result<WriteMode> {
        match name {
            "writethrough" => Ok(WriteMode::Writethrough),
            "writeback" => Ok(WriteMode::Writeback),
            "writearound" => Ok(WriteMode::Writearound),
            other => Err(CacheError::Config(format!("write mode {other:?}: expected writethrough, writeback or writearound"))),
        }
    }

    /// The name [`Self::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Writethrough => "writethrough",
            WriteMode::Writeback => "writeback",
            WriteMode::Writearound => "writearound",
        }
    }
}

/// Which read misses enter the cache.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Admission {
    /// Every read miss (bcache).
    #[default]
    All,
    /// S3-FIFO's ghost rule for flash: a block enters only if it missed recently, i.e. it is
    /// among the last `blocks` distinct missed blocks remembered in a FIFO of ids; a first
    /// miss is only remembered. One-hit wonders never cost a flash write.
    Ghost { blocks: u64 },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheConfig {
    pub mode: WriteMode,
    /// Sequential runs this long bypass the cache; 0 turns the cutoff off.
    pub sequential_cutoff_bytes: u64,
    /// LBA chunk a sampler keys by.
    pub chunk_bytes: u64,
    /// Flash read time charged per hit block.
    pub flash_read_ns: u64,
    /// Open buckets per placement class, chosen by the requesting task (bcache's write
    /// points: its allocator keeps one per task, up to 128).
    pub write_points: u32,
    pub admission: Admission,
    /// bcache's own metadata (btree nodes, journal, priorities) as buckets it occupies and
    /// rewrites ([`crate::meta`]); `None`: the index lives in memory only.
    pub metadata: Option<MetadataConfig>,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            mode: WriteMode::Writethrough,
            sequential_cutoff_bytes: 4 << 20,
            chunk_bytes: 2 << 20,
            flash_read_ns: 58_000,
            write_points: 1,
            admission: Admission::All,
            metadata: None,
        }
    }
}

#[derive(Copy, Clone, Debug, Default)]
struct Entry {
    bucket: u32,
    offset: u32,
    gen: u32,
    valid: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Free,
    Open,
    Full,
    /// Held by the metadata (btree node, journal or prio bucket).
    Meta,
}

#[derive(Copy, Clone, Debug)]
struct Bucket {
    gen: u32,
    filled: u64,
    live: u64,
    state: State,
}

/// What the cache did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CacheStats {
    pub read_requests: u64,
    pub read_request_hits: u64,
    pub read_blocks: u64,
    pub read_block_hits: u64,
    pub write_requests: u64,
    pub write_blocks: u64,
    pub bypassed_requests: u64,
    /// Blocks written to the cache device: insertions and reinsertions.
    pub cache_blocks_written: u64,
    pub reinserted_blocks: u64,
    pub evictions: u64,
    /// Dirty blocks written to the disk when their bucket was evicted or on flush.
    pub writeback_blocks: u64,
    /// Blocks inserted per placement class.
    pub inserted_per_class: Vec<u64>,
    /// Read misses the admission rule kept out of the cache.
    pub admission_rejected: u64,
    /// Clean cached copies that failed their checksum (a durable device's) and were read from
    /// the disk instead.
    pub damaged_clean_blocks: u64,
}

impl CacheStats {
    /// Block hit ratio of reads that were not bypassed.
    pub fn hit_ratio(&self) -> f64 {
        self.read_block_hits as f64 / self.read_blocks.max(1) as f64
    }

    pub fn request_hit_ratio(&self) -> f64 {
        self.read_request_hits as f64 / self.read_requests.max(1) as f64
    }
}

/// A FIFO of recently missed block ids with membership counts (the ghost queue).
struct Ghost {
    fifo: VecDeque<u64>,
    count: BlockMap<u32>,
    capacity: usize,
}

impl Ghost {
    fn contains(&self, lba: u64) -> bool {
        self.count.get(lba).is_some_and(|c| c > 0)
    }

    fn remember(&mut self, lba: u64) {
        if self.capacity == 0 || self.contains(lba) {
            return;
        }
        if self.fifo.len() == self.capacity {
            let old = self.fifo.pop_front().expect("the FIFO is full");
            *self.count.entry(old).0 -= 1;
        }
        self.fifo.push_back(lba);
        *self.count.entry(lba).0 += 1;
    }
}

/// Recent sequential runs: where each ended and how long it has been.
struct Streams {
    runs: VecDeque<(u64, u64)>,
}

impl Streams {
    const TRACKED: usize = 16;

    /// The run this request continues (or starts), in bytes including it.
    fn observe(&mut self, lba: u64, blocks: u64, block_bytes: u64) -> u64 {
        let run = match self.runs.iter().position(|&(end, _)| end == lba) {
            Some(i) => self.runs.remove(i).expect("position found it").1,
            None => 0,
        } + blocks * block_bytes;
        if self.runs.len() == Self::TRACKED {
            self.runs.pop_front();
        }
        self.runs.push_back((lba + blocks, run));
        run
    }
}

pub struct Cache<C: CacheDevice> {
    device: C,
    hdd: Hdd,
    config: CacheConfig,
    index: BlockMap<Entry>,
    buckets: Vec<Bucket>,
    /// Backing block of each slot (`bucket × bucket_blocks + offset`).
    slot_lba: Vec<u64>,
    slot_dirty: Vec<bool>,
    slot_hit: Vec<bool>,
    /// Version of each slot's key and of each block's last invalidation: what bcache's
    /// journal orders, so recovery after a crash keeps the newest copy.
    slot_seq: Vec<u64>,
    tombstones: BlockMap<u64>,
    seq: u64,
    free: VecDeque<u32>,
    open: Vec<Option<u32>>,
    eviction: Box<dyn Eviction>,
    sampler: Option<Box<dyn Sampler>>,
    streams: Streams,
    ghost: Option<Ghost>,
    batch: u32,
    clock: u64,
    stats: CacheStats,
    latency: LogHistogram,
    block: Vec<u8>,
    run: Vec<u8>,
    meta: Option<Meta>,
    /// What metadata writes carry (the model counts blocks, not their contents).
    zeros: Vec<u8>,
    /// Buckets opened for data: a prio write follows every `batch` of them.
    data_allocations: u64,
}

/// The placement class of bcache's metadata buckets, when modelled (the shortest-lived).
const METADATA_CLASS: u32 = 0;

/// The cache's side of [`MetaIo`]: buckets from the free list, writes to the device.
struct Io<'a, C: CacheDevice> {
    device: &'a mut C,
    free: &'a mut VecDeque<u32>,
    buckets: &'a mut [Bucket],
    zeros: &'a [u8],
}

impl<C: CacheDevice> MetaIo for Io<'_, C> {
    fn alloc(&mut self) -> Result<u32> {
        let bucket = self.free.pop_front().ok_or_else(|| CacheError::Internal("the metadata found no free bucket (its reserve is too small)".into()))?;
        let b = &mut self.buckets[bucket as usize];
        *b = Bucket { gen: b.gen, filled: 0, live: 0, state: State::Meta };
        self.device.bucket_opened(bucket, METADATA_CLASS);
        Ok(bucket)
    }

    fn release(&mut self, bucket: u32) -> Result<()> {
        debug_assert_eq!(self.buckets[bucket as usize].state, State::Meta);
        self.device.evict(bucket)?;
        let b = &mut self.buckets[bucket as usize];
        b.gen = b.gen.wrapping_add(1);
        b.state = State::Free;
        self.free.push_back(bucket);
        Ok(())
    }

    fn reuse(&mut self, bucket: u32) -> Result<()> {
        self.device.evict(bucket)?;
        self.device.bucket_opened(bucket, METADATA_CLASS);
        Ok(())
    }

    fn write(&mut self, bucket: u32, offset: u64, blocks: u64) -> Result<()> {
        let bb = self.device.block_bytes() as u64;
        let piece = self.zeros.len() as u64 / bb;
        let mut done = 0;
        while done < blocks {
            let n = piece.min(blocks - done);
            self.device.write(bucket, offset + done, &self.zeros[..(n * bb) as usize])?;
            done += n;
        }
        Ok(())
    }
}

impl<C: CacheDevice> Cache<C> {
    /// A cache on `device` in front of `hdd`. `sampler` (if any) places blocks by class.
    /// A durable device's recovered keys are taken in: the cache opens where it was.
    pub fn new(mut device: C, hdd: Hdd, config: CacheConfig, eviction: Box<dyn Eviction>, sampler: Option<Box<dyn Sampler>>) -> Result<Cache<C>> {
        let recovered = device.take_recovered();
        let buckets = device.buckets();
        let bucket_blocks = device.bucket_blocks();
        let block_bytes = device.block_bytes() as u64;
        // A cache as large as its disk or larger is allowed (the thesis' literal setting):
        // every block then fits and eviction may never come.
        if config.chunk_bytes < block_bytes || config.chunk_bytes % block_bytes != 0 {
            return Err(CacheError::Config(format!("sampler chunk of {} bytes: a whole number of {block_bytes}-byte blocks", config.chunk_bytes)));
        }
        let classes = sampler.as_ref().map_or(1, |s| s.classes().max(1)) as usize;
        if config.admission == (Admission::Ghost { blocks: 0 }) {
            return Err(CacheError::Config("ghost admission needs a ghost of at least one block".into()));
        }
        if config.write_points == 0 {
            return Err(CacheError::Config("write points must be at least 1".into()));
        }
        let open = classes * config.write_points as usize;
        if open + 2 > buckets as usize {
            return Err(CacheError::Config(format!(
                "{classes} placement classes × {} write points keep {open} buckets open, and the cache needs two more (one free, one to evict); it has {buckets}",
                config.write_points
            )));
        }
        let meta = match config.metadata {
            None => None,
            Some(_) if device.durable() => {
                return Err(CacheError::Config("the metadata model runs on a simulated cache device, not a durable one (which journals its own keys)".into()))
            }
            Some(m) => {
                let disk_blocks = hdd.capacity_blocks();
                let meta = Meta::new(m, buckets, bucket_blocks, block_bytes, disk_blocks)?;
                let needed = meta.startup_buckets();
                if open as u64 + 2 + needed > buckets as u64 {
                    return Err(CacheError::Config(format!(
                        "bcache's metadata takes {needed} buckets at start ({} journal, {} prio written twice over, a root, a reserve of {}) beside {open} open buckets and two more; the cache has {buckets}",
                        meta.stats.journal_buckets, meta.stats.prio_buckets, m.btree_reserve_buckets
                    )));
                }
                Some(meta)
            }
        };
        let slots = (buckets as u64 * bucket_blocks) as usize;
        // bcache's free_inc: roundup_pow2(buckets) >> 10 << 2.
        let batch = ((buckets as u64).next_power_of_two() >> 10 << 2).max(1) as u32;
        let mut cache = Cache {
            index: BlockMap::new(),
            buckets: vec![Bucket { gen: 0, filled: 0, live: 0, state: State::Free }; buckets as usize],
            slot_lba: vec![0; slots],
            slot_dirty: vec![false; slots],
            slot_hit: vec![false; slots],
            slot_seq: vec![0; slots],
            tombstones: BlockMap::new(),
            seq: 0,
            free: (0..buckets).collect(),
            open: vec![None; open],
            eviction,
            sampler,
            streams: Streams { runs: VecDeque::new() },
            ghost: match config.admission {
                Admission::All => None,
                Admission::Ghost { blocks } => Some(Ghost { fifo: VecDeque::new(), count: BlockMap::new(), capacity: blocks as usize }),
            },
            batch,
            clock: 0,
            stats: CacheStats { inserted_per_class: vec![0; classes], ..CacheStats::default() },
            latency: LogHistogram::default(),
            block: vec![0; block_bytes as usize],
            run: Vec::new(),
            zeros: if meta.is_some() { vec![0; (bucket_blocks.min(256) * block_bytes) as usize] } else { Vec::new() },
            meta,
            data_allocations: 0,
            device,
            hdd,
            config,
        };
        let device_classes = u32::from(cache.meta.is_some()) + cache.open.len() as u32;
        cache.device.placement_classes(device_classes);
        if let Some(r) = recovered {
            cache.restore(r)?;
        }
        cache.with_meta(|m, io| m.start(io))?;
        Ok(cache)
    }

    /// Takes in what a durable device held: its buckets closed as they are, its keys indexed.
    fn restore(&mut self, r: RecoveredKeys) -> Result<()> {
        if r.fills.len() != self.buckets.len() {
            return Err(CacheError::Internal(format!("{} bucket fills recovered for {} buckets", r.fills.len(), self.buckets.len())));
        }
        self.free.clear();
        for (bucket, &filled) in r.fills.iter().enumerate() {
            let b = &mut self.buckets[bucket];
            b.filled = filled;
            if filled == 0 {
                self.free.push_back(bucket as u32);
            } else {
                b.state = State::Full;
                self.eviction.opened(bucket as u32, self.clock);
            }
        }
        let capacity = self.hdd.capacity_blocks();
        for &(lba, bucket, offset, dirty) in &r.keys {
            if lba >= capacity {
                return Err(CacheError::Corrupt(format!("backing block {lba} is cached, but the disk has {capacity} blocks")));
            }
            let slot = self.slot(bucket, offset);
            self.slot_lba[slot] = lba;
            self.slot_dirty[slot] = dirty;
            self.index.insert(lba, Entry { bucket, offset: offset as u32, gen: self.buckets[bucket as usize].gen, valid: true });
            self.buckets[bucket as usize].live += 1;
        }
        // A cache opened to be read keeps every bucket as it found them.
        if self.free.is_empty() && !r.read_only {
            self.evict_batch()?;
        }
        Ok(())
    }

    /// Makes the cache's state durable on a durable device: the disk's writes first, then the
    /// keys (nothing to do on a volatile one).
    pub fn commit(&mut self) -> Result<()> {
        self.hdd.sync()?;
        self.device.commit()
    }

    /// Reads `buf.len()` bytes at block `lba` as they are, from the cache where it holds
    /// them and from the disk elsewhere, without inserting anything or counting a request;
    /// returns the cached blocks and how many of them are dirty.
    pub fn inspect(&mut self, lba: u64, buf: &mut [u8]) -> Result<(u64, u64)> {
        let blocks = self.check_request(lba, buf.len())?;
        let bb = self.block_bytes();
        let (mut cached, mut dirty) = (0, 0);
        for i in 0..blocks {
            let at = i as usize * bb;
            match self.lookup(lba + i) {
                Some(e) => {
                    self.device.read(e.bucket, e.offset as u64, &mut buf[at..at + bb])?;
                    cached += 1;
                    dirty += self.slot_dirty[self.slot(e.bucket, e.offset as u64)] as u64;
                }
                None => {
                    self.hdd.read(lba + i, &mut buf[at..at + bb])?;
                }
            }
        }
        Ok((cached, dirty))
    }

    /// Blocks cached and dirty blocks among them.
    pub fn cached_blocks(&self) -> (u64, u64) {
        let live = self.buckets.iter().map(|b| b.live).sum();
        let dirty =
            self.index.iter().filter(|(_, e)| e.valid && self.buckets[e.bucket as usize].gen == e.gen && self.slot_dirty[self.slot(e.bucket, e.offset as u64)]).count() as u64;
        (live, dirty)
    }

    pub fn shape(&self) -> CacheShape {
        CacheShape { buckets: self.device.buckets(), bucket_blocks: self.device.bucket_blocks() }
    }

    pub fn stats(&self) -> &CacheStats {
        &self.stats
    }

    /// What bcache's metadata wrote and held, when it is modelled.
    pub fn metadata(&self) -> Option<&MetadataStats> {
        self.meta.as_ref().map(|m| &m.stats)
    }

    /// Runs `f` on the metadata (if modelled) with the cache's buckets and device.
    fn with_meta(&mut self, f: impl FnOnce(&mut Meta, &mut dyn MetaIo) -> Result<()>) -> Result<()> {
        let Some(meta) = self.meta.as_mut() else { return Ok(()) };
        let mut io = Io { device: &mut self.device, free: &mut self.free, buckets: &mut self.buckets, zeros: &self.zeros };
        f(meta, &mut io)
    }

    /// Free buckets data allocation leaves to the metadata.
    fn free_floor(&self) -> usize {
        self.meta.as_ref().map_or(0, Meta::floor)
    }

    /// Evicts until the metadata's reserve is whole again.
    fn refill(&mut self) -> Result<()> {
        if self.free.len() < self.free_floor() {
            self.evict_batch()?;
        }
        Ok(())
    }

    pub fn hdd_stats(&self) -> &HddStats {
        self.hdd.stats()
    }

    pub fn device(&self) -> &C {
        &self.device
    }

    /// The cache device back (a durable one keeps what was committed).
    pub fn into_device(self) -> C {
        self.device
    }

    pub fn latency(&self) -> &LogHistogram {
        &self.latency
    }

    pub fn sampler(&self) -> Option<&dyn Sampler> {
        self.sampler.as_deref()
    }

    fn block_bytes(&self) -> usize {
        self.block_bytes_of_device()
    }

    fn block_bytes_of_device(&self) -> usize {
        self.device.block_bytes() as usize
    }

    fn slot(&self, bucket: u32, offset: u64) -> usize {
        (bucket as u64 * self.device.bucket_blocks() + offset) as usize
    }

    /// Where `lba` is cached, if it is.
    fn lookup(&self, lba: u64) -> Option<Entry> {
        self.index.get(lba).filter(|e| e.valid && self.buckets[e.bucket as usize].gen == e.gen)
    }

    fn check_request(&self, lba: u64, bytes: usize) -> Result<u64> {
        let bb = self.block_bytes();
        if bytes == 0 || bytes % bb != 0 {
            return Err(CacheError::Config(format!("request of {bytes} bytes: a positive whole number of {bb}-byte blocks")));
        }
        let blocks = (bytes / bb) as u64;
        if lba.checked_add(blocks).is_none_or(|end| end > self.hdd.capacity_blocks()) {
            return Err(CacheError::OutOfRange { lba, blocks, capacity_blocks: self.hdd.capacity_blocks() });
        }
        Ok(blocks)
    }

    /// Bypass decision and open-bucket slot (class × write points + task) for a request,
    /// recording it in the sampler.
    fn admit(&mut self, task: u32, lba: u64, blocks: u64) -> (bool, usize) {
        self.clock += 1;
        let run = self.streams.observe(lba, blocks, self.block_bytes() as u64);
        let bypass = self.config.sequential_cutoff_bytes > 0 && run >= self.config.sequential_cutoff_bytes;
        if bypass {
            self.stats.bypassed_requests += 1;
            return (true, 0);
        }
        let chunk = lba * self.block_bytes() as u64 / self.config.chunk_bytes;
        let class = match &mut self.sampler {
            Some(s) => {
                // Classify first, then record: otherwise every block would look hot.
                let class = s.class(chunk).min(s.classes().saturating_sub(1)) as usize;
                s.access(chunk);
                class
            }
            None => 0,
        };
        self.eviction.traffic(blocks);
        let points = self.config.write_points;
        (false, class * points as usize + (task % points) as usize)
    }

    /// Reads `buf.len()` bytes (whole blocks) at block `lba`.
    pub fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<()> {
        self.read_as(0, lba, buf)
    }

    /// A read issued by `task` (which picks the write point its misses are inserted at).
    pub fn read_as(&mut self, task: u32, lba: u64, buf: &mut [u8]) -> Result<()> {
        let blocks = self.check_request(lba, buf.len())?;
        let (bypass, class) = self.admit(task, lba, blocks);
        let bb = self.block_bytes();
        let mut latency = 0;
        let mut hits = 0;
        let mut i = 0u64;
        while i < blocks {
            let at = (i as usize) * bb;
            if let Some(e) = self.lookup(lba + i) {
                let slot = self.slot(e.bucket, e.offset as u64);
                match self.device.read(e.bucket, e.offset as u64, &mut buf[at..at + bb]) {
                    Ok(()) => {
                        self.slot_hit[slot] = true;
                        self.eviction.hit(e.bucket, self.clock);
                        latency += self.config.flash_read_ns;
                        hits += 1;
                        i += 1;
                        continue;
                    }
                    // A damaged clean copy is dropped and read from the disk: a miss.
                    Err(CacheError::Damaged { .. }) if !self.slot_dirty[slot] => {
                        self.invalidate(lba + i);
                        self.stats.damaged_clean_blocks += 1;
                    }
                    Err(e) => return Err(e),
                }
            }
            // A run of misses is one disk access.
            let mut end = i + 1;
            while end < blocks && self.lookup(lba + end).is_none() {
                end += 1;
            }
            latency += self.hdd.read(lba + i, &mut buf[at..end as usize * bb])?;
            if !bypass {
                for j in i..end {
                    if let Some(ghost) = &mut self.ghost {
                        if !ghost.contains(lba + j) {
                            ghost.remember(lba + j);
                            self.stats.admission_rejected += 1;
                            continue;
                        }
                    }
                    let from = j as usize * bb;
                    self.block.copy_from_slice(&buf[from..from + bb]);
                    let block = std::mem::take(&mut self.block);
                    let result = self.insert(lba + j, &block, class, false);
                    self.block = block;
                    result?;
                }
            }
            i = end;
        }
        if !bypass {
            self.stats.read_requests += 1;
            self.stats.read_blocks += blocks;
            self.stats.read_block_hits += hits;
            self.stats.read_request_hits += (hits == blocks) as u64;
        }
        self.latency.record(latency);
        Ok(())
    }

    /// Writes whole blocks at block `lba`.
    pub fn write(&mut self, lba: u64, data: &[u8]) -> Result<()> {
        self.write_as(0, lba, data)
    }

    /// A write issued by `task`.
    pub fn write_as(&mut self, task: u32, lba: u64, data: &[u8]) -> Result<()> {
        let blocks = self.check_request(lba, data.len())?;
        let (bypass, class) = self.admit(task, lba, blocks);
        self.stats.write_requests += 1;
        self.stats.write_blocks += blocks;
        let bb = self.block_bytes();
        let mode = if bypass && self.config.mode != WriteMode::Writearound { WriteMode::Writearound } else { self.config.mode };
        let mut latency = 0;
        if mode != WriteMode::Writeback {
            self.drop_clean_copies_durably(lba, blocks)?;
            latency += self.hdd.write(lba, data)?;
        }
        for (i, block) in data.chunks(bb).enumerate() {
            match mode {
                WriteMode::Writearound => self.invalidate(lba + i as u64),
                _ => self.insert(lba + i as u64, block, class, mode == WriteMode::Writeback)?,
            }
        }
        // bcache journals a write's keys (a read fill's it does not); bypassing, the write
        // invalidates its range with one key per extent of up to 16 MiB.
        let extents = blocks.div_ceil((16 << 20) / bb as u64);
        self.with_meta(|m, io| {
            if mode == WriteMode::Writearound {
                for e in 0..extents {
                    m.append_key(lba + e * ((16 << 20) / bb as u64), io)?;
                }
                m.journal_write(extents, io)
            } else {
                m.journal_write(blocks, io)
            }
        })?;
        self.refill()?;
        self.latency.record(latency);
        Ok(())
    }

    /// Writes every dirty block back to the disk (writeback mode); they stay cached, clean.
    pub fn flush(&mut self) -> Result<()> {
        for bucket in 0..self.buckets.len() as u32 {
            let filled = self.buckets[bucket as usize].filled;
            for offset in 0..filled {
                let slot = self.slot(bucket, offset);
                if self.slot_dirty[slot] && self.is_live(bucket, offset) {
                    self.write_back(bucket, offset)?;
                }
            }
        }
        Ok(())
    }

    fn is_live(&self, bucket: u32, offset: u64) -> bool {
        let lba = self.slot_lba[self.slot(bucket, offset)];
        self.lookup(lba).is_some_and(|e| e.bucket == bucket && e.offset as u64 == offset)
    }

    fn write_back(&mut self, bucket: u32, offset: u64) -> Result<()> {
        let slot = self.slot(bucket, offset);
        // Its own buffer: a write-back runs inside an insertion that holds `self.block`.
        let mut block = vec![0u8; self.block_bytes_of_device()];
        self.device.read(bucket, offset, &mut block)?;
        self.hdd.write(self.slot_lba[slot], &block)?;
        self.slot_dirty[slot] = false;
        self.device.key(self.slot_lba[slot], Some((bucket, offset, false)));
        self.stats.writeback_blocks += 1;
        Ok(())
    }

    /// Drops the cached copy of `lba`, if any.
    /// Before a write past the cache reaches the disk, a durable device commits the removal of
    /// clean cached copies' keys: else a crash in between reopens the old copy, clean, over newer
    /// disk data (fault simulator, seed 130). Dirty copies are written back before they go.
    fn drop_clean_copies_durably(&mut self, lba: u64, blocks: u64) -> Result<()> {
        let clean = |c: &Self, b: u64| c.lookup(b).is_some_and(|e| !c.slot_dirty[c.slot(e.bucket, e.offset as u64)]);
        let stale: Vec<u64> = (lba..lba + blocks).filter(|&b| self.device.durable() && clean(self, b)).collect();
        stale.iter().for_each(|&b| self.invalidate(b));
        if stale.is_empty() {
            Ok(())
        } else {
            self.device.commit()
        }
    }

    fn invalidate(&mut self, lba: u64) {
        if let Some(e) = self.lookup(lba) {
            if let Some(m) = &mut self.meta {
                m.live_changed(lba, false);
            }
            self.buckets[e.bucket as usize].live -= 1;
            let slot = self.slot(e.bucket, e.offset as u64);
            self.slot_dirty[slot] = false;
            self.index.insert(lba, Entry { valid: false, ..e });
            self.seq += 1;
            self.tombstones.insert(lba, self.seq);
            self.device.key(lba, None);
        }
    }

    fn insert(&mut self, lba: u64, data: &[u8], class: usize, dirty: bool) -> Result<()> {
        // On a durable device an eviction commits the keys: room is made before the old copy
        // is dropped, or its removal could be committed before the new copy's key and a dirty
        // old copy (never written back) would be lost to a crash. The simulation keeps its
        // order (the dropped copy does not count as live when victims are chosen).
        let durable = self.device.durable();
        if !durable {
            self.invalidate(lba);
        }
        let bucket = match self.open[class] {
            Some(b) => b,
            None => self.open_bucket(class)?,
        };
        if durable {
            self.invalidate(lba);
        }
        let b = self.buckets[bucket as usize];
        self.device.write(bucket, b.filled, data)?;
        let slot = self.slot(bucket, b.filled);
        self.slot_lba[slot] = lba;
        self.slot_dirty[slot] = dirty;
        self.slot_hit[slot] = false;
        self.seq += 1;
        self.slot_seq[slot] = self.seq;
        self.index.insert(lba, Entry { bucket, offset: b.filled as u32, gen: b.gen, valid: true });
        self.device.key(lba, Some((bucket, b.filled, dirty)));
        let b = &mut self.buckets[bucket as usize];
        b.filled += 1;
        b.live += 1;
        if b.filled == self.device.bucket_blocks() {
            b.state = State::Full;
            self.open[class] = None;
        }
        self.stats.cache_blocks_written += 1;
        self.stats.inserted_per_class[class / self.config.write_points as usize] += 1;
        if let Some(m) = &mut self.meta {
            m.live_changed(lba, true);
        }
        self.with_meta(|m, io| m.append_key(lba, io))?;
        self.refill()
    }

    /// The placement class the device hears for open-bucket slot `slot` (temperature ×
    /// write points + write point): metadata first when modelled, then the temperatures from
    /// the hottest (the sampler's highest class), each one's write points in order.
    fn device_class(&self, slot: usize) -> u32 {
        let points = self.config.write_points as usize;
        let temperatures = self.open.len() / points;
        let (temperature, point) = (slot / points, slot % points);
        let first = usize::from(self.meta.is_some());
        (first + (temperatures - 1 - temperature) * points + point) as u32
    }

    fn open_bucket(&mut self, class: usize) -> Result<u32> {
        if self.free.len() <= self.free_floor() {
            self.evict_batch()?;
            // Reinsertion during the eviction may have opened this class's bucket already.
            if let Some(bucket) = self.open[class] {
                return Ok(bucket);
            }
        }
        let bucket = self.free.pop_front().ok_or_else(|| CacheError::Internal("eviction freed no bucket".into()))?;
        let b = &mut self.buckets[bucket as usize];
        b.state = State::Open;
        b.filled = 0;
        b.live = 0;
        self.eviction.opened(bucket, self.clock);
        self.open[class] = Some(bucket);
        let device_class = self.device_class(class);
        self.device.bucket_opened(bucket, device_class);
        // bcache's allocator writes every bucket's priority and generation after each batch
        // it hands out (from the prio reserve, which the floor kept free).
        self.data_allocations += 1;
        if self.data_allocations % self.batch as u64 == 0 {
            self.with_meta(|m, io| m.prio_write(io))?;
        }
        Ok(bucket)
    }

    /// Evicts a batch of victims, then writes their reinserted blocks again; repeats until a
    /// bucket is free (reinsertion may fill what the batch freed).
    fn evict_batch(&mut self) -> Result<()> {
        loop {
            let mut reinsert = Vec::new();
            let mut run = std::mem::take(&mut self.run);
            run.clear();
            let mut evicted = 0;
            for _ in 0..self.batch {
                let candidates: Vec<Candidate> = (0..self.buckets.len() as u32)
                    .filter(|&b| self.buckets[b as usize].state == State::Full)
                    .map(|b| Candidate { bucket: b, live_blocks: self.buckets[b as usize].live })
                    .collect();
                if candidates.is_empty() {
                    break;
                }
                let victim = self.eviction.victim(&candidates);
                self.evict(victim, &mut reinsert, &mut run)?;
                evicted += 1;
            }
            if evicted == 0 && self.free.len() <= self.free_floor() {
                let held = self.meta.as_ref().map_or(0, Meta::held);
                return Err(CacheError::Internal(format!(
                    "no full bucket to evict: {} buckets are open, {held} hold metadata, {} are free",
                    self.open.iter().flatten().count(),
                    self.free.len()
                )));
            }
            // Reinserted blocks were hit: they go with the hottest class (its first write point).
            let hot = self.open.len() - self.config.write_points as usize;
            let bb = self.block_bytes();
            for (i, lba) in reinsert.iter().enumerate() {
                self.insert(*lba, &run[i * bb..(i + 1) * bb], hot, false)?;
                self.stats.reinserted_blocks += 1;
            }
            self.run = run;
            if self.free.len() > self.free_floor() {
                return Ok(());
            }
        }
    }

    /// Empties `bucket`: dirty blocks go to the disk; with reinsertion, blocks hit since
    /// insertion (at most half a bucket, so eviction always gains space) are read into `run`.
    fn evict(&mut self, bucket: u32, reinsert: &mut Vec<u64>, run: &mut Vec<u8>) -> Result<()> {
        let filled = self.buckets[bucket as usize].filled;
        let reinserts = self.eviction.reinserts_hit_blocks();
        let bb = self.block_bytes();
        let cap = reinsert.len() as u64 + self.device.bucket_blocks() / 2;
        for offset in 0..filled {
            if !self.is_live(bucket, offset) {
                continue;
            }
            let slot = self.slot(bucket, offset);
            if let Some(m) = &mut self.meta {
                // Its key goes stale with the bucket's generation; it stays in its leaf.
                m.live_changed(self.slot_lba[slot], false);
            }
            if self.slot_dirty[slot] {
                self.write_back(bucket, offset)?;
            }
            if reinserts && self.slot_hit[slot] && (reinsert.len() as u64) < cap {
                let at = run.len();
                run.resize(at + bb, 0);
                match self.device.read(bucket, offset, &mut run[at..]) {
                    Ok(()) => reinsert.push(self.slot_lba[slot]),
                    // Written back above if it was dirty; a damaged clean copy is not kept.
                    Err(CacheError::Damaged { .. }) => {
                        run.truncate(at);
                        self.stats.damaged_clean_blocks += 1;
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        // The blocks written back are durable before the keys that leave them to the disk.
        self.hdd.sync()?;
        let b = &mut self.buckets[bucket as usize];
        b.gen = b.gen.wrapping_add(1);
        b.filled = 0;
        b.live = 0;
        b.state = State::Free;
        self.device.evict(bucket)?;
        self.free.push_back(bucket);
        self.stats.evictions += 1;
        Ok(())
    }

    /// A crash and restart: everything held only in memory — the index, live counts, open
    /// buckets, the free list — is lost and rebuilt from what is on the cache device: each
    /// filled slot's key (block, version, dirty) and the journaled invalidations, as bcache
    /// replays its journal. Buckets that were open are closed (filled no further). The
    /// eviction policy's state stands for bcache's on-disk priorities and is kept; the
    /// sequential-run table starts empty again; the sampler, a heuristic, is kept.
    pub fn crash_and_recover(&mut self) -> Result<()> {
        self.index = BlockMap::new();
        self.open.iter_mut().for_each(|o| *o = None);
        self.free.clear();
        self.streams.runs.clear();
        let mut newest: BlockMap<u64> = BlockMap::new();
        let bucket_blocks = self.device.bucket_blocks();
        for bucket in 0..self.buckets.len() as u32 {
            let b = &mut self.buckets[bucket as usize];
            b.live = 0;
            if b.state == State::Meta {
                continue;
            }
            if b.filled == 0 {
                b.state = State::Free;
                self.free.push_back(bucket);
                continue;
            }
            b.state = State::Full;
            let gen = b.gen;
            for offset in 0..b.filled {
                let slot = (bucket as u64 * bucket_blocks + offset) as usize;
                let (lba, seq) = (self.slot_lba[slot], self.slot_seq[slot]);
                let invalidated = self.tombstones.get(lba).unwrap_or(0);
                if seq > invalidated && newest.get(lba).is_none_or(|s| seq > s) {
                    newest.insert(lba, seq);
                    self.index.insert(lba, Entry { bucket, offset: offset as u32, gen, valid: true });
                }
            }
        }
        for (_, e) in self.index.iter() {
            if e.valid {
                self.buckets[e.bucket as usize].live += 1;
            }
        }
        if let Some(m) = &mut self.meta {
            // bcache's btree is on the device and survives; its live counts are the index's.
            m.reset_live(self.index.iter().filter(|(_, e)| e.valid).map(|(lba, _)| lba));
        }
        if self.free.len() <= self.free_floor() {
            self.evict_batch()?;
        }
        Ok(())
    }

    /// Live counts match the index; open buckets are the open table's; every slot below a
    /// bucket's fill point that the index names is there.
    pub fn check_invariants(&self) -> Result<()> {
        let bad = |m: String| Err(CacheError::Internal(m));
        for (bucket, b) in self.buckets.iter().enumerate() {
            let live = (0..b.filled).filter(|&o| self.is_live(bucket as u32, o)).count() as u64;
            if live != b.live {
                return bad(format!("bucket {bucket}: {} live blocks counted, {live} found", b.live));
            }
            let is_open = self.open.contains(&Some(bucket as u32));
            if is_open != (b.state == State::Open) {
                return bad(format!("bucket {bucket}: state {:?} but open table says {is_open}", b.state));
            }
            if (b.state == State::Free) != self.free.contains(&(bucket as u32)) {
                return bad(format!("bucket {bucket}: state {:?} disagrees with the free list", b.state));
            }
            let held = self.meta.as_ref().is_some_and(|m| m.holds(bucket as u32));
            if held != (b.state == State::Meta) {
                return bad(format!("bucket {bucket}: state {:?} but the metadata holding it is {held}", b.state));
            }
        }
        for (lba, e) in self.index.iter() {
            let current = e.valid && self.buckets[e.bucket as usize].gen == e.gen;
            if current && (e.offset as u64 >= self.buckets[e.bucket as usize].filled || self.slot_lba[self.slot(e.bucket, e.offset as u64)] != lba) {
                return bad(format!("block {lba}: index points at an unfilled or foreign slot"));
            }
        }
        if let Some(m) = &self.meta {
            m.check(self.buckets.iter().map(|b| b.live).sum())?;
        }
        Ok(())
    }
}

//! The FTL engine: a page-level map from logical blocks to zone slots over any [`ZonedDevice`].

use zonekit_base::mem::{advise_huge_pages, huge_vec, prefetch_read};
use zonekit_base::{BlockMap, NEVER};
use zonekit_device::{DeviceError, Lba, ZoneId, ZoneType, ZonedDevice};

pub use crate::config::{gp_quantile, CapacityMode, FtlConfig, FtlError, FtlStats, GcTrigger, DEFAULT_GC_THRESHOLD};
use crate::placement::{BlockCtx, Placement, Reclaimed};
use zonekit_pool::victim::{Greedy, Victim, VictimCtx};
use zonekit_pool::{ZoneInfo, ZonePool, ZoneUse};

const UNMAPPED: u32 = u32::MAX;
/// The most physical blocks (zones × zone capacity) a device may have: slots are `u32`, and
/// `u32::MAX` marks an unmapped block.
pub const PHYSICAL_BLOCKS_MAX: u64 = UNMAPPED as u64 - 1;

/// Memory the FTL's per-slot tables take on a device of `physical_blocks` blocks: the reverse
/// map (a `u32` a slot) and the live bitmap. Per-logical-block state grows with the writes
/// and is not counted.
pub fn slot_memory_bytes(physical_blocks: u64) -> u64 {
    physical_blocks.saturating_mul(std::mem::size_of::<u32>() as u64).saturating_add(physical_blocks.div_ceil(8))
}
/// `last_write` of a block a restore adopted: the placement policy has not seen it, so its
/// next user write is a first write to the policy (user writes number below 2^32 - 1).
const ADOPTED: u32 = u32::MAX;

/// Told where every block lands and asked before any zone is erased: what a caller that keeps
/// the mapping durable needs (a block volume journaling it; [`Ftl::set_observer`]). Replays
/// set none.
pub trait FtlObserver<D>: Send {
    /// Block `id` (dense, in order of first write) now lives at `lba`: a user write, or a GC
    /// move of the data it already held (`by_gc`).
    fn placed(&mut self, id: u32, lba: Lba, by_gc: bool);
    /// Zone `zone` is about to be reset: every live block it held has been placed elsewhere,
    /// and nothing durable may point into it after this returns.
    fn before_reset(&mut self, dev: &mut D, zone: ZoneId) -> Result<(), DeviceError>;
}

/// Everything the FTL keeps per logical block, in one 12-byte record so that a write touches
/// one cache line of it.
#[derive(Copy, Clone, Debug)]
#[repr(C)]
struct BlockState {
    /// Physical slot (zone × zone capacity + offset).
    slot: u32,
    /// Logical time of the last user write.
    last_write: u32,
    /// The placement policy's word.
    policy: u32,
}

/// Where a slot's bit is in a bitmap of one bit per slot, 64 to a word: the word, the bit.
#[inline]
fn live_bit(slot: u32) -> (usize, u64) {
    (slot as usize / 64, 1 << (slot % 64))
}

/// The words of a bitmap (one bit per slot, 64 to a word) that cover `slots`: each word's
/// index and the mask of its bits within `slots`.
fn bitmap_words(slots: std::ops::Range<u64>) -> impl Iterator<Item = (usize, u64)> {
    let (start, end) = (slots.start, slots.end.max(slots.start));
    let words = if start == end { 0..0 } else { start / 64..end.div_ceil(64) };
    words.map(move |w| {
        let low = start.saturating_sub(w * 64) as u32;
        let high = (end - w * 64).min(64) as u32;
        (w as usize, (u64::MAX << low) & (u64::MAX >> (64 - high)))
    })
}

/// The LBA of a physical slot (zone × zone capacity + offset) on a device whose zones hold
/// `zone_blocks` writable blocks of `zone_size_blocks`.
fn slot_to_lba(slot: u32, zone_blocks: u64, zone_size_blocks: u64) -> Lba {
    Lba(slot as u64 / zone_blocks * zone_size_blocks + slot as u64 % zone_blocks)
}

/// The host FTL: turns a zoned device into a random-write block store.
pub struct Ftl<D: ZonedDevice> {
    dev: D,
    placement: Box<dyn Placement>,
    victim: Box<dyn Victim>,
    config: FtlConfig,
    zone_blocks: u64,
    /// log2 of `zone_blocks` when it is a power of two: a slot's zone by shift, not division
    /// (the division sat on the path of every overwrite).
    zone_shift: Option<u32>,
    zone_size_blocks: u64,
    block_bytes: usize,
    /// Block key → dense id + 1.
    ids: BlockMap<u32>,
    /// Dense id → the block's state.
    blocks: Vec<BlockState>,
    /// Physical slot → dense id of the block written there (meaningful where `live` says so).
    rev: Vec<u32>,
    /// One bit per physical slot: set while the slot holds its block's current copy. GC reads
    /// it to visit only the victim's live slots: fetching the scattered block record of every
    /// slot to learn that most were overwritten was where its time went.
    live: Vec<u64>,
    /// The victim's live blocks during a GC (kept for its capacity).
    gc_ids: Vec<u32>,
    zones: Vec<ZoneInfo>,
    /// Free zones (fewest resets first) and the open zone of each class.
    pool: ZonePool,
    reserve_zones: usize,
    usable_zones: u64,
    now: u64,
    now_us: u64,
    written_total: u64,
    invalid_total: u64,
    sealed_invalid: u64,
    stats: FtlStats,
    zero: Vec<u8>,
    /// Per class, where its next block goes.
    cursors: Vec<Cursor>,
    /// Zeros for one batched append when appends are deferred ([`Ftl::defer_appends`]): a
    /// class's open zone may then be up to [`DEFERRED_MAX`] blocks ahead of the device.
    deferred_zeros: Option<Vec<u8>>,
    observer: Option<Box<dyn FtlObserver<D>>>,
}

/// Blocks an open zone may be ahead of the device when appends are deferred.
const DEFERRED_MAX: u32 = 64;

/// Where a class appends: its open zone and next slot, and how far the device has heard
/// (deferred appends). An append takes the fast path (bookkeeping only) while `next + 1 <
/// fast_end`; any other append fills the zone, completes a deferred batch, or must reach the
/// device now (appends not deferred: `fast_end` stays 0), and takes [`Ftl::append_slow`].
#[derive(Copy, Clone, Debug, Default)]
struct Cursor {
    zone: u32,
    next: u32,
    /// The first slot the device has not been sent (deferred appends).
    sent: u32,
    fast_end: u32,
}

impl<D: ZonedDevice> Ftl<D> {
    /// An FTL over a device whose sequential zones are all empty. `expected_blocks` sizes the
    /// block map (a hint; it grows if exceeded).
    pub fn new(dev: D, placement: Box<dyn Placement>, victim: Box<dyn Victim>, config: FtlConfig, expected_blocks: usize) -> Result<Ftl<D>, FtlError> {
        Ftl::build(dev, placement, victim, config, expected_blocks, expected_blocks, false)
    }

    /// An FTL written by dense block ids ([`Ftl::write_dense`]) instead of keys: the caller
    /// numbered the blocks 0, 1, 2, ... in order of first write, so the FTL keeps no key map,
    /// only `blocks` records.
    pub fn new_dense(dev: D, placement: Box<dyn Placement>, victim: Box<dyn Victim>, config: FtlConfig, blocks: usize) -> Result<Ftl<D>, FtlError> {
        Ftl::build(dev, placement, victim, config, 0, blocks, false)
    }

    fn build(
        mut dev: D,
        placement: Box<dyn Placement>,
        victim: Box<dyn Victim>,
        config: FtlConfig,
        map_entries: usize,
        expected_blocks: usize,
        restoring: bool,
    ) -> Result<Ftl<D>, FtlError> {
        if !(0.0..1.0).contains(&config.gc_threshold) {
            return Err(FtlError::Config(format!("GC threshold {} is not in [0, 1)", config.gc_threshold)));
        }
        let g = *dev.geometry();
        let classes = placement.classes();
        let allowed = g.open_zones_max.unwrap_or(u32::MAX).min(g.active_zones_max.unwrap_or(u32::MAX));
        if classes as u64 > allowed as u64 {
            return Err(FtlError::TooManyClasses { policy: placement.name(), needed: classes, allowed });
        }
        let slots = g.zone_count as u64 * g.zone_capacity_blocks;
        if slots > PHYSICAL_BLOCKS_MAX {
            return Err(FtlError::Config(format!("{slots} physical blocks exceed the FTL's 2^32 - 1 slots")));
        }
        let mut zones = vec![ZoneInfo::default(); g.zone_count as usize];
        let mut free = Vec::new();
        let mut sealed = 0u64;
        for z in dev.report_all(zonekit_device::ZoneFilter::All)? {
            if z.zone_type != ZoneType::SequentialWriteRequired {
                continue;
            }
            let resets = dev.stats().resets_per_zone[z.id.0 as usize];
            zones[z.id.0 as usize].resets = resets;
            match z.state {
                zonekit_device::ZoneState::Empty => free.push((z.id.0, resets)),
                // Only a restore passes sealed zones in (it finished every active one).
                zonekit_device::ZoneState::Full if restoring => {
                    zones[z.id.0 as usize] = ZoneInfo { state: ZoneUse::Full, written: g.zone_capacity_blocks, resets, ..ZoneInfo::default() };
                    sealed += 1;
                }
                state => return Err(FtlError::Config(format!("zone {} is {state} (the FTL needs every sequential zone empty; reset the device)", z.id))),
            }
        }
        let usable_zones = free.len() as u64 + sealed;
        // One GC may need a fresh zone for every class it writes to.
        let reserve_zones = classes + 1;
        if usable_zones < (classes + reserve_zones + 1) as u64 {
            return Err(FtlError::Config(format!("{usable_zones} sequential zones are too few for {classes} open zones plus {reserve_zones} in reserve")));
        }
        Ok(Ftl {
            placement,
            victim,
            config,
            zone_blocks: g.zone_capacity_blocks,
            zone_shift: g.zone_capacity_blocks.is_power_of_two().then(|| g.zone_capacity_blocks.trailing_zeros()),
            zone_size_blocks: g.zone_size_blocks,
            block_bytes: g.block_size_bytes as usize,
            ids: BlockMap::with_capacity(map_entries),
            blocks: {
                let v = Vec::with_capacity(expected_blocks);
                advise_huge_pages(&v);
                v
            },
            rev: huge_vec(slots as usize, UNMAPPED),
            live: vec![0; (slots as usize).div_ceil(64)],
            gc_ids: Vec::new(),
            zones,
            pool: ZonePool::new(classes, free),
            reserve_zones,
            usable_zones,
            now: 0,
            now_us: 0,
            // A restored device's sealed zones are all garbage until the mapping is adopted.
            written_total: sealed * g.zone_capacity_blocks,
            invalid_total: sealed * g.zone_capacity_blocks,
            sealed_invalid: sealed * g.zone_capacity_blocks,
            stats: FtlStats {
                user_blocks: 0,
                gc_blocks: 0,
                gc_count: 0,
                reads: 0,
                reads_unmapped: 0,
                user_blocks_by_class: vec![0; classes],
                gc_blocks_by_class: vec![0; classes],
                reclaimed_gp_by_class: vec![[0; 101]; classes],
            },
            zero: vec![0; g.block_size_bytes as usize],
            cursors: vec![Cursor::default(); classes],
            deferred_zeros: None,
            observer: None,
            dev,
        })
    }

    /// Takes the blocks of a restore's mapping into the sealed zones.
    fn adopt(&mut self, mapping: &[(u64, Lba)]) -> Result<(), FtlError> {
        for &(key, lba) in mapping {
            let (zone, offset) = ((lba.0 / self.zone_size_blocks) as usize, lba.0 % self.zone_size_blocks);
            if zone >= self.zones.len() || offset >= self.zone_blocks || self.zones[zone].state != ZoneUse::Full {
                return Err(FtlError::Config(format!("the mapping puts block {key} at LBA {}, where nothing was written", lba.0)));
            }
            let slot = (zone as u64 * self.zone_blocks + offset) as u32;
            if self.is_live(slot) {
                return Err(FtlError::Config(format!("the mapping puts two blocks at LBA {}", lba.0)));
            }
            let (id, inserted) = self.resolve_or_insert(key)?;
            if !inserted {
                return Err(FtlError::Config(format!("the mapping names block {key} twice")));
            }
            self.blocks[id as usize] = BlockState { slot, last_write: ADOPTED, policy: 0 };
            self.rev[slot as usize] = id;
            self.set_live(slot);
            self.zones[zone].valid += 1;
            self.invalid_total -= 1;
            self.sealed_invalid -= 1;
        }
        Ok(())
    }

    /// Attaches an observer told of every placement and asked before every reset.
    pub fn set_observer(&mut self, observer: Box<dyn FtlObserver<D>>) {
        self.observer = Some(observer);
    }

    /// An FTL over a device it wrote before, from the durable `mapping` (key → where the
    /// block lives; the order sets the dense ids). Every non-empty sequential zone is taken as
    /// sealed (a partly written one is finished on the device first); blocks not in the
    /// mapping are garbage for GC. Policies restart their per-block state.
    pub fn restore(mut dev: D, placement: Box<dyn Placement>, victim: Box<dyn Victim>, config: FtlConfig, mapping: &[(u64, Lba)]) -> Result<Ftl<D>, FtlError> {
        // Seal what was written, so the new FTL only ever appends to zones it opened itself.
        for z in dev.report_all(zonekit_device::ZoneFilter::All)? {
            if z.zone_type == ZoneType::SequentialWriteRequired && z.state.is_active() {
                dev.finish_zone(z.id)?;
            }
        }
        let mut ftl = Ftl::build(dev, placement, victim, config, mapping.len(), mapping.len(), true)?;
        ftl.adopt(mapping)?;
        Ok(ftl)
    }

    pub fn stats(&self) -> &FtlStats {
        &self.stats
    }

    pub fn device(&self) -> &D {
        &self.dev
    }

    /// The device, to reach what the FTL does not use (a wrapper's hidden zones, such as a
    /// volume's journal). Changing the FTL's own zones through it breaks the FTL.
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    /// The device back (after [`Ftl::sync_device`]): to restore over it, or to inspect it.
    pub fn into_device(mut self) -> Result<D, FtlError> {
        self.sync_device()?;
        Ok(self.dev)
    }

    pub fn zones(&self) -> &[ZoneInfo] {
        &self.zones
    }

    pub fn placement(&self) -> &dyn Placement {
        &*self.placement
    }

    pub fn live_blocks(&self) -> u64 {
        self.blocks.len() as u64
    }

    /// Bytes of per-block FTL state (key map, block record, reverse map, extra policy state)
    /// per live block.
    pub fn bytes_per_block(&self) -> f64 {
        let live = self.blocks.len().max(1) as f64;
        let per_id = (std::mem::size_of::<BlockState>() + self.placement.bytes_per_block()) as f64;
        self.ids.memory_bytes() as f64 / live + per_id + (self.rev.len() * 4 + self.live.len() * 8) as f64 / live
    }

    /// Starts fetching the map entry of a block that will be written soon (replays call this
    /// a few records ahead to hide memory latency).
    #[inline]
    pub fn prefetch_key(&self, key: u64) {
        self.ids.prefetch(key);
    }

    /// Resolves a block that will be written soon and starts fetching its state: returns its
    /// dense id for [`Ftl::write_resolved`] (`None` if not written yet). Best after
    /// [`Ftl::prefetch_key`] of the same key had time to complete.
    #[inline]
    pub fn prefetch_block(&self, key: u64) -> Option<u32> {
        let id = self.ids.get(key)? - 1;
        prefetch_read(&self.blocks[id as usize]);
        Some(id)
    }

    /// The most distinct blocks a fixed-capacity FTL holds: its usable zones less GC's reserve
    /// and one open zone per class.
    pub fn capacity_blocks(&self) -> u64 {
        (self.usable_zones - self.reserve_zones as u64 - self.pool.classes() as u64) * self.zone_blocks
    }

    /// A user write of block `key` at trace time `now_us`. `next_write` is the logical time of
    /// the block's next write, for the oracles ([`NEVER`] otherwise). `data` is stored when the
    /// FTL keeps data (else ignored; `None` writes zeros).
    pub fn write(&mut self, key: u64, data: Option<&[u8]>, now_us: u64, next_write: u64) -> Result<(), FtlError> {
        self.write_resolved(key, None, data, now_us, next_write)
    }

    /// [`Ftl::write`] with the block's dense id already known from [`Ftl::prefetch_block`]
    /// (`None`: look it up).
    pub fn write_resolved(&mut self, key: u64, known: Option<u32>, data: Option<&[u8]>, now_us: u64, next_write: u64) -> Result<(), FtlError> {
        self.begin_user_write(now_us)?;
        let (id, inserted) = match known {
            Some(id) => (id, false),
            None => self.resolve_or_insert(key)?,
        };
        self.write_block(id, inserted, data, now_us, next_write)
    }

    /// A user write of the block with dense id `id` (an FTL from [`Ftl::new_dense`]): ids come
    /// in order of first write, so an id one past the known blocks is a new block.
    #[inline]
    pub fn write_dense(&mut self, id: u32, now_us: u64, next_write: u64) -> Result<(), FtlError> {
        self.begin_user_write(now_us)?;
        let known = self.blocks.len() as u64;
        let inserted = match (id as u64).cmp(&known) {
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => {
                self.push_block()?;
                true
            }
            std::cmp::Ordering::Greater => {
                return Err(FtlError::Config(format!("block id {id} skips ahead of the {known} blocks written so far (ids must come in order of first write)")))
            }
        };
        self.write_block(id, inserted, None, now_us, next_write)
    }

    /// What every user write does first: the clock, and room for GC to complete.
    #[inline]
    fn begin_user_write(&mut self, now_us: u64) -> Result<(), FtlError> {
        if self.now >= u32::MAX as u64 {
            return Err(FtlError::Config("the FTL replays at most 2^32 - 1 user block writes".into()));
        }
        self.now_us = now_us;
        if self.config.capacity == CapacityMode::Fixed {
            self.ensure_free_zones()?;
        }
        Ok(())
    }

    /// Starts fetching the state of block `id` ahead of its [`Ftl::write_dense`].
    #[inline]
    pub fn prefetch_id(&self, id: u32) {
        if let Some(b) = self.blocks.get(id as usize) {
            prefetch_read(b);
        }
    }

    /// Starts fetching what the write of block `id` will touch where its current copy lives
    /// (its live bit), once its record (from [`Ftl::prefetch_id`]) is in.
    #[inline]
    pub fn prefetch_slot(&self, id: u32) {
        if let Some(b) = self.blocks.get(id as usize) {
            if b.slot != UNMAPPED {
                prefetch_read(&self.live[live_bit(b.slot).0]);
            }
        }
    }

    // Inlined into its two callers: a call per user write was ~5 % of a metadata replay.
    #[inline(always)]
    fn write_block(&mut self, id: u32, inserted: bool, data: Option<&[u8]>, now_us: u64, next_write: u64) -> Result<(), FtlError> {
        let state = self.blocks[id as usize];
        // A block whose first write failed after its id was made has no copy to invalidate.
        let last = if inserted || state.slot == UNMAPPED {
            None
        } else {
            self.invalidate(state.slot);
            (state.last_write != ADOPTED).then_some(state.last_write as u64)
        };
        let ctx = BlockCtx { id, now: self.now, now_us, last_user_write: last, next_write, from_class: 0 };
        let mut word = state.policy;
        let class = self.placement.user_write(&ctx, &mut word);
        let new_slot = self.append(class, id, data)?;
        self.blocks[id as usize] = BlockState { slot: new_slot, last_write: self.now as u32, policy: word };
        if let Some(observer) = &mut self.observer {
            observer.placed(id, slot_to_lba(new_slot, self.zone_blocks, self.zone_size_blocks), false);
        }
        self.stats.user_blocks += 1;
        self.stats.user_blocks_by_class[class] += 1;
        self.now += 1;
        self.collect()
    }

    fn resolve_or_insert(&mut self, key: u64) -> Result<(u32, bool), FtlError> {
        // A new block past the capacity is refused before its key is mapped: a key left mapped
        // to no copy was taken by its next write for a written block (an index out of bounds
        // in `invalidate`, which a served volume then hit on every write).
        if self.is_full() && self.ids.get(key).is_none() {
            return Err(self.does_not_fit());
        }
        let (slot, inserted) = self.ids.entry(key);
        if !inserted {
            return Ok((*slot - 1, false));
        }
        let id = self.blocks.len() as u32;
        *slot = id + 1;
        self.push_block()?;
        Ok((id, true))
    }

    /// No new block fits: the blocks known fill the fixed capacity.
    fn is_full(&self) -> bool {
        self.config.capacity == CapacityMode::Fixed && self.blocks.len() as u64 >= self.capacity_blocks()
    }

    fn does_not_fit(&self) -> FtlError {
        FtlError::DoesNotFit { live_blocks: self.blocks.len() as u64 + 1, capacity_blocks: self.capacity_blocks(), reserve_zones: self.reserve_zones as u64 }
    }

    fn push_block(&mut self) -> Result<(), FtlError> {
        if self.is_full() {
            return Err(self.does_not_fit());
        }
        self.blocks.push(BlockState { slot: UNMAPPED, last_write: 0, policy: 0 });
        Ok(())
    }

    /// Reads block `key` into `buf`; `false` (and zeros) if it was never written.
    pub fn read(&mut self, key: u64, buf: &mut [u8]) -> Result<bool, FtlError> {
        self.sync_device()?;
        self.stats.reads += 1;
        let Some(id) = self.ids.get(key) else {
            self.stats.reads_unmapped += 1;
            buf.fill(0);
            return Ok(false);
        };
        let slot = self.blocks[(id - 1) as usize].slot;
        if slot == UNMAPPED {
            // Its first write failed: nothing was written.
            self.stats.reads_unmapped += 1;
            buf.fill(0);
            return Ok(false);
        }
        self.dev.read(self.slot_lba(slot), buf)?;
        Ok(true)
    }

    fn slot_lba(&self, slot: u32) -> Lba {
        slot_to_lba(slot, self.zone_blocks, self.zone_size_blocks)
    }

    /// The slots of zone `zone`.
    fn zone_slots(&self, zone: u32) -> std::ops::Range<u32> {
        let start = zone as u64 * self.zone_blocks;
        start as u32..(start + self.zone_blocks) as u32
    }

    #[inline]
    fn zone_of(&self, slot: u32) -> usize {
        match self.zone_shift {
            Some(shift) => (slot >> shift) as usize,
            None => (slot as u64 / self.zone_blocks) as usize,
        }
    }

    #[inline]
    fn is_live(&self, slot: u32) -> bool {
        let (word, bit) = live_bit(slot);
        self.live[word] & bit != 0
    }

    #[inline]
    fn set_live(&mut self, slot: u32) {
        let (word, bit) = live_bit(slot);
        self.live[word] |= bit;
    }

    #[inline]
    fn invalidate(&mut self, slot: u32) {
        let (word, bit) = live_bit(slot);
        self.live[word] &= !bit;
        let zone = self.zone_of(slot);
        let z = &mut self.zones[zone];
        debug_assert!(z.valid > 0);
        z.valid -= 1;
        z.last_invalidate = self.now;
        self.invalid_total += 1;
        // Not a branch: whether the old copy's zone is sealed is data (see SepBIT's `user_write`).
        self.sealed_invalid += (z.state == ZoneUse::Full) as u64;
    }

    fn open_zone(&mut self, class: usize) -> Result<u32, FtlError> {
        let Some(z) = self.pool.open(class) else {
            return Err(FtlError::NoSpace { free_zones: 0, live_blocks: self.blocks.len() as u64 });
        };
        let info = &mut self.zones[z as usize];
        *info = ZoneInfo { state: ZoneUse::Open, class: class as u8, opened_at: self.now, resets: info.resets, ..ZoneInfo::default() };
        let base = self.zone_slots(z).start;
        self.cursors[class] = Cursor { zone: z, next: base, sent: base, fast_end: 0 };
        Ok(z)
    }

    /// Appends block `id` to the open zone of `class` (opening one if needed) and returns its
    /// slot.
    #[inline]
    fn append(&mut self, class: usize, id: u32, data: Option<&[u8]>) -> Result<u32, FtlError> {
        let c = &mut self.cursors[class];
        if c.next + 1 >= c.fast_end {
            return self.append_slow(class, id, data);
        }
        let slot = c.next;
        c.next += 1;
        let zone = c.zone;
        self.place(zone, slot, id);
        Ok(slot)
    }

    /// An append off the fast path: the class has no open zone, the device hears of every
    /// append, the zone fills, or a deferred batch is complete.
    #[cold]
    #[inline(never)]
    fn append_slow(&mut self, class: usize, id: u32, data: Option<&[u8]>) -> Result<u32, FtlError> {
        if self.pool.current(class).is_none() {
            self.open_zone(class)?;
        }
        let Cursor { zone, next, .. } = self.cursors[class];
        let slots = self.zone_slots(zone);
        let slot = if self.deferred_zeros.is_some() {
            next
        } else {
            let payload = if self.config.store_data { data.unwrap_or(&self.zero) } else { &self.zero };
            let lba = self.dev.append(ZoneId(zone), payload)?;
            slots.start + (lba.0 - zone as u64 * self.zone_size_blocks) as u32
        };
        self.cursors[class].next = slot + 1;
        self.place(zone, slot, id);
        let full = slot + 1 == slots.end;
        // The FTL keeps the write pointer; the device hears of the blocks in batches.
        let c = self.cursors[class];
        if self.deferred_zeros.is_some() && (full || c.next - c.sent == DEFERRED_MAX) {
            self.send_deferred(class)?;
        }
        if full {
            let info = &mut self.zones[zone as usize];
            info.state = ZoneUse::Full;
            info.full_at = self.now;
            self.sealed_invalid += info.written - info.valid;
            self.pool.close(class);
            self.cursors[class] = Cursor::default();
            self.placement.on_zone_full(class);
        }
        Ok(slot)
    }

    /// The books of block `id` appended at `slot` of `zone`.
    #[inline]
    fn place(&mut self, zone: u32, slot: u32, id: u32) {
        self.rev[slot as usize] = id;
        self.set_live(slot);
        let info = &mut self.zones[zone as usize];
        info.written += 1;
        info.valid += 1;
        info.last_append = self.now;
        info.last_append_us = self.now_us;
        self.written_total += 1;
    }

    /// Lets the FTL run ahead of the device by up to 64 blocks per open zone and send them in
    /// one append: the device sees the same blocks in the same order, in fewer commands. Only
    /// for a device whose data and command sizes do not matter (metadata only, no timing model);
    /// refused when the FTL keeps data. [`Ftl::sync_device`] catches the device up (reads,
    /// [`Ftl::check_invariants`] and a zone filling up do it themselves).
    pub fn defer_appends(&mut self) -> Result<(), FtlError> {
        if self.config.store_data {
            return Err(FtlError::Config("deferred appends would leave data behind; the FTL keeps data".into()));
        }
        self.deferred_zeros = Some(vec![0; self.block_bytes * DEFERRED_MAX as usize]);
        Ok(())
    }

    /// Sends every deferred append to the device.
    pub fn sync_device(&mut self) -> Result<(), FtlError> {
        for class in 0..self.pool.classes() {
            if self.pool.current(class).is_some() {
                self.send_deferred(class)?;
            }
        }
        Ok(())
    }

    /// Sends the blocks of `class`'s open zone the device has not heard of.
    fn send_deferred(&mut self, class: usize) -> Result<(), FtlError> {
        let Some(zeros) = &self.deferred_zeros else { return Ok(()) };
        let zone_end = self.zone_slots(self.cursors[class].zone).end;
        let c = &mut self.cursors[class];
        let n = (c.next - c.sent) as usize;
        c.sent = c.next;
        c.fast_end = c.next.saturating_add(DEFERRED_MAX).min(zone_end);
        if n > 0 {
            self.dev.append(ZoneId(c.zone), &zeros[..n * self.block_bytes])?;
        }
        Ok(())
    }

    /// Runs GC as the capacity mode asks after a user write.
    #[inline(always)]
    fn collect(&mut self) -> Result<(), FtlError> {
        if self.gc_due() {
            self.collect_due()
        } else {
            Ok(())
        }
    }

    /// Whether the garbage calls for GC, as the capacity mode and trigger have it (asked after
    /// every user write).
    #[inline(always)]
    fn gc_due(&self) -> bool {
        // Block counts stay below 2^53, so they convert exactly; through i64 the conversion is
        // one instruction (from u64 it is several).
        let exact = |blocks: u64| blocks as i64 as f64;
        let bound = self.config.gc_threshold * exact(self.written_total);
        self.written_total > 0
            && match (self.config.capacity, self.config.trigger) {
                (CapacityMode::Fixed, GcTrigger::GpAll) => exact(self.invalid_total) > bound,
                (CapacityMode::Fixed, GcTrigger::GpSealed) => exact(self.sealed_invalid) >= bound,
                // `ensure_free_zones` before each write does it all.
                (CapacityMode::Fixed, GcTrigger::FreeZones) => false,
                (CapacityMode::Unbounded, _) => exact(self.sealed_invalid) > bound,
            }
    }

    /// GC once it is due: the unbounded log reclaims one zone a user write, a fixed device
    /// reclaims until GC is no longer due (or nothing can be reclaimed).
    #[cold]
    #[inline(never)]
    fn collect_due(&mut self) -> Result<(), FtlError> {
        match self.config.capacity {
            CapacityMode::Unbounded => {
                self.gc_once(false)?;
            }
            CapacityMode::Fixed => {
                while self.gc_due() {
                    if !self.gc_once(false)? {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Keeps enough free zones that a GC can always complete.
    fn ensure_free_zones(&mut self) -> Result<(), FtlError> {
        while self.pool.free_zones() < self.reserve_zones {
            if !self.gc_once(true)? {
                return Err(FtlError::NoSpace { free_zones: self.pool.free_zones(), live_blocks: self.blocks.len() as u64 });
            }
        }
        Ok(())
    }

    /// Reclaims one zone. `forced`: free space is short, so take any zone with garbage if the
    /// victim policy declines. Returns whether a zone was reclaimed.
    ///
    /// A GC the garbage trigger asks for (not `forced`) only takes a zone whose garbage
    /// proportion is at least the threshold, as the unbounded log always has: the trigger
    /// counts garbage wherever it is, and while most of it sits in open zones (which GC cannot
    /// take) a zone with almost none would otherwise be copied whole to free a block or two,
    /// over and over (WAF 999 on a Zipf workload under `gp-all`). Only a device short of free
    /// zones takes whatever garbage there is.
    fn gc_once(&mut self, forced: bool) -> Result<bool, FtlError> {
        let unbounded = self.config.capacity == CapacityMode::Unbounded;
        let ctx = VictimCtx {
            zones: &self.zones,
            now: self.now,
            now_us: self.now_us,
            min_gp: if forced && !unbounded { 0.0 } else { self.config.gc_threshold },
            gc_threshold: self.config.gc_threshold,
            free_zones: self.pool.free_zones(),
        };
        let mut chosen = self.victim.select(&ctx);
        if chosen.is_none() && forced {
            chosen = Greedy.select(&VictimCtx { min_gp: 0.0, ..ctx });
        }
        let Some(v) = chosen else { return Ok(false) };
        let victim = self.zones[v];
        assert_eq!(victim.state, ZoneUse::Full, "victim policies pick full zones");
        let gp = victim.garbage_proportion();
        let class = victim.class as usize;
        self.stats.reclaimed_gp_by_class[class][((gp * 100.0) as usize).min(100)] += 1;
        let base = v as u64 * self.zone_blocks;
        let mut buf = if self.config.store_data { vec![0u8; self.block_bytes] } else { Vec::new() };
        let mut ids = std::mem::take(&mut self.gc_ids);
        self.live_ids(base..base + victim.written, &mut ids);
        debug_assert_eq!(ids.len() as u64, victim.valid);
        // The block records of the live blocks are scattered: fetch them AHEAD blocks early.
        const AHEAD: usize = 16;
        for &id in &ids[..AHEAD.min(ids.len())] {
            prefetch_read(&self.blocks[id as usize]);
        }
        for (i, &id) in ids.iter().enumerate() {
            if let Some(&ahead) = ids.get(i + AHEAD) {
                prefetch_read(&self.blocks[ahead as usize]);
            }
            let state = self.blocks[id as usize];
            let slot = state.slot;
            debug_assert_eq!(self.zone_of(slot), v, "a live slot of the victim holds block {id}");
            let last = if state.last_write == ADOPTED { 0 } else { state.last_write as u64 };
            let ctx = BlockCtx { id, now: self.now, now_us: self.now_us, last_user_write: Some(last), next_write: NEVER, from_class: class };
            let mut word = state.policy;
            let to = self.placement.gc_write(&ctx, &mut word);
            if self.config.store_data {
                self.dev.read(self.slot_lba(slot), &mut buf)?;
            }
            self.zones[v].valid -= 1;
            self.invalid_total += 1;
            self.sealed_invalid += 1;
            let new_slot = self.append(to, id, if self.config.store_data { Some(&buf) } else { None })?;
            self.blocks[id as usize] = BlockState { slot: new_slot, policy: word, ..state };
            if let Some(observer) = &mut self.observer {
                observer.placed(id, slot_to_lba(new_slot, self.zone_blocks, self.zone_size_blocks), true);
            }
            self.stats.gc_blocks += 1;
            self.stats.gc_blocks_by_class[to] += 1;
        }
        self.gc_ids = ids;
        self.clear_live(base..base + victim.written);
        let info = &mut self.zones[v];
        debug_assert_eq!(info.valid, 0);
        self.written_total -= info.written;
        self.invalid_total -= info.written;
        self.sealed_invalid -= info.written;
        self.placement.on_reclaim(&Reclaimed { class, opened_at: info.opened_at, full_at: info.full_at, now: self.now, garbage_proportion: gp });
        if let Some(observer) = &mut self.observer {
            observer.before_reset(&mut self.dev, ZoneId(v as u32))?;
        }
        self.dev.reset_zone(ZoneId(v as u32))?;
        let resets = info.resets + 1;
        *info = ZoneInfo { resets, ..ZoneInfo::default() };
        self.pool.release(v as u32, resets);
        self.stats.gc_count += 1;
        Ok(true)
    }

    /// The ids of the blocks live in `slots`, in slot order, into `ids` (cleared first).
    fn live_ids(&self, slots: std::ops::Range<u64>, ids: &mut Vec<u32>) {
        ids.clear();
        for (w, mask) in bitmap_words(slots) {
            let mut word = self.live[w] & mask;
            while word != 0 {
                let slot = w * 64 + word.trailing_zeros() as usize;
                ids.push(self.rev[slot]);
                word &= word - 1;
            }
        }
    }

    /// Marks every slot in `slots` dead.
    fn clear_live(&mut self, slots: std::ops::Range<u64>) {
        for (w, mask) in bitmap_words(slots) {
            self.live[w] &= !mask;
        }
    }

    /// Panics if the map, the reverse map, the zone counts and the device disagree.
    pub fn check_invariants(&mut self) {
        self.sync_device().expect("deferred appends reach the device");
        let mut valid = vec![0u64; self.zones.len()];
        for (id, slot) in self.blocks.iter().map(|b| b.slot).enumerate() {
            assert_ne!(slot, UNMAPPED, "block {id} has no address");
            assert_eq!(self.rev[slot as usize], id as u32, "reverse map of slot {slot}");
            assert!(self.is_live(slot), "block {id}'s slot {slot} is not marked live");
            let z = (slot as u64 / self.zone_blocks) as usize;
            assert_ne!(self.zones[z].state, ZoneUse::Free, "block {id} maps into free zone {z}");
            assert!(slot as u64 % self.zone_blocks < self.zones[z].written, "block {id} above the write pointer of zone {z}");
            valid[z] += 1;
        }
        let live_slots: u64 = self.live.iter().map(|w| w.count_ones() as u64).sum();
        assert_eq!(live_slots, self.blocks.len() as u64, "slots marked live");
        let (mut written, mut invalid, mut sealed) = (0u64, 0u64, 0u64);
        for (z, info) in self.zones.iter().enumerate() {
            assert_eq!(info.valid, valid[z], "valid count of zone {z}");
            written += info.written;
            invalid += info.written - info.valid;
            if info.state == ZoneUse::Full {
                sealed += info.written - info.valid;
            }
        }
        assert_eq!((written, invalid, sealed), (self.written_total, self.invalid_total, self.sealed_invalid), "garbage totals");
        for (class, open) in self.pool.open_zones().iter().enumerate() {
            if let Some(z) = open {
                let info = &self.zones[*z as usize];
                assert_eq!((info.state, info.class as usize), (ZoneUse::Open, class), "open zone of class {class}");
                let c = self.cursors[class];
                assert_eq!((c.zone, c.next as u64), (*z, *z as u64 * self.zone_blocks + info.written), "append cursor of class {class}");
            }
        }
        let device_zones = self.dev.report_all(zonekit_device::ZoneFilter::All).expect("report zones");
        for (z, info) in self.zones.iter().enumerate() {
            let d = &device_zones[z];
            match info.state {
                ZoneUse::Free => assert!(d.zone_type == ZoneType::Conventional || d.state == zonekit_device::ZoneState::Empty, "free zone {z} is {} on the device", d.state),
                ZoneUse::Open => assert_eq!(d.written_blocks(), info.written, "write pointer of open zone {z}"),
                ZoneUse::Full => assert_eq!(d.state, zonekit_device::ZoneState::Full, "full zone {z}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words and masks cover exactly the slots of the range, whatever its alignment.
    #[test]
    fn bitmap_words_cover_exactly_the_range() {
        for start in 0..200u64 {
            for end in start..start + 200 {
                let mut covered = vec![false; 400];
                for (w, mask) in bitmap_words(start..end) {
                    assert_ne!(mask, 0, "{start}..{end}: word {w} holds none of the range");
                    for bit in 0..64 {
                        if mask >> bit & 1 == 1 {
                            covered[w * 64 + bit] = true;
                        }
                    }
                }
                let expected: Vec<bool> = (0..400).map(|s| (start..end).contains(&s)).collect();
                assert_eq!(covered, expected, "{start}..{end}");
                assert_eq!(live_bit(start as u32), (start as usize / 64, 1 << (start % 64)));
            }
        }
    }
}

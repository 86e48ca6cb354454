//! DFTL (Gupta, Kim, Urgaonkar, "DFTL: a flash translation layer employing demand-based
//! selective caching of page-level address mappings", ASPLOS 2009): a page-level map that
//! lives on flash and is cached on demand in host memory.
//!
//! **What the paper does.** The whole page map is stored in *translation pages* on flash, each
//! holding a run of consecutive entries; the Global Translation Directory (GTD, in memory) says
//! where each translation page is. The Cached Mapping Table (CMT) holds the entries in use.
//! A lookup that misses reads the entry's translation page and caches the entry; when the CMT
//! is full its least recently used entry is evicted, and a dirty victim (changed since its
//! translation page was written) forces a read-modify-write of that translation page — and,
//! with the paper's *batch update*, every other dirty cached entry of the same translation
//! page goes out in that one write. Data pages and translation pages live in separate blocks.
//! GC is greedy; a translation victim's valid pages are copied and the GTD updated; a data
//! victim's valid pages are copied and their entries updated — in the CMT when cached,
//! otherwise in their translation pages, one read-modify-write per translation page touched.
//!
//! **What we model.** The flash traffic the map costs and the CMT's behaviour; the map's
//! content itself is kept whole in memory as the ground truth ([`PageMap`]: data pages are
//! owned by their logical page, translation page `t` by the tag `logical pages + t`), beside
//! `persisted`, what each entry's translation page on flash says. Invariant: an entry whose
//! flash copy is stale is a dirty cached entry. A translation page is programmed with its
//! entries encoded (8 bytes each, little-endian physical page number, all ones when unmapped),
//! so a device that keeps data holds a real map.
//!
//! Where we simplify, and why:
//! - The CMT is plain LRU (the paper's segmented LRU only changes which entry is evicted).
//! - A translation page is always written with its *current* content, so every write — an
//!   eviction's, a GC batch update, or GC relocating a translation page — persists every
//!   changed entry of that page and leaves its cached entries clean. The paper copies a
//!   relocated translation page as it is; writing the current content instead costs the same
//!   program and only persists earlier what an eviction would have written later.
//! - A lookup whose translation page was never written (no entry of it was ever persisted)
//!   is a miss without a flash read: there is nothing to read, every entry is unmapped. So
//!   is a miss whose eviction just wrote back its own translation page (it is in memory).
//! - Data and translation pages go to separate active blocks (two [`PuWriter`] streams), but
//!   a stream with no active block while no PU has an empty block programs into the other
//!   stream's active block rather than fail: then every program succeeds while any page is
//!   free, and GC needs only PM_GCL's free-page accounting. GC handles blocks holding both
//!   kinds of page.
//! - GC is greedy and one victim at a time, as in PM_GCL. Before each user page it collects
//!   until two pages are free (one for the data, one for a translation write the CMT may
//!   force) — the hard target, which the logical capacity below guarantees — and then, while
//!   the greedy victim is sure to free more pages than it programs, until some PU has an
//!   empty block: a free-block threshold of one, so that either stream can
//!   always open a block and the fallback above stays rare (a handful of pages in tens of
//!   thousands under random overwrites); without it the streams would mix whenever the
//!   empty blocks ran out. A victim's reads (its valid pages and the old versions of the
//!   translation pages it must update) come first, then a barrier, then its programs.
//! - Timing: a read miss waits for its translation read before reading the data; a write
//!   miss does not (the new data location does not depend on the old one, which is only
//!   invalidated in memory); a read-modify-write waits between its read and its program.
//!
//! **Logical capacity.** With `T = ⌈pages / entries per translation page⌉` translation
//! pages at most, the smaller of `pages − PUs × pages per block − T` (a spare block per PU,
//! as PM_GCL, and room for the live translation pages) and `(blocks − 1) × v − T`, where `v`
//! is the most valid pages a victim may hold and still free a page when each of them also
//! costs a translation write, up to `T`: `v + min(v, T) < pages per block`. The second
//! bound is what makes GC always progress: GC is needed only with fewer than two pages free,
//! so with no empty block and at most one active block; then `blocks − 1` blocks are full,
//! and the one with the fewest valid pages holds at most their average, `v`. A victim of a
//! uniformly overwritten device costs its copies plus up to `T` translation writes, so DFTL
//! keeps more spare than PM_GCL: 16% of the thesis device (13,793 logical pages) against
//! PM_GCL's 6%, and 28% of the small test device (185 pages) against 12.5%.
//!
//! **Counters.** `map_cache_hits` and `map_cache_misses` count host lookups (one per page
//! read or written); `translation_reads` and `translation_writes` count every flash read and
//! program of a translation page, whatever caused it (misses, evictions, GC).
//! `map_update_bytes` is 8 bytes for every entry a translation-page write changes on flash
//! (an eviction writing k dirty entries adds 8 × k; a relocation that changes nothing adds
//! nothing); updates of the in-memory CMT and GTD are not counted. `map_table_bytes` is the
//! host memory: 8 bytes per CMT entry (its capacity) and per GTD entry.

use std::collections::BTreeSet;

use zonekit_device::ZonedDevice;

use super::page_map::{PageMap, NONE};
use super::pm_gcl::{check_live_written, PuWriter, ENTRY_BYTES};
use super::{Ftl, MapCounters};
use crate::{Flash, OcError, OcGeometry, Result};

/// The [`PuWriter`] streams: user data (and GC copies of it), and translation pages.
const DATA: usize = 0;
const TRANSLATION: usize = 1;

pub struct Dftl {
    geometry: OcGeometry,
    /// The ground truth: data pages and translation pages (owners `logical pages + t`).
    map: PageMap,
    writer: PuWriter,
    cmt: Cmt,
    /// Where each translation page is (a physical page number), `NONE` if never written.
    gtd: Vec<u32>,
    /// Per logical page, the entry its translation page on flash holds (`NONE`: unmapped).
    persisted: Vec<u32>,
    entries_per_tpage: u32,
    counters: MapCounters,
    copy: Vec<u8>,
    /// One page: a translation page being read or built.
    tpage_buf: Vec<u8>,
}

impl Dftl {
    /// `cache_entries`: how many mapping entries the CMT holds (at least one).
    pub fn new(geometry: OcGeometry, cache_entries: u32) -> Result<Dftl> {
        geometry.validate()?;
        if cache_entries == 0 {
            return Err(OcError::Config("dftl: cache_entries=0: the mapping cache needs at least one entry".into()));
        }
        let entries_per_tpage = geometry.page_bytes / ENTRY_BYTES as u32;
        let logical = logical_pages_of(&geometry)?;
        let tpages = logical.div_ceil(entries_per_tpage as u64);
        Ok(Dftl {
            map: PageMap::new(logical, geometry.blocks(), geometry.pages_per_block),
            writer: PuWriter::new(geometry, 2),
            cmt: Cmt::new(cache_entries, logical),
            gtd: vec![NONE; tpages as usize],
            persisted: vec![NONE; logical as usize],
            entries_per_tpage,
            counters: MapCounters::default(),
            copy: Vec::new(),
            tpage_buf: Vec::new(),
            geometry,
        })
    }

    /// The translation page holding `lpn`'s entry.
    fn tpage_of(&self, lpn: u64) -> u32 {
        (lpn / self.entries_per_tpage as u64) as u32
    }

    /// The page-map owner of translation page `tpage`.
    fn tag(&self, tpage: u32) -> u32 {
        self.map.logical_pages() as u32 + tpage
    }

    /// Translation pages the logical space needs.
    pub fn translation_pages(&self) -> u32 {
        self.gtd.len() as u32
    }

    /// Programs one page on `stream`, or on the other stream when `stream` has no room (see
    /// the module doc); returns the physical page number.
    fn program<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, stream: usize, data: &[u8]) -> Result<u32> {
        let stream = if self.writer.has_room(stream) { stream } else { DATA + TRANSLATION - stream };
        let (block, page) = self.writer.program(flash, stream, data)?;
        Ok(self.map.ppn(block, page))
    }

    fn read_translation<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, ppn: u32) -> Result<()> {
        let (block, page) = self.map.split(ppn);
        self.tpage_buf.resize(flash.page_bytes(), 0);
        flash.read(block, page, &mut self.tpage_buf)?;
        self.counters.translation_reads += 1;
        Ok(())
    }

    /// Programs translation page `tpage` with the current entries of its logical pages, so
    /// every entry of it that changed — dirty cached ones (the batch update) and ones GC moved
    /// — is persisted and its cached entries are clean. `read_old`: read the previous version
    /// first (the read-modify-write); GC has read it already.
    fn write_translation<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, tpage: u32, read_old: bool) -> Result<()> {
        let old = Some(self.gtd[tpage as usize]).filter(|&p| p != NONE);
        if let (true, Some(old)) = (read_old, old) {
            self.read_translation(flash, old)?;
            flash.barrier();
        }
        let mut buf = std::mem::take(&mut self.tpage_buf);
        buf.resize(flash.page_bytes(), 0);
        buf.fill(0xff);
        let first = tpage as u64 * self.entries_per_tpage as u64;
        let end = (first + self.entries_per_tpage as u64).min(self.map.logical_pages());
        let mut changed = 0u64;
        for lpn in first..end {
            let current = self.map.lookup(lpn).unwrap_or(NONE);
            if current != NONE {
                let at = (lpn - first) as usize * ENTRY_BYTES as usize;
                buf[at..at + ENTRY_BYTES as usize].copy_from_slice(&(current as u64).to_le_bytes());
            }
            if std::mem::replace(&mut self.persisted[lpn as usize], current) != current {
                changed += 1;
            }
            self.cmt.set_dirty(lpn as u32, false);
        }
        let programmed = self.program(flash, TRANSLATION, &buf);
        self.tpage_buf = buf;
        let ppn = programmed?;
        if let Some(old) = old {
            debug_assert_eq!(self.map.owner(old), Some(self.tag(tpage)));
            self.map.release(old);
        }
        self.map.bind(self.tag(tpage), ppn);
        self.gtd[tpage as usize] = ppn;
        self.counters.translation_writes += 1;
        self.counters.record_map_entries(changed, ENTRY_BYTES);
        Ok(())
    }

    /// Brings `lpn`'s entry into the CMT (a hit only makes it the most recently used).
    /// `wait`: the caller needs the mapping before its next flash operation (a read), so a
    /// miss waits for its translation read.
    fn load<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, wait: bool) -> Result<()> {
        if self.cmt.touch(lpn as u32) {
            self.counters.map_cache_hits += 1;
            return Ok(());
        }
        self.counters.map_cache_misses += 1;
        let tpage = self.tpage_of(lpn);
        let mut in_memory = false;
        if self.cmt.is_full() {
            // GC only dirties cached entries, never evicts them, so a clean LRU entry stays
            // clean and a dirty one finds the page it needs.
            if self.cmt.lru_is_dirty() {
                self.make_room(flash, 1)?;
            }
            let (victim, dirty) = self.cmt.pop_lru().expect("a full cache has a least recently used entry");
            if dirty {
                self.write_translation(flash, self.tpage_of(victim as u64), true)?;
                // The write-back just built lpn's translation page: no need to read it.
                in_memory = self.tpage_of(victim as u64) == tpage;
            }
        }
        let at = self.gtd[tpage as usize];
        if at != NONE && !in_memory {
            self.read_translation(flash, at)?;
            if wait {
                flash.barrier();
            }
        }
        self.cmt.insert(lpn as u32);
        Ok(())
    }

    /// Collects victims until `pages` pages are free (every program then succeeds, see
    /// [`Dftl::program`]) and, while a victim is sure to free more pages than it costs, until
    /// some PU has an empty block, so that either stream can open a block and translation
    /// pages stay apart from data.
    fn make_room<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, pages: u64) -> Result<()> {
        let mut victims = 0;
        loop {
            let short = self.writer.free_pages() < pages;
            if !short && (self.writer.empty_blocks() > 0 || !self.victim_pays(flash)) {
                return Ok(());
            }
            if victims == self.geometry.blocks() {
                if !short {
                    return Ok(());
                }
                return Err(OcError::DeviceFull { ftl: "dftl", detail: format!("{victims} GC victims left fewer than {pages} free pages") });
            }
            self.collect(flash)?;
            victims += 1;
        }
    }

    /// Whether the greedy victim frees more pages than it programs, whichever block of the
    /// fewest valid pages it is: its copies, plus at most one translation page per page.
    fn victim_pays<D: ZonedDevice>(&self, flash: &Flash<D>) -> bool {
        let fewest = (0..self.geometry.blocks()).filter(|&b| flash.is_full(b)).map(|b| self.map.valid(b)).min();
        fewest.is_some_and(|valid| valid + valid.min(self.translation_pages()) < self.geometry.pages_per_block)
    }

    /// One greedy GC victim: its valid data pages are copied (entries updated in the CMT when
    /// cached, else in their translation pages), and every translation page it holds or whose
    /// uncached entries moved is written once.
    fn collect<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<()> {
        let victim = self.writer.take_victim(&self.map, "dftl")?;
        let live = self.map.live_pages(victim);
        let logical = self.map.logical_pages();
        let mut data = Vec::new();
        let mut tpages = BTreeSet::new();
        for (i, &(_, owner)) in live.iter().enumerate() {
            if (owner as u64) < logical {
                data.push((i, owner as u64));
                if !self.cmt.contains(owner) {
                    tpages.insert(self.tpage_of(owner as u64));
                }
            } else {
                tpages.insert(owner - logical as u32);
            }
        }
        let programs = (data.len() + tpages.len()) as u64;
        if programs > self.writer.free_pages() + self.geometry.pages_per_block as u64 {
            self.writer.requeue(victim);
            return Err(OcError::DeviceFull { ftl: "dftl", detail: format!("GC victim {victim} needs {programs} programs, more than the free pages it would leave") });
        }

        let page_bytes = flash.page_bytes();
        self.copy.resize(live.len() * page_bytes, 0);
        for (i, &(page, owner)) in live.iter().enumerate() {
            flash.read(victim, page, &mut self.copy[i * page_bytes..(i + 1) * page_bytes])?;
            if owner as u64 >= logical {
                self.counters.translation_reads += 1;
            }
        }
        for &t in &tpages {
            let at = self.gtd[t as usize];
            if at != NONE && self.map.split(at).0 != victim {
                self.read_translation(flash, at)?;
            }
        }
        flash.barrier();

        // The victim's translation pages are in the copy buffer now; their new versions have
        // no old one left to release.
        for &t in &tpages {
            let at = self.gtd[t as usize];
            if at != NONE && self.map.split(at).0 == victim {
                self.gtd[t as usize] = NONE;
            }
        }
        self.map.detach_block(victim);
        self.writer.recycle(flash, victim)?;
        let copy = std::mem::take(&mut self.copy);
        for &(i, lpn) in &data {
            let ppn = self.program(flash, DATA, &copy[i * page_bytes..(i + 1) * page_bytes])?;
            self.map.map(lpn, ppn);
            self.cmt.set_dirty(lpn as u32, true);
        }
        self.copy = copy;
        for t in tpages {
            self.write_translation(flash, t, false)?;
        }
        self.counters.gc_victims += 1;
        self.counters.pages_copied += live.len() as u64;
        Ok(())
    }
}

/// The logical space (see the module doc): the smaller of PM_GCL's (a spare block per PU)
/// less the translation pages, and what keeps the greedy victim's copies and translation
/// writes below the block it frees.
fn logical_pages_of(geometry: &OcGeometry) -> Result<u64> {
    let ppb = geometry.pages_per_block as u64;
    let tpages = geometry.pages().div_ceil(geometry.page_bytes as u64 / ENTRY_BYTES);
    // The most valid pages a victim may hold when it programs them and one translation
    // page for each, up to `tpages`, and still frees a page: v + min(v, tpages) < ppb.
    let victim_valid_max = if 2 * tpages < ppb { ppb - 1 - tpages } else { (ppb - 1) / 2 };
    let spare = geometry.pages().checked_sub(geometry.pus() as u64 * ppb + tpages);
    let gaining = ((geometry.blocks() as u64 - 1) * victim_valid_max).checked_sub(tpages);
    match (spare, gaining) {
        (Some(spare), Some(gaining)) if spare.min(gaining) > 0 => Ok(spare.min(gaining)),
        _ => Err(OcError::Geometry(format!(
            "{geometry}: DFTL keeps a spare block per PU and room for {tpages} translation pages and for GC's translation writes, which leaves no logical space"
        ))),
    }
}

impl Ftl for Dftl {
    fn name(&self) -> &'static str {
        "dftl"
    }

    fn logical_pages(&self) -> u64 {
        self.map.logical_pages()
    }

    fn write<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, first: u64, data: &[u8]) -> Result<()> {
        let page_bytes = flash.page_bytes();
        assert!(data.len() % page_bytes == 0, "write of {} bytes: not whole pages", data.len());
        assert!(first + (data.len() / page_bytes) as u64 <= self.logical_pages(), "write beyond the logical space");
        for (i, page) in data.chunks(page_bytes).enumerate() {
            let lpn = first + i as u64;
            // One page for the data, one for a translation write a dirty eviction forces.
            self.make_room(flash, 2)?;
            self.load(flash, lpn, false)?;
            let ppn = self.program(flash, DATA, page)?;
            self.map.map(lpn, ppn);
            self.cmt.set_dirty(lpn as u32, true);
        }
        Ok(())
    }

    fn read<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, buf: &mut [u8]) -> Result<bool> {
        self.load(flash, lpn, true)?;
        let Some(ppn) = self.map.lookup(lpn) else { return Ok(false) };
        let (block, page) = self.map.split(ppn);
        flash.read(block, page, buf)?;
        Ok(true)
    }

    /// The CMT (its capacity) and the GTD, 8 bytes an entry.
    fn map_table_bytes(&self) -> u64 {
        (self.cmt.capacity as u64 + self.gtd.len() as u64) * ENTRY_BYTES
    }

    fn counters(&self) -> &MapCounters {
        &self.counters
    }

    fn check_invariants<D: ZonedDevice>(&self, flash: &Flash<D>) -> Result<()> {
        let err = |m: String| Err(OcError::Internal(format!("dftl: {m}")));
        let logical = self.map.logical_pages();
        self.map.check(|owner| (owner as u64) < logical)?;
        self.writer.check(flash)?;
        check_live_written(&self.map, flash)?;
        for (t, &ppn) in self.gtd.iter().enumerate() {
            if ppn != NONE && self.map.owner(ppn) != Some(self.tag(t as u32)) {
                return err(format!("the GTD puts translation page {t} at physical page {ppn}, owned by {:?}", self.map.owner(ppn)));
            }
        }
        for ppn in 0..self.geometry.pages() as u32 {
            if let Some(owner) = self.map.owner(ppn).filter(|&o| o as u64 >= logical) {
                let t = (owner as u64 - logical) as usize;
                if self.gtd.get(t) != Some(&ppn) {
                    return err(format!("physical page {ppn} holds a live translation page {t} the GTD does not point to"));
                }
            }
        }
        self.cmt.check().map_err(|m| OcError::Internal(format!("dftl: CMT: {m}")))?;
        for lpn in 0..logical {
            let current = self.map.lookup(lpn).unwrap_or(NONE);
            let on_flash = self.persisted[lpn as usize];
            if on_flash != current && !self.cmt.is_dirty(lpn as u32) {
                return err(format!("logical page {lpn} maps to {current} but its translation page says {on_flash}, and no dirty cached entry covers it"));
            }
            if on_flash != NONE && self.gtd[self.tpage_of(lpn) as usize] == NONE {
                return err(format!("logical page {lpn} has a persisted entry in a translation page that was never written"));
            }
        }
        Ok(())
    }
}

/// The Cached Mapping Table: which logical pages' entries are in host memory, in LRU order,
/// and which are dirty (changed since their translation page was written). The entries'
/// values are the page map's; the CMT decides what costs flash traffic. Slots form a doubly
/// linked list from the most to the least recently used.
#[derive(Clone, Debug)]
struct Cmt {
    capacity: u32,
    /// Per logical page, its slot, or `NONE` when not cached.
    slot_of: Vec<u32>,
    slots: Vec<Slot>,
    /// Slots freed by eviction, reused before the slab grows.
    free: Vec<u32>,
    mru: u32,
    lru: u32,
}

#[derive(Copy, Clone, Debug)]
struct Slot {
    lpn: u32,
    /// Neighbours towards the most and the least recently used end (`NONE` at the ends).
    newer: u32,
    older: u32,
    dirty: bool,
}

impl Cmt {
    fn new(capacity: u32, logical_pages: u64) -> Cmt {
        Cmt { capacity, slot_of: vec![NONE; logical_pages as usize], slots: Vec::new(), free: Vec::new(), mru: NONE, lru: NONE }
    }

    fn len(&self) -> u32 {
        (self.slots.len() - self.free.len()) as u32
    }

    fn is_full(&self) -> bool {
        self.len() >= self.capacity
    }

    fn contains(&self, lpn: u32) -> bool {
        self.slot_of[lpn as usize] != NONE
    }

    fn is_dirty(&self, lpn: u32) -> bool {
        self.contains(lpn) && self.slots[self.slot_of[lpn as usize] as usize].dirty
    }

    /// Marks a cached entry dirty or clean; an entry not cached is left alone.
    fn set_dirty(&mut self, lpn: u32, dirty: bool) {
        let slot = self.slot_of[lpn as usize];
        if slot != NONE {
            self.slots[slot as usize].dirty = dirty;
        }
    }

    fn unlink(&mut self, slot: u32) {
        let Slot { newer, older, .. } = self.slots[slot as usize];
        if newer == NONE {
            self.mru = older;
        } else {
            self.slots[newer as usize].older = older;
        }
        if older == NONE {
            self.lru = newer;
        } else {
            self.slots[older as usize].newer = newer;
        }
    }

    fn push_mru(&mut self, slot: u32) {
        self.slots[slot as usize].newer = NONE;
        self.slots[slot as usize].older = self.mru;
        if self.mru == NONE {
            self.lru = slot;
        } else {
            self.slots[self.mru as usize].newer = slot;
        }
        self.mru = slot;
    }

    /// A lookup: makes a cached entry the most recently used; `false` on a miss.
    fn touch(&mut self, lpn: u32) -> bool {
        let slot = self.slot_of[lpn as usize];
        if slot == NONE {
            return false;
        }
        if slot != self.mru {
            self.unlink(slot);
            self.push_mru(slot);
        }
        true
    }

    /// Caches `lpn`'s entry, clean, as the most recently used.
    fn insert(&mut self, lpn: u32) {
        assert!(!self.is_full() && !self.contains(lpn), "insert of logical page {lpn} into a full CMT or twice");
        let entry = Slot { lpn, newer: NONE, older: NONE, dirty: false };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                self.slots.push(entry);
                self.slots.len() as u32 - 1
            }
        };
        self.slot_of[lpn as usize] = slot;
        self.push_mru(slot);
    }

    fn lru_is_dirty(&self) -> bool {
        self.lru != NONE && self.slots[self.lru as usize].dirty
    }

    /// Evicts the least recently used entry: (its logical page, whether it was dirty).
    fn pop_lru(&mut self) -> Option<(u32, bool)> {
        let slot = Some(self.lru).filter(|&s| s != NONE)?;
        self.unlink(slot);
        let Slot { lpn, dirty, .. } = self.slots[slot as usize];
        self.slot_of[lpn as usize] = NONE;
        self.free.push(slot);
        Some((lpn, dirty))
    }

    /// The list links both ways, holds every cached entry once and no more than the capacity.
    fn check(&self) -> std::result::Result<(), String> {
        if self.len() > self.capacity {
            return Err(format!("{} entries cached, capacity {}", self.len(), self.capacity));
        }
        let mut seen = vec![false; self.slots.len()];
        let (mut slot, mut newer, mut count) = (self.mru, NONE, 0u32);
        while slot != NONE {
            if std::mem::replace(&mut seen[slot as usize], true) {
                return Err(format!("slot {slot} is linked twice"));
            }
            let s = &self.slots[slot as usize];
            if s.newer != newer {
                return Err(format!("slot {slot} links back to {} instead of {newer}", s.newer));
            }
            if self.slot_of[s.lpn as usize] != slot {
                return Err(format!("slot {slot} holds logical page {}, which points to slot {}", s.lpn, self.slot_of[s.lpn as usize]));
            }
            (newer, slot, count) = (slot, s.older, count + 1);
        }
        if newer != self.lru || count != self.len() {
            return Err(format!("the list has {count} entries ending at {newer}; {} cached, LRU end {}", self.len(), self.lru));
        }
        if self.free.iter().any(|&f| seen[f as usize]) {
            return Err("a free slot is linked".into());
        }
        let mapped = self.slot_of.iter().filter(|&&s| s != NONE).count() as u32;
        if mapped != count {
            return Err(format!("{mapped} logical pages point to slots, {count} slots linked"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use zonekit_base::Rng;
    use zonekit_device::timing::TimedDevice;
    use zonekit_device::{MemDevice, StorageMode};

    use super::*;

    const SMALL: OcGeometry = OcGeometry { channels: 2, luns_per_channel: 2, blocks_per_lun: 8, pages_per_block: 8, page_bytes: 8192 };

    fn flash(geometry: OcGeometry) -> Flash<MemDevice> {
        let device = MemDevice::new(geometry.zoned(), geometry.behavior(), StorageMode::Data).unwrap();
        let timing = zonekit_device::preset::find("ocssd-thesis").unwrap().flash;
        Flash::new(TimedDevice::new(device, geometry.flash_config(&timing), 8).unwrap(), geometry).unwrap()
    }

    fn page(byte: u8) -> Vec<u8> {
        vec![byte; SMALL.page_bytes as usize]
    }

    #[test]
    fn the_logical_space_leaves_room_for_translation_pages() {
        let ftl = Dftl::new(SMALL, 16).unwrap();
        // (32 blocks − 1) × 6 − 1 translation page: a victim of 6 valid pages costs at most 7.
        assert_eq!(ftl.logical_pages(), 185);
        assert_eq!(ftl.translation_pages(), 1);
        assert_eq!(ftl.map_table_bytes(), (16 + 1) * 8);
        let thesis = Dftl::new(OcGeometry::THESIS, 2048).unwrap();
        assert_eq!(thesis.logical_pages(), 511 * (32 - 1 - 4) - 4);
        assert_eq!(thesis.translation_pages(), 4);
    }

    #[test]
    fn bad_configurations_are_refused() {
        let msg = Dftl::new(SMALL, 0).err().unwrap().to_string();
        assert!(msg.contains("cache_entries=0"), "{msg}");
        for tiny in [OcGeometry { blocks_per_lun: 1, ..SMALL }, OcGeometry { pages_per_block: 2, ..SMALL }] {
            let msg = Dftl::new(tiny, 16).err().unwrap().to_string();
            assert!(msg.contains("no logical space"), "{tiny}: {msg}");
        }
    }

    #[test]
    fn a_large_cache_never_touches_translation_pages() {
        let mut flash = flash(SMALL);
        let mut ftl = Dftl::new(SMALL, 1024).unwrap();
        for lpn in 0..32 {
            ftl.write(&mut flash, lpn, &page(lpn as u8)).unwrap();
        }
        for lpn in 0..32 {
            let mut buf = page(0);
            assert!(ftl.read(&mut flash, lpn, &mut buf).unwrap());
            assert_eq!(buf, page(lpn as u8));
        }
        let c = ftl.counters();
        assert_eq!((c.map_cache_misses, c.map_cache_hits), (32, 32));
        assert_eq!((c.translation_reads, c.translation_writes, c.map_update_bytes), (0, 0, 0));
        ftl.check_invariants(&flash).unwrap();
    }

    #[test]
    fn evicting_a_dirty_entry_writes_back_its_whole_translation_page() {
        let mut flash = flash(SMALL);
        let mut ftl = Dftl::new(SMALL, 4).unwrap();
        for lpn in 0..4 {
            ftl.write(&mut flash, lpn, &page(1)).unwrap();
        }
        assert_eq!(ftl.counters().translation_writes, 0);
        // Page 4 evicts page 0, dirty: one translation write persists all four entries (the
        // page was never written, so nothing is read), and page 4's entry comes from the page
        // just built, not from flash.
        ftl.write(&mut flash, 4, &page(1)).unwrap();
        assert_eq!(ftl.counters().translation_writes, 1);
        assert_eq!(ftl.counters().translation_reads, 0);
        assert_eq!(ftl.counters().map_update_bytes, 4 * ENTRY_BYTES);
        assert!(!ftl.cmt.is_dirty(1) && !ftl.cmt.is_dirty(3) && ftl.cmt.is_dirty(4));
        // Page 5 evicts page 1, now clean: no write, and the miss reads the translation page.
        ftl.write(&mut flash, 5, &page(1)).unwrap();
        assert_eq!(ftl.counters().translation_writes, 1);
        assert_eq!(ftl.counters().translation_reads, 1);
        // A read miss of page 0 evicts clean page 2 and reads the translation page again.
        let mut buf = page(0);
        assert!(ftl.read(&mut flash, 0, &mut buf).unwrap());
        assert_eq!(buf, page(1));
        assert_eq!(ftl.counters().translation_reads, 2);
        ftl.check_invariants(&flash).unwrap();
    }

    #[test]
    fn a_write_back_reads_the_old_translation_page_first() {
        let mut flash = flash(SMALL);
        let mut ftl = Dftl::new(SMALL, 2).unwrap();
        for lpn in 0..4 {
            ftl.write(&mut flash, lpn, &page(1)).unwrap();
        }
        // Cached now: 2 (dirty) and 3 (dirty). Page 4 evicts page 2: the translation page
        // exists, so the write-back reads it, then programs it with pages 2 and 3 persisted.
        let before = *ftl.counters();
        ftl.write(&mut flash, 4, &page(2)).unwrap();
        let after = *ftl.counters();
        assert_eq!(after.translation_writes - before.translation_writes, 1);
        assert_eq!(after.translation_reads - before.translation_reads, 1, "the old version is read, page 4's entry is not");
        assert_eq!(after.map_update_bytes - before.map_update_bytes, 2 * ENTRY_BYTES);
        assert_eq!(ftl.counters().map_cache_hits, 0);
        ftl.check_invariants(&flash).unwrap();

        // The translation page on flash holds the persisted entries.
        let (block, at) = ftl.map.split(ftl.gtd[0]);
        let mut raw = page(0);
        flash.read(block, at, &mut raw).unwrap();
        let entry = |lpn: usize| u64::from_le_bytes(raw[lpn * 8..lpn * 8 + 8].try_into().unwrap());
        for lpn in 0..4 {
            assert_eq!(entry(lpn), ftl.map.lookup(lpn as u64).unwrap() as u64);
        }
        assert_eq!(entry(4), u64::MAX, "page 4's entry is still only cached");
    }

    #[test]
    fn random_overwrites_collect_data_and_translation_blocks() {
        let mut flash = flash(SMALL);
        let mut ftl = Dftl::new(SMALL, 8).unwrap();
        let logical = ftl.logical_pages();
        let mut model = vec![0u8; logical as usize];
        let mut rng = Rng::new(7);
        for step in 0..3000 {
            let lpn = rng.below(logical);
            if rng.chance(0.7) {
                let byte = rng.below(255) as u8 + 1;
                ftl.write(&mut flash, lpn, &page(byte)).unwrap();
                model[lpn as usize] = byte;
            } else {
                let mut buf = page(0);
                let written = ftl.read(&mut flash, lpn, &mut buf).unwrap();
                assert_eq!(written, model[lpn as usize] != 0, "step {step}");
                if written {
                    assert_eq!(buf, page(model[lpn as usize]), "step {step}");
                }
            }
            ftl.check_invariants(&flash).unwrap_or_else(|e| panic!("step {step}: {e}"));
        }
        let c = ftl.counters();
        assert!(c.gc_victims > 0 && c.pages_copied > 0, "{c:?}");
        assert!(c.translation_writes > 0 && c.translation_reads > 0 && c.map_cache_misses > c.map_cache_hits, "{c:?}");
        assert_eq!(c.map_update_bytes % ENTRY_BYTES, 0);
    }
}

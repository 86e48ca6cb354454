//! FAST (Lee, Park, Chung, Lee, Park, Song, "A log buffer-based flash translation layer using
//! fully-associative sector translation", ACM TECS 6(3), 2007): block-mapped data blocks and
//! a few page-mapped log blocks shared by every logical block.
//!
//! **What the paper does.** Logical block `lbn` (= page / pages per block) maps to one data
//! block, page offsets preserved. Updates go to log blocks: one *sequential-write* (SW) log,
//! which takes a run of updates that starts at offset 0 of one logical block, and the
//! *random-write* (RW) logs, shared fully associatively (any update of any logical block may
//! land in any RW log) and found through a page map over the log pages. Merging the SW log is
//! cheap when it holds its block in order: a *switch* (the SW log becomes the data block) when
//! it is full, a *partial merge* (copy the missing tail in, then switch) when it holds a prefix.
//! When the RW logs are full, the oldest is the victim: every logical block with a valid page
//! in it is *full merged* (a new data block gets the newest copy of each page from the data
//! block and the logs), then the victim is erased and reused.
//!
//! **Our rules, per logical page written at (lbn, off):**
//! - lbn has no data block: allocate one and program page `off` (earlier pages are padded).
//! - page `off` of the data block is at or beyond its write pointer (never written): write it
//!   in place.
//! - otherwise it is an update. `off == 0`: merge the SW log if one is open (switch, partial
//!   or full merge), then open a new SW log for lbn. The SW log belongs to lbn and `off` is its
//!   next page: append. Anything else: append to the newest RW log; when all RW logs are full,
//!   the oldest is the victim (full merges, erase, reuse as the newest).
//!
//! Where we differ, and why:
//! - The mapping unit is a flash page, not a sector ([`crate::Ssd`] does read-modify-write of
//!   partial pages for every FTL).
//! - One page map ([`PageMap`]) tracks the newest copy of every logical page, in its data
//!   block or a log; the data-block part of it is implied by the block map (offsets are
//!   preserved), so the host memory charged is the block map plus the log-page map. Any
//!   write supersedes the older copy wherever it is, so log copies are invalidated exactly.
//! - A non-sequential update of the SW log's own block goes to an RW log; the SW log then
//!   holds a superseded page, and its merge is a full merge (the SW log is a valid prefix only
//!   while none of its pages was superseded). A partial merge copies each missing page from
//!   its newest copy, which may be in an RW log rather than the data block.
//! - A full merge of the SW log's block (from an RW victim) leaves the SW log without a valid
//!   page; it is erased and freed at once.
//! - Blocks come from per-PU FIFO queues of empty blocks, round-robin over PUs ([`Queues`]);
//!   a freed block is erased and queued at the tail of its PU. An RW victim stays on its PU.
//!
//! **Logical capacity.** `blocks − log_blocks − 1` data blocks. The spare block is enough: a
//! full merge takes one free block before it frees the old data block, and it runs with at
//! most every data block and every log block held; opening a log or a first data block finds
//! at least two free blocks (the SW log was just merged, fewer than `log_blocks − 1` RW logs
//! are open, or the logical block had no data block).
//!
//! **Counters.** `switch_merges`, `partial_merges`, `full_merges` (one per logical block
//! merged), `pages_copied` (by partial and full merges), `gc_victims` (RW logs collected).
//! `map_update_bytes`: 8 bytes per data-block map change (a first data block, a switch, a
//! partial or a full merge; counted in `map_entries_updated`) and 8 per log-page map entry
//! written (a page appended to a log; `log_entries_updated`). `logs_opened` counts SW logs
//! opened and RW logs opened or reused after a victim's merges; FAST finds its logs through
//! the log-page map, with no log table, so `log_open_bytes` stays 0.
//! `map_table_bytes`: 8 bytes per data block in the block map and per log page.

use std::collections::VecDeque;

use zonekit_device::ZonedDevice;

use super::page_map::{PageMap, NONE};
use super::pm_gcl::{check_live_written, ENTRY_BYTES};
use super::{Ftl, MapCounters};
use crate::alloc::Queues;
use crate::{Flash, OcError, OcGeometry, Result};

/// Free blocks beyond the data and log blocks (see the module doc).
pub const SPARE_BLOCKS: u32 = 1;

/// The open sequential-write log: `block` holds pages `0..written` of logical block `lbn`.
#[derive(Copy, Clone, Debug)]
struct SwLog {
    block: u32,
    lbn: u32,
}

pub struct Fast {
    geometry: OcGeometry,
    /// The newest copy of every logical page: in its data block or in a log.
    map: PageMap,
    /// Per logical block, its data block (`NONE` until first written).
    data_blocks: Vec<u32>,
    sw: Option<SwLog>,
    /// Open RW logs, oldest first; only the newest may have room.
    rw: VecDeque<u32>,
    log_blocks: u32,
    /// Empty blocks per PU (the used queues stay empty: no block is collected greedily).
    free: Queues,
    counters: MapCounters,
    copy: Vec<u8>,
}

impl Fast {
    /// `log_blocks`: one SW log and `log_blocks − 1` RW logs.
    pub fn new(geometry: OcGeometry, log_blocks: u32) -> Result<Fast> {
        geometry.validate()?;
        if log_blocks < 2 {
            return Err(OcError::Config(format!("fast: log_blocks={log_blocks}: FAST needs at least 2 log blocks (one sequential-write log and at least one random-write log)")));
        }
        let blocks = geometry.blocks();
        if blocks <= log_blocks.saturating_add(SPARE_BLOCKS) {
            return Err(OcError::Geometry(format!("{geometry}: its {blocks} blocks leave no data block beside {log_blocks} log blocks and {SPARE_BLOCKS} spare")));
        }
        let data_blocks = blocks - log_blocks - SPARE_BLOCKS;
        let logical = data_blocks as u64 * geometry.pages_per_block as u64;
        Ok(Fast {
            map: PageMap::new(logical, blocks, geometry.pages_per_block),
            data_blocks: vec![NONE; data_blocks as usize],
            sw: None,
            rw: VecDeque::new(),
            log_blocks,
            free: Queues::new(geometry.pus(), blocks, |b| geometry.pu_of(b)),
            counters: MapCounters::default(),
            copy: Vec::new(),
            geometry,
        })
    }

    fn allocate(&mut self) -> Result<u32> {
        self.free.take_empty().ok_or_else(|| OcError::Internal("fast: no free block, although one is kept spare".into()))
    }

    /// Erases a block nothing valid is left in and queues it empty.
    fn release<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, block: u32) -> Result<()> {
        assert_eq!(self.map.valid(block), 0, "block {block} freed with valid pages");
        flash.erase(block)?;
        self.free.push_empty(self.geometry.pu_of(block) as usize, block);
        Ok(())
    }

    fn write_page<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, data: &[u8]) -> Result<()> {
        let ppb = self.geometry.pages_per_block;
        let (lbn, off) = ((lpn / ppb as u64) as u32, (lpn % ppb as u64) as u32);
        // A merge may give lbn a new data block, so after one the write is placed afresh.
        loop {
            let block = self.data_blocks[lbn as usize];
            if block == NONE {
                let block = self.allocate()?;
                flash.program_at(block, off, data)?;
                self.data_blocks[lbn as usize] = block;
                self.map.map(lpn, self.map.ppn(block, off));
                self.counters.record_map_entries(1, ENTRY_BYTES);
                return Ok(());
            }
            if off >= flash.written(block) {
                flash.program_at(block, off, data)?;
                self.map.map(lpn, self.map.ppn(block, off));
                return Ok(());
            }
            if off == 0 {
                if self.sw.is_some() {
                    self.merge_sw(flash)?;
                    continue;
                }
                let block = self.allocate()?;
                let page = flash.program(block, data)?;
                self.sw = Some(SwLog { block, lbn });
                self.counters.record_log_opened(0);
                self.append_log(lpn, block, page);
                return Ok(());
            }
            if let Some(sw) = self.sw.filter(|sw| sw.lbn == lbn && flash.written(sw.block) == off) {
                let page = flash.program(sw.block, data)?;
                self.append_log(lpn, sw.block, page);
                return Ok(());
            }
            match self.rw.back().copied().filter(|&log| !flash.is_full(log)) {
                Some(log) => {
                    let page = flash.program(log, data)?;
                    self.append_log(lpn, log, page);
                    return Ok(());
                }
                None => self.open_rw_log(flash)?,
            }
        }
    }

    fn append_log(&mut self, lpn: u64, block: u32, page: u32) {
        self.map.map(lpn, self.map.ppn(block, page));
        self.counters.record_log_entry(ENTRY_BYTES);
    }

    /// Opens a new RW log: a free block while fewer than `log_blocks − 1` are open, else the
    /// oldest, once every logical block with a valid page in it is full merged.
    fn open_rw_log<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<()> {
        if (self.rw.len() as u32) < self.log_blocks - 1 {
            let block = self.allocate()?;
            self.rw.push_back(block);
            self.counters.record_log_opened(0);
            return Ok(());
        }
        let victim = self.rw.pop_front().expect("at least one RW log is open");
        let ppb = self.geometry.pages_per_block;
        let mut lbns: Vec<u32> = self.map.live_pages(victim).iter().map(|&(_, lpn)| lpn / ppb).collect();
        lbns.sort_unstable();
        lbns.dedup();
        for lbn in lbns {
            self.full_merge(flash, lbn)?;
        }
        assert_eq!(self.map.valid(victim), 0, "RW victim {victim} still holds valid pages after its merges");
        flash.erase(victim)?;
        self.rw.push_back(victim);
        self.counters.gc_victims += 1;
        self.counters.record_log_opened(0);
        Ok(())
    }

    /// Merges the SW log into its logical block: a switch when it holds the whole block, a
    /// partial merge when it holds a valid prefix, otherwise a full merge.
    fn merge_sw<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<()> {
        let SwLog { block, lbn } = self.sw.expect("an open SW log to merge");
        let written = flash.written(block);
        if self.map.valid(block) != written {
            return self.full_merge(flash, lbn);
        }
        let full = written == self.geometry.pages_per_block;
        let copied = if full { 0 } else { self.gather(flash, lbn, written, block)? };
        let old = std::mem::replace(&mut self.data_blocks[lbn as usize], block);
        self.release(flash, old)?;
        self.sw = None;
        self.counters.record_map_entries(1, ENTRY_BYTES);
        if full {
            self.counters.switch_merges += 1;
        } else {
            self.counters.partial_merges += 1;
            self.counters.pages_copied += copied;
        }
        Ok(())
    }

    /// A new data block for `lbn` from the newest copy of each of its pages; the old data
    /// block is freed, and so is the SW log if it was lbn's (nothing valid is left in it).
    fn full_merge<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lbn: u32) -> Result<()> {
        let old = self.data_blocks[lbn as usize];
        assert_ne!(old, NONE, "full merge of logical block {lbn}, which has no data block");
        let block = self.allocate()?;
        let copied = self.gather(flash, lbn, 0, block)?;
        self.data_blocks[lbn as usize] = block;
        self.release(flash, old)?;
        if let Some(sw) = self.sw.filter(|sw| sw.lbn == lbn) {
            self.release(flash, sw.block)?;
            self.sw = None;
        }
        self.counters.full_merges += 1;
        self.counters.pages_copied += copied;
        self.counters.record_map_entries(1, ENTRY_BYTES);
        Ok(())
    }

    /// Copies the newest copy of each written page of `lbn` from offset `from` on into the
    /// same offset of `into` (reads first, then a barrier, then programs). Returns the count.
    fn gather<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lbn: u32, from: u32, into: u32) -> Result<u64> {
        let ppb = self.geometry.pages_per_block;
        let first = lbn as u64 * ppb as u64;
        let sources: Vec<(u32, u32)> = (from..ppb).filter_map(|off| self.map.lookup(first + off as u64).map(|ppn| (off, ppn))).collect();
        let page_bytes = flash.page_bytes();
        self.copy.resize(sources.len() * page_bytes, 0);
        for (i, &(_, ppn)) in sources.iter().enumerate() {
            let (block, page) = self.map.split(ppn);
            flash.read(block, page, &mut self.copy[i * page_bytes..(i + 1) * page_bytes])?;
        }
        flash.barrier();
        for (i, &(off, _)) in sources.iter().enumerate() {
            flash.program_at(into, off, &self.copy[i * page_bytes..(i + 1) * page_bytes])?;
            self.map.map(first + off as u64, self.map.ppn(into, off));
        }
        Ok(sources.len() as u64)
    }
}

impl Ftl for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }

    fn logical_pages(&self) -> u64 {
        self.map.logical_pages()
    }

    fn write<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, first: u64, data: &[u8]) -> Result<()> {
        let page_bytes = flash.page_bytes();
        assert!(data.len() % page_bytes == 0, "write of {} bytes: not whole pages", data.len());
        assert!(first + (data.len() / page_bytes) as u64 <= self.logical_pages(), "write beyond the logical space");
        for (i, page) in data.chunks(page_bytes).enumerate() {
            self.write_page(flash, first + i as u64, page)?;
        }
        Ok(())
    }

    fn read<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, buf: &mut [u8]) -> Result<bool> {
        self.map.read(flash, lpn, buf)
    }

    /// The block map and the log-page map, 8 bytes an entry.
    fn map_table_bytes(&self) -> u64 {
        (self.data_blocks.len() as u64 + self.log_blocks as u64 * self.geometry.pages_per_block as u64) * ENTRY_BYTES
    }

    fn counters(&self) -> &MapCounters {
        &self.counters
    }

    fn check_invariants<D: ZonedDevice>(&self, flash: &Flash<D>) -> Result<()> {
        #[derive(Copy, Clone, PartialEq, Eq, Debug)]
        enum Role {
            Free,
            Data(u32),
            Log,
        }
        let err = |m: String| Err(OcError::Internal(format!("fast: {m}")));
        self.map.check(|_| true)?;
        check_live_written(&self.map, flash)?;
        let g = &self.geometry;
        let ppb = g.pages_per_block;
        let mut role = vec![Role::Free; g.blocks() as usize];
        let mut claims = Vec::new();
        claims.extend(self.data_blocks.iter().enumerate().filter(|&(_, &b)| b != NONE).map(|(lbn, &b)| (b, Role::Data(lbn as u32))));
        claims.extend(self.rw.iter().map(|&b| (b, Role::Log)));
        claims.extend(self.sw.map(|sw| (sw.block, Role::Log)));
        for &(block, r) in &claims {
            if role[block as usize] != Role::Free {
                return err(format!("block {block} is both {:?} and {r:?}", role[block as usize]));
            }
            role[block as usize] = r;
        }
        self.free.check(g.blocks(), claims.len()).map_err(|m| OcError::Internal(format!("fast: {m}")))?;

        if self.rw.len() as u32 > self.log_blocks - 1 {
            return err(format!("{} RW logs open, at most {}", self.rw.len(), self.log_blocks - 1));
        }
        if let Some(&log) = self.rw.iter().rev().skip(1).find(|&&log| !flash.is_full(log)) {
            return err(format!("RW log {log} has room but is not the newest"));
        }
        if let Some(SwLog { block, lbn }) = self.sw {
            if flash.written(block) == 0 || self.data_blocks[lbn as usize] == NONE {
                return err(format!("SW log {block} of logical block {lbn}: empty, or its block has no data block"));
            }
            if let Some((page, lpn)) = self.map.live_pages(block).into_iter().find(|&(page, lpn)| lpn != lbn * ppb + page) {
                return err(format!("SW log {block} of logical block {lbn} holds logical page {lpn} at page {page}"));
            }
        }
        for block in 0..g.blocks() {
            match role[block as usize] {
                Role::Free if flash.written(block) != 0 || self.map.valid(block) != 0 => return err(format!("free block {block} is not erased")),
                Role::Data(lbn) => {
                    if let Some((page, lpn)) = self.map.live_pages(block).into_iter().find(|&(page, lpn)| lpn != lbn * ppb + page) {
                        return err(format!("data block {block} of logical block {lbn} holds logical page {lpn} at page {page}"));
                    }
                }
                _ => {}
            }
        }
        // Every written page lies below its data block's write pointer, so a page at or beyond
        // it is never written and may be programmed in place.
        for lpn in 0..self.logical_pages() {
            if self.map.lookup(lpn).is_some() {
                let (lbn, off) = ((lpn / ppb as u64) as usize, (lpn % ppb as u64) as u32);
                let data = self.data_blocks[lbn];
                if data == NONE || off >= flash.written(data) {
                    return err(format!("logical page {lpn} is written but its data block {data} holds only {} pages", if data == NONE { 0 } else { flash.written(data) }));
                }
            }
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
    const PPB: u64 = SMALL.pages_per_block as u64;

    fn flash(geometry: OcGeometry) -> Flash<MemDevice> {
        let device = MemDevice::new(geometry.zoned(), geometry.behavior(), StorageMode::Data).unwrap();
        let timing = zonekit_device::preset::find("ocssd-thesis").unwrap().flash;
        Flash::new(TimedDevice::new(device, geometry.flash_config(&timing), 8).unwrap(), geometry).unwrap()
    }

    fn pages(count: u64, byte: u8) -> Vec<u8> {
        vec![byte; (count * SMALL.page_bytes as u64) as usize]
    }

    fn read_back(ftl: &mut Fast, flash: &mut Flash<MemDevice>, lpn: u64) -> Option<u8> {
        let mut buf = pages(1, 0);
        ftl.read(flash, lpn, &mut buf).unwrap().then(|| {
            assert!(buf.iter().all(|&b| b == buf[0]), "page {lpn} is torn");
            buf[0]
        })
    }

    #[test]
    fn capacity_and_map_size() {
        let ftl = Fast::new(SMALL, 3).unwrap();
        // 32 blocks − 3 log blocks − 1 spare.
        assert_eq!(ftl.logical_pages(), 28 * PPB);
        assert_eq!(ftl.map_table_bytes(), (28 + 3 * PPB) * 8);
    }

    #[test]
    fn bad_configurations_are_refused() {
        let msg = Fast::new(SMALL, 1).err().unwrap().to_string();
        assert!(msg.contains("log_blocks=1") && msg.contains("at least 2"), "{msg}");
        let msg = Fast::new(SMALL, 31).err().unwrap().to_string();
        assert!(msg.contains("no data block"), "{msg}");
        assert!(Fast::new(SMALL, 30).is_ok());
    }

    #[test]
    fn sequential_rewrites_switch_merge() {
        let mut flash = flash(SMALL);
        let mut ftl = Fast::new(SMALL, 3).unwrap();
        ftl.write(&mut flash, 0, &pages(4 * PPB, 1)).unwrap();
        assert_eq!(*ftl.counters(), MapCounters { map_update_bytes: 4 * 8, map_entries_updated: 4, ..MapCounters::default() });
        for lbn in 0..4 {
            ftl.write(&mut flash, lbn * PPB, &pages(PPB, 2 + lbn as u8)).unwrap();
            ftl.check_invariants(&flash).unwrap();
        }
        let c = *ftl.counters();
        // Four SW logs of PPB pages each; three switches; no log table to charge.
        assert_eq!((c.logs_opened, c.log_entries_updated, c.log_open_bytes), (4, 4 * PPB, 0));
        assert_eq!(c.map_update_bytes, 8 * (c.map_entries_updated + c.log_entries_updated));
        // Each rewrite after the first switches the previous SW log in; the last is still open.
        assert_eq!((c.switch_merges, c.partial_merges, c.full_merges, c.pages_copied), (3, 0, 0, 0));
        for lpn in 0..4 * PPB {
            assert_eq!(read_back(&mut ftl, &mut flash, lpn), Some(2 + (lpn / PPB) as u8));
        }
    }

    #[test]
    fn a_rewritten_prefix_is_a_partial_merge() {
        let mut flash = flash(SMALL);
        let mut ftl = Fast::new(SMALL, 3).unwrap();
        ftl.write(&mut flash, 0, &pages(2 * PPB, 1)).unwrap();
        ftl.write(&mut flash, 0, &pages(3, 2)).unwrap();
        // Rewriting logical block 1 from its start merges block 0's SW log: 3 pages in order,
        // the other 5 copied from the data block.
        ftl.write(&mut flash, PPB, &pages(1, 3)).unwrap();
        let c = *ftl.counters();
        assert_eq!((c.switch_merges, c.partial_merges, c.full_merges, c.pages_copied), (0, 1, 0, PPB - 3));
        ftl.check_invariants(&flash).unwrap();
        let back: Vec<_> = (0..PPB + 1).map(|lpn| read_back(&mut ftl, &mut flash, lpn).unwrap()).collect();
        assert_eq!(back, [2, 2, 2, 1, 1, 1, 1, 1, 3]);
    }

    #[test]
    fn random_updates_full_merge_the_oldest_rw_log() {
        let mut flash = flash(SMALL);
        let mut ftl = Fast::new(SMALL, 2).unwrap();
        ftl.write(&mut flash, 0, &pages(3 * PPB, 1)).unwrap();
        // Updates at non-zero offsets fill the only RW log; the next one makes it a victim
        // and full merges the three logical blocks with pages in it.
        for (i, lpn) in [1, 9, 17, 2, 10, 18, 3, 11].into_iter().enumerate() {
            ftl.write(&mut flash, lpn, &pages(1, 10 + i as u8)).unwrap();
        }
        assert_eq!(ftl.counters().gc_victims, 0);
        ftl.write(&mut flash, 4, &pages(1, 30)).unwrap();
        let c = *ftl.counters();
        assert_eq!((c.gc_victims, c.full_merges, c.pages_copied), (1, 3, 3 * PPB));
        assert_eq!(c.switch_merges + c.partial_merges, 0);
        ftl.check_invariants(&flash).unwrap();
        assert_eq!(read_back(&mut ftl, &mut flash, 9), Some(11));
        assert_eq!(read_back(&mut ftl, &mut flash, 4), Some(30));
        assert_eq!(read_back(&mut ftl, &mut flash, 5), Some(1));
    }

    #[test]
    fn an_interrupted_sequential_log_is_full_merged() {
        let mut flash = flash(SMALL);
        let mut ftl = Fast::new(SMALL, 3).unwrap();
        ftl.write(&mut flash, 0, &pages(2 * PPB, 1)).unwrap();
        ftl.write(&mut flash, 0, &pages(2, 2)).unwrap();
        // Page 1 again: not the SW log's next page, so an RW log takes it and the SW log's
        // page 1 is superseded.
        ftl.write(&mut flash, 1, &pages(1, 3)).unwrap();
        ftl.write(&mut flash, PPB, &pages(1, 4)).unwrap();
        let c = *ftl.counters();
        assert_eq!((c.switch_merges, c.partial_merges, c.full_merges, c.pages_copied), (0, 0, 1, PPB));
        ftl.check_invariants(&flash).unwrap();
        assert_eq!(read_back(&mut ftl, &mut flash, 0), Some(2));
        assert_eq!(read_back(&mut ftl, &mut flash, 1), Some(3));
        assert_eq!(read_back(&mut ftl, &mut flash, 2), Some(1));
    }

    #[test]
    fn sparse_blocks_pad_and_write_in_place() {
        let mut flash = flash(SMALL);
        let mut ftl = Fast::new(SMALL, 2).unwrap();
        ftl.write(&mut flash, 5, &pages(1, 1)).unwrap();
        assert_eq!(flash.counters().pages_padded, 5);
        // Page 6 lies beyond the write pointer: in place. Page 2 was padded: an update.
        ftl.write(&mut flash, 6, &pages(1, 2)).unwrap();
        ftl.write(&mut flash, 2, &pages(1, 3)).unwrap();
        assert_eq!(ftl.rw.len(), 1);
        assert_eq!(read_back(&mut ftl, &mut flash, 2), Some(3));
        assert_eq!(read_back(&mut ftl, &mut flash, 3), None);
        ftl.check_invariants(&flash).unwrap();
    }

    #[test]
    fn random_traffic_keeps_the_invariants() {
        for log_blocks in [2, 3, 6] {
            let mut flash = flash(SMALL);
            let mut ftl = Fast::new(SMALL, log_blocks).unwrap();
            let logical = ftl.logical_pages();
            let mut model = vec![0u8; logical as usize];
            let mut rng = Rng::new(11 + log_blocks as u64);
            for step in 0..3000 {
                let count = if rng.chance(0.2) { PPB } else { 1 + rng.below(3) };
                let lpn = if rng.chance(0.3) { rng.below(logical / PPB) * PPB } else { rng.below(logical - count + 1) };
                let byte = rng.below(255) as u8 + 1;
                ftl.write(&mut flash, lpn, &pages(count, byte)).unwrap();
                model[lpn as usize..(lpn + count) as usize].fill(byte);
                let probe = rng.below(logical);
                assert_eq!(read_back(&mut ftl, &mut flash, probe), Some(model[probe as usize]).filter(|&b| b != 0), "log_blocks {log_blocks} step {step}");
                ftl.check_invariants(&flash).unwrap_or_else(|e| panic!("log_blocks {log_blocks} step {step}: {e}"));
            }
            let c = ftl.counters();
            assert!(c.gc_victims > 0 && c.full_merges > 0 && c.switch_merges + c.partial_merges > 0, "log_blocks {log_blocks}: {c:?}");
        }
    }
}

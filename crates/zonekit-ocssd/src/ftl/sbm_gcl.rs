//! SBM_GCL (§3.2.3): one map entry per superblock of PN PUs × BN blocks; page `s` of a
//! logical superblock is page `s` of its physical one. A write whose pages can still be
//! programmed (at or after their blocks' write pointers) goes in place; any other write moves
//! the whole logical superblock to a free physical one — the new pages plus every live page
//! not overwritten, in page order — and the old one, now without live pages, waits for GC.
//! GC is lazy and greedy: when no erased superblock is left, erase one with no live page.
//! Logical superblocks map one-to-one onto physical ones, so when every superblock is mapped
//! a move has nowhere to go: [`NoFreeSuperblock`] says whether to erase in place at once or to
//! try GC first.
//!
//! Where the thesis is silent: a block must be programmed in order, so a write that starts
//! past a block's write pointer (MACDRP's second half-block before its first) fills the
//! skipped pages with filler ([`crate::FlashCounters::pages_padded`]); writing those pages
//! later is an overwrite and moves the superblock. A request is handled a superblock at a
//! time, not a page at a time, so a request that overwrites several pages of one superblock
//! moves it once.

use zonekit_device::ZonedDevice;

use super::superblocks::SuperStore;
use super::{Ftl, MapCounters, NoFreeSuperblock};
use crate::ftl::page_map::NONE;
use crate::{Flash, OcError, OcGeometry, Result, SuperLayout};

/// Bytes per superblock-map entry.
pub const ENTRY_BYTES: u64 = 8;

pub struct SbmGcl {
    store: SuperStore,
    /// Logical superblock → physical.
    l2p: Vec<u32>,
    no_free: NoFreeSuperblock,
    counters: MapCounters,
    copy: Vec<u8>,
}

impl SbmGcl {
    pub fn new(geometry: OcGeometry, pn: u32, bn: u32, no_free: NoFreeSuperblock) -> Result<SbmGcl> {
        let layout = SuperLayout::new(geometry, pn, bn)?;
        Ok(SbmGcl { l2p: vec![NONE; layout.count() as usize], store: SuperStore::new(layout), no_free, counters: MapCounters::default(), copy: Vec::new() })
    }

    /// Writes pages `first..first + n` of logical superblock `lsb` (`data` is n pages).
    fn write_chunk<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lsb: u32, first: u32, data: &[u8]) -> Result<()> {
        let page_bytes = flash.page_bytes();
        let n = (data.len() / page_bytes) as u32;
        let pages = first..first + n;
        let old = self.l2p[lsb as usize];
        if old == NONE {
            let sb = self.store.take_free_or_collect(flash)?.ok_or_else(|| OcError::Internal("an unmapped logical superblock found no free physical one".into()))?;
            self.l2p[lsb as usize] = sb;
            self.counters.record_map_entries(1, ENTRY_BYTES);
            return self.program_range(flash, sb, first, data);
        }
        if pages.clone().all(|s| self.store.writable(flash, old, s)) {
            return self.program_range(flash, old, first, data);
        }
        // An overwrite: the superblock moves, or is rewritten in place.
        let mut target = self.store.take_free();
        if target.is_none() && self.no_free == NoFreeSuperblock::GcFirst && self.store.collect_one(flash)? {
            target = self.store.take_free();
        }
        let mut copy = std::mem::take(&mut self.copy);
        let kept = self.store.read_live(flash, old, |s| !pages.contains(&s), &mut copy)?;
        flash.barrier();
        let sb = match target {
            Some(new) => {
                self.store.discard(old);
                self.l2p[lsb as usize] = new;
                self.counters.record_map_entries(1, ENTRY_BYTES);
                new
            }
            None => {
                self.store.discard(old);
                self.store.erase(flash, old)?;
                self.store.hold(old, true);
                self.counters.erase_in_place += 1;
                old
            }
        };
        // Kept and new pages, in page order so every block is programmed in order.
        let mut kept_at = 0;
        let mut result = Ok(());
        for s in 0..self.store.pages() {
            let page = if pages.contains(&s) {
                let i = (s - first) as usize;
                &data[i * page_bytes..(i + 1) * page_bytes]
            } else if kept.get(kept_at) == Some(&s) {
                kept_at += 1;
                &copy[(kept_at - 1) * page_bytes..kept_at * page_bytes]
            } else {
                continue;
            };
            result = self.store.program(flash, sb, s, page);
            if result.is_err() {
                break;
            }
        }
        self.copy = copy;
        self.counters.pages_copied += kept.len() as u64;
        result
    }

    fn program_range<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, sb: u32, first: u32, data: &[u8]) -> Result<()> {
        for (i, page) in data.chunks(flash.page_bytes()).enumerate() {
            self.store.program(flash, sb, first + i as u32, page)?;
        }
        Ok(())
    }
}

impl Ftl for SbmGcl {
    fn name(&self) -> &'static str {
        "sbm-gcl"
    }

    fn logical_pages(&self) -> u64 {
        self.l2p.len() as u64 * self.store.pages() as u64
    }

    fn write<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, first: u64, data: &[u8]) -> Result<()> {
        let per = self.store.pages() as u64;
        let page_bytes = flash.page_bytes();
        let mut lpn = first;
        let mut rest = data;
        while !rest.is_empty() {
            let (lsb, s) = ((lpn / per) as u32, (lpn % per) as u32);
            let n = ((per - s as u64) as usize).min(rest.len() / page_bytes);
            let (chunk, tail) = rest.split_at(n * page_bytes);
            self.write_chunk(flash, lsb, s, chunk)?;
            lpn += n as u64;
            rest = tail;
        }
        self.counters.gc_victims = self.store.gc_victims;
        Ok(())
    }

    fn read<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, buf: &mut [u8]) -> Result<bool> {
        let per = self.store.pages() as u64;
        let (sb, s) = (self.l2p[(lpn / per) as usize], (lpn % per) as u32);
        if sb == NONE || !self.store.is_live(sb, s) {
            return Ok(false);
        }
        self.store.read(flash, sb, s, buf)?;
        Ok(true)
    }

    /// One entry per superblock (§4.3: 4 KiB for the thesis device with 1-block superblocks).
    fn map_table_bytes(&self) -> u64 {
        self.l2p.len() as u64 * ENTRY_BYTES
    }

    fn counters(&self) -> &MapCounters {
        &self.counters
    }

    fn check_invariants<D: ZonedDevice>(&self, flash: &Flash<D>) -> Result<()> {
        let mapped: Vec<u32> = self.l2p.iter().copied().filter(|&sb| sb != NONE).collect();
        self.store.check(flash, &mapped)
    }
}

//! PM_GCL (§3.2.1): a page map over blocks allocated as Linux pblk does — per PU a FIFO queue
//! of empty blocks, one active block and a FIFO queue of full ones; pages go round-robin over
//! PUs from the `next_ch_lun` cursor. GC is lazy: only when a request needs more pages than
//! are free, one victim at a time — scanning the full queues from the cursor, the block with
//! the fewest valid pages (the first found on ties, so victims rotate over PUs). The victim's
//! valid pages are read, the block is erased and queued empty at the tail, and the pages are
//! written again through the same allocation. FIFO queues are the wear levelling.

use zonekit_device::ZonedDevice;

use super::page_map::PageMap;
use super::{Ftl, MapCounters};
use crate::alloc::Queues;
use crate::{Flash, OcError, OcGeometry, Result};

/// Bytes per page-map entry (the thesis' T = 8, §3.2.1.1).
pub const ENTRY_BYTES: u64 = 8;

/// Round-robin page allocation over PUs, with `streams` active blocks per PU (one for most
/// FTLs; DFTL keeps translation pages apart from data).
#[derive(Clone, Debug)]
pub struct PuWriter {
    geometry: OcGeometry,
    queues: Queues,
    active: Vec<Vec<Option<u32>>>,
    free_pages: u64,
}

impl PuWriter {
    pub fn new(geometry: OcGeometry, streams: usize) -> PuWriter {
        let queues = Queues::new(geometry.pus(), geometry.blocks(), |b| geometry.pu_of(b));
        PuWriter { queues, active: vec![vec![None; geometry.pus() as usize]; streams], free_pages: geometry.pages(), geometry }
    }

    /// Pages that can be programmed without collecting a block.
    pub fn free_pages(&self) -> u64 {
        self.free_pages
    }

    /// Programs `data` into the active block of `stream` on the first PU (from the cursor)
    /// that has an active block or an empty one; returns (block, page).
    pub fn program<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, stream: usize, data: &[u8]) -> Result<(u32, u32)> {
        let pu = self.queues.rotation().find(|&pu| self.active[stream][pu].is_some() || self.queues.has_empty_in(pu));
        let Some(pu) = pu else {
            return Err(OcError::Internal("no PU has room although free pages were counted".into()));
        };
        let block = match self.active[stream][pu] {
            Some(block) => {
                self.queues.set_cursor_after(pu);
                block
            }
            None => self.queues.take_empty_in(pu).expect("PU has an empty block"),
        };
        let page = flash.program(block, data)?;
        self.free_pages -= 1;
        self.active[stream][pu] = if flash.is_full(block) {
            self.queues.push_used(pu, block);
            None
        } else {
            Some(block)
        };
        Ok((block, page))
    }

    /// Whether `stream` can program a page without collecting: it has an active block (an
    /// active block is never full) or some PU has an empty one.
    pub fn has_room(&self, stream: usize) -> bool {
        self.queues.empty_units() > 0 || self.active[stream].iter().any(Option::is_some)
    }

    /// Blocks erased and queued, on any PU.
    pub fn empty_blocks(&self) -> usize {
        self.queues.empty_units()
    }

    /// Greedy victim among full blocks: fewest valid pages, scanning from the cursor. A block
    /// with no stale page frees nothing and is never taken: when every full block is
    /// entirely valid, `ftl` is out of space and the queues are left as they were.
    pub fn take_victim(&mut self, map: &PageMap, ftl: &'static str) -> Result<u32> {
        let ppb = self.geometry.pages_per_block;
        let victim = self.queues.take_victim(|b| Some(map.valid(b)).filter(|&v| v < ppb), 0);
        victim.map(|(_, block)| block).ok_or_else(|| OcError::DeviceFull { ftl, detail: "every full block is entirely valid".into() })
    }

    /// Puts back a victim that will not be collected after all (at its PU's tail).
    pub fn requeue(&mut self, block: u32) {
        self.queues.push_used(self.geometry.pu_of(block) as usize, block);
    }

    /// Erases a collected block and queues it empty at the tail of its PU.
    pub fn recycle<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, block: u32) -> Result<()> {
        flash.erase(block)?;
        self.queues.push_empty(self.geometry.pu_of(block) as usize, block);
        self.free_pages += self.geometry.pages_per_block as u64;
        Ok(())
    }

    /// Every block is queued once or active; free pages match the flash.
    pub fn check<D: ZonedDevice>(&self, flash: &Flash<D>) -> Result<()> {
        let active: Vec<u32> = self.active.iter().flatten().flatten().copied().collect();
        self.queues.check(self.geometry.blocks(), active.len()).map_err(OcError::Internal)?;
        let ppb = self.geometry.pages_per_block as u64;
        let free = self.queues.empty_units() as u64 * ppb + active.iter().map(|&b| ppb - flash.written(b) as u64).sum::<u64>();
        if free != self.free_pages {
            return Err(OcError::Internal(format!("{} free pages counted, {free} on flash", self.free_pages)));
        }
        Ok(())
    }
}

pub struct PmGcl {
    geometry: OcGeometry,
    map: PageMap,
    writer: PuWriter,
    counters: MapCounters,
    copy: Vec<u8>,
}

impl PmGcl {
    /// The logical space leaves one block per PU spare, so GC always finds an invalid page.
    pub fn new(geometry: OcGeometry) -> Result<PmGcl> {
        geometry.validate()?;
        if geometry.blocks_per_lun < 2 {
            return Err(OcError::Geometry(format!("{geometry}: page mapping needs at least 2 blocks per LUN (one is spare)")));
        }
        let logical = geometry.pages() - geometry.pus() as u64 * geometry.pages_per_block as u64;
        Ok(PmGcl {
            map: PageMap::new(logical, geometry.blocks(), geometry.pages_per_block),
            writer: PuWriter::new(geometry, 1),
            counters: MapCounters::default(),
            copy: Vec::new(),
            geometry,
        })
    }

    fn program<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, data: &[u8]) -> Result<()> {
        let (block, page) = self.writer.program(flash, 0, data)?;
        self.map.map(lpn, self.map.ppn(block, page));
        self.counters.record_map_entries(1, ENTRY_BYTES);
        Ok(())
    }

    fn collect<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<()> {
        let victim = self.writer.take_victim(&self.map, "pm-gcl")?;
        let live = self.map.live_pages(victim);
        let page_bytes = flash.page_bytes();
        self.copy.resize(live.len() * page_bytes, 0);
        for (i, &(page, _)) in live.iter().enumerate() {
            flash.read(victim, page, &mut self.copy[i * page_bytes..(i + 1) * page_bytes])?;
        }
        flash.barrier();
        self.map.detach_block(victim);
        self.writer.recycle(flash, victim)?;
        let copy = std::mem::take(&mut self.copy);
        for (i, &(_, lpn)) in live.iter().enumerate() {
            self.program(flash, lpn as u64, &copy[i * page_bytes..(i + 1) * page_bytes])?;
        }
        self.copy = copy;
        self.counters.gc_victims += 1;
        self.counters.pages_copied += live.len() as u64;
        Ok(())
    }
}

impl Ftl for PmGcl {
    fn name(&self) -> &'static str {
        "pm-gcl"
    }

    fn logical_pages(&self) -> u64 {
        self.map.logical_pages()
    }

    fn write<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, first: u64, data: &[u8]) -> Result<()> {
        let page_bytes = flash.page_bytes();
        let pages = (data.len() / page_bytes) as u64;
        while self.writer.free_pages() < pages {
            self.collect(flash)?;
        }
        for (i, page) in data.chunks(page_bytes).enumerate() {
            self.program(flash, first + i as u64, page)?;
        }
        Ok(())
    }

    fn read<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, buf: &mut [u8]) -> Result<bool> {
        self.map.read(flash, lpn, buf)
    }

    /// One entry per physical page (§4.3: 128 KiB for the thesis device).
    fn map_table_bytes(&self) -> u64 {
        self.geometry.pages() * ENTRY_BYTES
    }

    fn counters(&self) -> &MapCounters {
        &self.counters
    }

    fn check_invariants<D: ZonedDevice>(&self, flash: &Flash<D>) -> Result<()> {
        self.map.check(|_| true)?;
        self.writer.check(flash)?;
        check_live_written(&self.map, flash)
    }
}

/// No live page sits beyond its block's write pointer.
pub fn check_live_written<D: ZonedDevice>(map: &PageMap, flash: &Flash<D>) -> Result<()> {
    for block in 0..flash.geometry().blocks() {
        if map.valid(block) > flash.written(block) {
            return Err(OcError::Internal(format!("block {block}: {} live pages but {} programmed", map.valid(block), flash.written(block))));
        }
        if let Some(&(page, _)) = map.live_pages(block).last() {
            if page >= flash.written(block) {
                return Err(OcError::Internal(format!("block {block}: live page {page} beyond the write pointer")));
            }
        }
    }
    Ok(())
}

//! PM_GCC (§3.2.2): a page map over the whole device as one circular log in physical-address
//! order (Fig. 3.2: consecutive pages rotate over channels, then LUNs, then pages, then
//! blocks), so appending stripes over every PU. The used region is `[begin, begin + used)`.
//! GC is lazy: when a request needs more pages than are free, it sweeps the whole used
//! region a row at a time (a row = one block on every PU, the thesis' buffer of "PU-count
//! blocks"): read the row's valid pages, erase its blocks, append the pages at the log's end.
//!
//! Where the thesis is silent: the row holding the log's end is partly written when GC
//! starts, so the sweep stops before it (its stale pages wait for the next sweep). The logical
//! space leaves two rows spare: one for that row, one so a sweep always frees a request's
//! worth of pages.

use zonekit_device::ZonedDevice;

use super::page_map::PageMap;
use super::pm_gcl::{check_live_written, ENTRY_BYTES};
use super::{Ftl, MapCounters};
use crate::{Flash, OcError, OcGeometry, Result};

pub struct PmGcc {
    geometry: OcGeometry,
    map: PageMap,
    /// Physical page number (thesis order) of the log's oldest page; always a row start.
    begin: u64,
    used: u64,
    counters: MapCounters,
    copy: Vec<u8>,
}

impl PmGcc {
    pub fn new(geometry: OcGeometry) -> Result<PmGcc> {
        geometry.validate()?;
        if geometry.blocks_per_lun < 3 {
            return Err(OcError::Geometry(format!("{geometry}: the circular log needs at least 3 blocks per LUN (two rows are spare)")));
        }
        let logical = geometry.pages() - 2 * Self::row_pages_of(&geometry);
        Ok(PmGcc { map: PageMap::new(logical, geometry.blocks(), geometry.pages_per_block), begin: 0, used: 0, counters: MapCounters::default(), copy: Vec::new(), geometry })
    }

    fn row_pages_of(geometry: &OcGeometry) -> u64 {
        geometry.pus() as u64 * geometry.pages_per_block as u64
    }

    fn free_pages(&self) -> u64 {
        self.geometry.pages() - self.used
    }

    fn append<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, data: &[u8]) -> Result<()> {
        let end = (self.begin + self.used) % self.geometry.pages();
        let (block, page) = self.geometry.locate_ppn(end);
        flash.program_at(block, page, data)?;
        self.map.map(lpn, self.map.ppn(block, page));
        self.used += 1;
        self.counters.record_map_entries(1, ENTRY_BYTES);
        Ok(())
    }

    /// Sweeps every full row of the used region, oldest first.
    fn sweep<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<()> {
        let row_pages = Self::row_pages_of(&self.geometry);
        let page_bytes = flash.page_bytes();
        let pus = self.geometry.pus();
        for _ in 0..self.used / row_pages {
            let row = (self.begin / row_pages) as u32;
            let blocks = row * pus..(row + 1) * pus;
            // Read in log order, so the pages come back in the order they were appended.
            let mut live = Vec::new();
            for t in self.begin..self.begin + row_pages {
                let (block, page) = self.geometry.locate_ppn(t);
                if let Some(lpn) = self.map.owner(self.map.ppn(block, page)) {
                    live.push((block, page, lpn));
                }
            }
            self.copy.resize(live.len() * page_bytes, 0);
            for (i, &(block, page, _)) in live.iter().enumerate() {
                flash.read(block, page, &mut self.copy[i * page_bytes..(i + 1) * page_bytes])?;
            }
            flash.barrier();
            for block in blocks {
                self.map.detach_block(block);
                flash.erase(block)?;
            }
            self.begin = (self.begin + row_pages) % self.geometry.pages();
            self.used -= row_pages;
            let copy = std::mem::take(&mut self.copy);
            for (i, &(_, _, lpn)) in live.iter().enumerate() {
                self.append(flash, lpn as u64, &copy[i * page_bytes..(i + 1) * page_bytes])?;
            }
            self.copy = copy;
            self.counters.pages_copied += live.len() as u64;
        }
        self.counters.gc_victims += 1;
        Ok(())
    }
}

impl Ftl for PmGcc {
    fn name(&self) -> &'static str {
        "pm-gcc"
    }

    fn logical_pages(&self) -> u64 {
        self.map.logical_pages()
    }

    fn write<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, first: u64, data: &[u8]) -> Result<()> {
        let page_bytes = flash.page_bytes();
        let pages = (data.len() / page_bytes) as u64;
        if self.free_pages() < pages {
            self.sweep(flash)?;
            if self.free_pages() < pages {
                return Err(OcError::DeviceFull { ftl: "pm-gcc", detail: format!("a sweep left {} free pages for a {pages}-page request", self.free_pages()) });
            }
        }
        for (i, page) in data.chunks(page_bytes).enumerate() {
            self.append(flash, first + i as u64, page)?;
        }
        Ok(())
    }

    fn read<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, buf: &mut [u8]) -> Result<bool> {
        self.map.read(flash, lpn, buf)
    }

    fn map_table_bytes(&self) -> u64 {
        self.geometry.pages() * ENTRY_BYTES
    }

    fn counters(&self) -> &MapCounters {
        &self.counters
    }

    fn check_invariants<D: ZonedDevice>(&self, flash: &Flash<D>) -> Result<()> {
        self.map.check(|_| true)?;
        check_live_written(&self.map, flash)?;
        // Exactly the used region is programmed.
        let programmed: u64 = (0..self.geometry.blocks()).map(|b| flash.written(b) as u64).sum();
        if programmed != self.used || self.begin % Self::row_pages_of(&self.geometry) != 0 {
            return Err(OcError::Internal(format!("log of {} pages from {} but {programmed} pages programmed", self.used, self.begin)));
        }
        Ok(())
    }
}

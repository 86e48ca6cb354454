//! PM_GCC (§3.2.2): a page map over the whole device as one circular log in physical-address
//! order (Fig. 3.2: consecutive pages rotate over channels, then LUNs, then pages, then
//! blocks), so appending stripes over every PU. The used region is `[begin, begin + used)`.
//! GC is lazy: when a request needs more pages than are free, it sweeps the whole used
//! region a row at a time (a row = one block on every PU, the thesis' buffer of "PU-count
//! blocks"): read the row's valid pages, erase its blocks, append the pages at the log's end.
//!
//! Where the thesis is silent: the row holding the log's end is partly written when GC
//! starts, so by default the sweep stops before it (its stale pages wait for the next sweep).
//! The logical space leaves two rows spare: one for that row, one so a sweep always frees a
//! request's worth of pages.
//!
//! Two optional readings of §3.2.2.3, both off by default, for measuring what they change:
//! [`SweepExtent::Whole`] sweeps every row holding data, that partial row included (the thesis'
//! "遍历整个已写入区", l. 364, and "一次垃圾回收会对设备的所有块进行擦除操作", l. 368), and
//! [`SweepReads::EveryPage`] reads every programmed page of a swept row, stale ones included,
//! as a sweep that took each page's logical address from flash rather than from the reverse
//! map would.

use zonekit_device::ZonedDevice;

use super::page_map::PageMap;
use super::pm_gcl::{check_live_written, ENTRY_BYTES};
use super::{Ftl, MapCounters};
use crate::{Flash, OcError, OcGeometry, Result};

/// How much of the used region a sweep collects (`sweep=` parameter).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum SweepExtent {
    /// Every full row, oldest first, appending the live pages at the log's end; the partly
    /// written row holding the end waits for the next sweep (`full-rows`, the default).
    #[default]
    FullRows,
    /// Every row holding data, the partly written one included: each live page is copied once
    /// and every block holding data is erased; the copies restart at the oldest row, which
    /// stays the log's begin (`whole`).
    Whole,
}

/// Which pages of a swept row a sweep reads (`sweep_reads=` parameter).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum SweepReads {
    /// Only the live pages; the reverse map names their owners (`valid`, the default).
    #[default]
    Valid,
    /// Every programmed page, stale ones included (`every-page`).
    EveryPage,
}

pub struct PmGcc {
    geometry: OcGeometry,
    extent: SweepExtent,
    reads: SweepReads,
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
        Ok(PmGcc {
            map: PageMap::new(logical, geometry.blocks(), geometry.pages_per_block),
            extent: SweepExtent::default(),
            reads: SweepReads::default(),
            begin: 0,
            used: 0,
            counters: MapCounters::default(),
            copy: Vec::new(),
            geometry,
        })
    }

    /// Sets how much a sweep collects and which pages it reads (defaults: full rows, live
    /// pages).
    pub fn with_sweep(mut self, extent: SweepExtent, reads: SweepReads) -> PmGcc {
        self.extent = extent;
        self.reads = reads;
        self
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

    /// Sweeps the used region a row at a time, oldest first: every full row, or with
    /// [`SweepExtent::Whole`] every row holding data.
    fn sweep<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<()> {
        let row_pages = Self::row_pages_of(&self.geometry);
        let page_bytes = flash.page_bytes();
        let pus = self.geometry.pus();
        let whole = self.extent == SweepExtent::Whole;
        let rows = if whole { self.used.div_ceil(row_pages) } else { self.used / row_pages };
        let mut at = self.begin;
        if whole {
            // The log restarts at its begin: each row is read and erased before the copies
            // reach it, since a row never holds more live pages than it has pages.
            self.used = 0;
        }
        let mut scratch = Vec::new();
        for swept in 1..=rows {
            let row = (at / row_pages) as u32;
            let blocks = row * pus..(row + 1) * pus;
            // Read in log order, so the pages come back in the order they were appended.
            let mut live = Vec::new();
            let mut stale = Vec::new();
            for t in at..at + row_pages {
                let (block, page) = self.geometry.locate_ppn(t);
                match self.map.owner(self.map.ppn(block, page)) {
                    Some(lpn) => live.push((block, page, lpn)),
                    None if page < flash.written(block) => stale.push((block, page)),
                    None => {}
                }
            }
            self.copy.resize(live.len() * page_bytes, 0);
            for (i, &(block, page, _)) in live.iter().enumerate() {
                flash.read(block, page, &mut self.copy[i * page_bytes..(i + 1) * page_bytes])?;
            }
            if self.reads == SweepReads::EveryPage {
                scratch.resize(page_bytes, 0);
                for &(block, page) in &stale {
                    flash.read(block, page, &mut scratch)?;
                }
            }
            flash.barrier();
            for block in blocks {
                self.map.detach_block(block);
                flash.erase(block)?;
            }
            at = (at + row_pages) % self.geometry.pages();
            if !whole {
                self.begin = at;
                self.used -= row_pages;
            }
            let copy = std::mem::take(&mut self.copy);
            for (i, &(_, _, lpn)) in live.iter().enumerate() {
                self.append(flash, lpn as u64, &copy[i * page_bytes..(i + 1) * page_bytes])?;
            }
            self.copy = copy;
            self.counters.pages_copied += live.len() as u64;
            debug_assert!(!whole || self.used <= swept * row_pages, "the copies overtook the sweep");
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FtlConfig, Ssd, Timing};

    const G: OcGeometry = OcGeometry { channels: 2, luns_per_channel: 2, blocks_per_lun: 8, pages_per_block: 8, page_bytes: 8192 };
    const PAGE: u64 = 8192;

    fn ssd(params: &[(&str, &str)]) -> Ssd<zonekit_device::MemDevice> {
        let config = FtlConfig { params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), timing: Timing::Synchronous };
        Ssd::memory("pm-gcc", &config, G, true).unwrap()
    }

    /// Writes 5-page requests over the first 40 logical pages, each page's bytes naming the
    /// write, until the first sweep: then 255 of the 256 pages are used, the last row partly.
    fn until_first_sweep(s: &mut Ssd<zonekit_device::MemDevice>) -> Vec<u8> {
        let mut stamp = vec![0u8; 40];
        let mut n = 0u64;
        while s.report().map.gc_victims == 0 {
            let first = (n * 5) % 40;
            n += 1;
            let data: Vec<u8> = (0..5 * PAGE).map(|i| (n + i / PAGE) as u8).collect();
            s.write(first * PAGE, &data).unwrap();
            for p in 0..5 {
                stamp[(first + p) as usize] = (n + p) as u8;
            }
        }
        stamp
    }

    #[test]
    fn a_whole_sweep_copies_every_live_page_once_and_erases_every_block_holding_data() {
        let mut rows = ssd(&[]);
        until_first_sweep(&mut rows);
        let r = rows.report();
        // 255 pages used: seven full rows of 32 swept, the partly written eighth left.
        assert_eq!((r.flash.blocks_erased, r.map.gc_victims), (7 * 4, 1));
        assert!(r.map.pages_copied < 40, "{:?}", r.map);
        rows.check_invariants().unwrap();

        let mut whole = ssd(&[("sweep", "whole")]);
        let stamp = until_first_sweep(&mut whole);
        let w = whole.report();
        // Every block held data; all 40 live pages were copied, each once, and read once.
        assert_eq!((w.flash.blocks_erased, w.map.pages_copied, w.flash.pages_read), (8 * 4, 40, 40));
        whole.check_invariants().unwrap();
        for (lpn, &byte) in stamp.iter().enumerate() {
            let mut buf = vec![0; PAGE as usize];
            whole.read(lpn as u64 * PAGE, &mut buf).unwrap();
            assert!(buf.iter().all(|&b| b == byte), "logical page {lpn}");
        }
    }

    #[test]
    fn every_page_reads_add_the_stale_pages_and_change_nothing_else() {
        for extent in ["full-rows", "whole"] {
            let mut valid = ssd(&[("sweep", extent)]);
            let mut every = ssd(&[("sweep", extent), ("sweep_reads", "every-page")]);
            until_first_sweep(&mut valid);
            until_first_sweep(&mut every);
            let (v, e) = (valid.report(), every.report());
            let swept_pages = if extent == "whole" { 255 } else { 7 * 32 };
            assert_eq!(e.flash.pages_read, swept_pages, "{extent}");
            assert_eq!(v.flash.pages_read, v.map.pages_copied, "{extent}");
            assert_eq!((e.map, e.flash.pages_programmed, e.flash.blocks_erased), (v.map, v.flash.pages_programmed, v.flash.blocks_erased), "{extent}");
            // Each stale read costs table 3.1's read (and a page's few ns over the channel).
            let (extra_ns, stale) = (e.elapsed_ns - v.elapsed_ns, swept_pages - v.flash.pages_read);
            let read_ns = crate::CommandCosts::TABLE_3_1.read_ns;
            assert!((stale * read_ns..stale * (read_ns + 100)).contains(&extra_ns), "{extent}: {extra_ns} ns for {stale} stale reads");
            every.check_invariants().unwrap();
        }
    }

    #[test]
    fn both_sweeps_keep_the_data_over_many_wraps() {
        for extent in ["full-rows", "whole"] {
            let mut s = ssd(&[("sweep", extent)]);
            let mut stamp = [0u8; 40];
            for n in 1..=400u64 {
                let first = (n * 7) % 36;
                let data: Vec<u8> = (0..5 * PAGE).map(|i| (n + i / PAGE) as u8).collect();
                s.write(first * PAGE, &data).unwrap();
                for p in 0..5 {
                    stamp[(first + p) as usize] = (n + p) as u8;
                }
            }
            assert!(s.report().map.gc_victims > 5, "{extent}");
            s.check_invariants().unwrap();
            for (lpn, &byte) in stamp.iter().enumerate().filter(|&(_, &b)| b != 0) {
                let mut buf = vec![0; PAGE as usize];
                s.read(lpn as u64 * PAGE, &mut buf).unwrap();
                assert!(buf.iter().all(|&b| b == byte), "{extent}: logical page {lpn}");
            }
        }
    }
}

//! [`Flash`]: page program, page read and block erase on a timed zoned device whose zones are
//! flash blocks, with the counters every FTL is measured by and the wear maps.
//!
//! Time is virtual. Every operation of a host request is submitted at the request's start;
//! [`Flash::barrier`] makes later operations wait for everything issued so far (a GC copy
//! reads its pages before it writes them); the request completes when its last operation does.

use zonekit_device::timing::{LatencyHistogram, TimedDevice};
use zonekit_device::{Lba, ZoneId, ZonedDevice};

use crate::geometry::{OcGeometry, SECTOR_BYTES};
use crate::{OcError, Result};

/// What the flash did, in pages and blocks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlashCounters {
    /// Pages programmed, filler included.
    pub pages_programmed: u64,
    /// Pages programmed with filler because a block must be written in order and a later
    /// page was written first.
    pub pages_padded: u64,
    pub pages_read: u64,
    /// Blocks erased (a block with nothing programmed is not erased).
    pub blocks_erased: u64,
}

pub struct Flash<D: ZonedDevice> {
    device: TimedDevice<D>,
    geometry: OcGeometry,
    sectors_per_page: u64,
    /// Pages programmed in each block since its last erase (the zone's write pointer).
    written: Vec<u32>,
    erase_count: Vec<u32>,
    /// Programs of each physical page, `block × pages_per_block + page`.
    page_writes: Vec<u32>,
    counters: FlashCounters,
    filler: Vec<u8>,
    request_start_ns: u64,
    /// The request that last programmed each PU, to count the PUs a request spreads over.
    pu_stamp: Vec<u64>,
    request: u64,
    request_pus: u64,
}

impl<D: ZonedDevice> Flash<D> {
    /// Takes a device whose zones are `geometry`'s blocks, each pinned to the PU the layout
    /// says (`zone = block × PUs + PU`, `PU = LUN × channels + channel`); anything else is
    /// refused, since an FTL striping over PUs would otherwise stripe over nothing.
    pub fn new(device: TimedDevice<D>, geometry: OcGeometry) -> Result<Flash<D>> {
        geometry.validate()?;
        let zoned = device.geometry();
        if zoned.zone_count != geometry.blocks()
            || zoned.zone_size_bytes() != geometry.block_bytes()
            || zoned.zone_capacity_blocks != zoned.zone_size_blocks
            || zoned.block_size_bytes != SECTOR_BYTES
            || zoned.conventional_zone_count != 0
        {
            return Err(OcError::Geometry(format!("device of {} zones of {} bytes is not {geometry} (one sequential zone per block)", zoned.zone_count, zoned.zone_size_bytes())));
        }
        for zone in 0..geometry.blocks() {
            let pu = geometry.pu_of(zone);
            match device.parallel_unit(ZoneId(zone)) {
                Some(unit) if unit.die == pu && unit.channel == pu % geometry.channels => {}
                other => return Err(OcError::Geometry(format!("zone {zone} sits on {other:?}; the open-channel layout needs it on PU {pu} (channel {})", pu % geometry.channels))),
            }
        }
        let blocks = geometry.blocks() as usize;
        Ok(Flash {
            sectors_per_page: (geometry.page_bytes / SECTOR_BYTES) as u64,
            written: vec![0; blocks],
            erase_count: vec![0; blocks],
            page_writes: vec![0; blocks * geometry.pages_per_block as usize],
            counters: FlashCounters::default(),
            filler: vec![0; geometry.page_bytes as usize],
            request_start_ns: 0,
            pu_stamp: vec![0; geometry.pus() as usize],
            request: 0,
            request_pus: 0,
            device,
            geometry,
        })
    }

    pub fn geometry(&self) -> &OcGeometry {
        &self.geometry
    }

    pub fn page_bytes(&self) -> usize {
        self.geometry.page_bytes as usize
    }

    /// Pages programmed in `block` since its last erase.
    pub fn written(&self, block: u32) -> u32 {
        self.written[block as usize]
    }

    pub fn is_full(&self, block: u32) -> bool {
        self.written(block) == self.geometry.pages_per_block
    }

    fn lba(&self, block: u32, page: u32) -> Lba {
        let zone_blocks = self.geometry.block_bytes() / SECTOR_BYTES as u64;
        Lba(block as u64 * zone_blocks + page as u64 * self.sectors_per_page)
    }

    /// Programs the next page of `block`; returns its index.
    pub fn program(&mut self, block: u32, data: &[u8]) -> Result<u32> {
        let page = self.written(block);
        if page == self.geometry.pages_per_block {
            return Err(OcError::Internal(format!("program of full block {block}")));
        }
        self.device.write(self.lba(block, page), data)?;
        let pu = self.geometry.pu_of(block) as usize;
        if self.pu_stamp[pu] != self.request {
            self.pu_stamp[pu] = self.request;
            self.request_pus += 1;
        }
        self.written[block as usize] += 1;
        self.page_writes[(block * self.geometry.pages_per_block + page) as usize] += 1;
        self.counters.pages_programmed += 1;
        Ok(page)
    }

    /// Programs page `page` of `block`, first filling any skipped pages with filler.
    pub fn program_at(&mut self, block: u32, page: u32, data: &[u8]) -> Result<()> {
        let at = self.written(block);
        if page < at {
            return Err(OcError::Internal(format!("program of page {page} of block {block} behind its write pointer {at}")));
        }
        for _ in at..page {
            let filler = std::mem::take(&mut self.filler);
            let result = self.program(block, &filler);
            self.filler = filler;
            result?;
            self.counters.pages_padded += 1;
        }
        self.program(block, data).map(|_| ())
    }

    pub fn read(&mut self, block: u32, page: u32, buf: &mut [u8]) -> Result<()> {
        if page >= self.written(block) {
            return Err(OcError::Internal(format!("read of unwritten page {page} of block {block}")));
        }
        self.device.read(self.lba(block, page), buf)?;
        self.counters.pages_read += 1;
        Ok(())
    }

    /// Erases `block` if anything was programmed in it.
    pub fn erase(&mut self, block: u32) -> Result<()> {
        if self.written(block) == 0 {
            return Ok(());
        }
        self.device.reset_zone(ZoneId(block))?;
        self.written[block as usize] = 0;
        self.erase_count[block as usize] += 1;
        self.counters.blocks_erased += 1;
        Ok(())
    }

    /// Later operations start after everything issued so far has completed.
    pub fn barrier(&mut self) {
        let done = self.device.report().elapsed_ns;
        self.device.advance_host_to(done);
    }

    /// Starts a host request at the current host time (after the previous one completed).
    pub fn begin_request(&mut self) -> u64 {
        self.barrier();
        self.request += 1;
        self.request_pus = 0;
        self.request_start_ns = self.device.host_now_ns();
        self.request_start_ns
    }

    /// Moves the host clock `ns` on: time the request spends outside the flash (a per-request
    /// cost), which later commands wait for.
    pub fn delay_host_ns(&mut self, ns: u64) {
        let now = self.device.host_now_ns();
        self.device.advance_host_to(now + ns);
    }

    /// Completes the request: every operation it issued has finished. Returns its latency.
    pub fn end_request(&mut self) -> u64 {
        self.barrier();
        self.device.host_now_ns() - self.request_start_ns
    }

    /// Parallel units the current request has programmed so far.
    pub fn request_pus(&self) -> u64 {
        self.request_pus
    }

    /// Virtual time since the start, in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        self.device.report().elapsed_ns.max(self.device.host_now_ns())
    }

    pub fn counters(&self) -> FlashCounters {
        self.counters
    }

    pub fn read_latency(&self) -> &LatencyHistogram {
        &self.device.report().read_latency
    }

    /// Erases per block, laid out as rows of PUs × columns of blocks within the LUN.
    pub fn erase_map(&self) -> Vec<Vec<u32>> {
        let g = &self.geometry;
        (0..g.pus()).map(|pu| (0..g.blocks_per_lun).map(|b| self.erase_count[g.block_id(pu, b) as usize]).collect()).collect()
    }

    /// Programs per page, one row per block (in block-id order) of its pages.
    pub fn page_write_map(&self) -> Vec<Vec<u32>> {
        self.page_writes.chunks(self.geometry.pages_per_block as usize).map(|c| c.to_vec()).collect()
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    pub fn device(&self) -> &TimedDevice<D> {
        &self.device
    }

    /// The device's zone write pointers agree with what this layer believes it programmed.
    pub fn check_invariants(&mut self) -> Result<()> {
        let zones = self.device.report_all(zonekit_device::ZoneFilter::All)?;
        let zone_blocks = self.geometry.block_bytes() / SECTOR_BYTES as u64;
        for (block, zone) in zones.iter().enumerate() {
            let pages = (zone.write_pointer.0 - zone.start.0).min(zone_blocks) / self.sectors_per_page;
            let pages = if zone.state == zonekit_device::ZoneState::Full { self.geometry.pages_per_block as u64 } else { pages };
            if pages != self.written[block] as u64 {
                return Err(OcError::Internal(format!("block {block}: device holds {pages} pages, flash layer counted {}", self.written[block])));
            }
        }
        Ok(())
    }
}

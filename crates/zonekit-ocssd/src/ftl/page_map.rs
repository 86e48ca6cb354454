//! The page-level map the page-mapped FTLs share (the thesis' `vpg2ppg` / `ppg2vpg`): logical
//! page → physical page, physical page → owner, and valid pages per block.
//!
//! A physical page number here is `block id × pages per block + page`. The owner of a
//! physical page is a logical page number, or any tag an FTL chooses for pages that are not
//! user data (DFTL's translation pages); only logical pages appear in the forward map.

use crate::{OcError, Result};

pub const NONE: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct PageMap {
    l2p: Vec<u32>,
    p2l: Vec<u32>,
    valid: Vec<u32>,
    pages_per_block: u32,
}

impl PageMap {
    pub fn new(logical_pages: u64, blocks: u32, pages_per_block: u32) -> PageMap {
        PageMap { l2p: vec![NONE; logical_pages as usize], p2l: vec![NONE; (blocks * pages_per_block) as usize], valid: vec![0; blocks as usize], pages_per_block }
    }

    pub fn ppn(&self, block: u32, page: u32) -> u32 {
        block * self.pages_per_block + page
    }

    /// (block, page) of a physical page number.
    pub fn split(&self, ppn: u32) -> (u32, u32) {
        (ppn / self.pages_per_block, ppn % self.pages_per_block)
    }

    pub fn logical_pages(&self) -> u64 {
        self.l2p.len() as u64
    }

    /// Where logical page `lpn` lives, if written.
    pub fn lookup(&self, lpn: u64) -> Option<u32> {
        Some(self.l2p[lpn as usize]).filter(|&p| p != NONE)
    }

    /// Reads logical page `lpn` from where the map says it is; `false` if never written.
    pub fn read<D: zonekit_device::ZonedDevice>(&self, flash: &mut crate::Flash<D>, lpn: u64, buf: &mut [u8]) -> Result<bool> {
        let Some(ppn) = self.lookup(lpn) else { return Ok(false) };
        let (block, page) = self.split(ppn);
        flash.read(block, page, buf)?;
        Ok(true)
    }

    pub fn owner(&self, ppn: u32) -> Option<u32> {
        Some(self.p2l[ppn as usize]).filter(|&o| o != NONE)
    }

    pub fn valid(&self, block: u32) -> u32 {
        self.valid[block as usize]
    }

    /// Marks `ppn` as holding `owner`'s live copy.
    pub fn bind(&mut self, owner: u32, ppn: u32) {
        debug_assert_eq!(self.p2l[ppn as usize], NONE, "physical page {ppn} bound twice");
        self.p2l[ppn as usize] = owner;
        self.valid[(ppn / self.pages_per_block) as usize] += 1;
    }

    /// Marks `ppn` stale.
    pub fn release(&mut self, ppn: u32) {
        debug_assert_ne!(self.p2l[ppn as usize], NONE, "physical page {ppn} released twice");
        self.p2l[ppn as usize] = NONE;
        self.valid[(ppn / self.pages_per_block) as usize] -= 1;
    }

    /// Maps `lpn` to `ppn`, releasing its previous copy. Returns the previous location.
    pub fn map(&mut self, lpn: u64, ppn: u32) -> Option<u32> {
        let old = self.lookup(lpn);
        if let Some(old) = old {
            self.release(old);
        }
        self.bind(lpn as u32, ppn);
        self.l2p[lpn as usize] = ppn;
        old
    }

    /// The live pages of `block` as (page, owner), in page order.
    pub fn live_pages(&self, block: u32) -> Vec<(u32, u32)> {
        let base = block * self.pages_per_block;
        (0..self.pages_per_block).filter_map(|p| self.owner(base + p).map(|o| (p, o))).collect()
    }

    /// Forgets every live page of `block` before it is erased (their data is in the caller's
    /// copy buffer); logical pages among them are unmapped until written again.
    pub fn detach_block(&mut self, block: u32) {
        let base = block * self.pages_per_block;
        for ppn in base..base + self.pages_per_block {
            let owner = std::mem::replace(&mut self.p2l[ppn as usize], NONE);
            if owner != NONE && (owner as usize) < self.l2p.len() && self.l2p[owner as usize] == ppn {
                self.l2p[owner as usize] = NONE;
            }
        }
        self.valid[block as usize] = 0;
    }

    /// Forward and reverse maps agree; valid counts match the reverse map. `is_data` says which
    /// owners are logical pages (the rest are the FTL's own pages).
    pub fn check(&self, is_data: impl Fn(u32) -> bool) -> Result<()> {
        for (lpn, &ppn) in self.l2p.iter().enumerate() {
            if ppn != NONE && self.p2l[ppn as usize] != lpn as u32 {
                return Err(OcError::Internal(format!("logical page {lpn} maps to physical page {ppn}, owned by {}", self.p2l[ppn as usize])));
            }
        }
        let mut valid = vec![0u32; self.valid.len()];
        for (ppn, &owner) in self.p2l.iter().enumerate() {
            if owner == NONE {
                continue;
            }
            valid[ppn / self.pages_per_block as usize] += 1;
            if is_data(owner) && self.l2p.get(owner as usize) != Some(&(ppn as u32)) {
                return Err(OcError::Internal(format!("physical page {ppn} claims logical page {owner}, which maps elsewhere")));
            }
        }
        if let Some(block) = (0..valid.len()).find(|&b| valid[b] != self.valid[b]) {
            return Err(OcError::Internal(format!("block {block}: {} live pages counted, {} found", self.valid[block], valid[block])));
        }
        Ok(())
    }
}

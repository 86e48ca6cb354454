//! What SBM_GCL and HSBM_GCL share: physical superblocks (§3.2.3.2) with per-group empty and
//! written queues (the thesis' `empty_sblk` / `non_empty_sblk`), which pages of each hold live
//! data, and greedy GC of superblocks with no live page (§3.2.3.4: in a superblock map every
//! victim is empty, so no page is ever copied by GC).

use zonekit_device::ZonedDevice;

use crate::alloc::Queues;
use crate::{Flash, OcError, Result, SuperLayout};

pub struct SuperStore {
    layout: SuperLayout,
    queues: Queues,
    /// Page `s` of superblock `sb` holds live data: `live[sb × pages + s]`.
    live: Vec<bool>,
    valid: Vec<u32>,
    /// Mapped (as a data or log superblock): never a GC victim even with no live page.
    held: Vec<bool>,
    pub gc_victims: u64,
}

impl SuperStore {
    pub fn new(layout: SuperLayout) -> SuperStore {
        let count = layout.count();
        let queues = Queues::new(layout.groups(), count, |sb| layout.group_of(sb));
        SuperStore { live: vec![false; (count * layout.pages()) as usize], valid: vec![0; count as usize], held: vec![false; count as usize], queues, layout, gc_victims: 0 }
    }

    pub fn layout(&self) -> &SuperLayout {
        &self.layout
    }

    pub fn pages(&self) -> u32 {
        self.layout.pages()
    }

    fn index(&self, sb: u32, s: u32) -> usize {
        (sb * self.layout.pages() + s) as usize
    }

    pub fn is_live(&self, sb: u32, s: u32) -> bool {
        self.live[self.index(sb, s)]
    }

    pub fn set_live(&mut self, sb: u32, s: u32, live: bool) {
        let i = self.index(sb, s);
        if std::mem::replace(&mut self.live[i], live) != live {
            if live {
                self.valid[sb as usize] += 1;
            } else {
                self.valid[sb as usize] -= 1;
            }
        }
    }

    pub fn valid(&self, sb: u32) -> u32 {
        self.valid[sb as usize]
    }

    pub fn hold(&mut self, sb: u32, held: bool) {
        self.held[sb as usize] = held;
    }

    /// Drops every live page of `sb` and its hold: it is garbage for GC to erase.
    pub fn discard(&mut self, sb: u32) {
        for s in 0..self.layout.pages() {
            self.set_live(sb, s, false);
        }
        self.held[sb as usize] = false;
    }

    /// An erased superblock, from the first group (from the cursor) that has one; it moves to
    /// its group's written queue at once (§3.2.3.1: a superblock can be collected as soon as
    /// its pages die, full or not).
    pub fn take_free(&mut self) -> Option<u32> {
        let sb = self.queues.take_empty()?;
        self.queues.push_used(self.layout.group_of(sb) as usize, sb);
        self.held[sb as usize] = true;
        Some(sb)
    }

    /// Erases one superblock with no live page that nothing maps; false when there is none.
    pub fn collect_one<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<bool> {
        let (valid, held) = (&self.valid, &self.held);
        let Some((group, sb)) = self.queues.take_victim(|sb| (valid[sb as usize] == 0 && !held[sb as usize]).then_some(0), 0) else {
            return Ok(false);
        };
        self.erase(flash, sb)?;
        self.queues.push_empty(group, sb);
        self.gc_victims += 1;
        Ok(true)
    }

    /// A free superblock, collecting one first if none is erased (lazy GC, §3.2.4.3).
    pub fn take_free_or_collect<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<Option<u32>> {
        if self.queues.empty_units() == 0 && !self.collect_one(flash)? {
            return Ok(None);
        }
        Ok(self.take_free())
    }

    pub fn erase<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, sb: u32) -> Result<()> {
        for block in self.layout.blocks_of(sb).collect::<Vec<_>>() {
            flash.erase(block)?;
        }
        Ok(())
    }

    /// Page `s` of `sb` can still be programmed (its block's write pointer is not past it).
    pub fn writable<D: ZonedDevice>(&self, flash: &Flash<D>, sb: u32, s: u32) -> bool {
        let (block, page) = self.layout.locate(sb, s);
        flash.written(block) <= page
    }

    pub fn program<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, sb: u32, s: u32, data: &[u8]) -> Result<()> {
        let (block, page) = self.layout.locate(sb, s);
        flash.program_at(block, page, data)?;
        self.set_live(sb, s, true);
        Ok(())
    }

    pub fn read<D: ZonedDevice>(&self, flash: &mut Flash<D>, sb: u32, s: u32, buf: &mut [u8]) -> Result<()> {
        let (block, page) = self.layout.locate(sb, s);
        flash.read(block, page, buf)
    }

    /// Reads the live pages of `sb` for which `keep` holds into `copy` (page after page);
    /// returns their indices. The caller issues a barrier before writing them anywhere.
    pub fn read_live<D: ZonedDevice>(&self, flash: &mut Flash<D>, sb: u32, keep: impl Fn(u32) -> bool, copy: &mut Vec<u8>) -> Result<Vec<u32>> {
        let page_bytes = flash.page_bytes();
        let pages: Vec<u32> = (0..self.layout.pages()).filter(|&s| self.is_live(sb, s) && keep(s)).collect();
        copy.resize(pages.len() * page_bytes, 0);
        for (i, &s) in pages.iter().enumerate() {
            self.read(flash, sb, s, &mut copy[i * page_bytes..(i + 1) * page_bytes])?;
        }
        Ok(pages)
    }

    /// Queues, live counts, holds and write pointers agree; `mapped` are the superblocks the
    /// FTL maps.
    pub fn check<D: ZonedDevice>(&self, flash: &Flash<D>, mapped: &[u32]) -> Result<()> {
        let bad = |m: String| Err(OcError::Internal(m));
        self.queues.check(self.layout.count(), 0).map_err(OcError::Internal)?;
        let mut held = vec![false; self.held.len()];
        for &sb in mapped {
            if std::mem::replace(&mut held[sb as usize], true) {
                return bad(format!("superblock {sb} is mapped twice"));
            }
        }
        if held != self.held {
            let sb = (0..held.len()).find(|&i| held[i] != self.held[i]).unwrap_or(0);
            return bad(format!("superblock {sb}: held {} but mapped {}", self.held[sb], held[sb]));
        }
        for sb in 0..self.layout.count() {
            let live = (0..self.pages()).filter(|&s| self.is_live(sb, s)).count() as u32;
            if live != self.valid(sb) {
                return bad(format!("superblock {sb}: {} live pages counted, {live} marked", self.valid(sb)));
            }
            if live > 0 && !self.held[sb as usize] {
                return bad(format!("superblock {sb} has {live} live pages but nothing maps it"));
            }
            for s in (0..self.pages()).filter(|&s| self.is_live(sb, s)) {
                if self.writable(flash, sb, s) {
                    return bad(format!("superblock {sb}: live page {s} was never programmed"));
                }
            }
        }
        Ok(())
    }
}

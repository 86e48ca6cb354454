//! HSBM_GCL (§3.2.4): data superblocks mapped as in SBM_GCL, plus at most `logs` log
//! superblocks, each page-mapped inside (2-byte entries: page of the logical superblock → slot
//! of the log). Every write goes to the log superblock of its logical superblock, appended at
//! the next slot. A log is merged into its data superblock when it is full, or when a write
//! needs a log and the log table is full (the oldest log is merged: FIFO, the thesis does not
//! say which). Merges are of three kinds (the third only with `merge=bast`):
//!
//! - **switch**: the log holds pages 0..N-1 in order — it becomes the data superblock;
//! - **partial** (`merge=bast`): it holds pages 0..k-1 in order — the rest is copied from the
//!   data superblock into the log's remaining slots, then switch;
//! - **full**: anything else — a fresh superblock gets the newest copy of every page.
//!
//! Partial merges are BAST's, not the thesis': §3.2.4.2 switches only a log whose in-log map
//! is exactly the identity, and merges any other log by copying the newest copy of every page
//! into a fresh superblock. The default, `merge=thesis` ([`MergeRule::Thesis`]), does that: a
//! log written in order but not to its end gets a full merge.
//!
//! The superblocks left with no live page are erased by lazy greedy GC, when no erased one is
//! left (§3.2.4.3). The logical space leaves `logs + 1` superblocks spare so a merge always
//! finds a free superblock.
//!
//! Map-update counters: every page written is one 2-byte in-log entry
//! (`log_entries_updated`), every merge one 8-byte data-map entry (`map_entries_updated`);
//! both are in `map_update_bytes`. Opening a log writes its 16-byte log-table entry (logical
//! and physical superblock), counted in `logs_opened` and `log_open_bytes`, not in
//! `map_update_bytes` (see [`MapCounters`]).

use std::collections::VecDeque;

use zonekit_device::ZonedDevice;

use super::superblocks::SuperStore;
use super::{Ftl, MapCounters};
use crate::ftl::page_map::NONE;
use crate::{Flash, OcError, OcGeometry, Result, SuperLayout};

/// Data superblock map entry, and a log entry's logical and physical superblock numbers.
const ENTRY_BYTES: u64 = 8;
/// In-superblock page map entry.
const SLOT_BYTES: u64 = 2;
const NO_SLOT: u16 = u16::MAX;

/// How a log written in order but not to its end is merged.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MergeRule {
    /// Copy the rest of the data superblock into the log's free slots, then switch (BAST).
    Bast,
    /// A full merge into a fresh superblock, as §3.2.4.2 describes.
    Thesis,
}

struct Log {
    lsb: u32,
    sb: u32,
    /// Page of the logical superblock → slot of the log holding its newest copy.
    slots: Vec<u16>,
    next: u32,
}

pub struct HsbmGcl {
    store: SuperStore,
    data: Vec<u32>,
    /// Oldest first.
    logs: VecDeque<Log>,
    max_logs: u32,
    merge_rule: MergeRule,
    counters: MapCounters,
    copy: Vec<u8>,
}

impl HsbmGcl {
    pub fn new(geometry: OcGeometry, pn: u32, bn: u32, logs: u32) -> Result<HsbmGcl> {
        let layout = SuperLayout::new(geometry, pn, bn)?;
        if logs == 0 {
            return Err(OcError::Config("hsbm-gcl needs at least one log superblock".into()));
        }
        if layout.pages() > NO_SLOT as u32 {
            return Err(OcError::Config(format!("superblocks of {} pages do not fit 2-byte log entries", layout.pages())));
        }
        if logs as u64 + 2 > layout.count() as u64 {
            return Err(OcError::Config(format!(
                "{logs} log superblocks leave no data superblock on {geometry} with {pn} × {bn}-block superblocks ({} superblocks)",
                layout.count()
            )));
        }
        let logical = layout.count() - logs - 1;
        Ok(HsbmGcl {
            data: vec![NONE; logical as usize],
            store: SuperStore::new(layout),
            logs: VecDeque::new(),
            max_logs: logs,
            merge_rule: MergeRule::Thesis,
            counters: MapCounters::default(),
            copy: Vec::new(),
        })
    }

    pub fn with_merge_rule(self, merge_rule: MergeRule) -> HsbmGcl {
        HsbmGcl { merge_rule, ..self }
    }

    fn take_free<D: ZonedDevice>(&mut self, flash: &mut Flash<D>) -> Result<u32> {
        self.store.take_free_or_collect(flash)?.ok_or_else(|| OcError::DeviceFull { ftl: "hsbm-gcl", detail: "no free superblock for a log or a merge".into() })
    }

    /// The index of `lsb`'s log, opening one (and merging the oldest if the table is full).
    fn log_for<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lsb: u32) -> Result<usize> {
        if let Some(i) = self.logs.iter().position(|l| l.lsb == lsb) {
            if self.logs[i].next < self.store.pages() {
                return Ok(i);
            }
            let full = self.logs.remove(i).expect("position found it");
            self.merge(flash, full)?;
        } else if self.logs.len() == self.max_logs as usize {
            let oldest = self.logs.pop_front().expect("the table is full");
            self.merge(flash, oldest)?;
        }
        let sb = self.take_free(flash)?;
        self.logs.push_back(Log { lsb, sb, slots: vec![NO_SLOT; self.store.pages() as usize], next: 0 });
        self.counters.record_log_opened(2 * ENTRY_BYTES);
        Ok(self.logs.len() - 1)
    }

    fn write_page<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, data: &[u8]) -> Result<()> {
        let per = self.store.pages() as u64;
        let (lsb, s) = ((lpn / per) as u32, (lpn % per) as usize);
        let i = self.log_for(flash, lsb)?;
        let log = &mut self.logs[i];
        let slot = log.next;
        self.store.program(flash, log.sb, slot, data)?;
        log.next += 1;
        let previous = std::mem::replace(&mut log.slots[s], slot as u16);
        let sb = log.sb;
        if previous != NO_SLOT {
            self.store.set_live(sb, previous as u32, false);
        } else if self.data[lsb as usize] != NONE {
            self.store.set_live(self.data[lsb as usize], s as u32, false);
        }
        self.counters.record_log_entry(SLOT_BYTES);
        Ok(())
    }

    fn merge<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, log: Log) -> Result<()> {
        let pages = self.store.pages();
        let old = self.data[log.lsb as usize];
        // The log becomes the data superblock: at once when whole and in order, or after a
        // partial merge under BAST's rule; anything else is a full merge.
        let switchable = (0..log.next).all(|s| log.slots[s as usize] == s as u16) && (log.next == pages || self.merge_rule == MergeRule::Bast);
        let page_bytes = flash.page_bytes();
        let mut copy = std::mem::take(&mut self.copy);
        let result = (|| {
            let target = if switchable {
                if log.next < pages {
                    // Partial merge: the data superblock's later pages fill the log's slots.
                    let from_data = if old == NONE { Vec::new() } else { self.store.read_live(flash, old, |s| s >= log.next, &mut copy)? };
                    flash.barrier();
                    for (i, &s) in from_data.iter().enumerate() {
                        self.store.program(flash, log.sb, s, &copy[i * page_bytes..(i + 1) * page_bytes])?;
                    }
                    self.counters.partial_merges += 1;
                    self.counters.pages_copied += from_data.len() as u64;
                } else {
                    self.counters.switch_merges += 1;
                }
                log.sb
            } else {
                // Full merge: the newest copy of every page, read first, then written in order.
                let mut sources = Vec::new();
                copy.clear();
                for s in 0..pages {
                    let (sb, at) = match log.slots[s as usize] {
                        NO_SLOT if old != NONE && self.store.is_live(old, s) => (old, s),
                        NO_SLOT => continue,
                        slot => (log.sb, slot as u32),
                    };
                    copy.resize(copy.len() + page_bytes, 0);
                    let start = copy.len() - page_bytes;
                    self.store.read(flash, sb, at, &mut copy[start..])?;
                    sources.push(s);
                }
                flash.barrier();
                let new = self.take_free(flash)?;
                for (i, &s) in sources.iter().enumerate() {
                    self.store.program(flash, new, s, &copy[i * page_bytes..(i + 1) * page_bytes])?;
                }
                self.store.discard(log.sb);
                self.counters.full_merges += 1;
                self.counters.pages_copied += sources.len() as u64;
                new
            };
            if old != NONE {
                self.store.discard(old);
            }
            self.data[log.lsb as usize] = target;
            self.counters.record_map_entries(1, ENTRY_BYTES);
            Ok(())
        })();
        self.copy = copy;
        result
    }
}

impl Ftl for HsbmGcl {
    fn name(&self) -> &'static str {
        "hsbm-gcl"
    }

    fn logical_pages(&self) -> u64 {
        self.data.len() as u64 * self.store.pages() as u64
    }

    fn write<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, first: u64, data: &[u8]) -> Result<()> {
        for (i, page) in data.chunks(flash.page_bytes()).enumerate() {
            self.write_page(flash, first + i as u64, page)?;
        }
        self.counters.gc_victims = self.store.gc_victims;
        Ok(())
    }

    fn read<D: ZonedDevice>(&mut self, flash: &mut Flash<D>, lpn: u64, buf: &mut [u8]) -> Result<bool> {
        let per = self.store.pages() as u64;
        let (lsb, s) = ((lpn / per) as u32, (lpn % per) as u32);
        if let Some(log) = self.logs.iter().find(|l| l.lsb == lsb) {
            let slot = log.slots[s as usize];
            if slot != NO_SLOT {
                self.store.read(flash, log.sb, slot as u32, buf)?;
                return Ok(true);
            }
        }
        let sb = self.data[lsb as usize];
        if sb == NONE || !self.store.is_live(sb, s) {
            return Ok(false);
        }
        self.store.read(flash, sb, s, buf)?;
        Ok(true)
    }

    /// Data map plus the log table (§4.3: 8 B per superblock + logs × (2 × 8 B + pages × 2 B),
    /// 4.625 KiB for the thesis device with 8 logs).
    fn map_table_bytes(&self) -> u64 {
        self.store.layout().count() as u64 * ENTRY_BYTES + self.max_logs as u64 * (2 * ENTRY_BYTES + self.store.pages() as u64 * SLOT_BYTES)
    }

    fn counters(&self) -> &MapCounters {
        &self.counters
    }

    fn check_invariants<D: ZonedDevice>(&self, flash: &Flash<D>) -> Result<()> {
        let bad = |m: String| Err(OcError::Internal(m));
        let mapped: Vec<u32> = self.data.iter().copied().filter(|&sb| sb != NONE).chain(self.logs.iter().map(|l| l.sb)).collect();
        self.store.check(flash, &mapped)?;
        if self.logs.len() > self.max_logs as usize {
            return bad(format!("{} logs open, at most {}", self.logs.len(), self.max_logs));
        }
        for log in &self.logs {
            if self.logs.iter().filter(|l| l.lsb == log.lsb).count() != 1 {
                return bad(format!("logical superblock {} has two logs", log.lsb));
            }
            let live_slots: Vec<u32> = (0..self.store.pages()).filter(|&k| self.store.is_live(log.sb, k)).collect();
            let mut referenced: Vec<u32> = log.slots.iter().filter(|&&k| k != NO_SLOT).map(|&k| k as u32).collect();
            referenced.sort_unstable();
            if live_slots != referenced || referenced.last().is_some_and(|&k| k >= log.next) {
                return bad(format!("log of superblock {}: live slots {live_slots:?}, referenced {referenced:?}, next {}", log.lsb, log.next));
            }
            let data = self.data[log.lsb as usize];
            for s in (0..self.store.pages()).filter(|&s| log.slots[s as usize] != NO_SLOT) {
                if data != NONE && self.store.is_live(data, s) {
                    return bad(format!("page {s} of logical superblock {} is live in both its log and its data superblock", log.lsb));
                }
            }
        }
        Ok(())
    }
}

//! The allocation scheme pblk uses and the thesis keeps for every greedy FTL (§3.2.1.1,
//! §3.2.1.4): per group of parallel units (one PU, or PN of them for superblocks), a FIFO queue
//! of empty units and a FIFO queue of written ones, and a `next_ch_lun` cursor so consecutive
//! allocations and consecutive GC victims rotate over groups. A unit is a block or a superblock.

use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct Queues {
    empty: Vec<VecDeque<u32>>,
    used: Vec<VecDeque<u32>>,
    /// The group after the one last allocated from or collected.
    cursor: usize,
    empty_units: usize,
}

impl Queues {
    /// Every unit starts empty; `group_of` says which group a unit belongs to.
    pub fn new(groups: u32, units: u32, group_of: impl Fn(u32) -> u32) -> Queues {
        let mut empty = vec![VecDeque::new(); groups as usize];
        for unit in 0..units {
            empty[group_of(unit) as usize].push_back(unit);
        }
        Queues { empty, used: vec![VecDeque::new(); groups as usize], cursor: 0, empty_units: units as usize }
    }

    pub fn groups(&self) -> usize {
        self.empty.len()
    }

    pub fn empty_units(&self) -> usize {
        self.empty_units
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Groups in the order an allocation or a victim scan visits them: from the cursor on.
    pub fn rotation(&self) -> impl Iterator<Item = usize> {
        let (n, start) = (self.groups(), self.cursor);
        (0..n).map(move |i| (start + i) % n)
    }

    pub fn set_cursor_after(&mut self, group: usize) {
        self.cursor = (group + 1) % self.groups();
    }

    /// Takes the oldest empty unit of the first group (from the cursor) that has one and moves
    /// the cursor past that group.
    pub fn take_empty(&mut self) -> Option<u32> {
        let group = self.rotation().find(|&g| !self.empty[g].is_empty())?;
        self.take_empty_in(group)
    }

    pub fn take_empty_in(&mut self, group: usize) -> Option<u32> {
        let unit = self.empty[group].pop_front()?;
        self.empty_units -= 1;
        self.set_cursor_after(group);
        Some(unit)
    }

    pub fn has_empty_in(&self, group: usize) -> bool {
        !self.empty[group].is_empty()
    }

    pub fn push_empty(&mut self, group: usize, unit: u32) {
        self.empty[group].push_back(unit);
        self.empty_units += 1;
    }

    pub fn push_used(&mut self, group: usize, unit: u32) {
        self.used[group].push_back(unit);
    }

    /// Greedy victim: scanning groups from the cursor and each queue from its head, the used
    /// unit with the lowest `cost` among those `cost` accepts (`Some`); the first found wins
    /// ties, so equal victims rotate over groups. `stop_at` ends the scan early when a unit
    /// costs that little. Removes it from its queue and moves the cursor past its group.
    pub fn take_victim(&mut self, cost: impl Fn(u32) -> Option<u32>, stop_at: u32) -> Option<(usize, u32)> {
        let mut best: Option<(u32, usize, usize)> = None;
        'scan: for group in self.rotation() {
            for (index, &unit) in self.used[group].iter().enumerate() {
                if let Some(c) = cost(unit) {
                    if best.is_none_or(|(b, _, _)| c < b) {
                        best = Some((c, group, index));
                        if c <= stop_at {
                            break 'scan;
                        }
                    }
                }
            }
        }
        let (_, group, index) = best?;
        let unit = self.used[group].remove(index).expect("index from the scan");
        self.set_cursor_after(group);
        Some((group, unit))
    }

    /// Every unit is in exactly one queue or held outside (`outside` of them, e.g. active).
    pub fn check(&self, units: u32, outside: usize) -> Result<(), String> {
        let mut seen = vec![false; units as usize];
        let mut count = 0;
        for unit in self.empty.iter().chain(&self.used).flatten() {
            if std::mem::replace(&mut seen[*unit as usize], true) {
                return Err(format!("unit {unit} is queued twice"));
            }
            count += 1;
        }
        if count + outside != units as usize {
            return Err(format!("{count} units queued and {outside} held, of {units}"));
        }
        if self.empty_units != self.empty.iter().map(VecDeque::len).sum::<usize>() {
            return Err("empty-unit count disagrees with the queues".into());
        }
        Ok(())
    }
}

//! [`IdMap`]: block id → slot of a policy's node array, the one hash lookup per access.
//!
//! Open addressing with linear probing at a load of at most one half, so a miss — the common
//! case in a cache simulation — probes about 2.5 slots. The table doubles as the cache fills,
//! up to what the most entries the policy can hold need (a large cache over a small trace
//! costs what the trace touches). Removal shifts the following entries back (no tombstones),
//! so a table that sees billions of inserts and removals never degrades.
//! `zonekit_base::BlockMap` has no removal, which an evicting cache needs on every miss.

use zonekit_base::map::mix64;
use zonekit_base::mem::{huge_vec, prefetch_read};

/// The key no block may have: it marks an empty slot.
pub const RESERVED_ID: u64 = u64::MAX;

#[derive(Copy, Clone)]
struct Slot {
    key: u64,
    value: u32,
}

const EMPTY: Slot = Slot { key: RESERVED_ID, value: 0 };

pub struct IdMap {
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: the hash's top bits pick the home slot.
    shift: u32,
    len: usize,
    len_max: usize,
}

impl IdMap {
    /// A map for at most `len_max` entries.
    pub fn new(len_max: usize) -> IdMap {
        let size = (len_max.max(1) * 2).next_power_of_two().clamp(16, 1 << 16);
        IdMap { slots: huge_vec(size, EMPTY), shift: 64 - size.trailing_zeros(), len: 0, len_max }
    }

    fn grow(&mut self) {
        let size = self.slots.len() * 2;
        let old = std::mem::replace(&mut self.slots, huge_vec(size, EMPTY));
        self.shift -= 1;
        let mask = self.mask();
        for s in old.into_iter().filter(|s| s.key != RESERVED_ID) {
            let mut i = self.home(s.key);
            while self.slots[i].key != RESERVED_ID {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (mix64(key) >> self.shift) as usize
    }

    #[inline]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn position(&self, key: u64) -> Option<usize> {
        debug_assert_ne!(key, RESERVED_ID);
        let mut i = self.home(key);
        loop {
            let s = self.slots[i];
            if s.key == key {
                return Some(i);
            }
            if s.key == RESERVED_ID {
                return None;
            }
            i = (i + 1) & self.mask();
        }
    }

    /// Starts fetching the slot `key` hashes to, ahead of a lookup.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        prefetch_read(&self.slots[self.home(key)]);
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<u32> {
        self.position(key).map(|i| self.slots[i].value)
    }

    /// Inserts a key that is not in the map.
    #[inline]
    pub fn insert(&mut self, key: u64, value: u32) {
        assert_ne!(key, RESERVED_ID, "block id u64::MAX is reserved");
        assert!(self.len < self.len_max, "IdMap holds at most {} entries", self.len_max);
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mut i = self.home(key);
        loop {
            let k = self.slots[i].key;
            debug_assert_ne!(k, key, "key {key} inserted twice");
            if k == RESERVED_ID {
                self.slots[i] = Slot { key, value };
                self.len += 1;
                return;
            }
            i = (i + 1) & self.mask();
        }
    }

    /// Removes `key`, returning its value.
    #[inline]
    pub fn remove(&mut self, key: u64) -> Option<u32> {
        let mut hole = self.position(key)?;
        let value = self.slots[hole].value;
        let mask = self.mask();
        // Backward shift: an entry after the hole moves into it unless its home lies
        // cyclically after the hole (moving it would put it before its home).
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let s = self.slots[j];
            if s.key == RESERVED_ID {
                break;
            }
            let from_home = j.wrapping_sub(self.home(s.key)) & mask;
            let from_hole = j.wrapping_sub(hole) & mask;
            if from_home >= from_hole {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use zonekit_base::Rng;

    /// Random inserts and removals over a small key space (long probe chains, wrap-around)
    /// agree with std's map.
    #[test]
    fn agrees_with_a_hash_map() {
        for seed in 1..=20 {
            let mut rng = Rng::new(seed);
            let limit = if seed % 2 == 0 { 40 } else { 5000 };
            let mut map = IdMap::new(limit);
            let mut model = HashMap::new();
            for step in 0..5000u32 {
                let key = if seed % 2 == 0 { rng.below(60) } else { rng.below(1 << 40) >> rng.below(40) };
                match (model.contains_key(&key), rng.below(3)) {
                    (false, _) if model.len() < limit => {
                        map.insert(key, step);
                        model.insert(key, step);
                    }
                    (true, 0) => assert_eq!(map.remove(key), model.remove(&key), "seed {seed} step {step}"),
                    _ => {}
                }
                assert_eq!(map.get(key), model.get(&key).copied(), "seed {seed} step {step}");
                assert_eq!(map.len(), model.len());
            }
            for (k, v) in &model {
                assert_eq!(map.get(*k), Some(*v), "seed {seed}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "at most 2 entries")]
    fn refuses_more_than_it_was_sized_for() {
        let mut map = IdMap::new(2);
        for k in 0..3 {
            map.insert(k, 0);
        }
    }
}

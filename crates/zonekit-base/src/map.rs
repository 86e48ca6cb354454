//! Block-keyed maps: [`BlockMap`], an open-addressing map with no per-entry allocation, and
//! [`DistinctCounter`], a HyperLogLog that sizes one before the pass that fills it.

use crate::mem::{huge_vec, prefetch_read};

/// An open-addressing hash map from block keys to small values, with no per-entry allocation.
/// Key and value share one slot (12 bytes for a `u32` value), so a lookup costs one cache
/// miss. Sized for `n` entries it holds them at a load of 0.85, so a presized `BlockMap<u32>`
/// costs 14.1 bytes per distinct block; when it has to grow it doubles. Size it from
/// [`DistinctCounter`] when the count is not known.
pub struct BlockMap<V> {
    slots: Vec<Slot<V>>,
    len: usize,
}

/// A key split in two u32 halves so that a slot with a u32 value is 12 bytes, not 16.
#[derive(Copy, Clone)]
#[repr(C)]
struct Slot<V> {
    key_lo: u32,
    key_hi: u32,
    value: V,
}

impl<V> Slot<V> {
    #[inline]
    fn key(&self) -> u64 {
        (self.key_hi as u64) << 32 | self.key_lo as u64
    }
}

const EMPTY: u64 = u64::MAX;
const MAX_LOAD: f64 = 0.85;

/// MurmurHash3's 64-bit finaliser: every key bit affects every hash bit.
#[inline]
pub fn mix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    k ^= k >> 33;
    k = k.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    k ^ (k >> 33)
}

impl<V: Copy + Default> BlockMap<V> {
    pub fn new() -> BlockMap<V> {
        BlockMap::with_capacity(1024)
    }

    pub fn with_capacity(entries: usize) -> BlockMap<V> {
        let n = ((entries as f64 / MAX_LOAD).ceil() as usize).max(16);
        BlockMap { slots: huge_vec(n, Self::empty_slot()), len: 0 }
    }

    fn empty_slot() -> Slot<V> {
        Slot { key_lo: u32::MAX, key_hi: u32::MAX, value: V::default() }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of memory held.
    pub fn memory_bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Slot<V>>()
    }

    #[inline]
    fn slot(&self, key: u64) -> usize {
        // Lemire's fast range reduction: any table size, no division.
        ((mix64(key) as u128 * self.slots.len() as u128) >> 64) as usize
    }

    #[inline]
    fn next_slot(&self, i: usize) -> usize {
        if i + 1 == self.slots.len() {
            0
        } else {
            i + 1
        }
    }

    /// Hints the CPU to fetch the slot `key` hashes to, ahead of a lookup.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        let i = self.slot(key);
        prefetch_read(&self.slots[i]);
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<V> {
        debug_assert_ne!(key, EMPTY);
        let mut i = self.slot(key);
        loop {
            let s = &self.slots[i];
            let k = s.key();
            if k == key {
                return Some(s.value);
            }
            if k == EMPTY {
                return None;
            }
            i = self.next_slot(i);
        }
    }

    /// The value slot for `key`, inserted as `V::default()` if absent; `true` if inserted.
    #[inline]
    pub fn entry(&mut self, key: u64) -> (&mut V, bool) {
        assert_ne!(key, EMPTY, "u64::MAX is reserved");
        if (self.len + 1) as f64 > self.slots.len() as f64 * MAX_LOAD {
            self.grow();
        }
        let mut i = self.slot(key);
        loop {
            let k = self.slots[i].key();
            if k == key {
                return (&mut self.slots[i].value, false);
            }
            if k == EMPTY {
                let s = &mut self.slots[i];
                (s.key_lo, s.key_hi) = (key as u32, (key >> 32) as u32);
                self.len += 1;
                return (&mut s.value, true);
            }
            i = self.next_slot(i);
        }
    }

    pub fn insert(&mut self, key: u64, value: V) -> Option<V> {
        let (slot, inserted) = self.entry(key);
        let old = *slot;
        *slot = value;
        (!inserted).then_some(old)
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        self.slots = huge_vec(old.len() * 2, Self::empty_slot());
        for s in old {
            let k = s.key();
            if k != EMPTY {
                let mut i = self.slot(k);
                while self.slots[i].key() != EMPTY {
                    i = self.next_slot(i);
                }
                self.slots[i] = s;
            }
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (u64, V)> + '_ {
        self.slots.iter().filter(|s| s.key() != EMPTY).map(|s| (s.key(), s.value))
    }
}

impl<V: Copy + Default> Default for BlockMap<V> {
    fn default() -> Self {
        BlockMap::new()
    }
}

/// HyperLogLog with 2^14 registers (16 KiB): estimates a number of distinct keys within about
/// 1 % (standard error 1.04/√16384), to size a [`BlockMap`] before the pass that fills it.
pub struct DistinctCounter {
    registers: Vec<u8>,
}

impl DistinctCounter {
    const P: u32 = 14;

    pub fn new() -> DistinctCounter {
        DistinctCounter { registers: vec![0; 1 << Self::P] }
    }

    #[inline]
    pub fn add(&mut self, key: u64) {
        let h = mix64(key ^ 0x5851_F42D_4C95_7F2D);
        let index = (h >> (64 - Self::P)) as usize;
        let rank = ((h << Self::P) | (1 << (Self::P - 1))).leading_zeros() as u8 + 1;
        let r = &mut self.registers[index];
        *r = (*r).max(rank);
    }

    pub fn estimate(&self) -> u64 {
        let m = self.registers.len() as f64;
        let sum: f64 = self.registers.iter().map(|&r| 2f64.powi(-(r as i32))).sum();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            (m * (m / zeros as f64).ln()).round() as u64 // linear counting for small sets
        } else {
            raw.round() as u64
        }
    }

    /// An estimate grown by a margin of four standard errors and a few entries, so that a map
    /// or a device sized from it rarely has to grow.
    pub fn with_margin(estimate: u64) -> u64 {
        (estimate as f64 * 1.04) as u64 + 16
    }
}

impl Default for DistinctCounter {
    fn default() -> Self {
        DistinctCounter::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn block_map_agrees_with_std_hashmap(ops in proptest::collection::vec((0u64..500, any::<u32>()), 0..3000)) {
            let mut m = BlockMap::<u32>::with_capacity(4);
            let mut reference = std::collections::HashMap::new();
            for &(k, v) in &ops {
                prop_assert_eq!(m.insert(k, v), reference.insert(k, v));
            }
            prop_assert_eq!(m.len(), reference.len());
            for (k, v) in &reference {
                prop_assert_eq!(m.get(*k), Some(*v));
            }
            prop_assert_eq!(m.get(10_000), None);
        }
    }

    #[test]
    fn presized_block_map_costs_at_most_16_bytes_per_entry() {
        let n = 1_000_000u64;
        let mut counter = DistinctCounter::new();
        for k in 0..n {
            counter.add(k * 7919);
            counter.add(k * 7919); // repeats do not count
        }
        let estimate = counter.estimate();
        assert!((estimate as f64 - n as f64).abs() / (n as f64) < 0.03, "estimate {estimate}");
        let mut m = BlockMap::<u32>::with_capacity((estimate as f64 * 1.03) as usize);
        for k in 0..n {
            m.insert(k * 7919, k as u32);
        }
        let per = m.memory_bytes() as f64 / m.len() as f64;
        assert!(per <= 16.0, "{per} bytes per entry");
    }

    #[test]
    fn distinct_counter_small_sets() {
        let mut c = DistinctCounter::new();
        for k in 0..100 {
            c.add(k);
        }
        assert!((95..=105).contains(&c.estimate()), "{}", c.estimate());
    }
}

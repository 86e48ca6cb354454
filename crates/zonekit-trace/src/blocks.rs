//! Block streams: requests split into aligned blocks keyed by (volume, block number), and the
//! compact map from block keys to values that the analyses and oracles use.

use crate::record::{Op, Record, Result, TraceError};

/// One block of one request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BlockIo {
    pub time_us: u64,
    pub volume: u32,
    pub block: u64,
    pub op: Op,
    /// The first block of its request (counts requests after splitting).
    pub starts_request: bool,
}

/// Block numbers below 2^40 and volume ids below 2^24 pack into one u64 key.
pub const BLOCK_BITS: u32 = 40;
pub const MAX_VOLUME: u32 = (1 << (64 - BLOCK_BITS)) - 1;

impl BlockIo {
    /// (volume, block) packed into one integer.
    #[inline]
    pub fn key(&self) -> u64 {
        block_key(self.volume, self.block)
    }
}

#[inline]
pub fn block_key(volume: u32, block: u64) -> u64 {
    debug_assert!(volume <= MAX_VOLUME && block < 1 << BLOCK_BITS);
    ((volume as u64) << BLOCK_BITS) | block
}

/// What to keep when splitting.
#[derive(Clone, Debug)]
pub struct SplitOptions {
    pub block_size_bytes: u64,
    /// Keep records with `start_us <= time_us < end_us`.
    pub window_us: Option<(u64, u64)>,
    /// Keep only these volumes.
    pub volumes: Option<Vec<u32>>,
    /// Keep only this kind of operation.
    pub only: Option<Op>,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions { block_size_bytes: 4096, window_us: None, volumes: None, only: None }
    }
}

/// Splits records into the aligned blocks they touch.
pub struct Splitter<I> {
    records: I,
    options: SplitOptions,
    block_shift: u32,
    /// The request being split: (record, first block, next block, last block).
    current: Option<(Record, u64, u64, u64)>,
    /// Requests of zero length (skipped).
    pub empty_requests: u64,
}

impl<I: Iterator<Item = Result<Record>>> Splitter<I> {
    pub fn new(records: I, options: SplitOptions) -> Result<Splitter<I>> {
        if !options.block_size_bytes.is_power_of_two() || options.block_size_bytes < 512 {
            return Err(TraceError::Invalid(format!("block size {} is not a power of two of at least 512", options.block_size_bytes)));
        }
        let block_shift = options.block_size_bytes.trailing_zeros();
        Ok(Splitter { records, options, block_shift, current: None, empty_requests: 0 })
    }

    fn wanted(&self, r: &Record) -> bool {
        self.options.window_us.is_none_or(|(s, e)| r.time_us >= s && r.time_us < e)
            && self.options.volumes.as_ref().is_none_or(|v| v.contains(&r.volume))
            && self.options.only.is_none_or(|op| op == r.op)
    }
}

impl<I: Iterator<Item = Result<Record>>> Iterator for Splitter<I> {
    type Item = Result<BlockIo>;

    #[inline]
    fn next(&mut self) -> Option<Result<BlockIo>> {
        loop {
            if let Some((r, first, next, last)) = &mut self.current {
                if *next <= *last {
                    let b = BlockIo { time_us: r.time_us, volume: r.volume, block: *next, op: r.op, starts_request: *next == *first };
                    *next += 1;
                    return Some(Ok(b));
                }
                self.current = None;
            }
            let r = match self.records.next()? {
                Ok(r) => r,
                Err(e) => return Some(Err(e)),
            };
            if !self.wanted(&r) {
                continue;
            }
            if r.len_bytes == 0 {
                self.empty_requests += 1;
                continue;
            }
            let Some(end) = r.offset_bytes.checked_add(r.len_bytes - 1) else {
                return Some(Err(TraceError::Invalid(format!("request at offset {} of {} bytes overflows", r.offset_bytes, r.len_bytes))));
            };
            let (first, last) = (r.offset_bytes >> self.block_shift, end >> self.block_shift);
            if last >= 1 << BLOCK_BITS || r.volume > MAX_VOLUME {
                return Some(Err(TraceError::Invalid(format!(
                    "volume {} block {last} is beyond the supported range (volume < 2^24, block < 2^40)",
                    r.volume
                ))));
            }
            self.current = Some((r, first, first, last));
        }
    }
}

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
        if i + 1 == self.slots.len() { 0 } else { i + 1 }
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
        let old = std::mem::replace(&mut self.slots, vec![Self::empty_slot(); 0]);
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

/// A vector of `n` copies of `value` whose memory is backed by transparent huge pages where
/// the kernel offers them (advised before first touch). Large tables accessed at random (block
/// maps, FTL state) otherwise pay a TLB miss on almost every access.
pub fn huge_vec<T: Copy>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    advise_huge_pages(&v);
    v.resize(n, value);
    v
}

/// Advises huge pages for a vector's allocated (not yet touched) capacity.
pub fn advise_huge_pages<T>(v: &Vec<T>) {
    const HUGE: usize = 2 << 20;
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < 2 * HUGE {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = (v.as_ptr() as usize).div_ceil(HUGE) * HUGE;
        let end = (v.as_ptr() as usize + bytes) / HUGE * HUGE;
        if end > start {
            // SAFETY: the range lies inside our own allocation; madvise only changes how the
            // kernel backs it, never its contents or validity. Failure is harmless.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Asks the CPU to bring `*t`'s cache line in (a no-op where not supported).
#[inline(always)]
pub fn prefetch_read<T>(t: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint; it never faults, even on an invalid address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(t as *const T as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = t;
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

    fn rec(offset: u64, len: u64) -> Result<Record> {
        Ok(Record { time_us: 1, volume: 3, offset_bytes: offset, len_bytes: len, op: Op::Write })
    }

    proptest! {
        /// Every byte of every request is covered by exactly the blocks emitted for it, in order.
        #[test]
        fn split_covers_exactly_the_touched_blocks(reqs in proptest::collection::vec((0u64..1 << 30, 1u64..1 << 20), 1..50), shift in 9u32..16) {
            let bs = 1u64 << shift;
            let recs: Vec<_> = reqs.iter().map(|&(o, l)| rec(o, l)).collect();
            let blocks: Vec<BlockIo> = Splitter::new(recs.into_iter(), SplitOptions { block_size_bytes: bs, ..Default::default() }).unwrap().map(|b| b.unwrap()).collect();
            let mut expected = Vec::new();
            for &(o, l) in &reqs {
                for b in o / bs..=(o + l - 1) / bs {
                    expected.push(b);
                }
            }
            prop_assert_eq!(blocks.iter().map(|b| b.block).collect::<Vec<_>>(), expected);
        }

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
    fn zero_length_requests_and_filters() {
        let recs = vec![rec(0, 0), rec(4096, 8192), Ok(Record { op: Op::Read, ..rec(0, 4096).unwrap() })];
        let mut s = Splitter::new(recs.into_iter(), SplitOptions { only: Some(Op::Write), ..Default::default() }).unwrap();
        let blocks: Vec<_> = s.by_ref().map(|b| b.unwrap()).map(|b| (b.block, b.starts_request)).collect();
        assert_eq!(blocks, vec![(1, true), (2, false)]);
        assert_eq!(s.empty_requests, 1);
        assert!(Splitter::new(std::iter::empty(), SplitOptions { block_size_bytes: 1000, ..Default::default() }).is_err());
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

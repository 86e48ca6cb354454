//! `dam` (§3.1.3): DAM's counting Bloom filter of chunk accesses with periodic decay.
//!
//! Each access increments (saturating at 15) the k counters its chunk hashes to (k = 2, the
//! `hashes` parameter); a chunk's estimate is the least of its k counters; every `period`
//! accesses (4,096 by default) all counters are halved. Our choices where the thesis is
//! silent: the access that completes a period is counted before the halving; two hash
//! functions that land on one counter increment it once (one access, one count); the hash
//! functions are fixed salts over a 64-bit mix of the chunk id (see `bloom.rs`).
//!
//! Classes from the estimate e: 0 for e = 0, else min(⌊log2 e⌋ + 1, 3) — 1 for a single
//! recent access, 2 for 2–3, 3 for 4 or more: 4 classes.
//!
//! Sizes: memory × 2 four-bit counters (32,768 in the default 16 KiB), packed 16 to a 64-bit
//! word so that halving is a shift and a mask a word. A zero budget is refused. An access is
//! O(k); the halving is O(memory) once a period, 8 word operations an access amortized at
//! the defaults.

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::bloom::{BloomHashes, HASHES_MAX};
use super::{param_error, too_small, Sampler, SamplerBudget, SamplerInfo};
use crate::{CacheError, Result};

pub const DAM: SamplerInfo = PolicyInfo {
    name: "dam",
    summary: "DAM: a counting Bloom filter of 4-bit counters, halved every period (§3.1.3)",
    role: Role::Baseline,
    params: &[
        ParamInfo { name: "period", default: "4096", summary: "accesses between halvings of every counter" },
        ParamInfo { name: "hashes", default: "2", summary: "hash functions (k, 1 to 8)" },
    ],
    make: |p, budget| {
        let period = p.u64("period").map_err(param_error)?;
        let hashes = p.u64("hashes").map_err(param_error)?;
        Ok(Box::new(Dam::new(budget, period, hashes as usize)?))
    },
};

const COUNTER_BITS: u64 = 4;
const COUNTER_MAX: u64 = (1 << COUNTER_BITS) - 1;
const PER_WORD: u64 = 64 / COUNTER_BITS;
/// Every counter's low bit clear: `(w >> 1) & HALVE_MASK` halves 16 counters at once.
const HALVE_MASK: u64 = 0x7777_7777_7777_7777;

pub struct Dam {
    words: Vec<u64>,
    counters: u64,
    hashes: BloomHashes,
    period: u64,
    /// Accesses since the last halving.
    ticks: u64,
}

impl Dam {
    pub fn new(budget: SamplerBudget, period: u64, hashes: usize) -> Result<Dam> {
        if period == 0 || !(1..=HASHES_MAX).contains(&hashes) {
            return Err(CacheError::Config(format!("sampler dam: period={period} (at least 1), hashes={hashes} (1 to {HASHES_MAX})")));
        }
        let counters = budget.memory_bytes * 8 / COUNTER_BITS;
        if counters == 0 {
            return Err(too_small(DAM.name, budget, 1));
        }
        Ok(Dam { words: vec![0; counters.div_ceil(PER_WORD) as usize], counters, hashes: BloomHashes::new(hashes, counters), period, ticks: 0 })
    }

    #[inline]
    fn counter(&self, i: usize) -> u64 {
        (self.words[i / PER_WORD as usize] >> (i % PER_WORD as usize * COUNTER_BITS as usize)) & COUNTER_MAX
    }

    /// The least of the chunk's counters.
    pub fn estimate(&self, chunk: u64) -> u64 {
        let mut slots = [0; HASHES_MAX];
        let n = self.hashes.slots(chunk, &mut slots);
        slots[..n].iter().map(|&i| self.counter(i)).min().unwrap_or(0)
    }

    fn halve(&mut self) {
        for w in &mut self.words {
            *w = (*w >> 1) & HALVE_MASK;
        }
    }
}

impl Sampler for Dam {
    fn name(&self) -> &'static str {
        DAM.name
    }

    fn access(&mut self, chunk: u64) {
        let mut slots = [0; HASHES_MAX];
        let n = self.hashes.slots(chunk, &mut slots);
        for &i in &slots[..n] {
            if self.counter(i) < COUNTER_MAX {
                self.words[i / PER_WORD as usize] += 1 << (i % PER_WORD as usize * COUNTER_BITS as usize);
            }
        }
        self.ticks += 1;
        if self.ticks == self.period {
            self.ticks = 0;
            self.halve();
        }
    }

    fn classes(&self) -> u8 {
        4
    }

    #[inline]
    fn class(&self, chunk: u64) -> u8 {
        // ⌊log2 e⌋ + 1 is the bit length of e (and 0 for e = 0).
        (u64::BITS - self.estimate(chunk).leading_zeros()).min(3) as u8
    }

    fn memory_bytes(&self) -> u64 {
        (self.counters * COUNTER_BITS).div_ceil(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dam(memory_bytes: u64, period: u64) -> Dam {
        Dam::new(SamplerBudget { memory_bytes, ..Default::default() }, period, 2).unwrap()
    }

    #[test]
    fn sizes_and_bad_configurations() {
        let d = Dam::new(SamplerBudget::default(), 4_096, 2).unwrap();
        assert_eq!((d.counters, d.words.len(), d.memory_bytes()), (32_768, 2_048, 16 * 1024));
        let odd = dam(3, 10); // 6 counters in one word
        assert_eq!((odd.counters, odd.words.len(), odd.memory_bytes()), (6, 1, 3));
        assert!(Dam::new(SamplerBudget { memory_bytes: 0, ..Default::default() }, 1, 2).is_err());
        assert!(Dam::new(SamplerBudget::default(), 0, 2).is_err());
        assert!(Dam::new(SamplerBudget::default(), 1, 0).is_err());
        assert!(Dam::new(SamplerBudget::default(), 1, 9).is_err());
    }

    #[test]
    fn classes_follow_the_log_of_the_count_and_counters_saturate() {
        let mut d = dam(16 * 1024, 1 << 40);
        let mut classes = vec![d.class(9)];
        for _ in 0..20 {
            d.access(9);
            classes.push(d.class(9));
        }
        assert_eq!(classes[..6], [0, 1, 2, 2, 3, 3]);
        assert!(classes[6..].iter().all(|&c| c == 3));
        assert_eq!(d.estimate(9), 15, "4-bit counters saturate");
        assert_eq!(d.estimate(10), 0);
    }

    #[test]
    fn every_counter_is_halved_after_each_period() {
        let mut d = dam(16 * 1024, 8);
        for _ in 0..7 {
            d.access(1);
        }
        assert_eq!((d.estimate(1), d.class(1)), (7, 3));
        d.access(2); // the 8th access completes the period: 7 → 3, 1 → 0
        assert_eq!((d.estimate(1), d.estimate(2), d.class(1)), (3, 0, 2));
        for c in 100..108 {
            d.access(c);
        }
        assert_eq!((d.estimate(1), d.class(1)), (1, 1));
        for c in 200..208 {
            d.access(c);
        }
        assert_eq!((d.estimate(1), d.class(1)), (0, 0), "forgotten after 3 periods without access");
        assert!(d.words.iter().all(|&w| w == 0));
    }

    #[test]
    fn halving_a_word_keeps_neighbouring_counters_apart() {
        let mut d = dam(8, 1 << 40); // 16 counters, one word
        d.words[0] = 0xF1F1_F1F1_F1F1_F1F1;
        d.halve();
        assert_eq!(d.words[0], 0x7070_7070_7070_7070);
        assert!((0..16).all(|i| d.counter(i) == if i % 2 == 1 { 7 } else { 0 }));
    }
}

//! `mbf` (§3.1.3): multiple Bloom filters (Park & Du, MSST'11) of chunk accesses.
//!
//! V bit-vector filters (V = 4, the `filters` parameter), k = 2 hash functions. Each access
//! sets its chunk's k bits in the current filter, and the filters take turns per access
//! (round robin: the next access writes the next filter). Every `period` accesses (4,096 by
//! default) the next filter in round-robin order is cleared and becomes the newest. A
//! chunk's temperature is the weighted sum over the filters that hold all k of its bits, with
//! weights V, V − 1, …, 1 from the most recently cleared filter (it holds only the latest
//! period) to the oldest (up to V periods of history): 4, 3, 2, 1 at V = 4. Hot iff the sum
//! is at least `hot` (4 by default): 2 classes.
//!
//! Our choices where the thesis is silent: the write pointer (per access) and the clearing
//! pointer (per period) turn independently; before the first clearing, filter 0 counts as
//! the newest; the access that completes a period is recorded before the clearing; the hash
//! functions are fixed salts over a 64-bit mix of the chunk id (see `bloom.rs`).
//!
//! Sizes: memory × 8 bits split evenly over the V filters (32,768 bits each in the default
//! 16 KiB); a budget with no bit for each filter is refused. An access and a query are O(V·k);
//! a clearing is O(memory / V) once a period (2 word writes an access at the defaults).

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::bloom::{BloomHashes, HASHES_MAX};
use super::{param_error, too_small, Sampler, SamplerBudget, SamplerInfo};
use crate::{CacheError, Result};

pub const MBF: SamplerInfo = PolicyInfo {
    name: "mbf",
    summary: "multiple Bloom filters: V bit vectors used round robin, one cleared each period (§3.1.3)",
    role: Role::Baseline,
    params: &[
        ParamInfo { name: "filters", default: "4", summary: "bit-vector filters (V, 1 to 16)" },
        ParamInfo { name: "hashes", default: "2", summary: "hash functions (k, 1 to 8)" },
        ParamInfo { name: "period", default: "4096", summary: "accesses between clearings of the next filter" },
        ParamInfo { name: "hot", default: "4", summary: "weighted sum (weights V..1, newest first) that makes a chunk hot" },
    ],
    make: |p, budget| {
        let read = |name| p.u64(name).map_err(param_error);
        let config = MbfConfig { filters: read("filters")? as usize, hashes: read("hashes")? as usize, period: read("period")?, hot: read("hot")? };
        Ok(Box::new(Mbf::new(budget, config)?))
    },
};

pub const FILTERS_MAX: usize = 16;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MbfConfig {
    pub filters: usize,
    pub hashes: usize,
    pub period: u64,
    /// The least weighted sum that is hot, 1 to V(V + 1)/2.
    pub hot: u64,
}

impl Default for MbfConfig {
    fn default() -> Self {
        MbfConfig { filters: 4, hashes: 2, period: 4_096, hot: 4 }
    }
}

pub struct Mbf {
    /// Filter f is `bits[f * words_per_filter..][..words_per_filter]`.
    bits: Vec<u64>,
    words_per_filter: usize,
    bits_per_filter: u64,
    filters: usize,
    hashes: BloomHashes,
    period: u64,
    hot: u64,
    /// Accesses since the last clearing.
    ticks: u64,
    /// The filter the next access writes.
    current: usize,
    /// The most recently cleared filter.
    newest: usize,
}

impl Mbf {
    pub fn new(budget: SamplerBudget, config: MbfConfig) -> Result<Mbf> {
        let MbfConfig { filters, hashes, period, hot } = config;
        let sum_max = (filters * (filters + 1) / 2) as u64;
        if !(1..=FILTERS_MAX).contains(&filters) || !(1..=HASHES_MAX).contains(&hashes) || period == 0 || !(1..=sum_max).contains(&hot) {
            let why = if !(1..=FILTERS_MAX).contains(&filters) {
                format!("filters={filters}: 1 to {FILTERS_MAX}")
            } else if !(1..=HASHES_MAX).contains(&hashes) {
                format!("hashes={hashes}: 1 to {HASHES_MAX}")
            } else if period == 0 {
                "period=0: at least 1".to_string()
            } else {
                format!("hot={hot}: 1 to {sum_max} with {filters} filters (the largest weighted sum)")
            };
            return Err(CacheError::Config(format!("sampler mbf: {why}")));
        }
        let bits_per_filter = budget.memory_bytes * 8 / filters as u64;
        if bits_per_filter == 0 {
            return Err(too_small(MBF.name, budget, (filters as u64).div_ceil(8)));
        }
        let words_per_filter = bits_per_filter.div_ceil(64) as usize;
        Ok(Mbf {
            bits: vec![0; filters * words_per_filter],
            words_per_filter,
            bits_per_filter,
            filters,
            hashes: BloomHashes::new(hashes, bits_per_filter),
            period,
            hot,
            ticks: 0,
            current: 0,
            newest: 0,
        })
    }

    /// The recency-weighted sum over the filters holding `chunk`.
    pub fn temperature(&self, chunk: u64) -> u64 {
        let mut slots = [0; HASHES_MAX];
        let n = self.hashes.slots(chunk, &mut slots);
        let mut sum = 0;
        for age in 0..self.filters {
            let f = (self.newest + self.filters - age) % self.filters;
            let filter = &self.bits[f * self.words_per_filter..][..self.words_per_filter];
            if slots[..n].iter().all(|&i| filter[i / 64] >> (i % 64) & 1 == 1) {
                sum += (self.filters - age) as u64;
            }
        }
        sum
    }
}

impl Sampler for Mbf {
    fn name(&self) -> &'static str {
        MBF.name
    }

    fn access(&mut self, chunk: u64) {
        let mut slots = [0; HASHES_MAX];
        let n = self.hashes.slots(chunk, &mut slots);
        let filter = &mut self.bits[self.current * self.words_per_filter..][..self.words_per_filter];
        for &i in &slots[..n] {
            filter[i / 64] |= 1 << (i % 64);
        }
        self.current = (self.current + 1) % self.filters;
        self.ticks += 1;
        if self.ticks == self.period {
            self.ticks = 0;
            self.newest = (self.newest + 1) % self.filters;
            self.bits[self.newest * self.words_per_filter..][..self.words_per_filter].fill(0);
        }
    }

    fn classes(&self) -> u8 {
        2
    }

    #[inline]
    fn class(&self, chunk: u64) -> u8 {
        (self.temperature(chunk) >= self.hot) as u8
    }

    fn memory_bytes(&self) -> u64 {
        (self.filters as u64 * self.bits_per_filter).div_ceil(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mbf(period: u64) -> Mbf {
        Mbf::new(SamplerBudget::default(), MbfConfig { period, ..Default::default() }).unwrap()
    }

    #[test]
    fn sizes_and_bad_configurations() {
        let m = mbf(4_096);
        assert_eq!((m.bits_per_filter, m.words_per_filter, m.memory_bytes()), (32_768, 512, 16 * 1024));
        let small = |memory_bytes, filters| Mbf::new(SamplerBudget { memory_bytes, ..Default::default() }, MbfConfig { filters, hot: 1, ..Default::default() });
        assert_eq!(small(1, 8).unwrap().bits_per_filter, 1);
        assert!(small(1, 9).is_err(), "9 filters need 2 bytes");
        assert_eq!(small(3, 5).unwrap().memory_bytes(), 3);
        let config = |filters, hashes, period, hot| Mbf::new(SamplerBudget::default(), MbfConfig { filters, hashes, period, hot });
        assert!(config(4, 2, 1, 10).is_ok());
        for bad in [config(0, 2, 1, 1), config(17, 2, 1, 1), config(4, 0, 1, 1), config(4, 9, 1, 1), config(4, 2, 0, 1), config(4, 2, 1, 0), config(4, 2, 1, 11)] {
            assert!(bad.is_err());
        }
    }

    /// V = 4, a period of 4 accesses, worked by hand: the chunk's one access ages through the
    /// weights 4, 3, 2, 1 and is gone after V clearings.
    #[test]
    fn one_access_decays_through_the_weights_and_is_gone_after_v_periods() {
        let mut m = mbf(4);
        m.access(7); // filter 0 (the newest), current → 1
        assert_eq!((m.temperature(7), m.is_hot(7)), (4, true));
        let mut others = 1_000..;
        let mut temperatures = vec![];
        // 3 more accesses complete the first period, then a period of 4 at a time.
        for n in [3, 4, 4, 4] {
            for chunk in others.by_ref().take(n) {
                m.access(chunk);
            }
            temperatures.push(m.temperature(7));
        }
        // Clearings of filters 1, 2, 3, then 0 (which held chunk 7).
        assert_eq!(temperatures, [3, 2, 1, 0]);
        assert!(!m.is_hot(7));
    }

    #[test]
    fn repeated_accesses_add_the_weights_of_several_filters() {
        let mut m = mbf(1 << 40); // no clearing: filter 0 stays the newest (weight 4)
        m.access(1); // filter 0
        m.access(2); // filter 1 (weight 1: it comes just after the newest, so it is the oldest)
        m.access(3); // filter 2 (weight 2)
        m.access(3); // filter 3 (weight 3)
        assert_eq!([1, 2, 3].map(|c| m.temperature(c)), [4, 1, 5]);
        assert_eq!([1, 2, 3].map(|c| m.class(c)), [1, 0, 1]);
        m.access(10); // filter 0
        m.access(2); // filter 1 again: no change, a set bit stays set
        assert_eq!(m.temperature(2), 1);
        m.access(2); // filter 2
        assert_eq!((m.temperature(2), m.is_hot(2)), (3, false));
        m.access(2); // filter 3
        assert_eq!((m.temperature(2), m.is_hot(2)), (6, true));
    }
}

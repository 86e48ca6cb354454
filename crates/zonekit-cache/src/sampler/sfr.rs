//! `sfr` (§3.2, §5.3): AutoStream's SFR (sequentiality, frequency, recency) counter per chunk,
//! the thesis' unbounded reference (ZNS-AutoStream): it keeps a counter for every chunk it
//! has seen, so its memory grows with the device, and the thesis gives it no limit. Its
//! [`Sampler::memory_bytes`] reports the real size of its table and the budget is ignored.
//!
//! Each chunk keeps a recency-weighted access count, updated on its accesses as
//! count ← count · 2^(−Δ / decay) + 1, with Δ the accesses to other chunks since its last
//! update (a global access clock; back-to-back accesses make 2) and `decay` the half-life in
//! accesses (65,536 by default). A query decays the count to now the same way.
//!
//! Classes from the decayed count, our choice where the thesis is silent: the count rounded
//! to the nearest whole number n (halves up), class 0 for n ≤ 1 — seen at most once recently:
//! one access, or two more than a half-life apart — and min(⌊log2 n⌋, 3) above: n of 2–3 is
//! class 1, 4–7 class 2, 8 and more class 3. Rounding (not flooring) keeps n accesses close
//! together in class ⌊log2 n⌋ although the decay shaves their count just below n. 4 classes.
//!
//! O(1) an access (a hash map with a one-mix hasher, one `exp2`).

use zonekit_base::policy::{ParamInfo, PolicyInfo, Role};

use super::lists::ChunkMap;
use super::{param_error, Sampler, SamplerInfo};
use crate::{CacheError, Result};

pub const SFR: SamplerInfo = PolicyInfo {
    name: "sfr",
    summary: "AutoStream SFR: a decayed access count per chunk, unbounded (the reference, §3.2)",
    role: Role::Baseline,
    params: &[ParamInfo { name: "decay", default: "65536", summary: "half-life of a count, in accesses" }],
    make: |p, _| Ok(Box::new(Sfr::new(p.u64("decay").map_err(param_error)?)?)),
};

#[derive(Copy, Clone, Debug)]
struct Count {
    count: f64,
    /// The access clock just after the chunk's last update.
    last: u64,
}

pub struct Sfr {
    counts: ChunkMap<Count>,
    /// Half-life in accesses.
    decay: f64,
    /// Accesses recorded.
    clock: u64,
}

impl Sfr {
    pub fn new(decay: u64) -> Result<Sfr> {
        if decay == 0 {
            return Err(CacheError::Config("sampler sfr: decay=0: a half-life of at least 1 access".into()));
        }
        Ok(Sfr { counts: ChunkMap::default(), decay: decay as f64, clock: 0 })
    }

    fn decayed(&self, c: Count) -> f64 {
        c.count * (-((self.clock - c.last) as f64) / self.decay).exp2()
    }

    /// The chunk's count decayed to now (0 if never seen).
    pub fn count(&self, chunk: u64) -> f64 {
        self.counts.get(&chunk).map_or(0.0, |&c| self.decayed(c))
    }

    /// Chunks with a counter.
    pub fn chunks(&self) -> usize {
        self.counts.len()
    }
}

impl Sampler for Sfr {
    fn name(&self) -> &'static str {
        SFR.name
    }

    fn access(&mut self, chunk: u64) {
        let count = self.count(chunk) + 1.0;
        self.clock += 1;
        self.counts.insert(chunk, Count { count, last: self.clock });
    }

    fn classes(&self) -> u8 {
        4
    }

    fn class(&self, chunk: u64) -> u8 {
        let n = (self.count(chunk) + 0.5) as u64;
        if n <= 1 {
            0
        } else {
            n.ilog2().min(3) as u8
        }
    }

    /// The table's real size: its slots (capacity × 8/7, hashbrown's load) at a 24-byte entry
    /// and a control byte each.
    fn memory_bytes(&self) -> u64 {
        let slot_bytes = std::mem::size_of::<(u64, Count)>() as u64 + 1;
        self.counts.capacity() as u64 * 8 / 7 * slot_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn counts_decay_by_half_each_half_life() {
        let mut s = Sfr::new(100).unwrap();
        assert_eq!((s.count(5), s.class(5)), (0.0, 0));
        s.access(5);
        assert_eq!((s.count(5), s.class(5)), (1.0, 0), "seen once");
        s.access(5);
        assert_eq!((s.count(5), s.class(5)), (2.0, 1), "back to back: 2");
        for c in 1_000..1_100 {
            s.access(c);
        }
        assert!(close(s.count(5), 1.0), "{}", s.count(5));
        assert_eq!(s.class(5), 0, "two accesses a half-life ago are one now");
        s.access(5);
        assert!(close(s.count(5), 2.0) && s.class(5) == 1);
        for c in 2_000..2_200 {
            s.access(c);
        }
        assert!(close(s.count(5), 0.5), "{}", s.count(5));
        assert_eq!(s.chunks(), 301);
    }

    #[test]
    fn classes_grow_with_the_log_of_recent_accesses() {
        let mut s = Sfr::new(65_536).unwrap();
        let mut classes = vec![];
        for _ in 0..8 {
            s.access(1);
            for c in 10..20 {
                s.access(c); // a little time between accesses
            }
            classes.push(s.class(1));
        }
        assert_eq!(classes, [0, 1, 1, 2, 2, 2, 2, 3]);
        assert_eq!(s.class(10), 3);
        assert!(Sfr::new(0).is_err());
    }

    #[test]
    fn memory_grows_with_the_chunks_seen_and_is_not_bounded() {
        let mut s = Sfr::new(65_536).unwrap();
        assert_eq!(s.memory_bytes(), 0);
        for c in 0..100_000 {
            s.access(c * 7);
        }
        // 100,000 counters at 25 bytes a slot, at most 8/7 × 2 slots a counter.
        assert!((2_500_000..=6_000_000).contains(&s.memory_bytes()), "{}", s.memory_bytes());
    }
}

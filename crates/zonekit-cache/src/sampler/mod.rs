//! Admission samplers (seed 004, §the fix, item 1): a small structure that remembers recent
//! accesses per LBA chunk (2 MiB by default) within a memory budget and says, when a block is
//! inserted into the cache, whether its chunk is hot. Hot and cold blocks go to different open
//! buckets. One file per sampler; [`SAMPLERS`] is the table they are created from.
//!
//! Sizes by the thesis' accounting (payload only: 4 bytes a chunk id, counters and bits by
//! their width), at the default 16 KiB budget:
//!
//! | sampler | state                                              | classes        |
//! |---------|----------------------------------------------------|----------------|
//! | `none`  | nothing (ZNS-naive: every block cold)              | 1              |
//! | `lru`   | one LRU list of 4,096 ids                          | 2              |
//! | `arc`   | T1, T2, B1, B2: 4,096 ids, c = 2,048               | 2              |
//! | `slru`  | `levels` (3) segments of ⌊4,096 / levels⌋ ids       | `levels` + 1   |
//! | `dam`   | 32,768 4-bit counters, k = 2                       | 4              |
//! | `mbf`   | 4 filters × 32,768 bits, k = 2                     | 2              |
//! | `sfr`   | a counter per chunk ever seen (not bounded)        | 4              |
//!
//! ```
//! use zonekit_cache::sampler::{self, SamplerBudget};
//!
//! let mut lru = sampler::create("lru", &Default::default(), SamplerBudget::default()).unwrap();
//! assert!(!lru.is_hot(7)); // asked before the access is recorded
//! lru.access(7);
//! assert!(lru.is_hot(7));
//! assert_eq!(lru.memory_bytes(), 16 * 1024);
//! assert!(sampler::create("slru:4", &Default::default(), SamplerBudget::default()).unwrap().classes() == 5);
//! ```

pub mod arc;
pub(crate) mod bloom;
pub mod dam;
pub(crate) mod lists;
pub mod lru;
pub mod mbf;
pub mod none;
pub mod sfr;
pub mod slru;

use serde::{Deserialize, Serialize};
use zonekit_base::policy::{self, ParamReader, Params, PolicyError, PolicyInfo};

use crate::{CacheError, Result};

/// How a sampler is sized: its memory budget and the LBA chunk it keys by.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplerBudget {
    /// Bytes the sampler may use (16 KiB by default); unbounded samplers ignore it.
    pub memory_bytes: u64,
    /// Bytes of LBA space per key (2 MiB by default, 16 KiB as the thesis' variant).
    pub chunk_bytes: u64,
}

impl Default for SamplerBudget {
    fn default() -> Self {
        SamplerBudget { memory_bytes: 16 * 1024, chunk_bytes: 2 * 1024 * 1024 }
    }
}

/// Remembers recent accesses of chunks and classifies them.
///
/// The caller computes chunk ids (LBA / [`SamplerBudget::chunk_bytes`]); the sampler never
/// sees LBAs. The caller's contract, per request reaching the cache (read or write, hit or
/// miss):
///
/// 1. if the request inserts blocks into the cache, it first asks [`Sampler::class`] (or
///    [`Sampler::is_hot`]) for their chunk, and only then
/// 2. records the request with [`Sampler::access`].
///
/// Asking after recording would count the request as its own history: every LRU-family
/// sampler would call every inserted chunk hot.
///
/// The implementor guarantees: `class` and `is_hot` do not change the state; `class(c) <
/// classes()` for every chunk; `access` and `class` take O(1) time (amortized for the periodic
/// decay of the Bloom-filter samplers); and the state stays within the budget it was built for
/// by the thesis' accounting, which [`Sampler::memory_bytes`] reports (the `sfr` reference is
/// the one unbounded sampler and reports its real size instead).
pub trait Sampler: Send {
    fn name(&self) -> &'static str;
    /// Records an access (a read or write request reaching the cache) to `chunk`.
    fn access(&mut self, chunk: u64);
    /// How many temperature classes [`Sampler::class`] returns (1 for a sampler without
    /// history, 2 for hot/cold ones, more for multi-level ones).
    fn classes(&self) -> u8;
    /// The temperature of `chunk` now: 0 for the coldest (and for chunks without history),
    /// up to `classes() - 1` for the hottest.
    fn class(&self, chunk: u64) -> u8;
    /// Whether `chunk` is hot now (asked when one of its blocks is inserted): class ≥ 1.
    fn is_hot(&self, chunk: u64) -> bool {
        self.class(chunk) >= 1
    }
    /// Bytes the sampler's state takes, by the thesis' accounting (what the budget bounds).
    fn memory_bytes(&self) -> u64;
}

pub type Make = fn(&ParamReader, SamplerBudget) -> Result<Box<dyn Sampler>>;
pub type SamplerInfo = PolicyInfo<Make>;

/// Every sampler, in the order comparisons list them.
#[rustfmt::skip] // one row per line: adding a sampler is a one-line change here
pub const SAMPLERS: &[SamplerInfo] = &[
    none::NONE,
    lru::LRU,
    arc::ARC,
    slru::SLRU,
    dam::DAM,
    mbf::MBF,
    sfr::SFR,
];

/// An error for a budget too small for even one entry.
pub fn too_small(sampler: &'static str, budget: SamplerBudget, entry_bytes: u64) -> CacheError {
    CacheError::Config(format!("sampler {sampler}: a {}-byte budget holds no {entry_bytes}-byte entry", budget.memory_bytes))
}

/// A parameter error as a cache configuration error.
pub(crate) fn param_error(e: PolicyError) -> CacheError {
    CacheError::Config(e.to_string())
}

/// Bytes of a chunk id in the thesis' accounting (a 32-bit LBA-chunk number).
pub const ID_BYTES: u64 = 4;

/// Chunk ids a list sampler's budget holds (`memory_bytes / 4`), refusing a budget below
/// `min_ids` ids and one whose ids would not fit 32-bit links.
pub(crate) fn list_ids(sampler: &'static str, budget: SamplerBudget, min_ids: u64) -> Result<usize> {
    let ids = budget.memory_bytes / ID_BYTES;
    if ids < min_ids {
        return Err(too_small(sampler, budget, min_ids * ID_BYTES));
    }
    if ids >= u32::MAX as u64 {
        return Err(CacheError::Config(format!("sampler {sampler}: a {}-byte budget is over 2^32 ids", budget.memory_bytes)));
    }
    Ok(ids as usize)
}

/// Finds a sampler by `NAME` or `NAME:VALUE` (the value of its only parameter).
pub fn find(spec: &str) -> Result<(&'static SamplerInfo, Params)> {
    policy::find(SAMPLERS, "sampler", spec).map_err(param_error)
}

/// Creates a sampler by `NAME` or `NAME:VALUE` with `params` (unknown keys are refused,
/// missing ones take the table's defaults, a key set both ways is refused).
pub fn create(spec: &str, params: &Params, budget: SamplerBudget) -> Result<Box<dyn Sampler>> {
    let (info, mut all) = find(spec)?;
    for (key, value) in params {
        if all.insert(key.clone(), value.clone()).is_some() {
            return Err(CacheError::Config(format!("sampler {spec}: {key} given twice")));
        }
    }
    let reader = ParamReader::new(info, &all).map_err(param_error)?;
    (info.make)(&reader, budget)
}

#[cfg(test)]
pub(crate) mod tests {
    //! The conformance suite every row of [`SAMPLERS`] passes, and the random streams the
    //! samplers' own property tests use.

    use super::*;
    use zonekit_base::Rng;

    /// Rows whose memory is not bounded by the budget.
    const UNBOUNDED: &[&str] = &["sfr"];
    /// Rows without state, which need no budget.
    const STATELESS: &[&str] = &["none"];

    /// A skewed stream of chunk ids: a hot set of 64, a warm set of 2,000, and scans through
    /// a cold space of 10^6 chunks, mixed at random (enough to fill, evict and decay).
    pub(crate) fn stream(seed: u64, n: usize) -> Vec<u64> {
        let mut rng = Rng::new(seed);
        let mut scan = 0;
        (0..n)
            .map(|_| match rng.below(10) {
                0..=3 => rng.below(64),
                4..=6 => 1_000 + rng.below(2_000),
                7 => u64::MAX - rng.below(16), // the ends of the id space too
                _ => {
                    scan += 1;
                    10_000 + scan % 1_000_000
                }
            })
            .collect()
    }

    fn make(name: &str, budget: SamplerBudget) -> Result<Box<dyn Sampler>> {
        create(name, &Params::new(), budget)
    }

    #[test]
    fn every_row_builds_by_its_name_within_its_budget() {
        for info in SAMPLERS {
            for memory_bytes in [16 * 1024, 1024, 1000, 64 * 1024 + 4] {
                let budget = SamplerBudget { memory_bytes, ..Default::default() };
                let s = make(info.name, budget).unwrap();
                assert_eq!(s.name(), info.name);
                assert!(s.classes() >= 1);
                if !UNBOUNDED.contains(&info.name) {
                    assert!(s.memory_bytes() <= memory_bytes, "{}: {} > {memory_bytes}", info.name, s.memory_bytes());
                }
            }
        }
    }

    #[test]
    fn the_default_budget_is_used_whole_by_the_bounded_samplers() {
        for info in SAMPLERS.iter().filter(|i| !UNBOUNDED.contains(&i.name) && !STATELESS.contains(&i.name)) {
            let s = make(info.name, SamplerBudget::default()).unwrap();
            // slru's 3 equal segments leave one 4-byte id of the 4,096 unused.
            assert!((16 * 1024 - 4..=16 * 1024).contains(&s.memory_bytes()), "{}: {}", info.name, s.memory_bytes());
        }
    }

    #[test]
    fn a_budget_too_small_for_one_entry_is_refused() {
        // The largest budget each bounded sampler refuses: under one id (lru), one resident and
        // one ghost id (arc), one id a segment (slru at 3 levels), no counter or bit at all.
        let largest_refused = [("lru", 3), ("arc", 7), ("slru", 11), ("dam", 0), ("mbf", 0)];
        let bounded: Vec<&str> = SAMPLERS.iter().map(|i| i.name).filter(|n| !UNBOUNDED.contains(n) && !STATELESS.contains(n)).collect();
        assert_eq!(bounded, largest_refused.map(|(n, _)| n));
        for (name, memory_bytes) in largest_refused {
            let budget = |memory_bytes| SamplerBudget { memory_bytes, ..Default::default() };
            let e = make(name, budget(memory_bytes)).err().unwrap_or_else(|| panic!("{name} took a {memory_bytes}-byte budget"));
            assert!(e.to_string().contains("holds no"), "{name}: {e}");
            make(name, budget(memory_bytes + 1)).unwrap();
        }
        for name in UNBOUNDED.iter().chain(STATELESS) {
            make(name, SamplerBudget { memory_bytes: 0, ..Default::default() }).unwrap();
        }
    }

    #[test]
    fn classes_stay_in_range_and_is_hot_agrees_on_random_streams() {
        let base = 0x5A3D_1E55;
        for info in SAMPLERS {
            for (i, memory_bytes) in [16 * 1024, 512].into_iter().enumerate() {
                let seed = base + i as u64;
                let budget = SamplerBudget { memory_bytes, ..Default::default() };
                let mut s = make(info.name, budget).unwrap();
                let classes = s.classes();
                let mut seen = vec![0u64; classes as usize];
                for (n, chunk) in stream(seed, 30_000).into_iter().enumerate() {
                    let class = s.class(chunk);
                    assert!(class < classes, "{} seed {seed} access {n}: class {class} of {classes}", info.name);
                    assert_eq!(s.is_hot(chunk), class >= 1, "{} seed {seed} access {n}", info.name);
                    seen[class as usize] += 1;
                    s.access(chunk);
                }
                if classes > 1 {
                    assert!(seen[0] > 0 && seen[1..].iter().sum::<u64>() > 0, "{} seed {seed}: {seen:?}", info.name);
                }
            }
        }
    }

    #[test]
    fn same_stream_same_classes() {
        for info in SAMPLERS {
            let run = || {
                let mut s = make(info.name, SamplerBudget::default()).unwrap();
                stream(3, 5_000).into_iter().map(|c| (s.class(c), s.access(c)).0).collect::<Vec<_>>()
            };
            assert_eq!(run(), run(), "{}", info.name);
        }
    }

    #[test]
    fn short_form_params_and_errors() {
        assert_eq!(create("slru:2", &Params::new(), SamplerBudget::default()).unwrap().classes(), 3);
        let params = Params::from([("levels".to_string(), "4".to_string())]);
        assert_eq!(create("slru", &params, SamplerBudget::default()).unwrap().classes(), 5);
        assert!(create("slru:2", &params, SamplerBudget::default()).err().unwrap().to_string().contains("given twice"));
        assert!(create("nope", &Params::new(), SamplerBudget::default()).is_err());
        let bad = Params::from([("k".to_string(), "1".to_string())]);
        assert!(create("lru", &bad, SamplerBudget::default()).is_err());
        assert_eq!(policy::names(SAMPLERS), ["none", "lru", "arc", "slru", "dam", "mbf", "sfr"]);
    }
}

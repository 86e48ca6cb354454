//! Item-level cache policies over a stream of block ids, the way cache simulators (libCacheSim)
//! model caches: a capacity in blocks, a hit or a miss per request, the miss admitting the
//! block. They are the hit-ratio references for the bucket cache — LRU, FIFO, S3-FIFO, SIEVE,
//! and Belady's OPT from next-access times as the bound — and what the cross-check against
//! libCacheSim runs. One file per policy; [`ITEM_POLICIES`] is the table. `idmap` (block id →
//! node, with removal) and `list` (intrusive queues over a node array) are what they share.
//!
//! ```
//! use zonekit_base::policy::{self, ParamReader};
//! use zonekit_cache::item::ITEM_POLICIES;
//!
//! let (info, params) = policy::find(ITEM_POLICIES, "item", "sieve").unwrap();
//! let mut cache = (info.make)(&ParamReader::new(info, &params).unwrap(), 2).unwrap();
//! let hits: Vec<bool> = [1, 2, 1, 3, 1].iter().map(|&b| cache.access(b, u64::MAX)).collect();
//! assert_eq!(hits, [false, false, true, false, true]);
//! ```

pub mod belady;
pub mod fifo;
mod idmap;
mod list;
pub mod lru;
pub mod s3fifo;
pub mod sieve;

use zonekit_base::policy::{ParamReader, PolicyError, PolicyInfo};

use crate::{CacheError, Result};

pub use idmap::RESERVED_ID;

/// A cache of at most `capacity` blocks.
///
/// The caller passes block ids other than [`RESERVED_ID`] and, for oracles, each request's
/// next access. The implementor answers every access in O(1) or O(log n) — no scans of the
/// cache — and never holds more than `capacity` blocks.
pub trait ItemCache {
    fn name(&self) -> &'static str;
    /// Looks `block` up and, on a miss, admits it (evicting as the policy says). `next_access`
    /// is the index of the block's next request in the stream (`u64::MAX` if none): only
    /// oracles use it. Returns whether it was a hit.
    fn access(&mut self, block: u64, next_access: u64) -> bool;
    /// A hint, a few requests ahead of `access(block, ..)`: start fetching what it will look at.
    fn prefetch(&self, _block: u64) {}
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn capacity(&self) -> usize;
    /// Panics if the policy's structures disagree (debug and test builds call it).
    fn check_invariants(&self) {}
}

pub type Make = fn(&ParamReader, usize) -> Result<Box<dyn ItemCache>>;
pub type ItemInfo = PolicyInfo<Make>;

/// The most blocks an item cache may be asked to hold (512 GiB of 4 KiB blocks): node indices
/// are 32-bit, and S3-FIFO's ghost queue may add up to 16 times the capacity.
pub const CAPACITY_MAX: usize = 1 << 27;

/// Every item policy, in the order tables print them.
pub const ITEM_POLICIES: &[ItemInfo] = &[lru::INFO, fifo::INFO, s3fifo::INFO, sieve::INFO, belady::INFO];

/// A parameter the row declares but whose value the policy cannot use.
pub(crate) fn config(e: PolicyError) -> CacheError {
    CacheError::Config(e.to_string())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use zonekit_base::policy::Params;
    use zonekit_base::{Rng, NEVER};

    /// The index of each request's next access to the same block ([`NEVER`] if none).
    pub fn next_accesses(stream: &[u64]) -> Vec<u64> {
        let mut next = vec![NEVER; stream.len()];
        let mut last = std::collections::HashMap::new();
        for (i, &b) in stream.iter().enumerate() {
            if let Some(p) = last.insert(b, i) {
                next[p] = i as u64;
            }
        }
        next
    }

    /// Replays one letter per block; "H" for a hit, "-" for a miss.
    pub fn hits(cache: &mut dyn ItemCache, blocks: &str) -> String {
        let stream: Vec<u64> = blocks.bytes().map(u64::from).collect();
        let next = next_accesses(&stream);
        let out = stream.iter().zip(&next).map(|(&b, &n)| if cache.access(b, n) { 'H' } else { '-' }).collect();
        cache.check_invariants();
        out
    }

    fn streams() -> impl Iterator<Item = (u64, Vec<u64>)> {
        (1..=30u64).map(|seed| {
            let mut rng = Rng::new(seed);
            let blocks = 2 + rng.below(20);
            // Half the draws from a hot tenth, so every policy sees hits and evictions.
            (seed, (0..600).map(|_| if rng.below(2) == 0 { rng.below(blocks / 10 + 1) } else { rng.below(blocks) }).collect())
        })
    }

    /// Replays random streams through the policy at capacities 1 to 12 and through `model`
    /// (the algorithm written plainly, O(n) per access), which must agree on every hit;
    /// checks invariants after every access.
    pub fn model_check_with_future<C: ItemCache, M: FnMut(u64, u64) -> bool>(make: impl Fn(usize) -> C, model: impl Fn(usize) -> M) {
        for (seed, stream) in streams() {
            let next = next_accesses(&stream);
            for capacity in 1..=12 {
                let mut cache = make(capacity);
                let mut plain = model(capacity);
                for (i, (&b, &n)) in stream.iter().zip(&next).enumerate() {
                    let hit = cache.access(b, n);
                    assert_eq!(hit, plain(b, n), "{} seed {seed} capacity {capacity} request {i} (block {b})", cache.name());
                    cache.check_invariants();
                }
            }
        }
    }

    pub fn model_check<C: ItemCache, M: FnMut(u64) -> bool>(make: impl Fn(usize) -> C, model: impl Fn(usize) -> M) {
        model_check_with_future(make, |capacity| {
            let mut plain = model(capacity);
            move |b, _| plain(b)
        });
    }

    fn make(info: &ItemInfo, capacity: usize) -> Box<dyn ItemCache> {
        let params = Params::new();
        (info.make)(&ParamReader::new(info, &params).unwrap(), capacity).unwrap()
    }

    /// What every policy must do: never hold more than its capacity, miss on a first access,
    /// hit on every repeat when everything fits, and keep its invariants.
    #[test]
    fn every_policy_conforms() {
        for info in ITEM_POLICIES {
            for (seed, stream) in streams() {
                let next = next_accesses(&stream);
                let distinct = stream.iter().collect::<std::collections::HashSet<_>>().len();
                for capacity in [10, 13, 40, distinct.max(10)] {
                    let mut cache = make(info, capacity);
                    assert_eq!(cache.name(), info.name);
                    assert_eq!(cache.capacity(), capacity);
                    let mut seen = std::collections::HashSet::new();
                    for (&b, &n) in stream.iter().zip(&next) {
                        let hit = cache.access(b, n);
                        let first = seen.insert(b);
                        assert!(!(first && hit), "{} seed {seed}: a first access hit", info.name);
                        assert!(first || hit || capacity < distinct, "{} seed {seed}: a repeat missed with everything fitting", info.name);
                        assert!(cache.len() <= capacity, "{} seed {seed}: {} blocks in a capacity of {capacity}", info.name, cache.len());
                    }
                    cache.check_invariants();
                }
            }
        }
    }

    #[test]
    fn opt_bounds_every_policy() {
        for (seed, stream) in streams() {
            let next = next_accesses(&stream);
            let count = |info: &ItemInfo| {
                let mut cache = make(info, 10);
                stream.iter().zip(&next).filter(|(&b, &n)| cache.access(b, n)).count()
            };
            let opt = count(&belady::INFO);
            for info in ITEM_POLICIES {
                assert!(count(info) <= opt, "{} beats OPT on seed {seed}", info.name);
            }
        }
    }

    #[test]
    fn table_rows_are_distinct_and_parameters_are_checked() {
        let names = zonekit_base::policy::names(ITEM_POLICIES);
        assert_eq!(names, ["lru", "fifo", "s3fifo", "sieve", "belady"]);
        let (info, _) = zonekit_base::policy::find(ITEM_POLICIES, "item", "s3fifo").unwrap();
        let bad = |k: &str, v: &str| {
            let params = Params::from([(k.to_string(), v.to_string())]);
            (info.make)(&ParamReader::new(info, &params).unwrap(), 100).err().map(|e| e.to_string())
        };
        assert!(bad("small_ratio", "1").unwrap().contains("strictly between 0 and 1"));
        assert!(bad("small_ratio", "x").unwrap().contains("not a number"));
        assert!(bad("move_threshold", "4").unwrap().contains("expected 1 to 3"));
        assert!(bad("warmup", "late").unwrap().contains("expected one of main, paper"));
        assert!(bad("ghost_ratio", "0").is_none(), "no ghost is allowed");
        assert!(ParamReader::new(info, &Params::from([("ratio".to_string(), "1".to_string())])).is_err());
    }
}

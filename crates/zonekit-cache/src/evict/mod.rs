//! Bucket eviction: which full bucket the cache empties when it needs a free one. One file per
//! policy; [`EVICTIONS`] is the table. Open buckets are never candidates.

pub mod bcache;
pub mod fifo;
pub mod lfu;
pub mod lru;
pub mod region_fifo;
pub mod sieve;

use zonekit_base::policy::{ParamInfo, ParamReader, PolicyInfo, Role};

use crate::Result;

/// A full bucket the cache could evict, with its live blocks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub bucket: u32,
    pub live_blocks: u64,
}

pub trait Eviction: Send {
    fn name(&self) -> &'static str;
    /// `bucket` was just opened for filling; `clock` counts requests.
    fn opened(&mut self, bucket: u32, clock: u64);
    /// A block of `bucket` was hit.
    fn hit(&mut self, bucket: u32, clock: u64);
    /// `blocks` blocks of cache traffic passed (bcache's priority clock).
    fn traffic(&mut self, _blocks: u64) {}
    /// The bucket to evict among `candidates` (never empty).
    fn victim(&mut self, candidates: &[Candidate]) -> u32;
    /// Whether blocks hit since they were inserted are written again, to an open bucket, when
    /// their bucket is evicted (CacheLib's region reinsertion).
    fn reinserts_hit_blocks(&self) -> bool {
        false
    }
}

/// What a policy is built from: its parameters and the cache's shape.
#[derive(Copy, Clone, Debug)]
pub struct CacheShape {
    pub buckets: u32,
    pub bucket_blocks: u64,
}

pub type Make = fn(&ParamReader, CacheShape) -> Result<Box<dyn Eviction>>;
pub type EvictionInfo = PolicyInfo<Make>;

pub const EVICTIONS: &[EvictionInfo] = &[
    PolicyInfo {
        name: "bcache",
        summary: "bcache's priority rule: recency clock × live data (prio 32768 on a hit, -1 per 1/1024 of the cache of traffic)",
        role: Role::Baseline,
        params: &[ParamInfo { name: "live_bits", default: "0", summary: "bits of bcache's live-sector field (13 in stock bcache; 0 = exact)" }],
        make: |p, shape| {
            let bits = p.u64("live_bits").map_err(|e| crate::CacheError::Config(e.to_string()))?;
            if bits > 40 {
                return Err(crate::CacheError::Config(format!("live_bits={bits}: at most 40")));
            }
            Ok(Box::new(bcache::Bcache::new(shape, bits as u32)))
        },
    },
    PolicyInfo { name: "lru", summary: "least recently hit (or filled) bucket", role: Role::Baseline, params: &[], make: |_, shape| Ok(Box::new(lru::Lru::new(shape))) },
    PolicyInfo { name: "fifo", summary: "oldest filled bucket", role: Role::Baseline, params: &[], make: |_, shape| Ok(Box::new(fifo::Fifo::new(shape))) },
    PolicyInfo {
        name: "lfu",
        summary: "fewest hits since filled, oldest first on ties (the thesis' eviction)",
        role: Role::Proposed,
        params: &[],
        make: |_, shape| Ok(Box::new(lfu::Lfu::new(shape))),
    },
    PolicyInfo {
        name: "sieve",
        summary: "SIEVE over buckets: a hand from the oldest skips (and clears) buckets hit since it last passed",
        role: Role::Extension,
        params: &[],
        make: |_, shape| Ok(Box::new(sieve::Sieve::new(shape))),
    },
    PolicyInfo {
        name: "region-fifo",
        summary: "CacheLib-style region FIFO: the oldest bucket goes, its blocks hit since insertion are written again",
        role: Role::Extension,
        params: &[],
        make: |_, shape| Ok(Box::new(region_fifo::RegionFifo::new(shape))),
    },
];

/// The candidate with the smallest `key`, first on ties.
pub(crate) fn min_by_key(candidates: &[Candidate], key: impl Fn(&Candidate) -> u64) -> u32 {
    candidates.iter().min_by_key(|c| key(c)).expect("candidates are never empty").bucket
}

//! CacheLib-style region FIFO: buckets (CacheLib's regions) leave in fill order, and the
//! blocks of the evicted bucket that were hit since they were inserted are written again to
//! an open bucket rather than dropped (CacheLib's reinsertion of accessed items). The cost is
//! cache writes the application makes; the cache counts them.

use super::fifo::Fifo;
use super::{CacheShape, Candidate, Eviction};

pub struct RegionFifo {
    fifo: Fifo,
}

impl RegionFifo {
    pub fn new(shape: CacheShape) -> RegionFifo {
        RegionFifo { fifo: Fifo::new(shape) }
    }
}

impl Eviction for RegionFifo {
    fn name(&self) -> &'static str {
        "region-fifo"
    }
    fn opened(&mut self, bucket: u32, clock: u64) {
        self.fifo.opened(bucket, clock);
    }
    fn hit(&mut self, _bucket: u32, _clock: u64) {}
    fn victim(&mut self, candidates: &[Candidate]) -> u32 {
        self.fifo.victim(candidates)
    }
    fn reinserts_hit_blocks(&self) -> bool {
        true
    }
}

//! LFU over buckets (the thesis' §4.2): a bucket's count of block hits since it was filled,
//! kept where bcache keeps its priority. The fewest hits goes; on ties, the oldest filled.
//! The thesis does not say whether counts age; they do not here (a bucket's count restarts
//! only when it is refilled).

use super::{CacheShape, Candidate, Eviction};

pub struct Lfu {
    hits: Vec<u64>,
    opened_at: Vec<u64>,
    sequence: u64,
}

impl Lfu {
    pub fn new(shape: CacheShape) -> Lfu {
        Lfu { hits: vec![0; shape.buckets as usize], opened_at: vec![0; shape.buckets as usize], sequence: 0 }
    }
}

impl Eviction for Lfu {
    fn name(&self) -> &'static str {
        "lfu"
    }
    fn opened(&mut self, bucket: u32, _clock: u64) {
        self.sequence += 1;
        self.hits[bucket as usize] = 0;
        self.opened_at[bucket as usize] = self.sequence;
    }
    fn hit(&mut self, bucket: u32, _clock: u64) {
        self.hits[bucket as usize] += 1;
    }
    fn victim(&mut self, candidates: &[Candidate]) -> u32 {
        let c = candidates.iter().min_by_key(|c| (self.hits[c.bucket as usize], self.opened_at[c.bucket as usize])).expect("candidates are never empty");
        c.bucket
    }
}

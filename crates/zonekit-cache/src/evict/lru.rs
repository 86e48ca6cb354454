//! LRU over buckets: the bucket whose last hit (or filling) is oldest.

use super::{min_by_key, CacheShape, Candidate, Eviction};

pub struct Lru {
    last: Vec<u64>,
    sequence: u64,
}

impl Lru {
    pub fn new(shape: CacheShape) -> Lru {
        Lru { last: vec![0; shape.buckets as usize], sequence: 0 }
    }

    fn touch(&mut self, bucket: u32) {
        self.sequence += 1;
        self.last[bucket as usize] = self.sequence;
    }
}

impl Eviction for Lru {
    fn name(&self) -> &'static str {
        "lru"
    }
    fn opened(&mut self, bucket: u32, _clock: u64) {
        self.touch(bucket);
    }
    fn hit(&mut self, bucket: u32, _clock: u64) {
        self.touch(bucket);
    }
    fn victim(&mut self, candidates: &[Candidate]) -> u32 {
        min_by_key(candidates, |c| self.last[c.bucket as usize])
    }
}

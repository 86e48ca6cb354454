//! FIFO: the bucket filled longest ago.

use super::{min_by_key, CacheShape, Candidate, Eviction};

pub struct Fifo {
    opened_at: Vec<u64>,
    sequence: u64,
}

impl Fifo {
    pub fn new(shape: CacheShape) -> Fifo {
        Fifo { opened_at: vec![0; shape.buckets as usize], sequence: 0 }
    }
}

impl Eviction for Fifo {
    fn name(&self) -> &'static str {
        "fifo"
    }
    fn opened(&mut self, bucket: u32, _clock: u64) {
        self.sequence += 1;
        self.opened_at[bucket as usize] = self.sequence;
    }
    fn hit(&mut self, _bucket: u32, _clock: u64) {}
    fn victim(&mut self, candidates: &[Candidate]) -> u32 {
        min_by_key(candidates, |c| self.opened_at[c.bucket as usize])
    }
}

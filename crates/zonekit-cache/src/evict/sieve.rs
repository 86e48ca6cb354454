//! SIEVE (Zhang et al., NSDI'24) over buckets: buckets in fill order with a visited bit set by
//! a hit; a hand moves from the oldest toward the newest, clearing visited buckets and
//! evicting the first unvisited one; the hand stays where it stopped.

use std::collections::VecDeque;

use super::{CacheShape, Candidate, Eviction};

pub struct Sieve {
    /// Buckets in fill order, oldest first.
    queue: VecDeque<u32>,
    visited: Vec<bool>,
    hand: usize,
}

impl Sieve {
    pub fn new(shape: CacheShape) -> Sieve {
        Sieve { queue: VecDeque::new(), visited: vec![false; shape.buckets as usize], hand: 0 }
    }
}

impl Eviction for Sieve {
    fn name(&self) -> &'static str {
        "sieve"
    }
    fn opened(&mut self, bucket: u32, _clock: u64) {
        self.visited[bucket as usize] = false;
        self.queue.push_back(bucket);
    }
    fn hit(&mut self, bucket: u32, _clock: u64) {
        self.visited[bucket as usize] = true;
    }
    fn victim(&mut self, candidates: &[Candidate]) -> u32 {
        let mut is_candidate = vec![false; self.visited.len()];
        for c in candidates {
            is_candidate[c.bucket as usize] = true;
        }
        // Two passes at most: the first may clear every visited bit.
        for _ in 0..2 * self.queue.len() + 1 {
            if self.hand >= self.queue.len() {
                self.hand = 0;
            }
            let bucket = self.queue[self.hand];
            // Open buckets are passed over; visited ones lose their bit and are kept.
            if !is_candidate[bucket as usize] || std::mem::take(&mut self.visited[bucket as usize]) {
                self.hand += 1;
            } else {
                self.queue.remove(self.hand);
                return bucket;
            }
        }
        unreachable!("a candidate is in the queue and is unvisited after one full pass")
    }
}

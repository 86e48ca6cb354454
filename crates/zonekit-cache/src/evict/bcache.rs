//! bcache's own eviction (`drivers/md/bcache/alloc.c`): every bucket has a 16-bit priority,
//! set to 32768 when it is filled and on every hit; each time 1/1024 of the cache's capacity
//! of traffic passes, every priority above 0 drops by one. The victim has the smallest
//! `(prio − min_prio + (32768 − min_prio) / 8) × live sectors`: old and mostly dead buckets go
//! first. bcache keeps live sectors in a 13-bit field (`GC_SECTORS_USED`), which cannot
//! hold a 128 MiB bucket's 262,144 sectors; by default we use the true count, and
//! `live_bits=13` reproduces the stock field (the count masked to its low 13 bits), to show
//! what stock bcache does with zone-sized buckets.

use super::{CacheShape, Candidate, Eviction};

const INITIAL_PRIO: u64 = 32768;

pub struct Bcache {
    prio: Vec<u64>,
    /// Live sectors kept modulo 2^bits (0: exact).
    live_bits: u32,
    /// Blocks of traffic until the next decrement.
    rescale: i64,
    rescale_blocks: i64,
}

impl Bcache {
    pub fn new(shape: CacheShape, live_bits: u32) -> Bcache {
        let rescale_blocks = (shape.buckets as u64 * shape.bucket_blocks / 1024).max(1) as i64;
        Bcache { prio: vec![INITIAL_PRIO; shape.buckets as usize], live_bits, rescale: rescale_blocks, rescale_blocks }
    }

    /// Live 512-byte sectors as bcache's field holds them (4 KiB blocks).
    fn live_sectors(&self, blocks: u64) -> u64 {
        let sectors = blocks * 8;
        if self.live_bits == 0 {
            sectors
        } else {
            sectors & ((1 << self.live_bits) - 1)
        }
    }
}

impl Eviction for Bcache {
    fn name(&self) -> &'static str {
        "bcache"
    }
    fn opened(&mut self, bucket: u32, _clock: u64) {
        self.prio[bucket as usize] = INITIAL_PRIO;
    }
    fn hit(&mut self, bucket: u32, _clock: u64) {
        self.prio[bucket as usize] = INITIAL_PRIO;
    }
    fn traffic(&mut self, blocks: u64) {
        self.rescale -= blocks as i64;
        while self.rescale < 0 {
            self.rescale += self.rescale_blocks;
            for p in self.prio.iter_mut().filter(|p| **p > 0) {
                *p -= 1;
            }
        }
    }
    fn victim(&mut self, candidates: &[Candidate]) -> u32 {
        let min_prio = candidates.iter().map(|c| self.prio[c.bucket as usize]).min().expect("candidates are never empty");
        let weight = |c: &Candidate| (self.prio[c.bucket as usize] - min_prio + (INITIAL_PRIO - min_prio) / 8) * self.live_sectors(c.live_blocks);
        candidates.iter().min_by_key(|c| weight(c)).expect("candidates are never empty").bucket
    }
}

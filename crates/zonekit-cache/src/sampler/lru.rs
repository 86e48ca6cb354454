//! `lru` (§4.1): an LRU list of chunk ids, 4,096 entries in the default 16 KiB (4 bytes an id).
//!
//! On every access a chunk in the list moves to the MRU end; a chunk not in it is inserted at
//! the MRU end, dropping the LRU entry when the list is full. A chunk is hot iff it is in the
//! list: it was accessed within the last 4,096 distinct chunks. The thesis' list is "the top
//! 4,096 of past accesses"; recency is all it keeps, so 2 classes.
//!
//! Sizes: ⌊memory / 4⌋ ids; a budget under 4 bytes is refused. O(1) an access: a hash index
//! from chunk id to a node of an intrusive doubly linked list over a fixed slab.

use zonekit_base::policy::{PolicyInfo, Role};

use super::lists::Lists;
use super::{list_ids, Sampler, SamplerBudget, SamplerInfo, ID_BYTES};
use crate::Result;

pub const LRU: SamplerInfo = PolicyInfo {
    name: "lru",
    summary: "an LRU list of chunk ids (4,096 in 16 KiB); hot iff listed (§4.1)",
    role: Role::Proposed,
    params: &[],
    make: |_, budget| Ok(Box::new(Lru::new(budget)?)),
};

pub struct Lru {
    list: Lists,
}

impl Lru {
    pub fn new(budget: SamplerBudget) -> Result<Lru> {
        let ids = list_ids(LRU.name, budget, 1)?;
        Ok(Lru { list: Lists::new(1, ids) })
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        self.list.check_invariants();
        assert!(self.list.len(0) <= self.list.capacity());
    }
}

impl Sampler for Lru {
    fn name(&self) -> &'static str {
        LRU.name
    }
    #[inline]
    fn access(&mut self, chunk: u64) {
        match self.list.find(chunk) {
            Some((slot, _)) => self.list.move_to_mru(slot, 0),
            None => {
                if self.list.len(0) == self.list.capacity() {
                    self.list.pop_lru(0);
                }
                self.list.push_mru(0, chunk);
            }
        }
    }
    fn classes(&self) -> u8 {
        2
    }
    #[inline]
    fn class(&self, chunk: u64) -> u8 {
        self.list.list_of(chunk).is_some() as u8
    }
    fn memory_bytes(&self) -> u64 {
        self.list.capacity() as u64 * ID_BYTES
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::sampler::tests::stream;

    #[test]
    fn hot_after_a_reaccess_and_cold_after_4096_others() {
        let mut s = Lru::new(SamplerBudget::default()).unwrap();
        assert_eq!(s.memory_bytes(), 16 * 1024);
        assert!(!s.is_hot(1));
        s.access(1);
        assert!(s.is_hot(1));
        for c in 100..100 + 4_095 {
            s.access(c);
        }
        assert!(s.is_hot(1), "4,095 others: still the LRU entry");
        s.access(1); // back to MRU
        for c in 10_000..10_000 + 4_095 {
            s.access(c);
        }
        assert!(s.is_hot(1));
        s.access(20_000); // the 4,096th other chunk pushes it out
        assert!(!s.is_hot(1));
        assert!(s.is_hot(20_000) && s.is_hot(10_000));
        s.access(20_001); // and the next one the oldest of the others
        assert!(!s.is_hot(10_000) && s.is_hot(10_001));
        s.check_invariants();
    }

    #[test]
    fn budget_sizes_the_list_and_too_small_is_refused() {
        let s = Lru::new(SamplerBudget { memory_bytes: 4 * 10 + 3, ..Default::default() }).unwrap();
        assert_eq!((s.list.capacity(), s.memory_bytes()), (10, 40));
        assert!(Lru::new(SamplerBudget { memory_bytes: 3, ..Default::default() }).is_err());
        let mut one = Lru::new(SamplerBudget { memory_bytes: 4, ..Default::default() }).unwrap();
        one.access(1);
        one.access(2);
        assert!(!one.is_hot(1) && one.is_hot(2));
    }

    /// Against a VecDeque model (MRU at the front), on random streams at a small capacity.
    #[test]
    fn matches_a_simple_model() {
        for seed in 0..4 {
            let capacity = 37;
            let mut s = Lru::new(SamplerBudget { memory_bytes: capacity * 4, ..Default::default() }).unwrap();
            let mut model: VecDeque<u64> = VecDeque::new();
            for (n, chunk) in stream(seed, 5_000).into_iter().map(|c| c % 100).enumerate() {
                assert_eq!(s.is_hot(chunk), model.contains(&chunk), "seed {seed} access {n}");
                s.access(chunk);
                if let Some(i) = model.iter().position(|&c| c == chunk) {
                    model.remove(i);
                } else if model.len() == capacity as usize {
                    model.pop_back();
                }
                model.push_front(chunk);
                assert_eq!(s.list.chunks(0), Vec::from(model.clone()), "seed {seed} access {n}");
            }
            s.check_invariants();
        }
    }
}

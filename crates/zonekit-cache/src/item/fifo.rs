//! FIFO: a hit changes nothing; a miss evicts the block admitted longest ago. A FIFO never
//! removes from the middle, so the queue is a ring of ids and the map only answers "cached?".

use zonekit_base::policy::{PolicyInfo, Role};

use super::idmap::IdMap;
use super::{ItemCache, ItemInfo};

pub const INFO: ItemInfo = PolicyInfo { name: "fifo", summary: "first in, first out", role: Role::Baseline, params: &[], make: |_, capacity| Ok(Box::new(Fifo::new(capacity))) };

pub struct Fifo {
    map: IdMap,
    /// Admitted ids in order; once full, `ring[oldest]` is the next victim.
    ring: Vec<u64>,
    oldest: usize,
    capacity: usize,
}

impl Fifo {
    pub fn new(capacity: usize) -> Fifo {
        assert!(capacity > 0, "a cache holds at least one block");
        Fifo { map: IdMap::new(capacity), ring: Vec::new(), oldest: 0, capacity }
    }
}

impl ItemCache for Fifo {
    fn name(&self) -> &'static str {
        INFO.name
    }

    #[inline]
    fn access(&mut self, block: u64, _next_access: u64) -> bool {
        if self.map.get(block).is_some() {
            return true;
        }
        if self.ring.len() < self.capacity {
            self.ring.push(block);
        } else {
            let victim = std::mem::replace(&mut self.ring[self.oldest], block);
            self.map.remove(victim);
            self.oldest = if self.oldest + 1 == self.capacity { 0 } else { self.oldest + 1 };
        }
        self.map.insert(block, 0);
        false
    }

    #[inline]
    fn prefetch(&self, block: u64) {
        self.map.prefetch(block);
    }

    fn len(&self) -> usize {
        self.ring.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn check_invariants(&self) {
        assert!(self.ring.len() <= self.capacity && self.ring.len() == self.map.len());
        assert!(self.ring.iter().all(|&id| self.map.get(id).is_some()));
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{hits, model_check};
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn hand_worked() {
        // Capacity 3: A B C, A hits (no promotion); D evicts A (admitted first), so A misses
        // and evicts B; C hits; B misses.
        assert_eq!(hits(&mut Fifo::new(3), "ABCADACB"), "---H--H-");
        assert_eq!(hits(&mut Fifo::new(3), "ABCDABCD"), "--------");
        assert_eq!(hits(&mut Fifo::new(1), "AABAB"), "-H---");
    }

    #[test]
    fn matches_a_queue() {
        model_check(Fifo::new, |capacity| {
            let mut queue: VecDeque<u64> = VecDeque::new();
            move |b| {
                if queue.contains(&b) {
                    return true;
                }
                if queue.len() == capacity {
                    queue.pop_front();
                }
                queue.push_back(b);
                false
            }
        });
    }
}

//! SIEVE (Zhang et al., NSDI'24): one FIFO queue, a visited bit per block and a hand. A hit
//! only sets the bit. A miss inserts at the head; to evict, the hand walks from where it last
//! stopped (the tail at first) toward the head, clearing set bits, and evicts the first block
//! whose bit is clear; past the head it wraps to the tail. Survivors stay where they are, so
//! new blocks are sifted out quickly while popular ones keep their place. libCacheSim's `Sieve`
//! is the same algorithm.

use zonekit_base::policy::{PolicyInfo, Role};

use super::idmap::IdMap;
use super::list::{check_mapped, List, Nodes, NIL};
use super::{ItemCache, ItemInfo};

pub const INFO: ItemInfo = PolicyInfo {
    name: "sieve",
    summary: "FIFO with a visited bit and a hand that spares visited blocks (NSDI'24)",
    role: Role::Baseline,
    params: &[],
    make: |_, capacity| Ok(Box::new(Sieve::new(capacity))),
};

pub struct Sieve {
    map: IdMap,
    nodes: Nodes,
    queue: List,
    /// Per node.
    visited: Vec<bool>,
    /// The next node to examine, or [`NIL`] to start at the tail.
    hand: u32,
    capacity: usize,
}

impl Sieve {
    pub fn new(capacity: usize) -> Sieve {
        assert!(capacity > 0, "a cache holds at least one block");
        Sieve { map: IdMap::new(capacity), nodes: Nodes::new(capacity), queue: List::default(), visited: Vec::new(), hand: NIL, capacity }
    }

    /// Evicts one block and returns its node, unlinked and unmapped.
    fn evict(&mut self) -> u32 {
        let mut n = if self.hand == NIL { self.queue.tail() } else { self.hand };
        while self.visited[n as usize] {
            self.visited[n as usize] = false;
            n = match self.nodes.newer(n) {
                NIL => self.queue.tail(),
                newer => newer,
            };
        }
        self.hand = self.nodes.newer(n);
        self.queue.unlink(&mut self.nodes, n);
        self.map.remove(self.nodes.id(n));
        n
    }
}

impl ItemCache for Sieve {
    fn name(&self) -> &'static str {
        INFO.name
    }

    #[inline]
    fn access(&mut self, block: u64, _next_access: u64) -> bool {
        if let Some(n) = self.map.get(block) {
            self.visited[n as usize] = true;
            return true;
        }
        let n = match self.nodes.alloc(block) {
            Some(n) => {
                self.visited.push(false);
                n
            }
            None => {
                let n = self.evict();
                self.nodes.set_id(n, block);
                self.visited[n as usize] = false;
                n
            }
        };
        self.map.insert(block, n);
        self.queue.push_head(&mut self.nodes, n);
        false
    }

    #[inline]
    fn prefetch(&self, block: u64) {
        self.map.prefetch(block);
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn check_invariants(&self) {
        check_mapped(&self.queue, &self.nodes, &self.map, self.capacity);
        assert!(self.hand == NIL || self.map.get(self.nodes.id(self.hand)) == Some(self.hand), "the hand points at a cached block");
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{hits, model_check};
    use super::*;

    #[test]
    fn hand_worked() {
        // Capacity 3, queue head..tail. A B C → [C B A]; A hits (visited). D: the hand starts
        // at the tail, spares A (clears its bit), evicts B; the hand stays at C → [D C A].
        // A hits again (visited). E: the hand at C evicts it → [E D A]. B misses: the hand moved
        // to D (newer than C) and evicts it → [B E A]. A hits: it survived two sweeps.
        assert_eq!(hits(&mut Sieve::new(3), "ABCADAEBA"), "---H-H--H");
        // No hit: SIEVE degenerates to FIFO.
        assert_eq!(hits(&mut Sieve::new(3), "ABCDABCD"), "--------");
        assert_eq!(hits(&mut Sieve::new(1), "AABAB"), "-H---");
    }

    /// Against the paper's pseudocode (Fig. 2) on a plain vector, head at index 0.
    #[test]
    fn matches_the_papers_pseudocode() {
        model_check(Sieve::new, |capacity| {
            // (id, visited), head first; the hand as an id (None: start at the tail).
            let mut queue: Vec<(u64, bool)> = Vec::new();
            let mut hand: Option<u64> = None;
            move |b| {
                if let Some(e) = queue.iter_mut().find(|e| e.0 == b) {
                    e.1 = true;
                    return true;
                }
                if queue.len() == capacity {
                    let mut i = hand.map_or(queue.len() - 1, |h| queue.iter().position(|e| e.0 == h).unwrap());
                    while queue[i].1 {
                        queue[i].1 = false;
                        i = if i == 0 { queue.len() - 1 } else { i - 1 };
                    }
                    hand = if i == 0 { None } else { Some(queue[i - 1].0) };
                    queue.remove(i);
                }
                queue.insert(0, (b, false));
                false
            }
        });
    }
}

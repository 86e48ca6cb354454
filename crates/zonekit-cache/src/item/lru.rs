//! LRU: a hit moves the block to the head; a miss evicts the tail (least recently used).

use zonekit_base::policy::{PolicyInfo, Role};

use super::idmap::IdMap;
use super::list::{check_mapped, List, Nodes};
use super::{ItemCache, ItemInfo};

pub const INFO: ItemInfo = PolicyInfo { name: "lru", summary: "least recently used", role: Role::Baseline, params: &[], make: |_, capacity| Ok(Box::new(Lru::new(capacity))) };

pub struct Lru {
    map: IdMap,
    nodes: Nodes,
    queue: List,
    capacity: usize,
}

impl Lru {
    pub fn new(capacity: usize) -> Lru {
        assert!(capacity > 0, "a cache holds at least one block");
        Lru { map: IdMap::new(capacity), nodes: Nodes::new(capacity), queue: List::default(), capacity }
    }
}

impl ItemCache for Lru {
    fn name(&self) -> &'static str {
        INFO.name
    }

    #[inline]
    fn access(&mut self, block: u64, _next_access: u64) -> bool {
        if let Some(n) = self.map.get(block) {
            self.queue.move_to_head(&mut self.nodes, n);
            return true;
        }
        let n = match self.nodes.alloc(block) {
            Some(n) => n,
            None => {
                let n = self.queue.pop_tail(&mut self.nodes).expect("a full cache has a tail");
                self.map.remove(self.nodes.id(n));
                self.nodes.set_id(n, block);
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
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{hits, model_check};
    use super::*;

    #[test]
    fn hand_worked() {
        // Capacity 3: A B C, A hits; D evicts B (least recent), B evicts C, A hits, C misses.
        assert_eq!(hits(&mut Lru::new(3), "ABCADBAC"), "---H--H-");
        // A cyclic scan one larger than the cache never hits under LRU.
        assert_eq!(hits(&mut Lru::new(3), "ABCDABCD"), "--------");
        assert_eq!(hits(&mut Lru::new(1), "AABAB"), "-H---");
    }

    /// Against the textbook definition: keep the `capacity` most recently used distinct blocks.
    #[test]
    fn matches_a_recency_list() {
        model_check(Lru::new, |capacity| {
            let mut recent: Vec<u64> = Vec::new();
            move |b| {
                let hit = recent.contains(&b);
                recent.retain(|&x| x != b);
                recent.insert(0, b);
                recent.truncate(capacity);
                hit
            }
        });
    }
}

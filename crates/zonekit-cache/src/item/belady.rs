//! Belady's OPT (MIN): on a miss with the cache full, evict the cached block whose next access
//! is farthest in the future (never, first), then admit the missed block. A bound, not a
//! policy: it reads the `next_access` the caller computed in a pass over the stream. The
//! missed block is always admitted (demand paging, as libCacheSim's `Belady`); an OPT that may
//! bypass does better.
//!
//! The cached blocks sit in a binary max-heap on next access with each block's position
//! tracked, so a hit (its next access moves later) and an eviction are O(log n).

use zonekit_base::policy::{PolicyInfo, Role};

use super::idmap::IdMap;
use super::{ItemCache, ItemInfo};

pub const INFO: ItemInfo = PolicyInfo {
    name: "belady",
    summary: "OPT: evict the block whose next access is farthest (needs the future)",
    role: Role::Oracle,
    params: &[],
    make: |_, capacity| Ok(Box::new(Belady::new(capacity))),
};

pub struct Belady {
    /// Block → slot.
    map: IdMap,
    /// Per slot: the block and its next access.
    ids: Vec<u64>,
    next: Vec<u64>,
    /// Per slot: its index in `heap`.
    position: Vec<u32>,
    /// Slots, a max-heap on `next`.
    heap: Vec<u32>,
    capacity: usize,
}

impl Belady {
    pub fn new(capacity: usize) -> Belady {
        assert!(capacity > 0 && capacity < u32::MAX as usize, "a cache holds 1 to 2^32 - 2 blocks");
        Belady { map: IdMap::new(capacity), ids: Vec::new(), next: Vec::new(), position: Vec::new(), heap: Vec::new(), capacity }
    }

    #[inline]
    fn key(&self, i: usize) -> u64 {
        self.next[self.heap[i] as usize]
    }

    #[inline]
    fn swap(&mut self, i: usize, j: usize) {
        self.heap.swap(i, j);
        self.position[self.heap[i] as usize] = i as u32;
        self.position[self.heap[j] as usize] = j as u32;
    }

    fn sift_up(&mut self, mut i: usize) -> usize {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.key(parent) >= self.key(i) {
                break;
            }
            self.swap(i, parent);
            i = parent;
        }
        i
    }

    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (left, right) = (2 * i + 1, 2 * i + 2);
            let mut largest = i;
            if left < self.heap.len() && self.key(left) > self.key(largest) {
                largest = left;
            }
            if right < self.heap.len() && self.key(right) > self.key(largest) {
                largest = right;
            }
            if largest == i {
                return;
            }
            self.swap(i, largest);
            i = largest;
        }
    }
}

impl ItemCache for Belady {
    fn name(&self) -> &'static str {
        INFO.name
    }

    #[inline]
    fn access(&mut self, block: u64, next_access: u64) -> bool {
        if let Some(slot) = self.map.get(block) {
            self.next[slot as usize] = next_access;
            let i = self.position[slot as usize] as usize;
            let i = self.sift_up(i);
            self.sift_down(i);
            return true;
        }
        if self.heap.len() < self.capacity {
            let slot = self.heap.len() as u32;
            self.ids.push(block);
            self.next.push(next_access);
            self.position.push(slot);
            self.heap.push(slot);
            self.sift_up(slot as usize);
            self.map.insert(block, slot);
        } else {
            // The root is the block needed last: its slot takes the new block.
            let slot = self.heap[0];
            self.map.remove(self.ids[slot as usize]);
            self.ids[slot as usize] = block;
            self.next[slot as usize] = next_access;
            self.sift_down(0);
            self.map.insert(block, slot);
        }
        false
    }

    #[inline]
    fn prefetch(&self, block: u64) {
        self.map.prefetch(block);
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn check_invariants(&self) {
        assert!(self.heap.len() <= self.capacity && self.heap.len() == self.map.len());
        for (i, &slot) in self.heap.iter().enumerate() {
            assert_eq!(self.position[slot as usize] as usize, i);
            assert_eq!(self.map.get(self.ids[slot as usize]), Some(slot));
            assert!(i == 0 || self.key((i - 1) / 2) >= self.key(i), "heap order broken at {i}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{hits, model_check_with_future};
    use super::*;
    use zonekit_base::NEVER;

    #[test]
    fn hand_worked() {
        // Capacity 3. A B C fill. D evicts C (next needed at 9, the farthest): A B D. A, B hit.
        // E evicts D (never needed again). A, B hit; C misses.
        assert_eq!(hits(&mut Belady::new(3), "ABCDABEABC"), "----HH-HH-");
        // Capacity 2 on a cyclic scan of three: LRU never hits, OPT hits every other time.
        assert_eq!(hits(&mut Belady::new(2), "ABCABCABC"), "---H-H-H-");
    }

    #[test]
    fn a_block_never_needed_again_goes_first() {
        let mut c = Belady::new(2);
        assert!(!c.access(1, 5));
        assert!(!c.access(2, NEVER));
        assert!(!c.access(3, 4));
        assert!(c.access(1, NEVER), "1 was kept: 2 was never needed again");
    }

    /// Against an O(n) scan for the farthest next access.
    #[test]
    fn matches_a_scan_for_the_farthest_next_access() {
        model_check_with_future(Belady::new, |capacity| {
            let mut cached: Vec<(u64, u64)> = Vec::new();
            move |b, next| {
                if let Some(e) = cached.iter_mut().find(|e| e.0 == b) {
                    e.1 = next;
                    return true;
                }
                if cached.len() == capacity {
                    let far = cached.iter().enumerate().max_by_key(|(_, e)| e.1).unwrap().0;
                    // Ties are all "never": any of them is as good, so only hits are compared.
                    cached.remove(far);
                }
                cached.push((b, next));
                false
            }
        });
    }
}

//! Intrusive doubly linked lists of chunk ids over one fixed slab, with a hash index from chunk
//! id to slab slot: what the list samplers ([`super::lru`], [`super::arc`], [`super::slru`])
//! share. A chunk is in at most one list. Every operation is O(1), and nothing allocates after
//! construction: the slab and the index are sized for `capacity` chunks up front.
//!
//! The real footprint is larger than the thesis' 4 bytes an id (a 24-byte node and an index
//! slot a chunk); the samplers report the thesis' payload accounting, which is what the budget
//! bounds.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use zonekit_base::map::mix64;

/// "No node": list ends and the end of the free chain.
const NIL: u32 = u32::MAX;

/// Hashes a chunk id with one 64-bit mix: SipHash would cost more than the rest of an access,
/// and chunk ids are not attacker-chosen.
#[derive(Default)]
pub(crate) struct ChunkHasher(u64);

impl Hasher for ChunkHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Only reached for keys other than u64; kept correct anyway.
        for &b in bytes {
            self.0 = mix64(self.0.rotate_left(8) ^ b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = mix64(x);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type ChunkMap<V> = HashMap<u64, V, BuildHasherDefault<ChunkHasher>>;

#[derive(Copy, Clone, Debug)]
struct Node {
    chunk: u64,
    /// Towards the MRU end (`NIL` at the MRU); in the free chain, unused.
    prev: u32,
    /// Towards the LRU end (`NIL` at the LRU); in the free chain, the next free node.
    next: u32,
    list: u8,
}

#[derive(Copy, Clone, Debug)]
struct Ends {
    mru: u32,
    lru: u32,
    len: u32,
}

/// A node in the slab, as returned by [`Lists::find`]; valid until that chunk is removed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slot(u32);

/// Up to 256 LRU lists sharing one slab of `capacity` nodes.
pub(crate) struct Lists {
    nodes: Vec<Node>,
    /// Head of the chain of free nodes (linked through `next`).
    free: u32,
    ends: Vec<Ends>,
    index: ChunkMap<u32>,
}

impl Lists {
    pub fn new(lists: usize, capacity: usize) -> Lists {
        assert!((1..=256).contains(&lists), "{lists} lists: 1 to 256");
        assert!(capacity < NIL as usize, "{capacity} nodes do not fit 32-bit links");
        let nodes = (0..capacity).map(|i| Node { chunk: 0, prev: NIL, next: if i + 1 < capacity { i as u32 + 1 } else { NIL }, list: 0 }).collect();
        Lists {
            nodes,
            free: if capacity > 0 { 0 } else { NIL },
            ends: vec![Ends { mru: NIL, lru: NIL, len: 0 }; lists],
            index: ChunkMap::with_capacity_and_hasher(capacity, Default::default()),
        }
    }

    pub fn capacity(&self) -> usize {
        self.nodes.len()
    }

    pub fn len(&self, list: usize) -> usize {
        self.ends[list].len as usize
    }

    /// The node holding `chunk` and the list it is in.
    #[inline]
    pub fn find(&self, chunk: u64) -> Option<(Slot, usize)> {
        let &i = self.index.get(&chunk)?;
        Some((Slot(i), self.nodes[i as usize].list as usize))
    }

    /// The list holding `chunk`.
    #[inline]
    pub fn list_of(&self, chunk: u64) -> Option<usize> {
        self.find(chunk).map(|(_, list)| list)
    }

    /// Inserts `chunk` (not in any list) at the MRU end of `list`. The slab must have room.
    pub fn push_mru(&mut self, list: usize, chunk: u64) {
        let i = self.free;
        assert_ne!(i, NIL, "push into a full slab of {} nodes", self.nodes.len());
        self.free = self.nodes[i as usize].next;
        self.nodes[i as usize].chunk = chunk;
        self.link_mru(i, list);
        let old = self.index.insert(chunk, i);
        debug_assert!(old.is_none(), "chunk {chunk} pushed twice");
    }

    /// Moves a node to the MRU end of `list` (its own list or another).
    #[inline]
    pub fn move_to_mru(&mut self, slot: Slot, list: usize) {
        self.unlink(slot.0);
        self.link_mru(slot.0, list);
    }

    /// Moves the LRU node of `from` to the MRU end of `to`; false if `from` is empty.
    pub fn move_lru(&mut self, from: usize, to: usize) -> bool {
        let i = self.ends[from].lru;
        if i == NIL {
            return false;
        }
        self.move_to_mru(Slot(i), to);
        true
    }

    /// Removes and returns the LRU chunk of `list`.
    pub fn pop_lru(&mut self, list: usize) -> Option<u64> {
        let i = self.ends[list].lru;
        if i == NIL {
            return None;
        }
        let chunk = self.nodes[i as usize].chunk;
        self.unlink(i);
        self.index.remove(&chunk);
        self.nodes[i as usize].next = self.free;
        self.free = i;
        Some(chunk)
    }

    fn unlink(&mut self, i: u32) {
        let Node { prev, next, list, .. } = self.nodes[i as usize];
        let ends = &mut self.ends[list as usize];
        if prev == NIL {
            ends.mru = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            ends.lru = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
        ends.len -= 1;
    }

    fn link_mru(&mut self, i: u32, list: usize) {
        let ends = &mut self.ends[list];
        let head = ends.mru;
        self.nodes[i as usize] = Node { chunk: self.nodes[i as usize].chunk, prev: NIL, next: head, list: list as u8 };
        if head == NIL {
            ends.lru = i;
        } else {
            self.nodes[head as usize].prev = i;
        }
        ends.mru = i;
        ends.len += 1;
    }

    /// The chunks of `list`, MRU first (O(len): for tests).
    #[cfg(test)]
    pub fn chunks(&self, list: usize) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len(list));
        let mut i = self.ends[list].mru;
        while i != NIL {
            out.push(self.nodes[i as usize].chunk);
            i = self.nodes[i as usize].next;
        }
        out
    }

    /// Links run both ways, lengths and tags match, the index names exactly the linked nodes,
    /// and linked plus free nodes make the slab. O(capacity): tests only.
    #[cfg(test)]
    pub fn check_invariants(&self) {
        let mut linked = 0;
        for (list, ends) in self.ends.iter().enumerate() {
            let (mut i, mut prev, mut len) = (ends.mru, NIL, 0);
            while i != NIL {
                let n = self.nodes[i as usize];
                assert_eq!((n.prev, n.list as usize), (prev, list), "node {i} of list {list}");
                assert_eq!(self.index.get(&n.chunk), Some(&i), "index of chunk {}", n.chunk);
                (prev, i, len) = (i, n.next, len + 1);
            }
            assert_eq!((ends.lru, ends.len), (prev, len), "ends of list {list}");
            linked += len as usize;
        }
        let mut free = 0;
        let mut i = self.free;
        while i != NIL {
            free += 1;
            i = self.nodes[i as usize].next;
        }
        assert_eq!(self.index.len(), linked);
        assert_eq!(linked + free, self.nodes.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_move_pop_keep_the_lists_consistent() {
        let mut l = Lists::new(2, 4);
        for c in [10, 11, 12] {
            l.push_mru(0, c);
        }
        assert_eq!(l.chunks(0), [12, 11, 10]);
        let (s, list) = l.find(10).unwrap();
        assert_eq!(list, 0);
        l.move_to_mru(s, 1);
        assert_eq!((l.chunks(0), l.chunks(1)), (vec![12, 11], vec![10]));
        assert!(l.move_lru(0, 1));
        assert_eq!(l.chunks(1), [11, 10]);
        l.push_mru(0, 13);
        assert_eq!(l.pop_lru(1), Some(10));
        assert_eq!(l.list_of(10), None);
        l.push_mru(1, 14);
        l.check_invariants();
        assert_eq!((l.len(0), l.len(1), l.capacity()), (2, 2, 4));
        assert_eq!(l.pop_lru(0), Some(12));
        assert_eq!(l.pop_lru(0), Some(13));
        assert_eq!(l.pop_lru(0), None);
        assert!(!l.move_lru(0, 1));
        l.check_invariants();
    }

    #[test]
    #[should_panic(expected = "full slab")]
    fn pushing_into_a_full_slab_panics() {
        let mut l = Lists::new(1, 1);
        l.push_mru(0, 1);
        l.push_mru(0, 2);
    }
}

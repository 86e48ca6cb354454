//! Intrusive doubly linked queues over one node array, the way libCacheSim threads its cache
//! objects: the head is the newest end, the tail the oldest. Nodes are addressed by `u32`
//! index, so a queue operation touches no allocator and a node can move between queues (S3-FIFO's
//! small, main and ghost) without changing the index the [`IdMap`](super::idmap::IdMap) holds.

/// "No node": the end of a queue.
pub const NIL: u32 = u32::MAX;

#[derive(Copy, Clone, Debug)]
pub struct Node {
    pub id: u64,
    /// Toward the head (newer).
    prev: u32,
    /// Toward the tail (older).
    next: u32,
}

/// A pool of at most `len_max` nodes, handed out in order (the array grows as they are) and
/// never freed: a full cache reuses the node of the block it evicts.
pub struct Nodes {
    nodes: Vec<Node>,
    len_max: usize,
}

impl Nodes {
    pub fn new(len_max: usize) -> Nodes {
        assert!(len_max < NIL as usize, "at most {} nodes", NIL - 1);
        Nodes { nodes: Vec::new(), len_max }
    }

    /// A new node for `id`, if the pool is not exhausted.
    #[inline]
    pub fn alloc(&mut self, id: u64) -> Option<u32> {
        if self.nodes.len() == self.len_max {
            return None;
        }
        self.nodes.push(Node { id, prev: NIL, next: NIL });
        Some(self.nodes.len() as u32 - 1)
    }

    #[inline]
    pub fn id(&self, n: u32) -> u64 {
        self.nodes[n as usize].id
    }

    #[inline]
    pub fn set_id(&mut self, n: u32, id: u64) {
        self.nodes[n as usize].id = id;
    }

    /// The node after `n` toward the head (newer), or [`NIL`].
    #[inline]
    pub fn newer(&self, n: u32) -> u32 {
        self.nodes[n as usize].prev
    }

    pub fn allocated(&self) -> usize {
        self.nodes.len()
    }
}

/// One queue threaded through a [`Nodes`] pool.
#[derive(Debug)]
pub struct List {
    head: u32,
    tail: u32,
    len: usize,
}

impl Default for List {
    fn default() -> Self {
        List { head: NIL, tail: NIL, len: 0 }
    }
}

impl List {
    pub fn len(&self) -> usize {
        self.len
    }

    /// The oldest node, or [`NIL`].
    #[inline]
    pub fn tail(&self) -> u32 {
        self.tail
    }

    /// Links `n` (in no queue) in at the head.
    #[inline]
    pub fn push_head(&mut self, nodes: &mut Nodes, n: u32) {
        let node = &mut nodes.nodes[n as usize];
        node.prev = NIL;
        node.next = self.head;
        if self.head == NIL {
            self.tail = n;
        } else {
            nodes.nodes[self.head as usize].prev = n;
        }
        self.head = n;
        self.len += 1;
    }

    /// Unlinks `n`, which must be in this queue.
    #[inline]
    pub fn unlink(&mut self, nodes: &mut Nodes, n: u32) {
        let Node { prev, next, .. } = nodes.nodes[n as usize];
        if prev == NIL {
            debug_assert_eq!(self.head, n);
            self.head = next;
        } else {
            nodes.nodes[prev as usize].next = next;
        }
        if next == NIL {
            debug_assert_eq!(self.tail, n);
            self.tail = prev;
        } else {
            nodes.nodes[next as usize].prev = prev;
        }
        self.len -= 1;
    }

    /// Unlinks and returns the oldest node.
    #[inline]
    pub fn pop_tail(&mut self, nodes: &mut Nodes) -> Option<u32> {
        let n = self.tail;
        if n == NIL {
            return None;
        }
        self.unlink(nodes, n);
        Some(n)
    }

    /// Moves `n` (in this queue) to the head.
    #[inline]
    pub fn move_to_head(&mut self, nodes: &mut Nodes, n: u32) {
        if self.head != n {
            self.unlink(nodes, n);
            self.push_head(nodes, n);
        }
    }

    /// The ids from head (newest) to tail (oldest), for tests and invariant checks.
    pub fn ids(&self, nodes: &Nodes) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len);
        let mut n = self.head;
        while n != NIL {
            out.push(nodes.id(n));
            n = nodes.nodes[n as usize].next;
        }
        assert_eq!(out.len(), self.len, "queue length out of step with its links");
        out
    }
}

/// Checks a queue of cached blocks against the map that finds them: at most `capacity`
/// blocks, as many as the map holds, each mapped to its own node.
pub fn check_mapped(queue: &List, nodes: &Nodes, map: &super::idmap::IdMap, capacity: usize) {
    let ids = queue.ids(nodes);
    assert!(ids.len() <= capacity && ids.len() == map.len());
    assert!(ids.iter().all(|&id| map.get(id).is_some_and(|n| nodes.id(n) == id)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_unlink_pop_and_move_keep_order() {
        let mut nodes = Nodes::new(4);
        let mut list = List::default();
        let ns: Vec<u32> = (10..14).map(|id| nodes.alloc(id).unwrap()).collect();
        assert_eq!(nodes.alloc(99), None);
        for &n in &ns {
            list.push_head(&mut nodes, n);
        }
        assert_eq!(list.ids(&nodes), [13, 12, 11, 10]);
        list.move_to_head(&mut nodes, ns[0]);
        assert_eq!(list.ids(&nodes), [10, 13, 12, 11]);
        list.unlink(&mut nodes, ns[2]);
        assert_eq!(list.ids(&nodes), [10, 13, 11]);
        assert_eq!(list.pop_tail(&mut nodes), Some(ns[1]));
        assert_eq!((list.tail(), nodes.newer(list.tail())), (ns[3], ns[0]));
        assert_eq!(list.ids(&nodes), [10, 13]);
        list.pop_tail(&mut nodes);
        list.pop_tail(&mut nodes);
        assert_eq!((list.pop_tail(&mut nodes), list.len(), list.tail()), (None, 0, NIL));
    }
}

//! One on-device node format for every node of both trees.
//!
//! A node is `node_size_bytes` (a whole number of device blocks) holding a 32-byte header and
//! an array of entries `{tag: u8, key: u64 LE, value: [u8; stride]}`:
//!
//! ```text
//! 0   magic "ZBT1"           4  kind u8  5  reserved u8  6  count u16 LE
//! 8   low_key u64 LE         16 sequence u64 LE (write order, for recovery)
//! 24  crc32 u32 LE (of the whole node with this field zero)   28 reserved u32 (zero)
//! 32  count × (tag, key, value)   then zeros to the end of the node
//! ```
//!
//! The stride depends on the kind: a leaf's value size, 8 (a child address) for interior
//! nodes, 17 (state byte, address, log address) for head nodes. Log nodes have the layout of the
//! node they log, as the paper requires (Switch_apply turns a full log into the node itself):
//! entry `i` of a log is the pending change to entry `i` of its node, with the tag saying which.

use crate::TreeError;

pub const MAGIC: [u8; 4] = *b"ZBT1";
pub const HEADER_BYTES: usize = 32;
/// Bytes of an entry besides its value: the tag and the key.
pub const ENTRY_OVERHEAD_BYTES: usize = 9;
/// An absent node address.
pub const NULL_ADDR: u64 = u64::MAX;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Leaf = 1,
    LeafLog = 2,
    Interior = 3,
    InteriorLog = 4,
    /// A leaf-head or interior-head node (a ZB+-tree head level), or a head above them.
    Head = 5,
    /// A copy-on-write B+-tree inner node (keys and child addresses).
    CowInner = 6,
    CowLeaf = 7,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Leaf,
            2 => Kind::LeafLog,
            3 => Kind::Interior,
            4 => Kind::InteriorLog,
            5 => Kind::Head,
            6 => Kind::CowInner,
            7 => Kind::CowLeaf,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Leaf => "leaf",
            Kind::LeafLog => "leaf-log",
            Kind::Interior => "interior",
            Kind::InteriorLog => "interior-log",
            Kind::Head => "head",
            Kind::CowInner => "cow-inner",
            Kind::CowLeaf => "cow-leaf",
        }
    }
}

/// Entry tags. In a node every entry is [`TAG_LIVE`]; in a log, the change pending for the
/// node's entry at the same position.
pub const TAG_EMPTY: u8 = 0;
pub const TAG_LIVE: u8 = 1;
pub const TAG_DELETE: u8 = 2;

/// A decoded node: parallel arrays, values flat with a fixed stride.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub kind: Kind,
    /// A key the node's range contains when it was written (the separator that routed to it):
    /// lets a relocation find the node's parent by searching for it.
    pub low_key: u64,
    pub sequence: u64,
    pub stride: usize,
    pub tags: Vec<u8>,
    pub keys: Vec<u64>,
    pub values: Vec<u8>,
}

impl Node {
    pub fn new(kind: Kind, stride: usize, low_key: u64) -> Node {
        Node { kind, low_key, sequence: 0, stride, tags: Vec::new(), keys: Vec::new(), values: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn value(&self, i: usize) -> &[u8] {
        &self.values[i * self.stride..(i + 1) * self.stride]
    }

    pub fn value_mut(&mut self, i: usize) -> &mut [u8] {
        let s = self.stride;
        &mut self.values[i * s..(i + 1) * s]
    }

    pub fn push(&mut self, tag: u8, key: u64, value: &[u8]) {
        debug_assert_eq!(value.len(), self.stride);
        self.tags.push(tag);
        self.keys.push(key);
        self.values.extend_from_slice(value);
    }

    pub fn insert(&mut self, i: usize, tag: u8, key: u64, value: &[u8]) {
        debug_assert_eq!(value.len(), self.stride);
        self.tags.insert(i, tag);
        self.keys.insert(i, key);
        let at = i * self.stride;
        self.values.splice(at..at, value.iter().copied());
    }

    pub fn remove(&mut self, i: usize) {
        self.tags.remove(i);
        self.keys.remove(i);
        let at = i * self.stride;
        self.values.drain(at..at + self.stride);
    }

    pub fn set(&mut self, i: usize, tag: u8, key: u64, value: &[u8]) {
        self.tags[i] = tag;
        self.keys[i] = key;
        self.value_mut(i).copy_from_slice(value);
    }

    /// Moves entries `at..` into a new node of the same kind.
    pub fn split_off(&mut self, at: usize) -> Node {
        let mut right = Node::new(self.kind, self.stride, self.keys[at]);
        right.tags = self.tags.split_off(at);
        right.keys = self.keys.split_off(at);
        right.values = self.values.split_off(at * self.stride);
        right
    }

    /// Appends every entry of `other`.
    pub fn append(&mut self, other: &Node) {
        self.tags.extend_from_slice(&other.tags);
        self.keys.extend_from_slice(&other.keys);
        self.values.extend_from_slice(&other.values);
    }

    /// Position of `key` among sorted keys: `Ok(i)` if present.
    pub fn find(&self, key: u64) -> Result<usize, usize> {
        self.keys.binary_search(&key)
    }

    /// The child to follow for `key` in a routing node whose entry 0 is the `First` sentinel:
    /// the last entry whose key is ≤ `key`, with entry 0 matching everything.
    pub fn route(&self, key: u64) -> usize {
        debug_assert!(!self.is_empty());
        // Entry 0 is First: search only the keys after it.
        match self.keys[1..].binary_search(&key) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }

    pub fn u64_at(&self, i: usize, word: usize) -> u64 {
        let v = self.value(i);
        u64::from_le_bytes(v[word * 8..word * 8 + 8].try_into().expect("8 bytes"))
    }

    /// How many entries fit in a node of `node_size_bytes` with this stride.
    pub fn capacity(node_size_bytes: usize, stride: usize) -> usize {
        node_size_bytes.saturating_sub(HEADER_BYTES) / (ENTRY_OVERHEAD_BYTES + stride)
    }

    /// Encodes into `out` (`node_size_bytes` long). Panics if the node does not fit: callers
    /// split before that.
    pub fn encode(&self, out: &mut [u8]) {
        let need = HEADER_BYTES + self.len() * (ENTRY_OVERHEAD_BYTES + self.stride);
        assert!(need <= out.len(), "{} node of {} entries does not fit in {} bytes", self.kind.name(), self.len(), out.len());
        out.fill(0);
        out[0..4].copy_from_slice(&MAGIC);
        out[4] = self.kind as u8;
        out[6..8].copy_from_slice(&(self.len() as u16).to_le_bytes());
        out[8..16].copy_from_slice(&self.low_key.to_le_bytes());
        out[16..24].copy_from_slice(&self.sequence.to_le_bytes());
        let mut at = HEADER_BYTES;
        for i in 0..self.len() {
            out[at] = self.tags[i];
            out[at + 1..at + 9].copy_from_slice(&self.keys[i].to_le_bytes());
            out[at + 9..at + 9 + self.stride].copy_from_slice(self.value(i));
            at += ENTRY_OVERHEAD_BYTES + self.stride;
        }
        let crc = crc32fast::hash(out);
        out[24..28].copy_from_slice(&crc.to_le_bytes());
    }

    /// Decodes a node read at `addr`, checking magic, kind, stride, count and checksum.
    /// `expect` is the kind the caller's pointer says lives there.
    pub fn decode(buf: &[u8], addr: u64, expect: &[Kind], stride_of: impl Fn(Kind) -> usize) -> Result<Node, TreeError> {
        let corrupt = |reason: String| TreeError::CorruptNode { addr, reason };
        if buf[0..4] != MAGIC {
            return Err(corrupt(if buf.iter().all(|&b| b == 0) { "the block is blank (never written or zeroed)".into() } else { "bad magic: not a tree node".into() }));
        }
        let stored = u32::from_le_bytes(buf[24..28].try_into().expect("4 bytes"));
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&buf[..24]);
        hasher.update(&[0; 4]);
        hasher.update(&buf[28..]);
        let computed = hasher.finalize();
        if stored != computed {
            return Err(corrupt(format!("checksum mismatch: stored {stored:08x}, computed {computed:08x}")));
        }
        let kind = Kind::from_u8(buf[4]).ok_or_else(|| corrupt(format!("unknown node kind {}", buf[4])))?;
        if !expect.contains(&kind) {
            let names: Vec<&str> = expect.iter().map(|k| k.name()).collect();
            return Err(corrupt(format!("a {} node where a {} node was expected", kind.name(), names.join(" or "))));
        }
        let stride = stride_of(kind);
        let count = u16::from_le_bytes(buf[6..8].try_into().expect("2 bytes")) as usize;
        if HEADER_BYTES + count * (ENTRY_OVERHEAD_BYTES + stride) > buf.len() {
            return Err(corrupt(format!("{count} entries do not fit in a {}-byte node", buf.len())));
        }
        let low_key = u64::from_le_bytes(buf[8..16].try_into().expect("8 bytes"));
        let sequence = u64::from_le_bytes(buf[16..24].try_into().expect("8 bytes"));
        let mut node = Node::new(kind, stride, low_key);
        node.sequence = sequence;
        node.tags.reserve(count);
        node.keys.reserve(count);
        node.values.reserve(count * stride);
        let mut at = HEADER_BYTES;
        for _ in 0..count {
            let tag = buf[at];
            if tag > TAG_DELETE {
                return Err(corrupt(format!("entry tag {tag} is not empty, live or delete")));
            }
            node.tags.push(tag);
            node.keys.push(u64::from_le_bytes(buf[at + 1..at + 9].try_into().expect("8 bytes")));
            node.values.extend_from_slice(&buf[at + 9..at + 9 + stride]);
            at += ENTRY_OVERHEAD_BYTES + stride;
        }
        Ok(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_checksum() {
        let mut n = Node::new(Kind::Leaf, 4, 7);
        n.push(TAG_LIVE, 7, &[1, 2, 3, 4]);
        n.push(TAG_LIVE, 9, &[5, 6, 7, 8]);
        n.insert(1, TAG_LIVE, 8, &[9, 9, 9, 9]);
        n.sequence = 42;
        let mut buf = vec![0u8; 512];
        n.encode(&mut buf);
        let back = Node::decode(&buf, 3, &[Kind::Leaf], |_| 4).unwrap();
        assert_eq!(back, n);
        buf[40] ^= 1;
        let err = Node::decode(&buf, 3, &[Kind::Leaf], |_| 4).unwrap_err().to_string();
        assert!(err.contains("node at block 3") && err.contains("checksum"), "{err}");
        assert!(Node::decode(&vec![0u8; 512], 5, &[Kind::Leaf], |_| 4).unwrap_err().to_string().contains("blank"));
    }

    #[test]
    fn wrong_kind_is_named() {
        let n = Node::new(Kind::Head, 17, 0);
        let mut buf = vec![0u8; 256];
        n.encode(&mut buf);
        let err = Node::decode(&buf, 1, &[Kind::Leaf, Kind::LeafLog], |_| 17).unwrap_err().to_string();
        assert!(err.contains("a head node where a leaf or leaf-log node was expected"), "{err}");
    }

    #[test]
    fn route_treats_entry_zero_as_first() {
        let mut n = Node::new(Kind::Interior, 8, 0);
        for k in [500, 10, 20] {
            n.push(TAG_LIVE, k, &[0; 8]);
        }
        n.keys[0] = 500; // ignored: entry 0 is First
        assert_eq!(n.route(0), 0);
        assert_eq!(n.route(9), 0);
        assert_eq!(n.route(10), 1);
        assert_eq!(n.route(19), 1);
        assert_eq!(n.route(20), 2);
        assert_eq!(n.route(u64::MAX), 2);
    }
}

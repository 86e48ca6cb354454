//! Sampling and sharding (seed 000, section 2.1.1).
//!
//! - [`Shards`]: SHARDS spatial sampling (Waldspurger et al., FAST'15) keeps a block iff
//!   `MurmurHash3(volume, block) mod P < T`; seed 000 uses P = 10, T = 1 (rate 1/10). Every
//!   access to a sampled block is kept, so per-block statistics (write counts, lifetimes) are
//!   exact for the sample and the working set scales with T/P.
//! - [`Ring`]: consistent hashing of (volume, chunk) onto storage nodes, as a cloud block store
//!   spreads each volume over its nodes; `node_of` gives node i's share of a cluster trace.

use crate::blocks::BlockIo;
use crate::record::SpecError;

/// MurmurHash3 x86_32 (Austin Appleby's reference algorithm).
pub fn murmur3_32(data: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xCC9E_2D51;
    const C2: u32 = 0x1B87_3593;
    let mut h = seed;
    let mut chunks = data.chunks_exact(4);
    for c in chunks.by_ref() {
        let mut k = u32::from_le_bytes(c.try_into().unwrap());
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xE654_6B64);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, &b) in tail.iter().enumerate() {
            k |= (b as u32) << (8 * i);
        }
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// The bytes hashed for a block: volume (u32 LE) then block number (u64 LE).
fn block_bytes(volume: u32, block: u64) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[..4].copy_from_slice(&volume.to_le_bytes());
    b[4..].copy_from_slice(&block.to_le_bytes());
    b
}

/// SHARDS spatial sampling: keep a block iff `hash mod modulus < threshold`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shards {
    pub modulus: u32,
    pub threshold: u32,
    pub seed: u32,
}

impl Shards {
    /// Seed 000's setting: rate 1/10.
    pub const THESIS: Shards = Shards { modulus: 10, threshold: 1, seed: 0 };

    pub fn new(modulus: u32, threshold: u32, seed: u32) -> Result<Shards, SpecError> {
        if modulus == 0 || threshold == 0 || threshold > modulus {
            return Err(format!("sampling needs 0 < T <= P (got P = {modulus}, T = {threshold})").into());
        }
        Ok(Shards { modulus, threshold, seed })
    }

    /// `P/T` (the CLI's `--sample`, e.g. `10/1`): keep blocks whose hash mod P is below T.
    pub fn parse(spec: &str) -> Result<Shards, SpecError> {
        let (p, t) = spec.split_once('/').ok_or("expected P/T, e.g. 10/1")?;
        let p: u32 = p.parse().map_err(|_| "P is not a number")?;
        let t: u32 = t.parse().map_err(|_| "T is not a number")?;
        Shards::new(p, t, 0)
    }

    pub fn rate(&self) -> f64 {
        self.threshold as f64 / self.modulus as f64
    }

    #[inline]
    pub fn keeps(&self, volume: u32, block: u64) -> bool {
        murmur3_32(&block_bytes(volume, block), self.seed) % self.modulus < self.threshold
    }

    pub fn keeps_io(&self, io: &BlockIo) -> bool {
        self.keeps(io.volume, io.block)
    }
}

/// A consistent-hash ring of storage nodes with virtual nodes.
#[derive(Clone, Debug)]
pub struct Ring {
    points: Vec<(u32, u32)>,
    chunk_blocks: u64,
    nodes: u32,
}

impl Ring {
    /// The most storage nodes a ring takes: far beyond the clusters traces are sharded over,
    /// and few enough that their points stay small.
    pub const NODES_MAX: u32 = 1 << 20;
    /// The most points (nodes × virtual nodes): 8 bytes each, 256 MiB in all.
    pub const POINTS_MAX: u64 = 1 << 25;

    /// `nodes` storage nodes, `virtual_nodes` points each, volumes placed in chunks of
    /// `chunk_blocks` blocks.
    pub fn new(nodes: u32, virtual_nodes: u32, chunk_blocks: u64) -> Result<Ring, SpecError> {
        if nodes == 0 || virtual_nodes == 0 || chunk_blocks == 0 {
            return Err("a ring needs at least one node, one virtual node and a positive chunk size".into());
        }
        // Refused before the points are allocated (4294967295 nodes aborted the allocator).
        let points = nodes as u64 * virtual_nodes as u64;
        if nodes > Ring::NODES_MAX || points > Ring::POINTS_MAX {
            return Err(format!("{nodes} nodes of {virtual_nodes} virtual nodes: at most {} nodes and {} points", Ring::NODES_MAX, Ring::POINTS_MAX).into());
        }
        let mut points: Vec<(u32, u32)> =
            (0..nodes).flat_map(|n| (0..virtual_nodes).map(move |v| (murmur3_32(&[n.to_le_bytes(), v.to_le_bytes()].concat(), 0x00C0_FFEE), n))).collect();
        points.sort_unstable();
        Ok(Ring { points, chunk_blocks, nodes })
    }

    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// The node that stores this block's chunk: the first ring point at or after its hash.
    pub fn node_of(&self, volume: u32, block: u64) -> u32 {
        let h = murmur3_32(&block_bytes(volume, block / self.chunk_blocks), 0x5EED);
        let i = self.points.partition_point(|p| p.0 < h);
        self.points.get(i).unwrap_or(&self.points[0]).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_beyond_the_limits_are_refused_before_allocation() {
        // 4294967295 nodes × 128 points used to abort allocating 4 GiB of them.
        for (nodes, virtual_nodes) in [(u32::MAX, 128), (1 << 21, 1), (1 << 20, 64)] {
            let e = Ring::new(nodes, virtual_nodes, 256).unwrap_err();
            assert!(e.to_string().contains(&format!("{nodes} nodes")), "{e}");
        }
        assert_eq!(Ring::new(1 << 10, 128, 256).unwrap().nodes(), 1 << 10);
    }

    #[test]
    fn murmur3_matches_reference_vectors() {
        // Vectors from the reference implementation's test suite and common ports.
        assert_eq!(murmur3_32(b"", 0), 0);
        assert_eq!(murmur3_32(b"", 1), 0x514E_28B7);
        assert_eq!(murmur3_32(b"", 0xFFFF_FFFF), 0x81F1_6F39);
        assert_eq!(murmur3_32(&[0, 0, 0, 0], 0), 0x2362_F9DE);
        assert_eq!(murmur3_32(b"test", 0), 0xBA6B_D213);
        assert_eq!(murmur3_32(b"Hello, world!", 0), 0xC036_3E43);
        assert_eq!(murmur3_32(b"The quick brown fox jumps over the lazy dog", 0), 0x2E4F_F723);
    }

    #[test]
    fn shards_keeps_about_the_rate_and_is_deterministic() {
        let s = Shards::THESIS;
        let kept = (0..100_000u64).filter(|&b| s.keeps(7, b)).count();
        assert!((9_500..10_500).contains(&kept), "kept {kept} of 100000 at rate 1/10");
        assert_eq!(s.keeps(7, 12345), s.keeps(7, 12345));
        assert!(Shards::new(10, 11, 0).is_err());
    }

    proptest::proptest! {
        /// A block's fate does not depend on anything but (volume, block) and the parameters,
        /// and a higher threshold keeps a superset.
        #[test]
        fn sampling_is_a_pure_nested_function_of_the_block(volume in 0u32..1000, block in 0u64..1 << 40, t in 1u32..10) {
            let low = Shards::new(10, t, 0).unwrap();
            let high = Shards::new(10, t + 1, 0).unwrap();
            proptest::prop_assert_eq!(low.keeps(volume, block), low.keeps(volume, block));
            proptest::prop_assert!(!low.keeps(volume, block) || high.keeps(volume, block));
        }
    }

    #[test]
    fn ring_spreads_chunks_evenly_and_keeps_chunks_together() {
        let ring = Ring::new(10, 128, 256).unwrap();
        let mut counts = [0u32; 10];
        for v in 0..200 {
            for c in 0..100u64 {
                counts[ring.node_of(v, c * 256) as usize] += 1;
                assert_eq!(ring.node_of(v, c * 256), ring.node_of(v, c * 256 + 255));
            }
        }
        let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
        assert!(max as f64 / (min as f64) < 1.6, "unbalanced ring: {counts:?}");
    }
}

//! Seed 000's ten Tencent CBS storage nodes (Table 2.1, the 1/10-sampled columns) as generated
//! workloads: each node's volume count and bytes written over the six days, and an address
//! space calibrated so the generated working set is the node's WSS.
//!
//! The thesis replays these nodes on a 100 GB FEMU ZNS device of 32 MiB zones (Table 4.2),
//! ~2,000 zones per working set. The traces themselves are not public; the cloud-node
//! generator (`zonekit_trace::synth::cloud`) reproduces their published statistics (Zipf-like
//! write counts, > 40 % of blocks written once, 10–20 % infinite lifetimes, a daily cycle, the
//! top 0.01 % of blocks written more than 1,500 times a day). Sizes are in GiB of 4 KiB blocks:
//! the thesis writes "GB" for both written bytes and WSS.

use zonekit_trace::record::Record;
use zonekit_trace::synth::{CloudNodeConfig, Workload};

use crate::harness::error::{LabError, Result};

/// One row of Table 2.1 (sampled columns).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CbsNode {
    pub node: u32,
    pub written_gib: f64,
    pub wss_gib: f64,
    pub volumes: u32,
}

/// Table 2.1 of seed 000: node, sampled GB written, WSS (GB), user volumes.
pub const TABLE_2_1: [CbsNode; 10] = [
    CbsNode { node: 1, written_gib: 483.09, wss_gib: 62.10, volumes: 255 },
    CbsNode { node: 2, written_gib: 580.66, wss_gib: 57.74, volumes: 264 },
    CbsNode { node: 3, written_gib: 432.82, wss_gib: 63.29, volumes: 278 },
    CbsNode { node: 4, written_gib: 467.57, wss_gib: 62.76, volumes: 277 },
    CbsNode { node: 5, written_gib: 556.10, wss_gib: 62.89, volumes: 293 },
    CbsNode { node: 6, written_gib: 325.05, wss_gib: 61.36, volumes: 261 },
    CbsNode { node: 7, written_gib: 512.78, wss_gib: 64.24, volumes: 274 },
    CbsNode { node: 8, written_gib: 296.26, wss_gib: 60.92, volumes: 287 },
    CbsNode { node: 9, written_gib: 406.31, wss_gib: 63.90, volumes: 279 },
    CbsNode { node: 10, written_gib: 329.07, wss_gib: 64.30, volumes: 261 },
];

/// The thesis' device (Table 4.2): 100 GB of 32 MiB zones, 7 open.
pub const DEVICE_GIB: f64 = 100.0;
/// The sampled traces span six days (§2.1.1).
pub const HOURS: f64 = 144.0;
/// Share of random writes that go to a volume's burst set; with it the top 0.01 % of a
/// full-size node's blocks take > 1,500 writes a day (see `tests/cbs_nodes.rs`).
pub const BURST: f64 = 0.3;
/// Write-once requests at half the generator's default share: at its default a node writing
/// ten times its working set (node 2) would hold more write-once data than its whole WSS.
pub const ONCE: f64 = 0.5;

const BLOCKS_PER_GIB: f64 = (1u64 << 18) as f64;

impl CbsNode {
    /// The node's row of Table 2.1.
    pub fn find(node: u32) -> Result<CbsNode> {
        TABLE_2_1.iter().copied().find(|n| n.node == node).ok_or_else(|| LabError::Usage(format!("node {node}: Table 2.1 has nodes 1 to 10")))
    }

    /// The seed of the node's workload: its number, so node 3 is the same trace in every run.
    pub fn seed(&self) -> u64 {
        self.node as u64
    }

    /// Share of the thesis' device the working set fills (the device scales with the node).
    pub fn utilization(&self) -> f64 {
        self.wss_gib / DEVICE_GIB
    }

    /// The generated workload of this node at `scale` of its size (writes and working set
    /// both scaled, the six days kept), its address space calibrated so the working set is
    /// within 1 % of the node's WSS × `scale`. Deterministic: the same node and scale give the
    /// same spec, which results name.
    pub fn workload(&self, scale: f64) -> Result<Workload> {
        if !(scale > 0.0 && scale <= 1.0) {
            return Err(LabError::Usage(format!("--scale {scale}: expected a share of the node's size in (0, 1]")));
        }
        let writes = (self.written_gib * BLOCKS_PER_GIB * scale).round() as u64;
        let target = self.wss_gib * BLOCKS_PER_GIB * scale;
        let config = |blocks: f64| CloudNodeConfig {
            volumes: self.volumes,
            total_blocks: blocks.round() as u64,
            writes,
            hours: HOURS,
            burst: BURST,
            once: ONCE,
            seed: self.seed(),
            ..CloudNodeConfig::default()
        };
        // Distinct blocks grow with the rewritable space, plus write-once data that does not
        // depend on it: a secant on (space, distinct), from a guess that a third of the
        // working set is write-once.
        let mut a = (target * 0.67, distinct_blocks(config(target * 0.67))? as f64);
        if (a.1 - target).abs() <= 0.01 * target {
            return Ok(Workload::Cloud(config(a.0)));
        }
        let mut b = (target * 0.67 * target / a.1, 0.0);
        for _ in 0..8 {
            b.1 = distinct_blocks(config(b.0))? as f64;
            if (b.1 - target).abs() <= 0.01 * target {
                return Ok(Workload::Cloud(config(b.0)));
            }
            let slope = (b.1 - a.1) / (b.0 - a.0);
            let next = if slope > 0.0 && slope.is_finite() { b.0 + (target - b.1) / slope } else { b.0 * target / b.1 };
            a = b;
            b = (next.max(self.volumes as f64 * 64.0), 0.0);
        }
        Err(LabError::Usage(format!("node {}: no address space gives a working set of {:.2} GiB", self.node, self.wss_gib * scale)))
    }
}

/// Distinct blocks a cloud node writes: one bit per block of each volume's address space.
fn distinct_blocks(config: CloudNodeConfig) -> Result<u64> {
    let block_bytes = config.block_size_bytes;
    let seed = config.seed;
    let records = Workload::Cloud(config).records(seed).map_err(|e| LabError::Usage(e.to_string()))?;
    let mut bits: Vec<Vec<u64>> = Vec::new();
    let mut distinct = 0;
    for Record { volume, offset_bytes, len_bytes, .. } in records {
        let v = volume as usize;
        if v >= bits.len() {
            bits.resize(v + 1, Vec::new());
        }
        let map = &mut bits[v];
        let (first, end) = (offset_bytes / block_bytes, (offset_bytes + len_bytes).div_ceil(block_bytes));
        if map.len() * 64 < end as usize {
            map.resize((end as usize).div_ceil(64).next_power_of_two(), 0);
        }
        for b in first..end {
            let (word, bit) = ((b / 64) as usize, 1u64 << (b % 64));
            distinct += (map[word] & bit == 0) as u64;
            map[word] |= bit;
        }
    }
    Ok(distinct)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_node_is_calibrated_to_its_working_set() {
        let n = CbsNode::find(8).unwrap();
        let w = n.workload(0.002).unwrap();
        let Workload::Cloud(c) = w.clone() else { panic!("{w}") };
        let distinct = distinct_blocks(CloudNodeConfig { seed: n.seed(), ..c }).unwrap() as f64;
        let target = n.wss_gib * BLOCKS_PER_GIB * 0.002;
        assert!((distinct - target).abs() <= 0.01 * target, "{distinct} blocks for a target of {target}: {w}");
        assert_eq!(w, n.workload(0.002).unwrap(), "calibration is deterministic");
    }

    #[test]
    fn bad_nodes_and_scales_are_refused() {
        assert!(CbsNode::find(11).unwrap_err().to_string().contains("1 to 10"));
        assert!(CbsNode::find(1).unwrap().workload(1.5).unwrap_err().to_string().contains("scale 1.5"));
    }
}

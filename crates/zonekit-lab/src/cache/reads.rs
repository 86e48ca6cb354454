//! The reads a cache sees, gathered once (the YCSB-like reads' blocks, or a trace's), and what
//! other policies make of them: item-level policies with the cache's capacity (Belady among
//! them) and the static bound of the hottest units that fit.

use zonekit_base::policy::{self, ParamReader};
use zonekit_cache::item::ITEM_POLICIES;

use zonekit_base::Rng;

use crate::cache::bench::*;
use crate::cache::trace::*;
use crate::harness::error::{LabError, Result};

/// Every block the read phase of `w` reads, in order (the same draws `run_cache` makes;
/// updates are skipped), with the operation that reads it.
fn for_each_read_block(w: &Ycsb, seed: u64, mut f: impl FnMut(u64, u64)) {
    let mut zipf = Chooser::new(w);
    let mut rng = Rng::new(seed);
    for op in 0..w.operations {
        let record = zipf.next(&mut rng);
        if w.update_fraction > 0.0 && rng.chance(w.update_fraction) {
            continue;
        }
        let (block, blocks) = record_blocks(w, record);
        (block..block + blocks).for_each(|b| f(op, b));
    }
}

/// The blocks a run reads, in order, and how many of the first are read during its warm-up:
/// what the item-level references and the static bounds are computed on.
#[derive(Clone, Debug, Default)]
pub struct ReadStream {
    pub blocks: Vec<u64>,
    pub warmup_blocks: usize,
}

impl ReadStream {
    /// The read phase of `w`: blocks of the operations before its warm-up share are warm-up.
    pub fn of_workload(w: &Ycsb, seed: u64) -> ReadStream {
        let warmup_ops = (w.operations as f64 * w.warmup_fraction) as u64;
        let mut stream = ReadStream { blocks: Vec::with_capacity(w.operations as usize), warmup_blocks: 0 };
        for_each_read_block(w, seed, |op, block| {
            stream.blocks.push(block);
            stream.warmup_blocks += (op < warmup_ops) as usize;
        });
        stream
    }

    /// Every block of the trace's read requests (the sequential cutoff, which the bucket cache
    /// applies, is not: these are item-level references); blocks of the first
    /// `warmup_fraction` of its requests (reads and writes) are warm-up, as in
    /// [`replay_trace`].
    pub fn of_trace(input: &zonekit_trace::input::Input, scan: &TraceScan, warmup_fraction: f64) -> Result<ReadStream> {
        let warmup = (scan.requests as f64 * warmup_fraction) as u64;
        let mut stream = ReadStream::default();
        for (i, r) in trace_requests(input)?.enumerate() {
            let r = r?;
            if r.op == zonekit_trace::Op::Read {
                stream.blocks.extend(r.lba..r.lba + r.blocks);
                if (i as u64) < warmup {
                    stream.warmup_blocks = stream.blocks.len();
                }
            }
        }
        Ok(stream)
    }
}

/// The hit ratio of an item-level policy (`belady` for the bound) on a read stream, with the
/// cache's capacity in blocks, counted after the stream's warm-up.
pub fn item_hit_ratio(policy_name: &str, stream: &ReadStream, cache_bytes: u64) -> Result<f64> {
    let (info, params) = policy::find(ITEM_POLICIES, "item policy", policy_name)?;
    let capacity = (cache_bytes / BLOCK) as usize;
    let mut cache = (info.make)(&ParamReader::new(info, &params)?, capacity).map_err(|e| LabError::Usage(e.to_string()))?;
    let blocks = &stream.blocks;
    // Next access of each request, for the oracle.
    let mut next = vec![u64::MAX; blocks.len()];
    let mut seen = std::collections::HashMap::new();
    for i in (0..blocks.len()).rev() {
        if let Some(&j) = seen.get(&blocks[i]) {
            next[i] = j as u64;
        }
        seen.insert(blocks[i], i);
    }
    let warmup = stream.warmup_blocks;
    let mut hits = 0u64;
    for (i, &block) in blocks.iter().enumerate() {
        if cache.access(block, next[i]) && i >= warmup {
            hits += 1;
        }
    }
    Ok(hits as f64 / (blocks.len() - warmup).max(1) as f64)
}

/// The share of reads a static cache of `cache_bytes` could serve if it held the hottest
/// `unit_bytes` units of the data set (the read stream's own counts, warm-up included): how
/// much an address unit's history says about its blocks. At 4 KiB it is the best a block
/// cache could do without the future; at a sampler's chunk it bounds what chunk-level
/// placement can know.
pub fn static_bound(stream: &ReadStream, cache_bytes: u64, unit_bytes: u64) -> f64 {
    let mut counts: std::collections::HashMap<u64, u64> = std::collections::HashMap::new();
    for &b in &stream.blocks {
        *counts.entry(b * BLOCK / unit_bytes).or_default() += 1;
    }
    let mut sorted: Vec<u64> = counts.into_values().collect();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    // Units of the cache's size: blocks fill it one by one, larger units whole.
    let units = (cache_bytes / unit_bytes.max(BLOCK)).max(1) as usize;
    sorted.iter().take(units).sum::<u64>() as f64 / stream.blocks.len().max(1) as f64
}

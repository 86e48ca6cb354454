//! The cache on a block trace (text, or a Zonekit binary trace whose blocks are regrouped into
//! requests): the trace's requests and reach, and one replay of it through a cache built from a
//! [`CacheSpec`].

use crate::cache::bench::*;
use crate::harness::error::{LabError, Result};
use crate::harness::progress::Progress;

/// Replays a block trace through the cache (no load phase). The backing disk is
/// `backing_bytes` (a trace beyond it is refused before anything runs) or sized to the
/// trace's highest address; `spec.workload`'s YCSB fields are not used but its
/// `warmup_fraction`: the first that share of the trace's requests warm the cache and are
/// not counted.
pub fn run_cache_trace(label: &str, spec: &CacheSpec, input: &zonekit_trace::input::Input, backing_bytes: Option<u64>, progress: &mut dyn Progress) -> Result<CacheReport> {
    let scan = scan_trace(input)?;
    let data_bytes = trace_backing_bytes(input, &scan, backing_bytes)?;
    let spec = CacheSpec { workload: Ycsb { data_bytes, ..spec.workload }, ..spec.clone() };
    Ok(replay_trace(label, &spec, input, &scan, progress)?.0)
}

/// The backing disk for a trace: `backing_bytes`, which must hold every request, or the
/// trace's reach.
pub fn trace_backing_bytes(input: &zonekit_trace::input::Input, scan: &TraceScan, backing_bytes: Option<u64>) -> Result<u64> {
    let reached = scan.end_bytes;
    match backing_bytes {
        Some(b) if reached > b => Err(LabError::Usage(format!("{}: the trace reaches byte {reached}, beyond the {b}-byte backing device", input.describe()))),
        Some(b) => Ok(b),
        None if reached == 0 => Err(LabError::Usage(format!("{}: the trace has no request of at least one byte", input.describe()))),
        None => Ok(reached),
    }
}

/// Replays the trace `scan` describes through the cache `spec` builds (its
/// `workload.data_bytes` is the backing disk), counting hits after the warm-up share of the
/// requests; samples every fiftieth of the requests.
pub fn replay_trace(label: &str, spec: &CacheSpec, input: &zonekit_trace::input::Input, scan: &TraceScan, progress: &mut dyn Progress) -> Result<(CacheReport, Vec<CacheSample>)> {
    check_warmup(spec.workload.warmup_fraction)?;
    let mut cache = build_cache(spec)?;
    let err = cache_error(label);
    let warmup = (scan.requests as f64 * spec.workload.warmup_fraction) as u64;
    let mut sampler = Samples::new(scan.requests, &cache);
    let mut counted = (0, 0, 0, 0);
    let mut buf = Vec::new();
    for (i, r) in trace_requests(input)?.enumerate() {
        let r = r?;
        if i as u64 == warmup {
            counted = read_counters(&cache);
        }
        // A request longer than a piece goes to the cache as consecutive pieces (which its
        // sequential-stream detection sees as one run): a length field of terabytes is then
        // not one buffer of terabytes.
        for first in (0..r.blocks).step_by(TRACE_PIECE_BLOCKS as usize) {
            let n = (r.blocks - first).min(TRACE_PIECE_BLOCKS);
            buf.resize((n * BLOCK) as usize, 0);
            match r.op {
                zonekit_trace::Op::Read => cache.read_as(r.task, r.lba + first, &mut buf).map_err(&err)?,
                zonekit_trace::Op::Write => cache.write_as(r.task, r.lba + first, &buf).map_err(&err)?,
            }
        }
        sampler.after(i as u64, &cache);
        if i as u64 % PROGRESS_EVERY == 0 {
            progress.update(i as u64);
            if progress.cancelled() {
                return Err(LabError::Cancelled);
            }
        }
    }
    if warmup >= scan.requests {
        counted = read_counters(&cache);
    }
    cache.check_invariants().map_err(&err)?;
    Ok((report(label, spec, &cache, counted), sampler.series))
}

/// One request of a replayed trace, in 4 KiB blocks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceRequest {
    /// The issuing thread (the trace's volume), which picks the write point.
    pub task: u32,
    pub op: zonekit_trace::Op,
    pub lba: u64,
    pub blocks: u64,
}

/// What one pass over a trace finds: its requests and how far it reaches.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceScan {
    /// Requests of at least one byte (the ones replayed and counted for the warm-up).
    pub requests: u64,
    pub read_requests: u64,
    /// The end of the highest block any request touches, in bytes.
    pub end_bytes: u64,
}

/// The trace's requests of at least one byte, in 4 KiB blocks. A binary trace (`.zkt`, what
/// `serve nbd --trace-out` writes) gives the requests its blocks were cut from
/// ([`zonekit_trace::input::Input::requests`]). Volumes share one address space, as one
/// backing disk would.
pub fn trace_requests(input: &zonekit_trace::input::Input) -> Result<Box<dyn Iterator<Item = Result<TraceRequest>> + '_>> {
    // A request past this is refused by name before anything runs, not wrapped.
    let too_far = move |i: u64, offset: u64, len: u64| {
        LabError::Usage(format!("{}: request {i} ({len} bytes at offset {offset}) reaches beyond any disk this model holds ({MAX_DATA_BYTES} bytes)", input.describe()))
    };
    let to_blocks = move |i: u64, task: u32, op, offset: u64, len: u64| -> Result<TraceRequest> {
        let end = offset.checked_add(len).filter(|&e| e <= MAX_DATA_BYTES).ok_or_else(|| too_far(i, offset, len))?;
        let lba = offset / BLOCK;
        Ok(TraceRequest { task, op, lba, blocks: end.div_ceil(BLOCK) - lba })
    };
    let requests = input.requests().map_err(LabError::input(input))?;
    Ok(Box::new(requests.enumerate().filter(|(_, r)| r.as_ref().map_or(true, |r| r.len_bytes > 0)).map(move |(i, r)| {
        let r = r.map_err(LabError::input(input))?;
        to_blocks(i as u64 + 1, r.volume, r.op, r.offset_bytes, r.len_bytes)
    })))
}

/// One pass over the trace: how many requests, how many reads, how far it reaches.
pub fn scan_trace(input: &zonekit_trace::input::Input) -> Result<TraceScan> {
    let mut scan = TraceScan::default();
    for r in trace_requests(input)? {
        let r = r?;
        scan.requests += 1;
        scan.read_requests += (r.op == zonekit_trace::Op::Read) as u64;
        scan.end_bytes = scan.end_bytes.max((r.lba + r.blocks) * BLOCK);
    }
    Ok(scan)
}

/// The most blocks of one trace request handed to the cache at once (16 MiB).
const TRACE_PIECE_BLOCKS: u64 = 4096;

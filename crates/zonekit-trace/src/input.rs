//! One way to name a block stream: a binary trace, a text trace in any format, or a generated
//! workload — with optional SHARDS sampling, node sharding, volume and time filters. An
//! [`Input`] can be read any number of times (analysis and oracles make several passes).

use std::path::{Path, PathBuf};

use crate::analyze::BlockSource;
use crate::binary::{BinaryStream, BlockRecord, NEVER};
use crate::blocks::{BlockIo, SplitOptions, Splitter};
use crate::format::{self, Format, ReadLog, ReadOptions};
use crate::parallel::RequestBatches;
use crate::record::{Op, Record, Result, SpecError, TraceError};
use crate::sample::{Ring, Shards};
use crate::synth::Workload;

/// Parsing threads for a text trace at most: past this, one thread reading and cutting the
/// input is the bottleneck.
const MAX_PARSING_THREADS: usize = 8;

/// Whether `filters` keep each block (stateful: the relative window counts from the first
/// block it is asked about).
fn block_filter(f: Filters) -> impl FnMut(&BlockIo) -> bool {
    let mut first_us = None::<u64>;
    move |io| {
        let start = *first_us.get_or_insert(io.time_us);
        let since = io.time_us.saturating_sub(start);
        f.sample.as_ref().is_none_or(|s| s.keeps_io(io))
            && f.node.as_ref().is_none_or(|(ring, n)| ring.node_of(io.volume, io.block) == *n)
            && f.split.window_us.is_none_or(|(s, e)| io.time_us >= s && io.time_us < e)
            && f.relative_window_us.is_none_or(|(s, e)| since >= s && since < e)
            && f.split.volumes.as_ref().is_none_or(|v| v.contains(&io.volume))
            && f.split.only.is_none_or(|op| op == io.op)
    }
}

/// Records per batch of [`Input::record_batches`]: large enough that handing a batch between
/// threads costs nothing per record, small enough (~0.5 MiB) to stay in cache.
pub const BATCH_RECORDS: usize = 16 * 1024;

#[derive(Clone, Debug)]
pub enum Source {
    /// A Zonekit binary trace (`.zkt`).
    Binary(PathBuf),
    /// A text or vscsi trace; `None` format = detect.
    Trace { path: PathBuf, format: Option<Format>, lenient: bool },
    /// A generated workload.
    Generated { workload: Workload, seed: u64 },
}

/// Which blocks of the source to keep.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub sample: Option<Shards>,
    /// (ring, node index): keep the blocks the ring places on this node.
    pub node: Option<(Ring, u32)>,
    /// Keep records in [start, end) µs after the first record of the stream.
    pub relative_window_us: Option<(u64, u64)>,
    pub split: SplitOptions,
}

impl Filters {
    /// Whether any filter may drop a block.
    pub fn drops_blocks(&self) -> bool {
        self.sample.is_some()
            || self.node.is_some()
            || self.relative_window_us.is_some()
            || self.split.window_us.is_some()
            || self.split.volumes.is_some()
            || self.split.only.is_some()
    }
}

/// The filters as the CLI's flags (and Python's keyword arguments of the same names) give
/// them: checked, and refused by the flag's name.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FilterFlags {
    /// `--sample P/T`: SHARDS, keep blocks whose hash mod P < T.
    pub sample: Option<String>,
    /// `--nodes N --node I --chunk-mib C`: keep node I's share of a cluster trace placed on N
    /// nodes by consistent hashing in C MiB chunks.
    pub nodes: Option<u32>,
    pub node: Option<u32>,
    pub chunk_mib: u64,
    /// `--window START:END`: seconds after the first record.
    pub window: Option<String>,
    /// `--volume A,B`: these volumes only.
    pub volume: Option<Vec<u32>>,
    pub block_size: u64,
}

/// Virtual nodes a storage node has on the sharding ring.
pub const RING_POINTS_PER_NODE: u32 = 128;

impl Default for FilterFlags {
    /// The CLI's defaults: no filter, 1 GiB chunks, 4 KiB blocks.
    fn default() -> FilterFlags {
        FilterFlags { sample: None, nodes: None, node: None, chunk_mib: 1024, window: None, volume: None, block_size: 4096 }
    }
}

impl FilterFlags {
    /// Sets `input`'s filters and block size.
    pub fn apply(&self, input: &mut Input) -> std::result::Result<(), SpecError> {
        let refuse = |m: String| Err(SpecError(m));
        if let Some(s) = &self.sample {
            input.filters.sample = Some(Shards::parse(s).map_err(|e| SpecError(format!("--sample {s}: {e}")))?);
        }
        if !self.block_size.is_power_of_two() || self.block_size < 512 {
            return refuse(format!("--block-size {}: a power of two of at least 512 bytes", self.block_size));
        }
        match (self.nodes, self.node) {
            (Some(nodes), Some(node)) => {
                if node >= nodes {
                    return refuse(format!("--node {node} is not one of --nodes {nodes} (0..{})", nodes.saturating_sub(1)));
                }
                // Checked, not shifted: `<< 20` dropped the high bits (17592186044417 MiB was 1 MiB).
                let Some(chunk_bytes) = self.chunk_mib.checked_mul(1 << 20) else {
                    return refuse(format!("--chunk-mib {}: too large (over 2^64 bytes)", self.chunk_mib));
                };
                let chunk_blocks = chunk_bytes / self.block_size;
                if chunk_blocks == 0 {
                    return refuse(format!("--chunk-mib {}: must be at least one block", self.chunk_mib));
                }
                let ring = Ring::new(nodes, RING_POINTS_PER_NODE, chunk_blocks).map_err(|e| SpecError(format!("--nodes {nodes}: {e}")))?;
                input.filters.node = Some((ring, node));
            }
            (None, None) => {}
            _ => return refuse("--nodes and --node go together: the number of nodes and the one to keep".into()),
        }
        if let Some(w) = &self.window {
            let parse = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
            let Some((a, b)) = w.split_once(':').and_then(|(a, b)| Some((parse(a)?, parse(b)?))).filter(|(a, b)| a < b) else {
                return refuse(format!("--window {w:?}: expected START:END seconds with START < END"));
            };
            input.filters.relative_window_us = Some(((a * 1e6) as u64, (b * 1e6) as u64));
        }
        input.filters.split.volumes = self.volume.clone();
        input.filters.split.block_size_bytes = self.block_size;
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Input {
    pub source: Source,
    pub filters: Filters,
    /// What the last complete reading of a text trace saw (the records a lenient one
    /// skipped): shared by the input's clones, so whoever read it, the command can report it.
    pub read_log: ReadLog,
}

impl Input {
    /// A path: binary traces (by magic or `.zkt`), anything else a trace in `format` (or detected).
    pub fn path(path: &Path, format: Option<Format>, lenient: bool) -> Input {
        let mut magic = [0u8; 8];
        let is_binary = std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic)).is_ok() && &magic == b"ZKTRACE\0";
        let source = if is_binary || path.extension().is_some_and(|e| e == "zkt") {
            Source::Binary(path.to_path_buf())
        } else {
            Source::Trace { path: path.to_path_buf(), format, lenient }
        };
        Input { source, filters: Filters::default(), read_log: ReadLog::default() }
    }

    pub fn generated(workload: Workload, seed: u64) -> Input {
        Input { source: Source::Generated { workload, seed }, filters: Filters::default(), read_log: ReadLog::default() }
    }

    pub(crate) fn read_options(&self, lenient: bool) -> ReadOptions {
        ReadOptions { lenient, log: self.read_log.clone() }
    }

    /// Whether a text trace is read leniently (malformed records skipped and counted).
    pub fn is_lenient(&self) -> bool {
        matches!(self.source, Source::Trace { lenient: true, .. })
    }

    /// A short description for reports.
    pub fn describe(&self) -> String {
        let base = match &self.source {
            Source::Binary(p) | Source::Trace { path: p, .. } => p.display().to_string(),
            Source::Generated { workload, seed } => format!("{workload} (seed {seed})"),
        };
        let mut extra = Vec::new();
        if let Some(s) = &self.filters.sample {
            extra.push(format!("SHARDS {}/{}", s.threshold, s.modulus));
        }
        if let Some((ring, node)) = &self.filters.node {
            extra.push(format!("node {node} of {}", ring.nodes()));
        }
        if extra.is_empty() {
            base
        } else {
            format!("{base} ({})", extra.join(", "))
        }
    }

    /// Blocks with their next-write annotation where the source has one (`NEVER` otherwise).
    /// The trace as host requests (byte offset and length), not split into blocks: for
    /// engines that see whole requests, such as the open-channel FTLs and the cache. The time
    /// window, volume and operation filters apply; sampling and node filters pick blocks, so
    /// those are refused. A binary trace's requests are rebuilt from its blocks (each request's
    /// first block is flagged): whole blocks, so a request that covered part of a block comes
    /// back covering all of it.
    pub fn requests(&self) -> Result<Box<dyn Iterator<Item = Result<Record>> + '_>> {
        let f = &self.filters;
        if f.sample.is_some() || f.node.is_some() || f.relative_window_us.is_some() {
            return Err(TraceError::Invalid("sampling, node and relative-window filters select blocks, not whole requests".into()));
        }
        let all: Box<dyn Iterator<Item = Result<Record>>> = match &self.source {
            Source::Binary(path) => {
                let (stream, _) = self.open_binary(path)?;
                Box::new(RequestsOfBlocks { blocks: stream, block_bytes: self.filters.split.block_size_bytes, pending: None })
            }
            Source::Trace { path, format, lenient } => {
                let fmt = match format {
                    Some(f) => f.clone(),
                    None => format::detect(path)?,
                };
                Box::new(format::open(path, &fmt, &self.read_options(*lenient))?)
            }
            Source::Generated { workload, seed } => Box::new(workload.records(*seed)?.map(Ok)),
        };
        let split = f.split.clone();
        Ok(Box::new(all.filter(move |r| r.as_ref().map_or(true, |r| split.wanted(r)))))
    }

    pub fn records(&self) -> Result<Box<dyn Iterator<Item = Result<BlockRecord>> + '_>> {
        let f = &self.filters;
        let unannotated = |it: Box<dyn Iterator<Item = Result<BlockIo>>>| -> Box<dyn Iterator<Item = Result<BlockRecord>>> {
            Box::new(it.map(|b| b.map(|io| BlockRecord { io, next_write: NEVER })))
        };
        let split = SplitOptions { block_size_bytes: f.split.block_size_bytes, ..Default::default() };
        let all: Box<dyn Iterator<Item = Result<BlockRecord>>> = match &self.source {
            Source::Binary(path) => {
                let (stream, annotated) = self.open_binary(path)?;
                Box::new(stream.map(move |r| {
                    r.map(|mut r| {
                        if !annotated {
                            r.next_write = NEVER;
                        }
                        r
                    })
                }))
            }
            Source::Trace { path, format, lenient } => {
                let fmt = match format {
                    Some(f) => f.clone(),
                    None => format::detect(path)?,
                };
                let recs = format::open(path, &fmt, &self.read_options(*lenient))?;
                unannotated(Box::new(Splitter::new(recs, split)?))
            }
            Source::Generated { workload, seed } => {
                let recs = workload.records(*seed)?;
                unannotated(Box::new(Splitter::new(recs.map(Ok), split)?))
            }
        };
        if !f.drops_blocks() {
            return Ok(all);
        }
        let mut keep = block_filter(f.clone());
        Ok(Box::new(all.filter(move |r| r.as_ref().map_or(true, |r| keep(&r.io)))))
    }

    /// [`Input::records`] in batches, read ahead of the caller so that its work overlaps
    /// parsing (text) or decoding (binary); a read error is the last item, after a batch of
    /// the records before it. A text trace whose lines are independent
    /// ([`Format::lines_are_independent`]) is parsed on as many threads as there are cores
    /// ([`parallel`](crate::parallel)), anything else on one thread of its own, in batches of
    /// up to [`BATCH_RECORDS`]. The threads stop when the iterator is dropped.
    pub fn record_batches(&self) -> Box<dyn Iterator<Item = Result<Vec<BlockRecord>>>> {
        // The format is detected once, whichever way the trace is read.
        let input = match self.with_format_detected() {
            Ok(input) => input,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_PARSING_THREADS);
        if workers > 1 {
            if let Some(batches) = input.parallel_batches(workers, crate::parallel::CHUNK_BYTES) {
                return batches;
            }
        }
        // Batches in flight: the reader runs at most this far ahead.
        const QUEUE_BATCHES: usize = 4;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Vec<BlockRecord>>>(QUEUE_BATCHES);
        std::thread::spawn(move || {
            // A send fails only when the consumer is gone: stop too.
            let mut send = |batch: &mut Vec<BlockRecord>| tx.send(Ok(std::mem::take(batch))).is_ok();
            if let Err(e) = input.read_batches(BATCH_RECORDS, &mut send) {
                let _ = tx.send(Err(e));
            }
        });
        Box::new(rx.into_iter())
    }

    /// Hands `each` the records in batches of up to `batch_records` (the last one shorter,
    /// maybe empty) until it returns `false`; `each` may take the batch or leave it to be
    /// reused. A read error ends the batches, after one with the records before it. A binary
    /// trace is decoded a window at a time.
    fn read_batches(&self, batch_records: usize, each: &mut dyn FnMut(&mut Vec<BlockRecord>) -> bool) -> Result<()> {
        let mut batch = Vec::with_capacity(batch_records);
        if let Source::Binary(path) = &self.source {
            let (mut stream, annotated) = self.open_binary(path)?;
            let mut keep = self.filters.drops_blocks().then(|| block_filter(self.filters.clone()));
            loop {
                batch.clear();
                batch.reserve(batch_records);
                let read = stream.read_batch(&mut batch, batch_records);
                let last = read.is_err() || batch.len() < batch_records;
                if !annotated {
                    batch.iter_mut().for_each(|r| r.next_write = NEVER);
                }
                if let Some(keep) = &mut keep {
                    batch.retain(|r| keep(&r.io));
                }
                if !each(&mut batch) {
                    return Ok(());
                }
                read?;
                if last {
                    return Ok(());
                }
            }
        }
        for r in self.records()? {
            match r {
                Ok(r) => batch.push(r),
                Err(e) => {
                    each(&mut batch);
                    return Err(e);
                }
            }
            if batch.len() == batch_records {
                if !each(&mut batch) {
                    return Ok(());
                }
                batch.clear();
                batch.reserve(batch_records);
            }
        }
        each(&mut batch);
        Ok(())
    }

    /// Calls `each` with the records in batches read on this thread, until it returns
    /// `false`: for a pass that can spare a thread rather than a core (a binary trace decodes
    /// faster than a batch is handed between threads). A read error ends the batches, after
    /// one with the records before it.
    pub fn for_each_batch_here(&self, each: &mut dyn FnMut(&[BlockRecord]) -> bool) -> Result<()> {
        // Small enough to stay in the cache between decoding and use.
        const HERE_BATCH_RECORDS: usize = 4096;
        self.read_batches(HERE_BATCH_RECORDS, &mut |batch| each(batch))
    }

    /// A binary trace's stream, refused unless its blocks are the size asked for, and whether
    /// its next-write annotation holds (filters that drop blocks would invalidate it: it
    /// counts every write).
    fn open_binary(&self, path: &Path) -> Result<(BinaryStream, bool)> {
        let stream = BinaryStream::open(path)?;
        let header = stream.header();
        let block_size_bytes = self.filters.split.block_size_bytes;
        if header.block_size_bytes as u64 != block_size_bytes {
            return Err(TraceError::Invalid(format!("{}: binary trace has {}-byte blocks, {} requested", path.display(), header.block_size_bytes, block_size_bytes)));
        }
        let annotated = header.has_next_write && !self.filters.drops_blocks();
        Ok((stream, annotated))
    }

    /// This input with a text trace's format named (detected if it was not).
    fn with_format_detected(&self) -> Result<Input> {
        let mut input = self.clone();
        if let Source::Trace { path, format: format @ None, .. } = &mut input.source {
            *format = Some(format::detect(path)?);
        }
        Ok(input)
    }

    /// The batches of a text trace whose format is named and its lines independent, parsed by
    /// `workers` threads in chunks of `chunk_bytes`, the filters applied in order; `None` for
    /// any other input.
    pub(crate) fn parallel_batches(&self, workers: usize, chunk_bytes: usize) -> Option<Box<dyn Iterator<Item = Result<Vec<BlockRecord>>>>> {
        let Source::Trace { path, format: Some(format), lenient } = &self.source else { return None };
        if !format.lines_are_independent() {
            return None;
        }
        let split = SplitOptions { block_size_bytes: self.filters.split.block_size_bytes, ..Default::default() };
        let batches = match crate::parallel::block_batches(path, format, &self.read_options(*lenient), split, workers, chunk_bytes) {
            Ok(b) => b,
            Err(e) => return Some(Box::new(std::iter::once(Err(e)))),
        };
        if !self.filters.drops_blocks() {
            return Some(Box::new(batches));
        }
        let mut keep = block_filter(self.filters.clone());
        Some(Box::new(batches.map(move |batch| {
            batch.map(|mut b| {
                b.retain(|r| keep(&r.io));
                b
            })
        })))
    }

    /// [`Input::requests`] in batches, parsed on as many threads as there are cores when the
    /// input is a text trace whose lines are independent; `None` for any other input (read it
    /// with [`Input::requests`]). Refused, as there, with block-selecting filters.
    pub fn parallel_request_batches(&self) -> Option<Result<RequestBatches>> {
        let f = &self.filters;
        if f.sample.is_some() || f.node.is_some() || f.relative_window_us.is_some() {
            return Some(Err(TraceError::Invalid("sampling, node and relative-window filters select blocks, not whole requests".into())));
        }
        let input = match self.with_format_detected() {
            Ok(input) => input,
            Err(e) => return Some(Err(e)),
        };
        let Source::Trace { path, format: Some(format), lenient } = &input.source else { return None };
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_PARSING_THREADS);
        if !format.lines_are_independent() || workers < 2 {
            return None;
        }
        Some(crate::parallel::request_batches(path, format, &input.read_options(*lenient), f.split.clone(), workers, crate::parallel::CHUNK_BYTES))
    }

    /// The records for a pass that does little per record: a text trace or a workload is read
    /// ahead ([`Input::record_batches`], handed out a record at a time), a binary trace
    /// directly (decoding it costs less than handing it between threads).
    pub fn records_pipelined(&self) -> Box<dyn Iterator<Item = Result<BlockRecord>> + '_> {
        if let Source::Binary(_) = self.source {
            return match self.records() {
                Ok(records) => records,
                Err(e) => Box::new(std::iter::once(Err(e))),
            };
        }
        Box::new(self.record_batches().flat_map(|b| -> Box<dyn Iterator<Item = Result<BlockRecord>>> {
            match b {
                Ok(batch) => Box::new(batch.into_iter().map(Ok)),
                Err(e) => Box::new(std::iter::once(Err(e))),
            }
        }))
    }

    /// Only the writes.
    pub fn writes(&self) -> Result<Box<dyn Iterator<Item = Result<BlockRecord>> + '_>> {
        Ok(Box::new(self.records()?.filter(|r| r.as_ref().map_or(true, |r| r.io.op == Op::Write))))
    }
}

impl BlockSource for Input {
    /// Pipelined: the analysis' passes run beside the parser.
    fn blocks(&self) -> Result<Box<dyn Iterator<Item = Result<BlockIo>> + '_>> {
        Ok(Box::new(self.records_pipelined().map(|r| r.map(|r| r.io))))
    }
}

/// The requests of a block stream: a request starts at a block flagged as the start of one
/// and runs on over the consecutive blocks after it of the same operation and volume.
struct RequestsOfBlocks<I> {
    blocks: I,
    block_bytes: u64,
    pending: Option<Record>,
}

impl<I: Iterator<Item = Result<BlockRecord>>> Iterator for RequestsOfBlocks<I> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        loop {
            let io = match self.blocks.next() {
                None => return self.pending.take().map(Ok),
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(r)) => r.io,
            };
            // Saturating: a block number past any disk stays past it, for the consumer to refuse.
            let offset_bytes = io.block.saturating_mul(self.block_bytes);
            if let Some(p) = self.pending.as_mut() {
                if !io.starts_request && io.op == p.op && io.volume == p.volume && Some(offset_bytes) == p.offset_bytes.checked_add(p.len_bytes) {
                    p.len_bytes += self.block_bytes;
                    continue;
                }
            }
            let next = Record { time_us: io.time_us, volume: io.volume, offset_bytes, len_bytes: self.block_bytes, op: io.op };
            if let Some(done) = self.pending.replace(next) {
                return Some(Ok(done));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::BinaryWriter;

    #[test]
    fn a_binary_trace_gives_back_its_requests_in_whole_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.zkt");
        let requests = [
            Record { time_us: 1, volume: 0, offset_bytes: 4096, len_bytes: 3 * 4096, op: Op::Write },
            // Right after the first, but a request of its own.
            Record { time_us: 2, volume: 0, offset_bytes: 4 * 4096, len_bytes: 4096, op: Op::Write },
            Record { time_us: 3, volume: 2, offset_bytes: 0, len_bytes: 2 * 4096, op: Op::Read },
            // Part of a block: comes back whole.
            Record { time_us: 4, volume: 0, offset_bytes: 100, len_bytes: 10, op: Op::Read },
        ];
        let mut w = BinaryWriter::create(&path, 4096, "test").unwrap();
        for r in &requests {
            let first = r.offset_bytes / 4096;
            for block in first..(r.offset_bytes + r.len_bytes).div_ceil(4096) {
                w.push(&BlockIo::of_request(r, block, first)).unwrap();
            }
        }
        w.finish().unwrap();
        let got: Vec<Record> = Input::path(&path, None, false).requests().unwrap().map(|r| r.unwrap()).collect();
        let mut want = requests.to_vec();
        want[3] = Record { offset_bytes: 0, len_bytes: 4096, ..want[3] };
        assert_eq!(got, want);
    }
}

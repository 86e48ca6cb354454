//! A text trace parsed on several threads. One thread reads the (decompressed) input and cuts
//! it into chunks at line ends, counting the lines before each; workers parse chunks and split
//! their requests into blocks, each on its own; the consumer takes the chunks' blocks back in
//! input order. Only for formats whose lines are independent
//! ([`Format::lines_are_independent`]): then the blocks, the errors and their line numbers
//! are exactly the sequential reader's.
//!
//! Parsing is the costly part of reading a text trace (cutting and counting run at memory
//! speed), so two workers about halve the time to the first pass's end on two cores.
//!
//! At most a fixed number of chunks are in flight (read, being parsed, or parsed and waiting
//! for the consumer): the consumer hands a permit back for each chunk it takes, and the reader
//! waits for one before each chunk. Dropping the iterator stops every thread.
//!
//! A request of more than [`LONG_REQUEST_BLOCKS`] blocks is not split by its worker: the chunk
//! carries it whole, as one record, and the consumer splits it a batch at a time. So memory
//! stays bounded by the chunks in flight whatever a length field says (one line claiming a
//! terabyte used to be expanded into 2^28 blocks in one vector, and the allocation aborted).

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, ErrorKind};
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use crate::binary::{BlockRecord, NEVER};
use crate::blocks::{block_range, BlockIo, SplitOptions, Splitter};
use crate::format::{self, ChunkStart, Format, LineTooLong, ReadLog, ReadOptions, ReadStats, MAX_LINE_BYTES};
use crate::record::{Record, Result, TraceError};

/// Text per chunk: its blocks (~30 bytes of text each in the common formats, 32 bytes as
/// records) stay in cache on their way to the consumer.
pub const CHUNK_BYTES: usize = 512 << 10;

/// Bytes of text per block, about, in the common formats: sizes a chunk's block vector.
const TEXT_BYTES_PER_BLOCK: usize = 32;

/// A chunk for a worker: lines `lines_before + 1 ...` of the input, and the read error that
/// ended the input after them, if one did.
struct Job {
    seq: u64,
    start: ChunkStart,
    text: Vec<u8>,
    error: Option<std::io::Error>,
}

/// Requests of more blocks than this reach the consumer unsplit; it is also the most blocks of
/// one request in one batch.
pub const LONG_REQUEST_BLOCKS: u64 = 1 << 16;

/// A long request of a chunk, left for the consumer to split: its blocks come before
/// `blocks[at]` (after the blocks of the requests before it).
struct LongRequest {
    at: usize,
    record: Record,
    first: u64,
    /// The next block to hand out.
    next: u64,
    last: u64,
}

/// What the consumer receives, by sequence number.
enum Parsed {
    /// A chunk's blocks, its long requests, what its reading saw, and the error that ends the
    /// stream after them.
    Chunk { blocks: Vec<BlockRecord>, long: Vec<LongRequest>, requests: Vec<Record>, stats: Box<ReadStats>, error: Option<TraceError> },
    /// There is nothing after this.
    End,
}

/// The blocks of a text trace in batches (one per chunk), in order; a read or parse error is
/// the last item, after the blocks before it (see the module doc).
pub struct Batches {
    parsed: Receiver<(u64, Parsed)>,
    /// Arrived ahead of their turn.
    waiting: BTreeMap<u64, Parsed>,
    next: u64,
    permits: SyncSender<()>,
    /// The error to hand out after the batch just returned.
    error: Option<TraceError>,
    /// A chunk with long requests, handed out a batch at a time.
    draining: Option<Draining>,
    /// What the chunks' readings saw so far; published to `log` at the end of the input.
    stats: ReadStats,
    log: ReadLog,
    finished: bool,
}

/// A chunk whose blocks are handed out in pieces: the blocks between long requests, and each
/// long request split into batches of at most [`LONG_REQUEST_BLOCKS`].
struct Draining {
    blocks: Vec<BlockRecord>,
    long: VecDeque<LongRequest>,
    /// The next of `blocks` to hand out.
    at: usize,
    error: Option<TraceError>,
}

impl Draining {
    fn next_batch(&mut self) -> Option<Vec<BlockRecord>> {
        let end = self.long.front().map_or(self.blocks.len(), |l| l.at);
        if self.at < end {
            let batch = self.blocks[self.at..end].to_vec();
            self.at = end;
            return Some(batch);
        }
        let l = self.long.front_mut()?;
        let n = (l.last - l.next + 1).min(LONG_REQUEST_BLOCKS);
        let batch = (l.next..l.next + n).map(|block| BlockRecord { io: BlockIo::of_request(&l.record, block, l.first), next_write: NEVER }).collect();
        l.next += n;
        if l.next > l.last {
            self.long.pop_front();
        }
        Some(batch)
    }
}

/// Starts reading the text trace at `path` in `format` (lines independent) with `workers`
/// parsing threads, cut into chunks of about `chunk_bytes`, split into blocks by `split`
/// (its filters applied as the sequential [`Splitter`] applies them).
pub fn block_batches(path: &Path, format: &Format, options: &ReadOptions, split: SplitOptions, workers: usize, chunk_bytes: usize) -> Result<Batches> {
    start(path, format, options, split, Emit::Blocks, workers, chunk_bytes)
}

/// [`block_batches`] but the requests themselves, whole and in order (those `split`'s filters
/// keep), one batch per chunk: for a reader that wants records, not blocks.
pub fn request_batches(path: &Path, format: &Format, options: &ReadOptions, split: SplitOptions, workers: usize, chunk_bytes: usize) -> Result<RequestBatches> {
    start(path, format, options, split, Emit::Requests, workers, chunk_bytes).map(RequestBatches)
}

/// What the workers hand on: each request's blocks, or the requests.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Emit {
    Blocks,
    Requests,
}

fn start(path: &Path, format: &Format, options: &ReadOptions, split: SplitOptions, emit: Emit, workers: usize, chunk_bytes: usize) -> Result<Batches> {
    assert!(format.lines_are_independent(), "{} lines are not independent", format.name());
    assert!(workers > 0 && chunk_bytes > 0);
    // The errors a sequential reader gives before its first record, given here too.
    Splitter::new(std::iter::empty(), split.clone())?;
    let input = format::decompressed(path)?;
    let in_flight = 2 * workers + 2;
    let (permit_tx, permit_rx) = sync_channel(in_flight);
    for _ in 0..in_flight {
        permit_tx.send(()).expect("room for every permit");
    }
    let (job_tx, job_rx) = channel::<Job>();
    let (parsed_tx, parsed_rx) = channel();
    let job_rx = Arc::new(Mutex::new(job_rx));
    for _ in 0..workers {
        let (jobs, parsed) = (Arc::clone(&job_rx), parsed_tx.clone());
        let (path, format, options, split) = (path.to_path_buf(), format.clone(), options.clone(), split.clone());
        std::thread::spawn(move || parse_chunks(&jobs, &parsed, &path, &format, &options, &split, emit));
    }
    std::thread::spawn(move || cut(input, chunk_bytes, &permit_rx, &job_tx, &parsed_tx));
    Ok(Batches {
        parsed: parsed_rx,
        waiting: BTreeMap::new(),
        next: 0,
        permits: permit_tx,
        error: None,
        draining: None,
        stats: ReadStats::default(),
        log: options.log.clone(),
        finished: false,
    })
}

/// One chunk's output, in turn.
struct Chunk {
    blocks: Vec<BlockRecord>,
    long: Vec<LongRequest>,
    requests: Vec<Record>,
    error: Option<TraceError>,
}

impl Batches {
    /// The next chunk in input order (its reading's counts kept, its permit handed back), or
    /// `None` at the end of the input; a lost worker ends the input with an error (kept in
    /// `self.error`).
    fn next_chunk(&mut self) -> Option<Chunk> {
        while !self.finished {
            let Some(parsed) = self.waiting.remove(&self.next) else {
                match self.parsed.recv() {
                    Ok((seq, parsed)) => {
                        self.waiting.insert(seq, parsed);
                        continue;
                    }
                    // Every thread gone before the end: one of them panicked.
                    Err(_) => {
                        self.finished = true;
                        self.error = Some(TraceError::Invalid("the trace reader's threads stopped before the end of the input".into()));
                        return None;
                    }
                }
            };
            self.next += 1;
            let Parsed::Chunk { blocks, long, requests, stats, error } = parsed else {
                self.finished = true;
                self.log.publish(std::mem::take(&mut self.stats));
                return None;
            };
            self.stats.add(*stats);
            // Fails only when the reader has finished: nothing needs the permit then.
            let _ = self.permits.send(());
            return Some(Chunk { blocks, long, requests, error });
        }
        None
    }
}

impl Batches {
    /// What a chunk's items and error make of the next item: the items (the error kept for
    /// after them), the error when there are none, or nothing for an empty chunk.
    fn hand_out<T>(&mut self, items: Vec<T>, error: Option<TraceError>) -> Option<Result<Vec<T>>> {
        match error {
            Some(e) if items.is_empty() => {
                self.finished = true;
                Some(Err(e))
            }
            Some(e) => {
                self.error = Some(e);
                Some(Ok(items))
            }
            None if items.is_empty() => None,
            None => Some(Ok(items)),
        }
    }
}

/// The requests of a text trace in batches (one per chunk), in order; a read or parse error
/// is the last item, after the requests before it ([`request_batches`]).
pub struct RequestBatches(Batches);

impl Iterator for RequestBatches {
    type Item = Result<Vec<Record>>;

    fn next(&mut self) -> Option<Result<Vec<Record>>> {
        let b = &mut self.0;
        if let Some(e) = b.error.take() {
            b.finished = true;
            return Some(Err(e));
        }
        while let Some(Chunk { requests, error, .. }) = b.next_chunk() {
            if let Some(item) = b.hand_out(requests, error) {
                return Some(item);
            }
        }
        b.error.take().map(Err)
    }
}

impl Iterator for Batches {
    type Item = Result<Vec<BlockRecord>>;

    fn next(&mut self) -> Option<Result<Vec<BlockRecord>>> {
        if let Some(e) = self.error.take() {
            self.finished = true;
            return Some(Err(e));
        }
        if let Some(draining) = &mut self.draining {
            if let Some(batch) = draining.next_batch() {
                return Some(Ok(batch));
            }
            let error = draining.error.take();
            self.draining = None;
            if let Some(e) = error {
                self.finished = true;
                return Some(Err(e));
            }
        }
        while let Some(chunk) = self.next_chunk() {
            let Chunk { blocks, long, error, .. } = chunk;
            if !long.is_empty() {
                self.draining = Some(Draining { blocks, long: long.into(), at: 0, error });
                return self.next();
            }
            if let Some(item) = self.hand_out(blocks, error) {
                return Some(item);
            }
        }
        if let Some(e) = self.error.take() {
            return Some(Err(e));
        }
        None
    }
}

/// The reader: cuts `input` into chunks that end at a line end (the last may not), waiting
/// for a permit before each, and ends the stream with [`Parsed::End`].
fn cut(mut input: Box<dyn BufRead + Send>, chunk_bytes: usize, permits: &Receiver<()>, jobs: &Sender<Job>, parsed: &Sender<(u64, Parsed)>) {
    let mut carry = Vec::new();
    let (mut seq, mut lines_before, mut bytes_before) = (0u64, 0u64, 0u64);
    loop {
        if permits.recv().is_err() {
            return; // The consumer is gone.
        }
        let mut text = Vec::with_capacity(carry.len() + chunk_bytes);
        text.append(&mut carry);
        let mut searched = 0;
        let (end, error) = loop {
            let (end, error) = fill(&mut *input, &mut text, chunk_bytes);
            if end || error.is_some() {
                break (end, error);
            }
            match memchr::memrchr(b'\n', &text[searched..]) {
                Some(i) => {
                    carry = text.split_off(searched + i + 1);
                    break (false, None);
                }
                // A line longer than a chunk: read on, up to the longest line there may be.
                None => {
                    let line_start = memchr::memrchr(b'\n', &text[..searched]).map_or(0, |i| i + 1);
                    if text.len() - line_start > MAX_LINE_BYTES {
                        let offset_bytes = bytes_before + line_start as u64;
                        break (false, Some(std::io::Error::new(ErrorKind::InvalidData, LineTooLong { offset_bytes })));
                    }
                    searched = text.len();
                }
            }
        };
        let last = end || error.is_some();
        if error.is_some() {
            // As the sequential reader does: the partial line the error cut is dropped.
            text.truncate(memchr::memrchr(b'\n', &text).map_or(0, |i| i + 1));
        }
        let lines = count_newlines(&text);
        let text_bytes = text.len() as u64;
        if jobs.send(Job { seq, start: ChunkStart { lines_before, bytes_before }, text, error }).is_err() {
            return; // Every worker is gone.
        }
        seq += 1;
        lines_before += lines;
        bytes_before += text_bytes;
        if last {
            let _ = parsed.send((seq, Parsed::End));
            return;
        }
    }
}

/// Reads at least `want` more bytes into `text`, fewer only at the end of the input (`true`)
/// or on an error.
fn fill(input: &mut dyn BufRead, text: &mut Vec<u8>, want: usize) -> (bool, Option<std::io::Error>) {
    let target = text.len() + want;
    while text.len() < target {
        match input.fill_buf() {
            Ok([]) => return (true, None),
            Ok(available) => {
                let n = available.len().min(target - text.len());
                text.extend_from_slice(&available[..n]);
                input.consume(n);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (false, Some(e)),
        }
    }
    (false, None)
}

/// The `\n`s in `text`.
fn count_newlines(text: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', text).count() as u64
}

/// A worker: parses chunks and splits their requests into blocks until the reader stops.
fn parse_chunks(jobs: &Mutex<Receiver<Job>>, parsed: &Sender<(u64, Parsed)>, path: &Path, format: &Format, options: &ReadOptions, split: &SplitOptions, emit: Emit) {
    let block_shift = split.block_size_bytes.trailing_zeros();
    loop {
        // The lock is held only while waiting for a job; a worker that panicked while
        // holding it poisoned nothing the others rely on.
        let job = match jobs.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let mut blocks = Vec::with_capacity(if emit == Emit::Blocks { job.text.len() / TEXT_BYTES_PER_BLOCK } else { 0 });
        let mut long = Vec::new();
        let mut requests = Vec::new();
        let mut stats = ReadStats::default();
        let mut error = format::for_each_chunk_record(&job.text, job.start, path, format, options, &mut stats, |r| {
            if !split.wanted(&r) {
                return Ok(());
            }
            if emit == Emit::Requests {
                requests.push(r);
                return Ok(());
            }
            match block_range(&r, block_shift)? {
                Some((first, last)) if last - first >= LONG_REQUEST_BLOCKS => long.push(LongRequest { at: blocks.len(), record: r, first, next: first, last }),
                Some((first, last)) => {
                    for block in first..=last {
                        blocks.push(BlockRecord { io: BlockIo::of_request(&r, block, first), next_write: NEVER });
                    }
                }
                None => {}
            }
            Ok(())
        })
        .err();
        if error.is_none() {
            // The error ends the input after this chunk's lines: it is met on the next one.
            error = job.error.map(|e| format::read_error(path, job.start.lines_before + count_newlines(&job.text) + 1, e));
        }
        if parsed.send((job.seq, Parsed::Chunk { blocks, long, requests, stats: Box::new(stats), error })).is_err() {
            return; // The consumer is gone.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Filters, Input, Source};
    use proptest::prelude::*;
    use std::io::Write;

    fn trace_input(path: &Path, lenient: bool, filters: Filters) -> Input {
        Input { source: Source::Trace { path: path.to_path_buf(), format: Some(Format::Alibaba), lenient }, filters, read_log: ReadLog::default() }
    }

    /// A block read, or the error that ended the reading.
    type Read = std::result::Result<BlockRecord, String>;

    /// Blocks up to the first error, as strings, the sequential reader's way (its batches stop
    /// there) and the parallel one's.
    fn both(input: &Input, workers: usize, chunk_bytes: usize) -> (Vec<Read>, Vec<Read>) {
        let mut sequential = Vec::new();
        match input.records() {
            Ok(records) => {
                for r in records {
                    let failed = r.is_err();
                    sequential.push(r.map_err(|e| e.to_string()));
                    if failed {
                        break;
                    }
                }
            }
            Err(e) => sequential.push(Err(e.to_string())),
        }
        let mut parallel = Vec::new();
        for batch in input.parallel_batches(workers, chunk_bytes).expect("lines are independent") {
            match batch {
                Ok(blocks) => parallel.extend(blocks.into_iter().map(Ok)),
                Err(e) => parallel.push(Err(e.to_string())),
            }
        }
        (sequential, parallel)
    }

    /// An Alibaba line, well formed (of one or several blocks) or not.
    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => (0u32..4, prop::sample::select(vec!["R", "W"]), 0u64..1 << 20, prop::sample::select(vec![0u64, 512, 4096, 6000, 16384]), 0u64..1000)
                .prop_map(|(v, op, offset, len, t)| format!("{v},{op},{offset},{len},{t}\n")),
            1 => prop::sample::select(vec!["\n", "# comment\n", "1,W,0,4096,7\r\n", "1,X,0,4096,7\n", "1,W,,4096,7\n", "9,W,18446744073709551615,4096,1\n"]).prop_map(String::from),
            1 => "[0-9,RW]{40,90}\n",
            // A long request, split by the consumer (a few blocks past the limit, unaligned).
            1 => Just(format!("2,W,1000,{},5\n", (LONG_REQUEST_BLOCKS + 2) * 4096)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Any lines, cut into chunks of any size and parsed on any number of threads, give the
        /// sequential reader's blocks and first error, filters and lenient mode included.
        #[test]
        fn parallel_parsing_gives_the_sequential_blocks(lines in prop::collection::vec(line(), 0..60), unterminated in any::<bool>(), compressed in any::<bool>(), workers in 1usize..4, chunk_bytes in 1usize..200, lenient in any::<bool>(), window in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.csv");
            let mut text = lines.concat();
            if unterminated {
                text.pop();
            }
            std::fs::write(&path, if compressed { gzip(text.as_bytes()) } else { text.clone().into_bytes() }).unwrap();
            let filters = Filters { relative_window_us: window.then_some((100, 600)), ..Filters::default() };
            let (sequential, parallel) = both(&trace_input(&path, lenient, filters), workers, chunk_bytes);
            prop_assert_eq!(parallel, sequential, "{:?}", text);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// The same for whole requests: [`request_batches`] gives what [`Input::requests`]
        /// gives, up to and including the first error.
        #[test]
        fn parallel_parsing_gives_the_sequential_requests(lines in prop::collection::vec(line(), 0..60), unterminated in any::<bool>(), workers in 1usize..4, chunk_bytes in 1usize..200, lenient in any::<bool>()) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.csv");
            let mut text = lines.concat();
            if unterminated {
                text.pop();
            }
            std::fs::write(&path, &text).unwrap();
            let input = trace_input(&path, lenient, Filters::default());
            let mut sequential = Vec::new();
            for r in input.requests().unwrap() {
                let failed = r.is_err();
                sequential.push(r.map_err(|e| e.to_string()));
                if failed {
                    break;
                }
            }
            let mut parallel = Vec::new();
            for batch in request_batches(&path, &Format::Alibaba, &input.read_options(lenient), input.filters.split.clone(), workers, chunk_bytes).unwrap() {
                match batch {
                    Ok(requests) => parallel.extend(requests.into_iter().map(Ok)),
                    Err(e) => parallel.push(Err(e.to_string())),
                }
            }
            prop_assert_eq!(parallel, sequential, "{:?}", text);
        }
    }

    #[test]
    fn a_line_past_the_limit_is_the_sequential_readers_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        for (long_bytes, newline) in [(MAX_LINE_BYTES + 1, true), (3 * MAX_LINE_BYTES, false)] {
            let text = ["1,W,0,4096,1\n".to_string(), "7".repeat(long_bytes), if newline { "\n2,W,0,4096,2\n" } else { "" }.to_string()].concat();
            std::fs::write(&path, text).unwrap();
            for chunk_bytes in [100, CHUNK_BYTES] {
                let (sequential, parallel) = both(&trace_input(&path, true, Filters::default()), 2, chunk_bytes);
                assert_eq!(sequential.len(), 2);
                assert_eq!(
                    sequential[1],
                    Err("t.csv:line 2: line \"\": a line of more than 1 MiB without a line end, from byte 13".to_string())
                        .map_err(|e: String| e.replace("t.csv", &path.display().to_string()))
                );
                assert_eq!(parallel, sequential, "{long_bytes} bytes, chunks of {chunk_bytes}");
            }
        }
    }

    #[test]
    fn a_request_of_a_terabyte_is_handed_out_a_batch_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        std::fs::write(&path, format!("1,W,0,4096,1\n1,W,0,{},2\n1,R,0,4096,3\n", 1u64 << 40)).unwrap();
        let input = trace_input(&path, false, Filters::default());
        let mut batches = input.parallel_batches(2, 4096).unwrap();
        let first = batches.next().unwrap().unwrap();
        assert_eq!(first.len(), 1);
        // The terabyte's 2^28 blocks, never more than a batch's worth held at once.
        for i in 0..4u64 {
            let batch = batches.next().unwrap().unwrap();
            assert_eq!(batch.len() as u64, LONG_REQUEST_BLOCKS);
            assert_eq!((batch[0].io.block, batch[0].io.starts_request), (i * LONG_REQUEST_BLOCKS, i == 0));
        }
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    #[test]
    fn a_corrupt_compressed_trace_fails_after_the_same_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..20_000).map(|i| format!("1,W,{},4096,{i}\n", i * 4096)).collect();
        let mut bytes = gzip(text.as_bytes());
        bytes.truncate(bytes.len() * 2 / 3);
        let path = dir.path().join("t.csv.gz");
        std::fs::write(&path, bytes).unwrap();
        for chunk_bytes in [100, 4096, 1 << 20] {
            let (sequential, parallel) = both(&trace_input(&path, false, Filters::default()), 2, chunk_bytes);
            assert!(sequential.last().is_some_and(|r| r.is_err()) && sequential.len() > 1000, "{:?}", sequential.last());
            assert_eq!(parallel, sequential, "chunk {chunk_bytes}");
        }
    }

    #[test]
    fn a_missing_trace_is_named_as_the_sequential_reader_names_it() {
        let (sequential, parallel) = both(&trace_input(Path::new("/nonexistent/t.csv"), false, Filters::default()), 2, 64);
        assert_eq!(parallel, sequential);
        assert!(matches!(&parallel[..], [Err(e)] if e.contains("/nonexistent/t.csv")), "{parallel:?}");
    }

    /// A consumer that stops early lets every thread stop (else this test would not end).
    #[test]
    fn dropping_the_batches_stops_the_threads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.csv");
        let text: String = (0..50_000).map(|i| format!("1,W,{},4096,{i}\n", i * 4096)).collect();
        std::fs::write(&path, text).unwrap();
        for _ in 0..20 {
            let mut batches = block_batches(&path, &Format::Alibaba, &ReadOptions::default(), SplitOptions::default(), 2, 256).unwrap();
            assert!(batches.next().is_some_and(|b| b.is_ok()));
        }
    }
}

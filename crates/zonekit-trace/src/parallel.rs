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

use std::collections::BTreeMap;
use std::io::{BufRead, ErrorKind};
use std::path::Path;
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};

use crate::binary::{BlockRecord, NEVER};
use crate::blocks::{block_range, BlockIo, SplitOptions, Splitter};
use crate::format::{self, Format, ReadOptions};
use crate::record::{Result, TraceError};

/// Text per chunk: its blocks (~30 bytes of text each in the common formats, 32 bytes as
/// records) stay in cache on their way to the consumer.
pub const CHUNK_BYTES: usize = 512 << 10;

/// Bytes of text per block, about, in the common formats: sizes a chunk's block vector.
const TEXT_BYTES_PER_BLOCK: usize = 32;

/// A chunk for a worker: lines `lines_before + 1 ...` of the input, and the read error that
/// ended the input after them, if one did.
struct Job {
    seq: u64,
    lines_before: u64,
    text: Vec<u8>,
    error: Option<std::io::Error>,
}

/// What the consumer receives, by sequence number.
enum Parsed {
    /// A chunk's blocks, and the error that ends the stream after them.
    Chunk { blocks: Vec<BlockRecord>, error: Option<TraceError> },
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
    finished: bool,
}

/// Starts reading the text trace at `path` in `format` (lines independent) with `workers`
/// parsing threads, cut into chunks of about `chunk_bytes`, split into blocks by `split`
/// (its filters applied as the sequential [`Splitter`] applies them).
pub fn block_batches(path: &Path, format: &Format, options: &ReadOptions, split: SplitOptions, workers: usize, chunk_bytes: usize) -> Result<Batches> {
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
        std::thread::spawn(move || parse_chunks(&jobs, &parsed, &path, &format, &options, &split));
    }
    std::thread::spawn(move || cut(input, chunk_bytes, &permit_rx, &job_tx, &parsed_tx));
    Ok(Batches { parsed: parsed_rx, waiting: BTreeMap::new(), next: 0, permits: permit_tx, error: None, finished: false })
}

impl Iterator for Batches {
    type Item = Result<Vec<BlockRecord>>;

    fn next(&mut self) -> Option<Result<Vec<BlockRecord>>> {
        if let Some(e) = self.error.take() {
            self.finished = true;
            return Some(Err(e));
        }
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
                        return Some(Err(TraceError::Invalid("the trace reader's threads stopped before the end of the input".into())));
                    }
                }
            };
            self.next += 1;
            let Parsed::Chunk { blocks, error } = parsed else {
                self.finished = true;
                break;
            };
            // Fails only when the reader has finished: nothing needs the permit then.
            let _ = self.permits.send(());
            match error {
                Some(e) if blocks.is_empty() => {
                    self.finished = true;
                    return Some(Err(e));
                }
                Some(e) => {
                    self.error = Some(e);
                    return Some(Ok(blocks));
                }
                None if blocks.is_empty() => continue,
                None => return Some(Ok(blocks)),
            }
        }
        None
    }
}

/// The reader: cuts `input` into chunks that end at a line end (the last may not), waiting
/// for a permit before each, and ends the stream with [`Parsed::End`].
fn cut(mut input: Box<dyn BufRead + Send>, chunk_bytes: usize, permits: &Receiver<()>, jobs: &Sender<Job>, parsed: &Sender<(u64, Parsed)>) {
    let mut carry = Vec::new();
    let (mut seq, mut lines_before) = (0u64, 0u64);
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
                // A line longer than a chunk: read on.
                None => searched = text.len(),
            }
        };
        let last = end || error.is_some();
        if error.is_some() {
            // As the sequential reader does: the partial line the error cut is dropped.
            text.truncate(memchr::memrchr(b'\n', &text).map_or(0, |i| i + 1));
        }
        let lines = count_newlines(&text);
        if jobs.send(Job { seq, lines_before, text, error }).is_err() {
            return; // Every worker is gone.
        }
        seq += 1;
        lines_before += lines;
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
fn parse_chunks(jobs: &Mutex<Receiver<Job>>, parsed: &Sender<(u64, Parsed)>, path: &Path, format: &Format, options: &ReadOptions, split: &SplitOptions) {
    let block_shift = split.block_size_bytes.trailing_zeros();
    loop {
        // The lock is held only while waiting for a job; a worker that panicked while
        // holding it poisoned nothing the others rely on.
        let job = match jobs.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let mut blocks = Vec::with_capacity(job.text.len() / TEXT_BYTES_PER_BLOCK);
        let mut error = format::for_each_chunk_record(&job.text, job.lines_before, path, format, options, |r| {
            if !split.wanted(&r) {
                return Ok(());
            }
            if let Some((first, last)) = block_range(&r, block_shift)? {
                for block in first..=last {
                    blocks.push(BlockRecord { io: BlockIo::of_request(&r, block, first), next_write: NEVER });
                }
            }
            Ok(())
        })
        .err();
        if error.is_none() {
            error = job.error.map(|e| format::decompress_error(path, e));
        }
        if parsed.send((job.seq, Parsed::Chunk { blocks, error })).is_err() {
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
        Input { source: Source::Trace { path: path.to_path_buf(), format: Some(Format::Alibaba), lenient }, filters }
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

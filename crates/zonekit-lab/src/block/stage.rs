//! Getting a trace ready for replay, so that the replay loop does nothing but replay.
//!
//! 1. **One pass** ([`stage`]). The input — a text trace, a binary trace, a generated
//!    workload, any filters applied — is read once, parsed or decoded ahead of the pass (a
//!    text trace on every core) and handed over in batches through a bounded queue
//!    ([`for_each_batch`]). On the way every
//!    written block gets a dense id, 0, 1, 2, ... in order of first write (the key map lives
//!    only during this pass, so the replay holds no map), and the distinct blocks are counted
//!    exactly and estimated as the device sizing always has ([`DistinctCounter`], over the
//!    keys). What the replay needs of each write — its id and trace time, its next write for an
//!    annotated trace — goes to a **replay stream** (below), 12 bytes a write where a binary
//!    trace record is 32.
//! 2. **A cache** ([`stream_cache_path`]). The stream of a user's trace file is kept beside it
//!    (`TRACE.zkr`) and reused while the trace's length, modification time and sampled content
//!    and the way it is read (format, filters, block size) are unchanged; a trace whose
//!    directory cannot be written has its stream in the temporary directory. A generated
//!    workload's stream, and a lenient reading's, are always temporary.
//! 3. **Future knowledge** ([`with_future`]). The oracles get a copy with each write's next
//!    write, from one backward pass over the stream (4 bytes per distinct block).
//! 4. **Pipelined replay** ([`for_each_dense_batch`]): a reader thread reads the stream into
//!    [`DenseBatch`]es, so the replay thread only replays.
//! 5. **Numbering beside the replay** ([`prepare`], [`Prepared::for_each_batch`]). A binary
//!    trace records its distinct blocks' estimate, and the device is sized from that alone:
//!    its single replay need not wait for the numbering. A thread reads the trace, numbers
//!    the writes (and writes the stream for the next run) while the replay consumes them, on
//!    the core that would otherwise idle; it decodes the trace itself, since decoding costs
//!    less than handing the records between threads. A text trace or workload is sized only
//!    once every write was read, so it is staged first (a first pass that kept each write's
//!    key for numbering beside the replay was tried: its 16 bytes a write to write and read
//!    back cost what it saved).
//!
//! # Replay stream (`.zkr`, little-endian)
//!
//! Header, 128 bytes: `0` magic `ZKREPLY\1`; `8` the source file's length u64, `16` its
//! modification time in ns since the epoch u64, `24` a fingerprint of its first and last
//! 64 KiB u64 (all three 0 for a stream of no file); `32` a hash of how the source was read
//! (format, filters, block size) u64; `40` writes u64; `48` reads u64; `56` distinct written
//! blocks u64; `64` their estimate u64; `72` flags u64 (bit 0: a next-write column);
//! `80` writes per chunk u64; `88` where the chunks start u64; `96` the source description's
//! length u64; `104` the content check u64 (below); `112` reserved; `120` a check word
//! ([`mix64`] chained over the eight-byte words of bytes 0..120, then over the description).
//! Then the description (UTF-8), then, from the start offset, chunks of `writes per chunk`
//! writes (the last may be shorter): their ids (u32 each), their trace times in µs (u64 each),
//! and with the flag their next writes (u64 each, write indices, [`NEVER`] for none). Written
//! to a temporary name and renamed, so a reader sees a whole file or none.
//!
//! The content check is the XOR over chunks of [`mix64`] of (chunk index << 32 | CRC-32 of the
//! chunk's bytes): order-free, so [`with_future`], which writes its chunks backwards, computes
//! it too. A cached stream is used only after its every chunk was read back and matched it
//! ([`cached_stream`]); anything else is rebuilt from the trace. The header alone (length,
//! modification time, sampled content of the source) says whose stream it is, not that its
//! content survived: a stream damaged on disk once replayed to other results with exit 0.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::SyncSender;

use zonekit_base::map::mix64;
use zonekit_base::{BlockMap, DistinctCounter, NEVER};
use zonekit_trace::binary::{BinaryStream, BlockRecord};
use zonekit_trace::input::{Input, Source};
use zonekit_trace::Op;

use crate::harness::error::{LabError, Result};
use crate::harness::progress::Progress;

/// Writes per chunk of a replay stream, and per batch the replay reads.
const CHUNK_WRITES: usize = zonekit_trace::input::BATCH_RECORDS;
const MAGIC: &[u8; 8] = b"ZKREPLY\x01";
const HEADER_BYTES: usize = 128;
const FLAG_NEXT_WRITE: u64 = 1;
/// Bytes of the source at each end its fingerprint covers.
const FINGERPRINT_BYTES: u64 = 64 << 10;
/// Batches in flight between the thread that reads or numbers a stream and the replay.
const QUEUE_BATCHES: usize = 4;

/// Hands `input`'s records (its filters applied), read ahead on threads of their own
/// ([`Input::record_batches`]), to `each_batch` in trace order. A read error ends the pass
/// with that error, after the records before it were handed over.
pub fn for_each_batch(input: &Input, mut each_batch: impl FnMut(&[BlockRecord]) -> Result<()>) -> Result<()> {
    let read_error = LabError::input(input);
    for batch in input.record_batches() {
        each_batch(&batch.map_err(&read_error)?)?;
    }
    Ok(())
}

/// A trace ready for replay: its replay stream and what the stream's header says.
#[derive(Clone, Debug)]
pub struct Staged {
    /// What was staged (for messages).
    pub input: Input,
    /// The replay stream.
    pub path: PathBuf,
    /// The source's own description (a binary trace's recorded source, else the input's).
    pub source: String,
    pub writes: u64,
    pub reads: u64,
    /// Distinct written blocks, exactly: ids run from 0 to `distinct - 1`.
    pub distinct: u64,
    /// Distinct written blocks as [`DistinctCounter::estimate`] counts them (devices are sized
    /// from it, as they were before the count was exact, so results stay the same).
    pub distinct_estimate: u64,
    pub has_next_write: bool,
    /// The content check of the stream's chunks (see the module doc).
    content_check: u64,
}

/// One chunk's term of the content check.
fn chunk_check(k: u64, bytes: &[u8]) -> u64 {
    mix64((k << 32) | crc32fast::hash(bytes) as u64)
}

impl Staged {
    fn bytes_per_write(&self) -> u64 {
        if self.has_next_write {
            20
        } else {
            12
        }
    }

    fn data_offset(&self) -> u64 {
        data_offset(self.source.len())
    }

    /// Where chunk `k` starts and how many writes it holds.
    fn chunk(&self, k: u64) -> (u64, usize) {
        let first = k * CHUNK_WRITES as u64;
        (self.data_offset() + first * self.bytes_per_write(), (self.writes - first).min(CHUNK_WRITES as u64) as usize)
    }

    fn chunks(&self) -> u64 {
        self.writes.div_ceil(CHUNK_WRITES as u64)
    }
}

fn data_offset(description_bytes: usize) -> u64 {
    ((HEADER_BYTES + description_bytes) as u64).next_multiple_of(64)
}

/// What identifies a source file: length, modification time, content fingerprint.
type Identity = (u64, u64, u64);

fn identity_of(path: &Path) -> std::io::Result<Identity> {
    let meta = std::fs::metadata(path)?;
    let mtime_ns = meta.modified()?.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let file = File::open(path)?;
    let len = meta.len();
    let mut fingerprint = mix64(len);
    let mut buf = vec![0u8; FINGERPRINT_BYTES.min(len) as usize];
    for at in [0, len - buf.len() as u64] {
        file.read_exact_at(&mut buf, at)?;
        fingerprint = buf.chunks(8).fold(fingerprint, |acc, w| {
            let mut word = [0u8; 8];
            word[..w.len()].copy_from_slice(w);
            mix64(acc ^ u64::from_le_bytes(word))
        });
    }
    Ok((len, mtime_ns, fingerprint))
}

/// A hash of how `input` is read: the source's kind, format and options and every filter.
fn reading_key(input: &Input) -> u64 {
    format!("{input:?}").bytes().fold(0x7A6B_7265_706C_6179, |acc, b| mix64(acc ^ b as u64))
}

fn check_word(header: &[u8], description: &[u8]) -> u64 {
    let words = header[..120].chunks_exact(8).fold(0, |acc, w| mix64(acc ^ u64::from_le_bytes(w.try_into().unwrap())));
    description.iter().fold(words, |acc, &b| mix64(acc ^ b as u64))
}

fn encode_header(s: &Staged, identity: Identity, key: u64) -> Vec<u8> {
    let mut h = vec![0u8; data_offset(s.source.len()) as usize];
    h[0..8].copy_from_slice(MAGIC);
    let words = [
        identity.0,
        identity.1,
        identity.2,
        key,
        s.writes,
        s.reads,
        s.distinct,
        s.distinct_estimate,
        if s.has_next_write { FLAG_NEXT_WRITE } else { 0 },
        CHUNK_WRITES as u64,
        data_offset(s.source.len()),
        s.source.len() as u64,
        s.content_check,
    ];
    for (i, w) in words.iter().enumerate() {
        h[8 + 8 * i..16 + 8 * i].copy_from_slice(&w.to_le_bytes());
    }
    h[HEADER_BYTES..HEADER_BYTES + s.source.len()].copy_from_slice(s.source.as_bytes());
    let check = check_word(&h[..HEADER_BYTES], s.source.as_bytes());
    h[120..128].copy_from_slice(&check.to_le_bytes());
    h
}

/// The stream at `path` if it is whole and belongs to a source with this identity, read this way.
fn cached_stream(path: &Path, input: &Input, identity: Identity, key: u64) -> Option<Staged> {
    let mut f = File::open(path).ok()?;
    let mut h = [0u8; HEADER_BYTES];
    f.read_exact(&mut h).ok()?;
    let word = |i: usize| u64::from_le_bytes(h[8 + 8 * i..16 + 8 * i].try_into().unwrap());
    if &h[0..8] != MAGIC || (word(0), word(1), word(2)) != identity || word(3) != key || word(9) != CHUNK_WRITES as u64 {
        return None;
    }
    let description_len = usize::try_from(word(11)).ok().filter(|&n| n < 1 << 20)?;
    // The description and the zeros that pad it to the chunks.
    let mut description = vec![0u8; data_offset(description_len) as usize - HEADER_BYTES];
    f.read_exact(&mut description).ok()?;
    if description[description_len..].iter().any(|&b| b != 0) {
        return None;
    }
    description.truncate(description_len);
    let source = String::from_utf8(description).ok()?;
    let staged = Staged {
        input: input.clone(),
        path: path.to_path_buf(),
        source,
        writes: word(4),
        reads: word(5),
        distinct: word(6),
        distinct_estimate: word(7),
        has_next_write: word(8) & FLAG_NEXT_WRITE != 0,
        content_check: word(12),
    };
    let whole = word(10) == staged.data_offset() && f.metadata().ok()?.len() == staged.data_offset().checked_add(staged.writes.checked_mul(staged.bytes_per_write())?)?;
    let header_checks = u64::from_le_bytes(h[120..128].try_into().unwrap()) == check_word(&h, staged.source.as_bytes());
    (whole && header_checks && content_verifies(&f, &staged)).then_some(staged)
}

/// Whether every chunk of the stream reads back to its content check.
fn content_verifies(f: &File, staged: &Staged) -> bool {
    let mut bytes = Vec::new();
    let mut check = 0;
    for k in 0..staged.chunks() {
        let (from, n) = staged.chunk(k);
        bytes.resize(n * staged.bytes_per_write() as usize, 0);
        if f.read_exact_at(&mut bytes, from).is_err() {
            return false;
        }
        check ^= chunk_check(k, &bytes);
    }
    check == staged.content_check
}

/// Where the replay stream of a user's trace is cached.
pub fn stream_cache_path(trace: &Path) -> PathBuf {
    let mut name = trace.as_os_str().to_os_string();
    name.push(".zkr");
    PathBuf::from(name)
}

/// The user's file behind `input`, if it has one.
fn source_file(input: &Input) -> Option<&Path> {
    match &input.source {
        Source::Binary(p) | Source::Trace { path: p, .. } => Some(p),
        Source::Generated { .. } => None,
    }
}

/// A new file name in `dir`: runs in one process may stage side by side.
fn unique_path(dir: &Path, stem: &str, extension: &str) -> PathBuf {
    dir.join(format!("{stem}-{}.{extension}", next_unique()))
}

fn next_unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn temp_name(p: &Path) -> PathBuf {
    let mut t = p.as_os_str().to_os_string();
    t.push(format!(".{}-{}.tmp", std::process::id(), next_unique()));
    PathBuf::from(t)
}

/// Where the replay stream of `input` is kept: the source's identity, how it is read, and
/// the places it may go, best first (beside a user's trace, else in `dir`).
struct StreamHome {
    identity: Identity,
    key: u64,
    places: Vec<PathBuf>,
    /// Whether the stream belongs to a user's file (and so may be found again).
    of_file: bool,
}

impl StreamHome {
    fn of(input: &Input, dir: &Path) -> Result<StreamHome> {
        // A lenient reading is staged afresh every run, like a generated workload: the records
        // it skips are then counted, and reported, every time.
        let file = source_file(input).filter(|_| !input.is_lenient());
        let identity = match file {
            Some(p) => identity_of(p).map_err(LabError::io(p))?,
            None => (0, 0, 0),
        };
        let places = match file {
            Some(p) => {
                let name = p.file_name().map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
                vec![stream_cache_path(p), dir.join(format!("{name}.zkr"))]
            }
            None => vec![unique_path(dir, "staged", "zkr")],
        };
        Ok(StreamHome { identity, key: reading_key(input), places, of_file: file.is_some() })
    }

    /// The stream a run before this one left, if it is whole and still belongs to the source.
    fn cached(&self, input: &Input) -> Option<Staged> {
        if !self.of_file {
            return None;
        }
        self.places.iter().find_map(|p| cached_stream(p, input, self.identity, self.key))
    }
}

/// Stages `input` (see the module doc): its cached replay stream if there is one, else the
/// one pass that writes it — beside a user's trace if its directory takes a file, else in
/// `dir`.
pub fn stage(input: &Input, dir: &Path) -> Result<Staged> {
    stage_with(input, dir, &mut |_| {})
}

/// [`stage`], asking `progress` after every batch of the numbering pass whether to stop.
pub fn stage_with(input: &Input, dir: &Path, progress: &mut dyn Progress) -> Result<Staged> {
    let home = StreamHome::of(input, dir)?;
    if let Some(s) = home.cached(input) {
        return Ok(s);
    }
    number_now(input, &home, &Recorded::of(input)?, progress)
}

/// A trace ready for one replay ([`prepare`]).
pub enum Prepared {
    /// Its replay stream, written before.
    Staged(Staged),
    /// Sized, but its writes are numbered — and the stream written — while the replay runs.
    Unnumbered(Unnumbered),
}

/// A trace whose device can be sized before its writes are numbered — it records its distinct
/// blocks' estimate — so that numbering runs on a thread of its own beside the replay
/// ([`Prepared::for_each_batch`]), on the core that would otherwise idle while one thread
/// replays.
pub struct Unnumbered {
    input: Input,
    home: StreamHome,
    recorded: Recorded,
    distinct_estimate: u64,
}

/// Readies `input` for one replay: its cached replay stream if there is one; else, for a
/// trace that records its distinct blocks (a binary trace), the numbering pass to run beside
/// the replay; else (a text trace, a workload: the device's size is known only once every
/// write was read) the stream written by the one pass of [`stage`].
pub fn prepare(input: &Input, dir: &Path) -> Result<Prepared> {
    prepare_with(input, dir, &mut |_| {})
}

/// [`prepare`], asking `progress` after every batch of a numbering pass whether to stop.
pub fn prepare_with(input: &Input, dir: &Path, progress: &mut dyn Progress) -> Result<Prepared> {
    let home = StreamHome::of(input, dir)?;
    if let Some(s) = home.cached(input) {
        return Ok(Prepared::Staged(s));
    }
    let recorded = Recorded::of(input)?;
    Ok(match recorded.distinct_estimate {
        Some(distinct_estimate) => Prepared::Unnumbered(Unnumbered { input: input.clone(), home, recorded, distinct_estimate }),
        None => Prepared::Staged(number_now(input, &home, &recorded, progress)?),
    })
}

/// The one pass that numbers the writes of `input` and writes its stream, with nothing beside.
fn number_now(input: &Input, home: &StreamHome, recorded: &Recorded, progress: &mut dyn Progress) -> Result<Staged> {
    let mut numbering = Numbering::start(input, home, recorded, None)?;
    number_records(input, &mut numbering, progress)?;
    numbering.finish()
}

impl Prepared {
    /// Distinct written blocks as [`DistinctCounter::estimate`] counts them (see
    /// [`Staged::distinct_estimate`]).
    pub fn distinct_estimate(&self) -> u64 {
        match self {
            Prepared::Staged(s) => s.distinct_estimate,
            Prepared::Unnumbered(u) => u.distinct_estimate,
        }
    }

    /// How many blocks to make room for: exact once numbered, else the estimate with a margin.
    pub fn blocks_hint(&self) -> usize {
        match self {
            Prepared::Staged(s) => s.distinct as usize,
            Prepared::Unnumbered(u) => DistinctCounter::with_margin(u.distinct_estimate) as usize,
        }
    }

    /// The replay stream, numbering the writes now if they are not yet.
    pub fn into_staged(self) -> Result<Staged> {
        match self {
            Prepared::Staged(s) => Ok(s),
            Prepared::Unnumbered(u) => u.number(None),
        }
    }

    /// Hands every write to `each_batch` in trace order, as the replay loop reads them, and
    /// returns the replay stream (written meanwhile if it was not yet). The batches are read
    /// or numbered on a thread of their own through a bounded queue; an error of
    /// `each_batch` stops that thread (a stream it was writing is then removed).
    pub fn for_each_batch(self, mut each_batch: impl FnMut(&DenseBatch) -> Result<()>) -> Result<Staged> {
        let unnumbered = match self {
            Prepared::Staged(s) => return for_each_dense_batch(&s, each_batch).map(|()| s),
            Prepared::Unnumbered(u) => u,
        };
        let (tx, rx) = std::sync::mpsc::sync_channel::<DenseBatch>(QUEUE_BATCHES);
        let numbering = std::thread::spawn(move || unnumbered.number(Some(tx)));
        // The queue ends when the numbering thread is done, whether it succeeded or not.
        let replayed = rx.iter().try_for_each(|batch| each_batch(&batch));
        // A numbering thread blocked on a full queue wakes up to a closed one and stops.
        drop(rx);
        let numbered = numbering.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        replayed?;
        numbered
    }
}

impl Unnumbered {
    /// The numbering pass: writes the replay stream and, with `to_replay`, sends each chunk
    /// there as soon as it is numbered.
    fn number(self, to_replay: Option<SyncSender<DenseBatch>>) -> Result<Staged> {
        let mut numbering = Numbering::start(&self.input, &self.home, &self.recorded, to_replay)?;
        // Beside a replay, whose own loop asks whether to stop.
        number_records(&self.input, &mut numbering, &mut |_| {})?;
        let staged = numbering.finish()?;
        debug_assert_eq!(staged.distinct_estimate, self.distinct_estimate, "sized as the stream says");
        Ok(staged)
    }
}

/// What an unfiltered binary trace records of itself, and what is known of any other input
/// before it is read.
struct Recorded {
    /// The source description (a binary trace's recorded source, else the input's).
    source: String,
    /// Each write comes with its next write (an annotated binary trace).
    has_next_write: bool,
    /// The distinct written blocks' estimate, when the trace records it.
    distinct_estimate: Option<u64>,
}

impl Recorded {
    fn of(input: &Input) -> Result<Recorded> {
        let header = match &input.source {
            Source::Binary(p) => Some(BinaryStream::open(p).map_err(LabError::input(input))?.header().clone()),
            _ => None,
        };
        // Only what the pass reads as recorded: every block, at the recorded block size.
        let as_recorded = header.filter(|h| !input.filters.drops_blocks() && h.block_size_bytes as u64 == input.filters.split.block_size_bytes);
        Ok(match as_recorded {
            Some(h) => Recorded { source: h.source, has_next_write: h.has_next_write, distinct_estimate: h.distinct_writes_estimate },
            None => Recorded { source: input.describe(), has_next_write: false, distinct_estimate: None },
        })
    }
}

/// Numbers the written blocks in order of first write, counts and estimates the distinct ones,
/// and writes the replay stream to a temporary file that [`Numbering::finish`] puts in place
/// (dropped unfinished, it removes it). With a replay beside it, each chunk also goes there.
struct Numbering {
    staged: Staged,
    identity: Identity,
    key: u64,
    /// Where the stream goes once whole (it is written beside it first).
    place: PathBuf,
    /// Written a chunk at a time, with no buffer between (a chunk is 192 KiB).
    out: File,
    map: BlockMap<u32>,
    hll: DistinctCounter,
    recorded_estimate: Option<u64>,
    chunk: Chunk,
    to_replay: Option<SyncSender<DenseBatch>>,
    chunks_written: u64,
    finished: bool,
}

impl Numbering {
    fn start(input: &Input, home: &StreamHome, recorded: &Recorded, to_replay: Option<SyncSender<DenseBatch>>) -> Result<Numbering> {
        let (place, tmp, out) = create_in_first(&home.places)?;
        let staged = Staged {
            input: input.clone(),
            path: tmp,
            source: recorded.source.clone(),
            writes: 0,
            reads: 0,
            distinct: 0,
            distinct_estimate: 0,
            has_next_write: recorded.has_next_write,
            content_check: 0,
        };
        let mut numbering = Numbering {
            identity: home.identity,
            key: home.key,
            place,
            out,
            // Sized from the estimate with the margin the device sizing uses, so it rarely
            // grows; without one the map grows as it goes.
            map: BlockMap::with_capacity(recorded.distinct_estimate.map_or(1 << 16, |n| DistinctCounter::with_margin(n) as usize)),
            hll: DistinctCounter::new(),
            recorded_estimate: recorded.distinct_estimate,
            chunk: Chunk::default(),
            to_replay,
            chunks_written: 0,
            finished: false,
            staged,
        };
        let header_room = vec![0u8; numbering.staged.data_offset() as usize];
        numbering.out.write_all(&header_room).map_err(LabError::io(&numbering.staged.path))?;
        Ok(numbering)
    }

    /// Starts fetching the map slot of a block written soon.
    #[inline]
    fn prefetch(&self, key: u64) {
        self.map.prefetch(key);
    }

    #[inline]
    fn write(&mut self, key: u64, time_us: u64, next_write: Option<u64>) -> Result<()> {
        if self.staged.writes == u32::MAX as u64 {
            return Err(LabError::Usage(format!("{}: more than the 2^32 - 1 writes a replay supports", self.staged.input.describe())));
        }
        let (slot, inserted) = self.map.entry(key);
        if inserted {
            *slot = self.staged.distinct as u32;
            self.staged.distinct += 1;
            self.hll.add(key);
        }
        self.chunk.push(*slot, time_us, next_write);
        self.staged.writes += 1;
        if self.chunk.ids.len() == CHUNK_WRITES {
            self.emit()?;
        }
        Ok(())
    }

    /// Writes the chunk out, and hands it to the replay if one runs beside.
    fn emit(&mut self) -> Result<()> {
        self.chunk.write_to(&mut self.out).map_err(LabError::io(&self.staged.path))?;
        self.staged.content_check ^= chunk_check(self.chunks_written, &self.chunk.bytes);
        self.chunks_written += 1;
        match &self.to_replay {
            Some(tx) => {
                // A closed queue means the replay stopped (with its own error, which is the one
                // reported); this one only ends the pass.
                tx.send(self.chunk.take()).map_err(|_| LabError::Io { path: self.staged.path.clone(), error: std::io::Error::other("the replay stopped") })
            }
            None => {
                self.chunk.clear();
                Ok(())
            }
        }
    }

    /// Writes the rest and the header and puts the stream in its place.
    fn finish(mut self) -> Result<Staged> {
        if !self.chunk.ids.is_empty() {
            self.emit()?;
        }
        self.staged.distinct_estimate = self.recorded_estimate.unwrap_or_else(|| self.hll.estimate());
        let header = encode_header(&self.staged, self.identity, self.key);
        self.out.write_all_at(&header, 0).map_err(LabError::io(&self.staged.path))?;
        std::fs::rename(&self.staged.path, &self.place).map_err(LabError::io(&self.place))?;
        self.finished = true;
        self.staged.path = self.place.clone();
        Ok(self.staged.clone())
    }
}

impl Drop for Numbering {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(&self.staged.path);
        }
    }
}

/// Numbers every write of `input`, counting its reads.
fn number_records(input: &Input, numbering: &mut Numbering, progress: &mut dyn Progress) -> Result<()> {
    let annotated = numbering.staged.has_next_write;
    // Beside a replay both cores are busy, and a binary trace decodes faster than its records
    // are handed between threads: it is read here. Alone, a reader thread decodes it on the
    // core that would idle.
    let read_here = numbering.to_replay.is_some() && matches!(input.source, Source::Binary(_));
    let mut number = |batch: &[BlockRecord]| {
        const AHEAD: usize = 16;
        for (i, r) in batch.iter().enumerate() {
            if let Some(a) = batch.get(i + AHEAD) {
                numbering.prefetch(a.io.key());
            }
            if r.io.op != Op::Write {
                numbering.staged.reads += 1;
                continue;
            }
            numbering.write(r.io.key(), r.io.time_us, annotated.then_some(r.next_write))?;
        }
        if progress.cancelled() {
            return Err(LabError::Cancelled);
        }
        Ok(())
    };
    if !read_here {
        return for_each_batch(input, number);
    }
    let mut numbered = Ok(());
    input
        .for_each_batch_here(&mut |batch| {
            numbered = number(batch);
            numbered.is_ok()
        })
        .map_err(LabError::input(input))?;
    numbered
}

/// A temporary file beside the first of `places` whose directory takes one: (the place, the
/// temporary name, the file). The last place's error if none does.
fn create_in_first(places: &[PathBuf]) -> Result<(PathBuf, PathBuf, File)> {
    let mut last_error = None;
    for place in places {
        let tmp = temp_name(place);
        match File::create(&tmp) {
            Ok(file) => return Ok((place.clone(), tmp, file)),
            Err(e) => last_error = Some(LabError::Io { path: tmp, error: e }),
        }
    }
    Err(last_error.expect("at least one place"))
}

/// One chunk of a stream being written.
#[derive(Default)]
struct Chunk {
    ids: Vec<u32>,
    times_us: Vec<u64>,
    next_writes: Vec<u64>,
    /// The chunk as written, kept for the next one.
    bytes: Vec<u8>,
}

impl Chunk {
    #[inline]
    fn push(&mut self, id: u32, time_us: u64, next_write: Option<u64>) {
        self.ids.push(id);
        self.times_us.push(time_us);
        self.next_writes.extend(next_write);
    }

    fn write_to(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        self.bytes.clear();
        self.bytes.extend(self.ids.iter().flat_map(|v| v.to_le_bytes()));
        self.bytes.extend(self.times_us.iter().flat_map(|v| v.to_le_bytes()));
        self.bytes.extend(self.next_writes.iter().flat_map(|v| v.to_le_bytes()));
        out.write_all(&self.bytes)
    }

    fn clear(&mut self) {
        self.ids.clear();
        self.times_us.clear();
        self.next_writes.clear();
    }

    /// The chunk's writes as a batch, leaving the chunk empty (with room for the next).
    fn take(&mut self) -> DenseBatch {
        // As much room as the chunk used: none for an absent next-write column.
        let take = |v: &mut Vec<u64>| std::mem::replace(v, Vec::with_capacity(v.len()));
        DenseBatch { times_us: take(&mut self.times_us), next_writes: take(&mut self.next_writes), ids: std::mem::replace(&mut self.ids, Vec::with_capacity(CHUNK_WRITES)) }
    }
}

/// The staged trace with next-write times, for the oracles: a copy in `dir` with the
/// next-write column, from one backward pass (the original, perhaps a cache another run
/// reads, is left as it is).
pub fn with_future(staged: Staged, dir: &Path) -> Result<Staged> {
    if staged.has_next_write {
        return Ok(staged);
    }
    let read_err = |e| LabError::Io { path: staged.path.clone(), error: e };
    let source = File::open(&staged.path).map_err(read_err)?;
    let path = unique_path(dir, "future", "zkr");
    let write_err = |e| LabError::Io { path: path.clone(), error: e };
    let out = File::create(&path).map_err(write_err)?;
    let mut annotated = Staged { path: path.clone(), has_next_write: true, content_check: 0, ..staged.clone() };
    // The write index of each block's next write, u32::MAX for none yet (indices are below).
    let mut next_of = vec![u32::MAX; staged.distinct as usize];
    let mut bytes = vec![0u8; CHUNK_WRITES * 20];
    for k in (0..staged.chunks()).rev() {
        let (from, n) = staged.chunk(k);
        source.read_exact_at(&mut bytes[..n * 12], from).map_err(read_err)?;
        let first = k * CHUNK_WRITES as u64;
        for i in (0..n).rev() {
            let id = u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap()) as usize;
            let next = std::mem::replace(&mut next_of[id], (first + i as u64) as u32);
            let next = if next == u32::MAX { NEVER } else { next as u64 };
            bytes[12 * n + 8 * i..12 * n + 8 * i + 8].copy_from_slice(&next.to_le_bytes());
        }
        out.write_all_at(&bytes[..n * 20], annotated.chunk(k).0).map_err(write_err)?;
        annotated.content_check ^= chunk_check(k, &bytes[..n * 20]);
    }
    out.write_all_at(&encode_header(&annotated, (0, 0, 0), 0), 0).map_err(write_err)?;
    Ok(annotated)
}

/// One batch of a staged trace's writes, as the replay loop reads them.
#[derive(Clone, Debug, Default)]
pub struct DenseBatch {
    /// Dense id of each write's block.
    pub ids: Vec<u32>,
    /// Trace time of each write, µs.
    pub times_us: Vec<u64>,
    /// Next-write time of each write when the trace is annotated; empty when not.
    pub next_writes: Vec<u64>,
}

/// Streams the staged trace's writes to `each_batch`, in order, read on a thread of its own
/// through a bounded queue.
pub fn for_each_dense_batch(staged: &Staged, mut each_batch: impl FnMut(&DenseBatch) -> Result<()>) -> Result<()> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<std::io::Result<DenseBatch>>(QUEUE_BATCHES);
    let s = staged.clone();
    std::thread::spawn(move || {
        let read = |file: &File, k: u64, bytes: &mut Vec<u8>| -> std::io::Result<DenseBatch> {
            let (from, n) = s.chunk(k);
            bytes.resize(n * s.bytes_per_write() as usize, 0);
            file.read_exact_at(bytes, from)?;
            let (ids, rest) = bytes.split_at(4 * n);
            let (times, next) = rest.split_at(8 * n);
            let u64s = |b: &[u8]| b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
            Ok(DenseBatch { ids: ids.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect(), times_us: u64s(times), next_writes: u64s(next) })
        };
        let file = match File::open(&s.path) {
            Ok(f) => f,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let mut bytes = Vec::new();
        for k in 0..s.chunks() {
            let batch = read(&file, k, &mut bytes);
            let failed = batch.is_err();
            // A send fails only when the consumer is gone: stop too.
            if tx.send(batch).is_err() || failed {
                return;
            }
        }
    });
    for batch in rx {
        each_batch(&batch.map_err(|e| LabError::Io { path: staged.path.clone(), error: e })?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;

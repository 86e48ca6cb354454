//! Trace readers. [`open`] reads any supported format from a path, decompressing gzip, bzip2
//! and zstd streams, and yields [`Record`]s; errors name the file, the line (or byte offset)
//! and the field. In lenient mode bad records are skipped and counted ([`ReadStats`]).

pub mod delimited;
mod lines;
pub mod text;
pub mod vscsi;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use delimited::Delimited;
use lines::Lines;
use text::{LineParser, ParseState, Quick};

use crate::record::{FieldError, Location, Record, Result, SpecError, TraceError};

/// The trace formats Zonekit reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Format {
    Alibaba,
    Tencent,
    Msr,
    Umass,
    Systor,
    CloudPhysicsCsv,
    Vscsi,
    DiskSim,
    Delimited(Delimited),
}

impl Format {
    pub const NAMES: [&'static str; 9] = ["alibaba", "tencent", "msr", "umass", "systor", "cloudphysics-csv", "vscsi", "disksim", "delimited"];

    pub fn name(&self) -> &'static str {
        match self {
            Format::Alibaba => "alibaba",
            Format::Tencent => "tencent",
            Format::Msr => "msr",
            Format::Umass => "umass",
            Format::Systor => "systor",
            Format::CloudPhysicsCsv => "cloudphysics-csv",
            Format::Vscsi => "vscsi",
            Format::DiskSim => "disksim",
            Format::Delimited(_) => "delimited",
        }
    }

    /// The fields and units the reader assumes, for `trace info` to print beside the format.
    pub fn units(&self) -> &'static str {
        match self {
            Format::Alibaba => "device,op R/W,offset bytes,length bytes,time µs",
            Format::Tencent => "time s,offset 512-B sectors,size sectors,op 0 read/1 write,volume",
            Format::Msr => "time Windows FILETIME (100 ns),host,disk,op Read/Write,offset bytes,size bytes,response",
            Format::Umass => "ASU,LBA 512-B sectors,size bytes,op R/W,time s",
            Format::Systor => "time s,response s,op R/W,LUN,offset bytes,size bytes",
            Format::CloudPhysicsCsv => "version,time s,SCSI opcode (hex),size bytes,LBN 512-B sectors",
            Format::Vscsi => "vscsi v1 binary records: length bytes, SCSI command, LBN 512-B sectors, time µs",
            Format::DiskSim => "time ns, device, LBA 512-B sectors, size sectors, flag (bit 0: read), whitespace-separated",
            Format::Delimited(_) => "as the column mapping says",
        }
    }

    /// Whether each line is read on its own, so that chunks of a file cut at line ends can be
    /// parsed apart and their records put back in order ([`for_each_chunk_record`]): every named text
    /// format but MSR, which numbers its volumes in order of appearance.
    pub fn lines_are_independent(&self) -> bool {
        matches!(self, Format::Alibaba | Format::Tencent | Format::Umass | Format::Systor | Format::CloudPhysicsCsv | Format::DiskSim)
    }

    fn line_parser(&self) -> Option<LineParser> {
        Some(match self {
            Format::Alibaba => text::alibaba,
            Format::Tencent => text::tencent,
            Format::Msr => text::msr,
            Format::Umass => text::umass,
            Format::Systor => text::systor,
            Format::CloudPhysicsCsv => text::cloudphysics_csv,
            Format::DiskSim => text::disksim,
            Format::Vscsi | Format::Delimited(_) => return None,
        })
    }
}

impl FromStr for Format {
    type Err = SpecError;
    fn from_str(s: &str) -> std::result::Result<Format, SpecError> {
        Ok(match s {
            "alibaba" => Format::Alibaba,
            "tencent" => Format::Tencent,
            "msr" => Format::Msr,
            "umass" => Format::Umass,
            "systor" => Format::Systor,
            "cloudphysics-csv" => Format::CloudPhysicsCsv,
            "vscsi" => Format::Vscsi,
            "disksim" => Format::DiskSim,
            "delimited" => return Err("the delimited format needs a column mapping (--columns)".into()),
            other => return Err(format!("unknown trace format {other:?}; valid formats: {}", Format::NAMES.join(", ")).into()),
        })
    }
}

/// How to read.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Skip malformed records (counted in [`ReadStats`]) instead of failing on the first.
    pub lenient: bool,
    /// Where a reader that reaches the end of its input leaves what it saw.
    pub log: ReadLog,
}

/// The [`ReadStats`] of the last reading of an input that reached its end, shared by the
/// clones of the [`Input`](crate::input::Input) or [`ReadOptions`] that read it — so that a
/// command can report the records a lenient reading skipped, however deep in a pipeline the
/// reading was. Each complete pass over the same input skips the same records, so the last
/// one stands for all (counts are not summed over passes).
#[derive(Clone, Default)]
pub struct ReadLog(std::sync::Arc<std::sync::Mutex<Option<ReadStats>>>);

impl ReadLog {
    pub(crate) fn publish(&self, stats: ReadStats) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(stats);
    }

    /// What the last complete pass saw; `None` before one ended.
    pub fn last(&self) -> Option<ReadStats> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Not the counts: an input's `Debug` is part of the key of its cached replay stream, which
/// must not change because the input was read.
impl std::fmt::Debug for ReadLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadLog")
    }
}

/// Where a piece of a text trace starts in the (decompressed) input.
#[derive(Copy, Clone, Debug, Default)]
pub struct ChunkStart {
    pub lines_before: u64,
    pub bytes_before: u64,
}

/// The longest line a text trace may have (no trace format's line comes near it): a longer one
/// is an error naming where it starts, so that a file with no line ends is not read into
/// memory whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// A line longer than [`MAX_LINE_BYTES`] that starts `offset_bytes` into the (decompressed)
/// input, as the io error a line reader returns.
#[derive(Debug)]
pub(crate) struct LineTooLong {
    pub offset_bytes: u64,
}

impl std::fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a line of more than {} MiB without a line end, from byte {}", MAX_LINE_BYTES >> 20, self.offset_bytes)
    }
}

impl std::error::Error for LineTooLong {}

/// A read error met at line `line_no` of `path`: a line too long, or a decompression or I/O
/// failure.
pub(crate) fn read_error(path: &Path, line_no: u64, e: std::io::Error) -> TraceError {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<LineTooLong>()) {
        Some(long) => TraceError::Parse { path: path.to_path_buf(), location: Location::Line(line_no), field: "line", value: String::new(), reason: long.to_string() },
        None => decompress_error(path, e),
    }
}

/// What a reader saw besides the records it returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReadStats {
    pub records: u64,
    /// Valid entries that are not reads or writes (other SCSI commands), not returned.
    pub non_data: u64,
    /// Malformed records skipped in lenient mode, by the field that was wrong.
    pub skipped: std::collections::BTreeMap<String, u64>,
    /// The first few skipped records, as error messages.
    pub skipped_examples: Vec<String>,
}

impl ReadStats {
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }

    /// Adds what another reading of a part of the same input saw.
    pub(crate) fn add(&mut self, other: ReadStats) {
        self.records += other.records;
        self.non_data += other.non_data;
        for (field, n) in other.skipped {
            *self.skipped.entry(field).or_default() += n;
        }
        for e in other.skipped_examples {
            if self.skipped_examples.len() < 5 {
                self.skipped_examples.push(e);
            }
        }
    }

    fn skip(&mut self, e: &TraceError, field: &str) {
        *self.skipped.entry(field.to_string()).or_default() += 1;
        if self.skipped_examples.len() < 5 {
            self.skipped_examples.push(e.to_string());
        }
    }
}

/// A stream of records with its reading statistics.
pub trait RecordStream: Iterator<Item = Result<Record>> {
    fn stats(&self) -> ReadStats;
}

/// Opens `path` (a plain or gzip/bzip2/zstd-compressed file) as `format`.
pub fn open(path: &Path, format: &Format, options: &ReadOptions) -> Result<Box<dyn RecordStream>> {
    let input = decompressed(path)?;
    Ok(from_reader(input, path, format, options))
}

/// Reads already-opened input as `format`; `path` only names it in errors.
pub fn from_reader(input: Box<dyn BufRead>, path: &Path, format: &Format, options: &ReadOptions) -> Box<dyn RecordStream> {
    match format {
        Format::Vscsi => Box::new(vscsi::VscsiReader::new(input, path.to_path_buf(), options.clone())),
        Format::Delimited(d) => Box::new(TextReader::new(input, path.to_path_buf(), d.clone(), options.clone())),
        named => named_reader(input, path.to_path_buf(), named, options.clone(), lines::CHUNK_BYTES),
    }
}

/// The records of `bytes`, a piece of the text trace `path` in `format` that ends at a line end
/// (or the input's end) and follows `lines_before` lines, handed to `each` in order: what the
/// whole file's reader would return for these lines, with the same line numbers in its errors.
/// For formats whose [lines are independent](Format::lines_are_independent). No iterator
/// stands between the parser and `each` (this is the parallel reader's hot loop); the first
/// error, the reader's or `each`'s, ends it.
pub fn for_each_chunk_record(
    bytes: &[u8],
    start: ChunkStart,
    path: &Path,
    format: &Format,
    options: &ReadOptions,
    stats: &mut ReadStats,
    mut each: impl FnMut(Record) -> Result<()>,
) -> Result<()> {
    #[allow(clippy::too_many_arguments)]
    fn run<Fast: Fn(&mut ParseState, &[u8], usize) -> Quick>(
        stats: &mut ReadStats,
        bytes: &[u8],
        start: ChunkStart,
        mut format: Named<Fast>,
        whole_line: impl Fn(&[u8]) -> Option<(Record, usize)>,
        path: &Path,
        options: &ReadOptions,
        each: &mut impl FnMut(Record) -> Result<()>,
    ) -> Result<()> {
        let (mut at, mut line_no) = (0, start.lines_before);
        while at < bytes.len() {
            let text = &bytes[at..];
            line_no += 1;
            // A plain line whose fields show where it ends: no search for its end first.
            if let Some((r, taken)) = whole_line(text) {
                at += taken;
                stats.records += 1;
                each(r)?;
                continue;
            }
            let len = memchr::memchr(b'\n', text).unwrap_or(text.len());
            if len > MAX_LINE_BYTES {
                let offset_bytes = start.bytes_before + at as u64;
                return Err(read_error(path, line_no, std::io::Error::new(std::io::ErrorKind::InvalidData, LineTooLong { offset_bytes })));
            }
            at += len + 1;
            if let Some(r) = parse_line(&mut format, stats, options, path, line_no, text, len)? {
                each(r)?;
            }
        }
        Ok(())
    }
    debug_assert!(format.lines_are_independent());
    let parse = format.line_parser().expect("text format");
    let no_whole_line = |_: &[u8]| None;
    // One loop per fast parser, so that it is inlined.
    match format {
        Format::Alibaba => run(stats, bytes, start, Named::new(parse, text::alibaba_fast), text::alibaba_line, path, options, &mut each),
        Format::Tencent => run(stats, bytes, start, Named::new(parse, text::tencent_fast), no_whole_line, path, options, &mut each),
        Format::CloudPhysicsCsv => run(stats, bytes, start, Named::new(parse, text::cloudphysics_csv_fast), no_whole_line, path, options, &mut each),
        _ => run(stats, bytes, start, Named::new(parse, text::no_fast_parser), no_whole_line, path, options, &mut each),
    }
}

/// The reader of a named text format, reading `chunk_bytes` at a time.
fn named_reader(input: Box<dyn BufRead>, path: PathBuf, format: &Format, options: ReadOptions, chunk_bytes: usize) -> Box<dyn RecordStream> {
    let parse = format.line_parser().expect("text format");
    // One reader type per fast parser, so that it is inlined into the reading loop.
    match format {
        Format::Alibaba => Box::new(TextReader::with_chunk_bytes(input, path, Named::new(parse, text::alibaba_fast), options, chunk_bytes)),
        Format::Tencent => Box::new(TextReader::with_chunk_bytes(input, path, Named::new(parse, text::tencent_fast), options, chunk_bytes)),
        Format::CloudPhysicsCsv => Box::new(TextReader::with_chunk_bytes(input, path, Named::new(parse, text::cloudphysics_csv_fast), options, chunk_bytes)),
        _ => Box::new(TextReader::with_chunk_bytes(input, path, Named::new(parse, text::no_fast_parser), options, chunk_bytes)),
    }
}

/// Opens a file and undoes its compression, recognised by magic bytes.
pub fn decompressed(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let io = |e| TraceError::Io { context: format!("{}: open", path.display()), error: e };
    let file = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
    decompress_reader(Box::new(file), path)
}

/// Undoes the compression of already-opened input, recognised by magic bytes.
pub fn decompress_reader(mut file: Box<dyn BufRead + Send>, path: &Path) -> Result<Box<dyn BufRead + Send>> {
    let io = |e| TraceError::Io { context: format!("{}: read", path.display()), error: e };
    let magic = file.fill_buf().map_err(io)?;
    let bad = |reason: String| TraceError::Decompress { path: path.to_path_buf(), reason };
    Ok(if magic.starts_with(&[0x1F, 0x8B]) {
        Box::new(BufReader::with_capacity(1 << 20, flate2::bufread::MultiGzDecoder::new(file)))
    } else if magic.starts_with(b"BZh") {
        Box::new(BufReader::with_capacity(1 << 20, bzip2::bufread::MultiBzDecoder::new(file)))
    } else if magic.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        Box::new(BufReader::with_capacity(1 << 20, ZstdFrames::new(file).map_err(|e| bad(format!("zstd: {e}")))?))
    } else {
        Box::new(file)
    })
}

/// A zstd stream of one or more concatenated frames (as `zstd` and `cat a.zst b.zst` write
/// them), decoded by the pure-Rust `ruzstd`: the C library's build was the largest single
/// cost of compiling Zonekit, and traces are parse-bound, not decode-bound.
struct ZstdFrames {
    frame: Option<ruzstd::decoding::StreamingDecoder<Box<dyn BufRead + Send>, ruzstd::decoding::FrameDecoder>>,
}

impl ZstdFrames {
    fn new(source: Box<dyn BufRead + Send>) -> std::result::Result<ZstdFrames, ruzstd::decoding::errors::FrameDecoderError> {
        Ok(ZstdFrames { frame: Some(ruzstd::decoding::StreamingDecoder::new(source)?) })
    }
}

impl std::io::Read for ZstdFrames {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let Some(frame) = self.frame.as_mut() else { return Ok(0) };
            let n = frame.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // This frame is done: another may follow it.
            let mut source = self.frame.take().expect("a frame is open").into_inner();
            if source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.frame = Some(ruzstd::decoding::StreamingDecoder::new(source).map_err(std::io::Error::other)?);
        }
    }
}

/// Guesses a file's format from its first data line (or its extension for binary vscsi).
pub fn detect(path: &Path) -> Result<Format> {
    if path.extension().is_some_and(|e| e == "vscsi") {
        return Ok(Format::Vscsi);
    }
    let mut input = decompressed(path)?;
    let mut head = Vec::new();
    input.by_ref().take(64 << 10).read_to_end(&mut head).map_err(|e| decompress_error(path, e))?;
    if head.len() >= 32 && head[14..16] == [0x00, 0x01] && !head[..32].iter().all(|b| b.is_ascii()) {
        return Ok(Format::Vscsi);
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("");
    let unknown =
        |why: &str| TraceError::Format { path: path.to_path_buf(), reason: format!("cannot tell the trace format ({why}); name it with --format ({})", Format::NAMES.join(", ")) };
    if first.starts_with("version,time,op,size,lbn") {
        return Ok(Format::CloudPhysicsCsv);
    }
    if first.starts_with("Timestamp,Response,IOType") {
        return Ok(Format::Systor);
    }
    // Every data line of the head (the last may be cut short) must fit one format, and the
    // content must rule the others out: a guess read 512× too large is a silent wrong answer.
    let skip_header = first.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
    let mut data: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).skip(skip_header as usize).collect();
    if head.len() == 64 << 10 && data.len() > 1 {
        data.pop();
    }
    let Some(&sample) = data.first() else { return Err(unknown("no data lines")) };
    let num = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let int = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // Each candidate: the first line of the head that does not fit it (`None`: every line fits).
    let misfit = |shape: &dyn Fn(&[&str]) -> bool, split: fn(&str) -> Vec<&str>| data.iter().position(|l| !shape(&split(l)));
    let field_count = commas(sample).len();
    let never = Some(0);
    let candidates: [(Format, Option<usize>); 5] = [
        (Format::Msr, if field_count == 7 { misfit(&|f| f.len() == 7 && matches!(f[3], "Read" | "Write") && int(f[4]) && int(f[5]), commas) } else { never }),
        (Format::Alibaba, if field_count == 5 { misfit(&|f| f.len() == 5 && matches!(f[1], "R" | "W") && int(f[2]) && int(f[3]) && int(f[4]), commas) } else { never }),
        (Format::Umass, if field_count == 5 { misfit(&|f| f.len() == 5 && matches!(f[3], "R" | "W" | "r" | "w") && int(f[1]) && int(f[2]) && num(f[4]), commas) } else { never }),
        (Format::Tencent, if field_count == 5 { misfit(&|f| f.len() == 5 && matches!(f[3], "0" | "1") && f.iter().all(|c| num(c)), commas) } else { never }),
        (Format::DiskSim, if field_count == 1 { misfit(&|f| f.len() == 5 && f.iter().all(|c| int(c)) && matches!(f[4], "0" | "1"), spaces) } else { never }),
    ];
    let Some((found, _)) = candidates.iter().find(|(_, misfit)| misfit.is_none()) else {
        // Name the line that spoils the likeliest candidate (the one that fits longest), so a
        // single malformed line is found rather than the (good) first line quoted.
        let (format, line) = candidates.iter().filter_map(|(f, m)| m.map(|m| (f, m))).max_by_key(|(_, m)| *m).expect("five candidates");
        let quote = |l: &str| l.chars().take(80).collect::<String>();
        return Err(unknown(&match line {
            0 => format!("first data line {:?} fits no format on every line", quote(sample)),
            n => format!("data line {} of the head, {:?}, breaks the {} layout that the {n} lines before it have", n + 1, quote(data[n]), format.name()),
        }));
    };
    let found = found.clone();
    // Sector-based formats give sizes in 512-byte sectors: a head whose every size is a whole
    // multiple of 512 holds byte sizes, which another tool wrote in this layout.
    let size_column = match found {
        Format::Tencent => Some((2, commas as fn(&str) -> Vec<&str>)),
        Format::DiskSim => Some((3, spaces as fn(&str) -> Vec<&str>)),
        _ => None,
    };
    if let Some((col, split)) = size_column {
        let sizes: Vec<u64> = data.iter().filter_map(|l| split(l).get(col).and_then(|v| v.parse().ok())).collect();
        if !sizes.is_empty() && sizes.iter().all(|s| s % 512 == 0) {
            return Err(unknown(&format!(
                "the lines look like {} ({}), but every size is a multiple of 512, as byte sizes are: another tool's layout? give --format {} if the sizes really are sectors, or --format delimited --columns",
                found.name(),
                found.units(),
                found.name()
            )));
        }
    }
    Ok(found)
}

fn commas(line: &str) -> Vec<&str> {
    line.split(',').map(str::trim).collect()
}

fn spaces(line: &str) -> Vec<&str> {
    line.split_ascii_whitespace().collect()
}

pub(crate) fn decompress_error(path: &Path, e: std::io::Error) -> TraceError {
    if matches!(e.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidInput) {
        TraceError::Decompress { path: path.to_path_buf(), reason: format!("truncated or corrupt compressed stream: {e}") }
    } else {
        TraceError::Io { context: format!("{}: read", path.display()), error: e }
    }
}

/// One line in, at most one record out.
pub trait LineFormat {
    fn parse(&mut self, line: &str) -> std::result::Result<Option<Record>, FieldError>;
    /// The same from the line's bytes, for the spellings a format can read without a `&str`;
    /// see [`FastParser`](text::FastParser) for the contract and the arguments. Every line it
    /// leaves [`Quick::Unusual`] goes to [`parse`](Self::parse).
    #[inline]
    fn parse_bytes(&mut self, _text: &[u8], _line_len: usize) -> Quick {
        Quick::Unusual
    }
    /// Valid lines that were not reads or writes.
    fn non_data(&self) -> u64 {
        0
    }
}

/// A named format: its line parser, and its fast parser as a type of its own (a function item),
/// so that each reader is compiled with its fast parser inlined.
struct Named<Fast> {
    parse: LineParser,
    fast: Fast,
    state: ParseState,
}

impl<Fast: Fn(&mut ParseState, &[u8], usize) -> Quick> Named<Fast> {
    fn new(parse: LineParser, fast: Fast) -> Named<Fast> {
        Named { parse, fast, state: ParseState::default() }
    }
}

impl<Fast: Fn(&mut ParseState, &[u8], usize) -> Quick> LineFormat for Named<Fast> {
    fn parse(&mut self, line: &str) -> std::result::Result<Option<Record>, FieldError> {
        (self.parse)(&mut self.state, line)
    }
    #[inline]
    fn parse_bytes(&mut self, text: &[u8], line_len: usize) -> Quick {
        (self.fast)(&mut self.state, text, line_len)
    }
    fn non_data(&self) -> u64 {
        self.state.non_data
    }
}

/// Reads text lines and parses each with a [`LineFormat`]: from bytes where the format can,
/// else as a `&str` (a line that is not UTF-8 ends the stream with an error, as it did when
/// lines were read with `read_line`).
pub struct TextReader<F> {
    input: Box<dyn BufRead>,
    path: PathBuf,
    format: F,
    options: ReadOptions,
    lines: Lines,
    line_no: u64,
    stats: ReadStats,
    done: bool,
}

impl<F: LineFormat> TextReader<F> {
    pub fn new(input: Box<dyn BufRead>, path: PathBuf, format: F, options: ReadOptions) -> TextReader<F> {
        TextReader::with_chunk_bytes(input, path, format, options, lines::CHUNK_BYTES)
    }

    /// Reads the input `chunk_bytes` at a time (tests use tiny chunks to cut lines).
    fn with_chunk_bytes(input: Box<dyn BufRead>, path: PathBuf, format: F, options: ReadOptions, chunk_bytes: usize) -> TextReader<F> {
        TextReader { input, path, format, options, lines: Lines::new(chunk_bytes), line_no: 0, stats: ReadStats::default(), done: false }
    }
}

/// Line `line_no`, the first `len` bytes of `text` (then its `\n` and whatever follows, which
/// the fast parser may read past the line): its record, `None` for a line without one, or the
/// error that ends the stream. What [`TextReader`] and [`for_each_chunk_record`] do with
/// every line.
#[inline(always)]
fn parse_line<F: LineFormat>(format: &mut F, stats: &mut ReadStats, options: &ReadOptions, path: &Path, line_no: u64, text: &[u8], mut len: usize) -> Result<Option<Record>> {
    // A `\r` before the `\n` (CRLF) is not part of the line.
    if len > 0 && text[len - 1] == b'\r' {
        len = text[..len].iter().rposition(|&b| b != b'\r').map_or(0, |i| i + 1);
    }
    debug_assert!(text.get(len).is_none_or(|b| matches!(b, b'\r' | b'\n')));
    match format.parse_bytes(text, len) {
        Quick::Record(r) => {
            stats.records += 1;
            Ok(Some(r))
        }
        Quick::NoRecord => Ok(None),
        Quick::Unusual => unusual_line(format, stats, options, path, line_no, &text[..len]),
    }
}

/// A line the fast parser left to the line parser, after `line_no - 1` others: its record,
/// `None` for a line without one (blank, a comment, another command, or skipped in lenient
/// mode), or the error that ends the stream (not UTF-8, or malformed).
#[inline(never)]
fn unusual_line<F: LineFormat>(format: &mut F, stats: &mut ReadStats, options: &ReadOptions, path: &Path, line_no: u64, line: &[u8]) -> Result<Option<Record>> {
    let parsed = match std::str::from_utf8(line) {
        Ok(line) if line.trim().is_empty() || line.starts_with('#') => return Ok(None),
        Ok(line) => format.parse(line),
        // A malformed line like any other: named with its line (it used to be reported as a
        // corrupt compressed stream, and a lenient reading stopped at it).
        Err(e) => Err(FieldError {
            field: "line",
            value: String::from_utf8_lossy(&line[..line.len().min(40)]).into_owned(),
            reason: format!("not UTF-8 text (byte {} of the line)", e.valid_up_to()),
        }),
    };
    match parsed {
        Ok(Some(r)) => {
            stats.records += 1;
            Ok(Some(r))
        }
        Ok(None) => Ok(None),
        Err(fe) => {
            let e = TraceError::Parse { path: path.to_path_buf(), location: Location::Line(line_no), field: fe.field, value: fe.value, reason: fe.reason };
            if !options.lenient {
                return Err(e);
            }
            stats.skip(&e, fe.field);
            Ok(None)
        }
    }
}

impl<F: LineFormat> Iterator for TextReader<F> {
    type Item = Result<Record>;

    #[inline]
    fn next(&mut self) -> Option<Result<Record>> {
        while !self.done {
            let line = match self.lines.next_line(&mut self.input) {
                None => {
                    self.done = true;
                    self.options.log.publish(self.stats());
                    return None;
                }
                Some(Ok(line)) => line,
                Some(Err(e)) => {
                    self.done = true;
                    return Some(Err(read_error(&self.path, self.line_no + 1, e)));
                }
            };
            self.line_no += 1;
            match parse_line(&mut self.format, &mut self.stats, &self.options, &self.path, self.line_no, line.text, line.len) {
                Ok(Some(r)) => return Some(Ok(r)),
                Ok(None) => continue,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

impl<F: LineFormat> RecordStream for TextReader<F> {
    fn stats(&self) -> ReadStats {
        ReadStats { non_data: self.format.non_data(), ..self.stats.clone() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Op;
    use proptest::prelude::*;

    /// The reader as it was before lines were read in chunks: `read_until` a line end, then
    /// the format's line parser (a line that is not UTF-8 is a malformed `line`). The chunked
    /// reader must give exactly what this gives.
    fn line_at_a_time(bytes: &[u8], format: &Format, lenient: bool) -> (Vec<Result<Record, String>>, ReadStats) {
        let path = Path::new("t.csv");
        let mut input = std::io::Cursor::new(bytes);
        let parse = format.line_parser().expect("text format");
        let mut state = ParseState::default();
        let mut stats = ReadStats::default();
        let (mut out, mut raw, mut line_no) = (Vec::new(), Vec::new(), 0);
        loop {
            raw.clear();
            match input.read_until(b'\n', &mut raw) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    out.push(Err(decompress_error(path, e).to_string()));
                    break;
                }
            }
            line_no += 1;
            let parsed = match std::str::from_utf8(&raw) {
                Ok(line) => {
                    let l = line.trim_end_matches(['\n', '\r']);
                    if l.trim().is_empty() || l.starts_with('#') {
                        continue;
                    }
                    parse(&mut state, l)
                }
                Err(_) => {
                    let l = raw.strip_suffix(b"\n").unwrap_or(&raw);
                    let l = &l[..l.iter().rposition(|&b| b != b'\r').map_or(0, |i| i + 1)];
                    let valid = std::str::from_utf8(l).unwrap_err().valid_up_to();
                    Err(FieldError {
                        field: "line",
                        value: String::from_utf8_lossy(&l[..l.len().min(40)]).into_owned(),
                        reason: format!("not UTF-8 text (byte {valid} of the line)"),
                    })
                }
            };
            match parsed {
                Ok(Some(r)) => {
                    stats.records += 1;
                    out.push(Ok(r));
                }
                Ok(None) => {}
                Err(fe) => {
                    let e = TraceError::Parse { path: path.to_path_buf(), location: Location::Line(line_no), field: fe.field, value: fe.value, reason: fe.reason };
                    if lenient {
                        stats.skip(&e, fe.field);
                        continue;
                    }
                    out.push(Err(e.to_string()));
                    break;
                }
            }
        }
        stats.non_data = state.non_data;
        (out, stats)
    }

    fn chunked(bytes: &[u8], format: &Format, lenient: bool, chunk_bytes: usize) -> (Vec<Result<Record, String>>, ReadStats) {
        let input = Box::new(std::io::Cursor::new(bytes.to_vec()));
        let mut reader = named_reader(input, PathBuf::from("t.csv"), format, ReadOptions { lenient, ..ReadOptions::default() }, chunk_bytes);
        let out = reader.by_ref().map(|r| r.map_err(|e| e.to_string())).collect();
        assert!(reader.next().is_none(), "the stream stays ended");
        (out, reader.stats())
    }

    fn assert_same(bytes: &[u8], format: &Format, chunk_sizes: std::ops::Range<usize>) {
        for lenient in [false, true] {
            let expected = line_at_a_time(bytes, format, lenient);
            for chunk_bytes in chunk_sizes.clone().chain([lines::CHUNK_BYTES]) {
                assert_eq!(chunked(bytes, format, lenient, chunk_bytes), expected, "{} lenient {lenient} chunk {chunk_bytes}: {:?}", format.name(), String::from_utf8_lossy(bytes));
            }
        }
    }

    const ALIBABA: &str = "0,W,15197679616,4096,0\r\n\
        12,R,4096,8192,1234567\n\
        # a comment, then a blank line and a CRLF one\n\
        \n\
        \t \r\n\
        3,w,0,512,99\r\n\
        4 , r , 8 , 16 , 32\n\
        5,Read,0,512,1\n\
        6,write,0,512,2,extra,fields\n\
        7,W,0,512,3,\n\
        +8,W,+0,512,4\n\
        4294967295,W,18446744073709551615,00000000000000000000512,5\r\n\
        9,X,0,512,6\r\n\
        10,W,0,512\n\
        11,W,-1,512,7\n\
        4294967296,W,0,512,8\n\
        12,W,18446744073709551616,512,9\n\
        13,W,0,512,\n\
        14,W,1,2,3";

    const TENCENT: &str = "1538323200,105352008,16,1,1063\r\n\
        1538323200.5,8,1,0,7\n\
        1538323201.1234567,8,1,0,7\n\
        1538323201.,8,1,0,7\n\
        .25,8,1,0,7\n\
        1.5e3,8,1,0,7\n\
        # comment\r\n\
        \r\n\
        1538323202, 8 ,1 , 1 ,7 \n\
        1538323203,9999999999999999,1,1,7\n\
        1538323203,99999999999999999,1,1,7\n\
        1538323203,36028797018963968,1,1,7\n\
        12345678901234,8,1,1,7\n\
        1538323204,8,1,2,7\r\n\
        1538323205,8,1,1\n\
        1538323206,8,1,1,4294967296\n\
        1538323207,8,1,1,7,more";

    /// Lines cut anywhere by chunks of every small size read as they did line by line: the same
    /// records, the same first error (message, field and line number) and the same statistics.
    #[test]
    fn chunked_lines_read_as_line_by_line() {
        for (format, text) in [(Format::Alibaba, ALIBABA), (Format::Tencent, TENCENT)] {
            // Every prefix ending in a malformed line shows that line's error (strict mode).
            let lines: Vec<&str> = text.split_inclusive('\n').collect();
            for n in 1..=lines.len() {
                assert_same(lines[..n].concat().as_bytes(), &format, 1..40);
            }
            // Without the malformed lines, every record comes through.
            let (records, stats) = chunked(text.as_bytes(), &format, true, 7);
            assert!(records.iter().all(Result::is_ok) && stats.records >= 8 && stats.skipped_total() >= 4, "{records:?} {stats:?}");
        }
    }

    #[test]
    fn malformed_lines_name_their_line_across_chunks() {
        let text = "1,W,0,4096,5\r\n2,W,8192,4096,6\r\n3,X,0,4096,7\r\n4,W,0,4096,8\r\n";
        for chunk_bytes in 1..20 {
            let (out, _) = chunked(text.as_bytes(), &Format::Alibaba, false, chunk_bytes);
            assert_eq!(out.len(), 3);
            assert_eq!(out[2], Err("t.csv:line 3: opcode \"X\": expected R or W".to_string()), "chunk {chunk_bytes}");
        }
        let text = "1538323200,1,16,1,1063\r\n\r\n1538323200,1,16,3,1063\r\n";
        for chunk_bytes in 1..20 {
            let (out, _) = chunked(text.as_bytes(), &Format::Tencent, false, chunk_bytes);
            assert_eq!(out[0], Ok(Record { time_us: 1_538_323_200_000_000, volume: 1063, offset_bytes: 512, len_bytes: 8192, op: Op::Write }));
            assert_eq!(out[1], Err("t.csv:line 3: IOType \"3\": expected 0 (read) or 1 (write)".to_string()), "chunk {chunk_bytes}");
        }
    }

    #[test]
    fn a_line_that_is_not_utf8_is_a_malformed_line_named_with_its_number_and_skipped_when_lenient() {
        for (text, line) in [(&b"1,W,0,512,1\n# caf\xe9\n2,W,0,512,2\n"[..], 2), (b"1,W,0,512,1\n2,W,0,512,2,\xff\n3,W,0,512,3\n", 2), (b"1,W,0,512,1\n\xe9", 2)] {
            assert_same(text, &Format::Alibaba, 1..20);
            let (out, _) = chunked(text, &Format::Alibaba, false, 3);
            let last = out.last().unwrap().clone().unwrap_err();
            assert!(last.starts_with(&format!("t.csv:line {line}: line ")) && last.contains("not UTF-8"), "{last}");
            let (out, stats) = chunked(text, &Format::Alibaba, true, 3);
            assert!(out.iter().all(|r| r.is_ok()), "{out:?}");
            assert_eq!(stats.skipped.get("line"), Some(&1));
        }
    }

    #[test]
    fn a_line_longer_than_the_limit_is_refused_naming_where_it_starts() {
        let mut text = b"1,W,0,512,1\n".to_vec();
        text.extend(std::iter::repeat_n(b'7', MAX_LINE_BYTES + 10));
        for chunk_bytes in [1000, lines::CHUNK_BYTES] {
            let (out, _) = chunked(&text, &Format::Alibaba, true, chunk_bytes);
            assert_eq!(out.len(), 2);
            let e = out[1].clone().unwrap_err();
            assert!(e.starts_with("t.csv:line 2: line") && e.contains("from byte 12"), "{e}");
        }
    }

    #[test]
    fn cloudphysics_reads_as_line_by_line() {
        let text = "version,time,op,size,lbn\n1,5633898,2a,512,42932745\n1,5633898,12,36,0\n1,5633899,28,4096,8\r\n1,5633899,2A,4096,8\n1,x,35,y,z\n1,5633900,+28,512,1\n1,5633900,zz,512,1\n";
        assert_same(text.as_bytes(), &Format::CloudPhysicsCsv, 1..30);
        let (out, stats) = chunked(text.as_bytes(), &Format::CloudPhysicsCsv, true, 5);
        assert_eq!((out.len(), stats.non_data, stats.skipped_total()), (4, 2, 1));
    }

    /// A field as a trace might spell it, plainly or not.
    fn field() -> impl Strategy<Value = String> {
        prop_oneof![
            4 => "[0-9]{1,6}",
            1 => "[0-9]{0,22}",
            1 => "[0-9]{1,15}\\.[0-9]{0,9}",
            2 => prop::sample::select(vec!["R", "W", "r", "w", "Read", "write", "0", "1", "2", "2a", "28", "8A", "ff", "x"]).prop_map(String::from),
            1 => "[ \t+\\-.eE0-9a-fA-FRW#\u{a0}é]{0,6}",
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        (prop::collection::vec(field(), 0..8), prop::sample::select(vec!["\n", "\r\n", "\r\r\n"])).prop_map(|(fields, end)| fields.join(",") + end)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

        /// Any lines, read in chunks of any size, give what the line-at-a-time reader gave.
        #[test]
        fn any_lines_read_as_line_by_line(lines in prop::collection::vec(line(), 0..12), format_index in 0usize..7, chunk_bytes in 1usize..64, cut in any::<bool>()) {
            let formats = [Format::Alibaba, Format::Tencent, Format::CloudPhysicsCsv, Format::Msr, Format::Umass, Format::Systor, Format::DiskSim];
            let mut text = lines.concat();
            if cut {
                text.pop();
            }
            for lenient in [false, true] {
                let format = &formats[format_index];
                prop_assert_eq!(chunked(text.as_bytes(), format, lenient, chunk_bytes), line_at_a_time(text.as_bytes(), format, lenient), "{:?}", text);
            }
        }

        /// Any lines of a format whose lines are independent, cut at line ends into pieces
        /// read on their own, give the line-at-a-time reader's records and first error, with
        /// its line number.
        #[test]
        fn pieces_cut_at_line_ends_read_as_the_whole(lines in prop::collection::vec(line(), 0..12), format_index in 0usize..6, cuts in prop::collection::vec(any::<bool>(), 12), unterminated in any::<bool>()) {
            let formats = [Format::Alibaba, Format::Tencent, Format::CloudPhysicsCsv, Format::Umass, Format::Systor, Format::DiskSim];
            let format = &formats[format_index];
            prop_assert!(format.lines_are_independent());
            let mut text = lines.concat();
            if unterminated {
                text.pop();
            }
            let mut pieces = vec![String::new()];
            for (line, cut) in text.split_inclusive('\n').zip(cuts.iter().cycle()) {
                pieces.last_mut().expect("a piece").push_str(line);
                if *cut {
                    pieces.push(String::new());
                }
            }
            for lenient in [false, true] {
                let mut got: Vec<Result<Record, String>> = Vec::new();
                let mut lines_before = 0;
                for piece in &pieces {
                    let options = ReadOptions { lenient, ..ReadOptions::default() };
                    if let Err(e) = for_each_chunk_record(piece.as_bytes(), ChunkStart { lines_before, bytes_before: 0 }, Path::new("t.csv"), format, &options, &mut ReadStats::default(), |r| {
                        got.push(Ok(r));
                        Ok(())
                    }) {
                        got.push(Err(e.to_string()));
                        break;
                    }
                    lines_before += piece.matches('\n').count() as u64;
                }
                prop_assert_eq!(got, line_at_a_time(text.as_bytes(), format, lenient).0, "{:?} in {:?}", text, pieces);
            }
        }
    }
}

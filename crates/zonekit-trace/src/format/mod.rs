//! Trace readers. [`open`] reads any supported format from a path, decompressing gzip, bzip2
//! and zstd streams, and yields [`Record`]s; errors name the file, the line (or byte offset)
//! and the field. In lenient mode bad records are skipped and counted ([`ReadStats`]).

pub mod delimited;
pub mod text;
pub mod vscsi;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use delimited::Delimited;
use text::{LineParser, ParseState};

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
        named => {
            let f = Named { parse: named.line_parser().expect("text format"), state: ParseState::default() };
            Box::new(TextReader::new(input, path.to_path_buf(), f, options.clone()))
        }
    }
}

/// Opens a file and undoes its compression, recognised by magic bytes.
pub fn decompressed(path: &Path) -> Result<Box<dyn BufRead>> {
    let io = |e| TraceError::Io { context: format!("{}: open", path.display()), error: e };
    let file = BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
    decompress_reader(Box::new(file), path)
}

/// Undoes the compression of already-opened input, recognised by magic bytes.
pub fn decompress_reader(mut file: Box<dyn BufRead>, path: &Path) -> Result<Box<dyn BufRead>> {
    let io = |e| TraceError::Io { context: format!("{}: read", path.display()), error: e };
    let magic = file.fill_buf().map_err(io)?;
    let bad = |reason: String| TraceError::Decompress { path: path.to_path_buf(), reason };
    Ok(if magic.starts_with(&[0x1F, 0x8B]) {
        Box::new(BufReader::with_capacity(1 << 20, flate2::bufread::MultiGzDecoder::new(file)))
    } else if magic.starts_with(b"BZh") {
        Box::new(BufReader::with_capacity(1 << 20, bzip2::bufread::MultiBzDecoder::new(file)))
    } else if magic.starts_with(&[0x28, 0xB5, 0x2F, 0xFD]) {
        Box::new(BufReader::with_capacity(1 << 20, zstd::stream::read::Decoder::with_buffer(file).map_err(|e| bad(format!("zstd: {e}")))?))
    } else {
        Box::new(file)
    })
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
    let all = |shape: &dyn Fn(&[&str]) -> bool, split: fn(&str) -> Vec<&str>| data.iter().all(|l| shape(&split(l)));
    let field_count = commas(sample).len();
    let candidates: [(Format, bool); 5] = [
        (Format::Msr, field_count == 7 && all(&|f| f.len() == 7 && matches!(f[3], "Read" | "Write") && int(f[4]) && int(f[5]), commas)),
        (Format::Alibaba, field_count == 5 && all(&|f| f.len() == 5 && matches!(f[1], "R" | "W") && int(f[2]) && int(f[3]) && int(f[4]), commas)),
        (Format::Umass, field_count == 5 && all(&|f| f.len() == 5 && matches!(f[3], "R" | "W" | "r" | "w") && int(f[1]) && int(f[2]) && num(f[4]), commas)),
        (Format::Tencent, field_count == 5 && all(&|f| f.len() == 5 && matches!(f[3], "0" | "1") && f.iter().all(|c| num(c)), commas)),
        (Format::DiskSim, field_count == 1 && all(&|f| f.len() == 5 && f.iter().all(|c| int(c)) && matches!(f[4], "0" | "1"), spaces)),
    ];
    let Some((found, _)) = candidates.into_iter().find(|(_, fits)| *fits) else {
        return Err(unknown(&format!("first data line {:?} fits no format on every line", sample.chars().take(80).collect::<String>())));
    };
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

fn decompress_error(path: &Path, e: std::io::Error) -> TraceError {
    if matches!(e.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidInput) {
        TraceError::Decompress { path: path.to_path_buf(), reason: format!("truncated or corrupt compressed stream: {e}") }
    } else {
        TraceError::Io { context: format!("{}: read", path.display()), error: e }
    }
}

/// One line in, at most one record out.
pub trait LineFormat {
    fn parse(&mut self, line: &str) -> std::result::Result<Option<Record>, FieldError>;
    /// Valid lines that were not reads or writes.
    fn non_data(&self) -> u64 {
        0
    }
}

struct Named {
    parse: LineParser,
    state: ParseState,
}

impl LineFormat for Named {
    fn parse(&mut self, line: &str) -> std::result::Result<Option<Record>, FieldError> {
        (self.parse)(&mut self.state, line)
    }
    fn non_data(&self) -> u64 {
        self.state.non_data
    }
}

/// Reads text lines and parses each with a [`LineFormat`].
pub struct TextReader<F> {
    input: Box<dyn BufRead>,
    path: PathBuf,
    format: F,
    options: ReadOptions,
    line: String,
    line_no: u64,
    stats: ReadStats,
    done: bool,
}

impl<F: LineFormat> TextReader<F> {
    pub fn new(input: Box<dyn BufRead>, path: PathBuf, format: F, options: ReadOptions) -> TextReader<F> {
        TextReader { input, path, format, options, line: String::new(), line_no: 0, stats: ReadStats::default(), done: false }
    }
}

impl<F: LineFormat> Iterator for TextReader<F> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        while !self.done {
            self.line.clear();
            match self.input.read_line(&mut self.line) {
                Ok(0) => {
                    self.done = true;
                    return None;
                }
                Ok(_) => {}
                Err(e) => {
                    self.done = true;
                    return Some(Err(decompress_error(&self.path, e)));
                }
            }
            self.line_no += 1;
            let line = self.line.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            match self.format.parse(line) {
                Ok(Some(r)) => {
                    self.stats.records += 1;
                    return Some(Ok(r));
                }
                Ok(None) => continue,
                Err(fe) => {
                    let e = TraceError::Parse { path: self.path.clone(), location: Location::Line(self.line_no), field: fe.field, value: fe.value, reason: fe.reason };
                    if self.options.lenient {
                        self.stats.skip(&e, fe.field);
                        continue;
                    }
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

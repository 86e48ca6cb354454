//! Line parsers of the text formats. Each takes one line and returns a record, `None` for a
//! header or a non-data command, or the field that was wrong.
//!
//! The most common formats also have a [`FastParser`] that reads the plain spelling of a line
//! (ASCII digits and commas, nothing around them) straight from its bytes and leaves anything
//! else to the line parser, which alone decides what is wrong and says so.

use std::collections::HashMap;

use crate::record::{parse_scaled, parse_u64, FieldError, Op, Record};

/// State a parser may keep across lines (volume names to ids).
#[derive(Default)]
pub struct ParseState {
    volumes: HashMap<String, u32>,
    /// Lines that were valid but not reads or writes (e.g. other SCSI commands).
    pub non_data: u64,
}

impl ParseState {
    fn intern(&mut self, name: &str) -> u32 {
        let next = self.volumes.len() as u32;
        *self.volumes.entry(name.to_string()).or_insert(next)
    }
}

pub type LineParser = fn(&mut ParseState, &str) -> Result<Option<Record>, FieldError>;

/// What a [`FastParser`] made of a line.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Quick {
    Record(Record),
    /// A valid line that is not a read or a write (counted in [`ParseState::non_data`]).
    NoRecord,
    /// Not the plain spelling: the line parser must read it.
    Unusual,
}

/// Parses the plain spelling of a line from its bytes: the line is `text[..line_len]`, and if
/// `text` goes on, its next byte is a `\r` or `\n` (the parser may read past the line end, as
/// its 8-byte loads do, but a field always stops there). Contract: whatever it does not answer
/// [`Quick::Unusual`] is exactly what the format's [`LineParser`] returns for the same line (with
/// the same change to the state), and a line it answers for is ASCII, so the caller need not
/// check its UTF-8.
pub type FastParser = fn(&mut ParseState, text: &[u8], line_len: usize) -> Quick;

/// The [`FastParser`] of formats that have none.
pub fn no_fast_parser(_: &mut ParseState, _: &[u8], _: usize) -> Quick {
    Quick::Unusual
}

fn fields<const N: usize>(line: &str, sep: char) -> Result<[&str; N], FieldError> {
    let mut out = [""; N];
    let mut it = line.split(sep);
    for slot in out.iter_mut() {
        *slot = it.next().ok_or_else(|| FieldError::new("line", line, format!("expected {N} fields separated by {sep:?}")))?;
    }
    Ok(out)
}

fn ws_fields<const N: usize>(line: &str) -> Result<[&str; N], FieldError> {
    let mut out = [""; N];
    let mut it = line.split_ascii_whitespace();
    for slot in out.iter_mut() {
        *slot = it.next().ok_or_else(|| FieldError::new("line", line, format!("expected {N} whitespace-separated fields")))?;
    }
    Ok(out)
}

fn u32_field(field: &'static str, s: &str) -> Result<u32, FieldError> {
    s.trim().parse().map_err(|_| FieldError::new(field, s, "not a 32-bit unsigned integer"))
}

fn rw(field: &'static str, s: &str) -> Result<Op, FieldError> {
    match s.trim() {
        "R" | "r" | "Read" | "read" => Ok(Op::Read),
        "W" | "w" | "Write" | "write" => Ok(Op::Write),
        _ => Err(FieldError::new(field, s, "expected R or W")),
    }
}

fn sectors(field: &'static str, s: &str) -> Result<u64, FieldError> {
    parse_u64(field, s)?.checked_mul(512).ok_or_else(|| FieldError::new(field, s, "too large"))
}

fn is_header(line: &str) -> bool {
    line.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
}

/// Alibaba cloud block storage 2020: `device_id,opcode,offset,length,timestamp(µs)`.
pub fn alibaba(_: &mut ParseState, line: &str) -> Result<Option<Record>, FieldError> {
    let [dev, op, off, len, ts] = fields::<5>(line, ',')?;
    Ok(Some(Record {
        volume: u32_field("device_id", dev)?,
        op: rw("opcode", op)?,
        offset_bytes: parse_u64("offset", off)?,
        len_bytes: parse_u64("length", len)?,
        time_us: parse_u64("timestamp", ts)?,
    }))
}

/// Tencent CBS: `Timestamp(s),Offset(sectors),Size(sectors),IOType(0 read/1 write),VolumeID`.
pub fn tencent(_: &mut ParseState, line: &str) -> Result<Option<Record>, FieldError> {
    let [ts, off, size, op, vol] = fields::<5>(line, ',')?;
    let op = match op.trim() {
        "0" => Op::Read,
        "1" => Op::Write,
        _ => return Err(FieldError::new("IOType", op, "expected 0 (read) or 1 (write)")),
    };
    Ok(Some(Record {
        time_us: parse_scaled("Timestamp", ts, 6)?,
        offset_bytes: sectors("Offset", off)?,
        len_bytes: sectors("Size", size)?,
        op,
        volume: u32_field("VolumeID", vol)?,
    }))
}

/// Seconds between 1601-01-01 (Windows FILETIME epoch) and 1970-01-01.
pub(crate) const FILETIME_UNIX_OFFSET_S: u64 = 11_644_473_600;

/// MSR Cambridge: `Timestamp(FILETIME),Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
pub fn msr(state: &mut ParseState, line: &str) -> Result<Option<Record>, FieldError> {
    let [ts, host, disk, op, off, size, _resp] = fields::<7>(line, ',')?;
    let ticks = parse_u64("Timestamp", ts)?;
    let time_us = (ticks / 10).checked_sub(FILETIME_UNIX_OFFSET_S * 1_000_000).ok_or_else(|| FieldError::new("Timestamp", ts, "before 1970 as a Windows FILETIME"))?;
    let _: u32 = u32_field("DiskNumber", disk)?;
    Ok(Some(Record {
        time_us,
        volume: state.intern(&format!("{}:{}", host.trim(), disk.trim())),
        op: rw("Type", op)?,
        offset_bytes: parse_u64("Offset", off)?,
        len_bytes: parse_u64("Size", size)?,
    }))
}

/// UMass SPC: `ASU,LBA(sectors),Size(bytes),Opcode(R/r/W/w),Timestamp(s)`.
pub fn umass(_: &mut ParseState, line: &str) -> Result<Option<Record>, FieldError> {
    let [asu, lba, size, op, ts] = fields::<5>(line, ',')?;
    Ok(Some(Record {
        volume: u32_field("ASU", asu)?,
        offset_bytes: sectors("LBA", lba)?,
        len_bytes: parse_u64("Size", size)?,
        op: rw("Opcode", op)?,
        time_us: parse_scaled("Timestamp", ts, 6)?,
    }))
}

/// SYSTOR'17: header `Timestamp,Response,IOType,LUN,Offset,Size`; unix s with decimals.
pub fn systor(_: &mut ParseState, line: &str) -> Result<Option<Record>, FieldError> {
    if is_header(line) {
        return Ok(None);
    }
    let [ts, _resp, op, lun, off, size] = fields::<6>(line, ',')?;
    Ok(Some(Record {
        time_us: parse_scaled("Timestamp", ts, 6)?,
        op: rw("IOType", op)?,
        volume: u32_field("LUN", lun)?,
        offset_bytes: parse_u64("Offset", off)?,
        len_bytes: parse_u64("Size", size)?,
    }))
}

/// SCSI opcode → read/write; other commands are not data transfers.
pub fn scsi_op(opcode: u8) -> Option<Op> {
    match opcode {
        0x08 | 0x28 | 0xA8 | 0x88 => Some(Op::Read),
        0x0A | 0x2A | 0xAA | 0x8A => Some(Op::Write),
        _ => None,
    }
}

/// CloudPhysics CSV: header `version,time,op,size,lbn`; time whole seconds, op SCSI opcode in
/// hex, size bytes, lbn 512-byte sectors.
pub fn cloudphysics_csv(state: &mut ParseState, line: &str) -> Result<Option<Record>, FieldError> {
    if is_header(line) {
        return Ok(None);
    }
    let [_version, ts, op, size, lbn] = fields::<5>(line, ',')?;
    let opcode = u8::from_str_radix(op.trim(), 16).map_err(|_| FieldError::new("op", op, "not a hex SCSI opcode"))?;
    let Some(op) = scsi_op(opcode) else {
        state.non_data += 1;
        return Ok(None);
    };
    Ok(Some(Record { time_us: parse_scaled("time", ts, 6)?, op, len_bytes: parse_u64("size", size)?, offset_bytes: sectors("lbn", lbn)?, volume: 0 }))
}

/// DiskSim ASCII: `time_ns devno lba(sectors) size(sectors) flag(1 read, 0 write)`.
pub fn disksim(_: &mut ParseState, line: &str) -> Result<Option<Record>, FieldError> {
    let [ts, dev, lba, size, flag] = ws_fields::<5>(line)?;
    let flag = parse_u64("flag", flag)?;
    Ok(Some(Record {
        time_us: parse_scaled("time", ts, 0)? / 1000,
        volume: u32_field("devno", dev)?,
        offset_bytes: sectors("lba", lba)?,
        len_bytes: sectors("size", size)?,
        op: if flag & 1 == 1 { Op::Read } else { Op::Write },
    }))
}

/// A line read left to right by the fast parsers. Each method reads one field in its plain
/// spelling and clears `ok` if it was spelt otherwise; parsing goes on regardless (with
/// meaningless values, computed with wrapping arithmetic), so that a line costs no branch per
/// field and the record can be built in registers. Digit counts are capped so that no value can
/// overflow: a longer field goes to the line parser, which says whether it is too large.
struct Plain<'a> {
    /// The line, then possibly the bytes after it (see [`FastParser`]).
    text: &'a [u8],
    line_len: usize,
    /// Where the next field starts.
    at: usize,
    /// Every field so far was plain.
    ok: bool,
}

/// Digits that always fit: 10^9 - 1 < 2^32, 10^19 - 1 < 2^64.
const U32_DIGITS_MAX: usize = 9;
const U64_DIGITS_MAX: usize = 19;
/// A sector count of 16 digits is below 10^16, and 10^16 * 512 < 2^64.
const SECTOR_DIGITS_MAX: usize = 16;
/// Whole seconds of 13 digits scaled to µs stay below 10^19 < 2^64.
const SECONDS_DIGITS_MAX: usize = 13;
/// Decimals past the sixth are truncated; more than 14 are left to the line parser.
const DECIMALS_MAX: usize = 14;
const _: () = assert!((10u64.pow(SECTOR_DIGITS_MAX as u32)).checked_mul(512).is_some());
const _: () = assert!((10u64.pow(SECONDS_DIGITS_MAX as u32)).checked_mul(1_000_000).is_some());
const _: () = assert!(DECIMALS_MAX - 6 < POW10.len() && DECIMALS_MAX <= U64_DIGITS_MAX);

/// 10^n for the digit counts of one SWAR step.
const POW10: [u64; 9] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000];
const ONES: u64 = 0x0101_0101_0101_0101;

/// The 8 bytes at `at` as a little-endian word, zero past the end of `bytes` (zero is not a
/// digit, so a run of digits stops there).
#[inline(always)]
fn load8(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at.saturating_add(8)) {
        Some(word) => u64::from_le_bytes(word.try_into().expect("8 bytes")),
        None => {
            let mut word = [0u8; 8];
            let tail = bytes.get(at..).unwrap_or_default();
            word[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(word)
        }
    }
}

/// The value of 8 digits, one per byte (0..=9), the most significant in the lowest byte.
#[inline(always)]
fn swar8(digits: u64) -> u64 {
    let pairs = digits.wrapping_mul(10).wrapping_add(digits >> 8);
    let low = (pairs & 0x0000_00FF_0000_00FF).wrapping_mul(100 + (1_000_000 << 32));
    let high = ((pairs >> 16) & 0x0000_00FF_0000_00FF).wrapping_mul(1 + (10_000 << 32));
    low.wrapping_add(high) >> 32
}

impl<'a> Plain<'a> {
    #[inline(always)]
    fn new(text: &'a [u8], line_len: usize) -> Plain<'a> {
        debug_assert!(line_len <= text.len());
        Plain { text, line_len, at: 0, ok: true }
    }

    /// The byte at `at`, or 0 past the end.
    #[inline(always)]
    fn byte(&self, at: usize) -> u8 {
        self.text.get(at).copied().unwrap_or(0)
    }

    /// A run of digits (possibly none): its value and length. Read 8 bytes at a time, with no
    /// branch on each digit: the field ends are where byte-wise loops mispredict. Stops past
    /// [`U64_DIGITS_MAX`] (the value is then meaningless: the callers refuse such runs).
    #[inline(always)]
    fn run(&mut self) -> (u64, usize) {
        let mut value = 0u64;
        let mut n = 0;
        loop {
            let digits = load8(self.text, self.at + n) ^ (0x30 * ONES);
            // A byte is a digit iff it is below 10 now: bit 7 clear, and adding 0x76 to its
            // low 7 bits does not reach bit 7 (no carry crosses into the next byte).
            let count = ((((digits & (0x7F * ONES)) + 0x76 * ONES) | digits) & (0x80 * ONES)).trailing_zeros() as usize / 8;
            // Shifted so that the digits end in the top byte (the bytes below become leading zeros).
            let aligned = digits.checked_shl(64 - 8 * count as u32).unwrap_or(0);
            value = value.wrapping_mul(POW10[count]).wrapping_add(swar8(aligned));
            n += count;
            if count < 8 || n > U64_DIGITS_MAX {
                break;
            }
        }
        self.at += n;
        (value, n)
    }

    /// 1 to `digits_max` decimal digits.
    #[inline(always)]
    fn uint(&mut self, digits_max: usize) -> u64 {
        let (value, n) = self.run();
        self.ok &= n > 0 && n <= digits_max;
        value
    }

    #[inline(always)]
    fn u32(&mut self) -> u32 {
        self.uint(U32_DIGITS_MAX) as u32
    }

    #[inline(always)]
    fn u64(&mut self) -> u64 {
        self.uint(U64_DIGITS_MAX)
    }

    /// A count of 512-byte sectors, in bytes.
    #[inline(always)]
    fn sectors(&mut self) -> u64 {
        self.uint(SECTOR_DIGITS_MAX).wrapping_mul(512)
    }

    /// Seconds as `123`, `123.` or `123.456789…`, in µs (digits past the sixth decimal are
    /// truncated, as [`parse_scaled`] does).
    #[inline(always)]
    fn seconds_us(&mut self) -> u64 {
        let seconds = self.uint(SECONDS_DIGITS_MAX);
        let mut micros = 0;
        if self.byte(self.at) == b'.' {
            self.at += 1;
            let (fraction, n) = self.run();
            self.ok &= n <= DECIMALS_MAX;
            micros = if n <= 6 { fraction.wrapping_mul(POW10[6 - n]) } else { fraction / POW10[(n - 6).min(POW10.len() - 1)] };
        }
        seconds.wrapping_mul(1_000_000).wrapping_add(micros)
    }

    /// `R`, `r`, `W` or `w`.
    #[inline(always)]
    fn rw(&mut self) -> Op {
        let b = self.byte(self.at);
        self.at += 1;
        self.ok &= matches!(b, b'R' | b'r' | b'W' | b'w');
        if b | 0x20 == b'r' {
            Op::Read
        } else {
            Op::Write
        }
    }

    /// `0` (read) or `1` (write).
    #[inline(always)]
    fn zero_one(&mut self) -> Op {
        let b = self.byte(self.at);
        self.at += 1;
        self.ok &= matches!(b, b'0' | b'1');
        if b == b'0' {
            Op::Read
        } else {
            Op::Write
        }
    }

    /// One or two hex digits.
    #[inline(always)]
    fn hex_u8(&mut self) -> u8 {
        let hex = |b: u8| (b as char).to_digit(16);
        let (first, second, third) = (hex(self.byte(self.at)), hex(self.byte(self.at + 1)), hex(self.byte(self.at + 2)));
        match (first, second) {
            (Some(high), Some(low)) => {
                self.ok &= third.is_none();
                self.at += 2;
                (high * 16 + low) as u8
            }
            (Some(digit), None) => {
                self.at += 1;
                digit as u8
            }
            (None, _) => {
                self.ok = false;
                0
            }
        }
    }

    #[inline(always)]
    fn comma(&mut self) {
        self.ok &= self.byte(self.at) == b',';
        self.at += 1;
    }

    /// The end of the line, then `record` if every field was plain. (A line with more fields
    /// than the format's is left to the line parser, which ignores them: that keeps every line a
    /// fast parser accepts ASCII.)
    #[inline(always)]
    fn finish(&self, record: Record) -> Quick {
        if self.ok && self.at == self.line_len {
            Quick::Record(record)
        } else {
            Quick::Unusual
        }
    }
}

/// [`alibaba`] for `12,W,4096,8192,1234567`.
#[inline(always)]
pub fn alibaba_fast(_: &mut ParseState, text: &[u8], line_len: usize) -> Quick {
    let mut p = Plain::new(text, line_len);
    let volume = p.u32();
    p.comma();
    let op = p.rw();
    p.comma();
    let offset_bytes = p.u64();
    p.comma();
    let len_bytes = p.u64();
    p.comma();
    let time_us = p.u64();
    p.finish(Record { time_us, volume, offset_bytes, len_bytes, op })
}

/// Bit `i` set where byte `i` of `word` is not an ASCII digit.
#[inline(always)]
fn non_digits(word: u64) -> u64 {
    let d = word ^ (0x30 * ONES);
    // As in `Plain::run`: bit 7 of a byte is set now iff it is not a digit.
    let high = (((d & (0x7F * ONES)) + 0x76 * ONES) | d) & (0x80 * ONES);
    // Each byte's bit 7 to bit `i` of the top byte (the bytes are 0 or 1 after the shift, so
    // the partial products do not carry into it).
    (high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
}

/// The value of the `len` digits at `at` (1..=19, known to be digits).
#[inline(always)]
fn digits_at(text: &[u8], at: usize, len: usize) -> u64 {
    // The first `n` (1..=8) digits at `from`, aligned as `swar8` wants them.
    let head = |from: usize, n: usize| swar8((load8(text, from) ^ (0x30 * ONES)) << (64 - 8 * n));
    let eight = |from: usize| swar8(load8(text, from) ^ (0x30 * ONES));
    debug_assert!((1..=U64_DIGITS_MAX).contains(&len));
    match len {
        ..=8 => head(at, len),
        9..=16 => head(at, len - 8).wrapping_mul(POW10[8]).wrapping_add(eight(at + len - 8)),
        _ => {
            let high = head(at, len - 16).wrapping_mul(POW10[8]).wrapping_add(eight(at + len - 16));
            high.wrapping_mul(POW10[8]).wrapping_add(eight(at + len - 8))
        }
    }
}

/// [`alibaba_fast`] for the line at the start of `text`, whose end is found from its fields
/// rather than searched for first: its record and the bytes it takes with its line end (`\n`
/// or `\r\n`). `None` for anything but the plain spelling, or a line of 64 bytes or more: the
/// caller then finds the line's end and reads it the usual way. The separators of the whole
/// line come from one mask of its non-digit bytes, so each field is read on its own rather
/// than after the one before it.
#[inline(always)]
pub fn alibaba_line(text: &[u8]) -> Option<(Record, usize)> {
    // A plain line has six non-digits: `,` op `,` `,` `,` and the line end.
    let mut mask = (0..4).fold(0u64, |m, w| m | non_digits(load8(text, 8 * w)) << (8 * w));
    if mask.count_ones() < 6 {
        mask |= (4..8).fold(0u64, |m, w| m | non_digits(load8(text, 8 * w)) << (8 * w));
        if mask.count_ones() < 6 {
            return None;
        }
    }
    let mut next = || {
        let at = mask.trailing_zeros() as usize;
        mask &= mask.wrapping_sub(1);
        at
    };
    let (c1, op, c2, c3, c4, end) = (next(), next(), next(), next(), next(), next());
    let byte = |at: usize| text.get(at).copied().unwrap_or(0);
    let plain = op == c1 + 1
        && c2 == c1 + 2
        && [c1, c2, c3, c4].iter().all(|&c| byte(c) == b',')
        && matches!(byte(op), b'R' | b'r' | b'W' | b'w')
        && (1..=U32_DIGITS_MAX).contains(&c1)
        && (1..=U64_DIGITS_MAX).contains(&(c3 - c2 - 1))
        && (1..=U64_DIGITS_MAX).contains(&(c4 - c3 - 1))
        && (1..=U64_DIGITS_MAX).contains(&(end - c4 - 1));
    let taken = match (byte(end), byte(end + 1)) {
        (b'\n', _) => end + 1,
        (b'\r', b'\n') => end + 2,
        _ => return None,
    };
    if !plain {
        return None;
    }
    let record = Record {
        volume: digits_at(text, 0, c1) as u32,
        op: if byte(op) | 0x20 == b'r' { Op::Read } else { Op::Write },
        offset_bytes: digits_at(text, c2 + 1, c3 - c2 - 1),
        len_bytes: digits_at(text, c3 + 1, c4 - c3 - 1),
        time_us: digits_at(text, c4 + 1, end - c4 - 1),
    };
    Some((record, taken))
}

/// [`tencent`] for `1538323200,123456,16,1,1063` (the time may have decimals).
#[inline(always)]
pub fn tencent_fast(_: &mut ParseState, text: &[u8], line_len: usize) -> Quick {
    let mut p = Plain::new(text, line_len);
    let time_us = p.seconds_us();
    p.comma();
    let offset_bytes = p.sectors();
    p.comma();
    let len_bytes = p.sectors();
    p.comma();
    let op = p.zero_one();
    p.comma();
    let volume = p.u32();
    p.finish(Record { time_us, volume, offset_bytes, len_bytes, op })
}

/// [`cloudphysics_csv`] for `1,5633898,2a,512,42932745` (other SCSI commands are counted).
#[inline(always)]
pub fn cloudphysics_csv_fast(state: &mut ParseState, text: &[u8], line_len: usize) -> Quick {
    let mut p = Plain::new(text, line_len);
    let _version = p.u64();
    p.comma();
    let time_us = p.seconds_us();
    p.comma();
    let opcode = p.hex_u8();
    p.comma();
    let len_bytes = p.u64();
    p.comma();
    let offset_bytes = p.sectors();
    let op = scsi_op(opcode);
    match p.finish(Record { time_us, op: op.unwrap_or(Op::Read), len_bytes, offset_bytes, volume: 0 }) {
        Quick::Record(_) if op.is_none() => {
            state.non_data += 1;
            Quick::NoRecord
        }
        quick => quick,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Pair = (LineParser, FastParser);
    const PAIRS: [(&str, Pair); 3] = [("alibaba", (alibaba, alibaba_fast)), ("tencent", (tencent, tencent_fast)), ("cloudphysics-csv", (cloudphysics_csv, cloudphysics_csv_fast))];

    /// The fast parser's answer, where it gives one, is the line parser's, and its line is ASCII.
    fn check(name: &str, (slow, fast): Pair, line: &str) -> Quick {
        let (mut fast_state, mut slow_state) = (ParseState::default(), ParseState::default());
        let quick = fast(&mut fast_state, line.as_bytes(), line.len());
        for after in ["\n", "\r\n", "\n9,R,0,4096,17", "\n1,5633898,2a,512,42932745\n"] {
            let text = format!("{line}{after}");
            assert_eq!(fast(&mut ParseState::default(), text.as_bytes(), line.len()), quick, "{name}: {text:?}");
        }
        if quick != Quick::Unusual {
            let expected = match slow(&mut slow_state, line) {
                Ok(Some(r)) => Quick::Record(r),
                Ok(None) => Quick::NoRecord,
                Err(e) => panic!("{name}: fast {quick:?}, line parser {e:?} for {line:?}"),
            };
            assert_eq!(quick, expected, "{name}: {line:?}");
            assert_eq!(fast_state.non_data, slow_state.non_data, "{name}: {line:?}");
            assert!(line.is_ascii(), "{name}: {line:?}");
        }
        quick
    }

    #[test]
    fn plain_lines_take_the_fast_path() {
        let plain = [("alibaba", "12,W,4096,8192,1234567"), ("tencent", "1538323200.25,105352008,16,1,1063"), ("cloudphysics-csv", "1,5633898,2a,512,42932745")];
        for ((name, pair), (_, line)) in PAIRS.into_iter().zip(plain) {
            assert!(matches!(check(name, pair, line), Quick::Record(_)), "{name}: {line:?}");
        }
        assert_eq!(check("cloudphysics-csv", PAIRS[2].1, "1,5633898,12,36,0"), Quick::NoRecord);
        // Values at the digit caps are read fast; past them the line parser decides.
        assert!(matches!(check("alibaba", PAIRS[0].1, "999999999,R,9999999999999999999,0,0"), Quick::Record(_)));
        assert_eq!(check("alibaba", PAIRS[0].1, "4294967295,R,0,0,0"), Quick::Unusual);
        assert!(matches!(check("tencent", PAIRS[1].1, "9999999999999.9999999,9999999999999999,0,0,0"), Quick::Record(_)));
        assert_eq!(check("tencent", PAIRS[1].1, "1,36028797018963968,0,0,0"), Quick::Unusual);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn fast_parsers_agree_with_the_line_parsers(fields in prop::collection::vec(prop_oneof![
            "[0-9]{1,20}",
            "[0-9]{1,15}\\.[0-9]{0,9}",
            "[0-9a-fA-F]{1,3}",
            prop::sample::select(vec!["R", "W", "r", "w", "Read", "0", "1", "+1", " 1", "1 ", ""]).prop_map(String::from),
            "[ +\\-.eE0-9a-fRW,é]{0,5}",
        ], 3..7)) {
            let line = fields.join(",");
            for (name, pair) in PAIRS {
                check(name, pair, &line);
            }
            check_whole_line(&line);
        }

        #[test]
        fn alibaba_whole_lines_agree_with_the_fast_parser(
            volume in prop_oneof![4 => "[0-9]{1,10}", 1 => "[ 0-9a-z+]{0,3}"],
            op in prop::sample::select(vec!["R", "W", "r", "w", "x", "", "RW", "1"]),
            numbers in prop::collection::vec(prop_oneof![8 => "[0-9]{1,20}", 1 => "[0-9]{0,3}[ .e,-]{1,2}[0-9]{0,3}"], 3),
            extra in prop::sample::select(vec!["", "", "", ",", ",7", " "]),
        ) {
            check_whole_line(&format!("{volume},{op},{}{extra}", numbers.join(",")));
        }
    }

    /// [`alibaba_line`] reads `line` as [`alibaba_fast`] does when it ends in a line end and
    /// is shorter than 64 bytes; it takes the line end with it, and declines anything else.
    fn check_whole_line(line: &str) {
        let fast = alibaba_fast(&mut ParseState::default(), line.as_bytes(), line.len());
        for (after, end) in [("\n", Some(1)), ("\r\n", Some(2)), ("\n7,W,0,4096,1\n", Some(1)), ("\r\r\n", None), ("", None), ("\r", None), ("7", None)] {
            let text = format!("{line}{after}");
            let got = alibaba_line(text.as_bytes());
            match (fast, end) {
                (Quick::Record(r), Some(end)) if line.len() < 64 => assert_eq!(got, Some((r, line.len() + end)), "{text:?}"),
                (Quick::Record(_), Some(_)) => {}
                _ => assert_eq!(got, None, "{text:?}: fast {fast:?}"),
            }
        }
    }
}

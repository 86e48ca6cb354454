//! Line parsers of the text formats. Each takes one line and returns a record, `None` for a
//! header or a non-data command, or the field that was wrong.

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
const FILETIME_UNIX_OFFSET_S: u64 = 11_644_473_600;

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

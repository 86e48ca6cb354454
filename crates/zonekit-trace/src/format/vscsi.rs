//! VMware vscsi v1 binary traces (CloudPhysics): 32-byte little-endian records
//! `u32 sn, u32 len_bytes, u32 nSG, u16 cmd, u16 ver (0x100), u64 lbn (512-B sectors), u64 ts (µs)`.

use std::io::{BufRead, Read};
use std::path::PathBuf;

use super::text::scsi_op;
use super::{ReadOptions, ReadStats, RecordStream};
use crate::record::{Location, Record, Result, TraceError};

const RECORD_BYTES: usize = 32;
const VERSION_1: u16 = 0x100;

pub struct VscsiReader {
    input: Box<dyn BufRead>,
    path: PathBuf,
    options: ReadOptions,
    offset: u64,
    stats: ReadStats,
    done: bool,
}

impl VscsiReader {
    pub fn new(input: Box<dyn BufRead>, path: PathBuf, options: ReadOptions) -> VscsiReader {
        VscsiReader { input, path, options, offset: 0, stats: ReadStats::default(), done: false }
    }

    fn error(&self, at: u64, field: &'static str, value: String, reason: &str) -> TraceError {
        TraceError::Parse { path: self.path.clone(), location: Location::Byte(at), field, value, reason: reason.into() }
    }
}

impl Iterator for VscsiReader {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        let mut r = [0u8; RECORD_BYTES];
        while !self.done {
            let at = self.offset;
            let mut got = 0;
            while got < RECORD_BYTES {
                match self.input.read(&mut r[got..]) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) => {
                        self.done = true;
                        return Some(Err(super::decompress_error(&self.path, e)));
                    }
                }
            }
            self.offset += got as u64;
            if got == 0 {
                self.done = true;
                self.options.log.publish(self.stats.clone());
                return None;
            }
            if got < RECORD_BYTES {
                self.done = true;
                return Some(Err(self.error(at, "record", format!("{got} bytes"), "truncated: a vscsi record is 32 bytes")));
            }
            let u16_at = |o: usize| u16::from_le_bytes([r[o], r[o + 1]]);
            let u32_at = |o: usize| u32::from_le_bytes(r[o..o + 4].try_into().unwrap());
            let u64_at = |o: usize| u64::from_le_bytes(r[o..o + 8].try_into().unwrap());
            let version = u16_at(14);
            if version != VERSION_1 {
                let e = self.error(at, "ver", format!("{version:#x}"), "not a vscsi v1 record (version 0x100)");
                if self.options.lenient {
                    self.stats.skip(&e, "ver");
                    continue;
                }
                self.done = true;
                return Some(Err(e));
            }
            let Some(op) = scsi_op(u16_at(12) as u8) else {
                self.stats.non_data += 1;
                continue;
            };
            self.stats.records += 1;
            return Some(Ok(Record { time_us: u64_at(24), volume: 0, offset_bytes: u64_at(16).saturating_mul(512), len_bytes: u32_at(4) as u64, op }));
        }
        None
    }
}

impl RecordStream for VscsiReader {
    fn stats(&self) -> ReadStats {
        self.stats.clone()
    }
}

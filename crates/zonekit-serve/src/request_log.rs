//! The request log (`--trace-out FILE`): every read and write a server completes, as a
//! Zonekit binary trace, so a real stack's block stream (a file system and a database on
//! `serve nbd`, f2fs on `serve ublk`) can be replayed through `zonekit cache`, `replay` or
//! `trace analyze` exactly as the server saw it.
//!
//! One record per block a request touches (the binary format's unit), the first flagged as
//! the start of its request; a request that covers part of a block logs the whole block, as
//! the server reads or rewrites it whole. Times are microseconds since the server started,
//! wall clock. Zone appends are logged as writes at the blocks the device chose. Failed
//! requests, flushes and zone management are not logged: the trace is what the medium
//! served. Records are in the order the server executed them (the log is written under the
//! lock that orders execution), so several clients' interleaving is kept.
//!
//! The header and the window checksums are written when the server stops cleanly (SIGINT,
//! SIGTERM): a killed server leaves a file that readers refuse (its header is zeros), not a
//! trace that looks complete. A write to the log that fails ends the log, and the server's
//! stop reports it, so a full disk never yields a short trace that passes for a whole one.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use zonekit_trace::binary::BinaryWriter;
use zonekit_trace::blocks::BlockIo;
use zonekit_trace::record::Op;

/// What a finished log holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LogSummary {
    pub path: PathBuf,
    pub requests: u64,
    /// Block records (one per block a request touched).
    pub records: u64,
}

pub struct RequestLog {
    /// `None` once a write failed (the error is kept for [`RequestLog::finish`]).
    writer: Option<BinaryWriter>,
    path: PathBuf,
    started: Instant,
    block_bytes: u64,
    requests: u64,
    records: u64,
    failed: Option<String>,
}

impl RequestLog {
    /// Starts the log of `path` (written aside, replacing `path` at [`RequestLog::finish`]);
    /// `source` is kept in the trace's header.
    pub fn create(path: &Path, block_bytes: u32, source: &str) -> Result<RequestLog, String> {
        let writer = BinaryWriter::create(path, block_bytes, source).map_err(|e| e.to_string())?;
        Ok(RequestLog { writer: Some(writer), path: path.to_path_buf(), started: Instant::now(), block_bytes: block_bytes as u64, requests: 0, records: 0, failed: None })
    }

    /// Logs a completed request of `len_bytes` at byte `offset_bytes` (nothing for length 0).
    pub fn record(&mut self, op: Op, offset_bytes: u64, len_bytes: u64) {
        let Some(writer) = self.writer.as_mut() else { return };
        if len_bytes == 0 {
            return;
        }
        let time_us = self.started.elapsed().as_micros() as u64;
        let first = offset_bytes / self.block_bytes;
        let end = (offset_bytes + len_bytes).div_ceil(self.block_bytes);
        for block in first..end {
            let io = BlockIo { time_us, volume: 0, block, op, starts_request: block == first };
            if let Err(e) = writer.push(&io) {
                self.failed = Some(e.to_string());
                self.writer = None;
                return;
            }
        }
        self.requests += 1;
        self.records += end - first;
    }

    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Writes the header and checksums and puts the log under its name (it is written aside
    /// until then: a server killed before it stops leaves no log). `Err` if any write to the
    /// log failed: nothing is put under the name, as a prefix of the stream must not be taken
    /// for the whole of it.
    pub fn finish(self) -> Result<LogSummary, String> {
        let what = |e: String| format!("the request log {}: {e}", self.path.display());
        if let Some(e) = self.failed {
            return Err(what(format!("{e} (the log stopped there; the log is incomplete)")));
        }
        let writer = self.writer.expect("present unless a write failed");
        writer.finish().map_err(|e| what(e.to_string()))?;
        Ok(LogSummary { path: self.path, requests: self.requests, records: self.records })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonekit_trace::binary::BinaryTrace;

    #[test]
    fn every_block_of_a_request_is_logged_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.zkt");
        let mut log = RequestLog::create(&path, 4096, "test").unwrap();
        log.record(Op::Write, 8192, 3 * 4096);
        // A partial block at each end: the blocks it touches.
        log.record(Op::Read, 4096 + 100, 4096);
        log.record(Op::Read, 0, 0);
        let summary = log.finish().unwrap();
        assert_eq!((summary.requests, summary.records), (2, 5));
        let t = BinaryTrace::open(&path).unwrap();
        let got: Vec<(u64, Op, bool)> = t.iter().map(|r| (r.io.block, r.io.op, r.io.starts_request)).collect();
        assert_eq!(got, vec![(2, Op::Write, true), (3, Op::Write, false), (4, Op::Write, false), (1, Op::Read, true), (2, Op::Read, false)]);
        assert_eq!((t.header().writes, t.header().source.as_str()), (3, "test"));
        assert!(t.iter().zip(t.iter().skip(1)).all(|(a, b)| a.io.time_us <= b.io.time_us));
    }

    #[test]
    fn a_log_that_could_not_be_written_is_reported_at_finish() {
        if !Path::new("/dev/full").exists() {
            eprintln!("skipped: no /dev/full");
            return;
        }
        let mut log = RequestLog::create(Path::new("/dev/full"), 4096, "test").unwrap();
        // More than the writer's buffer, so a write reaches the device and fails.
        for i in 0..100_000 {
            log.record(Op::Write, i * 4096, 4096);
        }
        let e = log.finish().unwrap_err();
        assert!(e.contains("/dev/full") && e.contains("incomplete"), "{e}");
    }
}

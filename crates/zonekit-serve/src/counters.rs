//! What a server counts while it runs, and the JSON snapshot it writes.
//!
//! The snapshot is rewritten atomically (a temporary file renamed over the old one) while the
//! server runs and once more at exit, so `cat` or `jq` on it always sees a whole document.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use zonekit_base::LogHistogram;
use zonekit_device::{DeviceStats, OpCounter};

/// The request kinds counted apart.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    Append,
    Flush,
    Report,
    Manage,
}

impl Kind {
    pub const ALL: [Kind; 6] = [Kind::Read, Kind::Write, Kind::Append, Kind::Flush, Kind::Report, Kind::Manage];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Append => "append",
            Kind::Flush => "flush",
            Kind::Report => "report_zones",
            Kind::Manage => "zone_management",
        }
    }
}

/// Requests served: successful operations and bytes, failures, and the service time (from the
/// request reaching the server to its result, wall clock) of each kind.
pub struct Counters {
    started: Instant,
    done: [OpCounter; 6],
    failed: [u64; 6],
    errors_by_errno: BTreeMap<i32, u64>,
    service_ns: [LogHistogram; 6],
}

impl Default for Counters {
    fn default() -> Self {
        Counters::new()
    }
}

impl Counters {
    pub fn new() -> Counters {
        Counters { started: Instant::now(), done: [OpCounter::default(); 6], failed: [0; 6], errors_by_errno: BTreeMap::new(), service_ns: Default::default() }
    }

    /// Counts one request: `result` is bytes (≥ 0) or a negative errno.
    pub fn record(&mut self, kind: Kind, bytes: u64, result: i32, service_ns: u64) {
        let k = kind as usize;
        if result < 0 {
            self.failed[k] += 1;
            *self.errors_by_errno.entry(-result).or_default() += 1;
        } else {
            self.done[k].add(bytes);
        }
        self.service_ns[k].record(service_ns);
    }

    pub fn get(&self, kind: Kind) -> OpCounter {
        self.done[kind as usize]
    }

    pub fn errors_by_errno(&self) -> &BTreeMap<i32, u64> {
        &self.errors_by_errno
    }

    /// Bytes the host wrote (writes and appends that succeeded).
    pub fn host_bytes_written(&self) -> u64 {
        self.get(Kind::Write).bytes + self.get(Kind::Append).bytes
    }

    /// The snapshot of these counters beside the device's own.
    pub fn snapshot(&self, device: &DeviceStats, model: Option<serde_json::Value>) -> Snapshot {
        let requests = Kind::ALL
            .iter()
            .map(|&k| {
                let h = &self.service_ns[k as usize];
                let row = RequestRow {
                    ops: self.done[k as usize].ops,
                    bytes: self.done[k as usize].bytes,
                    failed: self.failed[k as usize],
                    service_ns_p50: h.quantile(0.5),
                    service_ns_p99: h.quantile(0.99),
                    service_ns_max: h.max,
                    service_ns_mean: h.mean(),
                };
                (k.name(), row)
            })
            .collect();
        let host = self.host_bytes_written();
        let media = device.bytes_written();
        let resets = &device.resets_per_zone;
        Snapshot {
            uptime_s: self.started.elapsed().as_secs_f64(),
            requests,
            errors_by_errno: self.errors_by_errno.iter().map(|(&e, &n)| (errno_name(e), n)).collect(),
            host_bytes_written: host,
            media_bytes_written: media,
            waf: if host == 0 { None } else { Some(media as f64 / host as f64) },
            resets: device.resets,
            resets_per_zone_max: resets.iter().copied().max().unwrap_or(0),
            resets_per_zone: resets.clone(),
            model,
            engine: None,
            request_log: None,
        }
    }
}

/// One request kind in a snapshot.
#[derive(Clone, Debug, Serialize)]
pub struct RequestRow {
    pub ops: u64,
    pub bytes: u64,
    pub failed: u64,
    pub service_ns_p50: u64,
    pub service_ns_p99: u64,
    pub service_ns_max: u64,
    pub service_ns_mean: f64,
}

/// The counters as the server writes them (`--stats FILE`).
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    pub uptime_s: f64,
    pub requests: BTreeMap<&'static str, RequestRow>,
    pub errors_by_errno: BTreeMap<String, u64>,
    pub host_bytes_written: u64,
    /// Bytes the device wrote to its medium (the emulator's own counter).
    pub media_bytes_written: u64,
    /// Media ÷ host bytes written (none before the first write).
    pub waf: Option<f64>,
    pub resets: u64,
    pub resets_per_zone_max: u64,
    pub resets_per_zone: Vec<u64>,
    /// The flash timing model's view (modelled latencies), when the device runs under one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<serde_json::Value>,
    /// The engine's own counters (an FTL volume's user and GC blocks, journal commits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<serde_json::Value>,
    /// The request log's totals (`--trace-out`), in the final snapshot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_log: Option<crate::request_log::LogSummary>,
}

impl Snapshot {
    /// Writes the snapshot as JSON, atomically: a reader sees the old file or the new one.
    pub fn write_atomically(&self, path: &Path) -> std::io::Result<()> {
        let mut f = zonekit_base::atomic::AtomicFile::create(path)?;
        serde_json::to_writer_pretty(&mut f, self)?;
        f.write_all(b"\n")?;
        f.commit()
    }
}

/// `EIO`, `EINVAL`, ... (the number for one we do not name).
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EIO => "EIO",
        libc::EINVAL => "EINVAL",
        libc::ETOOMANYREFS => "ETOOMANYREFS",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOSPC => "ENOSPC",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_counts_bytes_failures_and_waf() {
        let mut c = Counters::new();
        c.record(Kind::Write, 8192, 8192, 1_000);
        c.record(Kind::Append, 4096, 4096, 2_000);
        c.record(Kind::Write, 4096, -libc::EIO, 500);
        let mut dev = DeviceStats::new(3);
        dev.writes.add(8192);
        dev.appends.add(4096);
        dev.resets = 2;
        dev.resets_per_zone = vec![0, 2, 0];
        let s = c.snapshot(&dev, None);
        assert_eq!((s.requests["write"].ops, s.requests["write"].failed, s.requests["append"].bytes), (1, 1, 4096));
        assert_eq!((s.host_bytes_written, s.waf, s.resets_per_zone_max), (12288, Some(1.0), 2));
        assert_eq!(s.errors_by_errno["EIO"], 1);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.json");
        s.write_atomically(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["requests"]["write"]["bytes"], 8192);
        assert!(v.get("model").is_none());
    }
}

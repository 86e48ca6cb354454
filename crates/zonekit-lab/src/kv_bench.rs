//! Seed 001's experiment as a harness run: RocksDB's own db_bench (`fillseq,overwrite`,
//! 16-byte keys, 800-byte values, no compression) on the zoned file system through the
//! `zonekit://` plugin, for each file-system configuration and growing key counts until one
//! fails; the same workload on RocksDB's default file system on tmpfs is the reference for speed
//! and for how much space RocksDB itself needs (its peak, sampled while it runs).
//!
//! Results go to the output directory: `results.csv` (one row per db_bench run; a rerun reuses
//! a row only for the same profile, configuration, key count and device capacity, so an
//! interrupted experiment resumes and another device is never reported with old numbers), and
//! charts per RocksDB profile: `PROFILE-max-keys.svg`, `PROFILE-waf.svg`, `PROFILE-space.svg`,
//! `PROFILE-throughput.svg`.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use zonekit_report::{bar_chart, csv, line_chart, text_table, Series};
use zonekit_zfs::alloc::{first_fit::FIRST_FIT, lifetime::LIFETIME, zenfs::ZENFS, AllocInfo};

use crate::error::{LabError, Result};

/// One file-system configuration of the experiment: an allocation rule and GC on or off.
#[derive(Debug)]
pub struct KvConfig {
    pub name: &'static str,
    pub summary: &'static str,
    pub allocation: &'static AllocInfo,
    pub gc: bool,
}

impl KvConfig {
    /// The options of the plugin's device spec.
    pub fn uri_options(&self) -> String {
        format!("alloc={}&gc={}", self.allocation.name, if self.gc { "on" } else { "off" })
    }
}

/// The configurations, in the order the experiment runs them by default.
pub const CONFIGS: &[KvConfig] = &[
    KvConfig { name: "stock", summary: "first fit, no GC", allocation: &FIRST_FIT, gc: false },
    KvConfig { name: "gc", summary: "first fit + GC", allocation: &FIRST_FIT, gc: true },
    KvConfig { name: "lifetime", summary: "lifetime allocation, no GC", allocation: &LIFETIME, gc: false },
    KvConfig { name: "both", summary: "lifetime allocation + GC (seed 001's proposal)", allocation: &LIFETIME, gc: true },
    KvConfig { name: "zenfs", summary: "stock ZenFS's lifetime-score allocation, no GC (the seed's original)", allocation: &ZENFS, gc: false },
];

/// RocksDB options the experiment runs under.
#[derive(Debug)]
pub struct Profile {
    pub name: &'static str,
    pub flags: &'static [&'static str],
}

/// `bounded` caps compaction debt so RocksDB's own space need stays near its data (see
/// docs/results/seed-001.md); `defaults` is db_bench's defaults.
pub const PROFILES: &[Profile] = &[
    // Leveled compaction sized from the last level (RocksDB's default from 8.4 on), and
    // writes slowed, then stopped, when compaction falls 1 GiB, then 4 GiB, behind
    // (db_bench's defaults are 64 GiB and 256 GiB: on two cores the backlog, and with it
    // the space RocksDB holds, otherwise grows to twice the data).
    Profile {
        name: "bounded",
        flags: &["--level_compaction_dynamic_level_bytes=true", "--soft_pending_compaction_bytes_limit=1073741824", "--hard_pending_compaction_bytes_limit=4294967296"],
    },
    Profile { name: "defaults", flags: &[] },
];

/// The name of the reference rows (RocksDB's POSIX file system on tmpfs).
pub const REFERENCE: &str = "posix-tmpfs";

/// Everything that defines one kv-bench run.
#[derive(Debug)]
pub struct KvBench {
    pub configs: Vec<&'static KvConfig>,
    /// Key counts in millions, tried in increasing order until one fails.
    pub keys: Vec<f64>,
    /// `mem:PRESET`: formatted fresh for every run.
    pub device: String,
    pub profile: &'static Profile,
    pub reference: bool,
    /// Directory for the POSIX reference database (tmpfs for a fair speed reference).
    pub tmpfs: PathBuf,
    pub plugin: PathBuf,
    pub db_bench: PathBuf,
    pub out: PathBuf,
}

/// Finds a table row by name, or says which names exist.
pub fn find<'a, T>(table: &'a [T], what: &str, name: &str, name_of: impl Fn(&T) -> &'static str) -> Result<&'a T> {
    table.iter().find(|t| name_of(t) == name).ok_or_else(|| {
        let valid: Vec<&str> = table.iter().map(&name_of).collect();
        LabError::Usage(format!("unknown {what} {name:?}; valid: {}", valid.join(", ")))
    })
}

/// What one db_bench run printed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunResult {
    pub completed: bool,
    pub fillseq_ops_s: Option<u64>,
    pub overwrite_ops_s: Option<u64>,
    pub appended_bytes: Option<u64>,
    pub device_written_bytes: Option<u64>,
    pub zone_resets: Option<u64>,
    /// The most bytes RocksDB's files held at once.
    pub peak_file_bytes: Option<u64>,
    /// Why it failed, when it did.
    pub detail: String,
}

impl RunResult {
    pub fn waf(&self) -> Option<f64> {
        match (self.device_written_bytes, self.appended_bytes) {
            (Some(w), Some(a)) if a > 0 => Some(w as f64 / a as f64),
            _ => None,
        }
    }
}

fn number_after(line: &str, label: &str) -> Option<u64> {
    let rest = &line[line.find(label)? + label.len()..];
    rest.split_whitespace().next()?.trim_end_matches(',').parse().ok()
}

/// Reads db_bench's output (with the plugin's report line when it ran on zonekit).
pub fn parse_db_bench_log(log: &str, exit_ok: bool) -> RunResult {
    let mut r = RunResult { completed: exit_ok, ..RunResult::default() };
    for line in log.lines() {
        let ops = || line.split_whitespace().skip_while(|w| *w != "micros/op").nth(1).and_then(|w| w.parse().ok());
        if line.starts_with("fillseq ") {
            r.fillseq_ops_s = ops();
        } else if line.starts_with("overwrite ") {
            r.overwrite_ops_s = ops();
        } else if line.starts_with("zonekit: appended") {
            r.appended_bytes = number_after(line, "appended ");
            r.device_written_bytes = number_after(line, "device wrote ");
            r.zone_resets = number_after(line, "zone resets ");
            r.peak_file_bytes = number_after(line, "peak file bytes ").map(|mib| mib << 20);
        } else if r.detail.is_empty() && (line.contains(" error: ") || line.contains("Corruption") || line.contains("No space left")) {
            r.completed = false;
            r.detail = line.trim().chars().take(300).collect();
        }
    }
    if r.overwrite_ops_s.is_none() {
        r.completed = false;
        if r.detail.is_empty() {
            r.detail = "db_bench stopped before overwrite finished".into();
        }
    }
    r
}

const HEADER: [&str; 13] = [
    "profile",
    "config",
    "million_keys",
    "completed",
    "fillseq_ops_s",
    "overwrite_ops_s",
    "appended_bytes",
    "device_written_bytes",
    "waf",
    "zone_resets",
    "peak_file_bytes",
    "capacity_bytes",
    "detail",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn row(profile: &str, config: &str, million_keys: f64, r: &RunResult, capacity_bytes: Option<u64>) -> Vec<String> {
    vec![
        profile.into(),
        config.into(),
        million_keys.to_string(),
        r.completed.to_string(),
        opt(r.fillseq_ops_s),
        opt(r.overwrite_ops_s),
        opt(r.appended_bytes),
        opt(r.device_written_bytes),
        opt(r.waf().map(|w| format!("{w:.3}"))),
        opt(r.zone_resets),
        opt(r.peak_file_bytes),
        opt(capacity_bytes),
        r.detail.replace([',', '\n'], ";"),
    ]
}

fn from_row(cells: &[String]) -> Option<(String, String, f64, RunResult)> {
    let num = |i: usize| cells.get(i).and_then(|c| c.parse::<u64>().ok());
    let r = RunResult {
        completed: cells.get(3)? == "true",
        fillseq_ops_s: num(4),
        overwrite_ops_s: num(5),
        appended_bytes: num(6),
        device_written_bytes: num(7),
        zone_resets: num(9),
        peak_file_bytes: num(10),
        detail: cells.get(12).cloned().unwrap_or_default(),
    };
    Some((cells[0].clone(), cells[1].clone(), cells[2].parse().ok()?, r))
}

/// Bytes the file system can hold: every zone but the two metadata zones, at zone capacity.
fn data_capacity_bytes(device: &str) -> Option<u64> {
    let p = zonekit_device::preset::find(device.strip_prefix("mem:")?)?;
    let g = p.geometry;
    let zones = (g.zone_count - g.conventional_zone_count).saturating_sub(2) as u64;
    Some(zones * g.zone_capacity_blocks * g.block_size_bytes as u64)
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map(|entries| entries.filter_map(|e| e.ok()?.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum()).unwrap_or(0)
}

impl KvBench {
    /// Checks the request before anything runs.
    pub fn validate(&self) -> Result<()> {
        if self.keys.is_empty() || self.keys.iter().any(|k| !(*k > 0.0 && k.is_finite())) {
            return Err(LabError::Usage("--keys: key counts are millions of keys and must be positive".into()));
        }
        if !self.plugin.exists() {
            return Err(LabError::Usage(format!("plugin {} not found; build it with `bash plugin/build`", self.plugin.display())));
        }
        if !self.device.starts_with("mem:") || data_capacity_bytes(&self.device).is_none() {
            return Err(LabError::Usage(format!("--device {:?}: kv-bench formats a fresh emulated device per run; give mem:PRESET", self.device)));
        }
        Ok(())
    }

    /// Runs db_bench once; `fs_uri` None = RocksDB's default file system in `tmpfs`.
    fn run_once(&self, fs_uri: Option<&str>, keys: u64, log_path: &Path) -> Result<RunResult> {
        let db = match fs_uri {
            Some(_) => std::env::temp_dir().join(format!("zonekit-kv-bench-{}", std::process::id())),
            None => self.tmpfs.join(format!("zonekit-kv-bench-posix-{}", std::process::id())),
        };
        let _ = std::fs::remove_dir_all(&db);
        let mut cmd = Command::new(&self.db_bench);
        cmd.arg(format!("--db={}", db.display()))
            .args(["--benchmarks=fillseq,overwrite", "--key_size=16", "--value_size=800", "--compression_type=none"])
            .args(["--progress_reports=0", "--stats_interval=0"])
            .arg(format!("--num={keys}"))
            .args(self.profile.flags);
        if let Some(uri) = fs_uri {
            cmd.env("LD_PRELOAD", &self.plugin).arg(format!("--fs_uri={uri}"));
        }
        let log = File::create(log_path).map_err(LabError::io(log_path))?;
        let log_err = log.try_clone().map_err(LabError::io(log_path))?;
        let mut child = cmd
            .stdout(Stdio::from(log_err))
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| LabError::Usage(format!("starting {}: {e} (install it with `bash scripts/setup kv`)", self.db_bench.display())))?;
        // RocksDB's own peak space, sampled: the plugin counts it exactly on zonekit.
        let mut peak_bytes = 0;
        let status = loop {
            if let Some(status) = child.try_wait().map_err(LabError::io(&self.db_bench))? {
                break status;
            }
            if fs_uri.is_none() {
                peak_bytes = peak_bytes.max(dir_bytes(&db));
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        let _ = std::fs::remove_dir_all(&db);
        let text = std::fs::read_to_string(log_path).unwrap_or_default();
        let mut r = parse_db_bench_log(&text, status.success());
        if fs_uri.is_none() {
            r.peak_file_bytes = Some(peak_bytes);
        }
        Ok(r)
    }

    /// Runs every configuration at growing key counts (each stops at its first failure) and
    /// the reference, reusing rows already in `results.csv`; `on_run` sees each new run.
    /// Returns the summary table as text and the runs that failed for another reason than
    /// running out of space (a result of the experiment); charts are written beside the results.
    pub fn run(&self, on_run: &mut dyn FnMut(&str, f64, &RunResult)) -> Result<KvOutcome> {
        self.validate()?;
        std::fs::create_dir_all(&self.out).map_err(|e| LabError::Usage(format!("--out {}: {e}", self.out.display())))?;
        let mut keys = self.keys.clone();
        keys.sort_by(f64::total_cmp);
        let profile = self.profile.name;
        let capacity = data_capacity_bytes(&self.device);

        // Earlier rows of this profile and device capacity: reused, so an interrupted
        // experiment resumes.
        let results_path = self.out.join("results.csv");
        let mut done: BTreeMap<(String, String), RunResult> = BTreeMap::new();
        if let Ok(text) = std::fs::read_to_string(&results_path) {
            if text.lines().next() != Some(HEADER.join(",").as_str()) {
                return Err(LabError::Results { path: results_path, line: 1, reason: "not a kv-bench results file of this version (move it away to start over)".into() });
            }
            for line in text.lines().skip(1) {
                let cells: Vec<String> = line.splitn(HEADER.len(), ',').map(str::to_string).collect();
                if let Some((p, c, k, r)) = from_row(&cells) {
                    if p == profile && cells.get(11).map(String::as_str) == Some(opt(capacity).as_str()) {
                        done.insert((c, k.to_string()), r);
                    }
                }
            }
        } else {
            std::fs::write(&results_path, csv(&HEADER, &[])).map_err(LabError::io(&results_path))?;
        }
        let mut results = std::fs::OpenOptions::new().append(true).open(&results_path).map_err(LabError::io(&results_path))?;
        let mut record = |config: &str, k: f64, r: &RunResult| -> Result<()> {
            let cells = row(profile, config, k, r, capacity);
            results.write_all((cells.join(",") + "\n").as_bytes()).map_err(LabError::io(&results_path))?;
            on_run(config, k, r);
            Ok(())
        };

        let mut by_config: BTreeMap<String, Vec<(f64, RunResult)>> = BTreeMap::new();
        for config in &self.configs {
            for &k in &keys {
                let key = (config.name.to_string(), k.to_string());
                let r = match done.get(&key) {
                    Some(r) => r.clone(),
                    None => {
                        let uri = format!("zonekit://{}?{}", self.device, config.uri_options());
                        let log = self.out.join(format!("{profile}-{}-{k}M.log", config.name));
                        let r = self.run_once(Some(&uri), (k * 1e6) as u64, &log)?;
                        record(config.name, k, &r)?;
                        r
                    }
                };
                let completed = r.completed;
                by_config.entry(config.name.into()).or_default().push((k, r));
                if !completed {
                    break;
                }
            }
        }
        if self.reference {
            for &k in &keys {
                let key = (REFERENCE.to_string(), k.to_string());
                let r = match done.get(&key) {
                    Some(r) => r.clone(),
                    None => {
                        let r = self.run_once(None, (k * 1e6) as u64, &self.out.join(format!("{profile}-posix-{k}M.log")))?;
                        record(REFERENCE, k, &r)?;
                        r
                    }
                };
                by_config.entry(REFERENCE.into()).or_default().push((k, r));
            }
        }
        let table = report(&self.out, profile, &by_config, capacity)?;
        // Running out of space is what the experiment measures; anything else (a bad option,
        // a crash, a missing library) means the numbers are not the experiment's.
        let failed = by_config
            .iter()
            .flat_map(|(c, runs)| runs.iter().map(move |(k, r)| (c, k, r)))
            .filter(|(_, _, r)| !r.completed && !r.detail.contains("No space left") && !r.detail.contains("no space"))
            .map(|(c, k, r)| format!("{c} at {k} M keys: {}", if r.detail.is_empty() { "failed" } else { &r.detail }))
            .collect();
        Ok(KvOutcome { table, failed })
    }
}

/// What [`KvBench::run`] leaves for the caller to print and judge.
#[derive(Debug)]
pub struct KvOutcome {
    pub table: String,
    /// Runs that failed for another reason than space: the caller should exit non-zero.
    pub failed: Vec<String>,
}

/// One line about a finished run, as the experiment prints it.
pub fn describe_run(config: &str, k: f64, r: &RunResult) -> String {
    format!(
        "kv-bench: {config:>11} {k:>5} M keys: {:<9} WAF {:<6} fillseq {:>7} ops/s, overwrite {:>7} ops/s, peak {:>5} MiB{}",
        if r.completed { "completed" } else { "FAILED" },
        opt(r.waf().map(|w| format!("{w:.3}"))),
        opt(r.fillseq_ops_s),
        opt(r.overwrite_ops_s),
        opt(r.peak_file_bytes.map(|b| b >> 20)),
        if r.completed { String::new() } else { format!(" ({})", r.detail) }
    )
}

/// The summary table (returned) and the charts (written to `out`).
fn report(out: &Path, profile: &str, by_config: &BTreeMap<String, Vec<(f64, RunResult)>>, capacity: Option<u64>) -> Result<String> {
    let posix: BTreeMap<String, &RunResult> = by_config.get(REFERENCE).map(|v| v.iter().map(|(k, r)| (k.to_string(), r)).collect()).unwrap_or_default();
    let ratio = |ops: Option<u64>, reference: Option<u64>| match (ops, reference) {
        (Some(a), Some(b)) if b > 0 => format!("{:.2}x", a as f64 / b as f64),
        _ => String::new(),
    };
    let mut rows = Vec::new();
    let mut max_keys = Vec::new();
    for (config, runs) in by_config.iter().filter(|(c, _)| c.as_str() != REFERENCE) {
        let best = runs.iter().filter(|(_, r)| r.completed).map(|(k, _)| *k).fold(0.0, f64::max);
        max_keys.push((config.clone(), best));
        for (k, r) in runs {
            let reference = posix.get(&k.to_string());
            rows.push(vec![
                config.clone(),
                k.to_string(),
                if r.completed { "yes".into() } else { "NO".into() },
                opt(r.waf().map(|w| format!("{w:.3}"))),
                opt(r.peak_file_bytes.map(|b| b >> 20)),
                opt(reference.and_then(|p| p.peak_file_bytes).map(|b| b >> 20)),
                ratio(r.fillseq_ops_s, reference.and_then(|p| p.fillseq_ops_s)),
                ratio(r.overwrite_ops_s, reference.and_then(|p| p.overwrite_ops_s)),
            ]);
        }
    }
    let mut text = format!("\n{}", text_table(&["config", "M keys", "completed", "WAF", "peak MiB", "POSIX peak MiB", "fillseq vs POSIX", "overwrite vs POSIX"], &rows));
    if let Some(c) = capacity {
        text.push_str(&format!("file-system data capacity: {} MiB\n", c >> 20));
    }
    let write_chart = |name: &str, svg: String| {
        let path = out.join(format!("{profile}-{name}.svg"));
        std::fs::write(&path, svg).map_err(LabError::io(&path))
    };
    let gib = |bytes: u64| bytes as f64 / (1u64 << 30) as f64;
    write_chart("max-keys", bar_chart(&format!("Largest key count that completes ({profile})"), "million keys", &max_keys))?;
    let series = |value: &dyn Fn(&RunResult) -> Option<f64>, completed_only: bool| -> Vec<Series> {
        by_config
            .iter()
            .map(|(c, runs)| Series { name: c.clone(), points: runs.iter().filter(|(_, r)| r.completed || !completed_only).filter_map(|(k, r)| Some((*k, value(r)?))).collect() })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let waf = series(&|r| r.waf(), true);
    write_chart("waf", line_chart(&format!("Write amplification vs keys ({profile})"), "million keys", "WAF", &waf, false))?;
    let mut space = series(&|r| r.peak_file_bytes.map(gib), false);
    if let Some(c) = capacity {
        let xs: Vec<f64> = by_config.values().flat_map(|v| v.iter().map(|(k, _)| *k)).collect();
        let (lo, hi) = xs.iter().fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        if lo <= hi {
            space.push(Series { name: "FS capacity".into(), points: vec![(lo, gib(c)), (hi, gib(c))] });
        }
    }
    write_chart("space", line_chart(&format!("Peak bytes in RocksDB's files ({profile})"), "million keys", "GiB", &space, false))?;
    let throughput: Vec<(String, f64)> = by_config
        .iter()
        .filter_map(|(c, runs)| {
            let (k, r) = runs.iter().rfind(|(_, r)| r.completed)?;
            Some((format!("{c} {k}M"), r.overwrite_ops_s? as f64 / 1000.0))
        })
        .collect();
    write_chart("throughput", bar_chart(&format!("overwrite kops/s at the largest completed count ({profile})"), "kops/s", &throughput))?;
    text.push_str(&format!("results: {}/results.csv and {profile}-{{max-keys,waf,space,throughput}}.svg\n", out.display()));
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPLETED: &str = "\
DB path: [/tmp/x]
fillseq      :       5.126 micros/op 195080 ops/sec 35.883 seconds 7000000 operations;  151.8 MB/s
DB path: [/tmp/x]
overwrite    :      18.597 micros/op 53771 ops/sec 130.181 seconds 7000000 operations;   41.8 MB/s
zonekit: appended 20315194701 bytes, device wrote 21979353088 bytes, WAF 1.082, zone resets 104, live 7002 MiB, garbage 641 MiB, free 291 MiB, peak file bytes 7480 MiB
";

    #[test]
    fn a_completed_run_is_read_whole() {
        let r = parse_db_bench_log(COMPLETED, true);
        assert!(r.completed, "{r:?}");
        assert_eq!(r.fillseq_ops_s, Some(195080));
        assert_eq!(r.overwrite_ops_s, Some(53771));
        assert_eq!(r.appended_bytes, Some(20315194701));
        assert_eq!(r.device_written_bytes, Some(21979353088));
        assert_eq!(r.zone_resets, Some(104));
        assert_eq!(r.peak_file_bytes, Some(7480 << 20));
        assert!((r.waf().unwrap() - 1.0819).abs() < 1e-3);
    }

    #[test]
    fn a_no_space_failure_is_a_failure_with_its_reason() {
        let log = "fillseq      :       5.426 micros/op 184286 ops/sec 37.984 seconds 7000000 operations;  143.4 MB/s\n\
put error: IO error: No space left on device: /tmp/zk-db7/000315.log: no space: no zone can take the write\n\
zonekit: appended 20 bytes, device wrote 22 bytes, WAF 1.100, zone resets 1, live 1 MiB, garbage 0 MiB, free 0 MiB, peak file bytes 9 MiB\n";
        // db_bench exits 0 after a put error in some versions: the log decides.
        let r = parse_db_bench_log(log, true);
        assert!(!r.completed);
        assert!(r.detail.contains("No space left on device"), "{}", r.detail);
        assert_eq!(r.fillseq_ops_s, Some(184286));
        assert_eq!(r.overwrite_ops_s, None);
    }

    #[test]
    fn a_run_cut_short_is_not_completed() {
        let r = parse_db_bench_log("fillseq      :       5.0 micros/op 1000 ops/sec\n", false);
        assert!(!r.completed);
        assert!(!r.detail.is_empty());
    }

    #[test]
    fn rows_round_trip_through_the_csv() {
        let r = parse_db_bench_log(COMPLETED, true);
        let cells = row("bounded", "both", 7.0, &r, Some(8 << 30));
        assert_eq!(cells.len(), HEADER.len());
        let (p, c, k, back) = from_row(&cells).unwrap();
        assert_eq!((p.as_str(), c.as_str(), k), ("bounded", "both", 7.0));
        assert_eq!(back, r);
    }

    #[test]
    fn capacity_leaves_out_the_metadata_zones() {
        // nvmevirt-zns: 64 zones of 128 MiB (all writable); two hold the metadata log.
        assert_eq!(data_capacity_bytes("mem:nvmevirt-zns"), Some((62 * 128) << 20));
        assert_eq!(data_capacity_bytes("/dev/nvme0n1"), None);
    }
}

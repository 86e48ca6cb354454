//! Seed 001's experiment as a harness run: RocksDB's own db_bench (`fillseq,overwrite`,
//! 16-byte keys, 800-byte values, no compression) on the zoned file system through the
//! `zonekit://` plugin, for each file-system configuration and growing key counts until one
//! fails; the same workload on RocksDB's default file system on tmpfs is the reference for speed
//! and for how much space RocksDB itself needs (its peak, sampled while it runs).
//!
//! Two modes. A *sweep* (one repeat) tries growing key counts per configuration until one
//! fails: the largest key count that completes and the WAF on the way. *Rounds* (`repeats` > 1,
//! one key count) run every configuration once per round, the order reversed every other round
//! so neighbours alternate, and report each configuration's throughput relative to a baseline's
//! in the same round (min / median / max over the rounds): seed 001's Figure 16.
//!
//! Results go to the output directory: `results.csv` (one row per db_bench run; a rerun reuses
//! a row only for the same profile, configuration, key count, repeat, zone size and device
//! capacity, so an interrupted experiment resumes and another device is never reported with old
//! numbers), and charts named by profile (and zone size, when one was given): `P-max-keys.svg`,
//! `P-waf.svg`, `P-space.svg`, `P-throughput.svg` for a sweep, `P-KM-ratios.{csv,svg}` for
//! rounds.
//!
//! Each row of `results.csv` ends with a check, a fingerprint of its other cells, read back as
//! every resumable results file is (`crate::harness::results`, shared with the sweep and the tree
//! experiment): a damaged row (a cell changed, a row cut) is never reused. A run moves it, byte
//! for byte, to `results.previous.csv` and recomputes it if asked for; `report_only` refuses
//! the file, naming the line. A file from before the check column is refused whole (move it
//! away to start over).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::error::{LabError, Result};
use crate::harness::results::{Reading, ResultsFile, Resumed};
pub use crate::kv::config::{find, seed_name, KvConfig, Profile, CONFIGS, PROFILES, REFERENCE};
use crate::kv::db_bench::opt;
pub use crate::kv::db_bench::{describe_run, parse_db_bench_log, workload_ops_s, RunResult};
use crate::kv::report::{report, report_rounds, round_order};

/// Everything that defines one kv-bench run.
#[derive(Debug)]
pub struct KvBench {
    pub configs: Vec<&'static KvConfig>,
    /// Key counts in millions, tried in increasing order until one fails.
    pub keys: Vec<f64>,
    /// `mem:PRESET`: formatted fresh for every run.
    pub device: String,
    /// Zones of this many MiB instead of the preset's, the device's capacity kept.
    pub zone_size_mib: Option<u64>,
    pub profile: &'static Profile,
    /// 1: a sweep; more: rounds at one key count, throughput against `baseline`.
    pub repeats: u32,
    pub baseline: &'static KvConfig,
    pub reference: bool,
    /// Run nothing: report (and chart) the rows `results.csv` already has, leaving out the
    /// rest, so one report can gather rows that separate invocations measured.
    pub report_only: bool,
    /// Directory for the POSIX reference database (tmpfs for a fair speed reference).
    pub tmpfs: PathBuf,
    pub plugin: PathBuf,
    pub db_bench: PathBuf,
    pub out: PathBuf,
}

const HEADER: [&str; 16] = [
    "profile",
    "config",
    "million_keys",
    "repeat",
    "completed",
    "fillseq_ops_s",
    "overwrite_ops_s",
    "appended_bytes",
    "device_written_bytes",
    "waf",
    "zone_resets",
    "peak_file_bytes",
    "capacity_bytes",
    "zone_size_bytes",
    "detail",
    // A fingerprint of the other cells: a damaged row is recomputed, not reused.
    "check",
];

/// Where a row was measured: everything but the configuration and key count that a reused row
/// must share with the request.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Place<'a> {
    profile: &'a str,
    capacity_bytes: u64,
    zone_size_bytes: u64,
}

/// A row of `results.csv`, its check last.
fn row(place: Place, config: &str, million_keys: f64, repeat: u32, r: &RunResult) -> Vec<String> {
    crate::harness::results::sealed(vec![
        place.profile.into(),
        config.into(),
        million_keys.to_string(),
        repeat.to_string(),
        r.completed.to_string(),
        opt(r.fillseq_ops_s),
        opt(r.overwrite_ops_s),
        opt(r.appended_bytes),
        opt(r.device_written_bytes),
        opt(r.waf().map(|w| format!("{w:.3}"))),
        opt(r.zone_resets),
        opt(r.peak_file_bytes),
        place.capacity_bytes.to_string(),
        place.zone_size_bytes.to_string(),
        r.detail.replace([',', '\n'], ";"),
    ])
}

/// A row of `results.csv`: its place, configuration, key count, repeat and result.
type Row = (String, u64, u64, String, f64, u32, RunResult);

fn from_row(cells: &[String]) -> Option<Row> {
    let num = |i: usize| cells.get(i).and_then(|c| c.parse::<u64>().ok());
    let r = RunResult {
        completed: cells.get(4)? == "true",
        fillseq_ops_s: num(5),
        overwrite_ops_s: num(6),
        appended_bytes: num(7),
        device_written_bytes: num(8),
        zone_resets: num(10),
        peak_file_bytes: num(11),
        detail: cells.get(14).cloned().unwrap_or_default(),
    };
    Some((cells[0].clone(), num(12)?, num(13)?, cells[1].clone(), cells[2].parse().ok()?, cells[3].parse().ok()?, r))
}

/// The header and writer of kv-bench's `results.csv`, for [`crate::harness::results`].
const RESULTS_FILE: ResultsFile = ResultsFile { header: &HEADER, writer: "kv-bench" };

/// Reads `results.csv` back ([`crate::harness::results::resume`]): a run moves damaged rows aside and
/// starts a missing file; `report_only` refuses either, naming the damaged row's line.
fn resume(path: &Path, report_only: bool) -> Result<Resumed> {
    let reading = if report_only { Reading::Report { by: "--report-only", rerun: "kv-bench without --report-only" } } else { Reading::Run };
    crate::harness::results::resume(path, &RESULTS_FILE, reading)
}

/// The geometry of `mem:PRESET` with zones of `zone_size_mib` if given.
fn geometry(device: &str, zone_size_mib: Option<u64>) -> Result<zonekit_device::Geometry> {
    let usage = |why: String| LabError::Usage(format!("--device {device:?}: {why}"));
    let name = device.strip_prefix("mem:").ok_or_else(|| usage("kv-bench formats a fresh emulated device per run; give mem:PRESET".into()))?;
    let mut p = zonekit_device::preset::find(name).ok_or_else(|| usage(format!("unknown preset; valid: {}", zonekit_device::preset::names().join(", "))))?;
    if let Some(mib) = zone_size_mib {
        // Checked, not shifted: `mib << 20` dropped the high bits (17592186044417 was 1 MiB).
        let bytes = mib.checked_mul(1 << 20).ok_or_else(|| LabError::Usage(format!("--zone-mib {mib}: too large (over 2^64 bytes)")))?;
        p = p.with_zone_size_bytes(bytes).map_err(|e| LabError::Usage(format!("--zone-mib {mib}: {e}")))?;
    }
    Ok(p.geometry)
}

/// Bytes the file system can hold: every zone but the two metadata zones, at zone capacity.
fn data_capacity_bytes(g: &zonekit_device::Geometry) -> u64 {
    let zones = (g.zone_count - g.conventional_zone_count).saturating_sub(2) as u64;
    zones * g.zone_capacity_blocks * g.block_size_bytes as u64
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
        // The flags first: a typo is named whether or not the plugin is built yet.
        geometry(&self.device, self.zone_size_mib)?;
        if self.repeats == 0 {
            return Err(LabError::Usage("--repeats: at least 1".into()));
        }
        if !self.report_only && !self.plugin.exists() {
            return Err(LabError::Usage(format!("plugin {} not found; build it with `bash plugin/build`", self.plugin.display())));
        }
        if self.repeats > 1 {
            if self.keys.len() != 1 {
                return Err(LabError::Usage(format!(
                    "--repeats {}: give one --keys value (every configuration runs the same key count in every round), not {}",
                    self.repeats,
                    self.keys.len()
                )));
            }
            if !self.configs.iter().any(|c| c.name == self.baseline.name) {
                return Err(LabError::Usage(format!("--baseline {}: throughput is relative to it, so --configs must include it", self.baseline.name)));
            }
        }
        Ok(())
    }

    /// The plugin's device spec for a configuration.
    fn fs_uri(&self, config: &KvConfig) -> String {
        let zone = self.zone_size_mib.map(|mib| format!("&zone_mib={mib}")).unwrap_or_default();
        format!("zonekit://{}?{}{zone}", self.device, config.uri_options())
    }

    /// How output files are named: the profile, and the zone size when one was given.
    fn prefix(&self) -> String {
        match self.zone_size_mib {
            Some(mib) => format!("{}-zone{mib}MiB", self.profile.name),
            None => self.profile.name.to_string(),
        }
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

    /// Runs the sweep or the rounds (and the reference), reusing rows already in `results.csv`;
    /// `on_run` sees each new run (configuration, key count, repeat, result). Returns the
    /// summary table as text and the runs that failed for another reason than running out of
    /// space (a result of the experiment); charts are written beside the results.
    pub fn run(&self, on_run: &mut dyn FnMut(&str, f64, u32, &RunResult)) -> Result<KvOutcome> {
        self.validate()?;
        if !self.report_only {
            std::fs::create_dir_all(&self.out).map_err(|e| LabError::Usage(format!("--out {}: {e}", self.out.display())))?;
        }
        let mut keys = self.keys.clone();
        keys.sort_by(f64::total_cmp);
        let g = geometry(&self.device, self.zone_size_mib)?;
        let place = Place { profile: self.profile.name, capacity_bytes: data_capacity_bytes(&g), zone_size_bytes: g.zone_size_bytes() };
        let prefix = self.prefix();

        // Earlier rows of this place: reused, so an interrupted experiment resumes.
        let results_path = self.out.join("results.csv");
        let resumed = resume(&results_path, self.report_only)?;
        let mut done: BTreeMap<(String, String, u32), RunResult> = BTreeMap::new();
        for cells in &resumed.rows {
            if let Some((p, capacity, zone, c, k, repeat, r)) = from_row(cells) {
                if (p.as_str(), capacity, zone) == (place.profile, place.capacity_bytes, place.zone_size_bytes) {
                    done.insert((c, k.to_string(), repeat), r);
                }
            }
        }
        let mut results = std::fs::OpenOptions::new().append(true).open(&results_path).map_err(LabError::io(&results_path))?;
        let mut rows: Vec<Vec<String>> = resumed.rows.clone();
        // One db_bench run, or its earlier row (None: neither, with report_only); `config`
        // None = the POSIX reference.
        let mut run = |config: Option<&KvConfig>, k: f64, repeat: u32| -> Result<Option<RunResult>> {
            let name = config.map_or(REFERENCE, |c| c.name);
            if let Some(r) = done.get(&(name.to_string(), k.to_string(), repeat)) {
                return Ok(Some(r.clone()));
            }
            if self.report_only {
                return Ok(None);
            }
            let round = if self.repeats > 1 { format!("-r{repeat}") } else { String::new() };
            let log = self.out.join(format!("{prefix}-{name}-{k}M{round}.log"));
            let r = self.run_once(config.map(|c| self.fs_uri(c)).as_deref(), (k * 1e6) as u64, &log)?;
            let cells = row(place, name, k, repeat, &r);
            results.write_all((cells.join(",") + "\n").as_bytes()).map_err(LabError::io(&results_path))?;
            rows.push(cells);
            on_run(name, k, repeat, &r);
            Ok(Some(r))
        };

        let mut targets: Vec<Option<&KvConfig>> = self.configs.iter().map(|c| Some(*c)).collect();
        let mut all: Vec<(String, f64, RunResult)> = Vec::new();
        let table = if self.repeats == 1 {
            let mut by_config: BTreeMap<String, Vec<(f64, RunResult)>> = BTreeMap::new();
            for config in &self.configs {
                for &k in &keys {
                    let Some(r) = run(Some(config), k, 0)? else { continue };
                    let completed = r.completed;
                    by_config.entry(config.name.into()).or_default().push((k, r));
                    if !completed {
                        break;
                    }
                }
            }
            if self.reference {
                for &k in &keys {
                    let Some(r) = run(None, k, 0)? else { continue };
                    by_config.entry(REFERENCE.into()).or_default().push((k, r));
                }
            }
            all.extend(by_config.iter().flat_map(|(c, runs)| runs.iter().map(move |(k, r)| (c.clone(), *k, r.clone()))));
            report(&self.out, &prefix, &by_config, place.capacity_bytes)?
        } else {
            if self.reference {
                targets.push(None);
            }
            let k = keys[0];
            let mut rounds: BTreeMap<(String, u32), RunResult> = BTreeMap::new();
            for repeat in 0..self.repeats {
                for target in round_order(&targets, repeat) {
                    let Some(r) = run(*target, k, repeat)? else { continue };
                    let name = target.map_or(REFERENCE, |c| c.name).to_string();
                    all.push((name.clone(), k, r.clone()));
                    rounds.insert((name, repeat), r);
                }
            }
            let names: Vec<&str> = targets.iter().map(|t| t.map_or(REFERENCE, |c| c.name)).collect();
            report_rounds(&self.out, &format!("{prefix}-{k}M"), &names, self.baseline.name, &rounds)?
        };
        // --report-only too: each row's own command is part of the report of the rows.
        crate::harness::results::write_atomically(&self.out.join("commands.tsv"), &self.commands_tsv(&rows))?;
        // Running out of space is what the experiment measures; anything else (a bad option,
        // a crash, a missing library) means the numbers are not the experiment's.
        let failed = all
            .iter()
            .filter(|(_, _, r)| !r.completed && !r.detail.contains("No space left") && !r.detail.contains("no space"))
            .map(|(c, k, r)| format!("{c} at {k} M keys: {}", if r.detail.is_empty() { "failed" } else { &r.detail }))
            .collect();
        Ok(KvOutcome { table, failed, set_aside: resumed.damaged })
    }
}

impl KvBench {
    /// `commands.tsv`: for each row of `results.csv`, in order, the `zonekit kv-bench`
    /// command that measures it alone (one configuration at one key count, into a directory
    /// of its own, so that the row is measured again rather than reused), or why there is
    /// none: the POSIX reference runs beside every configuration, and a row measured on
    /// another device than this run's (at the row's zone size) names its capacity.
    fn commands_tsv(&self, rows: &[Vec<String>]) -> String {
        let quote = zonekit_report::shell_word;
        let preset_zone_bytes = geometry(&self.device, None).map(|p| p.zone_size_bytes()).ok();
        let mut text = String::from("profile\tconfig\tmillion_keys\trepeat\tcommand\n");
        for cells in rows {
            let Some((profile, capacity, zone, config, k, repeat, _)) = from_row(cells) else { continue };
            let command = if config == REFERENCE {
                "# the POSIX reference: measured beside the configurations by any kv-bench without --no-reference".to_string()
            } else if geometry(&self.device, Some(zone >> 20)).map(|g| data_capacity_bytes(&g)).ok() != Some(capacity) {
                format!("# measured on a device holding {capacity} bytes of data in zones of {zone} bytes, not this run's {}", quote(&self.device))
            } else {
                let zone = if Some(zone) == preset_zone_bytes { String::new() } else { format!(" --zone-mib {}", zone >> 20) };
                format!(
                    "zonekit kv-bench --device {}{zone} --profile {profile} --configs {config} --keys {k} --no-reference --out {}",
                    quote(&self.device),
                    quote(&format!("{}-{config}-{k}M", self.out.display()))
                )
            };
            text.push_str(&format!("{profile}\t{config}\t{k}\t{repeat}\t{command}\n"));
        }
        text
    }
}

/// What [`KvBench::run`] leaves for the caller to print and judge.
#[derive(Debug)]
pub struct KvOutcome {
    pub table: String,
    /// Runs that failed for another reason than space: the caller should exit non-zero.
    pub failed: Vec<String>,
    /// Damaged rows of `results.csv` moved to `results.previous.csv` (those this run asked
    /// for were recomputed).
    pub set_aside: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::config::*;
    use crate::kv::db_bench::*;
    use crate::kv::report::*;
    use zonekit_report::Spread;

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
        let place = Place { profile: "bounded", capacity_bytes: 8 << 30, zone_size_bytes: 64 << 20 };
        let cells = row(place, "both", 7.0, 2, &r);
        assert_eq!(cells.len(), HEADER.len());
        let (p, capacity, zone, c, k, repeat, back) = from_row(&cells).unwrap();
        assert_eq!((p.as_str(), capacity, zone, c.as_str(), k, repeat), ("bounded", 8 << 30, 64 << 20, "both", 7.0, 2));
        assert_eq!(back, r);
    }

    /// A results file with one intact row, one whose bytes written were changed (125, a WAF
    /// of 1.250, where the run measured 130), one cut before its check, and one not UTF-8.
    fn damaged_results(dir: &Path) -> (PathBuf, Vec<String>, Vec<u8>) {
        let place = Place { profile: "bounded", capacity_bytes: 8 << 30, zone_size_bytes: 64 << 20 };
        let mut r =
            RunResult { completed: true, fillseq_ops_s: Some(100), overwrite_ops_s: Some(50), appended_bytes: Some(100), device_written_bytes: Some(125), ..RunResult::default() };
        let intact = row(place, "both", 4.0, 0, &r).join(",");
        r.device_written_bytes = Some(130);
        let damaged = row(place, "both", 5.0, 0, &r).join(",").replacen(",130,", ",125,", 1);
        let cut = &row(place, "both", 6.0, 0, &r).join(",")[..40];
        let mut text = format!("{}\n{intact}\n{damaged}\n{cut}\n", HEADER.join(",")).into_bytes();
        text.extend_from_slice(b"bounded,both,7,0,tr\xffe\n");
        let path = dir.join("results.csv");
        std::fs::write(&path, &text).unwrap();
        (path, vec![intact, damaged, cut.to_string()], text)
    }

    #[test]
    fn a_report_refuses_a_damaged_row_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _, text) = damaged_results(dir.path());
        let e = resume(&path, true).unwrap_err().to_string();
        assert!(e.contains("results.csv:3: the row does not match its check"), "{e}");
        let mut b = bench(1, vec![4.0, 5.0], &["both"], "zenfs", None);
        (b.report_only, b.out) = (true, dir.path().into());
        let e = b.run(&mut |_, _, _, _| panic!("a report runs nothing")).unwrap_err().to_string();
        assert!(e.contains("results.csv:3: the row does not match its check"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), text, "a report changes nothing");
        // A file from before the check column is refused whole.
        std::fs::write(&path, format!("{}\n", HEADER[..HEADER.len() - 1].join(","))).unwrap();
        let e = resume(&path, true).unwrap_err().to_string();
        assert!(e.contains("results.csv:1: not a kv-bench results file of this version"), "{e}");
        assert!(resume(&path, false).is_err(), "a run does not start it over either");
    }

    #[test]
    fn a_run_moves_damaged_rows_aside_byte_for_byte_and_reuses_only_intact_ones() {
        let dir = tempfile::tempdir().unwrap();
        let (path, lines, text) = damaged_results(dir.path());
        let resumed = resume(&path, false).unwrap();
        assert_eq!(resumed.damaged, 3);
        assert_eq!(resumed.rows, vec![lines[0].split(',').map(str::to_string).collect::<Vec<_>>()]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), format!("{}\n{}\n", HEADER.join(","), lines[0]));
        let aside = std::fs::read(crate::harness::results::previous_path(&path)).unwrap();
        let header_len = HEADER.join(",").len() + 1;
        assert_eq!(aside[header_len..], text[header_len + lines[0].len() + 1..], "the damaged rows, as they were");
        // Now clean: read back as it is.
        assert_eq!(resume(&path, false).unwrap(), Resumed { rows: resumed.rows.clone(), damaged: 0 });
        assert_eq!(resume(&path, true).unwrap().rows, resumed.rows);
        // A last row without its newline is kept, and the file ends with one again.
        std::fs::write(&path, format!("{}\n{}", HEADER.join(","), lines[0])).unwrap();
        assert_eq!(resume(&path, false).unwrap().rows, resumed.rows);
        assert!(std::fs::read_to_string(&path).unwrap().ends_with('\n'));
    }

    #[test]
    fn capacity_leaves_out_the_metadata_zones_and_follows_the_zone_size() {
        // nvmevirt-zns: 64 zones of 128 MiB (all writable); two hold the metadata log.
        let capacity = |mib| data_capacity_bytes(&geometry("mem:nvmevirt-zns", mib).unwrap());
        assert_eq!(capacity(None), (62 * 128) << 20);
        assert_eq!(capacity(Some(64)), (126 * 64) << 20);
        assert_eq!(capacity(Some(256)), (30 * 256) << 20);
        assert!(geometry("/dev/nvme0n1", None).is_err());
        let e = geometry("mem:nvmevirt-zns", Some(100)).unwrap_err().to_string();
        assert!(e.contains("--zone-mib 100") && e.contains("does not divide"), "{e}");
        // 2^44 + 1 MiB: `<< 20` kept only the 1 MiB and took it; 2^44 MiB became 0 bytes.
        for mib in [17_592_186_044_417, 17_592_186_044_416] {
            let e = geometry("mem:nvmevirt-zns", Some(mib)).unwrap_err().to_string();
            assert!(e.contains(&format!("--zone-mib {mib}: too large")), "{e}");
        }
    }

    fn run(fillseq: u64, overwrite: u64) -> RunResult {
        RunResult {
            completed: true,
            fillseq_ops_s: Some(fillseq),
            overwrite_ops_s: Some(overwrite),
            appended_bytes: Some(100),
            device_written_bytes: Some(110),
            ..RunResult::default()
        }
    }

    #[test]
    fn ratios_pair_each_configuration_with_the_baseline_of_its_round() {
        let mut rounds = BTreeMap::new();
        // The machine is twice as fast in round 1: paired ratios do not see it.
        for (rep, speed) in [(0, 1), (1, 2), (2, 1)] {
            rounds.insert(("zenfs".to_string(), rep), run(100 * speed, 50 * speed));
            rounds.insert(("both".to_string(), rep), run(90 * speed, 50 * speed + rep as u64));
        }
        let mut failed = run(1, 1);
        failed.completed = false;
        rounds.insert(("zenfs".to_string(), 3), run(100, 50));
        rounds.insert(("both".to_string(), 3), failed);
        let rows = throughput_ratios(&["zenfs", "both"], "zenfs", &rounds);
        let base = &rows[0];
        assert_eq!(base.workload, Some(Spread { min: 1.0, median: 1.0, max: 1.0, count: 4 }));
        let both = &rows[1];
        assert_eq!(both.completed_rounds, 3, "the failed round has no ratio");
        let f = both.fillseq.unwrap();
        assert_eq!((f.min, f.median, f.max, f.count), (0.9, 0.9, 0.9, 3));
        let o = both.overwrite.unwrap();
        assert_eq!((o.min, o.median, o.max), (1.0, 1.01, 1.04));
        // fillseq+overwrite: 2 / (1/90 + 1/50) over 2 / (1/100 + 1/50) in round 0.
        let w = both.workload.unwrap();
        assert!((w.min - (2.0 / (1.0 / 90.0 + 1.0 / 50.0)) / (2.0 / (1.0 / 100.0 + 1.0 / 50.0))).abs() < 1e-9, "{w:?}");
        assert!((both.waf.unwrap().median - 1.1).abs() < 1e-9);
    }

    #[test]
    fn rounds_alternate_their_order_and_the_median_of_an_even_count_is_the_middle_mean() {
        let names = ["a", "b", "c"];
        assert_eq!(round_order(&names, 0), [&"a", &"b", &"c"]);
        assert_eq!(round_order(&names, 1), [&"c", &"b", &"a"]);
        assert_eq!(round_order(&names, 2), [&"a", &"b", &"c"]);
        assert_eq!(Spread::of(vec![3.0, 1.0, 2.0, 10.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of(vec![]), None);
    }

    fn bench(repeats: u32, keys: Vec<f64>, configs: &[&str], baseline: &str, zone_size_mib: Option<u64>) -> KvBench {
        let name = |c: &KvConfig| c.name;
        KvBench {
            configs: configs.iter().map(|c| find(CONFIGS, "configuration", c, name).unwrap()).collect(),
            keys,
            device: "mem:nvmevirt-zns".into(),
            zone_size_mib,
            profile: &PROFILES[0],
            repeats,
            baseline: find(CONFIGS, "configuration", baseline, name).unwrap(),
            reference: false,
            report_only: false,
            tmpfs: "/dev/shm".into(),
            // Any file that exists: validation only checks it is there.
            plugin: std::env::current_exe().unwrap(),
            db_bench: "db_bench".into(),
            out: "unused".into(),
        }
    }

    #[test]
    fn every_row_gets_the_command_that_measures_it_alone_or_why_none_does() {
        let b = bench(1, vec![4.0], &["both"], "zenfs", None);
        let result = RunResult { completed: true, ..RunResult::default() };
        let place = |zone_mib: Option<u64>| {
            let g = geometry(&b.device, zone_mib).unwrap();
            Place { profile: "bounded", capacity_bytes: data_capacity_bytes(&g), zone_size_bytes: g.zone_size_bytes() }
        };
        let other = Place { capacity_bytes: 1 << 30, ..place(None) };
        let rows = [
            row(place(None), "both", 4.0, 0, &result),
            row(place(Some(64)), "zenfs-gc", 5.5, 0, &result),
            row(place(None), REFERENCE, 4.0, 0, &result),
            row(other, "both", 4.0, 0, &result),
        ];
        let text = b.commands_tsv(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].ends_with("zonekit kv-bench --device mem:nvmevirt-zns --profile bounded --configs both --keys 4 --no-reference --out unused-both-4M"), "{text}");
        assert!(lines[2].contains("--zone-mib 64 --profile bounded --configs zenfs-gc --keys 5.5"), "{text}");
        assert!(lines[3].contains("# the POSIX reference"), "{text}");
        assert!(lines[4].contains("# measured on a device holding 1073741824 bytes"), "{text}");
    }

    #[test]
    fn rounds_need_one_key_count_and_the_baseline_among_the_configurations() {
        assert!(bench(3, vec![4.0], &["zenfs", "both"], "zenfs", None).validate().is_ok());
        let e = bench(3, vec![4.0, 5.0], &["zenfs", "both"], "zenfs", None).validate().unwrap_err().to_string();
        assert!(e.contains("give one --keys value"), "{e}");
        let e = bench(3, vec![4.0], &["both"], "zenfs", None).validate().unwrap_err().to_string();
        assert!(e.contains("--baseline zenfs") && e.contains("must include it"), "{e}");
        assert!(bench(0, vec![4.0], &["zenfs"], "zenfs", None).validate().unwrap_err().to_string().contains("--repeats"));
        // A sweep needs no baseline among its configurations.
        assert!(bench(1, vec![4.0, 5.0], &["both"], "zenfs", None).validate().is_ok());
        assert!(bench(1, vec![4.0], &["both"], "zenfs", Some(96)).validate().is_err());
    }

    #[test]
    fn the_plugin_spec_carries_the_configuration_and_the_zone_size() {
        let b = bench(1, vec![4.0], &["zenfs-gc"], "zenfs", Some(256));
        assert_eq!(b.fs_uri(b.configs[0]), "zonekit://mem:nvmevirt-zns?alloc=zenfs&gc=on&zone_mib=256");
        assert_eq!(b.prefix(), "bounded-zone256MiB");
        let b = bench(1, vec![4.0], &["stock-gc"], "zenfs", None);
        assert_eq!(b.fs_uri(b.configs[0]), "zonekit://mem:nvmevirt-zns?alloc=first-fit&gc=on");
        assert_eq!(b.prefix(), "bounded");
        assert_eq!((seed_name("zenfs-gc"), seed_name("stock-gc"), seed_name(REFERENCE)), ("original + GC", "-", "-"));
    }
}

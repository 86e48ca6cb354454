//! One db_bench run's outcome, read from its log: completed or not, each benchmark's ops/s, the
//! bytes the plugin's report gives, zone resets and RocksDB's peak space.

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
            r.peak_file_bytes = number_after(line, "peak file bytes ").and_then(|mib| mib.checked_mul(1 << 20));
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

/// Throughput of a whole `fillseq,overwrite` run: both phases write the same number of keys,
/// so ops/s over both is the harmonic mean of the two.
pub fn workload_ops_s(r: &RunResult) -> Option<f64> {
    let (f, o) = (r.fillseq_ops_s? as f64, r.overwrite_ops_s? as f64);
    (r.completed && f > 0.0 && o > 0.0).then(|| 2.0 / (1.0 / f + 1.0 / o))
}

/// One line about a finished run, as the experiment prints it.
/// `round` is the repeat in rounds, None in a sweep.
pub fn describe_run(config: &str, k: f64, round: Option<u32>, r: &RunResult) -> String {
    format!(
        "kv-bench: {config:>11} {k:>5} M keys{}: {:<9} WAF {:<6} fillseq {:>7} ops/s, overwrite {:>7} ops/s, peak {:>5} MiB{}",
        round.map(|n| format!(", round {n}")).unwrap_or_default(),
        if r.completed { "completed" } else { "FAILED" },
        opt(r.waf().map(|w| format!("{w:.3}"))),
        opt(r.fillseq_ops_s),
        opt(r.overwrite_ops_s),
        opt(r.peak_file_bytes.map(|b| b >> 20)),
        if r.completed { String::new() } else { format!(" ({})", r.detail) }
    )
}

/// An optional figure as a table cell (empty when absent).
pub(crate) fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

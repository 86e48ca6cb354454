//! The published measurements of real drives a device model is fitted to and checked against
//! (issue 48): the CSVs `scripts/zn540-extract.py` writes under
//! `crates/zonekit-device/data/`, one measured value a row, with its parameters, its role
//! (`fit` or `validation`) and its source. `docs/results/devices-data.md` describes them.

use std::path::{Path, PathBuf};

use crate::LabError;

/// Where the measurements are in a checkout of Zonekit.
pub fn default_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../zonekit-device/data");
    dir.canonicalize().unwrap_or(dir)
}

/// One measured value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measurement {
    pub device: String,
    pub experiment: String,
    /// `fit` or `validation`.
    pub role: String,
    pub engine: String,
    pub bs_bytes: u64,
    pub qd: u32,
    pub zones: u32,
    pub fill_lbas: Option<u64>,
    pub bg_op: String,
    pub bg_bs_bytes: u64,
    pub bg_qd: u32,
    pub bg_jobs: u32,
    /// Rate limit of each background job, bytes/s (0: none).
    pub bg_rate_bytes_per_sec: u64,
    pub metric: String,
    pub value: f64,
    pub n: String,
    pub source_path: String,
    pub source_field: String,
    pub note: String,
    /// The fio threads of the run shared this many CPUs, fewer than one each (0: one each),
    /// each waiting `host_slice_ns` for one when switched out; their latencies hold that wait.
    pub host_cpus: u32,
    pub host_slice_ns: u64,
    /// `file:line` of the row in our CSVs.
    pub row: String,
}

impl Measurement {
    pub fn is_fit(&self) -> bool {
        self.role == "fit"
    }
}

/// Splits one CSV record (RFC 4180 quoting: fields in double quotes, `""` for a quote).
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    out.push(field);
    out
}

/// Reads one of the measurement CSVs.
pub fn read(path: &Path) -> Result<Vec<Measurement>, LabError> {
    let text = std::fs::read_to_string(path).map_err(|error| LabError::Io { path: path.to_path_buf(), error })?;
    let bad = |line: usize, reason: String| LabError::Results { path: path.to_path_buf(), line, reason };
    let mut lines = text.lines().enumerate();
    let header = fields(lines.next().ok_or_else(|| bad(1, "empty file".into()))?.1);
    let col = |name: &str| header.iter().position(|h| h == name).ok_or_else(|| bad(1, format!("no column {name:?}")));
    let c = [
        "device",
        "experiment",
        "role",
        "engine",
        "bs_bytes",
        "qd",
        "zones",
        "fill_lbas",
        "bg_op",
        "bg_bs_bytes",
        "bg_qd",
        "bg_jobs",
        "bg_rate_bytes_per_s",
        "metric",
        "value",
        "n",
        "source_path",
        "source_field",
        "note",
    ]
    .map(col);
    let c: Vec<usize> = c.into_iter().collect::<Result<_, _>>()?;
    // Columns later versions of the extraction added; a file without them has no such rows.
    let host = ["host_cpus", "host_slice_ns"].map(|name| header.iter().position(|h| h == name));
    let file = path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
    let dir = path.parent().and_then(|p| p.file_name()).map_or_else(String::new, |f| f.to_string_lossy().into_owned());
    let mut out = Vec::new();
    for (i, line) in lines {
        if line.is_empty() {
            continue;
        }
        let f = fields(line);
        if f.len() != header.len() {
            return Err(bad(i + 1, format!("{} fields, the header has {}", f.len(), header.len())));
        }
        let count = |v: &str| -> Result<u64, LabError> {
            let v = v.trim();
            if v.is_empty() {
                return Ok(0);
            }
            v.parse::<f64>().ok().filter(|x| *x >= 0.0).map(|x| x as u64).ok_or_else(|| bad(i + 1, format!("{:?} is not a count", v)))
        };
        let int = |k: usize| count(&f[c[k]]);
        let host_count = |k: usize| host[k].map_or(Ok(0), |col| count(&f[col]));
        let value = f[c[14]].trim().parse::<f64>().map_err(|_| bad(i + 1, format!("value {:?} is not a number", f[c[14]])))?;
        out.push(Measurement {
            device: f[c[0]].clone(),
            experiment: f[c[1]].clone(),
            role: f[c[2]].clone(),
            engine: f[c[3]].clone(),
            bs_bytes: int(4)?,
            qd: int(5)? as u32,
            zones: int(6)? as u32,
            fill_lbas: (!f[c[7]].trim().is_empty()).then(|| int(7)).transpose()?,
            bg_op: f[c[8]].clone(),
            bg_bs_bytes: int(9)?,
            bg_qd: int(10)? as u32,
            bg_jobs: int(11)? as u32,
            bg_rate_bytes_per_sec: int(12)?,
            metric: f[c[13]].clone(),
            value,
            n: f[c[15]].clone(),
            source_path: f[c[16]].clone(),
            source_field: f[c[17]].clone(),
            note: f[c[18]].clone(),
            host_cpus: host_count(0)? as u32,
            host_slice_ns: host_count(1)?,
            row: format!("{dir}/{file}:{}", i + 1),
        });
    }
    Ok(out)
}

/// Every ZN540 measurement: `io.csv`, `zone-ops.csv`, `interference.csv`, `io-uring.csv`.
pub fn read_zn540(dir: &Path) -> Result<Vec<Measurement>, LabError> {
    let mut rows = Vec::new();
    for file in ["io.csv", "zone-ops.csv", "interference.csv", "io-uring.csv"] {
        rows.extend(read(&dir.join("zn540").join(file))?);
    }
    Ok(rows)
}

/// The conventional drives' measurements: the 980 PRO's `io.csv`, the SN540's `io.csv` and
/// `interference.csv`.
pub fn read_conventional(dir: &Path) -> Result<Vec<Measurement>, LabError> {
    let mut rows = Vec::new();
    for file in ["980pro/io.csv", "sn540/io.csv", "sn540/interference.csv"] {
        rows.extend(read(&dir.join(file))?);
    }
    Ok(rows)
}

/// The rows of `experiment` (and `role`, `engine` and `metric` where given) matching `keep`.
pub fn select<'a>(rows: &'a [Measurement], experiment: &str, metric: &str, keep: impl Fn(&Measurement) -> bool + 'a) -> impl Iterator<Item = &'a Measurement> + 'a {
    let (experiment, metric) = (experiment.to_string(), metric.to_string());
    rows.iter().filter(move |r| r.experiment == experiment && r.metric == metric && keep(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_keep_their_commas_and_quotes() {
        assert_eq!(fields(r#"a,"b,c","say ""hi""",,e"#), vec!["a", "b,c", r#"say "hi""#, "", "e"]);
    }

    #[test]
    fn the_zn540_data_reads_whole() {
        let rows = read_zn540(&default_dir()).unwrap();
        assert!(rows.len() > 1500, "{}", rows.len());
        let p50 = select(&rows, "randread", "clat_ns_p50", |r| r.bs_bytes == 4096 && r.qd == 1 && r.zones == 1).next().unwrap();
        assert_eq!(p50.value, 69120.0);
        assert!(rows.iter().all(|r| r.role == "fit" || r.role == "validation"));
    }

    #[test]
    fn only_the_14_zone_runs_had_their_threads_share_cpus() {
        // fio's usr_cpu is 71.4 % = 10/14 in exactly those runs (scripts/zn540-extract.py).
        let rows = read_zn540(&default_dir()).unwrap();
        let shared: Vec<&Measurement> = rows.iter().filter(|r| r.host_cpus > 0).collect();
        assert_eq!(shared.len(), 9 * 6, "nine runs, six metrics each");
        for r in shared {
            assert_eq!((r.engine.as_str(), r.zones, r.qd, r.host_cpus), ("fio-spdk", 14, 1, 10), "{}", r.row);
            assert!((14_000_000..15_500_000).contains(&r.host_slice_ns), "{}: {}", r.row, r.host_slice_ns);
        }
    }
}

//! Seed 002's timing model fitted to the thesis' measured throughput (issue 32, item 2).
//!
//! Under [`Timing::Synchronous`](zonekit_ocssd::Timing) every flash command waits for the one
//! before, so a replay's time is a linear function of what it did:
//!
//! `time_ns = t_program · programs + t_read · reads + t_erase · erases + t_request · write_requests`
//!
//! (to within the ~30 ns per page a 32 KiB page takes on the synchronous engine's 1 TB/s
//! "channel"). Table 3.1 gives the first three and no per-request cost. This module fits the four
//! to the thesis' table 4.2 ([`THESIS_TABLE_4_2`]): eight cells, our counts from the replays,
//! the thesis' MB/s. Each cell's time is the bytes it moved over the thesis' rate; the fit
//! minimises the sum of squared *relative* time errors (`predicted / thesis − 1`, so a slow
//! cell weighs as much as a fast one) over non-negative costs ([`nnls`]: exact, by enumerating
//! the active sets, which is cheap for four unknowns).
//!
//! [`fit_table`] reports three models: (a) table 3.1 as measured, (b) the four costs fitted,
//! with leave-one-out predictions (refit on seven cells, predict the eighth) to show whether it
//! predicts or only fits, and (c) table 3.1's ratios kept, one scale and the per-request cost
//! fitted. Each comes with its implied sequential-write rate, beside the thesis' "about 300 MB/s".
//!
//! The thesis' MB: table 4.2 does not say. A change of unit scales every cell's time alike, so
//! fits (b) and (c) have the same residuals under either (their costs scale by 1.048576); only
//! table 3.1 can tell them apart. [`unit_check`] scores both; 10^6 bytes (the unit of
//! [`SsdReport::mb_per_sec`]) is the assumption ([`THESIS_MB_BYTES`]).

use zonekit_ocssd::{CommandCosts, SsdReport};

/// Bytes in the thesis' MB (10^6, as [`SsdReport::mb_per_sec`]; see the module doc).
pub const THESIS_MB_BYTES: f64 = 1e6;
/// The other reading of the thesis' MB, scored by [`unit_check`].
pub const MIB_BYTES: f64 = 1_048_576.0;

/// One cell of the thesis' table 4.2.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ThesisCell {
    pub trace: &'static str,
    pub ftl: &'static str,
    pub mb_per_sec: f64,
}

/// The thesis' table 4.2, "不同优化方法的 IO 吞吐量 (MB/s)" (IO throughput of the optimisation
/// methods), §4.2 of seed 002 (/work/shared/seeds/002_082c1c97a125f4a2.txt, line ~525):
/// replays of the LAMMPS and MACDRP traces through PM_GCL, PM_GCC, SBM_GCL and HSBM_GCL on the
/// qemu-ox open-channel SSD of table 4.1.
pub const THESIS_TABLE_4_2: [ThesisCell; 8] = [
    ThesisCell { trace: "lammps", ftl: "pm-gcl", mb_per_sec: 261.487 },
    ThesisCell { trace: "lammps", ftl: "pm-gcc", mb_per_sec: 72.324 },
    ThesisCell { trace: "lammps", ftl: "sbm-gcl", mb_per_sec: 210.354 },
    ThesisCell { trace: "lammps", ftl: "hsbm-gcl", mb_per_sec: 220.670 },
    ThesisCell { trace: "macdrp", ftl: "pm-gcl", mb_per_sec: 259.303 },
    ThesisCell { trace: "macdrp", ftl: "pm-gcc", mb_per_sec: 153.016 },
    ThesisCell { trace: "macdrp", ftl: "sbm-gcl", mb_per_sec: 84.621 },
    ThesisCell { trace: "macdrp", ftl: "hsbm-gcl", mb_per_sec: 183.848 },
];

/// The thesis' "sequential write rate about 300 MB/s" (§4.2, Fig. 4.3).
pub const THESIS_SEQUENTIAL_MB_PER_SEC: f64 = 300.0;

/// The fit behind `--timing fitted` ([`CommandCosts::FITTED`]) and results.csv's
/// `mb_per_sec_fitted`; the experiment warns when a fresh fit of it drifts from the constants.
pub const FITTED_MODEL: ModelKind = ModelKind::ScaledTable31;

/// Unknowns [`nnls`] solves for at most: it enumerates 2^n active sets.
pub const NNLS_UNKNOWNS_MAX: usize = 8;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    #[error("{cells} cells for {unknowns} unknowns: need at least as many cells as unknowns")]
    TooFewCells { cells: usize, unknowns: usize },
    #[error("{0} unknowns: at most {NNLS_UNKNOWNS_MAX}")]
    TooManyUnknowns(usize),
    #[error("row {row} has {got} values, expected {expected}")]
    Ragged { row: usize, got: usize, expected: usize },
    #[error("cell {0}: a value is not finite or a time is not positive")]
    BadValue(usize),
}

/// What the time model counts of one run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandCounts {
    pub pages_programmed: u64,
    pub pages_read: u64,
    pub blocks_erased: u64,
    pub write_requests: u64,
    /// User bytes moved (written and read), what MB/s is of.
    pub user_bytes: u64,
}

impl CommandCounts {
    pub fn of(report: &SsdReport) -> CommandCounts {
        CommandCounts {
            pages_programmed: report.flash.pages_programmed,
            pages_read: report.flash.pages_read,
            blocks_erased: report.flash.blocks_erased,
            write_requests: report.write_requests,
            user_bytes: report.user_bytes_written + report.user_bytes_read,
        }
    }

    fn features(&self) -> [f64; 4] {
        [self.pages_programmed as f64, self.pages_read as f64, self.blocks_erased as f64, self.write_requests as f64]
    }
}

/// A linear time model: nanoseconds per program, read, erase and write request.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TimeModel {
    pub program_ns: f64,
    pub read_ns: f64,
    pub erase_ns: f64,
    pub write_request_ns: f64,
}

impl TimeModel {
    pub fn from_costs(c: CommandCosts) -> TimeModel {
        TimeModel { program_ns: c.program_ns as f64, read_ns: c.read_ns as f64, erase_ns: c.erase_ns as f64, write_request_ns: c.write_request_ns as f64 }
    }

    fn from_array(x: [f64; 4]) -> TimeModel {
        TimeModel { program_ns: x[0], read_ns: x[1], erase_ns: x[2], write_request_ns: x[3] }
    }

    pub fn as_array(&self) -> [f64; 4] {
        [self.program_ns, self.read_ns, self.erase_ns, self.write_request_ns]
    }

    /// The costs rounded to whole nanoseconds, as the engine takes them.
    pub fn to_costs(&self) -> CommandCosts {
        let ns = |v: f64| v.max(0.0).round() as u64;
        CommandCosts { program_ns: ns(self.program_ns), read_ns: ns(self.read_ns), erase_ns: ns(self.erase_ns), write_request_ns: ns(self.write_request_ns) }
    }

    pub fn time_ns(&self, c: &CommandCounts) -> f64 {
        self.as_array().iter().zip(c.features()).map(|(t, n)| t * n).sum()
    }

    /// MB/s (MB of `mb_bytes` bytes) the model predicts for a run of these counts; 0 when it
    /// predicts no time.
    pub fn mb_per_sec(&self, c: &CommandCounts, mb_bytes: f64) -> f64 {
        let ns = self.time_ns(c);
        if ns > 0.0 {
            c.user_bytes as f64 / mb_bytes / (ns / 1e9)
        } else {
            0.0
        }
    }

    /// Sequential writes of whole blocks, one request per block: `pages_per_block` programs,
    /// one erase (the block was used before) and one request per block, in MB (10^6 bytes)/s.
    pub fn sequential_mb_per_sec(&self, page_bytes: u64, pages_per_block: u64) -> f64 {
        let c = CommandCounts { pages_programmed: pages_per_block, pages_read: 0, blocks_erased: 1, write_requests: 1, user_bytes: page_bytes * pages_per_block };
        self.mb_per_sec(&c, 1e6)
    }

    /// The largest difference of one cost from `other`'s, relative to the larger of the two
    /// (0 when both are 0).
    pub fn max_relative_difference(&self, other: &TimeModel) -> f64 {
        self.as_array()
            .iter()
            .zip(other.as_array())
            .map(|(a, b)| {
                let scale = a.abs().max(b.abs());
                if scale == 0.0 {
                    0.0
                } else {
                    (a - b).abs() / scale
                }
            })
            .fold(0.0, f64::max)
    }
}

/// One cell to fit: our counts for a trace and FTL, and the thesis' rate.
#[derive(Clone, Debug, PartialEq)]
pub struct FitCell {
    pub trace: String,
    pub ftl: String,
    pub counts: CommandCounts,
    pub thesis_mb_per_sec: f64,
}

impl FitCell {
    /// The time the thesis' rate implies for our bytes, in ns.
    fn thesis_time_ns(&self, mb_bytes: f64) -> f64 {
        self.counts.user_bytes as f64 / mb_bytes / self.thesis_mb_per_sec * 1e9
    }
}

/// Pairs table 4.2 with our runs: `counts(trace, ftl)` gives a cell's counts, `None` when that
/// run is missing (the cell is left out and named in the second list).
pub fn cells(counts: impl Fn(&str, &str) -> Option<CommandCounts>) -> (Vec<FitCell>, Vec<String>) {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for cell in THESIS_TABLE_4_2 {
        match counts(cell.trace, cell.ftl) {
            Some(counts) => found.push(FitCell { trace: cell.trace.into(), ftl: cell.ftl.into(), counts, thesis_mb_per_sec: cell.mb_per_sec }),
            None => missing.push(format!("{} {}", cell.trace, cell.ftl)),
        }
    }
    (found, missing)
}

/// Non-negative least squares, `min |A x − b|²` over `x ≥ 0`, exactly: the optimum is the
/// unconstrained least-squares solution on its own support, so the best feasible solution over
/// every support is it. Columns are scaled to unit norm before the normal equations are solved
/// (counts of programs and of requests differ by orders of magnitude). A support whose columns
/// are dependent is skipped; the empty support (x = 0) is always a candidate.
pub fn nnls(a: &[Vec<f64>], b: &[f64]) -> Result<Vec<f64>, FitError> {
    let n = a.first().map_or(0, |r| r.len());
    if n > NNLS_UNKNOWNS_MAX {
        return Err(FitError::TooManyUnknowns(n));
    }
    if a.len() < n || a.len() != b.len() {
        return Err(FitError::TooFewCells { cells: a.len().min(b.len()), unknowns: n });
    }
    for (row, r) in a.iter().enumerate() {
        if r.len() != n {
            return Err(FitError::Ragged { row, got: r.len(), expected: n });
        }
        if r.iter().chain([&b[row]]).any(|v| !v.is_finite()) {
            return Err(FitError::BadValue(row));
        }
    }
    let norms: Vec<f64> = (0..n).map(|j| a.iter().map(|r| r[j] * r[j]).sum::<f64>().sqrt()).collect();
    let objective = |x: &[f64]| a.iter().zip(b).map(|(r, bi)| (r.iter().zip(x).map(|(v, xj)| v * xj).sum::<f64>() - bi).powi(2)).sum::<f64>();
    let mut best = (objective(&vec![0.0; n]), vec![0.0; n]);
    for mask in 1u32..(1 << n) {
        let support: Vec<usize> = (0..n).filter(|j| mask >> j & 1 == 1).collect();
        if support.iter().any(|&j| norms[j] == 0.0) {
            continue;
        }
        // Normal equations of the scaled columns on this support.
        let k = support.len();
        let col = |r: &Vec<f64>, s: usize| r[support[s]] / norms[support[s]];
        let mut m = vec![vec![0.0; k + 1]; k];
        for (s, row) in m.iter_mut().enumerate() {
            for (t, cell) in row.iter_mut().take(k).enumerate() {
                *cell = a.iter().map(|r| col(r, s) * col(r, t)).sum();
            }
            row[k] = a.iter().zip(b).map(|(r, bi)| col(r, s) * bi).sum();
        }
        let Some(y) = solve(m) else { continue };
        if y.iter().any(|&v| v < 0.0) {
            continue;
        }
        let mut x = vec![0.0; n];
        for (s, &j) in support.iter().enumerate() {
            x[j] = y[s] / norms[j];
        }
        let value = objective(&x);
        if value < best.0 {
            best = (value, x);
        }
    }
    Ok(best.1)
}

/// Gaussian elimination with partial pivoting on an augmented k × (k + 1) system; `None` when
/// it is singular (a pivot below 1e-12 of the largest diagonal, in unit-norm columns).
fn solve(mut m: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let k = m.len();
    let scale = (0..k).map(|i| m[i][i].abs()).fold(0.0, f64::max);
    for c in 0..k {
        let p = (c..k).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))?;
        if m[p][c].abs() <= 1e-12 * scale {
            return None;
        }
        m.swap(c, p);
        let (done, rest) = m.split_at_mut(c + 1);
        let pivot = &done[c];
        for row in rest {
            let f = row[c] / pivot[c];
            for (v, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                *v -= f * p;
            }
        }
    }
    let mut x = vec![0.0; k];
    for c in (0..k).rev() {
        let s: f64 = (c + 1..k).map(|t| m[c][t] * x[t]).sum();
        x[c] = (m[c][k] - s) / m[c][c];
    }
    Some(x)
}

/// The three models of the module doc.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// (a) Table 3.1 as measured, no per-request cost.
    Table31,
    /// (b) The four costs fitted.
    FourCosts,
    /// (c) Table 3.1's ratios, one scale and the per-request cost fitted.
    ScaledTable31,
}

impl ModelKind {
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Table31 => "table-3.1",
            ModelKind::FourCosts => "fit-four-costs",
            ModelKind::ScaledTable31 => "fit-scaled-table-3.1",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            ModelKind::Table31 => "(a) table 3.1, unfitted",
            ModelKind::FourCosts => "(b) four costs fitted",
            ModelKind::ScaledTable31 => "(c) table 3.1 × scale + per-request cost",
        }
    }

    /// The model fitted to `cells` (MB of `mb_bytes` bytes).
    pub fn fit(self, cells: &[FitCell], mb_bytes: f64) -> Result<TimeModel, FitError> {
        let table = TimeModel::from_costs(CommandCosts::TABLE_3_1);
        for (i, c) in cells.iter().enumerate() {
            if !(c.thesis_mb_per_sec > 0.0 && c.thesis_mb_per_sec.is_finite()) || c.counts.user_bytes == 0 {
                return Err(FitError::BadValue(i));
            }
        }
        // Checked here, not only by `nnls`: with no cells it sees no rows, hence no unknowns,
        // and returns an empty solution the models would index.
        if cells.len() < unknowns(self) {
            return Err(FitError::TooFewCells { cells: cells.len(), unknowns: unknowns(self) });
        }
        // Relative error: each row is divided by the cell's thesis time.
        let target = vec![1.0; cells.len()];
        match self {
            ModelKind::Table31 => Ok(table),
            ModelKind::FourCosts => {
                let rows: Vec<Vec<f64>> = cells.iter().map(|c| c.counts.features().iter().map(|f| f / c.thesis_time_ns(mb_bytes)).collect()).collect();
                let x = nnls(&rows, &target)?;
                Ok(TimeModel::from_array([x[0], x[1], x[2], x[3]]))
            }
            ModelKind::ScaledTable31 => {
                let flash_only = TimeModel { write_request_ns: 0.0, ..table };
                let rows: Vec<Vec<f64>> = cells
                    .iter()
                    .map(|c| {
                        let t = c.thesis_time_ns(mb_bytes);
                        vec![flash_only.time_ns(&c.counts) / t, c.counts.write_requests as f64 / t]
                    })
                    .collect();
                let x = nnls(&rows, &target)?;
                Ok(TimeModel { program_ns: x[0] * table.program_ns, read_ns: x[0] * table.read_ns, erase_ns: x[0] * table.erase_ns, write_request_ns: x[1] })
            }
        }
    }
}

/// One model's fit and how it does on each cell.
#[derive(Clone, Debug)]
pub struct ModelFit {
    pub kind: ModelKind,
    pub model: TimeModel,
    /// Predicted MB/s per cell, in the order of the cells.
    pub predicted_mb_per_sec: Vec<f64>,
    /// `predicted / thesis − 1` per cell.
    pub residual_ratio: Vec<f64>,
    pub rms_ratio: f64,
    /// Leave-one-out: each cell predicted by the model refitted on the others (fitted models
    /// only, and only with more cells than unknowns).
    pub loo_mb_per_sec: Option<Vec<f64>>,
    pub loo_residual_ratio: Option<Vec<f64>>,
    pub loo_rms_ratio: Option<f64>,
    /// [`TimeModel::sequential_mb_per_sec`] of 32 KiB pages, 32 per block (table 4.1).
    pub sequential_mb_per_sec: f64,
    /// The same without the per-request cost (requests of many blocks, or fox's own).
    pub sequential_flash_mb_per_sec: f64,
}

fn rms(v: &[f64]) -> f64 {
    (v.iter().map(|r| r * r).sum::<f64>() / v.len().max(1) as f64).sqrt()
}

fn unknowns(kind: ModelKind) -> usize {
    match kind {
        ModelKind::Table31 => 0,
        ModelKind::FourCosts => 4,
        ModelKind::ScaledTable31 => 2,
    }
}

/// Fits `kind` to `cells` and scores it, leave-one-out included.
pub fn fit_model(kind: ModelKind, cells: &[FitCell], mb_bytes: f64) -> Result<ModelFit, FitError> {
    let model = kind.fit(cells, mb_bytes)?;
    let predicted: Vec<f64> = cells.iter().map(|c| model.mb_per_sec(&c.counts, mb_bytes)).collect();
    let residual: Vec<f64> = predicted.iter().zip(cells).map(|(p, c)| p / c.thesis_mb_per_sec - 1.0).collect();
    let loo = if unknowns(kind) > 0 && cells.len() > unknowns(kind) {
        let mut out = Vec::with_capacity(cells.len());
        for i in 0..cells.len() {
            let rest: Vec<FitCell> = cells.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, c)| c.clone()).collect();
            out.push(kind.fit(&rest, mb_bytes)?.mb_per_sec(&cells[i].counts, mb_bytes));
        }
        Some(out)
    } else {
        None
    };
    let loo_residual: Option<Vec<f64>> = loo.as_ref().map(|l| l.iter().zip(cells).map(|(p, c)| p / c.thesis_mb_per_sec - 1.0).collect());
    Ok(ModelFit {
        kind,
        model,
        rms_ratio: rms(&residual),
        predicted_mb_per_sec: predicted,
        residual_ratio: residual,
        loo_rms_ratio: loo_residual.as_deref().map(rms),
        loo_mb_per_sec: loo,
        loo_residual_ratio: loo_residual,
        sequential_mb_per_sec: model.sequential_mb_per_sec(32 * 1024, 32),
        sequential_flash_mb_per_sec: TimeModel { write_request_ns: 0.0, ..model }.sequential_mb_per_sec(32 * 1024, 32),
    })
}

/// Everything [`fit_table`] computes.
#[derive(Clone, Debug)]
pub struct TimingFit {
    pub cells: Vec<FitCell>,
    /// Cells of table 4.2 with no run to pair them with.
    pub missing: Vec<String>,
    /// (a), (b), (c) in that order.
    pub models: Vec<ModelFit>,
    /// [`unit_check`] of the cells.
    pub units: Vec<UnitScore>,
}

impl TimingFit {
    pub fn model(&self, kind: ModelKind) -> Option<&ModelFit> {
        self.models.iter().find(|m| m.kind == kind)
    }
}

/// How table 3.1 agrees with table 4.2 under one reading of the thesis' MB.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct UnitScore {
    pub mb_bytes: f64,
    /// RMS relative residual of model (a).
    pub table31_rms_ratio: f64,
    /// The scale fit (c) puts on table 3.1 (1 = table 3.1 as measured).
    pub table31_scale: f64,
}

/// Scores both readings of the thesis' MB against table 3.1 (the fitted models cannot tell
/// them apart; see the module doc).
pub fn unit_check(cells: &[FitCell]) -> Result<Vec<UnitScore>, FitError> {
    [THESIS_MB_BYTES, MIB_BYTES]
        .into_iter()
        .map(|mb_bytes| {
            let a = fit_model(ModelKind::Table31, cells, mb_bytes)?;
            let c = ModelKind::ScaledTable31.fit(cells, mb_bytes)?;
            Ok(UnitScore { mb_bytes, table31_rms_ratio: a.rms_ratio, table31_scale: c.program_ns / CommandCosts::TABLE_3_1.program_ns as f64 })
        })
        .collect()
}

/// Fits models (a), (b) and (c) to `cells` under [`THESIS_MB_BYTES`].
pub fn fit_table(cells: Vec<FitCell>, missing: Vec<String>) -> Result<TimingFit, FitError> {
    let models = [ModelKind::Table31, ModelKind::FourCosts, ModelKind::ScaledTable31].into_iter().map(|k| fit_model(k, &cells, THESIS_MB_BYTES)).collect::<Result<Vec<_>, _>>()?;
    let units = unit_check(&cells)?;
    Ok(TimingFit { cells, missing, models, units })
}

/// Columns of `timing-fit.csv`: one row per model and cell, the model's costs repeated.
pub const FIT_COLUMNS: [&str; 21] = [
    "model",
    "t_program_us",
    "t_read_us",
    "t_erase_us",
    "t_request_us",
    "rms_pct",
    "loo_rms_pct",
    "sequential_mb_per_sec",
    "sequential_flash_mb_per_sec",
    "trace",
    "ftl",
    "pages_programmed",
    "pages_read",
    "blocks_erased",
    "write_requests",
    "user_bytes",
    "thesis_mb_per_sec",
    "predicted_mb_per_sec",
    "residual_pct",
    "loo_mb_per_sec",
    "loo_residual_pct",
];

/// `timing-fit.csv`'s rows.
pub fn fit_rows(fit: &TimingFit) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for m in &fit.models {
        for (i, c) in fit.cells.iter().enumerate() {
            let opt = |v: Option<f64>, digits: usize| v.map_or(String::new(), |v| format!("{v:.digits$}"));
            rows.push(vec![
                m.kind.name().to_string(),
                format!("{:.3}", m.model.program_ns / 1e3),
                format!("{:.3}", m.model.read_ns / 1e3),
                format!("{:.3}", m.model.erase_ns / 1e3),
                format!("{:.3}", m.model.write_request_ns / 1e3),
                format!("{:.2}", m.rms_ratio * 100.0),
                opt(m.loo_rms_ratio.map(|r| r * 100.0), 2),
                format!("{:.1}", m.sequential_mb_per_sec),
                format!("{:.1}", m.sequential_flash_mb_per_sec),
                c.trace.clone(),
                c.ftl.clone(),
                c.counts.pages_programmed.to_string(),
                c.counts.pages_read.to_string(),
                c.counts.blocks_erased.to_string(),
                c.counts.write_requests.to_string(),
                c.counts.user_bytes.to_string(),
                format!("{:.3}", c.thesis_mb_per_sec),
                format!("{:.3}", m.predicted_mb_per_sec[i]),
                format!("{:.2}", m.residual_ratio[i] * 100.0),
                opt(m.loo_mb_per_sec.as_ref().map(|l| l[i]), 3),
                opt(m.loo_residual_ratio.as_ref().map(|l| l[i] * 100.0), 2),
            ]);
        }
    }
    rows
}

/// The "Timing model fit" section of the summary (markdown). `scale` is the generators'; the
/// built-in [`CommandCosts::FITTED`] are checked against a fresh fit only at scale 1, the
/// scale they were fitted at.
pub fn summary_section(fit: &TimingFit, scale: f64) -> String {
    use std::fmt::Write;
    let mut text = String::from("\n## Timing model fit (issue 32): table 3.1 against table 4.2\n\n");
    text.push_str(
        "Synchronous time is linear in the counts: time = t_program·programs + t_read·reads + t_erase·erases + t_request·write requests. \
         Fitted to table 4.2's eight cells (our counts, the thesis' MB/s, MB = 10^6 bytes), minimising squared relative time error, costs ≥ 0. \
         LOO: each cell predicted by the model refitted on the other seven. Sequential: 32 KiB pages, 32 per block, one erase and one request per block \
         (the thesis: about 300 MB/s).\n\n",
    );
    if !fit.missing.is_empty() {
        let _ = writeln!(text, "Left out (no run): {}.\n", fit.missing.join(", "));
    }
    // Why fit (b)'s program and erase costs are poorly determined: their counts move together.
    let ratios: Vec<f64> = fit.cells.iter().filter(|c| c.counts.blocks_erased > 0).map(|c| c.counts.pages_programmed as f64 / c.counts.blocks_erased as f64).collect();
    if !ratios.is_empty() {
        let (lo, hi) = (ratios.iter().copied().fold(f64::INFINITY, f64::min), ratios.iter().copied().fold(0.0, f64::max));
        let _ =
            writeln!(text, "Programs per erase over the cells: {lo:.1} to {hi:.1}; the nearer these are, the less the cells can tell t_program from t_erase / pages per block.\n");
    }
    let us = |ns: f64| format!("{:.1}", ns / 1e3);
    let pct = |r: f64| format!("{:+.1}", r * 100.0);
    let rows: Vec<Vec<String>> = fit
        .models
        .iter()
        .map(|m| {
            vec![
                m.kind.describe().to_string(),
                us(m.model.program_ns),
                us(m.model.read_ns),
                us(m.model.erase_ns),
                us(m.model.write_request_ns),
                format!("{:.1}", m.rms_ratio * 100.0),
                m.loo_rms_ratio.map_or("—".into(), |r| format!("{:.1}", r * 100.0)),
                format!("{:.1}", m.sequential_mb_per_sec),
                format!("{:.1}", m.sequential_flash_mb_per_sec),
            ]
        })
        .collect();
    text.push_str(&zonekit_report::markdown_table(
        &["model", "t_program µs", "t_read µs", "t_erase µs", "t_request µs", "RMS %", "LOO RMS %", "sequential MB/s", "without t_request"],
        &rows,
    ));
    text.push_str("\nPer cell: predicted MB/s (residual %), thesis in the third column.\n\n");
    let mut cell_rows = Vec::new();
    for (i, c) in fit.cells.iter().enumerate() {
        let mut row = vec![c.trace.clone(), c.ftl.clone(), format!("{:.1}", c.thesis_mb_per_sec)];
        for m in &fit.models {
            row.push(format!("{:.1} ({})", m.predicted_mb_per_sec[i], pct(m.residual_ratio[i])));
        }
        let b = fit.model(ModelKind::FourCosts);
        row.push(b.and_then(|b| Some(format!("{:.1} ({})", b.loo_mb_per_sec.as_ref()?[i], pct(b.loo_residual_ratio.as_ref()?[i])))).unwrap_or("—".into()));
        cell_rows.push(row);
    }
    text.push_str(&zonekit_report::markdown_table(&["trace", "FTL", "thesis", "(a) table 3.1", "(b) fitted", "(c) scaled", "(b) LOO"], &cell_rows));
    text.push_str("\nThe thesis' MB: fits (b) and (c) fit equally under 10^6 or 2^20 bytes (their costs scale by 1.048576); table 3.1 tells them apart:\n\n");
    let unit_rows: Vec<Vec<String>> = fit
        .units
        .iter()
        .map(|u| {
            vec![
                if u.mb_bytes == THESIS_MB_BYTES { "10^6 bytes".into() } else { "2^20 bytes".into() },
                format!("{:.1}", u.table31_rms_ratio * 100.0),
                format!("{:.3}", u.table31_scale),
            ]
        })
        .collect();
    text.push_str(&zonekit_report::markdown_table(&["MB", "(a) RMS %", "(c) scale on table 3.1"], &unit_rows));
    if let Some(b) = fit.model(FITTED_MODEL) {
        let built_in = TimeModel::from_costs(CommandCosts::FITTED);
        let drift = b.model.max_relative_difference(&built_in);
        let c = CommandCosts::FITTED;
        let _ = write!(
            text,
            "\nBuilt-in `--timing fitted` (CommandCosts::FITTED, fit {}): program {} µs, read {} µs, erase {} µs, request {} µs. ",
            FITTED_MODEL.describe(),
            us(c.program_ns as f64),
            us(c.read_ns as f64),
            us(c.erase_ns as f64),
            us(c.write_request_ns as f64)
        );
        if scale != 1.0 {
            let _ = writeln!(text, "Not checked against this fit: the generators ran at scale {scale}, the constants were fitted at scale 1.");
        } else if drift > 0.01 {
            let fresh = b.model.to_costs();
            let _ = writeln!(
                text,
                "\n\n**WARNING: this fit differs from the built-in constants by {:.1} % (more than 1 %): update `CommandCosts::FITTED` in crates/zonekit-ocssd/src/ssd.rs to program {} ns, read {} ns, erase {} ns, request {} ns.**",
                drift * 100.0,
                fresh.program_ns,
                fresh.read_ns,
                fresh.erase_ns,
                fresh.write_request_ns
            );
        } else {
            let _ = writeln!(text, "This fit agrees with them to {:.2} %.", drift * 100.0);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight cells of varied counts whose thesis rates are exactly `truth`'s predictions.
    fn exact_cells(truth: &TimeModel) -> Vec<FitCell> {
        let counts = [
            (220_000, 0, 6_000, 2_600),
            (600_000, 380_000, 18_000, 2_600),
            (300_000, 90_000, 9_000, 2_600),
            (260_000, 40_000, 8_000, 2_600),
            (260_000, 2_000, 8_000, 95_000),
            (400_000, 150_000, 12_000, 95_000),
            (900_000, 640_000, 27_000, 95_000),
            (330_000, 70_000, 10_500, 95_000),
        ];
        counts
            .iter()
            .enumerate()
            .map(|(i, &(p, r, e, w))| {
                let counts = CommandCounts { pages_programmed: p, pages_read: r, blocks_erased: e, write_requests: w, user_bytes: 7_000_000_000 };
                let thesis_mb_per_sec = truth.mb_per_sec(&counts, THESIS_MB_BYTES);
                FitCell { trace: format!("t{i}"), ftl: "x".into(), counts, thesis_mb_per_sec }
            })
            .collect()
    }

    #[test]
    fn the_four_cost_fit_recovers_known_costs_from_exact_data() {
        let truth = TimeModel { program_ns: 118_000.0, read_ns: 87_000.0, erase_ns: 520_000.0, write_request_ns: 35_000.0 };
        let fit = fit_model(ModelKind::FourCosts, &exact_cells(&truth), THESIS_MB_BYTES).unwrap();
        assert!(fit.model.max_relative_difference(&truth) < 1e-6, "{:?}", fit.model);
        assert!(fit.rms_ratio < 1e-9, "{}", fit.rms_ratio);
    }

    #[test]
    fn leave_one_out_on_exact_data_predicts_every_cell() {
        let truth = TimeModel { program_ns: 116_000.0, read_ns: 101_000.0, erase_ns: 434_000.0, write_request_ns: 12_000.0 };
        let fit = fit_model(ModelKind::FourCosts, &exact_cells(&truth), THESIS_MB_BYTES).unwrap();
        let loo = fit.loo_residual_ratio.unwrap();
        assert_eq!(loo.len(), 8);
        assert!(loo.iter().all(|r| r.abs() < 1e-9), "{loo:?}");
        // Table 3.1 scaled by 1 with this request cost: fit (c) finds both.
        let c = fit_model(ModelKind::ScaledTable31, &exact_cells(&truth), THESIS_MB_BYTES).unwrap();
        assert!(c.model.max_relative_difference(&truth) < 1e-6, "{:?}", c.model);
    }

    #[test]
    fn nnls_clamps_a_negative_coefficient_to_zero() {
        // b = 2·x1 − 1·x2 exactly; x2 ≥ 0 forces x2 = 0, and x1 is then the least-squares
        // fit of b on the first column alone.
        let a: Vec<Vec<f64>> = (1..=6).map(|i| vec![i as f64, (i * i) as f64 / 4.0]).collect();
        let b: Vec<f64> = a.iter().map(|r| 2.0 * r[0] - r[1]).collect();
        let x = nnls(&a, &b).unwrap();
        assert_eq!(x[1], 0.0);
        let x1 = a.iter().zip(&b).map(|(r, bi)| r[0] * bi).sum::<f64>() / a.iter().map(|r| r[0] * r[0]).sum::<f64>();
        assert!(x1 > 0.0 && (x[0] - x1).abs() < 1e-9 * x1, "{x:?} vs {x1}");
        // All negative: x = 0.
        let neg: Vec<f64> = b.iter().map(|v| -v.abs() - 1.0).collect();
        assert_eq!(nnls(&a, &neg).unwrap(), vec![0.0, 0.0]);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert_eq!(nnls(&[vec![1.0, 2.0]], &[1.0]), Err(FitError::TooFewCells { cells: 1, unknowns: 2 }));
        assert_eq!(nnls(&[vec![1.0], vec![1.0, 2.0]], &[1.0, 1.0]), Err(FitError::Ragged { row: 1, got: 2, expected: 1 }));
        assert_eq!(nnls(&[vec![f64::NAN]], &[1.0]), Err(FitError::BadValue(0)));
        assert!(matches!(nnls(&vec![vec![1.0; 9]; 9], &[1.0; 9]), Err(FitError::TooManyUnknowns(9))));
        // Dependent columns are skipped, not divided by zero.
        let x = nnls(&[vec![1.0, 1.0], vec![2.0, 2.0], vec![3.0, 3.0]], &[2.0, 4.0, 6.0]).unwrap();
        assert!((x[0] + x[1] - 2.0).abs() < 1e-9, "{x:?}");
        let cell = FitCell { trace: "t".into(), ftl: "f".into(), counts: CommandCounts::default(), thesis_mb_per_sec: 100.0 };
        assert_eq!(ModelKind::FourCosts.fit(&[cell], THESIS_MB_BYTES), Err(FitError::BadValue(0)));
        // No cells (an experiment whose runs all failed): refused, not a panic.
        assert_eq!(ModelKind::FourCosts.fit(&[], THESIS_MB_BYTES), Err(FitError::TooFewCells { cells: 0, unknowns: 4 }));
        assert_eq!(ModelKind::ScaledTable31.fit(&[], THESIS_MB_BYTES), Err(FitError::TooFewCells { cells: 0, unknowns: 2 }));
    }

    #[test]
    fn table_3_1_writes_sequentially_at_about_the_thesis_rate() {
        let a = TimeModel::from_costs(CommandCosts::TABLE_3_1);
        // 1 MiB per 32 × 116 + 434 µs.
        let rate = a.sequential_mb_per_sec(32 * 1024, 32);
        assert!((rate - 1_048_576.0 / (32.0 * 116.0 + 434.0)).abs() < 1e-9, "{rate}");
    }

    #[test]
    fn cells_pair_the_table_with_our_runs_and_name_what_is_missing() {
        let (found, missing) = cells(|trace, ftl| (trace == "lammps" && ftl != "pm-gcc").then_some(CommandCounts { user_bytes: 1, ..CommandCounts::default() }));
        assert_eq!(found.len(), 3);
        assert_eq!(found[0].thesis_mb_per_sec, 261.487);
        assert_eq!(missing.len(), 5);
        assert!(missing.contains(&"lammps pm-gcc".to_string()));
    }
}

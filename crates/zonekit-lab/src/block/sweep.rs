//! Grids of replays: every input × placement × victim × parameter point, run in parallel,
//! resumable, shardable across machines, and summarised as tables and charts.
//!
//! Files in the output directory:
//! - `results.csv`: one row per grid point, in grid order, with the settings fingerprint and
//!   then a check (a fingerprint of every other cell of the row) as the last columns. Rows are
//!   appended as runs finish (so an interrupted sweep resumes) and the file is rewritten in grid
//!   order at the end; a row is reused only when its point and its settings fingerprint both
//!   match and its check holds. Rows of other grids or settings, and damaged rows (a cell
//!   changed, a row cut, bytes not UTF-8), are moved byte for byte to `results.previous.csv`,
//!   never reported and never lost (a damaged cell — a WAF with a digit changed — used to be
//!   reused as a result; a cut row stopped the whole resume). `sweep merge` and the summaries
//!   refuse a damaged row, naming its line. The file is read back by `crate::harness::results`, as
//!   kv-bench's and the tree experiment's are.
//! - `speed.csv`: wall-clock speed of each run (kept apart so `results.csv` is a pure
//!   function of the grid: shards merge into the same bytes one process writes).
//! - `shard.json` (shards only): which slice of which grid the directory holds.
//! - `results_with_ratios.csv` and SVG charts, from [`summarize`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use zonekit_base::policy::Params;
use zonekit_ftl::engine::gp_quantile;
use zonekit_ftl::placement;
use zonekit_report::{bar_chart, box_chart, csv, text_table};
use zonekit_trace::input::Input;

use crate::harness::error::{LabError, Result};
use crate::harness::interface::Interface;

/// The grid axis that sets the interface (`--grid "interface=zns,fdp:4,conventional"`): ZNS
/// rows' WAF is the host's, the SSDs' the device's (the host writes in place), each the total.
pub const INTERFACE_AXIS: &str = "interface";
use crate::block::replay::{replay_staged, ReplayReport, ReplaySpec, TempDir};
use crate::block::stage::{stage_with, with_future, Staged};
use crate::harness::progress::Progress;
use crate::harness::results::{fingerprint, prepare_out, resume, sealed, set_aside, write_atomically, Reading, ResultsFile};

/// The columns of `results.csv`.
pub const RESULTS_HEADER: [&str; 17] = [
    "workload",
    "placement",
    "victim",
    "params",
    "waf",
    "user_gib",
    "gc_gib",
    "gc_count",
    "gc_count_vs_zbopt",
    "gp_mean",
    "gp_q1",
    "gp_median",
    "gp_q3",
    "gp_p05",
    "gp_p95",
    "settings",
    "check",
];
const SPEED_HEADER: [&str; 5] = ["workload", "placement", "victim", "params", "blocks_per_s"];
/// `commands.tsv`: the `zonekit replay` command that reruns each row of `results.csv` alone
/// (tab-separated: a command holds commas).
const COMMANDS_HEADER: [&str; 5] = ["workload", "placement", "victim", "params", "command"];
const COMMANDS_FILE: &str = "commands.tsv";

fn write_commands(path: &Path, rows: &[Vec<String>]) -> Result<()> {
    let mut text = COMMANDS_HEADER.join("\t") + "\n";
    for row in rows {
        text.push_str(&row.join("\t"));
        text.push('\n');
    }
    write_atomically(path, &text)
}

/// The rows of a shard's `commands.tsv` (none when it has none).
fn read_commands(path: &Path) -> Result<Vec<Vec<String>>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text.lines().skip(1).map(|l| l.split('\t').map(String::from).collect()).collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(LabError::Io { path: path.into(), error: e }),
    }
}
// Column indices of `results.csv` rows (and of [`load_results`]'s), for the summaries here
// and the experiments built on sweeps.
pub const C_WORKLOAD: usize = 0;
pub const C_PLACEMENT: usize = 1;
pub const C_VICTIM: usize = 2;
pub const C_PARAMS: usize = 3;
pub const C_WAF: usize = 4;
pub const C_GC_GIB: usize = 6;
pub const C_GC_COUNT: usize = 7;
pub const C_VS_ZBOPT: usize = 8;
pub const C_SETTINGS: usize = 15;
pub const C_CHECK: usize = 16;

/// The header and writer of a sweep's `results.csv`, for [`crate::harness::results`].
const RESULTS_FILE: ResultsFile = ResultsFile { header: &RESULTS_HEADER, writer: "sweep" };

/// One named input of a sweep: a trace file or a generated workload.
#[derive(Clone, Debug)]
pub struct SweepInput {
    /// The label in results (commas are not allowed: results are CSV).
    pub label: String,
    pub input: Input,
    /// The device this input runs on, the same for every policy: its working set fills this
    /// share (instead of the sweep's setting). Seed 000's nodes each fill the thesis' 100 GB.
    pub utilization: Option<f64>,
}

impl SweepInput {
    pub fn trace(path: &Path) -> Result<SweepInput> {
        if !path.exists() {
            return Err(LabError::Usage(format!("{}: no such file", path.display())));
        }
        Ok(SweepInput { label: path.display().to_string().replace(',', " "), input: Input::path(path, None, false), utilization: None })
    }

    pub fn workload(spec: &str, seed: u64) -> Result<SweepInput> {
        let workload = spec.parse().map_err(|e| LabError::Usage(format!("workload {spec:?}: {e}")))?;
        Ok(SweepInput { label: spec.replace(',', " "), input: Input::generated(workload, seed), utilization: None })
    }
}

/// A sweep: inputs × placements × victims × the grid's parameter points, all under `base`'s
/// settings (its placement, victim and parameters are replaced per point).
#[derive(Clone, Debug)]
pub struct Sweep {
    pub inputs: Vec<SweepInput>,
    pub placements: Vec<String>,
    pub victims: Vec<String>,
    /// Placement parameter axes: every combination is run, for each placement that takes all
    /// the axes' parameters it declares.
    pub grid: Vec<(String, Vec<String>)>,
    pub base: ReplaySpec,
}

/// Which slice of a grid one process runs: jobs whose index is `index` modulo `count`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = LabError;

    /// `I/N`, I counted from 0 (Slurm's `SLURM_ARRAY_TASK_ID` with `--array=0-(N-1)`).
    fn from_str(s: &str) -> Result<Shard> {
        let bad = || LabError::Usage(format!("--shard {s:?}: expected I/N with 0 <= I < N, e.g. 0/4"));
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count) = (i.trim().parse::<usize>().map_err(|_| bad())?, n.trim().parse::<usize>().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// What a shard's directory holds, so `merge` can refuse slices of different grids.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ShardManifest {
    shard: Shard,
    /// Fingerprint of the whole grid (every job's point and settings, in order).
    grid: String,
    jobs_total: usize,
}

/// One point of a sweep.
#[derive(Clone, Debug)]
struct Job {
    input: usize,
    spec: ReplaySpec,
    workload: String,
}

impl Job {
    /// The placement's parameters, and the interface when it is not ZNS (so that a sweep
    /// over interfaces has rows told apart in every table).
    fn params_cell(&self) -> String {
        let interface = (self.spec.interface != Interface::Zns).then(|| format!("{INTERFACE_AXIS}={}", self.spec.interface));
        interface.into_iter().chain(self.spec.params.iter().map(|(k, v)| format!("{k}={v}"))).collect::<Vec<_>>().join(" ")
    }

    /// Its row of `commands.tsv`.
    fn command_row(&self, input: &zonekit_trace::input::Input) -> Vec<String> {
        vec![self.workload.clone(), self.spec.placement.clone(), self.spec.victim.clone(), self.params_cell(), self.spec.command(input)]
    }

    /// The point's identity in `results.csv`: the first four columns and the settings.
    fn key(&self) -> (String, String, String, String, String) {
        (self.workload.clone(), self.spec.placement.clone(), self.spec.victim.clone(), self.params_cell(), fingerprint(&self.spec.settings_key()))
    }
}

/// Parses `key=v1,v2;key2=v3`: every axis needs a key and at least one value.
pub fn parse_grid(spec: &str) -> Result<Vec<(String, Vec<String>)>> {
    let mut axes: Vec<(String, Vec<String>)> = Vec::new();
    for dim in spec.split(';').filter(|s| !s.trim().is_empty()) {
        let (k, values) = dim.split_once('=').ok_or_else(|| LabError::Usage(format!("--grid {dim:?}: expected key=v1,v2")))?;
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        let k = k.trim().to_string();
        if k.is_empty() || values.iter().any(|v| v.is_empty()) {
            return Err(LabError::Usage(format!("--grid {dim:?}: expected key=v1,v2 with no empty key or value")));
        }
        if axes.iter().any(|(a, _)| *a == k) {
            return Err(LabError::Usage(format!("--grid: {k} is given twice")));
        }
        axes.push((k, values));
    }
    Ok(axes)
}

impl Sweep {
    /// Every job, in grid order (inputs, then placements, victims, parameter points). Refuses
    /// names and parameters that do not exist and grid axes no placement takes.
    fn jobs(&self) -> Result<Vec<Job>> {
        if self.inputs.is_empty() {
            return Err(LabError::Usage("name at least one trace or workload".into()));
        }
        if self.placements.is_empty() || self.victims.is_empty() {
            return Err(LabError::Usage("name at least one placement and one victim".into()));
        }
        // `interface` is an axis of the device, not of a placement.
        let interfaces: Vec<Interface> = match self.grid.iter().find(|(a, _)| a == INTERFACE_AXIS) {
            Some(_) if self.base.interface != Interface::Zns => {
                return Err(LabError::Usage(format!("--interface {} and a --grid interface axis: give the interfaces in one place", self.base.interface)))
            }
            // The parser's message starts `interface "…"`: as a flag, `--interface "…"`.
            Some((_, values)) => values.iter().map(|v| Interface::parse(v).map_err(|e| LabError::Usage(format!("--{e}")))).collect::<Result<_>>()?,
            None => vec![self.base.interface],
        };
        for (axis, _) in self.grid.iter().filter(|(a, _)| a != INTERFACE_AXIS) {
            let takes = |p: &String| placement::find(p, &Params::new()).map(|info| info.params.iter().any(|q| q.name == axis)).unwrap_or(false);
            if !self.placements.iter().any(takes) {
                return Err(LabError::Usage(format!("--grid: no placement of this sweep ({}) takes a parameter {axis:?}", self.placements.join(", "))));
            }
        }
        let mut jobs = Vec::new();
        for (i, input) in self.inputs.iter().enumerate() {
            for p in &self.placements {
                let info = placement::find(p, &Params::new())?;
                // The axes this placement takes, every combination of their values.
                let mut points = vec![Params::new()];
                for (axis, values) in self.grid.iter().filter(|(a, _)| info.params.iter().any(|q| q.name == a)) {
                    points = points
                        .iter()
                        .flat_map(|pt| {
                            values.iter().map(move |v| {
                                let mut q = pt.clone();
                                q.insert(axis.clone(), v.clone());
                                q
                            })
                        })
                        .collect();
                }
                for v in &self.victims {
                    for params in &points {
                        for &interface in &interfaces {
                            let mut spec = ReplaySpec { placement: p.clone(), victim: v.clone(), params: params.clone(), interface, ..self.base.clone() };
                            if input.utilization.is_some() {
                                spec.utilization = input.utilization;
                            }
                            spec.validate()?;
                            jobs.push(Job { input: i, spec, workload: input.label.clone() });
                        }
                    }
                }
            }
        }
        Ok(jobs)
    }

    /// Runs the sweep (or one shard of it) into `out`: `results.csv`, `speed.csv`, and for a
    /// whole sweep the summary (see [`summarize`]). `parallel` replays run at once;
    /// `on_start(to_run, reused)` is called once the resumed rows are known, `on_done()` as
    /// each run ends. Setting `stop` ends the runs under way and starts no more: the rows
    /// finished so far are kept (a resumed sweep reuses them) and the result is
    /// [`LabError::Cancelled`].
    pub fn run(&self, out: &Path, parallel: usize, shard: Option<Shard>, on_start: &dyn Fn(usize, usize), on_done: &(dyn Fn() + Sync), stop: &AtomicBool) -> Result<SweepOutcome> {
        if parallel == 0 {
            return Err(LabError::Usage("--jobs must be at least 1".into()));
        }
        let all = self.jobs()?;
        let grid_fingerprint = fingerprint(&all.iter().map(|j| format!("{:?}", j.key())).collect::<Vec<_>>().join("\n"));
        let jobs: Vec<(usize, Job)> = all.iter().cloned().enumerate().filter(|(i, _)| shard.is_none_or(|s| i % s.count == s.index)).collect();
        prepare_out(out)?;
        if let Some(s) = shard {
            let manifest = ShardManifest { shard: s, grid: grid_fingerprint.clone(), jobs_total: all.len() };
            write_atomically(&out.join("shard.json"), &(serde_json::to_string_pretty(&manifest).expect("manifest") + "\n"))?;
        }
        let commands: Vec<Vec<String>> = jobs.iter().map(|(_, j)| j.command_row(&self.inputs[j.input].input)).collect();
        write_commands(&out.join(COMMANDS_FILE), &commands)?;
        let results = out.join("results.csv");
        // Damaged rows (cut, changed, not UTF-8) are moved aside here, then recomputed.
        let resumed = resume(&results, &RESULTS_FILE, Reading::Run)?;
        let wanted: BTreeSet<_> = jobs.iter().map(|(_, j)| j.key()).collect();
        let mut done: BTreeMap<_, Vec<String>> = BTreeMap::new();
        let mut other = Vec::new();
        for row in resumed.rows {
            let key = row_key(&row);
            if wanted.contains(&key) && !done.contains_key(&key) {
                done.insert(key, row);
            } else {
                other.push(row.join(","));
            }
        }
        set_aside(&results, &RESULTS_HEADER, &other.iter().map(|l| l.as_bytes()).collect::<Vec<_>>())?;
        // Start the file over with the rows being reused, then append as runs finish.
        write_rows(&results, &RESULTS_HEADER, &jobs.iter().filter_map(|(_, j)| done.get(&j.key()).cloned()).collect::<Vec<_>>())?;
        let todo: Vec<&Job> = jobs.iter().map(|(_, j)| j).filter(|j| !done.contains_key(&j.key())).collect();
        on_start(todo.len(), done.len());
        let finished: Mutex<Vec<(Job, ReplayReport)>> = Mutex::new(Vec::new());
        let failed = Mutex::new(Vec::new());
        let append_lock = Mutex::new(());
        // Each input is read (a text trace parsed) and numbered once for all its runs, when its
        // first run starts, and its files are removed when its last run ends: a sweep over
        // large inputs needs room for the one or two being replayed, not for all of them.
        let temp = TempDir::new()?;
        let inputs: Vec<InputFiles> = (0..self.inputs.len()).map(|i| InputFiles::new(todo.iter().filter(|j| j.input == i).count())).collect();
        crate::harness::parallel::for_each(todo.len(), parallel, |n| {
            let job = todo[n];
            let files = &inputs[job.input];
            let run = if stop.load(Ordering::Relaxed) {
                Err(LabError::Cancelled)
            } else {
                files
                    .staged(&self.inputs[job.input].input, &job.spec, &temp.path().join(format!("input-{}", job.input)), &mut Stop(stop))
                    .and_then(|staged| replay_staged(&staged, &job.spec, temp.path(), &mut Stop(stop)))
            };
            files.run_done();
            match run {
                Ok(r) => {
                    let row = result_row(job, &r);
                    let _guard = append_lock.lock().unwrap();
                    if let Err(e) = append_rows(&results, &RESULTS_HEADER, &[row]) {
                        failed.lock().unwrap().push(format!("{}: {e}", describe(job)));
                    }
                    finished.lock().unwrap().push((job.clone(), r));
                }
                // A stopped run is not a failed one: it runs again when the sweep resumes.
                Err(LabError::Cancelled) => {}
                Err(e) => failed.lock().unwrap().push(format!("{}: {e}", describe(job))),
            }
            on_done();
        });
        let mut warnings = Vec::new();
        for (job, r) in finished.into_inner().unwrap() {
            warnings.extend(r.warnings.iter().map(|w| format!("{}: {w}", describe(&job))));
            done.insert(job.key(), result_row(&job, &r));
            append_rows(
                &out.join("speed.csv"),
                &SPEED_HEADER,
                &[vec![job.workload.clone(), job.spec.placement.clone(), job.spec.victim.clone(), job.params_cell(), format!("{:.0}", r.blocks_per_s)]],
            )?;
        }
        // Grid order, whatever order the runs finished in.
        let rows: Vec<Vec<String>> = jobs.iter().filter_map(|(_, j)| done.get(&j.key()).cloned()).collect();
        write_rows(&results, &RESULTS_HEADER, &rows)?;
        if stop.load(Ordering::Relaxed) {
            return Err(LabError::Cancelled);
        }
        let failed = failed.into_inner().unwrap();
        if !failed.is_empty() {
            return Err(LabError::Runs { failed, total: jobs.len() });
        }
        Ok(SweepOutcome { ran: todo.len(), reused: jobs.len() - todo.len(), damaged: resumed.damaged, set_aside: other.len(), rows: rows.len(), warnings })
    }
}

/// A run's progress that stops it when the sweep is asked to stop (Python's Ctrl-C).
struct Stop<'a>(&'a AtomicBool);

impl Progress for Stop<'_> {
    fn update(&mut self, _writes: u64) {}

    fn cancelled(&mut self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// One input's staged files while its runs are under way: the plain trace and, for the
/// oracles, a copy annotated with each write's next write, both numbered once.
struct InputFiles {
    state: Mutex<InputState>,
    runs_left: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct InputState {
    dir: Option<PathBuf>,
    plain: Option<Staged>,
    future: Option<Staged>,
}

impl InputFiles {
    fn new(runs: usize) -> InputFiles {
        InputFiles { state: Mutex::new(InputState::default()), runs_left: runs.into() }
    }

    /// The staged trace `spec` replays, staged on first use (the lock makes a second run of
    /// the same input wait for it rather than stage it again).
    fn staged(&self, input: &Input, spec: &ReplaySpec, dir: &Path, progress: &mut dyn Progress) -> Result<Staged> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.dir.is_none() {
            std::fs::create_dir_all(dir).map_err(LabError::io(dir))?;
            st.dir = Some(dir.to_path_buf());
        }
        if st.plain.is_none() {
            st.plain = Some(stage_with(input, dir, progress)?);
        }
        let plain = st.plain.clone().expect("staged above");
        let env = placement::PolicyEnv { zone_blocks: 1 << 13, capacity_blocks: plain.distinct_estimate.max(1) };
        if !placement::create(&spec.placement, &spec.params, env)?.needs_future() {
            return Ok(plain);
        }
        if st.future.is_none() {
            st.future = Some(with_future(plain, dir)?);
        }
        Ok(st.future.clone().expect("annotated above"))
    }

    /// Counts a finished run; after the input's last one its files go.
    fn run_done(&self) {
        if self.runs_left.fetch_sub(1, std::sync::atomic::Ordering::AcqRel) == 1 {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            (st.plain, st.future) = (None, None);
            if let Some(dir) = st.dir.take() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

/// What [`Sweep::run`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepOutcome {
    pub ran: usize,
    pub reused: usize,
    /// Damaged rows of `results.csv` (a cell changed, a row cut, bytes not UTF-8) moved, byte
    /// for byte, to `results.previous.csv`; those of this grid were recomputed.
    pub damaged: usize,
    /// Intact rows of other grids or settings moved to `results.previous.csv`.
    pub set_aside: usize,
    pub rows: usize,
    /// The degenerate-run warnings of the runs this process ran ([`ReplayReport::warnings`]),
    /// each after the run it is about.
    pub warnings: Vec<String>,
}

fn describe(job: &Job) -> String {
    let params = job.params_cell();
    format!("{} | {} + {}{}", job.workload, job.spec.placement, job.spec.victim, if params.is_empty() { String::new() } else { format!(" ({params})") })
}

fn row_key(row: &[String]) -> (String, String, String, String, String) {
    (row[C_WORKLOAD].clone(), row[C_PLACEMENT].clone(), row[C_VICTIM].clone(), row[C_PARAMS].clone(), row[C_SETTINGS].clone())
}

fn result_row(job: &Job, r: &ReplayReport) -> Vec<String> {
    let q = r.reclaimed_gp_q1_median_q3.unwrap_or([0.0; 3]);
    let (workload, placement, victim, params, settings) = job.key();
    sealed(vec![
        workload,
        placement,
        victim,
        params,
        format!("{:.4}", r.waf),
        format!("{:.4}", r.user_gib),
        format!("{:.4}", r.gc_gib),
        r.gc_count.to_string(),
        String::new(),
        format!("{:.4}", r.reclaimed_gp_mean.unwrap_or(0.0)),
        format!("{:.2}", q[0]),
        format!("{:.2}", q[1]),
        format!("{:.2}", q[2]),
        format!("{:.2}", gp_quantile(&r.gp_histogram, 0.05).unwrap_or(0.0)),
        format!("{:.2}", gp_quantile(&r.gp_histogram, 0.95).unwrap_or(0.0)),
        settings,
    ])
}

fn write_rows(path: &Path, header: &[&str], rows: &[Vec<String>]) -> Result<()> {
    write_atomically(path, &csv(header, rows))
}

fn append_rows(path: &Path, header: &[&str], rows: &[Vec<String>]) -> Result<()> {
    use std::io::Write;
    let new = !path.exists();
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(LabError::io(path))?;
    let text = if new { csv(header, rows) } else { csv(header, rows).split_once('\n').map_or(String::new(), |(_, rest)| rest.to_string()) };
    f.write_all(text.as_bytes()).map_err(LabError::io(path))
}

/// The rows of a CSV file with exactly `header` (none if the file does not exist): for
/// `speed.csv`, which is not resumed from (`results.csv` is read by [`resume`]).
fn read_rows(path: &Path, header: &[&str]) -> Result<Vec<Vec<String>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LabError::Io { path: path.into(), error: e }),
    };
    let mut lines = text.lines();
    if lines.next() != Some(header.join(",").as_str()) {
        return Err(LabError::Results {
            path: path.into(),
            line: 1,
            reason: "not the header this zonekit version writes (a results file from another version? move it away to start over)".into(),
        });
    }
    let mut rows = Vec::new();
    for (i, line) in lines.enumerate() {
        let row: Vec<String> = line.split(',').map(String::from).collect();
        if row.len() != header.len() {
            return Err(LabError::Results { path: path.into(), line: i + 2, reason: format!("{} fields, expected {}", row.len(), header.len()) });
        }
        rows.push(row);
    }
    Ok(rows)
}

/// Combines the directories of all N shards of one sweep into `out`: the same `results.csv`,
/// byte for byte, that one process running the whole grid writes, and the same summary.
pub fn merge(out: &Path, shard_dirs: &[PathBuf]) -> Result<()> {
    if shard_dirs.is_empty() {
        return Err(LabError::Usage("sweep merge: name the shard directories".into()));
    }
    let mut shards: BTreeMap<usize, (ShardManifest, Vec<Vec<String>>)> = BTreeMap::new();
    for dir in shard_dirs {
        let path = dir.join("shard.json");
        let text = std::fs::read_to_string(&path).map_err(|e| LabError::Usage(format!("{}: {e} (not a shard directory of `zonekit sweep --shard`?)", path.display())))?;
        let m: ShardManifest = serde_json::from_str(&text).map_err(|e| LabError::Results { path: path.clone(), line: 1, reason: e.to_string() })?;
        let rows = resume(&dir.join("results.csv"), &RESULTS_FILE, Reading::Report { by: "sweep merge", rerun: "the shard's sweep" })?.rows;
        if let Some((first, _)) = shards.values().next() {
            if first.grid != m.grid || first.shard.count != m.shard.count {
                return Err(LabError::Usage(format!("{}: a shard of another sweep (grid or shard count differs)", dir.display())));
            }
        }
        let expected = (m.jobs_total + m.shard.count - 1 - m.shard.index) / m.shard.count;
        if rows.len() != expected {
            return Err(LabError::Usage(format!("{}: shard {}/{} has {} of its {expected} rows (not finished?)", dir.display(), m.shard.index, m.shard.count, rows.len())));
        }
        if shards.insert(m.shard.index, (m.clone(), rows)).is_some() {
            return Err(LabError::Usage(format!("{}: shard {}/{} given twice", dir.display(), m.shard.index, m.shard.count)));
        }
    }
    let count = shards.values().next().expect("at least one").0.shard.count;
    if let Some(missing) = (0..count).find(|i| !shards.contains_key(i)) {
        return Err(LabError::Usage(format!("sweep merge: shard {missing}/{count} is missing")));
    }
    let total = shards[&0].0.jobs_total;
    let rows: Vec<Vec<String>> = (0..total).map(|k| shards[&(k % count)].1[k / count].clone()).collect();
    prepare_out(out)?;
    write_rows(&out.join("results.csv"), &RESULTS_HEADER, &rows)?;
    let (mut speed, mut commands) = (Vec::new(), Vec::new());
    for dir in shard_dirs {
        speed.extend(read_rows(&dir.join("speed.csv"), &SPEED_HEADER)?);
        commands.push(read_commands(&dir.join(COMMANDS_FILE))?);
    }
    // Grid order, as for the results: job k is row k / N of shard k % N.
    let commands: Vec<Vec<String>> = (0..total).filter_map(|k| commands.get(k % count).and_then(|c| c.get(k / count)).cloned()).collect();
    write_commands(&out.join(COMMANDS_FILE), &commands)?;
    write_rows(&out.join("speed.csv"), &SPEED_HEADER, &speed)
}

/// A sweep's results with GC count relative to ZB-OPT on the same workload and victim filled in.
pub fn load_results(results: &Path) -> Result<Vec<Vec<String>>> {
    let mut rows = resume(results, &RESULTS_FILE, Reading::Report { by: "the sweep's summary", rerun: "the sweep" })?.rows;
    let oracle = placement::zbopt::ZBOPT.name;
    let zbopt: BTreeMap<(String, String), f64> =
        rows.iter().filter(|r| r[C_PLACEMENT] == oracle).map(|r| ((r[C_WORKLOAD].clone(), r[C_VICTIM].clone()), r[C_GC_COUNT].parse::<f64>().unwrap_or(0.0))).collect();
    for r in &mut rows {
        if let Some(&z) = zbopt.get(&(r[C_WORKLOAD].clone(), r[C_VICTIM].clone())) {
            if z > 0.0 {
                r[C_VS_ZBOPT] = format!("{:.3}", r[C_GC_COUNT].parse::<f64>().unwrap_or(0.0) / z);
                r.pop();
                *r = sealed(std::mem::take(r));
            }
        }
    }
    Ok(rows)
}

/// Tables (returned as text) and charts (written to `out`) of a sweep's rows, by workload.
pub fn summarize(rows: &[Vec<String>], out: &Path) -> Result<String> {
    let mut text = String::new();
    let workloads: BTreeSet<String> = rows.iter().map(|r| r[C_WORKLOAD].clone()).collect();
    let write = |name: String, svg: String| {
        let path = out.join(name);
        zonekit_base::atomic::write(&path, svg).map_err(LabError::io(&path))
    };
    for (wi, w) in workloads.iter().enumerate() {
        let mut mine: Vec<&Vec<String>> = rows.iter().filter(|r| &r[C_WORKLOAD] == w).collect();
        // Worst first, as the thesis' tables run from Normal to ZB-OPT.
        let num = |r: &Vec<String>, c: usize| r[c].parse::<f64>().unwrap_or(0.0);
        mine.sort_by(|a, b| num(b, C_WAF).total_cmp(&num(a, C_WAF)));
        text.push_str(&format!("\n{w}\n"));
        let table: Vec<Vec<String>> = mine
            .iter()
            .map(|r| {
                let label = if r[C_PARAMS].is_empty() { format!("{} + {}", r[1], r[2]) } else { format!("{} + {} ({})", r[1], r[2], r[3]) };
                vec![
                    label,
                    r[C_WAF].clone(),
                    r[C_GC_GIB].clone(),
                    r[C_GC_COUNT].clone(),
                    if r[C_VS_ZBOPT].is_empty() { "-".into() } else { r[C_VS_ZBOPT].clone() },
                    format!("{} / {} / {}", r[10], r[11], r[12]),
                ]
            })
            .collect();
        text.push_str(&text_table(&["run", "WAF", "GC GiB", "GC count", "vs ZB-OPT", "GP Q1/med/Q3"], &table));
        let label = |r: &Vec<String>| if r[C_PARAMS].is_empty() { format!("{}+{}", r[1], r[2]) } else { format!("{}+{} {}", r[1], r[2], r[3]) };
        let bars = |col: usize| mine.iter().map(|r| (label(r), num(r, col))).collect::<Vec<_>>();
        let short = if w.chars().count() > 60 { format!("{}…", w.chars().take(60).collect::<String>()) } else { w.clone() };
        write(format!("waf_{wi}.svg"), bar_chart(&format!("WAF — {short}"), "WAF", &bars(C_WAF)))?;
        write(format!("gc_writes_{wi}.svg"), bar_chart(&format!("GC writes — {short}"), "GiB", &bars(C_GC_GIB)))?;
        if mine.iter().any(|r| !r[C_VS_ZBOPT].is_empty()) {
            write(format!("gc_count_vs_zbopt_{wi}.svg"), bar_chart(&format!("GC count / ZB-OPT — {short}"), "ratio", &bars(C_VS_ZBOPT)))?;
        }
        let boxes: Vec<(String, [f64; 5])> = mine.iter().map(|r| (label(r), [num(r, 13), num(r, 10), num(r, 11), num(r, 12), num(r, 14)])).collect();
        write(format!("gp_box_{wi}.svg"), box_chart(&format!("GP of reclaimed zones (P5, Q1, median, Q3, P95) — {short}"), "garbage proportion", 1.0, &boxes))?;
    }
    write("results_with_ratios.csv".into(), csv(&RESULTS_HEADER, rows))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inputs_files_are_made_once_and_go_with_its_last_run() {
        let temp = TempDir::new().unwrap();
        let dir = temp.path().join("input-0");
        let input = Input::generated("zipf:blocks=2000,alpha=0.9,writes=20000".parse().unwrap(), 1);
        let files = InputFiles::new(3);
        let spec = |p: &str| ReplaySpec { placement: p.into(), ..ReplaySpec::default() };
        let plain = files.staged(&input, &spec("sepbit"), &dir, &mut |_| {}).unwrap();
        assert!(!plain.has_next_write);
        let future = files.staged(&input, &spec("zbopt"), &dir, &mut |_| {}).unwrap();
        assert!(future.has_next_write, "the oracle's copy knows the future");
        assert_eq!(files.staged(&input, &spec("fk"), &dir, &mut |_| {}).unwrap().path, future.path, "annotated once for every oracle");
        assert_eq!(files.staged(&input, &spec("normal"), &dir, &mut |_| {}).unwrap().path, plain.path, "staged once");
        files.run_done();
        files.run_done();
        assert!(plain.path.exists() && future.path.exists());
        files.run_done();
        assert!(!dir.exists(), "the input's files go with its last run");
    }
}

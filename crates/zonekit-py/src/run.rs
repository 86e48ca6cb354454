//! The runs: replay, sweep, analysis and item-cache simulation, with the CLI's names. Every
//! setting left `None` takes the lab's default (`ReplaySpec::default()`, which the CLI's
//! flags share), so Python and the CLI cannot drift apart.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use zonekit_base::policy::{self, Params};
use zonekit_ftl::placement::{self, Placement};
use zonekit_ftl::{victim, CapacityMode, GcTrigger};
use zonekit_lab::block::replay::{replay_with, CustomPolicies, ReplaySpec};
use zonekit_lab::block::sweep::{self as lab_sweep, Shard, Sweep, SweepInput};
use zonekit_lab::harness::interface::Interface;
use zonekit_lab::{cache::sim as lab_cache_sim, LabError};
use zonekit_trace::input::{FilterFlags, Input};

use crate::policy::{ErrorSlot, PyItemCache, PyPlacement, PyVictim, RunProgress};

/// A request's fault: `ValueError` with the CLI's message, its flags spelt as Python's
/// settings ([`python_spelling`]).
pub fn usage(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(python_spelling(&message.into()))
}

/// A lab error as Python sees it; a run stopped for a parked Python exception raises that.
pub fn lab_error(e: LabError, slot: &ErrorSlot) -> PyErr {
    if let Some(parked) = slot.take() {
        return parked;
    }
    match e {
        LabError::Cancelled => PyKeyboardInterrupt::new_err("the run was interrupted"),
        e if e.is_usage() => PyValueError::new_err(python_spelling(&e.to_string())),
        e => PyRuntimeError::new_err(e.to_string()),
    }
}

/// A message of the lab's, which names settings as the CLI's flags (`--zone-mib 16`), as a
/// Python caller names them (`zone_mib=16`): advice a Python user can follow as written. A flag
/// followed by a value (a number or a quoted word) becomes `name=value`, one without its name.
pub fn python_spelling(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("--") {
        let (before, flag_on) = rest.split_at(at);
        out.push_str(before);
        let name_len = flag_on[2..].find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')).map_or(flag_on.len() - 2, |n| n);
        let starts_flag = name_len > 0 && flag_on.as_bytes()[2].is_ascii_lowercase() && !before.ends_with(|c: char| c.is_alphanumeric() || c == '-');
        if !starts_flag {
            out.push_str("--");
            rest = &flag_on[2..];
            continue;
        }
        let name = flag_on[2..2 + name_len].trim_end_matches('-').replace('-', "_");
        out.push_str(&name);
        rest = &flag_on[2 + name_len..];
        // A value: a number (possibly negative or a fraction) or a quoted word right after.
        if let Some(value_on) = rest.strip_prefix(' ') {
            let value_len = value_on.find(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ')').unwrap_or(value_on.len());
            let value = value_on[..value_len].trim_end_matches(':');
            let is_value = value.starts_with(|c: char| c.is_ascii_digit() || c == '"' || c == '\'' || c == '.')
                || (value.starts_with('-') && value[1..].starts_with(|c: char| c.is_ascii_digit()));
            if is_value {
                out.push('=');
                out.push_str(value);
                rest = &value_on[value.len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Runs `f`, turning a panic into `RuntimeError`: a panic must not cross into Python.
pub fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let what = payload.downcast_ref::<String>().map(String::as_str).or_else(|| payload.downcast_ref::<&str>().copied()).unwrap_or("(no message)");
        Err(PyRuntimeError::new_err(format!("zonekit failed inside (a bug, please report it): {what}")))
    })
}

/// `json` (an object of settings by name) as `T`. serde names only a line and column; a refused
/// value is named here by its setting, found by reading each setting alone (every settings
/// struct this takes is `#[serde(default)]`, so one setting alone is a whole object).
pub fn settings_from_json<T: serde::de::DeserializeOwned>(what: &str, json: &str) -> PyResult<T> {
    let e = match serde_json::from_str::<T>(json) {
        Ok(settings) => return Ok(settings),
        Err(e) => e,
    };
    let culprit = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(json).ok().and_then(|m| {
        m.into_iter().find_map(|(key, value)| {
            let alone = serde_json::Value::Object(serde_json::Map::from_iter([(key.clone(), value.clone())]));
            serde_json::from_value::<T>(alone).err().map(|e| format!("{what}: {key}={value}: {e}"))
        })
    });
    Err(usage(culprit.unwrap_or_else(|| format!("{what}: {e}"))))
}

/// The input of a run: a trace file or a generated workload, as the CLI takes them, with the
/// CLI's filters (`filters`: a JSON object of `FilterFlags` by flag name).
pub fn input(trace: Option<PathBuf>, workload: Option<&str>, format: Option<&str>, lenient: bool, seed: u64, filters: Option<&str>) -> PyResult<Input> {
    let mut input = match (trace, workload) {
        (Some(path), None) => {
            if !path.exists() {
                return Err(usage(format!("{}: no such file", path.display())));
            }
            let format = match format {
                None => None,
                Some("delimited") => return Err(usage("format='delimited' needs a column mapping: convert with `zonekit trace convert --format delimited --columns ...` first")),
                Some(name) => Some(name.parse().map_err(|e: zonekit_trace::SpecError| usage(e.to_string()))?),
            };
            Input::path(&path, format, lenient)
        }
        (None, Some(spec)) => {
            if format.is_some() || lenient {
                return Err(usage("format and lenient apply to a trace file, not to a generated workload"));
            }
            Input::generated(spec.parse().map_err(|e: zonekit_trace::SpecError| usage(format!("workload {spec:?}: {e}")))?, seed)
        }
        (None, None) => return Err(usage("name a trace file (trace=...) or a workload (workload=...)")),
        (Some(_), Some(_)) => return Err(usage("trace and workload are exclusive: name one")),
    };
    let flags: FilterFlags = match filters {
        None => FilterFlags::default(),
        Some(json) => settings_from_json("trace filters", json)?,
    };
    flags.apply(&mut input).map_err(|e| usage(e.to_string()))?;
    Ok(input)
}

fn params_of(params: Option<BTreeMap<String, String>>) -> Params {
    params.unwrap_or_default().into_iter().collect()
}

/// The device and FTL settings `replay` and `sweep` share (the CLI's `FtlArgs`), by name.
const FTL_SETTINGS: &[&str] = &["preset", "utilization", "preset_size", "unbounded", "gc_threshold", "gc_trigger", "timing", "zone_mib", "interface"];

/// `key` of `settings`, if given and not `None`.
fn setting<'py, T: FromPyObject<'py>>(settings: Option<&Bound<'py, PyDict>>, key: &str) -> PyResult<Option<T>> {
    match settings.map(|d| d.get_item(key)).transpose()?.flatten() {
        Some(v) if !v.is_none() => v.extract().map(Some).map_err(|e| usage(format!("{key}={v}: {e}"))),
        _ => Ok(None),
    }
}

/// The replay settings shared by `replay` and `sweep`: the lab's defaults, overridden by the
/// keyword arguments in `settings` (any other is refused, naming the valid ones).
fn spec(call: &str, settings: Option<&Bound<'_, PyDict>>, device: Option<PathBuf>, seed: u64) -> PyResult<ReplaySpec> {
    for key in settings.map(|d| d.keys()).into_iter().flatten() {
        let key: String = key.extract()?;
        if !FTL_SETTINGS.contains(&key.as_str()) {
            return Err(usage(format!("{call}: unknown setting {key:?}; valid: {}", FTL_SETTINGS.join(", "))));
        }
    }
    let mut s = ReplaySpec { seed, device, timing: setting(settings, "timing")?.unwrap_or(false), zone_mib: setting(settings, "zone_mib")?, ..ReplaySpec::default() };
    if let Some(p) = setting(settings, "preset")? {
        s.preset = p;
    }
    if let Some(t) = setting(settings, "gc_threshold")? {
        s.config.gc_threshold = t;
    }
    if let Some(t) = setting::<String>(settings, "gc_trigger")? {
        s.config.trigger = GcTrigger::from_name(&t).ok_or_else(|| usage(format!("gc_trigger={t:?}: one of gp-all, gp-sealed, free-zones")))?;
    }
    let unbounded = setting(settings, "unbounded")?.unwrap_or(false);
    if unbounded {
        s.config.capacity = CapacityMode::Unbounded;
    }
    if let Some(i) = setting::<String>(settings, "interface")? {
        s.interface = Interface::parse(&i).map_err(|e| usage(format!("--{e}")))?;
    }
    let sized = !unbounded && !setting(settings, "preset_size")?.unwrap_or(false) && s.device.is_none();
    let utilization: Option<f64> = setting(settings, "utilization")?;
    if utilization.is_some() && !sized {
        return Err(usage("utilization sizes an emulated device: not with unbounded, preset_size or device"));
    }
    s.utilization = sized.then(|| utilization.unwrap_or(s.utilization.expect("the default sizes by utilisation")));
    Ok(s)
}

/// One replay of a trace or workload through the block FTL; returns `report.json`'s text.
/// `placement` and `victim` are a name (`policies()` lists them) or an object written in
/// Python (see `zonekit.policy`).
#[pyfunction]
#[pyo3(signature = (*, trace=None, workload=None, format=None, lenient=false, filters=None, placement=None, victim=None, params=None, device=None, seed=1, **settings))]
#[allow(clippy::too_many_arguments)]
pub fn replay(
    py: Python<'_>,
    trace: Option<PathBuf>,
    workload: Option<&str>,
    format: Option<&str>,
    lenient: bool,
    filters: Option<&str>,
    placement: Option<&Bound<'_, PyAny>>,
    victim: Option<&Bound<'_, PyAny>>,
    params: Option<BTreeMap<String, String>>,
    device: Option<PathBuf>,
    seed: u64,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let input = input(trace, workload, format, lenient, seed, filters)?;
    let mut spec = spec("replay", settings, device, seed)?;
    spec.params = params_of(params);
    let slot = ErrorSlot::default();
    let mut custom = CustomPolicies::default();
    match placement {
        None => {}
        Some(p) if p.is_instance_of::<pyo3::types::PyString>() => spec.placement = p.extract()?,
        Some(p) => {
            if !spec.params.is_empty() {
                return Err(usage("params configure a built-in placement; a placement written in Python takes its settings itself"));
            }
            let made = PyPlacement::new(p, slot.clone())?;
            spec.placement = format!("python:{}", made.name());
            custom.placement = Some(Box::new(move |_env| Box::new(made) as Box<dyn Placement>));
        }
    }
    match victim {
        None => {}
        Some(v) if v.is_instance_of::<pyo3::types::PyString>() => spec.victim = v.extract()?,
        Some(v) => {
            let made = PyVictim::new(v, slot.clone())?;
            spec.victim = format!("python:{}", victim::Victim::name(&made));
            custom.victim = Some(Box::new(made));
        }
    }
    let python_policies = custom.placement.is_some() || custom.victim.is_some();
    let mut progress = RunProgress { slot: slot.clone() };
    let report = if python_policies {
        // The policies are called once per block: the run keeps the GIL (see `policy`).
        guarded(|| replay_with(&input, &spec, custom, &mut progress).map_err(|e| lab_error(e, &slot)))?
    } else {
        py.allow_threads(|| guarded(|| replay_with(&input, &spec, CustomPolicies::default(), &mut progress).map_err(|e| lab_error(e, &slot))))?
    };
    if let Some(parked) = slot.take() {
        return Err(parked);
    }
    let mut report = report;
    report.warnings = report.warnings.iter().map(|w| python_spelling(w)).collect();
    Ok(serde_json::to_string(&report).expect("a report serializes"))
}

/// A sweep into `out` (its `results.csv`, resumed and sharded as the CLI's); returns the path
/// of `results.csv`.
#[pyfunction]
#[pyo3(signature = (*, out, traces=None, workloads=None, placements=None, victims=None, grid=None, jobs=2, shard=None, seed=1, **settings))]
#[allow(clippy::too_many_arguments)]
pub fn sweep(
    py: Python<'_>,
    out: PathBuf,
    traces: Option<Vec<PathBuf>>,
    workloads: Option<Vec<String>>,
    placements: Option<Vec<String>>,
    victims: Option<Vec<String>>,
    grid: Option<&str>,
    jobs: usize,
    shard: Option<&str>,
    seed: u64,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, usize, usize)> {
    let slot = ErrorSlot::default();
    let lab = |e| lab_error(e, &slot);
    let mut inputs = Vec::new();
    for t in traces.unwrap_or_default() {
        inputs.push(SweepInput::trace(&t).map_err(lab)?);
    }
    for w in workloads.unwrap_or_default() {
        inputs.push(SweepInput::workload(&w, seed).map_err(lab)?);
    }
    if inputs.is_empty() {
        return Err(usage("name at least one trace (traces=[...]) or workload (workloads=[...])"));
    }
    let shard = shard.map(str::parse::<Shard>).transpose().map_err(lab)?;
    let placements = placements.unwrap_or_else(|| placement::compared().map(|p| p.name.to_string()).collect());
    let victims = victims.unwrap_or_else(|| vec![victim::cbe::CBE.name.to_string()]);
    let base = spec("sweep", settings, None, seed)?;
    let grid = lab_sweep::parse_grid(grid.unwrap_or("")).map_err(lab)?;
    let sweep = Sweep { inputs, placements, victims, grid, base };
    // The runs go on another thread while this one, Python's, watches for Ctrl-C (a signal
    // is only seen here), and asks the sweep to stop on one.
    let stop = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| {
        let runs = scope.spawn(|| {
            guarded(|| {
                let outcome = sweep.run(&out, jobs, shard, &|_, _| {}, &|| {}, &stop).map_err(lab)?;
                if shard.is_none() {
                    // The same tables and charts the CLI writes beside results.csv.
                    let rows = lab_sweep::load_results(&out.join("results.csv")).map_err(lab)?;
                    lab_sweep::summarize(&rows, &out).map_err(lab)?;
                }
                Ok(outcome)
            })
        });
        while !runs.is_finished() {
            py.allow_threads(|| std::thread::sleep(Duration::from_millis(50)));
            if let Err(interrupt) = py.check_signals() {
                stop.store(true, Ordering::Relaxed);
                slot.set(interrupt);
            }
        }
        runs.join().expect("the sweep's panics are caught inside")
    });
    let outcome = outcome.map_err(|e| slot.take().unwrap_or(e))?;
    Ok((out.join("results.csv").display().to_string(), outcome.ran, outcome.reused))
}

/// `zonekit trace analyze`: the analysis of a trace's or workload's writes, as JSON.
#[pyfunction]
#[pyo3(signature = (*, trace=None, workload=None, format=None, lenient=false, filters=None, seed=1))]
#[allow(clippy::too_many_arguments)]
pub fn analyze(py: Python<'_>, trace: Option<PathBuf>, workload: Option<&str>, format: Option<&str>, lenient: bool, filters: Option<&str>, seed: u64) -> PyResult<String> {
    let input = input(trace, workload, format, lenient, seed, filters)?;
    let block_size = input.filters.split.block_size_bytes;
    let analysis =
        py.allow_threads(|| guarded(|| zonekit_trace::analyze::analyze(&input, block_size).map_err(|e| PyRuntimeError::new_err(format!("input {}: {e}", input.describe())))))?;
    Ok(serde_json::to_string(&analysis).expect("an analysis serializes"))
}

/// `zonekit cache sim`: every block request through each item policy; one JSON report per
/// policy. `policies` holds names or eviction policies written in Python.
#[pyfunction]
#[pyo3(signature = (policies, cache_blocks, *, trace=None, workload=None, format=None, lenient=false, filters=None, params=None, seed=1))]
#[allow(clippy::too_many_arguments)]
pub fn cache_sim(
    py: Python<'_>,
    policies: Vec<Bound<'_, PyAny>>,
    cache_blocks: usize,
    trace: Option<PathBuf>,
    workload: Option<&str>,
    format: Option<&str>,
    lenient: bool,
    filters: Option<&str>,
    params: Option<BTreeMap<String, String>>,
    seed: u64,
) -> PyResult<Vec<String>> {
    let input = input(trace, workload, format, lenient, seed, filters)?;
    let params = params_of(params);
    let names: Vec<String> = policies.iter().filter_map(|p| p.extract::<String>().ok()).collect();
    let per_policy = lab_cache_sim::params_for_each(&names, &params).map_err(|e| lab_error(e, &ErrorSlot::default()))?;
    let mut named = names.iter().zip(per_policy);
    let mut reports = Vec::new();
    for p in &policies {
        let slot = ErrorSlot::default();
        let report = if p.extract::<String>().is_ok() {
            let (name, params) = named.next().expect("one parameter set per named policy");
            lab_cache_sim::validate(name, &params, cache_blocks).map_err(|e| lab_error(e, &slot))?;
            py.allow_threads(|| guarded(|| lab_cache_sim::simulate(&input, name, &params, cache_blocks).map_err(|e| lab_error(e, &slot))))?
        } else {
            if cache_blocks == 0 {
                return Err(usage("the cache must hold at least one block (cache_blocks)"));
            }
            let cache = PyItemCache::new(p, cache_blocks, slot.clone())?;
            let name = format!("python:{}", cache.name());
            guarded(|| lab_cache_sim::simulate_cache(&input, Box::new(cache), &name, false, &Params::new()).map_err(|e| lab_error(e, &slot)))?
        };
        if let Some(parked) = slot.take() {
            return Err(parked);
        }
        reports.push(serde_json::to_string(&report).expect("a report serializes"));
    }
    Ok(reports)
}

/// Every built-in policy by family: (family, name, role, summary, parameters).
#[pyfunction]
pub fn policies() -> Vec<(String, String, String, String, Vec<String>)> {
    fn rows<M>(family: &str, table: &[policy::PolicyInfo<M>]) -> Vec<(String, String, String, String, Vec<String>)> {
        table
            .iter()
            .map(|p| (family.to_string(), p.name.to_string(), format!("{:?}", p.role).to_lowercase(), p.summary.to_string(), p.params.iter().map(|q| q.name.to_string()).collect()))
            .collect()
    }
    let mut all = rows("placement", placement::PLACEMENTS);
    all.extend(rows("victim", victim::VICTIMS));
    all.extend(rows("item-cache", lab_cache_sim::ITEM_POLICIES));
    all
}

/// The lab's defaults, which the CLI's flags share: the Python signatures' `None`s.
#[pyfunction]
pub fn defaults() -> BTreeMap<&'static str, String> {
    let s = ReplaySpec::default();
    BTreeMap::from([
        ("placement", s.placement),
        ("victim", s.victim),
        ("preset", s.preset),
        ("utilization", format!("{}", s.utilization.expect("sized by utilisation"))),
        ("gc_threshold", format!("{}", s.config.gc_threshold)),
        ("gc_trigger", s.config.trigger.name().to_string()),
        ("interface", s.interface.name()),
        ("seed", s.seed.to_string()),
    ])
}

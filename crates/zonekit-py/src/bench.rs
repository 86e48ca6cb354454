//! The other engines' single runs with the CLI's names and defaults: `zonekit tree run` (the
//! ZB+-tree and the copy-on-write B+-tree), `zonekit ocssd run` (the open-channel FTLs) and
//! `zonekit cache run` (the bucket cache).

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use zonekit_lab::cache::run::CacheRunSettings;
use zonekit_lab::ocssd::bench as ocssd_bench;
use zonekit_lab::ocssd::run::OcssdRunSettings;
use zonekit_lab::tree::bench::{self as tree_bench, TreeSpec};
use zonekit_lab::tree::run::TreeRunSettings;

use crate::policy::{ErrorSlot, RunProgress};
use crate::run::{guarded, input, lab_error, settings_from_json, usage};

/// A record or operation count as the CLI takes it: an int, or a string with an optional K or
/// M suffix (`"100K"`, `"2.5M"`).
fn count_arg(name: &str, value: Option<Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(v) = value else { return Ok(None) };
    if let Ok(n) = v.extract::<u64>() {
        return Ok(Some(n));
    }
    match v.extract::<String>() {
        Ok(text) => tree_bench::parse_count(&text).map(Some).map_err(|e| usage(format!("{name}={e}"))),
        Err(_) => Err(usage(format!("{name}: expected a count (an int, or a string such as \"100K\"), got {}", v.get_type().name().map(|n| n.to_string()).unwrap_or_default()))),
    }
}

fn lab<T>(r: zonekit_lab::harness::error::Result<T>) -> PyResult<T> {
    r.map_err(|e| lab_error(e, &ErrorSlot::default()))
}

/// `zonekit tree run`: a YCSB-style load and mix on the ZB+-tree, the CoW B+-tree or both
/// (`tree="both"`), on an emulated device of sequential and conventional zones. Returns one
/// JSON outcome per tree.
#[pyfunction]
#[pyo3(signature = (*, tree=None, records=None, operations=None, workload=None, distribution=None, seed=None,
    sequential_zones=None, conventional_zones=None, zone_size_mib=None, node_size_bytes=None, value_size_bytes=None,
    inner_entries_max=None, dynamic_zone_choice=true, cow_rebalance=None, cow_collect=None, delete_keys=None, timing=None))]
#[allow(clippy::too_many_arguments)]
pub fn tree_run(
    py: Python<'_>,
    tree: Option<String>,
    records: Option<Bound<'_, PyAny>>,
    operations: Option<Bound<'_, PyAny>>,
    workload: Option<String>,
    distribution: Option<String>,
    seed: Option<u64>,
    sequential_zones: Option<u32>,
    conventional_zones: Option<u32>,
    zone_size_mib: Option<u64>,
    node_size_bytes: Option<usize>,
    value_size_bytes: Option<usize>,
    inner_entries_max: Option<usize>,
    dynamic_zone_choice: bool,
    cow_rebalance: Option<String>,
    cow_collect: Option<String>,
    delete_keys: Option<String>,
    timing: Option<String>,
) -> PyResult<Vec<String>> {
    let d = TreeRunSettings::default();
    let settings = TreeRunSettings {
        tree: tree.unwrap_or(d.tree),
        workload: workload.unwrap_or(d.workload),
        distribution: distribution.unwrap_or(d.distribution),
        records: count_arg("records", records)?.unwrap_or(d.records),
        operations: count_arg("operations", operations)?,
        sequential_zones: sequential_zones.unwrap_or(d.sequential_zones),
        conventional_zones: conventional_zones.unwrap_or(d.conventional_zones),
        zone_size_mib,
        node_size_bytes: node_size_bytes.unwrap_or(d.node_size_bytes),
        value_size_bytes: value_size_bytes.unwrap_or(d.value_size_bytes),
        inner_entries_max: inner_entries_max.unwrap_or(d.inner_entries_max),
        no_dynamic_zone_choice: !dynamic_zone_choice,
        cow_rebalance: cow_rebalance.unwrap_or(d.cow_rebalance),
        cow_collect: cow_collect.unwrap_or(d.cow_collect),
        delete_keys: delete_keys.unwrap_or(d.delete_keys),
        timing: timing.unwrap_or(d.timing),
        seed: seed.unwrap_or(d.seed),
    };
    let trees = lab(settings.trees())?;
    let base = lab(settings.spec())?;
    py.allow_threads(|| {
        guarded(|| {
            trees
                .into_iter()
                .map(|tree| {
                    let outcome = lab(tree_bench::run_tree(&TreeSpec { tree, ..base.clone() }, &mut |_, _| {}))?;
                    Ok(serde_json::to_string(&outcome).expect("an outcome serializes"))
                })
                .collect()
        })
    })
}

/// `zonekit ocssd run`: a trace or generated workload through one open-channel FTL; returns
/// the report as JSON.
#[pyfunction]
#[pyo3(signature = (*, trace=None, workload=None, format=None, lenient=false, filters=None, seed=1, ftl=None, params=None,
    channels=None, luns=None, blocks_per_lun=None, pages_per_block=None, page_kib=None, compact=false,
    timing=None, logical_mib=None, logical_kib=None))]
#[allow(clippy::too_many_arguments)]
pub fn ocssd_run(
    py: Python<'_>,
    trace: Option<PathBuf>,
    workload: Option<&str>,
    format: Option<&str>,
    lenient: bool,
    filters: Option<&str>,
    seed: u64,
    ftl: Option<String>,
    params: Option<BTreeMap<String, String>>,
    channels: Option<u32>,
    luns: Option<u32>,
    blocks_per_lun: Option<u32>,
    pages_per_block: Option<u32>,
    page_kib: Option<u32>,
    compact: bool,
    timing: Option<String>,
    logical_mib: Option<u64>,
    logical_kib: Option<u64>,
) -> PyResult<String> {
    let d = OcssdRunSettings::default();
    let settings = OcssdRunSettings {
        ftl: ftl.unwrap_or(d.ftl),
        params: params.unwrap_or_default().into_iter().collect(),
        channels: channels.unwrap_or(d.channels),
        luns: luns.unwrap_or(d.luns),
        blocks_per_lun: blocks_per_lun.unwrap_or(d.blocks_per_lun),
        pages_per_block: pages_per_block.unwrap_or(d.pages_per_block),
        page_kib: page_kib.unwrap_or(d.page_kib),
        compact,
        timing: timing.unwrap_or(d.timing),
        logical_mib,
        logical_kib,
    };
    let spec = lab(settings.spec(input(trace, workload, format, lenient, seed, filters)?))?;
    let run = py.allow_threads(|| guarded(|| lab(ocssd_bench::run_ocssd(&spec, &mut |_| {}))))?;
    Ok(serde_json::to_string(&run.report).expect("a report serializes"))
}

/// `zonekit cache run --json`: one bucket-cache configuration on YCSB-like reads or a trace.
/// `settings` is a JSON object of the CLI's flags by name (`zonekit_lab::cache::run`); an
/// unknown name is refused, naming the valid ones. Returns the report as JSON.
#[pyfunction]
pub fn cache_run(py: Python<'_>, settings: &str) -> PyResult<String> {
    let settings: CacheRunSettings = settings_from_json("cache_run", settings)?;
    let slot = ErrorSlot::default();
    let mut progress = RunProgress { slot: slot.clone() };
    let mut report = py.allow_threads(|| guarded(|| settings.run(&mut progress).map_err(|e| lab_error(e, &slot))))?;
    report.warnings = report.warnings.iter().map(|w| crate::run::python_spelling(w)).collect();
    Ok(serde_json::to_string(&report).expect("a report serializes"))
}

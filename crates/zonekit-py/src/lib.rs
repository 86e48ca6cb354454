//! Zonekit from Python: the native half of the `zonekit` package (`python/`). A thin layer:
//! each call turns its arguments into the lab's specs (whose defaults are the CLI's) and the
//! engines' traits, runs, and hands back JSON, columns or counters; the Python half makes
//! DataFrames of them. No engine logic lives here.
//!
//! - [`run`]: replay, sweep, analysis, item-cache simulation: arguments, errors, the GIL.
//! - [`policy`]: policies written in Python behind the engines' traits (placement, GC victim,
//!   item-cache eviction), and the slot a Python exception waits in until the run stops.
//! - [`trace`]: trace records as columns.
//! - [`bench`]: the tree, open-channel FTL and bucket-cache runs.
//! - [`device`]: an emulated zoned device (in memory or an image) driven from Python.
//!
//! Errors: a bad request is `ValueError` with the CLI's message, a failed run `RuntimeError`,
//! Ctrl-C `KeyboardInterrupt` (checked once per batch of writes), an exception raised inside a
//! Python policy stops the run and is raised again with its traceback. A panic is caught at
//! the boundary and becomes `RuntimeError`.

use pyo3::prelude::*;

pub mod bench;
pub mod device;
pub mod policy;
pub mod run;
pub mod trace;

/// The native module, `zonekit._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run::replay, m)?)?;
    m.add_function(wrap_pyfunction!(run::sweep, m)?)?;
    m.add_function(wrap_pyfunction!(run::analyze, m)?)?;
    m.add_function(wrap_pyfunction!(run::cache_sim, m)?)?;
    m.add_function(wrap_pyfunction!(run::policies, m)?)?;
    m.add_function(wrap_pyfunction!(run::defaults, m)?)?;
    m.add_function(wrap_pyfunction!(bench::tree_run, m)?)?;
    m.add_function(wrap_pyfunction!(bench::ocssd_run, m)?)?;
    m.add_function(wrap_pyfunction!(bench::cache_run, m)?)?;
    m.add_function(wrap_pyfunction!(trace::read_trace, m)?)?;
    m.add_class::<trace::TraceReader>()?;
    m.add_class::<device::Device>()?;
    Ok(())
}

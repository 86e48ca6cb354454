//! Trace records as columns: `read_trace` parses on its own thread, a few batches ahead of
//! Python, and hands each batch over as five byte buffers (time µs, volume, offset bytes,
//! length bytes, op: 0 read, 1 write) that numpy views without a copy.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use zonekit_trace::{Op, Record};

use crate::run::{input, usage};

/// Batches parsed ahead of the one Python is reading: parsing and Python's use overlap.
const BATCHES_AHEAD: usize = 2;

#[derive(Default)]
struct Columns {
    time_us: Vec<u64>,
    volume: Vec<u32>,
    offset_bytes: Vec<u64>,
    len_bytes: Vec<u64>,
    op: Vec<u8>,
}

/// A column's bytes in the machine's own order (numpy reads them with native dtypes).
fn bytes_of<'py, T: Copy>(py: Python<'py>, v: &[T]) -> Bound<'py, PyBytes> {
    // SAFETY: `T` is a plain integer type (u8, u32 or u64): every byte of it is initialised
    // and it has no padding, so viewing the slice as bytes is sound.
    let raw = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) };
    PyBytes::new(py, raw)
}

/// An iterator over a trace's record batches; each item is a tuple of five byte buffers.
#[pyclass(module = "zonekit._native")]
pub struct TraceReader {
    batches: Mutex<Receiver<Result<Columns, String>>>,
    done: bool,
}

#[pymethods]
impl TraceReader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[allow(clippy::type_complexity)]
    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
        if self.done {
            return Ok(None);
        }
        let batches = &self.batches;
        let next = py.allow_threads(|| batches.lock().unwrap_or_else(|p| p.into_inner()).recv());
        match next {
            Err(_) => {
                self.done = true;
                Ok(None)
            }
            Ok(Err(message)) => {
                self.done = true;
                Err(PyRuntimeError::new_err(message))
            }
            Ok(Ok(c)) => Ok(Some((bytes_of(py, &c.time_us), bytes_of(py, &c.volume), bytes_of(py, &c.offset_bytes), bytes_of(py, &c.len_bytes), bytes_of(py, &c.op)))),
        }
    }
}

/// Reads a trace file (any format the CLI reads, or a `.zkt` binary trace) or a generated
/// workload, `batch_rows` requests per batch.
#[pyfunction]
#[pyo3(signature = (*, trace=None, workload=None, format=None, lenient=false, filters=None, seed=1, batch_rows=1 << 20))]
pub fn read_trace(
    trace: Option<PathBuf>,
    workload: Option<&str>,
    format: Option<&str>,
    lenient: bool,
    filters: Option<&str>,
    seed: u64,
    batch_rows: usize,
) -> PyResult<TraceReader> {
    if batch_rows == 0 {
        return Err(usage("batch_rows must be at least 1"));
    }
    let input = input(trace, workload, format, lenient, seed, filters)?;
    // Fail now, in the caller, for an input that cannot be opened at all.
    if let Err(e) = input.requests() {
        return Err(usage(format!("input {}: {e}", input.describe())));
    }
    let (tx, rx) = sync_channel(BATCHES_AHEAD);
    std::thread::Builder::new()
        .name("zonekit-read-trace".into())
        .spawn(move || {
            let mut c = Columns::default();
            // Adds a record; false once the reader was dropped (stop reading).
            let add = |r: Record, c: &mut Columns| {
                c.time_us.push(r.time_us);
                c.volume.push(r.volume);
                c.offset_bytes.push(r.offset_bytes);
                c.len_bytes.push(r.len_bytes);
                c.op.push((r.op == Op::Write) as u8);
                c.time_us.len() < batch_rows || tx.send(Ok(std::mem::take(c))).is_ok()
            };
            // A text trace of independent lines is parsed on every core, as `trace convert`
            // parses it; anything else on this thread.
            let ended = match input.parallel_request_batches() {
                Some(Ok(batches)) => (|| {
                    for batch in batches {
                        for r in batch? {
                            if !add(r, &mut c) {
                                return Ok(false);
                            }
                        }
                    }
                    Ok(true)
                })(),
                Some(Err(e)) => Err(e),
                None => (|| {
                    for r in input.requests()? {
                        if !add(r?, &mut c) {
                            return Ok(false);
                        }
                    }
                    Ok(true)
                })(),
            };
            if !c.time_us.is_empty() && !matches!(ended, Ok(false)) {
                let _ = tx.send(Ok(c));
            }
            if let Err(e) = ended {
                let _ = tx.send(Err(format!("input {}: {e}", input.describe())));
            }
        })
        .map_err(|e| PyRuntimeError::new_err(format!("starting the trace reader: {e}")))?;
    Ok(TraceReader { batches: Mutex::new(rx), done: false })
}

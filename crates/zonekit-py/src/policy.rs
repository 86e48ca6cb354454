//! Policies written in Python, behind the engines' own traits: a placement ([`PyPlacement`],
//! the calls `zonekit_ftl::placement::Placement` makes), a GC victim rule ([`PyVictim`]) and
//! an item-cache eviction policy ([`PyItemCache`]).
//!
//! The engines call these once per block, so the run holds the GIL throughout (taking it
//! again is then a counter increment, not a lock) and lets other Python threads in once per
//! batch of writes ([`RunProgress`]). A Python exception cannot unwind through an engine:
//! the policy parks it in the run's [`ErrorSlot`], answers harmlessly until the batch ends,
//! and the run stops there and raises it.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use zonekit_cache::item::ItemCache;
use zonekit_ftl::placement::{BlockCtx, Placement, Reclaimed};
use zonekit_lab::Progress;
use zonekit_pool::victim::{Victim, VictimCtx};

/// Where the first Python exception of a run waits until the run stops.
#[derive(Clone, Default)]
pub struct ErrorSlot {
    set: Arc<AtomicBool>,
    error: Arc<Mutex<Option<PyErr>>>,
}

impl ErrorSlot {
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Relaxed)
    }

    /// Keeps `e` unless an earlier error is kept already (the first one is the cause).
    pub fn set(&self, e: PyErr) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e);
            self.set.store(true, Ordering::Relaxed);
        }
    }

    pub fn take(&self) -> Option<PyErr> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// A run's progress as Python sees it: once per batch of writes, checks for a parked policy
/// exception and for Ctrl-C (Python runs signal handlers only on the main thread, between
/// bytecodes: a long Rust loop has to ask).
pub struct RunProgress {
    pub slot: ErrorSlot,
}

impl Progress for RunProgress {
    fn update(&mut self, _writes: u64) {}

    fn cancelled(&mut self) -> bool {
        if self.slot.is_set() {
            return true;
        }
        Python::with_gil(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                self.slot.set(e);
                true
            }
        })
    }
}

/// A method of a Python object, or `None` if it has none (optional callbacks).
fn method(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<Py<PyAny>>> {
    if obj.hasattr(name)? {
        Ok(Some(obj.getattr(name)?.unbind()))
    } else {
        Ok(None)
    }
}

fn required(obj: &Bound<'_, PyAny>, name: &str, what: &str) -> PyResult<Py<PyAny>> {
    method(obj, name)?.ok_or_else(|| PyValueError::new_err(format!("a {what} written in Python needs a method {name}() ({})", type_name(obj))))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// The policy's `name` attribute, else its class's name.
fn policy_name(obj: &Bound<'_, PyAny>) -> String {
    obj.getattr("name").and_then(|n| n.extract::<String>()).unwrap_or_else(|_| type_name(obj))
}

/// A placement policy written in Python. The object has:
/// - `classes` (int): how many classes (open zones) it writes to; optional `user_classes`
///   (the first classes, hot to cold, that user writes go to; default all);
/// - `user_write(block, now, last_write, word)` and `gc_write(block, now, last_write,
///   from_class, word)`: the class of a write. `now` is logical time (user block writes
///   before this one), `last_write` the block's previous user write (`None` for a first
///   write), `word` the 32-bit state the engine keeps for the block (0 for a new block).
///   Return the class, or `(class, new_word)`;
/// - optional `on_zone_full(class)` and `on_reclaim(class, opened_at, full_at, now,
///   garbage_proportion)`.
pub struct PyPlacement {
    name: String,
    classes: usize,
    user_classes: usize,
    user_write: Py<PyAny>,
    gc_write: Py<PyAny>,
    on_zone_full: Option<Py<PyAny>>,
    on_reclaim: Option<Py<PyAny>>,
    slot: ErrorSlot,
}

impl PyPlacement {
    pub fn new(obj: &Bound<'_, PyAny>, slot: ErrorSlot) -> PyResult<PyPlacement> {
        let what = "placement policy";
        let classes: usize = obj
            .getattr("classes")
            .and_then(|c| c.extract())
            .map_err(|_| PyValueError::new_err(format!("a {what} written in Python needs an int attribute classes ({})", type_name(obj))))?;
        if classes == 0 || classes > u8::MAX as usize {
            return Err(PyValueError::new_err(format!("{}.classes = {classes}: a placement writes to 1 to 255 classes", type_name(obj))));
        }
        let user_classes = match obj.getattr("user_classes") {
            Ok(u) => u.extract::<usize>()?,
            Err(_) => classes,
        };
        if user_classes == 0 || user_classes > classes {
            return Err(PyValueError::new_err(format!("{}.user_classes = {user_classes}: between 1 and classes ({classes})", type_name(obj))));
        }
        Ok(PyPlacement {
            name: policy_name(obj),
            classes,
            user_classes,
            user_write: required(obj, "user_write", what)?,
            gc_write: required(obj, "gc_write", what)?,
            on_zone_full: method(obj, "on_zone_full")?,
            on_reclaim: method(obj, "on_reclaim")?,
            slot,
        })
    }

    /// The class a callback returned (and the new word, if it gave one); a bad answer or an
    /// exception is parked and class 0 stands in until the run stops.
    fn class_of(&self, answer: PyResult<Bound<'_, PyAny>>, word: &mut u32, call: &str) -> usize {
        let decided = answer.and_then(|a| {
            if let Ok(class) = a.extract::<usize>() {
                return Ok(class);
            }
            let t = a.downcast::<PyTuple>().map_err(|_| PyValueError::new_err(format!("{}.{call} returned {a}: expected a class or (class, word)", self.name)))?;
            let (class, new_word): (usize, u32) =
                t.extract().map_err(|_| PyValueError::new_err(format!("{}.{call} returned {a}: expected (class, word) with word a 32-bit unsigned int", self.name)))?;
            *word = new_word;
            Ok(class)
        });
        match decided {
            Ok(class) if class < self.classes => class,
            Ok(class) => {
                self.slot.set(PyValueError::new_err(format!("{}.{call} returned class {class}; the policy has {} classes (0..{})", self.name, self.classes, self.classes - 1)));
                0
            }
            Err(e) => {
                self.slot.set(e);
                0
            }
        }
    }
}

impl Placement for PyPlacement {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn classes(&self) -> usize {
        self.classes
    }
    fn user_classes(&self) -> usize {
        self.user_classes
    }
    fn user_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        if self.slot.is_set() {
            return 0;
        }
        Python::with_gil(|py| {
            let answer = self.user_write.bind(py).call1((b.id, b.now, b.last_user_write, *word));
            self.class_of(answer, word, "user_write")
        })
    }
    fn gc_write(&mut self, b: &BlockCtx, word: &mut u32) -> usize {
        if self.slot.is_set() {
            return 0;
        }
        Python::with_gil(|py| {
            let answer = self.gc_write.bind(py).call1((b.id, b.now, b.last_user_write, b.from_class, *word));
            self.class_of(answer, word, "gc_write")
        })
    }
    fn on_zone_full(&mut self, class: usize) {
        if let (Some(f), false) = (&self.on_zone_full, self.slot.is_set()) {
            Python::with_gil(|py| {
                if let Err(e) = f.bind(py).call1((class,)) {
                    self.slot.set(e);
                }
            });
        }
    }
    fn on_reclaim(&mut self, z: &Reclaimed) {
        if let (Some(f), false) = (&self.on_reclaim, self.slot.is_set()) {
            Python::with_gil(|py| {
                if let Err(e) = f.bind(py).call1((z.class, z.opened_at, z.full_at, z.now, z.garbage_proportion)) {
                    self.slot.set(e);
                }
            });
        }
    }
}

/// A GC victim rule written in Python: `select(zones, now, free_zones)` gets the candidate
/// zones (full, with garbage, at or over the engine's threshold) as a dict of equal-length
/// lists — `zone`, `class_`, `written`, `valid`, `garbage_proportion`, `opened_at`,
/// `full_at`, `last_invalidate`, `resets` — and returns one of the `zone` values, or `None`
/// to collect nothing.
pub struct PyVictim {
    name: String,
    select: Py<PyAny>,
    slot: ErrorSlot,
}

impl PyVictim {
    pub fn new(obj: &Bound<'_, PyAny>, slot: ErrorSlot) -> PyResult<PyVictim> {
        Ok(PyVictim { name: policy_name(obj), select: required(obj, "select", "GC victim rule")?, slot })
    }
}

impl Victim for PyVictim {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn select(&mut self, ctx: &VictimCtx) -> Option<usize> {
        if self.slot.is_set() {
            return None;
        }
        let candidates: Vec<_> = ctx.candidates().collect();
        if candidates.is_empty() {
            return None;
        }
        Python::with_gil(|py| {
            let chosen = (|| -> PyResult<Option<usize>> {
                let zones = PyDict::new(py);
                let column = |f: &dyn Fn(&(usize, &zonekit_pool::ZoneInfo, f64)) -> u64| candidates.iter().map(f).collect::<Vec<u64>>();
                zones.set_item("zone", column(&|c| c.0 as u64))?;
                zones.set_item("class_", column(&|c| c.1.class as u64))?;
                zones.set_item("written", column(&|c| c.1.written))?;
                zones.set_item("valid", column(&|c| c.1.valid))?;
                zones.set_item("garbage_proportion", candidates.iter().map(|c| c.2).collect::<Vec<f64>>())?;
                zones.set_item("opened_at", column(&|c| c.1.opened_at))?;
                zones.set_item("full_at", column(&|c| c.1.full_at))?;
                zones.set_item("last_invalidate", column(&|c| c.1.last_invalidate))?;
                zones.set_item("resets", column(&|c| c.1.resets))?;
                let answer = self.select.bind(py).call1((zones, ctx.now, ctx.free_zones))?;
                if answer.is_none() {
                    return Ok(None);
                }
                let zone: usize =
                    answer.extract().map_err(|_| PyValueError::new_err(format!("{}.select returned {answer}: expected a zone from zones['zone'] or None", self.name)))?;
                if !candidates.iter().any(|c| c.0 == zone) {
                    return Err(PyValueError::new_err(format!("{}.select returned zone {zone}, which is not among the candidates it was given", self.name)));
                }
                Ok(Some(zone))
            })();
            chosen.unwrap_or_else(|e| {
                self.slot.set(e);
                None
            })
        })
    }
}

/// An item cache whose eviction is written in Python: the cache keeps which blocks it holds
/// and its capacity; the policy hears `on_hit(block)` and `on_admit(block)` and answers
/// `evict()` with a block it holds (the cache is full when a miss needs room).
pub struct PyItemCache {
    name: String,
    capacity: usize,
    held: HashSet<u64>,
    on_hit: Option<Py<PyAny>>,
    on_admit: Option<Py<PyAny>>,
    evict: Py<PyAny>,
    slot: ErrorSlot,
    accesses: u64,
}

impl PyItemCache {
    pub fn new(obj: &Bound<'_, PyAny>, capacity: usize, slot: ErrorSlot) -> PyResult<PyItemCache> {
        Ok(PyItemCache {
            name: policy_name(obj),
            capacity,
            held: HashSet::with_capacity(capacity.min(1 << 24)),
            on_hit: method(obj, "on_hit")?,
            on_admit: method(obj, "on_admit")?,
            evict: required(obj, "evict", "cache eviction policy")?,
            slot,
            accesses: 0,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn tell(&self, py: Python<'_>, f: &Option<Py<PyAny>>, block: u64) {
        if let Some(f) = f {
            if let Err(e) = f.bind(py).call1((block,)) {
                self.slot.set(e);
            }
        }
    }
}

impl ItemCache for PyItemCache {
    fn name(&self) -> &'static str {
        "python"
    }
    fn access(&mut self, block: u64, _next_access: u64) -> bool {
        if self.slot.is_set() {
            return false;
        }
        self.accesses += 1;
        Python::with_gil(|py| {
            // The simulation loop does not ask for Ctrl-C: its only Python code does.
            if self.accesses % (1 << 16) == 0 {
                if let Err(e) = py.check_signals() {
                    self.slot.set(e);
                    return false;
                }
            }
            if self.held.contains(&block) {
                self.tell(py, &self.on_hit, block);
                return true;
            }
            if self.held.len() == self.capacity {
                let victim = self
                    .evict
                    .bind(py)
                    .call0()
                    .and_then(|v| v.extract::<u64>().map_err(|_| PyValueError::new_err(format!("{}.evict returned {v}: expected a block id", self.name))));
                match victim {
                    Ok(v) if self.held.remove(&v) => {}
                    Ok(v) => {
                        self.slot.set(PyValueError::new_err(format!("{}.evict returned block {v}, which the cache does not hold", self.name)));
                        return false;
                    }
                    Err(e) => {
                        self.slot.set(e);
                        return false;
                    }
                }
            }
            self.held.insert(block);
            self.tell(py, &self.on_admit, block);
            false
        })
    }
    fn len(&self) -> usize {
        self.held.len()
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
}

"""Zonekit from Python: the block FTL's placements and GC policies on zoned flash, trace
reading, item caches and the zoned-device emulator, with results as pandas DataFrames and
policies written in Python.

A thin layer over the Rust crates (the native module ``zonekit._native``): every setting has
the CLI's name and, when left out, the lab's default — the one the CLI's flags use too
(``zonekit.defaults()``).

Errors: a bad request raises ``ValueError`` with the CLI's message, a failed run
``RuntimeError``; Ctrl-C interrupts a long replay (``KeyboardInterrupt``); an exception raised
inside a policy written in Python stops the run and is raised again with its traceback.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from typing import Any, Dict, Iterator, List, Optional, Union

import numpy as np
import pandas as pd

from . import _native
from .policy import Eviction, Placement, Victim

__all__ = [
    "Device",
    "Eviction",
    "Placement",
    "Report",
    "Victim",
    "analyze",
    "cache_run",
    "cache_sim",
    "defaults",
    "ocssd_run",
    "policies",
    "read_trace",
    "replay",
    "sweep",
    "tree_run",
]

__version__ = _native.__version__

PathLike = Union[str, "os.PathLike[str]"]

import math

# Counts the native module takes as 32-bit; every other integer is 64-bit unsigned.
_U32 = frozenset(
    ("zone", "sequential_zones", "conventional_zones", "channels", "luns", "blocks_per_lun", "pages_per_block", "page_kib", "write_points",
     "threads", "journal_buckets", "btree_reserve", "zones_per_bucket", "nodes", "node", "block_size")
)
# Settings that are JSON on their way down (trace filters, cache_run's flags): plain values only.
_JSON_PLAIN = (type(None), bool, int, float, str)


def _check_value(call: str, name: str, value: Any) -> None:
    """Refuses, naming the argument, what no setting can mean: numbers out of the native
    module's range, NaN and infinities, text that is not UTF-8. The native conversions refuse
    these too, but without the argument's name."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        limit = 2**32 if name in _U32 else 2**64
        if not 0 <= value < limit:
            raise OverflowError(f"{call}: {name}={value}: out of range (0 to {limit - 1})")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{call}: {name}={value}: not a finite number")
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{call}: {name}={value!r}: not UTF-8 text (a path must be UTF-8)") from None
        if "\0" in value:
            raise ValueError(f"{call}: {name}={value!r}: contains a NUL character")
    elif isinstance(value, bytes):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{call}: {name}={value!r}: not UTF-8 (a path must be UTF-8)") from None
    elif isinstance(value, os.PathLike):
        _check_value(call, name, os.fspath(value))
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_value(call, name, v)


def _check_args(call: str, args: Dict[str, Any], json_plain=()) -> None:
    for name, value in args.items():
        _check_value(call, name, value)
        if name in json_plain and value is not None and not isinstance(value, _JSON_PLAIN + (list, tuple)):
            raise TypeError(f"{call}: {name}={value!r}: expected a number, string or list, not {type(value).__name__}")


def _check_settings(call: str, settings: Dict[str, Any], valid) -> None:
    unknown = sorted(set(settings) - set(valid))
    if unknown:
        raise ValueError(f"{call}: unknown setting {unknown[0]!r}; valid: {', '.join(valid)}")


# The CLI's trace filters (``--sample P/T``, ``--nodes N --node I [--chunk-mib C]``,
# ``--window START:END`` seconds, ``--volume A,B``) and ``--block-size``, by the flags' names.
_FILTERS = ("sample", "nodes", "node", "chunk_mib", "window", "volume", "block_size")


def _filters(settings: Dict[str, Any]) -> Optional[str]:
    """Takes the filter settings out of ``settings``, as the native calls' ``filters``."""
    given = {k: settings.pop(k) for k in _FILTERS if k in settings}
    given = {k: v for k, v in given.items() if v is not None}
    if isinstance(given.get("volume"), int):
        given["volume"] = [given["volume"]]
    return json.dumps(given) if given else None


def _params(params: Optional[Dict[str, Any]], name: str = "params") -> Optional[Dict[str, str]]:
    if params is None:
        return None
    if not isinstance(params, dict):
        raise TypeError(f"{name}: expected a dict of parameter names to values, not {type(params).__name__}")
    for k, v in params.items():
        _check_value(name, str(k), v)
    return {str(k): str(v) for k, v in params.items()}


def defaults() -> Dict[str, str]:
    """The lab's defaults for every replay setting (the CLI's flags have the same)."""
    return dict(_native.defaults())


def policies() -> pd.DataFrame:
    """Every built-in policy: family (placement, victim, item-cache), name, role, summary and
    parameters — ``zonekit policies``."""
    rows = _native.policies()
    return pd.DataFrame(rows, columns=["family", "name", "role", "summary", "params"])


class Report:
    """One replay's report: every field of ``report.json`` as an attribute, ``to_dict()``,
    and ``series``, the counters over the run as a DataFrame."""

    def __init__(self, data: Dict[str, Any]):
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"a replay report has no field {name!r}; fields: {', '.join(self._data)}") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._data))

    def to_dict(self) -> Dict[str, Any]:
        """The report as ``report.json`` has it (a copy)."""
        return copy.deepcopy(self._data)

    @property
    def series(self) -> pd.DataFrame:
        """User writes, GC writes and zones reclaimed as the run went, with the WAF so far and
        over each interval."""
        df = pd.DataFrame(self._data["series"], columns=["writes", "user_blocks", "gc_blocks", "gc_count"])
        user = df["user_blocks"].astype("float64")
        gc = df["gc_blocks"].astype("float64")
        df["waf"] = (user + gc) / user.where(user > 0)
        d_user, d_gc = user.diff().fillna(user), gc.diff().fillna(gc)
        df["interval_waf"] = (d_user + d_gc) / d_user.where(d_user > 0)
        return df

    def __repr__(self) -> str:
        d = self._data
        return f"<zonekit.Report {d['placement']} + {d['victim']} on {d['interface']}: WAF {d['waf']:.4f}, {d['user_blocks']} user blocks>"


def replay(
    trace: Optional[PathLike] = None,
    workload: Optional[str] = None,
    placement: Union[str, Placement, Any, None] = None,
    victim: Union[str, Victim, Any, None] = None,
    *,
    params: Optional[Dict[str, Any]] = None,
    **settings: Any,
) -> Report:
    """``zonekit replay``: one trace or generated workload through the block FTL.

    ``placement`` and ``victim`` are built-in names (``policies()``) or objects written in
    Python (``zonekit.Placement``, ``zonekit.Victim``). ``settings`` are the CLI's flags with
    underscores: preset, utilization, preset_size, unbounded, gc_threshold, gc_trigger, timing,
    device, zone_mib, interface, seed, format and lenient (a trace's), and the trace filters
    sample, nodes, node, chunk_mib, window, volume, block_size.
    """
    named = {k: v for k, v in (("placement", placement), ("victim", victim)) if isinstance(v, str)}
    _check_args("replay", dict(settings, trace=trace, workload=workload, **named), _FILTERS)
    filters = _filters(settings)
    text = _native.replay(trace=trace, workload=workload, placement=placement, victim=victim, params=_params(params), filters=filters, **settings)
    report = Report(json.loads(text))
    # A degenerate run (no GC, a device the working set does not fill as asked, ...) says so,
    # as the CLI does; the texts stay in report.warnings.
    for w in report.warnings:
        warnings.warn(w, RuntimeWarning, stacklevel=2)
    return report


def sweep(
    out: PathLike,
    traces: Optional[List[PathLike]] = None,
    workloads: Optional[List[str]] = None,
    placements: Optional[List[str]] = None,
    victims: Optional[List[str]] = None,
    **settings: Any,
) -> pd.DataFrame:
    """``zonekit sweep``: every input × placement × victim (× grid point) into ``out``, whose
    ``results.csv`` is resumed only under the same settings, as the CLI's. Returns its rows;
    ``df.attrs`` has ``ran``, ``reused`` and ``results`` (the file)."""
    _check_args("sweep", dict(settings, out=out, traces=traces, workloads=workloads, placements=placements, victims=victims))
    # A lone path or name is a sequence too: iterated, it was a list of one-character names.
    for name, value in (("traces", traces), ("workloads", workloads), ("placements", placements), ("victims", victims)):
        if value is not None and not isinstance(value, (list, tuple)):
            raise TypeError(f"sweep: {name}={value!r}: expected a list, not {type(value).__name__}")
    results, ran, reused = _native.sweep(
        out=out,
        traces=None if traces is None else [os.fspath(t) for t in traces],
        workloads=workloads,
        placements=placements,
        victims=victims,
        **settings,
    )
    df = pd.read_csv(results)
    df.attrs.update(ran=ran, reused=reused, results=results)
    return df


_TRACE_COLUMNS = (("time_us", np.uint64), ("volume", np.uint32), ("offset_bytes", np.uint64), ("len_bytes", np.uint64), ("op", np.uint8))


def _batch(buffers) -> Dict[str, np.ndarray]:
    return {name: np.frombuffer(buf, dtype=dtype) for (name, dtype), buf in zip(_TRACE_COLUMNS, buffers)}


def _to_arrow(batch: Dict[str, np.ndarray]):
    try:
        import pyarrow as pa
    except ImportError:
        raise ImportError("arrow=True needs pyarrow (pip install pyarrow)") from None
    return pa.RecordBatch.from_pydict(batch)


def read_trace(
    path: Optional[PathLike] = None,
    format: Optional[str] = None,
    *,
    workload: Optional[str] = None,
    lenient: bool = False,
    seed: int = 1,
    batch_rows: Optional[int] = None,
    arrow: bool = False,
    **filters: Any,
) -> Union[Dict[str, np.ndarray], Iterator[Dict[str, np.ndarray]], Any]:
    """A trace's requests (any format ``zonekit`` reads, or a generated workload) as numpy
    columns: ``time_us``, ``volume``, ``offset_bytes``, ``len_bytes``, ``op`` (1 write, 0 read).

    With ``batch_rows`` an iterator of batches of that many requests (parsed on a thread of
    its own, ahead of the caller); without, the whole trace at once. ``arrow=True`` gives
    pyarrow RecordBatches instead of dicts. ``volume`` keeps whole requests; ``sample``, node
    sharding and ``window`` select blocks, so they are refused here (a replay takes them).
    """
    _check_settings("read_trace", filters, _FILTERS)
    _check_args("read_trace", dict(filters, path=path, format=format, workload=workload, seed=seed, batch_rows=batch_rows), _FILTERS)
    if not isinstance(arrow, bool):
        raise TypeError(f"read_trace: arrow={arrow!r}: expected True or False")
    if batch_rows is not None and (isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1):
        raise ValueError(f"read_trace: batch_rows={batch_rows!r}: a number of rows, at least 1")
    reader = _native.read_trace(
        trace=path, workload=workload, format=format, lenient=lenient, filters=_filters(filters), seed=seed, batch_rows=batch_rows or 1 << 20
    )
    convert = _to_arrow if arrow else (lambda b: b)
    if batch_rows is not None:
        return (convert(_batch(b)) for b in reader)
    parts = [_batch(b) for b in reader]
    if not parts:
        whole = {name: np.empty(0, dtype=dtype) for name, dtype in _TRACE_COLUMNS}
    elif len(parts) == 1:
        whole = parts[0]
    else:
        whole = {name: np.concatenate([p[name] for p in parts]) for name, _ in _TRACE_COLUMNS}
    return convert(whole)


def analyze(trace: Optional[PathLike] = None, workload: Optional[str] = None, **settings: Any) -> Dict[str, Any]:
    """``zonekit trace analyze``: sizes, write share, working set, reuse and lifetime
    distributions of a trace's writes, as ``analysis.json`` has them. Settings: format,
    lenient, seed and the trace filters (sample, nodes, node, chunk_mib, window, volume,
    block_size)."""
    _check_settings("analyze", settings, ("format", "lenient", "seed") + _FILTERS)
    _check_args("analyze", dict(settings, trace=trace, workload=workload), _FILTERS)
    return json.loads(_native.analyze(trace=trace, workload=workload, filters=_filters(settings), **settings))


def cache_sim(
    policies: List[Union[str, Eviction, Any]],
    cache_blocks: int,
    trace: Optional[PathLike] = None,
    workload: Optional[str] = None,
    *,
    params: Optional[Dict[str, Any]] = None,
    **settings: Any,
) -> pd.DataFrame:
    """``zonekit cache sim``: every block request through each item-cache policy holding
    ``cache_blocks`` blocks — built-in names (lru, fifo, s3fifo, sieve, belady) or eviction
    policies written in Python (``zonekit.Eviction``). One row per policy."""
    _check_settings("cache_sim", settings, ("format", "lenient", "seed") + _FILTERS)
    _check_args("cache_sim", dict(settings, policies=policies, cache_blocks=cache_blocks, trace=trace, workload=workload), _FILTERS)
    if isinstance(policies, str):
        policies = [policies]
    if not isinstance(policies, (list, tuple)):
        raise TypeError(f"cache_sim: policies={policies!r}: expected a list of policy names or objects, not {type(policies).__name__}")
    filters = _filters(settings)
    reports = _native.cache_sim(list(policies), cache_blocks, trace=trace, workload=workload, params=_params(params), filters=filters, **settings)
    return pd.DataFrame([json.loads(r) for r in reports])


def tree_run(**settings: Any) -> pd.DataFrame:
    """``zonekit tree run``: a YCSB-style load and mix on the ZB+-tree and the copy-on-write
    B+-tree (``tree="zbtree"``, ``"cow"`` or ``"both"``) over sequential and conventional zones.
    One row per tree, nested fields flattened with dots. Settings: tree, records, operations,
    workload (w1..w5 or I/D/S percentages), distribution, seed, sequential_zones,
    conventional_zones, zone_size_mib, node_size_bytes, value_size_bytes, inner_entries_max,
    dynamic_zone_choice, cow_rebalance, cow_collect, delete_keys, timing."""
    _check_args("tree_run", settings)
    return pd.json_normalize([json.loads(t) for t in _native.tree_run(**settings)])


def ocssd_run(trace: Optional[PathLike] = None, workload: Optional[str] = None, **settings: Any) -> Dict[str, Any]:
    """``zonekit ocssd run --json``: a trace or generated workload through one open-channel
    FTL (ftl=pm-gcl, pm-gcc, sbm-gcl, hsbm-gcl, dftl or fast). Settings: format, lenient,
    seed, ftl, params, channels, luns, blocks_per_lun, pages_per_block, page_kib, compact,
    timing, logical_mib, logical_kib, and the trace filters (sample, nodes, node, chunk_mib,
    window, volume, block_size)."""
    if "params" in settings:
        settings["params"] = _params(settings["params"])
    _check_args("ocssd_run", dict(settings, trace=trace, workload=workload), _FILTERS)
    filters = _filters(settings)
    return json.loads(_native.ocssd_run(trace=trace, workload=workload, filters=filters, **settings))


def cache_run(trace: Optional[PathLike] = None, **settings: Any) -> Dict[str, Any]:
    """``zonekit cache run --json``: one bucket-cache configuration (interface, eviction,
    admission sampler, write mode) on YCSB-like reads or on a block trace (``trace``, text or
    ``.zkt``). Settings have the flags' names with ``_`` for ``-`` (``cache_mib``,
    ``interface``, ``zone_mib``, ``eviction``, ``sampler``, ``sampler_params`` as a dict,
    ``metadata``, ``records``, ``layout``, ...) and their defaults; an unknown one raises
    ``ValueError`` listing the valid ones. Returns the report: hit ratios, host, device and
    total WAF, evictions, latency."""
    if trace is not None:
        _check_value("cache_run", "trace", trace)
        if not isinstance(trace, (str, os.PathLike)):
            raise TypeError(f"cache_run: trace={trace!r}: expected a path, not {type(trace).__name__}")
        settings["trace"] = os.fspath(trace)
    if settings.get("sampler_params") is not None:
        settings["sampler_params"] = _params(settings["sampler_params"], "sampler_params")
    _check_args("cache_run", settings, set(settings) - {"sampler_params"})
    return json.loads(_native.cache_run(json.dumps(settings)))


class Device:
    """A zoned device with ZNS's rules, limits and counters: ``Device.memory(preset)``,
    ``Device.create(path, preset)`` (an emulated image) or ``Device.open(path)`` (an image or
    a Linux zoned block device). Refused commands raise ``ValueError`` with the device's
    reason; a failing medium ``OSError``."""

    def __init__(self, native):
        self._dev = native

    @classmethod
    def memory(cls, preset: str = "tiny") -> "Device":
        _check_args("Device.memory", dict(preset=preset))
        return cls(_native.Device.memory(preset))

    @classmethod
    def create(cls, path: PathLike, preset: str = "tiny") -> "Device":
        _check_args("Device.create", dict(path=path, preset=preset))
        return cls(_native.Device.create(path, preset))

    @classmethod
    def open(cls, path: PathLike, read_only: bool = False) -> "Device":
        _check_args("Device.open", dict(path=path, read_only=read_only))
        return cls(_native.Device.open(path, read_only))

    def __repr__(self) -> str:
        return repr(self._dev)

    @property
    def geometry(self) -> Dict[str, Any]:
        return json.loads(self._dev.geometry())

    def zone_report(self) -> pd.DataFrame:
        """One row per zone: zone, type, state, start, capacity_blocks, write_pointer,
        reset_recommended."""
        return pd.DataFrame(self._dev.zone_report())

    def read(self, lba: int, nbytes: int) -> bytes:
        _check_args("Device.read", dict(lba=lba, nbytes=nbytes))
        return self._dev.read(lba, nbytes)

    def write(self, lba: int, data: bytes) -> None:
        _check_args("Device.write", dict(lba=lba))
        self._dev.write(lba, data)

    def append(self, zone: int, data: bytes) -> int:
        """Zone Append; returns the LBA the data landed at."""
        _check_args("Device.append", dict(zone=zone))
        return self._dev.append(zone, data)

    def open_zone(self, zone: int) -> None:
        _check_args("Device.open_zone", dict(zone=zone))
        self._dev.open_zone(zone)

    def close_zone(self, zone: int) -> None:
        _check_args("Device.close_zone", dict(zone=zone))
        self._dev.close_zone(zone)

    def finish_zone(self, zone: int) -> None:
        _check_args("Device.finish_zone", dict(zone=zone))
        self._dev.finish_zone(zone)

    def reset_zone(self, zone: int) -> None:
        _check_args("Device.reset_zone", dict(zone=zone))
        self._dev.reset_zone(zone)

    def flush(self) -> None:
        self._dev.flush()

    def stats(self) -> Dict[str, Any]:
        """Counters since the device was opened: ``reads``, ``writes``, ``appends`` (operations)
        with ``*_bytes``, zone management commands, and ``resets_per_zone`` (wear)."""
        stats = {}
        for name, value in json.loads(self._dev.stats()).items():
            if isinstance(value, dict):  # an operation counter: {ops, bytes}
                stats[name], stats[f"{name}_bytes"] = value["ops"], value["bytes"]
            else:
                stats[name] = value
        return stats

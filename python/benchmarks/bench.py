"""The Python package's benchmarks (docs/benchmarks.md, "Zonekit from Python"), each measured
against its reference in the same run, pair by pair, RUNS times (median and spread printed):

1. replay: ``zonekit.replay`` of a text trace with a built-in policy, against the CLI's
   ``zonekit replay`` of the same file (its whole process);
2. policies: a placement written in Python against the Rust one making the same decisions
   (SepGC and SepBIT), in blocks placed per second and per-call overhead;
3. read_trace: ``zonekit.read_trace`` of the text trace against ``zonekit trace convert``.

    python python/benchmarks/bench.py [--runs 5] [--writes 10M] [--zonekit target/release/zonekit]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zonekit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from sepbit import SepBIT  # noqa: E402


class SepGC(zonekit.Placement):
    """User writes to one class, GC writes to another: the Rust `sepgc`, in Python."""

    classes, user_classes = 2, 1

    def user_write(self, block, now, last, word):
        return 0

    def gc_write(self, block, now, last, from_class, word):
        return 1


def spread(values):
    return f"median {statistics.median(values):.3f} (min {min(values):.3f}, max {max(values):.3f})"


def timed(f):
    started = time.perf_counter()
    out = f()
    return time.perf_counter() - started, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--writes", default="10M", help="block writes of the generated trace")
    ap.add_argument("--zonekit", default=os.environ.get("ZONEKIT_BIN", "target/release/zonekit"))
    ap.add_argument("--only", default="replay,policies,read_trace", help="comma-separated: replay, policies, read_trace")
    a = ap.parse_args()
    only = set(a.only.split(","))
    work = Path(tempfile.mkdtemp(prefix="zonekit-bench-"))
    trace = work / "trace.csv"
    subprocess.run([a.zonekit, "trace", "gen", f"zipf:blocks=1M,alpha=0.9,writes={a.writes}", "--out", str(trace)], check=True, capture_output=True)
    print(f"trace: {trace} ({trace.stat().st_size / 2**20:.0f} MiB, Alibaba CSV), {a.runs} runs of each, paired\n")

    if "replay" in only:
        replay_against_the_cli(a, trace, work)
    if "policies" in only:
        python_policies(a)
    if "read_trace" in only:
        read_trace_against_convert(a, trace, work)


def replay_against_the_cli(a, trace, work):
    settings = dict(placement="sepbit", victim="greedy", preset="tiny")
    ratios, py_s, cli_s = [], [], []
    for i in range(a.runs):
        cli, _ = timed(lambda: subprocess.run([a.zonekit, "replay", str(trace), "--placement", "sepbit", "--victim", "greedy", "--preset", "tiny", "--out", str(work / "replay")], check=True, capture_output=True))
        py, report = timed(lambda: zonekit.replay(trace=trace, **settings))
        ratios.append(cli / py)
        py_s.append(py)
        cli_s.append(cli)
    print(f"replay (sepbit + greedy, WAF {report.waf:.4f}): Python {spread(py_s)} s, CLI {spread(cli_s)} s")
    print(f"  Python's speed / the CLI's: {spread(ratios)}\n")


def python_policies(a):
    workload = "zipf:blocks=200K,alpha=0.9,writes=4M"
    for python_policy, rust_name in [(SepGC, "sepgc"), (SepBIT, "sepbit")]:
        rust_rate, py_rate, overhead_ns = [], [], []
        for i in range(a.runs):
            tr, r = timed(lambda: zonekit.replay(workload=workload, placement=rust_name, victim="greedy", preset="tiny"))
            tp, p = timed(lambda: zonekit.replay(workload=workload, placement=python_policy(), victim="greedy", preset="tiny"))
            assert p.waf == r.waf, (p.waf, r.waf)
            placed = r.user_blocks + r.gc_blocks  # one policy call each
            rust_rate.append(placed / r.wall_s / 1e6)
            py_rate.append(placed / p.wall_s / 1e6)
            overhead_ns.append((p.wall_s - r.wall_s) / placed * 1e9)
        print(f"policy {rust_name} (WAF {r.waf:.3f}, {placed} blocks placed: user + GC), replay loop only:")
        print(f"  Rust {spread(rust_rate)} M blocks/s; Python {spread(py_rate)} M blocks/s")
        print(f"  Python's cost per call over the Rust policy's: {spread(overhead_ns)} ns\n")


def read_trace_against_convert(a, trace, work):
    ratios, read_s, convert_s = [], [], []
    for i in range(a.runs):
        tc, _ = timed(lambda: subprocess.run([a.zonekit, "trace", "convert", str(trace), "--out", str(work / "t.zkt")], check=True, capture_output=True))
        tr, cols = timed(lambda: zonekit.read_trace(trace))
        ratios.append(tr / tc)
        read_s.append(tr)
        convert_s.append(tc)
    print(f"read_trace ({len(cols['op'])} requests): {spread(read_s)} s; zonekit trace convert {spread(convert_s)} s")
    print(f"  read_trace's time / convert's: {spread(ratios)}")


if __name__ == "__main__":
    main()

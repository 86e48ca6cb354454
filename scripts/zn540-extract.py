#!/usr/bin/env python3
"""Extract the ZN540 (and conventional SSD) measurements Zonekit fits its timing model to (issue #48).

Usage:
    scripts/zn540-extract.py GITDIR [--rev REV] [--out DIR] [--full]

GITDIR is a clone (bare or not) of the public repository Krien/NVMeBenchmarks, the data of
Doekemeijer, Tehrany et al., "Performance Characterization of NVMe Flash Devices with Zoned
Namespaces (ZNS)", IEEE CLUSTER 2023. Nothing is checked out: every file is read with
`git show REV:path`, so the values are tied to one commit (REV, default HEAD; the CSVs in the
repository were made from main at 01f40f1c9228c6df7116d050e0132743dc4fb5a1). Only the data is
read, never the repository's code. --out defaults to crates/zonekit-device/data beside this
script. --full adds every point of the grids (the default keeps the curves a model is fitted
to, see below), which makes the files several times larger.

The repository names its devices zns-a, nvme-a and nvme-b; its commit 6f2290e0 ("Rename
models (#16)") renamed them from the drives' model numbers, which this script re-derives:
  zns-a  = WZS4C8T1TDSP303  WD Ultrastar DC ZN540 1 TB (ZNS)          -> data/zn540/
  nvme-a = WUS4B7696DSP303  WD Ultrastar DC SN540 (conventional)      -> data/sn540/
  nvme-b = Samsung SSD 980 PRO 2TB (conventional)                      -> data/980pro/

Files written (every one long format, one measured value per row):
  zn540/io.csv          fio SPDK, 4 KiB LBA format: sequential write at QD1 across 1-14 zones
                        and block sizes; zone append across queue depths (one zone) and zones
                        (QD1); random read across queue depths and zones.
  zn540/io-uring.csv    fio io_uring: writes at QD1 across zones (scheduler none) and with
                        mq-deadline across queue depths (the only way to write at QD > 1).
  zn540/zone-ops.csv    the authors' SPDK harness (one command at a time, busy-polled): reset
                        and finish against the zone's fill, reset after finish, open, close,
                        the write after a close, the first write/append that opens a zone
                        implicitly, and steady 4 KiB writes/appends at QD1.
  zn540/interference.csv  runs with a second stream beside the measured one: I/O beside
                        resets, random reads beside rate-limited writes/appends, long runs of
                        4 jobs appending 1 MiB at QD32 beside random reads.
  zn540/geometry.csv    lba size, zone size and capacity, zone count, open-zone limit used.
  980pro/io.csv, sn540/io.csv, sn540/interference.csv: the same kind of runs on the
                        conventional drives, where the data has them.

Columns: device, experiment, role, engine, lba_bytes, bs_bytes, qd, zones, fill_lbas,
fill_frac, bg_op, bg_bs_bytes, bg_qd, bg_jobs, bg_rate_bytes_per_s, metric, value, n,
source_commit, source_path, source_field, note, host_cpus, host_slice_ns.
  role     fit: the drive alone under one stream, SPDK, no second stream (what a timing model
           may be fitted to); validation: interference runs (a second stream beside the
           measured one; the issue forbids fitting to them), repeat runs of a zone-op test,
           and io_uring runs (host engine and scheduler in the path: mq-deadline merges
           sequential writes).
  zones    concurrent zones, one fio job (thread) each; for reads, jobs each reading a zone.
  fill_*   LBAs written into the zone before the reset/finish, and that over the zone's
           capacity (275712 LBAs).
  bg_*     the other stream of an interference run (op, block size, queue depth, jobs, rate
           limit per job in bytes/s; empty = unlimited).
  metric   lat_ns_mean (fio lat_ns.mean: submission + completion); clat_ns_p50/p99/p999 (fio
           reports percentiles of completion latency only in the grid runs: lat = slat + clat,
           slat about 0.5 us with SPDK); lat_ns_p50/p99/p999 where fio ran with
           lat_percentiles=1 or for the harness (time from submit to completion, nearest-rank
           percentiles over the samples); lat_ns_max; iops; bw_bytes_per_s.
  n        samples behind the value (fio total_ios; harness lines).
  source_* the file at that commit and the JSON field or the line prefix read.
  host_*   only where a grid run's busy-polling SPDK threads outnumbered the CPUs they ran on
           (the 14-zone runs: usr_cpu 71.4 % = 10/14 each): the CPUs they shared, and the
           time a thread waited for one each time it was switched out (its time off the CPU
           over fio's ctx). Its latencies then hold that wait; see host_share.

Notes the data needs:
  - fio's io_uring runs (sqthread_poll) report a bogus completion latency: clat_ns means of
    about 100 s and the same percentile, 17112760320 ns, at nearly every rank, above the run's
    largest total latency. Percentiles above lat_ns.max are dropped, so only the means of the
    total latency, IOPS and bandwidth are kept from io_uring.
  - The harness's interference logs hold a 0 where it did not time an operation (the op
    issued with a queued reset) or never issued it (zones left unreset when the run ended);
    zeros are dropped and counted in the note.
  - Where a fio job wrote more than its zone range (size=100z per job) it wrapped around, so
    zones were reset within the run; the note says so.
"""

import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys

RENAME_COMMIT = "6f2290e03679f215e36d184246c1c956ea722f9f"
KIB = 1024
MIB = 1024 * 1024
COLUMNS = [
    "device", "experiment", "role", "engine", "lba_bytes", "bs_bytes", "qd", "zones",
    "fill_lbas", "fill_frac", "bg_op", "bg_bs_bytes", "bg_qd", "bg_jobs", "bg_rate_bytes_per_s",
    "metric", "value", "n", "source_commit", "source_path", "source_field", "note",
    "host_cpus", "host_slice_ns",
]
BS_GRID = [4096, 8192, 16384, 32768, 65536, 131072]
PCTS = [("p50", "50.000000"), ("p99", "99.000000"), ("p999", "99.900000")]


class Repo:
    def __init__(self, gitdir, rev):
        self.gitdir = gitdir
        self.commit = self.git("rev-parse", rev + "^{commit}").strip()
        self.names = self.git("ls-tree", "-r", "--name-only", self.commit).splitlines()

    def git(self, *args):
        r = subprocess.run(["git", "--git-dir", self.gitdir, *args], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def text(self, path):
        return self.git("show", f"{self.commit}:{path}")

    def under(self, prefix):
        return [n for n in self.names if n.startswith(prefix)]


def fio_json(text):
    """fio's JSON output, after whatever the run printed before it."""
    return json.loads(text[text.index("{"):])


def size_units(s):
    """fio sizes and rates: '128k', '1m', '100m' (base 2, as fio's default kb_base)."""
    m = re.fullmatch(r"(\d+)([kmg]?)", s.strip().lower())
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "k": KIB, "m": MIB, "g": 1024 * MIB}[m.group(2)]


def write_rate(rate):
    """fio 'rate' option: 'read,write' or one value for both; the write side in bytes/s."""
    if not rate:
        return None
    parts = rate.split(",")
    w = parts[1] if len(parts) > 1 else parts[0]
    v = size_units(w) if w else None
    return v or None


def nearest_rank(sorted_vals, q):
    return sorted_vals[min(len(sorted_vals) - 1, max(0, math.ceil(q / 100 * len(sorted_vals)) - 1))]


def fmt(v):
    if v is None or v == "":
        return ""
    if isinstance(v, float):
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.6g}" if abs(v) < 1e6 else f"{v:.0f}"
    return str(v)


class Out:
    def __init__(self, repo):
        self.repo = repo
        self.files = {}

    def add(self, file, **kw):
        row = {c: "" for c in COLUMNS}
        row["source_commit"] = self.repo.commit
        for k, v in kw.items():
            if k not in row:
                raise KeyError(k)
            row[k] = fmt(v)
        self.files.setdefault(file, []).append(row)

    def write(self, outdir):
        counts = {}
        for file, rows in self.files.items():
            path = os.path.join(outdir, file)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
                w.writeheader()
                w.writerows(rows)
            counts[file] = len(rows)
        return counts


# ---------------------------------------------------------------------------------------------
# fio runs


def fio_rows(out, file, path, job_index, job, direction, base, pct=True, extra_note=""):
    """One fio job's latency, IOPS and bandwidth as rows; base holds the parameter columns."""
    s = job[direction]
    pre = f"jobs[{job_index}].{direction}"
    n = s["total_ios"]
    note = extra_note
    rows = [("lat_ns_mean", s["lat_ns"]["mean"], f"{pre}.lat_ns.mean")]
    if pct:
        if s["lat_ns"].get("percentile"):
            kind, stat = "lat_ns", s["lat_ns"]
        else:
            kind, stat = "clat_ns", s["clat_ns"]
        p = stat.get("percentile") or {}
        # A percentile above the run's largest total latency cannot be right (fio's io_uring
        # runs with sqthread_poll report a completion latency that is not one).
        valid = p and all(p.get(k, math.inf) <= s["lat_ns"]["max"] * 1.02 + 1000 for _, k in PCTS)
        if valid:
            for name, key in PCTS:
                rows.append((f"{kind}_{name}", p[key], f'{pre}.{kind}.percentile["{key}"]'))
        elif p:
            note = (note + "; " if note else "") + ("fio's completion-latency percentiles exceed the "
                                                    "largest total latency (bogus): dropped")
    rows.append(("iops", s["iops"], f"{pre}.iops"))
    rows.append(("bw_bytes_per_s", s["bw_bytes"], f"{pre}.bw_bytes"))
    for metric, value, field in rows:
        out.add(file, **base, metric=metric, value=float(value), n=n, source_path=path,
                source_field=field, note=note)


def only_job(d):
    """The grid runs hold one (group-reported) job: its index, the job and the data direction."""
    for i, j in enumerate(d["jobs"]):
        for direction in ("write", "read"):
            if j[direction]["total_ios"] > 0:
                return i, j, direction
    raise ValueError("no I/O in the run")


def grid_files(repo, root, op):
    """(bs, zones, qd, path) of data/<engine>/<model>/<lbaf>/<op>/<bs>bs/<zones>zone/<qd>.json."""
    pat = re.compile(re.escape(f"{root}/{op}/") + r"(\d+)bs/(\d+)zone/(\d+)\.json$")
    found = []
    for n in repo.under(f"{root}/{op}/"):
        m = pat.match(n)
        if m:
            found.append((int(m.group(1)), int(m.group(2)), int(m.group(3)), n))
    return sorted(found)


def wrap_note(d, job, zone_cap_bytes):
    """Where a zoned write job wrote past its zone range, fio reset zones during the run."""
    go = d.get("global options", {})
    jo = job["job options"]
    size = jo.get("size", go.get("size", ""))
    m = re.fullmatch(r"(\d+)z", size)
    if not m or not zone_cap_bytes:
        return ""
    jobs = int(jo.get("numjobs", go.get("numjobs", 1)))
    written = job["write"]["io_bytes"] / jobs / zone_cap_bytes
    if written > int(m.group(1)):
        return f"wrapped: {written:.0f} zones per job into a {m.group(1)}-zone range, so fio reset zones mid-run"
    return ""


def host_share(job, jobs):
    """(CPUs, time slice in ns) that a grid run's busy-polling SPDK threads shared, when fewer
    than one CPU each; None when every thread had its own.

    An SPDK thread polls its queue without pause, so fio's usr_cpu + sys_cpu (the mean over
    the threads, group-reported) is 100 % unless the threads outnumbered the CPUs they were
    pinned to (the runs bind fio to one NUMA node). Each time a thread is taken off its CPU
    counts one context switch (fio's ctx; under 1,000 in the runs where every thread had a
    CPU), so the time a thread waits for one, a scheduler slice, is its time off the CPU over
    those switches."""
    share = (job["usr_cpu"] + job["sys_cpu"]) / 100
    cpus = round(jobs * share)
    if jobs < 2 or cpus >= jobs or job["ctx"] <= 0:
        return None
    off_ns = (1 - cpus / jobs) * job["job_runtime"] * 1e6
    return cpus, round(off_ns / job["ctx"])


def grid(out, repo, file, device, root, op, experiment, engine, role, lba_bytes, keep,
         zone_cap_bytes=None, zoned=True, pct=True, note=""):
    for bs, zones, qd, path in grid_files(repo, root, op):
        if not keep(bs, zones, qd):
            continue
        d = fio_json(repo.text(path))
        i, job, direction = only_job(d)
        jo = job["job options"]
        go = d.get("global options", {})
        assert int(jo.get("bs", go.get("bs", bs))) == bs, path
        assert int(jo.get("iodepth", go.get("iodepth", qd))) == qd, path
        assert int(jo.get("numjobs", go.get("numjobs", 1))) == zones, path
        n = note
        if direction == "write" and zoned:
            w = wrap_note(d, job, zone_cap_bytes)
            n = "; ".join(x for x in (note, w) if x)
        base = dict(device=device, experiment=experiment, role=role, engine=engine,
                    lba_bytes=lba_bytes, bs_bytes=bs, qd=qd, zones=zones if zoned else "")
        host = host_share(job, zones) if engine == "fio-spdk" else None
        if host:
            base.update(host_cpus=host[0], host_slice_ns=host[1])
            n = "; ".join(x for x in (n, f"{zones} polling threads shared {host[0]} CPUs "
                                      f"(usr_cpu {job['usr_cpu']:.1f} % each, ctx {job['ctx']})") if x)
        fio_rows(out, file, path, i, job, direction, base, pct=pct, extra_note=n)


def mixed_fio(out, repo, file, device, path, measured, background, role, engine, lba_bytes,
              experiment_of, bg_metrics=("bw_bytes_per_s", "lat_ns_mean"),
              fg_metrics=("lat_ns_mean", "lat_ns_p50", "lat_ns_p99", "lat_ns_p999", "iops")):
    """A fio run with a measured job and a background job: rows for both, each naming the other."""
    text = repo.text(path)
    if "{" not in text:
        print(f"skipped (no fio JSON in it): {path}", file=sys.stderr)
        return
    d = fio_json(text)
    go = d.get("global options", {})
    jobs = {j["jobname"]: (i, j) for i, j in enumerate(d["jobs"])}

    def params(j, direction):
        jo = j["job options"]
        rw = jo.get("rw", go.get("rw", "read"))
        append = direction == "write" and jo.get("zone_append", go.get("zone_append")) == "1"
        # In fio's zbd mode every write lands at a zone's write pointer; with zone_append=1 it
        # is an append, randwrite only picks which of the job's open zones.
        op = "append" if append else rw
        return dict(op=op, bs=size_units(jo.get("bs", go.get("bs", "4k"))),
                    qd=int(jo.get("iodepth", go.get("iodepth", 1))),
                    jobs=int(jo.get("numjobs", go.get("numjobs", 1))),
                    rate=write_rate(jo.get("rate")))

    present = [name for name in (measured, background) if name in jobs]
    info = {}
    for name in present:
        i, j = jobs[name]
        direction = "read" if j["read"]["total_ios"] > 0 else "write"
        info[name] = (i, j, direction, params(j, direction))
    for name in present:
        other = background if name == measured else measured
        i, j, direction, p = info[name]
        metrics = fg_metrics if name == measured else bg_metrics
        base = dict(device=device, role=role, engine=engine, lba_bytes=lba_bytes,
                    bs_bytes=p["bs"], qd=p["qd"], zones=p["jobs"] if device == "zn540" else "")
        if other in info:
            op = info[other][3]
            base.update(bg_op=op["op"], bg_bs_bytes=op["bs"], bg_qd=op["qd"], bg_jobs=op["jobs"],
                        bg_rate_bytes_per_s=op["rate"] or "")
            base["experiment"] = experiment_of(p["op"], op["op"])
        else:
            base["experiment"] = experiment_of(p["op"], None)
        note = ""
        s = j[direction]
        pre = f"jobs[{i}].{direction}"
        values = {
            "lat_ns_mean": (s["lat_ns"]["mean"], f"{pre}.lat_ns.mean"),
            "iops": (s["iops"], f"{pre}.iops"),
            "bw_bytes_per_s": (s["bw_bytes"], f"{pre}.bw_bytes"),
        }
        lp = s["lat_ns"].get("percentile") or {}
        for nm, key in PCTS:
            if key in lp:
                values[f"lat_ns_{nm}"] = (lp[key], f'{pre}.lat_ns.percentile["{key}"]')
        for metric in metrics:
            if metric in values:
                v, field = values[metric]
                out.add(file, **base, metric=metric, value=float(v), n=s["total_ios"],
                        source_path=path, source_field=field, note=note)


# ---------------------------------------------------------------------------------------------
# the authors' SPDK harness (zns_state_machine_perf): lines "<label>,<ns>[,<index>]"


def harness_samples(repo, path):
    samples, header = {}, None
    for line in repo.text(path).splitlines():
        if line.startswith("lba_size:"):
            header = line
            continue
        parts = line.strip().split(",")
        if len(parts) < 2 or not parts[1].strip().isdigit():
            continue
        samples.setdefault(parts[0], []).append(int(parts[1]))
    return samples, header


def harness_rows(out, file, path, label, values, base, role, note="", with_max=False):
    zeros = sum(1 for v in values if v == 0)
    vals = sorted(v for v in values if v > 0)
    if not vals:
        return
    notes = [x for x in (note, f"{zeros} zero entries (not timed or not issued) dropped" if zeros else "") if x]
    field = f'column 2 of the lines "{label},..."'
    stats = [("lat_ns_mean", statistics.fmean(vals)), ("lat_ns_p50", nearest_rank(vals, 50)),
             ("lat_ns_p99", nearest_rank(vals, 99))]
    if len(vals) >= 1000:
        stats.append(("lat_ns_p999", nearest_rank(vals, 99.9)))
    if with_max:
        stats.append(("lat_ns_max", vals[-1]))
    for metric, v in stats:
        out.add(file, **base, role=role, metric=metric, value=float(v), n=len(vals),
                source_path=path, source_field=field, note="; ".join(notes))


# ---------------------------------------------------------------------------------------------


def zn540(out, repo, full):
    spdk = "data/spdk/zns-a/lbaf2"
    uring = "data/io_uring/zns-a/lbaf2"
    custom = "data/custom/zns-a"
    F = "zn540/io.csv"

    # Geometry from the harness' header line.
    hdr_path = f"{custom}/partial_reset/run4"
    _, header = harness_samples(repo, hdr_path)
    g = dict(re.findall(r"(\w+): (\d+)", header))
    lba, zsize, zcnt, zcap = (int(g["lba_size"]), int(g["zone_size"]), int(g["zone_cnt"]),
                              int(g["zone_cap"]))
    zcap_bytes = zcap * lba
    geo = [
        ("lba_bytes", lba, "lba_size"), ("zone_size_lbas", zsize, "zone_size"),
        ("zone_size_bytes", zsize * lba, "zone_size x lba_size"),
        ("zone_cap_lbas", zcap, "zone_cap"), ("zone_cap_bytes", zcap_bytes, "zone_cap x lba_size"),
        ("zone_count", zcnt, "zone_cnt"),
        ("capacity_bytes", zcnt * zcap_bytes, "zone_cnt x zone_cap x lba_size"),
    ]
    for key, v, field in geo:
        out.add("zn540/geometry.csv", device="zn540", experiment="geometry", role="fit",
                engine="spdk-harness", metric=key, value=float(v), source_path=hdr_path,
                source_field=f'header line "lba_size: ... zone_cap: ...": {field}',
                note="the harness prints it from the namespace's zone report")
    # The open-zone limit: every grid job set fio's max_open_zones; the 14-zone runs worked.
    p14 = f"{spdk}/write/4096bs/14zone/1.json"
    d = fio_json(repo.text(p14))
    out.add("zn540/geometry.csv", device="zn540", experiment="geometry", role="fit",
            engine="fio-spdk", metric="max_open_zones_used", value=float(d["global options"]["max_open_zones"]),
            source_path=p14, source_field='"global options".max_open_zones',
            note="the limit the harness gave fio (and 14 jobs each writing its own zone ran); "
                 "the device's reported open/active limits are not in the data")
    # The model numbers behind zns-a, nvme-a, nvme-b.
    try:
        renames = repo.git("diff-tree", "-M", "-r", "--name-status", RENAME_COMMIT + "^", RENAME_COMMIT)
        seen = set()
        for line in renames.splitlines():
            parts = line.split("\t")
            if not parts[0].startswith("R") or not parts[1].startswith("data/spdk/"):
                continue
            old, new = parts[1].split("/")[2], parts[2].split("/")[2]
            if (old, new) in seen:
                continue
            seen.add((old, new))
            out.add("zn540/geometry.csv", device=new, experiment="model", role="fit",
                    metric="model_number", value=old.rstrip("_"),
                    source_path=f"data/spdk/{old}/ -> data/spdk/{new}/",
                    source_field=f"rename in commit {RENAME_COMMIT[:8]} (Rename models #16)",
                    note="zns-a is the ZN540; nvme-a (WUS4B7696DSP303) is a conventional "
                         "Ultrastar DC SN540, not the ZN540")
    except RuntimeError as e:
        print(f"warning: rename commit not in this clone ({e}); model numbers not written", file=sys.stderr)

    # fio SPDK grids, 4 KiB LBA format.
    grid(out, repo, F, "zn540", spdk, "write", "write", "fio-spdk", "fit", lba,
         lambda bs, z, qd: qd == 1, zcap_bytes)
    grid(out, repo, F, "zn540", spdk, "append", "append", "fio-spdk", "fit", lba,
         lambda bs, z, qd: full or z == 1 or qd == 1, zcap_bytes)
    grid(out, repo, F, "zn540", spdk, "randread", "randread", "fio-spdk", "fit", lba,
         lambda bs, z, qd: True, zcap_bytes,
         note="each job reads within one zone")
    # io_uring: writes at QD1 across zones (none), and through mq-deadline at QD > 1.
    FU = "zn540/io-uring.csv"
    grid(out, repo, FU, "zn540", uring, "write", "write", "fio-io_uring-none", "validation", lba,
         lambda bs, z, qd: qd == 1, zcap_bytes, pct=True)
    grid(out, repo, FU, "zn540", uring, "writemq", "write", "fio-io_uring-mq-deadline", "validation",
         lba, lambda bs, z, qd: full or z == 1, zcap_bytes, pct=True,
         note="mq-deadline may merge writes")
    if full:
        for op in ("randread", "randreadmq"):
            grid(out, repo, FU, "zn540", uring, op, "randread",
                 "fio-io_uring-" + ("mq-deadline" if op.endswith("mq") else "none"), "validation",
                 lba, lambda bs, z, qd: True, zcap_bytes, pct=True)

    # Zone operations from the harness.
    Z = "zn540/zone-ops.csv"

    def zbase(experiment, fill=None):
        b = dict(device="zn540", experiment=experiment, engine="spdk-harness", lba_bytes=lba,
                 qd=1, zones=1)
        if fill is not None:
            b.update(fill_lbas=fill, fill_frac=round(fill / zcap, 6))
        return b

    for run, role in (("run4", "fit"), ("run1", "validation"), ("run2", "validation"),
                      ("run3", "validation")):
        path = f"{custom}/partial_reset/{run}"
        samples, _ = harness_samples(repo, path)
        note = {"run4": "opened explicitly, filled with fill_lbas 4 KiB writes, 1 s idle, reset; "
                        "two passes over 903 zones",
                "run3": "repeat run with only some zones; its empty-zone reset is microseconds, "
                        "not run4's 1.6 ms: how that zone was prepared is not recorded"}.get(run, "repeat run")
        for label in sorted(samples, key=lambda s: int(s.split("_")[1])):
            fill = int(label.split("_")[1])
            harness_rows(out, Z, path, label, samples[label], {**zbase("reset", fill), "bs_bytes": ""},
                         role, note)
    for run, role in (("run2", "fit"), ("run1", "validation")):
        path = f"{custom}/partial_finish/{run}"
        samples, _ = harness_samples(repo, path)
        for label in sorted(samples, key=lambda s: (s.startswith("reset"), int(s.rsplit("_", 1)[1]))):
            fill = int(label.rsplit("_", 1)[1])
            if label.startswith("finish_"):
                exp, note = "finish", ("opened explicitly, filled with fill_lbas 4 KiB writes, 1 s "
                                       "idle, finished")
            else:
                exp, note = "reset_after_finish", "the same zones reset after the finish, back to back"
            harness_rows(out, Z, path, label, samples[label], zbase(exp, fill),
                         role, note if run == "run2" else "repeat run; " + note)
    for path in (f"{custom}/inteference/write_reset_inteference_fill_opens",
                 f"{custom}/inteference/append_reset_inteference_fill_opens",
                 f"{custom}/inteference/read_reset_inteference_fill_open"):
        samples, _ = harness_samples(repo, path)
        harness_rows(out, Z, path, "empty_open", samples["empty_open"], zbase("open", 0), "fit",
                     "explicit open of an empty zone while preparing the run (no other stream yet)")
    for run, role in (("run2", "fit"), ("run1", "validation")):
        path = f"{custom}/open_close/{run}"
        samples, _ = harness_samples(repo, path)
        spec = [("close", "close", "zone opened explicitly, filled to capacity - 1 LBA, 1 s idle, closed"),
                ("close_implicit", "close", "zone opened implicitly by its writes, filled to capacity - 1 LBA, closed"),
                ("close_write", "write_after_close", "the 4 KiB write of the zone's last LBA after the close (explicitly opened zone)"),
                ("close_implicit_write", "write_after_close", "the 4 KiB write of the zone's last LBA after the close (implicitly opened zone)")]
        for label, exp, note in spec:
            b = zbase(exp, zcap - 1)
            if exp == "write_after_close":
                b["bs_bytes"] = lba
            harness_rows(out, Z, path, label, samples[label], b, role,
                         note if run == "run2" else "repeat run (20 zones); " + note)
    evi = f"{custom}/explicit_versus_implicit_io"
    for name, exp, label, note in [
            ("run2_write_explicit", "write", "write_explicit", "zone opened explicitly; the last 100000 of its 4 KiB writes"),
            ("run2_write_implicit", "write", "write_implicit", "zone opened implicitly; the last 100000 4 KiB writes"),
            ("run2_append_explicit", "append", "append_explicit", "zone opened explicitly; the last 100000 4 KiB appends"),
            ("run2_append_implicit", "append", "append_implicit", "zone opened implicitly; the last 100000 4 KiB appends"),
            ("run2_write_implicitly_opened", "first_write_implicit_open", "write_implicit_opened", "the first 4 KiB write to an empty zone, which opens it"),
            ("run2_append_implicitly_opened", "first_append_implicit_open", "append_implicit_opened", "the first 4 KiB append to an empty zone, which opens it")]:
        path = f"{evi}/{name}"
        samples, _ = harness_samples(repo, path)
        harness_rows(out, Z, path, label, samples[label], {**zbase(exp), "bs_bytes": lba}, "fit", note)
    for name, exp, label in [("write_reset_inteference_fill_writes", "write", "write"),
                             ("append_reset_inteference_fill_appends", "append", "append")]:
        path = f"{custom}/inteference/{name}"
        samples, _ = harness_samples(repo, path)
        harness_rows(out, Z, path, label, samples[label], {**zbase(exp), "bs_bytes": lba}, "fit",
                     "filling zones before the interference phase (its baseline): first 100000 4 KiB ops")

    # Interference: I/O beside resets (harness), reads beside writes/appends (fio).
    I = "zn540/interference.csv"
    for kind, io_label, io_op in (("append", "append_inteference", "append"),
                                  ("write", "write_inteference", "write"),
                                  ("read", "read_inteference", "randread")):
        io_path = f"{custom}/inteference/{kind}_reset_inteference_{kind}s"
        rs_path = f"{custom}/inteference/{kind}_reset_inteference_resets"
        samples, _ = harness_samples(repo, io_path)
        b = dict(device="zn540", engine="spdk-harness", lba_bytes=lba, bs_bytes=lba, qd=1, zones=1,
                 bg_op="reset", bg_qd=1, bg_jobs=1)
        harness_rows(out, I, io_path, io_label, samples[io_label],
                     {**b, "experiment": f"{io_op}_beside_reset"}, "validation",
                     "4 KiB at QD1 while another queue pair resets full zones one after another "
                     "(one more queued every 400 ops)", with_max=True)
        samples, _ = harness_samples(repo, rs_path)
        rb = dict(device="zn540", engine="spdk-harness", lba_bytes=lba, qd=1, zones=1,
                  fill_lbas=zcap, fill_frac=1.0, bg_op=io_op, bg_bs_bytes=lba, bg_qd=1, bg_jobs=1,
                  experiment=f"reset_beside_{io_op}")
        harness_rows(out, I, rs_path, "reset_inteference", samples["reset_inteference"], rb,
                     "validation", f"reset of a full zone while 4 KiB {io_op}s run at QD1 on another queue pair",
                     with_max=True)

    rate_dir = f"{custom}/rate_inteference"
    pat = re.compile(re.escape(rate_dir) + r"/zns_(append_)?(\d+)_(\d+)$")
    for path in sorted(repo.under(rate_dir + "/"), key=lambda n: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", n)]):
        m = pat.match(path)
        if not m:
            continue
        mixed_fio(out, repo, I, "zn540", path, "read", "fill", "validation", "fio-spdk", lba,
                  lambda me, other: me if other is None else f"{me}_beside_{other}",
                  bg_metrics=("bw_bytes_per_s",), fg_metrics=("lat_ns_p50", "lat_ns_p99", "iops"))
    long_dir = f"{custom}/long2"
    pat = re.compile(re.escape(long_dir) + r"/zns_append_(\d+)(?:_(\d+))?\.json$")
    for path in sorted(repo.under(long_dir + "/"), key=lambda n: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", n)]):
        if not pat.match(path):
            continue
        mixed_fio(out, repo, I, "zn540", path, "read", "fill", "validation", "fio-spdk", lba,
                  lambda me, other: (me if other is None else f"{me}_beside_{other}") + "_long",
                  bg_metrics=("bw_bytes_per_s",), fg_metrics=("lat_ns_p50", "lat_ns_p99", "iops"))


def conventional(out, repo, full):
    # Samsung 980 PRO (nvme-b): sequential writes only, 512-byte LBA format (lbaf0).
    grid(out, repo, "980pro/io.csv", "980pro", "data/spdk/nvme-b/lbaf0", "write", "write",
         "fio-spdk", "fit", 512, lambda bs, z, qd: full or bs in BS_GRID, zoned=False,
         note="40 GiB range; 30 s runs")
    # WD Ultrastar DC SN540 (nvme-a): sequential and random writes (lbaf3), reads beside writes.
    keep = (lambda bs, z, qd: True) if full else (lambda bs, z, qd: qd == 1 or bs in (4096, 131072))
    for op, exp in (("write", "write"), ("writerand", "randwrite")):
        grid(out, repo, "sn540/io.csv", "sn540", "data/spdk/nvme-a/lbaf3", op, exp, "fio-spdk",
             "fit", 4096, keep, zoned=False,
             note="40 GiB range; 30 s runs")
    rate_dir = "data/custom/zns-a/rate_inteference"
    pat = re.compile(re.escape(rate_dir) + r"/nvme_(\d+)_(\d+)$")
    for path in sorted(repo.under(rate_dir + "/"), key=lambda n: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", n)]):
        m = pat.match(path)
        if not m:
            continue
        solo = m.group(1) == "0"
        mixed_fio(out, repo, "sn540/io.csv" if solo else "sn540/interference.csv", "sn540", path,
                  "read", "fill", "fit" if solo else "validation", "fio-spdk", 4096,
                  lambda me, other: me if other is None else f"{me}_beside_{other}",
                  bg_metrics=("bw_bytes_per_s",),
                  fg_metrics=(("lat_ns_mean", "lat_ns_p50", "lat_ns_p99", "lat_ns_p999", "iops", "bw_bytes_per_s")
                              if solo else ("lat_ns_p50", "lat_ns_p99", "iops")))
    long_dir = "data/custom/zns-a/long2"
    pat = re.compile(re.escape(long_dir) + r"/(\d+)\.json$")
    for path in sorted(repo.under(long_dir + "/"), key=lambda n: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", n)]):
        if not pat.match(path):
            continue
        mixed_fio(out, repo, "sn540/interference.csv", "sn540", path, "read", "fill", "validation",
                  "fio-spdk", 4096, lambda me, other: f"{me}_beside_{other}_long",
                  bg_metrics=("bw_bytes_per_s",), fg_metrics=("lat_ns_p50", "lat_ns_p99", "iops"))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gitdir", help="git directory of a Krien/NVMeBenchmarks clone")
    ap.add_argument("--rev", default="HEAD", help="commit to read (default HEAD)")
    ap.add_argument("--out", default=os.path.join(here, "..", "crates", "zonekit-device", "data"))
    ap.add_argument("--full", action="store_true", help="every grid point, not only the curves")
    a = ap.parse_args()
    repo = Repo(a.gitdir, a.rev)
    out = Out(repo)
    zn540(out, repo, a.full)
    conventional(out, repo, a.full)
    counts = out.write(os.path.normpath(a.out))
    for f, c in sorted(counts.items()):
        print(f"{os.path.join(os.path.normpath(a.out), f)}: {c} rows")
    print(f"from {repo.commit}")


if __name__ == "__main__":
    main()

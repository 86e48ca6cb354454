"""Cross-check of zonekit's item cache policies against libCacheSim (issue #15).

Run through scripts/cache-crosscheck, which prepares the virtualenv and builds zonekit. For
each stream — a real trace split into 4 KiB blocks, and a Zipf workload — it builds the block
request stream once, hands the same ids to libCacheSim (an oracleGeneral trace: object size 1,
cache size in objects, next-access times for Belady) and to `zonekit cache sim` (the .zkt
binary trace zonekit converted or generated), runs LRU, FIFO, S3-FIFO, SIEVE and Belady at
1 % and 10 % of the distinct blocks, and prints hit ratios side by side with the difference in
points and both simulators' requests per second, measured in the same run on the same machine.
Exits 1 if any difference exceeds --tolerance points.

The real trace is split here independently of zonekit (SCSI opcode, size in bytes, LBA in
512-byte sectors, every 4 KiB block a request) and compared id for id with zonekit's .zkt.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import libcachesim as lcs

BLOCK_BYTES = 4096
BLOCK_BITS = 40  # zonekit packs (volume, block) as volume << 40 | block
# libCacheSim's oracleGeneral record: clock time, object id, object size, next access (vtime).
ORACLE_GENERAL = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
# zonekit's .zkt record (crates/zonekit-trace/src/binary.rs).
ZKT_HEADER_BYTES = 128
ZKT = np.dtype([("time_us", "<u8"), ("block", "<u8"), ("volume", "<u4"), ("op", "u1"), ("flags", "u1"), ("pad", "<u2"), ("next_write", "<u8")])

# zonekit policy name -> libCacheSim class (defaults: S3FIFO small 0.1, ghost 0.9, threshold 2).
POLICIES = {"lru": lcs.LRU, "fifo": lcs.FIFO, "s3fifo": lcs.S3FIFO, "sieve": lcs.Sieve, "belady": lcs.Belady}
SCSI_DATA_OPS = {0x08, 0x28, 0xA8, 0x88, 0x0A, 0x2A, 0xAA, 0x8A}


def split_cloudphysics_csv(path):
    """CloudPhysics CSV (version,time,op,size,lbn) into 4 KiB block ids, reads and writes."""
    starts, ends = [], []
    with open(path) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) != 5 or fields[0] == "version":
                continue
            if int(fields[2], 16) not in SCSI_DATA_OPS:
                continue
            size, offset = int(fields[3]), int(fields[4]) * 512
            if size == 0:
                continue
            starts.append(offset // BLOCK_BYTES)
            ends.append((offset + size - 1) // BLOCK_BYTES)
    starts, ends = np.array(starts, dtype=np.uint64), np.array(ends, dtype=np.uint64)
    counts = (ends - starts + 1).astype(np.int64)
    first = np.repeat(starts, counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return first + offsets.astype(np.uint64), len(starts)


def read_zkt(path):
    with open(path, "rb") as f:
        assert f.read(8) == b"ZKTRACE\0", f"{path}: not a zonekit binary trace"
    records = np.fromfile(path, dtype=ZKT, offset=ZKT_HEADER_BYTES)
    return (records["volume"].astype(np.uint64) << np.uint64(BLOCK_BITS)) | records["block"]


def next_access(ids):
    """Index of each request's next request to the same id, -1 for none."""
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    nxt = np.full(len(ids), -1, dtype=np.int64)
    same = ordered[1:] == ordered[:-1]
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


def write_oracle_general(ids, path):
    records = np.zeros(len(ids), dtype=ORACLE_GENERAL)
    records["id"] = ids
    records["size"] = 1
    nxt = next_access(ids)
    records["next"] = np.where(nxt < 0, np.iinfo(np.int64).max, nxt)
    records.tofile(path)


def run_libcachesim(trace, policy, capacity, requests):
    reader = lcs.TraceReader(trace, lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = POLICIES[policy](capacity)
    started = time.perf_counter()
    miss_ratio, _ = cache.process_trace(reader)
    wall = time.perf_counter() - started
    return round((1.0 - miss_ratio) * requests), requests / wall


def run_zonekit(zonekit, trace, capacity):
    out = subprocess.run(
        [zonekit, "cache", "sim", "--policies", ",".join(POLICIES), "--cache-blocks", str(capacity), "--json", trace],
        check=True, capture_output=True, text=True,
    ).stdout
    return {r["policy"]: r for r in json.loads(out)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zonekit", required=True)
    ap.add_argument("--trace", default=os.path.join(os.path.dirname(__file__), "../../shared/traces/cloudPhysicsIO.csv"))
    ap.add_argument("--zipf", default="zipf:blocks=1M,alpha=0.9,writes=5M", help="zonekit workload spec")
    ap.add_argument("--sizes", default="0.01,0.1", help="cache sizes as shares of the distinct blocks")
    ap.add_argument("--runs", type=int, default=1, help="repeat the timed runs (hit ratios do not change)")
    ap.add_argument("--tolerance", type=float, default=0.5, help="largest allowed difference, in points")
    ap.add_argument("--work", default=None, help="directory for the converted traces (default: a temporary one)")
    ap.add_argument("--json", help="also write every measurement to this file")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="zonekit-crosscheck-")
    os.makedirs(work, exist_ok=True)
    print(f"libCacheSim {lcs.__version__} (Python bindings, process_trace over an oracleGeneral trace); zonekit: {args.zonekit}")

    streams = []
    if os.path.exists(args.trace):
        ours = os.path.join(work, "real.zkt")
        subprocess.run([args.zonekit, "trace", "convert", args.trace, "-o", ours], check=True, capture_output=True)
        ids, requests = split_cloudphysics_csv(args.trace)
        zkt_ids = read_zkt(ours)
        if not np.array_equal(ids, zkt_ids):
            sys.exit(f"{args.trace}: zonekit's block stream ({len(zkt_ids)} blocks) differs from the split here ({len(ids)} blocks)")
        streams.append((os.path.basename(args.trace), ours, ids, requests))
    else:
        print(f"{args.trace}: not found, skipping the real trace")
    zipf = os.path.join(work, "zipf.zkt")
    subprocess.run([args.zonekit, "trace", "gen", args.zipf, "--seed", "1", "-o", zipf], check=True, capture_output=True)
    ids = read_zkt(zipf)
    streams.append((args.zipf, zipf, ids, len(ids)))

    rows, worst, measurements = [], 0.0, []
    for name, ours, ids, requests in streams:
        distinct = len(np.unique(ids))
        theirs = os.path.join(work, os.path.basename(ours) + ".oracleGeneral")
        write_oracle_general(ids, theirs)
        print(f"{name}: {requests} requests, {len(ids)} block requests, {distinct} distinct blocks")
        for share in (float(s) for s in args.sizes.split(",")):
            capacity = max(1, round(distinct * share))
            zk_speed = {p: [] for p in POLICIES}
            lib_speed = {p: [] for p in POLICIES}
            zk_hits, lib_hits = {}, {}
            for _ in range(args.runs):
                reports = run_zonekit(args.zonekit, ours, capacity)
                for p in POLICIES:
                    r = reports[p]
                    assert r["requests"] == len(ids), f"zonekit replayed {r['requests']} requests, expected {len(ids)}"
                    zk_hits[p] = r["hits"]
                    zk_speed[p].append(r["requests_per_sec"])
                    hits, speed = run_libcachesim(theirs, p, capacity, len(ids))
                    lib_hits[p] = hits
                    lib_speed[p].append(speed)
            for p in POLICIES:
                ours_ratio, lib_ratio = zk_hits[p] / len(ids), lib_hits[p] / len(ids)
                diff = 100 * (ours_ratio - lib_ratio)
                worst = max(worst, abs(diff))
                spread = lambda v: f"{statistics.median(v) / 1e6:.2f}" + (f" ({min(v) / 1e6:.2f}-{max(v) / 1e6:.2f})" if len(v) > 1 else "")
                rows.append([name, f"{share:g} ({capacity})", p, f"{ours_ratio:.4f}", f"{lib_ratio:.4f}", f"{diff:+.2f}", f"{zk_hits[p] - lib_hits[p]:+d}", spread(zk_speed[p]), spread(lib_speed[p]),
                             f"{statistics.median(zk_speed[p]) / statistics.median(lib_speed[p]):.1f}x"])
                measurements.append({"stream": name, "share": share, "capacity": capacity, "policy": p, "zonekit_hits": zk_hits[p], "libcachesim_hits": lib_hits[p],
                                     "requests": len(ids), "zonekit_requests_per_sec": zk_speed[p], "libcachesim_requests_per_sec": lib_speed[p]})

    header = ["stream", "cache (blocks)", "policy", "zonekit", "libCacheSim", "diff (pts)", "diff (hits)", "zonekit M req/s", "libCacheSim M req/s", "speed-up"]
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    for line in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"libcachesim": lcs.__version__, "runs": args.runs, "rows": measurements}, f, indent=1)
    if worst > args.tolerance:
        print(f"FAIL: a hit ratio differs by {worst:.2f} points (tolerance {args.tolerance})")
        return 1
    print(f"OK: every hit ratio within {args.tolerance} points (largest difference {worst:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

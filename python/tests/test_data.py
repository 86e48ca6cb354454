import json
import subprocess

import numpy as np
import pandas as pd
import pytest
import zonekit
from conftest import WORKLOAD
from lru import LRU


def test_read_trace_gives_the_records_of_a_text_trace(tmp_path):
    trace = tmp_path / "t.csv"
    # Alibaba's columns: volume, op, offset, length, time (µs).
    trace.write_text("3,W,8192,4096,100\n3,R,0,8192,150\n7,W,4096,12288,400\n")
    cols = zonekit.read_trace(trace, format="alibaba")
    assert list(cols) == ["time_us", "volume", "offset_bytes", "len_bytes", "op"]
    assert cols["time_us"].tolist() == [100, 150, 400]
    assert cols["volume"].tolist() == [3, 3, 7]
    assert cols["offset_bytes"].tolist() == [8192, 0, 4096]
    assert cols["len_bytes"].tolist() == [4096, 8192, 12288]
    assert cols["op"].tolist() == [1, 0, 1]
    assert cols["time_us"].dtype == np.uint64 and cols["op"].dtype == np.uint8


def test_read_trace_in_batches_and_as_arrow():
    whole = zonekit.read_trace(workload=WORKLOAD)
    batches = list(zonekit.read_trace(workload=WORKLOAD, batch_rows=100_000))
    assert [len(b["op"]) for b in batches] == [100_000, 100_000, 100_000]
    assert np.array_equal(np.concatenate([b["offset_bytes"] for b in batches]), whole["offset_bytes"])
    pa = pytest.importorskip("pyarrow")
    rb = zonekit.read_trace(workload=WORKLOAD, arrow=True)
    assert isinstance(rb, pa.RecordBatch) and rb.num_rows == 300_000
    assert rb.schema.names == list(whole)


def test_read_trace_names_a_malformed_line_or_skips_it_when_lenient(tmp_path):
    trace = tmp_path / "bad.csv"
    trace.write_text("1,W,0,4096,100\n1,W,4096,oops,200\n1,W,8192,4096,300\n")
    with pytest.raises(RuntimeError, match=r"bad\.csv:line 2"):
        zonekit.read_trace(trace, format="alibaba")
    assert zonekit.read_trace(trace, format="alibaba", lenient=True)["time_us"].tolist() == [100, 300]
    with pytest.raises(ValueError, match="unknown|format"):
        zonekit.read_trace(trace, format="nosuchformat")


def test_analyze_counts_the_workloads_writes():
    a = zonekit.analyze(workload=WORKLOAD)
    assert a["block_writes"] == 300_000
    assert 0 < a["distinct_blocks"] <= 50_000


def test_cache_sim_lru_in_python_gives_exactly_the_rust_lrus_hits():
    df = zonekit.cache_sim(["lru", LRU(), "fifo"], 2000, workload=WORKLOAD)
    assert isinstance(df, pd.DataFrame) and df.policy.tolist() == ["lru", "python:LRU", "fifo"]
    rust, py = df.iloc[0], df.iloc[1]
    assert rust.hits > 0 and (py.hits, py.requests) == (rust.hits, rust.requests)
    assert py.hit_ratio == rust.hit_ratio


def test_cache_sim_refuses_what_the_cli_refuses():
    with pytest.raises(ValueError, match="item cache"):
        zonekit.cache_sim(["nope"], 100, workload=WORKLOAD)
    with pytest.raises(ValueError, match="at least one block"):
        zonekit.cache_sim(["lru"], 0, workload=WORKLOAD)

    class Liar(zonekit.Eviction):
        def evict(self):
            return 123456789

    with pytest.raises(ValueError, match="does not hold"):
        zonekit.cache_sim([Liar()], 10, workload=WORKLOAD)


def test_sweep_returns_results_csv_and_resumes_only_under_the_same_settings(tmp_path):
    args = dict(workloads=["zipf:blocks=10K,alpha=0.9,writes=100K"], placements=["nosep", "sepbit"], victims=["greedy", "cbe"], preset="tiny")
    df = zonekit.sweep(tmp_path, **args)
    assert len(df) == 4 and df.attrs["ran"] == 4
    assert {"placement", "victim", "waf"} <= set(df.columns)
    again = zonekit.sweep(tmp_path, **args)
    assert again.attrs["ran"] == 0 and again.attrs["reused"] == 4
    assert again.waf.tolist() == df.waf.tolist()
    other = zonekit.sweep(tmp_path, utilization=0.7, **args)
    assert other.attrs["ran"] == 4, "rows of other settings are not reused"
    with pytest.raises(ValueError, match="shard"):
        zonekit.sweep(tmp_path, shard="4/4", **args)


def test_policies_lists_every_family():
    p = zonekit.policies()
    assert {"placement", "victim", "item-cache"} == set(p.family)
    assert "sepbit" in set(p.name) and "lru" in set(p.name)


def results_only(o):
    """Without the fields that are timings of this machine, not results."""
    if isinstance(o, dict):
        return {k: results_only(v) for k, v in o.items() if not (k.startswith(("wall", "cpu")) or "per_sec" in k)}
    if isinstance(o, list):
        return [results_only(v) for v in o]
    return o


def run_json(zonekit_bin, *args):
    import json
    import subprocess

    return json.loads(subprocess.run([zonekit_bin, *args, "--json"], check=True, capture_output=True, text=True).stdout)


def test_tree_run_matches_the_cli(zonekit_bin):
    settings = dict(records=20_000, operations=20_000, workload="w2", sequential_zones=8, zone_size_mib=64)
    df = zonekit.tree_run(**settings)
    assert df.shape[0] == 2
    # The trees as the `tree` setting and --tree name them.
    assert sorted(df["spec.tree"]) == ["cow", "zbtree"]
    cli = run_json(zonekit_bin, "tree", "run", "--records", "20000", "--operations", "20000", "--workload", "w2", "--sequential-zones", "8", "--zone-size-mib", "64")
    py = [json.loads(t) for t in zonekit._native.tree_run(**settings)]
    assert results_only(py) == results_only(cli)
    with pytest.raises(ValueError, match="workload|mix"):
        zonekit.tree_run(workload="w9")
    # Counts as the CLI takes them: "20K" is 20,000.
    assert results_only([json.loads(t) for t in zonekit._native.tree_run(**dict(settings, records="20K", operations="20K"))]) == results_only(py)
    with pytest.raises(ValueError, match="records"):
        zonekit.tree_run(records="lots")
    with pytest.raises(ValueError, match="records"):
        zonekit.tree_run(records=2.5)


def test_ocssd_run_matches_the_cli(zonekit_bin):
    w = "zipf:blocks=20K,alpha=0.9,writes=60K"
    py = zonekit.ocssd_run(workload=w, ftl="pm-gcc", blocks_per_lun=64)
    cli = run_json(zonekit_bin, "ocssd", "run", "--workload", w, "--ftl", "pm-gcc", "--blocks-per-lun", "64")
    assert results_only(py) == results_only(cli)
    with pytest.raises(ValueError, match="page_kib=3"):
        zonekit.ocssd_run(workload=w, page_kib=3)


def test_cache_run_matches_the_cli(zonekit_bin, tmp_path):
    py = zonekit.cache_run(records=20_000, cache_mib=64, zone_mib=4, sampler="sfr", interface="zns")
    cli = run_json(zonekit_bin, "cache", "run", "--records", "20000", "--cache-mib", "64", "--zone-mib", "4", "--sampler", "sfr")
    assert results_only(py) == results_only(cli)
    assert py["evictions"] > 0 and 0 < py["hit_ratio"] < 1
    fdp = zonekit.cache_run(records=20_000, cache_mib=64, interface="fdp:4", erase_unit_kib=512, sampler="arc", sampler_params={"hot": "t2"})
    assert fdp["interface"] == "fdp:4" and fdp["spec"]["sampler_params"] == {"hot": "t2"}
    # A trace run: the reads of a block trace, every request counted by default.
    trace = tmp_path / "t.csv"
    trace.write_text("".join(f"1,R,{(i * 7919 % 3000) * 4096},8192,{i}\n" for i in range(20_000)))
    py = zonekit.cache_run(trace, cache_mib=12, zone_mib=1)
    cli = run_json(zonekit_bin, "cache", "run", "--trace", str(trace), "--cache-mib", "12", "--zone-mib", "1")
    assert results_only(py) == results_only(cli) and py["spec"]["workload"]["warmup_fraction"] == 0.0


def test_cache_run_refuses_what_the_cli_refuses():
    with pytest.raises(ValueError, match="unknown field `cache_mb`.*cache_mib"):
        zonekit.cache_run(cache_mb=64)
    with pytest.raises(ValueError, match="records shapes the YCSB-like reads"):
        zonekit.cache_run("/dev/null", records=10)
    with pytest.raises(ValueError, match="zone_mib=3: the 64 MiB cache"):
        zonekit.cache_run(cache_mib=64, zone_mib=3)
    with pytest.raises(ValueError, match="discard"):
        zonekit.cache_run(interface="fdp:2", discard=True)


def test_ctrl_c_stops_a_sweep_and_its_finished_rows_are_kept(tmp_path):
    import os
    import signal
    import threading
    import time

    # Two quick runs finish; the third is far longer than the interrupt's delay.
    settings = dict(placements=["nosep", "sepgc", "sepbit"], victims=["greedy"], preset="tiny", jobs=1)
    workload = "zipf:blocks=40K,alpha=0.9,writes={}"
    zonekit.sweep(tmp_path, workloads=[workload.format("200K")], **settings)
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            zonekit.sweep(tmp_path, workloads=[workload.format("200K"), workload.format("400M")], **settings)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20
    # The first workload's rows were reused, and stay in results.csv for the next resume.
    rows = pd.read_csv(tmp_path / "results.csv")
    assert len(rows) == 3


def test_the_clis_trace_filters_apply_by_their_names(zonekit_bin, tmp_path):
    trace = tmp_path / "t.csv"
    # Alibaba's columns: volume, op, offset, length, time (µs); two volumes, four seconds.
    trace.write_text("".join(f"{1 + i % 2},W,{(i * 37 % 500) * 4096},4096,{i * 200}\n" for i in range(20_000)))
    cols = zonekit.read_trace(trace, volume=2)
    assert set(cols["volume"].tolist()) == {2} and len(cols["op"]) == 10_000
    for block_filter in [dict(sample="10/1"), dict(window="1:2")]:
        with pytest.raises(ValueError, match="select blocks, not whole requests"):
            zonekit.read_trace(trace, **block_filter)
    with pytest.raises(ValueError, match="unknown setting 'volumes'"):
        zonekit.read_trace(trace, volumes=[2])
    for filters, flags in [
        (dict(sample="4/1"), ["--sample", "4/1"]),
        (dict(nodes=4, node=1, chunk_mib=1), ["--nodes", "4", "--node", "1", "--chunk-mib", "1"]),
        (dict(window="1:2", volume=[2]), ["--window", "1:2", "--volume", "2"]),
    ]:
        py = zonekit.analyze(trace, **filters)
        out = tmp_path / "analyze"
        subprocess.run([zonekit_bin, "analyze", str(trace), *flags, "--out", str(out)], check=True, capture_output=True)
        assert results_only(py) == results_only(json.loads((out / "analysis.json").read_text()))
        report = zonekit.replay(trace, placement="sepbit", victim="greedy", preset="tiny", **filters)
        assert 0 < report.user_blocks < 20_000, filters
    with pytest.raises(ValueError, match="window=\"2:1\""):
        zonekit.replay(trace, window="2:1")
    with pytest.raises(ValueError, match="nodes and node go together"):
        zonekit.cache_sim("lru", 100, trace, nodes=4)

import json
import os
import signal
import subprocess
import threading
import time

import pandas as pd
import pytest
import zonekit
from conftest import WORKLOAD
from sepbit import SepBIT

# Fields that are timings, not results.
TIMINGS = {"stage_s", "wall_s", "blocks_per_s"}


def results(report):
    return {k: v for k, v in report.items() if k not in TIMINGS}


def test_replay_matches_the_cli_on_its_defaults(zonekit_bin, tmp_path):
    subprocess.run([zonekit_bin, "replay", "--workload", WORKLOAD, "--out", str(tmp_path)], check=True, capture_output=True)
    cli = json.loads((tmp_path / "report.json").read_text())
    py = zonekit.replay(workload=WORKLOAD).to_dict()
    assert set(py) == set(cli), "every field of report.json"
    # The warnings are the CLI's, with its flags spelt as Python's settings (zone_mib=1).
    assert len(py.pop("warnings")) == len(cli.pop("warnings"))
    assert results(py) == results(cli)


def test_settings_have_the_cli_names_and_change_the_run():
    base = zonekit.replay(workload=WORKLOAD, placement="sepbit", victim="greedy", preset="tiny", gc_trigger="free-zones")
    lower = zonekit.replay(workload=WORKLOAD, placement="sepbit", victim="greedy", preset="tiny", gc_trigger="free-zones", utilization=0.6)
    assert base.placement == "sepbit" and base.victim == "greedy" and base.gc_trigger == "free-zones"
    assert lower.waf < base.waf, "more spare, less GC"
    fdp = zonekit.replay(workload=WORKLOAD, placement="sepbit", victim="greedy", preset="tiny", interface="fdp:4")
    assert fdp.interface == "fdp:4" and fdp.host_waf == 1.0 and fdp.device_waf > 1.0


def test_series_ends_at_the_totals_and_only_grows():
    r = zonekit.replay(workload=WORKLOAD, placement="warcip", victim="cbe", preset="tiny")
    s = r.series
    assert isinstance(s, pd.DataFrame) and len(s) >= 3
    last = s.iloc[-1]
    assert (last.user_blocks, last.gc_blocks, last.gc_count) == (r.user_blocks, r.gc_blocks, r.gc_count)
    assert last.waf == pytest.approx(r.waf)
    assert s.writes.is_monotonic_increasing and s.gc_blocks.is_monotonic_increasing


@pytest.mark.parametrize("victim", ["greedy", "cbe"])
def test_sepbit_in_python_gives_exactly_the_rust_sepbits_waf(victim):
    rust = zonekit.replay(workload=WORKLOAD, placement="sepbit", victim=victim, preset="tiny")
    py = zonekit.replay(workload=WORKLOAD, placement=SepBIT(), victim=victim, preset="tiny")
    assert rust.gc_blocks > 0, "the comparison needs GC"
    assert py.placement == "python:SepBIT"
    assert (py.waf, py.gc_blocks, py.gc_count) == (rust.waf, rust.gc_blocks, rust.gc_count)
    assert py.user_blocks_by_class == rust.user_blocks_by_class
    assert py.gc_blocks_by_class == rust.gc_blocks_by_class


def test_sepbit_example_is_under_sixty_lines():
    from conftest import EXAMPLES

    # The policy: what comes before the `__main__` part that runs it beside the Rust one.
    policy = (EXAMPLES / "sepbit.py").read_text().split('if __name__ == "__main__":')[0]
    assert len(policy.rstrip("\n").splitlines()) < 60


class Greedy(zonekit.Victim):
    """The most garbage; ties to the lowest zone (as the Rust greedy)."""

    def select(self, zones, now, free_zones):
        best = max(range(len(zones["zone"])), key=lambda i: (zones["written"][i] - zones["valid"][i], -zones["zone"][i]))
        return zones["zone"][best]


def test_a_victim_rule_in_python_gives_exactly_the_rust_one():
    rust = zonekit.replay(workload=WORKLOAD, placement="sepbit", victim="greedy", preset="tiny")
    py = zonekit.replay(workload=WORKLOAD, placement="sepbit", victim=Greedy(), preset="tiny")
    assert py.victim == "python:Greedy"
    assert (py.waf, py.gc_count) == (rust.waf, rust.gc_count)


def test_python_placement_on_every_interface():
    for interface in ["zns", "fdp:2", "conventional"]:
        rust = zonekit.replay(workload=WORKLOAD, placement="sepbit", victim="greedy", preset="tiny", interface=interface)
        py = zonekit.replay(workload=WORKLOAD, placement=SepBIT(), victim="greedy", preset="tiny", interface=interface)
        assert py.waf == rust.waf, interface


def test_advice_is_spelt_as_pythons_settings_and_followed_works():
    # A working set too small for the device's fixed reserve of zones: the warning's advice
    # names the setting as a Python caller passes it, and following it removes the warning.
    import re
    import warnings as w

    workload = "zipf:blocks=100K,writes=300K"
    with w.catch_warnings():
        w.simplefilter("ignore")
        report = zonekit.replay(workload=workload, placement="bhbdp", victim="greedy")
    advice = [m for m in report.warnings if "utilization asks" in m]
    assert advice and "--" not in advice[0], report.warnings
    mib = int(re.search(r"zone_mib=(\d+)", advice[0]).group(1))
    with w.catch_warnings():
        w.simplefilter("ignore")
        followed = zonekit.replay(workload=workload, placement="bhbdp", victim="greedy", zone_mib=mib)
    assert not [m for m in followed.warnings if "utilization asks" in m], followed.warnings
    with pytest.raises(ValueError, match=r"utilization=2\.0"):
        zonekit.replay(workload=workload, utilization=2.0)


def test_usage_errors_are_value_errors_with_the_clis_message():
    with pytest.raises(ValueError, match="unknown placement policy \"nope\"; valid: normal"):
        zonekit.replay(workload=WORKLOAD, placement="nope")
    with pytest.raises(ValueError, match="utilisation 2 must be in"):
        zonekit.replay(workload=WORKLOAD, utilization=2.0)
    with pytest.raises(ValueError, match="unknown setting .utilisation.; valid: preset"):
        zonekit.replay(workload=WORKLOAD, utilisation=0.5)
    with pytest.raises(ValueError, match="interface"):
        zonekit.replay(workload=WORKLOAD, interface="fdp:0")
    with pytest.raises(ValueError, match="no such file"):
        zonekit.replay(trace="/nonexistent/trace.csv")
    with pytest.raises(ValueError, match="name a trace file"):
        zonekit.replay()
    with pytest.raises(ValueError, match="needs a method gc_write"):
        zonekit.replay(workload=WORKLOAD, placement=type("OnlyUser", (), {"classes": 1, "user_write": lambda *a: 0})())


def test_a_failed_run_is_a_runtime_error(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,W,0,4096,100\n1,W,4096,oops,200\n")
    with pytest.raises(RuntimeError, match=r"bad\.csv:line 2"):
        zonekit.replay(trace=bad, format="alibaba", preset="tiny")


class Raises(zonekit.Placement):
    classes = 2

    def __init__(self, after):
        self.left = after

    def user_write(self, block, now, last, word):
        self.left -= 1
        if self.left == 0:
            raise ZeroDivisionError("policy bug at write %d" % now)
        return 0

    def gc_write(self, block, now, last, from_class, word):
        return 1


def test_an_exception_in_a_python_policy_stops_the_run_and_is_raised_with_its_traceback():
    p = Raises(after=1000)
    with pytest.raises(ZeroDivisionError, match="policy bug at write 999") as caught:
        zonekit.replay(workload=WORKLOAD, placement=p, preset="tiny")
    assert any(entry.name == "user_write" for entry in caught.traceback), "the policy's own frame is in the traceback"
    assert p.left == 0, "no call after the exception"


def test_a_bad_class_from_a_python_policy_is_a_value_error():
    class Wild(zonekit.Placement):
        classes = 2

        def user_write(self, block, now, last, word):
            return 5

        def gc_write(self, block, now, last, from_class, word):
            return 1

    with pytest.raises(ValueError, match="returned class 5; the policy has 2 classes"):
        zonekit.replay(workload=WORKLOAD, placement=Wild(), preset="tiny")


@pytest.mark.parametrize(
    "run",
    [
        lambda: zonekit.replay(workload="zipf:blocks=2M,alpha=0.9,writes=400M", preset="tiny", placement="nosep", victim="greedy"),
        lambda: zonekit.cache_run(records=1_000_000, operations=2_000_000_000, cache_mib=64, zone_mib=4),
    ],
    ids=["replay", "cache_run"],
)
def test_ctrl_c_interrupts_a_long_run(run):
    # Far longer than the interrupt's delay: stopping early is the proof.
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run()
    finally:
        timer.cancel()
    assert time.monotonic() - started < 20

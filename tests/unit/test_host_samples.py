"""The host as a cause: /proc read right, processes given their roles, "saturated" decided from the samples,
and the sampler a service that stops with the run (no Docker, no Spark)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from testbed.analysis.group.causes import attribute, fault_context
from testbed.analysis.group.pauses import Pauses, CATALOGUE
from testbed.analysis.records.gaps import GAP_COLUMNS
from testbed.analysis.settings import AnalysisSettings
from testbed.analysis.view.host import HostLoad, saturated_by
from testbed.analysis.view.lives import member_lives
from testbed.history.events import Action, HostSample
from testbed.history.writer import read_events
from testbed.host import HostSampler
from testbed.host import proc
from testbed.host.roles import ProcessRoles, role_of
from testbed.children import LOCUST_MAIN
from testbed.waits import wait_until

STAT = """cpu  100 10 50 800 40 0 0 0 0 0
cpu0 50 5 25 400 20 0 0 0 0 0
intr 1
procs_running 4
procs_blocked 0
"""
STAT_LATER = """cpu  250 10 90 830 40 5 5 20 7 0
procs_running 1
"""
PRESSURE = "some avg10=1.00 avg60=2.00 avg300=3.00 total=1000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


def test_proc_text_is_read_into_the_samples_figures():
    before = proc.cpu_times(STAT)
    assert (before.busy, before.steal, before.iowait, before.total) == (160, 0, 40, 1000)
    assert proc.procs_running(STAT) == 4
    assert proc.stall_total_us(PRESSURE) == 1_000_000
    assert proc.mem_available_pct("MemTotal: 1000 kB\nMemFree: 10 kB\nMemAvailable: 250 kB\n") == 25.0
    a = proc.Reading(0, before, 3, 1.0, 50.0, 1_000_000, None)
    # 250 ms later: 150 user + 40 system + 10 irq/softirq + 20 steal busy, 30 idle: 250 ticks, 220 busy
    b = proc.Reading(250_000_000, proc.cpu_times(STAT_LATER), 0, 1.5, 40.0, 1_200_000, None)
    figures = proc.interval_figures(a, b)
    assert figures == {"interval_ms": 250, "cpu_busy_pct": 88.0, "cpu_steal_pct": 8.0, "cpu_iowait_pct": 0.0,
                       "run_queue": 0, "load1": 1.5, "mem_available_pct": 40.0, "cpu_pressure_pct": 80.0,
                       "memory_pressure_pct": None}


def test_reading_this_machine_gives_sane_figures(tmp_path: Path):
    if proc.available():
        pytest.skip("no /proc here")
    a = proc.read()
    b = proc.read()
    figures = proc.interval_figures(a, b)
    assert 0 <= figures["cpu_busy_pct"] <= 100 and 0 <= figures["mem_available_pct"] <= 100
    assert "unreadable" in proc.available(tmp_path)  # a root without /proc's files


def test_each_process_gets_the_role_of_what_it_runs():
    assert role_of(["pytest"], is_harness=True, under_harness=False) == "harness"
    assert role_of(["java", "-cp", "/opt/kafka/libs/x.jar", "kafka.Kafka", "server.properties"],
                   is_harness=False, under_harness=False) == "brokers"
    assert role_of(["/root/.cache/testbed/toxiproxy/2.12.0/toxiproxy-server", "-port", "1"],
                   is_harness=False, under_harness=True) == "brokers"
    assert role_of(["java", "org.apache.spark.deploy.SparkSubmit", "pyspark-shell"],
                   is_harness=False, under_harness=True) == "analysis"
    assert role_of(["python", "-m", LOCUST_MAIN, "--headless"], is_harness=False, under_harness=True) == "load"
    assert role_of(["python", "-m", "testbed.members.confluent_kafka.member"], is_harness=False, under_harness=True) == "members"
    assert role_of(["python", "-m", LOCUST_MAIN], is_harness=False, under_harness=False) is None  # another session's
    assert role_of(["bash"], is_harness=False, under_harness=False) is None


def test_a_busy_child_of_the_harness_counts_as_a_member():
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 3: pass"])
    try:
        roles = ProcessRoles(os.getpid())
        roles.cpu_seconds()
        # The child is seen on the first call, then its CPU time counts: a member (a descendant, not Locust).
        wait_until(lambda: roles.cpu_seconds()["members"] > 0.05, timeout_s=5, interval_s=0.3,
                   what="the busy child's CPU counted as a member's")
    finally:
        child.kill()
        child.wait()


def test_a_process_that_becomes_a_broker_by_exec_is_counted_as_one():
    """A broker's container starts as its entrypoint and execs Kafka under the same pid, after the first look."""
    busy = "import time\nt = time.time()\nwhile time.time() - t < 3: pass"
    # Until its exec (1.5 s: the first look at every process must come before it) the child is no broker.
    child = subprocess.Popen([sys.executable, "-c", f"import os, sys, time\ntime.sleep(1.5)\n"
                              f"os.execv(sys.executable, [sys.executable, '-c', {busy!r}, 'kafka.Kafka'])"])
    try:
        roles = ProcessRoles(harness_pid=-1)  # nobody's harness: the child has no role before its exec

        def role_of_child() -> str | None:
            roles.cpu_seconds()
            tracked = roles._tracked.get(child.pid)
            return (tracked.role or "none yet") if tracked else None

        assert role_of_child() == "none yet"
        # Other brokers may run on this machine: the child itself must be tracked as one.
        wait_until(lambda: role_of_child() == "brokers", timeout_s=6, interval_s=0.2, what="the exec'd child a broker")
    finally:
        child.kill()
        child.wait()


def test_a_child_of_the_harness_seen_before_it_execs_locust_counts_as_load(tmp_path: Path):
    """The load generator is forked, then execs Locust: a sample that falls in between sees the child with the
    harness's own command line (seen so in one CI run, which then had no load CPU at all)."""
    # A stand-in for the module a Locust process runs, found first from the child's working directory.
    module = tmp_path.joinpath(*LOCUST_MAIN.split(".")).with_suffix(".py")
    module.parent.mkdir(parents=True)
    for package in (module.parent, module.parent.parent):
        (package / "__init__.py").write_text("")
    module.write_text("import time\nt = time.time()\nwhile time.time() - t < 3: pass\n")
    # Until its exec (1.5 s: the first look at every process must come before it) the child is not Locust.
    child = subprocess.Popen([sys.executable, "-c", "import os, sys, time\ntime.sleep(1.5)\n"
                              f"os.execv(sys.executable, [sys.executable, '-m', {LOCUST_MAIN!r}])"], cwd=tmp_path)
    try:
        roles = ProcessRoles(os.getpid())
        roles.cpu_seconds()
        assert roles._tracked[child.pid].role == "members"  # not Locust yet
        wait_until(lambda: roles.cpu_seconds()["load"] > 0.05, timeout_s=6, interval_s=0.3,
                   what="the exec'd child's CPU counted as the load's")
        assert roles._tracked[child.pid].role == "load"
    finally:
        child.kill()
        child.wait()


def _sample(ts, busy, wait=None, run_queue=0, mem_stall=None, mem_avail=50.0, interval=250):
    return {"ts_ms": ts, "interval_ms": interval, "cores": 2, "cpu_busy_pct": busy, "cpu_steal_pct": 0.0,
            "cpu_iowait_pct": 0.0, "run_queue": run_queue, "load1": 1.0, "mem_available_pct": mem_avail,
            "cpu_pressure_pct": wait, "memory_pressure_pct": mem_stall, "brokers_cpu_pct": 10.0,
            "members_cpu_pct": 20.0, "load_cpu_pct": 5.0, "analysis_cpu_pct": 0.0, "harness_cpu_pct": 1.0}


def test_saturated_means_busy_or_waiting_or_stalled_on_memory():
    assert saturated_by(_sample(0, 96.0, 0.0)) == ["cpu_busy"]
    assert saturated_by(_sample(0, 80.0, 55.0)) == ["cpu_wait"]
    assert saturated_by(_sample(0, 80.0, 10.0, mem_stall=12.0)) == ["memory"]
    assert saturated_by(_sample(0, 94.9, 49.9, mem_stall=9.9)) == []
    # Without PSI: the run queue against the cores, the memory available.
    assert saturated_by(_sample(0, 50.0, None, run_queue=3)) == ["cpu_wait"]
    assert saturated_by(_sample(0, 50.0, None, run_queue=2, mem_avail=4.0)) == ["memory"]


def _host(rows):
    return HostLoad.of(pd.DataFrame(rows))


# 10 s to 14 s saturated (busy), 14 s to 20 s quiet; samples every 250 ms from 9 s to 20 s.
HOST = _host([_sample(t, 99.0 if 10_000 < t <= 14_000 else 30.0) for t in range(9_250, 20_001, 250)])


def test_saturated_across_a_span_needs_saturated_samples_over_nine_tenths_of_it():
    assert HOST.saturated_across(10_000, 14_000) is True
    assert HOST.saturated_across(10_000, 14_400) is True  # 4.0 of 4.4 s: 91 %
    assert HOST.saturated_across(10_000, 15_000) is False  # 4 of 5 s
    assert HOST.saturated_across(15_000, 16_000) is False
    assert HOST.saturated_across(5_000, 11_000) is None  # samples from 9 s on: a third of it unknown
    assert HOST.saturated_ms(0, 30_000) == 4_000 and HOST.sampled_ms(0, 30_000) == 11_000
    assert HOST.samples["other_cpu_pct"].tolist()[:1] == [0.0]  # 30 % busy, 36 % by roles: floored at 0


def _gaps(*rows):
    return pd.DataFrame([dict(zip(GAP_COLUMNS, ("t", p, "pause", s, e, e - s, False, last, last)))
                         for p, s, e, last in rows], columns=GAP_COLUMNS)


LIVES = member_lives({}, {"A": 40_000, "B": 40_000}, {}, {}, 40_000)


def test_a_pause_nothing_else_explains_on_a_saturated_host_is_the_hosts():
    out = attribute(_gaps((0, 10_500, 13_500, "A")), fault_context([], LIVES, [], 40_000, HOST))
    assert out[["cause", "contributing", "host_saturated"]].values.tolist() == [["host_saturated", None, True]]


def test_on_a_quiet_host_the_pause_stays_unexplained_and_says_the_host_was_not_saturated():
    out = attribute(_gaps((0, 15_000, 16_500, "A")), fault_context([], LIVES, [], 40_000, HOST))
    assert out[["cause", "contributing", "host_saturated"]].values.tolist() == [["none", None, False]]


def test_a_stop_on_a_saturated_host_keeps_the_stop_first_and_the_host_as_contributing():
    harness = [{"kind": Action.MEMBER_STOP, "ts_ms": 10_600, "target": "B", "detail": {}}]
    lives = member_lives({}, {"A": 40_000, "B": 10_900}, {}, {}, 40_000)
    out = attribute(_gaps((1, 10_500, 13_500, "B")), fault_context(harness, lives, [], 40_000, HOST))
    assert out[["cause", "cause_target", "contributing"]].values.tolist() == [["member_stop", "B", "host_saturated"]]


def test_without_samples_the_host_figures_are_unknown_never_zero():
    def figures(host):
        frame = attribute(_gaps((0, 10_500, 13_500, "A"), (1, 15_000, 16_500, "A")),
                          fault_context([], LIVES, [], 40_000, host))
        found = Pauses(frame, frame.iloc[0:0], AnalysisSettings(), host_known=host is not None)
        return {k: (v.value, v.unknown) for k, v in CATALOGUE.measure(found).items()}

    unknown = figures(None)
    assert unknown["max_host_saturated_pause_ms"][0] is None and "no host samples" in unknown["max_host_saturated_pause_ms"][1]
    assert unknown["pauses_on_saturated_host"][0] is None
    assert unknown["max_unexplained_pause_ms"] == (3_000, None)  # both stay `none`, as before the sampler
    known = figures(HOST)
    assert known["max_host_saturated_pause_ms"] == (3_000, None) and known["pauses_on_saturated_host"] == (1, None)
    assert known["max_unexplained_pause_ms"] == (1_500, None)


def test_the_sampler_writes_typed_samples_and_stops_with_its_block(tmp_path: Path):
    if proc.available():
        pytest.skip("no /proc here")
    path = tmp_path / "history" / "host.jsonl"
    with HostSampler(path, interval_s=0.05) as sampler:
        wait_until(lambda: sampler.samples >= 3, timeout_s=10, what="three host samples")
    assert sampler._thread is None and sampler.error is None
    written = sampler.samples
    samples = list(read_events(path))
    assert len(samples) == written and all(isinstance(s, HostSample) for s in samples)
    assert all(s.cores >= 1 and 0 <= s.cpu_busy_pct <= 100 and s.interval_ms >= 40 for s in samples)


def test_the_samplers_loop_is_bounded_even_if_nobody_closes_it(tmp_path: Path):
    if proc.available():
        pytest.skip("no /proc here")
    sampler = HostSampler(tmp_path / "host.jsonl", interval_s=0.05, max_s=0.3)
    sampler.start()
    try:
        thread = sampler._thread
        wait_until(lambda: not thread.is_alive(), timeout_s=10, what="the sampler's loop to end at max_s")
    finally:
        sampler.close()


def test_a_host_that_cannot_be_sampled_leaves_no_file(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(proc, "available", lambda root=proc.PROC: "no /proc")
    with HostSampler(tmp_path / "host.jsonl") as sampler:
        pass
    assert sampler.samples == 0 and not (tmp_path / "host.jsonl").exists()

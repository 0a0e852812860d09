"""MemberUsageSampler counts member processes (by their command line) and nothing else, and keeps the CPU of
a member process that ended."""

from __future__ import annotations

import subprocess
import sys
import time

from testbed.fleet.usage import MemberUsageSampler, member_processes

BURN = "import time\nend = time.process_time() + {cpu}\nwhile time.process_time() < end: pass\ntime.sleep({rest})"


def spawn(cpu: float, rest: float, *tag: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", BURN.format(cpu=cpu, rest=rest), *tag])


def test_samples_member_processes_only_and_keeps_an_ended_ones_cpu() -> None:
    member = spawn(0.3, 0.0, "testbed.members.fake")  # burns 0.3 CPU-s and ends
    long_member = spawn(0.0, 30.0, "testbed.members.other")
    stranger = spawn(1.0, 30.0)  # a child of this process that is not a member: never counted
    try:
        time.sleep(0.2)
        assert {p.pid for p in member_processes()} >= {long_member.pid}
        assert stranger.pid not in {p.pid for p in member_processes()}
        sampler = MemberUsageSampler()
        deadline = time.monotonic() + 10
        while member.poll() is None and time.monotonic() < deadline:
            sampler.sample()
            time.sleep(0.05)
        member.wait(timeout=10)
        sampler.sample()
        # the ended member's 0.3 s kept (less at most one sampling interval), plus two interpreters' start-up;
        # the stranger's 1 s is not in it
        assert 0.25 <= sampler.cpu_s < 0.6
        assert sampler.peak_rss_mb > 1
        one, two = sampler.per_member(1), sampler.per_member(2)
        assert two["rss_mb_per_member"] == round(sampler.peak_rss_mb / 2, 1)
        assert one["cpu_pct_per_member"] is not None and one["cpu_pct_per_member"] > 0
    finally:
        for proc in (member, long_member, stranger):
            proc.kill()
            proc.wait()


def test_unknown_without_member_processes() -> None:
    sampler = MemberUsageSampler()
    sampler.sample()
    assert sampler.per_member(10) == {"rss_mb_per_member": None, "cpu_pct_per_member": None}

"""Where a command's CPU goes on this machine: every process sampled once a second while the command runs, its CPU
summed by kind (the Spark driver, brokers, Java and Python members, the load, the pytest workers, Docker...), the
brokers' JVMs in their containers included (one kernel).

    .venv/bin/python benchmarks/cpu_by_process.py -- bash .ci/run
    .venv/bin/python benchmarks/cpu_by_process.py -- .venv/bin/testbed run scenarios/rolling-upgrade.yaml

A process is counted from its start to its last sample (one that lived less than a second between two samples is
missed; one running before the command, only for its CPU since). Kinds are read from command lines, so a kind is as
good as the patterns below. Last line: one JSON object (core-seconds per kind).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from machine_speed import reference

HZ = os.sysconf("SC_CLK_TCK")
# (kind, pattern in the command line), the first that matches wins: the JVM kinds before a generic java.
KINDS = [
    ("broker JVM", r"kafka\.Kafka\b|/opt/kafka"),
    ("Spark JVM", r"org\.apache\.spark|SparkSubmit"),
    ("Java member JVM", r"VerifiableConsumer|TestbedStreamsApp|TestbedShareMember|TestbedMemberHost"),
    ("Maven", r"plexus\.classworlds|\bmvn\b"),
    ("other JVM (programs under the agent, tools)", r"(^|/)java\s"),
    ("analysis service", r"testbed\.analysis\.service"),
    ("Python member", r"testbed\.members\."),
    ("Locust load", r"locust"),
    ("pytest and its workers", r"pytest|xdist|execnet|-u -c import sys;exec"),
    ("Ray", r"\bray\b|raylet|gcs_server"),
    ("Chromium (report checks)", r"chrom"),
    ("Docker", r"dockerd|containerd|docker-proxy|runc"),
    ("setup (pip, apt)", r"\bpip\b|apt-get|dpkg|setup\.sh"),
    ("other Python", r"python"),
]


def kind(cmdline: str) -> str:
    """A kernel thread's command line is empty: "other"."""
    return next((name for name, pattern in KINDS if re.search(pattern, cmdline)), "other")


@dataclass
class Seen:
    first_cpu: float  # core-seconds at its first sample
    cpu: float  # at its last
    cmdline: str  # the last one read: a process that execs another program (a container's entrypoint) changes it
    before: bool  # running before the command started: only its CPU since counts

    @property
    def used(self) -> float:
        return self.cpu - self.first_cpu if self.before else self.cpu


class Sampler:
    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], Seen] = {}  # by (pid, start ticks): a reused pid is another process

    def scan(self, before: bool = False) -> None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                fields = stat[stat.rfind(")") + 2:].split()
                cpu, key = (int(fields[11]) + int(fields[12])) / HZ, (pid, fields[19])
                cmdline = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()
            except (OSError, IndexError, ValueError):  # gone meanwhile
                continue
            if (seen := self.seen.get(key)) is None:
                self.seen[key] = Seen(cpu, cpu, cmdline, before)
            else:
                seen.cpu, seen.cmdline = cpu, cmdline or seen.cmdline  # a zombie's is empty

    def totals(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for seen in self.seen.values():
            name = kind(seen.cmdline)
            out[name] = out.get(name, 0.0) + seen.used
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def heaviest(self, n: int) -> list[tuple[float, str, str]]:
        """The ``n`` processes that used the most CPU: core-seconds, kind, command line (cut)."""
        return sorted(((s.used, kind(s.cmdline), s.cmdline[:150]) for s in self.seen.values()), reverse=True)[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=0, help="also print the N processes that used the most CPU")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("name the command after --")
    machine = reference()
    sampler = Sampler()
    sampler.scan(before=True)
    started = time.monotonic()
    done = threading.Event()
    child = subprocess.Popen(command)
    threading.Thread(target=lambda: (child.wait(), done.set()), daemon=True).start()
    while not done.wait(1.0):
        sampler.scan()
    sampler.scan()
    wall = time.monotonic() - started
    totals = sampler.totals()
    whole = sum(totals.values())
    print(f"exit {child.returncode}; {wall:.0f} s; {whole:.0f} core-s ({whole / wall:.2f} cores on average)")
    for name, cpu in totals.items():
        if cpu >= 0.5:
            print(f"{cpu:8.0f} core-s {cpu / whole * 100:5.1f} %  {name}")
    for cpu, name, cmdline in sampler.heaviest(args.top):
        print(f"{cpu:8.1f} core-s  {name}: {cmdline}")
    print(json.dumps({"command": command, "exit": child.returncode, "wall_s": round(wall), "machine": machine,
                      "core_s": {k: round(v, 1) for k, v in totals.items()}}))
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()

"""Eager vs cooperative vs KIP-848, by group size: what a membership change costs, on real brokers and members.

For every group size, protocol, client and event, a scenario is built and run by the scenario runner (its own
1-broker cluster, load, history, analysis), ``--trials`` times; each figure is the median of the trials with its
distribution-free interval (testbed.analysis.runs.trials). Events:

- ``startup``: N members started at once; time to stable = first member start -> the group stable with every
  member and every partition owned once, in the broker's view and by every member's own callbacks (the first
  ``wait_stable`` step's end; Fleet.wait_stable);
- ``scale_out``: N stable members, then N/10 (at least 1) more; time to stable = the scale-out -> stable;
- ``bounce``: N stable members, the first min(10, N) bounced one after another (each waits for stable);
  time to stable = the bounce's start -> its end;
- ``add_partitions``: N stable members, then 900 partitions added to the topic; time to stable = the change ->
  stable (classic members notice new partitions only at their next metadata refresh, by default 5 min).

Figures per point: ``time_to_stable_s``, ``pause_p99_ms`` (99th percentile of single partition pauses, unknown
when there is none), ``stop_the_world_ms``, ``moved`` / ``moved_min`` (partitions that changed owner in the
change's rebalance episodes / the fewest a balanced assignment needed; not for startup), ``rss_mb_per_member``
(the member processes' highest summed RSS / members; a hosted member's share of its host) and
``cpu_pct_per_member`` (their CPU over the time they ran / members, % of one core), sampled every 2 s
(testbed.fleet.usage). A configuration the
member spec refuses (e.g. a client without that protocol) is reported as refused, not run.

Run: .venv/bin/python benchmarks/rebalance_compare.py --sizes 10 --trials 1 --protocols eager,cooperative,consumer
     [--clients confluent-kafka,java] [--events startup,scale_out,bounce,add_partitions] [--partitions-per-member 10]
Groups larger than --per-process (default 50) run that many members per process (``members_per_process``:
confluent-kafka members in threads of a Python host, Java members as KafkaConsumers in one JVM).
Writes reports/rebalance-compare-<time>/ (every run, points.json, table.md, curves.html). Last line: {"points": [...]}.
``--combine a/points.json b/points.json`` runs nothing and merges earlier runs' points into one table and page;
``--picture docs/img/x.png`` saves the curves as a PNG too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots
from pydantic import ValidationError

from testbed.analysis.runs.trials import median_interval
from testbed.children import terminate_as_interrupt
from testbed.fleet.usage import MemberUsageSampler
from testbed.history.events import Action
from testbed.members.spec import HOSTED_CLIENTS
from testbed.report.browser import screenshot
from testbed.run.layout import RunDir
from testbed.scenario.loader import ScenarioRun
from testbed.scenario.model import Scenario
from testbed.scenario.runner import ScenarioRunner

PROTOCOLS: dict[str, dict[str, Any]] = {
    "eager": {"assignors": ["range"]},
    "cooperative": {"assignors": ["cooperative-sticky"]},
    "consumer": {"group_protocol": "consumer", "remote_assignor": "uniform"},
}
EVENTS = ("startup", "scale_out", "bounce", "add_partitions")
ADDED_PARTITIONS = 900
STABLE_TIMEOUT_S = 420  # above librdkafka's 5 min metadata refresh, which classic groups need to see new partitions
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")
DEFAULT_PER_PROCESS = 50  # larger groups run this many members per process (testbed.members.host, java_host)
FIGURES = ("time_to_stable_s", "pause_p99_ms", "stop_the_world_ms", "moved", "moved_min", "rss_mb_per_member",
           "cpu_pct_per_member")


def added_members(size: int) -> int:
    """A scale-out adds 10 % of the group, at least one member."""
    return max(1, size // 10)


def members_per_process(size: int, client: str, per_process: int) -> int:
    """Members share processes only in groups larger than ``per_process`` (and for clients that can)."""
    return per_process if size > per_process and client in HOSTED_CLIENTS else 1


def scenario_for(size: int, protocol: str, client: str, event: str, partitions: int,
                 per_process: int = DEFAULT_PER_PROCESS) -> dict[str, Any]:
    hosted = members_per_process(size, client, per_process)
    spec = {"client": client, "commit_mode": "on_revoke", **PROTOCOLS[protocol]}
    if client == "java":
        spec["commit_mode"] = "sync"  # the VerifiableConsumer commits after each batch, or automatically
    steps: list[dict[str, Any]] = [{"wait_stable": {"timeout_s": STABLE_TIMEOUT_S}}, {"wait": {"seconds": 3}}]
    if event == "scale_out":
        added = added_members(size)
        # Newcomers are housed as the group is: in a hosted group they share processes too (ten JVMs starting
        # at once on 2 cores would be the measurement instead of the rebalance).
        steps += [{"scale_out": {"spec": "main", "count": added, "members_per_process": min(added, hosted)}},
                  {"wait_stable": {"timeout_s": STABLE_TIMEOUT_S}}]
    elif event == "bounce":
        steps += [{"rolling_bounce": {"count": min(10, size), "interval_s": 1, "stable_timeout_s": STABLE_TIMEOUT_S}}]
    elif event == "add_partitions":
        steps += [{"add_partitions": {"topic": "events", "total": partitions + ADDED_PARTITIONS}},
                  {"wait_stable": {"timeout_s": STABLE_TIMEOUT_S}}]
    steps += [{"wait": {"seconds": 3}}, {"drain": {"timeout_s": 120}}]
    return {"name": f"compare-{event}-{protocol}-{client}-{size}", "topics": [{"name": "events", "partitions": partitions}],
            "load": {"topic": "events", "rate": 200, "users": 2}, "members": {"main": spec},
            "fleet": [{"spec": "main", "count": size, "members_per_process": hosted}], "steps": steps}


def _harness(run_dir: Path) -> list[dict[str, Any]]:
    lines = RunDir(run_dir).harness_log.read_text().splitlines()
    return [e for e in (json.loads(line) for line in lines if line.endswith("}")) if e.get("name") == "action"]


def _step_ends(actions: list[dict[str, Any]], kind: str) -> list[int]:
    return [a["ts_ms"] for a in actions if a["kind"] == Action.STEP_END and a.get("target") == kind]


def time_to_stable_s(run_dir: Path, event: str) -> float | None:
    """From the change to the group stable again, read from the harness history; None if it never was."""
    actions = _harness(run_dir)

    def first(kind: str) -> int | None:
        return next((a["ts_ms"] for a in actions if a["kind"] == kind), None)

    stable_ends = _step_ends(actions, "wait_stable")
    if event == "startup":
        start, end = first(Action.MEMBER_START), stable_ends[0] if stable_ends else None
    elif event == "bounce":
        start, end = first(Action.BOUNCE_START), first(Action.BOUNCE_END)
    else:
        start = first(Action.SCALE_OUT if event == "scale_out" else Action.ADD_PARTITIONS)
        end = stable_ends[1] if len(stable_ends) > 1 else None
    return round((end - start) / 1000, 2) if start is not None and end is not None else None


def figures(run_dir: Path, event: str) -> dict[str, float | None]:
    metrics = json.loads(RunDir(run_dir).metrics.read_text())["metrics"]

    def value(name: str) -> float | None:
        return (metrics.get(name) or {}).get("value")

    moved = event != "startup"  # the group's formation is not a change of a running group
    return {"time_to_stable_s": time_to_stable_s(run_dir, event), "pause_p99_ms": value("p99_partition_pause_ms"),
            "stop_the_world_ms": value("stop_the_world_ms"),
            "moved": value("partitions_moved") if moved else None,
            "moved_min": value("partitions_moved_min") if moved else None}


def run_point(size: int, protocol: str, client: str, event: str, partitions: int, trials: int, root: Path,
              log: Callable[[str], None], per_process: int = DEFAULT_PER_PROCESS) -> dict[str, Any]:
    point: dict[str, Any] = {"members": size, "partitions": partitions, "protocol": protocol, "client": client,
                             "event": event, "trials": 0,
                             "members_per_process": members_per_process(size, client, per_process)}
    try:
        scenario = Scenario.model_validate(scenario_for(size, protocol, client, event, partitions, per_process))
    except ValidationError as exc:
        point["refused"] = "; ".join(e["msg"] for e in exc.errors())
        log(f"refused {size} {protocol} {client} {event}: {point['refused']}")
        return point
    per_trial: list[dict[str, float | None]] = []
    statuses = []
    for trial in range(1, trials + 1):
        started = time.monotonic()
        with MemberUsageSampler() as sampler:
            result = ScenarioRunner(ScenarioRun(Path(f"{scenario.name}.yaml"), scenario, {"trial": trial}),
                                    root).execute()
        statuses.append(result.status)
        if result.reason and result.reason.startswith("interrupted"):
            raise KeyboardInterrupt  # Ctrl-C or SIGTERM ended that run: the benchmark stops, not just the run
        if result.status != "error":
            members = size + (added_members(size) if event == "scale_out" else 0)
            per_trial.append({**figures(Path(result.run_dir), event), **sampler.per_member(members)})
        log(f"{size} members {protocol} {client} {event} trial {trial}: {result.status} "
            f"in {time.monotonic() - started:.0f} s, {per_trial[-1] if per_trial else 'no figures'}")
    point["trials"] = len(per_trial)
    point["statuses"] = statuses
    for name in FIGURES:
        known = [t[name] for t in per_trial if t[name] is not None]
        interval = median_interval(known, unknown=len(per_trial) - len(known))
        point[name] = interval.median
        point[f"{name}_interval"] = [interval.low, interval.high]
        point[f"{name}_trials"] = [t[name] for t in per_trial]  # each trial's figure, None where unknown
    return point


CURVES = (("time_to_stable_s", "time to stable, s", 1), ("pause_p99_ms", "pause p99, s", 1000))


def curves(points: list[dict[str, Any]], path: Path) -> None:
    """Time to stable and pause p99 against group size: a column per event, a line per protocol and client,
    the trials' interval as error bars (a self-contained page)."""
    events = [e for e in EVENTS if any(p["event"] == e for p in points)]
    lines = sorted({(p["protocol"], p["client"]) for p in points})
    colour = {key: PALETTE[i % len(PALETTE)] for i, key in enumerate(lines)}  # one per line, in every panel
    fig = make_subplots(rows=len(CURVES), cols=max(1, len(events)), subplot_titles=events, shared_yaxes=False,
                        vertical_spacing=0.12)
    for row, (figure, label, scale) in enumerate(CURVES, start=1):
        for col, event in enumerate(events, start=1):
            for key in lines:
                line = sorted((p for p in points if (p["protocol"], p["client"]) == key and p["event"] == event
                               and p.get(figure) is not None), key=lambda p: p["members"])
                if not line:
                    continue
                y = [p[figure] / scale for p in line]
                low, high = zip(*((p[f"{figure}_interval"][0] / scale, p[f"{figure}_interval"][1] / scale)
                                  for p in line))
                fig.add_trace(go.Scatter(
                    x=[p["members"] for p in line], y=y, mode="lines+markers",
                    name=f"{key[0]} ({key[1]})", legendgroup=f"{key[0]} ({key[1]})",
                    showlegend=row == 1 and col == 1, line={"color": colour[key]}, marker={"color": colour[key]},
                    error_y={"type": "data", "symmetric": False, "array": [h - v for h, v in zip(high, y)],
                             "arrayminus": [v - lo for v, lo in zip(y, low)]}),
                    row=row, col=col)
            fig.update_xaxes(title_text="members", type="log", row=row, col=col)
            fig.update_yaxes(title_text=label, row=row, col=col)
    fig.update_layout(title="After a membership change: time to a stable group, and the 99th percentile partition "
                            "pause (median of the trials, bars: their interval)",
                      height=420 * len(CURVES), width=max(700, 420 * len(events)))
    fig.write_html(path, include_plotlyjs=True, full_html=True)


EVENT_LABELS = {"startup": "start-up", "scale_out": "scale-out by 10 %", "bounce": "rolling bounce of 10",
                "add_partitions": f"{ADDED_PARTITIONS} partitions added"}
PROTOCOL_LABELS = {"eager": "eager range", "cooperative": "cooperative-sticky", "consumer": "consumer (uniform)"}


def _cell(point: dict[str, Any], name: str, scale: float = 1, digits: int = 1) -> str:
    """The median with the trials' interval beside it when there was more than one trial; "unknown" when the
    trials ran but gave no value."""
    if name not in point:
        return "not measured"  # a point from an older version of this benchmark (--combine)
    value = point[name]
    if value is None:
        return "unknown" if point.get("trials") else ""
    low, high = point.get(f"{name}_interval") or (None, None)
    text = f"{value / scale:,.{digits}f}"
    if point.get("trials", 0) > 1 and low is not None and high is not None and low != high:
        text += f" ({low / scale:,.{digits}f}-{high / scale:,.{digits}f})"
    return text


def markdown_table(points: list[dict[str, Any]]) -> str:
    """The points as a Markdown table, one row per point (medians; the trials' interval in brackets)."""
    rows = ["| members | event | protocol | client | trials | time to stable, s | pause p99, s | stop-the-world, s "
            "| moved / fewest | MB per member | CPU % per member |", "|" + "---|" * 11]
    for p in points:
        if p.get("refused"):
            rows.append(f"| {p['members']:,} | {EVENT_LABELS[p['event']]} | {PROTOCOL_LABELS[p['protocol']]} | "
                        f"{p['client']} | refused: {p['refused']} |||||||")
            continue
        moved = f"{_cell(p, 'moved', digits=0)} / {_cell(p, 'moved_min', digits=0)}" if p.get("moved") is not None \
            else ""
        rows.append(" | ".join([
            f"| {p['members']:,}", EVENT_LABELS[p["event"]], PROTOCOL_LABELS[p["protocol"]], p["client"],
            str(p.get("trials", 0)), _cell(p, "time_to_stable_s"), _cell(p, "pause_p99_ms", 1000),
            _cell(p, "stop_the_world_ms", 1000), moved, _cell(p, "rss_mb_per_member"),
            _cell(p, "cpu_pct_per_member", digits=2)]) + " |")
    return "\n".join(rows) + "\n"


def point_key(point: dict[str, Any]) -> tuple[Any, ...]:
    return point["members"], point["partitions"], point["protocol"], point["client"], point["event"]


def combine(files: list[Path]) -> list[dict[str, Any]]:
    """The points of earlier runs (their points.json), one per configuration: a later file's point replaces an
    earlier one's (a subset re-run with more trials, say)."""
    points: dict[tuple[Any, ...], dict[str, Any]] = {}
    for file in files:
        for point in json.loads(file.read_text())["points"]:
            points[point_key(point)] = point
    return sorted(points.values(), key=lambda p: (EVENTS.index(p["event"]), p["members"], p["protocol"],
                                                  p["client"]))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10,100,500,1000")
    ap.add_argument("--protocols", default="eager,cooperative,consumer")
    ap.add_argument("--clients", default="confluent-kafka,java")
    ap.add_argument("--events", default=",".join(EVENTS))
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--partitions-per-member", type=int, default=10)
    ap.add_argument("--per-process", type=int, default=DEFAULT_PER_PROCESS,
                    help="members per process in groups larger than this (1: a process each)")
    ap.add_argument("--reports", type=Path, default=Path("reports"))
    ap.add_argument("--picture", type=Path, metavar="PNG",
                    help="also save the curves as a PNG (headless Chromium; the README's picture)")
    ap.add_argument("--combine", type=Path, nargs="+", metavar="POINTS_JSON",
                    help="run nothing: merge the points.json of earlier runs (later files win) into one table and "
                         "curves.html")
    args = ap.parse_args(argv)
    split = lambda text: [x.strip() for x in text.split(",") if x.strip()]  # noqa: E731
    for name, chosen, allowed in (("--protocols", split(args.protocols), PROTOCOLS),
                                  ("--events", split(args.events), EVENTS)):
        if bad := [c for c in chosen if c not in allowed]:
            ap.error(f"{name}: {', '.join(bad)} not among {', '.join(allowed)}")
    if args.combine and (missing := [str(f) for f in args.combine if not f.is_file()]):
        ap.error(f"--combine: no such file: {', '.join(missing)}")
    root = args.reports / f"rebalance-compare-{time.strftime('%Y%m%d-%H%M%S')}"
    root.mkdir(parents=True)
    if args.combine:
        finish({"points": combine(args.combine), "combined": [str(f) for f in args.combine]}, root, args.picture)
        return
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    terminate_as_interrupt()
    points: list[dict[str, Any]] = []
    interrupted = False
    try:
        for size in split(args.sizes):
            for event in split(args.events):
                for protocol in split(args.protocols):
                    for client in split(args.clients):
                        points.append(run_point(int(size), protocol, client, event,
                                                int(size) * args.partitions_per_member, args.trials, root, log,
                                                args.per_process))
    except KeyboardInterrupt:
        interrupted = True  # the points measured so far are kept and said to be partial
        log("interrupted: the points measured so far follow")
    finish({"points": points, **({"interrupted": True} if interrupted else {})}, root, args.picture)


def finish(summary: dict[str, Any], root: Path, picture: Path | None = None) -> None:
    (root / "points.json").write_text(json.dumps(summary, indent=1))
    (root / "table.md").write_text(markdown_table(summary["points"]))
    curves(summary["points"], root / "curves.html")
    if picture is not None:
        events = len({p["event"] for p in summary["points"]})
        screenshot(root / "curves.html", picture, width=max(700, 420 * events) + 40, height=420 * len(CURVES) + 60)
    print(f"points.json, table.md and curves.html: {root}", file=sys.stderr)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

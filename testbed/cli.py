"""The `testbed` command: run scenarios, validate them, re-render reports, clean up."""

from __future__ import annotations

import gc
import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .children import terminate_as_interrupt
from .errors import TestbedError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Kafka consumer-group rebalancing testbed.")
# What a command answers (verdicts, the pages it wrote, `ok`) goes to stdout, for scripts to read; its progress,
# warnings and refusals to stderr.
console = Console(stderr=True, soft_wrap=True)
answer = Console(soft_wrap=True)
SCENARIOS_DIR = Path("scenarios")
ReportsOption = Annotated[Path, typer.Option("--reports", help="where run directories go")]
SetOption = Annotated[list[str], typer.Option("--set", help="override a field: dotted.path=value (repeatable)")]
RayOption = Annotated[str | None, typer.Option(
    "--ray", metavar="HOST:PORT", help="place the members on the nodes of this Ray cluster (docs/placement.md); "
                                       "default: TESTBED_RAY_ADDRESS, else this machine")]
RepeatOption = Annotated[int, typer.Option("--repeat", min=1, help="trials per configuration, each a full run")]


class Judge(str, Enum):
    each = "each"
    median = "median"


JudgeOption = Annotated[Judge, typer.Option("--judge", help="with --repeat: every trial on its own (each), or the "
                                                            "expectations on the medians (median)")]


def _quiet_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "testcontainers", "testbed.admin.kafka_admin", "testbed.scenario.drain"):
        logging.getLogger(noisy).setLevel(logging.ERROR if not verbose else logging.WARNING)


def _import_meanwhile(module: str) -> None:
    """Import ``module`` on a thread of its own. The report's modules (pandas, Plotly: 0.8 s on 2 cores) load while
    the run's brokers start, which is mostly waiting on Docker and the JVM, instead of delaying the run's start or
    its report; the ``import`` after the run finds them loaded, or waits on the module's lock, or (should the thread
    have failed) imports them itself and raises what failed."""
    threading.Thread(target=importlib.import_module, args=(module,), name=f"import {module}", daemon=True).start()


def _run_one(run, reports: Path):
    """One run to its saved files, then its report (interrupted and failed runs too)."""
    from .scenario.evaluate import failure_summary
    from .scenario.events import PhaseStarted
    from .scenario.progress import ProgressDisplay
    from .scenario.runner import ScenarioRunner

    runner = ScenarioRunner(run, reports)
    progress = ProgressDisplay(runner, console)
    console.print(f"[bold]{escape(run.label)}[/]: {escape(run.scenario.description or '')}".rstrip(": "))
    started = time.monotonic()
    _import_meanwhile(f"{__package__}.report")
    with progress:
        result = runner.execute()
        runner.events.phase.fire(PhaseStarted("reporting", "rendering the report"))
        from .report import render_after_run

        render_after_run(result.files, reports)
    colour = {"pass": "green", "fail": "red", "partial": "yellow", "error": "red"}[result.status]
    answer.print(f"[{colour}]{result.status.upper()}[/] {escape(run.label)} in {time.monotonic() - started:.0f} s")
    if result.status != "pass":
        answer.print(escape(failure_summary(result)))  # it quotes [lists]
    else:
        answer.print(f"report: {result.files.report}")
    return result


# Exit codes of run and matrix, so that a CI job can tell a finding from a broken run: 2 is a refused input
# (``main``), before anything starts.
EXIT_FAIL = 1  # an expectation or a checker failed, or the run was interrupted: the run's answer
EXIT_ERROR = 3  # a run ended in an error (the harness, the environment or the analysis failed): no answer


def exit_code(statuses: list[str]) -> int:
    """0 when every run passed; EXIT_ERROR when one ended in an error; else EXIT_FAIL."""
    if all(s == "pass" for s in statuses):
        return 0
    return EXIT_ERROR if "error" in statuses else EXIT_FAIL


@app.command()
def run(file: Path, set_: SetOption = [], reports: ReportsOption = Path("reports"), repeat: RepeatOption = 1,
        judge: JudgeOption = Judge.each, verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
        ray: RayOption = None) -> None:
    """Run one scenario to an HTML report. Exit code 0: pass; 1: an expectation or checker failed (or the run was
    interrupted); 2: the file was refused; 3: the run ended in an error."""
    from .scenario.loader import load

    _quiet_logging(verbose)
    _use_ray(ray)
    scenario_run = load(file, set_)
    terminate_as_interrupt()
    if repeat > 1:
        raise typer.Exit(_run_trials([scenario_run], repeat, judge.value, reports))
    raise typer.Exit(exit_code([_run_one(scenario_run, reports).status]))


@app.command()
def matrix(file: Path, set_: SetOption = [], reports: ReportsOption = Path("reports"), repeat: RepeatOption = 1,
           judge: JudgeOption = Judge.each, verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
           ray: RayOption = None) -> None:
    """Run every point of a scenario's matrix (each --repeat times), then a comparison report; exit codes as
    `run`'s (3 when any run ended in an error)."""
    from .scenario.loader import expand

    _quiet_logging(verbose)
    _use_ray(ray)
    runs = expand(file, set_)
    terminate_as_interrupt()
    if repeat > 1:
        raise typer.Exit(_run_trials(runs, repeat, judge.value, reports))
    results, interrupted = run_in_turn(runs, lambda r: _run_one(r, reports))
    if interrupted:
        _said_interrupted(results, len(runs))
    dirs = [Path(r.run_dir) for r in results]
    try:
        from .report import render_comparison

        out = reports / f"compare-{runs[0].scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}.html"
        render_comparison(dirs, out)
        answer.print(f"comparison: {out}")
    except Exception as exc:  # noqa: BLE001 - each run's own report stands
        console.print(f"[yellow]comparison report failed:[/] {escape(str(exc))}")
    code = exit_code([r.status for r in results])
    raise typer.Exit(EXIT_FAIL if interrupted and code == 0 else code)


def _use_ray(address: str | None) -> None:
    """``--ray`` is the setting ray_address for this command (every run reads it from the settings)."""
    if address is not None:
        from .settings import ENV_PREFIX, settings

        os.environ[f"{ENV_PREFIX}RAY_ADDRESS"] = address
        settings.cache_clear()


def run_in_turn(configs: list, run_one: Callable) -> tuple[list, bool]:
    """``run_one`` over ``configs`` in order, stopping after the first run a Ctrl-C or SIGTERM interrupted (its
    outcome ``partial``): a user who interrupts a series means the series. Returns (the results, interrupted)."""
    results = []
    for config in configs:
        results.append(run_one(config))
        if results[-1].outcome == "partial":
            return results, True
    return results, False


def _said_interrupted(results: list, planned: int) -> None:
    console.print(f"[yellow]interrupted[/] after {len(results)} of {planned} runs; the rest did not start")


def _run_trials(runs, repeat: int, judge: str, reports: Path) -> int:
    """Every configuration ``repeat`` times (trial by trial, so slow drifts of the machine touch all alike),
    then the trials summary and its page; the exit code: 0 if the judging passes and nothing was interrupted,
    else EXIT_ERROR when a trial ended in an error, else EXIT_FAIL."""
    from .scenario.loader import ScenarioRun
    from .analysis.runs.trials import TrialsSummary, summarise_group, write_summary
    from .scenario.evaluate import judge_group

    planned = [(i, ScenarioRun(r.path, r.scenario, {**r.parameters, "trial": trial}))
               for trial in range(1, repeat + 1) for i, r in enumerate(runs)]
    done, interrupted = run_in_turn(planned, lambda p: _run_one(p[1], reports))
    results: list[list] = [[] for _ in runs]
    for (i, _), result in zip(planned, done):
        results[i].append(result)
    asked = repeat
    if interrupted:
        _said_interrupted(done, len(planned))
        runs = [r for i, r in enumerate(runs) if results[i]]
        results = [r for r in results if r]
        repeat = max(len(r) for r in results)
    groups = [summarise_group(r.label, r.parameters, [Path(x.run_dir) for x in results[i]],
                              [x.status for x in results[i]]) for i, r in enumerate(runs)]
    summary = TrialsSummary(scenario=runs[0].scenario.name, repeat=repeat, judge=judge, groups=groups,
                            asked=asked if asked > repeat else None)
    directory = reports / f"trials-{runs[0].scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    answer.print(f"trials summary: {write_summary(summary, directory)}")
    try:
        from .report.trials import render_trials

        answer.print(f"trials report: {render_trials(summary, directory / 'summary.html')}")
    except Exception as exc:  # noqa: BLE001 - the summary and every run's report stand
        console.print(f"[yellow]trials report failed:[/] {escape(str(exc))}")
    passed = True
    for group, run_, res in zip(groups, runs, results):
        problems = judge_group(group, run_.scenario.expect, res, judge)
        passed = passed and not problems
        colour = "red" if problems else "green"
        of = f" of {asked} asked" if asked > repeat else ""
        answer.print(f"[{colour}]{'FAIL' if problems else 'PASS'}[/] {escape(group.label)} ({judge}, {repeat} "
                      f"trials{of})")
        for p in problems:
            answer.print(f"  {escape(str(p))}")
    if passed and not interrupted:
        return 0
    return EXIT_ERROR if any(x.status == "error" for trials in results for x in trials) else EXIT_FAIL


@app.command()
def validate(files: list[Path], set_: SetOption = []) -> None:
    """Validate scenario files (matrix points included, with the --set overrides a run would get) without starting
    anything, with the checks a run makes before it starts: the Kafka versions on Maven Central, client versions
    on PyPI, programs' interpreters and clients, the members' client settings and handlers by their client
    libraries (no broker is needed)."""
    from .scenario.loader import check_kafka_versions, check_members, expand

    bad = 0
    for f in files:
        try:
            runs = expand(f, set_ or None)
            check_kafka_versions(f, runs)
            check_members(f, runs)
            answer.print(f"[green]ok[/] {f} ({len(runs)} run{'s' if len(runs) != 1 else ''})")
        except TestbedError as exc:
            bad += 1
            console.print(f"[red]invalid[/] {escape(str(exc))}")  # messages quote [lists] the markup would eat
    raise typer.Exit(1 if bad else 0)


@app.command("list")
def list_scenarios(directory: Annotated[Path, typer.Argument()] = SCENARIOS_DIR) -> None:
    """List the scenarios of a folder (default: scenarios/ here) with their tags, matrix size and description."""
    from .scenario.listing import list_scenarios as listed

    if not directory.is_dir():
        console.print(f"[red]no folder {escape(str(directory))} here[/] (in {escape(str(Path.cwd()))}): "
                      "name the folder of your scenario files, e.g. `testbed list path/to/scenarios`")
        raise typer.Exit(2)
    table = Table("file", "tags", "runs", "description")
    for row in listed(directory):
        table.add_row(escape(row.name), ",".join(row.tags), "invalid" if row.runs is None else str(row.runs),
                      escape(row.summary))
    Console().print(table)


@app.command()
def report(run_dir: Path, reanalyse: Annotated[bool, typer.Option(help="run the analysis again first")] = True) -> None:
    """Re-analyse and re-render a saved run from its history."""
    from .report import render_index, render_run
    from .run.layout import RunDir
    from .run.result import RunResult
    from .scenario.evaluate import evaluate
    from .scenario.loader import read_yaml
    from .scenario.loader import validate as validate_scenario

    _quiet_logging(False)
    rd = RunDir(run_dir)
    if not rd.harness_log.exists():
        raise TestbedError(f"{run_dir}: not a run directory (no history/harness.jsonl)")
    if reanalyse and rd.result.exists():
        scenario = validate_scenario(rd.scenario, read_yaml(rd.scenario))
        result = evaluate(rd, scenario, RunResult.load(rd.result))
        result.save(rd.result)
    out = render_run(run_dir)
    render_index(run_dir.parent)
    answer.print(f"report: {out}")


@app.command()
def analyse(folder: Annotated[Path, typer.Argument(help="a folder of runs, e.g. reports/")] = Path("reports")) -> None:
    """Every run under a folder in one table (runs.csv, runs.parquet) and a page of each key figure over time
    with its changes between testbed revisions (trends.html), made by one Spark job."""
    from .analysis.runs.across_runs import changes, collect_runs
    from .analysis.spark.session import get_spark
    from .report.trends import render_trends

    _quiet_logging(False)
    if not folder.is_dir():
        raise TestbedError(f"folder: {folder} is not a directory (give a folder of runs, e.g. reports/)")
    table = collect_runs(get_spark(), folder)
    if table.empty:
        raise TestbedError(f"folder: no run directory (with result.json) under {folder}, 3 levels down")
    found = changes(table)
    table.to_parquet(folder / "runs.parquet", index=False)
    table.to_csv(folder / "runs.csv", index=False)
    found.to_csv(folder / "changes.csv", index=False)
    page = render_trends(table, found, folder / "trends.html", title=f"Runs in {folder.resolve().name}")
    problems = int(table["problems"].notna().sum())
    answer.print(f"{len(table)} runs, {len(found)} change(s) between revisions"
                 + (f", {problems} run(s) with unreadable files (column problems)" if problems else "")
                 + f"\ntable: {folder / 'runs.csv'}\npage: {page}")


@app.command()
def setup(
    kafka_version: Annotated[list[str], typer.Option("--kafka-version", help="images to build (repeatable)")] = [],
) -> None:
    """Write the package's bytecode, start a Docker engine if none answers, build the images and testbed's Java
    agent, install Chromium, make the Spark driver's class-data archive (idempotent); then compact the kernel's memory
    where this process may (root; TESTBED_COMPACT_MEMORY=false: not)."""
    from concurrent.futures import ThreadPoolExecutor

    from .analysis.service.archive_maker import ArchiveError, ensure_archive
    from .brokers.engine import ensure_engine
    from .brokers.images import ensure_kafka_image
    from .host.compaction import compact_memory, free_in_large_blocks_gib
    from .members.envs import EnvBuildError
    from .members.java.agent import agent_jar
    from .package_files import compile_package
    from .report.browser import ensure_chromium
    from .settings import settings

    compile_package()
    # Spark's archive is CPU work (30-40 s) where the rest mostly waits on downloads and builds: made beside them.
    archive = (ThreadPoolExecutor(1, thread_name_prefix="class-archive").submit(ensure_archive)
               if settings().spark_class_archive else None)
    ensure_engine()
    console.print("[green]docker engine answers[/]")
    for version in kafka_version or [settings().kafka_version]:
        console.print(f"[green]image ready:[/] {ensure_kafka_image(version)}")
    try:
        console.print(f"[green]Java agent for JVM programs:[/] {agent_jar()}")
    except EnvBuildError as exc:  # only JVM programs need it: say why they cannot run, set up the rest
        console.print(f"[yellow]Java agent not built (JVM programs cannot run as members):[/] {escape(str(exc))}")
    console.print(f"[green]browser for report checks:[/] {ensure_chromium()}")
    try:
        if archive is not None:
            console.print(f"[green]Spark class-data archive:[/] {archive.result()}")
    except ArchiveError as exc:  # analyses work without it, their Spark only starts slower
        console.print(f"[yellow]Spark class-data archive not made (Spark starts about 3 s slower):[/] "
                      f"{escape(str(exc))}")
    # Last, after the builds, just before the JVMs of the run or the tests start (testbed/host/compaction.py says why).
    if settings().compact_memory:
        before = free_in_large_blocks_gib()
        if (took := compact_memory()) is not None:
            console.print(f"[green]kernel memory compacted[/] in {took:.1f} s: {before} -> "
                          f"{free_in_large_blocks_gib()} GiB free in blocks of 2 MiB and more")


@app.command("kafka-versions")
def kafka_versions() -> None:
    """List the Kafka versions Maven Central serves."""
    from .brokers.versions import list_kafka_versions

    for v in list_kafka_versions():
        print(v)


@app.command()
def cluster(
    brokers: Annotated[int, typer.Option(help="1 or 3")] = 1,
    kafka_version: Annotated[Optional[str], typer.Option(help="Kafka version")] = None,
    hold: Annotated[Optional[float], typer.Option(help="seconds to keep it up (default: until Ctrl-C)")] = None,
) -> None:
    """Start a cluster, print its bootstrap servers, keep it up, then remove it."""
    from .brokers.cluster import KafkaCluster

    terminate_as_interrupt()
    with KafkaCluster(brokers=brokers, kafka_version=kafka_version) as c:
        print(c.bootstrap_servers, flush=True)
        console.print(f"{brokers} broker(s) of Kafka {c.kafka_version} ready; "
                      + (f"stopping in {hold:.0f} s" if hold is not None else "Ctrl-C stops them"))
        try:
            deadline = time.monotonic() + hold if hold is not None else None
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.5)
        except KeyboardInterrupt:
            console.print("stopping")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def instrument(
    command: Annotated[list[str], typer.Argument(help="the program and its arguments, after --", show_default=False)],
    history: Annotated[Path, typer.Option("--history", help="the history file (appended to)")] = Path(
        "testbed-history.jsonl"),
    member_id: Annotated[str, typer.Option("--member-id", help="the member's name in the history")] = "program",
    jvm: Annotated[bool, typer.Option("--jvm", help="a JVM program (KafkaConsumer), under testbed's Java agent; the "
                                      "default when the command is java")] = False,
) -> None:
    """Run your own consumer program (confluent-kafka, kafka-python or aiokafka; a JVM program's KafkaConsumer) under
    testbed's instrumentation, outside a scenario: its consumer writes a member history as testbed's runners do.
    Examples: testbed instrument --history h.jsonl -- .venv/bin/python -m myservice;
    testbed instrument --history h.jsonl -- java -jar app.jar"""
    from .history.writer import read_events
    from .instrument.launch import python_attach, run_instrumented

    attach = python_attach
    if jvm or Path(command[0]).name == "java":
        from .members.java.agent import jvm_attach

        attach = jvm_attach
    try:
        code = run_instrumented(command, history, member_id, attach)
    except OSError as exc:
        raise TestbedError(f"command: {' '.join(command)!r} could not start: {exc}") from exc
    events = list(read_events(history)) if history.exists() else []
    if events:
        console.print(f"history: {history} ({len(events)} events)")
    else:
        console.print(f"[yellow]history: no events in {escape(str(history))}[/]: the program built no instrumented "
                      "consumer (a Python program on confluent-kafka, kafka-python or aiokafka, started without -E, -I "
                      "or -S? a JVM program whose launcher resets JAVA_TOOL_OPTIONS?)")
    raise typer.Exit(code)


@app.command()
def clean() -> None:
    """End the processes, remove the containers, data volumes and network cuts left by earlier runs whose owner
    is gone, the Spark logs of ended processes, and end the analysis services (the next run starts one again)."""
    from .analysis.service import stop_services
    from .brokers.reaper import reap_leftover_containers, reap_leftover_processes, reap_leftover_volumes
    from .faults.network import reap_leftover_rules
    from .analysis.spark.session import remove_stale_spark_logs
    from .placement.node_host import NODES_DIR, remove_orphans

    ended = reap_leftover_processes()
    console.print(f"ended {len(ended)} process(es)" + (": " + ", ".join(ended) if ended else ""))
    services = stop_services()
    console.print(f"ended {len(services)} analysis service(s)" + (": " + ", ".join(services) if services else ""))
    removed = reap_leftover_containers()
    console.print(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))
    volumes = reap_leftover_volumes()
    console.print(f"removed {len(volumes)} data volume(s)" + (": " + ", ".join(volumes) if volumes else ""))
    rules = reap_leftover_rules()
    console.print(f"removed {len(rules)} network cut rule(s)" + (": " + ", ".join(rules) if rules else ""))
    folders = remove_orphans(NODES_DIR)  # this machine as a node of a Ray cluster: members' files of a dead host
    console.print(f"removed {len(folders)} placed members' folder(s)" + (": " + ", ".join(map(str, folders))
                                                                          if folders else ""))
    logs = remove_stale_spark_logs(older_than_s=0)
    console.print(f"removed {len(logs)} Spark log(s) of ended processes")


def main() -> None:
    try:
        app()
    except TestbedError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    finally:
        # The interpreter's exit collects garbage over every object a run loaded (pandas, Plotly, the clients):
        # 0.4-0.5 s after the report was written. Frozen, they are left to the process's end; the atexit handlers
        # still run, and every file and service the command used was closed by its own context before this.
        gc.freeze()


if __name__ == "__main__":
    main()

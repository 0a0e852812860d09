"""The `testbed` command."""

from __future__ import annotations

import signal
import sys
import time
from typing import Annotated, Optional

import typer
from rich.console import Console

from .errors import TestbedError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Kafka consumer-group rebalancing testbed.")
console = Console(stderr=True)


def _terminate_as_interrupt() -> None:
    """SIGTERM unwinds like Ctrl-C, so every context manager cleans up what it started."""
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))


@app.command()
def setup(
    kafka_version: Annotated[list[str], typer.Option("--kafka-version", help="images to build (repeatable)")] = [],
) -> None:
    """Start a Docker engine if none answers and build the images (idempotent)."""
    from .engine import ensure_engine
    from .images import ensure_kafka_image
    from .settings import settings

    ensure_engine()
    console.print("[green]docker engine answers[/]")
    for version in kafka_version or [settings().kafka_version]:
        tag = ensure_kafka_image(version)
        console.print(f"[green]image ready:[/] {tag}")


@app.command("kafka-versions")
def kafka_versions() -> None:
    """List the Kafka versions Maven Central serves."""
    from .images import list_kafka_versions

    for v in list_kafka_versions():
        print(v)


@app.command()
def cluster(
    brokers: Annotated[int, typer.Option(help="1 or 3")] = 1,
    kafka_version: Annotated[Optional[str], typer.Option(help="Kafka version")] = None,
    hold: Annotated[Optional[float], typer.Option(help="seconds to keep it up (default: until Ctrl-C)")] = None,
) -> None:
    """Start a cluster, print its bootstrap servers, keep it up, then remove it."""
    from .cluster import KafkaCluster

    _terminate_as_interrupt()
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


@app.command()
def clean() -> None:
    """Remove containers and processes left by earlier runs whose owner is gone."""
    from .reaper import reap_leftover_containers

    removed = reap_leftover_containers()
    console.print(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))


def main() -> None:
    try:
        app()
    except TestbedError as exc:
        console.print(f"[red]error:[/] {exc}")
        sys.exit(2)


if __name__ == "__main__":
    main()

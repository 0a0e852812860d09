"""The one argument of a runner process: which member, which group, where to write its history."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .spec import MemberSpec


class MemberConfig(BaseModel):
    """Everything a runner needs; the fleet writes it, the runner reads it with ``--config``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    member_id: str = Field(description="the member's name in the history, e.g. 'm3'")
    slot: int = Field(default=0, ge=0, description="stable position; a bounced replacement keeps its slot")
    group_id: str
    topics: list[str] = Field(min_length=1)
    bootstrap_servers: str
    spec: MemberSpec
    history_path: Path
    max_records: int | None = Field(default=None, ge=1, description="stop cleanly after this many records")
    log_path: Path | None = Field(default=None, description="client/JVM diagnostics; None = inherit stderr")
    run_dir: Path | None = Field(default=None, description="the run's directory: a command member's {run_dir}")
    topic_names: dict[str, str] = Field(
        default_factory=dict, description="scenario topic name -> this run's topic name: a command member's "
        "{topic:<name>} placeholders")
    broker_session_timeout_ms: int | None = Field(
        default=None, ge=1,
        description="the brokers' group.consumer.session.timeout.ms, when the fleet knows it: the session timeout "
                    "of a group_protocol 'consumer' member (written into its started event)",
    )
    broker_heartbeat_interval_ms: int | None = Field(
        default=None, ge=1,
        description="the brokers' group.consumer.heartbeat.interval.ms, when the fleet knows it: the heartbeat "
                    "interval of a group_protocol 'consumer' member (written into its started event)",
    )

    @property
    def group_instance_id(self) -> str | None:
        """Derived from the slot, not the member id, so a replacement rejoins as the same static member."""
        return f"{self.group_id}-slot-{self.slot}" if self.spec.static else None


def parse_config(argv: list[str] | None, *, runner: str, client: str) -> MemberConfig:
    """``--config`` takes inline JSON or the path of a JSON file; its spec must be for ``client``."""
    prog = f"python -m testbed.members.{runner}"
    parser = argparse.ArgumentParser(prog=prog, description="Run one consumer-group member and write its history.")
    parser.add_argument("--config", required=True, help="MemberConfig as JSON, or a path to a JSON file")
    args = parser.parse_args(argv)
    text = args.config if args.config.lstrip().startswith("{") else Path(args.config).read_text()
    config = MemberConfig.model_validate(json.loads(text))
    if config.spec.client != client:
        parser.error(f"spec.client: this runner runs {client!r}, got {config.spec.client!r}")
    return config

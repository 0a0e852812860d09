"""The user's store read after the run: which records left their effect there (the scenario's ``effects``).

A program's processing is invisible to the client, so the history can only infer it (the instrumentation's
at-least-once rule). What a user finally asks is whether each acknowledged record's effect is in their store,
exactly once. The scenario names a command that lists what the store holds; it runs after every member has
stopped, so the store is final, and its output is saved as a history file of its own. The analysis compares
it with the acknowledged records (testbed.analysis.records.effects).
"""

from __future__ import annotations

import os
import subprocess

from ..children import child_env, die_with_parent
from ..errors import TestbedError
from ..members.spec import fill_env
from ..run.layout import RunDir
from .model import EffectsModel


class EffectsError(TestbedError):
    """The effects command failed; the run's history stays, its effects are unknown."""


def collect_or_explain(effects: EffectsModel, run_dir: RunDir, **run: object) -> str | None:
    """``collect_effects``; on failure, no effects file but the reason beside it (the analysis reports them
    unknown with it) and the reason returned."""
    try:
        collect_effects(effects, run_dir, **run)  # type: ignore[arg-type]
    except EffectsError as exc:
        run_dir.effects.unlink(missing_ok=True)
        run_dir.effects_failed.write_text(str(exc))
        return str(exc)
    return None


def collect_effects(effects: EffectsModel, run_dir: RunDir, *, bootstrap_servers: str, group_id: str,
                    topics: dict[str, str]) -> int:
    """Run the command, save its standard output as the run's effects file; the number of lines it printed."""

    def fill(values: dict[str, str]) -> dict[str, str]:
        return fill_env(values, bootstrap_servers=bootstrap_servers, group_id=group_id, topics=topics,
                        run_dir=str(run_dir.root.resolve()))

    args = fill({str(i): arg for i, arg in enumerate(effects.command)})
    command = [args[str(i)] for i in range(len(effects.command))]
    run_dir.effects.parent.mkdir(parents=True, exist_ok=True)
    run_dir.effects_output.parent.mkdir(parents=True, exist_ok=True)
    with run_dir.effects.open("wb") as out, run_dir.effects_output.open("ab") as err:
        try:
            proc = subprocess.run(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                  env=child_env({**os.environ, **fill(effects.env)}), timeout=effects.timeout_s,
                                  cwd=os.path.abspath(effects.cwd) if effects.cwd else None,
                                  preexec_fn=die_with_parent(own_group=True))
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise EffectsError(f"effects.command: {' '.join(command)!r} failed: {exc}") from None
    if proc.returncode != 0:
        tail = run_dir.effects_output.read_text(errors="replace").splitlines()[-10:]
        raise EffectsError(f"effects.command: {' '.join(command)!r} exited with {proc.returncode}; its last output "
                           f"({run_dir.effects_output}):\n  " + "\n  ".join(tail))
    with run_dir.effects.open("rb") as f:
        return sum(1 for _ in f)

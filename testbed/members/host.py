"""Member host: one process running many members: ``python -m testbed.members.host``.

A member process of confluent-kafka costs ~44 MB and one interpreter; a group of 1,000 members does not
fit on a small machine that way. A host runs the members the fleet gives it, each exactly as it runs alone
(``ConfluentMember`` / ``KafkaPythonMember`` / ``AiokafkaMember`` with its own client, identity, callbacks and
history file), so the histories and their analysis do not change. confluent-kafka and kafka-python members run
each in a thread of its own; aiokafka members all on one event loop (its thread), as an asyncio service runs its
consumers.

Control channel: one JSON object per line on stdin, from the fleet::

    {"op": "start", "member": "m3", "config": "<path of a MemberConfig JSON>"}
    {"op": "stop" | "stall" | "unstall", "member": "m3"}

and one JSON object per line on stdout, to the fleet::

    {"event": "exit", "member": "m3", "code": 0}      (code 1: ended in error, or its start failed; why is on stderr)

What the channel cannot do is done to the whole process by signals, so it hits every member hosted:
SIGKILL, SIGSTOP/SIGCONT, and a network cut by the process's group id. SIGTERM or the end of stdin (the
fleet closed it, or died) stops every member cleanly and ends the host.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import resource
import signal
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

from ..clients import FAMILIES, names
from .config import MemberConfig
from .runtime import MemberControls, dump_stacks_on_request
from .signal_relay import relay

HOST_MODULE = "testbed.members.host"  # this module, as a family's declaration names its member host
JOIN_TIMEOUT_S = 60.0  # at the end, how long the host waits for its members to close and leave


def _member_class(client: str, share: bool = False) -> Any:
    """The runner's member class, as the client's declaration names it (testbed.clients); imported on demand (a
    venv holds one client library only)."""
    declared = FAMILIES.get(client)
    runner = None if declared is None else declared.share if share else declared.member
    if runner is None or runner.member_class is None or declared.host != HOST_MODULE:  # type: ignore[union-attr]
        hosted = names(lambda f: f.host == HOST_MODULE)
        raise SystemExit(f"spec.client: a member host runs {', '.join(hosted[:-1])} or {hosted[-1]} members, got "
                         f"{client!r}")
    return getattr(importlib.import_module(runner.module), runner.member_class)


def raise_open_files_limit() -> int:
    """Every member holds sockets to the brokers and its history file: lift the soft limit to the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


class MemberHost:
    def __init__(self) -> None:
        self.controls: dict[str, MemberControls] = {}
        self.threads: dict[str, threading.Thread] = {}
        self._out = threading.Lock()
        self._ending = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None  # the aiokafka members' one event loop

    def event_loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the asyncio members share, running in a thread of its own from the first one on."""
        with self._out:  # members start from their own threads
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="event-loop", daemon=True).start()
            return self._loop

    def report(self, **event: Any) -> None:
        with self._out:
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()

    def start(self, config_path: str) -> None:
        config = MemberConfig.model_validate_json(Path(config_path).read_text())
        controls = MemberControls()
        self.controls[config.member_id] = controls
        thread = threading.Thread(target=self._run, args=(config, controls), name=f"member-{config.member_id}",
                                  daemon=True)
        self.threads[config.member_id] = thread
        thread.start()

    def _run(self, config: MemberConfig, controls: MemberControls) -> None:
        """The member to its end (an asyncio member on the shared loop, this thread waiting for it)."""
        code = 1
        try:
            member = _member_class(config.spec.client, config.spec.is_share)(config)
            if hasattr(member, "run_async"):
                code = asyncio.run_coroutine_threadsafe(member.run_async(controls), self.event_loop()).result()
            else:
                code = member.run(controls)
        except BaseException:  # noqa: BLE001 - reported as this member's end; the others run on
            sys.stderr.write(f"member {config.member_id} failed:\n{traceback.format_exc()}")
            sys.stderr.flush()
        finally:
            self.report(event="exit", member=config.member_id, code=code)

    def command(self, line: str) -> None:
        message: dict[str, Any] = {}
        try:
            message = json.loads(line)
            op = message["op"]
            if op == "start":
                self.start(message["config"])
                return
            controls = self.controls[message["member"]]
        except (ValueError, KeyError, OSError) as exc:
            sys.stderr.write(f"member host: bad command {line.strip()!r}: {exc!r}\n")
            if message.get("op") == "start" and message.get("member"):
                self.report(event="exit", member=message["member"], code=1)  # it never ran: ended in error
            return
        {"stop": controls.stop.set, "stall": controls.stall.start, "unstall": controls.stall.end}.get(
            op, lambda: sys.stderr.write(f"member host: unknown op {op!r}\n"))()

    def end(self) -> None:
        """Stop every member cleanly and wait for them to leave the group."""
        for controls in self.controls.values():
            controls.stop.set()
        for thread in self.threads.values():
            thread.join(JOIN_TIMEOUT_S)

    def serve(self) -> int:
        relay(signal.SIGTERM, self._ending.set)
        relay(signal.SIGINT, self._ending.set)
        reader = threading.Thread(target=self._read_commands, name="control", daemon=True)
        reader.start()
        self._ending.wait()  # set by the relay's thread on a signal, or by the reader when stdin ends
        self.end()
        return 0

    def _read_commands(self) -> None:
        for line in sys.stdin:
            if line.strip():
                self.command(line)
        self._ending.set()  # stdin ended: the fleet is done with this host, or gone


def main() -> int:
    dump_stacks_on_request()
    raise_open_files_limit()
    return MemberHost().serve()


if __name__ == "__main__":
    sys.exit(main())

"""What decides a client setting testbed owns, and what a scenario writes instead: the shared owners each family's
declaration names in its table of owned settings (``ClientFamily.owned_settings``).

A member's settings are testbed's (from the run and the spec's fields) with the spec's ``client_config`` on
top (``testbed.members.client_settings``). A key testbed sets would either be overridden without a word or
break what testbed measures (a member named otherwise than its history, a commit mode the runner does not
follow), so ``MemberSpec`` refuses it before anything starts (``testbed.members.owned_settings``), naming what
decides it and what to write instead.

Stdlib only, and it runs as Python 3.8 (``family``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Owner:
    """What decides an owned setting, and what a scenario writes instead."""

    decided_by: str
    instead: str


CLUSTER = Owner("the run's cluster", "the scenario's cluster decides it (cluster.bootstrap_servers for one of yours)")
GROUP = Owner("the run's group", "use the scenario's group_id")
MEMBER_NAME = Owner("the member's name", "testbed names each member (m0, m1.1, ...): its history and the brokers' "
                                         "logs are matched by it")
CALLBACKS = Owner("testbed's callbacks", "the runner records the client's answers through them; a setting here is "
                                         "a value, not a function")


def spec_field(name: str, hint: str = "") -> Owner:
    return Owner(name, f"use the spec's {name}{hint}")


COMMIT_MODE = spec_field("commit_mode", " (auto, sync, on_revoke)")
ASSIGNORS = spec_field("assignors")
GROUP_PROTOCOL = spec_field("group_protocol")
REMOTE_ASSIGNOR = spec_field("remote_assignor")
SESSION_TIMEOUT = spec_field("session_timeout_ms")
MAX_POLL_INTERVAL = spec_field("max_poll_interval_ms")
MAX_POLL_RECORDS = spec_field("max_poll_records")
STATIC = spec_field("static", ": true (the id is derived from the member's slot, so a replacement rejoins as it)")
OFFSET_RESET = spec_field("auto_offset_reset")
SHARE_ACKNOWLEDGEMENT = spec_field("share_acknowledgement", " (implicit, explicit)")

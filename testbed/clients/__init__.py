"""The client families testbed runs members of: each declared once (``family.ClientFamily``), gathered here.

Every table that depends on the client (runner modules, what a spec may ask of each client, the defaults a member
runs with, what the instrumentation accepts) is read off ``FAMILIES``; a new family is a module of its own here
and one entry below (docs/architecture.md, "Adding a client family").

Stdlib only, and it runs as Python 3.8 (``family``).
"""

from __future__ import annotations

from typing import Callable, Dict, Literal, Mapping, Optional, Tuple

from .aiokafka import AIOKAFKA
from .confluent_kafka import CONFLUENT_KAFKA
from .family import ClientFamily, Version, dotted
from .java import JAVA
from .kafka_python import KAFKA_PYTHON

# The registry, in the order every list of families is written in (messages, schemas).
FAMILIES: Mapping[str, ClientFamily] = {f.name: f for f in (CONFLUENT_KAFKA, KAFKA_PYTHON, AIOKAFKA, JAVA)}
FAMILY_NAMES: Tuple[str, ...] = tuple(FAMILIES)
# A spec's and a started event's ``client``: one of the declared names.
ClientName = Literal[FAMILY_NAMES]  # type: ignore[valid-type]


def family(name: str, families: Optional[Mapping[str, ClientFamily]] = None) -> ClientFamily:
    """The declaration of ``name``; a KeyError naming the declared families otherwise."""
    registry = FAMILIES if families is None else families
    if name not in registry:
        raise KeyError(f"client: one of {', '.join(registry)}; got {name!r}")
    return registry[name]


def names(able: Callable[[ClientFamily], object], families: Optional[Mapping[str, ClientFamily]] = None
          ) -> Tuple[str, ...]:
    """The families that can do what ``able`` asks of a declaration, in the registry's order."""
    return tuple(f.name for f in (FAMILIES if families is None else families).values() if able(f))


def running(group_protocol: str, families: Optional[Mapping[str, ClientFamily]] = None) -> Dict[str, Version]:
    """Each family that runs ``group_protocol``, with the first version that does (() for every version)."""
    registry = FAMILIES if families is None else families
    return {f.name: f.group_protocols[group_protocol] for f in registry.values() if f.runs(group_protocol)}


def needed_for(group_protocol: str, families: Optional[Mapping[str, ClientFamily]] = None) -> str:
    """Who runs ``group_protocol``, as a refusal says it: 'confluent-kafka >= 2.12 or java'."""
    return " or ".join(f"{name} >= {dotted(since)}" if since else name
                       for name, since in running(group_protocol, families).items())


__all__ = ["ClientFamily", "ClientName", "FAMILIES", "FAMILY_NAMES", "family", "names", "needed_for", "running"]

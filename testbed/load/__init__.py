"""Produce load driven by Locust, with an acknowledgement log (see docs/load.md).

``LoadGenerator`` is the service; the locustfile and ``producer_user`` run inside Locust's own
processes (gevent-patched) and are never imported by the harness.

The names below are imported when first used: the scenario model reads ``load.records`` (pure logic), and
importing the service with it would cost every ``testbed validate`` and ``testbed list`` a tenth of a second.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .generator import LoadError, LoadGenerator
    from .records import TS_HEADER, decode_ts, decode_value, encode_ts
    from .spec import LoadSpec
    from .summary import LoadSummary

_HOME = {"LoadError": "generator", "LoadGenerator": "generator", "TS_HEADER": "records", "decode_ts": "records",
         "decode_value": "records", "encode_ts": "records", "LoadSpec": "spec", "LoadSummary": "summary"}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_HOME[name]}", __name__), name)

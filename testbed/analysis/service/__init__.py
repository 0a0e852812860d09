"""The analysis service: one warm Spark process that runs, ``matrix`` points, trials and pytest workers share
(docs/analysis.md, "The analysis service"). ``client`` decides where a run is analysed and starts the service;
``server`` is the service; ``place`` is where a service lives and how a client finds the one for its code.

The client's names load on first use: the pytest plugin reads ``place`` at every session's start."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import analyse_run, shared, stop_services, warm_up

__all__ = ["analyse_run", "shared", "stop_services", "warm_up"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import client
        return getattr(client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

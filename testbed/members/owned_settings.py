"""The client settings testbed decides itself: a spec's ``client_config`` may not set them.

Each family declares its tables (``testbed.clients``, ``ClientFamily.owned_settings``; the owners they name in
``testbed.clients.owned``, which says why). ``MemberSpec`` refuses an owned key before anything starts, naming what
decides it and what to write instead.

Imported by ``spec`` inside the per-version virtualenvs: stdlib only.
"""

from __future__ import annotations

from ..clients import FAMILIES
from ..clients.owned import Owner


def owned_settings(client: str, share: bool = False, streams: bool = False) -> dict[str, Owner]:
    """The settings testbed decides for members of this client (``share``: a share-group member; ``streams``: a
    Kafka Streams instance)."""
    declared = FAMILIES[client]
    if streams and declared.owned_streams_settings is not None:
        return dict(declared.owned_streams_settings)
    if share and declared.owned_share_settings is not None:
        return dict(declared.owned_share_settings)
    return dict(declared.owned_settings)


def refusals(client: str, share: bool, keys: list[str], *, streams: bool = False) -> list[str]:
    """One ``client_config.<key>: ...`` line per owned key among ``keys``, in their order."""
    owned = owned_settings(client, share, streams)
    return [f"client_config.{key}: set by testbed ({owned[key].decided_by}); {owned[key].instead}"
            for key in keys if key in owned]


__all__ = ["Owner", "owned_settings", "refusals"]

"""The group kinds the analysis knows, in the order they are measured: the one place a kind is added.

A kind (``group_kind.GroupKind``) claims its members (the first, the consumer group, is the default: every
member no other kind claims; a Kafka Streams application is a kind within it, covering the instances among its
members without taking them away), measures them with its stages, completes the run's configuration, and declares
what it writes: its metrics (unknown, with its reason, in a run without its members), its tables (empty then)
and its example lists. Which kinds a run holds is decided once (``RunView.claim``) and written into metrics.json
(``config.group_kinds``), where the checkers and the report read it.
"""

from __future__ import annotations

from .group import consumer_group
from .group_kind import GroupKind
from .share import share_group
from .streams import streams_application

KINDS: tuple[GroupKind, ...] = (consumer_group.KIND, share_group.KIND, streams_application.KIND)

"""Fleets of consumer processes: start, stop, kill, pause, scale and bounce them; observe the group."""

from ..admin.kafka_admin import GroupView
from .fleet import BounceOptions, Fleet, StableWait, stable_with
from .process import MemberProcess

__all__ = ["BounceOptions", "Fleet", "StableWait", "GroupView", "MemberProcess", "stable_with"]

"""Fleets of consumer processes: start, stop, kill, pause, scale and bounce them; observe the group."""

from .fleet import BounceOptions, Fleet
from .observer import GroupObserver, GroupView, stable_with
from .process import MemberProcess

__all__ = ["BounceOptions", "Fleet", "GroupObserver", "GroupView", "MemberProcess", "stable_with"]

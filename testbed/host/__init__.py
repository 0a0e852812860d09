"""The host the run runs on: a sampler of its saturation (``sampler.HostSampler``), started for every run."""

from .sampler import HostSampler

__all__ = ["HostSampler"]

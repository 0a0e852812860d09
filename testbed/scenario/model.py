"""A scenario as testbed runs it: the file format (``testbed.scenario.schema``, its steps in
``testbed.scenario.step_model``) with the refusals of one part against another (``testbed.scenario.cross_checks``).

A scenario is validated completely, member specs included, before anything starts; see
``testbed.scenario.loader`` for how files, ``--set`` overrides and matrices become models. The format's
names are exported here too: the rest of testbed and the tests import them from this module.
"""

from __future__ import annotations

from pydantic import model_validator

from .base import NAME, ScenarioPart
from .cross_checks import cross_field_refusals
from .schema import (AnalysisModel, ClusterModel, EffectsModel, Expectation, FleetModel, LoadModel, ScenarioFile,
                     ShareGroupModel, StreamsGroupModel, TopicModel)
from .step_model import (COORDINATOR, AddPartitions, BrokerId, BrokerKill, BrokerNodeStep, BrokerPause,
                         BrokerRestart, BrokerRollingRestart, BrokerStart, BrokerStep, BrokerStop, BrokerUnpause,
                         BrokerUpgrade, Drain, Heal, Kill, Latency, MemberStep, Partition, Pause, Resume,
                         RollingBounce, ScaleIn, ScaleOut, Stall, Step, StepModel, StopMember, StopMode, Unstall,
                         Wait, WaitStable, kinds_of)

__all__ = [
    "BROKER_STEPS", "COORDINATOR", "NAME", "AddPartitions", "AnalysisModel", "BrokerId", "BrokerKill",
    "BrokerNodeStep", "BrokerPause", "BrokerRestart", "BrokerRollingRestart", "BrokerStart", "BrokerStep",
    "BrokerStop", "BrokerUnpause", "BrokerUpgrade", "ClusterModel", "Drain", "EffectsModel", "Expectation",
    "FleetModel", "Heal", "Kill", "Latency", "LoadModel", "MemberStep", "Partition", "Pause", "Resume",
    "RollingBounce", "ScaleIn", "ScaleOut", "Scenario", "ScenarioFile", "ScenarioPart", "ShareGroupModel", "Stall",
    "StreamsGroupModel", "Step", "StepModel", "StopMember", "StopMode", "TopicModel", "Unstall", "Wait", "WaitStable",
]

BROKER_STEPS = kinds_of("broker")


class Scenario(ScenarioFile):
    """A scenario file that can run: each part valid, and no part refused by another."""

    @model_validator(mode="after")
    def _consistent(self) -> "Scenario":
        """Every problem, one ``path: message`` a line."""
        problems = cross_field_refusals(self)
        if problems:
            raise ValueError("\n".join(problems))
        return self

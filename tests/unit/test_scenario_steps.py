"""The step table: every step kind the scenario format admits has exactly one handler, and it is called."""

from __future__ import annotations

import typing

import pytest

from testbed import errors
from testbed.scenario import model as m
from testbed.scenario.step_model import StepCategory
from testbed.scenario.steps import STEP_HANDLERS, RunContext, run_step


def model_step_kinds() -> list[str]:
    """Read from the ``Step`` union itself, so a new step class counts here the moment it is added."""
    union = typing.get_args(m.Step)[0]
    return [cls.model_fields["kind"].default for cls in typing.get_args(union)]


def test_every_step_kind_has_exactly_one_handler_and_no_handler_lacks_a_step() -> None:
    kinds = model_step_kinds()
    assert len(kinds) == len(set(kinds)), f"two step classes share a kind: {kinds}"
    assert sorted(set(kinds) - set(STEP_HANDLERS)) == [], "step kinds without a handler in STEP_HANDLERS"
    assert sorted(set(STEP_HANDLERS) - set(kinds)) == [], "handlers for kinds the model does not admit"


def test_every_step_kind_has_one_category_and_broker_steps_are_all_broker_step() -> None:
    union = typing.get_args(typing.get_args(m.Step)[0])
    categories = typing.get_args(StepCategory)
    assert [cls.__name__ for cls in union if cls.category not in categories] == []
    assert {cls.__name__ for cls in union if cls.category == "broker"} == {
        cls.__name__ for cls in union if issubclass(cls, m.BrokerStep)}
    assert m.BROKER_STEPS == tuple(k for k in model_step_kinds() if k.startswith("broker_"))


class Recorder:
    """Stands in for a fleet or a cluster: remembers each call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


def context(cluster: object | None) -> RunContext:
    scenario = m.Scenario.model_validate({
        "name": "steps", "topics": [{"name": "t", "partitions": 2}],
        "members": {"a": {"client": "confluent-kafka"}}, "fleet": [{"spec": "a", "count": 1}]})
    return RunContext(scenario=scenario, run_dir=None, harness=None, bootstrap_servers="127.0.0.1:1",  # type: ignore[arg-type]
                      topics={"t": "t"}, cluster=cluster, admin=None, fleet=Recorder())  # type: ignore[arg-type]


@pytest.mark.parametrize("step, call", [
    (m.Kill(member="m1"), ("kill_member", ("m1",), {})),
    (m.StopMember(member="m0"), ("stop_member", ("m0",), {})),
    (m.ScaleIn(count=2, mode="hard"), ("scale_in", (2, "hard"), {})),
    (m.WaitStable(members=3, timeout_s=5), ("wait_stable", (3,), {"timeout_s": 5})),
])
def test_a_member_step_reaches_the_fleet_as_the_call_it_names(step: m.Step, call: tuple) -> None:
    ctx = context(cluster=None)
    run_step(ctx, step)
    assert ctx.fleet.calls == [call]  # type: ignore[attr-defined]


def test_a_broker_step_reaches_the_cluster_and_is_refused_without_one() -> None:
    cluster = Recorder()
    run_step(context(cluster), m.BrokerRestart(broker=2, mode="hard"))
    assert cluster.calls == [("restart_broker", (2,), {"hard": True})]
    with pytest.raises(errors.TestbedError, match="broker_kill needs a cluster testbed controls"):
        run_step(context(cluster=None), m.BrokerKill(broker=1))


def test_a_timed_broker_pause_unpauses_the_same_broker_and_an_open_one_stays_paused() -> None:
    cluster = Recorder()
    run_step(context(cluster), m.BrokerPause(broker=1, seconds=0.01))
    assert cluster.calls == [("pause_broker", (1,), {}), ("unpause_broker", (1,), {})]
    cluster = Recorder()
    run_step(context(cluster), m.BrokerPause(broker=1))
    run_step(context(cluster), m.BrokerUnpause(broker=1))
    assert cluster.calls == [("pause_broker", (1,), {}), ("unpause_broker", (1,), {})]


class CoordinatorFleet(Recorder):
    """A fleet whose group is coordinated by broker 2."""

    group_id = "g"

    def describe(self):
        from testbed.admin.kafka_admin import GroupView
        return GroupView("g", "STABLE", "range", "CLASSIC", coordinator=2)


def test_coordinator_steps_act_on_the_broker_that_coordinates_the_group_and_bring_the_same_one_back() -> None:
    cluster = Recorder()
    ctx = context(cluster)
    ctx.fleet = CoordinatorFleet()
    run_step(ctx, m.BrokerKill(broker="coordinator"))
    ctx.fleet = Recorder()  # the coordinator has moved; start must not ask again
    run_step(ctx, m.BrokerStart(broker="coordinator"))
    assert cluster.calls == [("kill_broker", (2,), {"role": "coordinator"}),
                             ("start_broker", (2,), {"role": "coordinator"})]

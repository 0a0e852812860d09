"""A series of runs (matrix points, trials) stops at the run a Ctrl-C or SIGTERM interrupted."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.cli import run_in_turn


@dataclass
class Ran:
    config: int
    outcome: str


def test_a_series_runs_every_config_in_order_when_none_is_interrupted() -> None:
    results, interrupted = run_in_turn([1, 2, 3], lambda c: Ran(c, "pass"))
    assert [r.config for r in results] == [1, 2, 3]
    assert not interrupted


def test_failed_and_errored_runs_do_not_stop_the_series() -> None:
    outcomes = {1: "error", 2: "pass", 3: "pass"}
    results, interrupted = run_in_turn([1, 2, 3], lambda c: Ran(c, outcomes[c]))
    assert len(results) == 3 and not interrupted


def test_an_interrupted_run_ends_the_series_and_is_kept() -> None:
    started = []

    def run(config: int) -> Ran:
        started.append(config)
        return Ran(config, "partial" if config == 2 else "pass")

    results, interrupted = run_in_turn([1, 2, 3, 4], run)
    assert interrupted
    assert started == [1, 2], "no run starts after the interrupted one"
    assert [r.outcome for r in results] == ["pass", "partial"]


def test_the_exit_code_tells_a_finding_from_an_error() -> None:
    from testbed.cli import EXIT_ERROR, EXIT_FAIL, exit_code

    assert exit_code(["pass", "pass"]) == 0
    assert exit_code(["pass", "fail"]) == EXIT_FAIL == 1
    assert exit_code(["partial"]) == EXIT_FAIL  # interrupted: what ran is judged
    assert exit_code(["fail", "error", "pass"]) == EXIT_ERROR == 3  # no answer from one of them

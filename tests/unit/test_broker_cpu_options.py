"""Where a broker container goes in the host's CPU scheduling, by the engine's cgroup driver."""

from __future__ import annotations

import pytest

from testbed.brokers.engine import cpu_options
from testbed.errors import ConfigError
from testbed.settings import Settings, settings


@pytest.mark.parametrize(("driver", "shares", "expected"), [
    ("cgroupfs", 32768, {"cpu_shares": 32768, "cgroup_parent": "/"}),
    ("systemd", 32768, {"cpu_shares": 32768}),
    ("cgroupfs", 0, {}),
    ("systemd", 0, {}),
])
def test_a_weight_puts_the_container_beside_the_hosts_processes_under_cgroupfs_only(driver, shares, expected) -> None:
    assert cpu_options(driver, shares) == expected


@pytest.mark.parametrize("driver", ["cgroupfs", "systemd"])
def test_an_engine_that_cannot_weigh_a_container_is_asked_for_nothing(driver) -> None:
    assert cpu_options(driver, 32768, can_weigh=False) == {}


def test_the_default_weight_is_many_processes_worth() -> None:
    assert Settings().broker_cpu_shares >= 16 * 1024


@pytest.mark.parametrize("value", ["1", "-5", "262145", "lots"])
def test_a_weight_the_kernel_refuses_is_refused_naming_the_setting(monkeypatch, value: str) -> None:
    monkeypatch.setenv("TESTBED_BROKER_CPU_SHARES", value)
    settings.cache_clear()
    try:
        with pytest.raises(ConfigError, match="TESTBED_BROKER_CPU_SHARES"):
            settings()
    finally:
        monkeypatch.delenv("TESTBED_BROKER_CPU_SHARES")
        settings.cache_clear()

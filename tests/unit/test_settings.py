"""Configuration from the environment: testbed.settings is the one reader, and a bad value names its variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.analysis.group.broker_logs import log_zone
from testbed.errors import ConfigError
from testbed.members.envs import venv_dir
from testbed.settings import DEFAULT_JVM_OPTIONS, Settings, env_name, settings

pytestmark = pytest.mark.usefixtures("fresh_settings")


def test_an_unknown_broker_log_zone_names_the_variable(monkeypatch) -> None:
    monkeypatch.setenv("TESTBED_BROKER_LOG_TZ", "Mars/Olympus")
    with pytest.raises(ConfigError, match="TESTBED_BROKER_LOG_TZ='Mars/Olympus'.*IANA"):
        settings()


def test_broker_log_zone_defaults_to_utc_and_follows_the_variable(monkeypatch) -> None:
    monkeypatch.delenv("TESTBED_BROKER_LOG_TZ", raising=False)
    assert log_zone().key == "UTC"
    settings.cache_clear()
    monkeypatch.setenv("TESTBED_BROKER_LOG_TZ", "Europe/Paris")
    assert log_zone().key == "Europe/Paris"


def test_client_venvs_live_under_the_cache_dir(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TESTBED_CACHE_DIR", str(tmp_path))
    assert venv_dir("kafka-python", "2.0.2") == tmp_path / "venvs" / "kafka-python-2.0.2"


@pytest.mark.parametrize(("value", "options"), [(None, DEFAULT_JVM_OPTIONS.split()), ("", []),
                                                 ("-Xmx64m -XX:+UseSerialGC", ["-Xmx64m", "-XX:+UseSerialGC"])])
def test_java_options_default_to_the_lean_ones_and_an_empty_value_gives_the_jvms(monkeypatch, value, options) -> None:
    if value is None:
        monkeypatch.delenv("TESTBED_JAVA_OPTS", raising=False)
    else:
        monkeypatch.setenv("TESTBED_JAVA_OPTS", value)
    assert settings().java_opts.split() == options


def test_every_setting_is_documented() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "settings.md").read_text()
    missing = [env_name(name) for name in Settings.model_fields if f"`{env_name(name)}`" not in page]
    assert not missing, f"docs/settings.md lacks {missing}"

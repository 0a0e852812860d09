"""Settings read from the environment (prefix TESTBED_), validated once."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# The newest 4.x release whose whole broker classpath Maven Central serves. (4.4.0's kafka_2.13 is
# listed there, but kafka-tools-api 4.4.0 is not, so its classpath cannot be resolved.)
DEFAULT_KAFKA_VERSION = "4.3.1"
PROJECT_LABEL = "io.testbed.project"
PROJECT_NAME = "kafka-rebalance-testbed"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TESTBED_", extra="ignore")

    kafka_version: str = Field(DEFAULT_KAFKA_VERSION, description="Kafka version of the brokers")
    base_image: str | None = Field(
        None, description="a public JRE image to pull and build FROM, instead of the local debootstrap base"
    )
    debian_mirror: str | None = Field(None, description="mirror for debootstrap; default: the one apt uses")
    cache_dir: Path = Field(Path.home() / ".cache" / "testbed", description="venvs, jars, logs")
    docker_dir: Path = Field(
        Path(__file__).resolve().parent.parent / "docker", description="the image recipes (docker/)"
    )
    engine_start_timeout_s: float = 90.0


@lru_cache(maxsize=1)
def settings() -> Settings:
    return Settings()

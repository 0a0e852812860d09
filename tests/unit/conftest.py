"""Fixtures the unit tests share."""

from __future__ import annotations

import pytest

from testbed.settings import settings


@pytest.fixture
def fresh_settings():
    """settings() reads the environment once per process: read it again for a test that sets variables."""
    settings.cache_clear()
    yield
    settings.cache_clear()

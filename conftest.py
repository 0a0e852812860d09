"""Project-wide pytest setup: strict markers, the `integration` marker and the testbed fixtures.

The fixtures live in testbed/pytest_plugin.py, which is also installed as a pytest plugin (entry
point `testbed`) so other repositories get them; here it is registered only if the entry point
did not load it already (e.g. when running from a checkout that is not pip-installed).
"""

import pytest

from testbed import pytest_plugin

# A user's repository, run from outside this checkout against the installed wheel by
# tests/integration/test_installed_package.py; collected here it would test the checkout instead.
collect_ignore_glob = ["examples/your-repository/*"]


def pytest_configure(config: pytest.Config) -> None:
    config.option.strict_markers = True
    if not config.pluginmanager.has_plugin("testbed"):
        config.pluginmanager.register(pytest_plugin, "testbed")
        pytest_plugin.pytest_configure(config)

"""The cluster's finalized feature levels (metadata.version, group.version, ...), read and raised with
Kafka's own FeatureCommand (``kafka-features.sh``) of a given release, run from its kafka-tools classpath.

After every broker runs a new version, the cluster still speaks the old one's protocol until the levels
are raised: a group cannot use the consumer protocol (KIP-848) on a cluster upgraded from 3.x until
``group.version`` is 1. ``upgrade --release-version X.Y`` raises every feature to that release's default.
"""

from __future__ import annotations

import re
import subprocess

from ..errors import TestbedError

FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
_LINE = re.compile(r"Feature:\s*(\S+).*?FinalizedVersionLevel:\s*(\S+)")


def release_of(version: str) -> str:
    """The release a version belongs to, as FeatureCommand's --release-version takes it: 4.3.1 -> 4.3."""
    return ".".join(version.split(".")[:2])


def _feature_command(bootstrap_servers: str, version: str, *args: str, timeout_s: float = 120) -> str:
    from ..members.envs import java_classpath, java_log_config  # the kafka-tools classpath Java members use

    cmd = ["java", f"-Dlog4j2.configurationFile={java_log_config(version)}", "-cp", java_classpath(version),
           FEATURE_COMMAND, "--bootstrap-server", bootstrap_servers, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise TestbedError(f"kafka-features {' '.join(args)} (kafka-tools {version}) failed with exit code "
                           f"{proc.returncode}: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc.stdout


def finalized_levels(bootstrap_servers: str, version: str) -> dict[str, str]:
    """Feature name -> finalized level as the tool prints it (e.g. ``3.9-IV0`` for metadata.version)."""
    out = _feature_command(bootstrap_servers, version, "describe")
    return {m[1]: m[2] for m in _LINE.finditer(out)}


def raise_levels(bootstrap_servers: str, version: str) -> str:
    """Raise every feature to release ``version``'s default (``upgrade --release-version X.Y``); returns X.Y."""
    release = release_of(version)
    _feature_command(bootstrap_servers, version, "upgrade", "--release-version", release)
    return release

"""A member's client settings from its MemberConfig: one builder per client family, used by every runner.

Each builder applies testbed's settings (the run's cluster and group, the member's name, the spec's fields),
then the spec's ``client_config`` on top, passed through as given. The keys testbed sets are the ones
``testbed.members.owned_settings`` refuses in ``client_config``, so nothing the spec gives is overridden.
The same builders run in the preflight (``testbed.members.preflight``), so the client checks exactly the
settings its runner will use; and the result, without callbacks, is what the ``started`` event records.

Imported by the runners inside per-version virtualenvs: stdlib, pydantic and testbed.members only.
"""

from __future__ import annotations

from typing import Any

from .config import MemberConfig
from .java.assignor_classes import JAVA_ASSIGNOR_CLASSES, seed_assignor_properties
from .spec import _version_tuple

# exactly_once_v2 (KIP-732, kafka-streams 3.0) is the guarantee kafka-streams 2.6 to 2.8 call exactly_once_beta
# (KIP-447): one producer per thread, fenced by the group's generation. Older instances get their own name for it,
# so a spec (and a rolling upgrade from 2.8) names one guarantee throughout.
EOS_V2_NAME_SINCE = (3, 0)


def confluent_settings(config: MemberConfig) -> dict[str, Any]:
    """librdkafka properties of a confluent-kafka Consumer, or of a ShareConsumer for a share member; without
    callbacks (the runner adds its own)."""
    spec = config.spec
    conf: dict[str, Any] = {
        "bootstrap.servers": config.bootstrap_servers,
        "group.id": config.group_id,
        "client.id": config.member_id,
    }
    if spec.is_share:
        # ShareConsumer: no commit, offset-reset, assignor or static-membership settings (the broker's share
        # group decides them); the poll's size is a property here.
        conf["share.acknowledgement.mode"] = spec.share_acknowledgement
        conf["max.poll.records"] = spec.max_poll_records
    else:
        conf["enable.auto.commit"] = spec.commit_mode == "auto"
        conf["auto.offset.reset"] = spec.auto_offset_reset
        if spec.group_protocol == "consumer":
            conf["group.protocol"] = "consumer"
            if spec.remote_assignor:
                conf["group.remote.assignor"] = spec.remote_assignor
        else:
            if spec.assignors:
                conf["partition.assignment.strategy"] = ",".join(spec.assignors)
            if spec.session_timeout_ms is not None:
                conf["session.timeout.ms"] = spec.session_timeout_ms
    if spec.max_poll_interval_ms is not None:
        conf["max.poll.interval.ms"] = spec.max_poll_interval_ms
    if config.group_instance_id:
        conf["group.instance.id"] = config.group_instance_id
    return {**conf, **spec.client_config}


def kafka_python_settings(config: MemberConfig) -> dict[str, Any]:
    """KafkaConsumer keywords. Assignors are their names (the runner turns them into classes with
    ``build_assignor``); no commit callback (the runner adds its own)."""
    spec = config.spec
    kwargs: dict[str, Any] = {
        "bootstrap_servers": config.bootstrap_servers.split(","),
        "group_id": config.group_id,
        "client_id": config.member_id,
        "enable_auto_commit": spec.commit_mode == "auto",
        "auto_offset_reset": spec.auto_offset_reset,
        "max_poll_records": spec.max_poll_records,
    }
    if spec.assignors:
        kwargs["partition_assignment_strategy"] = list(spec.assignors)
    if spec.session_timeout_ms is not None:
        kwargs["session_timeout_ms"] = spec.session_timeout_ms
    if spec.max_poll_interval_ms is not None:
        kwargs["max_poll_interval_ms"] = spec.max_poll_interval_ms
    if config.group_instance_id:
        kwargs["group_instance_id"] = config.group_instance_id
    return {**kwargs, **spec.client_config}


def aiokafka_settings(config: MemberConfig) -> dict[str, Any]:
    """AIOKafkaConsumer keywords: aiokafka kept kafka-python's name for every setting testbed gives (its own
    default of max_poll_records is None, unbounded: the spec's is always given)."""
    return kafka_python_settings(config)


def java_settings(config: MemberConfig) -> dict[str, str]:
    """Java consumer properties of a KafkaConsumer (classic or consumer protocol: the VerifiableConsumer
    runner and the member host) or of a KafkaShareConsumer (a share member)."""
    spec = config.spec
    props = {
        "bootstrap.servers": config.bootstrap_servers,
        "group.id": config.group_id,
        "client.id": config.member_id,
    }
    if spec.is_share:
        props["share.acknowledgement.mode"] = spec.share_acknowledgement
        props["max.poll.records"] = str(spec.max_poll_records)
    else:
        props["enable.auto.commit"] = java_value(spec.commit_mode == "auto")
        props["auto.offset.reset"] = spec.auto_offset_reset
        props["max.poll.records"] = str(spec.max_poll_records)
        if spec.group_protocol == "consumer":
            props["group.protocol"] = "consumer"
            if spec.remote_assignor:
                props["group.remote.assignor"] = spec.remote_assignor
        else:
            if spec.assignors:
                props["partition.assignment.strategy"] = ",".join(JAVA_ASSIGNOR_CLASSES[a] for a in spec.assignors)
                props.update(seed_assignor_properties(spec, config.slot))
            if spec.session_timeout_ms is not None:
                props["session.timeout.ms"] = str(spec.session_timeout_ms)
    return _with_java_tail(config, props)


def streams_settings(config: MemberConfig, state_dir: str) -> dict[str, str]:
    """Kafka Streams properties of a Streams instance (``testbed.members.java.streams``): the run's, the spec's
    fields, then its ``client_config``. Under the streams protocol the standby replicas are the group's
    (``streams.num.standby.replicas``, set by the scenario runner), and the client's setting is ignored."""
    spec = config.spec
    streams = spec.streams
    assert streams is not None
    props = {
        "application.id": config.group_id,
        "bootstrap.servers": config.bootstrap_servers,
        "client.id": config.member_id,
        "state.dir": state_dir,
        "processing.guarantee": streams_guarantee(streams.processing_guarantee, spec.java_version),
    }
    if spec.group_protocol == "streams":
        props["group.protocol"] = "streams"
    else:
        props["num.standby.replicas"] = str(streams.num_standby_replicas)
        if spec.session_timeout_ms is not None:
            props["session.timeout.ms"] = str(spec.session_timeout_ms)
    return _with_java_tail(config, props)


def streams_guarantee(guarantee: str, version: str) -> str:
    """The spec's processing guarantee as kafka-streams ``version`` names it."""
    if guarantee == "exactly_once_v2" and _version_tuple(version) < EOS_V2_NAME_SINCE:
        return "exactly_once_beta"
    return guarantee


def _with_java_tail(config: MemberConfig, props: dict[str, str]) -> dict[str, str]:
    """What every Java client's properties end with: the poll interval, the static member's id, then the spec's
    ``client_config`` on top."""
    spec = config.spec
    if spec.max_poll_interval_ms is not None:
        props["max.poll.interval.ms"] = str(spec.max_poll_interval_ms)
    if config.group_instance_id:
        props["group.instance.id"] = config.group_instance_id
    return {**props, **{key: java_value(value) for key, value in spec.client_config.items()}}


def java_value(value: str | int | float | bool) -> str:
    """A value as a Java properties file holds it: booleans as Kafka's ConfigDef parses them (lowercase)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def properties_text(props: dict[str, str]) -> str:
    """A Java properties file of these settings, each key and value escaped as ``Properties.load`` reads them."""
    return "".join(f"{_escaped(k, key=True)}={_escaped(v, key=False)}\n" for k, v in props.items())


def _escaped(text: str, *, key: bool) -> str:
    # Properties.load treats '\' as an escape and '#'/'!' opening a line as a comment; in a key, '=', ':' and
    # white space end it. Written as escapes, a value such as a JAAS config or a Windows path arrives whole.
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if key:
        out = out.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
    elif out.startswith(" "):
        out = "\\" + out  # leading white space of a value is otherwise dropped
    if out.startswith(("#", "!")):
        out = "\\" + out
    # VerifiableConsumer reads the file as ISO-8859-1 (Properties.load(InputStream)): anything beyond ASCII as
    # \uXXXX escapes of its UTF-16 code units, as Java writes them.
    return "".join(c if ord(c) < 0x7F else _unicode_escape(c) for c in out)


def _unicode_escape(char: str) -> str:
    units = char.encode("utf-16-be")
    return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'big'):04x}" for i in range(0, len(units), 2))


__all__ = ["aiokafka_settings", "confluent_settings", "java_settings", "java_value", "kafka_python_settings", "properties_text",
           "streams_settings"]

"""The assignor classes a Java member's consumer is given, by the names scenarios use, and the settings the seed
assignors in Java read: what a member's settings are made of, apart from the translation of its output (a member's
settings are made where the history's event models are not needed: ``testbed validate``)."""

from __future__ import annotations

from ..spec import JAVA_SEED_ASSIGNORS, MemberSpec

JAVA_ASSIGNOR_CLASSES = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
    # the seed assignors in Java (testbed/members/java/src/assignors) are named by their class
    **{name: name for name in JAVA_SEED_ASSIGNORS},
}
# The consumer setting the seed assignors in Java read the member's slot from (SlotPriorityFailoverAssignor:
# priority = -slot, as the kafka-python adapter's testbed_member_slot).
JAVA_SLOT_PROPERTY = "testbed.member.slot"


def seed_assignor_properties(spec: MemberSpec, slot: int) -> dict[str, str]:
    """Consumer settings a Java member needs for the seed assignors it lists (none for the built-in ones); the
    KafkaConsumer hands its settings to each assignor's configure()."""
    return {JAVA_SLOT_PROPERTY: str(slot)} if any(a in JAVA_SEED_ASSIGNORS for a in spec.assignors) else {}

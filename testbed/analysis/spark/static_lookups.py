"""The JVM classes PySpark calls static methods of on every column function, looked up once per JVM.

``F.col("x")`` costs PySpark three py4j round trips: one resolves ``org.apache.spark.sql.functions`` (a class
lookup through the gateway's imports, failing on several packages first), one resolves its method ``col``, one
calls it; ``PythonUtils.toSeq`` under every ``select`` and ``groupBy`` the same. Only the call changes from one use
to the next. A small run's analysis made about 1,800 such lookups, a quarter of its py4j round trips and about a
tenth of its time (docs/figures.md). Here the classes are resolved once and keep the static methods (and nested classes) they
resolved; a static field is read anew every time, as py4j does.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView

# Looked up as attributes of the gateway's JVM view (``sc._jvm``) by PySpark's column functions and helpers.
CLASSES = ("org.apache.spark.sql.functions", "functions", "PythonUtils", "PythonSQLUtils")


class _KeptMembers(JavaClass):
    """A JVM class whose static methods and nested classes, once resolved, are kept."""

    def __getattr__(self, name: str) -> Any:
        found = super().__getattr__(name)
        if isinstance(found, (JavaMember, JavaClass)):  # the same on every lookup; a field's value is not
            self.__dict__[name] = found
        return found


def keep_static_lookups(jvm: JVMView) -> None:
    """Resolve :data:`CLASSES` once on ``jvm`` (idempotent: a view already holding them is left as it is)."""
    for name in CLASSES:
        if name not in vars(jvm):
            resolved = getattr(jvm, name)
            vars(jvm)[name] = _KeptMembers(resolved._fqn, resolved._gateway_client)

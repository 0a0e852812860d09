"""Instrumentation of a user's own consumer program, loaded into its interpreter before its first line.

Like ``opentelemetry-instrument``: ``testbed.instrument.launch.instrumented_env`` puts ``site/`` (a
``sitecustomize``) and the project root first on the program's ``PYTHONPATH`` and names a JSON config in
``TESTBED_INSTRUMENT``; the program's Python then loads ``testbed.instrument.hooks``, which patches
``confluent_kafka.Consumer`` and ``kafka.KafkaConsumer`` as the program imports them, so the program's
consumer writes the member's history exactly as testbed's runners do (docs/history.md, "Instrumented
programs"). The program's callbacks still run.

Everything here but ``launch`` runs in the program's interpreter, with the program's dependencies: it uses
only the standard library and the client the program imported, and parses as Python 3.8.

A program may say itself when records are processed (otherwise: when it next asks for records, commits or
closes)::

    from testbed.instrument import processed
    processed(msg)  # a confluent Message, a kafka-python ConsumerRecord, a list of them, or poll()'s dict

Outside the instrumentation (no ``TESTBED_INSTRUMENT``) ``processed`` does nothing.
"""

from .hooks import processed

__all__ = ["processed"]

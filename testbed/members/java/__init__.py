"""The java family's runners (declared in ``testbed.clients.java``): plain Python driving a JVM. ``member`` runs
kafka-tools' VerifiableConsumer, ``host`` many KafkaConsumers in one JVM, ``share`` a KafkaShareConsumer,
``streams`` testbed's own Kafka Streams application; ``jvm`` is the read loop they share and ``verifiable`` the
translation of VerifiableConsumer's lines. ``src/`` holds the Java programs, compiled against the member's Kafka
version (``testbed.members.envs``). Import nothing here."""

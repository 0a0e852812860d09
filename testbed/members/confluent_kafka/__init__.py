"""The confluent-kafka family's runners (declared in ``testbed.clients.confluent_kafka``): ``member`` (a Consumer)
and ``share`` (a ShareConsumer). Run as ``python -m`` in the member's own virtualenv; import nothing here."""

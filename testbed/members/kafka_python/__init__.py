"""The kafka-python family's runner (declared in ``testbed.clients.kafka_python``): ``member`` (a KafkaConsumer).
Run as ``python -m`` in the member's own virtualenv; import nothing here."""

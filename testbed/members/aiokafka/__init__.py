"""The aiokafka family's runner (declared in ``testbed.clients.aiokafka``): ``member`` (an AIOKafkaConsumer on an
event loop of its own). Run as ``python -m`` in the member's own virtualenv; import nothing here."""

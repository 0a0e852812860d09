"""The locustfile that LoadGenerator passes to ``locust -f``; parameters come from the environment."""

from testbed.load.producer_user import KafkaProducerUser  # noqa: F401 - Locust collects it from here

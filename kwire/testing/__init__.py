"""kwire in users' tests: an in-process or subprocess broker on a free loopback port, a
testcontainers-shaped ``KafkaContainer``, fault injection, and a pytest plugin
(``kwire.testing.pytest_plugin``, loaded through the ``pytest11`` entry point).

Importing this package is cheap: the broker itself loads when one starts.
"""
from kwire.testing.broker import Broker, free_port

__all__ = ["Broker", "KafkaContainer", "Faults", "free_port"]


def __getattr__(name):
    if name == "KafkaContainer":
        from kwire.testing.container import KafkaContainer  # noqa: PLC0415 - start-up time (module doc)

        return KafkaContainer
    if name == "Faults":
        from kwire.testing.faults import Faults  # noqa: PLC0415 - start-up time (module doc)

        return Faults
    raise AttributeError(name)

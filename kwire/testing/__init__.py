"""kwire in users' tests: an in-process or subprocess broker on a free loopback port."""
from kwire.testing.broker import Broker, free_port

__all__ = ["Broker", "free_port"]

"""kwire: a Kafka broker in Python on Trio."""

__version__ = "0.1.0"

"""Client adapters: one per stock Kafka client. ``ADAPTERS`` maps the row name to a factory, or to the
reason the client is not available here (the suite then skips that client's rows with the reason)."""
from __future__ import annotations

from typing import Callable

from .base import Acked, Client, GroupMember, Got, KafkaOpError, Rec, Unsupported  # noqa: F401

CLIENT_NAMES = ["confluent-kafka", "kafka-python", "aiokafka", "kcat", "java"]


def factory(name: str) -> Callable[[str], Client] | str:
    """The adapter class for ``name``, or a string saying why it is unavailable."""
    try:
        if name == "confluent-kafka":
            from .confluent import ConfluentClient
            return ConfluentClient
        if name == "kafka-python":
            from .kafka_python import KafkaPythonClient
            return KafkaPythonClient
        if name == "aiokafka":
            from .aiokafka_ import AiokafkaClient
            return AiokafkaClient
        if name == "kcat":
            from .kcat import KCAT, KcatClient
            if not KCAT:
                return "kcat is not installed (apt-get install kcat)"
            return KcatClient
        if name == "java":
            # no ImportError path: a missing JDK or jar (make kafka) makes the rows ERROR (JavaClient raises)
            from .java import JavaClient
            return JavaClient
    except ImportError as exc:
        return f"{name} is not installed: {exc}"
    raise KeyError(name)

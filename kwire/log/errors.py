"""Storage-layer exceptions. Each carries the Kafka error code the edge answers with."""
from __future__ import annotations

from kwire.errors import CorruptRecordBatch, CrcMismatch, ErrorCode, KafkaError

__all__ = [
    "CorruptRecordBatch",
    "CrcMismatch",
    "MessageTooLarge",
    "InvalidRecordError",
    "OffsetOutOfRange",
    "KafkaStorageError",
    "CorruptIndex",
    "TooManyOpenFiles",
]


class MessageTooLarge(KafkaError):
    """A record batch is larger than max.message.bytes (Kafka's RecordTooLargeException)."""

    code = ErrorCode.MESSAGE_TOO_LARGE


class InvalidRecordError(KafkaError):
    """A batch that is well formed but not acceptable: wrong magic, record count that does
    not match the offset deltas (Kafka's InvalidRecordException)."""

    code = ErrorCode.INVALID_RECORD


class OffsetOutOfRange(KafkaError):
    """An offset below the log start offset or above the log end offset."""

    code = ErrorCode.OFFSET_OUT_OF_RANGE


class KafkaStorageError(KafkaError):
    """The log directory cannot be used (I/O failure, closed log)."""

    code = ErrorCode.KAFKA_STORAGE_ERROR


class CorruptIndex(KafkaStorageError):
    """An index file fails its sanity check; internal: the index is rebuilt, never surfaced."""


class TooManyOpenFiles(KafkaError):
    """The process ran out of file descriptors (EMFILE/ENFILE, kwire.fds) during a log
    operation. Not a disk failure: the log dir stays online and the request is answered
    REPLICA_NOT_AVAILABLE, which every client retries quietly (Java's consumer and producer
    as an InvalidMetadataException, librdkafka's fetcher with a backoff). Kafka would take
    the dir offline (KAFKA_STORAGE_ERROR until a restart); kwire keeps serving."""

    code = ErrorCode.REPLICA_NOT_AVAILABLE

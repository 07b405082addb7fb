"""Storage: segmented partition logs (synchronous file I/O; no Trio inside)."""
from kwire.log.append_result import AppendResult
from kwire.log.config import LogConfig
from kwire.log.errors import (
    CorruptRecordBatch,
    CrcMismatch,
    InvalidRecordError,
    KafkaStorageError,
    MessageTooLarge,
    OffsetOutOfRange,
)
from kwire.log.manager import LogManager
from kwire.log.partition_log import FetchData, PartitionLog
from kwire.log.regions import FileRegion, SegmentFile

__all__ = [
    "AppendResult",
    "CorruptRecordBatch",
    "CrcMismatch",
    "FetchData",
    "FileRegion",
    "InvalidRecordError",
    "KafkaStorageError",
    "LogConfig",
    "LogManager",
    "MessageTooLarge",
    "OffsetOutOfRange",
    "PartitionLog",
    "SegmentFile",
]

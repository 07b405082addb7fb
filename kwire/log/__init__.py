"""Storage: segmented partition logs (synchronous file I/O; no Trio inside).

The names below are imported on first use (PEP 562), not with the package: a process that only
needs the C record walk ``kwire.log._walk`` (the Spark source's Python workers, each a fresh
interpreter) would otherwise pay for the whole log manager's import, 0.1-0.6 s, per process.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_WHERE = {
    "AppendResult": "append_result",
    "LogConfig": "config",
    "CorruptRecordBatch": "errors",
    "CrcMismatch": "errors",
    "InvalidRecordError": "errors",
    "KafkaStorageError": "errors",
    "MessageTooLarge": "errors",
    "OffsetOutOfRange": "errors",
    "LogManager": "manager",
    "FetchData": "partition_log",
    "PartitionLog": "partition_log",
    "FileRegion": "regions",
    "SegmentFile": "regions",
}

__all__ = sorted(_WHERE)

if TYPE_CHECKING:
    from kwire.log.append_result import AppendResult
    from kwire.log.config import LogConfig
    from kwire.log.errors import (CorruptRecordBatch, CrcMismatch, InvalidRecordError, KafkaStorageError,
                                  MessageTooLarge, OffsetOutOfRange)
    from kwire.log.manager import LogManager
    from kwire.log.partition_log import FetchData, PartitionLog
    from kwire.log.regions import FileRegion, SegmentFile


def __getattr__(name: str):
    mod = _WHERE.get(name)
    if mod is None:   # AttributeError lets ``from kwire.log import segment`` import the submodule
        raise AttributeError(f"module 'kwire.log' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kwire.log.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))

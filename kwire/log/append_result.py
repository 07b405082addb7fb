"""What one append to a partition's log wrote (Kafka's LogAppendInfo, the part a writer reads):
its own module so that the producer-state step (kwire.log.producer_log), which answers a
retried batch with its original offsets, and the log (kwire.log.partition_log) both build it
without importing each other."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int  # offset of the first record appended (-1 if nothing was appended)
    last_offset: int
    log_append_time_ms: int  # -1 with CreateTime
    log_start_offset: int

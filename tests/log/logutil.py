"""Helpers for the log tests: deterministic batches and reading a log back batch by batch."""
from __future__ import annotations

import glob
import os

from kwire.codec.records import RecordBatch, build_batch, iter_batches, set_base_offset


def make_batch(n_records: int = 1, value_size: int = 10, ts: int = 1_000, seed: int = 0) -> bytes:
    recs = []
    for i in range(n_records):
        value = (f"{seed}:{i}:".encode() * (value_size // 4 + 1))[:value_size]
        recs.append((f"k{seed}".encode(), value, [], ts + i))
    return build_batch(recs)


def stored(batch: bytes, base_offset: int) -> bytes:
    """The batch as the log stores it at ``base_offset`` (CreateTime, no leader epoch)."""
    buf = bytearray(batch)
    set_base_offset(buf, 0, base_offset)
    return bytes(buf)


def read_all(log, start: int | None = None) -> list[bytes]:
    """Every batch from ``start`` (default: log start offset) to the log end offset."""
    out = []
    offset = log.log_start_offset if start is None else start
    while offset < log.log_end_offset:
        data = bytes(log.read(offset, 1 << 20))
        assert data, f"no data at {offset} < {log.log_end_offset}"
        for b in iter_batches(data):
            b.validate_crc()
            out.append(b.bytes())
            offset = b.next_offset
    return out


def batch_map(log) -> dict[int, bytes]:
    return {RecordBatch(b).base_offset: b for b in read_all(log)}


def seg_files(dir: str, ext: str) -> list[str]:
    return sorted(glob.glob(os.path.join(dir, f"*.{ext}")))

"""Offset checkpoint files, in Kafka's format (recovery-point-offset-checkpoint,
log-start-offset-checkpoint)::

    0                      <- version
    2                      <- number of entries
    my-topic 0 1234        <- topic partition offset
    my-topic 1 99

Written atomically: a temporary file, fsync, rename, fsync of the directory.
"""
from __future__ import annotations

from kwire.atomic import write_atomic
from kwire.fds import read_file

VERSION = 0
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"   # the log cleaner's first dirty offsets (Kafka's name)


def write_checkpoint(path: str, offsets: dict[tuple[str, int], int], sync: bool = True) -> None:
    lines = [str(VERSION), str(len(offsets))]
    for (topic, partition), offset in sorted(offsets.items()):
        lines.append(f"{topic} {partition} {offset}")
    data = ("\n".join(lines) + "\n").encode()
    write_atomic(path, data, sync=sync)


def read_checkpoint(path: str) -> dict[tuple[str, int], int] | None:
    """The offsets in ``path``; None when the file is missing or malformed (then callers
    fall back to full recovery, never to trusting a half-written file)."""
    try:
        text = read_file(path).decode("utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        if len(lines) < 2 or int(lines[0]) != VERSION:
            return None
        count = int(lines[1])
        if count != len(lines) - 2:
            return None
        out: dict[tuple[str, int], int] = {}
        for line in lines[2:]:
            topic, partition, offset = line.split(" ")
            out[(topic, int(partition))] = int(offset)
        return out
    except ValueError:
        return None

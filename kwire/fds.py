"""File descriptors as a budget, not a disk property.

Running out of descriptors (EMFILE: the process's RLIMIT_NOFILE; ENFILE: the system's
table) says nothing about the disk under a log dir, so it must never take a log dir
offline as EIO or ENOSPC do (kwire.log.dir_failure). Every file the log opens goes through
``open_fd``: on EMFILE/ENFILE it asks the registered caches (the segment open-file LRU,
kwire.log.regions.OPEN_FILES) to close what they hold idle and tries once more; if the
process is still out of descriptors the OSError goes up and ``out_of_descriptors`` lets the
storage layer answer a retriable error instead of a storage failure.

Apache Kafka has no equivalent (its LogDirFailureChannel takes a dir offline on any
IOException, "Too many open files" included); kwire differs on purpose, as a broker with
thousands of partitions under the common 1,024 soft limit must keep serving.
"""
from __future__ import annotations

import errno
import os
from typing import Callable

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DESCRIPTOR_ERRNOS = (errno.EMFILE, errno.ENFILE)

_shedders: list[Callable[[], int]] = []


def register_shedder(fn: Callable[[], int]) -> None:
    """``fn()`` closes idle descriptors a cache holds (returns how many it let go)."""
    _shedders.append(fn)


def shed() -> int:
    return sum(fn() for fn in _shedders)


def open_fd(path: str, flags: int, mode: int = 0o644) -> int:
    """``os.open`` with O_CLOEXEC; on EMFILE/ENFILE the caches shed their idle files and it
    is tried once more (raises the OSError if that fails too)."""
    try:
        return os.open(path, flags | _O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno not in DESCRIPTOR_ERRNOS:
            raise
    shed()
    return os.open(path, flags | _O_CLOEXEC, mode)


def read_file(path: str) -> bytes:
    """The whole content of ``path`` through ``open_fd`` (FileNotFoundError when missing)."""
    with os.fdopen(open_fd(path, os.O_RDONLY), "rb") as f:
        return f.read()


def out_of_descriptors(exc: BaseException | None) -> bool:
    """True when ``exc`` (or an error it was raised from) is EMFILE/ENFILE."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, OSError) and exc.errno in DESCRIPTOR_ERRNOS:
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False

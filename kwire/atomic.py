"""One way to replace a small file durably: write a temporary file beside it, fsync it,
rename it over the target, fsync the directory. Every checkpoint, snapshot and properties
file goes through here, so a crash leaves either the old file or the new one, never half.
"""
from __future__ import annotations

import os
import threading

from kwire.fds import open_fd

_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_for(path: str) -> threading.Lock:
    """Writers of one file (e.g. a retention pass and a DeleteRecords, each in a worker
    thread) take turns: they share the temporary file's name."""
    with _locks_guard:
        lock = _locks.get(path)
        if lock is None:
            lock = _locks[path] = threading.Lock()
        return lock


def fsync_dir(path: str) -> None:
    """fsync a directory so a rename or unlink in it is durable (best effort: some file
    systems refuse to fsync directories)."""
    try:
        fd = open_fd(path or ".", os.O_RDONLY | _O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: str, data: bytes | str, *, sync: bool = True, sync_dir: bool = True) -> None:
    """Replace ``path`` with ``data``; with ``sync`` the file and its directory are fsynced
    (without it, the rename is still atomic but not durable across a power loss). With
    ``sync_dir=False`` the directory fsync is the caller's (one for several files)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    with _lock_for(os.path.abspath(path)):
        _write(path, data, sync, sync_dir)


def _write(path: str, data: bytes, sync: bool, sync_dir: bool = True) -> None:
    tmp = path + ".tmp"
    fd = open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    os.replace(tmp, path)
    if sync and sync_dir:
        fsync_dir(os.path.dirname(path))

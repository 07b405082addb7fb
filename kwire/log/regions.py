"""Open segment files, and byte ranges of them that the server sends without copying.

File descriptors are a bounded resource (RLIMIT_NOFILE, shared with client connections), so
a broker with thousands of partitions cannot keep every segment open as Kafka does with its
mmaps. ``OPEN_FILES`` is one process-wide LRU of open segment files: a segment asks it for
its file on each use (opened on demand), and the least recently used file is dropped when
the cache is full. Index files are never held open (kwire/log/index.py keeps indexes in
memory and opens the files only to write them).

Descriptor budget: the cache holds at most ``capacity`` files (a quarter of the soft limit),
and files that FileRegions keep open past their eviction (a Fetch being answered) count
too: a read hands out a region (sendfile, no copy) only while fewer than
``OPEN_FILES.pin_budget`` regions (half the capacity) are alive; past it the read copies
its bytes at once (``region_or_bytes``). So the open segment files (``SegmentFile.live``)
stay under capacity + pin budget, 3/8 of the soft limit, whatever a Fetch spans: a Fetch
over 5,000 partitions no longer holds one descriptor per partition until it is sent. Every
open goes through kwire.fds.open_fd, which sheds the idle cached files and retries on EMFILE.

Eviction only drops the cache's reference. A ``SegmentFile`` closes its descriptor when the
last reference goes (CPython reference counting), so a ``FileRegion`` of a Fetch being
answered, or a reader holding the object, keeps reading the same file even if the cache
evicted it meanwhile (or retention unlinked it). Rule for callers: never keep a bare fd
number across anything that may open files; keep the ``SegmentFile`` object (or call its
methods) instead.

Also here: ``write_all`` (a complete pwritev) and segment file deletion that a retention
pass defers to a worker thread (``deferred_deletes``).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import contextmanager

from kwire.fds import open_fd, register_shedder

_IOV_MAX = 1024


class SegmentFile:
    """An open segment file descriptor. Closed explicitly or when the last reference goes
    away, so a segment deleted by retention while a fetch still holds a region of it stays
    readable: the unlinked inode lives until its fd is closed."""

    __slots__ = ("fd", "path", "__weakref__")

    live = 0   # segment files open now in the process (cached or held by regions/readers)
    _live_lock = threading.Lock()

    def __init__(self, path: str, flags: int = os.O_RDONLY, mode: int = 0o644):
        self.path = path
        self.fd = -1
        fd = open_fd(path, flags, mode)
        with SegmentFile._live_lock:
            SegmentFile.live += 1
        self.fd = fd

    def fileno(self) -> int:
        if self.fd < 0:
            raise ValueError(f"I/O on closed segment file {self.path}")
        return self.fd

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def pread(self, length: int, position: int) -> bytes:
        return os.pread(self.fileno(), length, position)

    def truncate(self, size: int) -> None:
        os.ftruncate(self.fileno(), size)

    def datasync(self) -> None:
        os.fdatasync(self.fileno())

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            with SegmentFile._live_lock:
                SegmentFile.live -= 1
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"SegmentFile({self.path!r}, fd={self.fd})"


def write_all(f: SegmentFile, pieces: list, position: int) -> int:
    """pwritev ``pieces`` at ``position`` completely; returns bytes written."""
    fd = f.fileno()
    total = 0
    i = 0
    n = len(pieces)
    while i < n:
        chunk = pieces[i : i + _IOV_MAX]
        want = sum(len(p) for p in chunk)
        done = os.pwritev(fd, chunk, position)
        if done < want:  # short write (rare for regular files): finish piece by piece
            rest = b"".join(bytes(p) for p in chunk)
            view = memoryview(rest)[done:]
            pos = position + done
            while view:
                w = os.pwrite(fd, view, pos)
                if w <= 0:
                    raise OSError("pwrite wrote nothing")
                view = view[w:]
                pos += w
        position += want
        total += want
        i += _IOV_MAX
    return total


_deferred = threading.local()


@contextmanager
def deferred_deletes():
    """Within this block (on this thread), ``LogSegment.delete`` forgets the segment's open
    file but leaves its files on disk and adds their paths to the list this yields, for a
    worker thread to unlink (a retention pass off the event loop)."""
    outer = getattr(_deferred, "paths", None)
    paths: list[str] = []
    _deferred.paths = paths
    try:
        yield paths
    finally:
        _deferred.paths = outer


def delete_files(paths) -> None:
    """Unlink ``paths`` now, or, inside ``deferred_deletes`` on this thread, leave that to
    its caller."""
    deferred = getattr(_deferred, "paths", None)
    if deferred is not None:
        deferred.extend(paths)
    else:
        unlink_all(paths)


def unlink_all(paths) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def default_capacity(soft_limit: int) -> int:
    """How many segment files to keep open under a soft RLIMIT_NOFILE: a quarter of it (the
    rest is for connections, the Raft log, index and checkpoint writes, sockets of
    replication), at least 32 and at most 4,096."""
    if soft_limit <= 0:
        return 4096
    return max(32, min(soft_limit // 4, 4096))


def _soft_nofile() -> int:
    try:
        import resource  # noqa: PLC0415 - not on every platform
    except ImportError:
        return -1
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return -1 if soft == resource.RLIM_INFINITY else soft


class OpenFiles:
    """A bounded LRU of open segment files, keyed by their owner (a LogSegment). Thread-safe
    (the log is driven by one thread, but several in-process brokers may share the cache).

    The owner caches its file in its ``_file`` attribute, set here when the file is opened
    and cleared when it is evicted or discarded, so a hit costs the owner an attribute read
    and a ``touch`` (no lock): ``f = owner._file; if f is not None: touch(owner)``."""

    def __init__(self, capacity: int):
        self.capacity = max(1, capacity)
        self.pin_budget = max(1, self.capacity // 2)
        self._lru: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.opens = 0       # files opened (a reopen after eviction counts again)
        self.evictions = 0
        self._move_to_end = self._lru.move_to_end

    def touch(self, owner) -> None:
        """Mark ``owner``'s open file as just used (lock-free: one C call under the GIL)."""
        try:
            self._move_to_end(owner)
        except KeyError:  # evicted meanwhile by another thread: the caller still holds it
            pass

    def _evict_one(self, evicted: list) -> None:
        owner, f = self._lru.popitem(last=False)
        if getattr(owner, "_file", None) is f:
            owner._file = None
        evicted.append(f)
        self.evictions += 1

    def get(self, owner, path: str, flags: int = os.O_RDWR) -> SegmentFile:
        """``owner``'s open file, opening ``path`` if it is not open (may raise OSError)."""
        lru = self._lru
        with self._lock:
            f = lru.get(owner)
            if f is not None:
                lru.move_to_end(owner)
                owner._file = f
                return f
        f = SegmentFile(path, flags)
        evicted = []
        with self._lock:
            other = lru.get(owner)
            if other is not None:   # opened by another thread meanwhile: keep that one
                lru.move_to_end(owner)
                owner._file = other
                evicted.append(f)
                return other
            lru[owner] = f
            owner._file = f
            self.opens += 1
            while len(lru) > self.capacity:
                self._evict_one(evicted)
        del evicted  # outside the lock: closes each file nobody else holds
        return f

    def peek(self, owner) -> SegmentFile | None:
        """``owner``'s file if it is open now (no LRU update, never opens)."""
        return self._lru.get(owner)

    def discard(self, owner) -> None:
        """Forget ``owner``'s file (closed once no region holds it)."""
        with self._lock:
            f = self._lru.pop(owner, None)
            if f is not None and getattr(owner, "_file", None) is f:
                owner._file = None
        del f

    def may_pin(self) -> bool:
        """True while a read may hand out a region that keeps its file open (see the
        module doc: fewer than ``pin_budget`` regions alive)."""
        return FileRegion.alive < self.pin_budget

    def shed(self) -> int:
        """Drop every cached file (kwire.fds calls it on EMFILE): those no region or reader
        holds close now, the rest when released. Returns how many entries were dropped."""
        evicted = []
        with self._lock:
            while self._lru:
                self._evict_one(evicted)
        n = len(evicted)
        del evicted
        return n

    def resize(self, capacity: int) -> None:
        evicted = []
        with self._lock:
            self.capacity = max(1, capacity)
            self.pin_budget = max(1, self.capacity // 2)
            while len(self._lru) > self.capacity:
                self._evict_one(evicted)
        del evicted

    def __len__(self) -> int:
        return len(self._lru)

    def __repr__(self) -> str:
        return f"OpenFiles({len(self._lru)}/{self.capacity} open, {self.opens} opens, {self.evictions} evictions)"


OPEN_FILES = OpenFiles(default_capacity(_soft_nofile()))
register_shedder(OPEN_FILES.shed)


def region_or_bytes(file: SegmentFile, position: int, length: int):
    """What a read hands out: a FileRegion that keeps ``file`` open until it is sent
    (sendfile), or, once the open segment files reach the budget, the bytes read now."""
    pin = OPEN_FILES.may_pin()
    region = FileRegion(file, position, length)
    return region if pin else bytes(region)


class FileRegion:
    """``length`` bytes of ``file`` from ``position``: send with os.sendfile(sock, file.fileno(),
    position, length), or take ``bytes(region)`` (one os.pread). Holds ``file`` (a
    SegmentFile), so the descriptor stays open until the region is sent and dropped, even if
    the open-file cache evicted it meanwhile."""

    __slots__ = ("file", "position", "length")

    alive = 0   # regions in existence (each may keep its file open past an eviction)
    _alive_lock = threading.Lock()

    def __init__(self, file, position: int, length: int):
        self.file = file
        self.position = position
        self.length = length
        with FileRegion._alive_lock:
            FileRegion.alive += 1

    def __del__(self) -> None:
        with FileRegion._alive_lock:
            FileRegion.alive -= 1

    def fileno(self) -> int:
        f = self.file
        return f if isinstance(f, int) else f.fileno()

    def __len__(self) -> int:
        return self.length

    def __bytes__(self) -> bytes:
        fd = self.fileno()
        out = os.pread(fd, self.length, self.position)
        if len(out) < self.length:  # pread of a regular file is short only at EOF
            parts = [out]
            got = len(out)
            while got < self.length:
                more = os.pread(fd, self.length - got, self.position + got)
                if not more:
                    raise EOFError(
                        f"region {self.position}+{self.length} of {self.file!r}: file ends at "
                        f"{self.position + got}"
                    )
                parts.append(more)
                got += len(more)
            out = b"".join(parts)
        return out

    def __repr__(self) -> str:
        return f"FileRegion({self.file!r}, position={self.position}, length={self.length})"


def raise_open_file_limit() -> tuple[int, int] | None:
    """Raise the soft RLIMIT_NOFILE to the hard limit (as the JVM does for Kafka) and size
    ``OPEN_FILES`` from it. Returns (old soft, new soft), or None where there are no
    rlimits. A hard limit of 'unlimited' is capped where the OS caps it (Linux: nr_open)."""
    try:
        import resource  # noqa: PLC0415 - not on every platform
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new = hard
    if hard == resource.RLIM_INFINITY:
        try:
            with open("/proc/sys/fs/nr_open") as f:
                new = int(f.read())
        except (OSError, ValueError):
            new = 1 << 20
    if soft != resource.RLIM_INFINITY and new > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError):
            new = soft
    else:
        new = soft
    OPEN_FILES.resize(default_capacity(_soft_nofile()))
    return soft, new

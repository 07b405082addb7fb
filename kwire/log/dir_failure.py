"""LogDirFailureChannel: an I/O error takes its log dir offline (Kafka's LogDirFailureChannel).

An OSError (EIO, ENOSPC, EROFS, ...) while a partition log appends, reads, flushes, rolls
or deletes means the disk under its log dir can no longer be trusted. Kafka then stops using
the whole dir: every partition in it answers KAFKA_STORAGE_ERROR while the broker keeps
serving everything else. kwire does the same: the first failure is logged once, naming the
dir and the error; later ones in the same dir are not logged again. Nothing in an offline dir
is written again (no flush, checkpoint or clean-shutdown marker), so a restart on a healthy
disk recovers the logs from their last checkpoints, as after a crash.

The broker listens (``add_listener``): it stops the follower fetchers of the dir's
partitions and reports the dir to the active controller, which moves their leadership to
other ISR members and takes this broker out of their ISRs (Kafka's
ReplicaManager.handleLogDirFailure and BrokerLifecycleManager.propagateDirectoryFailure);
a broker whose every log dir has failed shuts down (Kafka's LogManager.handleLogDirFailure).

Running out of file descriptors (EMFILE/ENFILE) is not a disk failure (kwire.fds): it is
logged as a warning (at most every 10 s) and the dir stays online; the caller answers the
retriable TooManyOpenFiles.

Thread-safe: flushes run in worker threads and may report a failure; listeners are called
on the reporting thread, once per dir, outside the lock.
"""
from __future__ import annotations

import logging
import threading
import time

from kwire.fds import out_of_descriptors

from kwire.log.errors import KafkaStorageError

log = logging.getLogger("kwire.log")


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.offline_dirs: dict[str, str] = {}  # log dir -> the error that took it offline
        self._listeners: list = []               # fn(log_dir), called once per failed dir
        self.descriptor_errors = 0               # EMFILE/ENFILE seen (not failures)
        self._descriptor_logged = float("-inf")

    def add_listener(self, fn) -> None:
        """``fn(log_dir)`` is called (on any thread) when a dir goes offline."""
        self._listeners.append(fn)

    def is_offline(self, log_dir: str) -> bool:
        return log_dir in self.offline_dirs

    def maybe_add_offline_log_dir(self, log_dir: str, message: str, exc: BaseException | None = None) -> bool:
        """Take ``log_dir`` offline; returns True the first time (the time it is logged).
        Never for EMFILE/ENFILE: returns False and the dir stays online."""
        if out_of_descriptors(exc):
            self._out_of_descriptors(log_dir, message, exc)
            return False
        with self._lock:
            if log_dir in self.offline_dirs:
                return False
            self.offline_dirs[log_dir] = f"{message}: {exc}" if exc is not None else message
        log.error("log dir %s is offline after an I/O error (%s: %s); its partitions answer "
                  "KAFKA_STORAGE_ERROR until a restart on a healthy disk", log_dir, message, exc)
        for fn in list(self._listeners):
            fn(log_dir)
        return True

    def _out_of_descriptors(self, log_dir: str, message: str, exc: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self.descriptor_errors += 1
            if now - self._descriptor_logged < 10:
                return
            self._descriptor_logged = now
            count = self.descriptor_errors
        log.warning("out of file descriptors in log dir %s (%s: %s; %d times so far): answered as "
                    "retriable, the dir stays online; raise the open-file limit (ulimit -n)",
                    log_dir, message, exc, count)

    def error_for(self, log_dir: str, what: str) -> KafkaStorageError:
        reason = self.offline_dirs.get(log_dir, "I/O error")
        return KafkaStorageError(f"{what}: log dir {log_dir} is offline ({reason})")

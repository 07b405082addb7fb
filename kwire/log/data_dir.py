"""A broker's claim on its data dir, the way Kafka claims each log dir.

- ``.lock``: an exclusive flock held while the broker runs. A second broker on the same dir
  (another process, or another broker in this process) refuses to start, naming the holder
  (the lock file carries the holder's pid and node id; the kernel drops the lock when the
  process dies, so a SIGKILLed broker never leaves a stale claim).
- ``meta.properties``: written at first start (version, cluster.id, node.id) and checked at
  every later one: a node.id or cluster.id that disagrees with the config is refused with
  Kafka's wording, instead of registering a phantom broker or joining the wrong cluster.
"""
from __future__ import annotations

import fcntl
import os

from kwire.atomic import write_atomic
from kwire.errors import StartupError

LOCK_FILE = ".lock"
META_PROPERTIES = "meta.properties"


class DataDirLock:
    def __init__(self, data_dir: str, node_id: int):
        self.path = os.path.join(data_dir, LOCK_FILE)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            raise StartupError(f"data dir {data_dir} is in use by another kwire broker ({holder}); "
                               f"stop it or choose another --data-dir") from None
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, node {node_id}\n".encode(), 0)
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            os.close(self.fd)  # closing the only descriptor drops the flock
            self.fd = None


def read_properties_file(path: str) -> dict[str, str]:
    props: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and line[0] not in "#!" and "=" in line:
                k, v = line.split("=", 1)
                props[k.strip()] = v.strip()
    return props


def check_meta_properties(data_dir: str, node_id: int, configured_cluster_id: str | None,
                          new_cluster_id) -> str:
    """The data dir's cluster id: read from meta.properties and checked against the config,
    or (first start) ``configured_cluster_id`` / ``new_cluster_id()`` written there."""
    path = os.path.join(data_dir, META_PROPERTIES)
    if os.path.exists(path):
        props = read_properties_file(path)
        stored_node = props.get("node.id")
        if stored_node is not None and stored_node != str(node_id):
            raise StartupError(
                f"Stored node id {stored_node} doesn't match previous node id {node_id} in {path}. "
                f"If you moved your data, make sure your configured node id matches. If you intend "
                f"to create a new node, you should remove all data in your data directories.")
        stored_cluster = props.get("cluster.id")
        if stored_cluster and configured_cluster_id and stored_cluster != configured_cluster_id:
            raise StartupError(f"Invalid cluster.id in {path}. Expected {configured_cluster_id}, "
                               f"but read {stored_cluster}")
        if stored_cluster:
            return stored_cluster
    cid = configured_cluster_id or new_cluster_id()
    write_atomic(path, f"version=1\ncluster.id={cid}\nnode.id={node_id}\n")
    return cid

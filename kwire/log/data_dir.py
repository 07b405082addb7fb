"""A broker's claim on its data dir, the way Kafka claims each log dir.

- ``.lock``: an exclusive flock held while the broker runs. A second broker on the same dir
  (another process, or another broker in this process) refuses to start, naming the holder
  (the lock file carries the holder's pid and node id; the kernel drops the lock when the
  process dies, so a SIGKILLed broker never leaves a stale claim).
- ``meta.properties``: written at first start (version, cluster.id, node.id) and checked at
  every later one: a node.id or cluster.id that disagrees with the config is refused with
  Kafka's wording, instead of registering a phantom broker or joining the wrong cluster.
  Each log dir's meta.properties also holds its ``directory.id`` (KIP-858): the id a broker
  names the dir by when it reports it offline to the controller.
"""
from __future__ import annotations

import base64
import fcntl
import os
import uuid

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
    # with the log dir's directory.id (ensure_directory_id) in the same write: a first start
    # writes (and fsyncs) the file once, not twice
    write_atomic(path, f"version=1\ncluster.id={cid}\nnode.id={node_id}\n"
                       f"directory.id={_uuid_text(_new_directory_id())}\n")
    return cid


def _uuid_text(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def _text_uuid(text: str) -> uuid.UUID | None:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        return uuid.UUID(bytes=raw) if len(raw) == 16 else None
    except (ValueError, TypeError):
        return None


def _new_directory_id() -> uuid.UUID:
    """A random directory id, never one of the reserved ones (Kafka's DirectoryId: the first
    100 have the high half 0)."""
    new = uuid.uuid4()
    while new.int >> 64 == 0:
        new = uuid.uuid4()
    return new


def ensure_directory_id(log_dir: str, node_id: int, cluster_id: str) -> uuid.UUID:
    """The log dir's ``directory.id`` from its meta.properties, made (and written) when the
    file or the key is missing, as Kafka's storage format gives each log dir one."""
    path = os.path.join(log_dir, META_PROPERTIES)
    props = read_properties_file(path) if os.path.exists(path) else {}
    got = _text_uuid(props.get("directory.id", ""))
    if got is not None:
        return got
    new = _new_directory_id()
    props.setdefault("version", "1")
    props.setdefault("cluster.id", cluster_id)
    props.setdefault("node.id", str(node_id))
    props["directory.id"] = _uuid_text(new)
    write_atomic(path, "".join(f"{k}={v}\n" for k, v in props.items()))
    return new

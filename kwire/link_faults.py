"""Network partitions between brokers on one machine, for tests: the nodes this node cannot reach.

The hidden broker key ``kwire.test.unreachable.nodes.file`` names a file of node ids (separated
by commas or white space; a missing or empty file: none). Every inter-broker path honours it,
in both directions, as a cut cable would:

- the Raft peer links (kwire.raft.transport): no connection to such a node is opened, an open
  one is closed before the next request goes out or a response is taken in; on the controller
  listener (kwire.metadata.controller_server) a request arriving from it (client id
  ``kwire-raft-<id>``) closes its inbound connection;
- the replica fetchers (kwire.replication.fetcher): no fetch from a leader on such a node;
- the client listener: a replica Fetch from such a node (``replica_id``) closes its
  connection (installed as the server's ``fault_hook``).

A test writes the file (atomically) and the nodes notice within ``RECHECK_S``. Unset, the key
costs nothing: every caller holds ``None`` and tests ``is not None`` first.
"""
from __future__ import annotations

import logging
import os
import re
import time

log = logging.getLogger("kwire.link_faults")

KEY = "kwire.test.unreachable.nodes.file"
RECHECK_S = 0.05
RAFT_CLIENT_PREFIX = "kwire-raft-"


class UnreachableNodes:
    """The node ids listed in one file, re-read when the file changes."""

    def __init__(self, path: str, node_id: int = -1):
        self.path = path
        self.node_id = node_id
        self._ids: frozenset[int] = frozenset()
        self._stamp: tuple | None = None
        self._checked = float("-inf")

    def ids(self) -> frozenset[int]:
        now = time.monotonic()
        if now - self._checked < RECHECK_S:
            return self._ids
        self._checked = now
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        if stamp != self._stamp:
            self._stamp = stamp
            ids: frozenset[int] = frozenset()
            if stamp is not None:
                try:
                    with open(self.path, encoding="ascii") as f:
                        ids = frozenset(int(x) for x in re.split(r"[\s,]+", f.read()) if x)
                except (OSError, ValueError) as exc:
                    log.warning("node %d: unreadable %s %s (%s): keeping %s", self.node_id, KEY, self.path, exc,
                                sorted(self._ids))
                    ids = self._ids
            if ids != self._ids:
                log.warning("node %d: fault injection: nodes %s now unreachable", self.node_id, sorted(ids))
            self._ids = ids
        return self._ids

    def blocks(self, node_id: int) -> bool:
        return node_id in self.ids()

    def blocks_client(self, client_id: str | None) -> bool:
        """A request from a Raft peer link (client id ``kwire-raft-<id>``) of an unreachable node."""
        if not client_id or not client_id.startswith(RAFT_CLIENT_PREFIX):
            return False
        try:
            return self.blocks(int(client_id[len(RAFT_CLIENT_PREFIX):]))
        except ValueError:
            return False

    async def server_hook(self, ctx, body):
        """``KafkaServer.fault_hook``: drop the connection of a replica Fetch from an unreachable node."""
        if ctx.api.name == "Fetch":
            replica_id = body.replica_state.replica_id if ctx.version >= 15 else body.replica_id
            if replica_id >= 0 and self.blocks(replica_id):
                return "drop"
        return None


def from_config(config, node_id: int = -1) -> UnreachableNodes | None:
    """The node's UnreachableNodes, or None when the key is unset (the normal case)."""
    try:
        path = config.get(KEY)
    except KeyError:
        return None
    return UnreachableNodes(str(path), node_id) if path else None

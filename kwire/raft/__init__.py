"""KRaft-style quorum, consensus only: a pure Raft state machine (``core``) plus its data
types, and the edge that runs it (``driver``, ``storage``, ``transport``).

The core does no I/O and reads no clock: the driver feeds it messages and time, and carries
out what :meth:`RaftCore.ready` asks for (persist, send, apply). What the metadata log means
and the controller that serves it live above, in kwire.metadata (the controller listener:
kwire.metadata.controller_server); what raft needs from above (how entries apply, the peer
link) is passed in at construction. No module here imports metadata, handlers, broker,
groups, replication, quota, security, transactions or share (tests/edge/test_raft_layer.py).
"""
from kwire.raft.core import NotLeader, RaftConfig, RaftCore, Ready, Role
from kwire.raft.log import Entry, OffsetAndEpoch, RaftLog
from kwire.raft.quorum_state import QuorumState
from kwire.raft.snapshot import Snapshot

__all__ = ["Entry", "NotLeader", "OffsetAndEpoch", "QuorumState", "RaftConfig", "RaftCore", "RaftLog",
           "Ready", "Role", "Snapshot"]

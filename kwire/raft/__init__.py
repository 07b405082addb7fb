"""KRaft-style quorum: a pure Raft state machine (``core``) plus its data types.

Nothing in this package does I/O or reads a clock: a driver feeds it messages and time, and
carries out what :meth:`RaftCore.ready` asks for (persist, send, apply).
"""
from kwire.raft.core import NotLeader, RaftConfig, RaftCore, Ready, Role
from kwire.raft.log import Entry, OffsetAndEpoch, RaftLog
from kwire.raft.quorum_state import QuorumState
from kwire.raft.snapshot import Snapshot

__all__ = ["Entry", "NotLeader", "OffsetAndEpoch", "QuorumState", "RaftConfig", "RaftCore", "RaftLog",
           "Ready", "Role", "Snapshot"]

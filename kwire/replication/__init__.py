"""Replication: the replica manager (roles, leader epoch, high watermark, ISR, waiters) of the
partitions this broker hosts (replica_manager, partition), the followers' side of a replica
fetch (follower) and its Trio edge (fetcher), and the ISR changes sent to the controller (isr).
Every writer appends through ReplicaManager.append and awaits its AppendOutcome."""
from kwire.replication.replica_manager import AppendOutcome, LogReadResult, LogSync, ReplicaManager, Transition

__all__ = ["AppendOutcome", "LogReadResult", "LogSync", "ReplicaManager", "Transition"]

"""Replication: the replica manager (roles, leader epoch, high watermark, ISR, waiters) of the
partitions this broker hosts (replica_manager, partition), the followers' side of a replica
fetch (follower) and its Trio edge (fetcher), and the ISR changes sent to the controller (isr)."""
from kwire.replication.replica_manager import LogReadResult, LogSync, ReplicaManager, Transition

__all__ = ["LogReadResult", "LogSync", "ReplicaManager", "Transition"]

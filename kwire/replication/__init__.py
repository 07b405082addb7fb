"""Replication: the replica manager (leader epoch, high watermark, ISR, waiters) of the
partitions this broker hosts; follower fetchers join it when partitions get more copies."""
from kwire.replication.replica_manager import LogReadResult, LogSync, ReplicaManager

__all__ = ["LogReadResult", "LogSync", "ReplicaManager"]

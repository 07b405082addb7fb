"""Which handler module serves each API, and the versions it serves: the table ApiVersions,
the server's version check and the Kafka-version emulation (kwire.emulation) read without
importing a handler. It lives below kwire.handlers (it needs only the schema table,
kwire.codec.apis) so that the config layer, which emulation belongs to, does not import the
handlers package; kwire.handlers loads its modules from it."""
from __future__ import annotations

from kwire.codec.apis import Api, api as api_by

__all__ = ["SERVED", "INDEX", "parse_range", "served_ranges"]


# Which module serves each API, and the versions it serves where they are narrower than the
# schema's (kwire.codec.apis) range: "module" or "module:lo-hi". ApiVersions and the server's
# version check read this table, so a handler module is imported when its API is first
# requested, not at start (start-up time: a broker that never sees a share-group, ACL or
# reassignment request never loads those modules). ``@handles`` refuses a module whose
# versions disagree with this table, at import (tests/edge/test_handler_index.py imports all).
SERVED: dict[str, str] = {
    "Produce": "produce", "Fetch": "fetch", "ListOffsets": "list_offsets", "Metadata": "metadata",
    "OffsetCommit": "groups", "OffsetFetch": "groups", "FindCoordinator": "groups", "JoinGroup": "groups",
    "Heartbeat": "groups", "LeaveGroup": "groups", "SyncGroup": "groups", "DescribeGroups": "groups",
    "ListGroups": "groups", "DeleteGroups": "groups", "OffsetDelete": "groups",
    "SaslHandshake": "sasl", "SaslAuthenticate": "sasl", "ApiVersions": "api_versions",
    "CreateTopics": "topics", "DeleteTopics": "topics", "CreatePartitions": "topics",
    "DeleteRecords": "records_admin", "InitProducerId": "init_producer_id",
    "OffsetForLeaderEpoch": "offset_for_leader_epoch",
    "AddPartitionsToTxn": "transactions", "AddOffsetsToTxn": "transactions", "EndTxn": "transactions",
    "DescribeTransactions": "transactions", "ListTransactions": "transactions",
    "WriteTxnMarkers": "write_txn_markers", "TxnOffsetCommit": "txn_offset_commit",
    "DescribeAcls": "acls", "CreateAcls": "acls", "DeleteAcls": "acls",
    "DescribeConfigs": "configs", "AlterConfigs": "configs", "IncrementalAlterConfigs": "configs",
    "ListConfigResources": "configs",
    "AlterReplicaLogDirs": "alter_replica_log_dirs", "DescribeLogDirs": "describe_log_dirs",
    "ElectLeaders": "elect_leaders",
    "AlterPartitionReassignments": "reassignments", "ListPartitionReassignments": "reassignments",
    "DescribeClientQuotas": "client_quotas", "AlterClientQuotas": "client_quotas",
    "DescribeUserScramCredentials": "user_scram", "AlterUserScramCredentials": "user_scram",
    "DescribeQuorum": "describe_quorum", "DescribeCluster": "cluster", "UnregisterBroker": "cluster",
    "DescribeProducers": "describe_producers", "DescribeTopicPartitions": "describe_topic_partitions",
    "ConsumerGroupHeartbeat": "consumer_groups", "ConsumerGroupDescribe": "consumer_groups",
    "ShareGroupHeartbeat": "share_groups", "ShareGroupDescribe": "share_groups",
    "ShareFetch": "share_fetch", "ShareAcknowledge": "share_fetch",
    "InitializeShareGroupState": "share_state", "ReadShareGroupState": "share_state",
    "WriteShareGroupState": "share_state", "DeleteShareGroupState": "share_state",
    "ReadShareGroupStateSummary": "share_state",
    "DescribeShareGroupOffsets": "share_offsets", "AlterShareGroupOffsets": "share_offsets",
    "DeleteShareGroupOffsets": "share_offsets",
}


def parse_range(text: str, a: Api) -> tuple[int, int]:
    if not text:
        return a.min_version, a.max_version
    lo_s, _, hi_s = text.partition("-")
    return int(lo_s), int(hi_s or lo_s)


def _index() -> dict[int, tuple[str, int, int]]:
    out = {}
    for name, where in SERVED.items():
        a = api_by(name)
        module, _, versions = where.partition(":")
        out[a.key] = (module, *parse_range(versions, a))
    return out


INDEX: dict[int, tuple[str, int, int]] = _index()   # api key -> (module, min, max)


def served_ranges() -> dict[int, tuple[int, int]]:
    """{api key: (min, max)} kwire's handlers serve, without importing them."""
    return {k: (lo, hi) for k, (_m, lo, hi) in INDEX.items()}

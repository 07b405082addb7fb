"""One schema module per API key. Each module defines ``REQUEST`` and ``RESPONSE``
(:class:`kwire.codec.schema.Message`); adding an API means adding one module here and its row
in ``SCHEMAS``.

``APIS`` maps api key -> :class:`Api`. An Api's key, name and version range come from the
static ``SCHEMAS`` table; its schema module is imported on the first use of ``request`` or
``response`` (start-up time: building the ~70 modules' Message/F trees took 90-130 ms of
``kwire serve``'s start, and a broker answers its first ApiVersions and Metadata needing only
those two). ApiVersions, the server's version check and the handler index read the ranges
from the table, so they import nothing. ``tests/codec/test_api_index.py`` imports every module
and refuses a table that disagrees with them; ``Api._load`` refuses one at first use.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kwire.codec.schema import Message

#: api key -> (schema module in this package, API name, lowest request version, highest)
SCHEMAS: dict[int, tuple[str, str, int, int]] = {
    0: ("produce", "Produce", 0, 13),
    1: ("fetch", "Fetch", 0, 18),
    2: ("list_offsets", "ListOffsets", 0, 11),
    3: ("metadata", "Metadata", 0, 13),
    8: ("offset_commit", "OffsetCommit", 0, 10),
    9: ("offset_fetch", "OffsetFetch", 0, 10),
    10: ("find_coordinator", "FindCoordinator", 0, 6),
    11: ("join_group", "JoinGroup", 0, 9),
    12: ("heartbeat", "Heartbeat", 0, 4),
    13: ("leave_group", "LeaveGroup", 0, 5),
    14: ("sync_group", "SyncGroup", 0, 5),
    15: ("describe_groups", "DescribeGroups", 0, 6),
    16: ("list_groups", "ListGroups", 0, 5),
    17: ("sasl_handshake", "SaslHandshake", 0, 1),
    18: ("api_versions", "ApiVersions", 0, 4),
    19: ("create_topics", "CreateTopics", 0, 7),
    20: ("delete_topics", "DeleteTopics", 0, 6),
    21: ("delete_records", "DeleteRecords", 0, 2),
    22: ("init_producer_id", "InitProducerId", 0, 5),
    23: ("offset_for_leader_epoch", "OffsetForLeaderEpoch", 0, 4),
    24: ("add_partitions_to_txn", "AddPartitionsToTxn", 0, 5),
    25: ("add_offsets_to_txn", "AddOffsetsToTxn", 0, 4),
    26: ("end_txn", "EndTxn", 0, 5),
    27: ("write_txn_markers", "WriteTxnMarkers", 0, 2),
    28: ("txn_offset_commit", "TxnOffsetCommit", 0, 5),
    29: ("describe_acls", "DescribeAcls", 0, 3),
    30: ("create_acls", "CreateAcls", 0, 3),
    31: ("delete_acls", "DeleteAcls", 0, 3),
    32: ("describe_configs", "DescribeConfigs", 0, 4),
    33: ("alter_configs", "AlterConfigs", 0, 2),
    34: ("alter_replica_log_dirs", "AlterReplicaLogDirs", 0, 2),
    35: ("describe_log_dirs", "DescribeLogDirs", 0, 5),
    36: ("sasl_authenticate", "SaslAuthenticate", 0, 2),
    37: ("create_partitions", "CreatePartitions", 0, 3),
    42: ("delete_groups", "DeleteGroups", 0, 2),
    43: ("elect_leaders", "ElectLeaders", 0, 2),
    44: ("incremental_alter_configs", "IncrementalAlterConfigs", 0, 1),
    45: ("alter_partition_reassignments", "AlterPartitionReassignments", 0, 1),
    46: ("list_partition_reassignments", "ListPartitionReassignments", 0, 0),
    47: ("offset_delete", "OffsetDelete", 0, 0),
    48: ("describe_client_quotas", "DescribeClientQuotas", 0, 1),
    49: ("alter_client_quotas", "AlterClientQuotas", 0, 1),
    50: ("describe_user_scram_credentials", "DescribeUserScramCredentials", 0, 0),
    51: ("alter_user_scram_credentials", "AlterUserScramCredentials", 0, 0),
    52: ("vote", "Vote", 0, 2),
    53: ("begin_quorum_epoch", "BeginQuorumEpoch", 0, 1),
    54: ("end_quorum_epoch", "EndQuorumEpoch", 0, 1),
    55: ("describe_quorum", "DescribeQuorum", 0, 2),
    56: ("alter_partition", "AlterPartition", 2, 3),
    59: ("fetch_snapshot", "FetchSnapshot", 0, 1),
    60: ("describe_cluster", "DescribeCluster", 0, 2),
    61: ("describe_producers", "DescribeProducers", 0, 0),
    63: ("broker_heartbeat", "BrokerHeartbeat", 0, 1),
    64: ("unregister_broker", "UnregisterBroker", 0, 0),
    65: ("describe_transactions", "DescribeTransactions", 0, 0),
    66: ("list_transactions", "ListTransactions", 0, 2),
    68: ("consumer_group_heartbeat", "ConsumerGroupHeartbeat", 0, 1),
    69: ("consumer_group_describe", "ConsumerGroupDescribe", 0, 1),
    74: ("list_config_resources", "ListConfigResources", 0, 1),
    75: ("describe_topic_partitions", "DescribeTopicPartitions", 0, 0),
    76: ("share_group_heartbeat", "ShareGroupHeartbeat", 1, 1),
    77: ("share_group_describe", "ShareGroupDescribe", 1, 1),
    78: ("share_fetch", "ShareFetch", 1, 2),
    79: ("share_acknowledge", "ShareAcknowledge", 1, 2),
    83: ("initialize_share_group_state", "InitializeShareGroupState", 0, 0),
    84: ("read_share_group_state", "ReadShareGroupState", 0, 0),
    85: ("write_share_group_state", "WriteShareGroupState", 0, 1),
    86: ("delete_share_group_state", "DeleteShareGroupState", 0, 0),
    87: ("read_share_group_state_summary", "ReadShareGroupStateSummary", 0, 1),
    90: ("describe_share_group_offsets", "DescribeShareGroupOffsets", 0, 1),
    91: ("alter_share_group_offsets", "AlterShareGroupOffsets", 0, 0),
    92: ("delete_share_group_offsets", "DeleteShareGroupOffsets", 0, 0),
}


class Api:
    """One API: ``key``, ``name``, ``min_version``, ``max_version`` (the request schema's
    valid range) and its ``request`` / ``response`` Messages, which the first access loads
    (``__getattr__`` runs only while they are missing, so the hot path reads plain
    attributes). ``Api(key, name, request, response)`` wraps Messages already built (tests)."""

    def __init__(self, key: int, name: str, request: Message | None = None,
                 response: Message | None = None, *, module: str | None = None,
                 versions: tuple[int, int] | None = None):
        self.key = key
        self.name = name
        self._module = module
        if request is not None:
            assert response is not None, name
            self.request, self.response = request, response
            versions = (request.valid.lo, request.valid.hi)
        assert versions is not None, f"{name}: neither schemas nor versions"
        self.min_version, self.max_version = versions

    def __getattr__(self, attr: str):
        if attr in ("request", "response") and self.__dict__.get("_module"):
            self._load()
            return self.__dict__[attr]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def _load(self) -> None:
        mod = importlib.import_module(f"{__name__}.{self._module}")
        req, resp = mod.REQUEST, mod.RESPONSE
        got = (req.api_key, resp.api_key, req.name, req.valid.lo, req.valid.hi)
        want = (self.key, self.key, self.name + "Request", self.min_version, self.max_version)
        if got != want:
            raise ImportError(f"kwire.codec.apis.SCHEMAS says {want} for {mod.__name__}, "
                              f"its schemas say {got}")
        # response first: a thread that sees ``request`` set finds ``response`` set too
        self.__dict__["response"] = resp
        self.__dict__["request"] = req

    @property
    def loaded(self) -> bool:
        """Whether the schema module is imported (tests of what start-up loads)."""
        return "request" in self.__dict__

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def __repr__(self) -> str:
        return f"Api({self.key}, {self.name!r}, {self.min_version}-{self.max_version})"


APIS: dict[int, Api] = {key: Api(key, name, module=module, versions=(lo, hi))
                        for key, (module, name, lo, hi) in SCHEMAS.items()}
BY_NAME: dict[str, Api] = {a.name: a for a in APIS.values()}


def api(key_or_name: int | str) -> Api:
    return APIS[key_or_name] if isinstance(key_or_name, int) else BY_NAME[key_or_name]

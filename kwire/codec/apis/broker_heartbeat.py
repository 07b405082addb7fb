"""BrokerHeartbeat (key 63), versions 0-1: a broker's heartbeat to the active controller, on
the controller listener. kwire sends it for controlled shutdown (``want_shut_down``); liveness
itself rides on the metadata log fetches.

Kafka's BrokerHeartbeat JSON is not shipped in kafka-python's resources; this schema is
transcribed from Kafka's definition (v1 adds the offline log dirs tagged field; v2's cordoned
log dirs are left out with that version).

kwire adds one private tagged field (tag 10000, far from Kafka's): ``kwire_offline_partitions``,
the partitions this broker hosts in its offline log dirs. Kafka's controller knows them from
the directory assignment of every replica (KIP-858 AssignReplicasToDirs and the partition
records' Directories); kwire keeps the assignment on the broker and sends it with the report
(docs/differences.md). A Kafka controller skips the unknown tag.
"""
from kwire.codec.schema import F, Message

REQUEST = Message("BrokerHeartbeatRequest", api_key=63, kind="request", valid="0-1", flexible="0+", fields=[
    F("broker_id", "int32", "0+"),
    F("broker_epoch", "int64", "0+", default=-1),
    F("current_metadata_offset", "int64", "0+"),
    F("want_fence", "bool", "0+"),
    F("want_shut_down", "bool", "0+"),
    F("offline_log_dirs", "[]uuid", "1+", tag=0, tagged="1+"),
    F("kwire_offline_partitions", "[]OfflineTopic", "1+", tag=10000, tagged="1+", fields=[
        F("topic_id", "uuid", "1+"),
        F("partitions", "[]int32", "1+"),
    ]),
])

RESPONSE = Message("BrokerHeartbeatResponse", api_key=63, kind="response", valid="0-1", flexible="0+", fields=[
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("is_caught_up", "bool", "0+", default=False),
    F("is_fenced", "bool", "0+", default=True),
    F("should_shut_down", "bool", "0+"),
])

"""AlterReplicaLogDirs (key 34): versions 0-2 (Kafka 4.0 removed v0, the same as v1; 3.x served it).

Kafka's KafkaApis.handleAlterReplicaLogDirsRequest / ReplicaManager.alterReplicaLogDirs: a
replica is moved to another of this broker's log dirs (the paths DescribeLogDirs reports) in
the background (kwire.replication.log_dir_mover: a future log copied, then swapped in); the
answer comes when the move has started, as on Kafka. Asking for the dir a replica is in
succeeds with nothing to do; a path that is not a log dir here is LOG_DIR_NOT_FOUND (Kafka
compares the absolute path as given: a relative path or a trailing slash does not match), the
dir offline KAFKA_STORAGE_ERROR, a partition with no replica here
REPLICA_NOT_AVAILABLE (UNKNOWN_TOPIC_OR_PARTITION when the metadata does not know it), a topic
name too long for a future-log dir INVALID_TOPIC_EXCEPTION (kwire.replication.replica_manager).
A partition named twice is answered once, for the last dir naming it (Kafka's map); results
are grouped by topic.

Left out: a replica not here yet is not remembered for its creation (Kafka keeps a preferred
dir for it): REPLICA_NOT_AVAILABLE, as Kafka also answers.
With an authorizer: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED for every partition).
"""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op


@handles("AlterReplicaLogDirs")
async def alter_replica_log_dirs(ctx: RequestContext, req):
    partition_dirs: dict[tuple[str, int], str] = {}
    for d in req.dirs:
        for t in d.topics:
            for p in t.partitions:
                partition_dirs[(t.name, p)] = d.path
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.ALTER, CLUSTER, CLUSTER_NAME):
        errors = {tp: ErrorCode.CLUSTER_AUTHORIZATION_FAILED for tp in partition_dirs}
    else:
        errors = ctx.broker.replica_manager.alter_replica_log_dirs(partition_dirs)
    Result, Partition = ctx.struct("AlterReplicaLogDirTopicResult"), ctx.struct("AlterReplicaLogDirPartitionResult")
    by_topic: dict[str, list] = {}
    for (topic, partition), code in errors.items():
        by_topic.setdefault(topic, []).append(Partition(partition_index=partition, error_code=code))
    return ctx.response(throttle_time_ms=0, results=[Result(topic_name=t, partitions=ps) for t, ps in by_topic.items()])

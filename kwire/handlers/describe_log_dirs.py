"""DescribeLogDirs (key 35): versions 0-5 (Kafka 4.0 removed v0, the same as v1; 3.x served it).

Kafka's KafkaApis.handleDescribeLogDirsRequest / ReplicaManager.describeLogDirs: one result per
log dir (log.dirs, in their order): its absolute path; when an I/O error has taken it offline
(kwire.log.dir_failure), KAFKA_STORAGE_ERROR and nothing else; otherwise its file system's
total and usable bytes (v4+, statvfs off the event loop, as Java's FileStore.getTotalSpace /
getUsableSpace) and, per local log, its size (the sum of its segments) and offset lag (the log
end offset's lag behind the high watermark; for a future log, the copy a move between dirs is
making, is_future_key and its lag behind the current log's end). ``topics`` null describes
every local log, a list only the partitions it names that are here; a topic with none of them
is left out, as Kafka does.

Left out: cordoned dirs (KIP-1066), so is_cordoned is false.
With an authorizer: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED; v1-2 have no
top-level error code and get an empty answer, as Kafka's).
"""
from __future__ import annotations

import logging
import os

import trio

from kwire.errors import ErrorCode
from kwire.handlers import RequestContext, handles
from kwire.security.authorizer import CLUSTER, CLUSTER_NAME, allowed
from kwire.security.operations import AclOperation as Op

log = logging.getLogger("kwire.describe_log_dirs")

_LONG_MAX = (1 << 63) - 1


def file_store_bytes(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding ``path``, as Java's FileStore reports
    them (blocks and blocks available to unprivileged users, times the fragment size)."""
    st = os.statvfs(path)
    return min(st.f_blocks * st.f_frsize, _LONG_MAX), min(st.f_bavail * st.f_frsize, _LONG_MAX)


@handles("DescribeLogDirs")
async def describe_log_dirs(ctx: RequestContext, req):
    if ctx.broker.authorizer is not None and not allowed(ctx, Op.DESCRIBE, CLUSTER, CLUSTER_NAME):
        return ctx.response(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    wanted = None
    if req.topics is not None:
        wanted = {(t.topic, p) for t in req.topics for p in t.partitions}
    Result = ctx.struct("DescribeLogDirsResult")
    Topic, Partition = ctx.struct("DescribeLogDirsTopic"), ctx.struct("DescribeLogDirsPartition")
    results = []
    for log_dir, offline, rows in ctx.broker.replica_manager.describe_log_dirs(wanted):
        if offline:
            log.warning("DescribeLogDirs: log dir %s is offline", log_dir)
            results.append(Result(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir=log_dir, topics=[]))
            continue
        try:
            total, usable = await trio.to_thread.run_sync(file_store_bytes, log_dir)
        except OSError as exc:   # Kafka: an IOException from the file store, Errors.forException
            log.error("DescribeLogDirs: cannot read the file system of %s: %s", log_dir, exc)
            results.append(Result(error_code=ErrorCode.UNKNOWN_SERVER_ERROR, log_dir=log_dir, topics=[]))
            continue
        topics: list = []
        for topic, partition, size, lag, future in rows:   # sorted by topic, then partition
            if not topics or topics[-1].name != topic:
                topics.append(Topic(name=topic, partitions=[]))
            topics[-1].partitions.append(Partition(partition_index=partition, partition_size=size,
                                                   offset_lag=lag, is_future_key=future))
        results.append(Result(error_code=0, log_dir=log_dir, topics=topics, total_bytes=total, usable_bytes=usable,
                              is_cordoned=False))
    return ctx.response(throttle_time_ms=0, error_code=0, results=results)

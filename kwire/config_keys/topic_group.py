"""Topic configs (TopicConfig, LogConfig) and group configs (GroupConfig)."""
from __future__ import annotations

import re

from kwire.configdef import (  # noqa: F401
    CLUSTER_WIDE, LONG_MAX, ConfigError, ConfigKey, at_least, between, gzip_level, list_of, one_of, version_string,
)
from kwire.config_keys.define import (  # noqa: F401
    B, S, I, SH, L, D, LI, C, P, RO, PB, CW, HOUR_MS, DAY_MS, WEEK_MS, COMPRESSION, PROTOCOLS, BROKER, TOPIC, GROUP, _b, _t, _g,
)

# ------------------------------------------------------------------ topic configs (TopicConfig, LogConfig)
_t("segment.bytes", I, 1073741824, "Segment file size of the log.", at_least(1024 * 1024),
   ["log.segment.bytes"])
_t("internal.segment.bytes", I, None, "Kafka's internal override of segment.bytes, without its 1 MiB "
   "minimum (tests use it for small segments).", at_least(14), hidden=True)
_t("segment.ms", L, WEEK_MS, "Age at which a segment is rolled even when not full.", at_least(1),
   ["log.roll.ms", "log.roll.hours"])
_t("segment.jitter.ms", L, 0, "Random jitter subtracted from the roll time.", at_least(0),
   ["log.roll.jitter.ms", "log.roll.jitter.hours"])
_t("segment.index.bytes", I, 10485760, "Size of the offset index.", at_least(4), ["log.index.size.max.bytes"])
_t("flush.messages", L, LONG_MAX, "Records appended between forced fsyncs.", at_least(1),
   ["log.flush.interval.messages"])
_t("flush.ms", L, LONG_MAX, "Longest time between forced fsyncs.", at_least(0),
   ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"])
_t("retention.bytes", L, -1, "Largest size of a partition before old segments are deleted (delete "
   "policy); -1: no limit.", None, ["log.retention.bytes"])
_t("retention.ms", L, WEEK_MS, "How long records are kept (delete policy); -1: for ever.", at_least(-1),
   ["log.retention.ms", "log.retention.minutes", "log.retention.hours"])
_t("max.message.bytes", I, 1048588, "Largest record batch accepted.", at_least(0), ["message.max.bytes"])
_t("index.interval.bytes", I, 4096, "Bytes between offset index entries.", at_least(0),
   ["log.index.interval.bytes"])
_t("delete.retention.ms", L, DAY_MS, "How long tombstones are kept in compacted topics.", at_least(0),
   ["log.cleaner.delete.retention.ms"])
_t("min.compaction.lag.ms", L, 0, "Least age of a record before compaction.", at_least(0),
   ["log.cleaner.min.compaction.lag.ms"])
_t("max.compaction.lag.ms", L, LONG_MAX, "Most age of a record before it must be compactable.",
   at_least(1), ["log.cleaner.max.compaction.lag.ms"])
_t("file.delete.delay.ms", L, 60000, "Wait before a deleted segment's file is removed.", at_least(0),
   ["log.segment.delete.delay.ms"])
_t("min.cleanable.dirty.ratio", D, 0.5, "Dirty ratio at which the log is compacted.", between(0, 1),
   ["log.cleaner.min.cleanable.ratio"])
_t("cleanup.policy", LI, ["delete"], "delete, compact, both, or none (empty).", list_of("compact", "delete"),
   ["log.cleanup.policy"])
_t("unclean.leader.election.enable", B, False, "Let an out-of-sync replica become leader.", None,
   ["unclean.leader.election.enable"])
_t("min.insync.replicas", I, 1, "Replicas that must have a write for acks=all.", at_least(1),
   ["min.insync.replicas"])
_t("compression.type", S, "producer", "Final compression of the topic's batches.", one_of(*COMPRESSION),
   ["compression.type"])
_t("compression.gzip.level", I, -1, "Level of gzip compression.", gzip_level, ["compression.gzip.level"])
_t("compression.lz4.level", I, 9, "Level of lz4 compression.", between(1, 17), ["compression.lz4.level"])
_t("compression.zstd.level", I, 3, "Level of zstd compression.", between(-131072, 22),
   ["compression.zstd.level"])
_t("preallocate", B, False, "Preallocate segment files.", None, ["log.preallocate"])
_t("message.timestamp.type", S, "CreateTime", "CreateTime or LogAppendTime.",
   one_of("CreateTime", "LogAppendTime"), ["log.message.timestamp.type"])
_t("message.timestamp.before.max.ms", L, LONG_MAX, "How far in the past a CreateTime timestamp may be.",
   at_least(0), ["log.message.timestamp.before.max.ms"])
_t("message.timestamp.after.max.ms", L, HOUR_MS, "How far in the future a CreateTime timestamp may be.",
   at_least(0), ["log.message.timestamp.after.max.ms"])
_t("leader.replication.throttled.replicas", LI, [], "Throttled replicas on the leader side "
   "(partition:broker,... or *).")
_t("follower.replication.throttled.replicas", LI, [], "Throttled replicas on the follower side "
   "(partition:broker,... or *).")
_t("remote.storage.enable", B, False, "Tier this topic to remote storage.")
_t("local.retention.ms", L, -2, "Local retention of a tiered topic; -2: retention.ms.", at_least(-2),
   ["log.local.retention.ms"])
_t("local.retention.bytes", L, -2, "Local retention of a tiered topic; -2: retention.bytes.", at_least(-2),
   ["log.local.retention.bytes"])
_t("remote.log.copy.disable", B, False, "Stop copying segments to remote storage.")
_t("remote.log.delete.on.disable", B, False, "Delete remote data when tiering is disabled.")
# not defined by Kafka 4.3.1 (its DescribeConfigs of a topic does not list them): described only when set
_t("remote.copy.lag.ms", L, 0, "Age a segment reaches before it is copied to remote storage; -1: the local "
   "retention.", at_least(-1), hidden=True)
_t("remote.copy.lag.bytes", L, 0, "Bytes a partition holds locally before segments are copied to remote "
   "storage; -1: the local retention.", at_least(-1), hidden=True)
# Removed in Kafka 4.0; Kafka 3.x accepted them (message.format.version with a warning, ignored:
# the message format follows the metadata version). Stored as given, described only when set.
_t("message.format.version", S, "3.0-IV1", "Deprecated, ignored: the message format follows the cluster.",
   version_string, hidden=True)
_t("message.downconversion.enable", B, True, "Deprecated, ignored: Kafka 4 no longer down-converts for old "
   "consumers.", hidden=True)

# ------------------------------------------------------------------ group configs (GroupConfig)
_g("consumer.session.timeout.ms", I, "group.consumer.session.timeout.ms", "Session timeout of this "
   "consumer group.", at_least(1))
_g("consumer.heartbeat.interval.ms", I, "group.consumer.heartbeat.interval.ms", "Heartbeat interval of "
   "this consumer group.", at_least(1))
_g("share.session.timeout.ms", I, "group.share.session.timeout.ms", "Session timeout of this share group.",
   at_least(1))
_g("share.heartbeat.interval.ms", I, "group.share.heartbeat.interval.ms", "Heartbeat interval of this "
   "share group.", at_least(1))
_g("share.record.lock.duration.ms", I, "group.share.record.lock.duration.ms", "Record acquisition lock of "
   "this share group.", at_least(1000))
_g("share.delivery.count.limit", I, "group.share.delivery.count.limit", "Deliveries of a record before it "
   "is archived.", at_least(2))
_g("share.partition.max.record.locks", I, "group.share.partition.max.record.locks", "In-flight records "
   "per share partition.", at_least(100))
_g("share.auto.offset.reset", S, None, "Where a new share partition starts: earliest, latest, or "
   "by_duration:<ISO-8601 duration>.", None, default="latest")
_g("share.isolation.level", S, None, "read_committed or read_uncommitted.",
   one_of("read_committed", "read_uncommitted"), default="read_uncommitted")
_g("share.renew.acknowledge.enable", B, None, "Allow the RENEW acknowledge type.", default=True)
_g("streams.session.timeout.ms", I, "group.streams.session.timeout.ms", "Session timeout of this streams "
   "group.", at_least(1))
_g("streams.heartbeat.interval.ms", I, "group.streams.heartbeat.interval.ms", "Heartbeat interval of this "
   "streams group.", at_least(1))
_g("streams.num.standby.replicas", I, "group.streams.num.standby.replicas", "Standby replicas of this "
   "streams group.", at_least(0))
_g("consumer.assignment.interval.ms", I, "group.consumer.assignment.interval.ms", "Interval between "
   "assignment updates of this consumer group.", at_least(0))
# Kafka 4.3.1 does not define the group keys marked hidden (its DescribeConfigs of a group does
# not list them): accepted, described only when set
_g("consumer.assignor.offload.enable", B, "group.consumer.assignor.offload.enable", "Run this group's "
   "assignor on a background thread.", hidden=True)
_g("share.assignment.interval.ms", I, "group.share.assignment.interval.ms", "Interval between assignment "
   "updates of this share group.", at_least(0))
_g("share.assignor.offload.enable", B, "group.share.assignor.offload.enable", "Run this group's assignor on "
   "a background thread.", hidden=True)
_g("streams.assignment.interval.ms", I, "group.streams.assignment.interval.ms", "Interval between "
   "assignment updates of this streams group.", at_least(0))
_g("streams.assignor.offload.enable", B, "group.streams.assignor.offload.enable", "Run this group's "
   "assignor on a background thread.", hidden=True)
_g("streams.task.offset.interval.ms", I, "group.streams.task.offset.interval.ms", "How often warm-up task "
   "offsets are reported.", at_least(1), hidden=True)
_g("streams.num.warmup.replicas", I, "group.streams.num.warmup.replicas", "Warm-up replicas of this streams "
   "group.", at_least(0), hidden=True)
_g("streams.acceptable.recovery.lag", L, "group.streams.acceptable.recovery.lag", "Lag under which a task "
   "counts as caught up.", at_least(0), hidden=True)
_g("errors.deadletterqueue.topic.name", S, None, "Dead-letter topic of this share group (KIP-1191); empty: "
   "none.", default="", hidden=True)
_g("errors.deadletterqueue.copy.record.enable", B, None, "Copy the record's key and value to the dead-letter "
   "topic.", default=False, hidden=True)
_g("streams.initial.rebalance.delay.ms", I, "group.streams.initial.rebalance.delay.ms", "Delay before this "
   "streams group's first assignment.", at_least(0))


def _share_reset(name, v):
    if v is None:
        return
    low = v.lower()
    if low in ("earliest", "latest"):
        return
    if low.startswith("by_duration:") and re.fullmatch(r"P(\d+D)?(T(\d+H)?(\d+M)?(\d+(\.\d+)?S)?)?",
                                                       v[len("by_duration:"):].upper()) \
            and v[len("by_duration:"):].upper() not in ("P", "PT"):
        return
    raise ConfigError(name, v, "Invalid value for share.auto.offset.reset. It must be 'earliest', 'latest', "
                      "or 'by_duration:<ISO-8601 duration>'")


GROUP["share.auto.offset.reset"] = ConfigKey("share.auto.offset.reset", S, "latest",
                                             GROUP["share.auto.offset.reset"].doc, _share_reset, CW)
for _k in GROUP.values():   # defaults follow the broker key behind them
    if _k.synonyms:
        GROUP[_k.name] = ConfigKey(_k.name, _k.type, BROKER[_k.synonyms[0]].default, _k.doc, _k.validator, CW,
                                   _k.synonyms, hidden=_k.hidden)

# Broker keys kwire acts on (everything else is stored and described only).

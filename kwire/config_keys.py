"""The config table: every broker, topic and group config Kafka 4 knows, with Kafka's names,
types, defaults, validators and dynamic update modes (read from Kafka's ServerConfigs,
ServerLogConfigs, LogConfig, KRaftConfigs, QuorumConfig, SocketServerConfigs,
ReplicationConfigs, GroupCoordinatorConfig, GroupConfig, ShareGroupConfig,
ShareCoordinatorConfig, TransactionLogConfig, CleanerConfig, QuotaConfig, MetricConfigs,
BrokerSecurityConfigs, SslConfigs, SaslConfigs, RemoteLogManagerConfig, DelegationTokenManagerConfigs
and DynamicBrokerConfig), in kwire's own words.

Where kwire's default differs from Kafka's the doc says so (node.id, listeners, log.dir: a
kwire node starts without a config file). kwire's own keys are marked ``kwire=True``.
Most keys are accepted, stored and described but change nothing in kwire; the ones kwire
acts on are listed in ``USED``.
"""
from __future__ import annotations

from kwire.configdef import (
    CLUSTER_WIDE, DOUBLE_MAX, INT_MAX, LONG_MAX, PER_BROKER, READ_ONLY, ConfigKey, Type, at_least, between,
    gzip_level, list_of, non_empty, one_of, version_string,
)

B, S, I, SH, L, D, LI, C, P = (Type.BOOLEAN, Type.STRING, Type.INT, Type.SHORT, Type.LONG, Type.DOUBLE,
                               Type.LIST, Type.CLASS, Type.PASSWORD)
RO, PB, CW = READ_ONLY, PER_BROKER, CLUSTER_WIDE
HOUR_MS, DAY_MS = 3600 * 1000, 24 * 3600 * 1000
WEEK_MS = 7 * DAY_MS
COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

BROKER: dict[str, ConfigKey] = {}
TOPIC: dict[str, ConfigKey] = {}
GROUP: dict[str, ConfigKey] = {}


def _b(name, t, default, doc, v=None, mode=RO, **kw):
    assert name not in BROKER, name
    BROKER[name] = ConfigKey(name, t, default, doc, v, mode, **kw)


def _t(name, t, default, doc, v=None, synonyms=(), **kw):
    assert name not in TOPIC, name
    TOPIC[name] = ConfigKey(name, t, default, doc, v, CW, tuple(synonyms), **kw)


def _g(name, t, broker_key, doc, v=None, default=None):
    GROUP[name] = ConfigKey(name, t, default, doc, v, CW, (broker_key,) if broker_key else ())


# ------------------------------------------------------------------ general (ServerConfigs, KRaftConfigs)
_b("node.id", I, 1, "This node's id in the cluster (kwire default 1; Kafka requires it to be set).", at_least(0))
_b("broker.id", I, -1, "Older name of node.id; set either.")
_b("broker.id.generation.enable", B, True, "Generate a broker id when none is configured (ZooKeeper only).")
_b("reserved.broker.max.id", I, 1000, "Highest broker id that may be configured by hand.", at_least(0))
_b("process.roles", LI, ["broker", "controller"], "The roles of this node: broker, controller, or both (kwire "
   "default: both; Kafka requires it to be set).", list_of("broker", "controller", allow_empty=False))
_b("message.max.bytes", I, 1048588, "Largest record batch a topic accepts (after compression); topic "
   "level: max.message.bytes.", at_least(0), CW)
_b("num.io.threads", I, 8, "Threads that handle requests.", at_least(1), CW)
_b("num.network.threads", I, 3, "Threads that read requests from and write responses to the network.",
   at_least(1), CW)
_b("num.replica.alter.log.dirs.threads", I, None, "Threads that move replicas between log directories.")
_b("background.threads", I, 10, "Threads for background tasks.", at_least(1), CW)
_b("request.timeout.ms", I, 30000, "How long the broker waits for an answer to a request it sends.")
_b("socket.connection.setup.timeout.ms", L, 10000, "How long to wait for an outgoing connection.")
_b("socket.connection.setup.timeout.max.ms", L, 30000, "Upper bound of the connection setup backoff.")
_b("authorizer.class.name", S, "", "Class that authorizes requests; empty: no authorization.")
_b("early.start.listeners", S, None, "Listeners started before the authorizer is ready.")
_b("broker.rack", S, None, "Rack of this broker, for rack-aware replica placement.")
_b("controlled.shutdown.enable", B, True, "Move leadership away before shutting down.")
_b("controlled.shutdown.max.retries", I, 3, "Retries of a failed controlled shutdown.")
_b("controlled.shutdown.retry.backoff.ms", L, 5000, "Wait between controlled shutdown retries.")
_b("delete.topic.enable", B, True, "Allow DeleteTopics.")
_b("compression.type", S, "producer", "Final compression of a topic's batches; producer keeps the "
   "producer's codec.", one_of(*COMPRESSION), CW)
_b("compression.gzip.level", I, -1, "Level of gzip compression.", gzip_level, CW)
_b("compression.lz4.level", I, 9, "Level of lz4 compression.", between(1, 17), CW)
_b("compression.zstd.level", I, 3, "Level of zstd compression.", between(-131072, 22), CW)
_b("max.incremental.fetch.session.cache.slots", I, 1000, "Most incremental fetch sessions kept.", at_least(0))
_b("fetch.max.bytes", I, 57671680, "Most bytes answered to one fetch request.", at_least(1024))
_b("max.request.partition.size.limit", I, 2000, "Most partitions served in one request.", at_least(1))
_b("eligible.leader.replicas.enable", B, False, "Use eligible leader replicas (KIP-966).")
_b("initial.broker.registration.timeout.ms", I, 60000, "How long a starting broker waits to register.")
_b("broker.heartbeat.interval.ms", I, 2000, "Time between broker heartbeats to the controller.")
_b("broker.session.timeout.ms", I, 9000, "A broker without heartbeats for this long is fenced.")
_b("controller.listener.names", LI, None, "Names of the listeners the controller uses.")
_b("sasl.mechanism.controller.protocol", S, "GSSAPI", "SASL mechanism to reach the controllers.")
_b("server.max.startup.time.ms", L, LONG_MAX, "Longest a starting broker waits to catch up.", at_least(0), hidden=True)
_b("controller.performance.sample.period.ms", L, 60000, "Period of controller performance samples.", at_least(100),
   hidden=True)
_b("controller.max.records.per.batch", I, 10000, "Most records in one metadata log batch.", at_least(1),
   hidden=True)
_b("controller.performance.always.log.threshold.ms", L, 2000, "Controller events slower than this are "
   "logged.", at_least(0), hidden=True)
_b("metadata.max.idle.interval.ms", I, 500, "How often the active controller writes a no-op record.",
   at_least(0))
# ------------------------------------------------------------------ metadata log, quorum
_b("metadata.log.dir", S, None, "Directory of the metadata log; default: the first log dir.")
_b("metadata.log.segment.bytes", I, 1073741824, "Size of a metadata log segment.", at_least(12))
_b("metadata.log.segment.ms", L, WEEK_MS, "Age at which a metadata log segment is rolled.")
_b("metadata.max.retention.bytes", L, 104857600, "Metadata log size kept before old snapshots go.")
_b("metadata.max.retention.ms", L, WEEK_MS, "How long metadata log segments are kept.")
_b("metadata.log.max.record.bytes.between.snapshots", L, 20971520, "Metadata log bytes between snapshots.",
   at_least(1))
_b("metadata.log.max.snapshot.interval.ms", L, HOUR_MS, "Longest time between metadata snapshots.",
   at_least(0))
_b("controller.quorum.voters", LI, [], "The KRaft voters as id@host:port,...")
_b("controller.quorum.bootstrap.servers", LI, [], "Addresses to find the KRaft quorum at.")
_b("controller.quorum.election.timeout.ms", I, 1000, "Time without a leader before an election starts.")
_b("controller.quorum.fetch.timeout.ms", I, 2000, "Time without a fetch from the leader before a "
   "follower becomes a candidate.")
_b("controller.quorum.election.backoff.max.ms", I, 1000, "Longest backoff before a new election.")
_b("controller.quorum.append.linger.ms", I, 25, "How long the leader gathers writes before flushing.")
_b("controller.quorum.request.timeout.ms", I, 2000, "How long a quorum request waits for an answer.")
_b("controller.quorum.retry.backoff.ms", I, 20, "Wait before retrying a failed quorum request.")
_b("controller.quorum.auto.join.enable", B, False, "Let a controller join the voters by itself.")
# ------------------------------------------------------------------ sockets (SocketServerConfigs)
_b("listeners", LI, ["PLAINTEXT://127.0.0.1:9092"], "Listeners as NAME://host:port,... (kwire default "
   "PLAINTEXT://127.0.0.1:9092; Kafka's: PLAINTEXT://:9092).", None, PB)
_b("advertised.listeners", LI, None, "Addresses clients are told to use; default: listeners.")
_b("listener.security.protocol.map", S, "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:"
   "SASL_PLAINTEXT", "Security protocol of each listener name.", None, PB)
_b("socket.send.buffer.bytes", I, 102400, "SO_SNDBUF of client sockets; -1: the OS default.")
_b("socket.receive.buffer.bytes", I, 102400, "SO_RCVBUF of client sockets; -1: the OS default.")
_b("socket.request.max.bytes", I, 104857600, "Largest request accepted.", at_least(1))
_b("socket.listen.backlog.size", I, 50, "Pending connections queue (SO_BACKLOG).", at_least(1))
_b("max.connections.per.ip", I, INT_MAX, "Most connections from one address.", at_least(0), CW)
_b("max.connections.per.ip.overrides", S, "", "Per address or host limits: host:count,...", None, CW)
_b("max.connections", I, INT_MAX, "Most connections at once.", at_least(0), CW)
_b("max.connection.creation.rate", I, INT_MAX, "Most new connections per second.", at_least(0), CW)
_b("connections.max.idle.ms", L, 600000, "Idle connections are closed after this.")
_b("connection.failed.authentication.delay.ms", I, 100, "Delay before closing after a failed login.",
   at_least(0))
_b("queued.max.requests", I, 500, "Requests queued before the network threads stop reading.", at_least(1))
_b("queued.max.request.bytes", L, -1, "Bytes of queued requests before reading stops; -1: no limit.")
# ------------------------------------------------------------------ replication (ReplicationConfigs)
_b("controller.socket.timeout.ms", I, 30000, "Socket timeout of controller-to-broker channels.")
_b("default.replication.factor", I, 1, "Replication factor of topics created without one.")
_b("replica.lag.time.max.ms", L, 30000, "A follower this far behind leaves the ISR.")
_b("replica.socket.timeout.ms", I, 30000, "Socket timeout of follower fetches.")
_b("replica.socket.receive.buffer.bytes", I, 65536, "SO_RCVBUF of follower fetch sockets.")
_b("replica.fetch.max.bytes", I, 1048576, "Bytes a follower fetches per partition.", at_least(0))
_b("replica.fetch.wait.max.ms", I, 500, "Longest wait of a follower fetch.")
_b("replica.fetch.min.bytes", I, 1, "Least bytes a follower fetch waits for.")
_b("replica.fetch.backoff.ms", I, 1000, "Sleep after a follower fetch error.", at_least(0))
_b("replica.fetch.response.max.bytes", I, 10485760, "Most bytes of one follower fetch response.",
   at_least(0))
_b("num.replica.fetchers", I, 1, "Fetcher threads per source broker.", None, CW)
_b("replica.high.watermark.checkpoint.interval.ms", L, 5000, "How often high watermarks are saved.")
_b("fetch.purgatory.purge.interval.requests", I, 1000, "Purge interval of the fetch purgatory.")
_b("producer.purgatory.purge.interval.requests", I, 1000, "Purge interval of the produce purgatory.")
_b("delete.records.purgatory.purge.interval.requests", I, 1, "Purge interval of the delete-records "
   "purgatory.")
_b("auto.leader.rebalance.enable", B, True, "Move leadership back to preferred replicas.")
_b("leader.imbalance.per.broker.percentage", I, 10, "Leader imbalance allowed per broker, in percent.")
_b("leader.imbalance.check.interval.seconds", L, 300, "How often leader balance is checked.", at_least(1))
_b("unclean.leader.election.enable", B, False, "Let an out-of-sync replica become leader as a last "
   "resort.", None, CW)
_b("inter.broker.listener.name", S, None, "Listener brokers use to talk to each other.")
_b("security.inter.broker.protocol", S, "PLAINTEXT", "Security protocol between brokers.", one_of(*PROTOCOLS))
_b("replica.selector.class", S, None, "ReplicaSelector class that picks the preferred read replica.")
_b("follower.fetch.last.tiered.offset.enable", B, False, "Followers start from the last tiered offset.",
   None, CW)
# ------------------------------------------------------------------ log (ServerLogConfigs, LogConfig)
_b("num.partitions", I, 1, "Partitions of topics created without a count.", at_least(1))
_b("log.dir", LI, ["./kwire-data"], "Directory of the log data, when log.dirs is not set (kwire default "
   "./kwire-data; Kafka's: /tmp/kafka-logs).")
_b("log.dirs", LI, None, "Directories of the log data; default: log.dir.")
_b("log.segment.bytes", I, 1073741824, "Largest size of a log segment.", at_least(1024 * 1024), CW)
_b("log.roll.ms", L, None, "Longest age of a log segment in ms; default: log.roll.hours.", None, CW)
_b("log.roll.hours", I, 168, "Longest age of a log segment in hours.", at_least(1))
_b("log.roll.jitter.ms", L, None, "Jitter subtracted from the roll time, in ms.", None, CW)
_b("log.roll.jitter.hours", I, 0, "Jitter subtracted from the roll time, in hours.", at_least(0))
_b("log.retention.ms", L, None, "How long a log is kept, in ms (-1: for ever); default: "
   "log.retention.minutes.", None, CW)
_b("log.retention.minutes", I, None, "How long a log is kept, in minutes; default: log.retention.hours.")
_b("log.retention.hours", I, 168, "How long a log is kept, in hours.")
_b("log.retention.bytes", L, -1, "Largest size of a partition's log before old segments go.", None, CW)
_b("log.retention.check.interval.ms", L, 300000, "How often retention is applied.", at_least(1))
_b("log.cleanup.policy", LI, ["delete"], "What happens to old segments: delete, compact, both.",
   list_of("compact", "delete"), CW)
_b("log.index.size.max.bytes", I, 10485760, "Largest size of an offset index.", at_least(4), CW)
_b("log.index.interval.bytes", I, 4096, "Bytes between offset index entries.", at_least(0), CW)
_b("log.flush.interval.messages", L, LONG_MAX, "Records appended before a log is flushed.", at_least(1), CW)
_b("log.segment.delete.delay.ms", L, 60000, "Wait before a deleted segment's file is removed.", at_least(0),
   CW)
_b("log.flush.scheduler.interval.ms", L, LONG_MAX, "How often logs are checked for a flush.")
_b("log.flush.interval.ms", L, None, "Longest time a record stays unflushed; default: "
   "log.flush.scheduler.interval.ms.", None, CW)
_b("log.flush.offset.checkpoint.interval.ms", I, 60000, "How often the recovery point is saved.", at_least(0))
_b("log.flush.start.offset.checkpoint.interval.ms", I, 60000, "How often log start offsets are saved.",
   at_least(0))
_b("log.flush.per.append", B, False, "kwire: fdatasync the log before acknowledging each append.", None, CW,
   kwire=True)
_b("log.preallocate", B, False, "Preallocate segment files.", None, CW)
_b("num.recovery.threads.per.data.dir", I, 2, "Threads per data dir for recovery and shutdown flush.",
   at_least(1), CW)
_b("auto.create.topics.enable", B, True, "Create a topic when a client asks for it.")
_b("min.insync.replicas", I, 1, "Replicas that must have a write for acks=all.", at_least(1), CW)
_b("log.message.timestamp.type", S, "CreateTime", "Record timestamps: CreateTime or LogAppendTime.",
   one_of("CreateTime", "LogAppendTime"), CW)
_b("log.message.timestamp.before.max.ms", L, LONG_MAX, "How far in the past a CreateTime timestamp may "
   "be.", at_least(0), CW)
_b("log.message.timestamp.after.max.ms", L, HOUR_MS, "How far in the future a CreateTime timestamp may "
   "be.", at_least(0), CW)
_b("create.topic.policy.class.name", C, None, "CreateTopicPolicy class.")
_b("alter.config.policy.class.name", C, None, "AlterConfigPolicy class.")
_b("log.dir.failure.timeout.ms", L, 30000, "Stop if a failed log dir cannot be reported for this long.",
   at_least(1))
_b("log.local.retention.ms", L, -2, "Local retention of tiered topics in ms; -2: log.retention.ms.",
   at_least(-2), CW)
_b("log.local.retention.bytes", L, -2, "Local retention of tiered topics in bytes; -2: "
   "log.retention.bytes.", at_least(-2), CW)
# ------------------------------------------------------------------ log cleaner (CleanerConfig)
_b("log.cleaner.enable", B, True, "Run the log cleaner (compaction).")
_b("log.cleaner.threads", I, 1, "Log cleaner threads.", at_least(0), CW)
_b("log.cleaner.io.max.bytes.per.second", D, DOUBLE_MAX, "Read+write rate limit of the cleaner.", None, CW)
_b("log.cleaner.dedupe.buffer.size", L, 134217728, "Memory for cleaner deduplication.", None, CW)
_b("log.cleaner.io.buffer.size", I, 524288, "Memory for cleaner I/O buffers.", at_least(0), CW)
_b("log.cleaner.io.buffer.load.factor", D, 0.9, "Load factor of the dedupe buffer.", None, CW)
_b("log.cleaner.backoff.ms", L, 15000, "Sleep when there is nothing to clean.", at_least(0), CW)
_b("log.cleaner.delete.retention.ms", L, DAY_MS, "How long delete tombstones are kept.", at_least(0), CW)
_b("log.cleaner.min.compaction.lag.ms", L, 0, "Least age of a record before it may be compacted.",
   at_least(0), CW)
_b("log.cleaner.max.compaction.lag.ms", L, LONG_MAX, "Most age of a record before it must be "
   "compactable.", at_least(1), CW)
_b("log.cleaner.min.cleanable.ratio", D, 0.5, "Dirty ratio at which a log is cleaned.", between(0, 1), CW)
# ------------------------------------------------------------------ groups (GroupCoordinatorConfig)
_b("group.min.session.timeout.ms", I, 6000, "Shortest classic group session timeout.")
_b("group.max.session.timeout.ms", I, 1800000, "Longest classic group session timeout.")
_b("group.initial.rebalance.delay.ms", I, 3000, "Wait for more members before the first rebalance of an "
   "empty classic group.")
_b("group.max.size", I, INT_MAX, "Most members of a classic group.", at_least(1))
_b("offset.metadata.max.bytes", I, 4096, "Largest metadata of a committed offset.")
_b("offsets.load.buffer.size", I, 5242880, "Batch size when loading offsets.", at_least(1))
_b("offsets.topic.replication.factor", SH, 3, "Replication factor of __consumer_offsets.", at_least(1))
_b("offsets.topic.num.partitions", I, 50, "Partitions of __consumer_offsets.", at_least(1))
_b("offsets.topic.segment.bytes", I, 104857600, "Segment size of __consumer_offsets.", at_least(1))
_b("offsets.topic.compression.codec", I, 0, "Compression codec of __consumer_offsets.")
_b("offsets.retention.minutes", I, 10080, "How long offsets of an empty group are kept.", at_least(1))
_b("offsets.retention.check.interval.ms", L, 600000, "How often stale offsets are looked for.", at_least(1))
_b("offsets.commit.timeout.ms", I, 5000, "How long an offset commit waits for replication.", at_least(1))
_b("group.coordinator.rebalance.protocols", LI, ["classic", "consumer", "streams"], "Rebalance protocols "
   "served.", list_of("classic", "consumer", "share", "streams"))
_b("group.coordinator.threads", I, 4, "Group coordinator threads.", at_least(1))
_b("group.coordinator.append.linger.ms", I, -1, "How long the coordinator gathers writes; -1: adaptive.",
   at_least(-1))
_b("group.coordinator.background.threads", I, 2, "Group coordinator threads for background tasks.", at_least(1))
_b("group.coordinator.cached.buffer.max.bytes", I, 1048588, "Largest write buffer the coordinator keeps for "
   "reuse.", at_least(512 * 1024), CW)
for _kind, _min_s, _max_s in (("consumer", 45000, 60000), ("share", 45000, 60000), ("streams", 45000, 60000)):
    _b(f"group.{_kind}.session.timeout.ms", I, 45000, f"Session timeout of {_kind} groups.", at_least(1))
    _b(f"group.{_kind}.min.session.timeout.ms", I, _min_s, f"Shortest session timeout of {_kind} groups.",
       at_least(1))
    _b(f"group.{_kind}.max.session.timeout.ms", I, _max_s, f"Longest session timeout of {_kind} groups.",
       at_least(1))
    _b(f"group.{_kind}.heartbeat.interval.ms", I, 5000, f"Heartbeat interval of {_kind} groups.",
       at_least(1))
    _b(f"group.{_kind}.min.heartbeat.interval.ms", I, 5000, f"Shortest heartbeat interval of {_kind} "
       "groups.", at_least(1))
    _b(f"group.{_kind}.max.heartbeat.interval.ms", I, 15000, f"Longest heartbeat interval of {_kind} "
       "groups.", at_least(1))
for _kind in ("consumer", "share", "streams"):
    _b(f"group.{_kind}.assignment.interval.ms", I, 1000, f"Interval between assignment updates of {_kind} "
       "groups.", at_least(0), CW)
    _b(f"group.{_kind}.min.assignment.interval.ms", I, 0, f"Shortest assignment interval of {_kind} groups.",
       at_least(0))
    _b(f"group.{_kind}.max.assignment.interval.ms", I, 15000, f"Longest assignment interval of {_kind} groups.",
       at_least(0))
    _b(f"group.{_kind}.assignor.offload.enable", B, True, f"Run {_kind} group assignors on a background "
       "thread.", None, CW)
_b("group.consumer.max.size", I, INT_MAX, "Most members of a consumer group.", at_least(1))
_b("group.consumer.assignors", LI, ["uniform", "range"], "Server-side assignors (names or classes); the "
   "first is the default.")
_b("group.consumer.migration.policy", S, "bidirectional", "Conversion between classic and consumer "
   "groups.", one_of("disabled", "downgrade", "upgrade", "bidirectional", case_insensitive=True))
_b("group.share.max.size", I, 200, "Most members of a share group.", between(1, 1000))
_b("group.share.delivery.count.limit", I, 5, "Deliveries of a record before it is archived.", between(2, 10))
_b("group.share.record.lock.duration.ms", I, 30000, "Acquisition lock of a share group record.",
   between(1000, 3600000))
_b("group.share.min.record.lock.duration.ms", I, 15000, "Shortest record lock duration.",
   between(1000, 30000))
_b("group.share.max.record.lock.duration.ms", I, 60000, "Longest record lock duration.",
   between(30000, 3600000))
_b("group.share.partition.max.record.locks", I, 2000, "In-flight records per share partition.",
   between(100, 10000))
_b("group.share.max.groups", SH, 10, "Most share groups (Kafka 4.0, 4.1).", between(1, 100))
_b("group.share.assignors", LI, ["simple"], "Share group assignors.")
_b("group.share.persister.class.name", S, "org.apache.kafka.server.share.persister.DefaultStatePersister",
   "Persister of share group state.")
_b("share.fetch.purgatory.purge.interval.requests", I, 1000, "Purge interval of the share fetch purgatory.")
_b("group.streams.max.size", I, INT_MAX, "Most members of a streams group.", at_least(1))
_b("group.streams.num.standby.replicas", I, 0, "Standby replicas of a streams group.", at_least(0))
_b("group.streams.max.standby.replicas", I, 2, "Most standby replicas of a streams group.", at_least(0))
_b("group.streams.task.offset.interval.ms", I, 60000, "How often warm-up task offsets are reported.",
   at_least(1))
_b("group.streams.min.task.offset.interval.ms", I, 15000, "Shortest task offset interval of streams groups.",
   at_least(1))
_b("group.streams.num.warmup.replicas", I, 2, "Warm-up replicas of a streams group.", at_least(0))
_b("group.streams.acceptable.recovery.lag", L, 10000, "Lag under which a streams task counts as caught up.",
   at_least(0))
_b("group.streams.initial.rebalance.delay.ms", I, 3000, "Delay before the first streams group "
   "assignment.", at_least(0))
# ------------------------------------------------------------------ share coordinator
_b("share.coordinator.state.topic.num.partitions", I, 50, "Partitions of __share_group_state.", at_least(1))
_b("share.coordinator.state.topic.replication.factor", SH, 3, "Replication factor of __share_group_state.",
   at_least(1))
_b("share.coordinator.state.topic.segment.bytes", I, 104857600, "Segment size of __share_group_state.",
   at_least(1))
_b("share.coordinator.state.topic.min.isr", SH, 2, "min.insync.replicas of __share_group_state.",
   at_least(1))
_b("share.coordinator.state.topic.compression.codec", I, 0, "Compression codec of __share_group_state.")
_b("share.coordinator.state.topic.prune.interval.ms", I, 300000, "How often share state is pruned.",
   at_least(1), hidden=True)
_b("share.coordinator.cold.partition.snapshot.interval.ms", I, 300000, "How often share partitions that "
   "do not change are snapshotted.", at_least(1), hidden=True)
_b("share.coordinator.cached.buffer.max.bytes", I, 1048588, "Largest write buffer the share coordinator "
   "keeps for reuse.", at_least(512 * 1024), CW)
_b("share.coordinator.snapshot.update.records.per.snapshot", I, 500, "Share state updates per snapshot.",
   between(0, 500))
_b("share.coordinator.threads", I, 1, "Share coordinator threads.", at_least(1))
_b("share.coordinator.write.timeout.ms", I, 5000, "How long a share state write waits for replication.",
   at_least(1))
_b("share.coordinator.append.linger.ms", I, -1, "How long the share coordinator gathers writes; -1: "
   "adaptive.", at_least(-1))
_b("share.coordinator.load.buffer.size", I, 5242880, "Batch size when loading share state.", at_least(1))
# ------------------------------------------------------------------ transactions
_b("transaction.state.log.segment.bytes", I, 104857600, "Segment size of __transaction_state.", at_least(1))
_b("transaction.state.log.replication.factor", SH, 3, "Replication factor of __transaction_state.",
   at_least(1))
_b("transaction.state.log.num.partitions", I, 50, "Partitions of __transaction_state.", at_least(1))
_b("transaction.state.log.min.isr", I, 2, "min.insync.replicas of __transaction_state.", at_least(1))
_b("transaction.state.log.load.buffer.size", I, 5242880, "Batch size when loading transactions.",
   at_least(1))
_b("transaction.partition.verification.enable", B, True, "Check that a partition is in the transaction "
   "before appending to it.", None, CW)
_b("transaction.max.timeout.ms", I, 900000, "Longest transaction timeout a producer may ask for.",
   at_least(1))
_b("transactional.id.expiration.ms", I, 604800000, "A transactional id idle this long is forgotten.",
   at_least(1))
_b("transaction.abort.timed.out.transaction.cleanup.interval.ms", I, 10000, "How often timed-out "
   "transactions are aborted.", at_least(1))
_b("transaction.remove.expired.transaction.cleanup.interval.ms", I, 3600000, "How often expired "
   "transactional ids are removed.", at_least(1))
_b("transaction.two.phase.commit.enable", B, False, "Allow two-phase commit transactions (KIP-939).")
_b("producer.id.expiration.ms", I, 86400000, "A producer id idle this long is forgotten.", at_least(1), CW)
_b("producer.id.expiration.check.interval.ms", I, 600000, "How often idle producer ids are removed.",
   at_least(1))
_b("add.partitions.to.txn.retry.backoff.max.ms", I, 100, "Longest retry of AddPartitionsToTxn.", at_least(0))
_b("add.partitions.to.txn.retry.backoff.ms", I, 20, "First retry backoff of AddPartitionsToTxn.",
   at_least(1))
# ------------------------------------------------------------------ quotas, metrics
for _q in ("quota", "replication.quota", "alter.log.dirs.replication.quota", "controller.quota"):
    _b(f"{_q}.window.num", I, 11, f"Samples kept for {_q.replace('.', ' ')} rates.", at_least(1))
    _b(f"{_q}.window.size.seconds", I, 1, f"Length of each {_q.replace('.', ' ')} sample.", at_least(1))
_b("client.quota.callback.class", C, None, "ClientQuotaCallback class.")
# Set only dynamically, so Kafka describes them only once set.
_b("leader.replication.throttled.rate", L, LONG_MAX, "Leader replication throttle in bytes/s.", at_least(0),
   CW, hidden=True)
_b("follower.replication.throttled.rate", L, LONG_MAX, "Follower replication throttle in bytes/s.",
   at_least(0), CW, hidden=True)
_b("replica.alter.log.dirs.io.max.bytes.per.second", L, LONG_MAX, "Throttle of moves between log dirs.",
   at_least(0), CW, hidden=True)
_b("metric.reporters", LI, ["org.apache.kafka.common.metrics.JmxReporter"], "MetricsReporter classes.",
   None, CW)
_b("metrics.num.samples", I, 2, "Samples kept to compute metrics.", at_least(1))
_b("metrics.sample.window.ms", L, 30000, "Window of a metrics sample.", at_least(1))
_b("metrics.recording.level", S, "INFO", "Highest recording level of metrics.")
_b("kafka.metrics.reporters", LI, [], "Yammer metrics reporter classes.")
_b("kafka.metrics.polling.interval.secs", I, 10, "Polling interval of the metrics reporters.", at_least(1))
_b("telemetry.max.bytes", I, 1048576, "Largest client telemetry push.", at_least(1))
_b("config.providers", LI, [], "ConfigProvider names.", None, CW)
# ------------------------------------------------------------------ security (BrokerSecurityConfigs, SSL, SASL)
_b("principal.builder.class", C, "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
   "KafkaPrincipalBuilder class.", None, PB)
_b("ssl.client.auth", S, "none", "Whether TLS clients must present a certificate.",
   one_of("required", "requested", "none"), PB)
_b("ssl.principal.mapping.rules", S, "DEFAULT", "Rules from certificate names to principals.")
_b("sasl.enabled.mechanisms", LI, ["GSSAPI"], "SASL mechanisms served.", None, PB)
_b("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", "SASL mechanism between brokers.", None, PB)
_b("sasl.kerberos.principal.to.local.rules", LI, ["DEFAULT"], "Rules from Kerberos principals to short "
   "names.", None, PB)
_b("sasl.server.callback.handler.class", C, None, "SASL server callback handler class.")
_b("sasl.server.max.receive.size", I, 524288, "Largest SASL message before authentication.")
_b("connections.max.reauth.ms", L, 0, "Longest session before re-authentication; 0: none.")
_b("ssl.allow.dn.changes", B, False, "Allow a reloaded keystore to change its DN.")
_b("ssl.allow.san.changes", B, False, "Allow a reloaded keystore to change its SANs.")
_b("sasl.jaas.config", P, None, "JAAS login context of SASL connections.", None, PB)
_b("sasl.kerberos.service.name", S, None, "Kerberos principal name Kafka runs as.", None, PB)
_b("sasl.kerberos.kinit.cmd", S, "/usr/bin/kinit", "Path of kinit.", None, PB)
_b("sasl.kerberos.ticket.renew.window.factor", D, 0.8, "Share of a ticket's life before renewal.", None, PB)
_b("sasl.kerberos.ticket.renew.jitter", D, 0.05, "Jitter added to the renewal time.", None, PB)
_b("sasl.kerberos.min.time.before.relogin", L, 60000, "Least time between relogin attempts.", None, PB)
_b("sasl.login.refresh.window.factor", D, 0.8, "Share of a credential's life before refresh.",
   between(0.5, 1.0), PB)
_b("sasl.login.refresh.window.jitter", D, 0.05, "Jitter added to the refresh time.", between(0.0, 0.25), PB)
_b("sasl.login.refresh.min.period.seconds", SH, 60, "Least time between credential refreshes.",
   between(0, 900), PB)
_b("sasl.login.refresh.buffer.seconds", SH, 300, "Time kept before credential expiry when refreshing.",
   between(0, 3600), PB)
_b("sasl.login.callback.handler.class", C, None, "SASL login callback handler class.")
_b("sasl.login.class", C, None, "Login class.")
_b("sasl.client.callback.handler.class", C, None, "SASL client callback handler class.")
_b("sasl.login.connect.timeout.ms", I, None, "Connect timeout of an OAuth login.")
_b("sasl.login.read.timeout.ms", I, None, "Read timeout of an OAuth login.")
_b("sasl.login.retry.backoff.max.ms", L, 10000, "Longest backoff of OAuth login retries.")
_b("sasl.login.retry.backoff.ms", L, 100, "First backoff of OAuth login retries.")
_b("sasl.oauthbearer.scope.claim.name", S, "scope", "JWT claim that holds the scope.")
_b("sasl.oauthbearer.sub.claim.name", S, "sub", "JWT claim that holds the subject.")
_b("sasl.oauthbearer.token.endpoint.url", S, None, "OAuth token endpoint.")
_b("sasl.oauthbearer.jwks.endpoint.url", S, None, "JWKS endpoint that verifies tokens.")
_b("sasl.oauthbearer.jwks.endpoint.refresh.ms", L, 3600000, "How often the JWKS cache is refreshed.")
_b("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", L, 10000, "Longest backoff of JWKS retries.")
_b("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", L, 100, "First backoff of JWKS retries.")
_b("sasl.oauthbearer.clock.skew.seconds", I, 30, "Clock skew allowed when checking tokens.")
_b("sasl.oauthbearer.expected.audience", LI, None, "Audiences a token must name.")
_b("sasl.oauthbearer.expected.issuer", S, None, "Issuer a token must name.")
_b("sasl.oauthbearer.header.urlencode", B, False, "URL-encode the client credentials header.")
_b("security.providers", S, None, "Security provider creator classes.")
_b("ssl.protocol", S, "TLSv1.3", "TLS protocol of the SSLContext.", None, PB)
_b("ssl.provider", S, None, "JSSE security provider.", None, PB)
_b("ssl.cipher.suites", LI, [], "Cipher suites allowed; empty: all the JVM supports.", None, PB)
_b("ssl.enabled.protocols", LI, ["TLSv1.2", "TLSv1.3"], "TLS protocols enabled.", None, PB)
_b("ssl.keystore.type", S, "JKS", "Keystore format.", None, PB)
_b("ssl.keystore.location", S, None, "Keystore file.", None, PB)
_b("ssl.keystore.password", P, None, "Keystore password.", None, PB)
_b("ssl.key.password", P, None, "Private key password.", None, PB)
_b("ssl.keystore.key", P, None, "Private key in PEM.", None, PB)
_b("ssl.keystore.certificate.chain", P, None, "Certificate chain in PEM.", None, PB)
_b("ssl.truststore.type", S, "JKS", "Truststore format.", None, PB)
_b("ssl.truststore.location", S, None, "Truststore file.", None, PB)
_b("ssl.truststore.password", P, None, "Truststore password.", None, PB)
_b("ssl.truststore.certificates", P, None, "Trusted certificates in PEM.", None, PB)
_b("ssl.keymanager.algorithm", S, "SunX509", "Key manager factory algorithm.", None, PB)
_b("ssl.trustmanager.algorithm", S, "PKIX", "Trust manager factory algorithm.", None, PB)
_b("ssl.endpoint.identification.algorithm", S, "https", "Server hostname check of TLS peers.", None, PB)
_b("ssl.secure.random.implementation", S, None, "SecureRandom implementation.", None, PB)
_b("ssl.engine.factory.class", C, None, "SslEngineFactory class.", None, PB)
_b("delegation.token.secret.key", P, None, "Secret that signs delegation tokens.")
_b("delegation.token.max.lifetime.ms", L, WEEK_MS, "Longest life of a delegation token.", at_least(1))
_b("delegation.token.expiry.time.ms", L, DAY_MS, "Renewal period of a delegation token.", at_least(1))
_b("delegation.token.expiry.check.interval.ms", L, HOUR_MS, "How often expired tokens are removed.",
   at_least(1))
# ------------------------------------------------------------------ tiered storage (RemoteLogManagerConfig)
_b("remote.log.storage.system.enable", B, False, "Enable tiered storage.")
_b("remote.log.storage.manager.class.name", S, None, "RemoteStorageManager class.", non_empty)
_b("remote.log.storage.manager.class.path", S, None, "Class path of the RemoteStorageManager.")
_b("remote.log.storage.manager.impl.prefix", S, "rsm.config.", "Prefix of RemoteStorageManager configs.",
   non_empty)
_b("remote.log.metadata.manager.class.name", S, "org.apache.kafka.server.log.remote.metadata.storage."
   "TopicBasedRemoteLogMetadataManager", "RemoteLogMetadataManager class.", non_empty)
_b("remote.log.metadata.manager.class.path", S, None, "Class path of the RemoteLogMetadataManager.")
_b("remote.log.metadata.manager.impl.prefix", S, "rlmm.config.", "Prefix of RemoteLogMetadataManager "
   "configs.", non_empty)
_b("remote.log.metadata.manager.listener.name", S, None, "Listener the metadata manager connects to.",
   non_empty)
_b("remote.log.metadata.custom.metadata.max.bytes", I, 128, "Largest custom metadata of a remote segment.",
   at_least(0))
_b("remote.log.index.file.cache.total.size.bytes", L, 1073741824, "Disk for cached remote indexes.",
   at_least(1), CW)
_b("remote.log.manager.thread.pool.size", I, 2, "Threads that schedule remote log tasks.", at_least(1))
_b("remote.log.manager.copier.thread.pool.size", I, 10, "Threads that copy segments to remote storage.",
   at_least(1), CW)
_b("remote.log.manager.expiration.thread.pool.size", I, 10, "Threads that expire remote segments.",
   at_least(1), CW)
_b("remote.log.manager.follower.thread.pool.size", I, 2, "Threads that follow remote log metadata.",
   at_least(1), CW)
_b("remote.log.manager.task.interval.ms", L, 30000, "Interval of remote log tasks.", at_least(1))
_b("remote.log.manager.task.retry.backoff.ms", L, 500, "First backoff of a failed remote task.",
   at_least(1), hidden=True)
_b("remote.log.manager.task.retry.backoff.max.ms", L, 30000, "Longest backoff of a failed remote task.",
   at_least(1), hidden=True)
_b("remote.log.manager.task.retry.jitter", D, 0.2, "Jitter of remote task backoffs.", between(0, 0.5),
   hidden=True)
_b("remote.log.reader.threads", I, 10, "Threads that read remote segments.", at_least(1), CW)
_b("remote.log.reader.max.pending.tasks", I, 100, "Queued remote reads.", at_least(1))
_b("remote.log.manager.copy.max.bytes.per.second", L, LONG_MAX, "Copy rate limit to remote storage.",
   at_least(1), CW)
_b("remote.log.manager.copy.quota.window.num", I, 11, "Samples of the copy rate.", at_least(1))
_b("remote.log.manager.copy.quota.window.size.seconds", I, 1, "Length of a copy rate sample.", at_least(1))
_b("remote.log.manager.fetch.max.bytes.per.second", L, LONG_MAX, "Fetch rate limit from remote storage.",
   at_least(1), CW)
_b("remote.log.manager.fetch.quota.window.num", I, 11, "Samples of the remote fetch rate.", at_least(1))
_b("remote.log.manager.fetch.quota.window.size.seconds", I, 1, "Length of a remote fetch rate sample.",
   at_least(1))
_b("remote.fetch.max.wait.ms", I, 500, "Longest wait of a fetch that reads remote data.", at_least(1), CW)
_b("remote.list.offsets.request.timeout.ms", L, 30000, "Timeout of ListOffsets on remote data.",
   at_least(1), CW)
# ------------------------------------------------------------------ kwire's own
_b("cluster.id", S, None, "kwire: the cluster id a new data dir is formatted with (Kafka: kafka-storage "
   "format).", kwire=True)
_b("metadata.snapshot.interval.entries", I, 10000, "kwire: committed metadata entries between snapshots.",
   at_least(1), kwire=True)

# ------------------------------------------------------------------ topic configs (TopicConfig, LogConfig)
_t("segment.bytes", I, 1073741824, "Segment file size of the log.", at_least(1024 * 1024),
   ["log.segment.bytes"])
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
_t("remote.copy.lag.ms", L, 0, "Age a segment reaches before it is copied to remote storage; -1: the local "
   "retention.", at_least(-1))
_t("remote.copy.lag.bytes", L, 0, "Bytes a partition holds locally before segments are copied to remote "
   "storage; -1: the local retention.", at_least(-1))
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
_g("consumer.assignor.offload.enable", B, "group.consumer.assignor.offload.enable", "Run this group's "
   "assignor on a background thread.")
_g("share.assignment.interval.ms", I, "group.share.assignment.interval.ms", "Interval between assignment "
   "updates of this share group.", at_least(0))
_g("share.assignor.offload.enable", B, "group.share.assignor.offload.enable", "Run this group's assignor on "
   "a background thread.")
_g("streams.assignment.interval.ms", I, "group.streams.assignment.interval.ms", "Interval between "
   "assignment updates of this streams group.", at_least(0))
_g("streams.assignor.offload.enable", B, "group.streams.assignor.offload.enable", "Run this group's "
   "assignor on a background thread.")
_g("streams.task.offset.interval.ms", I, "group.streams.task.offset.interval.ms", "How often warm-up task "
   "offsets are reported.", at_least(1))
_g("streams.num.warmup.replicas", I, "group.streams.num.warmup.replicas", "Warm-up replicas of this streams "
   "group.", at_least(0))
_g("streams.acceptable.recovery.lag", L, "group.streams.acceptable.recovery.lag", "Lag under which a task "
   "counts as caught up.", at_least(0))
_g("errors.deadletterqueue.topic.name", S, None, "Dead-letter topic of this share group (KIP-1191); empty: "
   "none.", default="")
_g("errors.deadletterqueue.copy.record.enable", B, None, "Copy the record's key and value to the dead-letter "
   "topic.", default=False)
_g("streams.initial.rebalance.delay.ms", I, "group.streams.initial.rebalance.delay.ms", "Delay before this "
   "streams group's first assignment.", at_least(0))


def _share_reset(name, v):
    import re  # noqa: PLC0415

    from kwire.configdef import ConfigError  # noqa: PLC0415

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
                                   _k.synonyms)

# Broker keys kwire acts on (everything else is stored and described only).
USED = frozenset({
    "node.id", "broker.id", "listeners", "advertised.listeners", "log.dir", "log.dirs", "num.partitions",
    "default.replication.factor", "auto.create.topics.enable", "delete.topic.enable", "socket.request.max.bytes",
    "log.retention.check.interval.ms", "offsets.topic.num.partitions", "offsets.retention.minutes",
    "offsets.retention.check.interval.ms", "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms",
    "group.max.session.timeout.ms", "group.max.size", "producer.id.expiration.ms", "broker.rack",
    "controller.quorum.voters", "broker.session.timeout.ms", "cluster.id", "metadata.snapshot.interval.entries",
    "log.flush.per.append",
} | {s for k in TOPIC.values() for s in k.synonyms})

# The topic key each broker key stands behind (log.retention.hours -> retention.ms).
TOPIC_OF_BROKER_KEY: dict[str, str] = {s: k.name for k in TOPIC.values() for s in k.synonyms}

# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: keys that set the same thing, strongest first.
BROKER_SYNONYMS: dict[str, list[str]] = {}
for _grp in (["log.roll.ms", "log.roll.hours"], ["log.roll.jitter.ms", "log.roll.jitter.hours"],
             ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]):
    for _n in _grp:
        BROKER_SYNONYMS[_n] = _grp
BROKER_SYNONYMS["log.flush.interval.ms"] = ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]

"""Broker keys of the server itself: general, KRaft, metadata log, sockets, replication, log, cleaner."""
from __future__ import annotations

from kwire.configdef import (  # noqa: F401
    DOUBLE_MAX, INT_MAX, LONG_MAX, at_least, between, gzip_level, list_of, non_empty, one_of,
)
from kwire.config_keys.define import (  # noqa: F401
    B, S, I, SH, L, D, LI, C, P, RO, PB, CW, HOUR_MS, DAY_MS, WEEK_MS, COMPRESSION, PROTOCOLS, BROKER, TOPIC, GROUP, _b, _t, _g,
)

# ------------------------------------------------------------------ general (ServerConfigs, KRaftConfigs)
_b("node.id", I, 1, "This node's id in the cluster (kwire default 1; Kafka requires it to be set).", at_least(0))
_b("broker.id", I, -1, "Older name of node.id; set either.")
# Kafka 4.x no longer defines these ZooKeeper-era keys (its DescribeConfigs does not list them):
# accepted, described only when set
_b("broker.id.generation.enable", B, True, "Generate a broker id when none is configured (ZooKeeper only).",
   hidden=True)
_b("reserved.broker.max.id", I, 1000, "Highest broker id that may be configured by hand (ZooKeeper only).",
   at_least(0), hidden=True)
_b("process.roles", LI, ["broker", "controller"], "The roles of this node: broker, controller, or both (kwire "
   "default: both; Kafka requires it to be set).", list_of("broker", "controller", allow_empty=False))
_b("message.max.bytes", I, 1048588, "Largest record batch a topic accepts (after compression); topic "
   "level: max.message.bytes.", at_least(0), CW)
_b("num.io.threads", I, 8, "Threads that handle requests.", at_least(1), CW)
_b("num.network.threads", I, 3, "Threads that read requests from and write responses to the network.",
   at_least(1), CW)
_b("num.replica.alter.log.dirs.threads", I, None, "Threads that move replicas between log directories.")
_b("background.threads", I, 10, "Threads for background tasks.", at_least(1), CW)
_b("request.timeout.ms", I, 30000, "How long the broker waits for an answer to a request it sends; kwire also closes a "
   "connection whose half-sent request has made no progress for this long.")
_b("socket.connection.setup.timeout.ms", L, 10000, "How long to wait for an outgoing connection.")
_b("socket.connection.setup.timeout.max.ms", L, 30000, "Upper bound of the connection setup backoff.")
_b("authorizer.class.name", S, "", "Class that authorizes requests; empty: no authorization (kwire has "
   "org.apache.kafka.metadata.authorizer.StandardAuthorizer).",
   one_of("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "kwire.security.authorizer.StandardAuthorizer"))
_b("super.users", S, None, "Principals allowed everything by the authorizer, ';'-separated (User:admin;User:ops).")
_b("allow.everyone.if.no.acl.found", B, False, "The authorizer allows a request on a resource no ACL names.")
_b("early.start.listeners", LI, None, "Listeners started before the authorizer is ready.")
_b("broker.rack", S, None, "Rack of this broker: rack-aware replica placement, preferred read replicas "
   "(replica.selector.class), Metadata / DescribeCluster.")
_b("controlled.shutdown.enable", B, True, "Move leadership away before shutting down.")
_b("controlled.shutdown.max.retries", I, 3, "Retries of a failed controlled shutdown (ZooKeeper only).",
   hidden=True)
_b("controlled.shutdown.retry.backoff.ms", L, 5000, "Wait between controlled shutdown retries (ZooKeeper only).",
   hidden=True)
_b("delete.topic.enable", B, True, "Allow DeleteTopics.")
_b("compression.type", S, "producer", "Final compression of a topic's batches; producer keeps the "
   "producer's codec.", one_of(*COMPRESSION), CW)
_b("compression.gzip.level", I, -1, "Level of gzip compression.", gzip_level, CW)
_b("compression.lz4.level", I, 9, "Level of lz4 compression.", between(1, 17), CW)
_b("compression.zstd.level", I, 3, "Level of zstd compression.", between(-131072, 22), CW)
_b("max.incremental.fetch.session.cache.slots", I, 1000, "Most incremental fetch sessions kept.", at_least(0))
_b("fetch.max.bytes", I, 57671680, "Most bytes answered to one fetch request.", at_least(1024))
_b("max.request.partition.size.limit", I, 2000, "Most partitions served in one request.", at_least(1))
_b("eligible.leader.replicas.enable", B, False, "Use eligible leader replicas (KIP-966; Kafka 4 keeps it "
   "internal: eligible.leader.replicas.version).", hidden=True)
_b("initial.broker.registration.timeout.ms", I, 60000, "How long a starting broker waits to register.")
_b("broker.heartbeat.interval.ms", I, 2000, "Time between broker heartbeats to the controller.")
_b("broker.session.timeout.ms", I, 9000, "A broker without heartbeats for this long is fenced.")
_b("controller.listener.names", LI, None, "Names of the listeners the controller uses; the first one's "
   "protocol (listener.security.protocol.map) secures the links to and between controllers.")
_b("sasl.mechanism.controller.protocol", S, "GSSAPI", "SASL mechanism to reach the controllers on a SASL "
   "controller listener (kwire: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).")
_b("server.max.startup.time.ms", L, LONG_MAX, "Longest a starting broker waits to catch up.", at_least(0), hidden=True)
_b("controller.performance.sample.period.ms", L, 60000, "Period of controller performance samples.", at_least(100),
   hidden=True)
_b("controller.max.records.per.batch", I, 10000, "Most records in one metadata log batch.", at_least(1),
   hidden=True)
_b("controller.performance.always.log.threshold.ms", L, 2000, "Controller events slower than this are "
   "logged.", at_least(0), hidden=True)
_b("kwire.test.unreachable.nodes.file", S, None, "Tests only: a file of node ids this node can neither reach nor "
   "be reached by on its inter-broker links (kwire.link_faults).", kwire=True, hidden=True)
_b("kwire.test.failed.log.dirs.file", S, None, "Tests only: a file naming log dirs (one absolute path a line) "
   "that fail as on an I/O error once listed (kwire.broker, kwire.log.dir_failure).", kwire=True, hidden=True)
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
_b("controller.quorum.fetch.max.bytes", I, 1048576, "Most bytes a KRaft Fetch asks for.", at_least(1))
_b("controller.quorum.fetch.snapshot.max.bytes", I, 1048576, "Most bytes a KRaft FetchSnapshot asks for.",
   at_least(1))
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
_b("socket.send.buffer.bytes", I, -1, "SO_SNDBUF of client sockets; -1: the OS default (kwire's default; "
   "Kafka's: 102400).")
_b("socket.receive.buffer.bytes", I, -1, "SO_RCVBUF of client sockets; -1: the OS default (kwire's default; "
   "Kafka's: 102400).")
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
_b("leader.imbalance.per.broker.percentage", I, 10, "Leader imbalance allowed per broker, in percent "
   "(ZooKeeper only; Kafka 4.x does not define it).", hidden=True)
_b("leader.imbalance.check.interval.seconds", L, 300, "How often leader balance is checked.", at_least(1))
_b("unclean.leader.election.enable", B, False, "Let an out-of-sync replica become leader as a last "
   "resort.", None, CW)
_b("inter.broker.listener.name", S, None, "Listener brokers use to talk to each other (replica fetches, "
   "transaction markers): a broker connects to this listener of its peer; unset: the listener named by "
   "security.inter.broker.protocol.")
_b("security.inter.broker.protocol", S, "PLAINTEXT", "Security protocol between brokers: the inter-broker "
   "listener is the one of this name (not with inter.broker.listener.name).", one_of(*PROTOCOLS))
_b("replica.selector.class", S, None, "ReplicaSelector class that picks a consumer's preferred read replica "
   "(KIP-392); unset: consumers read from the leader (kwire has "
   "org.apache.kafka.common.replica.RackAwareReplicaSelector).",
   one_of("", "org.apache.kafka.common.replica.RackAwareReplicaSelector"))
_b("follower.fetch.last.tiered.offset.enable", B, False, "Followers start from the last tiered offset.",
   None, CW)
# ------------------------------------------------------------------ log (ServerLogConfigs, LogConfig)
_b("num.partitions", I, 1, "Partitions of topics created without a count.", at_least(1))
_b("log.dir", LI, ["./kwire-data"], "Directory of the log data, when log.dirs is not set (kwire default "
   "./kwire-data; Kafka's: /tmp/kafka-logs).")
_b("log.dirs", LI, None, "Directories of the log data (JBOD: partitions spread over them, metadata in the "
   "first); default: log.dir.")
_b("cordoned.log.dirs", LI, [], "Log dirs that take no new replicas (KIP-1066; not used by kwire).", None, PB)
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
# ------------------------------------------------------------------ Kafka-version emulation (kwire.emulation)
from kwire.emulation import CONFIG_KEY as _EMULATE_KEY, DEFAULT_KAFKA_VERSION as _EMULATE_DEFAULT, KAFKA_VERSIONS as _EMULATED  # noqa: E402

_b(_EMULATE_KEY, S, _EMULATE_DEFAULT, "kwire: the Kafka release whose API versions this broker advertises in "
   "ApiVersions and accepts (older releases serve the versions Kafka 4 removed: Produce v0-2 with message format "
   "v0/v1, Fetch v0-3, OffsetCommit v0-1 ...; 4.x refuses them as Kafka 4 does). Default: the newest release "
   "whose APIs kwire serves in full. The APIs a release has and kwire does not serve are listed in "
   "docs/emulation.md.", one_of(*_EMULATED), kwire=True)

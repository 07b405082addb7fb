"""Broker keys of the coordinators, quotas, metrics, security and tiered storage; kwire's own keys."""
from __future__ import annotations

from kwire.configdef import (  # noqa: F401
    INT_MAX, LONG_MAX, at_least, between, list_of, non_empty, one_of,
)
from kwire.config_keys.define import (  # noqa: F401
    B, S, I, SH, L, D, LI, C, P, RO, PB, CW, HOUR_MS, DAY_MS, WEEK_MS, COMPRESSION, PROTOCOLS, BROKER, TOPIC, GROUP, _b, _t, _g,
)

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
       "thread.", None, CW, hidden=True)
_b("group.consumer.max.size", I, INT_MAX, "Most members of a consumer group.", at_least(1))
_b("group.consumer.assignors", LI, ["uniform", "range"], "Server-side assignors (names or classes); the "
   "first is the default.")
_b("group.consumer.migration.policy", S, "bidirectional", "Conversion between classic and consumer "
   "groups.", one_of("disabled", "downgrade", "upgrade", "bidirectional", case_insensitive=True))
_b("group.share.max.size", I, 200, "Most members of a share group.", between(1, 1000))
_b("group.share.delivery.count.limit", I, 5, "Deliveries of a record before it is archived.", between(2, 10))
# Kafka 4.2: the bounds a share group's own delivery.count.limit and record locks are held to
_b("group.share.min.delivery.count.limit", I, 2, "Lowest delivery count limit of a share group.", between(2, 10))
_b("group.share.max.delivery.count.limit", I, 10, "Highest delivery count limit of a share group.", between(2, 10))
_b("group.share.min.partition.max.record.locks", I, 100, "Fewest in-flight records a share partition may be "
   "limited to.", between(100, 10000))
_b("group.share.max.partition.max.record.locks", I, 4000, "Most in-flight records a share partition may be "
   "allowed.", between(100, 10000))
_b("group.share.max.share.sessions", I, 2000, "Most share sessions a broker keeps.", at_least(1))
_b("group.share.record.lock.duration.ms", I, 30000, "Acquisition lock of a share group record.",
   between(1000, 3600000))
_b("group.share.min.record.lock.duration.ms", I, 15000, "Shortest record lock duration.",
   between(1000, 30000))
_b("group.share.max.record.lock.duration.ms", I, 60000, "Longest record lock duration.",
   between(30000, 3600000))
_b("group.share.partition.max.record.locks", I, 2000, "In-flight records per share partition.",
   between(100, 10000))
_b("group.share.max.groups", SH, 10, "Most share groups (Kafka 4.0, 4.1).", between(1, 100), hidden=True)
_b("group.share.assignors", LI, ["simple"], "Share group assignors.")
_b("group.share.persister.class.name", S, "org.apache.kafka.server.share.persister.DefaultStatePersister",
   "Persister of share group state.", hidden=True)
_b("share.fetch.purgatory.purge.interval.requests", I, 1000, "Purge interval of the share fetch purgatory.")
_b("group.streams.max.size", I, INT_MAX, "Most members of a streams group.", at_least(1))
_b("group.streams.num.standby.replicas", I, 0, "Standby replicas of a streams group.", at_least(0))
_b("group.streams.max.standby.replicas", I, 2, "Most standby replicas of a streams group.", at_least(0))
_b("group.streams.task.offset.interval.ms", I, 60000, "How often warm-up task offsets are reported.",
   at_least(1), hidden=True)
_b("group.streams.min.task.offset.interval.ms", I, 15000, "Shortest task offset interval of streams groups.",
   at_least(1), hidden=True)
_b("group.streams.num.warmup.replicas", I, 2, "Warm-up replicas of a streams group.", at_least(0), hidden=True)
_b("group.streams.acceptable.recovery.lag", L, 10000, "Lag under which a streams task counts as caught up.",
   at_least(0), hidden=True)
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
   at_least(1), hidden=True)
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
_b("sasl.mechanism.inter.broker.protocol", S, "GSSAPI", "SASL mechanism between brokers on a SASL "
   "inter-broker listener (kwire: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512).", None, PB)
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
_b("sasl.oauthbearer.expected.audience", LI, [], "Audiences a token must name.")
_b("sasl.oauthbearer.expected.issuer", S, None, "Issuer a token must name.")
_b("sasl.oauthbearer.header.urlencode", B, False, "URL-encode the client credentials header.", hidden=True)
# KIP-1139 (Kafka 4.1): the JWT-bearer grant and pluggable retriever/validator
_b("sasl.oauthbearer.scope", S, None, "Scope asked for when a token is fetched.")
_b("sasl.oauthbearer.client.credentials.client.id", S, None, "Client id of the client-credentials grant.")
_b("sasl.oauthbearer.client.credentials.client.secret", P, None, "Client secret of the client-credentials grant.")
_b("sasl.oauthbearer.jwt.retriever.class", C, "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
   "How a token is obtained.")
_b("sasl.oauthbearer.jwt.validator.class", C, "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator",
   "How a token is checked.")
_b("sasl.oauthbearer.assertion.algorithm", S, "RS256", "Algorithm that signs a JWT-bearer assertion.")
_b("sasl.oauthbearer.assertion.claim.aud", S, None, "aud claim of a JWT-bearer assertion.")
_b("sasl.oauthbearer.assertion.claim.exp.seconds", I, 300, "Lifetime of a JWT-bearer assertion.", between(0, 86400))
_b("sasl.oauthbearer.assertion.claim.iss", S, None, "iss claim of a JWT-bearer assertion.")
_b("sasl.oauthbearer.assertion.claim.jti.include", B, False, "Add a jti claim to a JWT-bearer assertion.")
_b("sasl.oauthbearer.assertion.claim.nbf.seconds", I, 60, "How long before now a JWT-bearer assertion is valid.",
   between(0, 3600))
_b("sasl.oauthbearer.assertion.claim.sub", S, None, "sub claim of a JWT-bearer assertion.")
_b("sasl.oauthbearer.assertion.file", S, None, "File holding a ready JWT-bearer assertion.")
_b("sasl.oauthbearer.assertion.private.key.file", S, None, "Private key that signs JWT-bearer assertions.")
_b("sasl.oauthbearer.assertion.private.key.passphrase", P, None, "Passphrase of that private key.")
_b("sasl.oauthbearer.assertion.template.file", S, None, "Template of a JWT-bearer assertion's header and claims.")
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
_b("metrics.listen", S, "", "kwire: HOST:PORT of the Prometheus text endpoint (GET /metrics); empty: off (kwire "
   "serve's default is 127.0.0.1:9464, the in-process test broker's is off).", kwire=True)
_b("metadata.snapshot.interval.entries", I, 10000, "kwire: committed metadata entries between snapshots.",
   at_least(1), kwire=True)

_b("share.version", SH, 1, "kwire: the share.version feature level the cluster finalizes (KIP-932), "
   "advertised in ApiVersions when the emulated release has share groups (4.1+); 1: share groups "
   "(ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge and the share-group "
   "offsets admin APIs) are served; 0: they are not (UNSUPPORTED_VERSION, left out of ApiVersions).",
   between(0, 1), kwire=True)
_b("transaction.version", SH, None, "kwire: the transaction.version feature level the cluster finalizes, "
   "advertised in ApiVersions (Kafka sets it with kafka-storage format --feature or kafka-features "
   "upgrade); 2: KIP-890 part 2, producers skip AddPartitionsToTxn/AddOffsetsToTxn (Produce v12 and "
   "TxnOffsetCommit v5 add the partition) and EndTxn v5 bumps the epoch of every transaction. Unset: "
   "the emulated release's default, as kafka-storage format picks it: 2 under Kafka 4.x emulation, 1 "
   "under 3.x (which has no version 2, so 2 is taken as 1 there too).",
   between(1, 2), kwire=True)

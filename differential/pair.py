"""kwire and Apache Kafka, configured alike, side by side.

Both get the same broker settings (``COMMON``); each side keeps what a case needs to translate a
symbolic request into its own ids (topic ids by name)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from kwire.testing import Broker
from kwire.testing.apache_kafka import ApacheKafka

from differential.wire import Conn

# The settings both brokers run with; anything a case's outcome depends on is set here explicitly
# rather than left to each broker's default.
COMMON = {
    "num.partitions": "2",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "true",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.num.partitions": "3",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "message.max.bytes": "1048588",
    "delete.topic.enable": "true",
}


# The secured pair (``Pair(secured=True)``): one SASL_PLAINTEXT listener with PLAIN and these users,
# Kafka's StandardAuthorizer on both, no ACL at first: a principal may do only what an ACL allows.
# ``admin`` is a super user (every connection of the harness's own setup logs in as admin);
# ANONYMOUS is one too because Kafka's controller listener is PLAINTEXT (its broker registers
# and heartbeats as ANONYMOUS) and kwire's harness listener is too; no case connects on either.
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
SECURED_COMMON = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
    "allow.everyone.if.no.acl.found": "false",
    "sasl.enabled.mechanisms": "PLAIN",
}


def _plain_jaas(users: dict, login: str | None = None) -> str:
    me = f'username="{login}" password="{users[login]}" ' if login else ""
    return ("org.apache.kafka.common.security.plain.PlainLoginModule required " + me
            + " ".join(f'user_{u}="{p}"' for u, p in users.items()) + ";")


@dataclass
class Side:
    name: str               # "kafka" or "kwire"
    bootstrap: str
    topic_ids: dict = field(default_factory=dict)   # topic name -> uuid, learnt from answers
    ranges: dict = field(default_factory=dict)      # api key -> (min, max) this side serves
    common: dict = field(default_factory=dict)      # api key -> (min, max) both sides serve
    users: dict | None = None   # a secured side: user -> password (SASL/PLAIN before any request)
    user: str = "admin"         # who the side's connections log in as unless told

    def connect(self, client_id: str = "differential", user: str | None = None) -> Conn:
        if self.users is None:
            return Conn(self.bootstrap, client_id)
        name = user or self.user
        return Conn(self.bootstrap, client_id, sasl=(name, self.users[name]))


class Pair:
    """Start with ``Pair().start()``; ``close()`` stops both (by PID for Kafka)."""

    def __init__(self, overrides: dict | None = None, kwire_mode: str = "thread", secured: bool = False):
        self.secured = secured
        self.overrides = {**COMMON, **(SECURED_COMMON if secured else {}), **(overrides or {})}
        if secured:
            # Kafka's broker talks to itself (the transaction verification) on the same listener, as admin
            kafka_sasl = {"sasl.mechanism.inter.broker.protocol": "PLAIN",
                          "listener.name.sasl_plaintext.plain.sasl.jaas.config": _plain_jaas(USERS, "admin")}
            self.kafka = ApacheKafka(nodes=1, overrides={**self.overrides, **kafka_sasl}, listener="SASL_PLAINTEXT")
            self.kwire = Broker(mode=kwire_mode, overrides=self.overrides, storage="memory",
                                security="SASL_PLAINTEXT", users=USERS)
        else:
            self.kafka = ApacheKafka(nodes=1, overrides=self.overrides)
            self.kwire = Broker(mode=kwire_mode, overrides=self.overrides, storage="memory")
        self.sides: list[Side] = []

    def start(self) -> "Pair":
        try:
            self.kwire.start()
            self.kafka.start()
            users = USERS if self.secured else None
            self.sides = [Side("kafka", self.kafka.bootstrap_servers, users=users),
                          Side("kwire", self.kwire.bootstrap_servers, users=users)]
            for side in self.sides:
                warm_up(side)
                side.ranges = served_versions(side)
            common = {k: (max(lo, self.sides[1].ranges[k][0]), min(hi, self.sides[1].ranges[k][1]))
                      for k, (lo, hi) in self.sides[0].ranges.items() if k in self.sides[1].ranges}
            for side in self.sides:
                side.common = {k: r for k, r in common.items() if r[0] <= r[1]}
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        try:
            self.kafka.close()
        finally:
            self.kwire.cleanup()

    def __enter__(self) -> "Pair":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def java_partition(key: str, partitions: int) -> int:
    """Kafka's partitionFor of a group or transactional id: Utils.abs(String.hashCode) % n."""
    h = 0
    for ch in key.encode("utf-16-be").decode("utf-16-be"):
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return (h & 0x7FFFFFFF) % partitions


def keys_per_partition(prefix: str, partitions: int) -> list[str]:
    """One key per partition of an internal topic, so warming them up touches every partition."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < partitions:
        key = f"{prefix}-{i}"
        found.setdefault(java_partition(key, partitions), key)
        i += 1
    return [found[p] for p in sorted(found)]


def warm_up(side: Side, timeout: float = 90.0) -> None:
    """Create and load the internal topics (__consumer_offsets, __transaction_state) and the producer
    id block before any case runs, so no case sees one broker still loading a coordinator the other
    has ready: every partition of both topics answers a request that needs its coordinator loaded."""
    from differential.session import S
    conn = side.connect("warm-up")
    deadline = time.monotonic() + timeout

    def until_ok(what: str, call, ok) -> None:
        while True:
            out = call()
            if out.kind == "response" and ok(out.body):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{side.name}: {what} not ready: {out}")
            time.sleep(0.2)

    try:
        for key in keys_per_partition("warm-up-group", int(COMMON["offsets.topic.num.partitions"])):
            until_ok(key, lambda: conn.call("FindCoordinator", 4, key_type=0, coordinator_keys=[key]),
                     lambda b: all(c.error_code == 0 for c in b.coordinators))
            G = S("OffsetFetch", "OffsetFetchRequestGroup")
            until_ok(key, lambda: conn.call("OffsetFetch", 8, groups=[G(group_id=key, topics=None)]),
                     lambda b: all(g.error_code == 0 for g in b.groups))
        for key in keys_per_partition("warm-up-txn", int(COMMON["transaction.state.log.num.partitions"])):
            until_ok(key, lambda: conn.call("FindCoordinator", 4, key_type=1, coordinator_keys=[key]),
                     lambda b: all(c.error_code == 0 for c in b.coordinators))
            until_ok(key, lambda: conn.call("InitProducerId", 1, transactional_id=key, transaction_timeout_ms=60000),
                     lambda b: b.error_code == 0)
        # the first idempotent producer id: Kafka's broker fetches a block of ids from the controller first
        until_ok("producer ids", lambda: conn.call("InitProducerId", 1, transactional_id=None,
                                                   transaction_timeout_ms=60000), lambda b: b.error_code == 0)
    finally:
        conn.close()


def served_versions(side: Side) -> dict:
    conn = side.connect("versions")
    try:
        out = conn.call("ApiVersions", 3, client_software_name="differential", client_software_version="1")
        return {k.api_key: (k.min_version, k.max_version) for k in out.body.api_keys}
    finally:
        conn.close()

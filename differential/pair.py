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


@dataclass
class Side:
    name: str               # "kafka" or "kwire"
    bootstrap: str
    topic_ids: dict = field(default_factory=dict)   # topic name -> uuid, learnt from answers
    ranges: dict = field(default_factory=dict)      # api key -> (min, max) this side serves
    common: dict = field(default_factory=dict)      # api key -> (min, max) both sides serve

    def connect(self, client_id: str = "differential") -> Conn:
        return Conn(self.bootstrap, client_id)


class Pair:
    """Start with ``Pair().start()``; ``close()`` stops both (by PID for Kafka)."""

    def __init__(self, overrides: dict | None = None, kwire_mode: str = "thread"):
        self.overrides = {**COMMON, **(overrides or {})}
        self.kafka = ApacheKafka(nodes=1, overrides=self.overrides)
        self.kwire = Broker(mode=kwire_mode, overrides=self.overrides, storage="memory")
        self.sides: list[Side] = []

    def start(self) -> "Pair":
        try:
            self.kwire.start()
            self.kafka.start()
            self.sides = [Side("kafka", self.kafka.bootstrap_servers), Side("kwire", self.kwire.bootstrap_servers)]
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


def warm_up(side: Side, timeout: float = 60.0) -> None:
    """Create the internal topics (__consumer_offsets, __transaction_state) before any case runs, so
    no case sees one broker still loading a coordinator the other has ready."""
    conn = side.connect("warm-up")
    try:
        deadline = time.monotonic() + timeout
        for key_type, key in ((0, "warm-up-group"), (1, "warm-up-txn")):
            while True:
                out = conn.call("FindCoordinator", 4, key_type=key_type, coordinator_keys=[key])
                if out.kind == "response" and all(c.error_code == 0 for c in out.body.coordinators):
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{side.name}: no coordinator for {key!r}: {out}")
                time.sleep(0.2)
        # the first producer id: Kafka's broker fetches a block of ids from the controller first
        while True:
            out = conn.call("InitProducerId", 1, transactional_id=None, transaction_timeout_ms=60000)
            if out.kind == "response" and out.body.error_code == 0:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{side.name}: no producer id: {out}")
            time.sleep(0.2)
    finally:
        conn.close()


def served_versions(side: Side) -> dict:
    conn = side.connect("versions")
    try:
        out = conn.call("ApiVersions", 3, client_software_name="differential", client_software_version="1")
        return {k.api_key: (k.min_version, k.max_version) for k in out.body.api_keys}
    finally:
        conn.close()

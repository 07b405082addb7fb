"""Requests the stock clients send, recorded through a RecordingProxy and replayed on both brokers.

Each workload (confluent-kafka: admin create, idempotent produce, a consumer in a group that
commits, a transaction, admin delete; kafka-python: admin create, acks=all produce, a group
consumer that commits, admin delete) runs once against a throwaway kwire through the proxy; the recorded
request frames are then replayed in order, one live connection per recorded one, on Kafka and on
kwire. What a broker assigned in the recording (member ids, producer ids and epochs, fetch session
ids, topic ids) is replaced by what the live broker assigned: learnt by walking each recorded answer
beside the live answer to the same request. A Fetch waits at most 100 ms (a client's long poll would
only make the replay slow)."""
from __future__ import annotations

import struct
import time
import uuid

from kwire.codec.apis import APIS
from hypothesis import strategies as st

from kwire.codec.frame import decode_request, decode_response, peek_header
from kwire.codec.records import crc32c
from kwire.codec.schema import StructBase

from differential.recording import Exchange, RecordingProxy
from differential.run import Family
from differential.session import Session

# field name -> kind of broker-assigned value
ASSIGNED = {"member_id": "member", "leader": "member", "producer_id": "producer_id",
            "producer_epoch": "producer_epoch", "session_id": "session"}
KEEP = {"member": ("",), "producer_id": (-1,), "producer_epoch": (-1,), "session": (0,)}


def confluent_workload(bootstrap: str, tag: str) -> None:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic, group, txn = f"rec-{tag}-t", f"rec-{tag}-g", f"rec-{tag}-txn"
    base = {"bootstrap.servers": bootstrap, "broker.address.family": "v4"}
    admin = AdminClient(base)
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(15)
    time.sleep(0.5)
    p = Producer({**base, "enable.idempotence": True, "linger.ms": 5})
    for i in range(10):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2, timestamp=1_700_000_000_000 + i)
    assert p.flush(15) == 0
    c = Consumer({**base, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100, "session.timeout.ms": 10000})
    c.subscribe([topic])
    got, deadline = 0, time.monotonic() + 20
    while got < 10 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got += 1
    c.commit(asynchronous=False)
    c.close()
    t = Producer({**base, "transactional.id": txn, "linger.ms": 5})
    t.init_transactions(15)
    t.begin_transaction()
    for i in range(3):
        t.produce(topic, key=b"t", value=f"t{i}".encode(), partition=0, timestamp=1_700_000_001_000 + i)
    t.commit_transaction(15)
    admin.delete_topics([topic])[topic].result(15)


def kafka_python_workload(bootstrap: str, tag: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    topic, group = f"rec-{tag}-t", f"rec-{tag}-g"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    admin.create_topics([NewTopic(topic, 2, 1)])
    time.sleep(0.5)
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for i in range(10):
        p.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 2,
               timestamp_ms=1_700_000_000_000 + i)
    p.flush(15)
    p.close()
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                      enable_auto_commit=False, fetch_max_wait_ms=100, consumer_timeout_ms=10000)
    got = 0
    for _ in c:
        got += 1
        if got >= 10:
            break
    c.commit()
    c.close()
    admin.delete_topics([topic])
    admin.close()


WORKLOADS = {"confluent": confluent_workload, "kafka-python": kafka_python_workload}
_recorded: dict[str, list[Exchange]] = {}


def record(name: str) -> list[Exchange]:
    """The workload's exchanges, recorded once per process against a throwaway kwire."""
    if name not in _recorded:
        from kwire.testing import Broker
        from differential.pair import COMMON
        with Broker(overrides=COMMON, storage="memory") as b:
            with RecordingProxy(b.host, b.port) as proxy:
                WORKLOADS[name](proxy.bootstrap, name)
                time.sleep(0.3)
            _recorded[name] = list(proxy.exchanges)
    return _recorded[name]


class Mapper:
    """Recorded broker-assigned values -> this side's, learnt from pairs of answers."""

    def __init__(self, s: Session):
        self.s = s
        self.values: dict[str, dict] = {}
        self.recorded_topic_names: dict[uuid.UUID, str] = {}

    def learn(self, recorded, live) -> None:
        if isinstance(recorded, StructBase) and type(recorded) is type(live):
            name, tid = getattr(recorded, "name", None), getattr(recorded, "topic_id", None)
            if isinstance(tid, uuid.UUID) and tid.int and isinstance(name, str) and name:
                self.recorded_topic_names[tid] = name
            for f in recorded._fields:
                a, b = getattr(recorded, f), getattr(live, f)
                kind = ASSIGNED.get(f)
                if kind and a not in KEEP[kind] and b not in KEEP[kind] and a != b:
                    self.values.setdefault(kind, {})[a] = b
                if isinstance(a, (StructBase, list)):
                    self.learn(a, b)
        elif isinstance(recorded, list) and isinstance(live, list):
            for a, b in zip(recorded, live):
                self.learn(a, b)

    def rewrite(self, obj, api_key: int):
        if isinstance(obj, list):
            return [self.rewrite(x, api_key) for x in obj]
        if not isinstance(obj, StructBase):
            return obj
        for f in obj._fields:
            v = getattr(obj, f)
            kind = ASSIGNED.get(f)
            if kind and v in self.values.get(kind, {}):
                setattr(obj, f, self.values[kind][v])
            elif f == "topic_id" and isinstance(v, uuid.UUID) and v in self.recorded_topic_names:
                setattr(obj, f, self.s.side.topic_ids.get(self.recorded_topic_names[v], v))
            elif f == "records" and v is not None and api_key == 0:
                setattr(obj, f, self.batch(bytes(v)))
            elif f == "max_wait_ms" and api_key == 1:
                setattr(obj, f, min(v, 100))
            elif isinstance(v, (StructBase, list)):
                self.rewrite(v, api_key)
        return obj

    def batch(self, data: bytes) -> bytes:
        """Producer id and epoch in each v2 batch header, and its CRC over the rest."""
        out = bytearray(data)
        pos = 0
        while pos + 61 <= len(out) and out[pos + 16] == 2:
            length = struct.unpack_from(">i", out, pos + 8)[0]
            pid, epoch = struct.unpack_from(">qh", out, pos + 43)
            pid = self.values.get("producer_id", {}).get(pid, pid)
            epoch = self.values.get("producer_epoch", {}).get(epoch, epoch)
            struct.pack_into(">qh", out, pos + 43, pid, epoch)
            struct.pack_into(">I", out, pos + 17, crc32c(bytes(out[pos + 21:pos + 12 + length])))
            pos += 12 + length
        return bytes(out)


def coordinator_keys(exchanges: list[Exchange]) -> tuple[set, set]:
    """The group ids and transactional ids the recorded requests name."""
    groups, txns = set(), set()
    for ex in exchanges:
        key, _, _ = peek_header(ex.request)
        body = decode_request(ex.request).body
        if key == 10:   # FindCoordinator
            keys = list(getattr(body, "coordinator_keys", None) or []) or [body.key]
            (txns if body.key_type == 1 else groups).update(k for k in keys if k)
        elif getattr(body, "group_id", None):
            groups.add(body.group_id)
    return groups, txns


def replay(s: Session, name: str) -> None:
    exchanges = record(name)
    groups, txns = coordinator_keys(exchanges)
    for g in sorted(groups):   # a client retries while a coordinator loads; the replay waits instead
        s.wait_coordinator(g)
    for t in sorted(txns):
        s.wait_coordinator(t, key_type=1)
    mapper = Mapper(s)
    own = s.conn
    conns = {}
    for i, ex in enumerate(exchanges):
        key, version, _ = peek_header(ex.request)
        req = decode_request(ex.request)
        a = APIS[key]
        body = mapper.rewrite(req.body, key)
        conn = conns.get(ex.connection)
        if conn is None:
            conn = conns[ex.connection] = s.side.connect(req.header.client_id or "replay")
        acks0 = key == 0 and getattr(body, "acks", 1) == 0
        s.conn = conn
        out = conn.call(a.name, version, body, expect_response=not acks0 and ex.response is not None)
        s.log.append((f"replay-{name}-{i}", a.name, version, out))
        s._learn(out)
        if key == 19 and out.kind == "response" and not getattr(body, "validate_only", False):
            # a client retries NOT_LEADER_OR_FOLLOWER while a new topic's leaders come up; the
            # replay waits for them instead (Kafka's broker applies the topic a moment after its
            # controller answered)
            for t in body.topics:
                if t.num_partitions > 0:
                    s.wait_ready(t.name, t.num_partitions)
        if out.kind == "response" and out.body is not None and ex.response is not None:
            try:
                _, recorded = decode_response(a, version, ex.response)
            except Exception:  # noqa: BLE001 - an answer of the recording we cannot read teaches nothing
                continue
            mapper.learn(recorded, out.body)
    for c in conns.values():
        c.close()
    s.conn = own


FAMILIES = [
    # the recording's request count depends on the client's timing: make differential only, not CI
    Family("replay", st.sampled_from(sorted(WORKLOADS)), replay, examples=len(WORKLOADS), ci_examples=0),
]

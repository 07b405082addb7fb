"""Produce, Fetch, ListOffsets: good batches and bad ones, offsets in and out of range, unknown topics,
partitions and topic ids, fenced and unknown leader epochs, fetch sessions."""
from __future__ import annotations

import uuid

from hypothesis import strategies as st

from kwire.codec.records import GZIP, build_batch

from differential.run import Family
from differential.session import S, Session

TS = 1_700_000_000_000   # fixed record timestamps: both logs hold the same bytes
UNKNOWN_ID = uuid.UUID(int=0x0BAD_0BAD_0BAD_0BAD)
BATCHES = ["ok", "ok", "gzip", "null", "empty-bytes", "bad-crc", "oversized", "unknown-pid",
           "transactional-no-txn", "base-offset-5", "no-timestamps-type-append"]


def batch(kind: str, i: int = 0) -> bytes | None:
    recs = [(f"k{i}-{j}".encode(), f"v{i}-{j}".encode() * 3, [], TS + j) for j in range(3)]
    if kind == "ok":
        return build_batch(recs)
    if kind == "gzip":
        return build_batch(recs, compression=GZIP)
    if kind == "null":
        return None
    if kind == "empty-bytes":
        return b""
    if kind == "bad-crc":
        b = bytearray(build_batch(recs))
        b[-1] ^= 0xFF
        return bytes(b)
    if kind == "oversized":
        return build_batch([(b"k", b"x" * 1_100_000, [], TS)])
    if kind == "unknown-pid":
        return build_batch(recs, producer_id=424242, producer_epoch=0, base_sequence=0)
    if kind == "transactional-no-txn":
        return build_batch(recs, producer_id=424243, producer_epoch=0, base_sequence=0, is_transactional=True)
    if kind == "base-offset-5":
        return build_batch(recs, base_offset=5)
    if kind == "no-timestamps-type-append":
        return build_batch(recs, timestamp_type=1)
    raise ValueError(kind)


def produce_request(s: Session, version: int, name: str, partition: int, records, acks: int = -1,
                    txn: str | None = None) -> dict:
    T = S("Produce", "TopicProduceData")
    P = S("Produce", "PartitionProduceData")
    t = T(partition_data=[P(index=partition, records=records)])
    if version >= 13:
        t.topic_id = s.topic_id(name) if not name.endswith("missing") else UNKNOWN_ID
    else:
        t.name = name
    fields = {"acks": acks, "timeout_ms": 10000, "topic_data": [t]}
    if version >= 3:
        fields["transactional_id"] = txn
    return fields


def fill(s: Session, name: str, n_batches: int) -> None:
    for i in range(n_batches):
        s.setup("Produce", 9, **produce_request(s, 9, name, 0, batch("ok", i)))


# ---------------------------------------------------------------- Produce
def produce(s: Session, p) -> None:
    vdraw, acks, target, kind, topic_config = p
    version = s.version("Produce", vdraw)
    s.create_topic(s.topic("a"), 2, {"message.timestamp.type": "LogAppendTime"} if topic_config == "log-append" else
                   {"max.message.bytes": "200"} if topic_config == "small-max" else {})
    name = s.topic("missing") if target == "unknown-topic" else s.topic("a")
    partition = 7 if target == "bad-partition" else 0
    # Kafka never answers null records (docs/differences.md W14): a short wait is enough to tell
    wait = 2.0 if kind == "null" else None
    s.call("Produce", version, expect_response=acks != 0, timeout=wait,
           **produce_request(s, version, name, partition, batch(kind), acks=acks))
    # the connection must still serve (Kafka closes it after a failed acks=0 produce)
    T = S("ListOffsets", "ListOffsetsTopic")
    LP = S("ListOffsets", "ListOffsetsPartition")
    s.call("ListOffsets", 7, label="ListOffsets-after-produce", timeout=wait, replica_id=-1, isolation_level=0,
           topics=[T(name=s.topic("a"), partitions=[LP(partition_index=0, timestamp=-1)])])


V = st.integers(0, 10_000)   # a version draw (Session.version turns it into one both serve)
produce_st = st.tuples(V, st.sampled_from([-1, -1, 1, 0]),
                       st.sampled_from(["ok", "ok", "ok", "unknown-topic", "bad-partition"]),
                       st.sampled_from(BATCHES), st.sampled_from(["none", "none", "log-append", "small-max"]))


# ---------------------------------------------------------------- Fetch
def fetch(s: Session, p) -> None:
    vdraw, offset, partition, target, isolation, max_bytes, part_max, epoch, session = p
    version = s.version("Fetch", vdraw)
    s.create_topic(s.topic("a"), 2)
    fill(s, s.topic("a"), 2)    # offsets 0-5, high watermark 6
    T = S("Fetch", "FetchTopic")
    FP = S("Fetch", "FetchPartition")
    name = s.topic("missing") if target == "unknown-topic" else s.topic("a")
    t = T(partitions=[FP(partition=partition, fetch_offset=offset, partition_max_bytes=part_max,
                         current_leader_epoch=epoch, log_start_offset=-1)])
    if version >= 13:
        t.topic_id = UNKNOWN_ID if target == "unknown-topic" else s.topic_id(name)
    else:
        t.topic = name
    fields = {"replica_id": -1, "max_wait_ms": 50, "min_bytes": 0 if offset >= 6 else 1, "max_bytes": max_bytes,
              "isolation_level": isolation, "topics": [t]}
    if version >= 7 and session:
        fields["session_id"], fields["session_epoch"] = 0, 0
    body = s.call("Fetch", version, **fields)
    if version >= 7 and session and body is not None and getattr(body, "session_id", 0):
        # an incremental fetch on the new session: nothing changed, so no partitions come back
        s.call("Fetch", version, label="Fetch-incremental", replica_id=-1, max_wait_ms=0, min_bytes=0,
               max_bytes=max_bytes, isolation_level=isolation, session_id=body.session_id, session_epoch=1, topics=[])
        s.call("Fetch", version, label="Fetch-bad-session-epoch", replica_id=-1, max_wait_ms=0, min_bytes=0,
               max_bytes=max_bytes, isolation_level=isolation, session_id=body.session_id, session_epoch=5, topics=[])


fetch_st = st.tuples(V, st.sampled_from([0, 0, 3, 6, 100, -1]), st.sampled_from([0, 0, 0, 9]),
                     st.sampled_from(["ok", "ok", "ok", "unknown-topic"]), st.sampled_from([0, 1]),
                     st.sampled_from([1, 100, 1 << 20]), st.sampled_from([1, 100, 1 << 20]),
                     st.sampled_from([-1, -1, 0, 5]), st.booleans())


# ---------------------------------------------------------------- ListOffsets
def list_offsets(s: Session, p) -> None:
    vdraw, entries, isolation = p
    version = s.version("ListOffsets", vdraw)
    s.create_topic(s.topic("a"), 2)
    fill(s, s.topic("a"), 2)
    T = S("ListOffsets", "ListOffsetsTopic")
    LP = S("ListOffsets", "ListOffsetsPartition")
    topics: dict[str, list] = {}
    for target, partition, ts, epoch in entries:
        name = s.topic("missing") if target == "unknown-topic" else s.topic("a")
        parts = topics.setdefault(name, [])
        if any(x.partition_index == partition for x in parts):
            continue
        parts.append(LP(partition_index=partition, timestamp=ts, current_leader_epoch=epoch))
    fields = {"replica_id": -1, "topics": [T(name=n, partitions=ps) for n, ps in topics.items()]}
    if version >= 2:
        fields["isolation_level"] = isolation
    if version >= 10:
        fields["timeout_ms"] = 5000
    s.call("ListOffsets", version, **fields)


list_offsets_st = st.tuples(
    V,
    st.lists(st.tuples(st.sampled_from(["ok", "ok", "unknown-topic"]), st.sampled_from([0, 1, 5]),
                       st.sampled_from([-1, -2, -3, -4, -5, 0, TS, TS + 1, TS + 10**6, -7]),
                       st.sampled_from([-1, -1, 0, 3])), min_size=1, max_size=3),
    st.sampled_from([0, 1]))


FAMILIES = [
    Family("produce", produce_st, produce, examples=150, ci_examples=15),
    Family("fetch", fetch_st, fetch, examples=150, ci_examples=12),
    Family("list_offsets", list_offsets_st, list_offsets, examples=100, ci_examples=10),
]

"""The executor side of the ``kwire`` source: read one offset range of one partition and hand
it to Spark as Arrow record batches. The common case goes through kwire.spark.fetch (Fetch
answers to Arrow buffers in C); whatever it leaves, and every query it cannot serve, is read
with confluent-kafka, the columns built with the consumer's C accessors.

Consumers are pooled per Python worker (Spark reuses its workers between tasks), as Spark's
own Kafka source pools them per executor: a micro-batch then costs a re-assignment, not a new
connection and a metadata round trip.

confluent_kafka (~40 ms) and pyarrow (~100 ms) are imported in the functions that use them:
Spark's Python processes that only plan a query import this module too (through
kwire.spark.source) and never read.
"""
from __future__ import annotations

import logging
import time
import uuid
from bisect import bisect_left
from typing import Iterator

from kwire.spark import fetch as fast
from kwire.spark.offsets import DATA_LOSS, DataLossError, Range

log = logging.getLogger("kwire.spark")

_POOL: dict[tuple, object] = {}
_BATCH = 20_000


def _consumer(client: dict, fail_on_data_loss: bool, group_id_prefix: str = "spark-kafka-source"):
    from confluent_kafka import Consumer  # noqa: PLC0415 - start-up time (module doc)
    # the group id a consumer reports (ACLs, quotas, monitoring): kafka.group.id when given,
    # else groupIdPrefix plus a unique part and "-executor", as Spark names its executors' groups
    # isolation.level: read_uncommitted unless kafka.isolation.level says otherwise, as Spark's
    # (Kafka's Java consumer's default, and what the driver planned the ranges with: the high
    # watermark); librdkafka's own default is read_committed
    conf = {"group.id": f"{group_id_prefix}-{uuid.uuid4()}-executor", "isolation.level": "read_uncommitted",
            **client,
            "enable.auto.commit": False, "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error" if fail_on_data_loss else "earliest"}
    key = (tuple(sorted(client.items())), fail_on_data_loss, group_id_prefix)
    c = _POOL.pop(key, None)
    if c is None:
        c = Consumer(conf)
    return key, c


def _release(key: tuple, c) -> None:
    old = _POOL.pop(key, None)
    if old is not None and old is not c:
        old.close()
    _POOL[key] = c


def _headers_type():
    import pyarrow as pa  # noqa: PLC0415 - start-up time (module doc)
    return pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))


def _to_batch(msgs: list, rng: Range, schema, include_headers: bool):
    import pyarrow as pa  # noqa: PLC0415 - start-up time (module doc)
    import pyarrow.compute as pc  # noqa: PLC0415 - start-up time (module doc)
    from confluent_kafka import Message  # noqa: PLC0415 - start-up time (module doc)
    n = len(msgs)
    stamps = list(map(Message.timestamp, msgs))
    ts_type = [t for t, _ in stamps]
    ts_ms = pa.array([ts for _, ts in stamps], pa.int64())
    cols = [
        pa.array(list(map(Message.key, msgs)), pa.binary()),
        pa.array(list(map(Message.value, msgs)), pa.binary()),
        pa.array([rng.topic] * n, pa.string()),
        pa.array([rng.partition] * n, pa.int32()),
        pa.array(list(map(Message.offset, msgs)), pa.int64()),
        pc.multiply(ts_ms, 1000).cast(pa.timestamp("us", tz="UTC")),
        # librdkafka: 1 CreateTime, 2 LogAppendTime, 0 not available; Spark: 0, 1 (and -1)
        pa.array([t - 1 if t else -1 for t in ts_type], pa.int32()),
    ]
    if include_headers:
        hs = list(map(Message.headers, msgs))
        cols.append(pa.array([[{"key": k, "value": v} for k, v in h] if h else None for h in hs],
                             _headers_type()))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def read_range(rng: Range, client: dict, schema, *, include_headers: bool, fail_on_data_loss: bool,
               poll_timeout_ms: int, group_id_prefix: str = "spark-kafka-source") -> Iterator:
    """Yield Arrow record batches holding the records of ``rng`` (start inclusive, end exclusive).
    Offsets the log no longer has (control records, aborted or compacted records) are skipped;
    records deleted before ``rng.start`` are data loss (failOnDataLoss)."""
    if rng.end <= rng.start:
        return
    key = c = None
    ok = False
    try:
        pos = rng.start
        if fast.usable(client, include_headers):   # the common case, in bulk; the rest from its stop
            if rng.leader is None:   # no leader from the driver: the consumer's metadata names it
                key, c = _consumer(client, fail_on_data_loss, group_id_prefix)
            pos = yield from fast.read(rng, client, schema, pos, c)
            if pos >= rng.end:
                ok = True
                return
        from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition  # noqa: PLC0415 - start-up time (module doc): only off the fast path
        if c is None:
            key, c = _consumer(client, fail_on_data_loss, group_id_prefix)
        c.assign([TopicPartition(rng.topic, rng.partition, pos)])
        deadline = time.monotonic() + poll_timeout_ms / 1000.0
        while pos < rng.end:
            msgs = c.consume(num_messages=_BATCH, timeout=0.5)
            if not msgs:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Reading {rng.topic}-{rng.partition} offsets {pos}-{rng.end - 1}: no "
                                       f"records within kafkaConsumer.pollTimeoutMs={poll_timeout_ms}")
                continue
            deadline = time.monotonic() + poll_timeout_ms / 1000.0
            if any(map(Message.error, msgs)):
                good = []
                for m in msgs:
                    err = m.error()
                    if err is None:
                        good.append(m)
                    elif err.code() == KafkaError._PARTITION_EOF:
                        if m.offset() >= rng.end:   # the rest of the range holds no records
                            pos = rng.end
                    elif err.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                        raise DataLossError(f"Reading {rng.topic}-{rng.partition} from offset {pos}: "
                                            f"{err.str()}. {DATA_LOSS}")
                    elif err.fatal() or not err.retriable():
                        raise KafkaException(err)
                    else:
                        log.warning("reading %s-%d: %s", rng.topic, rng.partition, err.str())
                msgs = good
                if not msgs:
                    continue
            offs = list(map(Message.offset, msgs))
            if offs[-1] >= rng.end:
                msgs = msgs[:bisect_left(offs, rng.end)]
                pos = rng.end
            else:
                pos = max(pos, offs[-1] + 1)
            if msgs:
                yield _to_batch(msgs, rng, schema, include_headers)
        ok = True
    finally:
        if c is not None:   # the fast path with the driver's leader made none
            if ok:
                _release(key, c)
            else:
                c.close()

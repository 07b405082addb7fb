"""The ``kwire`` sink: DataFrame rows to Kafka records with confluent-kafka, columns as in
Spark's Kafka sink: topic (string; the ``topic`` option wins over it), key and value (string
or binary), headers (array<struct<key string, value binary>>), partition (int).

At least once by default, like Spark's sink: a task waits for every delivery report and fails
on the first error, so Spark's retry writes the task's rows again.

``exactlyOnce=true`` (needs a broker with transactions, the ``topic`` option and
``transactionalIdPrefix``): each writer task writes in one Kafka transaction under the
transactional.id ``<prefix>-<partition id>``. ``init_transactions`` fences a zombie of an
earlier attempt and aborts what it left open. In a streaming query the task also commits the
micro-batch id, as the consumer offset of group ``<prefix>-<partition id>`` on partition 0 of
the topic, inside the same transaction, with the streaming query's id (Spark keeps it in the
checkpoint: it names the checkpoint) as the offset's metadata; a replayed micro-batch whose id is
already committed by the same query is skipped. A prefix whose ids were committed by another
query (a new checkpoint starts again at micro-batch 0: its batches would all be skipped as
written, silently) is refused with a message that names the fix. Read the output with
isolation.level=read_committed.

confluent_kafka (~40 ms) is imported in the functions that write, as in kwire.spark.consume:
a Python process that only plans a query does not load it.
"""
from __future__ import annotations

import logging
from typing import Iterator

from pyspark import TaskContext
from pyspark.sql.datasource import (DataSourceArrowWriter, DataSourceStreamArrowWriter,
                                    WriterCommitMessage)
from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, StringType, StructType)

from kwire.spark.options import OptionError, WriteOptions, write_options

log = logging.getLogger("kwire.spark")
_FLUSH_TIMEOUT_S = 300.0


class KafkaCommitMessage(WriterCommitMessage):
    def __init__(self, records: int, skipped: bool = False):
        self.records = records
        self.skipped = skipped


def _check_schema(schema: StructType, opts: WriteOptions) -> None:
    fields = {f.name.lower(): f.dataType for f in schema.fields}
    if "topic" in fields:
        if not isinstance(fields["topic"], StringType):
            raise OptionError(f"Topic type must be a string, got {fields['topic'].simpleString()}")
    elif not opts.topic:
        raise OptionError("topic option required when no 'topic' attribute is present. Use the topic "
                          "option for setting a topic.")
    if "value" not in fields:
        raise OptionError("Required attribute 'value' not found")
    for col in ("key", "value"):
        if col in fields and not isinstance(fields[col], (StringType, BinaryType)):
            raise OptionError(f"{col.capitalize()} attribute type must be a string or binary, got "
                              f"{fields[col].simpleString()}")
    if "headers" in fields:
        h = fields["headers"]
        ok = (isinstance(h, ArrayType) and isinstance(h.elementType, StructType)
              and [f.name for f in h.elementType.fields] == ["key", "value"]
              and isinstance(h.elementType.fields[0].dataType, StringType)
              and isinstance(h.elementType.fields[1].dataType, BinaryType))
        if not ok:
            raise OptionError("Headers attribute type must be array<struct<key:string,value:binary>>, got "
                              f"{h.simpleString()}")
    if "partition" in fields and not isinstance(fields["partition"], IntegerType):
        raise OptionError(f"Partition attribute type must be an int, got {fields['partition'].simpleString()}")
    if opts.exactly_once and not opts.topic:
        raise OptionError("Option 'exactlyOnce' needs the 'topic' option: the topic the micro-batch ids "
                          "are committed on")


def _bytes(v):
    return v.encode() if isinstance(v, str) else v


class _Delivery:
    def __init__(self):
        self.error = None
        self.delivered = 0

    def __call__(self, err, msg):
        if err is not None:
            if self.error is None:
                self.error = err
        else:
            self.delivered += 1


def _produce_batches(producer, batches: Iterator, opts: WriteOptions, report: _Delivery) -> int:
    n_total = 0
    for batch in batches:
        names = [f.lower() for f in batch.schema.names]
        col = {name: batch.column(i).to_pylist() for i, name in enumerate(names)}
        n = batch.num_rows
        topics = [opts.topic] * n if opts.topic else col["topic"]
        values = col["value"]
        keys = col.get("key") or [None] * n
        parts = col.get("partition") or [None] * n
        headers = col.get("headers") or [None] * n
        for i in range(n):
            t = topics[i]
            if t is None:
                raise ValueError("null topic present in the data. Use the topic option for setting a topic.")
            kw = {}
            if parts[i] is not None:
                kw["partition"] = parts[i]
            if headers[i]:
                kw["headers"] = [(h["key"], h["value"]) for h in headers[i]]
            while True:
                try:
                    producer.produce(t, _bytes(values[i]), _bytes(keys[i]), on_delivery=report, **kw)
                    break
                except BufferError:
                    producer.poll(0.05)
            if report.error is not None:
                break
        producer.poll(0)
        n_total += n
        if report.error is not None:
            break
    return n_total


def _producer(opts: WriteOptions, extra: dict | None = None):
    from confluent_kafka import Producer  # noqa: PLC0415 - start-up time (module doc)
    # delivery.timeout.ms: the Java producer's default (120 s) under Spark's sink, not librdkafka's
    # five minutes; a user's kafka.delivery.timeout.ms / kafka.message.timeout.ms wins
    conf = {"linger.ms": 5, "enable.idempotence": True, **opts.client, **(extra or {})}
    # a transactional producer's deliveries are bounded by transaction.timeout.ms (librdkafka
    # refuses a longer message.timeout.ms); the others get the Java producer's 120 s
    if not ({"delivery.timeout.ms", "message.timeout.ms", "transactional.id"} & conf.keys()):
        conf["message.timeout.ms"] = 120_000
    return Producer(conf)


def _raise_if_failed(producer, report: _Delivery, bootstrap: str | None = None) -> None:
    from confluent_kafka import KafkaError, KafkaException  # noqa: PLC0415 - start-up time (module doc)
    remaining = producer.flush(_FLUSH_TIMEOUT_S)
    if report.error is not None:
        if report.error.code() in (KafkaError._MSG_TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
            raise KafkaException(KafkaError(report.error.code(), f"kwire sink: records not delivered to the brokers "
                                            f"at {bootstrap} within kafka.delivery.timeout.ms: {report.error.str()}"))
        raise KafkaException(report.error)
    if remaining:
        raise TimeoutError(f"{remaining} records were not acknowledged by the broker in time")


def _write_at_least_once(opts: WriteOptions, batches: Iterator) -> KafkaCommitMessage:
    producer = _producer(opts)
    report = _Delivery()
    n = _produce_batches(producer, batches, opts, report)
    _raise_if_failed(producer, report, opts.client.get("bootstrap.servers"))
    return KafkaCommitMessage(n)


class CheckpointMismatch(RuntimeError):
    """The transactionalIdPrefix holds micro-batch ids of another streaming query."""


_QUERY_TAG = "kwire.spark query="


def _check_owner(committed, tid: str, query_id: str | None) -> None:
    """The micro-batch ids under ``tid`` must be this query's (this checkpoint's): another
    query's ids would make this one skip batches it never wrote."""
    meta = getattr(committed, "metadata", None) or ""
    if committed.offset < 0 or not meta.startswith(_QUERY_TAG) or query_id is None:
        return      # nothing committed yet, or committed before ids were recorded
    owner = meta[len(_QUERY_TAG):]
    if owner != query_id:
        raise CheckpointMismatch(
            f"exactlyOnce: transactionalIdPrefix '{tid.rsplit('-', 1)[0]}' already holds micro-batch "
            f"{committed.offset - 1} of another streaming query (query id {owner}; this checkpoint's is "
            f"{query_id}). A new checkpoint starts again at micro-batch 0, and its batches would be skipped "
            f"as already written. Give this checkpoint its own transactionalIdPrefix, or restart from the "
            f"checkpoint that query used.")


def _write_transaction(opts: WriteOptions, batches: Iterator, batch_id: int | None,
                       query_id: str | None = None) -> KafkaCommitMessage:
    """One transaction for this task; with a micro-batch id, the id commits with the records."""
    from confluent_kafka import Consumer, TopicPartition  # noqa: PLC0415 - start-up time (module doc)
    ctx = TaskContext.get()
    tid = f"{opts.transactional_id_prefix}-{ctx.partitionId() if ctx else 0}"
    producer = _producer(opts, {"transactional.id": tid})
    producer.init_transactions()        # fences an earlier attempt of this task, aborts its leftovers
    marker = TopicPartition(opts.topic, 0)
    group = None
    if batch_id is not None:
        # the group's consumer: it reads the last committed micro-batch id and names the group
        # the new id is committed to
        group = Consumer({**opts.client, "group.id": tid, "enable.auto.commit": False,
                          "isolation.level": "read_committed"})
    try:
        if group is not None:
            committed = group.committed([marker], timeout=30)[0]
            _check_owner(committed, tid, query_id)
            done = committed.offset
            if done >= batch_id + 1:
                log.info("micro-batch %d of %s is already committed: skipping its rows", batch_id, tid)
                for _ in batches:
                    pass
                return KafkaCommitMessage(0, skipped=True)
        producer.begin_transaction()
        report = _Delivery()
        try:
            n = _produce_batches(producer, batches, opts, report)
            _raise_if_failed(producer, report, opts.client.get("bootstrap.servers"))
            if group is not None:
                done_marker = TopicPartition(opts.topic, 0, batch_id + 1,
                                             metadata=_QUERY_TAG + query_id if query_id else None)
                producer.send_offsets_to_transaction([done_marker], group.consumer_group_metadata())
            producer.commit_transaction()
        except BaseException:
            try:
                producer.abort_transaction()
            except Exception as exc:  # noqa: BLE001 - the original error is the one to report
                log.warning("aborting transaction %s: %s", tid, exc)
            raise
    finally:
        if group is not None:
            group.close()
    return KafkaCommitMessage(n)


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options, defaults, schema: StructType):
        self.opts = write_options(options, defaults)
        _check_schema(schema, self.opts)

    def write(self, iterator):
        if self.opts.exactly_once:
            return _write_transaction(self.opts, iterator, None)
        return _write_at_least_once(self.opts, iterator)

    def commit(self, messages) -> None:
        log.info("wrote %d records", sum(m.records for m in messages if m))

    def abort(self, messages) -> None:
        log.warning("write aborted after %d records were sent (at least once: a retry may write them again)",
                    sum(m.records for m in messages if m))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options, defaults, schema: StructType):
        self.opts = write_options(options, defaults)
        _check_schema(schema, self.opts)

    def write(self, iterator):
        if self.opts.exactly_once:
            ctx = TaskContext.get()
            raw = ctx.getLocalProperty("streaming.sql.batchId") if ctx else None
            query_id = ctx.getLocalProperty("sql.streaming.queryId") if ctx else None
            return _write_transaction(self.opts, iterator, int(raw) if raw is not None else None, query_id)
        return _write_at_least_once(self.opts, iterator)

    def commit(self, messages, batchId: int) -> None:
        pass

    def abort(self, messages, batchId: int) -> None:
        log.warning("micro-batch %d aborted (at least once: its retry may write records again)", batchId)

"""confluent-kafka (librdkafka) adapter."""
from __future__ import annotations

import time
from typing import Sequence

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions,
                                   NewTopic)

from .base import Acked, Client, GroupMember, Got, KafkaOpError, Rec, error_name

_LOCAL = {
    KafkaError._UNKNOWN_TOPIC: "UNKNOWN_TOPIC_OR_PARTITION",
    KafkaError._UNKNOWN_PARTITION: "UNKNOWN_TOPIC_OR_PARTITION",
    KafkaError._MSG_TIMED_OUT: "REQUEST_TIMED_OUT",
    KafkaError._TIMED_OUT: "REQUEST_TIMED_OUT",
}


def _err(e: KafkaError) -> KafkaOpError:
    code = e.code()
    name = error_name(code) if code >= 0 else _LOCAL.get(code, e.name())
    return KafkaOpError(name, e.str())


def _raise_from(exc: Exception) -> None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        raise _err(exc.args[0]) from exc
    raise exc


def _got(m) -> Got:
    kind, ts = m.timestamp()
    return Got(m.topic(), m.partition(), m.offset(), m.key(), m.value(), list(m.headers() or []), ts,
               "LogAppendTime" if kind == 2 else "CreateTime")


class ConfluentClient(Client):
    name = "confluent-kafka"

    def __init__(self, bootstrap: str):
        super().__init__(bootstrap)
        self._admin = None

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin

    # ------------------------------------------------------------ produce
    def _produce_with(self, conf: dict, topic: str, records, timeout: float) -> list[Acked]:
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5,
                      "message.timeout.ms": int(timeout * 1000), **conf})
        records = list(records)
        acked: list = [None] * len(records)
        errors: list = []

        def cb(i):
            def done(err, msg):
                if err is not None:
                    errors.append(err)
                else:
                    acked[i] = Acked(msg.partition(), msg.offset())
            return done

        for i, r in enumerate(records):
            kw = {"value": r.value, "key": r.key, "on_delivery": cb(i)}
            if r.headers:
                kw["headers"] = list(r.headers)
            if r.timestamp is not None:
                kw["timestamp"] = r.timestamp
            if r.partition is not None:
                kw["partition"] = r.partition
            try:
                p.produce(topic, **kw)
            except KafkaException as exc:
                _raise_from(exc)
            except BufferError:
                p.poll(0.1)
                p.produce(topic, **kw)
        left = p.flush(timeout + 5)
        if errors:
            raise _err(errors[0])
        if left:
            raise KafkaOpError("REQUEST_TIMED_OUT", f"{left} records not delivered")
        return acked

    def produce(self, topic, records, codec="none", *, max_request_size=None, timeout=20.0):
        conf = {"compression.type": codec, "enable.idempotence": False}
        if max_request_size:
            conf["message.max.bytes"] = max_request_size
        return self._produce_with(conf, topic, records, timeout)

    def produce_idempotent(self, topic, records, timeout=20.0):
        return self._produce_with({"enable.idempotence": True}, topic, records, timeout)

    def produce_transactional(self, topic, txn_id, committed, aborted, timeout=20.0):
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": txn_id,
                      "transaction.timeout.ms": 60000, "message.timeout.ms": int(timeout * 1000)})
        try:
            p.init_transactions(timeout)
            for batch, commit in ((aborted, False), (committed, True)):
                p.begin_transaction()
                for r in batch:
                    p.produce(topic, value=r.value, key=r.key, partition=0 if r.partition is None else r.partition)
                p.flush(timeout)
                if commit:
                    p.commit_transaction(timeout)
                else:
                    p.abort_transaction(timeout)
        except KafkaException as exc:
            _raise_from(exc)

    # ------------------------------------------------------------ consume
    def _consumer(self, **conf) -> Consumer:
        return Consumer({"bootstrap.servers": self.bootstrap, "group.id": "compat-unused",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest", **conf})

    def consume(self, topic, partitions=(0,), start="beginning", *, count, timeout=15.0, on_positioned=None,
                read_committed=False, max_fetch_bytes=None):
        conf = {"isolation.level": "read_committed" if read_committed else "read_uncommitted"}
        if max_fetch_bytes:
            conf["fetch.max.bytes"] = max_fetch_bytes
            conf["receive.message.max.bytes"] = max_fetch_bytes + 100_000
        c = self._consumer(**conf)
        try:
            if isinstance(start, tuple):
                tps = c.offsets_for_times([TopicPartition(topic, p, start[1]) for p in partitions], timeout)
                tps = [TopicPartition(topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_END) for tp in tps]
            else:
                off = {"beginning": OFFSET_BEGINNING, "end": OFFSET_END}.get(start, start)
                tps = [TopicPartition(topic, p, off) for p in partitions]
            c.assign(tps)
            out: list[Got] = []
            deadline = time.monotonic() + timeout
            if on_positioned is not None:
                # librdkafka resolves the logical offset on first fetch: wait for every partition's EOF event
                at_eof: set[int] = set()
                while len(at_eof) < len(partitions) and time.monotonic() < deadline:
                    m = c.poll(0.2)
                    if m is None:
                        continue
                    if m.error():
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            at_eof.add(m.partition())
                            continue
                        raise _err(m.error())
                    out.append(_got(m))
                on_positioned()
            while len(out) < count and time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise _err(m.error())
                out.append(_got(m))
            return out
        finally:
            c.close()

    def offset_for_time(self, topic, partition, ts):
        c = self._consumer()
        try:
            (tp,) = c.offsets_for_times([TopicPartition(topic, partition, ts)], 10)
            if tp.error:
                raise _err(tp.error)
            return tp.offset if tp.offset >= 0 else None
        finally:
            c.close()

    def watermarks(self, topic, partition):
        c = self._consumer()
        try:
            return c.get_watermark_offsets(TopicPartition(topic, partition), 10)
        except KafkaException as exc:
            _raise_from(exc)
        finally:
            c.close()

    # ------------------------------------------------------------ groups
    def group_member(self, group, topics, **kw):
        return _Member(self.bootstrap, group, topics, **kw)

    # ------------------------------------------------------------ admin
    def _wait(self, futures: dict, timeout: float = 15.0):
        for f in futures.values():
            try:
                f.result(timeout)
            except KafkaException as exc:
                _raise_from(exc)

    def create_topic(self, topic, partitions=1, configs=None):
        self._wait(self.admin.create_topics([NewTopic(topic, partitions, 1, config=dict(configs or {}))],
                                            operation_timeout=10))

    def delete_topic(self, topic):
        self._wait(self.admin.delete_topics([topic], operation_timeout=10))

    def list_topics(self):
        return {t for t in self.admin.list_topics(timeout=10).topics}

    def partition_count(self, topic):
        md = self.admin.list_topics(topic, timeout=10).topics[topic]
        if md.error is not None:
            raise _err(md.error)
        return len(md.partitions)

    def create_partitions(self, topic, total):
        self._wait(self.admin.create_partitions([NewPartitions(topic, total)], operation_timeout=10))

    def describe_configs(self, topic):
        fs = self.admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
        try:
            (res,) = [f.result(15) for f in fs.values()]
        except KafkaException as exc:
            _raise_from(exc)
        return {name: entry.value for name, entry in res.items()}

    def alter_configs(self, topic, configs):
        res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
        self._wait(self.admin.incremental_alter_configs([res]))

    def delete_records(self, topic, partition, before):
        fs = self.admin.delete_records([TopicPartition(topic, partition, before)], operation_timeout=10)
        try:
            (res,) = [f.result(15) for f in fs.values()]
        except KafkaException as exc:
            _raise_from(exc)
        return res.low_watermark


class _Member(GroupMember):
    def __init__(self, bootstrap, group, topics, **kw):
        self._assigned: set[tuple[str, int]] = set()

        def on_assign(c, parts):
            self._assigned = {(p.topic, p.partition) for p in parts}

        def on_revoke(c, parts):
            self._assigned = set()

        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                           "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                           "heartbeat.interval.ms": 300, "partition.assignment.strategy": "range",
                           "topic.metadata.refresh.interval.ms": 1000, **kw})
        self.c.subscribe(list(topics), on_assign=on_assign, on_revoke=on_revoke)

    def poll(self, timeout=0.2):
        out = []
        m = self.c.poll(timeout)
        while m is not None:
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    raise _err(m.error())
            else:
                out.append(_got(m))
            m = self.c.poll(0)
        return out

    def assignment(self):
        return set(self._assigned)

    def commit(self, offsets):
        try:
            res = self.c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
        except KafkaException as exc:
            _raise_from(exc)
        for tp in res or []:
            if tp.error:
                raise _err(tp.error)

    def committed(self, tp):
        (r,) = self.c.committed([TopicPartition(tp[0], tp[1])], timeout=10)
        return r.offset if r.offset >= 0 else None

    def close(self):
        self.c.close()

"""kafka-python adapter (3.x: idempotence is on by default there, so plain scenarios switch it off)."""
from __future__ import annotations

import re
import time

import kafka.errors as KE
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, NewPartitions, NewTopic
from kafka.structs import OffsetAndMetadata

from .base import Acked, Client, GroupMember, Got, KafkaOpError, Rec, error_name

_CODEC = {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}


def _err(exc: Exception) -> KafkaOpError:
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno > 0:
        return KafkaOpError(error_name(errno), str(exc))
    if isinstance(exc, KE.KafkaTimeoutError):
        return KafkaOpError("REQUEST_TIMED_OUT", str(exc))
    return KafkaOpError(type(exc).__name__, str(exc))


def _got(r) -> Got:
    return Got(r.topic, r.partition, r.offset, r.key, r.value, [(k, v) for k, v in (r.headers or [])],
               r.timestamp, "LogAppendTime" if r.timestamp_type == 1 else "CreateTime")


class KafkaPythonClient(Client):
    name = "kafka-python"

    def __init__(self, bootstrap: str):
        super().__init__(bootstrap)
        self._admin = None

    @property
    def admin(self) -> KafkaAdminClient:
        if self._admin is None:
            self._admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)
        return self._admin

    def close(self):
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # ------------------------------------------------------------ produce
    def _produce_with(self, conf: dict, topic, records, timeout) -> list[Acked]:
        p = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5,
                          max_block_ms=int(timeout * 1000), request_timeout_ms=int(timeout * 1000), **conf)
        try:
            futs = []
            for r in records:
                try:
                    futs.append(p.send(topic, value=r.value, key=r.key, headers=list(r.headers) or None,
                                       partition=r.partition, timestamp_ms=r.timestamp))
                except KE.KafkaError as exc:
                    raise _err(exc) from exc
            p.flush(timeout)
            out = []
            for f in futs:
                try:
                    md = f.get(timeout)
                except KE.KafkaError as exc:
                    raise _err(exc) from exc
                out.append(Acked(md.partition, md.offset))
            return out
        finally:
            p.close(timeout=5)

    def produce(self, topic, records, codec="none", *, max_request_size=None, timeout=20.0):
        conf = {"compression_type": _CODEC[codec], "enable_idempotence": False}
        if max_request_size:
            conf["max_request_size"] = max_request_size
        return self._produce_with(conf, topic, records, timeout)

    def produce_idempotent(self, topic, records, timeout=20.0):
        return self._produce_with({"enable_idempotence": True}, topic, records, timeout)

    def produce_transactional(self, topic, txn_id, committed, aborted, timeout=20.0):
        p = KafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=txn_id,
                          max_block_ms=int(timeout * 1000))
        try:
            p.init_transactions()
            for batch, commit in ((aborted, False), (committed, True)):
                p.begin_transaction()
                for r in batch:
                    p.send(topic, value=r.value, key=r.key, partition=0 if r.partition is None else r.partition)
                p.flush(timeout)
                if commit:
                    p.commit_transaction()
                else:
                    p.abort_transaction()
        except KE.KafkaError as exc:
            raise _err(exc) from exc
        finally:
            p.close(timeout=5)

    # ------------------------------------------------------------ consume
    def _consumer(self, **conf) -> KafkaConsumer:
        return KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
                             auto_offset_reset="earliest", request_timeout_ms=15000, **conf)

    def consume(self, topic, partitions=(0,), start="beginning", *, count, timeout=15.0, on_positioned=None,
                read_committed=False, max_fetch_bytes=None):
        conf = {"isolation_level": "read_committed" if read_committed else "read_uncommitted"}
        if max_fetch_bytes:
            conf["fetch_max_bytes"] = max_fetch_bytes
        c = self._consumer(**conf)
        try:
            tps = [TopicPartition(topic, p) for p in partitions]
            c.assign(tps)
            if start == "beginning":
                c.seek_to_beginning(*tps)
            elif start == "end":
                c.seek_to_end(*tps)
            elif isinstance(start, tuple):
                found = c.offsets_for_times({tp: start[1] for tp in tps})
                ends = c.end_offsets(tps)
                for tp in tps:
                    c.seek(tp, found[tp].offset if found.get(tp) is not None else ends[tp])
            else:
                for tp in tps:
                    c.seek(tp, start)
            for tp in tps:
                c.position(tp)  # resolves logical offsets now
            if on_positioned is not None:
                on_positioned()
            out: list[Got] = []
            deadline = time.monotonic() + timeout
            while len(out) < count and time.monotonic() < deadline:
                for recs in c.poll(200).values():
                    out.extend(_got(r) for r in recs)
            out.sort(key=lambda g: (g.partition, g.offset))
            return out
        except KE.KafkaError as exc:
            raise _err(exc) from exc
        finally:
            c.close()

    def offset_for_time(self, topic, partition, ts):
        c = self._consumer()
        try:
            tp = TopicPartition(topic, partition)
            r = c.offsets_for_times({tp: ts})[tp]
            return None if r is None else r.offset
        finally:
            c.close()

    def watermarks(self, topic, partition):
        c = self._consumer()
        try:
            tp = TopicPartition(topic, partition)
            return c.beginning_offsets([tp])[tp], c.end_offsets([tp])[tp]
        finally:
            c.close()

    # ------------------------------------------------------------ groups
    def group_member(self, group, topics, **kw):
        return _Member(self.bootstrap, group, topics, **kw)

    # ------------------------------------------------------------ admin
    def _call(self, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except KE.KafkaError as exc:
            raise _err(exc) from exc

    def create_topic(self, topic, partitions=1, configs=None):
        self._call(self.admin.create_topics, [NewTopic(topic, partitions, 1, topic_configs=dict(configs or {}))])

    def delete_topic(self, topic):
        self._call(self.admin.delete_topics, [topic])

    def list_topics(self):
        return set(self._call(self.admin.list_topics))

    def partition_count(self, topic):
        (t,) = self._call(self.admin.describe_topics, [topic])
        if t["error_code"]:
            raise KafkaOpError(error_name(t["error_code"]))
        return len(t["partitions"])

    def create_partitions(self, topic, total):
        self._call(self.admin.create_partitions, {topic: NewPartitions(total)})

    def describe_configs(self, topic):
        r = self._call(self.admin.describe_configs, [ConfigResource("TOPIC", topic)], config_filter="all")
        return {k: v["value"] for k, v in r["topic"][topic].items()}

    def alter_configs(self, topic, configs):
        r = self._call(self.admin.alter_configs, [ConfigResource("TOPIC", topic, configs=dict(configs))])
        status = str(r["topic"][topic])
        if status != "OK":
            m = re.match(r"\[Error (\d+)\]", status)
            raise KafkaOpError(error_name(int(m.group(1))) if m else status, status)

    def delete_records(self, topic, partition, before):
        tp = TopicPartition(topic, partition)
        r = self._call(self.admin.delete_records, {tp: before})
        return r[tp]["low_watermark"]


class _Member(GroupMember):
    def __init__(self, bootstrap, group, topics, **kw):
        self.c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                               auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=300,
                               metadata_max_age_ms=1000, **kw)
        # kafka-python 3.0.x: a leader that joins before it knows its topics' partitions can
        # get stuck mid-rejoin (need_rejoin() ignores a pending join). Learn them first.
        for t in topics:
            self.c.partitions_for_topic(t)
        self.c.subscribe(list(topics))

    def poll(self, timeout=0.2):
        try:
            return [_got(r) for recs in self.c.poll(int(timeout * 1000)).values() for r in recs]
        except KE.KafkaError as exc:
            raise _err(exc) from exc

    def assignment(self):
        return {(tp.topic, tp.partition) for tp in self.c.assignment()}

    def commit(self, offsets):
        try:
            self.c.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()})
        except KE.KafkaError as exc:
            raise _err(exc) from exc

    def committed(self, tp):
        return self.c.committed(TopicPartition(*tp))

    def close(self):
        self.c.close()

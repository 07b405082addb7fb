"""aiokafka adapter: the asyncio client driven from a private event loop in a background thread, so
scenarios call it synchronously like the others (and a group member keeps heartbeating between calls)."""
from __future__ import annotations

import asyncio
import threading
import time

import aiokafka.errors as AE
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.structs import OffsetAndMetadata

from .base import Acked, Client, GroupMember, Got, KafkaOpError, error_name

_CODEC = {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}


def _err(exc: Exception) -> KafkaOpError:
    errno = getattr(exc, "errno", None)
    if isinstance(errno, int) and errno > 0:
        return KafkaOpError(error_name(errno), str(exc))
    if isinstance(exc, (AE.KafkaTimeoutError, asyncio.TimeoutError)):
        return KafkaOpError("REQUEST_TIMED_OUT", str(exc))
    return KafkaOpError(type(exc).__name__, str(exc))


def _check(code: int, msg: str = "") -> None:
    if code:
        raise KafkaOpError(error_name(code), msg or "")


def _got(r) -> Got:
    return Got(r.topic, r.partition, r.offset, r.key, r.value, [(k, v) for k, v in (r.headers or ())],
               r.timestamp, "LogAppendTime" if r.timestamp_type == 1 else "CreateTime")


class _Loop:
    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="compat-aiokafka", daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 60.0):
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except AE.KafkaError as exc:
            raise _err(exc) from exc

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class AiokafkaClient(Client):
    name = "aiokafka"

    def __init__(self, bootstrap: str):
        super().__init__(bootstrap)
        self._loop = _Loop()

    def close(self):
        self._loop.close()

    def _run(self, coro, timeout: float = 60.0):
        return self._loop.run(coro, timeout)

    async def _with_admin(self, fn):
        a = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=15000)
        await a.start()
        try:
            return await fn(a)
        finally:
            await a.close()

    # ------------------------------------------------------------ produce
    async def _produce(self, conf, topic, records, timeout):
        p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5,
                             request_timeout_ms=int(timeout * 1000), **conf)
        await p.start()
        try:
            futs = [await p.send(topic, value=r.value, key=r.key, partition=r.partition, timestamp_ms=r.timestamp,
                                 headers=list(r.headers) or None) for r in records]
            out = []
            for f in futs:
                md = await f
                out.append(Acked(md.partition, md.offset))
            return out
        finally:
            await p.stop()

    def produce(self, topic, records, codec="none", *, max_request_size=None, timeout=20.0):
        conf = {"compression_type": _CODEC[codec]}
        if max_request_size:
            conf["max_request_size"] = max_request_size
        return self._run(self._produce(conf, topic, list(records), timeout), timeout + 10)

    def produce_idempotent(self, topic, records, timeout=20.0):
        return self._run(self._produce({"enable_idempotence": True}, topic, list(records), timeout), timeout + 10)

    def produce_transactional(self, topic, txn_id, committed, aborted, timeout=20.0):
        async def go():
            p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=txn_id,
                                 request_timeout_ms=int(timeout * 1000))
            await p.start()
            try:
                for batch, commit in ((aborted, False), (committed, True)):
                    await p.begin_transaction()
                    for r in batch:
                        await p.send_and_wait(topic, value=r.value, key=r.key,
                                              partition=0 if r.partition is None else r.partition)
                    if commit:
                        await p.commit_transaction()
                    else:
                        await p.abort_transaction()
            finally:
                await p.stop()

        self._run(go(), timeout + 10)

    # ------------------------------------------------------------ consume
    def consume(self, topic, partitions=(0,), start="beginning", *, count, timeout=15.0, on_positioned=None,
                read_committed=False, max_fetch_bytes=None):
        async def go():
            conf = {"isolation_level": "read_committed" if read_committed else "read_uncommitted"}
            if max_fetch_bytes:
                conf["fetch_max_bytes"] = max_fetch_bytes
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False,
                                 auto_offset_reset="earliest", request_timeout_ms=15000, **conf)
            await c.start()
            try:
                tps = [TopicPartition(topic, p) for p in partitions]
                c.assign(tps)
                if start == "beginning":
                    await c.seek_to_beginning(*tps)
                elif start == "end":
                    await c.seek_to_end(*tps)
                elif isinstance(start, tuple):
                    found = await c.offsets_for_times({tp: start[1] for tp in tps})
                    ends = await c.end_offsets(tps)
                    for tp in tps:
                        c.seek(tp, found[tp].offset if found.get(tp) is not None else ends[tp])
                else:
                    for tp in tps:
                        c.seek(tp, start)
                for tp in tps:
                    await c.position(tp)
                return c
            except BaseException:
                await c.stop()
                raise

        async def read(c):
            out: list[Got] = []
            deadline = time.monotonic() + timeout
            try:
                while len(out) < count and time.monotonic() < deadline:
                    for recs in (await c.getmany(timeout_ms=200)).values():
                        out.extend(_got(r) for r in recs)
            finally:
                await c.stop()
            out.sort(key=lambda g: (g.partition, g.offset))
            return out

        c = self._run(go(), timeout + 10)
        if on_positioned is not None:
            try:
                on_positioned()
            except BaseException:
                self._run(c.stop())
                raise
        return self._run(read(c), timeout + 10)

    def offset_for_time(self, topic, partition, ts):
        async def go():
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None)
            await c.start()
            try:
                tp = TopicPartition(topic, partition)
                r = (await c.offsets_for_times({tp: ts}))[tp]
                return None if r is None else r.offset
            finally:
                await c.stop()

        return self._run(go())

    def watermarks(self, topic, partition):
        async def go():
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None)
            await c.start()
            try:
                tp = TopicPartition(topic, partition)
                return (await c.beginning_offsets([tp]))[tp], (await c.end_offsets([tp]))[tp]
            finally:
                await c.stop()

        return self._run(go())

    # ------------------------------------------------------------ groups
    def group_member(self, group, topics, **kw):
        return _Member(self, group, topics, **kw)

    # ------------------------------------------------------------ admin
    def create_topic(self, topic, partitions=1, configs=None):
        async def go(a):
            r = await a.create_topics([NewTopic(topic, partitions, 1, topic_configs=dict(configs or {}))])
            for t in r.topic_errors:
                _check(t[1], t[2])

        self._run(self._with_admin(go))

    def delete_topic(self, topic):
        async def go(a):
            r = await a.delete_topics([topic])
            for t in r.topic_error_codes:
                _check(t[1])

        self._run(self._with_admin(go))

    def list_topics(self):
        return set(self._run(self._with_admin(lambda a: a.list_topics())))

    def partition_count(self, topic):
        async def go(a):
            (t,) = await a.describe_topics([topic])
            _check(t["error_code"])
            return len(t["partitions"])

        return self._run(self._with_admin(go))

    def create_partitions(self, topic, total):
        async def go(a):
            r = await a.create_partitions({topic: NewPartitions(total)})
            for t in r.topic_errors:
                _check(t[1], t[2])

        self._run(self._with_admin(go))

    def describe_configs(self, topic):
        async def go(a):
            out = {}
            for resp in await a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]):
                for res in resp.resources:
                    _check(res[0], res[1])
                    for entry in res[4]:
                        out[entry[0]] = entry[1]
            return out

        return self._run(self._with_admin(go))

    def alter_configs(self, topic, configs):
        # aiokafka only has the non-incremental AlterConfigs: it replaces the topic's whole dynamic config
        async def go(a):
            for resp in await a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=dict(configs))]):
                for res in resp.resources:
                    _check(res[0], res[1])

        self._run(self._with_admin(go))

    def delete_records(self, topic, partition, before):
        async def go(a):
            tp = TopicPartition(topic, partition)
            return (await a.delete_records({tp: RecordsToDelete(before)}))[tp]

        return self._run(self._with_admin(go))


class _Member(GroupMember):
    def __init__(self, client: AiokafkaClient, group, topics, **kw):
        self._client = client
        self._buffer: list[Got] = []

        async def start():
            c = AIOKafkaConsumer(*topics, bootstrap_servers=client.bootstrap, group_id=group,
                                 enable_auto_commit=False, auto_offset_reset="earliest", session_timeout_ms=10000,
                                 heartbeat_interval_ms=300, metadata_max_age_ms=1000, **kw)
            await c.start()
            return c

        self.c = client._run(start())

    def poll(self, timeout=0.2):
        async def go():
            res = await self.c.getmany(timeout_ms=int(timeout * 1000))
            return [_got(r) for recs in res.values() for r in recs]

        return self._client._run(go())

    def assignment(self):
        return {(tp.topic, tp.partition) for tp in self.c.assignment()}

    def commit(self, offsets):
        self._client._run(self.c.commit({TopicPartition(t, p): OffsetAndMetadata(o, "")
                                         for (t, p), o in offsets.items()}))

    def committed(self, tp):
        return self._client._run(self.c.committed(TopicPartition(*tp)))

    def close(self):
        self._client._run(self.c.stop())

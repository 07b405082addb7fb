"""The transactional producer and the consumer of each stock Python client (confluent-kafka,
kafka-python, aiokafka) behind one small blocking interface, so one test body runs against
all three: ``producer(bs, transactional_id, timeout_ms)`` -> init / begin / send / flush /
commit / abort / close, and ``read(bs, topic, partitions, isolation)`` -> every record of the
topic as ``(partition, value)``, read with that client's own consumer.

Reads end on a sentinel: the caller appends a plain (non-transactional) ``END`` record to each
partition once every transaction is decided, and ``read`` stops when it has seen ``END`` on
every partition. With read_committed, ``END`` is readable only once the last stable offset
has passed every earlier transaction, so what came before it is all there will ever be: no
"read a little longer" sleep. kafka-python's blocking calls that have no timeout of their own
run under ``bounded`` so a hang fails the test instead of stalling the suite.
"""
from __future__ import annotations

import asyncio
import threading
import time
import uuid

END = b"END"
TIMEOUT = 30.0


class Fenced(Exception):
    """What a client raised when a newer producer (or the coordinator, after a timeout) had
    bumped the epoch: the test asserts this happened, whatever the client's own error type."""


def bounded(fn, timeout: float = TIMEOUT):
    """Run ``fn()`` in a worker thread and give up after ``timeout`` s (the thread is left to
    finish on its own)."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise TimeoutError(f"{fn!r} did not return within {timeout}s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _gid() -> str:
    return f"reader-{uuid.uuid4().hex[:8]}"


# ===================================================================== confluent-kafka
class ConfluentTxnProducer:
    def __init__(self, bs: str, tid: str, timeout_ms: int | None):
        from confluent_kafka import Producer

        conf = {"bootstrap.servers": bs, "transactional.id": tid, "linger.ms": 5}
        if timeout_ms is not None:
            conf["transaction.timeout.ms"] = timeout_ms
        self.p = Producer(conf)

    def init(self):
        self.p.init_transactions(TIMEOUT)

    def begin(self):
        self.p.begin_transaction()

    def send(self, topic, value: bytes, partition: int):
        self.p.produce(topic, value=value, partition=partition)

    def flush(self):
        assert self.p.flush(TIMEOUT) == 0

    def commit(self):
        self._fenceable(lambda: self.p.commit_transaction(TIMEOUT))

    def abort(self):
        self._fenceable(lambda: self.p.abort_transaction(TIMEOUT))

    @staticmethod
    def _fenceable(fn):
        from confluent_kafka import KafkaError, KafkaException

        try:
            fn()
        except KafkaException as exc:
            err = exc.args[0]
            if err.fatal() or err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                             KafkaError.INVALID_PRODUCER_EPOCH):
                raise Fenced(str(err)) from exc
            raise

    def close(self):
        from confluent_kafka import KafkaException

        try:
            self.p.flush(1)
        except KafkaException:         # a fenced producer reports its fatal error again
            pass


def confluent_read(bs, topic, partitions, isolation):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": _gid(), "isolation.level": isolation,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, ended = [], set()
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(ended) < partitions and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            if m.value() == END:
                ended.add(m.partition())
            else:
                got.append((m.partition(), m.value()))
    finally:
        c.close()
    assert len(ended) == partitions, f"confluent-kafka: END seen on {sorted(ended)} only; got {got}"
    return got


# ======================================================================== kafka-python
class KafkaPythonTxnProducer:
    def __init__(self, bs: str, tid: str, timeout_ms: int | None):
        from kafka import KafkaProducer

        kw = {"transaction_timeout_ms": timeout_ms} if timeout_ms is not None else {}
        self.p = KafkaProducer(bootstrap_servers=bs, transactional_id=tid, linger_ms=5,
                               max_block_ms=int(TIMEOUT * 1000), **kw)

    def init(self):
        self.p.init_transactions()

    def begin(self):
        self.p.begin_transaction()

    def send(self, topic, value: bytes, partition: int):
        self.p.send(topic, value=value, partition=partition)

    def flush(self):
        self.p.flush(TIMEOUT)

    def commit(self):
        self._fenceable(self.p.commit_transaction)

    def abort(self):
        self._fenceable(self.p.abort_transaction)

    @staticmethod
    def _fenceable(fn):
        from kafka.errors import InvalidProducerEpochError, ProducerFencedError

        try:
            bounded(fn)
        except (ProducerFencedError, InvalidProducerEpochError) as exc:
            raise Fenced(repr(exc)) from exc

    def close(self):
        self.p.close(5)


def kafka_python_read(bs, topic, partitions, isolation):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bs, group_id=None, isolation_level=isolation,
                      enable_auto_commit=False, auto_offset_reset="earliest")
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    got, ended = [], set()
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(ended) < partitions and time.monotonic() < deadline:
            for recs in c.poll(200).values():
                for r in recs:
                    if r.value == END:
                        ended.add(r.partition)
                    else:
                        got.append((r.partition, r.value))
    finally:
        c.close()
    assert len(ended) == partitions, f"kafka-python: END seen on {sorted(ended)} only; got {got}"
    return got


# ============================================================================= aiokafka
class AioKafkaTxnProducer:
    """aiokafka is asyncio-only: the producer lives on a private event loop that runs only
    while one of these blocking calls does (its sender task makes progress then)."""

    def __init__(self, bs: str, tid: str, timeout_ms: int | None):
        from aiokafka import AIOKafkaProducer

        self.loop = asyncio.new_event_loop()
        kw = {"transaction_timeout_ms": timeout_ms} if timeout_ms is not None else {}

        async def make():
            return AIOKafkaProducer(bootstrap_servers=bs, transactional_id=tid, linger_ms=5,
                                    request_timeout_ms=int(TIMEOUT * 1000), **kw)
        self.p = self._run(make())
        self.futures = []

    def _run(self, coro):
        return self.loop.run_until_complete(asyncio.wait_for(coro, TIMEOUT))

    def init(self):
        self._run(self.p.start())        # InitProducerId with the transactional id

    def begin(self):
        self._run(self.p.begin_transaction())

    def send(self, topic, value: bytes, partition: int):
        self.futures.append(self._run(self.p.send(topic, value=value, partition=partition)))

    def flush(self):
        self._run(asyncio.gather(*self.futures))
        self.futures = []

    def commit(self):
        self._fenceable(self.p.commit_transaction())

    def abort(self):
        self._fenceable(self.p.abort_transaction())

    def _fenceable(self, coro):
        from aiokafka.errors import InvalidProducerEpoch, ProducerFenced

        try:
            self._run(coro)
        except (ProducerFenced, InvalidProducerEpoch) as exc:
            raise Fenced(repr(exc)) from exc

    def close(self):
        try:
            self._run(self.p.stop())
        finally:
            self.loop.close()


def aiokafka_read(bs, topic, partitions, isolation):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go():
        c = AIOKafkaConsumer(bootstrap_servers=bs, group_id=None, isolation_level=isolation,
                             enable_auto_commit=False, auto_offset_reset="earliest")
        await c.start()
        got, ended = [], set()
        try:
            c.assign([TopicPartition(topic, p) for p in range(partitions)])
            deadline = time.monotonic() + TIMEOUT
            while len(ended) < partitions and time.monotonic() < deadline:
                for recs in (await c.getmany(timeout_ms=200)).values():
                    for r in recs:
                        if r.value == END:
                            ended.add(r.partition)
                        else:
                            got.append((r.partition, r.value))
        finally:
            await c.stop()
        assert len(ended) == partitions, f"aiokafka: END seen on {sorted(ended)} only; got {got}"
        return got
    return asyncio.run(go())


CLIENTS = {
    "confluent": (ConfluentTxnProducer, confluent_read),
    "kafka-python": (KafkaPythonTxnProducer, kafka_python_read),
    "aiokafka": (AioKafkaTxnProducer, aiokafka_read),
}


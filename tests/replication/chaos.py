"""Shared pieces of the chaos tests: a three-process cluster, stock-client producers and a
consumer group that run in threads while nodes die, and the checks on what they saw.

Every producer remembers what the cluster acknowledged (partition, offset, value) and what
error reached the application; ``read_back`` reads every partition from offset 0 to its high
watermark; ``check_acknowledged`` holds the acknowledged records against that log: each one
is at its acknowledged offset, exactly once, and one producer's records of a partition are in
the order it sent them. Values are ``<client>-<sequence>`` so a record names its sender.
"""
from __future__ import annotations

import asyncio
import collections
import os
import threading
import time

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from tests.raft.cluster import Cluster, call, wait_for

TOPIC = "chaos"
OFFSETS_TOPIC = "__consumer_offsets"


def rounds(default: int) -> int:
    """How many kill rounds to run: KWIRE_CHAOS_ROUNDS (the long variant) or ``default``."""
    return max(int(os.environ.get("KWIRE_CHAOS_ROUNDS", "0") or 0), default)


CLUSTER_ARGS = (
    "--override", "broker.session.timeout.ms=2000",
    "--override", "min.insync.replicas=2",
    "--override", "offsets.topic.num.partitions=3",
    "--override", "offsets.topic.replication.factor=3",
    "--override", "group.initial.rebalance.delay.ms=0",
)


def start_cluster(base_dir: str, *extra: str) -> Cluster:
    return Cluster(base_dir, 3, extra_args=(*CLUSTER_ARGS, *extra)).start()


def bootstrap(c: Cluster) -> str:
    return ",".join(f"127.0.0.1:{n.port}" for n in c.nodes.values())


def live_port(c: Cluster) -> int:
    return next(n.port for n in c.nodes.values() if n.alive)


def create_topic(c: Cluster, name: str = TOPIC, partitions: int = 3, rf: int = 3) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap(c)})
    for fu in a.create_topics([NewTopic(name, partitions, rf, config={"min.insync.replicas": "2"})]).values():
        fu.result(30)


def partitions(port: int, topics: list[str] | None = None) -> dict[tuple[str, int], tuple[int, int, list[int]]]:
    """{(topic, partition): (leader, leader epoch, isr)} as the node on ``port`` sees it."""
    r = call(port, "Metadata", 9, timeout=3.0, topics=None, allow_auto_topic_creation=False,
             include_topic_authorized_operations=False)
    return {(t.name, p.partition_index): (p.leader_id, p.leader_epoch, sorted(p.isr_nodes))
            for t in r.topics if topics is None or t.name in topics for p in t.partitions}


def leaders(c: Cluster, topic: str = TOPIC) -> dict[int, int]:
    return {p: v[0] for (t, p), v in partitions(live_port(c), [topic]).items()}


def coordinator(port: int, group: str) -> int:
    """FindCoordinator (v3) for ``group`` on the node at ``port``: the coordinator's id, or -1."""
    r = call(port, "FindCoordinator", 3, timeout=3.0, key=group, key_type=0)
    return r.node_id if r.error_code == 0 else -1


def healthy(c: Cluster, topics: list[str]) -> bool:
    """Every node is up and, as each sees it, every partition of ``topics`` has a live leader and
    all three replicas in its ISR."""
    if not all(n.alive for n in c.nodes.values()):
        return False
    for n in c.nodes.values():
        parts = partitions(n.port, topics)
        if not parts or not all(leader > 0 and isr == [1, 2, 3] for leader, _, isr in parts.values()):
            return False
    return True


def wait_healthy(c: Cluster, topics: list[str], timeout: float = 40.0) -> None:
    wait_for(lambda: healthy(c, topics), timeout, message=f"all replicas back in the ISR of {topics}\n"
             + "\n".join(f"--- node {n.node_id}\n{n.log_tail(1500)}" for n in c.nodes.values()))


# ====================================================================================== producers
class Producer(threading.Thread):
    """A stock-client producer in a thread: sends ``<name>-<seq>`` to partitions in turn until
    stopped, at about ``rate`` records a second; ``acked`` holds (partition, offset, value) the
    cluster acknowledged, ``errors`` (value, error) what reached the application."""

    name_prefix = "?"

    def __init__(self, c: Cluster, topic: str = TOPIC, partitions: int = 3, rate: float = 50.0):
        super().__init__(daemon=True, name=f"producer-{self.name_prefix}")
        self.bootstrap = bootstrap(c)
        self.topic = topic
        self.n_partitions = partitions
        self.rate = rate
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.acked: list[tuple[int, int, bytes]] = []
        self.ack_times: dict[int, list[float]] = {}   # partition -> monotonic times of its acknowledgements
        self.errors: list[tuple[bytes, str]] = []
        self.sent = 0
        self.failure: BaseException | None = None

    def value(self, seq: int) -> tuple[int, bytes]:
        return seq % self.n_partitions, b"%s-%08d" % (self.name_prefix.encode(), seq)

    def ack(self, partition: int, offset: int, value: bytes) -> None:
        with self.lock:
            self.acked.append((partition, offset, value))
            self.ack_times.setdefault(partition, []).append(time.monotonic())

    def longest_gaps(self, since: float, until: float | None = None) -> dict[int, float]:
        """{partition: the longest time from ``since`` (or an acknowledgement after it) to its
        next acknowledgement, up to ``until``}: how long the partition was unavailable to this
        producer (it sends to every partition in turn, many times a second)."""
        until = time.monotonic() if until is None else until
        with self.lock:
            out = {}
            for part, times in self.ack_times.items():
                prev, gap = since, 0.0
                for t in times:
                    if t > since:
                        gap = max(gap, t - prev)
                        prev = t
                out[part] = max(gap, until - prev)
            return out

    def error(self, value: bytes, err) -> None:
        with self.lock:
            self.errors.append((value, str(err)))

    def acked_count(self) -> int:
        with self.lock:
            return len(self.acked)

    def pace(self, started: float) -> None:
        ahead = self.sent / self.rate - (time.monotonic() - started)
        if ahead > 0:
            self.stopping.wait(ahead)

    def run(self) -> None:
        try:
            self.produce()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.failure = exc

    def stop(self, timeout: float = 90.0) -> None:
        self.stopping.set()
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} did not finish within {timeout}s"
        assert self.failure is None, f"{self.name} failed: {self.failure!r}"


class ConfluentProducer(Producer):
    name_prefix = "ck"

    def produce(self) -> None:
        p = ck.Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5, "message.timeout.ms": 60000, "request.timeout.ms": 10000, "retry.backoff.ms": 100,
                         "topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 500})

        def done(err, msg):
            if err is not None:
                self.error(msg.value(), err)
            else:
                self.ack(msg.partition(), msg.offset(), msg.value())

        started = time.monotonic()
        while not self.stopping.is_set():
            part, value = self.value(self.sent)
            p.produce(self.topic, value=value, partition=part, on_delivery=done)
            self.sent += 1
            p.poll(0)
            self.pace(started)
        left = p.flush(60)
        assert left == 0, f"confluent-kafka: {left} records neither acknowledged nor failed after 60 s"


class KafkaPythonProducer(Producer):
    name_prefix = "kp"

    def produce(self) -> None:
        from kafka import KafkaProducer  # noqa: PLC0415

        p = KafkaProducer(bootstrap_servers=self.bootstrap.split(","), acks="all", enable_idempotence=True,
                          linger_ms=5, retries=2**31 - 1, delivery_timeout_ms=60000, request_timeout_ms=10000,
                          retry_backoff_ms=100, metadata_max_age_ms=1000, reconnect_backoff_max_ms=500)
        started = time.monotonic()
        try:
            while not self.stopping.is_set():
                part, value = self.value(self.sent)
                fut = p.send(self.topic, value=value, partition=part)
                fut.add_callback(lambda md, v=value: self.ack(md.partition, md.offset, v))
                fut.add_errback(lambda exc, v=value: self.error(v, exc))
                self.sent += 1
                self.pace(started)
            p.flush(60)
        finally:
            p.close(10)


class AioKafkaProducer(Producer):
    name_prefix = "ak"

    def produce(self) -> None:
        asyncio.run(self._produce())

    async def _produce(self) -> None:
        from aiokafka import AIOKafkaProducer  # noqa: PLC0415

        p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
                             request_timeout_ms=10000, retry_backoff_ms=100, metadata_max_age_ms=1000)
        await p.start()
        started = time.monotonic()
        pending: set = set()

        async def one(value: bytes, fut):
            try:
                md = await fut
            except Exception as exc:  # noqa: BLE001 - an error that reached the application
                self.error(value, exc)
            else:
                self.ack(md.partition, md.offset, value)

        try:
            while not self.stopping.is_set():
                part, value = self.value(self.sent)
                try:
                    fut = await p.send(self.topic, value=value, partition=part)
                except Exception as exc:  # noqa: BLE001
                    self.error(value, exc)
                else:
                    t = asyncio.ensure_future(one(value, fut))
                    pending.add(t)
                    t.add_done_callback(pending.discard)
                self.sent += 1
                ahead = self.sent / self.rate - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)
            await asyncio.wait_for(p.flush(), 60)
            if pending:
                await asyncio.wait(pending, timeout=60)
        finally:
            await p.stop()


PRODUCERS = (ConfluentProducer, KafkaPythonProducer, AioKafkaProducer)


# ====================================================================================== consumer group
class GroupConsumer(threading.Thread):
    """A confluent-kafka group member that commits (synchronously) after each batch it reads.

    ``consumed``: (partition, offset, value) in the order read; ``commits``: per partition the
    offsets of every commit the coordinator accepted, in order; ``resumed``: (partition,
    first offset read, last accepted commit before it) each time the consumer starts reading a
    partition (first assignment and every rebalance). The subclasses below are the same member
    written with kafka-python and aiokafka."""

    client = "ck"

    def __init__(self, c: Cluster, group: str, topic: str = TOPIC):
        super().__init__(daemon=True, name=f"group-{group}")
        self.bootstrap = bootstrap(c)
        self.group = group
        self.topic = topic
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.consumed: list[tuple[int, int, bytes]] = []
        self.commits: dict[int, list[int]] = collections.defaultdict(list)
        self.commit_errors: list[str] = []
        self.resumed: list[tuple[int, int, int | None]] = []
        self.failure: BaseException | None = None
        self._fresh: set[int] = set()

    # ------------------------------------------------------------------ bookkeeping
    def assigned(self, partitions) -> None:
        with self.lock:
            self._fresh.update(partitions)

    def read(self, batch: list[tuple[int, int, bytes]]) -> dict[int, int]:
        """Record a batch; the offsets to commit for it (last offset + 1 per partition)."""
        upto: dict[int, int] = {}
        with self.lock:
            for part, offset, value in batch:
                if part in self._fresh:
                    self._fresh.discard(part)
                    prev = self.commits.get(part)
                    self.resumed.append((part, offset, prev[-1] if prev else None))
                self.consumed.append((part, offset, value))
                upto[part] = max(upto.get(part, -1), offset + 1)
        return upto

    def committed(self, offsets: dict[int, int]) -> None:
        with self.lock:
            for part, offset in offsets.items():
                self.commits[part].append(offset)

    def commit_failed(self, exc) -> None:
        with self.lock:
            self.commit_errors.append(repr(exc))

    def last_commit(self, partition: int) -> int | None:
        with self.lock:
            got = self.commits.get(partition)
            return got[-1] if got else None

    def committed_total(self) -> int:
        with self.lock:
            return sum(v[-1] for v in self.commits.values() if v)

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.failure = exc

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.join(timeout)
        assert not self.is_alive(), f"{self.name} did not finish within {timeout}s"
        assert self.failure is None, f"{self.name} failed: {self.failure!r}"

    # ------------------------------------------------------------------ confluent-kafka
    def _run(self) -> None:
        from confluent_kafka import TopicPartition  # noqa: PLC0415

        c = ck.Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                         "heartbeat.interval.ms": 500, "topic.metadata.refresh.interval.ms": 1000,
                         "reconnect.backoff.max.ms": 500, "retry.backoff.ms": 100})
        c.subscribe([self.topic], on_assign=lambda consumer, parts: self.assigned(tp.partition for tp in parts))
        try:
            while not self.stopping.is_set():
                got = [m for m in c.consume(200, 0.5) if m.error() is None]
                if not got:
                    continue
                upto = self.read([(m.partition(), m.offset(), m.value()) for m in got])
                try:
                    done = c.commit(offsets=[TopicPartition(self.topic, p, o) for p, o in upto.items()],
                                    asynchronous=False)
                except ck.KafkaException as exc:
                    self.commit_failed(exc)
                    continue
                self.committed({tp.partition: tp.offset for tp in done or () if tp.error is None and tp.offset >= 0})
        finally:
            c.close()


class KafkaPythonGroupConsumer(GroupConsumer):
    client = "kp"

    def _run(self) -> None:
        from kafka import KafkaConsumer, TopicPartition  # noqa: PLC0415
        from kafka.consumer.subscription_state import ConsumerRebalanceListener  # noqa: PLC0415
        from kafka.structs import OffsetAndMetadata  # noqa: PLC0415

        outer = self

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):
                pass

            def on_partitions_assigned(self, assigned):
                outer.assigned(tp.partition for tp in assigned)

        c = KafkaConsumer(bootstrap_servers=self.bootstrap.split(","), group_id=self.group, enable_auto_commit=False,
                          auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=500,
                          metadata_max_age_ms=1000, reconnect_backoff_max_ms=500, retry_backoff_ms=100)
        # Learn the topic's partitions before joining. With group.initial.rebalance.delay.ms=0 a
        # kafka-python leader would otherwise assign before its topic metadata arrives, and the
        # rejoin that follows can hit kafka-python 3.0.x's stuck join (a poll() that times out
        # before the SyncGroup answer never completes it: see
        # tests/integration/test_groups.py::test_kafka_python_leader_rejoin_after_metadata_change_client_bug).
        # On a loaded machine that left this member without an assignment past the test's 60 s.
        assert c.partitions_for_topic(self.topic), f"no metadata for {self.topic}"
        c.subscribe([self.topic], listener=Listener())
        try:
            while not self.stopping.is_set():
                recs = c.poll(timeout_ms=500)
                batch = [(tp.partition, r.offset, r.value) for tp, rs in recs.items() for r in rs]
                if not batch:
                    continue
                upto = self.read(batch)
                try:
                    c.commit({TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1) for p, o in upto.items()})
                except Exception as exc:  # noqa: BLE001 - a failed commit: the member goes on, as apps do
                    self.commit_failed(exc)
                    continue
                self.committed(upto)
        finally:
            c.close()


class AioKafkaGroupConsumer(GroupConsumer):
    client = "ak"

    def _run(self) -> None:
        asyncio.run(self._consume())

    async def _consume(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition  # noqa: PLC0415

        outer = self

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked):
                pass

            async def on_partitions_assigned(self, assigned):
                outer.assigned(tp.partition for tp in assigned)

        c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, enable_auto_commit=False,
                             auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=500,
                             metadata_max_age_ms=1000, retry_backoff_ms=100)
        await c.start()
        c.subscribe([self.topic], listener=Listener())
        try:
            while not self.stopping.is_set():
                recs = await c.getmany(timeout_ms=500)
                batch = [(tp.partition, r.offset, r.value) for tp, rs in recs.items() for r in rs]
                if not batch:
                    continue
                upto = self.read(batch)
                try:
                    await c.commit({TopicPartition(self.topic, p): o for p, o in upto.items()})
                except Exception as exc:  # noqa: BLE001 - a failed commit: the member goes on, as apps do
                    self.commit_failed(exc)
                    continue
                self.committed(upto)
        finally:
            await c.stop()


GROUP_CONSUMERS = (GroupConsumer, KafkaPythonGroupConsumer, AioKafkaGroupConsumer)


def committed_offsets(c: Cluster, group: str, topic: str = TOPIC, n: int = 3) -> dict[int, int]:
    """The group's committed offsets as its coordinator answers them (OffsetFetch via the admin)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition  # noqa: PLC0415

    a = AdminClient({"bootstrap.servers": bootstrap(c)})
    fut = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(n)])], request_timeout=5)[group]
    try:
        res = fut.result(10)
    except ck.KafkaException as exc:
        # the coordinator is moving or loading (librdkafka's own timeout, _TIMED_OUT, under load):
        # a TimeoutError, which the waits of these tests take as "not yet"
        err = exc.args[0] if exc.args else None
        if err is not None and (err.retriable() or err.code() == ck.KafkaError._TIMED_OUT):
            raise TimeoutError(f"OffsetFetch of {group}: {exc}") from exc
        raise
    return {tp.partition: tp.offset for tp in res.topic_partitions if tp.error is None}


# ====================================================================================== checks
def log_sizes(c: Cluster, topic: str) -> dict[int, dict[int, int]]:
    """{node: {partition: bytes}} (DescribeLogDirs of every node)."""
    out = {}
    for nid, n in c.nodes.items():
        r = call(n.port, "DescribeLogDirs", 4, timeout=3.0, topics=None)
        out[nid] = {p.partition_index: p.partition_size for res in r.results for t in res.topics
                    if t.name == topic for p in t.partitions}
    return out


def wait_replicas_agree(c: Cluster, topic: str = TOPIC, timeout: float = 30.0) -> None:
    """Every node holds the same number of bytes of every partition of ``topic`` (the followers'
    logs are the leader's, byte for byte, once they have caught up)."""
    wait_for(lambda: len({tuple(sorted(s.items())) for s in log_sizes(c, topic).values()}) == 1, timeout,
             message=f"every replica of {topic} holds the same log: {log_sizes(c, topic)}")


def read_back(c: Cluster, topic: str = TOPIC, n: int = 3, timeout: float = 60.0) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of ``topic`` from offset 0 up to each partition's high watermark."""
    from confluent_kafka import TopicPartition  # noqa: PLC0415

    cons = ck.Consumer({"bootstrap.servers": bootstrap(c), "group.id": "chaos-read-back", "enable.auto.commit": False,
                        "enable.partition.eof": True})
    try:
        ends = {p: cons.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(n)}
        cons.assign([TopicPartition(topic, p, 0) for p in range(n)])
        out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(n)}
        deadline = time.monotonic() + timeout
        while any((out[p][-1][0] + 1 if out[p] else 0) < ends[p] for p in range(n)):
            assert time.monotonic() < deadline, (f"read back stuck: ends {ends}, "
                                                 f"read {({p: len(v) for p, v in out.items()})}")
            for m in cons.consume(1000, 1.0):
                if m.error() is None:
                    out[m.partition()].append((m.offset(), m.value()))
        return out
    finally:
        cons.close()


def check_acknowledged(log: dict[int, list[tuple[int, bytes]]], producers) -> int:
    """Every acknowledged record is in ``log`` exactly once, at its acknowledged offset, and a
    producer's acknowledged records of a partition are in the order it sent them. The number of
    acknowledged records."""
    where: dict[bytes, list[tuple[int, int]]] = collections.defaultdict(list)
    for p, recs in log.items():
        offsets = [o for o, _ in recs]
        assert offsets == list(range(len(offsets))), f"partition {p}: offsets not contiguous from 0"
        for o, v in recs:
            where[v].append((p, o))
    total = 0
    for prod in producers:
        last: dict[int, tuple[int, int]] = {}
        for part, offset, value in sorted(prod.acked, key=lambda a: a[2]):
            total += 1
            assert where.get(value) == [(part, offset)], (
                f"{prod.name_prefix}: acknowledged {value!r} at {part}/{offset}, in the log at {where.get(value)}")
            seq = int(value.split(b"-")[1])
            if part in last:
                assert offset > last[part][1], (
                    f"{prod.name_prefix}: {value!r} (seq {seq}) at {part}/{offset} after seq {last[part][0]} "
                    f"at offset {last[part][1]}")
            last[part] = (seq, offset)
    # an idempotent producer's retries never write a record twice, acknowledged or not
    dups = {v: w for v, w in where.items() if len(w) > 1}
    assert not dups, f"records written more than once: {dict(list(dups.items())[:10])}"
    return total


# ====================================================================================== network partitions
class PartitionableCluster(Cluster):
    """A Cluster whose nodes each read their unreachable nodes from a file of their own
    (kwire.link_faults: the hidden key kwire.test.unreachable.nodes.file)."""

    def __init__(self, base_dir: str, size: int = 3, extra_args: tuple[str, ...] = ()):
        super().__init__(base_dir, size, extra_args)
        self.base_dir = base_dir
        os.makedirs(base_dir, exist_ok=True)
        self.cuts: dict[int, set[int]] = {i: set() for i in self.nodes}
        for i in self.nodes:
            self._write(i)

    def cut_file(self, node_id: int) -> str:
        return os.path.join(self.base_dir, f"unreachable-{node_id}")

    def _args(self, node_id: int) -> tuple[str, ...]:
        return (*self.extra_args, "--override", f"kwire.test.unreachable.nodes.file={self.cut_file(node_id)}")

    def start(self, timeout: float = 30.0) -> "PartitionableCluster":
        for n in self.nodes.values():
            n.start(self.voters, self._args(n.node_id))
        for n in self.nodes.values():
            self.wait_serving(n, timeout)
        return self

    def restart(self, node_id: int, timeout: float = 30.0) -> None:
        n = self.nodes[node_id]
        n.start(self.voters, self._args(node_id))
        self.wait_serving(n, timeout)

    def _write(self, node_id: int) -> None:
        from kwire.atomic import write_atomic  # noqa: PLC0415

        write_atomic(self.cut_file(node_id), ",".join(map(str, sorted(self.cuts[node_id]))).encode())

    def isolate(self, node_id: int) -> None:
        """Cut every link between ``node_id`` and the other nodes, both ways."""
        for other in self.nodes:
            if other != node_id:
                self.cuts[node_id].add(other)
                self.cuts[other].add(node_id)
        for i in self.nodes:
            self._write(i)

    def cut(self, a: int, b: int) -> None:
        """Cut the link between nodes ``a`` and ``b``, both ways (each still reaches the third)."""
        self.cuts[a].add(b)
        self.cuts[b].add(a)
        self._write(a)
        self._write(b)

    def heal(self) -> None:
        for i in self.nodes:
            self.cuts[i].clear()
            self._write(i)

    def wait_cut_noticed(self, timeout: float = 10.0) -> None:
        """Every live node has logged the unreachable set it now has (kwire.link_faults)."""
        def last_line(n) -> str:
            text = n.log_tail(500_000)
            i = text.rfind("fault injection: nodes ")
            return text[i:].split("\n", 1)[0] if i >= 0 else "fault injection: nodes [] now unreachable"

        def noticed() -> bool:
            return all(last_line(n) == f"fault injection: nodes {sorted(self.cuts[n.node_id])} now unreachable"
                       for n in self.nodes.values() if n.alive)
        wait_for(noticed, timeout, message=f"nodes noticed the cuts {self.cuts}")


def produce_raw(port: int, topic: str, partition: int, value: bytes, timeout_ms: int = 1500) -> tuple[int, int]:
    """One acks=all Produce (v9) of one record straight to the node on ``port``: (error code, base offset)."""
    from kwire.codec import records as RB  # noqa: PLC0415
    from kwire.codec.apis import api  # noqa: PLC0415

    Req = api("Produce").request
    data = Req.struct("TopicProduceData")(name=topic, partition_data=[Req.struct("PartitionProduceData")(
        index=partition, records=RB.build_batch([(None, value, [], int(time.time() * 1000))]))])
    r = call(port, "Produce", 9, timeout=timeout_ms / 1000 + 10, transactional_id=None, acks=-1,
             timeout_ms=timeout_ms, topic_data=[data])
    pr = r.responses[0].partition_responses[0]
    return pr.error_code, pr.base_offset


class Acks:
    """What one writer had acknowledged, in the shape check_acknowledged reads."""

    def __init__(self, name_prefix: str):
        self.name_prefix = name_prefix
        self.acked: list[tuple[int, int, bytes]] = []
        self.refused: list[tuple[bytes, int]] = []
        self.seq = 0

    def next_value(self) -> bytes:
        self.seq += 1
        return b"%s-%08d" % (self.name_prefix.encode(), self.seq)


def check_group(group: GroupConsumer, final_commits: dict[int, int], log: dict[int, list[tuple[int, bytes]]]) -> None:
    """The group's commits never went back, it resumed each partition at or past its last
    accepted commit, it read no record that is not in the final log (at that offset), and it
    skipped none below its last commit."""
    for part, offs in group.commits.items():
        assert offs == sorted(offs), f"partition {part}: commits went back: {offs}"
        assert final_commits.get(part, -1) >= offs[-1], (part, final_commits, offs[-1])
    for part, first, prev in group.resumed:
        assert prev is None or first >= prev, f"partition {part}: resumed at {first} below its commit {prev}"
    seen: dict[int, set[int]] = collections.defaultdict(set)
    for part, offset, value in group.consumed:
        assert offset < len(log[part]) and log[part][offset][1] == value, (
            f"group read {value!r} at {part}/{offset}, the log has "
            f"{log[part][offset] if offset < len(log[part]) else 'nothing'} there")
        seen[part].add(offset)
    for part, offs in group.commits.items():
        missing = set(range(offs[-1])) - seen[part]
        assert not missing, f"partition {part}: the group never read {sorted(missing)[:10]}..."


class WatermarkWatcher(threading.Thread):
    """Asks for every partition's high watermark (ListOffsets latest, through a confluent-kafka
    consumer) every ``interval`` seconds; ``seen`` holds (monotonic time, partition, high
    watermark). ``check`` asserts what consumers saw never went backwards."""

    def __init__(self, c: Cluster, topic: str = TOPIC, n: int = 3, interval: float = 0.2):
        super().__init__(daemon=True, name="watermarks")
        self.bootstrap = bootstrap(c)
        self.topic = topic
        self.n = n
        self.interval = interval
        self.stopping = threading.Event()
        self.seen: list[tuple[float, int, int]] = []

    def run(self) -> None:
        from confluent_kafka import TopicPartition  # noqa: PLC0415

        cons = ck.Consumer({"bootstrap.servers": self.bootstrap, "group.id": "chaos-watermarks",
                            "topic.metadata.refresh.interval.ms": 1000})
        try:
            while not self.stopping.wait(self.interval):
                for p in range(self.n):
                    try:
                        _, high = cons.get_watermark_offsets(TopicPartition(self.topic, p), timeout=2, cached=False)
                    except ck.KafkaException:
                        continue
                    if high >= 0:
                        self.seen.append((time.monotonic(), p, high))
        finally:
            cons.close()

    def check(self) -> int:
        self.stopping.set()
        self.join(30)
        last: dict[int, tuple[float, int]] = {}
        for t, p, high in self.seen:
            if p in last:
                assert high >= last[p][1], (f"partition {p}: high watermark went back from {last[p][1]} to {high} "
                                            f"({t - last[p][0]:.2f}s later)")
            last[p] = (t, high)
        return len(self.seen)

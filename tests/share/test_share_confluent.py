"""Share groups (KIP-932) with confluent-kafka's ShareConsumer (librdkafka 2.16's share
consumer) against a kwire broker emulating Kafka 4.3: 3 consumers on one partition with each
record delivered once; explicit ACCEPT / RELEASE / REJECT; a poison record archived at the
delivery count limit; a consumer that stops mid-batch (it holds its records, acknowledges
nothing) has them delivered again, count 2, once their acquisition locks expire."""
from __future__ import annotations

import threading
import time
import uuid

import pytest

pytestmark = pytest.mark.slow

ck = pytest.importorskip("confluent_kafka")
if not hasattr(ck, "ShareConsumer"):
    pytest.skip("this confluent-kafka has no ShareConsumer (2.16+)", allow_module_level=True)

from kwire.testing import Broker  # noqa: E402
from kwire.testing.client import WireClient  # noqa: E402
from tests.share.test_share_wire import _res  # noqa: E402

AT = ck.AcknowledgeType
LOCK_MS = 1500


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"kwire.emulate.kafka.version": "4.3", "offsets.topic.num.partitions": 1,
                           "group.share.record.lock.duration.ms": LOCK_MS,
                           "group.share.min.record.lock.duration.ms": 1000,
                           "group.share.delivery.count.limit": 3}) as b:
        yield b


def _setup(broker, n: int):
    topic, group = f"sc-{uuid.uuid4().hex[:8]}", f"scg-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap_servers) as c:
        c.create_topic(topic, 1)
        r = c.request("IncrementalAlterConfigs", 1, resources=[_res(c, group, "share.auto.offset.reset", "earliest")],
                      validate_only=False)
        assert r.responses[0].error_code == 0
        if n:
            c.produce(topic, [(None, f"v{i}".encode()) for i in range(n)])
    return topic, group


def _consumer(broker, group, explicit=False, **kw):
    conf = {"bootstrap.servers": broker.bootstrap_servers, "group.id": group}
    if explicit:
        conf["share.acknowledgement.mode"] = "explicit"
    conf.update(kw)
    return ck.ShareConsumer(conf)


def test_three_consumers_share_one_partition(broker):
    topic, group = _setup(broker, 0)
    owner: dict[int, str] = {}
    dups: list = []
    stop = threading.Event()
    lock = threading.Lock()

    def run(name):
        sc = _consumer(broker, group)
        try:
            sc.subscribe([topic])
            while not stop.is_set():
                for m in sc.poll(0.1):
                    if m.error() is not None:
                        continue
                    with lock:
                        if m.offset() in owner:
                            dups.append((m.offset(), owner[m.offset()], name))
                        owner.setdefault(m.offset(), name)
                    time.sleep(0.01)
            sc.commit_sync()   # accept the last batch: librdkafka's close() releases what it holds
        finally:
            sc.close()

    threads = [threading.Thread(target=run, args=(f"c{i}",), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    coord = None
    until = time.monotonic() + 20
    while time.monotonic() < until:   # all three in the group before the records come
        coord = broker.broker.groups
        sg = coord.share_group(group) if coord is not None else None
        if sg is not None and len(sg.members) == 3:
            break
        time.sleep(0.1)
    assert len(coord.share_group(group).members) == 3
    with WireClient(broker.bootstrap_servers) as c:
        c.produce(topic, [(None, f"v{i}".encode()) for i in range(60)])
    until = time.monotonic() + 20
    while len(owner) < 60 and time.monotonic() < until:
        time.sleep(0.05)
    stop.set()
    for t in threads:
        t.join(20)
    assert not dups
    assert sorted(owner) == list(range(60))


def test_accept_release_reject(broker):
    topic, group = _setup(broker, 3)
    sc = _consumer(broker, group, explicit=True)
    try:
        sc.subscribe([topic])
        got = []
        until = time.monotonic() + 15
        while len(got) < 3 and time.monotonic() < until:
            batch = [m for m in sc.poll(0.2) if m.error() is None]
            for m in batch:
                got.append(m)
            if len(got) < 3 and batch:   # explicit mode: acknowledge before polling again
                for m in batch:
                    sc.acknowledge(m, AT.RELEASE)
                got = []
        assert [m.offset() for m in got] == [0, 1, 2]
        sc.acknowledge(got[0], AT.ACCEPT)
        sc.acknowledge(got[1], AT.RELEASE)
        sc.acknowledge(got[2], AT.REJECT)
        sc.commit_sync()
        again = []
        until = time.monotonic() + 15
        while not again and time.monotonic() < until:
            again = [m for m in sc.poll(0.2) if m.error() is None]
        assert [(m.offset(), m.delivery_count()) for m in again][:1] == [(1, got[1].delivery_count() + 1)]
        for m in again:
            sc.acknowledge(m, AT.ACCEPT)
        sc.commit_sync()
        rest = []
        until = time.monotonic() + 1.5
        while time.monotonic() < until:
            rest += [m for m in sc.poll(0.2) if m.error() is None]
        assert rest == []   # the rejected record is archived
    finally:
        sc.close()


def test_poison_record_and_stopped_consumer(broker):
    topic, group = _setup(broker, 4)
    # a consumer takes records and stops (no acknowledgement, no close while the other reads)
    stopped = _consumer(broker, group, explicit=True)
    stopped.subscribe([topic])
    held = []
    until = time.monotonic() + 15
    while not held and time.monotonic() < until:
        held = [m.offset() for m in stopped.poll(0.2) if m.error() is None]
    assert held
    reader = _consumer(broker, group, explicit=True)
    try:
        reader.subscribe([topic])
        seen: dict[int, list[int]] = {}
        until = time.monotonic() + 25
        while time.monotonic() < until and not (set(seen) >= {0, 1, 2, 3} and seen[0][-1] == 3):
            for m in reader.poll(0.2):
                if m.error() is not None:
                    continue
                seen.setdefault(m.offset(), []).append(m.delivery_count())
                # v0 is the poison record: released on every delivery
                reader.acknowledge(m, AT.RELEASE if m.value() == b"v0" else AT.ACCEPT)
            reader.commit_sync()
        time.sleep(0.5)
        more = [m.offset() for m in reader.poll(1.0) if m.error() is None]
        assert 0 not in more   # archived after 3 deliveries
        assert seen[0][-1] == 3 and len(seen[0]) <= 3
        for off in held:        # the stopped consumer's records came back once its locks expired
            assert seen[off][0] >= 2, (held, seen)
        assert set(seen) == {0, 1, 2, 3}
    finally:
        reader.close()
        stopped.close()

"""Share-group state (KIP-932) survives the SIGKILL of the share partition's leader and of the
share coordinator: three kwire processes, the data topic and ``__share_group_state``
replicated on all three. A confluent-kafka ShareConsumer acquires ten records, accepts five
and holds five when the nodes die; on the new leader (which reads the state from the share
coordinator: ReadShareGroupState) the accepted records are never delivered again, the held
ones come back once each with their delivery count one higher, and nothing is lost. When
the share coordinator (the __share_group_state leader) is another node than the share
partition's leader, it is killed (and restarted) first, so the new leader reads from the
new coordinator, which replayed its replicated partition. Then the new leader dies too: the
next one delivers nothing again but the record produced after. About 30-40 s."""
from __future__ import annotations

import time

import confluent_kafka as ck
import pytest

from tests.raft.cluster import call, wait_for
from tests.replication.chaos import bootstrap, coordinator, create_topic, live_port, partitions, start_cluster
from tests.share.test_share_wire import _res

if not hasattr(ck, "ShareConsumer"):
    pytest.skip("this confluent-kafka has no ShareConsumer (2.16+)", allow_module_level=True)

pytestmark = pytest.mark.slow
AT = ck.AcknowledgeType
TOPIC, GROUP, STATE = "share-failover", "share-failover-g", "__share_group_state"


def _leader(c, topic: str) -> int:
    return partitions(live_port(c), [topic])[(topic, 0)][0]


def _poll(sc, want, timeout: float, ack=None) -> list:
    """(offset, delivery count, value) polled until ``want(got)`` or ``timeout``; every record
    polled is acknowledged with ``ack(message)`` (explicit mode: before the next poll)."""
    got: list = []
    until = time.monotonic() + timeout
    while time.monotonic() < until and not want(got):
        batch = [m for m in sc.poll(0.3) if m.error() is None]
        for m in batch:
            got.append((m.offset(), m.delivery_count(), m.value()))
            if ack is not None:
                sc.acknowledge(m, ack(m))
        if batch and ack is not None:
            sc.commit_sync()
    return got


def _start_offset(c) -> int:
    from kwire.codec.apis import api  # noqa: PLC0415
    R = api("DescribeShareGroupOffsets").request
    gc = coordinator(live_port(c), GROUP)
    print(f"group coordinator {gc}, share partition leader {_leader(c, TOPIC)}")
    port = c.nodes[gc].port
    r = call(port, "DescribeShareGroupOffsets", 1, timeout=5.0, groups=[R.struct(
        "DescribeShareGroupOffsetsRequestGroup")(group_id=GROUP, topics=[R.struct(
            "DescribeShareGroupOffsetsRequestTopic")(topic_name=TOPIC, partitions=[0])])])
    g = r.groups[0]
    assert g.error_code == 0, g
    p = g.topics[0].partitions[0]
    assert p.error_code == 0, p
    return p.start_offset


def test_share_state_survives_leader_and_coordinator_kills(tmp_path):
    c = start_cluster(str(tmp_path), "--override", "kwire.emulate.kafka.version=4.3",
                      "--override", "share.coordinator.state.topic.num.partitions=1",
                      "--override", "share.coordinator.state.topic.replication.factor=3",
                      "--override", "group.share.record.lock.duration.ms=60000",
                      "--override", "group.share.max.record.lock.duration.ms=60000")
    scs = []
    try:
        create_topic(c, TOPIC, partitions=1)
        r = call(live_port(c), "IncrementalAlterConfigs", 1, timeout=5.0, validate_only=False,
                 resources=[_res(None, GROUP, "share.auto.offset.reset", "earliest")])
        assert r.responses[0].error_code == 0
        p = ck.Producer({"bootstrap.servers": bootstrap(c), "acks": "all", "linger.ms": 50})
        for i in range(10):
            p.produce(TOPIC, f"v{i}".encode(), partition=0)
        assert p.flush(15) == 0

        # a holds all ten: accepts 0-4, keeps 5-9 acquired (no acknowledgement, no more polls)
        a = ck.ShareConsumer({"bootstrap.servers": bootstrap(c), "group.id": GROUP,
                              "share.acknowledgement.mode": "explicit"})
        scs.append(a)
        a.subscribe([TOPIC])
        held: dict[int, int] = {}
        until = time.monotonic() + 30
        while len(held) < 10 and time.monotonic() < until:
            batch = [m for m in a.poll(0.3) if m.error() is None]
            if not batch:
                continue
            if len(batch) < 10:   # not all ten in one go: give them back and try again
                for m in batch:
                    a.acknowledge(m, AT.RELEASE)
                a.commit_sync()
                continue
            held = {m.offset(): m.delivery_count() for m in batch}
            for m in batch[:5]:
                a.acknowledge(m, AT.ACCEPT)
            a.commit_sync()   # answered once the coordinator's record is replicated
        assert sorted(held) == list(range(10)), held

        leader, coord = _leader(c, TOPIC), _leader(c, STATE)
        print(f"share partition leader {leader}, share coordinator {coord}")
        if coord != leader:
            # the share coordinator dies alone: its partition's new leader replays the log
            c.nodes[coord].kill()
            wait_for(lambda: _leader(c, STATE) not in (-1, coord), 30, message="a new share coordinator")
            c.restart(coord)
        c.nodes[leader].kill()
        wait_for(lambda: _leader(c, TOPIC) not in (-1, leader), 30, message="a new leader of the data partition")

        b = ck.ShareConsumer({"bootstrap.servers": bootstrap(c), "group.id": GROUP,
                              "share.acknowledgement.mode": "explicit"})
        scs.append(b)
        b.subscribe([TOPIC])
        got = _poll(b, lambda g: {o for o, _, _ in g} >= set(range(5, 10)), 40, ack=lambda m: AT.ACCEPT)
        offsets = [o for o, _, _ in got]
        assert not [o for o in offsets if o < 5], f"accepted records delivered again: {got}"
        assert sorted(offsets) == list(range(5, 10)), got     # each held one once, none lost
        assert {o: n for o, n, _ in got} == {o: held[o] + 1 for o in range(5, 10)}, (held, got)
        assert all(v == f"v{o}".encode() for o, _, v in got)
        # all ten are done: nothing comes again, not even from the next leader (the new
        # leader's writes went to the coordinator of now)
        assert _poll(b, lambda g: False, 1.0, ack=lambda m: AT.ACCEPT) == []
        c.restart(leader)
        second = _leader(c, TOPIC)
        c.nodes[second].kill()
        wait_for(lambda: _leader(c, TOPIC) not in (-1, second), 30, message="a third leader of the data partition")
        assert _poll(b, lambda g: False, 4.0, ack=lambda m: AT.ACCEPT) == []
        p.produce(TOPIC, b"v10", partition=0)
        assert p.flush(15) == 0
        assert [(o, n) for o, n, _ in _poll(b, lambda g: bool(g), 20, ack=lambda m: AT.ACCEPT)] == [(10, 1)]
        # the group's coordinator describes the offsets (from the share coordinator when another
        # broker leads the partition): all eleven done
        wait_for(lambda: _start_offset(c) == 11, 15, message="DescribeShareGroupOffsets: start offset 11")
    finally:
        for sc in scs:
            try:
                sc.close()
            except Exception:  # noqa: BLE001 - a consumer of a dead node
                pass
        c.stop()

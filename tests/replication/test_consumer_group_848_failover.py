"""A KIP-848 consumer group survives the SIGKILL of its coordinator: three kwire processes,
``__consumer_offsets`` replicated on all three; confluent-kafka members with
group.protocol=consumer keep going, the new coordinator loads the group's records (the group
epoch goes on from where it was, members keep their ids) and every partition is owned once
again. One kill, about 15 s (three processes started)."""
from __future__ import annotations

import time

import confluent_kafka as ck
import pytest

from tests.raft.cluster import call
from tests.replication.chaos import bootstrap, coordinator, create_topic, live_port, start_cluster

pytestmark = pytest.mark.slow

TOPIC = "k848-failover"


def _describe(port: int, group: str):
    r = call(port, "ConsumerGroupDescribe", 1, timeout=3.0, group_ids=[group], include_authorized_operations=False)
    return r.groups[0]


def _owned_once(cs) -> bool:
    owned = [sorted(tp.partition for tp in c.assignment()) for c in cs]
    return all(owned) and sorted(p for o in owned for p in o) == list(range(6))


def _poll_until(cs, cond, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in cs:
            c.poll(0.05)
        if cond():
            return True
    return False


def test_consumer_group_moves_with_its_coordinator(tmp_path):
    c = start_cluster(str(tmp_path), "--override", "kwire.emulate.kafka.version=4.0",
                      "--override", "group.consumer.heartbeat.interval.ms=300",
                      "--override", "group.consumer.session.timeout.ms=20000")
    group = "g848-failover"
    cs = []
    try:
        create_topic(c, TOPIC, partitions=6)
        bs = bootstrap(c)
        cs = [ck.Consumer({"bootstrap.servers": bs, "group.id": group, "group.protocol": "consumer",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False}) for _ in range(2)]
        for k in cs:
            k.subscribe([TOPIC])
        assert _poll_until(cs, lambda: _owned_once(cs), 30)
        port = live_port(c)
        coord = coordinator(port, group)
        before = _describe(c.nodes[coord].port, group)
        assert before.error_code == 0 and len(before.members) == 2

        c.nodes[coord].kill()
        port = next(n.port for n in c.nodes.values() if n.alive)

        def moved():
            new = coordinator(port, group)
            return new not in (-1, coord) and _describe(c.nodes[new].port, group).error_code == 0
        assert _poll_until(cs, moved, 30)
        new = coordinator(port, group)
        after = _describe(c.nodes[new].port, group)
        # loaded from the replicated records: same members, the epoch going on (not a new group)
        assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
        assert after.group_epoch >= before.group_epoch
        assert _poll_until(cs, lambda: _owned_once(cs) and _describe(c.nodes[new].port, group).group_state
                           == "Stable", 30)
    finally:
        for k in cs:
            k.close()
        c.stop()

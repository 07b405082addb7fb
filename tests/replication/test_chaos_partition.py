"""Network partitions between brokers on one machine: an isolated leader acknowledges nothing,
the majority goes on in a later leader epoch, and no split brain survives the heal.

Three nodes, RF=3, min.insync.replicas=2, broker.session.timeout.ms=2000, each reading the
nodes it cannot reach from a file of its own (kwire.link_faults: the Raft peer links, the
replica fetchers and incoming replica fetches honour it, both ways). The test isolates the
leader of a partition - once a plain broker, once the node that is also the active
controller - from both other nodes while the test itself still reaches every node:

- every acks=all Produce sent straight to the isolated leader after the cut is refused (it
  cannot move its high watermark, and cannot shrink its ISR without the controller);
- the other two fence it, elect a new leader from the ISR in a later leader epoch (the ISR
  without the isolated node), and acknowledge acks=all writes;
- after the heal the old leader follows the new one, drops its unacknowledged tail and
  rejoins the ISR: every acknowledged record (before the cut and on the new leader) is read
  back once, at its offset, and every replica holds the same log.
"""
from __future__ import annotations

import collections
import threading
import time

import pytest

from tests.raft.cluster import describe_quorum, wait_for
from tests.replication import chaos as C

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # replica.lag.time.max.ms 3 s: the isolated leader also tries (and fails) to shrink its ISR
    c = C.PartitionableCluster(str(tmp_path_factory.mktemp("netsplit") / "cluster"), 3,
                               (*C.CLUSTER_ARGS, "--override", "replica.lag.time.max.ms=3000"))
    c.start()
    yield c
    c.stop()


@pytest.mark.parametrize("who", ["broker", "controller"])
def test_isolated_leader_acknowledges_nothing_and_no_split_brain(cluster, who):
    c = cluster
    topic = f"split-{who}"
    C.create_topic(c, topic)
    C.wait_healthy(c, [topic])
    controller = wait_for(lambda: describe_quorum(C.live_port(c)).leader_id, 10)
    lead = C.leaders(c, topic)
    victim = controller if who == "controller" else min(n for n in set(lead.values()) if n != controller)
    part = min(p for p, leader in lead.items() if leader == victim)
    others = [n for n in c.nodes if n != victim]
    vport = c.nodes[victim].port
    old_epoch = C.partitions(vport, [topic])[(topic, part)][1]

    before = C.Acks("pre")
    for _ in range(20):
        v = before.next_value()
        code, offset = C.produce_raw(vport, topic, part, v)
        assert code == 0, f"before the cut: error {code}"
        before.acked.append((part, offset, v))

    c.isolate(victim)
    c.wait_cut_noticed()

    # the isolated side: keep writing to the old leader until after the heal
    isolated = C.Acks("iso")
    stop = threading.Event()
    phase = ["cut"]

    def write_to_isolated():
        while not stop.is_set():
            v = isolated.next_value()
            try:
                code, offset = C.produce_raw(vport, topic, part, v)
            except OSError as exc:
                isolated.refused.append((v, (phase[0], repr(exc))))
                continue
            if code == 0:
                isolated.acked.append((part, offset, v))
            else:
                isolated.refused.append((v, (phase[0], code)))

    t = threading.Thread(target=write_to_isolated, daemon=True)
    t.start()
    try:
        # the majority: a new leader from the ISR, in a later epoch, without the isolated node
        def new_leader():
            leader, epoch, isr = C.partitions(c.nodes[others[0]].port, [topic])[(topic, part)]
            return leader in others and epoch > old_epoch and victim not in isr and (leader, epoch, isr)
        new, new_epoch, new_isr = wait_for(new_leader, 30, message=f"a new leader of {topic}-{part}")
        majority = C.Acks("maj")

        def first_ack():
            v = majority.next_value()
            code, offset = C.produce_raw(c.nodes[new].port, topic, part, v)
            if code == 0:
                majority.acked.append((part, offset, v))
            return code == 0
        wait_for(first_ack, 20, message=f"node {new} acknowledges acks=all writes")
        for _ in range(50):
            v = majority.next_value()
            code, offset = C.produce_raw(c.nodes[new].port, topic, part, v)
            assert code == 0, f"new leader {new} (epoch {new_epoch}, ISR {new_isr}): error {code}"
            majority.acked.append((part, offset, v))
        # the old leader has had time past its fencing and past replica.lag.time.max.ms (when it
        # wants its ISR shrunk) to acknowledge anything: it must not have
        wait_for(lambda: len(isolated.refused) >= 6, 30, message="writes to the isolated leader answered")
        assert isolated.acked == [], (
            f"split brain: isolated node {victim} acknowledged {isolated.acked[:5]} while node {new} "
            f"led {topic}-{part} in epoch {new_epoch}")
    finally:
        phase[0] = "healed"
        c.heal()
    c.wait_cut_noticed()
    C.wait_healthy(c, [topic])
    stop.set()
    t.join(30)
    assert isolated.acked == [], f"isolated node {victim} acknowledged {isolated.acked[:5]}"
    log = C.read_back(c, topic)
    total = C.check_acknowledged(log, [before, majority])
    C.wait_replicas_agree(c, topic)
    after = C.partitions(vport, [topic])[(topic, part)]
    assert after[0] != victim or after[1] > new_epoch, after
    print(f"\nnetsplit ({who}): node {victim} isolated, node {new} led {topic}-{part} in epoch {new_epoch}; "
          f"{total} acknowledged, {len(isolated.refused)} writes to the isolated leader refused "
          f"{collections.Counter(code for _, code in isolated.refused).most_common(3)}")


def test_stock_producers_ride_through_an_isolated_leader(cluster):
    """confluent-kafka, kafka-python and aiokafka (acks=all, idempotent) write to every partition
    while the leader of some of them is cut off: what they sent it times out unacknowledged, they
    move to the new leaders, and after the heal every acknowledged record is there exactly once,
    in order; nothing they sent was written twice."""
    c = cluster
    topic = "split-stock"
    C.create_topic(c, topic)
    C.wait_healthy(c, [topic])
    producers = [P(c, topic=topic) for P in C.PRODUCERS]
    for p in producers:
        p.start()
    try:
        wait_for(lambda: all(p.acked_count() for p in producers), 60, message="every producer acknowledged")
        lead = C.leaders(c, topic)
        victim = lead[0]
        others = [n for n in c.nodes if n != victim]
        c.isolate(victim)
        c.wait_cut_noticed()
        wait_for(lambda: all(C.partitions(c.nodes[n].port, [topic])[(topic, p)][0] in others
                             for n in others for p in lead), 30, message=f"new leaders without node {victim}")
        acked = [p.acked_count() for p in producers]
        wait_for(lambda: all(p.acked_count() > a + 50 for p, a in zip(producers, acked)), 60,
                 message=f"every producer acknowledged by the new leaders while node {victim} is cut off")
    finally:
        c.heal()
    c.wait_cut_noticed()
    C.wait_healthy(c, [topic])
    acked = [p.acked_count() for p in producers]
    wait_for(lambda: all(p.acked_count() > a + 50 for p, a in zip(producers, acked)), 60,
             message="every producer acknowledged after the heal")
    for p in producers:
        p.stop()
    total = C.check_acknowledged(C.read_back(c, topic), producers)
    errors = [e for p in producers for e in p.errors]
    print(f"\nnetsplit (stock clients): node {victim} isolated; {total} acknowledged "
          f"({', '.join(f'{p.name_prefix}={len(p.acked)}' for p in producers)}), {len(errors)} produce errors "
          f"{collections.Counter(e for _, e in errors).most_common(3)}")


def test_a_cut_off_follower_leaves_the_isr_and_comes_back(cluster):
    """The link between a leader and one follower is cut; both still reach the controller (the
    third node), so nobody is fenced: acks=all writes wait until the leader has the follower
    taken out of the ISR (replica.lag.time.max.ms, AlterPartition), then go on with the leader
    and the controller; after the heal the follower catches up and rejoins the ISR."""
    c = cluster
    topic = "split-follower"
    C.create_topic(c, topic)
    C.wait_healthy(c, [topic])
    controller = wait_for(lambda: describe_quorum(C.live_port(c)).leader_id, 10)
    lead = C.leaders(c, topic)
    part, leader = min((p, n) for p, n in lead.items() if n != controller)
    follower = next(n for n in c.nodes if n not in (leader, controller))
    lport = c.nodes[leader].port
    writes = C.Acks("cut")

    def write(timeout_ms: int = 1500) -> int:
        v = writes.next_value()
        code, offset = C.produce_raw(lport, topic, part, v, timeout_ms)
        if code == 0:
            writes.acked.append((part, offset, v))
        return code
    for _ in range(10):
        assert write() == 0
    c.cut(leader, follower)
    c.wait_cut_noticed()
    t0 = time.monotonic()
    try:
        wait_for(lambda: write() == 0, 30, message=f"{topic}-{part} acknowledges without node {follower}")
        shrunk_after = time.monotonic() - t0
        _, _, isr = C.partitions(c.nodes[controller].port, [topic])[(topic, part)]
        assert isr == sorted([leader, controller]), isr
        for _ in range(20):
            assert write() == 0
        assert C.partitions(c.nodes[controller].port, [topic])[(topic, part)][0] == leader, "leadership moved"
    finally:
        c.heal()
    c.wait_cut_noticed()
    C.wait_healthy(c, [topic])
    for _ in range(10):
        assert write() == 0
    C.check_acknowledged(C.read_back(c, topic), [writes])
    C.wait_replicas_agree(c, topic)
    print(f"\nnetsplit (follower): {leader} -/- {follower}: acks=all again after {shrunk_after:.1f}s without "
          f"node {follower} in the ISR; {len(writes.acked)} acknowledged")

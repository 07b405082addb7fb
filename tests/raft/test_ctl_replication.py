"""The controller side of replication on three real kwire processes: replicated topics
(Metadata / kcat -L list replicas and ISR), fencing a SIGKILLed broker moves its leaderships
and takes it out of the ISRs (leader epochs bumped), an offline partition comes back with its
broker, AlterPartition over the controller listener with good and bad epochs, ElectLeaders
through kafka-python's admin client; a paused (SIGSTOP) broker fenced, then unfenced.

Followers do not copy data in these tests (the broker side lands separately): what is checked
is the controller's decisions, as metadata."""
from __future__ import annotations

import shutil
import subprocess
import uuid

import pytest
import trio

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.metadata import controller_apis as CA

from .cluster import Cluster, WireClient, call, wait_for

pytestmark = pytest.mark.slow

SESSION_MS = 2000


def partitions(port: int, topic: str) -> dict[int, object]:
    """{partition: Metadata v12 partition} for ``topic`` as node ``port`` sees it."""
    r = call(port, "Metadata", 12, topics=None, allow_auto_topic_creation=False,
             include_topic_authorized_operations=False)
    for t in r.topics:
        if t.name == topic:
            return {p.partition_index: p for p in t.partitions}
    return {}


def topic_id(port: int, topic: str) -> uuid.UUID:
    r = call(port, "Metadata", 12, topics=None, allow_auto_topic_creation=False,
             include_topic_authorized_operations=False)
    return next(t.topic_id for t in r.topics if t.name == topic)


def controller_of(port: int) -> int:
    return call(port, "Metadata", 12, topics=None, allow_auto_topic_creation=False,
                include_topic_authorized_operations=False).controller_id


def create(port: int, name: str, partitions_: int, rf: int, assignments=None, configs=None):
    a = api("CreateTopics").request
    asg = [a.struct("CreatableReplicaAssignment")(partition_index=p, broker_ids=b)
           for p, b in (assignments or {}).items()]
    cfg = [a.struct("CreatableTopicConfig")(name=k, value=v) for k, v in (configs or {}).items()]
    ct = a.struct("CreatableTopic")(name=name, num_partitions=partitions_, replication_factor=rf,
                                    assignments=asg, configs=cfg)
    r = call(port, "CreateTopics", 7, timeout=30.0, topics=[ct], timeout_ms=15000, validate_only=False)
    return r.topics[0]


def alter_partition(controller_port: int, broker: int, tid, partition: int, leader_epoch: int, partition_epoch: int,
                    isr: list[int], version: int = 3):
    Req = api("AlterPartition").request
    pd = dict(partition_index=partition, leader_epoch=leader_epoch, partition_epoch=partition_epoch,
              leader_recovery_state=0)
    if version >= 3:
        pd["new_isr_with_epochs"] = [Req.struct("BrokerState")(broker_id=b, broker_epoch=-1) for b in isr]
    else:
        pd["new_isr"] = list(isr)
    body = dict(broker_id=broker, broker_epoch=-1, topics=[Req.struct("TopicData")(
        topic_id=tid, partitions=[Req.struct("PartitionData")(**pd)])])
    r = call(controller_port, "AlterPartition", version, **body)
    assert r.error_code == 0
    return r.topics[0].partitions[0]


class ToPort:
    """``RaftTransport.call`` over a blocking wire client, to drive the sending side of
    kwire.metadata.controller_apis against a real controller listener."""

    def __init__(self, ports: dict[int, int]):
        self.ports = ports

    async def call(self, dest, a, version, body, timeout=5.0):
        def send():
            with WireClient(self.ports[dest], timeout) as c:
                return c.request(a.name, version, **{k: getattr(body, k) for k in body._fields})
        return await trio.to_thread.run_sync(send)


def test_failover_alter_partition_and_elections(tmp_path):
    cluster = Cluster(str(tmp_path), extra_args=(
        "--override", f"broker.session.timeout.ms={SESSION_MS}", "--override", "auto.leader.rebalance.enable=false"))
    cluster.start()
    try:
        nodes = cluster.nodes
        ports = {i: n.port for i, n in nodes.items()}
        cports = {i: n.controller_port for i, n in nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        ctl = controller_of(ports[1])
        others = sorted(i for i in ports if i != ctl)

        # RF 3, through a node that is not the controller: every broker a replica, all in sync
        r = create(ports[others[0]], "r3", 3, 3)
        assert (r.error_code, r.replication_factor) == (0, 3), r.error_message
        parts = wait_for(lambda: (lambda ps: ps if len(ps) == 3 else None)(partitions(ports[others[1]], "r3")), 10)
        for p in parts.values():
            assert sorted(p.replica_nodes) == [1, 2, 3] and sorted(p.isr_nodes) == [1, 2, 3]
            assert p.leader_id == p.replica_nodes[0] and p.leader_epoch == 0 and p.error_code == 0
        assert sorted(p.leader_id for p in parts.values()) == [1, 2, 3]
        kcat = shutil.which("kcat")
        if kcat:
            out = subprocess.run([kcat, "-L", "-b", f"127.0.0.1:{ports[ctl]}", "-t", "r3"], capture_output=True,
                                 text=True, timeout=30).stdout
            for i, p in parts.items():
                assert (f"partition {i}, leader {p.leader_id}, replicas: {','.join(map(str, p.replica_nodes))}, "
                        f"isrs: {','.join(map(str, p.isr_nodes))}") in out, out
        tid = topic_id(ports[ctl], "r3")

        # AlterPartition on the controller listener: Kafka's checks, then the ISR shrinks
        p0 = parts[0]
        lead, follower = p0.leader_id, next(b for b in p0.replica_nodes if b != p0.leader_id)
        rest = [b for b in p0.replica_nodes if b != follower]
        assert alter_partition(cports[others[0]], lead, tid, 0, 0, 0, rest).error_code == ErrorCode.NOT_CONTROLLER
        assert alter_partition(cports[ctl], follower, tid, 0, 0, 0, rest).error_code == ErrorCode.INVALID_REQUEST
        assert alter_partition(cports[ctl], lead, tid, 0, 0, 0, rest + [7]).error_code == ErrorCode.INVALID_REQUEST
        assert alter_partition(cports[ctl], lead, tid, 0, 0, 0, [follower]).error_code == ErrorCode.INVALID_REQUEST
        assert alter_partition(cports[ctl], lead, tid, 0, 0, 3, rest).error_code == ErrorCode.NOT_CONTROLLER
        assert alter_partition(cports[ctl], lead, uuid.uuid4(), 0, 0, 0, rest).error_code == ErrorCode.UNKNOWN_TOPIC_ID
        got = alter_partition(cports[ctl], lead, tid, 0, 0, 0, rest, version=2)
        assert (got.error_code, got.leader_id, got.leader_epoch, sorted(got.isr), got.partition_epoch) == (
            0, lead, 0, sorted(rest), 1)
        assert alter_partition(cports[ctl], lead, tid, 0, 0, 0, p0.replica_nodes).error_code == \
            ErrorCode.INVALID_UPDATE_VERSION
        # the sending side (what a non-controller node's quorum.alter_partition sends): the ISR grows back.
        # The leader itself asks for the same once the follower it lost fetches again (within about a
        # fetch wait): whichever comes second is answered INVALID_UPDATE_VERSION, and the ISR is whole.
        res = trio.run(CA.send_alter_partition, ToPort(cports), ctl, lead, -1, tid, 0, 0, 1, list(p0.replica_nodes))
        if res.code == ErrorCode.NONE:
            assert (res.leader, res.leader_epoch, sorted(res.isr), res.partition_epoch) == (lead, 0, [1, 2, 3], 2)
        else:
            assert res.code == ErrorCode.INVALID_UPDATE_VERSION, res
        assert wait_for(lambda: sorted(partitions(ports[follower], "r3")[0].isr_nodes) == [1, 2, 3], 10)

        # an RF 1 partition on a broker that will die, and one that allows unclean elections
        victim = others[0]
        assert create(ports[ctl], "solo", -1, -1, {0: [victim]}).error_code == 0
        assert create(ports[ctl], "loose", -1, -1, {0: [victim, ctl]},
                      {"unclean.leader.election.enable": "true"}).error_code == 0
        loose_isr = [victim]   # the controller's follower leaves the ISR, as a leader would report it
        loose_tid = topic_id(ports[ctl], "loose")
        assert wait_for(lambda: partitions(ports[ctl], "loose"), 10)
        assert alter_partition(cports[ctl], victim, loose_tid, 0, 0, 0, loose_isr).error_code == 0
        before = wait_for(lambda: (lambda ps: ps if len(ps) == 3 else None)(partitions(ports[ctl], "r3")), 10)

        # SIGKILL: after broker.session.timeout.ms its leaderships move, it leaves every ISR
        nodes[victim].kill()
        live = [i for i in ports if i != victim]

        def failed_over():
            ps = partitions(ports[ctl], "r3")
            return ps if all(p.leader_id not in (victim, -1) for p in ps.values()) else None
        after = wait_for(failed_over, SESSION_MS / 1000 + 10)
        assert after, nodes[ctl].log_tail()
        for i, p in after.items():
            if before[i].leader_id == victim:
                assert p.leader_epoch == before[i].leader_epoch + 1
                assert p.leader_id == next(b for b in p.replica_nodes if b != victim)   # replica order
            else:
                assert (p.leader_id, p.leader_epoch) == (before[i].leader_id, before[i].leader_epoch)
        # the controller's image: no ISR holds the victim (a no-change AlterPartition answers the state)
        for i, p in after.items():
            expected = [b for b in before[i].isr_nodes if b != victim]   # in order: another order is a change
            pe = 3 if i == 0 else 1
            got = alter_partition(cports[ctl], p.leader_id, tid, i, p.leader_epoch, pe, expected)
            assert (got.error_code, got.isr, got.partition_epoch) == (0, expected, pe), (i, got)
        solo = wait_for(lambda: (lambda p: p if p.leader_id == -1 else None)(partitions(ports[ctl], "solo")[0]), 10)
        assert solo.error_code == ErrorCode.LEADER_NOT_AVAILABLE and solo.leader_epoch == 1
        loose = partitions(ports[ctl], "loose")[0]
        assert (loose.leader_id, loose.isr_nodes, loose.leader_epoch) == (ctl, [ctl], 1)   # unclean: ISR reset
        # a fenced replica cannot join an ISR
        p = after[0]
        isr_now = [b for b in before[0].isr_nodes if b != victim]
        assert alter_partition(cports[ctl], p.leader_id, tid, 0, p.leader_epoch, 3, isr_now + [victim]).error_code \
            == ErrorCode.INELIGIBLE_REPLICA

        # ElectLeaders through kafka-python: the victim is not back, so its preferred partitions cannot move
        from kafka.admin import KafkaAdminClient  # noqa: PLC0415
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{ports[live[0]]}", request_timeout_ms=20000)
        try:
            pref = next(i for i, p in after.items() if p.replica_nodes[0] == victim)
            resp = admin.elect_leaders(0, {"r3": [pref], "solo": [0], "nope": [0]}, raise_errors=False)
            codes = {(r.topic, p.partition_id): p.error_code for r in resp.replica_election_results
                     for p in r.partition_result}
            assert codes == {("r3", pref): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                             ("solo", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                             ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            resp = admin.elect_leaders(1, {"solo": [0]}, raise_errors=False)
            assert resp.replica_election_results[0].partition_result[0].error_code == \
                ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE

            # it comes back: registered again; the offline partition it holds the ISR of is led by it again
            cluster.restart(victim)
            solo = wait_for(lambda: (lambda p: p if p.leader_id == victim else None)(
                partitions(ports[ctl], "solo")[0]), 15)
            # epoch 2 at least: unfenced and elected (2). Its fetches may unfence the old
            # registration before it registers again; then, with ELR (a 4.3-formatted cluster),
            # the unclean restart takes it out of the ISR and ELR (3) and the controller elects
            # it again as the last known leader (4), so the new incarnation never reuses an epoch
            assert solo and solo.leader_epoch in (2, 3, 4) and solo.error_code == 0
            # it rejoins an ISR when the leader says so; then a preferred election gives it back its partition
            # (the leader asks for it itself once the victim has caught up: wait for that, rather
            # than race it with an AlterPartition of a partition epoch that may be stale by then)
            p = wait_for(lambda: (lambda p: p if victim in p.isr_nodes else None)(
                partitions(ports[ctl], "r3")[pref]), 15)
            assert p, nodes[ctl].log_tail()
            # asked of the node that is neither controller nor victim: forwarded, and applied there on return
            fwd = others[1]
            tp = api("ElectLeaders").request.struct("TopicPartitions")(topic="r3", partitions=[pref])
            resp = call(ports[fwd], "ElectLeaders", 2, election_type=0, topic_partitions=[tp], timeout_ms=20000)
            assert resp.replica_election_results[0].partition_result[0].error_code == 0
            p2 = partitions(ports[fwd], "r3")[pref]
            assert (p2.leader_id, p2.leader_epoch) == (victim, p.leader_epoch + 1)
            # null topic_partitions (kafka-python lists every partition itself): every partition, and only
            # those that needed an election are listed
            resp = call(ports[fwd], "ElectLeaders", 2, election_type=0, topic_partitions=None, timeout_ms=20000)
            listed = {(r.topic, x.partition_id): x.error_code for r in resp.replica_election_results
                      for x in r.partition_result}
            assert resp.error_code == 0 and ErrorCode.ELECTION_NOT_NEEDED not in listed.values(), listed
            assert ("r3", pref) not in listed and ("solo", 0) not in listed
        finally:
            admin.close()
    finally:
        cluster.stop()


if __name__ == "__main__":   # pragma: no cover
    pytest.main([__file__, "-q"])


def test_paused_broker_is_fenced_then_unfenced(tmp_path):
    """SIGSTOP: the controller stops hearing the broker and fences it (its RF 1 partition goes
    offline, it leaves the ISR of the others); SIGCONT: it fetches again, is unfenced without
    registering anew, and the offline partition whose ISR it holds is led by it again."""
    import os  # noqa: PLC0415
    import signal  # noqa: PLC0415

    cluster = Cluster(str(tmp_path), extra_args=("--override", f"broker.session.timeout.ms={SESSION_MS}"))
    cluster.start()
    try:
        nodes = cluster.nodes
        ports = {i: n.port for i, n in nodes.items()}
        assert wait_for(lambda: all(controller_of(p) > 0 for p in ports.values()), 20)
        ctl = controller_of(ports[1])
        x = max(i for i in ports if i != ctl)
        assert create(ports[ctl], "solo", -1, -1, {0: [x]}).error_code == 0
        assert create(ports[ctl], "pair", -1, -1, {0: [ctl, x]}).error_code == 0
        assert wait_for(lambda: partitions(ports[ctl], "pair"), 10)
        os.kill(nodes[x].proc.pid, signal.SIGSTOP)
        try:
            solo = wait_for(lambda: (lambda p: p if p.leader_id == -1 else None)(partitions(ports[ctl], "solo")[0]),
                            SESSION_MS / 1000 + 10)
            assert solo.leader_epoch == 1
            pair = partitions(ports[ctl], "pair")[0]
            assert (pair.leader_id, pair.leader_epoch) == (ctl, 0)
            got = alter_partition(nodes[ctl].controller_port, ctl, topic_id(ports[ctl], "pair"), 0, 0, 1, [ctl])
            assert (got.error_code, got.isr) == (0, [ctl])    # it left the ISR (partition epoch 1: one change)
        finally:
            os.kill(nodes[x].proc.pid, signal.SIGCONT)
        solo = wait_for(lambda: (lambda p: p if p.leader_id == x else None)(partitions(ports[ctl], "solo")[0]), 15)
        assert solo.leader_epoch == 2
        log = nodes[ctl].log_tail(200_000)
        assert f"fence broker {x}" in log and f"unfence broker {x}" in log
        assert nodes[x].log_tail(200_000).count(f"broker {x} open") == 1    # the same process, not registered anew
    finally:
        cluster.stop()

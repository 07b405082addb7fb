"""Kafka's command-line tools on three nodes: three kwire processes and three Apache Kafka 4.3.1
nodes, each a broker and a controller voter (conftest ``three_pair``), PLAINTEXT. kafka-reassign-
partitions (generate, execute, verify, list), then one node of each cluster stopped (SIGTERM: a
controlled shutdown) and kafka-topics --under-replicated-partitions, kafka-metadata-quorum describe.
Compared as test_kafka_tools.py compares; every node's address is masked to ``<addr>``.

Two test functions, in this order on the same clusters (six processes): a throttled reassignment
(--throttle, --cancel, --verify removing the throttles), then the steps above."""
from __future__ import annotations

import json
import re
import signal
import time

from tests.ecosystem.steps import SideSteps

TOPICS = ("kafka-topics", "--bootstrap-server", "{B}")
REASSIGN = ("kafka-reassign-partitions", "--bootstrap-server", "{B}")


def _partitions(bootstrap: str, topic: str) -> dict[int, tuple[list[int], list[int], int]]:
    """{partition: (replicas, isr, leader)} as the cluster's metadata tells it."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return {p.id: (list(p.replicas), sorted(p.isrs), p.leader) for p in md.topics[topic].partitions.values()}


def _wait(cond, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def _produce(bootstrap: str, topic: str, partitions: int, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all"})
    for part in range(partitions):
        for i in range(n):
            p.produce(topic, value=b"v%d" % i, partition=part)
    assert p.flush(30) == 0


def _quorum_masks():
    """What two quorums legitimately differ in: which node leads and at which epoch, how long the log
    is, each voter's directory id and fetch times."""
    return [(r"^(LeaderId:\s*)\d+$", r"\1<id>"), (r"^(LeaderEpoch:\s*)\d+$", r"\1<epoch>"),
            (r"^(MaxFollowerLag:\s*)\d+$", r"\1<lag>"), (r"^(MaxFollowerLagTimeMs:\s*)-?\d+$", r"\1<ms>"),
            (r'"directoryId": "[A-Za-z0-9_-]{22}"', '"directoryId": "<dir>"')]


def _generated(kw, ka) -> None:
    """--generate: the current assignment is each cluster's answer and must match; the proposal is
    the tool's own random placement (AdminUtils.assignReplicasToBrokers), so only its shape is
    checked: every partition of r1 on two of the brokers 1 and 2."""
    def split(res):
        rc, out, err = res
        current, proposed = out.split("Proposed partition reassignment configuration\n")
        plan = json.loads(proposed)
        assert sorted(p["partition"] for p in plan["partitions"]) == [0, 1, 2], plan
        assert all(sorted(p["replicas"]) == [1, 2] for p in plan["partitions"]), plan
        return rc, current, err
    assert split(kw) == split(ka), (kw, ka)


def _replication_with_a_voter_down(kw, ka) -> None:
    """describe --replication with voter 3 stopped. The leader's row comes first, and which node
    leads is each quorum's own. The stopped voter's row (docs/differences.md T03): its Lag is how
    many records the leader appended since, and Kafka's active controller appends a NoOpRecord
    every metadata.max.idle.interval.ms (500 ms), kwire's does not; its LogEndOffset and times are
    -1 where it never fetched from the current leader (when node 3 led, and a new leader was
    elected): only its directory id and its being a Follower are compared. Everything else (the
    header, the live voters' rows, their lag 0) must match."""
    def rows(res):
        rc, out, err = res
        lines = [re.sub(r"\s*\t\s*", "\t", x).strip("\t") for x in out.splitlines()]
        header, body = lines[0], [x.split("\t") for x in lines[1:]]
        by_node = {r[0]: r for r in body}
        assert [r[6] for r in body][0] == "Leader" and sorted(by_node) == ["1", "2", "3"], out
        live = sorted((r[1:3] + r[3:6] + [r[6]]) for n, r in by_node.items() if n != "3")
        return rc, header, live, (by_node["3"][1], by_node["3"][6]), err
    assert rows(kw) == rows(ka), (kw, ka)


CONFIGS = ("kafka-configs", "--bootstrap-server", "{B}", "--describe")


def _produce_bulk(bootstrap: str, topic: str, n: int, size: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    value = b"x" * size
    for _ in range(n):
        while True:
            try:
                p.produce(topic, value=value, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def test_throttled_reassignment_cancel_and_verify(three_pair, tmp_path):
    """--execute --throttle on a partition holding 8 MB (the new replica copies ~1 MB per fetch, then
    waits for the 1,000 B/s quota's window, on kwire as on Kafka: kwire.quota.replication), so the
    reassignment is still in progress when --verify (keeps the throttles), --list and --cancel (removes
    them) run; then the same move with a high throttle, which completes, and --verify, which removes
    the throttles. Runs before test_three_nodes, which stops a node."""
    sides = three_pair
    plan = tmp_path / "th-plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [{"topic": "th", "partition": 0, "replicas": [1, 3]}]}))
    st = SideSteps(sides)
    st.same(*TOPICS, "--create", "--topic", "th", "--replica-assignment", "1:2")
    st.run()
    for side in sides:
        _produce_bulk(side.bootstrap, "th", 8000, 1000)
        _wait(lambda: all(len(isr) == 2 for _, isr, _ in _partitions(side.bootstrap, "th").values()),
              f"{side.name}: th's ISR")

    st = SideSteps(sides)
    st.same(*REASSIGN, "--reassignment-json-file", str(plan), "--execute", "--throttle", "1000")
    st.same(*REASSIGN, "--reassignment-json-file", str(plan), "--verify")
    st.same(*REASSIGN, "--list")
    for b in ("1", "3"):
        st.same(*CONFIGS, "--entity-type", "brokers", "--entity-name", b)
    st.same(*CONFIGS, "--entity-type", "topics", "--entity-name", "th")
    st.same(*REASSIGN, "--reassignment-json-file", str(plan), "--cancel")
    outs = st.run()
    assert "still in progress" in outs[1], outs[1]
    assert "leader.replication.throttled.rate=1000" in outs[3], outs[3]
    assert "follower.replication.throttled.replicas=0:3" in outs[5], outs[5]

    for side in sides:
        _wait(lambda: {p: (sorted(r), isr) for p, (r, isr, _) in _partitions(side.bootstrap, "th").items()}
              == {0: ([1, 2], [1, 2])}, f"{side.name}: the cancelled reassignment of th did not revert")
    st = SideSteps(sides)
    st.same(*REASSIGN, "--list")
    for b in ("1", "2", "3"):
        st.same(*CONFIGS, "--entity-type", "brokers", "--entity-name", b)
    st.same(*CONFIGS, "--entity-type", "topics", "--entity-name", "th")
    st.same(*TOPICS, "--describe", "--topic", "th")
    st.same(*REASSIGN, "--reassignment-json-file", str(plan), "--execute", "--throttle", "100000000")
    st.run()

    for side in sides:
        _wait(lambda: {p: (sorted(r), isr) for p, (r, isr, _) in _partitions(side.bootstrap, "th").items()}
              == {0: ([1, 3], [1, 3])}, f"{side.name}: the reassignment of th did not complete")
    st = SideSteps(sides)
    st.same(*CONFIGS, "--entity-type", "topics", "--entity-name", "th")
    st.same(*REASSIGN, "--reassignment-json-file", str(plan), "--verify")
    for b in ("1", "2", "3"):
        st.same(*CONFIGS, "--entity-type", "brokers", "--entity-name", b)
    st.same(*CONFIGS, "--entity-type", "topics", "--entity-name", "th")
    outs = st.run()
    assert "leader.replication.throttled.replicas" in outs[0], outs[0]
    assert "Clearing" in outs[1], outs[1]
    assert "throttled" not in "".join(outs[2:]), outs[2:]


def test_three_nodes(three_pair, tmp_path):
    sides = three_pair
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics": [{"topic": "r1"}], "version": 1}')
    target = {0: [2, 3], 1: [3, 1], 2: [1, 2]}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "r1", "partition": p, "replicas": r} for p, r in target.items()]}))
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "partitions": [{"topic": "r1", "partition": 0, "replicas": [1, 9]}]}')

    # --- reassignment: the topic, records, a plan; generate's proposal is the tool's own random pick
    st = SideSteps(sides)
    st.same(*TOPICS, "--create", "--topic", "r1", "--replica-assignment", "1:2,2:3,3:1")
    st.same(*TOPICS, "--create", "--topic", "u1", "--replica-assignment", "1:2:3,2:3:1,3:1:2")
    st.same(*TOPICS, "--describe", "--topic", "r1")
    st.same(*REASSIGN, "--topics-to-move-json-file", str(topics), "--broker-list", "1,2", "--generate",
            listed=_generated)
    st.same(*REASSIGN, "--reassignment-json-file", str(bad), "--execute", rc=1)
    st.same(*REASSIGN, "--list")
    st.same(*REASSIGN, "--reassignment-json-file", str(plan), "--execute")
    st.run()

    for side in sides:
        _wait(lambda: {p: sorted(r) for p, (r, isr, _) in _partitions(side.bootstrap, "r1").items()}
              == {p: sorted(r) for p, r in target.items()}
              and all(len(isr) == 2 for _, isr, _ in _partitions(side.bootstrap, "r1").values()),
              f"{side.name}: the reassignment of r1 did not complete")
        _produce(side.bootstrap, "u1", 3, 5)
    st = SideSteps(sides)
    st.same(*REASSIGN, "--reassignment-json-file", str(plan), "--verify")
    st.same(*REASSIGN, "--list")
    st.same(*TOPICS, "--describe", "--topic", "r1")
    st.same(*TOPICS, "--describe", "--under-replicated-partitions")
    st.run()

    # --- node 3 stopped (a controlled shutdown on both): its replicas leave the ISRs
    for side in sides:
        if side.name == "kwire":
            side.cluster.nodes[3].kill(signal.SIGTERM)
            side.bootstrap = side.subs["{B}"] = ",".join(f"127.0.0.1:{n.port}" for i, n in
                                                          side.cluster.nodes.items() if i != 3)
        else:
            side.cluster.kill(side.cluster.nodes[2], signal.SIGTERM)
            side.bootstrap = side.subs["{B}"] = ",".join(n.bootstrap for n in side.cluster.nodes[:2])
    for side in sides:
        _wait(lambda: all(3 not in isr for _, isr, _ in _partitions(side.bootstrap, "u1").values()),
              f"{side.name}: node 3 did not leave u1's ISRs")
    st = SideSteps(sides, masks=_quorum_masks())
    i1 = st.same(*TOPICS, "--describe", "--under-replicated-partitions")
    st.same(*TOPICS, "--describe", "--unavailable-partitions")
    st.same(*TOPICS, "--describe", "--topic", "u1")
    st.same("kafka-metadata-quorum", "--bootstrap-server", "{B}", "describe", "--status")
    st.same("kafka-metadata-quorum", "--bootstrap-server", "{B}", "describe", "--replication",
            listed=_replication_with_a_voter_down)
    st.same("kafka-leader-election", "--bootstrap-server", "{B}", "--election-type", "preferred",
            "--all-topic-partitions", rc=1)       # the preferred leader of u1-2 (node 3) is down
    outs = st.run()
    assert re.findall(r"Partition: (\d)", outs[i1]).count("0") >= 1, outs[i1]

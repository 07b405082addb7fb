"""Exactly-once consume-transform-produce on three kwire processes while brokers die: the
confluent-kafka sendOffsetsToTransaction loop of tests/integration/eos_app.py runs as a child
process; the leader of an output partition is SIGKILLed, then the transaction coordinator of
the application's transactional.id (the leader of its __transaction_state partition). After
each kill the application must make progress (commit further transactions) on the new
leaders, and the killed node is restarted and caught up before the next kill. At the end the
output topic read with read_committed holds every input record exactly once, in input order
per partition, and the group's committed offsets never went back.

Three nodes, RF=3, min.insync.replicas=2, broker.session.timeout.ms=2000; the input is
produced before the application starts. KWIRE_TXN_CHAOS_ROUNDS=<n> runs n rounds of the two
kills (one by default) over a proportionally longer input. The application is a
supervised process: if it exits (a fatal error, or its watchdog ending a stalled call) it is
restarted, as a deployment would, and the restart is reported; exactly-once must hold
either way. The group is chosen so that its coordinator is neither victim where possible:
librdkafka's send_offsets_to_transaction can hang for good when the group coordinator it
cached dies and leaves the metadata (confluentinc/librdkafka#5511), which the app's watchdog
turns into a restart, slower than the failover this test is about. With more rounds the
coordinators move and such restarts happen; they are expected then.
"""
from __future__ import annotations

import os

import pytest

from tests.integration.eos_runner import EosApp, check_exactly_once, end_partitions, produce_input, read_to_end
from tests.raft.cluster import call, wait_for
from tests.replication import chaos as C

pytestmark = pytest.mark.slow

ROUNDS = max(int(os.environ.get("KWIRE_TXN_CHAOS_ROUNDS", "0") or 0), 1)
PARTITIONS = 3
PER_PARTITION = 200 * ROUNDS + 100
TID, GROUP = "eos-cluster", "eos-cluster-group"
TOPICS = ["in", "out", "__transaction_state", C.OFFSETS_TOPIC]


def txn_coordinator(c, tid: str = TID) -> int:
    r = call(C.live_port(c), "FindCoordinator", 4, timeout=3.0, key_type=1, coordinator_keys=[tid]).coordinators[0]
    return r.node_id if r.error_code == 0 else -1


@pytest.fixture(scope="module")
def java_program(tmp_path_factory):
    from tests.transactions.java_build import compile_java

    cp = compile_java(tmp_path_factory.mktemp("eosjava"), "EosApp.java")
    return ["java", "-XX:TieredStopAtLevel=1", "-cp", cp, "EosApp"]


@pytest.mark.parametrize("client", ["confluent", "java-tv2"])
def test_sigkill_of_the_output_leader_and_the_transaction_coordinator(tmp_path, client, request):
    """``java-tv2``: the stock Java client's twin of the app (tests/transactions/java/EosApp.java)
    on transaction version 2 (the cluster finalizes it under Kafka 4.0 emulation): Produce v12,
    TxnOffsetCommit v5 and EndTxn v5 across the failovers."""
    program, extra = None, ()
    if client == "java-tv2":
        program = request.getfixturevalue("java_program")
        extra = ("--override", "transaction.version=2", "--override", "kwire.emulate.kafka.version=4.0")
    c = C.start_cluster(str(tmp_path / "cluster"), "--override", "transaction.state.log.num.partitions=3", *extra)
    app = None
    try:
        for topic in ("in", "out"):
            C.create_topic(c, topic, PARTITIONS)
        bs = C.bootstrap(c)
        sent = produce_input(bs, "in", PARTITIONS, PER_PARTITION)
        total = PARTITIONS * PER_PARTITION
        # a group whose coordinator is not the transaction coordinator: see the module docstring
        coord = wait_for(lambda: txn_coordinator(c) if txn_coordinator(c) > 0 else None, 30)
        group = wait_for(lambda: next((g for g in (f"{GROUP}-{i}" for i in range(30))
                                       if C.coordinator(C.live_port(c), g) not in (coord, -1)), None), 30)
        app = EosApp(bs, "in", "out", group=group, transactional_id=TID, log_path=str(tmp_path / "app.log"),
                     extra=("--transaction-timeout-ms", "20000", "--timeout", "10", "--stall-after", "5"),
                     program=program)
        app.start()
        app.wait_for(lambda: app.progress() > 0, 60, "the app commits its first transaction")
        if program is not None:
            assert app.seen("TV") == ["TV 2"], "the Java producer did not take transaction version 2"
        C.wait_healthy(c, TOPICS)
        floor = 0          # what the group has committed; it must never go back

        def supervise():
            """Restart the app if it exited on a fatal error; its progress so far."""
            nonlocal floor
            if not app.alive and app.proc is not None and app.proc.returncode != 0:
                print(f"the app exited with {app.proc.returncode}; restarting it")
                app.kill()
                app.start()
            p = app.progress()
            assert p < 0 or p >= floor, f"the group's committed offsets went back: {floor} -> {p}"
            floor = max(floor, p)
            return p

        def kill_and_progress(victim: int, what: str) -> None:
            before = supervise()
            c.nodes[victim].kill()
            wait_for(lambda: all(leader not in (victim, -1) for leader in C.leaders(c, "out").values()), 30,
                     message=f"new leaders of out after {what} (node {victim}) was killed")
            wait_for(lambda: txn_coordinator(c) not in (victim, -1), 30,
                     message=f"a new transaction coordinator after {what} (node {victim}) was killed")
            need = min(before + 60, total)
            # on the new leaders and the new coordinator, the victim still down
            app.wait_for(lambda: supervise() >= need, 60,
                         f"the app commits {need} records after {what} (node {victim}) was killed")
            c.restart(victim)
            C.wait_healthy(c, TOPICS)

        for r in range(ROUNDS):
            coord = wait_for(lambda: txn_coordinator(c) if txn_coordinator(c) > 0 else None, 30)
            gc = wait_for(lambda: C.coordinator(C.live_port(c), group) if C.coordinator(C.live_port(c), group) > 0
                          else None, 30)
            # the leader of an output partition, neither coordinator if there is one
            leader = min(set(C.leaders(c, "out").values()), key=lambda n: (n == gc, n == coord, n))
            kill_and_progress(leader, f"round {r}: the leader of an output partition")
            coord = wait_for(lambda: txn_coordinator(c) if txn_coordinator(c) > 0 else None, 30)
            kill_and_progress(coord, f"round {r}: the transaction coordinator")

        app.wait_for(lambda: supervise() >= total and app.seen("DONE"), 120, "the app consumes the whole input")
        assert app.exit_code(30) == 0
        print(f"the app ran as {app.incarnations} process(es)")   # > 1: see STALLED/FATAL in app.log
        end_partitions(bs, "out", PARTITIONS)
        check_exactly_once(sent, read_to_end(bs, "out", PARTITIONS, "read_committed"))
    finally:
        if app is not None:
            app.kill()
        c.stop()

"""Exactly-once consume-transform-produce on transaction version 2 (KIP-890 part 2) under
SIGKILL: the stock Java client (kafka-clients 4.3; java/EosApp.java, the twin of
tests/integration/eos_app.py, which librdkafka cannot run on version 2) against kwire finalizing
transaction.version=2, so every transaction is Produce v12 + TxnOffsetCommit v5 + EndTxn v5 with
an epoch bump per end.

- One broker: the application is SIGKILLed while its third transaction is open (records in the
  log, offsets sent: Ongoing, UNSTABLE_OFFSET_COMMIT), then at a seeded random point of its
  progress, and runs to the end; the restarted instance's InitProducerId fences the dead one
  and aborts its transaction.
- Three brokers (RF=3, min.insync.replicas=2): the leader of an output partition is SIGKILLed
  mid-run, then the transaction coordinator; the application must go on committing on the new
  leaders (restarted by its supervisor if it exits fatally, as a deployment would).

Either way the output topic read with read_committed holds every input record exactly once, in
input order per partition, and read_uncommitted shows the aborted duplicates (so the check is
not vacuous). KWIRE_TXN_CHAOS_SEED replays a run.
"""
from __future__ import annotations

import os
import random

import pytest

from kwire.errors import ErrorCode
from kwire.testing import Broker
from tests.integration.eos_runner import EosApp, check_exactly_once, end_partitions, produce_input, read_to_end
from tests.transactions.java_build import compile_java

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("KWIRE_TXN_CHAOS_SEED", "0") or 0) or random.randrange(1, 2**31)
PARTITIONS = 2


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    cp = compile_java(tmp_path_factory.mktemp("eosjava"), "EosApp.java")
    return ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "EosApp"]


def describe(bootstrap_client, tid: str):
    return bootstrap_client.request("DescribeTransactions", 0, transactional_ids=[tid]).transaction_states[0]


def test_java_eos_on_transaction_version_2_with_the_app_killed(program, tmp_path):
    print(f"KWIRE_TXN_CHAOS_SEED={SEED}")
    rng = random.Random(SEED)
    per_partition = 250
    with Broker(overrides={"transaction.version": 2, "kwire.emulate.kafka.version": "4.0",
                           "transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
                           "group.initial.rebalance.delay.ms": 0}) as broker:
        bs, tid, group = broker.bootstrap_servers, "eos-tv2", "eos-tv2-group"
        broker.create_topic("in", PARTITIONS)
        broker.create_topic("out", PARTITIONS)
        sent = produce_input(bs, "in", PARTITIONS, per_partition)
        total = PARTITIONS * per_partition
        app = EosApp(bs, "in", "out", group=group, transactional_id=tid, log_path=str(tmp_path / "app.log"),
                     program=program)
        try:
            app.start("--hold-at", "3")
            app.wait_for(lambda: app.seen("HOLD"), 60, "the third transaction holds before its commit")
            assert app.seen("TV") == ["TV 2"], "the Java producer did not take transaction version 2"
            with broker.client() as c:
                held = describe(c, tid)
            # no AddPartitionsToTxn was sent: the partition leader added "out" (Produce v12)
            assert held.transaction_state == "Ongoing" and {t.topic for t in held.topics} >= {"out"}
            epoch_before = held.producer_epoch
            last = app.progress()
            app.kill()
            app.start()
            app.wait_for(lambda: app.seen("READY"), 60, "the restarted app is ready")
            assert app.progress() >= last, "the group's committed offsets went back"
            start = app.progress()
            target = rng.randrange(start + 1, start + (total - start) // 2 + 2)
            app.wait_for(lambda: app.progress() >= target, 60, f"{target} input records committed")
            app.kill()
            app.start()
            app.wait_for(lambda: app.seen("DONE"), 90, "the app consumes the whole input")
            assert app.exit_code(30) == 0
        finally:
            app.kill()
        with broker.client() as c:
            final = describe(c, tid)
        assert final.transaction_state in ("CompleteCommit", "Empty")
        # fenced twice, and every end bumped the epoch (version 2), so it moved well past the held one
        assert final.producer_epoch > epoch_before + 2 or final.producer_id != held.producer_id
        end_partitions(bs, "out", PARTITIONS)
        check_exactly_once(sent, read_to_end(bs, "out", PARTITIONS, "read_committed"))
        everything = read_to_end(bs, "out", PARTITIONS, "read_uncommitted")
        assert sum(map(len, everything.values())) > total
        with broker.client() as c:   # nothing pending is left on the group's offsets
            from kwire.codec.apis import api
            Req = api("OffsetFetch").request
            r = c.request("OffsetFetch", 7, group_id=group, require_stable=True, topics=[
                Req.struct("OffsetFetchRequestTopic")(name="in", partition_indexes=list(range(PARTITIONS)))])
            assert {p.error_code for p in r.topics[0].partitions} == {ErrorCode.NONE}
            assert [p.committed_offset for p in r.topics[0].partitions] == [per_partition] * PARTITIONS

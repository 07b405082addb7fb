"""Consume-transform-produce with sendOffsetsToTransaction, and the application SIGKILLed in
the middle of it: a confluent-kafka exactly-once loop (eos_app.py) runs as a child process
against a running kwire, is killed by PID and restarted, and the output topic read with
read_committed holds every input record exactly once, in input order per partition.

The first kill is deterministic: the app stops in its third transaction after its records are
in the log and its offsets are sent (the transaction is Ongoing and OffsetFetch with
require_stable answers UNSTABLE_OFFSET_COMMIT), and dies there. The restarted instance's
InitProducerId fences it and aborts that transaction; its consumer starts from the offsets of
the last committed one. Then the app is killed at seeded random points of its progress
(KWIRE_TXN_CHAOS_ROUNDS sets how many; one by default; KWIRE_TXN_CHAOS_SEED replays a run)
and finally runs to the end. The read_uncommitted view must hold the aborted duplicates,
so the read_committed check is not vacuous.
"""
from __future__ import annotations

import os
import random

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from tests.integration.eos_runner import EosApp, check_exactly_once, end_partitions, produce_input, read_to_end

pytestmark = pytest.mark.slow

ROUNDS = max(int(os.environ.get("KWIRE_TXN_CHAOS_ROUNDS", "0") or 0), 1)
SEED = int(os.environ.get("KWIRE_TXN_CHAOS_SEED", "0") or 0) or random.randrange(1, 2**31)
PARTITIONS = 2
PER_PARTITION = 150 * ROUNDS + 100


@pytest.fixture
def broker():
    with Broker(overrides={"transaction.state.log.num.partitions": 3, "offsets.topic.num.partitions": 3,
                           "group.initial.rebalance.delay.ms": 0}) as b:
        yield b


def describe(b: Broker, tid: str):
    with b.client() as c:
        return c.request("DescribeTransactions", 0, transactional_ids=[tid]).transaction_states[0]


def stable_offsets(b: Broker, group: str, topic: str) -> set[int]:
    """The error codes OffsetFetch with require_stable answers for the partitions of ``topic``."""
    Req = api("OffsetFetch").request
    with b.client() as c:
        r = c.request("OffsetFetch", 7, group_id=group, require_stable=True, topics=[
            Req.struct("OffsetFetchRequestTopic")(name=topic, partition_indexes=list(range(PARTITIONS)))])
    return {p.error_code for p in r.topics[0].partitions}


def test_sigkill_of_the_application_mid_transaction(broker, tmp_path):
    print(f"KWIRE_TXN_CHAOS_SEED={SEED} KWIRE_TXN_CHAOS_ROUNDS={ROUNDS}")
    rng = random.Random(SEED)
    bs, tid, group = broker.bootstrap_servers, "eos-kill", "eos-kill-group"
    broker.create_topic("in", PARTITIONS)
    broker.create_topic("out", PARTITIONS)
    sent = produce_input(bs, "in", PARTITIONS, PER_PARTITION)
    total = PARTITIONS * PER_PARTITION
    app = EosApp(bs, "in", "out", group=group, transactional_id=tid, log_path=str(tmp_path / "app.log"))
    try:
        app.start("--hold-at", "3")
        app.wait_for(lambda: app.seen("HOLD"), 60, "the third transaction holds before its commit")
        held = describe(broker, tid)
        assert held.transaction_state == "Ongoing" and {t.topic for t in held.topics} >= {"out"}
        assert ErrorCode.UNSTABLE_OFFSET_COMMIT in stable_offsets(broker, group, "in")
        last = app.progress()
        app.kill()
        for r in range(ROUNDS):
            app.start()
            app.wait_for(lambda: app.seen("READY"), 60, "the restarted app is ready")
            start = app.progress()
            assert start >= last, "the group's committed offsets went back"
            target = rng.randrange(start + 1, start + (total - start) // 2 + 2)
            app.wait_for(lambda: app.progress() >= target, 60, f"round {r}: {target} input records committed")
            last = app.progress()
            app.kill()
            print(f"round {r}: killed at {last}")
        app.start()
        app.wait_for(lambda: app.seen("DONE"), 90, "the app consumes the whole input")
        assert app.exit_code(30) == 0
    finally:
        app.kill()
    assert describe(broker, tid).transaction_state in ("CompleteCommit", "Empty")
    end_partitions(bs, "out", PARTITIONS)
    check_exactly_once(sent, read_to_end(bs, "out", PARTITIONS, "read_committed"))
    # the held transaction's records are in the log, aborted: read_uncommitted sees them
    everything = read_to_end(bs, "out", PARTITIONS, "read_uncommitted")
    assert sum(map(len, everything.values())) > total

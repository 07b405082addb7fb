"""Idempotent producer and transactions (KIP-98)."""
import uuid

from compat_tests.clients import Rec
from compat_tests.helpers import IDEMPOTENCE_APIS, TRANSACTION_APIS, needs


def test_idempotent_producer(client, helper, target, topic):
    """An idempotent producer (enable.idempotence=true: InitProducerId, producer id/epoch and per-partition
    sequence numbers) gets every record written exactly once, in order, with consecutive offsets (KIP-98)."""
    needs(client, "idempotence", target.bootstrap, IDEMPOTENCE_APIS)
    helper.create_topic(topic, 1)
    records = [Rec(value=f"once-{i}".encode(), key=b"k") for i in range(30)]
    acked = client.produce_idempotent(topic, records)
    assert [a.offset for a in acked] == list(range(30))
    got = helper.consume(topic, [0], "beginning", count=30)
    assert [g.value for g in got] == [r.value for r in records]
    assert helper.watermarks(topic, 0) == (0, 30)


def test_transactions(client, helper, target, topic):
    """Records of an aborted transaction are never returned to a read_committed consumer, records of a
    committed one are; a read_uncommitted consumer sees both (KIP-98: transactional.id, EndTxn, control
    batches, isolation.level)."""
    needs(client, "transactions", target.bootstrap, TRANSACTION_APIS)
    helper.create_topic(topic, 1)
    aborted = [Rec(value=f"aborted-{i}".encode()) for i in range(3)]
    committed = [Rec(value=f"committed-{i}".encode()) for i in range(3)]
    client.produce_transactional(topic, f"compat-txn-{uuid.uuid4().hex[:8]}", committed, aborted)
    got = helper.consume(topic, [0], "beginning", count=4, read_committed=True, timeout=5)
    assert [g.value for g in got] == [r.value for r in committed]
    got = helper.consume(topic, [0], "beginning", count=6)
    assert [g.value for g in got] == [r.value for r in aborted + committed]

"""TxnOffsetCommit verifies the producer with the transaction coordinator before writing (KIP-890,
Kafka's CoordinatorPartitionWriter.maybeStartTransactionVerification): a fenced or wrong epoch,
an unknown transactional id, or a group whose offsets partition is not in the transaction is
refused for every partition, as Apache Kafka 4.3 answers (found by the differential harness:
kwire used to accept an epoch the coordinator never gave, W23). Over the wire against an
in-process broker, and with a stock transactional client.
"""
from __future__ import annotations

import time

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing.broker import Broker

pytestmark = pytest.mark.slow

E = ErrorCode
TXN = "txn-app"
GROUP = "app"


def _broker(**overrides) -> Broker:
    b = Broker(overrides={"offsets.topic.num.partitions": 3, "group.initial.rebalance.delay.ms": 0,
                          "transaction.state.log.num.partitions": 3, **overrides}).start()
    try:
        b.create_topic("t", 2)
        with b.client() as c:   # the coordinators' internal topics, as a client's first look-ups make them
            assert c.request("FindCoordinator", 3, key=GROUP, key_type=0).error_code == E.NONE
            assert c.request("FindCoordinator", 3, key=TXN, key_type=1).error_code == E.NONE
    except BaseException:
        b.cleanup()
        raise
    return b


@pytest.fixture
def kw():
    b = _broker()
    try:
        yield b
    finally:
        b.cleanup()


def init(b: Broker, tid: str = TXN) -> tuple[int, int]:
    """InitProducerId, retried while the id's open transaction is being aborted
    (CONCURRENT_TRANSACTIONS), as a client does."""
    deadline = time.monotonic() + 10
    with b.client() as c:
        while True:
            r = c.request("InitProducerId", 4, transactional_id=tid, transaction_timeout_ms=60_000,
                          producer_id=-1, producer_epoch=-1)
            if r.error_code != E.CONCURRENT_TRANSACTIONS or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    assert r.error_code == E.NONE
    return r.producer_id, r.producer_epoch


def add_offsets(b: Broker, pid: int, epoch: int, tid: str = TXN) -> int:
    with b.client() as c:
        return c.request("AddOffsetsToTxn", 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         group_id=GROUP).error_code


def commit(b: Broker, pid: int, epoch: int, *, version: int = 3, tid: str = TXN, partitions=(0, 1)) -> set:
    """The set of error codes a TxnOffsetCommit of t-0 and t-1 got."""
    Req = api("TxnOffsetCommit").request
    T = Req.struct("TxnOffsetCommitRequestTopic")
    P = Req.struct("TxnOffsetCommitRequestPartition")
    fields = dict(transactional_id=tid, group_id=GROUP, producer_id=pid, producer_epoch=epoch,
                  topics=[T(name="t", partitions=[P(partition_index=p, committed_offset=5, committed_leader_epoch=-1,
                                                    committed_metadata="m") for p in partitions])])
    if version >= 3:
        fields.update(generation_id=-1, member_id="", group_instance_id=None)
    with b.client() as c:
        r = c.request("TxnOffsetCommit", version, **fields)
    return {p.error_code for t in r.topics for p in t.partitions}


def end(b: Broker, pid: int, epoch: int, committed: bool = True) -> int:
    with b.client() as c:
        return c.request("EndTxn", 3, transactional_id=TXN, producer_id=pid, producer_epoch=epoch,
                         committed=committed).error_code


def stable(b: Broker) -> tuple[int, int]:
    """(error, committed offset) of t-0, asked with require_stable."""
    Req = api("OffsetFetch").request
    with b.client() as c:
        r = c.request("OffsetFetch", 7, group_id=GROUP, require_stable=True, topics=[
            Req.struct("OffsetFetchRequestTopic")(name="t", partition_indexes=[0])])
    p = r.topics[0].partitions[0]
    return p.error_code, p.committed_offset


@pytest.mark.parametrize("version", [0, 3, 4])
def test_an_epoch_the_coordinator_did_not_give_is_refused_and_nothing_is_written(kw, version):
    pid, epoch = init(kw)
    assert add_offsets(kw, pid, epoch) == E.NONE
    assert commit(kw, pid, epoch + 1, version=version) == {E.INVALID_PRODUCER_EPOCH}
    assert stable(kw) == (E.NONE, -1)   # nothing pending: the offsets were never appended
    # the producer's own epoch still commits, and the transaction then ends normally
    assert commit(kw, pid, epoch, version=version) == {E.NONE}
    assert end(kw, pid, epoch) == E.NONE
    assert stable(kw) == (E.NONE, 5)


def test_a_fenced_producer_cannot_commit_offsets(kw):
    pid, epoch = init(kw)
    assert add_offsets(kw, pid, epoch) == E.NONE
    pid2, epoch2 = init(kw)   # the same transactional id again: the first producer is fenced
    assert pid2 == pid and epoch2 > epoch
    assert commit(kw, pid, epoch) == {E.INVALID_PRODUCER_EPOCH}
    assert stable(kw) == (E.NONE, -1)


def test_the_offsets_partition_must_be_in_the_transaction(kw):
    pid, epoch = init(kw)
    # no AddOffsetsToTxn: TRANSACTION_ABORTABLE for clients that know it (v4), INVALID_TXN_STATE below
    assert commit(kw, pid, epoch, version=4) == {E.TRANSACTION_ABORTABLE}
    assert commit(kw, pid, epoch, version=3) == {E.INVALID_TXN_STATE}
    assert stable(kw) == (E.NONE, -1)


def test_an_unknown_transactional_id_or_another_producer_id_is_refused(kw):
    pid, epoch = init(kw)
    assert add_offsets(kw, pid, epoch) == E.NONE
    assert commit(kw, pid, epoch, tid="nobody") == {E.INVALID_PRODUCER_ID_MAPPING}
    assert commit(kw, pid + 1000, epoch) == {E.INVALID_PRODUCER_ID_MAPPING}


def test_a_second_commit_in_the_transaction_needs_no_verification_but_is_still_fenced(kw):
    init(kw)
    pid, epoch = init(kw)   # epoch 1: an older one exists to be fenced with
    assert epoch >= 1
    assert add_offsets(kw, pid, epoch) == E.NONE
    assert commit(kw, pid, epoch, partitions=(0,)) == {E.NONE}
    assert stable(kw) == (E.UNSTABLE_OFFSET_COMMIT, -1)
    # the producer's transaction is open on the offsets partition now: its epoch commits again
    # without asking the coordinator, an older epoch is still refused
    assert commit(kw, pid, epoch - 1, partitions=(1,)) == {E.INVALID_PRODUCER_EPOCH}
    assert commit(kw, pid, epoch, partitions=(1,)) == {E.NONE}
    assert end(kw, pid, epoch, committed=False) == E.NONE
    assert stable(kw) == (E.NONE, -1)


def test_without_verification_the_log_alone_checks_the_epoch():
    """transaction.partition.verification.enable=false skips the coordinator below v5, as in Kafka."""
    b = _broker(**{"transaction.partition.verification.enable": "false"})
    try:
        pid, epoch = init(b)
        assert commit(b, pid, epoch + 1) == {E.NONE}   # the first epoch the log sees for the producer
    finally:
        b.cleanup()


def test_a_fenced_confluent_producer_cannot_send_offsets(kw):
    """The stock client's view (librdkafka: AddOffsetsToTxn then TxnOffsetCommit v3): the zombie's
    send_offsets_to_transaction fails with a fatal fencing error, its offsets never count, and the
    new producer's transaction commits its own."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

    conf = {"bootstrap.servers": kw.bootstrap_servers, "transactional.id": "zombie-app",
            "transaction.timeout.ms": 60_000}
    zombie = Producer(conf)
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce("t", b"from the zombie", partition=0)
    zombie.flush(30)
    fresh = Producer(conf)
    fresh.init_transactions(30)   # fences the zombie (and aborts its transaction)
    consumer = Consumer({"bootstrap.servers": kw.bootstrap_servers, "group.id": GROUP})
    meta = consumer.consumer_group_metadata()   # not joined: a "simple" group's commit
    with pytest.raises(KafkaException) as info:
        zombie.send_offsets_to_transaction([TopicPartition("t", 0, 9)], meta, 30)
    err = info.value.args[0]
    # what librdkafka reports against Apache Kafka 4.3.1 in the same scenario (run side by side)
    assert (err.code(), err.fatal(), err.retriable()) == (KafkaError._FENCED, True, False), err
    fresh.begin_transaction()
    fresh.send_offsets_to_transaction([TopicPartition("t", 0, 7)], meta, 30)
    fresh.commit_transaction(30)
    consumer.close()
    assert stable(kw) == (E.NONE, 7)

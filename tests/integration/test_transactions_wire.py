"""Transactions on the wire, the data plane: transactional batches in Produce (records built
with kafka-python's own record builder), markers written with WriteTxnMarkers v0/v1 (what a
transaction coordinator sends), Fetch with isolation_level 0 and 1 (last_stable_offset,
aborted_transactions), ListOffsets with isolation_level 1, and confluent-kafka consumers
with isolation.level read_committed / read_uncommitted reading the result. A broker restart
keeps the open transaction and the aborted ones. The pids here come from InitProducerId
without a transactional id and no coordinator knows "tx", so these brokers run with
transaction.partition.verification.enable=false (KIP-890 part 1 is tested in
test_transactions_verification.py)."""
from __future__ import annotations

import time
import uuid

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


NO_VERIFY = {"transaction.partition.verification.enable": False}


@pytest.fixture(scope="module")
def txn_broker():
    with Broker(mode="thread", overrides=NO_VERIFY) as b:
        yield b


def new_topic(bootstrap, partitions=1) -> str:
    name = f"txn-{uuid.uuid4().hex[:10]}"
    with WireClient(bootstrap) as c:
        c.create_topic(name, partitions)
    return name


def pid_of(c) -> tuple[int, int]:
    r = c.request("InitProducerId", 4, transactional_id=None, transaction_timeout_ms=60000,
                  producer_id=-1, producer_epoch=-1)
    assert r.error_code == 0
    return r.producer_id, r.producer_epoch


def kp_batch(values, pid, epoch, seq, transactional=True) -> bytes:
    """A v2 batch from kafka-python's record builder (an independent encoder)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                  batch_size=1 << 20)
    now = int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(i, timestamp=now, key=None, value=v, headers=[])
    return bytes(b.build())


def produce(c, topic, batch, *, transactional_id="tx", partition=0, version=8):
    P = api("Produce").request
    r = c.request("Produce", version, transactional_id=transactional_id, acks=-1, timeout_ms=10000, topic_data=[
        P.struct("TopicProduceData")(name=topic, partition_data=[
            P.struct("PartitionProduceData")(index=partition, records=batch)])])
    pr = r.responses[0].partition_responses[0]
    return pr.error_code, pr.base_offset


def write_markers(c, pid, epoch, commit, partitions, *, coordinator_epoch=0, version=1, transaction_version=0):
    """partitions: {topic: [partition, ...]} -> {(topic, partition): error code}"""
    R = api("WriteTxnMarkers").request
    m = R.struct("WritableTxnMarker")(producer_id=pid, producer_epoch=epoch, transaction_result=commit,
                                      coordinator_epoch=coordinator_epoch, transaction_version=transaction_version,
                                      topics=[
        R.struct("WritableTxnMarkerTopic")(name=t, partition_indexes=ps) for t, ps in partitions.items()])
    r = c.request("WriteTxnMarkers", version, markers=[m])
    assert r.markers[0].producer_id == pid
    return {(t.name, p.partition_index): p.error_code for t in r.markers[0].topics for p in t.partitions}


def fetch(c, topic, isolation, offset=0, partition=0):
    F = api("Fetch").request
    tp = F.struct("FetchTopic")(topic=topic, topic_id=None, partitions=[F.struct("FetchPartition")(
        partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
        log_start_offset=-1, partition_max_bytes=1 << 20)])
    r = c.request("Fetch", 11, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                  isolation_level=isolation, session_id=0, session_epoch=-1, topics=[tp],
                  forgotten_topics_data=[], rack_id="")
    return r.responses[0].partitions[0]


def batches_of(pd):
    from kwire.codec.records import iter_batches

    return list(iter_batches(bytes(pd.records or b"")))


def list_latest(c, topic, isolation, partition=0):
    L = api("ListOffsets").request
    r = c.request("ListOffsets", 5, replica_id=-1, isolation_level=isolation, topics=[
        L.struct("ListOffsetsTopic")(name=topic, partitions=[L.struct("ListOffsetsPartition")(
            partition_index=partition, current_leader_epoch=-1, timestamp=-1)])])
    p = r.topics[0].partitions[0]
    assert p.error_code == 0
    return p.offset


def test_read_committed_stops_at_the_open_transaction(txn_broker):
    bs = txn_broker.bootstrap_servers
    topic = new_topic(bs)
    with WireClient(bs) as c:
        a, ea = pid_of(c)
        b, eb = pid_of(c)
        assert produce(c, topic, kp_batch([b"a0", b"a1"], a, ea, 0)) == (0, 0)
        assert produce(c, topic, kp_batch([b"b0"], b, eb, 0)) == (0, 2)
        pd = fetch(c, topic, 1)
        assert (pd.error_code, pd.high_watermark, pd.last_stable_offset) == (0, 3, 0)
        assert batches_of(pd) == [] and pd.aborted_transactions == []
        assert len(batches_of(fetch(c, topic, 0))) == 2           # read_uncommitted sees both
        assert fetch(c, topic, 0).aborted_transactions is None
        assert (list_latest(c, topic, 0), list_latest(c, topic, 1)) == (3, 0)

        assert write_markers(c, a, ea, False, {topic: [0]}) == {(topic, 0): 0}   # a aborts: marker at 3
        pd = fetch(c, topic, 1)
        assert pd.last_stable_offset == 2                          # b is still open
        assert [(t.producer_id, t.first_offset) for t in pd.aborted_transactions] == [(a, 0)]
        assert [bt.base_offset for bt in batches_of(pd)] == [0]
        assert write_markers(c, b, eb, True, {topic: [0]}) == {(topic, 0): 0}    # b commits: marker at 4
        pd = fetch(c, topic, 1)
        assert pd.last_stable_offset == pd.high_watermark == 5
        got = batches_of(pd)
        assert [(bt.base_offset, bt.is_transactional, bt.is_control) for bt in got] == \
            [(0, True, False), (2, True, False), (3, True, True), (4, True, True)]
        assert [(t.producer_id, t.first_offset) for t in pd.aborted_transactions] == [(a, 0)]
        assert [(t.producer_id, t.first_offset) for t in fetch(c, topic, 1, offset=4).aborted_transactions] == []
        assert list_latest(c, topic, 1) == 5


def test_transaction_errors_on_the_wire(txn_broker):
    bs = txn_broker.bootstrap_servers
    topic = new_topic(bs)
    with WireClient(bs) as c:
        a, ea = pid_of(c)
        # transactional records need a transactional id (Kafka: the whole request is refused)
        assert produce(c, topic, kp_batch([b"x"], a, ea, 0), transactional_id=None)[0] == \
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        assert produce(c, topic, kp_batch([b"x"], a, ea, 0)) == (0, 0)
        assert produce(c, topic, kp_batch([b"y"], a, ea, 1, transactional=False))[0] == ErrorCode.INVALID_TXN_STATE
        assert write_markers(c, a, ea, True, {topic: [0, 7], "no-such-topic": [0]}, coordinator_epoch=3) == {
            (topic, 0): 0, (topic, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert write_markers(c, a, ea, True, {topic: [0]}, coordinator_epoch=2) == {
            (topic, 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}
        # the coordinator fences the producer with a bumped epoch (a timed-out transaction)
        assert produce(c, topic, kp_batch([b"z"], a, ea, 1)) == (0, 2)
        assert write_markers(c, a, ea + 1, False, {topic: [0]}, coordinator_epoch=3) == {(topic, 0): 0}
        assert produce(c, topic, kp_batch([b"w"], a, ea, 2))[0] == ErrorCode.INVALID_PRODUCER_EPOCH
        assert write_markers(c, a, ea, False, {topic: [0]}, coordinator_epoch=3) == {
            (topic, 0): ErrorCode.INVALID_PRODUCER_EPOCH}


def _consume_all(bs, topic, isolation, n_expected, timeout=20.0):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bs, "group.id": f"g-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                  "isolation.level": isolation, "log_level": 2})
    c.assign([TopicPartition(topic, 0, 0)])
    out = []
    deadline = time.time() + timeout
    try:
        while len(out) < n_expected and time.time() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                out.append(m.value())
        # nothing more arrives
        end = time.time() + 0.5
        while time.time() < end:
            m = c.poll(0.1)
            if m is not None and not m.error():
                out.append(m.value())
    finally:
        c.close()
    return out


def _kafka_python_all(bs, topic, isolation, n_expected, timeout=20.0):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bs, isolation_level=isolation, enable_auto_commit=False,
                      consumer_timeout_ms=1500)
    c.assign([TopicPartition(topic, 0)])
    c.seek(TopicPartition(topic, 0), 0)
    out = []
    deadline = time.time() + timeout
    try:
        while len(out) < n_expected and time.time() < deadline:
            for recs in c.poll(timeout_ms=200).values():
                out += [r.value for r in recs]
        for recs in c.poll(timeout_ms=500).values():
            out += [r.value for r in recs]
    finally:
        c.close()
    return out


def _aiokafka_all(bs, topic, isolation, n_expected, timeout=20.0):
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main():
        c = AIOKafkaConsumer(bootstrap_servers=bs, isolation_level=isolation, enable_auto_commit=False)
        await c.start()
        out = []
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            c.seek(tp, 0)
            deadline = time.time() + timeout
            while len(out) < n_expected and time.time() < deadline:
                for recs in (await c.getmany(timeout_ms=200)).values():
                    out += [r.value for r in recs]
            for recs in (await c.getmany(timeout_ms=500)).values():
                out += [r.value for r in recs]
        finally:
            await c.stop()
        return out

    return asyncio.run(main())


def test_confluent_consumers_read_committed_and_uncommitted(txn_broker):
    bs = txn_broker.bootstrap_servers
    topic = new_topic(bs)
    with WireClient(bs) as c:
        a, ea = pid_of(c)
        b, eb = pid_of(c)
        seq = {a: 0, b: 0}

        def send(pid, epoch, values):
            assert produce(c, topic, kp_batch(values, pid, epoch, seq[pid]))[0] == 0
            seq[pid] += len(values)

        send(a, ea, [b"c1", b"c2"])           # committed
        send(b, eb, [b"x1"])                  # aborted, interleaved with a
        send(a, ea, [b"c3"])
        send(b, eb, [b"x2", b"x3"])
        assert write_markers(c, b, eb, False, {topic: [0]}) == {(topic, 0): 0}
        assert write_markers(c, a, ea, True, {topic: [0]}) == {(topic, 0): 0}
        assert produce(c, topic, kp_batch([b"plain"], -1, -1, -1, transactional=False), transactional_id=None)[0] == 0
        send(a, ea, [b"c4"])
        assert write_markers(c, a, ea, True, {topic: [0]}) == {(topic, 0): 0}
        send(b, eb, [b"open"])                # still open: read_committed stops before it
    committed = _consume_all(bs, topic, "read_committed", 5)
    assert committed == [b"c1", b"c2", b"c3", b"plain", b"c4"]
    everything = _consume_all(bs, topic, "read_uncommitted", 9)
    assert everything == [b"c1", b"c2", b"x1", b"c3", b"x2", b"x3", b"plain", b"c4", b"open"]
    # the Python clients drop aborted records by the same aborted_transactions
    assert _kafka_python_all(bs, topic, "read_committed", 5) == committed
    assert _kafka_python_all(bs, topic, "read_uncommitted", 9) == everything
    assert _aiokafka_all(bs, topic, "read_committed", 5) == committed
    assert _aiokafka_all(bs, topic, "read_uncommitted", 9) == everything


@pytest.mark.parametrize("how", ["clean", "sigkill"])
def test_transactions_survive_a_restart(tmp_path, how):
    br = Broker(mode="thread" if how == "clean" else "process", data_dir=str(tmp_path), overrides=NO_VERIFY).start()
    try:
        bs = br.bootstrap_servers
        topic = new_topic(bs)
        with WireClient(bs) as c:
            a, ea = pid_of(c)
            b, eb = pid_of(c)
            assert produce(c, topic, kp_batch([b"a0"], a, ea, 0)) == (0, 0)
            assert write_markers(c, a, ea, False, {topic: [0]}) == {(topic, 0): 0}
            assert produce(c, topic, kp_batch([b"b0"], b, eb, 0)) == (0, 2)
            assert produce(c, topic, kp_batch([b"b1"], b, eb, 1)) == (0, 3)
            assert fetch(c, topic, 1).last_stable_offset == 2
        if how == "sigkill":
            br.kill()    # no clean close: the state comes from the log (and the first snapshot)
    finally:
        br.stop()
    with Broker(mode="thread", data_dir=str(tmp_path), overrides=NO_VERIFY) as br:
        with WireClient(br.bootstrap_servers) as c:
            deadline = time.time() + 10
            while fetch(c, topic, 1).error_code and time.time() < deadline:
                time.sleep(0.05)
            pd = fetch(c, topic, 1)
            assert (pd.error_code, pd.high_watermark, pd.last_stable_offset) == (0, 4, 2)
            assert [(t.producer_id, t.first_offset) for t in pd.aborted_transactions] == [(a, 0)]
            assert produce(c, topic, kp_batch([b"a1"], a, ea, 1, transactional=False), transactional_id=None) \
                == (0, 4)    # a's transaction ended with its marker
            assert produce(c, topic, kp_batch([b"b2"], b, eb, 2, transactional=False),
                           transactional_id=None)[0] == ErrorCode.INVALID_TXN_STATE
            assert write_markers(c, b, eb, True, {topic: [0]}) == {(topic, 0): 0}
            assert fetch(c, topic, 1).last_stable_offset == 6


def test_write_txn_markers_v2_transaction_version_2_epochs():
    """WriteTxnMarkers v2 (KIP-1228, Kafka 4.2): a marker of transaction version 2 needs an epoch
    above the producer's on the partition (EndTxn bumped it); versions 0-1 accept an equal epoch."""
    with Broker(mode="thread", overrides={**NO_VERIFY, "kwire.emulate.kafka.version": "4.3"}) as b:
        _markers_v2(b.bootstrap_servers)


def _markers_v2(bs):
    topic = new_topic(bs)
    tp = (topic, 0)
    with WireClient(bs) as c:
        a, ea = pid_of(c)
        assert produce(c, topic, kp_batch([b"x"], a, ea, 0)) == (0, 0)
        assert write_markers(c, a, ea, True, {topic: [0]}, version=2, transaction_version=2) == \
            {tp: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert write_markers(c, a, ea + 1, True, {topic: [0]}, version=2, transaction_version=2) == {tp: 0}
        # a late duplicate at the now current epoch: refused under version 2, taken under version 1
        assert write_markers(c, a, ea + 1, True, {topic: [0]}, version=2, transaction_version=2) == \
            {tp: ErrorCode.INVALID_PRODUCER_EPOCH}
        assert write_markers(c, a, ea + 1, True, {topic: [0]}, version=2, transaction_version=1) == {tp: 0}

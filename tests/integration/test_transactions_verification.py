"""KIP-890 part 1 on the wire: a Produce with a transactional id whose transactional batch
comes from a producer with no transaction open on the partition is verified with the
transaction coordinator first (kwire.handlers.produce, kwire.transactions.verify), and what
the coordinator refuses is refused with the code Kafka gives for the Produce version.
Batches are built with kafka-python's record builder (an independent encoder); the
coordinator is driven with kwire's wire client as a transactional producer drives it."""
from __future__ import annotations

import time
import uuid

import pytest

from kwire.codec.apis import api
from kwire.codec.records import build_control_batch
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until

pytestmark = pytest.mark.slow

E = ErrorCode
VERIFY = "transaction.partition.verification.enable"


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"transaction.state.log.num.partitions": 2}) as b:
        yield b


def _tid() -> str:
    return f"v-{uuid.uuid4().hex[:8]}"


def _topic(c, partitions=2) -> str:
    name = f"vt-{uuid.uuid4().hex[:8]}"
    c.create_topic(name, partitions)
    return name


def begin(c, tid: str, parts: dict[str, list[int]]) -> tuple[int, int]:
    """InitProducerId with the transactional id, then AddPartitionsToTxn v3: (pid, epoch)."""
    wait_until(lambda: c.request("FindCoordinator", 4, key_type=1,
                                 coordinator_keys=[tid]).coordinators[0].error_code == 0)
    r = wait_until(lambda: (x := c.request("InitProducerId", 4, transactional_id=tid, transaction_timeout_ms=60000,
                                           producer_id=-1, producer_epoch=-1)).error_code == 0 and x)
    if parts:
        assert add(c, tid, r.producer_id, r.producer_epoch, parts) == {
            (t, p): 0 for t, ps in parts.items() for p in ps}
    return r.producer_id, r.producer_epoch


def add(c, tid, pid, epoch, parts):
    T = api("AddPartitionsToTxn").request.struct("AddPartitionsToTxnTopic")
    r = c.request("AddPartitionsToTxn", 3, v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid,
                  v3_and_below_producer_epoch=epoch,
                  v3_and_below_topics=[T(name=t, partitions=ps) for t, ps in parts.items()])
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def kp_batch(values, pid, epoch, seq, transactional=True) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                  producer_id=pid, producer_epoch=epoch, base_sequence=seq, batch_size=1 << 20)
    now = int(time.time() * 1000)
    for i, v in enumerate(values):
        b.append(i, timestamp=now, key=None, value=v, headers=[])
    return bytes(b.build())


def produce(c, tid, batches: dict[tuple[str, int], bytes], version=8):
    """{(topic, partition): (error code, base offset, error message)}"""
    P = api("Produce").request
    by_topic: dict[str, list] = {}
    for (t, p), batch in batches.items():
        by_topic.setdefault(t, []).append(P.struct("PartitionProduceData")(index=p, records=batch))
    r = c.request("Produce", version, transactional_id=tid, acks=-1, timeout_ms=10000, topic_data=[
        P.struct("TopicProduceData")(name=t, partition_data=ps) for t, ps in by_topic.items()])
    return {(t.name, p.index): (p.error_code, p.base_offset, getattr(p, "error_message", None))
            for t in r.responses for p in t.partition_responses}


def produce1(c, tid, topic, partition, batch, version=8):
    return produce(c, tid, {(topic, partition): batch}, version)[(topic, partition)][:2]


def offsets(c, topic, partition=0):
    """(high watermark, last stable offset) from a read_committed Fetch."""
    F = api("Fetch").request
    tp = F.struct("FetchTopic")(topic=topic, topic_id=None, partitions=[F.struct("FetchPartition")(
        partition=partition, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
        log_start_offset=-1, partition_max_bytes=1 << 20)])
    r = c.request("Fetch", 11, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=1,
                  session_id=0, session_epoch=-1, topics=[tp], forgotten_topics_data=[], rack_id="")
    p = r.responses[0].partitions[0]
    assert p.error_code == 0
    return p.high_watermark, p.last_stable_offset


def set_verification(c, enabled: bool) -> None:
    a = api("IncrementalAlterConfigs")
    R, C = a.request.struct("AlterConfigsResource"), a.request.struct("AlterableConfig")
    r = c.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[R(
        resource_type=4, resource_name="", configs=[C(name=VERIFY, config_operation=0,
                                                      value=str(enabled).lower())])])
    assert r.responses[0].error_code == 0, r.responses[0].error_message


def test_a_partition_never_added_to_the_transaction_is_refused(broker):
    tid = _tid()
    with WireClient(broker.bootstrap_servers) as c:
        t = _topic(c)
        pid, epoch = begin(c, tid, {t: [0]})
        # below Produce v11 Kafka answers INVALID_TXN_STATE, from v11 TRANSACTION_ABORTABLE
        code, _, msg = produce(c, tid, {(t, 1): kp_batch([b"x"], pid, epoch, 0)}, version=9)[(t, 1)]
        assert (code, msg) == (E.INVALID_TXN_STATE, "Partition was not added to the transaction")
        assert produce1(c, tid, t, 1, kp_batch([b"x"], pid, epoch, 0), version=10)[0] == E.INVALID_TXN_STATE
        assert produce1(c, tid, t, 1, kp_batch([b"x"], pid, epoch, 0), version=11)[0] == E.TRANSACTION_ABORTABLE
        assert offsets(c, t, 1) == (0, 0)                    # nothing written
        # the added partition takes it; a request with both gets both answers
        got = produce(c, tid, {(t, 0): kp_batch([b"a"], pid, epoch, 0), (t, 1): kp_batch([b"b"], pid, epoch, 0)})
        assert {tp: v[:2] for tp, v in got.items()} == {(t, 0): (0, 0), (t, 1): (E.INVALID_TXN_STATE, -1)}
        assert produce1(c, tid, t, 0, kp_batch([b"c"], pid, epoch, 1)) == (0, 1)   # open here: not asked
        # once added, the same batch goes in
        assert add(c, tid, pid, epoch, {t: [1]}) == {(t, 1): 0}
        assert produce1(c, tid, t, 1, kp_batch([b"b"], pid, epoch, 0)) == (0, 0)
        assert offsets(c, t, 0) == (2, 0) and offsets(c, t, 1) == (1, 0)   # both open


def test_coordinator_refusals_map_to_produce_errors(broker):
    tid = _tid()
    with WireClient(broker.bootstrap_servers) as c:
        t = _topic(c)
        pid, epoch = begin(c, tid, {t: [0]})
        # a producer id the coordinator does not map to this transactional id
        assert produce1(c, tid, t, 0, kp_batch([b"x"], pid + 1000, 0, 0))[0] == E.INVALID_PRODUCER_ID_MAPPING
        assert produce1(c, _tid(), t, 0, kp_batch([b"x"], pid, epoch, 0))[0] == E.INVALID_PRODUCER_ID_MAPPING
        # transactional batches of two producers in one request: the whole request
        got = produce(c, tid, {(t, 0): kp_batch([b"a"], pid, epoch, 0), (t, 1): kp_batch([b"b"], pid + 1, 0, 0)})
        assert {v[0] for v in got.values()} == {E.INVALID_PRODUCER_ID_MAPPING}
        # a client's marker is verified like data (the partition is in the transaction), then the
        # validator refuses it
        marker = build_control_batch(True, pid, epoch, int(time.time() * 1000))
        assert produce1(c, tid, t, 0, marker)[0] == E.INVALID_RECORD
        # a second InitProducerId aborts the open transaction and bumps the epoch: the old
        # one is fenced (PRODUCER_FENCED at the coordinator, INVALID_PRODUCER_EPOCH to the
        # producer, as Kafka maps it)
        pid2, epoch2 = begin(c, tid, {})
        assert pid2 == pid and epoch2 > epoch
        assert produce1(c, tid, t, 1, kp_batch([b"x"], pid, epoch, 0))[0] == E.INVALID_PRODUCER_EPOCH
        assert offsets(c, t, 1) == (0, 0)    # nothing got past the verification


def test_a_late_batch_after_the_abort_opens_no_hanging_transaction(broker):
    """The point of KIP-890 part 1: a batch delayed past its transaction's end would open a
    transaction no coordinator ends, holding the last stable offset (read_committed
    consumers) forever. Verified, it is refused; with verification off it hangs."""
    tid = _tid()
    with WireClient(broker.bootstrap_servers) as c:
        t = _topic(c)
        pid, epoch = begin(c, tid, {t: [0, 1]})
        assert produce1(c, tid, t, 0, kp_batch([b"a"], pid, epoch, 0)) == (0, 0)
        assert produce1(c, tid, t, 1, kp_batch([b"a"], pid, epoch, 0)) == (0, 0)
        r = c.request("EndTxn", 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=False)
        assert r.error_code == 0
        wait_until(lambda: offsets(c, t, 0) == (2, 2) and offsets(c, t, 1) == (2, 2))   # the abort markers
        late = kp_batch([b"late"], pid, epoch, 1)
        assert produce1(c, tid, t, 0, late)[0] == E.INVALID_TXN_STATE
        assert offsets(c, t, 0) == (2, 2)
        set_verification(c, False)        # transaction.partition.verification.enable, dynamic
        try:
            assert produce1(c, tid, t, 1, late) == (0, 2)
            assert offsets(c, t, 1) == (3, 2)   # a hanging transaction: the LSO is stuck at 2
        finally:
            set_verification(c, True)
        assert produce1(c, tid, t, 0, late)[0] == E.INVALID_TXN_STATE


def _marker_during_verification(monkeypatch) -> list:
    """The coordinator's verification answered, then (before the append) the transaction's
    abort marker lands on the verified partitions: what it said is recorded in the list."""
    import kwire.handlers.produce as produce_handler

    real = produce_handler.verify_transaction
    seen = []

    async def marker_meanwhile(b, tid, pid, epoch, tps):
        out = await real(b, tid, pid, epoch, tps)
        seen.append(dict(out))
        for topic, partition in tps:   # what the coordinator's WriteTxnMarkers would append
            b.replica_manager.append(topic, partition, build_control_batch(
                False, pid, epoch, b.clock.now_ms()), b.clock.now_ms()).result()
        return out

    monkeypatch.setattr(produce_handler, "verify_transaction", marker_meanwhile)
    return seen


def test_a_marker_during_the_verification_voids_it(broker, monkeypatch):
    """The verification guard (Kafka's VerificationGuard): the coordinator said yes, but the
    transaction's abort marker landed while the answer was on its way; the batch must not
    open a new transaction."""
    tid = _tid()
    with WireClient(broker.bootstrap_servers) as c:
        t = _topic(c, 1)
        pid, epoch = begin(c, tid, {t: [0]})
        seen = _marker_during_verification(monkeypatch)
        code, _, msg = produce(c, tid, {(t, 0): kp_batch([b"x"], pid, epoch, 0)})[(t, 0)]
        monkeypatch.undo()
        assert seen == [{(t, 0): E.NONE}]
        assert (code, msg) == (E.INVALID_TXN_STATE, "Record was not part of an ongoing transaction")
        assert offsets(c, t, 0) == (1, 1)     # only the marker; no transaction open
        assert produce1(c, tid, t, 0, kp_batch([b"x"], pid, epoch, 0)) == (0, 1)   # verified again: in


def test_a_corrupt_transactional_batch_is_corrupt_before_it_is_unverified(broker, monkeypatch):
    """The append validates the batch (CRC first) before the verification check reads its
    header, as Kafka's UnifiedLog.append: a corrupt batch whose guard a marker voided is
    CORRUPT_MESSAGE, not INVALID_TXN_STATE."""
    tid = _tid()
    with WireClient(broker.bootstrap_servers) as c:
        t = _topic(c, 1)
        pid, epoch = begin(c, tid, {t: [0]})
        corrupt = bytearray(kp_batch([b"x"], pid, epoch, 0))
        corrupt[-1] ^= 0xFF   # the record's last byte: covered by the CRC, the header untouched
        seen = _marker_during_verification(monkeypatch)
        code, base, _ = produce(c, tid, {(t, 0): bytes(corrupt)})[(t, 0)]
        monkeypatch.undo()
        assert seen == [{(t, 0): E.NONE}]
        assert (code, base) == (E.CORRUPT_MESSAGE, -1)
        assert offsets(c, t, 0) == (1, 1)     # only the marker


def test_the_coordinator_on_another_broker(tmp_path):
    """Two brokers: the partition's leader asks the coordinator on the other broker
    (AddPartitionsToTxn v5 verify_only over the inter-broker channel); with the coordinator
    gone the answer is the retriable NOT_ENOUGH_REPLICAS, as Kafka maps a network error."""
    from tests.raft.cluster import Cluster, create_topic, metadata, wait_for

    cluster = Cluster(str(tmp_path), size=2, extra_args=(
        "--override", "transaction.state.log.replication.factor=1",
        "--override", "transaction.state.log.num.partitions=4")).start()
    try:
        ports = {n.node_id: n.port for n in cluster.nodes.values()}
        assert wait_for(lambda: all(metadata(p)[0] == [1, 2] for p in ports.values()), 20)
        assert create_topic(ports[1], "xt", 4) == E.NONE
        leaders = wait_for(lambda: (m := metadata(ports[1])[2].get("xt")) and len(m) == 4 and
                           all(v in (1, 2) for v in m.values()) and m, 20)
        with WireClient(f"127.0.0.1:{ports[1]}") as c:
            for i in range(40):   # a transactional id coordinated by a broker that leads some of xt
                tid = f"x-{i}"
                r = wait_for(lambda: (x := c.request("FindCoordinator", 4, key_type=1, coordinator_keys=[tid])
                                      .coordinators[0]).error_code == 0 and x, 20)
                led = sorted(p for p, n in leaders.items() if n != r.node_id)
                if len(led) >= 2:
                    break
            coordinator, other = r.node_id, 3 - r.node_id
        with WireClient(f"127.0.0.1:{ports[coordinator]}") as c:
            pid, epoch = begin(c, tid, {"xt": [led[0]]})
        with WireClient(f"127.0.0.1:{ports[other]}") as c:
            assert produce1(c, tid, "xt", led[0], kp_batch([b"a"], pid, epoch, 0)) == (0, 0)
            assert produce1(c, tid, "xt", led[1], kp_batch([b"b"], pid, epoch, 0))[0] == E.INVALID_TXN_STATE
            cluster.nodes[coordinator].kill()
            code, _, msg = produce(c, tid, {("xt", led[1]): kp_batch([b"b"], pid, epoch, 0)})[("xt", led[1])]
            assert code == E.NOT_ENOUGH_REPLICAS and "Unable to verify" in msg, (code, msg)
            assert produce1(c, tid, "xt", led[0], kp_batch([b"c"], pid, epoch, 1)) == (0, 1)  # open: not asked
    finally:
        cluster.stop()


def test_a_stock_transactional_producer_is_verified_and_passes(broker, monkeypatch):
    """confluent-kafka's transactional producer (AddPartitionsToTxn before its first batch to
    a partition): its first batch per partition and transaction goes through the coordinator
    and is let in; later batches of the open transaction are not verified again."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    import kwire.handlers.produce as produce_handler

    real = produce_handler.verify_transaction
    asked = []

    async def counting(b, tid, pid, epoch, tps):
        out = await real(b, tid, pid, epoch, tps)
        asked.append((tid, sorted(tps), sorted(out.values())))
        return out

    with WireClient(broker.bootstrap_servers) as c:
        t = _topic(c)
    tid = _tid()
    monkeypatch.setattr(produce_handler, "verify_transaction", counting)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid, "linger.ms": 0})
    p.init_transactions(15)
    for committed in (True, False):
        p.begin_transaction()
        for i in range(6):
            p.produce(t, f"{committed}-{i}".encode(), partition=i % 2)
            p.flush(10)     # one batch per request, so later batches find the transaction open
        p.commit_transaction(15) if committed else p.abort_transaction(15)
    monkeypatch.undo()
    # each transaction: one verification per partition (its first batch), all answered NONE
    assert sorted(tp for _, tps, _ in asked for tp in tps) == sorted([(t, 0), (t, 1)] * 2)
    assert all(a[0] == tid and a[2] == [E.NONE] for a in asked)
    cons = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": _tid(),
                     "isolation.level": "read_committed", "enable.auto.commit": False})
    cons.assign([TopicPartition(t, 0, 0), TopicPartition(t, 1, 0)])
    got = []
    deadline = time.time() + 15
    while len(got) < 6 and time.time() < deadline:
        m = cons.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
    cons.close()
    assert sorted(got) == sorted(f"True-{i}".encode() for i in range(6))

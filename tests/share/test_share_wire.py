"""Share groups over the wire (KIP-932) with kwire's own wire client against an in-process
broker emulating Kafka 4.3: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch with share
sessions and piggy-backed acknowledgements, ShareAcknowledge, ApiVersions' share.version.
The stock Java client is in test_share_java.py."""
from __future__ import annotations

import time
import uuid

import pytest

from kwire.errors import ErrorCode as E
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow

ACCEPT, RELEASE, REJECT = 1, 2, 3
RECORD_LIMIT = 1   # ShareFetch v2 share_acquire_mode


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"kwire.emulate.kafka.version": "4.3", "offsets.topic.num.partitions": 1,
                           "group.share.record.lock.duration.ms": 1000,
                           "group.share.min.record.lock.duration.ms": 1000,
                           "group.share.delivery.count.limit": 3}) as b:
        yield b


def _setup(c: WireClient, n: int = 5):
    topic = f"sw-{uuid.uuid4().hex[:8]}"
    c.create_topic(topic, 1)
    c.produce(topic, [(None, f"v{i}".encode()) for i in range(n)])
    group = f"g-{uuid.uuid4().hex[:8]}"
    # new share partitions start at the latest offset by default: read from the start here
    r = c.request("IncrementalAlterConfigs", 1, resources=[
        _res(c, group, "share.auto.offset.reset", "earliest")], validate_only=False)
    assert r.responses[0].error_code == 0, r.responses[0]
    for _ in range(100):   # the first look-up creates __consumer_offsets
        fc = c.request("FindCoordinator", 6, key_type=0, coordinator_keys=[group])
        if fc.coordinators[0].error_code == 0:
            break
        import time
        time.sleep(0.1)
    return topic, broker_topic_id(c, topic), group


def broker_topic_id(c: WireClient, topic: str) -> uuid.UUID:
    from kwire.codec.apis import api
    MT = api("Metadata").request.struct("MetadataRequestTopic")
    md = c.request("Metadata", 12, topics=[MT(topic_id=uuid.UUID(int=0), name=topic)],
                   allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return md.topics[0].topic_id


def _res(c, group, name, value):
    from kwire.codec.apis import api
    req = api("IncrementalAlterConfigs").request
    R, C = req.struct("AlterConfigsResource"), req.struct("AlterableConfig")
    return R(resource_type=32, resource_name=group, configs=[C(name=name, config_operation=0, value=value)])


def _hb(c, group, member, epoch, topics=None):
    return c.request("ShareGroupHeartbeat", 1, group_id=group, member_id=member, member_epoch=epoch,
                     rack_id=None, subscribed_topic_names=topics)


def _fetch(c, group, member, epoch, tid, acks=(), max_records=100, wait=0, forget=False, mode=0,
           max_bytes=1 << 20, batch_size=100, partitions=(0,)):
    from kwire.codec.apis import api
    req = api("ShareFetch").request
    T, P, B = req.struct("FetchTopic"), req.struct("FetchPartition"), req.struct("AcknowledgementBatch")
    topics = [T(topic_id=tid, partitions=[P(partition_index=p, acknowledgement_batches=[
        B(first_offset=f, last_offset=l, acknowledge_types=list(t)) for f, l, t in acks] if p == partitions[0] else [])
        for p in partitions])]
    return c.request("ShareFetch", 2, group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=wait,
                     min_bytes=1, max_bytes=max_bytes, max_records=max_records, batch_size=batch_size, topics=topics,
                     forgotten_topics_data=[], share_acquire_mode=mode)


def _acquired(r):
    assert r.error_code == 0, r
    out = []
    for t in r.responses:
        for p in t.partitions:
            assert p.error_code == 0, p
            out += [(a.first_offset, a.last_offset, a.delivery_count) for a in p.acquired_records]
    return out


def test_api_versions_advertise_share_groups(broker):
    with WireClient(broker.bootstrap_servers) as c:
        r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
    keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert keys[76] == (1, 1) and keys[77] == (1, 1) and keys[78] == (1, 2) and keys[79] == (1, 2)
    assert ("share.version", 1) in [(f.name, f.max_version_level) for f in r.finalized_features]
    assert ("share.version", 0, 1) in [(f.name, f.min_version, f.max_version) for f in r.supported_features]


def test_heartbeat_fetch_acknowledge(broker):
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c)
        a, b = str(uuid.uuid4()), str(uuid.uuid4())
        r = _hb(c, group, a, 0, [topic])
        assert (r.error_code, r.member_epoch) == (0, 1)
        assert [(tp.topic_id, tp.partitions) for tp in r.assignment.topic_partitions] == [(tid, [0])]
        r = _hb(c, group, b, 0, [topic])
        assert (r.error_code, r.member_epoch, r.assignment.topic_partitions[0].partitions) == (0, 2, [0])
        d = c.request("ShareGroupDescribe", 1, group_ids=[group], include_authorized_operations=False).groups[0]
        assert (d.error_code, d.group_state, d.assignor_name, len(d.members)) == (0, "Stable", "simple", 2)
        lg = c.request("ListGroups", 5, states_filter=[], types_filter=["share"])
        assert [(g.group_id, g.group_type) for g in lg.groups if g.group_id == group] == [(group, "share")]

        # a takes 3 (record_limit mode: batch_optimized would give the whole batch), b the
        # other 2: never the same record twice
        r = _fetch(c, group, a, 0, tid, max_records=3, mode=RECORD_LIMIT)
        assert _acquired(r) == [(0, 2, 1)] and r.acquisition_lock_timeout_ms == 1000
        assert r.responses[0].partitions[0].records   # the batch holding them
        assert _acquired(_fetch(c, group, b, 0, tid)) == [(3, 4, 1)]
        # a: accept 0, release 1, reject 2 (piggy-backed); then b can have 1 again
        r = _fetch(c, group, a, 1, tid, acks=[(0, 2, (ACCEPT, RELEASE, REJECT))])
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        assert _acquired(r) == [(1, 1, 2)]   # a itself takes the released record back
        # b acknowledges what it holds with ShareAcknowledge; a record it does not hold is refused
        ack = c.request("ShareAcknowledge", 2, group_id=group, member_id=b, share_session_epoch=1,
                        topics=[_ack_topic(tid, [(1, 1, (ACCEPT,))])])
        assert ack.responses[0].partitions[0].error_code == E.INVALID_RECORD_STATE
        ack = c.request("ShareAcknowledge", 2, group_id=group, member_id=b, share_session_epoch=2,
                        topics=[_ack_topic(tid, [(3, 4, (ACCEPT,))])])
        assert ack.responses[0].partitions[0].error_code == 0
        sp = broker.broker.share_partitions.get(group, tid, 0)
        assert (sp.start_offset, sp.end_offset, [int(sp.state_of(o)) for o in range(1, 5)]) == (1, 5, [1, 4, 2, 2])
        # session errors
        assert _fetch(c, group, b, 7, tid).error_code == E.INVALID_SHARE_SESSION_EPOCH
        assert _fetch(c, group, "nobody", 3, tid).error_code == E.SHARE_SESSION_NOT_FOUND
        assert _fetch(c, group, b, 0, tid, acks=[(1, 1, (ACCEPT,))]).error_code == E.INVALID_REQUEST
        # a closes its session: its record goes back, b gets it
        _fetch(c, group, a, -1, tid)
        assert _acquired(_fetch(c, group, b, 0, tid)) == [(1, 1, 3)]


def _ack_topic(tid, batches):
    from kwire.codec.apis import api
    req = api("ShareAcknowledge").request
    T, P, B = req.struct("AcknowledgeTopic"), req.struct("AcknowledgePartition"), req.struct("AcknowledgementBatch")
    return T(topic_id=tid, partitions=[P(partition_index=0, acknowledgement_batches=[
        B(first_offset=f, last_offset=l, acknowledge_types=list(t)) for f, l, t in batches])])


def test_lock_expiry_and_delivery_limit_over_the_wire(broker):
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=2)
        a = str(uuid.uuid4())
        _hb(c, group, a, 0, [topic])
        assert _acquired(_fetch(c, group, a, 0, tid, max_records=1, mode=RECORD_LIMIT)) == [(0, 0, 1)]
        # nothing else to take but offset 1; the long poll waits for offset 0's lock to expire
        assert _acquired(_fetch(c, group, a, 1, tid, max_records=1, mode=RECORD_LIMIT)) == [(1, 1, 1)]
        r = _fetch(c, group, a, 2, tid, acks=[(1, 1, (ACCEPT,))], max_records=1, wait=3000, mode=RECORD_LIMIT)
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        assert _acquired(r) == [(0, 0, 2)]   # redelivered after 1 s
        r = _fetch(c, group, a, 3, tid, acks=[(0, 0, (RELEASE,))], max_records=1, mode=RECORD_LIMIT)
        assert _acquired(r) == [(0, 0, 3)]
        _fetch(c, group, a, 4, tid, acks=[(0, 0, (RELEASE,))])   # 3 deliveries: archived
        sp = broker.broker.share_partitions.get(group, tid, 0)
        assert (sp.start_offset, sp.in_flight()) == (2, 0)


def test_unknown_topic_and_group_errors(broker):
    with WireClient(broker.bootstrap_servers) as c:
        tid = uuid.uuid4()
        r = _fetch(c, "g-x", "m", 0, tid)
        assert r.responses[0].partitions[0].error_code == E.UNKNOWN_TOPIC_ID
        assert _fetch(c, "", "m", 0, tid).error_code == E.INVALID_GROUP_ID
        # as a client does: FindCoordinator first (it creates __consumer_offsets on a fresh
        # broker); the coordinator answers COORDINATOR_NOT_AVAILABLE before validating (as Kafka's
        # GroupCoordinatorService) until its partition is loaded
        from kwire.testing.wait import wait_until
        wait_until(lambda: c.request("FindCoordinator", 4, key_type=0, coordinator_keys=["g-y"])
                   .coordinators[0].error_code == 0, 15, message="the group's coordinator is found")
        retriable = (E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS)
        wait_until(lambda: _hb(c, "g-y", "", 0, ["t"]).error_code not in retriable, 15,
                   message="the group coordinator is ready")
        assert _hb(c, "g-y", "", 0, ["t"]).error_code == E.INVALID_REQUEST


def test_delete_share_group(broker):
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=2)
        a = str(uuid.uuid4())
        _hb(c, group, a, 0, [topic])
        _fetch(c, group, a, 0, tid, max_records=1)
        assert broker.broker.share_partitions.get(group, tid, 0) is not None
        r = c.request("DeleteGroups", 2, groups_names=[group])
        assert r.results[0].error_code == E.NON_EMPTY_GROUP
        _hb(c, group, a, -1)
        r = c.request("DeleteGroups", 2, groups_names=[group])
        assert r.results[0].error_code == 0
        assert broker.broker.share_partitions.get(group, tid, 0) is None
        d = c.request("ShareGroupDescribe", 1, group_ids=[group], include_authorized_operations=False).groups[0]
        assert d.error_code == E.GROUP_ID_NOT_FOUND


def test_share_version_0_turns_share_groups_off():
    with Broker(overrides={"kwire.emulate.kafka.version": "4.3", "share.version": 0}) as b:
        with WireClient(b.bootstrap_servers) as c:
            r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
            keys = {k.api_key for k in r.api_keys}
            assert not keys & {76, 77, 78, 79, 90, 91, 92} and 68 in keys
            assert "share.version" not in [f.name for f in r.finalized_features]
            assert _hb(c, "g", "m", 0, ["t"]).error_code == E.UNSUPPORTED_VERSION
            assert _fetch(c, "g", "m", 0, uuid.uuid4()).error_code == E.UNSUPPORTED_VERSION
    with Broker(overrides={"kwire.emulate.kafka.version": "4.0"}) as b:   # before share groups
        with WireClient(b.bootstrap_servers) as c:
            r = c.request("ApiVersions", 3, client_software_name="t", client_software_version="1")
            assert not {k.api_key for k in r.api_keys} & {76, 77, 78, 79}
            assert "share.version" not in [f.name for f in r.finalized_features]


def _setup_batches(c: WireClient, partitions: int, batches: list[int], size: int = 0):
    """A topic with ``batches`` (record counts, one produce each) in each partition, and a new
    group reading from the start, with one member; (topic, topic id, group, member)."""
    topic, group = f"sb-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    c.create_topic(topic, partitions)
    for p in range(partitions):
        for n in batches:
            c.produce(topic, [f"v{i}".encode().ljust(size, b".") for i in range(n)], partition=p)
    r = c.request("IncrementalAlterConfigs", 1, resources=[_res(c, group, "share.auto.offset.reset", "earliest")],
                  validate_only=False)
    assert r.responses[0].error_code == 0
    m = str(uuid.uuid4())
    from kwire.testing.wait import wait_until
    wait_until(lambda: c.request("FindCoordinator", 6, key_type=0, coordinator_keys=[group])
               .coordinators[0].error_code == 0, 15, message="the group's coordinator is found")
    wait_until(lambda: _hb(c, group, m, 0, [topic]).error_code == 0, 15, message="the member joins")
    return topic, broker_topic_id(c, topic), group, m


def _by_partition(r):
    assert r.error_code == 0, r
    return {p.partition_index: [(a.first_offset, a.last_offset) for a in p.acquired_records]
            for t in r.responses for p in t.partitions if p.acquired_records}


def test_acquire_modes_whole_batches_and_batch_size(broker):
    """Measured on Apache Kafka 4.3.1 with the same requests: batch_optimized (the default
    acquire mode) hands out the batch holding the max_records-th record whole, and cuts the
    acquired runs at a batch start once one holds batch_size records; record_limit stops at
    max_records exactly."""
    with WireClient(broker.bootstrap_servers) as c:
        _, tid, group, m = _setup_batches(c, 1, [10, 10, 10])
        assert _by_partition(_fetch(c, group, m, 0, tid, max_records=3, batch_size=3)) == {0: [(0, 9)]}
        assert _by_partition(_fetch(c, group, m, 1, tid, max_records=15, batch_size=5)) == {0: [(10, 19), (20, 29)]}
        _, tid, group, m = _setup_batches(c, 1, [10, 10])
        assert _by_partition(_fetch(c, group, m, 0, tid, max_records=3, mode=RECORD_LIMIT)) == {0: [(0, 2)]}
        assert _by_partition(_fetch(c, group, m, 1, tid, max_records=12, mode=RECORD_LIMIT)) == {0: [(3, 14)]}


def test_max_bytes_zero_and_partitions_shared_fairly(broker):
    """As Kafka 4.3.1 answers: MaxBytes 0 gets an empty answer at once (no partitions, no
    wait); the session's partitions are served in an order rotated by the session epoch (so
    the record limit left for the last one moves around), and the request's max bytes are
    spread over them with at least one batch each."""
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group, m = _setup_batches(c, 2, [10])
        r = _fetch(c, group, m, 0, tid, max_bytes=0, wait=5000, partitions=(0, 1))
        assert (r.error_code, r.responses) == (0, [])
        # epoch 1: partition 1 first (10 records), partition 0 gets the 5 left (record_limit)
        r = _fetch(c, group, m, 1, tid, max_records=15, mode=RECORD_LIMIT, partitions=(0, 1))
        assert _by_partition(r) == {0: [(0, 4)], 1: [(0, 9)]}
        assert [p.partition_index for p in r.responses[0].partitions] == [0, 1]   # in session order
        # epoch 2: partition 0 first again
        assert _by_partition(_fetch(c, group, m, 2, tid, max_records=15, mode=RECORD_LIMIT,
                                    partitions=(0, 1))) == {0: [(5, 9)]}
        for p in (0, 1):
            for _ in range(2):
                c.produce(topic, [b"x"] * 10, partition=p)
        # 100 bytes for two partitions: a batch of each all the same
        assert _by_partition(_fetch(c, group, m, 3, tid, max_bytes=100, partitions=(0, 1))) == {
            0: [(10, 19)], 1: [(10, 19)]}


def test_read_committed_share_group(broker):
    """share.isolation.level=read_committed (a group config): an open transaction stalls
    delivery at the last stable offset, and the records of an aborted transaction are
    archived, never delivered (Kafka's share fetch with FetchIsolation.TXN_COMMITTED and
    SharePartition's aborted-transaction filter); read_uncommitted (the default) delivers them."""
    ck = pytest.importorskip("confluent_kafka")
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group, m = _setup_batches(c, 1, [2])   # offsets 0-1, not transactional
        r = c.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[
            _res(c, group, "share.isolation.level", "read_committed")])
        assert r.responses[0].error_code == 0
        dirty, m2 = f"g-{uuid.uuid4().hex[:8]}", str(uuid.uuid4())
        p = ck.Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": f"t-{uuid.uuid4().hex}"})
        p.init_transactions(15)

        def txn(values, commit):
            p.begin_transaction()
            for v in values:
                p.produce(topic, v, partition=0)
            p.flush(10)
            if commit is not None:
                (p.commit_transaction if commit else p.abort_transaction)(15)

        txn([b"a1", b"a2", b"a3"], commit=None)   # open: offsets 2-4
        assert _by_partition(_fetch(c, group, m, 0, tid)) == {0: [(0, 1)]}   # stalled at the LSO
        assert _by_partition(_fetch(c, group, m, 1, tid, wait=300)) == {}
        p.abort_transaction(15)                    # marker at 5
        txn([b"c1", b"c2"], commit=True)           # 6-7, marker at 8
        r = _fetch(c, group, m, 2, tid, acks=[(0, 1, (ACCEPT,))], wait=2000)
        assert _by_partition(r) == {0: [(6, 7)]}   # 2-4 aborted: archived
        sp = broker.broker.share_partitions.get(group, tid, 0)
        assert [sp.state_of(o) for o in (2, 3, 4)] == [None, None, None] and sp.start_offset == 6
        # a read_uncommitted group (the default) reads the aborted records too
        r = c.request("IncrementalAlterConfigs", 1, validate_only=False, resources=[
            _res(c, dirty, "share.auto.offset.reset", "earliest")])
        assert _hb(c, dirty, m2, 0, [topic]).error_code == 0
        assert _by_partition(_fetch(c, dirty, m2, 0, tid)) == {0: [(0, 4), (6, 7)]}


def test_share_fetch_is_throttled_by_the_consumer_byte_rate(broker):
    """consumer_byte_rate applies to ShareFetch as to Fetch (Kafka's handleShareFetchRequest):
    past the quota the answer carries throttle_time_ms and no records, what it acquired goes
    back at once, and the connection is muted for that long."""
    from tests.quota.test_quota_clients import alter
    client = f"slow-share-{uuid.uuid4().hex[:6]}"
    assert alter(broker, {"client-id": client}, {"consumer_byte_rate": 1024}) == [(0, None)]
    with WireClient(broker.bootstrap_servers, client_id=client) as c:
        topic, tid, group, m = _setup_batches(c, 1, [100] * 30, size=100)   # 30 batches of ~10 KB
        got, throttled, epoch = 0, None, 0
        while throttled is None and epoch < 10:
            r = _fetch(c, group, m, epoch, tid, max_records=100)
            epoch += 1
            if r.throttle_time_ms > 0:
                throttled = r
            else:
                got += sum(a.last_offset - a.first_offset + 1 for a in r.responses[0].partitions[0].acquired_records)
        assert throttled is not None and throttled.responses == [], (got, epoch)
        assert got < 3000
        sp = broker.broker.share_partitions.get(group, tid, 0)
        assert sum(1 for o in range(3000) if sp.state_of(o) == 1) == got   # nothing held for the throttled one
        t0 = time.monotonic()
        c.request("Metadata", 12, topics=None, allow_auto_topic_creation=False,
                  include_topic_authorized_operations=False)
        assert time.monotonic() - t0 >= throttled.throttle_time_ms / 1000 * 0.9   # muted meanwhile


def test_acquiring_writes_no_share_state_an_acknowledgement_does(broker, monkeypatch):
    """Kafka's SharePartition.acquire writes no state (the persister is called on
    acknowledgement, release and lock expiry): a fetch that only acquires answers without a
    WriteShareGroupState, so the lock the client sees is not shortened by that write (an
    inter-broker round trip and a replicated append on a cluster). The share partition's
    creation is still written (its start offset), then the acknowledgement."""
    st = broker.broker.share_state
    writes: list[set] = []
    real = st._write_all

    async def counting(pending):   # this test's group only: other tests' partitions share the broker
        if mine := {k for k in pending if k[0] == group}:
            writes.append(mine)
        return await real(pending)

    group = None
    monkeypatch.setattr(st, "_write_all", counting)
    with WireClient(broker.bootstrap_servers) as c:
        topic, tid, group = _setup(c, n=3)
        a = str(uuid.uuid4())
        _hb(c, group, a, 0, [topic])
        assert _acquired(_fetch(c, group, a, 0, tid, max_records=1, mode=RECORD_LIMIT)) == [(0, 0, 1)]
        assert writes == [{(group, tid, 0)}]   # the creation
        writes.clear()
        assert _acquired(_fetch(c, group, a, 1, tid, max_records=1, mode=RECORD_LIMIT)) == [(1, 1, 1)]
        assert writes == []
        r = _fetch(c, group, a, 2, tid, acks=[(0, 1, (ACCEPT,))], max_records=1, mode=RECORD_LIMIT)
        assert r.responses[0].partitions[0].acknowledge_error_code == 0
        assert _acquired(r) == [(2, 2, 1)]
        assert writes == [{(group, tid, 0)}]   # the acknowledgement
        sp = broker.broker.share_partitions.get(group, tid, 0)
        assert [(b.first_offset, b.last_offset, b.delivery_state) for b in sp.state_batches()] == [(2, 2, 0)]

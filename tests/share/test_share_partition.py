"""The share-partition state machine alone (kwire.share.partition), time passed in."""
from __future__ import annotations

from kwire.errors import ErrorCode as E
from kwire.share.partition import AcquiredRecords, AcknowledgeType as A, RecordState as S, SharePartition


def sp(**kw) -> SharePartition:
    kw.setdefault("record_lock_duration_ms", 1000)
    return SharePartition(**kw)


def test_each_record_goes_to_one_member_at_a_time():
    p = sp()
    assert p.acquire("a", range(0, 5), 3, now=0) == [AcquiredRecords(0, 2, 1)]
    assert p.acquire("b", range(0, 5), 10, now=0, read_end=5) == [AcquiredRecords(3, 4, 1)]
    assert p.acquire("c", range(0, 5), 10, now=0, read_end=5) == []
    assert p.fetch_offset(0) == 5 and p.in_flight() == 5


def test_accept_release_reject_and_start_offset():
    p = sp()
    p.acquire("a", range(0, 4), 10, now=0, read_end=4)
    assert p.acknowledge("a", 0, 3, [A.ACCEPT, A.RELEASE, A.REJECT, A.ACCEPT], now=1) == E.NONE
    assert [p.state_of(o) for o in range(4)] == [None, S.AVAILABLE, S.ARCHIVED, S.ACKNOWLEDGED]
    assert p.start_offset == 1 and p.fetch_offset(1) == 1
    # the released record is delivered again, a second time
    assert p.acquire("b", range(0, 4), 10, now=2) == [AcquiredRecords(1, 1, 2)]
    assert p.acknowledge("b", 1, 1, [A.ACCEPT], now=3) == E.NONE
    assert p.start_offset == 4 and p.in_flight() == 0


def test_only_the_holder_acknowledges_and_a_bad_batch_changes_nothing():
    p = sp()
    p.acquire("a", range(0, 2), 10, now=0)
    assert p.acknowledge("b", 0, 1, [A.ACCEPT], now=0) == E.INVALID_RECORD_STATE
    assert p.acknowledge("a", 0, 2, [A.ACCEPT], now=0) == E.INVALID_RECORD_STATE   # 2 never fetched
    assert p.acknowledge("a", 0, 1, [A.ACCEPT, A.ACCEPT, A.ACCEPT], now=0) == E.INVALID_REQUEST
    assert p.acknowledge("a", 0, 1, [9], now=0) == E.INVALID_REQUEST
    assert [p.state_of(o) for o in range(2)] == [S.ACQUIRED, S.ACQUIRED]
    assert p.acknowledge("a", 0, 1, [A.ACCEPT], now=0) == E.NONE
    assert p.acknowledge("a", 0, 1, [A.ACCEPT], now=0) == E.INVALID_RECORD_STATE   # twice


def test_lock_expiry_redelivers_and_a_late_ack_is_refused():
    p = sp(record_lock_duration_ms=1000)
    p.acquire("a", [0, 1], 10, now=0)
    assert p.next_lock_deadline() == 1000
    assert p.acquire("b", [0, 1], 10, now=999) == []
    assert p.acquire("b", [0, 1], 10, now=1000) == [AcquiredRecords(0, 1, 2)]
    assert p.acknowledge("a", 0, 1, [A.ACCEPT], now=1001) == E.INVALID_RECORD_STATE
    # RENEW restarts the lock
    assert p.acknowledge("b", 0, 1, [A.RENEW], now=1500) == E.NONE
    assert p.expire_locks(2100) == 0 and p.expire_locks(2500) == 2


def test_delivery_count_limit_archives_a_poison_record():
    p = sp(delivery_count_limit=3)
    for n in range(1, 4):
        assert p.acquire("a", [0, 1], 1, now=n * 10) == [AcquiredRecords(0, 0, n)]
        assert p.acknowledge("a", 0, 0, [A.RELEASE], now=n * 10) == E.NONE
    assert p.state_of(0) is None and p.start_offset == 1   # archived after 3 deliveries
    assert p.acquire("a", [0, 1], 5, now=100) == [AcquiredRecords(1, 1, 1)]
    # a lock timing out counts the same
    p2 = sp(delivery_count_limit=2, record_lock_duration_ms=10)
    p2.acquire("a", [0], 1, now=0)
    p2.acquire("a", [0], 1, now=10)
    p2.expire_locks(20)
    assert p2.start_offset == 1 and p2.in_flight() == 0


def test_max_in_flight_records():
    p = sp(max_in_flight=3)
    assert p.acquire("a", range(10), 10, now=0, read_end=10) == [AcquiredRecords(0, 2, 1)]
    assert p.end_offset == 3 and not p.can_acquire(0)
    assert p.acquire("b", range(10), 10, now=0) == []
    p.acknowledge("a", 0, 0, [A.ACCEPT], now=0)
    assert p.acquire("b", range(10), 10, now=0) == [AcquiredRecords(3, 3, 1)]


def test_gaps_and_markers_are_passed():
    p = sp()
    # offsets 1 and 2 hold no record (a compacted gap, a transaction marker)
    assert p.acquire("a", [0, 3], 10, now=0, read_end=5) == [AcquiredRecords(0, 0, 1), AcquiredRecords(3, 3, 1)]
    assert p.end_offset == 5
    assert p.acknowledge("a", 0, 3, [A.ACCEPT, A.GAP, A.GAP, A.ACCEPT], now=0) == E.NONE
    assert p.start_offset == 5


def test_release_member_and_durable_form():
    p = sp()
    p.acquire("a", range(6), 10, now=0, read_end=6)
    p.acknowledge("a", 0, 1, [A.ACCEPT], now=0)
    p.acknowledge("a", 3, 3, [A.REJECT], now=0)
    p.acknowledge("a", 4, 4, [A.RELEASE], now=0)
    assert p.release_member("a", 0) == 2   # offsets 2 and 5
    batches = p.state_batches()
    q = sp()
    q.restore(p.start_offset, batches)
    assert (q.start_offset, q.end_offset) == (2, 6)
    assert [q.state_of(o) for o in range(2, 6)] == [S.AVAILABLE, S.ARCHIVED, S.AVAILABLE, S.AVAILABLE]
    assert q.acquire("b", range(6), 10, now=0) == [AcquiredRecords(2, 2, 2), AcquiredRecords(4, 5, 2)]

"""Any sequence of acquisitions, acknowledgements, session closes and lock expiries keeps a
share partition's invariants (hypothesis, fake time): a record is held by at most one member,
it is delivered at most delivery_count_limit times, done records never come back, the start
offset only moves forward past done records, at most max_in_flight records are in flight,
and the durable form restores the same state (locks aside)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.errors import ErrorCode as E
from kwire.share.partition import DONE, RecordState as S, SharePartition

MEMBERS = ["a", "b", "c"]
END = 30   # offsets 0..29 in the log

op = st.one_of(
    st.tuples(st.just("acquire"), st.sampled_from(MEMBERS), st.integers(1, 8)),
    st.tuples(st.just("ack"), st.sampled_from(MEMBERS), st.integers(0, END - 1), st.integers(0, 4),
              st.sampled_from([1, 2, 3, 4])),
    st.tuples(st.just("close"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("tick"), st.integers(0, 700)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=60))
def test_share_partition_invariants(ops):
    limit, max_in_flight = 3, 12
    sp = SharePartition(record_lock_duration_ms=1000, delivery_count_limit=limit, max_in_flight=max_in_flight)
    now = 0
    done: set[int] = set()
    last_start = 0
    for o in ops:
        if o[0] == "acquire":
            got = sp.acquire(o[1], range(sp.fetch_offset(now), END), o[2], now, read_end=END)
            offs = [x for a in got for x in range(a.first_offset, a.last_offset + 1)]
            assert len(offs) <= o[2]
            assert not set(offs) & done, "a done record came back"
            for x in offs:
                r = sp.records[x]
                assert (r.state, r.member_id) == (S.ACQUIRED, o[1]) and r.delivery_count <= limit
        elif o[0] == "ack":
            first = o[2]
            last = min(first + o[3], END - 1)
            held = all(sp.records.get(x) is not None and sp.records[x].member_id == o[1]
                       and sp.records[x].state is S.ACQUIRED for x in range(first, last + 1))
            before = {x: (r.state, r.delivery_count) for x, r in sp.records.items()}
            err = sp.acknowledge(o[1], first, last, [o[4]], now)
            if not held or first < sp.start_offset:
                if err != E.NONE:   # refused whole: nothing changed but expired locks
                    assert all(sp.records[x].delivery_count == c for x, (_s, c) in before.items() if x in sp.records)
            else:
                assert err == E.NONE
        elif o[0] == "close":
            sp.release_member(o[1], now)
        else:
            now += o[1]
            sp.expire_locks(now)
        # invariants
        assert sp.start_offset >= last_start
        last_start = sp.start_offset
        assert len(sp.records) <= max_in_flight
        for x, r in sp.records.items():
            assert sp.start_offset <= x < sp.end_offset
            assert r.delivery_count <= limit
            if r.state is S.ACQUIRED:
                assert r.member_id is not None
            if r.state in DONE:
                done.add(x)
        done |= set(range(0, sp.start_offset))
    # the durable form restores the same states (acquired ones as available)
    q = SharePartition(delivery_count_limit=limit, max_in_flight=max_in_flight)
    q.restore(sp.start_offset, sp.state_batches())
    assert q.start_offset == sp.start_offset
    for x, r in sp.records.items():
        want = S.AVAILABLE if r.state is S.ACQUIRED else r.state
        if want in DONE and x < q.start_offset:
            continue
        assert (q.records[x].state, q.records[x].delivery_count) == (want, r.delivery_count)

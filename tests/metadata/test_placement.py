"""kwire.metadata.placement: the pure replica placer (Kafka's StripedReplicaPlacer shape) and
manual assignment checks, by example and by property (hypothesis)."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kwire.errors import ErrorCode
from kwire.metadata.placement import PlacementError, UsableBroker, place, rack_alternated, validate_assignment


def brokers(n, racks=None, fenced=()):
    return [UsableBroker(i, racks[i % len(racks)] if racks else None, i in fenced) for i in range(1, n + 1)]


def test_round_robin_without_racks():
    got = place(6, 3, brokers(3))
    assert [r[0] for r in got] == [1, 2, 3, 1, 2, 3]
    assert all(len(set(r)) == 3 for r in got)


def test_fenced_brokers_get_nothing():
    got = place(8, 2, brokers(4, fenced={2}))
    assert all(2 not in r for r in got)
    assert Counter(r[0] for r in got) == {1: 3, 3: 3, 4: 2}


def test_replication_factor_beyond_usable_brokers_is_kafkas_error():
    with pytest.raises(PlacementError) as ei:
        place(1, 3, brokers(3, fenced={3}))
    assert ei.value.code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert ei.value.message == ("The target replication factor of 3 cannot be reached because only 2 broker(s) "
                                "are registered or some brokers have all their log directories cordoned.")
    with pytest.raises(PlacementError, match="All brokers are currently fenced, or have all their log directories cordoned."):
        place(1, 1, brokers(2, fenced={1, 2}))
    with pytest.raises(PlacementError, match="must be positive"):
        place(1, 0, brokers(2))


def test_a_new_topic_starts_where_the_cluster_is_least_loaded():
    first = place(4, 1, brokers(3))                       # leaders 1 2 3 1
    second = place(2, 1, brokers(3), cluster=first)       # 2 and 3 lead fewer: they go first
    assert sorted(r[0] for r in second) == [2, 3]
    total = Counter(r[0] for r in first + second)
    assert max(total.values()) - min(total.values()) == 0


def test_create_partitions_continues_the_topics_spread():
    existing = [[1], [1], [2]]                            # 3 leads nothing of this topic
    got = place(3, 1, brokers(3), cluster=existing, topic=existing)
    assert Counter(r[0] for r in existing + got) == {1: 2, 2: 2, 3: 2}


def test_racks_alternate_and_partitions_span_racks():
    bs = [UsableBroker(1, "a"), UsableBroker(2, "a"), UsableBroker(3, "b"), UsableBroker(4, "b"),
          UsableBroker(5, "c")]
    assert [b.id for b in rack_alternated(bs)] == [1, 3, 5, 2, 4]
    rack = {b.id: b.rack for b in bs}
    for r in place(10, 3, bs):
        assert len({rack[b] for b in r}) == 3
    for r in place(10, 2, bs):
        assert len({rack[b] for b in r}) == 2


def test_manual_assignment_messages_are_kafkas():
    ok = {1, 2, 3}
    validate_assignment([3, 1], ok, None)
    cases = [
        ([], None, "The manual partition assignment includes an empty replica list."),
        ([1, 12], None, "The manual partition assignment includes broker 12, but no such broker is registered."),
        ([2, 1, 2], None, "The manual partition assignment includes the broker 2 more than once."),
        ([1, 2], 1, "The manual partition assignment includes a partition with 2 replica(s), but this is not "
                    "consistent with previous partitions, which have 1 replica(s)."),
    ]
    for replicas, rf, message in cases:
        with pytest.raises(PlacementError) as ei:
            validate_assignment(replicas, ok, rf)
        assert ei.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert ei.value.message == message


cluster_shape = st.integers(1, 9).flatmap(lambda n: st.tuples(
    st.just(n),
    st.integers(1, n),                                             # replication factor
    st.integers(1, 40),                                            # partitions
    st.one_of(st.none(), st.lists(st.sampled_from("abcd"), min_size=n, max_size=n)),   # racks
    st.lists(st.lists(st.integers(1, n), min_size=1, max_size=3, unique=True), max_size=30),  # existing load
))


@settings(max_examples=300, deadline=None)
@given(cluster_shape)
def test_placement_properties(shape):
    n, rf, count, racks, existing = shape
    bs = [UsableBroker(i + 1, racks[i] if racks else None) for i in range(n)]
    got = place(count, rf, bs, cluster=existing)
    assert len(got) == count
    assert all(len(r) == rf and len(set(r)) == rf and set(r) <= set(range(1, n + 1)) for r in got)
    leads = Counter(r[0] for r in got)
    counts = [leads.get(b, 0) for b in range(1, n + 1)]
    assert max(counts) - min(counts) <= 1, counts
    if racks:
        rack = {b.id: b.rack for b in bs}
        want = min(rf, len(set(racks)))
        assert all(len({rack[b] for b in r}) == want for r in got)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 7), st.lists(st.integers(1, 12), min_size=2, max_size=6))
def test_leaders_stay_even_across_topics(n, sizes):
    """Topics created one after another: the cluster's leader counts stay within one per
    topic-count step (each topic starts on the least loaded broker)."""
    bs = brokers(n)
    cluster: list = []
    for size in sizes:
        cluster += place(size, 1, bs, cluster=cluster)
        leads = Counter(r[0] for r in cluster)
        counts = [leads.get(b, 0) for b in range(1, n + 1)]
        assert max(counts) - min(counts) <= 1, (sizes, counts)

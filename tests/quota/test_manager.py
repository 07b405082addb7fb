"""Quota managers over an image, time passed in: off until a quota exists, bounds follow
records (a snapshot that replaces the image included), sensors shared as Kafka's tags say."""
from __future__ import annotations

import sys
from types import SimpleNamespace as NS

import pytest

from kwire.metadata.delta import MetadataDelta, replay
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage
from kwire.metadata.snapshot import decode_snapshot, encode_snapshot
from kwire.quota.manager import ClientQuotas, user_of


def _rec(pairs, key, value, remove=False):
    E = R.CLIENT_QUOTA.struct("EntityData")
    return R.CLIENT_QUOTA.cls(entity=[E(entity_type=t, entity_name=n) for t, n in pairs], key=key,
                              value=value, remove=remove)


def _setup():
    holder = NS(image=MetadataImage())
    q = ClientQuotas(lambda: holder.image.client_quotas, samples=11, window_s=1)
    return holder, q


def _publish(holder, q, recs):
    """One committed batch: a delta, the new image, the quota managers told (a publisher)."""
    delta = MetadataDelta(holder.image).replay_all(recs)
    holder.image = delta.apply()
    q.on_metadata_update(delta, holder.image)


def test_off_until_a_quota_then_throttles_and_recovers_on_removal():
    holder, q = _setup()
    assert not q.enabled and q.produce.record("u", "c", 1e9, 0) == 0
    _publish(holder, q, [(R.CLIENT_QUOTA, _rec([("client-id", "c")], "producer_byte_rate", 1000.0))])
    assert q.enabled and q.produce.enabled and not q.fetch.enabled
    assert q.produce.record("u", "c", 10000, 0) == 0          # 1000/s over the 10 s span
    assert q.produce.record("u", "c", 5000, 0) == 5000
    assert q.produce.record("u", "other", 1e6, 0) == 0        # no quota for that client id
    _publish(holder, q, [(R.CLIENT_QUOTA, _rec([("client-id", "c")], "producer_byte_rate", 0, remove=True))])
    assert q.produce.record("u", "c", 1e6, 0) == 0
    assert q.produce.enabled   # Kafka's quotasEnabled stays on until restart


def test_user_quota_is_shared_by_the_users_clients_and_bounds_change_live():
    holder, q = _setup()
    _publish(holder, q, [(R.CLIENT_QUOTA, _rec([("user", "alice")], "consumer_byte_rate", 100.0))])
    assert q.fetch.record("alice", "a", 1000, 0) == 0
    assert q.fetch.record("alice", "b", 500, 0) > 0          # same sensor: 1500 bytes over 10 s
    assert set(q.fetch.sensors) == {("alice", "")}
    assert q.fetch.max_value_in_window("alice", "x") == 1000.0
    _publish(holder, q, [(R.CLIENT_QUOTA, _rec([("user", "alice")], "consumer_byte_rate", 1e6))])
    assert q.fetch.sensors[("alice", "")].quota.bound == 1e6
    assert q.fetch.record("alice", "a", 1000, 1) == 0


def test_unrecord_and_throttle_metric():
    holder, q = _setup()
    _publish(holder, q, [(R.CLIENT_QUOTA, _rec([("client-id", None)], "consumer_byte_rate", 100.0))])
    t = q.fetch.record("u", "c", 5000, 0)
    assert t > 0
    q.fetch.unrecord("u", "c", 5000, 0)
    q.fetch.throttled("u", "c", t, 0)
    s = q.fetch.sensors[("", "c")]
    assert s.value_total == 0 and s.throttle_total_ms == t and s.throttle.measure(0) == t
    assert q.fetch.record("u", "c", 500, 0) == 0    # what was taken back no longer counts


def test_snapshot_replacing_the_image_is_seen():
    holder, q = _setup()
    other = MetadataImage()
    other = replay(other, [(R.CLIENT_QUOTA, _rec([("user", None)], "request_percentage", 50.0))])
    new = decode_snapshot(encode_snapshot(other))
    delta = MetadataDelta.snapshot(holder.image, new)   # as the broker's _install_snapshot publishes it
    holder.image = delta.apply()
    q.on_metadata_update(delta, holder.image)
    assert q.request.enabled and q.request.record("bob", "c", 1.0, 0) == 0
    assert q.request.sensors[("bob", "")].quota.bound == 50.0


def test_user_of():
    assert user_of("User:alice") == "alice"
    assert user_of("User:CN=x,O=y") == "CN=x,O=y"
    assert user_of("User:ANONYMOUS") == "ANONYMOUS"


@pytest.mark.slow   # wall clock: TimedCoroutine measures real time
def test_timed_coroutine_counts_only_the_handlers_own_steps():
    import time as _time

    import trio

    from kwire.quota.manager import TimedCoroutine

    async def handler():
        t0 = _time.perf_counter()
        while _time.perf_counter() - t0 < 0.02:   # 20 ms of work
            pass
        await trio.sleep(0.2)                     # waiting: not counted
        return "answer"

    async def main():
        timer = TimedCoroutine(handler())
        assert await timer == "answer"
        return timer.spent

    spent = trio.run(main)
    assert 0.02 <= spent < 0.1, spent


@pytest.mark.slow   # wall clock: TimedCoroutine measures real time
def test_timed_coroutine_passes_cancellation_through():
    import trio

    from kwire.quota.manager import TimedCoroutine

    async def main():
        with trio.move_on_after(0.05) as scope:
            await TimedCoroutine(trio.sleep(10))
        return scope.cancelled_caught

    assert trio.run(main)


def test_inactive_client_ids_are_forgotten_entirely():
    """Issue 32: 5,000 clients, each with its own client id, came and went. Their sensors
    expire after an hour without a record (Kafka's inactive sensor expiration), and so must
    what was resolved for each (user, client id): it grew with every client id ever seen."""
    from kwire.quota.manager import INACTIVE_SENSOR_EXPIRATION_MS

    holder, q = _setup()
    _publish(holder, q, [(R.CLIENT_QUOTA, _rec([("client-id", None)], "producer_byte_rate", 1e9))])
    for i in range(5000):
        q.produce.record("", f"burst-client-{i}", 100, 0)
    assert len(q.produce.sensors) == 5000 and len(q.produce._resolved) == 5000
    later = INACTIVE_SENSOR_EXPIRATION_MS + 60_000
    q.produce.record("", "steady", 100, later)
    assert set(q.produce.sensors) == {("", "steady")}
    assert set(q.produce._resolved) == {("", "steady")}
    assert sys.getsizeof(q.produce._resolved) < 1000 and sys.getsizeof(q.produce.sensors) < 1000

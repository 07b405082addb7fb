"""Fault injection: error answers for every API, rule bookkeeping, and the hooks on a live
broker seen by kwire's own wire client."""
import threading

import pytest

from kwire.codec.apis import APIS
from kwire.codec.schema import StructBase
from kwire.errors import ErrorCode
from kwire.testing.client import KafkaWireError
from kwire.testing.faults import Faults, error_response


def _error_codes(obj):
    """Every error_code value in a decoded response, depth first."""
    out = []
    if isinstance(obj, StructBase):
        for name in obj._fields:
            v = getattr(obj, name)
            if name == "error_code":
                out.append(v)
            else:
                out.extend(_error_codes(v))
    elif isinstance(obj, list):
        for x in obj:
            out.extend(_error_codes(x))
    return out


@pytest.mark.parametrize("key", sorted(APIS))
def test_error_answer_for_every_api_and_version_encodes(key):
    api = APIS[key]
    req = api.request.cls()
    for v in range(api.min_version, api.max_version + 1):
        if v not in api.response.valid:
            continue
        resp = error_response(api, v, req, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        back = api.response.decode(api.response.encode(resp, v), v)
        codes = _error_codes(back)
        # An API without any error_code in this version (rare) has nothing to carry it.
        if any(f.name == "error_code" and f.present(v) for f in api.response.fields):
            assert ErrorCode.NOT_LEADER_OR_FOLLOWER in codes, (api.name, v)


def test_produce_error_answer_is_per_partition_and_mirrors_the_request():
    api = APIS[0]
    R = api.request
    req = R.cls(acks=-1, timeout_ms=100, topic_data=[
        R.struct("TopicProduceData")(name="a", partition_data=[
            R.struct("PartitionProduceData")(index=i, records=None) for i in (0, 3)]),
        R.struct("TopicProduceData")(name="b", partition_data=[R.struct("PartitionProduceData")(index=1, records=None)]),
    ])
    resp = api.response.decode(api.response.encode(error_response(api, 9, req, 6), 9), 9)
    got = [(t.name, p.index, p.error_code, p.base_offset) for t in resp.responses for p in t.partition_responses]
    assert got == [("a", 0, 6, -1), ("a", 3, 6, -1), ("b", 1, 6, -1)]


def test_fetch_error_is_per_partition_not_top_level():
    api = APIS[1]
    R = api.request
    req = R.cls(max_wait_ms=0, min_bytes=1, topics=[R.struct("FetchTopic")(topic="t", partitions=[
        R.struct("FetchPartition")(partition=2, fetch_offset=5, partition_max_bytes=100)])])
    resp = error_response(api, 11, req, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert resp.error_code == 0
    p = resp.responses[0].partitions[0]
    assert (resp.responses[0].topic, p.partition_index, p.error_code, p.high_watermark) == ("t", 2, 6, -1)
    assert p.records == b""


def test_delete_topics_names_become_results():
    api = APIS[20]
    resp = error_response(api, 3, api.request.cls(topic_names=["x", "y"], timeout_ms=1), 41)
    assert [(r.name, r.error_code) for r in resp.responses] == [("x", 41), ("y", 41)]


def test_rules_count_down_in_order_and_filter_by_topic():
    f = Faults()
    f.fail_next("Produce", 2, ErrorCode.NOT_ENOUGH_REPLICAS, topic="a")
    f.delay("produce", 0.5, n=None)
    assert f.pending() == 3
    req_a = APIS[0].request.cls(topic_data=[APIS[0].request.struct("TopicProduceData")(name="a")])
    req_b = APIS[0].request.cls(topic_data=[APIS[0].request.struct("TopicProduceData")(name="b")])
    assert f._take(0, req_b).action == "delay"
    assert f._take(0, req_a).action == "fail"
    assert f._take(0, req_a).action == "fail"
    assert f._take(0, req_a).action == "delay"  # the fail rule is used up; delay is forever
    assert f._take(3, req_a) is None
    assert (f.seen("Produce"), f.injected("Produce"), f.seen("Metadata")) == (4, 4, 1)
    f.clear()
    assert f.pending() == 0 and f.seen("Produce") == 0
    with pytest.raises(KeyError):
        f.fail_next("NoSuchApi")
    with pytest.raises(ValueError):
        f.fail_next("Produce", 0)


def test_rules_added_from_many_threads_are_all_kept():
    f = Faults()
    threads = [threading.Thread(target=lambda: [f.fail_next("Fetch") for _ in range(200)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert f.pending() == 800


@pytest.mark.slow
def test_live_broker_fail_delay_drop(kafka_broker, kafka_faults, kafka_topic):
    import time

    kafka_faults.fail_next("Produce", 2, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    for _ in range(2):
        with pytest.raises(KafkaWireError) as info:
            kafka_broker.produce(kafka_topic, [b"x"])
        assert info.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert kafka_broker.produce(kafka_topic, [b"a"]) == [0]  # nothing was written by the failures

    kafka_faults.drop_connections("Produce")
    with pytest.raises(ConnectionError):
        kafka_broker.produce(kafka_topic, [b"lost"])
    kafka_faults.drop_after_handling("Produce")
    with pytest.raises(ConnectionError):
        kafka_broker.produce(kafka_topic, [b"b"])  # written, answer lost
    assert [r.value for r in kafka_broker.consume(kafka_topic, 2)] == [b"a", b"b"]

    kafka_faults.delay("Fetch", 0.25)
    t0 = time.monotonic()
    kafka_broker.consume(kafka_topic, 1)
    assert time.monotonic() - t0 >= 0.25
    assert kafka_faults.pending() == 0


@pytest.mark.slow
def test_confluent_consumer_retries_injected_fetch_errors(kafka_broker, kafka_faults, kafka_topic):
    ck = pytest.importorskip("confluent_kafka")
    kafka_broker.produce(kafka_topic, [b"f1"])
    kafka_faults.fail_next("Fetch", 2, ErrorCode.NOT_LEADER_OR_FOLLOWER, topic=kafka_topic)
    c = ck.Consumer({"bootstrap.servers": kafka_broker.bootstrap_servers, "group.id": kafka_topic,
                     "auto.offset.reset": "earliest", "log_level": 0})
    try:
        c.assign([ck.TopicPartition(kafka_topic, 0, 0)])
        got = None
        for _ in range(100):
            m = c.poll(0.2)
            if m is not None and not m.error():
                got = m.value()
                break
    finally:
        c.close()
    assert got == b"f1"
    assert kafka_faults.injected("Fetch") == 2

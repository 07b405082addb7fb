"""kafka-python and aiokafka against a running kwire."""
import asyncio
import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

pytestmark = pytest.mark.slow

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_produce_consume(bootstrap, topic, codec):
    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, acks="all", linger_ms=5)
    futs = [p.send(topic, key=f"k{i}".encode(), value=f"value-{i}".encode() * (i % 7),
                   headers=[("n", str(i).encode())]) for i in range(300)]
    p.flush(30)
    offsets = [f.get(10).offset for f in futs]
    assert sorted(offsets) == list(range(300))
    p.send(topic, key=b"tomb", value=None).get(10)
    p.send(topic, key=b"", value=b"", timestamp_ms=1_500_000_000_000).get(10)
    p.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False,
                      consumer_timeout_ms=10000)
    c.assign([TopicPartition(topic, 0)])
    c.seek_to_beginning()
    got = []
    deadline = time.monotonic() + 30
    while len(got) < 302 and time.monotonic() < deadline:
        for recs in c.poll(1000).values():
            got.extend(recs)
    c.close()
    assert [r.value for r in got[:300]] == [f"value-{i}".encode() * (i % 7) for i in range(300)]
    assert got[5].headers == [("n", b"5")]
    assert got[300].value is None and got[300].key == b"tomb"
    assert got[301].value == b"" and got[301].key == b"" and got[301].timestamp == 1_500_000_000_000


def test_kafka_python_admin_and_offsets(bootstrap, topic):
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 3, 1)])
    assert topic in admin.list_topics()
    p = KafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=False)  # the plain, non-idempotent producer
    for i in range(30):
        p.send(topic, value=b"x", partition=i % 3, timestamp_ms=1_000_000 + i)
    p.flush(10)
    p.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    tps = [TopicPartition(topic, i) for i in range(3)]
    assert c.end_offsets(tps) == {tp: 10 for tp in tps}
    assert c.beginning_offsets(tps) == {tp: 0 for tp in tps}
    res = c.offsets_for_times({tps[0]: 1_000_000 + 10})
    assert res[tps[0]].offset == 4  # timestamps 1_000_000, +3, +6, +9, +12 -> fifth record
    c.close()
    admin.delete_topics([topic])
    assert topic not in admin.list_topics()
    admin.close()


def test_aiokafka_produce_consume(bootstrap, topic):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    async def main():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip", acks="all")
        await p.start()
        try:
            for i in range(100):
                await p.send_and_wait(topic, key=b"k", value=f"{i}".encode(), headers=[("a", b"b")])
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, group_id=None)
        await c.start()
        got = []
        try:
            async def take():
                async for m in c:
                    got.append(m)
                    if len(got) == 100:
                        return
            await asyncio.wait_for(take(), 30)
        finally:
            await c.stop()
        return got

    got = asyncio.run(main())
    assert [m.value for m in got] == [f"{i}".encode() for i in range(100)]
    assert got[0].headers == (("a", b"b"),) or list(got[0].headers) == [("a", b"b")]

"""Members' racks with stock clients: librdkafka's client.rack reaches the coordinator as the
member's rack id (ConsumerGroupHeartbeat RackId, shown by ConsumerGroupDescribe), and the
rack-aware uniform assignor (kwire.groups.assignors.Racks) stays balanced. On one broker every
partition has the same rack, so Kafka's rule turns the rack strategy off; the rack placement
itself is tested on the state machine (tests/groups/test_rack_aware_assignors.py)."""
import time
import uuid

from confluent_kafka import Consumer
import pytest

from kwire.testing import Broker

pytestmark = pytest.mark.slow


def test_client_rack_reaches_the_group():
    overrides = {"kwire.emulate.kafka.version": "4.0", "broker.rack": "r0",
                 "group.consumer.heartbeat.interval.ms": 200, "group.consumer.min.heartbeat.interval.ms": 100}
    with Broker(mode="thread", overrides=overrides) as b:
        b.create_topic("racked", partitions=4)
        group = f"rk-{uuid.uuid4().hex[:6]}"
        cs = [Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": group, "group.protocol": "consumer",
                        "client.rack": rack, "auto.offset.reset": "earliest"}) for rack in ("r0", "r1")]
        try:
            for c in cs:
                c.subscribe(["racked"])
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                for c in cs:
                    c.poll(0.05)
                if sorted(len(c.assignment()) for c in cs) == [2, 2]:
                    break
            assert sorted(tp.partition for c in cs for tp in c.assignment()) == [0, 1, 2, 3]
            with b.client() as w:
                d = w.request("ConsumerGroupDescribe", 1, group_ids=[group], include_authorized_operations=False)
            assert sorted(m.rack_id for m in d.groups[0].members) == ["r0", "r1"]
        finally:
            for c in cs:
                c.close()

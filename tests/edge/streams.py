"""A KafkaServer driven over Trio memory streams: no sockets, and (with ``MockClock``) no
real time. ``open_server`` gives a broker of one node on a temporary data dir and its server; ``Client``
speaks to a server stream through kwire.connection's client side."""
from __future__ import annotations

import math
import time
from contextlib import asynccontextmanager, contextmanager

import trio
import trio.testing

from kwire.broker import Broker
from kwire.codec import records as RB
from kwire.codec.apis import api
from kwire.config import BrokerConfig
from kwire.connection import NEED_DATA, KafkaClientConnection
from kwire.server import KafkaServer


@contextmanager
def _real_time():
    """Under a MockClock, let time run at the real rate with no jumps: the broker's start-up
    waits on worker threads (Raft fsync, log creation) that the clock cannot see, and a jump
    meanwhile fires start-up timeouts on a loaded machine."""
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, trio.testing.MockClock):
        yield
        return
    saved = clock.rate, clock.autojump_threshold
    clock.rate, clock.autojump_threshold = 1.0, math.inf
    try:
        yield
    finally:
        clock.rate, clock.autojump_threshold = saved


@asynccontextmanager
async def open_server(data_dir, **overrides):
    cfg = BrokerConfig.from_properties("", {"log.dirs": str(data_dir),
                                            **{k: str(v) for k, v in overrides.items()}})
    broker = Broker(cfg)
    try:
        async with trio.open_nursery() as nursery:
            with _real_time():
                await broker.open(nursery)
                server = KafkaServer(broker)
                await server.start_background(nursery)
            nursery.start_soon(server.watch_connections)  # accept() starts it in a served broker
            yield Harness(server, nursery)
            nursery.cancel_scope.cancel()
    finally:
        broker.close()


class Harness:
    def __init__(self, server: KafkaServer, nursery):
        self.server = server
        self.nursery = nursery

    def connect(self, peer: str = "10.0.0.1:40000", lockstep: bool = False):
        """A client stream whose other end the server serves (in the broker's nursery)."""
        pair = trio.testing.lockstep_stream_pair if lockstep else trio.testing.memory_stream_pair
        client, server_side = pair()
        self.nursery.start_soon(self.server.serve_connection, server_side, peer)
        return client


class Client:
    def __init__(self, stream):
        self.stream = stream
        self.conn = KafkaClientConnection("streams-test")

    async def request(self, api_name: str, version: int, **fields):
        a = api(api_name)
        corr, data = self.conn.send_request(a, version, a.request.cls(**fields))
        await self.stream.send_all(data)
        return await self.response(corr)

    async def response(self, corr: int):
        while (ev := self.conn.next_response()) is NEED_DATA:
            data = await self.stream.receive_some(1 << 20)
            self.conn.receive_data(data)
        assert ev.correlation_id == corr
        return ev.body

    async def create_topic(self, name: str, partitions: int = 1):
        R = api("CreateTopics").request
        t = R.struct("CreatableTopic")(name=name, num_partitions=partitions, replication_factor=1, configs=[])
        resp = await self.request("CreateTopics", 4, topics=[t], timeout_ms=5000)
        assert resp.topics[0].error_code == 0, resp

    async def produce(self, topic: str, values: list[bytes], partition: int = 0):
        R = api("Produce").request
        batch = RB.build_batch([(None, v, [], int(time.time() * 1000)) for v in values])
        pd = R.struct("PartitionProduceData")(index=partition, records=batch)
        return await self.request("Produce", 9, transactional_id=None, acks=-1, timeout_ms=5000,
                                  topic_data=[R.struct("TopicProduceData")(name=topic, partition_data=[pd])])

    async def fetch(self, topic: str, offset: int = 0, partition: int = 0):
        R = api("Fetch").request
        ft = R.struct("FetchTopic")(topic=topic, partitions=[R.struct("FetchPartition")(
            partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)])
        return await self.request("Fetch", 11, replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=8 << 20,
                                  isolation_level=0, session_id=0, session_epoch=-1, topics=[ft],
                                  forgotten_topics_data=[], rack_id="")


async def closed_by_server(stream) -> bool:
    """True once the server closed its side (reads EOF)."""
    try:
        while True:
            data = await stream.receive_some(1 << 16)
            if not data:
                return True
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return True

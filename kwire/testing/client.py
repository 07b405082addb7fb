"""A small blocking Kafka client on kwire's own codec: enough to create topics and produce or
consume a few records in a test, with no client library installed.

Not a general client: one connection to one broker (kwire's single node), no retries beyond
waiting for records, no consumer groups.
"""
from __future__ import annotations

import socket
import time

from kwire.codec.apis import api
from kwire.codec.records import build_batch, iter_batches
from kwire.connection import NEED_DATA, KafkaClientConnection
from kwire.errors import ErrorCode

class KafkaWireError(Exception):
    def __init__(self, what: str, code: int):
        try:
            name = ErrorCode(code).name
        except ValueError:
            name = str(code)
        super().__init__(f"{what}: {name}")
        self.code = code


def _as_bytes(v) -> bytes | None:
    if v is None or isinstance(v, bytes):
        return v
    if isinstance(v, (bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, str):
        return v.encode()
    raise TypeError(f"record keys and values are bytes, str or None, not {type(v).__name__}")


class WireClient:
    """``create_topic``, ``produce``, ``consume`` over one socket to ``bootstrap``."""

    # Versions every client of kwire's era speaks, and kwire serves.
    V_METADATA = 8
    V_CREATE = 4
    V_DELETE = 3
    V_PRODUCE = 8
    V_FETCH = 11

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str = "kwire-testing"):
        host, port = bootstrap.rsplit(":", 1)
        self.timeout = timeout
        self.client_id = client_id
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn = KafkaClientConnection(client_id)

    # ------------------------------------------------------------------ plumbing
    def request(self, api_name: str, version: int, **fields):
        a = api(api_name)
        corr, data = self.conn.send_request(a, version, a.request.cls(**fields))
        self.sock.sendall(data)
        resp = self._next(self.conn.next_response)
        if resp.correlation_id != corr:
            raise RuntimeError(f"correlation id {resp.correlation_id} answers request {corr}")
        return resp.body

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are (hand-made or malformed frames)."""
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        """One response frame, without its size prefix."""
        return self._next(self.conn.next_frame)

    def _next(self, next_event):
        """The read loop: events until one is ready (a closed connection raises ConnectionError)."""
        while (ev := next_event()) is NEED_DATA:
            data = self.sock.recv(256 * 1024)
            if not data:
                raise ConnectionError("connection closed by the broker")
            self.conn.receive_data(data)
        return ev

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ topics
    def partitions(self, topic: str) -> list[int]:
        T = api("Metadata").request.struct("MetadataRequestTopic")
        resp = self.request("Metadata", self.V_METADATA, topics=[T(name=topic)], allow_auto_topic_creation=False)
        for t in resp.topics:
            if t.name == topic:
                if t.error_code:
                    raise KafkaWireError(f"metadata for {topic}", t.error_code)
                return sorted(p.partition_index for p in t.partitions)
        raise KafkaWireError(f"metadata for {topic}", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None, *,
                     exist_ok: bool = False) -> None:
        R = api("CreateTopics").request
        C = R.struct("CreatableTopicConfig")
        topic = R.struct("CreatableTopic")(
            name=name, num_partitions=partitions, replication_factor=1,
            configs=[C(name=k, value=None if v is None else str(v).lower() if isinstance(v, bool) else str(v))
                     for k, v in (config or {}).items()])
        resp = self.request("CreateTopics", self.V_CREATE, topics=[topic], timeout_ms=int(self.timeout * 1000))
        for t in resp.topics:
            if t.error_code and not (exist_ok and t.error_code == ErrorCode.TOPIC_ALREADY_EXISTS):
                raise KafkaWireError(f"create topic {name}" + (f" ({t.error_message})" if t.error_message else ""),
                                     t.error_code)

    def delete_topic(self, name: str) -> None:
        resp = self.request("DeleteTopics", self.V_DELETE, topic_names=[name], timeout_ms=int(self.timeout * 1000))
        for t in resp.responses:
            if t.error_code:
                raise KafkaWireError(f"delete topic {name}", t.error_code)

    # ------------------------------------------------------------------ records
    def produce(self, topic: str, records, partition: int = 0, *, acks: int = -1) -> list[int]:
        """Append ``records`` (values, or ``(key, value)`` / ``(key, value, headers)`` tuples;
        bytes or str) as one batch; returns their offsets."""
        now = int(time.time() * 1000)
        items = []
        for r in records:
            if isinstance(r, tuple):
                key, value = _as_bytes(r[0]), _as_bytes(r[1])
                headers = [(hk, _as_bytes(hv)) for hk, hv in (r[2] if len(r) > 2 else ())]
            else:
                key, value, headers = None, _as_bytes(r), []
            items.append((key, value, headers, now))
        if not items:
            return []
        R = api("Produce").request
        pd = R.struct("PartitionProduceData")(index=partition, records=build_batch(items))
        td = R.struct("TopicProduceData")(name=topic, partition_data=[pd])
        resp = self.request("Produce", self.V_PRODUCE, transactional_id=None, acks=acks,
                            timeout_ms=int(self.timeout * 1000), topic_data=[td])
        pr = resp.responses[0].partition_responses[0]
        if pr.error_code:
            raise KafkaWireError(f"produce to {topic}-{partition}", pr.error_code)
        return list(range(pr.base_offset, pr.base_offset + len(items)))

    def consume(self, topic: str, n: int, partition: int | None = 0, *, offset: int = 0,
                timeout: float | None = None) -> list:
        """Read at least ``n`` records (from ``offset`` of ``partition``, or from every
        partition when ``partition`` is None), waiting up to ``timeout`` seconds for them;
        returns the first ``n`` as :class:`kwire.codec.records.Record` (``.key``, ``.value``,
        ``.offset``, ``.headers``) in partition then offset order."""
        timeout = self.timeout if timeout is None else timeout
        parts = self.partitions(topic) if partition is None else [partition]
        positions = {p: offset for p in parts}
        got: dict[int, list] = {p: [] for p in parts}
        R = api("Fetch").request
        FT, FP = R.struct("FetchTopic"), R.struct("FetchPartition")
        deadline = time.monotonic() + timeout
        while sum(len(v) for v in got.values()) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                have = sum(len(v) for v in got.values())
                raise TimeoutError(f"consumed {have} of {n} records from {topic} within {timeout}s")
            ft = FT(topic=topic, partitions=[FP(partition=p, fetch_offset=positions[p], partition_max_bytes=1 << 20)
                                            for p in parts])
            resp = self.request("Fetch", self.V_FETCH, replica_id=-1, max_wait_ms=int(min(left, 0.5) * 1000),
                                min_bytes=1, max_bytes=8 << 20, isolation_level=0, session_id=0,
                                session_epoch=-1, topics=[ft], forgotten_topics_data=[], rack_id="")
            for t in resp.responses:
                for pdata in t.partitions:
                    if pdata.error_code:
                        raise KafkaWireError(f"fetch {topic}-{pdata.partition_index}", pdata.error_code)
                    data = pdata.records
                    if not data:
                        continue
                    p = pdata.partition_index
                    for batch in iter_batches(bytes(data), allow_partial_tail=True):
                        if batch.is_control:
                            positions[p] = batch.next_offset
                            continue
                        for rec in batch.records():
                            if rec.offset >= positions[p]:
                                got[p].append(rec)
                        positions[p] = max(positions[p], batch.next_offset)
        out = [r for p in parts for r in got[p]]
        return out[:n]

"""Batches as librdkafka (confluent-kafka) really writes them, for every compression.type.

A tiny capture broker inside the test (plain sockets on 127.0.0.1, one thread per
connection) answers ApiVersions and Metadata with kwire's own frame codec and schemas and
captures each Produce request's records field, decoded with kwire's Produce schema. The
captured batches are then parsed by kwire.codec.records: header, CRC, records.
"""
from __future__ import annotations

import socket
import threading
import time

import pytest

from kwire.codec import frame as FR
from kwire.codec.apis import APIS
from kwire.codec.records import RecordBatch, iter_batches
from kwire.errors import CodecError

confluent_kafka = pytest.importorskip("confluent_kafka")

PRODUCE, METADATA, API_VERSIONS = 0, 3, 18
SERVED = (PRODUCE, METADATA, API_VERSIONS)
CODEC_NUMBERS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


class CaptureBroker:
    """Answers just enough of the protocol for a producer; keeps every Produce records blob."""

    def __init__(self):
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.captured: list[tuple[str, int, bytes, int]] = []  # topic, partition, records, version
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.closed = False
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self):
        self.closed = True
        self.listener.close()
        for c in list(self.conns):
            try:
                c.close()
            except OSError:
                pass

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        decoder = FR.FrameDecoder()
        conn.settimeout(30)
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                decoder.feed(data)
                while True:
                    frame = decoder.next_frame()
                    if frame is FR.NEED_DATA:
                        break
                    reply = self._handle(frame)
                    if reply is not None:
                        conn.sendall(reply)
        except (OSError, socket.timeout):
            return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)
        finally:
            conn.close()

    def _handle(self, frame):
        try:
            req = FR.decode_request(frame)
        except CodecError as exc:
            hdr = getattr(exc, "header", None)
            if hdr is not None and hdr.api_key == API_VERSIONS:
                return self._api_versions(0, hdr.correlation_id, error=35)
            raise
        h = req.header
        if h.api_key == API_VERSIONS:
            return self._api_versions(h.api_version, h.correlation_id)
        if h.api_key == METADATA:
            return self._metadata(req)
        if h.api_key == PRODUCE:
            return self._produce(req)
        raise AssertionError(f"unexpected request {h.api_key} v{h.api_version}")

    def _api_versions(self, version, corr, error=0):
        api = APIS[API_VERSIONS]
        ApiVersion = api.response.struct("ApiVersion")
        # advertise every API kwire has schemas for (librdkafka derives features such as
        # message format v2 from several of them: Produce v3 *and* Fetch v4); only the three
        # a producer needs are answered here
        keys = [ApiVersion(api_key=k, min_version=a.min_version, max_version=a.max_version)
                for k, a in APIS.items()]
        body = api.response(error_code=error, api_keys=keys)
        return FR.join_parts(FR.encode_response(api, version, corr, body))

    def _metadata(self, req):
        api = APIS[METADATA]
        R = api.response
        v = req.header.api_version
        names = [t.name for t in (req.body.topics or [])]
        broker = R.struct("MetadataResponseBroker")(node_id=0, host="127.0.0.1", port=self.port)
        topics = []
        for name in names:
            part = R.struct("MetadataResponsePartition")(
                error_code=0, partition_index=0, leader_id=0, leader_epoch=0,
                replica_nodes=[0], isr_nodes=[0])
            topics.append(R.struct("MetadataResponseTopic")(error_code=0, name=name,
                                                             partitions=[part]))
        body = R(brokers=[broker], cluster_id="capture", controller_id=0, topics=topics)
        return FR.join_parts(FR.encode_response(api, v, req.header.correlation_id, body))

    def _produce(self, req):
        api = APIS[PRODUCE]
        R = api.response
        v = req.header.api_version
        responses = []
        for topic in req.body.topic_data:
            parts = []
            for pd in topic.partition_data:
                with self.lock:
                    self.captured.append((topic.name, pd.index, bytes(pd.records), v))
                parts.append(R.struct("PartitionProduceResponse")(index=pd.index, error_code=0,
                                                                  base_offset=0))
            responses.append(R.struct("TopicProduceResponse")(name=topic.name,
                                                             partition_responses=parts))
        if req.body.acks == 0:
            return None
        body = R(responses=responses)
        return FR.join_parts(FR.encode_response(api, v, req.header.correlation_id, body))


@pytest.fixture
def broker():
    b = CaptureBroker()
    yield b
    b.close()


def _messages(codec: str):
    out = []
    for i in range(40):
        key = None if i % 7 == 0 else f"{codec}-key-{i}".encode()
        value = None if i % 11 == 5 else (f"value {i} " * (i % 9 + 1)).encode()
        headers = [("idx", str(i).encode()), ("empty", b"")] if i % 3 == 0 else []
        out.append((key, value, headers, 1_700_000_000_000 + i * 3))
    return out


def test_confluent_kafka_batches_parse_in_kwire(broker):
    expected = {}
    for codec in CODEC_NUMBERS:
        topic = f"cap-{codec}"
        msgs = _messages(codec)
        expected[topic] = (codec, msgs)
        producer = confluent_kafka.Producer({
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "compression.type": codec,
            "linger.ms": 20,
            "enable.idempotence": False,
            "message.timeout.ms": 20000,
            "socket.timeout.ms": 10000,
        })
        delivered = []
        for key, value, headers, ts in msgs:
            producer.produce(topic, value=value, key=key, headers=headers or None,
                             partition=0, timestamp=ts,
                             on_delivery=lambda err, msg: delivered.append(err))
        t0 = time.monotonic()
        remaining = producer.flush(20)
        assert remaining == 0, f"{codec}: {remaining} messages undelivered after {time.monotonic() - t0:.1f}s"
        assert delivered == [None] * len(msgs)
    assert not broker.errors, broker.errors

    for topic, (codec, msgs) in expected.items():
        got = []
        blobs = [rec for (t, p, rec, v) in broker.captured if t == topic]
        assert blobs, topic
        for blob in blobs:
            for batch in iter_batches(blob):
                batch.validate()
                batch.validate_crc()
                assert batch.compression == CODEC_NUMBERS[codec], (topic, batch)
                assert batch.magic == 2 and batch.timestamp_type == 0
                assert batch.record_count == batch.last_offset_delta + 1
                recs = list(batch.records())
                assert [r.offset for r in recs] == list(range(len(recs)))
                got.extend((r.key, r.value, r.headers, r.timestamp) for r in recs)
        assert got == msgs, topic


def test_capture_broker_rejects_corrupted_capture(broker):
    """The same path notices a flipped byte: the CRC check is real."""
    producer = confluent_kafka.Producer({"bootstrap.servers": f"127.0.0.1:{broker.port}",
                                         "compression.type": "none", "linger.ms": 5})
    producer.produce("cap-crc", value=b"payload" * 10, key=b"k", partition=0)
    assert producer.flush(20) == 0
    (blob,) = [rec for (t, p, rec, v) in broker.captured if t == "cap-crc"]
    batch = RecordBatch(blob)
    batch.validate_crc()
    bad = bytearray(blob)
    bad[-3] ^= 0x40
    assert not RecordBatch(bad).crc_valid()

"""Kafka-version emulation: what the old message formats cost (kwire.codec.legacy_records).

A broker in this process (kwire.testing.Broker, thread mode, emulating Kafka 3.9) holds 10,000
records of 1 KB in v2 batches of 100 (stored with the codec given). One client on one socket
reads them all from offset 0, 1 MiB per request, with Fetch v12 (v2 batches, sent with sendfile)
and with Fetch v3 (down-converted to message format v1 in the broker: a read, a decode and an
encode per record, no sendfile); MB/s of record values, best of the rounds. The issue's goal:
v3 at least 0.2 of v12. Uncompressed v3 is measured twice: with the C walk
(kwire/codec/_downconvert.c, when built) and with the pure-Python walk it replaces. Also the produce side: 10,000 x 1 KB records in requests of 100 as
Produce v2 message sets (converted to v2 batches on append) against Produce v9 batches.

``python -m bench emulation`` runs it alone.
"""
from __future__ import annotations

import socket
import struct
import time

from kwire.codec import frame as FR
from kwire.codec import legacy_records as L
from kwire.codec.apis import api
from kwire.codec.records import build_batch, iter_batches
from kwire.errors import KafkaError

N = 10_000
VALUE = 1000
PER_BATCH = 100
MAX_PARTITION_BYTES = 1 << 20


class _Sock:
    def __init__(self, bootstrap: str):
        host, port = bootstrap.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=30)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0

    def call(self, a, version, body):
        self.corr += 1
        self.s.sendall(FR.encode_request(a, version, self.corr, body, "bench"))
        head = self._read(4)
        frame = self._read(struct.unpack(">i", head)[0])
        return FR.decode_response(a, version, frame)[1]

    def _read(self, n):
        buf = bytearray()
        while len(buf) < n:
            got = self.s.recv(n - len(buf))
            if not got:
                raise ConnectionError("closed")
            buf += got
        return bytes(buf)

    def close(self):
        self.s.close()


def _next_offset_v2(records) -> int:
    last = -1
    for b in iter_batches(records, allow_partial_tail=True):
        last = b.base_offset + b.last_offset_delta
    return last + 1


def _next_offset_message_set(records) -> int:
    """The offset after the last whole message (v1: a wrapper carries its last inner offset)."""
    view = memoryview(records)
    pos, last = 0, -1
    while pos + 12 <= len(view):
        offset, size = struct.unpack_from(">qi", view, pos)
        if pos + 12 + size > len(view):
            break
        last = offset
        pos += 12 + size
    return last + 1


def _read_all(bootstrap: str, topic: str, version: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process: the broker's and the client's)."""
    c0 = time.process_time()
    wall = _read_all_wall(bootstrap, topic, version)
    return wall, time.process_time() - c0


def _read_all_wall(bootstrap: str, topic: str, version: int) -> float:
    a = api("Fetch")
    R = a.request
    s = _Sock(bootstrap)
    offset, t0 = 0, time.perf_counter()
    next_offset = _next_offset_v2 if version >= 4 else _next_offset_message_set
    try:
        while offset < N:
            part = R.struct("FetchPartition")(partition=0, fetch_offset=offset, partition_max_bytes=MAX_PARTITION_BYTES)
            body = R.cls(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=MAX_PARTITION_BYTES, isolation_level=0,
                         session_id=0, session_epoch=-1, topics=[R.struct("FetchTopic")(topic=topic, partitions=[part])])
            resp = s.call(a, version, body)
            records = resp.responses[0].partitions[0].records
            got = next_offset(bytes(records))
            if got <= offset:
                raise RuntimeError(f"Fetch v{version} made no progress at offset {offset}")
            offset = got
    finally:
        s.close()
    return time.perf_counter() - t0


def _produce_all(bootstrap: str, topic: str, version: int, codec: int) -> float:
    from kafka.record.legacy_records import LegacyRecordBatchBuilder

    a = api("Produce")
    R = a.request
    import random
    rnd = random.Random(7)   # text-like values: gzip halves them, as it does real payloads
    words = [bytes(rnd.choices(b"abcdefghijklmnopqrstuvwxyz", k=rnd.randint(2, 9))) for _ in range(500)]
    values = [b" ".join(rnd.choices(words, k=400))[:VALUE] for _ in range(PER_BATCH * 2)]
    payloads = []
    for start in range(0, N, PER_BATCH):
        if version >= 3:
            payloads.append(build_batch([(b"k%d" % i, values[i % len(values)], [], 1_700_000_000_000)
                                         for i in range(start, start + PER_BATCH)], compression=codec))
        else:
            b = LegacyRecordBatchBuilder(magic=1, compression_type=codec, batch_size=1 << 22)
            for i in range(PER_BATCH):
                b.append(i, timestamp=1_700_000_000_000, key=b"k%d" % (start + i),
                         value=values[(start + i) % len(values)])
            payloads.append(bytes(b.build()))
    s = _Sock(bootstrap)
    t0 = time.perf_counter()
    try:
        for p in payloads:
            pd = R.struct("PartitionProduceData")(index=0, records=p)
            resp = s.call(a, version, R.cls(transactional_id=None, acks=1, timeout_ms=10000,
                                            topic_data=[R.struct("TopicProduceData")(name=topic, partition_data=[pd])]))
            code = resp.responses[0].partition_responses[0].error_code
            if code:
                raise RuntimeError(f"Produce v{version}: error {code}")
    finally:
        s.close()
    return time.perf_counter() - t0


def run(quick: bool = False) -> list[tuple]:
    from kwire.testing import Broker

    rounds = 2 if quick else 4
    rows: list[tuple] = []
    mb = N * VALUE / 1e6

    def row(name, value, unit, budget=None, ok=None):
        verdict = "info" if ok is None else ("PASS" if ok else "MISS")
        rows.append((name, round(value, 3), unit, budget or "-", verdict))
        print(f"{name:58s} {value:12,.2f} {unit:8s} {budget or '-':12s} {verdict}", flush=True)

    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "3.9"}) as b:
        for codec, cname in ((0, "none"), (1, "gzip")):
            topic = f"emu-{cname}"
            b.create_topic(topic, 1)
            produced = {}
            for version in (9, 2):
                b.create_topic(f"{topic}-p{version}", 1)
                try:
                    produced[version] = mb / _produce_all(b.bootstrap_servers, f"{topic}-p{version}", version, codec)
                except (ConnectionError, OSError, RuntimeError, KafkaError):   # a kwire without formats v0/v1
                    produced[version] = None
            # the data every fetch reads: v2 batches of 100 records
            _produce_all(b.bootstrap_servers, topic, 9, codec)
            # v3 twice: through the C walk (kwire/codec/_downconvert.c) and the pure-Python one
            # ("3py": the broker runs in this process, so switching the module's hook switches it)
            kinds = (12, 3, "3py") if codec == 0 and L._plain_c is not None else (12, 3)
            best = {k: 0.0 for k in kinds}
            cpu = {k: float("inf") for k in kinds}
            c_walk = L._plain_c
            for _ in range(rounds):
                for kind in kinds:
                    version = 3 if kind == "3py" else kind
                    L._plain_c = None if kind == "3py" else c_walk
                    try:
                        wall, used = _read_all(b.bootstrap_servers, topic, version)
                    except (ConnectionError, OSError, KafkaError):
                        best[kind] = None
                        continue
                    finally:
                        L._plain_c = c_walk
                    best[kind] = max(best[kind], mb / wall)
                    cpu[kind] = min(cpu[kind], used)
            row(f"fetch v12 10,000 x 1 KB ({cname}, sendfile)", best[12], "MB/s")
            if best[3] is None:
                rows.append((f"fetch v3 ({cname})", 0, "-", "-", "n/a"))
                continue
            row(f"fetch v3 10,000 x 1 KB ({cname}, down-converted)", best[3], "MB/s")
            ratio = best[3] / best[12]
            if codec:   # v12 sends the compressed bytes as stored; v3 decompresses and recompresses
                row(f"fetch v3 / v12 ({cname})", ratio, "ratio")
            else:
                row(f"fetch v3 / v12 ({cname})", ratio, "ratio", ">= 0.2", ratio >= 0.2)
            row(f"fetch v3 / v12 CPU seconds, broker + client ({cname})", cpu[12] / cpu[3], "ratio")
            if "3py" in best and best["3py"]:
                row(f"fetch v3 10,000 x 1 KB ({cname}, Python walk, no C)", best["3py"], "MB/s")
                row(f"fetch v3 / v12 ({cname}, Python walk, no C)", best["3py"] / best[12], "ratio")
            row(f"produce v9 10,000 x 1 KB in 100 batches ({cname})", produced[9], "MB/s")
            if produced[2] is not None:
                row(f"produce v2 message sets, converted ({cname})", produced[2], "MB/s")
    return rows


if __name__ == "__main__":
    run()

"""The fast read path of the ``kwire`` source: Fetch requests of its own to a partition's leader,
and the record batches of each answer turned into Arrow buffers in C
(``kwire.log._walk.fetch_columns``), with no Python object per record.

librdkafka's consumer builds a Python ``Message`` per record; at 100 B - 1 KB records that
costs more than everything else on a Spark task's read (bench/README.md, "Spark"). This path
reads as a Kafka consumer does without a group - Fetch v11 (Kafka 2.3+; Kafka 4.x serves
v4-v17) with no fetch session, to the partition's leader - and hands the raw answer to C. The
leader is the one the driver's metadata named when it planned the range (``Range.leader``), so
that a task on this path needs no librdkafka client at all (a Python worker's first task would
otherwise import confluent-kafka and wait for a connection and a Metadata answer first); without
one (``assign`` queries), the pooled consumer's metadata names it.

It takes only the common case and gives the rest back: ``read`` returns the offset where it
stopped, and ``kwire.spark.consume.read_range`` reads on from there through librdkafka, which
keeps every semantic (data loss and ``failOnDataLoss``, leader changes and retries, read
committed, headers, TLS and SASL, timeouts). It stops at any error code, a lost connection, a
batch C does not take, an answer with no records, or a leader it cannot find. Used when
``_walk`` has the functions (a C build), the connection is PLAINTEXT, the isolation level is
read_uncommitted and headers are not asked for.

pyarrow (~100 ms) is imported where the Arrow buffers are made, as in kwire.spark.consume.
"""
from __future__ import annotations

import logging
import socket
import struct
from typing import Iterator

log = logging.getLogger("kwire.spark")

fetch_columns = records_columns = None   # kwire.log._walk's, once _load() found them


def _load() -> bool:
    """Import the C walk on first use: importing kwire.log costs 0.2-0.3 s, which the Python
    processes that only plan (the driver's planner and streaming runners) need not pay."""
    global fetch_columns, records_columns
    if fetch_columns is None:
        try:
            from kwire.log._walk import fetch_columns, records_columns  # noqa: PLC0415 - start-up time: see _load
        except ImportError:   # no C build, or an older one: librdkafka reads everything
            return False
    return True

FETCH_KEY, FETCH_VERSION = 1, 11
# Bytes asked per partition per Fetch: large answers make few round trips (librdkafka's
# default is 1 MiB); kafka.max.partition.fetch.bytes / kafka.fetch.max.bytes set them.
PARTITION_MAX_BYTES = 8 << 20
MAX_BYTES = 50 << 20   # fetch.max.bytes's default, Kafka's and librdkafka's

_SOCKS: dict[tuple, socket.socket] = {}
_CORR = [0]


def usable(client: dict, include_headers: bool) -> bool:
    """Whether this path can read for a query with these consumer settings."""
    if include_headers or not _load():
        return False
    if str(client.get("security.protocol", "plaintext")).lower() != "plaintext":
        return False
    return str(client.get("isolation.level", "read_uncommitted")).lower() == "read_uncommitted"


class _Stop(Exception):
    """This path reads no further; librdkafka goes on from the position."""


def _request(topic: str, partition: int, offset: int, max_wait_ms: int, partition_max: int,
             max_bytes: int, client_id: bytes) -> tuple[int, bytes]:
    """A FetchRequest v11 frame (request header v1): one partition, no fetch session."""
    _CORR[0] = (_CORR[0] + 1) & 0x7FFFFFFF
    t = topic.encode()
    body = b"".join((
        struct.pack(">hhih", FETCH_KEY, FETCH_VERSION, _CORR[0], len(client_id)), client_id,
        # replica_id, max_wait_ms, min_bytes, max_bytes, isolation_level (read_uncommitted),
        # session_id 0 and epoch -1 (no session), one topic
        struct.pack(">iiiibiii", -1, max_wait_ms, 1, max_bytes, 0, 0, -1, 1),
        struct.pack(">h", len(t)), t,
        # one partition: current_leader_epoch -1 (unknown), fetch_offset, log_start_offset -1
        struct.pack(">iiiqqi", 1, partition, -1, offset, -1, partition_max),
        struct.pack(">ih", 0, 0),   # no forgotten topics, rack_id ""
    ))
    return _CORR[0], struct.pack(">i", len(body)) + body


def _recv_exact(sock: socket.socket, n: int) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if not k:
            raise ConnectionError("the broker closed the connection")
        got += k
    return buf


def parse_response(frame, corr: int, topic: str, partition: int) -> tuple[int, int, memoryview | None]:
    """(error_code, high_watermark, records) of one partition from a FetchResponse v11 frame
    (correlation id first, no size prefix). Raises _Stop on anything unexpected."""
    mv = memoryview(frame)
    got, _throttle, err, _session, ntopics = struct.unpack_from(">iihii", mv, 0)
    if got != corr:
        raise _Stop(f"answer {got} to request {corr}")
    if err:
        return err, -1, None
    pos = 18
    for _ in range(ntopics):
        (tlen,) = struct.unpack_from(">h", mv, pos)
        name = bytes(mv[pos + 2:pos + 2 + tlen]).decode()
        pos += 2 + tlen
        (nparts,) = struct.unpack_from(">i", mv, pos)
        pos += 4
        for _ in range(nparts):
            p, perr, hw, _lso, _lstart, naborted = struct.unpack_from(">ihqqqi", mv, pos)
            pos += 34 + 16 * max(naborted, 0)
            _preferred, rlen = struct.unpack_from(">ii", mv, pos)
            pos += 8
            records = mv[pos:pos + rlen] if rlen > 0 else None
            pos += max(rlen, 0)
            if name == topic and p == partition:
                return perr, hw, records
    raise _Stop(f"the answer holds no {topic}-{partition}")


def _leader(consumer, topic: str, partition: int, timeout: float) -> tuple[str, int]:
    md = consumer.list_topics(topic, timeout=timeout)
    t = md.topics.get(topic)
    if t is None or t.error is not None or partition not in t.partitions:
        raise _Stop(f"no metadata for {topic}-{partition}")
    leader = t.partitions[partition].leader
    b = md.brokers.get(leader)
    if b is None:
        raise _Stop(f"{topic}-{partition} has no leader")
    return b.host, b.port


# A connection to the leader the driver named is given this long: a broker host that went away
# with no reset would otherwise hold the task for request.timeout.ms before librdkafka, which
# finds the new leader, took over; a healthy connect takes milliseconds.
HINT_CONNECT_S = 2.0


def _connect(addr: tuple, timeout: float, connect_timeout: float | None = None) -> socket.socket:
    s = _SOCKS.pop(addr, None)
    if s is None:
        s = socket.create_connection(addr, timeout=connect_timeout or timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(timeout)
    return s


def _columns_batch(cols, rng, schema):
    import pyarrow as pa  # noqa: PLC0415 - start-up time (module doc)
    n, offs, ts, tt, kvalid, koff, kdata, vvalid, voff, vdata = cols
    buf = pa.py_buffer
    arrays = [
        pa.Array.from_buffers(pa.binary(), n, [kvalid and buf(kvalid), buf(koff), buf(kdata)]),
        pa.Array.from_buffers(pa.binary(), n, [vvalid and buf(vvalid), buf(voff), buf(vdata)]),
        pa.repeat(pa.scalar(rng.topic, pa.string()), n),
        pa.repeat(pa.scalar(rng.partition, pa.int32()), n),
        pa.Array.from_buffers(pa.int64(), n, [None, buf(offs)]),
        pa.Array.from_buffers(pa.timestamp("us", tz="UTC"), n, [None, buf(ts)]),
        pa.Array.from_buffers(pa.int32(), n, [None, buf(tt)]),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


_HEADER = struct.Struct(">qiibihiqqqhii")   # a v2 batch's header, 61 bytes


def _inflate(records, pos: int, lo: int, hi: int):
    """The columns of the compressed batch at records[pos:], and the batch's size and next offset."""
    from kwire.codec.compression import decompress  # noqa: PLC0415 - start-up time: compressed batches only
    (base, length, _epoch, _magic, _crc, attrs, lod, first_ts, max_ts, _pid, _pepoch, _seq,
     count) = _HEADER.unpack_from(records, pos)
    size = 12 + length
    try:
        inflated = decompress(attrs & 0x07, records[pos + 61:pos + size])
    except Exception as exc:   # noqa: BLE001 - whatever is wrong, librdkafka re-reads it and says so
        raise _Stop(f"the batch at offset {base}: {exc}") from None
    cols = records_columns(inflated, count, base, first_ts, max_ts, attrs, lo, hi)
    if cols is None:
        raise _Stop(f"a malformed compressed batch at offset {base}")
    return cols, size, base + lod + 1


def _send(sock, rng, pos: int, partition_max: int, max_bytes: int, client_id: bytes) -> int:
    corr, req = _request(rng.topic, rng.partition, pos, 500, partition_max, max_bytes, client_id)
    sock.sendall(req)
    return corr


def _decode(records, rng, schema, pos: int) -> tuple[list, int, str | None]:
    """The batches of one answer's records from ``pos`` on, the position after them, and why
    this path stops there (None: it reads on)."""
    out: list = []
    at, end, moved = 0, len(records), False
    try:
        while at < end and pos < rng.end:
            status, at, nxt, cols = fetch_columns(records, at, end, pos, rng.end)
            if cols[0]:
                out.append(_columns_batch(cols, rng, schema))
            if nxt >= 0:
                pos, moved = max(pos, nxt), True
            if status == 1:
                cols, size, nxt = _inflate(records, at, pos, rng.end)
                if cols[0]:
                    out.append(_columns_batch(cols, rng, schema))
                pos, at, moved = max(pos, nxt), at + size, True
            elif status == 2:
                pos = rng.end
            elif status == -1:
                return out, pos, f"a batch at offset {pos} this path does not read"
            else:
                break
    except _Stop as exc:
        return out, pos, str(exc)
    if not moved and pos < rng.end:
        return out, pos, "an answer with no whole batch"
    return out, pos, None


def read(rng, client: dict, schema, pos: int, consumer=None) -> Iterator:
    """Yield Arrow record batches of ``rng`` from ``pos`` on; the generator's return value is the
    offset where it stopped (``rng.end`` when it read everything). The Fetch goes to
    ``rng.leader``, or without one to the leader in ``consumer``'s metadata."""
    timeout = float(client.get("request.timeout.ms", 30_000)) / 1000.0
    partition_max = int(client.get("max.partition.fetch.bytes", PARTITION_MAX_BYTES))
    max_bytes = int(client.get("fetch.max.bytes", MAX_BYTES))
    client_id = str(client.get("client.id", "kwire-spark")).encode()
    addr = sock = None
    try:
        if rng.leader:
            addr = tuple(rng.leader)
            sock = _connect(addr, timeout, min(timeout, HINT_CONNECT_S))
        else:
            addr = _leader(consumer, rng.topic, rng.partition, timeout)
            sock = _connect(addr, timeout)
        corr = _send(sock, rng, pos, partition_max, max_bytes, client_id)
        while pos < rng.end:
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            err, _hw, records = parse_response(_recv_exact(sock, size), corr, rng.topic, rng.partition)
            if err:
                raise _Stop(f"error code {err}")
            if records is None:
                raise _Stop("an answer with no records")
            out, pos, stop = _decode(records, rng, schema, pos)
            if stop is None and pos < rng.end:
                # the next Fetch goes out before this answer's batches go to Spark: the broker
                # reads while the JVM takes them
                corr = _send(sock, rng, pos, partition_max, max_bytes, client_id)
            yield from out
            if stop is not None:
                raise _Stop(stop)
        _SOCKS[addr] = sock
        sock = None
    except (_Stop, OSError, struct.error) as exc:
        log.debug("reading %s-%d at %d: %s; librdkafka reads on", rng.topic, rng.partition, pos, exc)
    finally:
        if sock is not None:
            sock.close()
    return min(pos, rng.end)

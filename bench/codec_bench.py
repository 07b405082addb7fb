"""Wire codec benchmarks: request decoding, response encoding and framing on the hot paths.

``run(quick=False)`` returns rows ``(name, value, unit, budget, "PASS" | "MISS" | "info" | "n/a")``
and prints a table; ``python -m bench codec`` (or ``python -m bench.codec_bench``) runs it
alone. Every figure is the best of N rounds of a ``time.perf_counter`` loop. A schema module
that does not exist yet gives a "not yet available" row, never a number.
"""
from __future__ import annotations

import struct
import sys
import uuid

from kwire.codec import frame as fr
from kwire.codec.apis import APIS

try:  # the record batch view (kwire/codec/records.py), when it exists
    from kwire.codec.records import RecordBatch
except ImportError:  # pragma: no cover - depends on what has landed
    RecordBatch = None

MiB = 1024 * 1024
GB = 1e9


from bench import best_seconds as _best  # noqa: E402


# --- inputs ------------------------------------------------------------------------------
def record_batch(size: int) -> bytes:
    """One v2 record batch of about ``size`` bytes with a correct CRC32C. Built with
    kwire.codec.records when it exists, else by hand (header + opaque record bytes)."""
    try:
        from kwire.codec.records import build_batch
    except ImportError:
        build_batch = None
    if build_batch is not None:
        value = b"v" * 1000
        n = max(1, size // 1024)
        return build_batch([(b"key-%08d" % i, value, [], 1_700_000_000_000 + i) for i in range(n)])
    import crc32c

    body = bytes(size - 61)
    after_crc = struct.pack(">hiqqqhii", 0, 0, 0, 0, -1, -1, -1, 1) + body
    crc = crc32c.crc32c(after_crc)
    head = struct.pack(">qiib", 0, 4 + 1 + 4 + len(after_crc), -1, 2)
    return head + struct.pack(">I", crc) + after_crc


def check_crc(batch) -> None:
    """The produce path's only per-batch work: the 61-byte header and the CRC32C."""
    if RecordBatch is not None and hasattr(RecordBatch, "validate_crc"):
        RecordBatch(batch).validate_crc()
        return
    import crc32c

    stored = struct.unpack_from(">I", batch, 17)[0]
    if crc32c.crc32c(memoryview(batch)[21:]) != stored:
        raise ValueError("CRC mismatch")


def produce_request(records: bytes, version: int = 9) -> bytes | None:
    api = APIS.get(0)
    if api is None:
        return None
    m = api.request
    TP, PP = m.struct("TopicProduceData"), m.struct("PartitionProduceData")
    body = m(transactional_id=None, acks=-1, timeout_ms=30000,
             topic_data=[TP(name="bench-topic", partition_data=[PP(index=0, records=records)])])
    return fr.encode_request(api, version, 1, body, client_id="bench-producer")[4:]


def decode_produce(frame) -> int:
    req = fr.decode_request(frame)
    n = 0
    for t in req.body.topic_data:
        for p in t.partition_data:
            check_crc(p.records)
            n += 1
    return n


def metadata_request(version: int = 12):
    api = APIS[3]
    m = api.request
    body = m(topics=[m.struct("MetadataRequestTopic")(topic_id=uuid.UUID(int=0), name="bench-topic")],
             allow_auto_topic_creation=False)
    return fr.encode_request(api, version, 2, body, client_id="bench")[4:]


def heartbeat_request(version: int = 4):
    api = APIS.get(12)
    if api is None:
        return None
    body = api.request(group_id="bench-group", generation_id=7, member_id="member-1-" + "x" * 36)
    return fr.encode_request(api, version, 3, body, client_id="bench")[4:]


def metadata_response(partitions: int, version: int = 12):
    m = APIS[3].response
    B, T, P = (m.struct("MetadataResponseBroker"), m.struct("MetadataResponseTopic"),
               m.struct("MetadataResponsePartition"))
    brokers = [B(node_id=i, host=f"broker-{i}.example", port=9092, rack=None) for i in range(3)]
    topics, per_topic = [], 100
    for t in range(max(1, partitions // per_topic)):
        parts = [P(error_code=0, partition_index=i, leader_id=i % 3, leader_epoch=5,
                   replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2], offline_replicas=[])
                 for i in range(min(per_topic, partitions))]
        topics.append(T(error_code=0, name=f"topic-{t}", topic_id=uuid.UUID(int=t + 1),
                        is_internal=False, partitions=parts))
    return m(throttle_time_ms=0, brokers=brokers, cluster_id="bench-cluster", controller_id=0,
             topics=topics)


def produce_response(version: int = 9):
    api = APIS.get(0)
    if api is None:
        return None
    m = api.response
    TR, PR = m.struct("TopicProduceResponse"), m.struct("PartitionProduceResponse")
    return m(responses=[TR(name="bench-topic", partition_responses=[
        PR(index=0, error_code=0, base_offset=123456, log_append_time_ms=-1, log_start_offset=0)])],
        throttle_time_ms=0)


def fetch_response(records, version: int = 12):
    api = APIS.get(1)
    if api is None:
        return None
    m = api.response
    FT, PD = m.struct("FetchableTopicResponse"), m.struct("PartitionData")
    return m(throttle_time_ms=0, error_code=0, session_id=0, responses=[FT(
        topic="bench-topic", partitions=[PD(partition_index=0, error_code=0, high_watermark=1000,
                                            last_stable_offset=1000, log_start_offset=0,
                                            aborted_transactions=None, preferred_read_replica=-1,
                                            records=records)])])


def api_versions_response(version: int = 3):
    m = APIS[18].response
    AV = m.struct("ApiVersion")
    keys = [AV(api_key=a.key, min_version=a.min_version, max_version=a.max_version) for a in APIS.values()]
    return m(error_code=0, api_keys=keys, throttle_time_ms=0)


# --- the run -------------------------------------------------------------------------------
def run(quick: bool = False) -> list[tuple]:
    rows: list[tuple] = []
    repeat = 3 if quick else 7
    scale = 0.2 if quick else 1.0

    def n(x: int) -> int:
        return max(1, int(x * scale))

    def row(name, value, unit, budget=None, ok=None):
        verdict = "info" if ok is None else ("PASS" if ok else "MISS")
        rows.append((name, round(value, 2), unit, budget or "-", verdict))

    def missing(name, what, budget):
        rows.append((f"{name} ({what} schema not yet available)", "-", "-", budget, "n/a"))

    # 1. Produce request with one 1 MiB batch: header, body, CRC32C
    big = record_batch(MiB)
    frame = produce_request(big)
    if frame is None:
        missing("codec.produce 1 MiB decode+crc", "Produce", ">= 1 GB/s")
    else:
        assert decode_produce(frame) == 1
        t = _best(lambda: decode_produce(frame), repeat, n(200))
        row("codec.produce 1 MiB decode+crc", len(frame) / t / GB, "GB/s", ">= 1 GB/s", len(frame) / t >= GB)
        wire = struct.pack(">i", len(frame)) + frame

        def framed():
            dec = fr.FrameDecoder()
            dec.feed(wire)
            decode_produce(dec.next_frame())
        t = _best(framed, repeat, n(100))
        row("codec.produce 1 MiB feed+frame+decode+crc", len(frame) / t / GB, "GB/s")

    # 2. small requests decoded
    small = [("produce 1 KiB batch v9", produce_request(record_batch(1024)), decode_produce, "Produce"),
             ("metadata 1 topic v12", metadata_request(), fr.decode_request, "Metadata"),
             ("heartbeat v4", heartbeat_request(), fr.decode_request, "Heartbeat")]
    for label, fr_bytes, fn, what in small:
        name = f"codec.decode {label}"
        if fr_bytes is None:
            missing(name, what, ">= 40,000/s")
            continue
        fn(fr_bytes)
        t = _best(lambda: fn(fr_bytes), repeat, n(20000))
        row(name, 1 / t, "req/s", ">= 40,000/s", 1 / t >= 40_000)

    # 3. small responses encoded (frame parts, as the server writes them)
    resps = [("produce 1 partition v9", 0, 9, produce_response(), "Produce"),
             ("metadata 1 topic/1 partition v12", 3, 12, metadata_response(1), "Metadata"),
             ("heartbeat v4", 12, 4, APIS[12].response(throttle_time_ms=0, error_code=0)
              if 12 in APIS else None, "Heartbeat"),
             ("api_versions v3", 18, 3, api_versions_response(), "ApiVersions")]
    for label, key, v, body, what in resps:
        name = f"codec.encode {label}"
        if body is None:
            missing(name, what, ">= 40,000/s")
            continue
        api = APIS[key]
        fr.encode_response(api, v, 5, body)
        t = _best(lambda: fr.encode_response(api, v, 5, body), repeat, n(20000))
        row(name, 1 / t, "resp/s", ">= 40,000/s", 1 / t >= 40_000)

    # 4. Fetch response with 1 MiB of stored batches: the records stay their own part
    stored = memoryview(record_batch(MiB))
    body = fetch_response(stored)
    if body is None:
        missing("codec.fetch 1 MiB frame", "Fetch", ">= 1 GB/s")
    else:
        fapi = APIS[1]
        parts = fr.encode_response(fapi, 12, 6, body)
        assert any(p is stored for p in parts), "records were copied into the frame"
        total = sum(len(p) for p in parts)
        t = _best(lambda: fr.encode_response(fapi, 12, 6, body), repeat, n(20000))
        row("codec.fetch 1 MiB frame (parts, zero-copy)", total / t / GB, "GB/s", ">= 1 GB/s", total / t >= GB)
        t = _best(lambda: fr.join_parts(fr.encode_response(fapi, 12, 6, body)), repeat, n(200))
        row("codec.fetch 1 MiB frame joined (one copy)", total / t / GB, "GB/s", ">= 1 GB/s", total / t >= GB)

    # 5. Metadata response for 1,000 partitions
    meta = metadata_response(1000)
    mapi = APIS[3]
    fr.encode_response(mapi, 12, 7, meta)
    t = _best(lambda: fr.encode_response(mapi, 12, 7, meta), repeat, n(300))
    row("codec.encode metadata 1,000 partitions v12", 1 / t, "resp/s", ">= 1,000/s", 1 / t >= 1000)
    wire = fr.join_parts(fr.encode_response(mapi, 12, 7, meta))
    t = _best(lambda: fr.decode_response(mapi, 12, wire[4:]), repeat, n(300))
    row("codec.decode metadata 1,000 partitions v12", 1 / t, "resp/s")

    print_table("Wire codec", rows)
    return rows


def print_table(title: str, rows: list[tuple]) -> None:
    hdr = ("benchmark", "value", "unit", "budget", "verdict")
    cells = [hdr] + [tuple(f"{c:,}" if isinstance(c, (int, float)) else str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(5)]
    print(title)
    for r in cells:
        print("  ".join(c.ljust(w) if i in (0, 2, 3) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])

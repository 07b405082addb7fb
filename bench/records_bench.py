"""Record batch codec benchmarks: the produce hot path (61-byte header + CRC32C over a 1 MiB
batch), and build / iterate rates of a 1,000-record batch per codec.

``run()`` returns rows ``(name, value, unit, budget, "PASS" | "MISS" | "info")`` and prints
them; ``python -m bench.records_bench`` runs it alone.
"""
from __future__ import annotations


from kwire.codec import records as R

VALUE_SIZE = 100


from bench import best_seconds as _best  # noqa: E402


def _records(n: int, value_size: int = VALUE_SIZE):
    return [
        (b"key-%06d" % i, (b"value-%06d-" % i).ljust(value_size, b"x"), [], 1_700_000_000_000 + i)
        for i in range(n)
    ]


def run(quick: bool = False) -> list[tuple]:
    rows: list[tuple] = []
    repeat = 3 if quick else 5

    def row(name, value, unit, budget=None, ok=None):
        verdict = "info" if ok is None else ("PASS" if ok else "MISS")
        rows.append((name, round(value, 3), unit, budget or "-", verdict))

    # --- produce hot path: header view + validate + CRC over a 1 MiB batch ------------------
    big = R.build_batch(_records(1000, 1024 - 40))  # ~1 MiB
    size = len(big)

    def header_and_crc():
        b = R.RecordBatch(big)
        b.validate()
        b.validate_crc()

    t = _best(header_and_crc, repeat, 20)
    row("records.header+crc 1MiB batch", size / t / 1e9, "GB/s", ">= 1 GB/s", size / t >= 1e9)

    t = _best(lambda: R.RecordBatch(big), repeat, 20000)
    row("records.header view", t * 1e9, "ns/batch", "<= 2000 ns", t <= 2e-6)

    from tests.codec.test_records import HEADER_LAYOUT  # the construct cross-check, tests only

    t = _best(lambda: HEADER_LAYOUT.parse(big), repeat, 2000)
    row("records.header via construct (reference)", t * 1e9, "ns/batch")

    buf = bytearray(big)
    t = _best(lambda: R.set_base_offset(buf, 0, 12345), repeat, 20000)
    row("records.set_base_offset", t * 1e9, "ns/batch", "<= 1000 ns", t <= 1e-6)

    # --- build / iterate a 1,000-record batch ----------------------------------------------
    recs = _records(1000)
    for codec in (R.NONE, R.LZ4, R.ZSTD, R.SNAPPY, R.GZIP):
        name = R._compression.CODEC_NAMES[codec]
        t = _best(lambda: R.build_batch(recs, compression=codec), repeat, 5)
        budget_ok = 1000 / t >= 200_000 if codec == R.NONE else None
        row(f"records.build 1000x{VALUE_SIZE}B {name}", 1000 / t / 1e3, "krec/s",
            ">= 200 krec/s" if codec == R.NONE else None, budget_ok)
        raw = R.build_batch(recs, compression=codec)
        t = _best(lambda: sum(1 for _ in R.RecordBatch(raw).records()), repeat, 5)
        budget_ok = 1000 / t >= 300_000 if codec == R.NONE else None
        row(f"records.iterate 1000x{VALUE_SIZE}B {name}", 1000 / t / 1e3, "krec/s",
            ">= 300 krec/s" if codec == R.NONE else None, budget_ok)

    for r in rows:
        print(", ".join(str(x) for x in r))
    return rows


if __name__ == "__main__":
    run()

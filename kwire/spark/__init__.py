"""``kwire.spark``: a PySpark data source for Kafka topics (``pip install 'kwire[spark]'``).

    import kwire.spark
    kwire.spark.register(spark, bootstrap_servers="127.0.0.1:9092")
    df = spark.read.format("kwire").option("subscribe", "events").load()

It talks to any Kafka-compatible broker through confluent-kafka, with the schema and the
options of Spark's own Kafka connector (see README, "Spark").
"""
from __future__ import annotations

from typing import Any

__all__ = ["offsets_behind_latest", "register"]


def register(spark: Any, bootstrap_servers: str | None = None, **defaults: str) -> type:
    """Register ``format("kwire")`` with ``spark``. ``bootstrap_servers`` and the other keyword
    arguments become defaults of every query's options (``kafka_security_protocol="SSL"`` is
    the option ``kafka.security.protocol``); a query's own options win."""
    from kwire.spark.source import KwireDataSource  # noqa: PLC0415 - optional dependency: pyspark
    opts = {k.replace("_", "."): str(v) for k, v in defaults.items()}
    if bootstrap_servers:
        opts["kafka.bootstrap.servers"] = bootstrap_servers
    cls = type("KwireDataSource", (KwireDataSource,), {"defaults": opts, "__module__": KwireDataSource.__module__})
    spark.dataSource.register(cls)
    return cls


def offsets_behind_latest(source_progress: Any) -> dict[str, str]:
    """Spark's Kafka source metrics of one micro-batch, from a progress's source entry
    (``query.lastProgress["sources"][0]``, a dict or PySpark's SourceProgress): how far each
    partition's log end offset (``latestOffset``, which the kwire source reports) is ahead of
    the batch's ``endOffset``. Either offset may be a dict or a JSON string.

    The result is what Spark's own Kafka source (KafkaMicroBatchStream.metrics) puts in
    ``sources[].metrics``: ``minOffsetsBehindLatest`` and ``maxOffsetsBehindLatest`` (whole
    numbers) and ``avgOffsetsBehindLatest`` (printed as Java prints a double, "0.0", "12.5",
    "1.5E7"), strings as in Spark's progress; nothing behind is "0", "0", "0.0". ``{}`` when the
    entry has no end or no latest offset (Spark reports no metrics then). A partition missing
    from the end offset (never the case for this source's batches) is left out.

    PySpark's Python data sources cannot report metrics themselves (Spark 4.3's
    PythonMicroBatchStream implements no ReportsSourceMetrics): this computes them on the side
    that reads the progress, e.g. in a StreamingQueryListener's ``onQueryProgress``."""
    end = _offsets(source_progress.get("endOffset"))
    latest = _offsets(source_progress.get("latestOffset"))
    if not end or not latest:
        return {}
    behind = [off - end[t][p] for t, parts in latest.items() for p, off in parts.items()
              if p in end.get(t, {})]
    if not behind:
        return {}
    return {"minOffsetsBehindLatest": str(min(behind)), "maxOffsetsBehindLatest": str(max(behind)),
            "avgOffsetsBehindLatest": _java_double(sum(behind) / len(behind))}


def _offsets(value: Any) -> dict | None:
    """``{"topic": {"partition": offset}}`` from a progress's offset: a dict, a JSON string,
    or nothing (None, "null": a source that reported none)."""
    if isinstance(value, str):
        import json  # noqa: PLC0415 - start-up time: only for progress offsets given as JSON text
        value = json.loads(value) if value.strip() not in ("", "null", "None") else None
    if not isinstance(value, dict):
        return None
    return {t: {str(p): int(o) for p, o in parts.items()} for t, parts in value.items() if isinstance(parts, dict)}


def _java_double(x: float) -> str:
    """``x`` as Java's Double.toString prints it: plain between 10^-3 and 10^7, else d.dddE<n>;
    the shortest digits that name the value (Python's repr finds the same)."""
    if x == 0:
        return "0.0"
    if 1e-3 <= abs(x) < 1e7:
        return repr(x)   # plain notation in this range, always with a point ("3.0")
    from decimal import Decimal  # noqa: PLC0415 - start-up time: only for averages outside Java's plain range
    d = Decimal(repr(abs(x)))
    digits = "".join(map(str, d.as_tuple().digits)).rstrip("0") or "0"
    return f"{'-' if x < 0 else ''}{digits[0]}.{digits[1:] or '0'}E{d.adjusted()}"

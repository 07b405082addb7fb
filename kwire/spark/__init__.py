"""``kwire.spark``: a PySpark data source for Kafka topics (``pip install 'kwire[spark]'``).

    import kwire.spark
    kwire.spark.register(spark, bootstrap_servers="127.0.0.1:9092")
    df = spark.read.format("kwire").option("subscribe", "events").load()

It talks to any Kafka-compatible broker through confluent-kafka, with the schema and the
options of Spark's own Kafka connector (see README, "Spark").
"""
from __future__ import annotations

from typing import Any

__all__ = ["register"]


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

"""A reference PySpark structured-streaming pipeline on kwire (or any Kafka).

It reads JSON events ``{"user": str, "amount": int, "ts": epoch ms}`` from a topic, sums the
amounts per user in 10-second event-time windows with a 20-second watermark, and writes each
closed window to a second topic (key = user, value = JSON) and to a Parquet table.

    make spark-example                         # a throw-away kwire broker, sample events, results
    python examples/spark_pipeline.py --bootstrap 127.0.0.1:9092 --events events \\
        --results user-totals --table /tmp/totals --checkpoint /tmp/ckpt [--continuous]

Without --continuous it runs with Trigger.AvailableNow (process what is there, then stop), so
it can run on a schedule; a rerun with the same --checkpoint continues where the last stopped.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

WINDOW = "10 seconds"
WATERMARK = "20 seconds"
EVENT_SCHEMA = "user string, amount long, ts long"


def build(spark, *, events: str, results: str, table: str, checkpoint: str, trigger: dict,
          starting_offsets: str = "earliest"):
    """Start the pipeline's two streaming queries (topic sink, Parquet sink); returns them."""
    from pyspark.sql import functions as F
    raw = (spark.readStream.format("kwire").option("subscribe", events)
           .option("startingOffsets", starting_offsets).load())
    parsed = (raw.select(F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"))
              .select("e.*").where(F.col("user").isNotNull())
              .withColumn("event_time", F.timestamp_millis("ts")))
    totals = (parsed.withWatermark("event_time", WATERMARK)
              .groupBy(F.window("event_time", WINDOW), "user")
              .agg(F.sum("amount").alias("total"), F.count(F.lit(1)).alias("events"))
              .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
                      "user", "total", "events"))
    to_topic = (totals.select(F.col("user").alias("key"),
                              F.to_json(F.struct("window_start", "window_end", "user", "total", "events"))
                              .alias("value"))
                .writeStream.format("kwire").option("topic", results).outputMode("append")
                .option("checkpointLocation", os.path.join(checkpoint, "topic"))
                .trigger(**trigger).start())
    to_table = (totals.writeStream.format("parquet").option("path", table).outputMode("append")
                .option("checkpointLocation", os.path.join(checkpoint, "table"))
                .trigger(**trigger).start())
    return to_topic, to_table


def run_available_now(spark, **kw) -> None:
    """Process what the events topic holds now, then stop; raises what a query raised."""
    for q in build(spark, trigger={"availableNow": True}, **kw):
        q.awaitTermination()
        if q.exception() is not None:
            raise q.exception()


def sample_events(n: int, *, start_ms: int, seed: int = 7) -> list[dict]:
    rnd = random.Random(seed)
    users = ["ada", "bob", "cy", "dee", "eve"]
    return [{"user": rnd.choice(users), "amount": rnd.randint(1, 100), "ts": start_ms + i * 100}
            for i in range(n)]


def produce_events(bootstrap: str, topic: str, events: list[dict]) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for e in events:
        p.produce(topic, json.dumps(e).encode(), e["user"].encode())
    if p.flush(60):
        raise RuntimeError("events were not acknowledged in time")


def _demo(args) -> int:
    from kwire.testing import Broker
    from kwire.testing.spark import local_session
    import kwire.spark
    work = tempfile.mkdtemp(prefix="kwire-spark-example-")
    with Broker() as broker:
        broker.create_topic(args.events, 3)
        broker.create_topic(args.results, 3)
        events = sample_events(600, start_ms=int(time.time() * 1000) - 120_000)
        produce_events(broker.bootstrap_servers, args.events, events)
        print(f"kwire at {broker.bootstrap_servers}: {len(events)} events in '{args.events}'")
        spark = local_session("kwire-spark-example")
        kwire.spark.register(spark, bootstrap_servers=broker.bootstrap_servers)
        try:
            run_available_now(spark, events=args.events, results=args.results,
                              table=os.path.join(work, "totals"), checkpoint=os.path.join(work, "ckpt"))
            table = spark.read.parquet(os.path.join(work, "totals"))
            print(f"closed windows in the Parquet table {os.path.join(work, 'totals')}:")
            table.orderBy("window_start", "user").show(10, truncate=False)
            n = spark.read.format("kwire").option("subscribe", args.results).load().count()
            print(f"{n} results in topic '{args.results}'")
        finally:
            spark.stop()
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--demo", action="store_true", help="start a throw-away kwire broker with sample events")
    ap.add_argument("--bootstrap", help="bootstrap servers of the Kafka cluster to read and write")
    ap.add_argument("--events", default="events", help="topic the events are read from")
    ap.add_argument("--results", default="user-totals", help="topic the window totals are written to")
    ap.add_argument("--table", help="directory of the Parquet table of window totals")
    ap.add_argument("--checkpoint", help="checkpoint directory (keep it to continue across runs)")
    ap.add_argument("--continuous", action="store_true",
                    help="run with a 1-second processing-time trigger until interrupted")
    args = ap.parse_args(argv)
    if args.demo:
        return _demo(args)
    if not (args.bootstrap and args.table and args.checkpoint):
        ap.error("--bootstrap, --table and --checkpoint are needed (or --demo)")
    from kwire.testing.spark import local_session
    import kwire.spark
    spark = local_session("kwire-spark-pipeline")
    kwire.spark.register(spark, bootstrap_servers=args.bootstrap)
    kw = dict(events=args.events, results=args.results, table=args.table, checkpoint=args.checkpoint)
    try:
        if args.continuous:
            qs = build(spark, trigger={"processingTime": "1 second"}, **kw)
            spark.streams.awaitAnyTermination()
            for q in qs:
                if q.exception() is not None:
                    raise q.exception()
        else:
            run_available_now(spark, **kw)
    except KeyboardInterrupt:
        pass
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

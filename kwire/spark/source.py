"""The ``kwire`` PySpark data source (pyspark.sql.datasource): batch and streaming reads and
writes of Kafka topics through confluent-kafka, with the schema and options of Spark's own
Kafka connector (spark-sql-kafka-0-10).

Read schema: key binary, value binary, topic string, partition int, offset long,
timestamp timestamp, timestampType int, and headers array<struct<key string, value binary>>
with includeHeaders=true.
"""
from __future__ import annotations

import logging
import time
from typing import Iterator

from pyspark.sql.datasource import (DataSource, DataSourceReader, DataSourceStreamReader,
                                    InputPartition)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from kwire.spark.offsets import (DATA_LOSS, DataLossError, OffsetReader, Range, check_data_loss,
                                 from_json, plan_ranges, rate_limit, to_json)
from kwire.spark.options import ReadOptions, read_options
from kwire.spark.writer import KafkaBatchWriter, KafkaStreamWriter

log = logging.getLogger("kwire.spark")

READ_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
               "timestamp timestamp, timestampType int")
HEADERS = "headers array<struct<key: string, value: binary>>"


class KafkaInputPartition(InputPartition):
    """One Spark task: the offsets [start, end) of one topic partition."""

    def __init__(self, rng: Range):
        super().__init__(rng)


def _arrow_schema(schema: StructType):
    return to_arrow_schema(schema, timezone="UTC")


def _read(opts: ReadOptions, pa_schema, partition: InputPartition) -> Iterator:
    rng = partition.value   # Spark plans one empty partition when there is nothing to read
    if not isinstance(rng, Range):
        return
    from kwire.spark.consume import read_range  # noqa: PLC0415 - start-up time: the workers' module, the planners need not load it
    yield from read_range(rng, opts.client, pa_schema, include_headers=opts.include_headers,
                          fail_on_data_loss=opts.fail_on_data_loss, poll_timeout_ms=opts.poll_timeout_ms,
                          group_id_prefix=opts.group_id_prefix)


class KafkaBatchReader(DataSourceReader):
    def __init__(self, opts: ReadOptions, schema: StructType):
        self.opts = opts
        self.pa_schema = _arrow_schema(schema)

    def partitions(self):
        o = self.opts
        reader = OffsetReader(o)
        try:
            tps = reader.topic_partitions()
            start = reader.resolve(o.starting, tps, name="startingOffsets")
            end = reader.resolve(o.ending, tps, name="endingOffsets")
            # from earliest, the starts are the log start offsets: no second ListOffsets
            earliest = start if o.starting.kind == "earliest" else reader.earliest(tps)
            start = check_data_loss(start, earliest, fail=o.fail_on_data_loss, what="startingOffsets")
        finally:
            reader.close()
        return [KafkaInputPartition(r) for r in plan_ranges(start, end, o.min_partitions,
                                                            o.max_records_per_partition, reader.leaders)]

    def read(self, partition):
        return _read(self.opts, self.pa_schema, partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets in the checkpoint are ``{"topic": {"partition": next offset}}``. New partitions
    of a subscribed topic or pattern are read from their earliest offset, as Spark does."""

    def __init__(self, opts: ReadOptions, schema: StructType):
        self.opts = opts
        self.pa_schema = _arrow_schema(schema)
        self._offsets = OffsetReader(opts)
        self._initial: dict | None = None
        self._target: dict | None = None   # Trigger.AvailableNow: the end, fixed at the start
        self._last_trigger_ms = 0.0        # minOffsetsPerTrigger: when the last batch was let through
        self._reported: dict | None = None # the newest latest offsets seen: the progress's latestOffset

    def initialOffset(self) -> dict:
        # Spark may ask more than once (before and after planning): the answer must not move.
        if self._initial is None:
            tps = self._offsets.topic_partitions()
            self._initial = to_json(self._offsets.resolve(self.opts.starting, tps, name="startingOffsets"))
        return self._initial

    def getDefaultReadLimit(self):
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def _latest(self) -> dict:
        return self._offsets.latest(self._offsets.topic_partitions())

    def _with_new_partitions(self, start: dict, latest: dict) -> dict:
        new = [tp for tp in latest if tp not in start]
        if not new:
            return start
        log.info("new partitions %s: reading them from their earliest offsets",
                 ", ".join(f"{t}-{p}" for t, p in new))
        return {**start, **self._offsets.earliest(new)}

    def latestOffset(self, start: dict, limit) -> dict:
        s = from_json(start)
        latest = dict(self._target) if self._target is not None else self._latest()
        self._reported = to_json(latest)
        full = self._with_new_partitions(s, latest)
        for tp, off in list(latest.items()):
            if off < full.get(tp, off):
                msg = (f"Partition {tp[0]}-{tp[1]}'s latest offset went back from {full[tp]} to {off}: "
                       "records may have been lost (topic re-created or log truncated).")
                if self.opts.fail_on_data_loss:
                    raise DataLossError(f"{msg} {DATA_LOSS}")
                log.warning("%s Continuing from %d (failOnDataLoss=false).", msg, off)
                full[tp] = off
        if self._delay(full, latest, limit):
            return start
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(full, latest, limit.max_rows)
        else:
            end = latest
        for tp, off in s.items():            # a partition that went away keeps its place
            end.setdefault(tp, off)
        return to_json(end)

    def _delay(self, start: dict, latest: dict, limit) -> bool:
        """minOffsetsPerTrigger with maxTriggerDelay, as Spark's KafkaMicroBatchStream.delayBatch:
        no batch while fewer new offsets than the minimum are waiting and the last batch is
        younger than the delay. Python's read limits have no composite of a minimum and a
        maximum, so the minimum is kept here; Trigger.AvailableNow (a fixed end) never waits."""
        minimum = self.opts.min_offsets_per_trigger
        if not minimum or self._target is not None:
            return False
        new = sum(max(0, off - start.get(tp, off)) for tp, off in latest.items())
        now = time.time() * 1000
        if new < minimum and now - self._last_trigger_ms < self.opts.max_trigger_delay_ms:
            return True
        self._last_trigger_ms = now
        return False

    def reportLatestOffset(self):
        """The log end offsets seen by the last latestOffset call: StreamingQueryProgress's
        ``latestOffset``, so the backlog is visible as with Spark's Kafka source."""
        return self._reported

    def partitions(self, start: dict, end: dict):
        s, e = from_json(start), from_json(end)
        new = [tp for tp in e if tp not in s]
        if new:
            s.update(self._offsets.earliest(new))
        live = [tp for tp in e if e[tp] > s.get(tp, e[tp])]
        if live:
            earliest = self._offsets.earliest(live)
            s.update(check_data_loss({tp: s[tp] for tp in live}, earliest,
                                     fail=self.opts.fail_on_data_loss, what="micro-batch"))
        return [KafkaInputPartition(r) for r in plan_ranges(s, e, self.opts.min_partitions,
                                                            self.opts.max_records_per_partition,
                                                            self._offsets.leaders)]

    def read(self, partition):
        return _read(self.opts, self.pa_schema, partition)

    def commit(self, end: dict) -> None:
        pass   # offsets live in Spark's checkpoint; nothing is committed to Kafka

    def stop(self) -> None:
        self._offsets.close()


class KwireDataSource(DataSource):
    """``format("kwire")``. Options as Spark's Kafka connector; ``kwire.spark.register`` may
    give defaults (a bootstrap address, security settings) for every query."""

    defaults: dict = {}

    @classmethod
    def name(cls) -> str:
        return "kwire"

    def _include_headers(self) -> bool:
        merged = {**{k.lower(): v for k, v in self.defaults.items()},
                  **{k.lower(): v for k, v in self.options.items()}}
        return str(merged.get("includeheaders", "false")).lower() == "true"

    def schema(self) -> str:
        return READ_SCHEMA + (", " + HEADERS if self._include_headers() else "")

    def reader(self, schema: StructType):
        return KafkaBatchReader(read_options(self.options, streaming=False, defaults=self.defaults), schema)

    def streamReader(self, schema: StructType):
        return KafkaStreamReader(read_options(self.options, streaming=True, defaults=self.defaults), schema)

    def writer(self, schema: StructType, overwrite: bool):
        if overwrite:   # Spark's KafkaSourceProvider.createRelation refuses it the same way
            raise ValueError("Save mode Overwrite not allowed for Kafka. Allowed save modes are Append and "
                             "ErrorIfExists (default).")
        return KafkaBatchWriter(self.options, self.defaults, schema)

    def streamWriter(self, schema: StructType, overwrite: bool):
        return KafkaStreamWriter(self.options, self.defaults, schema)

"""Driver-side offset work of the ``kwire`` source: which partitions a query reads, their
earliest / latest / by-timestamp offsets (ListOffsets through confluent-kafka's AdminClient),
and the planning of offset ranges into Spark input partitions (minPartitions splitting,
maxOffsetsPerTrigger admission), in the manner of Spark's KafkaOffsetReader and
KafkaOffsetRangeCalculator.

Offsets in Spark's checkpoint are JSON: ``{"topic": {"0": 42, "1": 7}}``.
"""
from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass

from kwire.spark.options import EARLIEST, LATEST, OffsetSpec, ReadOptions

log = logging.getLogger("kwire.spark")

TP = tuple  # (topic, partition)

DATA_LOSS = ("Some data may have been lost because they are not available in Kafka any more; either the "
             "data was aged out by Kafka or the topic may have been deleted before all the data in the "
             "topic was processed. If you don't want your streaming query to fail on such cases, set the "
             "source option 'failOnDataLoss' to 'false'.")


class DataLossError(RuntimeError):
    """Records a query needs are gone (retention, DeleteRecords, a deleted topic)."""


def to_json(offsets: dict[TP, int]) -> dict:
    out: dict = {}
    for (t, p), o in sorted(offsets.items()):
        out.setdefault(t, {})[str(p)] = int(o)
    return out


def from_json(doc: dict) -> dict[TP, int]:
    return {(t, int(p)): int(o) for t, parts in doc.items() for p, o in parts.items()}


def _admin_config(client: dict) -> dict:
    # Consumer-only settings would only draw librdkafka warnings from an AdminClient.
    skip = {"group.id", "isolation.level", "enable.partition.eof", "fetch.min.bytes", "fetch.max.bytes",
            "max.partition.fetch.bytes", "fetch.wait.max.ms", "session.timeout.ms", "group.instance.id",
            "client.rack", "check.crcs", "queued.min.messages", "queued.max.messages.kbytes"}
    return {k: v for k, v in client.items() if k not in skip}


class OffsetReader:
    """One AdminClient on the driver, opened lazily, closed by ``close()``."""

    def __init__(self, opts: ReadOptions):
        self.opts = opts
        self._admin = None

    @property
    def admin(self):
        if self._admin is None:
            from confluent_kafka.admin import AdminClient
            self._admin = AdminClient(_admin_config(self.opts.client))
        return self._admin

    def close(self) -> None:
        self._admin = None

    def _timeout(self) -> float:
        return float(self.opts.client.get("request.timeout.ms", 30_000)) / 1000.0

    # -- which partitions -------------------------------------------------------------
    def topic_partitions(self) -> list[TP]:
        o = self.opts
        if o.strategy == "assign":
            return sorted((t, p) for t, ps in o.assign.items() for p in ps)
        from confluent_kafka import KafkaException  # noqa: PLC0415

        try:
            md = self.admin.list_topics(timeout=self._timeout())
        except KafkaException as exc:   # librdkafka says "Broker transport failure", naming no address
            raise ConnectionError(f"kwire source: no broker answered at {o.client.get('bootstrap.servers')} within "
                                  f"{self._timeout():g} s (kafka.request.timeout.ms): {exc.args[0].str()}") from None
        if o.strategy == "subscribe":
            wanted = [t for t in o.topics if t in md.topics and md.topics[t].error is None]
        else:
            rx = re.compile(o.pattern)
            wanted = [t for t in md.topics if rx.fullmatch(t) and not t.startswith("__")
                      and md.topics[t].error is None]
        return sorted((t, p) for t in wanted for p in md.topics[t].partitions)

    # -- offsets ------------------------------------------------------------------------
    def _list(self, specs: dict) -> dict[TP, int]:
        if not specs:
            return {}
        from confluent_kafka import IsolationLevel, TopicPartition
        iso = (IsolationLevel.READ_COMMITTED if self.opts.client.get("isolation.level") == "read_committed"
               else IsolationLevel.READ_UNCOMMITTED)
        req = {TopicPartition(t, p): s for (t, p), s in specs.items()}
        futs = self.admin.list_offsets(req, isolation_level=iso, request_timeout=self._timeout())
        return {(tp.topic, tp.partition): f.result().offset for tp, f in futs.items()}

    def earliest(self, tps) -> dict[TP, int]:
        from confluent_kafka.admin import OffsetSpec as S
        return self._list({tp: S.earliest() for tp in tps})

    def latest(self, tps) -> dict[TP, int]:
        from confluent_kafka.admin import OffsetSpec as S
        return self._list({tp: S.latest() for tp in tps})

    def for_timestamps(self, tps_ts: dict[TP, int]) -> dict[TP, int]:
        """The first offset at or after each timestamp; -1 where no record is that new."""
        from confluent_kafka.admin import OffsetSpec as S
        return self._list({tp: S.for_timestamp(ts) for tp, ts in tps_ts.items()})

    def resolve(self, spec: OffsetSpec, tps: list[TP], *, name: str) -> dict[TP, int]:
        """Concrete offsets for ``tps`` from a starting/ending spec (earliest, latest, JSON
        with -2/-1, per-partition or global timestamps)."""
        if spec.kind == "earliest":
            return self.earliest(tps)
        if spec.kind == "latest":
            return self.latest(tps)
        if spec.kind == "json":
            given = {(t, p): o for t, ps in spec.offsets.items() for p, o in ps.items()}
            missing = [tp for tp in tps if tp not in given]
            if missing and self.opts.strategy != "assign":
                raise ValueError(f"Option '{name}' names no offset for partitions "
                                 f"{', '.join(f'{t}-{p}' for t, p in missing)}; give every partition, "
                                 "or use -2 (earliest) / -1 (latest)")
            out = {tp: given[tp] for tp in tps if tp in given}
            earliest = self.earliest([tp for tp, o in out.items() if o == EARLIEST])
            latest = self.latest([tp for tp, o in out.items() if o == LATEST])
            out.update(earliest)
            out.update(latest)
            return out
        # timestamps
        if spec.global_ts is not None:
            ts = {tp: spec.global_ts for tp in tps}
        else:
            given = {(t, p): v for t, ps in spec.timestamps.items() for p, v in ps.items()}
            missing = [tp for tp in tps if tp not in given]
            if missing:
                raise ValueError(f"Option '{name}' names no timestamp for partitions "
                                 f"{', '.join(f'{t}-{p}' for t, p in missing)}")
            ts = {tp: given[tp] for tp in tps}
        found = self.for_timestamps(ts)
        none = [tp for tp, o in found.items() if o < 0]
        if none:
            # an end with no record that new is the latest offset (Spark's
            # fetchSpecificTimestampBasedOffsets: only a start has a no-match strategy)
            if spec.strategy == "latest" or name.startswith("ending"):
                found.update(self.latest(none))
            else:
                raise ValueError(f"No offset matched the timestamp given in '{name}' for partitions "
                                 f"{', '.join(f'{t}-{p}={ts[(t, p)]}' for t, p in none)} (no record is "
                                 "that new); set the ...ByTimestampStrategy option to 'latest' to read "
                                 "from the end instead")
        return found


def check_data_loss(start: dict[TP, int], earliest: dict[TP, int], *, fail: bool, what: str) -> dict[TP, int]:
    """Move starts below a partition's log start offset up to it, or fail with Spark's message."""
    out = dict(start)
    for tp, s in start.items():
        e = earliest.get(tp)
        if e is not None and s < e:
            msg = (f"{what}: partition {tp[0]}-{tp[1]} starts at offset {e} but offset {s} was asked for; "
                   f"records {s}-{e - 1} are gone.")
            if fail:
                raise DataLossError(f"{msg} {DATA_LOSS}")
            log.warning("%s Skipping them (failOnDataLoss=false).", msg)
            out[tp] = e
    return out


@dataclass(frozen=True)
class Range:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_ranges(start: dict[TP, int], end: dict[TP, int], min_partitions: int | None,
                max_records: int | None = None) -> list[Range]:
    """The Spark tasks of a read, as Spark's KafkaOffsetRangeCalculator plans them: one range
    per partition with records; ``maxRecordsPerPartition`` cuts a range into parts of at most
    that many offsets; when there are still fewer ranges than ``minPartitions``, the ranges
    whose share of the total rounds to more than one part are cut into that many near-equal
    parts (the small ones stay whole and are left out of the share), so the count comes out
    near minPartitions, not above it."""
    ranges = [Range(t, p, start[(t, p)], e) for (t, p), e in sorted(end.items())
              if (t, p) in start and e > start[(t, p)]]
    if max_records:
        ranges = [part for r in ranges for part in _cut(r, -(-r.size // max_records))]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    whole = {r for r in ranges if _parts(r.size, total, min_partitions) == 1}
    split_total = total - sum(r.size for r in whole)
    split_min = max(min_partitions - len(whole), 1)
    out: list[Range] = []
    for r in ranges:
        out.extend([r] if r in whole else _cut(r, _parts(r.size, split_total, split_min)))
    return out


def _parts(size: int, total: int, wanted: int) -> int:
    """Spark's getPartCount: the range's share of ``wanted`` parts, rounded half up, at least 1."""
    return max(int(math.floor(size / total * wanted + 0.5)), 1) if total else 1


def _cut(r: Range, parts: int) -> list[Range]:
    """``parts`` contiguous pieces; integer division, the last pieces take the remainder."""
    out, remaining, at = [], r.size, r.start
    for i in range(parts):
        size = remaining // (parts - i)
        remaining -= size
        if size > 0:
            out.append(Range(r.topic, r.partition, at, at + size))
        at += size
    return out


def rate_limit(start: dict[TP, int], latest: dict[TP, int], limit: int) -> dict[TP, int]:
    """Spark's admission control for maxOffsetsPerTrigger: ``limit`` offsets shared among the
    partitions in proportion to their backlog."""
    lag = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(lag.values())
    if total <= limit:
        return dict(latest)
    out = {}
    for tp, l in lag.items():
        s = start.get(tp, latest[tp])
        share = l * limit / total
        out[tp] = s + (int(math.ceil(share)) if share < 1 and l > 0 else int(share))
        out[tp] = min(out[tp], latest[tp])
    return out

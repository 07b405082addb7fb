"""Driver-side offset work of the ``kwire`` source: which partitions a query reads, their
earliest / latest / by-timestamp offsets (ListOffsets through confluent-kafka's AdminClient),
and the planning of offset ranges into Spark input partitions (minPartitions splitting,
maxOffsetsPerTrigger admission), in the manner of Spark's KafkaOffsetReader and
KafkaOffsetRangeCalculator.

Offsets in Spark's checkpoint are JSON: ``{"topic": {"0": 42, "1": 7}}``.

confluent_kafka (~40 ms) is imported in the functions that use it: Spark's Python processes
that only plan a query (schema, options) import this module through kwire.spark.source.
"""
from __future__ import annotations

import logging
import math
import re
import time
from dataclasses import dataclass

from kwire.spark.options import EARLIEST, LATEST, OffsetSpec, ReadOptions

log = logging.getLogger("kwire.spark")

# One ListOffsets attempt waits at most this long before the leaders are looked up again (see
# OffsetReader._list); a healthy answer takes milliseconds, even on a loaded machine.
_LIST_ATTEMPT_S = 2.0
OFFSET_INVALID = -1001   # librdkafka's RD_KAFKA_OFFSET_INVALID

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


def _retry_codes() -> frozenset:
    from confluent_kafka import KafkaError as K  # noqa: PLC0415 - start-up time (module doc)
    return frozenset((K._TIMED_OUT, K._TRANSPORT, K._ALL_BROKERS_DOWN, K.REQUEST_TIMED_OUT,
                      K.NOT_LEADER_FOR_PARTITION, K.LEADER_NOT_AVAILABLE, K.NOT_ENOUGH_REPLICAS,
                      K.OFFSET_NOT_AVAILABLE,
                      K.FENCED_LEADER_EPOCH, K.UNKNOWN_LEADER_EPOCH))


class OffsetReader:
    """One AdminClient on the driver, opened lazily, closed by ``close()``. ``leaders``: each
    partition's leader ``(host, port)`` in the last Metadata answer (subscribe and pattern
    queries), handed to the tasks with their ranges so that a Python worker's first read needs
    no client and no Metadata request of its own (kwire.spark.fetch)."""

    def __init__(self, opts: ReadOptions):
        self.opts = opts
        self._admin = None
        self.leaders: dict[TP, tuple[str, int]] = {}

    @property
    def admin(self):
        if self._admin is None:
            from confluent_kafka.admin import AdminClient  # noqa: PLC0415 - start-up time (module doc)
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
        from confluent_kafka import KafkaException  # noqa: PLC0415 - start-up time (module doc)

        # Short attempts within kafka.request.timeout.ms, as _list does: librdkafka sends an
        # application Metadata request to one broker it holds as up; when that broker has just
        # died (a SIGKILLed leader) the one request can wait out the whole timeout and fail the
        # query, where a second attempt goes to a live broker (a running query died so after a
        # leader's SIGKILL on three nodes, tests/ecosystem/test_spark_kafka.py's failover run)
        deadline = time.monotonic() + self._timeout()
        while True:
            attempt = min(_LIST_ATTEMPT_S, max(0.1, deadline - time.monotonic()))
            try:
                md = self.admin.list_topics(timeout=attempt)
                break
            except KafkaException as exc:   # librdkafka says "Broker transport failure", naming no address
                if time.monotonic() >= deadline:
                    raise ConnectionError(f"kwire source: no broker answered at {o.client.get('bootstrap.servers')} "
                                          f"within {self._timeout():g} s (kafka.request.timeout.ms): "
                                          f"{exc.args[0].str()}") from None
                log.info("Metadata: %s; asking again", exc.args[0].str())
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))   # a failure at once is no spin
        if o.strategy == "subscribe":
            wanted = [t for t in o.topics if t in md.topics and md.topics[t].error is None]
        else:
            rx = re.compile(o.pattern)
            wanted = [t for t in md.topics if rx.fullmatch(t) and not t.startswith("__")
                      and md.topics[t].error is None]
        self.leaders = {(t, p): (md.brokers[pm.leader].host, md.brokers[pm.leader].port)
                        for t in wanted for p, pm in md.topics[t].partitions.items() if pm.leader in md.brokers}
        return sorted((t, p) for t in wanted for p in md.topics[t].partitions)

    # -- offsets ------------------------------------------------------------------------
    def _list(self, specs: dict) -> dict[TP, int]:
        if not specs:
            return {}
        from confluent_kafka import IsolationLevel, KafkaException, TopicPartition  # noqa: PLC0415 - start-up time (module doc)
        iso = (IsolationLevel.READ_COMMITTED if self.opts.client.get("isolation.level") == "read_committed"
               else IsolationLevel.READ_UNCOMMITTED)
        # librdkafka's ListOffsets sends each partition to the leader in the AdminClient's metadata
        # cache. When that broker is down it waits there for the whole request timeout and then
        # answers offset -1001 (OFFSET_INVALID) with no error; and as an AdminClient has no topic
        # handles nothing refreshes that cache: after the leader's broker dies every call (every
        # micro-batch) waits out request.timeout.ms (30 s) and plans nothing for the partition.
        # Kafka's admin client (KafkaAdminClient's ListOffsets call) retries a partition against
        # fresh metadata when its leader fails; we do the same with short attempts, looking the
        # leaders up again after each failed one, within request.timeout.ms.
        deadline = time.monotonic() + self._timeout()
        out: dict[TP, int] = {}
        todo = dict(specs)
        while True:
            attempt = min(_LIST_ATTEMPT_S, max(0.1, deadline - time.monotonic()))
            req = {TopicPartition(t, p): s for (t, p), s in todo.items()}
            futs = self.admin.list_offsets(req, isolation_level=iso, request_timeout=attempt)
            failed: dict[TP, str] = {}
            for tp, f in futs.items():
                key = (tp.topic, tp.partition)
                try:
                    off = f.result().offset
                except KafkaException as exc:
                    err = exc.args[0]
                    if err.code() not in _retry_codes():
                        raise
                    failed[key] = err.str()
                    continue
                if off == OFFSET_INVALID:
                    failed[key] = "no answer from the leader"
                else:
                    out[key] = off
            if not failed:
                return {tp: out[tp] for tp in specs}
            what = ", ".join(f"{t}-{p}: {m}" for (t, p), m in sorted(failed.items()))
            if time.monotonic() >= deadline:
                raise TimeoutError(f"ListOffsets found no offset within {self._timeout():g} s "
                                   f"(kafka.request.timeout.ms) for {what}")
            log.info("ListOffsets failed (%s); looking the leaders up again", what)
            todo = {tp: todo[tp] for tp in failed}
            self._refresh_leaders({t for t, _ in todo}, deadline)

    def _refresh_leaders(self, topics: set, deadline: float) -> None:
        """A Metadata request for ``topics``, whose answer replaces their leaders in the
        AdminClient's cache (as librdkafka handles any Metadata response)."""
        from confluent_kafka import KafkaException  # noqa: PLC0415 - start-up time (module doc)
        for t in sorted(topics):
            try:
                self.admin.list_topics(topic=t, timeout=max(0.1, deadline - time.monotonic()))
            except KafkaException as exc:   # no broker answered: the next attempt will tell
                log.info("Metadata for %s: %s", t, exc.args[0].str())

    def earliest(self, tps) -> dict[TP, int]:
        from confluent_kafka.admin import OffsetSpec as S  # noqa: PLC0415 - start-up time (module doc)
        return self._list({tp: S.earliest() for tp in tps})

    def latest(self, tps) -> dict[TP, int]:
        from confluent_kafka.admin import OffsetSpec as S  # noqa: PLC0415 - start-up time (module doc)
        return self._list({tp: S.latest() for tp in tps})

    def for_timestamps(self, tps_ts: dict[TP, int]) -> dict[TP, int]:
        """The first offset at or after each timestamp; -1 where no record is that new."""
        from confluent_kafka.admin import OffsetSpec as S  # noqa: PLC0415 - start-up time (module doc)
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
    # the partition's leader (host, port) as the driver's metadata named it when it planned the
    # range: where kwire.spark.fetch sends its first Fetch; a stale one costs a hand-over to
    # librdkafka (NOT_LEADER_OR_FOLLOWER, or no connection), never a wrong answer
    leader: tuple | None = None

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_ranges(start: dict[TP, int], end: dict[TP, int], min_partitions: int | None,
                max_records: int | None = None, leaders: dict | None = None) -> list[Range]:
    """The Spark tasks of a read, as Spark's KafkaOffsetRangeCalculator plans them: one range
    per partition with records; ``maxRecordsPerPartition`` cuts a range into parts of at most
    that many offsets; when there are still fewer ranges than ``minPartitions``, the ranges
    whose share of the total rounds to more than one part are cut into that many near-equal
    parts (the small ones stay whole and are left out of the share), so the count comes out
    near minPartitions, not above it. ``leaders`` (OffsetReader.leaders) go with the ranges."""
    leaders = leaders or {}
    ranges = [Range(t, p, start[(t, p)], e, leaders.get((t, p))) for (t, p), e in sorted(end.items())
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
            out.append(Range(r.topic, r.partition, at, at + size, r.leader))
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

"""The coordinator's WriteTxnMarkers sender (Kafka's TransactionMarkerChannelManager and its
completion handler), at the Trio edge.

Each ``TxnMarkerJob`` the coordinator hands over is driven by a task: its partitions still
without a marker are grouped by their leader (from the metadata image) and queued to that
broker; one task per broker drains its queue into one WriteTxnMarkers request (v1, the markers
of every transaction waiting for that broker) and hands each transaction its partitions'
errors. Markers for partitions this broker leads are written at once, in process, by the
marker writer (kwire.transactions.marker_writer, which the WriteTxnMarkers handler also calls;
no queue: batching them saves no request, and each task hop delays the transaction's
completion, which the producer's next AddPartitionsToTxn waits for). Per partition:

- NONE: written (``coordinator.marker_written``); once every partition has one, the
  coordinator writes CompleteCommit/CompleteAbort;
- the topic or partition is gone from the metadata: dropped, as if written (Kafka does the
  same: nothing is left to mark);
- INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED: the job is abandoned (a newer
  coordinator or epoch owns the transaction);
- CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_REQUIRED_ACKS: a bug on
  one side: logged, the job abandoned;
- anything else (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION while the topic exists,
  NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, no leader, a broker that
  cannot be reached): retried after ``retry_backoff_s`` with fresh metadata.

Timing, for operators and bench/transactions_bench.py: with the logger
``kwire.transactions.timing`` at DEBUG, the EndTxn handler notes each request's arrival
(``note_end_txn``) and a line "<id>: markers written <ms> ms after EndTxn" is logged once every
partition of the transaction has its marker; nothing is noted or logged otherwise.

A job also stops as soon as the coordinator no longer wants it (``marker_job_live``: the
``__transaction_state`` partition moved away or was loaded again; the new coordinator sends
the markers again).
"""
from __future__ import annotations

import logging
import time
from typing import Awaitable, Callable

import trio

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.transactions.coordinator import TxnMarkerJob
from kwire.transactions.marker_writer import MarkerWrite, write_markers

E = ErrorCode
log = logging.getLogger("kwire.transactions")
timing_log = logging.getLogger("kwire.transactions.timing")

WRITE_TXN_MARKERS_VERSION = 1
ABANDON = frozenset({E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED})
BUGS = frozenset({E.CORRUPT_MESSAGE, E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_REQUIRED_ACKS})

#: transport(node_id, request) -> response body; raises OSError / trio errors when unreachable
Transport = Callable[[int, object], Awaitable[object]]


class _Queue:
    """The markers waiting for one broker."""

    def __init__(self) -> None:
        self.entries: list[tuple[TxnMarkerJob, list[tuple[str, int]], dict]] = []
        self.ready = trio.Event()


class TxnMarkerSender:
    def __init__(self, coordinator, image: Callable[[], object], transport: Transport, nursery,
                 retry_backoff_s: float = 0.1, local_node: int | None = None,
                 write_local: Callable[[list], Awaitable[None]] | None = None):
        self.coordinator = coordinator
        self.local_node = local_node   # this broker: its partitions' markers skip the queue
        #: write_local(writes): this broker's markers written in process (local_writer);
        #: None: through ``transport`` as a WriteTxnMarkers request
        self.write_local = write_local
        self.image = image
        self.transport = transport
        self.nursery = nursery
        self.retry_backoff_s = retry_backoff_s
        self.queues: dict[int, _Queue] = {}
        self.api = api("WriteTxnMarkers")
        self.in_flight = 0
        self.end_txn_arrivals: dict[str, float] = {}   # id -> perf_counter() of its EndTxn (timing)

    def note_end_txn(self, transactional_id: str) -> None:
        """The EndTxn handler, on arrival: remember when, if the timing logger is on."""
        if timing_log.isEnabledFor(logging.DEBUG):
            self.end_txn_arrivals[transactional_id] = time.perf_counter()

    def submit(self, job: TxnMarkerJob) -> None:
        """The coordinator's ``send_markers``: drive the job in a task."""
        self.in_flight += 1
        self.nursery.start_soon(self._drive, job)

    # ------------------------------------------------------------------ one transaction
    async def _drive(self, job: TxnMarkerJob) -> None:
        coord = self.coordinator
        try:
            while job.partitions and coord.marker_job_live(job):
                by_leader, gone, leaderless = self._plan(job)
                for tp in gone:
                    log.info("%s: %s-%d is gone: no marker to write", job.transactional_id, *tp)
                    coord.marker_written(job, tp)
                results: dict[tuple[str, int], ErrorCode | None] = {}
                local = by_leader.pop(self.local_node, None) if self.local_node is not None else None
                if by_leader:
                    async with trio.open_nursery() as n:
                        for node, tps in by_leader.items():
                            n.start_soon(self._ask, node, job, tps, results)
                        if local:
                            n.start_soon(self._ask_local, job, local, results)
                elif local:
                    await self._ask_local(job, local, results)
                abandon = None
                for tp, error in results.items():
                    if error == E.NONE:
                        coord.marker_written(job, tp)
                    elif error in ABANDON or error in BUGS:
                        abandon = (tp, error)
                    elif error == E.UNKNOWN_TOPIC_OR_PARTITION and self._gone(tp):
                        coord.marker_written(job, tp)
                if abandon is not None:
                    tp, error = abandon
                    (log.error if error in BUGS else log.info)(
                        "%s: the marker for %s-%d was refused with %s: not sending this transaction's "
                        "markers any more", job.transactional_id, tp[0], tp[1], error.name)
                    return
                if job.partitions and coord.marker_job_live(job):
                    if leaderless or any(e != E.NONE for e in results.values()):
                        log.debug("%s: markers of %s retried", job.transactional_id, sorted(job.partitions))
                        await trio.sleep(self.retry_backoff_s)
        except Exception:  # noqa: BLE001 - one transaction must not stop the broker
            log.exception("%s: sending transaction markers failed", job.transactional_id)
        finally:
            self.in_flight -= 1
            t0 = self.end_txn_arrivals.pop(job.transactional_id, None) if self.end_txn_arrivals else None
            if t0 is not None and not job.partitions:
                timing_log.debug("%s: markers written %.3f ms after EndTxn", job.transactional_id,
                                 (time.perf_counter() - t0) * 1000)

    def _plan(self, job: TxnMarkerJob):
        image = self.image()
        by_leader: dict[int, list[tuple[str, int]]] = {}
        gone, leaderless = [], []
        for tp in sorted(job.partitions):
            t = image.topics.get(tp[0])
            p = t.partitions.get(tp[1]) if t is not None else None
            if p is None:
                gone.append(tp)
                continue
            b = image.brokers.get(p.leader)
            if p.leader < 0 or b is None or b.fenced:
                leaderless.append(tp)
                continue
            by_leader.setdefault(p.leader, []).append(tp)
        return by_leader, gone, leaderless

    def _gone(self, tp) -> bool:
        t = self.image().topics.get(tp[0])
        return t is None or tp[1] not in t.partitions

    async def _ask(self, node: int, job: TxnMarkerJob, tps, results: dict) -> None:
        q = self.queues.get(node)
        if q is None:
            q = self.queues[node] = _Queue()
            self.nursery.start_soon(self._broker_loop, node, q)
        answer: dict = {"done": trio.Event(), "errors": None}
        q.entries.append((job, tps, answer))
        q.ready.set()
        await answer["done"].wait()
        errors = answer["errors"] or {}
        for tp in tps:
            results[tp] = errors.get(tp)

    async def _ask_local(self, job: TxnMarkerJob, tps, results: dict) -> None:
        """This broker's own partitions: written by the marker writer directly (no request to
        build or answer to read)."""
        if self.write_local is None:
            errors = (await self._send(self.local_node, [(job, tps)])).get(job.producer_id, {})
            for tp in tps:
                results[tp] = errors.get(tp)
            return
        writes = [MarkerWrite(topic, p, job.producer_id, job.producer_epoch, job.committed, job.coordinator_epoch)
                  for topic, p in tps]
        try:
            await self.write_local(writes)
        except Exception:  # noqa: BLE001 - as a failed request: retried
            log.exception("%s: writing markers here failed", job.transactional_id)
            return
        for w in writes:
            results[(w.topic, w.partition)] = E(w.error)

    # ------------------------------------------------------------------ one broker
    async def _broker_loop(self, node: int, q: _Queue) -> None:
        while True:
            await q.ready.wait()
            q.ready = trio.Event()
            batch, q.entries = q.entries, []
            if not batch:
                continue
            by_pid = await self._send(node, [(job, tps) for job, tps, _answer in batch])
            for job, _tps, answer in batch:
                answer["errors"] = by_pid.get(job.producer_id, {})
                answer["done"].set()

    async def _send(self, node: int, jobs) -> dict[int, dict]:
        """One WriteTxnMarkers request to ``node`` with the markers of ``jobs`` [(job,
        partitions)]: {producer id: {(topic, partition): error}}; {} when it failed."""
        Req = self.api.request
        Marker, Topic = Req.struct("WritableTxnMarker"), Req.struct("WritableTxnMarkerTopic")
        markers = []
        for job, tps in jobs:
            by_topic: dict[str, list[int]] = {}
            for topic, p in tps:
                by_topic.setdefault(topic, []).append(p)
            markers.append(Marker(producer_id=job.producer_id, producer_epoch=job.producer_epoch,
                                  transaction_result=job.committed,
                                  topics=[Topic(name=t, partition_indexes=ps) for t, ps in by_topic.items()],
                                  coordinator_epoch=job.coordinator_epoch))
        by_pid: dict[int, dict] = {}
        try:
            resp = await self.transport(node, Req.cls(markers=markers))
            for m in resp.markers:
                errs = by_pid.setdefault(m.producer_id, {})
                for t in m.topics:
                    for part in t.partitions:
                        errs[(t.name, part.partition_index)] = E(part.error_code)
        except Exception as exc:  # noqa: BLE001 - unreachable, closed, a bad answer: retried
            log.info("WriteTxnMarkers to broker %d failed: %s", node, exc)
        return by_pid


def local_writer(broker) -> Callable[[list], Awaitable[None]]:
    """The markers of this broker's own partitions, written in process by the marker writer
    (kwire.transactions.marker_writer, the WriteTxnMarkers handler's code)."""
    async def write(writes) -> None:
        await write_markers(broker, writes, "txn-coordinator")

    return write


def channel_transport(channel) -> Transport:
    """WriteTxnMarkers requests to the other brokers, over ``channel``
    (kwire.coordinator.channel.BrokerChannel); this broker's own markers never take it (they
    go through ``local_writer``)."""
    async def transport(node: int, req):
        return await channel.request(node, "WriteTxnMarkers", WRITE_TXN_MARKERS_VERSION, req)

    return transport

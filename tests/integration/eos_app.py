"""An exactly-once consume-transform-produce application on confluent-kafka, run as a child
process by the SIGKILL tests (tests/integration/test_transactions_eos_kill.py and
tests/replication/test_transactions_eos_cluster.py).

It reads ``--input`` as a member of ``--group`` (static membership, so a restarted instance
takes its predecessor's place at once instead of waiting out its session), writes
``out:<value>`` to the same partition of ``--output`` and commits the consumed positions
with the records in one transaction (sendOffsetsToTransaction), ``--batch`` records at a time.
Errors are handled the way the clients document it: an abortable error aborts the
transaction and rewinds the consumer to the group's committed offsets; a retriable one
retries; a fatal one (fenced) exits with status 3 for a supervisor to restart it.

A watchdog ends the process (status 4, ``STALLED <call>``) when one transactional call blocks
``--stall-after`` seconds past its own timeout: librdkafka's send_offsets_to_transaction can
hang for good when the group coordinator it cached was killed and dropped from the metadata
(confluentinc/librdkafka#5511; its timeout is not enforced, #5456), and a restart is how a
deployment gets out of that. The restarted instance fences the stuck one.

It prints one line per event on stdout for the test to follow: ``READY <n>``, ``COMMITTED <n>``
(n: input records whose offsets are committed, over all partitions), ``ABORTED <reason>``,
``RETRY <reason>``, ``HOLD``, ``STALLED <call>``, ``FATAL <reason>`` and ``DONE``. With ``--hold-at K`` the K-th transaction of this incarnation stops
after its records are flushed and its offsets sent, and waits there to be killed: a
deterministic "mid-transaction". It exits 0 with ``DONE`` once the committed offsets reach the
input's end offsets as they were at start.

Only confluent-kafka is imported, so it runs as ``python tests/integration/eos_app.py``.
"""
from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def say(*words) -> None:
    print(*words, flush=True)


def transform(value: bytes) -> bytes:
    return b"out:" + value


class Watchdog(threading.Thread):
    """Exit the process when a guarded call runs longer than ``limit`` seconds."""

    def __init__(self, limit: float):
        super().__init__(daemon=True, name="watchdog")
        self.limit = limit
        self.current: tuple[str, float] | None = None

    def guard(self, name: str, fn):
        self.current = (name, time.monotonic())
        try:
            return fn()
        finally:
            self.current = None

    def run(self) -> None:
        while True:
            time.sleep(0.2)
            cur = self.current
            if cur is not None and time.monotonic() - cur[1] > self.limit:
                say("STALLED", cur[0])
                os._exit(4)


class App:
    def __init__(self, args):
        self.args = args
        self.watchdog = Watchdog(args.timeout + args.stall_after)
        self.watchdog.start()
        common = {"bootstrap.servers": args.bootstrap, "reconnect.backoff.max.ms": 500,
                  "topic.metadata.refresh.interval.ms": 2000}
        if args.debug:
            common["debug"] = args.debug        # librdkafka's debug contexts, to stderr
        self.consumer = Consumer({**common, "group.id": args.group, "group.instance.id": args.instance_id,
                                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                  "isolation.level": "read_committed", "session.timeout.ms": 10000})
        self.producer = Producer({**common, "transactional.id": args.transactional_id,
                                  "transaction.timeout.ms": args.transaction_timeout_ms,
                                  "linger.ms": 5, "message.timeout.ms": args.transaction_timeout_ms})
        self.assigned = threading.Event()
        self.committed: dict[int, int] = {}
        self.end: dict[int, int] = {}

    # ------------------------------------------------------------------ setup
    def start(self) -> None:
        self.watchdog.guard("init_transactions",            # fences and aborts a predecessor
                            lambda: self.producer.init_transactions(self.args.timeout))
        md = self.consumer.list_topics(self.args.input, timeout=self.args.timeout)
        parts = sorted(md.topics[self.args.input].partitions)
        for p in parts:
            _, hw = self.consumer.get_watermark_offsets(TopicPartition(self.args.input, p),
                                                        timeout=self.args.timeout)
            self.end[p] = hw
        self.consumer.subscribe([self.args.input], on_assign=lambda c, tps: self.assigned.set())
        self.refresh_committed()
        say("READY", sum(self.committed.values()))

    def refresh_committed(self) -> None:
        tps = [TopicPartition(self.args.input, p) for p in self.end]
        for tp in self.consumer.committed(tps, timeout=self.args.timeout):
            self.committed[tp.partition] = max(tp.offset, 0)

    def done(self) -> bool:
        return all(self.committed.get(p, 0) >= hw for p, hw in self.end.items())

    def rewind(self) -> None:
        """Back to the group's committed offsets: what the aborted transaction read is read again."""
        assignment = self.consumer.assignment()
        if not assignment:
            return
        for tp in self.consumer.committed(assignment, timeout=self.args.timeout):
            self.consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))

    # ------------------------------------------------------------------ the loop
    def run(self) -> int:
        self.start()
        txns = 0
        while not self.done():
            msgs = [m for m in self.consumer.consume(self.args.batch, timeout=0.5) if m.error() is None]
            if not msgs:
                continue
            txns += 1
            try:
                self.transact(msgs, hold=txns == self.args.hold_at)
            except KafkaException as exc:
                err = exc.args[0]
                if err.fatal():
                    say("FATAL", err.str())
                    return 3
                # abortable, or retriable but we gave up retrying: abort and read it all again
                say("ABORTED", err.str())
                self.abort()
                self.rewind()
        say("DONE")
        self.consumer.close()
        self.producer.flush(self.args.timeout)
        return 0

    def transact(self, msgs, hold: bool) -> None:
        p = self.producer
        p.begin_transaction()
        for m in msgs:
            p.produce(self.args.output, key=m.key(), value=transform(m.value()), partition=m.partition())
        positions = self.consumer.position(self.consumer.assignment())
        self.retry("send_offsets_to_transaction", lambda: p.send_offsets_to_transaction(
            positions, self.consumer.consumer_group_metadata(), self.args.timeout))
        if hold:
            p.flush(self.args.timeout)
            say("HOLD")
            threading.Event().wait()                  # until SIGKILL
        self.retry("commit_transaction", lambda: p.commit_transaction(self.args.timeout))
        for tp in positions:
            if tp.offset >= 0:
                self.committed[tp.partition] = tp.offset
        say("COMMITTED", sum(self.committed.values()))

    def retry(self, name: str, op) -> None:
        """A retriable error (e.g. a timeout while a broker restarts) means: call it again."""
        deadline = time.monotonic() + self.args.timeout
        while True:
            try:
                return self.watchdog.guard(name, op)
            except KafkaException as exc:
                err = exc.args[0]
                if not err.retriable() or time.monotonic() > deadline:
                    raise
                say("RETRY", err.str())

    def abort(self) -> None:
        deadline = time.monotonic() + self.args.timeout
        while True:
            try:
                self.watchdog.guard("abort_transaction", lambda: self.producer.abort_transaction(self.args.timeout))
                return
            except KafkaException as exc:
                err = exc.args[0]
                if err.fatal() or not err.retriable() or time.monotonic() > deadline:
                    raise
                say("RETRY", err.str())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--transactional-id", required=True)
    ap.add_argument("--instance-id", default="eos-app-0")
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--hold-at", type=int, default=0)
    ap.add_argument("--transaction-timeout-ms", type=int, default=30000)
    ap.add_argument("--stall-after", type=float, default=15.0,
                    help="seconds past --timeout after which a blocked transactional call ends the process")
    ap.add_argument("--debug", default="", help="librdkafka debug contexts, e.g. eos,protocol")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds for each blocking client call")
    args = ap.parse_args(argv)
    faulthandler.register(signal.SIGUSR1)     # the test asks where a stalled app is stuck
    try:
        return App(args).run()
    except KafkaException as exc:
        say("FATAL", exc.args[0].str())
        return 3


if __name__ == "__main__":
    sys.exit(main())

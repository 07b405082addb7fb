"""Running eos_app.py as a child process for the exactly-once SIGKILL tests: start it, follow
the lines it prints, wait for an event with a deadline, SIGKILL it by PID, restart it; and the
checks on the output topic (every input record exactly once, in input order per partition).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kwire.testing.wait import wait_until

APP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "eos_app.py")
END = b"END"


class EosApp:
    """One incarnation of the application at a time; ``restarts`` counts them."""

    def __init__(self, bootstrap: str, input: str, output: str, *, group: str, transactional_id: str,
                 log_path: str, batch: int = 20, extra: tuple[str, ...] = (), program: list[str] | None = None):
        """``program``: the command of another implementation with eos_app.py's arguments and
        lines (tests/transactions/java/EosApp.java); eos_app.py by default."""
        self.argv = [*(program or [sys.executable, APP]), "--bootstrap", bootstrap, "--input", input, "--output", output,
                     "--group", group, "--transactional-id", transactional_id, "--batch", str(batch), *extra]
        if os.environ.get("KWIRE_EOS_DEBUG"):      # librdkafka debug contexts into the app's log
            self.argv += ["--debug", os.environ["KWIRE_EOS_DEBUG"]]
        self.log_path = log_path
        #: what makes a live app write its stacks: faulthandler's SIGUSR1, or a JVM's SIGQUIT thread dump
        self.stack_signal = signal.SIGUSR1 if program is None else signal.SIGQUIT
        self.proc: subprocess.Popen | None = None
        self.lines: list[str] = []
        self.lock = threading.Lock()
        self.incarnations = 0

    # ------------------------------------------------------------------ process
    def start(self, *more: str) -> "EosApp":
        assert not self.alive
        with self.lock:
            self.lines = []
        self.incarnations += 1
        self.proc = subprocess.Popen([*self.argv, *more], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=open(self.log_path, "ab"), text=True, bufsize=1)
        threading.Thread(target=self._follow, args=(self.proc,), daemon=True).start()
        return self

    def _follow(self, proc: subprocess.Popen) -> None:
        with open(self.log_path, "a") as log:
            for line in proc.stdout:
                log.write(f"[{self.incarnations}] {line}")
                log.flush()
                with self.lock:
                    if proc is self.proc:
                        self.lines.append(line.strip())

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL by PID, then reap."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.proc.stdout.close()
        self.proc = None

    def exit_code(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    # ------------------------------------------------------------------ events
    def seen(self, word: str) -> list[str]:
        with self.lock:
            return [ln for ln in self.lines if ln.split(" ", 1)[0] == word]

    def progress(self) -> int:
        """Input records committed, as the last READY or COMMITTED line of this incarnation
        says; -1 before it is ready."""
        with self.lock:
            said = [ln for ln in self.lines if ln.split(" ", 1)[0] in ("READY", "COMMITTED")]
        return int(said[-1].split()[1]) if said else -1

    def wait_for(self, what, timeout: float, message: str) -> None:
        def check():
            value = what()
            if not value and not self.alive:
                code = self.proc.returncode if self.proc is not None else None
                raise AssertionError(f"the app exited ({code}) before: {message}\n{self.tail()}")
            return value
        try:
            wait_until(check, timeout, interval=0.02, message=message)
        except AssertionError as exc:
            self.stacks()
            raise AssertionError(f"{exc}\n{self.tail()}") from None

    def stacks(self) -> None:
        """Have a live app write its stacks to its log (faulthandler on SIGUSR1; a JVM on SIGQUIT)."""
        if self.alive:
            os.kill(self.proc.pid, self.stack_signal)
            time.sleep(0.2)            # let it write before the log is read: diagnostics only

    def tail(self, n: int = 3000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""


def produce_input(bootstrap: str, topic: str, partitions: int, per_partition: int) -> dict[int, list[bytes]]:
    """``in-<p>-<i>`` records, acknowledged; {partition: values in order}."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    sent = {part: [b"in-%d-%05d" % (part, i) for i in range(per_partition)] for part in range(partitions)}
    for i in range(per_partition):
        for part in range(partitions):
            p.produce(topic, value=sent[part][i], partition=part)
    assert p.flush(60) == 0
    return sent


def end_partitions(bootstrap: str, topic: str, partitions: int) -> None:
    """A plain END record after everything the application committed, in each partition."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for part in range(partitions):
        p.produce(topic, value=END, partition=part)
    assert p.flush(60) == 0


def read_to_end(bootstrap: str, topic: str, partitions: int, isolation: str,
                timeout: float = 60.0) -> dict[int, list[bytes]]:
    """{partition: values before END}, read with ``isolation``."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.monotonic_ns()}",
                  "isolation.level": isolation, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
    ended: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(ended) < partitions and time.monotonic() < deadline:
            for m in c.consume(500, timeout=0.2):
                if m.error() is not None or m.partition() in ended:
                    continue
                if m.value() == END:
                    ended.add(m.partition())
                else:
                    got[m.partition()].append(m.value())
    finally:
        c.close()
    assert len(ended) == partitions, f"END seen on partitions {sorted(ended)} of {partitions} in {timeout}s"
    return got


def check_exactly_once(sent: dict[int, list[bytes]], committed: dict[int, list[bytes]]) -> None:
    """Every input record is in the output once, in input order, nothing else."""
    for part, values in sent.items():
        want = [b"out:" + v for v in values]
        have = committed[part]
        if have != want:
            first = next((i for i, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
            raise AssertionError(
                f"partition {part}: {len(have)} records for {len(want)} inputs, "
                f"{len(have) - len(set(have))} duplicated, {len(set(want) - set(have))} missing, "
                f"first difference at {first}: {have[first:first + 3]} vs {want[first:first + 3]}")

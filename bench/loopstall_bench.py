"""Nothing heavy on the Trio loop (issue 31): a second client's Metadata latency while
another produces 1 MiB zstd batches and the partition's segment rolls every second.

A ``kwire`` broker runs in a subprocess (this module with ``--serve``) under a Trio
Instrument that times every task step (the longest one is the longest time the loop could
answer nobody) and a sampler thread that, while one step has run for more than 10 ms, takes
the loop thread's stack: the places where the loop blocks, printed with their sample count.
A confluent-kafka producer (compression.type=zstd, batch.size 1 MiB, linger.ms 1000, acks=1)
sends 1000-byte records of random hex (zstd about 2:1: each batch is 1 MiB of records, about
half that on the wire) as fast as it can to one partition
whose topic has segment.ms=1000; a probe subprocess (this module with ``--probe``) sends
Metadata v8 for that topic every 10 ms on its own connection and times each answer.

Budget: Metadata p99 <= 20 ms. Rows: Metadata p50 / p99 / max, the longest loop step, the
steps over 20 ms, segments rolled and MiB produced. The numbers depend on the machine's
load (a shared 2-core machine: see bench/README.md); ``--quick`` runs 6 s instead of 15 s.

``run(quick=False)`` -> rows ``(name, value, unit, budget, verdict)``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPIC = "loopstall"
BUDGET_P99_MS = 20.0
VALUE_SIZE = 1000
STALL_SAMPLE_S = 0.010   # a step running longer than this gets its stack sampled


# ------------------------------------------------------------------ the broker (subprocess)
class StepTimer:
    """A Trio Instrument: every task step's duration, the longest and its task, and a
    sampler thread that records the loop thread's stack during steps longer than 10 ms."""

    def __init__(self):
        self.steps: list[tuple[float, float, str]] = []   # (wall start, seconds, task) of steps > 1 ms
        self.count = 0
        self.stacks: list[tuple[float, str, str]] = []   # (wall time, loop stack, other threads' tops)
        self._started: float | None = None
        self._loop_thread = threading.get_ident()
        self._stop = threading.Event()
        threading.Thread(target=self._sample, name="stall-sampler", daemon=True).start()

    def before_task_step(self, task):
        self._wall = time.time()
        self._started = time.perf_counter()

    def after_task_step(self, task):
        t0 = self._started
        self._started = None
        if t0 is None:
            return
        d = time.perf_counter() - t0
        self.count += 1
        if d > 0.001:
            self.steps.append((self._wall, d, task.name))

    def _sample(self):
        while not self._stop.wait(0.002):
            t0 = self._started
            if t0 is None or time.perf_counter() - t0 < STALL_SAMPLE_S:
                continue
            current = sys._current_frames()
            others = sorted(_where(f, 2) for t, f in current.items()
                            if t not in (self._loop_thread, threading.get_ident()))
            self.stacks.append((time.time(), _where(current.get(self._loop_thread), 6), " | ".join(others)))

    def report(self) -> dict:
        self._stop.set()
        return {"count": self.count, "steps": self.steps, "stacks": self.stacks}


def _where(frame, depth: int) -> str:
    frames = []
    while frame is not None and len(frames) < depth:
        code = frame.f_code
        if "kwire" in code.co_filename or not frames:
            frames.append(f"{Path(code.co_filename).name}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return " < ".join(frames)


def serve(port: int, data_dir: str, out_path: str) -> None:
    import trio

    from kwire.app import run_broker
    from kwire.config import BrokerConfig

    cfg = BrokerConfig.from_properties("", {"log.dirs": data_dir, "metrics.listen": ""})
    timer = StepTimer()
    try:
        trio.run(lambda: run_broker(cfg, host="127.0.0.1", port=port, handle_signals=True), instruments=[timer])
    except KeyboardInterrupt:
        pass
    finally:
        Path(out_path).write_text(json.dumps(timer.report()))


# ------------------------------------------------------------------ the Metadata probe (subprocess)
def probe(port: int, seconds: float, out_path: str) -> None:
    from kwire.codec.apis import api
    from kwire.testing.client import WireClient

    T = api("Metadata").request.struct("MetadataRequestTopic")
    lat = []
    with WireClient(f"127.0.0.1:{port}", timeout=30) as c:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.perf_counter()
            r = c.request("Metadata", 8, topics=[T(name=TOPIC)], allow_auto_topic_creation=False)
            lat.append(time.perf_counter() - t0)
            assert r.topics[0].error_code == 0, r.topics[0].error_code
            time.sleep(0.010)
    Path(out_path).write_text(json.dumps(lat))


# ------------------------------------------------------------------ the driver
def _produce(port: int, seconds: float) -> tuple[int, int]:
    from confluent_kafka import Producer

    # linger.ms long enough that every batch fills up to batch.size (1 MiB of records) first
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "compression.type": "zstd", "linger.ms": 1000,
                  "batch.size": 1 << 20, "message.max.bytes": 4 << 20, "acks": 1,
                  "queue.buffering.max.kbytes": 64 << 10})
    values = [os.urandom(VALUE_SIZE // 2).hex().encode() for _ in range(512)]
    errors = []
    sent = 0

    def cb(err, msg):
        if err is not None:
            errors.append(err)

    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        try:
            p.produce(TOPIC, values[i & 511], partition=0, on_delivery=cb)
            sent += 1
            i += 1
        except BufferError:
            p.poll(0.005)
        if not i & 1023:
            p.poll(0)
    p.flush(60)
    if errors:
        raise RuntimeError(f"{len(errors)} produce errors, first {errors[0]}")
    return sent, sent * VALUE_SIZE


def one_run(seconds: float) -> dict:
    from kwire.testing.broker import free_port, wait_for_port
    from kwire.testing.client import WireClient

    data_dir = tempfile.mkdtemp(prefix="kwire-loopstall-")
    stats_path, probe_path = data_dir + ".stats", data_dir + ".probe"
    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    broker = subprocess.Popen([sys.executable, "-m", "bench.loopstall_bench", "--serve", str(port), data_dir,
                               stats_path], stdin=subprocess.DEVNULL, cwd=ROOT, env=env)
    prober = None
    try:
        wait_for_port("127.0.0.1", port, timeout=60, proc=broker)
        with WireClient(f"127.0.0.1:{port}", timeout=30) as c:
            c.create_topic(TOPIC, 1, {"segment.ms": "1000", "segment.bytes": str(256 << 20)})
            # warm up: the first Produce and Metadata import their handlers (not what is measured)
            c.produce(TOPIC, [(None, b"warm-up")], acks=1)
            c.partitions(TOPIC)
        prober = subprocess.Popen([sys.executable, "-m", "bench.loopstall_bench", "--probe", str(port),
                                   str(seconds), probe_path], stdin=subprocess.DEVNULL, cwd=ROOT, env=env)
        t0, w0 = time.monotonic(), time.time()
        sent, nbytes = _produce(port, seconds)
        elapsed, w1 = time.monotonic() - t0, time.time()
        prober.wait(seconds + 60)
        segments = len([f for f in os.listdir(os.path.join(data_dir, f"{TOPIC}-0")) if f.endswith(".log")])
        broker.send_signal(signal.SIGTERM)
        broker.wait(60)
        stats = json.loads(Path(stats_path).read_text())
        lat = sorted(json.loads(Path(probe_path).read_text()))
        # only what happened while the producer ran: not the start-up's imports nor the close
        steps = sorted((s for s in stats["steps"] if w0 <= s[0] <= w1), key=lambda s: s[1])
        stacks = Counter((s[1], s[2]) for s in stats["stacks"] if w0 <= s[0] <= w1)
        longest = steps[-1] if steps else (0, 0.0, "")
        return {"p50": statistics.median(lat) * 1000, "p99": lat[int(len(lat) * 0.99)] * 1000,
                "max": lat[-1] * 1000, "probes": len(lat), "records": sent, "mib_s": nbytes / elapsed / (1 << 20),
                "segments": segments, "longest_ms": longest[1] * 1000, "longest_task": longest[2],
                "over_5ms": sum(1 for s in steps if s[1] > 0.005), "over_20ms": sum(1 for s in steps if s[1] > 0.020),
                "stacks": stacks.most_common(12)}
    finally:
        for proc in (prober, broker):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(data_dir, ignore_errors=True)
        for p in (stats_path, probe_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def run(quick: bool = False):
    load = os.getloadavg()
    r = one_run(6.0 if quick else 15.0)
    print(f"Metadata p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms, max {r['max']:.2f} ms; "
          f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"{r['records']} records, {r['mib_s']:.1f} MiB/s, {r['segments']} segments, {r['probes']} Metadata probes, "
          f"loop steps: {r['over_5ms']} > 5 ms, {r['over_20ms']} > 20 ms), "
          f"longest {r['longest_ms']:.1f} ms in {r['longest_task']}", flush=True)
    for (stack, others), n in r["stacks"]:
        print(f"  {n:5d} samples in steps > {STALL_SAMPLE_S * 1000:.0f} ms: {stack}\n        other threads: {others}")
    p99 = r["p99"]
    return [
        ("loopstall: Metadata p50 during zstd produce + rolls", round(r["p50"], 2), "ms", "-", "info"),
        ("loopstall: Metadata p99 during zstd produce + rolls", round(p99, 2), "ms", f"<= {BUDGET_P99_MS}",
         "PASS" if p99 <= BUDGET_P99_MS else "MISS"),
        ("loopstall: Metadata max", round(r["max"], 2), "ms", "-", "info"),
        ("loopstall: longest loop step", round(r["longest_ms"], 2), "ms", "-", "info"),
        ("loopstall: loop steps > 20 ms", r["over_20ms"], "", "-", "info"),
        ("loopstall: produced", round(r["mib_s"], 1), "MiB/s", "-", "info"),
    ]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif sys.argv[1:2] == ["--probe"]:
        probe(int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
    else:
        for row in run(quick="--quick" in sys.argv):
            print(row)

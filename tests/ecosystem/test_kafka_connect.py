"""Kafka Connect 4.3.1 (connect-runtime, connect-file) on kwire and on Apache Kafka 4.3.1, with the
same results (issue 30, deliverable 5).

Distributed mode: one worker (ConnectDistributed) creates its three internal topics as Connect
wants them (compacted; the config topic one partition, offsets 25, status 5: Connect's defaults);
a FileStreamSource tails a file into a topic and a FileStreamSink writes the topic to another file,
both created through the REST API. The source runs with exactly.once.source.support=enabled (KIP-618:
a transactional producer per task, its source offsets in the same transaction). The worker is
SIGKILLed while lines flow, more lines are appended while it is down, and the same worker (same
REST port, group and topics) is started again:

- the topic, read with read_committed, holds every line once and in order: the aborted or never
  committed transaction of the killed task is invisible, the source resumes from the offsets
  committed with the last committed transaction (nothing lost, nothing twice);
- the sink file holds every line in order; the sink is at-least-once (Connect's sink offsets are
  committed after the file is written), so a line written after the last commit may be written
  again after the restart: a replay is a repeat of a contiguous run of lines, never a gap.

Standalone mode (ConnectStandalone, offsets in a local file): the same source and sink, a SIGKILL and
a restart, every line in the topic and the file.

Distributed mode's rebalance after the restart waits for the killed member's session to expire
(session.timeout.ms 6 s here, the broker minimum); each cluster's run took 60-85 s on 2 cores
shared with other JVMs (most of it JVM start-ups)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from tests.ecosystem.jvm_procs import ConnectWorker, require_jars

CHUNKS = 4
PER_CHUNK = 1500
LINES = [f"line-{i:06d} {'x' * (i % 37)}" for i in range(CHUNKS * PER_CHUNK)]
TOPIC = "file-lines"
INTERNAL = ("connect-configs", "connect-offsets", "connect-status")


def _append(path: Path, lines: list[str]) -> None:
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))


def _read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _topic_values(bootstrap: str, topic: str, want: list[str], timeout: float = 60.0) -> list[str]:
    """Every committed value of the single-partition topic from offset 0, read until each of
    ``want`` was seen, and a second longer (a duplicate past them must show)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}", "enable.auto.commit": False,
                  "isolation.level": "read_committed"})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not set(out) >= set(want):
            out += [m.value().decode() for m in c.consume(1000, 0.5) if not m.error()]
        out += [m.value().decode() for m in c.consume(1000, 1.0) if not m.error()]
        return out
    finally:
        c.close()


def _is_replays_of(got: list[str], want: list[str]) -> bool:
    """``got`` is ``want`` in order, where at any point a run of lines already written may be written
    again (at-least-once redelivery from an earlier committed offset); no line skipped, none unknown."""
    index = {line: i for i, line in enumerate(want)}
    nxt = 0   # the first line not yet written
    for line in got:
        i = index.get(line)
        if i is None or i > nxt:
            return False
        nxt = max(nxt, i + 1)
    return nxt == len(want)


def _wait_file(path: Path, worker: ConnectWorker, timeout: float = 120.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        got = _read_lines(path)
        if set(got) >= set(LINES):
            return got
        assert worker.alive(), worker.tail()
        assert time.monotonic() < deadline, f"{len(set(got))} of {len(LINES)} lines in the sink file\n{worker.tail()}"
        time.sleep(0.5)


def _internal_topics(bootstrap: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    md = admin.list_topics(timeout=10)
    res = {}
    for t in INTERNAL:
        assert t in md.topics, f"{t} was not created: {sorted(md.topics)}"
        res[t] = {"partitions": len(md.topics[t].partitions)}
    for r, f in admin.describe_configs([ConfigResource("topic", t) for t in INTERNAL]).items():
        res[r.name]["cleanup.policy"] = f.result(30)["cleanup.policy"].value
    return res


def run_distributed(bootstrap: str, work: Path) -> dict:
    src, out = work / "in.txt", work / "out.txt"
    src.touch()
    worker = ConnectWorker(work, "worker", {
        "bootstrap.servers": bootstrap,
        "group.id": "connect-30",
        "config.storage.topic": INTERNAL[0], "offset.storage.topic": INTERNAL[1], "status.storage.topic": INTERNAL[2],
        "config.storage.replication.factor": 1, "offset.storage.replication.factor": 1,
        "status.storage.replication.factor": 1,
        "exactly.once.source.support": "enabled",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 1000,
        # the sink task's consumer: the killed worker's member leaves its group at this timeout,
        # not the default 45 s
        "consumer.session.timeout.ms": 6000, "consumer.heartbeat.interval.ms": 1000,
    })
    try:
        worker.start().wait_ready()
        worker.create("file-source", {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
                                      "file": src, "topic": TOPIC, "tasks.max": 1,
                                      # 100-line batches: transactions (one per poll) while the kill lands
                                      "batch.size": 100})
        worker.create("file-sink", {"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                                    "file": out, "topics": TOPIC, "tasks.max": 1})
        status = worker.wait_running(["file-source", "file-sink"])
        _append(src, LINES[:PER_CHUNK])
        deadline = time.monotonic() + 60
        while len(_read_lines(out)) < PER_CHUNK // 2:
            assert time.monotonic() < deadline, worker.tail()
            time.sleep(0.2)
        # the kill while the second chunk is being read, produced and written
        _append(src, LINES[PER_CHUNK:2 * PER_CHUNK])
        time.sleep(0.3)
        worker.kill()
        before_kill = len(_read_lines(out))
        _append(src, LINES[2 * PER_CHUNK:3 * PER_CHUNK])
        worker.start().wait_ready()
        worker.wait_running(["file-source", "file-sink"])
        _append(src, LINES[3 * PER_CHUNK:])
        written = _wait_file(out, worker)
        topic = _topic_values(bootstrap, TOPIC, LINES)
        return {"topic": topic, "file": written, "before_kill": before_kill, "internal": _internal_topics(bootstrap),
                "states": {n: (s["status"]["connector"]["state"], s["status"]["type"]) for n, s in status.items()}}
    finally:
        worker.stop()


def run_standalone(bootstrap: str, work: Path) -> dict:
    src, out = work / "in.txt", work / "out.txt"
    src.touch()
    source = work / "source.properties"
    source.write_text(f"name=file-source\nconnector.class=org.apache.kafka.connect.file.FileStreamSourceConnector\n"
                      f"file={src}\ntopic=standalone-lines\ntasks.max=1\nbatch.size=100\n")
    sink = work / "sink.properties"
    sink.write_text(f"name=file-sink\nconnector.class=org.apache.kafka.connect.file.FileStreamSinkConnector\n"
                    f"file={out}\ntopics=standalone-lines\ntasks.max=1\n")
    worker = ConnectWorker(work, "standalone", {"bootstrap.servers": bootstrap,
                                                "offset.storage.file.filename": work / "offsets",
                                                "consumer.session.timeout.ms": 6000,
                                                "consumer.heartbeat.interval.ms": 1000},
                           standalone=[source, sink])
    try:
        worker.start().wait_ready()
        worker.wait_running(["file-source", "file-sink"])
        _append(src, LINES[:2 * PER_CHUNK])
        time.sleep(0.5)
        worker.kill()
        _append(src, LINES[2 * PER_CHUNK:])
        worker.start().wait_ready()
        written = _wait_file(out, worker)
        # at-least-once both ways (a standalone worker has no exactly-once source support)
        topic = _topic_values(bootstrap, "standalone-lines", LINES)
        return {"topic": topic, "file": written}
    finally:
        worker.stop()


@pytest.fixture(scope="module")
def connect_jars():
    require_jars("connect-runtime", "connect-file")


@pytest.fixture(scope="module")
def kwire_distributed(kwire_one, connect_jars, tmp_path_factory):
    return run_distributed(kwire_one.bootstrap_servers, tmp_path_factory.mktemp("connect-kwire"))


@pytest.fixture(scope="module")
def kafka_distributed(kafka_one, connect_jars, tmp_path_factory):
    return run_distributed(kafka_one.bootstrap_servers, tmp_path_factory.mktemp("connect-kafka"))


def _check_distributed(res: dict) -> None:
    assert res["states"] == {"file-source": ("RUNNING", "source"), "file-sink": ("RUNNING", "sink")}
    # exactly-once source: every line once, in file order, the killed transaction invisible
    assert len(res["topic"]) == len(LINES), (len(res["topic"]), len(set(res["topic"])))
    assert res["topic"] == LINES
    # at-least-once sink: in order, replays only
    assert _is_replays_of(res["file"], LINES), "the sink file lost or reordered lines"
    assert res["internal"] == {"connect-configs": {"partitions": 1, "cleanup.policy": "compact"},
                               "connect-offsets": {"partitions": 25, "cleanup.policy": "compact"},
                               "connect-status": {"partitions": 5, "cleanup.policy": "compact"}}


def test_distributed_pipeline_survives_a_worker_sigkill_on_kwire(kwire_distributed):
    _check_distributed(kwire_distributed)


def test_distributed_the_same_as_on_apache_kafka(kwire_distributed, kafka_distributed):
    _check_distributed(kafka_distributed)
    assert kwire_distributed["topic"] == kafka_distributed["topic"]
    assert kwire_distributed["internal"] == kafka_distributed["internal"]
    assert kwire_distributed["states"] == kafka_distributed["states"]


@pytest.mark.parametrize("cluster", ["kwire", "kafka"])
def test_standalone_pipeline_survives_a_worker_sigkill(cluster, request, connect_jars, tmp_path):
    broker = request.getfixturevalue(f"{cluster}_one")
    res = run_standalone(broker.bootstrap_servers, tmp_path)
    assert set(res["topic"]) == set(LINES)
    assert _is_replays_of(res["topic"], LINES)
    assert _is_replays_of(res["file"], LINES)


def test_replay_check_itself():
    want = ["a", "b", "c", "d"]
    assert _is_replays_of(want, want)
    assert _is_replays_of(["a", "b", "c", "b", "c", "d"], want)
    assert not _is_replays_of(["a", "c", "b", "d"], want)
    assert not _is_replays_of(["a", "b", "d"], want)
    assert not _is_replays_of(["a", "b", "c"], want)

"""Kafka's own command-line tools against kwire and against Apache Kafka 4.3.1, side by side.

Each step runs the same tool command against ``kwire_one`` and ``kafka_one`` (the two JVMs at
once), masks what legitimately differs between two clusters (topic and cluster ids, the
bootstrap address, log timestamps, throughput figures) and asserts that exit codes, stdout and
stderr are equal. Where kwire answers differently for a reason it keeps, the difference is listed
in docs/differences.md ("Kafka's command-line tools") and the step checks exactly that
difference. One node, PLAINTEXT here (kafka-acls without an authorizer, kafka-transactions on a
hanging transaction, the perf tests and verifiable clients too); SASL_SSL with --command-config and
kafka-acls with an authorizer in test_kafka_tools_secured.py, three nodes (kafka-reassign-partitions,
--under-replicated-partitions, the quorum with a voter down) in test_kafka_tools_three.py.

Every test uses topics and groups of its own, so the module-scoped pair can be shared in any order."""
from __future__ import annotations

import re
import time
from datetime import datetime, timezone
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.ecosystem.conftest import run_tools

_POOL = ThreadPoolExecutor(2)


@pytest.fixture(scope="module")
def pair(kwire_one, kafka_one):
    return kwire_one.bootstrap_servers, kafka_one.bootstrap_servers


def _masked(text: str, bootstrap: str) -> str:
    text = text.replace(bootstrap, "<bootstrap>")
    text = re.sub(r"\b\d\d:\d\d:\d\d\.\d{3}\b", "<time>", text)             # log4j's time of day
    text = re.sub(r"(TopicId: ?)[A-Za-z0-9_-]{22}", r"\1<topic-id>", text)
    text = re.sub(r"^(HighWatermark:\s*)\d+$", r"\1<offset>", text, flags=re.M)  # metadata log length
    text = re.sub(r"^(\d+\s*\t[A-Za-z0-9_-]{22}\t)\d+ *", r"\1<offset>", text, flags=re.M)  # quorum replication
    text = re.sub(r'"logDir":"[^"]*"', '"logDir":"<dir>"', text)            # each cluster's data dir
    text = re.sub(r"\b1[6-9]\d{11}\b", "<ms>", text)                      # wall-clock milliseconds
    text = re.sub(r"(\sEpoch: )\d+$", r"\1<epoch>", text, flags=re.M)                     # features: a metadata offset
    text = re.sub(r"(ClusterId:\s*)[A-Za-z0-9_-]{22}", r"\1<cluster-id>", text)
    return text


class Steps:
    """A command sequence run in one JVM per cluster (conftest.run_tools), both clusters at once.
    ``same(tool, *args, rc=0)`` adds a step; ``run()`` runs them and asserts, step by step, equal
    masked (exit code, stdout, stderr) and the expected exit code; it returns each step's stdout."""

    def __init__(self, pair):
        self.pair = pair
        self.steps: list[tuple[int, tuple[str, ...]]] = []

    def same(self, tool: str, *args: str, rc: int = 0, listed=None) -> int:
        """``listed(kwire, kafka)``: for a difference docs/differences.md lists, checks exactly that
        difference (given both masked (exit code, stdout, stderr)) instead of equality."""
        self.steps.append((rc, (tool, *args), listed))
        return len(self.steps) - 1

    def results(self) -> tuple[list, list]:
        def one(bootstrap: str):
            cmds = [tuple(a.replace("{B}", bootstrap) for a in cmd) for _, cmd, _ in self.steps]
            return [(rc, _masked(out, bootstrap), _masked(err, bootstrap)) for rc, out, err in run_tools(cmds)]
        futures = [_POOL.submit(one, b) for b in self.pair]
        return futures[0].result(), futures[1].result()

    def run(self) -> list[str]:
        kw, ka = self.results()
        for (rc, cmd, listed), a, b in zip(self.steps, kw, ka):
            if listed is not None:
                listed(a, b)
            else:
                assert a == b, f"{' '.join(cmd)}\n--- kwire ---\n{a}\n--- kafka ---\n{b}"
            assert a[0] == rc and b[0] == rc, (cmd, a, b)
        return [a[1] for a in kw]


# ---------------------------------------------------------------------------------------- topics

def test_kafka_topics(pair):
    st = Steps(pair)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt1", "--partitions", "3",
            "--replication-factor", "1", "--config", "retention.ms=1000000", "--config", "cleanup.policy=compact")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt2")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt2", rc=1)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt3", "--if-not-exists",
            "--replication-factor", "2", rc=1)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "tt4", "--config",
            "no.such.key=1", rc=1)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--alter", "--topic", "tt1", "--partitions", "5")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--alter", "--topic", "tt1", "--partitions", "2",
            rc=1)
    i0 = st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topic", "tt1")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topic", "tt.*",
            "--exclude-internal")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--under-replicated-partitions")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--unavailable-partitions")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--describe", "--topics-with-overrides",
            "--topic", "tt.*")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--delete", "--topic", "tt2")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--delete", "--topic", "nosuch", rc=1)
    i1 = st.same("kafka-topics", "--bootstrap-server", "{B}", "--list", "--topic", "tt.*")
    outs = st.run()
    assert "PartitionCount: 5" in outs[i0] and "retention.ms=1000000" in outs[i0], outs[i0]
    assert outs[i1].split() == ["tt1"], outs[i1]


# --------------------------------------------------------------------------------------- configs
def _wait_broker_config(bootstrap: str, key: str, value: str, timeout: float = 20.0) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        res = ConfigResource(ConfigResource.Type.BROKER, "1")
        got = admin.describe_configs([res])[res].result(10)[key].value
        if got == value:
            return
        assert time.monotonic() < deadline, (bootstrap, key, got)
        time.sleep(0.2)



def test_kafka_configs_topics_and_brokers(pair):
    st = Steps(pair)
    cfg = ("kafka-configs", "--bootstrap-server", "{B}")
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "ct1", "--config",
            "cleanup.policy=compact")
    st.same(*cfg, "--alter", "--entity-type", "topics", "--entity-name", "ct1",
            "--add-config", "retention.ms=5000,max.message.bytes=2000", "--delete-config", "cleanup.policy")
    i0 = st.same(*cfg, "--describe", "--entity-type", "topics", "--entity-name", "ct1")
    st.same(*cfg, "--describe", "--entity-type", "topics", "--entity-name", "ct1", "--all")
    st.same(*cfg, "--alter", "--entity-type", "topics", "--entity-name", "ct1", "--add-config",
            "retention.ms=abc", rc=1)
    st.same(*cfg, "--alter", "--entity-type", "brokers", "--entity-default", "--add-config",
            "log.cleaner.threads=2")
    st.same(*cfg, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config",
            "log.cleaner.threads=3")
    first = st.run()
    # Kafka applies a dynamic broker config when its broker reads the record (the value DescribeConfigs
    # answers lags the synonyms for a moment); kwire at once: describe once both have settled
    for b in pair:
        _wait_broker_config(b, "log.cleaner.threads", "3")
    st = Steps(pair)
    i1 = st.same(*cfg, "--describe", "--entity-type", "brokers", "--entity-default")
    i2 = st.same(*cfg, "--describe", "--entity-type", "brokers", "--entity-name", "1")
    st.same(*cfg, "--alter", "--entity-type", "brokers", "--entity-name", "1", "--delete-config",
            "log.cleaner.threads")
    st.same(*cfg, "--alter", "--entity-type", "brokers", "--entity-default", "--delete-config",
            "log.cleaner.threads")
    st.same(*cfg, "--describe", "--entity-type", "brokers", "--entity-default")
    outs = first + st.run()
    i1, i2 = i1 + len(first), i2 + len(first)
    assert "retention.ms=5000" in outs[i0] and "cleanup.policy" not in outs[i0], outs[i0]
    assert "log.cleaner.threads=2" in outs[i1], outs[i1]
    assert "log.cleaner.threads=3" in outs[i2], outs[i2]


def test_kafka_configs_users_quotas_groups(pair):
    st = Steps(pair)
    cfg = ("kafka-configs", "--bootstrap-server", "{B}")
    st.same(*cfg, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
            "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
    st.same(*cfg, "--alter", "--entity-type", "users", "--entity-name", "carol", "--add-config",
            "SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[password=b]", rc=1)
    i0 = st.same(*cfg, "--describe", "--entity-type", "users", "--entity-name", "alice")
    st.same(*cfg, "--alter", "--entity-type", "users", "--entity-name", "bob", "--entity-type", "clients",
            "--entity-name", "c1", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048")
    st.same(*cfg, "--alter", "--entity-type", "clients", "--entity-default", "--add-config",
            "request_percentage=50")
    i1 = st.same(*cfg, "--describe", "--entity-type", "users", "--entity-name", "bob", "--entity-type",
            "clients", "--entity-name", "c1")
    st.same(*cfg, "--describe", "--entity-type", "clients", "--entity-default")
    st.same(*cfg, "--describe", "--entity-type", "users")
    st.same(*cfg, "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config",
            "SCRAM-SHA-256")
    st.same(*cfg, "--describe", "--entity-type", "users", "--entity-name", "alice")
    st.same(*cfg, "--alter", "--entity-type", "groups", "--entity-name", "cg1", "--add-config",
            "consumer.session.timeout.ms=50000")
    i2 = st.same(*cfg, "--describe", "--entity-type", "groups", "--entity-name", "cg1")
    st.same(*cfg, "--alter", "--entity-type", "groups", "--entity-name", "cg1", "--add-config",
            "consumer.session.timeout.ms=1", rc=1)
    outs = st.run()
    assert "SCRAM-SHA-256=iterations=8192" in outs[i0], outs[i0]
    assert "producer_byte_rate=1024.0" in outs[i1], outs[i1]
    assert "consumer.session.timeout.ms=50000" in outs[i2], outs[i2]


# --------------------------------------------------------------------------------- consumer groups
# the records' CreateTime (--to-datetime and --time pick offsets by it): an hour ago, well inside the
# default 7-day retention (older timestamps get the segments deleted by retention, at a time of its own)
BASE_TS = (int(time.time()) // 60 * 60 - 3600) * 1000


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _coordinator_not_ready():
    from confluent_kafka import KafkaError
    return {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE}


def _seed(bootstrap: str, topic: str, counts: list[int], group: str | None = None,
          committed: dict[int, int] | None = None) -> None:
    """``topic`` with len(counts) partitions, counts[p] records in partition p (CreateTime
    BASE_TS + offset seconds), and ``group``'s committed offsets, the same on either cluster."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    _COORDINATOR_NOT_READY = _coordinator_not_ready()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, len(counts), 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": True})
    for part, n in enumerate(counts):
        for i in range(n):
            p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=part, timestamp=BASE_TS + i * 1000)
    assert p.flush(30) == 0
    if group:
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            # a fresh cluster's first commit may meet the offsets topic's coordinator still loading
            # (NOT_COORDINATOR, retriable; librdkafka hands a synchronous commit's error back as is)
            deadline = time.monotonic() + 30
            while True:
                try:
                    c.commit(offsets=[TopicPartition(topic, part, off) for part, off in committed.items()],
                             asynchronous=False)
                    break
                except KafkaException as e:
                    if e.args[0].code() not in _COORDINATOR_NOT_READY or time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        finally:
            c.close()


def test_kafka_consumer_groups(pair):
    for b in pair:
        _seed(b, "cgt", [5, 3], "cg-a", {0: 2, 1: 1})
        _seed(b, "cgu", [4], "cg-b", {0: 4})
    cg = ("kafka-consumer-groups", "--bootstrap-server", "{B}")
    st = Steps(pair)
    i0 = st.same(*cg, "--list")
    st.same(*cg, "--list", "--state")
    i1 = st.same(*cg, "--describe", "--group", "cg-a")
    st.same(*cg, "--describe", "--group", "cg-a", "--members")
    st.same(*cg, "--describe", "--group", "cg-a", "--state")
    st.same(*cg, "--describe", "--all-groups", "--offsets")
    st.same(*cg, "--describe", "--group", "nosuch")
    for mode in (("--to-earliest",), ("--to-latest",), ("--to-offset", "1"), ("--shift-by", "-1"),
                 ("--shift-by", "10"), ("--to-datetime", _iso(BASE_TS + 2000)),
                 ("--to-datetime", _iso(BASE_TS + 1500))):
        st.same(*cg, "--reset-offsets", "--group", "cg-a", "--topic", "cgt", *mode, "--dry-run")
    st.same(*cg, "--reset-offsets", "--group", "cg-a", "--topic", "cgt:0", "--to-offset", "4", "--execute")
    st.same(*cg, "--reset-offsets", "--group", "cg-a", "--topic", "cgt:1", "--shift-by", "1", "--execute")
    i2 = st.same(*cg, "--describe", "--group", "cg-a", "--offsets")
    st.same(*cg, "--reset-offsets", "--all-groups", "--all-topics", "--to-earliest", "--execute")
    st.same(*cg, "--describe", "--all-groups")
    st.same(*cg, "--reset-offsets", "--group", "cg-a", "--topic", "cgt", "--to-latest")      # neither mode
    st.same(*cg, "--delete-offsets", "--group", "cg-a", "--topic", "cgt:1", rc=0)
    st.same(*cg, "--delete-offsets", "--group", "cg-a", "--topic", "nosuch")
    st.same(*cg, "--describe", "--group", "cg-a")
    st.same(*cg, "--delete", "--group", "cg-b")
    st.same(*cg, "--delete", "--group", "cg-b")              # an error line, exit 0 on both
    i3 = st.same(*cg, "--list")
    outs = st.run()
    assert outs[i0].split() == ["cg-a", "cg-b"], outs[i0]
    assert "cgt" in outs[i1] and "LAG" in outs[i1], outs[i1]
    assert re.search(r"cgt\s+0\s+4\s+5\s+1", outs[i2]), outs[i2]
    assert outs[i3].split() == ["cg-a"], outs[i3]


def test_kafka_get_offsets_and_delete_records(pair, tmp_path):
    for b in pair:
        _seed(b, "got", [6, 2])
    spec = tmp_path / "delete.json"
    spec.write_text('{"partitions": [{"topic": "got", "partition": 0, "offset": 3}], "version": 1}')
    bad = tmp_path / "bad.json"
    bad.write_text('{"partitions": [{"topic": "got", "partition": 1, "offset": 9}], "version": 1}')
    go = ("kafka-get-offsets", "--bootstrap-server", "{B}")
    st = Steps(pair)
    i0 = st.same(*go, "--topic", "got")
    st.same(*go, "--topic", "got", "--time", "-2")
    st.same(*go, "--topic", "got", "--time", "-3")
    st.same(*go, "--topic", "got", "--time", str(BASE_TS + 2500))
    st.same(*go, "--topic-partitions", "got:1,got:5")
    st.same(*go, "--topic", "nosuch", rc=1)
    st.same("kafka-delete-records", "--bootstrap-server", "{B}", "--offset-json-file", str(spec))
    st.same("kafka-delete-records", "--bootstrap-server", "{B}", "--offset-json-file", str(bad))
    i1 = st.same(*go, "--topic", "got", "--time", "earliest")
    outs = st.run()
    assert outs[i0].split() == ["got:0:6", "got:1:2"], outs[i0]
    assert outs[i1].split() == ["got:0:3", "got:1:0"], outs[i1]


# ------------------------------------------------------------- cluster: features, quorum, log dirs
def _voter_endpoints_difference(kw, ka) -> None:
    """docs/differences.md T02: a one-node kwire has no controller listener, so its DescribeQuorum
    voters carry no endpoints; everything else is Kafka's output."""
    without = re.sub(r', "endpoints": \["CONTROLLER://[^"]+"\]', "", ka[1])
    assert without != ka[1], ka
    assert (kw[0], kw[1], kw[2]) == (ka[0], without, ka[2]), (kw, ka)


def _features_difference(kw, ka) -> None:
    """docs/differences.md T01 (W03): kwire finalizes only the features a client acts on; every
    line it prints is Kafka's line, and Kafka's other lines are exactly the five kwire leaves out."""
    assert kw[0] == ka[0] == 0 and kw[2] == ka[2] == "", (kw, ka)
    kw_lines, ka_lines = kw[1].splitlines(), ka[1].splitlines()
    assert kw_lines and set(kw_lines) <= set(ka_lines), (kw, ka)
    left_out = {line.split()[1] for line in set(ka_lines) - set(kw_lines)}
    assert left_out == {"eligible.leader.replicas.version", "group.version", "kraft.version",
                        "metadata.version", "streams.version"}, left_out


def test_cluster_tools(pair):
    for b in pair:
        _seed(b, "lt", [3, 1])
    st = Steps(pair)
    i0 = st.same("kafka-features", "--bootstrap-server", "{B}", "describe", listed=_features_difference)
    i1 = st.same("kafka-metadata-quorum", "--bootstrap-server", "{B}", "describe", "--status",
                 listed=_voter_endpoints_difference)
    i2 = st.same("kafka-metadata-quorum", "--bootstrap-server", "{B}", "describe", "--replication")
    i3 = st.same("kafka-log-dirs", "--bootstrap-server", "{B}", "--describe", "--topic-list", "lt")
    st.same("kafka-leader-election", "--bootstrap-server", "{B}", "--election-type", "preferred",
            "--all-topic-partitions")
    st.same("kafka-leader-election", "--bootstrap-server", "{B}", "--election-type", "unclean",
            "--topic", "lt", "--partition", "0")
    st.same("kafka-transactions", "--bootstrap-server", "{B}", "list")
    outs = st.run()
    assert "Feature: transaction.version" in outs[i0] and "LeaderId:" in outs[i1], outs[:2]
    assert "Leader" in outs[i2] and '"partition":"lt-0","size":' in outs[i3], outs[2:4]


# ---------------------------------------------------------------------------- acls, no authorizer
def test_kafka_acls_without_authorizer(pair):
    """Neither one-node cluster runs an authorizer: kafka-acls says so (SECURITY_DISABLED) on both.
    The ACL commands themselves run on the secured pair (test_kafka_tools_secured.py)."""
    st = Steps(pair)
    st.same("kafka-acls", "--bootstrap-server", "{B}", "--list", rc=1)
    st.same("kafka-acls", "--bootstrap-server", "{B}", "--add", "--allow-principal", "User:alice",
            "--operation", "Read", "--topic", "x", rc=1)
    st.run()


# ------------------------------------------------------------------ transactions: a hanging one
def _open_transaction(bootstrap: str, topic: str, txn_id: str):
    """``topic`` (one partition) with a committed transaction of 2 records, then an open one of 3
    records (from offset 3, after the first one's commit marker) left open: the producer is returned
    alive and never commits; its transaction timeout (15 min) outlasts the test."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": 900000,
                  "linger.ms": 0})
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(2):
        p.produce(topic, value=b"c%d" % i)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, value=b"o%d" % i)
    assert p.flush(30) == 0
    return p


def _pair_steps(pair, masks=(), post=None):
    """tests/ecosystem/steps.SideSteps over the one-node pair (its masks and last step)."""
    from tests.ecosystem.conftest import Side
    from tests.ecosystem.steps import SideSteps

    return SideSteps([Side(n, b, {"{B}": b}) for n, b in zip(("kwire", "kafka"), pair)], masks, post)


def _txn_table(text: str) -> str:
    """kafka-transactions pads its tables to the widest value, and masked values have widths of
    their own: runs of blanks become one. An open transaction's TransactionDurationMs is the time
    since it began (after CurrentTransactionStartTimeMs, masked as <ms>)."""
    text = "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines())
    return re.sub(r"( Ongoing \d+ <ms> )\d+ ", r"\1<duration> ", text)


def test_kafka_transactions_hanging(pair):
    """A transaction left open (as by a producer that died mid-transaction): list, describe,
    describe-producers, find-hanging, and abort by topic, partition and start offset (the tool
    finds the producer with DescribeProducers and writes the abort marker with WriteTxnMarkers)."""
    producers = [_open_transaction(b, "ht", "tx-hang") for b in pair]
    try:
        tx = ("kafka-transactions", "--bootstrap-server", "{B}")
        st = _pair_steps(pair, post=_txn_table)
        i0 = st.same(*tx, "list")
        i1 = st.same(*tx, "describe", "--transactional-id", "tx-hang")
        st.same(*tx, "describe", "--transactional-id", "nosuch", rc=1)
        i2 = st.same(*tx, "describe-producers", "--topic", "ht", "--partition", "0")
        st.same(*tx, "find-hanging", "--broker-id", "1")
        st.same(*tx, "find-hanging", "--topic", "ht", "--max-transaction-timeout", "0")
        st.same(*tx, "abort", "--topic", "ht", "--partition", "0", "--start-offset", "2", rc=1)
        st.same(*tx, "abort", "--topic", "ht", "--partition", "0", "--start-offset", "3")
        i3 = st.same(*tx, "describe-producers", "--topic", "ht", "--partition", "0")
        st.same(*tx, "find-hanging", "--topic", "ht", "--max-transaction-timeout", "0")
        outs = st.run()
    finally:
        for p in producers:      # nothing to send any more; dropped before the clusters stop
            p.purge()
        producers.clear()
    assert "tx-hang" in outs[i0] and "Ongoing" in outs[i1] and "ht-0" in outs[i1], outs[:2]
    assert outs[i2].splitlines()[1].split()[-1] == "3", outs[i2]          # the open transaction's start
    assert outs[i3].splitlines()[1].split()[-1] == "None", outs[i3]       # aborted: none open


# -------------------------------------------------------- perf tests and verifiable clients
def _last_summary(kw, ka) -> None:
    """kafka-producer-perf-test: the final line on both says all records were sent; its speed and
    latency figures are each cluster's (and this machine's) own."""
    def summary(res):
        rc, out, err = res
        last = [x for x in out.splitlines() if " records sent, " in x][-1]
        count, rest = last.split(" records sent, ", 1)
        return rc, count, re.sub(r"\d+(\.\d+)?", "N", rest), err
    assert summary(kw) == summary(ka), (kw, ka)


def _total_offsets(kw, ka) -> None:
    """The sticky partitioner splits the records between the two partitions as batches fill up,
    which follows each broker's timing: the end offsets add up to the same total."""
    def total(res):
        rc, out, err = res
        return rc, sum(int(x.rsplit(":", 1)[1]) for x in out.split()), len(out.split()), err
    assert total(kw) == total(ka) == (0, 3000, 2, ""), (kw, ka)


def _consumer_perf(kw, ka) -> None:
    """kafka-consumer-perf-test: the same header and, of its figures, the same MB and record counts."""
    def figures(res):
        rc, out, err = res
        header, data = out.strip().splitlines()[-2:]
        cols = [c.strip() for c in data.split(",")]
        return rc, header, cols[2], cols[4], err
    assert figures(kw) == figures(ka), (kw, ka)


def _events(out: str) -> list[dict]:
    import json
    return [json.loads(x.replace("<ms>", "0")) for x in out.splitlines() if x.startswith("{")]


def _verifiable_producer(kw, ka) -> None:
    """kafka-verifiable-producer: the same events (each record's partition, offset, key and value),
    the timestamps and the average throughput left out."""
    def events(res):
        rc, out, err = res
        ev = _events(out)
        for e in ev:
            e.pop("timestamp", None)
            e.pop("avg_throughput", None)
        return rc, ev, err
    assert events(kw) == events(ka), (kw, ka)


def _verifiable_consumer(kw, ka) -> None:
    """kafka-verifiable-consumer: how records come in batches follows each broker's timing; the
    structure must match: the same first events (startup, assignment), every records_consumed
    followed by its offsets_committed, the same total and committed offsets, the same last event."""
    def structure(res):
        rc, out, err = res
        ev = _events(out)
        names = [e["name"] for e in ev]
        total = sum(e["count"] for e in ev if e["name"] == "records_consumed")
        commits = [e for e in ev if e["name"] == "offsets_committed"]
        paired = all(names[i + 1] == "offsets_committed" for i, n in enumerate(names) if n == "records_consumed")
        last_commit = sorted((o["topic"], o["partition"], o["offset"]) for o in commits[-1]["offsets"]) if commits else None
        assigned = [e.get("partitions") for e in ev if e["name"] == "partitions_assigned"]
        return rc, names[:2], names[-1], paired, total, last_commit, assigned, err
    assert structure(kw) == structure(ka), (kw, ka)


def test_perf_and_verifiable_clients(pair):
    """kafka-producer-perf-test, kafka-consumer-perf-test, kafka-verifiable-producer and -consumer:
    the same counts of records, acks and offsets on both (their speed figures are masked)."""
    st = Steps(pair)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "perf", "--partitions", "2")
    st.same("kafka-producer-perf-test", "--topic", "perf", "--num-records", "3000", "--record-size", "100",
            "--throughput", "-1", "--producer-props", "bootstrap.servers={B}", "acks=all", "linger.ms=5",
            listed=_last_summary)
    st.same("kafka-consumer-perf-test", "--bootstrap-server", "{B}", "--topic", "perf", "--messages", "3000",
            "--timeout", "30000", "--group", "perf-g", listed=_consumer_perf)
    st.same("kafka-get-offsets", "--bootstrap-server", "{B}", "--topic", "perf", listed=_total_offsets)
    st.same("kafka-topics", "--bootstrap-server", "{B}", "--create", "--topic", "vp")
    st.same("kafka-verifiable-producer", "--bootstrap-server", "{B}", "--topic", "vp", "--max-messages", "40",
            "--acks", "-1", listed=_verifiable_producer)
    st.same("kafka-verifiable-consumer", "--bootstrap-server", "{B}", "--topic", "vp", "--group-id", "vg",
            "--max-messages", "40", "--reset-policy", "earliest", listed=_verifiable_consumer)
    i0 = st.same("kafka-consumer-groups", "--bootstrap-server", "{B}", "--describe", "--group", "vg")
    outs = st.run()
    assert re.search(r"vp\s+0\s+40\s+40\s+0", outs[i0]), outs[i0]

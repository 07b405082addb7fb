"""The pytest plugin, exercised from a sample test project with pytester."""
import pytest

pytestmark = pytest.mark.slow

pytest_plugins = ["pytester"]
# the sample projects use no hypothesis: its pytest plugin would import it (~1 s) in every run
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")

SAMPLE = '''
import os
import pytest


def test_confluent_round_trip(kafka_bootstrap, kafka_topic):
    from confluent_kafka import Consumer, Producer

    p = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(3):
        p.produce(kafka_topic, f"m{i}".encode())
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "g-" + kafka_topic,
                  "auto.offset.reset": "earliest"})
    c.subscribe([kafka_topic])
    got = []
    for _ in range(100):
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m.value())
        if len(got) == 3:
            break
    c.close()
    assert got == [b"m0", b"m1", b"m2"]


def test_kafka_python_round_trip(kafka_bootstrap, kafka_topic):
    from kafka import KafkaConsumer, KafkaProducer

    p = KafkaProducer(bootstrap_servers=kafka_bootstrap, enable_idempotence=False)
    p.send(kafka_topic, b"kp").get(timeout=10)
    p.close()
    c = KafkaConsumer(kafka_topic, bootstrap_servers=kafka_bootstrap, auto_offset_reset="earliest",
                      consumer_timeout_ms=10000)
    got = [m.value for _, m in zip(range(1), c)]
    c.close()
    assert got == [b"kp"]


@pytest.mark.kafka_topic(partitions=3)
def test_marker_shapes_the_topic(kafka_broker, kafka_topic):
    with kafka_broker.client() as c:
        assert c.partitions(kafka_topic) == [0, 1, 2]


def test_topics_are_fresh(kafka_topic, request):
    assert request.node.name in kafka_topic


def test_faults_are_cleared_between_tests_first(kafka_faults):
    kafka_faults.fail_next("Produce", 5)


def test_faults_are_cleared_between_tests_second(kafka_faults):
    assert kafka_faults.pending() == 0


def test_record_broker(kafka_broker):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(os.environ["KWIRE_SAMPLE_OUT"], worker), "a") as f:
        f.write(f"{os.getpid()} {kafka_broker.bootstrap_servers} {kafka_broker.mode}\\n")
'''


@pytest.fixture
def sample(pytester, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("KWIRE_SAMPLE_OUT", str(out))
    for var in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(var, raising=False)  # when this suite itself runs under xdist
    pytester.makepyfile(test_sample=SAMPLE)
    return out


def test_plugin_in_a_sample_project(pytester, sample):
    result = pytester.runpytest_subprocess(*NO_HYPOTHESIS, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=7)
    lines = (sample / "main").read_text().split()
    assert lines[2] == "thread"


def test_plugin_process_mode_and_overrides(pytester, sample):
    result = pytester.runpytest_subprocess(*NO_HYPOTHESIS, "--kwire-mode", "process", "--kwire-storage", "disk",
                                           "--kwire-override", "num.partitions=2",
                                           "-k", "marker or fresh or record")
    result.assert_outcomes(passed=3)
    assert (sample / "main").read_text().split()[2] == "process"


def test_plugin_under_xdist_gives_each_worker_its_own_broker(pytester, sample):
    # Enough tests that both workers get some; each records its broker.
    pytester.makepyfile(test_more="""
import os
import pytest

@pytest.mark.parametrize("i", range(6))
def test_where(kafka_broker, i):
    worker = os.environ["PYTEST_XDIST_WORKER"]
    with open(os.path.join(os.environ["KWIRE_SAMPLE_OUT"], worker), "a") as f:
        f.write(f"{os.getpid()} {kafka_broker.bootstrap_servers} {kafka_broker.mode}\\n")
    kafka_broker.create_topic(f"w-{i}")
""")
    result = pytester.runpytest_subprocess(*NO_HYPOTHESIS, "-n", "2", "-p", "no:cacheprovider",
                                           "-k", "where or record or fresh")
    result.assert_outcomes(passed=8)
    per_worker = {}
    for f in sample.iterdir():
        rows = {tuple(line.split()[:2]) for line in f.read_text().splitlines()}
        assert len(rows) == 1, f"worker {f.name} saw more than one broker: {rows}"
        per_worker[f.name] = rows.pop()
    assert sorted(per_worker) == ["gw0", "gw1"]
    (pid0, addr0), (pid1, addr1) = per_worker.values()
    assert pid0 != pid1 and addr0 != addr1


def test_plugin_secured_broker(pytester, tmp_path, monkeypatch):
    """--kwire-security SASL_SSL: the session broker is secured, kafka_client_config has the settings."""
    for var in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(var, raising=False)
    pytester.makepyfile(test_secured='''
def test_scram_over_sasl_ssl(kafka_broker, kafka_topic, kafka_client_config):
    from confluent_kafka import Producer
    conf = kafka_client_config(mechanism="SCRAM-SHA-256")
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.username"] == "ann"
    p = Producer(conf)
    p.produce(kafka_topic, b"s")
    assert p.flush(10) == 0
    assert [r.value for r in kafka_broker.consume(kafka_topic, 1)] == [b"s"]


def test_wrong_password_is_refused(kafka_client_config):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient
    import pytest
    with pytest.raises(KafkaException):
        AdminClient({**kafka_client_config(), "sasl.password": "x"}).list_topics(timeout=2)
''')
    result = pytester.runpytest_subprocess(*NO_HYPOTHESIS, "-p", "no:cacheprovider", "--kwire-security", "SASL_SSL",
                                           "--kwire-user", "ann=a-pw")
    result.assert_outcomes(passed=2)

"""Raw protocol probes built with kafka-python's independent protocol classes: every API and
version that both kafka-python and kwire serve gets a response that decodes and echoes the
correlation id, on a broker emulating Kafka 3.9 (the last release with the versions KIP-896 removed)
and on one emulating the newest (kwire.emulate.kafka.version), which between them accept every
version kwire serves."""
import importlib
import pkgutil

import kafka.protocol as kp
from kafka.protocol.api_message import ApiMessage

import pytest

from kwire.emulation import KAFKA_VERSIONS, table_for
from kwire.handlers import REGISTRY, load_all
from kwire.testing import Broker
from kwire.testing.client import WireClient

load_all()


def _kafka_python_messages():
    """{api_key: (request class, response class)} from kafka-python's protocol package."""
    found: dict[tuple[str, int], type] = {}
    for info in pkgutil.walk_packages(kp.__path__, kp.__name__ + "."):
        if ".old" in info.name or "generate" in info.name:
            continue
        try:
            mod = importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - optional modules of kafka-python
            continue
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, ApiMessage) and obj is not ApiMessage:
                try:
                    found[(obj.type, obj.API_KEY)] = obj
                except Exception:  # noqa: BLE001 - abstract helpers without a schema
                    pass
    return {key: (cls, found[("response", key)]) for (kind, key), cls in found.items()
            if kind == "request" and ("response", key) in found}


def _cases(kafka_version: str | None = None):
    reqs = _kafka_python_messages()
    accepted = table_for(kafka_version).accepted
    out = []
    for key in REGISTRY:
        if key not in reqs or key not in accepted:
            continue
        rq, rs = reqs[key]
        lo, hi = rq.valid_versions
        for v in range(max(lo, accepted[key][0]), min(hi, accepted[key][1]) + 1):
            out.append((key, v, rq, rs))
    return out


def test_every_served_version_is_accepted_under_some_emulation():
    served = {(k, v) for k, h in REGISTRY.items() for v in range(h.min_version, h.max_version + 1)}
    accepted = {(k, v) for kv in KAFKA_VERSIONS for k, (lo, hi) in table_for(kv).accepted.items()
                for v in range(lo, hi + 1)}
    assert not served - accepted, sorted(served - accepted)


@pytest.fixture(scope="module")
def kafka39_bootstrap():
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": "3.9"}) as b:
        yield b.bootstrap_servers


@pytest.fixture(scope="module")
def newest_bootstrap():
    with Broker(mode="thread", overrides={"kwire.emulate.kafka.version": KAFKA_VERSIONS[-1]}) as b:
        yield b.bootstrap_servers


@pytest.mark.slow
@pytest.mark.parametrize("emulated", ["3.9", "newest"])
def test_probe_every_served_api_version(request, emulated):
    if emulated == "3.9":
        bootstrap, cases = request.getfixturevalue("kafka39_bootstrap"), _cases("3.9")
    else:
        bootstrap, cases = request.getfixturevalue("newest_bootstrap"), _cases(KAFKA_VERSIONS[-1])
    assert len(cases) > 60, len(cases)
    failures = []
    for i, (key, v, rq, rs) in enumerate(cases):
        corr = 5000 + i
        kwargs = {}
        if key == 0:
            kwargs = {"acks": 1, "timeout_ms": 1000, "topic_data": []}
        if key == 1:
            kwargs = {"max_wait_ms": 0, "min_bytes": 0, "topics": []}
        if key == 18 and v >= 3:
            # as every client sends them (KIP-511); empty names are INVALID_REQUEST, as on Kafka 4.3
            kwargs = {"client_software_name": "probe", "client_software_version": "1.0"}
        req = rq[v](**kwargs)
        req.with_header(correlation_id=corr, client_id="probe")
        data = req.encode(header=True, framed=True)
        try:
            with WireClient(bootstrap) as c:
                c.send_raw(data)
                frame = c.recv_frame()
        except (ConnectionError, OSError) as exc:
            failures.append((rq.__name__, v, f"no response: {exc}"))
            continue
        try:
            got = rs[v].decode(frame, header=True)
            if got.header.correlation_id != corr:
                failures.append((rq.__name__, v, "correlation id"))
        except Exception as exc:  # noqa: BLE001
            failures.append((rq.__name__, v, f"decode: {exc!r}"))
    assert not failures, failures

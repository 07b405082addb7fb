"""The versions Kafka 4 removed and kwire serves again under 3.x emulation (kwire.emulation),
against an independent codec: kafka-python's classic protocol classes (kafka.protocol.old),
which predate Kafka 4. Our bytes decode with theirs to the same values, field by field in
order, and their encoding of those values is our bytes."""
from __future__ import annotations

import importlib
import pkgutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kwire.codec.apis import APIS
from kwire.emulation import KAFKA_API_VERSIONS

old = pytest.importorskip("kafka.protocol.old")


def _old_classes() -> dict[tuple[str, int], type]:
    out = {}
    for info in pkgutil.iter_modules(old.__path__):
        mod = importlib.import_module(f"{old.__name__}.{info.name}")
        for name, cls in vars(mod).items():
            if isinstance(cls, type) and "_v" in name and hasattr(cls, "SCHEMA") and hasattr(cls, "API_VERSION"):
                out[(name.rsplit("_v", 1)[0], cls.API_VERSION)] = cls
    return out


OLD = _old_classes()
# every version Kafka 3.9 served below Kafka 4.0's floor, for the APIs kwire serves
REMOVED = sorted((k, v) for k, (lo39, _) in KAFKA_API_VERSIONS["3.9"].items() if k in APIS
                 for v in range(lo39, KAFKA_API_VERSIONS["4.0"].get(k, (99, 0))[0]) if v <= 99)
# kafka-python's classic DescribeLogDirsRequest_v0 declares each topic's partitions as one int32
# where Kafka has an array ([]int32): it cannot be the reference there.
_WRONG_THERE = {("DescribeLogDirsRequest", 0)}
CASES = [(APIS[k], kind, v) for k, v in REMOVED for kind in ("request", "response")
         if (getattr(APIS[k], kind).name, v) in OLD and APIS[k].request.valid.lo <= v
         and (getattr(APIS[k], kind).name, v) not in _WRONG_THERE]


def _leaves(value, fields, v, out):
    for f in fields:
        if not f.present(v):
            continue
        x = getattr(value, f.name)
        if f.is_array:
            if x is None:
                out.append(None)
                continue
            out.append(len(x))
            for e in x:
                if f.is_struct:
                    _leaves(e, f.fields, v, out)
                else:
                    out.append(e)
        elif f.is_struct:
            _leaves(x, f.fields, v, out)
        else:
            out.append(bytes(x) if isinstance(x, (bytearray, memoryview)) else x)
    return out


def _their_leaves(obj, out):
    if isinstance(obj, dict):
        for x in obj.values():
            _their_leaves(x, out)
    elif isinstance(obj, list):
        out.append(len(obj))
        for e in obj:
            _their_leaves(e, out)
    else:
        out.append(bytes(obj) if isinstance(obj, (bytearray, memoryview)) else obj)
    return out


def test_the_removed_versions_are_covered():
    names = {(a.name, v) for a, _, v in CASES}
    for want in [("Fetch", 0), ("Fetch", 3), ("Produce", 0), ("Produce", 2), ("ListOffsets", 0), ("OffsetCommit", 0),
                 ("OffsetCommit", 1), ("OffsetFetch", 0), ("CreateTopics", 0), ("CreateTopics", 1),
                 ("DeleteTopics", 0), ("OffsetForLeaderEpoch", 1), ("DescribeAcls", 0), ("DescribeLogDirs", 0)]:
        assert want in names, want


@pytest.mark.parametrize(("api", "kind", "version"), CASES,
                         ids=[f"{getattr(a, k).name}-v{v}" for a, k, v in CASES])
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_ours_vs_kafka_pythons_classic_classes(api, kind, version, data, codec_kit):
    msg = getattr(api, kind)
    value = data.draw(codec_kit.value_strategy(msg, version), label="value")
    ours = msg.encode(value, version)
    cls = OLD[(msg.name, version)]
    theirs = cls.decode(ours)
    assert _their_leaves(theirs.to_object(), []) == _leaves(value, msg.fields, version, [])
    assert bytes(theirs.encode()) == bytes(ours)
    assert msg.decode(ours, version) == value

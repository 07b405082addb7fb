"""Shared helpers of the codec tests, handed to tests through the session fixture ``codec_kit``.

* ``kafka_json(name)``: Kafka's JSON message definition as shipped in the installed
  kafka-python (comment lines stripped, ``commonStructs`` resolved), or None.
* ``value_strategy(msg, version)``: a hypothesis strategy of values of ``msg`` that fit
  ``version`` (fields absent from the version hold their defaults).
* ``kafka_python_classes()``: (api_key, "request" | "response") -> kafka-python 3.x class.
* ``messages()``: every (api, Message) pair of ``kwire.codec.apis.APIS``.
"""
from __future__ import annotations

import functools
import importlib
import importlib.resources
import json
import pkgutil
import re
import uuid
from types import SimpleNamespace

import pytest
from hypothesis import strategies as st

from kwire.codec.apis import APIS
from kwire.codec.schema import INLINE_RECORDS_LIMIT, Message

KAFKA_RESOURCES = "kafka.protocol.schemas.resources"
_COMMENT_LINE = re.compile(r"^\s*//.*$", re.MULTILINE)


# --- Kafka's JSON definitions -----------------------------------------------------------
@functools.lru_cache(maxsize=None)
def kafka_json(name: str):
    try:
        text = importlib.resources.files(KAFKA_RESOURCES).joinpath(name + ".json").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        # APIs newer than kafka-python (share groups, KIP-932, and others): Kafka 4.3.1's own jar
        text = _kafka_clients_json(name)
        if text is None:
            return None
    data = json.loads(_COMMENT_LINE.sub("", text))
    common = {s["name"]: s["fields"] for s in data.get("commonStructs", [])}
    _resolve_common(data.get("fields", []), common)
    return data


def _kafka_clients_json(name: str) -> str | None:
    """A message definition from the kafka-clients jar (it ships common/message/*.json), for
    APIs kafka-python does not know yet; Apache Kafka's own jar, resolved by make kafka."""
    import zipfile

    from kwire.testing.apache_kafka import kafka_client_jars

    (jar,) = kafka_client_jars(("kafka-clients-",))  # missing: KafkaUnavailable naming make kafka
    with zipfile.ZipFile(jar) as z:
        try:
            return z.read(f"common/message/{name}.json").decode("utf-8")
        except KeyError:
            return None


def _resolve_common(fields, common) -> None:
    for f in fields:
        t = f["type"]
        elem = t[2:] if t.startswith("[]") else t
        if "fields" not in f and elem in common:
            f["fields"] = common[elem]
        if "fields" in f:
            _resolve_common(f["fields"], common)


# --- our messages -------------------------------------------------------------------------
def messages() -> list[tuple[object, Message]]:
    out = []
    for api in APIS.values():
        out.append((api, api.request))
        out.append((api, api.response))
    return out


def message_versions() -> list[tuple[object, Message, int]]:
    return [(api, msg, v) for api, msg in messages() for v in range(msg.valid.lo, msg.valid.hi + 1)]


# --- value strategies ---------------------------------------------------------------------
INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
_PATTERN = bytes(range(256))


def _big_records(n: int) -> bytes:
    return (_PATTERN * (n // 256 + 1))[:n]


def primitive_strategy(t: str):
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]))
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "string":
        return _TEXT
    if t == "bytes":
        return st.binary(max_size=16)
    if t == "records":
        # Small batches are copied inline; anything over INLINE_RECORDS_LIMIT becomes its own part.
        return st.one_of(st.binary(max_size=64),
                         st.sampled_from([INLINE_RECORDS_LIMIT, INLINE_RECORDS_LIMIT + 1]).map(_big_records))
    if t == "uuid":
        return st.one_of(st.uuids(), st.just(uuid.UUID(int=0)))
    raise ValueError(f"unknown primitive type {t}")


def _field_strategy(msg: Message, f, v: int, depth: int):
    nullable = v in f.nullable
    if f.is_array:
        if f.is_struct:
            elem = _struct_strategy(msg, f.elem, f.fields, v, depth + 1)
        else:
            elem = primitive_strategy(f.elem)
        s = st.lists(elem, max_size=3 if depth == 0 else 2)
    elif f.is_struct:
        s = _struct_strategy(msg, f.elem, f.fields, v, depth + 1)
    else:
        s = primitive_strategy(f.type)
    return st.one_of(st.none(), s) if nullable else s


def _struct_strategy(msg: Message, name: str, fields, v: int, depth: int):
    cls = msg.classes[name]
    kw = {f.name: _field_strategy(msg, f, v, depth) for f in fields if f.present(v)}
    return st.fixed_dictionaries(kw).map(lambda d: cls(**d))


@functools.lru_cache(maxsize=None)
def _value_strategy(msg_id: int, version: int):
    msg = _BY_ID[msg_id]
    return _struct_strategy(msg, msg.name, msg.fields, version, 0)


_BY_ID: dict[int, Message] = {}


def value_strategy(msg: Message, version: int):
    """Random values of ``msg`` that fit ``version``."""
    _BY_ID[id(msg)] = msg
    return _value_strategy(id(msg), version)


# --- one full value per version ------------------------------------------------------------
_SAMPLE = {"int8": 7, "int16": 1234, "uint16": 65000, "int32": -123456, "uint32": 4000000000,
           "int64": 2**40 + 5, "float64": 2.5, "bool": True, "string": "kwire-\u00e9",
           "bytes": b"\x00bytes", "records": b"\x00\x01records", "uuid": uuid.UUID(int=2**127 + 99)}


def sample_value(msg: Message, version: int, name: str | None = None, fields=None):
    """A deterministic value with every field of ``version`` set to a non-default, non-null
    value and every array holding two elements."""
    name = name or msg.name
    fields = msg.fields if fields is None else fields
    kw = {}
    for f in fields:
        if not f.present(version):
            continue
        if f.is_struct:
            one = lambda: sample_value(msg, version, f.elem, f.fields)  # noqa: E731
            kw[f.name] = [one(), one()] if f.is_array else one()
        elif f.is_array:
            kw[f.name] = [_SAMPLE[f.elem], _SAMPLE[f.elem]]
        else:
            kw[f.name] = _SAMPLE[f.type]
    return msg.classes[name](**kw)


# --- kafka-python 3.x message classes ------------------------------------------------------
@functools.lru_cache(maxsize=None)
def kafka_python_classes() -> dict[tuple[int, str], type]:
    """Every kafka-python ApiMessage class (primary, unversioned), by (api key, type)."""
    import kafka.protocol as kp
    from kafka.protocol.api_message import ApiMessage

    for info in pkgutil.walk_packages(kp.__path__, kp.__name__ + "."):
        if info.name.endswith("generate_stubs"):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - optional modules of kafka-python
            continue

    found: dict[tuple[int, str], type] = {}

    def walk(cls):
        for sub in cls.__subclasses__():
            if getattr(sub, "_class_version", None) is None and getattr(sub, "_json", None):
                found.setdefault((sub.API_KEY, sub.type), sub)
            walk(sub)

    walk(ApiMessage)
    return found


@pytest.fixture(scope="session")
def codec_kit():
    return SimpleNamespace(
        kafka_json=kafka_json,
        messages=messages,
        message_versions=message_versions,
        value_strategy=value_strategy,
        sample_value=sample_value,
        primitive_strategy=primitive_strategy,
        kafka_python_classes=kafka_python_classes,
        INT_RANGES=INT_RANGES,
    )

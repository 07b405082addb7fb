"""Two normalised trees -> the differences between them, each (path, kafka value, kwire value).

A path names list items by index (``topics[0].error_code``); ``pattern_path`` drops the indices, as
docs/differences.md's patterns are written."""
from __future__ import annotations

import re

MISSING = "<absent>"


def diff(kafka, kwire, path: str = "") -> list[tuple[str, object, object]]:
    if isinstance(kafka, dict) and isinstance(kwire, dict):
        out = []
        for k in list(kafka) + [k for k in kwire if k not in kafka]:
            out += diff(kafka.get(k, MISSING), kwire.get(k, MISSING), f"{path}.{k}" if path else k)
        return out
    if isinstance(kafka, list) and isinstance(kwire, list):
        if len(kafka) != len(kwire) and not (kafka and kwire and all(isinstance(x, dict) for x in kafka + kwire)):
            return [(path, kafka, kwire)]
        if len(kafka) != len(kwire):
            # structs: pair the items that share identifying fields; the rest differ as a whole
            return [(f"{path}.length", len(kafka), len(kwire))] + _align(kafka, kwire, path)
        out = []
        for i, (a, b) in enumerate(zip(kafka, kwire)):
            out += diff(a, b, f"{path}[{i}]")
        return out
    if kafka == kwire:
        return []
    return [(path, kafka, kwire)]


def _align(kafka: list, kwire: list, path: str) -> list:
    from differential.normalise import _sort_key
    left = {_sort_key(x)[0]: x for x in kafka}
    right = {_sort_key(x)[0]: x for x in kwire}
    out = []
    for i, key in enumerate(list(left) + [k for k in right if k not in left]):
        out += diff(left.get(key, MISSING), right.get(key, MISSING), f"{path}[{i}]")
    return out


_INDEX = re.compile(r"\[\d+\]")


def pattern_path(path: str) -> str:
    return _INDEX.sub("[]", path)

"""Error answers in a response's own shape, built from the request (Kafka's
``AbstractRequest.getErrorResponse``), and the error codes a response carries.

``error_response(api, version, req, code)`` copies the request's key fields (topic names,
partition indexes, group ids, resource names) into the response and sets ``code`` at the
deepest level that has an error code: per partition in Produce/Fetch/ListOffsets, per topic
in CreateTopics, per resource in DescribeConfigs, the top-level ``error_code`` otherwise.
``has_error_code`` says whether a response version carries any error code at all (when it
does not, the only honest answer to a failure is closing the connection).
``error_codes(api, version, body)`` collects the non-zero codes of a response, for the
request log. No I/O.
"""
from __future__ import annotations

from collections import Counter

__all__ = ["error_response", "has_error_code", "error_codes"]


# Request and response field names that carry the same thing (a topic name, a partition index).
_ALIASES = [
    {"name", "topic", "topic_name"},
    {"index", "partition", "partition_index"},
]
# Offsets in an error answer are -1 (unknown), as Kafka answers them.
_MINUS_ONE = {"base_offset", "high_watermark", "last_stable_offset", "log_start_offset", "offset",
              "committed_offset", "log_append_time_ms", "leader_id", "timestamp"}


def _same(a: str, b: str) -> bool:
    return a == b or any(a in g and b in g for g in _ALIASES)


def _has_error_code(fields, v: int) -> bool:
    """Does this struct, or one nested in it, carry an error_code?"""
    for f in fields:
        if not f.present(v):
            continue
        if f.name == "error_code":
            return True
        if f.is_struct and f.is_array and _has_error_code(f.fields, v):
            return True
    return False


def _mirror(msg, struct_name: str, fields, req, req_fields, code: int, v: int, top: bool):
    """Build one response struct for request struct ``req``: key fields copied (by name or
    alias), error codes set at the deepest level that has them, arrays mirrored element by
    element from the request's matching array."""
    kw = {}
    def answered(f):  # a nested array that will carry the error for at least one element
        rf = _match_array(f, req_fields, v)
        return rf is not None and req is not None and bool(getattr(req, rf.name, None))

    nested_errors = any(f.is_struct and f.is_array and f.present(v) and _has_error_code(f.fields, v)
                        and answered(f) for f in fields)
    for f in fields:
        if not f.present(v):
            continue
        if f.name == "error_code" and f.type == "int16":
            if not (top and nested_errors):
                kw[f.name] = code
            continue
        if f.is_struct and f.is_array:
            rf = _match_array(f, req_fields, v)
            if rf is None or not _has_error_code(f.fields, v):
                continue
            items = getattr(req, rf.name, None) or []
            out = []
            for item in items:
                if rf.is_struct:
                    out.append(_mirror(msg, f.elem, f.fields, item, rf.fields, code, v, False))
                else:  # a list of names or indexes becomes a list of result structs
                    key = next((g for g in f.fields if g.present(v) and not g.is_struct
                                and g.type == rf.elem and any(_same(g.name, n) for n in ("name", "index"))), None)
                    if key is None:
                        continue
                    sub = {key.name: item}
                    if any(g.name == "error_code" for g in f.fields if g.present(v)):
                        sub["error_code"] = code
                    out.append(msg.struct(f.elem)(**sub))
            kw[f.name] = out
            continue
        if f.is_struct:
            continue
        rf = next((g for g in req_fields if g.present(v) and not g.is_struct and g.type == f.type
                   and _same(g.name, f.name)), None)
        if rf is not None and req is not None:
            kw[f.name] = getattr(req, rf.name)
        elif f.name in _MINUS_ONE and f.type in ("int32", "int64"):
            kw[f.name] = -1
        elif f.type == "records":
            kw[f.name] = b""  # empty, not null: librdkafka cannot parse a null MessageSet
    return msg.struct(struct_name)(**kw)


def _match_array(f, req_fields, v: int):
    """The request array a response array answers: same name, else the first request array
    (of structs, or of names/indexes) whose elements share a key field with ``f``'s."""
    cands = [g for g in req_fields if g.present(v) and g.is_array]
    for g in cands:
        if g.name == f.name:
            return g
    keys = {g.name for g in f.fields if g.present(v)}
    for g in cands:
        if g.is_struct:
            if any(_same(a.name, k) for a in g.fields if a.present(v) for k in keys):
                return g
        elif g.elem in ("string", "int32") and any(_same(k, "name") or _same(k, "index") for k in keys):
            return g
    return None


def error_response(api, version: int, req, error_code: int):
    """An error answer to ``req`` (a decoded request of ``api`` at ``version``)."""
    msg = api.response
    return _mirror(msg, msg.name, msg.fields, req, api.request.fields, int(error_code), version, True)


def has_error_code(api, version: int) -> bool:
    """Does this response version carry an error code (top level or nested)?"""
    return _has_error_code(api.response.fields, version)


def error_codes(api, version: int, body) -> Counter:
    """Non-zero error codes in a response body -> how often each occurs."""
    out: Counter = Counter()
    _collect(api.response.fields, version, body, out)
    return out


def _collect(fields, v: int, obj, out: Counter) -> None:
    for f in fields:
        if not f.present(v):
            continue
        if f.name == "error_code" and not f.is_struct:
            code = getattr(obj, "error_code", 0)
            if code:
                out[code] += 1
        elif f.is_struct and _has_error_code(f.fields, v):
            value = getattr(obj, f.name, None)
            if value is None:
                continue
            if f.is_array:
                for item in value:
                    _collect(f.fields, v, item, out)
            else:
                _collect(f.fields, v, value, out)

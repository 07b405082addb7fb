"""The harness's own parts, without brokers: normalisation, comparison and the listed differences."""
from __future__ import annotations

import uuid

import pytest

from differential import listed
from differential.compare import diff, pattern_path
from differential.normalise import Normaliser
from differential.run import Results
from differential.wire import Outcome
from kwire.codec.apis import api


def _metadata_response(topic_id, cluster="abc", host="h1", port=1, error=0):
    R = api("Metadata").response
    B, T = R.struct("MetadataResponseBroker"), R.struct("MetadataResponseTopic")
    return R.cls(throttle_time_ms=7, cluster_id=cluster, brokers=[B(node_id=1, host=host, port=port)],
                 topics=[T(name="b", topic_id=uuid.uuid4(), error_code=0),
                         T(name="a", topic_id=topic_id, error_code=error)])


def test_ids_hosts_and_throttle_are_masked_and_topic_order_is_canonical():
    ka, kw = uuid.uuid4(), uuid.uuid4()
    a = Normaliser({"a": ka}).struct(_metadata_response(ka))
    b = Normaliser({"a": kw}).struct(_metadata_response(kw, cluster="other", host="h2", port=2))
    assert "throttle_time_ms" not in a
    assert a["topics"][0]["topic_id"] == "topic:a"
    assert diff(a, b) == []


def test_a_real_difference_is_reported_with_its_path():
    ka = uuid.uuid4()
    a = Normaliser({"a": ka}).struct(_metadata_response(ka))
    b = Normaliser({"a": ka}).struct(_metadata_response(ka, error=3))
    (path, left, right), = diff(a, b)
    assert pattern_path(path) == "topics[].error_code"
    assert (left, right) == ("0 NONE", "3 UNKNOWN_TOPIC_OR_PARTITION")


def test_the_wire_table_parses_and_every_row_has_a_reason():
    rows = listed.load()
    assert rows, "docs/differences.md lists no wire difference"
    assert all(r.reason and r.where for r in rows)


def test_unlisted_differences_are_counted_and_listed_ones_are_not(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("## Wire (differential conformance)\n\n| id | where | kafka | kwire | reason |\n"
                   "| --- | --- | --- | --- | --- |\n"
                   "| X1 | `fam/Metadata.v12.topics[].error_code` | `0 NONE` | `3 .*` | a reason |\n")
    rows = listed.load(doc)
    ka = uuid.uuid4()
    ok, bad = _metadata_response(ka), _metadata_response(ka, error=3)
    results = Results(rows)
    entry = lambda body: ("Metadata", "Metadata", 12, Outcome("response", body))  # noqa: E731
    norm = lambda: Normaliser({"a": ka})  # noqa: E731
    results.add("fam", 0, None, [entry(ok)], [entry(bad)], norm(), norm(), {})
    assert (results.compared, results.listed, results.unlisted) == (1, 1, [])
    results.add("other", 1, None, [entry(ok)], [entry(bad)], norm(), norm(), {})
    assert results.compared == 2 and len(results.unlisted) == 1
    results.add("fam", 2, None, [entry(ok)], [("Metadata", "Metadata", 12, Outcome("closed"))], norm(), norm(), {})
    assert results.unlisted[-1]["differences"][0]["path"] == "outcome"


def test_a_row_without_reason_is_refused(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("## Wire (differential conformance)\n\n| id | where | kafka | kwire | reason |\n"
                   "| --- | --- | --- | --- | --- |\n| X1 | `*` | | |  |\n")
    with pytest.raises(ValueError):
        listed.load(doc)


def test_list_brackets_in_a_pattern_are_literal(tmp_path):
    doc = tmp_path / "d.md"
    doc.write_text("## Wire (differential conformance)\n\n| id | where | kafka | kwire | reason |\n"
                   "| --- | --- | --- | --- | --- |\n"
                   "| X1 | `*/Fetch.v*.responses[].partitions[].aborted_transactions` | | | a reason |\n")
    rows = listed.load(doc)
    assert listed.match(rows, "fetch/Fetch.v15.responses[].partitions[].aborted_transactions", [], None)
    assert not listed.match(rows, "fetch/Fetch.v15.responses[].partitions[].high_watermark", -1, 6)

"""Quota entities as records leave them: Kafka's precedence, DescribeClientQuotas' filter and
AlterClientQuotas' validation."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from kwire.metadata.delta import replay
from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage
from kwire.metadata.snapshot import decode_snapshot, encode_snapshot
from kwire.quota.store import ClientQuotaStore, QuotaRequestError, validate_alteration

P = "producer_byte_rate"


def _rec(pairs, key, value, remove=False):
    E = R.CLIENT_QUOTA.struct("EntityData")
    return R.CLIENT_QUOTA.cls(entity=[E(entity_type=t, entity_name=n) for t, n in pairs], key=key,
                              value=value, remove=remove)


def _store(*entries):
    s = ClientQuotaStore()
    for pairs, value in entries:
        s.apply(_rec(pairs, P, value))
    return s


ALL_LEVELS = [
    ([("user", "alice"), ("client-id", "app")], 1.0),
    ([("user", "alice"), ("client-id", None)], 2.0),
    ([("user", "alice")], 3.0),
    ([("user", None), ("client-id", "app")], 4.0),
    ([("user", None), ("client-id", None)], 5.0),
    ([("user", None)], 6.0),
    ([("client-id", "app")], 7.0),
    ([("client-id", None)], 8.0),
]


def test_precedence_walks_kafkas_eight_levels():
    # remove the most specific level one at a time: each step falls to the next one
    for i, (_, expected) in enumerate(ALL_LEVELS):
        s = _store(*ALL_LEVELS[i:])
        assert s.resolve("alice", "app", P)[1] == expected, ALL_LEVELS[i]
    assert _store().resolve("alice", "app", P) == (("", "app"), None)


def test_metric_tags_say_who_shares_a_sensor():
    s = _store(([("user", "alice")], 100.0))
    # a user quota: all of alice's client ids count on one sensor
    assert s.resolve("alice", "a", P) == (("alice", ""), 100.0)
    assert s.resolve("alice", "b", P) == (("alice", ""), 100.0)
    assert s.resolve("bob", "a", P) == (("", "a"), None)
    s = _store(([("client-id", None)], 50.0))
    assert s.resolve("bob", "a", P) == (("", "a"), 50.0)    # a default: a sensor per client id
    assert s.resolve("bob", "b", P) == (("", "b"), 50.0)


def test_quota_of_another_key_does_not_apply():
    s = ClientQuotaStore()
    s.apply(_rec([("client-id", "c")], "consumer_byte_rate", 10.0))
    assert s.resolve("u", "c", P)[1] is None
    assert s.resolve("u", "c", "consumer_byte_rate")[1] == 10.0


def test_remove_and_snapshot():
    image = MetadataImage()
    image = replay(image, [(R.CLIENT_QUOTA, _rec([("user", "alice")], P, 10.0))])
    image = replay(image, [(R.CLIENT_QUOTA, _rec([("user", "alice")], "consumer_byte_rate", 20.0))])
    image = replay(image, [(R.CLIENT_QUOTA, _rec([("client-id", None)], P, 30.0))])
    image = replay(image, [(R.CLIENT_QUOTA, _rec([("user", "alice")], P, 0.0, remove=True))])
    again = decode_snapshot(encode_snapshot(image))
    assert again.client_quotas.entities == {(("user", "alice"),): {"consumer_byte_rate": 20.0},
                                           (("client-id", None),): {P: 30.0}}
    image = replay(image, [(R.CLIENT_QUOTA, _rec([("user", "alice")], "consumer_byte_rate", 0.0, remove=True))])
    assert (("user", "alice"),) not in image.client_quotas.entities


def _c(t, mt, m=None):
    return NS(entity_type=t, match_type=mt, match=m)


def test_describe_match_types_and_strict():
    s = _store(*ALL_LEVELS)
    names = lambda found: [tuple(sorted((t, n) for t, n in e)) for e, _ in found]  # noqa: E731
    # exact user alice, not strict: every entity with user=alice
    got = names(s.describe([_c("user", 0, "alice")], False))
    assert len(got) == 3 and all(("user", "alice") in e for e in got)
    # strict: only the user-only entity
    assert names(s.describe([_c("user", 0, "alice")], True)) == [(("user", "alice"),)]
    # the default user, alone
    assert names(s.describe([_c("user", 1)], True)) == [(("user", None),)]
    # any specified client id, together with any user (strict: both types and nothing else)
    got = names(s.describe([_c("user", 2), _c("client-id", 2)], True))
    assert len(got) == 4
    # no components, not strict: everything
    assert len(s.describe([], False)) == 8
    assert s.describe([], True) == []


@pytest.mark.parametrize("components,code", [
    ([_c("", 0, "x")], ErrorCode.INVALID_REQUEST),
    ([_c("user", 0, "a"), _c("user", 1)], ErrorCode.INVALID_REQUEST),
    ([_c("group", 0, "a")], ErrorCode.UNSUPPORTED_VERSION),
    ([_c("user", 0, None)], ErrorCode.INVALID_REQUEST),
    ([_c("user", 1, "x")], ErrorCode.INVALID_REQUEST),
    ([_c("user", 2, "x")], ErrorCode.INVALID_REQUEST),
    ([_c("user", 7)], ErrorCode.INVALID_REQUEST),
    ([_c("ip", 2), _c("user", 2)], ErrorCode.INVALID_REQUEST),
])
def test_describe_bad_filters(components, code):
    with pytest.raises(QuotaRequestError) as e:
        ClientQuotaStore().describe(components, False)
    assert e.value.code == code


@pytest.mark.parametrize("pairs,ops,message", [
    ([], [(P, 1.0)], "Invalid empty client quota entity"),
    ([("user", "a"), ("user", "b")], [(P, 1.0)], "duplicate entity entry user"),
    ([("group", "a")], [(P, 1.0)], "Unhandled client quota entity type: group"),
    ([("user", "")], [(P, 1.0)], "Empty user not supported"),
    ([("ip", "1.2.3.4")], [("connection_creation_rate", 1.0)], "ip"),
    ([("user", "a")], [("bogus", 1.0)], "Invalid configuration key bogus"),
    ([("user", "a")], [("controller_mutation_rate", 1.0)], "Invalid configuration key"),
    ([("user", "a")], [(P, 1.5)], "must be a Long value"),
    ([("user", "a")], [(P, float("nan"))], "finite"),
    ([("user", "a")], [(P, 1.0), (P, 2.0)], "Duplicate quota key"),
])
def test_alteration_refused(pairs, ops, message):
    ent, code, msg = validate_alteration(pairs, ops)
    assert ent is None and code == ErrorCode.INVALID_REQUEST and message in msg


def test_alteration_accepted():
    ent, code, _ = validate_alteration([("user", None), ("client-id", "c")],
                                       [(P, 1024.0), ("request_percentage", 12.5), ("consumer_byte_rate", None)])
    assert code == 0 and ent == (("client-id", "c"), ("user", None))
    # removing a key that is not valid is no error (Kafka checks only values it sets)
    assert validate_alteration([("client-id", "c")], [("whatever", None)])[1] == 0

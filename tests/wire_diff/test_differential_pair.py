"""The differential subset `make test` runs: the generated corpora (a few derandomized examples per
family) against one Apache Kafka and one kwire for the whole module; any difference that
docs/differences.md does not list fails the family's test with the differences in the message."""
from __future__ import annotations

import itertools
import json

import pytest

from differential.cases import FAMILIES
from differential.listed import load
from differential.pair import Pair
from differential.run import Results, run_family

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("apache-kafka"), pytest.mark.timeout(300)]

_counter = itertools.count()


@pytest.fixture(scope="module")
def pair():
    with Pair() as p:
        yield p


@pytest.mark.parametrize("family", [f for f in FAMILIES if f.ci_examples > 0], ids=lambda f: f.name)
def test_family_has_no_unlisted_difference(pair, family):
    results = Results(load())
    run_family(pair, family, results, family.ci_examples, _counter)
    assert results.compared > 0
    assert not results.unlisted, json.dumps(results.unlisted[:10], indent=1)[:6000]

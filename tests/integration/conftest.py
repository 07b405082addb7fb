import itertools
import os
import uuid

import pytest

from kwire.testing import Broker


@pytest.fixture(scope="module")
def kwire_broker():
    with Broker(mode="thread", overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        yield b


@pytest.fixture
def bootstrap(kwire_broker):
    return kwire_broker.bootstrap_servers


@pytest.fixture
def topic():
    return f"t-{uuid.uuid4().hex[:10]}"

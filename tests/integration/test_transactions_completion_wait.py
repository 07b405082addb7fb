"""AddPartitionsToTxn arriving while the last transaction's markers are being written (EndTxn
answered, PrepareCommit) waits for the transaction to complete instead of answering
CONCURRENT_TRANSACTIONS at once (a client would retry after its backoff: librdkafka and the
Java client wait 20-100 ms), at most COMPLETION_WAIT_S; then CONCURRENT_TRANSACTIONS."""
from __future__ import annotations

import time
import uuid

import pytest

import kwire.transactions.verify as verify
from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient

from tests.integration.test_transactions_verification import add, begin, kp_batch, produce1

pytestmark = pytest.mark.slow

E = ErrorCode


@pytest.fixture(scope="module")
def broker():
    with Broker(overrides={"transaction.state.log.num.partitions": 1}) as b:
        yield b


def test_back_to_back_transactions_never_see_concurrent_transactions(broker):
    tid = f"cw-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap_servers) as c:
        t = f"cw-{uuid.uuid4().hex[:8]}"
        c.create_topic(t, 1)
        pid, epoch = begin(c, tid, {})
        for i in range(30):
            assert add(c, tid, pid, epoch, {t: [0]}) == {(t, 0): 0}, i   # right after the last EndTxn
            assert produce1(c, tid, t, 0, kp_batch([b"v"], pid, epoch, i)) == (0, 2 * i)
            r = c.request("EndTxn", 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                          committed=i % 2 == 0)
            assert r.error_code == 0


def test_the_wait_is_bounded(broker, monkeypatch):
    """Markers that never complete: AddPartitionsToTxn answers CONCURRENT_TRANSACTIONS after
    COMPLETION_WAIT_S, and the broker serves others meanwhile."""
    coord = broker.broker.txn_edge.coordinator
    tid = f"cw-{uuid.uuid4().hex[:8]}"
    with WireClient(broker.bootstrap_servers) as c:
        t = f"cw-{uuid.uuid4().hex[:8]}"
        c.create_topic(t, 1)
        pid, epoch = begin(c, tid, {t: [0]})
        monkeypatch.setattr(coord, "send_markers", lambda job: None)   # the markers never go out
        assert c.request("EndTxn", 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                         committed=True).error_code == 0
        t0 = time.monotonic()
        assert add(c, tid, pid, epoch, {t: [0]}) == {(t, 0): E.CONCURRENT_TRANSACTIONS}
        assert time.monotonic() - t0 >= verify.COMPLETION_WAIT_S * 0.9
        assert not broker.broker.txn_edge._completions   # no waiter left behind

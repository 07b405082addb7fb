"""KIP-890 part 1's verification (kwire.transactions.verify): answered by the local coordinator
when this broker coordinates the transactional id, else sent as AddPartitionsToTxn v5
verify_only over a real socket (kwire.coordinator.channel) to the broker that does."""
from __future__ import annotations

from types import SimpleNamespace as NS

import pytest
import trio

from kwire.errors import ErrorCode
from kwire.testing import Broker
from kwire.testing.client import WireClient
from kwire.testing.wait import wait_until
from kwire.coordinator.channel import BrokerChannel
from kwire.transactions.records import TRANSACTION_STATE_TOPIC
from kwire.transactions.verify import verify_transaction

from tests.transactions.txn_harness import Harness

E = ErrorCode


def fake_broker(node_id, leader, coord, brokers, channel=None, partitions=50):
    topics = {TRANSACTION_STATE_TOPIC: NS(partitions={i: NS(leader=leader) for i in range(partitions)})}
    return NS(node_id=node_id, image=NS(topics=topics, brokers=brokers),
              txn_edge=NS(coordinator=coord, channel=channel))


def test_local_coordinator_answers_in_process():
    h = Harness()
    r = h.init("tx")
    h.add("tx", r.producer_id, 0, ("t", 0))
    b = fake_broker(1, 1, h.coord, {1: NS(node_id=1, fenced=False)})
    out = trio.run(verify_transaction, b, "tx", r.producer_id, 0, [("t", 0), ("t", 1)])
    assert out == {("t", 0): E.NONE, ("t", 1): E.TRANSACTION_ABORTABLE}
    b.image.topics.clear()
    assert trio.run(verify_transaction, b, "tx", r.producer_id, 0, [("t", 0)]) == {("t", 0): E.COORDINATOR_NOT_AVAILABLE}


@pytest.mark.slow
def test_remote_coordinator_over_a_socket_and_unreachable():
    with Broker(overrides={"transaction.state.log.num.partitions": 2}) as kb:
        kb.create_topic("vt", 2)
        with WireClient(kb.bootstrap_servers) as c:
            wait_until(lambda: c.request("FindCoordinator", 4, key_type=1,
                                         coordinator_keys=["vx"]).coordinators[0].error_code == 0)
            r = wait_until(lambda: (x := c.request("InitProducerId", 4, transactional_id="vx",
                                                   transaction_timeout_ms=60000, producer_id=-1,
                                                   producer_epoch=-1)).error_code == 0 and x)
            from kwire.codec.apis import api
            T = api("AddPartitionsToTxn").request.struct("AddPartitionsToTxnTopic")
            c.request("AddPartitionsToTxn", 3, v3_and_below_transactional_id="vx", v3_and_below_producer_id=r.producer_id,
                      v3_and_below_producer_epoch=0, v3_and_below_topics=[T(name="vt", partitions=[1])])
        local = Harness(transaction_state_log_num_partitions=2)   # this broker (7) coordinates nothing
        brokers = {1: NS(node_id=1, fenced=False, host="127.0.0.1", port=kb.port)}
        me = fake_broker(7, 1, local.coord, brokers, partitions=2)
        me.txn_edge.channel = BrokerChannel(me, 5.0, "test")

        async def ask(pid, epoch):
            return await verify_transaction(me, "vx", pid, epoch, [("vt", 0), ("vt", 1)])

        async def both():
            try:
                return await ask(r.producer_id, 0), await ask(r.producer_id, 3)   # the second reuses the connection
            finally:
                await me.txn_edge.channel.aclose()

        ok, fenced = trio.run(both)
        assert ok == {("vt", 0): E.TRANSACTION_ABORTABLE, ("vt", 1): E.NONE}
        assert fenced == {("vt", 0): E.PRODUCER_FENCED, ("vt", 1): E.PRODUCER_FENCED}
    # the coordinator is gone now
    assert trio.run(ask, r.producer_id, 0) == {("vt", 0): E.NETWORK_EXCEPTION, ("vt", 1): E.NETWORK_EXCEPTION}

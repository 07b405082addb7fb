"""The coordinator's WriteTxnMarkers sender (kwire.transactions.markers) against a fake cluster:
a metadata image that can move leaders and delete topics, and a transport that answers as the
script of each test says. Trio's MockClock makes the retry back-off instant."""
from __future__ import annotations

from types import SimpleNamespace as NS

import trio
import trio.testing

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.transactions.markers import TxnMarkerSender
from kwire.transactions.metadata import TransactionState

from tests.transactions.txn_harness import Harness

E = ErrorCode
S = TransactionState
Resp = api("WriteTxnMarkers").response


def image(leaders: dict[str, list[int]]):
    return NS(topics={t: NS(partitions={i: NS(leader=l) for i, l in enumerate(ls)}) for t, ls in leaders.items()},
              brokers={n: NS(fenced=False) for n in (1, 2, 3)})


class Cluster:
    def __init__(self, leaders):
        self.image = image(leaders)
        self.requests: list[tuple[int, object]] = []
        self.answer = lambda node, topic, p: E.NONE   # the error a leader answers

    async def transport(self, node, req):
        self.requests.append((node, req))
        await trio.sleep(0)
        M, T, P = (Resp.struct(n) for n in ("WritableTxnMarkerResult", "WritableTxnMarkerTopicResult",
                                              "WritableTxnMarkerPartitionResult"))
        return Resp.cls(markers=[M(producer_id=m.producer_id, topics=[
            T(name=t.name, partitions=[P(partition_index=p, error_code=self.answer(node, t.name, p))
                                       for p in t.partition_indexes]) for t in m.topics]) for m in req.markers])


def run(test):
    trio.run(test, clock=trio.testing.MockClock(autojump_threshold=0))


def setup(h, cluster, nursery):
    sender = TxnMarkerSender(h.coord, lambda: cluster.image, cluster.transport, nursery)
    h.coord.send_markers = sender.submit
    return sender


def begin(h, tid, *tps):
    r = h.init(tid)
    assert h.add(tid, r.producer_id, r.producer_epoch, *tps) == E.NONE
    return r.producer_id, r.producer_epoch


async def settle(sender):
    while sender.in_flight:
        await trio.sleep(0.01)


def test_markers_grouped_per_leader_then_complete():
    async def main():
        h = Harness()
        c = Cluster({"a": [1, 2], "b": [2]})
        async with trio.open_nursery() as n:
            sender = setup(h, c, n)
            pid, epoch = begin(h, "tx", ("a", 0), ("a", 1), ("b", 0))
            assert h.end("tx", pid, epoch, True) == E.NONE
            await settle(sender)
            n.cancel_scope.cancel()
        assert h.md("tx").state == S.COMPLETE_COMMIT
        sent = sorted((node, [(t.name, sorted(t.partition_indexes)) for t in req.markers[0].topics])
                      for node, req in c.requests)
        assert sent == [(1, [("a", [0])]), (2, [("a", [1]), ("b", [0])])]
        m = c.requests[0][1].markers[0]
        assert (m.producer_id, m.producer_epoch, m.transaction_result, m.coordinator_epoch) == (pid, epoch, True, 0)
    run(main)


def test_not_leader_is_retried_with_fresh_metadata():
    async def main():
        h = Harness()
        c = Cluster({"a": [1]})
        c.answer = lambda node, t, p: E.NOT_LEADER_OR_FOLLOWER if node == 1 else E.NONE
        async with trio.open_nursery() as n:
            sender = setup(h, c, n)
            pid, epoch = begin(h, "tx", ("a", 0))
            h.end("tx", pid, epoch, False)
            while len(c.requests) < 3:
                await trio.sleep(0.05)
            assert h.md("tx").state == S.PREPARE_ABORT      # still retrying the old leader
            c.image.topics["a"].partitions[0].leader = 3     # the leader moved
            await settle(sender)
            n.cancel_scope.cancel()
        assert h.md("tx").state == S.COMPLETE_ABORT
        assert c.requests[-1][0] == 3 and c.requests[-1][1].markers[0].transaction_result is False
    run(main)


def test_no_leader_and_unreachable_broker_are_retried():
    async def main():
        h = Harness()
        c = Cluster({"a": [-1]})
        real = c.transport
        fails = [2]

        async def flaky(node, req):
            if fails[0]:
                fails[0] -= 1
                raise OSError("connection refused")
            return await real(node, req)

        async with trio.open_nursery() as n:
            sender = TxnMarkerSender(h.coord, lambda: c.image, flaky, n)
            h.coord.send_markers = sender.submit
            pid, epoch = begin(h, "tx", ("a", 0))
            h.end("tx", pid, epoch, True)
            await trio.sleep(1)
            assert not c.requests and h.md("tx").state == S.PREPARE_COMMIT
            c.image.topics["a"].partitions[0].leader = 2
            await settle(sender)
            n.cancel_scope.cancel()
        assert h.md("tx").state == S.COMPLETE_COMMIT and fails == [0]
    run(main)


def test_deleted_topic_is_dropped():
    async def main():
        h = Harness()
        c = Cluster({"a": [1], "gone": [2]})
        async with trio.open_nursery() as n:
            sender = setup(h, c, n)
            pid, epoch = begin(h, "tx", ("a", 0), ("gone", 0))
            del c.image.topics["gone"]
            h.end("tx", pid, epoch, True)
            await settle(sender)
            n.cancel_scope.cancel()
        assert h.md("tx").state == S.COMPLETE_COMMIT
        assert [node for node, _ in c.requests] == [1]
    run(main)


def test_fenced_marker_abandons_the_job():
    async def main():
        h = Harness()
        c = Cluster({"a": [1]})
        c.answer = lambda node, t, p: E.TRANSACTION_COORDINATOR_FENCED
        async with trio.open_nursery() as n:
            sender = setup(h, c, n)
            pid, epoch = begin(h, "tx", ("a", 0))
            h.end("tx", pid, epoch, True)
            await settle(sender)
            n.cancel_scope.cancel()
        assert len(c.requests) == 1 and h.md("tx").state == S.PREPARE_COMMIT
    run(main)


def test_markers_of_several_transactions_share_a_request():
    async def main():
        h = Harness()
        c = Cluster({"a": [1, 1]})
        async with trio.open_nursery() as n:
            sender = setup(h, c, n)
            ends = []
            for i in range(3):
                pid, epoch = begin(h, f"tx{i}", ("a", i % 2))
                ends.append((f"tx{i}", pid, epoch))
            for tid, pid, epoch in ends:
                assert h.end(tid, pid, epoch, True) == E.NONE
            await settle(sender)
            n.cancel_scope.cancel()
        assert all(h.md(t).state == S.COMPLETE_COMMIT for t, _, _ in ends)
        assert len(c.requests) == 1 and len(c.requests[0][1].markers) == 3
    run(main)


def test_job_stops_when_the_coordinator_moves():
    async def main():
        h = Harness(transaction_state_log_num_partitions=1)
        c = Cluster({"a": [1]})
        c.answer = lambda node, t, p: E.NOT_ENOUGH_REPLICAS
        async with trio.open_nursery() as n:
            sender = setup(h, c, n)
            pid, epoch = begin(h, "tx", ("a", 0))
            h.end("tx", pid, epoch, True)
            await trio.sleep(0.5)
            h.coord.unload(0)
            await settle(sender)
            n.cancel_scope.cancel()
        assert sender.in_flight == 0
    run(main)

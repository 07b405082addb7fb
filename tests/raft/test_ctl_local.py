"""The controller API a broker's own code calls (MetadataQuorum.alter_partition,
controlled_shutdown, elect_leaders) on a node that is the active controller itself: the
local path, no controller listener involved; and the ElectLeaders handler on the client
listener of a single node."""
from __future__ import annotations

import pytest
import trio

from kwire.errors import ErrorCode
from kwire.metadata.partition_change import AlterPartitionResult, Election
from kwire.testing import Broker

pytestmark = pytest.mark.slow


def in_broker(b: Broker, fn, *args, **kw):
    """Run ``await fn(*args, **kw)`` on the broker's own Trio loop."""
    async def go():
        return await fn(*args, **kw)
    return trio.from_thread.run(go, trio_token=b._trio_token)


def test_local_controller_api():
    with Broker() as b:
        b.create_topic("t", 2)
        q = b.broker.quorum
        t = b.broker.image.topics["t"]
        tid, p = t.topic_id, t.partitions[0]
        assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (1, [1], 0, 0)

        res = in_broker(b, q.alter_partition, tid, 0, 0, 0, [1])
        assert res == AlterPartitionResult(ErrorCode.NONE, 1, 0, [1], 0)     # nothing to change: the state as is
        assert in_broker(b, q.alter_partition, tid, 0, -1, 0, [1]).code == ErrorCode.FENCED_LEADER_EPOCH
        assert in_broker(b, q.alter_partition, tid, 0, 0, -1, [1]).code == ErrorCode.INVALID_UPDATE_VERSION
        assert in_broker(b, q.alter_partition, tid, 0, 0, 0, [1, 2]).code == ErrorCode.INVALID_REQUEST
        assert in_broker(b, q.alter_partition, tid, 5, 0, 0, [1]).code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        epoch = b.broker.image.brokers[1].epoch
        assert in_broker(b, q.alter_partition, tid, 0, 0, 0, [1], broker_epochs=[epoch + 1]).code == \
            ErrorCode.INELIGIBLE_REPLICA     # a member that registered anew since
        assert in_broker(b, q.alter_partition, tid, 0, 0, 0, [1], broker_epochs=[epoch]).code == ErrorCode.NONE
        # a stale controller view (epochs ahead of it): NOT_CONTROLLER, retried until the timeout
        assert in_broker(b, q.alter_partition, tid, 0, 3, 0, [1], timeout=0.5).code == ErrorCode.REQUEST_TIMED_OUT

        code, results = in_broker(b, q.elect_leaders, Election.PREFERRED, {"t": [0, 1, 2]})
        assert code == ErrorCode.NONE
        assert [c for _, c, _ in results["t"]] == [ErrorCode.ELECTION_NOT_NEEDED] * 2 + [
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        # alone, there is nobody to hand leadership to: done at once, nothing changed
        assert in_broker(b, q.controlled_shutdown, 5.0) is True
        assert not b.broker.image.brokers[1].in_controlled_shutdown and b.broker.image.topics["t"].partitions[0].leader == 1


def test_elect_leaders_handler_versions():
    with Broker() as b:
        b.create_topic("e", 1)
        with b.client() as c:
            for v in (0, 1, 2):
                kw = {} if v == 0 else {"election_type": 0}
                r = c.request("ElectLeaders", v, topic_partitions=[
                    c_tp("e", [0, 3])], timeout_ms=5000, **kw)
                rows = {(x.topic, p.partition_id): (p.error_code, p.error_message)
                        for x in r.replica_election_results for p in x.partition_result}
                assert rows == {("e", 0): (ErrorCode.ELECTION_NOT_NEEDED,
                                           "Leader election not needed for topic partition."),
                                ("e", 3): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "No such partition as e-3")}
            r = c.request("ElectLeaders", 2, election_type=5, topic_partitions=[c_tp("e", [0])], timeout_ms=5000)
            assert r.error_code == ErrorCode.INVALID_REQUEST
            assert r.replica_election_results[0].partition_result[0].error_code == ErrorCode.INVALID_REQUEST
            r = c.request("ElectLeaders", 2, election_type=1, topic_partitions=None, timeout_ms=5000)
            # every partition has a leader: no unclean election needed, none listed
            assert r.error_code == 0 and "e" in {x.topic for x in r.replica_election_results}
            assert all(not x.partition_result for x in r.replica_election_results)


def c_tp(topic, parts):
    from kwire.codec.apis import api  # noqa: PLC0415
    return api("ElectLeaders").request.struct("TopicPartitions")(topic=topic, partitions=parts)


def test_elect_leaders_through_confluent_kafka():
    import pytest  # noqa: PLC0415
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415

    with Broker() as b:
        b.create_topic("ck", 2)
        admin = AdminClient({"bootstrap.servers": b.bootstrap_servers})
        fut = admin.elect_leaders(ck.ElectionType.PREFERRED, [ck.TopicPartition("ck", 0), ck.TopicPartition("ck", 1)])
        got = fut.result(30)
        # already led by the preferred replica: librdkafka reports ELECTION_NOT_NEEDED per partition
        assert {tp.partition: (e.code() if e is not None else None) for tp, e in got.items()} == {
            0: ck.KafkaError.ELECTION_NOT_NEEDED, 1: ck.KafkaError.ELECTION_NOT_NEEDED}

"""Out of file descriptors is not a disk failure (issue 32): with every open of a topic's
.log file failing with EMFILE, a Fetch and a Produce on the wire get the retriable
REPLICA_NOT_AVAILABLE for that partition (never KAFKA_STORAGE_ERROR), the data dir stays
online (other partitions, __consumer_offsets, DescribeLogDirs), and once descriptors are back
the same requests succeed. Kafka would take the whole log dir offline here (kwire.fds)."""
from __future__ import annotations

import errno
import os

import pytest

from kwire.codec.apis import api
from kwire.errors import ErrorCode
from kwire.log.regions import OPEN_FILES
from kwire.testing import Broker
from kwire.testing.client import WireClient

pytestmark = pytest.mark.slow


def _fetch(c, topic):
    F = api("Fetch").request
    tp = F.struct("FetchTopic")(topic=topic, topic_id=None, partitions=[F.struct("FetchPartition")(
        partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
        partition_max_bytes=1 << 20)])
    r = c.request("Fetch", 11, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                  session_id=0, session_epoch=-1, topics=[tp], forgotten_topics_data=[], rack_id="")
    return r.responses[0].partitions[0]


def test_emfile_answers_retriable_and_the_dir_stays_online(monkeypatch):
    with Broker(mode="thread") as b, WireClient(b.bootstrap_servers) as c:
        c.create_topic("starved", 1)
        c.create_topic("fine", 1)
        assert c.produce("starved", [b"a"]) == [0]
        assert c.produce("fine", [b"b"]) == [0]
        starved = os.sep + "starved-0" + os.sep
        real = os.open

        def emfile(path, flags, mode=0o777, **kw):
            if starved in str(path) and str(path).endswith(".log"):
                raise OSError(errno.EMFILE, "Too many open files", str(path))
            return real(path, flags, mode, **kw)

        OPEN_FILES.shed()                     # every .log file has to be opened again
        monkeypatch.setattr(os, "open", emfile)
        pd = _fetch(c, "starved")
        assert pd.error_code == ErrorCode.REPLICA_NOT_AVAILABLE
        P = api("Produce").request
        from kwire.codec.records import build_batch
        r = c.request("Produce", 9, transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            P.struct("TopicProduceData")(name="starved", partition_data=[
                P.struct("PartitionProduceData")(index=0, records=build_batch([(None, b"x")]))])])
        assert r.responses[0].partition_responses[0].error_code == ErrorCode.REPLICA_NOT_AVAILABLE
        # the rest of the dir is served meanwhile
        assert [r.value for r in c.consume("fine", 1)] == [b"b"]
        assert c.produce("fine", [b"c"]) == [1]
        monkeypatch.undo()
        assert _fetch(c, "starved").error_code == 0
        assert c.produce("starved", [b"d"]) == [1]    # the refused batch was never written
        assert [r.value for r in c.consume("starved", 2)] == [b"a", b"d"]
        assert b.broker.logs.failure_channel.offline_dirs == {}

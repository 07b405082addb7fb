"""The active controller decides a producer-id block only with everything committed applied to
its image: a controller that has just taken over and not yet applied its predecessor's last
ProducerIdsRecord would otherwise accept an overlapping block (two brokers handing out the same
ids). No I/O: the quorum's commit path with a stub driver and controller."""
from __future__ import annotations

import types

import trio

from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata.quorum import MetadataQuorum


class _Driver:
    def __init__(self):
        self.proposed = []
        self.applied_offset = 40

    async def propose_and_wait(self, values, timeout):
        self.proposed.append(values)
        return 41


def _quorum(ready: bool, next_producer_id: int) -> MetadataQuorum:
    q = MetadataQuorum.__new__(MetadataQuorum)
    q.broker = types.SimpleNamespace(image=types.SimpleNamespace(next_producer_id=next_producer_id))
    q.driver = _Driver()
    q.controller = types.SimpleNamespace(ready=lambda: ready, lock=trio.Lock())
    q._pending_topics, q._pending_producer_ids = set(), []
    q.commit_latencies = []
    return q


def _block(next_id: int) -> list[bytes]:
    return [R.encode_record(R.PRODUCER_IDS, R.PRODUCER_IDS.cls(broker_id=2, broker_epoch=5, next_producer_id=next_id))]


def test_a_block_waits_until_the_new_controller_applied_what_is_committed():
    # the predecessor committed a block up to 2000; this controller's image still says 1000
    q = _quorum(ready=False, next_producer_id=1000)
    code, _offset, _msg = trio.run(q._controller_commit, _block(2000), 5.0)
    assert code == ErrorCode.NOT_CONTROLLER          # retriable: the broker asks again
    assert q.driver.proposed == []


def test_a_ready_controller_checks_the_block_against_its_image():
    q = _quorum(ready=True, next_producer_id=2000)
    code, _offset, msg = trio.run(q._controller_commit, _block(2000), 5.0)
    assert code == ErrorCode.INVALID_REQUEST and "not past 2000" in msg
    assert q.driver.proposed == []
    code, offset, _ = trio.run(q._controller_commit, _block(3000), 5.0)
    assert (code, offset) == (ErrorCode.NONE, 41) and len(q.driver.proposed) == 1

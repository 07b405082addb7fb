"""Producer ids are unique across the brokers of a cluster, even when every broker allocates
its first block at the same moment (found by the chaos tests: two idempotent producers that
got the same id from two brokers saw OUT_OF_ORDER_SEQUENCE_NUMBER, and one producer's batch
could be taken for a duplicate of the other's)."""
from __future__ import annotations

import threading

import pytest

from tests.raft.cluster import Cluster, call, wait_for

pytestmark = pytest.mark.slow


def test_concurrent_first_allocations_on_every_broker_hand_out_distinct_ids(tmp_path):
    c = Cluster(str(tmp_path / "cluster"), 3).start()
    try:
        got: dict[int, list] = {nid: [] for nid in c.nodes}
        go = threading.Barrier(len(c.nodes) * 2)

        def init(nid: int) -> None:
            go.wait()
            r = call(c.nodes[nid].port, "InitProducerId", 4, timeout=30.0, transactional_id=None,
                     transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
            got[nid].append((r.error_code, r.producer_id))

        threads = [threading.Thread(target=init, args=(nid,)) for nid in c.nodes for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        ids = [pid for answers in got.values() for code, pid in answers if code == 0]
        assert len(ids) == len(set(ids)), f"producer ids handed out twice: {got}"
        # a refused allocation is retriable (COORDINATOR_NOT_AVAILABLE): every node hands out
        # ids once its image has the blocks the others took, and still none twice
        def fresh_id(nid: int):
            r = call(c.nodes[nid].port, "InitProducerId", 4, timeout=30.0, transactional_id=None,
                     transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1)
            assert r.error_code in (0, 15), r
            return r.producer_id if r.error_code == 0 else None
        for nid in c.nodes:
            ids.append(wait_for(lambda: fresh_id(nid), 20, message=f"node {nid} hands out a producer id"))
        assert len(ids) == len(set(ids)), f"producer ids handed out twice: {got} then {ids}"
    finally:
        c.stop()

"""ProducerIdManager (InitProducerId's rules, no sockets) and its durable id blocks."""
from __future__ import annotations

from kwire.errors import ErrorCode
from kwire.producers.ids import MAX_EPOCH, InitResult, ProducerIdManager

NOW = 1_700_000_000_000


def manager(block=10):
    blocks = []

    def allocate(size):
        start = blocks[-1] + size if blocks else 0
        blocks.append(start)
        return start

    return ProducerIdManager(allocate, block_size=block, expiration_ms=1_000_000), blocks


def test_fresh_ids_come_from_blocks():
    m, blocks = manager(block=3)
    ids = [m.init_producer_id(-1, -1, NOW) for _ in range(7)]
    assert [r.producer_id for r in ids] == list(range(7))
    assert all(r.producer_epoch == 0 and r.error == ErrorCode.NONE for r in ids)
    assert blocks == [0, 3, 6]


def test_kip360_bump_retry_and_fencing():
    m, _ = manager()
    r = m.init_producer_id(-1, -1, NOW)
    b1 = m.init_producer_id(r.producer_id, 0, NOW)
    assert b1 == InitResult(ErrorCode.NONE, r.producer_id, 1)
    # the answer to the bump was lost: the same request gets the same epoch again
    assert m.init_producer_id(r.producer_id, 0, NOW) == b1
    b2 = m.init_producer_id(r.producer_id, 1, NOW)
    assert b2 == InitResult(ErrorCode.NONE, r.producer_id, 2)
    assert m.init_producer_id(r.producer_id, 0, NOW).error == ErrorCode.PRODUCER_FENCED
    assert m.init_producer_id(r.producer_id, 7, NOW).error == ErrorCode.PRODUCER_FENCED


def test_mismatched_pair_and_unknown_id():
    m, _ = manager()
    assert m.init_producer_id(5, -1, NOW).error == ErrorCode.INVALID_REQUEST
    assert m.init_producer_id(-1, 3, NOW).error == ErrorCode.INVALID_REQUEST
    first = m.init_producer_id(-1, -1, NOW)
    unknown = m.init_producer_id(999, 4, NOW)  # not ours / forgotten: a fresh id, like Kafka
    assert unknown == InitResult(ErrorCode.NONE, first.producer_id + 1, 0)


def test_epoch_exhaustion_rotates_the_id():
    m, _ = manager()
    r = m.init_producer_id(-1, -1, NOW)
    m.epochs[r.producer_id][0] = MAX_EPOCH - 2
    again = m.init_producer_id(r.producer_id, MAX_EPOCH - 2, NOW)
    assert again.producer_id != r.producer_id and again.producer_epoch == 0


def test_expired_ids_are_forgotten():
    m, _ = manager()
    r = m.init_producer_id(-1, -1, NOW)
    later = NOW + 2_000_000
    fresh = m.init_producer_id(r.producer_id, 0, later)
    assert fresh.producer_id != r.producer_id and fresh.producer_epoch == 0


def test_blocks_handed_over_by_the_caller():
    m = ProducerIdManager(block_size=2)
    assert m.available == 0
    m.add_block(1000, 2)
    assert [m.init_producer_id(-1, -1, NOW).producer_id for _ in range(2)] == [1000, 1001]
    assert m.available == 0

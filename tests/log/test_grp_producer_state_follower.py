"""Producer state on a follower: a replicated append (origin REPLICATION) records each batch's
producer id, epoch, sequences and offsets without checking them (Kafka's ProducerAppendInfo
for replicated batches), so that once the follower becomes leader a client's retry of one of
the last 5 batches is answered as a duplicate with its original offsets; snapshots and the
rebuild after a crash keep that state."""
from __future__ import annotations

import os

import pytest

from kwire.codec.records import build_batch
from kwire.log import producer_log as PL
from kwire.log import producer_state as PS
from kwire.log.config import LogConfig
from kwire.log.partition_log import PartitionLog
from kwire.log.producer_log import producer_state_of
from kwire.log.producer_state import OutOfOrderSequence
from kwire.log.validator import CLIENT, REPLICATION

NOW = 1_700_000_000_000
PID = 7000
EPOCH = 3


def batch(pid, epoch, seq, n=2, *, base_offset=0, leader_epoch=-1, tag="v"):
    """A batch as a producer sends it (base offset 0) or, with ``base_offset`` and
    ``leader_epoch``, as the leader stored it and a follower fetches it."""
    return build_batch([(b"k", f"{tag}{seq + i}".encode(), [], NOW) for i in range(n)],
                       base_offset=base_offset, partition_leader_epoch=leader_epoch,
                       producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def open_log(path, **cfg) -> PartitionLog:
    return PartitionLog.open(str(path), LogConfig(**cfg), now_ms=NOW)


def replicate(log: PartitionLog, pid, epoch, seq, n=2, leader_epoch=1):
    """Append as a follower does: the leader's batch at the leader's offset (the log end here)."""
    off = log.log_end_offset
    res = log.append(batch(pid, epoch, seq, n, base_offset=off, leader_epoch=leader_epoch),
                     now_ms=NOW, origin=REPLICATION, leader_epoch=None)
    assert res.base_offset == off
    return off, off + n - 1


def client(log: PartitionLog, pid, epoch, seq, n=2, leader_epoch=2):
    return log.append(batch(pid, epoch, seq, n), now_ms=NOW, origin=CLIENT, leader_epoch=leader_epoch)


def test_a_retry_of_a_replicated_batch_is_a_duplicate_on_the_new_leader(tmp_path):
    log = open_log(tmp_path / "t-0")
    written = [replicate(log, PID, EPOCH, seq) for seq in range(0, 14, 2)]   # 7 batches
    leo = log.log_end_offset
    # this replica becomes leader; the producer retries its last batch (sent at base offset 0)
    dup = client(log, PID, EPOCH, 12)
    assert (dup.base_offset, dup.last_offset) == written[-1]
    for seq, offsets in zip(range(4, 14, 2), written[2:]):   # the last 5 are all known
        r = client(log, PID, EPOCH, seq)
        assert (r.base_offset, r.last_offset) == offsets
    assert log.log_end_offset == leo   # nothing written twice
    # the next batch continues the sequence; a gap is refused
    with pytest.raises(OutOfOrderSequence):
        client(log, PID, EPOCH, 20)
    nxt = client(log, PID, EPOCH, 14)
    assert nxt.base_offset == leo
    log.close()


def test_state_built_while_leader_follows_the_replicated_batches(tmp_path):
    """A replica that led (its producer state built), then followed, then leads again: the
    state it had must not be stale (a retry would otherwise be OUT_OF_ORDER_SEQUENCE)."""
    log = open_log(tmp_path / "t-0")
    first = client(log, PID, EPOCH, 0, leader_epoch=1)   # leader in epoch 1
    assert producer_state_of(log).producers[PID].last_seq == 1
    # leadership moved: the new leader took seq 2-3 and 4-5, which this replica fetches
    a = replicate(log, PID, EPOCH, 2, leader_epoch=2)
    b = replicate(log, PID, EPOCH, 4, leader_epoch=2)
    other = replicate(log, PID + 1, 0, 0, n=3, leader_epoch=2)
    # leader again (epoch 3): the producer retries what it has no answer for
    assert (client(log, PID, EPOCH, 4, leader_epoch=3).base_offset,) == (b[0],)
    r = client(log, PID, EPOCH, 2, leader_epoch=3)
    assert (r.base_offset, r.last_offset) == a
    r = client(log, PID + 1, 0, 0, n=3, leader_epoch=3)
    assert (r.base_offset, r.last_offset) == other
    r = client(log, PID, EPOCH, 0, leader_epoch=3)
    assert (r.base_offset, r.last_offset) == (first.base_offset, first.last_offset)
    assert client(log, PID, EPOCH, 6, leader_epoch=3).base_offset == other[1] + 1
    log.close()


def test_replicated_batches_are_not_checked(tmp_path):
    """The leader checked them: a follower takes a gap in sequences and a new epoch that does
    not start at 0 (what a leader would refuse from a client), and records them."""
    log = open_log(tmp_path / "t-0")
    replicate(log, PID, EPOCH, 0)
    gap = replicate(log, PID, EPOCH, 10)              # out of order for a client append
    bumped = replicate(log, PID, EPOCH + 1, 5)        # a new epoch not starting at 0
    entry = producer_state_of(log).producers[PID]
    assert (entry.epoch, entry.last_seq, entry.last_offset) == (EPOCH + 1, 6, bumped[1])
    assert [b.first_seq for b in entry.batches] == [5]  # a new epoch starts a new history
    r = client(log, PID, EPOCH + 1, 5)
    assert (r.base_offset, r.last_offset) == bumped
    assert gap[0] == 2
    log.close()


def test_replicated_state_survives_a_clean_close_and_a_crash(tmp_path):
    path = tmp_path / "t-0"
    log = open_log(path, segment_bytes=300)   # rolls every few batches: snapshots on roll
    written = [replicate(log, PID, EPOCH, seq) for seq in range(0, 20, 2)]
    assert len(log.segments) > 1
    rolled = [f for f in os.listdir(log.dir) if f.endswith(PS.SNAPSHOT_SUFFIX)]
    assert rolled, "a roll during replicated appends snapshots the producer state"
    before = {p: (e.epoch, list(e.batches)) for p, e in producer_state_of(log).producers.items()}

    # a crash: no close, no final snapshot; the state is rebuilt from the newest snapshot and
    # the batch headers after it
    log.flush()
    crashed = open_log(path, segment_bytes=300)
    assert {p: (e.epoch, list(e.batches)) for p, e in producer_state_of(crashed).producers.items()} == before
    r = client(crashed, PID, EPOCH, 18)
    assert (r.base_offset, r.last_offset) == written[-1]
    crashed.close()   # a clean close: the snapshot holds everything, reopening reads no log

    reopened = open_log(path, segment_bytes=300)
    scanned = []
    real = PL.iter_log_batches

    def spy(plog, from_offset):
        for h in real(plog, from_offset):
            scanned.append(h)
            yield h
    PL.iter_log_batches = spy
    try:
        r = client(reopened, PID, EPOCH, 12)
    finally:
        PL.iter_log_batches = real
    assert (r.base_offset, r.last_offset) == written[6]
    assert scanned == []
    reopened.close()


def test_a_follower_without_idempotent_batches_builds_no_state(tmp_path):
    log = open_log(tmp_path / "t-0")
    off = log.log_end_offset
    log.append(build_batch([(b"k", b"plain", [], NOW)], base_offset=off, partition_leader_epoch=1),
               now_ms=NOW, origin=REPLICATION, leader_epoch=None)
    assert log.producer_state is None
    log.close()

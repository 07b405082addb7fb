"""Log divergence repair built on the leader epoch cache: a follower asks the leader where
its latest epoch ends (OffsetForLeaderEpoch, answered by ``PartitionLog.end_offset_for_epoch``),
truncates (``follower_truncation``), asks again while not done, then copies the leader's
batches. KIP-101 / KIP-279's cases, and random histories: the follower keeps exactly the
records both logs share and ends identical to the leader."""
import os
import shutil
import tempfile

from hypothesis import given, settings, strategies as st

from kwire.codec.records import RecordBatch, build_batch
from kwire.log.config import LogConfig
from kwire.log.leader_epoch import TruncationState, follower_truncation
from kwire.log.partition_log import PartitionLog
from kwire.log.validator import REPLICATION

NOW = 1_700_000_000_000


def write(log, records):
    """records: [(epoch, value)], one batch each, at the log end (a follower's append)."""
    for epoch, value in records:
        b = bytearray(build_batch([(None, value, [], NOW)], partition_leader_epoch=epoch))
        b[0:8] = log.log_end_offset.to_bytes(8, "big")
        log.append(bytes(b), now_ms=NOW, origin=REPLICATION)


def values(log):
    out = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = bytes(log.read(offset, 1 << 20))
        pos = 0
        while pos < len(data):
            b = RecordBatch(data, pos)
            out += [(b.partition_leader_epoch, r.value) for r in b.records()]
            pos += b.size
            offset = b.last_offset + 1
    return out


def repair(leader, follower, high_watermark):
    """The follower's truncation loop; returns the requests it made."""
    asked = []
    while True:
        epoch = follower.latest_epoch
        answer = leader.end_offset_for_epoch(epoch) if epoch >= 0 else None
        le, end = answer if answer is not None else (-1, -1)
        asked.append((epoch, le, end))
        state = follower_truncation(follower.leader_epoch_cache, follower.log_end_offset, high_watermark, le, end)
        follower.truncate_to(state.offset)
        if state.completed:
            return asked
        assert len(asked) < 50


def copy_from(leader, follower, leader_records):
    write(follower, leader_records[follower.log_end_offset:])


class Pair:
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="kwire-divergence-")
        self.leader = PartitionLog.open(os.path.join(self.tmp, "leader"), LogConfig(segment_bytes=400), now_ms=NOW)
        self.follower = PartitionLog.open(os.path.join(self.tmp, "follower"), LogConfig(segment_bytes=400),
                                          now_ms=NOW)

    def close(self):
        self.leader.close()
        self.follower.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def recs(epoch, first, n):
    return [(epoch, f"{epoch}:{i}".encode()) for i in range(first, first + n)]


def test_kip_101_a_deposed_leaders_extra_records_go():
    """A led epoch 0 and wrote 0-4; B had copied 0-2 when it became leader in epoch 1 and
    wrote 3-5. A, back as a follower, truncates to 3 (not to its high watermark, not
    keeping 3-4) and copies B's."""
    p = Pair()
    try:
        leader_records = recs(0, 0, 3) + recs(1, 0, 3)
        write(p.leader, leader_records)
        write(p.follower, recs(0, 0, 5))
        asked = repair(p.leader, p.follower, high_watermark=2)
        assert asked == [(0, 0, 3)]
        assert p.follower.log_end_offset == 3
        copy_from(p.leader, p.follower, leader_records)
        assert values(p.follower) == values(p.leader) == leader_records
        assert p.follower.leader_epoch_cache.entries() == p.leader.leader_epoch_cache.entries() == [(0, 0), (1, 3)]
    finally:
        p.close()


def test_kip_279_epochs_the_follower_never_saw_take_two_round_trips():
    """Follower: epochs 0 (0-4), 1 (5-7), 3 (8-9). Leader: 0 (0-4), 1 (5-6), 2 (7-8), 4 (9-11).
    The follower asks for 3, the leader answers (2, 9): the follower does not know epoch 2,
    cuts to the end of its epoch 1 and asks again: (1, 7)."""
    p = Pair()
    try:
        leader_records = recs(0, 0, 5) + recs(1, 0, 2) + recs(2, 0, 2) + recs(4, 0, 3)
        write(p.leader, leader_records)
        write(p.follower, recs(0, 0, 5) + recs(1, 0, 3) + recs(3, 0, 2))
        asked = repair(p.leader, p.follower, high_watermark=5)
        assert asked == [(3, 2, 9), (1, 1, 7)]
        assert p.follower.log_end_offset == 7
        copy_from(p.leader, p.follower, leader_records)
        assert values(p.follower) == leader_records
        assert p.follower.leader_epoch_cache.entries() == [(0, 0), (1, 5), (2, 7), (4, 9)]
    finally:
        p.close()


def test_truncation_state_rules():
    from kwire.log.leader_epoch import LeaderEpochCache

    c = LeaderEpochCache(None, [(0, 0), (2, 10)])
    # the leader knows nothing of it: back to the high watermark
    assert follower_truncation(c, 15, 7, -1, -1) == TruncationState(7, True)
    # the leader's epoch is ours: the smaller end of that epoch
    assert follower_truncation(c, 15, 7, 2, 12) == TruncationState(12, True)
    assert follower_truncation(c, 15, 7, 2, 20) == TruncationState(15, True)
    assert follower_truncation(c, 15, 7, 0, 8) == TruncationState(8, True)
    # an epoch we never had: to the end of our largest epoch below it, and ask again
    assert follower_truncation(c, 15, 7, 1, 12) == TruncationState(10, False)
    # nothing known here: the leader's end offset, never past our end
    assert follower_truncation(LeaderEpochCache(None), 15, 7, 3, 9) == TruncationState(9, True)
    assert follower_truncation(LeaderEpochCache(None), 5, 3, 3, 9) == TruncationState(5, True)


@st.composite
def histories(draw):
    """Two replicas' logs as Kafka can make them: a shared prefix, then each copied a prefix
    of what the leader of each later epoch wrote, epochs disjoint between the two suffixes
    except the last shared one, the current leader's epoch the largest."""
    n_prefix = draw(st.integers(0, 4))
    epoch = 0
    prefix = []
    for _ in range(n_prefix):
        epoch += draw(st.integers(1, 2))
        prefix += recs(epoch, 0, draw(st.integers(1, 3)))
    last = prefix[-1][0] if prefix else None
    later = list(range(epoch + 1, epoch + 8))
    owner = {e: draw(st.sampled_from(["leader", "follower", "none"])) for e in later}
    leader_epochs = [e for e in later if owner[e] == "leader"]
    follower_epochs = [e for e in later if owner[e] == "follower" and (not leader_epochs or e < leader_epochs[-1])]
    if not leader_epochs or (follower_epochs and follower_epochs[-1] > leader_epochs[-1]):
        leader_epochs.append(later[-1] + 1)   # the current leader's epoch is the newest
    used = prefix and sum(1 for e, _ in prefix if e == last)
    leader_records = list(prefix)
    follower_records = list(prefix)
    if last is not None:  # both may hold more of the last shared epoch's records
        leader_records += recs(last, used, draw(st.integers(0, 2)))
        follower_records += recs(last, used, draw(st.integers(0, 2)))
    for e in leader_epochs:
        leader_records += recs(e, 0, draw(st.integers(1, 3)))
    for e in follower_epochs:
        follower_records += recs(e, 0, draw(st.integers(1, 3)))
    return leader_records, follower_records, len(prefix)


@settings(max_examples=60, deadline=None)
@given(histories())
def test_random_divergences_are_repaired_exactly(history):
    leader_records, follower_records, committed = history
    p = Pair()
    try:
        write(p.leader, leader_records)
        write(p.follower, follower_records)
        repair(p.leader, p.follower, high_watermark=committed)
        shared = 0
        while (shared < min(len(leader_records), len(follower_records))
               and leader_records[shared] == follower_records[shared]):
            shared += 1
        assert p.follower.log_end_offset == shared   # every shared record kept, nothing else
        copy_from(p.leader, p.follower, leader_records)
        assert values(p.follower) == leader_records
        assert p.follower.leader_epoch_cache.entries() == p.leader.leader_epoch_cache.entries()
    finally:
        p.close()

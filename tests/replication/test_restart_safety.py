"""A broker that restarts before the controller fences it keeps its leaderships and ISR
memberships in the same leader epoch (kwire.broker registers anew only when fenced or in
controlled shutdown). What its logs say after the restart must then not claim more than
the cluster committed.

- high watermark: with no replication-offset-checkpoint written yet (a crash before the
  first checkpoint), a reopened log's high watermark is unknown (0, as Kafka), not its log
  end offset: a leader restarting in its old epoch would otherwise serve consumers records
  no follower has (found by the replication simulation, tests/replication/sim.py).
"""
from __future__ import annotations

from kwire.log.config import LogConfig
from kwire.log.manager import LogManager
from kwire.replication import ReplicaManager

from tests.replication.test_followers import T, Nodes


def _crash(lm: LogManager) -> None:
    """Stop without a clean shutdown: no flush, no checkpoint, no clean-shutdown marker."""
    for _, plog in lm:
        for seg in plog.segments:
            seg.close()
        plog.closed = True


def test_a_leader_restarting_before_any_checkpoint_does_not_count_its_whole_log_committed(tmp_path):
    n = Nodes(tmp_path, min_isr=2)
    try:
        n.partition([1, 2, 3])
        n.produce(1, b"a", b"b")
        for f in (2, 3):
            n.fetch(f, 1)
            n.fetch(f, 1)
        assert n.plog(1).high_watermark == 2
        n.produce(1, b"uncommitted")                 # no follower has it
        assert (n.plog(1).log_end_offset, n.plog(1).high_watermark) == (3, 2)
        _crash(n.logs[1])                            # a process kill: the page cache keeps the file
        n.logs[1] = LogManager(str(tmp_path / "n1"), LogConfig(min_insync_replicas=2))
        assert not n.logs[1].was_clean_shutdown
        rm = n.rms[1] = ReplicaManager(1, n.logs[1], lambda: n.image, producer_id_expiration_ms=lambda: 86_400_000,
                                       now_ms=lambda: n.now)
        plog = n.plog(1)
        assert plog.log_end_offset == 3
        assert plog.high_watermark == 0              # unknown, not the log end offset
        rm.apply_partition(T, 0)                     # still the leader, same epoch (not fenced)
        assert plog.high_watermark == 0              # the followers have not fetched since
        assert rm.read(T, 0, 0, 1 << 20).size == 0   # consumers see nothing it cannot vouch for
        for f in (2, 3):
            n.fetch(f, 1)
        assert plog.high_watermark == 2              # the followers' log end offsets
        n.fetch(2, 1)
        n.fetch(3, 1)
        n.fetch(2, 1)
        n.fetch(3, 1)
        assert plog.high_watermark == 3              # now every ISR member has it
    finally:
        n.close()


def test_a_cleanly_shut_down_data_dir_from_before_the_checkpoint_counts_its_log(tmp_path):
    """Data dirs kwire wrote before replication (one copy, no replication-offset-checkpoint)
    keep every record visible after a clean shutdown."""
    lm = LogManager(str(tmp_path / "d"), LogConfig())
    from kwire.codec.records import build_batch  # noqa: PLC0415
    lm.create("t", 0).append(bytearray(build_batch([(None, b"x", [], 0)])), now_ms=0)
    lm.close()
    (tmp_path / "d" / "replication-offset-checkpoint").unlink()
    lm = LogManager(str(tmp_path / "d"), LogConfig())
    try:
        assert lm.get("t", 0).high_watermark == 1
    finally:
        lm.close()

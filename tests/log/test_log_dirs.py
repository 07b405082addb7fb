"""LogManager over several log dirs (Kafka's log.dirs, JBOD), without a broker: placement by
fewest partitions, checkpoints and clean-shutdown markers per dir, a failed dir left alone, and
what an open finds after a move between dirs was cut short."""
from __future__ import annotations

import os
import shutil

from kwire.codec.records import build_batch
from kwire.log.checkpoint import read_checkpoint
from kwire.log.config import LogConfig
from kwire.log.manager import CLEAN_SHUTDOWN_MARKER, RECOVERY_POINT_CHECKPOINT, LogManager

NOW = 1_700_000_000_000


def batch(n: int = 1) -> bytes:
    return build_batch([(None, b"v%d" % i, [], NOW) for i in range(n)])


def manager(tmp_path, n: int = 3) -> tuple[LogManager, list[str]]:
    dirs = [str(tmp_path / f"d{i}") for i in range(n)]
    return LogManager(dirs[0], LogConfig(), now_ms=NOW, log_dirs=dirs), [os.path.abspath(d) for d in dirs]


def test_new_partitions_go_to_the_dir_with_the_fewest(tmp_path):
    m, dirs = manager(tmp_path)
    for p in range(4):
        m.create("t", p)
    assert [m.log_dir_of("t", p) for p in range(4)] == [dirs[0], dirs[1], dirs[2], dirs[0]]
    made = m.stage(m.make_logs("u", range(5)))      # off-loop creation spreads the same way
    assert sorted(log.log_dir for log in made) == sorted([dirs[1], dirs[2], dirs[1], dirs[2], dirs[0]])
    for p in range(5):
        m.create("u", p)
    assert sorted(m.partition_counts().values()) == [3, 3, 3]
    m.close()


def test_checkpoints_and_markers_per_dir(tmp_path):
    m, dirs = manager(tmp_path, 2)
    for p in range(4):
        m.create("t", p).append(batch(p + 1), now_ms=NOW)
    m.close()
    for i, d in enumerate(dirs):
        rps = read_checkpoint(os.path.join(d, RECOVERY_POINT_CHECKPOINT))
        assert rps == {("t", p): p + 1 for p in range(4) if p % 2 == i}
        assert os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_MARKER))
    m2 = LogManager(dirs[0], LogConfig(), now_ms=NOW, log_dirs=dirs)
    assert m2.was_clean_shutdown
    assert {tp: log.log_end_offset for tp, log in m2} == {("t", p): p + 1 for p in range(4)}
    m2.close()


def test_a_failed_dir_is_left_alone_and_recovered_at_the_next_open(tmp_path):
    m, dirs = manager(tmp_path, 2)
    a, b = m.create("t", 0), m.create("t", 1)
    a.append(batch(2), now_ms=NOW)
    b.append(batch(3), now_ms=NOW)
    m.failure_channel.maybe_add_offline_log_dir(dirs[1], "test", OSError(5, "EIO"))
    assert not m.offline and m.online_log_dirs() == [dirs[0]]
    assert m.next_log_dir() == dirs[0]                         # no new partition goes there
    work = m.plan_retention(NOW)
    assert all(log_dir != dirs[1] for _, _, log_dir in work.jobs)   # nothing written there
    m.close()
    assert os.path.exists(os.path.join(dirs[0], CLEAN_SHUTDOWN_MARKER))
    assert not os.path.exists(os.path.join(dirs[1], CLEAN_SHUTDOWN_MARKER))
    m2 = LogManager(dirs[0], LogConfig(), now_ms=NOW, log_dirs=dirs)
    assert not m2.was_clean_shutdown                            # the failed dir's logs were recovered
    assert {tp: log.log_end_offset for tp, log in m2} == {("t", 0): 2, ("t", 1): 3}
    m2.close()


def test_every_dir_failed_is_offline(tmp_path):
    m, dirs = manager(tmp_path, 2)
    for d in dirs:
        m.failure_channel.maybe_add_offline_log_dir(d, "test", OSError(28, "ENOSPC"))
    assert m.offline and m.online_log_dirs() == []
    m.close()


def test_an_open_after_a_cut_short_move(tmp_path):
    """A crash between the two renames that end a move leaves the partition in both dirs:
    the longer copy is kept; an unfinished copy (``-future``) is removed."""
    m, dirs = manager(tmp_path, 2)
    m.create("t", 0).append(batch(5), now_ms=NOW)
    m.close()
    src = os.path.join(dirs[0], "t-0")
    shutil.copytree(src, os.path.join(dirs[1], "t-0"))
    shutil.copytree(src, os.path.join(dirs[1], "t-0.0123abcd-future"))
    m2 = LogManager(dirs[0], LogConfig(), now_ms=NOW, log_dirs=dirs)
    assert m2.get("t", 0).log_end_offset == 5
    assert sorted(os.listdir(dirs[1])) == sorted(n for n in os.listdir(dirs[1]) if not n.endswith("-future"))
    assert sum(os.path.isdir(os.path.join(d, "t-0")) for d in dirs) == 1
    m2.close()

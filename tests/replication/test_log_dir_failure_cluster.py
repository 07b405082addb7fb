"""A failed log dir on three real processes (issue 32: "a full disk"): the broker reports it to
the controller, which moves the leadership of the partitions in that dir (only those) to
other ISR members and takes it out of their ISRs at once (Kafka's handleLogDirFailure -> BrokerHeartbeat offline_log_dirs ->
ReplicationControlManager.handleDirectoriesOffline); a broker whose every log dir has failed
shuts down with exit code 1 (Kafka halts). acks=all producers carry on, and nothing they were
acknowledged is lost.

The failure is injected deterministically (kwire.test.failed.log.dirs.file): the same
LogDirFailureChannel report that an EIO or ENOSPC makes (kwire/log/dir_failure.py; the
single-broker tests in tests/integration/test_storage_errors.py fill a real tmpfs). The session
timeout is long (9 s, Kafka's default) so that fencing cannot be what moves the leaders.
"""
from __future__ import annotations

import os
import time

import pytest

from tests.raft.cluster import Cluster, call, wait_for
from tests.replication import chaos as C

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

SESSION_TIMEOUT_S = 9.0


def dirs_of(port: int, topic: str) -> dict[int, str]:
    """{partition: log dir} of ``topic`` on the node at ``port`` (DescribeLogDirs)."""
    r = call(port, "DescribeLogDirs", 4, topics=None)
    return {p.partition_index: res.log_dir for res in r.results for t in res.topics if t.name == topic
            for p in t.partitions}


def test_failed_log_dirs_move_leaders_within_the_session_timeout(tmp_path):
    """Each node has two log dirs. One dir of a leader fails: the partitions it holds there
    get new leaders and lose it from their ISRs, the others keep it; then its other dir fails:
    it shuts down (exit code 1) and the rest move too. Each within the session timeout."""
    failed = tmp_path / "failed-log-dirs"
    c = Cluster(str(tmp_path / "cluster"), 3, log_dirs=2, extra_args=(
        *C.CLUSTER_ARGS[2:], "--override", f"broker.session.timeout.ms={int(SESSION_TIMEOUT_S * 1000)}",
        "--override", f"kwire.test.failed.log.dirs.file={failed}")).start()
    producer = None
    try:
        C.create_topic(c, partitions=6)
        producer = C.ConfluentProducer(c, partitions=6, rate=200.0)
        producer.start()
        wait_for(lambda: producer.acked_count() > 50, 30, message="the producer is acknowledged")
        C.wait_healthy(c, [C.TOPIC])
        victim = min(set(C.leaders(c).values()))
        node = c.nodes[victim]
        other = next(n for n in c.nodes.values() if n.node_id != victim)
        placed = dirs_of(node.port, C.TOPIC)
        first, second = (os.path.abspath(d) for d in node.log_dirs)
        in_second = {p for p, d in placed.items() if d == second}
        assert sorted(placed) == list(range(6)) and 0 < len(in_second) < 6, placed

        def off_victim(parts) -> bool:
            now = C.partitions(other.port, [C.TOPIC])
            return all(now[(C.TOPIC, p)][0] not in (victim, -1) and victim not in now[(C.TOPIC, p)][2]
                       for p in parts)

        # one dir fails: only its partitions move; the node serves on
        acked_before = producer.acked_count()
        t0 = failed_at = time.monotonic()
        failed.write_text(second + "\n")
        wait_for(lambda: off_victim(in_second), SESSION_TIMEOUT_S,
                 message=f"partitions {sorted(in_second)} move off node {victim}\n{node.log_tail(3000)}")
        took_one = time.monotonic() - t0
        now = C.partitions(other.port, [C.TOPIC])
        assert all(victim in now[(C.TOPIC, p)][2] for p in set(range(6)) - in_second), now
        assert node.alive
        wait_for(lambda: producer.acked_count() > acked_before + 100, SESSION_TIMEOUT_S,
                 message="acks=all producing carries on after one dir failed")

        # every dir has failed: the node reports, the rest moves, and it shuts down (Kafka halts)
        acked_before = producer.acked_count()
        t0 = time.monotonic()
        failed.write_text(first + "\n" + second + "\n")
        wait_for(lambda: off_victim(range(6)), SESSION_TIMEOUT_S,
                 message=f"every partition moves off node {victim}\n{node.log_tail(3000)}")
        took_all = time.monotonic() - t0
        wait_for(lambda: producer.acked_count() > acked_before + 100, SESSION_TIMEOUT_S,
                 message="acks=all producing carries on after every dir failed")
        wait_for(lambda: not node.alive, SESSION_TIMEOUT_S, message=f"node {victim} shuts down\n{node.log_tail()}")
        assert node.proc.returncode == 1, node.log_tail()
        assert "every log dir has failed" in node.log_tail(6000)
        # the check: no partition was unavailable to acks=all producing (no acknowledgement
        # for it) longer than the session timeout, from the first failure to the end
        stopped_at = time.monotonic()
        gaps = producer.longest_gaps(failed_at - 1.0, stopped_at)
        producer.stop()
        n = C.check_acknowledged(C.read_back(c, n=6), [producer])
        assert n > acked_before
        print(f"node {victim}: one dir failed, its partitions moved in {took_one:.2f} s; every dir, "
              f"{took_all:.2f} s; {n} acknowledged records, none lost; longest unavailability per partition "
              + ", ".join(f"{p}: {g:.2f} s" for p, g in sorted(gaps.items()))
              + f" (session timeout {SESSION_TIMEOUT_S:.0f} s)")
        assert max(gaps.values()) < SESSION_TIMEOUT_S, gaps
    finally:
        if producer is not None and producer.is_alive():
            producer.stopping.set()
            producer.join(30)
        c.stop()

"""bench vs-kafka's settle step: a timed throughput run starts only after the topics deleted
before it left both brokers' disks (bench/vs_kafka_bench.py settle)."""
from __future__ import annotations

from bench.vs_kafka_bench import _deleting, settle


class _Server:
    def __init__(self, data_dir, gone_after: int):
        self.data_dir = data_dir
        self.polls = 0
        self.gone_after = gone_after

    def deleting(self) -> bool:
        self.polls += 1
        if self.polls > self.gone_after:   # the broker's delayed unlink ran
            for p in self.data_dir.iterdir():
                p.rmdir()
        return _deleting(self.data_dir)


def test_a_renamed_aside_directory_counts_as_deleting(tmp_path):
    assert not _deleting(tmp_path)
    (tmp_path / "t-0").mkdir()
    assert not _deleting(tmp_path)
    (tmp_path / "t-0.0a1b-delete").mkdir()
    assert _deleting(tmp_path)
    assert not _deleting(tmp_path / "missing")


def test_settle_waits_until_every_broker_has_unlinked(tmp_path, monkeypatch):
    monkeypatch.setattr("bench.vs_kafka_bench.time.sleep", lambda s: None)
    monkeypatch.setattr("bench.vs_kafka_bench.os.sync", lambda: None)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (b / "t-0.x-delete").mkdir()
    servers = {"kwire": _Server(a, 0), "kafka": _Server(b, 3)}
    settle(servers)
    assert not _deleting(b)
    assert servers["kafka"].polls == 4

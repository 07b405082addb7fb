"""kwire.link_faults: the file of unreachable node ids that the chaos tests' network partitions
write, as each inter-broker path reads it."""
from __future__ import annotations

from types import SimpleNamespace

import trio

from kwire import link_faults as LF
from kwire.atomic import write_atomic
from kwire.config import BrokerConfig


def test_unset_costs_nothing_and_set_reads_the_file(tmp_path, monkeypatch):
    assert LF.from_config(BrokerConfig.from_properties("")) is None
    path = tmp_path / "cut"
    u = LF.from_config(BrokerConfig.from_properties("", {LF.KEY: str(path)}), 1)
    assert u is not None and not u.blocks(2)                 # no file yet: nothing cut
    monkeypatch.setattr(LF, "RECHECK_S", 0.0)
    write_atomic(str(path), b"2, 3\n")
    assert u.blocks(2) and u.blocks(3) and not u.blocks(1)
    assert u.blocks_client("kwire-raft-3") and not u.blocks_client("kwire-raft-1")
    assert not u.blocks_client("kwire-replica-fetcher-3") and not u.blocks_client(None)
    assert not u.blocks_client("kwire-raft-x")
    write_atomic(str(path), b"")
    assert not u.blocks(2)
    write_atomic(str(path), b"2 garbage")                    # unreadable: keeps what it had
    assert not u.blocks(2)
    path.unlink()
    assert not u.blocks(2)


def test_server_hook_drops_replica_fetches_of_cut_nodes_only(tmp_path, monkeypatch):
    monkeypatch.setattr(LF, "RECHECK_S", 0.0)
    path = tmp_path / "cut"
    write_atomic(str(path), b"3")
    u = LF.UnreachableNodes(str(path), 1)

    def ctx(name, version):
        return SimpleNamespace(api=SimpleNamespace(name=name), version=version)

    def fetch(replica_id):
        return SimpleNamespace(replica_id=replica_id, replica_state=SimpleNamespace(replica_id=replica_id))

    async def main():
        assert await u.server_hook(ctx("Fetch", 15), fetch(3)) == "drop"
        assert await u.server_hook(ctx("Fetch", 12), fetch(3)) == "drop"
        assert await u.server_hook(ctx("Fetch", 15), fetch(2)) is None
        assert await u.server_hook(ctx("Fetch", 15), fetch(-1)) is None      # a consumer
        assert await u.server_hook(ctx("Produce", 9), SimpleNamespace()) is None
    trio.run(main)

"""Nothing heavy on the Trio loop (issue 31): the Raft driver takes a metadata snapshot by
asking the state machine for an encoder on the loop (the image of the applied offset,
captured) and running it in a worker thread; the snapshot is the one of the captured offset,
persisted, and a restart starts from it. Deterministic: the driver's cycles are run by hand
on a single voter whose clock is moved past its election timeout."""
from __future__ import annotations

import threading

import trio

from kwire.raft import driver as raft_driver
from kwire.raft.core import RaftConfig
from kwire.raft.driver import RaftDriver
from kwire.raft.storage import RaftStorage


def test_a_snapshot_is_encoded_in_a_worker_thread_at_the_offset_captured(tmp_path, monkeypatch):
    real = raft_driver._monotonic_ms
    monkeypatch.setattr(raft_driver, "_monotonic_ms", lambda: real() + 10_000)   # past the election timeout
    applied: list = []
    encoders: list[int] = []   # the threads the encoders ran in

    def source():
        state = tuple(applied)   # what the state machine holds now (an immutable image in kwire)

        def encode() -> bytes:
            encoders.append(threading.get_ident())
            return b"|".join(r for recs in state for r in recs)
        return encode

    def make(installed: list | None = None) -> RaftDriver:
        return RaftDriver(1, [1], RaftStorage(str(tmp_path)), apply=lambda e: applied.append(e.records),
                          install_snapshot=None if installed is None else installed.append,
                          snapshot=source, snapshot_interval=3,
                          config=RaftConfig(election_timeout_ms=50, fetch_timeout_ms=100))

    drv = make()

    async def main():
        await drv._cycle()
        assert drv.is_leader
        for i in range(4):
            drv.propose((b"r%d" % i,))
            await drv._cycle()
        drv.storage.close()

    trio.run(main)
    loop = threading.get_ident()
    assert encoders and loop not in encoders
    # the leader's first entry (its epoch's control record) and two records: applied offset 3
    snap = drv.core.snapshot
    assert snap.snapshot_id.offset == 3 and snap.data == b"r0|r1"
    assert drv.core.log.start_offset == 3 and drv.applied_offset == 5
    installed: list = []
    again = make(installed)
    assert installed == [b"r0|r1"] and again.core.log.start_offset == 3
    again.storage.close()

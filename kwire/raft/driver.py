"""The Trio driver of one Raft replica: ticks the core, persists, sends, applies.

One task (:meth:`RaftDriver.run`) owns the loop::

    tick(now); while has_ready: rd = ready(); persist rd (fsync); send rd.messages;
    apply rd.committed; advance(rd); then sleep until next_deadline() or a wake-up

Persisting (quorum-state and snapshot files, log appends, truncations and rewrites, the
fsync) runs in a worker thread, so a slow disk does not stall the event loop; Raft's rule
holds: the messages of a Ready go out only after its writes are durable. Between ready()
and advance() the core must not change, so while a Ready is being persisted, messages from
peers (:meth:`deliver`) and a resign are queued and stepped after advance(), and proposals
(:meth:`propose_and_wait`) wait for it. Only the driver task touches the storage object.
"""
from __future__ import annotations

import logging
import random
import time
from typing import Any, Callable

import trio

from kwire.raft import messages as M
from kwire.raft.core import NotLeader, RaftConfig, RaftCore, Role
from kwire.raft.storage import RaftStorage

log = logging.getLogger("kwire.raft")

_RESPONSES = (M.VoteResponse, M.BeginQuorumEpochResponse, M.EndQuorumEpochResponse, M.FetchResponse,
              M.FetchSnapshotResponse)


class CommitFailed(Exception):
    """A proposal was not committed: leadership moved (``leader_id``), or it timed out."""

    def __init__(self, message: str, leader_id: int = -1):
        super().__init__(message)
        self.leader_id = leader_id


def _monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


class RaftDriver:
    def __init__(self, node_id: int, voters, storage: RaftStorage, *,
                 apply: Callable[[Any], None], install_snapshot: Callable[[bytes], None] | None = None,
                 config: RaftConfig | None = None, rng: random.Random | None = None,
                 snapshot: Callable[[], Callable[[], bytes]] | None = None, snapshot_interval: int = 10000):
        self.node_id = node_id
        self.storage = storage
        self._apply = apply
        self._install = install_snapshot
        raft_log, qs, snap = storage.load()
        # the state machine's snapshot at the applied offset: called on the loop, it returns
        # the encoder (any thread: it reads only what it captured, an immutable image), which
        # runs in a worker thread (``_take_snapshot``)
        self._snapshot_source = snapshot
        self.snapshot_interval = max(1, snapshot_interval)
        if snap is not None and install_snapshot is not None:
            install_snapshot(snap.data)       # the state machine starts from its snapshot
        self.startup_end_offset = raft_log.end_offset
        self.core = RaftCore(node_id, voters, rng=rng or random.Random(), config=config, log=raft_log,
                             quorum_state=qs, snapshot=snap, now_ms=_monotonic_ms())
        self.applied_offset = self.core.applied   # entries below are applied
        self.transport = None                     # set by the transport (sends peers' messages)
        self._wake = trio.Event()
        self._waiters: dict[int, tuple[int, trio.Event, list]] = {}
        self._applied_waiters: list[tuple[int, trio.Event]] = []
        self._changed = trio.Event()               # set at every state change, then replaced
        self.reply_router: Callable[[int, Any], bool] | None = None   # server-side response slots
        self.closed = False
        self._persisting = False                   # a Ready is being written (worker thread)
        self._deferred: list[Callable[[], None]] = []   # core steps that arrived meanwhile
        self._persisted = trio.Event()

    # ------------------------------------------------------------------ state
    @property
    def leader_id(self) -> int:
        c = self.core
        if c.role == Role.LEADER:
            return self.node_id
        return c.leader_id if c.leader_id is not None and c.role == Role.FOLLOWER else -1

    @property
    def epoch(self) -> int:
        return self.core.epoch

    @property
    def is_leader(self) -> bool:
        return self.core.role == Role.LEADER

    @property
    def high_watermark(self) -> int:
        return self.core.high_watermark

    def describe_quorum(self) -> dict:
        d = self.core.describe_quorum()
        d["leader_id"] = self.leader_id
        wall = int(time.time() * 1000) - _monotonic_ms()   # the core's clock is monotonic
        for row in d["current_voters"] + d["observers"]:
            for k in ("last_fetch_timestamp", "last_caught_up_timestamp"):
                if row[k] >= 0:
                    row[k] += wall
        return d

    def last_fetch_ms(self, replica_id: int) -> int | None:
        """How long ago (ms) the leader last heard a fetch from ``replica_id``; None if never."""
        if not self.is_leader:
            return None
        p = self.core._progress.get(replica_id)
        if p is None or p.last_fetch_ms < 0:
            return None
        return self.core.now - p.last_fetch_ms

    # ------------------------------------------------------------------ inputs
    def wake(self) -> None:
        self._wake.set()

    def deliver(self, src: int, msg: Any) -> None:
        if self.closed:
            return
        if self._persisting:
            self._deferred.append(lambda: self._step(src, msg))
        else:
            self._step(src, msg)
        self._wake.set()

    def _step(self, src: int, msg: Any) -> None:
        try:
            self.core.tick(_monotonic_ms())
            self.core.step(src, msg)
        except Exception:  # noqa: BLE001 - one bad message must not stop the quorum
            log.exception("raft: message %r from %d failed", msg, src)

    def propose(self, records: Any) -> tuple[int, int]:
        """Append on the leader; (offset, epoch). Raises NotLeader elsewhere. Not while a
        Ready is being persisted (``propose_and_wait`` waits for that)."""
        if self._persisting:
            raise RuntimeError("propose while a Ready is being persisted")
        offset = self.core.propose(records)
        self._wake.set()
        return offset, self.core.epoch

    async def propose_and_wait(self, records: Any, timeout: float = 10.0) -> int:
        """Propose and wait until committed and applied here; the entry's offset."""
        while self._persisting:
            await self._persisted.wait()
        try:
            offset, epoch = self.propose(records)
        except NotLeader as exc:
            raise CommitFailed(str(exc), exc.leader_id) from None
        ev = trio.Event()
        result: list = []
        self._waiters[offset] = (epoch, ev, result)
        with trio.move_on_after(timeout):
            await ev.wait()
        self._waiters.pop(offset, None)
        if not result:
            raise CommitFailed(f"proposal at {offset} not committed within {timeout}s", self.leader_id)
        if not result[0]:
            raise CommitFailed(f"proposal at {offset} lost to another leader", self.leader_id)
        return offset

    async def wait_applied(self, offset: int, timeout: float = 10.0) -> bool:
        """Wait until entries below ``offset`` are applied here."""
        if self.applied_offset >= offset:
            return True
        ev = trio.Event()
        self._applied_waiters.append((offset, ev))
        with trio.move_on_after(timeout):
            await ev.wait()
        return self.applied_offset >= offset

    async def wait_changed(self) -> None:
        await self._changed.wait()

    def resign(self) -> None:
        if self._persisting:
            self._deferred.append(self.core.resign)
        else:
            self.core.resign()
        self._wake.set()

    # ------------------------------------------------------------------ the loop
    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            while True:
                await self._cycle()
                deadline = self.core.next_deadline()
                self._wake = trio.Event()
                if self.core.has_ready() or self._deferred:
                    continue
                delay = None if deadline is None else max(0, deadline - _monotonic_ms()) / 1000
                if delay is None:
                    await self._wake.wait()
                elif delay > 0:
                    with trio.move_on_after(delay):
                        await self._wake.wait()
                else:
                    await trio.sleep(0)
        finally:
            self.closed = True
            self.storage.close()

    def _run_deferred(self) -> None:
        while self._deferred:
            todo, self._deferred = self._deferred, []
            for fn in todo:
                try:
                    fn()
                except Exception:  # noqa: BLE001 - as in deliver()
                    log.exception("raft: deferred step failed")

    def _persist_plan(self, rd):
        """The writes of ``rd``, in order, then the flush, as one function for a worker thread
        (None when there is nothing to write). It reads only what is captured here."""
        if not (rd.quorum_state is not None or rd.snapshot is not None or rd.truncate_to is not None
                or rd.entries or rd.log_start_offset is not None):
            return None
        st = self.storage
        kept = self.core.log.entries(self.core.log.start_offset) if rd.log_start_offset is not None else None
        now = int(time.time() * 1000)

        def persist() -> None:
            if rd.quorum_state is not None:
                st.save_quorum_state(rd.quorum_state)
            if rd.snapshot is not None:
                st.save_snapshot(rd.snapshot)
                if rd.install_snapshot:
                    st.reset()
            if rd.truncate_to is not None:
                st.truncate_to(rd.truncate_to)
            if rd.entries:
                st.append(rd.entries, now)
            if kept is not None:
                st.rewrite(kept)
            if rd.entries or rd.truncate_to is not None:
                st.flush()

        return persist

    async def _cycle(self) -> None:
        core = self.core
        self._run_deferred()
        core.tick(_monotonic_ms())
        changed = False
        while core.has_ready():
            rd = core.ready()
            # 1. persist, in order, then flush (in a worker thread; the core waits)
            persist = self._persist_plan(rd)
            if persist is not None:
                self._persisting = True
                try:
                    await trio.to_thread.run_sync(persist)
                finally:
                    self._persisting = False
                    self._persisted.set()
                    self._persisted = trio.Event()
            # 2. send
            for dest, msg in rd.messages:
                if isinstance(msg, _RESPONSES) and self.reply_router is not None and self.reply_router(dest, msg):
                    continue
                if self.transport is not None:
                    self.transport.send(dest, msg)
            # 3. apply
            if rd.install_snapshot and rd.snapshot is not None:
                if self._install is not None:
                    self._install(rd.snapshot.data)
                self.applied_offset = rd.snapshot.snapshot_id.offset
                changed = True
                log.info("raft node %d: installed the leader's snapshot at %d (epoch %d)", self.node_id,
                         rd.snapshot.snapshot_id.offset, rd.snapshot.snapshot_id.epoch)
            for e in rd.committed:
                if not e.control:
                    try:
                        self._apply(e)
                    except Exception:  # noqa: BLE001 - a bad record must not stop the quorum
                        log.exception("raft: applying entry %d failed", e.offset)
                self.applied_offset = e.offset + 1
                w = self._waiters.pop(e.offset, None)
                if w is not None:
                    w[2].append(w[0] == e.epoch)
                    w[1].set()
                changed = True
            core.advance(rd)
            if rd.quorum_state is not None:
                changed = True
                log.info("raft node %d: epoch %d, role %s, leader %s", self.node_id, core.epoch,
                         core.role.value, self.leader_id)
            self._run_deferred()   # what peers sent while rd was being persisted
        if self._waiters and not self.is_leader:
            # proposals of an epoch we no longer lead may still commit; those whose offset is
            # now taken by another epoch's entry fail when that entry commits (above)
            pass
        if self._applied_waiters:
            keep = []
            for off, ev in self._applied_waiters:
                if self.applied_offset >= off:
                    ev.set()
                else:
                    keep.append((off, ev))
            self._applied_waiters = keep
        if (self._snapshot_source is not None and core.applied == self.applied_offset
                and self.applied_offset - core.log.start_offset >= self.snapshot_interval
                and self.applied_offset <= core.high_watermark):
            if await self._take_snapshot():
                await self._cycle()    # persist the snapshot and the trim now (not due again)
        if changed:
            self._changed.set()
            self._changed = trio.Event()

    async def _take_snapshot(self) -> bool:
        """A snapshot at the applied offset (Kafka's SnapshotGenerator): the state machine's
        encoder, captured now, encodes in a worker thread (a large image is ~100 ms of work
        the loop would otherwise stall on); the core takes it afterwards. Peers' messages
        may step the core meanwhile: nothing they do moves the applied offset (only this
        task applies) or takes back a committed entry, and a snapshot installed from the
        leader meanwhile starts past it (the core then ignores ours). True when taken."""
        offset = self.applied_offset
        encode = self._snapshot_source()
        data = await trio.to_thread.run_sync(encode)
        if self.closed or offset <= self.core.log.start_offset:
            return False
        sid = self.core.create_snapshot(offset, data)
        log.info("raft node %d: snapshot at %d (epoch %d); log trimmed", self.node_id, sid.offset, sid.epoch)
        return True


__all__ = ["CommitFailed", "RaftDriver", "NotLeader"]

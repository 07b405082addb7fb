"""The transport of the Raft messages between the voters, in Kafka's wire formats (Kafka's
KafkaNetworkChannel and the raft half of ControllerApis).

Vote (v2), BeginQuorumEpoch (v1), EndQuorumEpoch (v0), Fetch (v12, ``__cluster_metadata``
partition 0, entries as record batches) and FetchSnapshot (v0) carry the core's messages
(kwire.raft.messages); DescribeQuorum (v1) answers from the local replica.

Consensus only: the controller listener that receives these requests, secures its
connections and also serves the controller's own requests (AlterPartition, BrokerHeartbeat,
ElectLeaders, topic changes, metadata forwarding) is the controller's server,
kwire.metadata.controller_server; it hands the Raft requests to
:meth:`RaftTransport.handle_request`. Outgoing, the transport keeps one connection per
peer, opened by the link the layer above passes in (how to reach and authenticate to the
other voters' controller listener); requests are pipelined on it and answered in any order
(matched by correlation id). :meth:`RaftTransport.call` sends any request on those
connections, for the layer above. Incoming requests are handled each in its own task by
the listener, so a parked Fetch never holds up a Vote. Requests that cannot be sent (peer
down, queue full) are dropped: Raft retries on its own timers.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Protocol

import trio

from kwire.codec.apis import api
from kwire.connection import KafkaClientConnection, ProtocolError
from kwire.errors import ErrorCode
from kwire.raft import messages as M
from kwire.raft.log import OffsetAndEpoch
from kwire.raft.storage import decode_entries, encode_entries
from kwire.net import PeerAuthenticationFailed, pump

log = logging.getLogger("kwire.raft.transport")

TOPIC = "__cluster_metadata"
VOTE, BQE, EQE, FETCH, FETCH_SNAPSHOT, DESCRIBE_QUORUM = (
    api("Vote"), api("BeginQuorumEpoch"), api("EndQuorumEpoch"), api("Fetch"), api("FetchSnapshot"),
    api("DescribeQuorum"))
V_VOTE, V_BQE, V_EQE, V_FETCH, V_FETCH_SNAPSHOT, V_DESCRIBE_QUORUM = 2, 1, 0, 12, 0, 1
# the requests of the consensus itself: what the controller listener hands to handle_request
RAFT_APIS = frozenset({VOTE.key, BQE.key, EQE.key, FETCH.key, FETCH_SNAPSHOT.key, DESCRIBE_QUORUM.key})
QUEUE = 256


# ====================================================================================== mapping
def request_to_wire(msg: Any, cluster_id: str | None):
    """(api, version, body) for a core request."""
    if isinstance(msg, M.VoteRequest):
        Req = VOTE.request
        part = Req.struct("PartitionData")(partition_index=0, replica_epoch=msg.epoch, replica_id=msg.candidate_id,
                                           last_offset_epoch=msg.last_epoch, last_offset=msg.last_offset,
                                           pre_vote=msg.pre_vote)
        return VOTE, V_VOTE, Req.cls(cluster_id=cluster_id, voter_id=-1,
                                     topics=[Req.struct("TopicData")(topic_name=TOPIC, partitions=[part])])
    if isinstance(msg, M.BeginQuorumEpochRequest):
        Req = BQE.request
        part = Req.struct("PartitionData")(partition_index=0, leader_id=msg.leader_id, leader_epoch=msg.epoch)
        return BQE, V_BQE, Req.cls(cluster_id=cluster_id, topics=[Req.struct("TopicData")(topic_name=TOPIC,
                                                                                           partitions=[part])],
                                   leader_endpoints=[])
    if isinstance(msg, M.EndQuorumEpochRequest):
        Req = EQE.request
        part = Req.struct("PartitionData")(partition_index=0, leader_id=msg.leader_id, leader_epoch=msg.epoch,
                                           preferred_successors=list(msg.preferred_successors))
        return EQE, V_EQE, Req.cls(cluster_id=cluster_id, topics=[Req.struct("TopicData")(topic_name=TOPIC,
                                                                                           partitions=[part])])
    if isinstance(msg, M.FetchRequest):
        Req = FETCH.request
        part = Req.struct("FetchPartition")(partition=0, current_leader_epoch=msg.epoch, fetch_offset=msg.fetch_offset,
                                            last_fetched_epoch=msg.last_fetched_epoch, log_start_offset=-1,
                                            partition_max_bytes=1 << 20)
        return FETCH, V_FETCH, Req.cls(cluster_id=cluster_id, replica_id=msg.replica_id, max_wait_ms=msg.max_wait_ms,
                                       min_bytes=1, max_bytes=8 << 20, isolation_level=0, session_id=0,
                                       session_epoch=-1,
                                       topics=[Req.struct("FetchTopic")(topic=TOPIC, partitions=[part])],
                                       forgotten_topics_data=[], rack_id="")
    if isinstance(msg, M.FetchSnapshotRequest):
        Req = FETCH_SNAPSHOT.request
        sid = Req.struct("SnapshotId")(end_offset=msg.snapshot_id.offset, epoch=msg.snapshot_id.epoch)
        part = Req.struct("PartitionSnapshot")(partition=0, current_leader_epoch=msg.epoch, snapshot_id=sid,
                                               position=msg.position)
        return FETCH_SNAPSHOT, V_FETCH_SNAPSHOT, Req.cls(
            cluster_id=cluster_id, replica_id=msg.replica_id, max_bytes=msg.max_bytes,
            topics=[Req.struct("TopicSnapshot")(name=TOPIC, partitions=[part])])
    raise TypeError(f"not a raft request: {msg!r}")


def _only_partition(body, topics_attr: str = "topics"):
    topics = getattr(body, topics_attr)
    if not topics or not topics[0].partitions:
        return None
    return topics[0].partitions[0]


def response_from_wire(req: Any, body) -> Any:
    """The core's response message for a wire response to ``req`` (echo fields from ``req``)."""
    if isinstance(req, M.VoteRequest):
        p = _only_partition(body)
        if p is None:
            return None
        return M.VoteResponse(epoch=p.leader_epoch, leader_id=p.leader_id, granted=p.vote_granted,
                              error=p.error_code or body.error_code, pre_vote=req.pre_vote)
    if isinstance(req, M.BeginQuorumEpochRequest):
        p = _only_partition(body)
        return None if p is None else M.BeginQuorumEpochResponse(epoch=p.leader_epoch, leader_id=p.leader_id,
                                                                 error=p.error_code or body.error_code)
    if isinstance(req, M.EndQuorumEpochRequest):
        p = _only_partition(body)
        return None if p is None else M.EndQuorumEpochResponse(epoch=p.leader_epoch, leader_id=p.leader_id,
                                                               error=p.error_code or body.error_code)
    if isinstance(req, M.FetchRequest):
        p = _only_partition(body, "responses")
        if p is None:
            return None
        div = p.diverging_epoch
        sid = p.snapshot_id
        entries = tuple(decode_entries(bytes(p.records))) if p.records else ()
        return M.FetchResponse(
            epoch=p.current_leader.leader_epoch, leader_id=p.current_leader.leader_id,
            error=p.error_code or body.error_code, high_watermark=p.high_watermark,
            log_start_offset=p.log_start_offset, entries=entries,
            diverging_epoch=OffsetAndEpoch(div.end_offset, div.epoch) if div.epoch >= 0 else None,
            snapshot_id=OffsetAndEpoch(sid.end_offset, sid.epoch) if sid.end_offset >= 0 else None,
            fetch_offset=req.fetch_offset, last_fetched_epoch=req.last_fetched_epoch, fetch_id=req.fetch_id)
    if isinstance(req, M.FetchSnapshotRequest):
        p = _only_partition(body)
        if p is None:
            return None
        return M.FetchSnapshotResponse(
            epoch=p.current_leader.leader_epoch, leader_id=p.current_leader.leader_id,
            error=p.error_code or body.error_code,
            snapshot_id=OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch),
            size=p.size, position=p.position, data=bytes(p.unaligned_records or b""), fetch_id=req.fetch_id)
    raise TypeError(f"not a raft request: {req!r}")


def request_from_wire(api_key: int, body, fetch_id: int) -> tuple[int, Any] | None:
    """(source node, core request) for an incoming wire request."""
    if api_key == VOTE.key:
        p = _only_partition(body)
        return None if p is None else (p.replica_id, M.VoteRequest(
            epoch=p.replica_epoch, candidate_id=p.replica_id, last_epoch=p.last_offset_epoch,
            last_offset=p.last_offset, pre_vote=bool(p.pre_vote)))
    if api_key == BQE.key:
        p = _only_partition(body)
        return None if p is None else (p.leader_id, M.BeginQuorumEpochRequest(epoch=p.leader_epoch,
                                                                               leader_id=p.leader_id))
    if api_key == EQE.key:
        p = _only_partition(body)
        return None if p is None else (p.leader_id, M.EndQuorumEpochRequest(
            epoch=p.leader_epoch, leader_id=p.leader_id, preferred_successors=tuple(p.preferred_successors or ())))
    if api_key == FETCH.key:
        p = _only_partition(body)
        return None if p is None else (body.replica_id, M.FetchRequest(
            epoch=p.current_leader_epoch, replica_id=body.replica_id, fetch_offset=p.fetch_offset,
            last_fetched_epoch=p.last_fetched_epoch, max_wait_ms=body.max_wait_ms, fetch_id=fetch_id))
    if api_key == FETCH_SNAPSHOT.key:
        p = _only_partition(body)
        return None if p is None else (body.replica_id, M.FetchSnapshotRequest(
            epoch=p.current_leader_epoch, replica_id=body.replica_id,
            snapshot_id=OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch), position=p.position,
            max_bytes=body.max_bytes, fetch_id=fetch_id))
    return None


def response_to_wire(api_key: int, msg: Any):
    """The wire response body for a core response."""
    if api_key == VOTE.key:
        Resp = VOTE.response
        part = Resp.struct("PartitionData")(partition_index=0, error_code=msg.error, leader_id=msg.leader_id,
                                            leader_epoch=msg.epoch, vote_granted=msg.granted)
        return Resp.cls(error_code=0, topics=[Resp.struct("TopicData")(topic_name=TOPIC, partitions=[part])],
                        node_endpoints=[])
    if api_key in (BQE.key, EQE.key):
        a = BQE if api_key == BQE.key else EQE
        Resp = a.response
        part = Resp.struct("PartitionData")(partition_index=0, error_code=msg.error, leader_id=msg.leader_id,
                                            leader_epoch=msg.epoch)
        return Resp.cls(error_code=0, topics=[Resp.struct("TopicData")(topic_name=TOPIC, partitions=[part])],
                        node_endpoints=[])
    if api_key == FETCH.key:
        Resp = FETCH.response
        PD = Resp.struct("PartitionData")
        pd = PD(partition_index=0, error_code=msg.error, high_watermark=msg.high_watermark, last_stable_offset=-1,
                log_start_offset=msg.log_start_offset, aborted_transactions=None, preferred_read_replica=-1,
                records=encode_entries(msg.entries) if msg.entries else None)
        pd.current_leader.leader_id = msg.leader_id
        pd.current_leader.leader_epoch = msg.epoch
        if msg.diverging_epoch is not None:
            pd.diverging_epoch.epoch = msg.diverging_epoch.epoch
            pd.diverging_epoch.end_offset = msg.diverging_epoch.offset
        if msg.snapshot_id is not None:
            pd.snapshot_id.end_offset = msg.snapshot_id.offset
            pd.snapshot_id.epoch = msg.snapshot_id.epoch
        return Resp.cls(throttle_time_ms=0, error_code=0, session_id=0,
                        responses=[Resp.struct("FetchableTopicResponse")(topic=TOPIC, partitions=[pd])])
    if api_key == FETCH_SNAPSHOT.key:
        Resp = FETCH_SNAPSHOT.response
        sid = msg.snapshot_id or OffsetAndEpoch(-1, -1)
        part = Resp.struct("PartitionSnapshot")(
            index=0, error_code=msg.error,
            snapshot_id=Resp.struct("SnapshotId")(end_offset=sid.offset, epoch=sid.epoch),
            current_leader=Resp.struct("LeaderIdAndEpoch")(leader_id=msg.leader_id, leader_epoch=msg.epoch),
            size=msg.size, position=msg.position, unaligned_records=msg.data)
        return Resp.cls(throttle_time_ms=0, error_code=0,
                        topics=[Resp.struct("TopicSnapshot")(name=TOPIC, partitions=[part])])
    raise TypeError(f"no wire response for api key {api_key}")


def describe_quorum_response(d: dict, error: int = 0):
    Resp = DESCRIBE_QUORUM.response
    RS = Resp.struct("ReplicaState")
    P = Resp.struct("PartitionData")

    def states(rows):
        return [RS(replica_id=r["replica_id"], log_end_offset=r["log_end_offset"],
                   last_fetch_timestamp=r["last_fetch_timestamp"],
                   last_caught_up_timestamp=r["last_caught_up_timestamp"]) for r in rows]
    part = P(partition_index=0, error_code=error, leader_id=d["leader_id"], leader_epoch=d["leader_epoch"],
             high_watermark=d["high_watermark"], current_voters=states(d["current_voters"]),
             observers=states(d["observers"]))
    return Resp.cls(error_code=0, topics=[Resp.struct("TopicData")(topic_name=TOPIC, partitions=[part])], nodes=[])


# ====================================================================================== transport
def _offer(slot, value) -> None:
    """Hand a result to whoever waits on ``slot``, if anyone still does."""
    try:
        slot.send_nowait(value)
    except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def _why(exc: OSError) -> str:
    """A failed connect in a few words (trio wraps the per-address errors in its own)."""
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop(0)
        if isinstance(e, OSError) and e.errno:
            return os.strerror(e.errno)
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        if e.__cause__ is not None:
            todo.append(e.__cause__)
    return str(exc)


class _Peer:
    def __init__(self, node_id: int, addr: tuple[str, int]):
        self.node_id = node_id
        self.addr = addr
        self.send_ch, self.recv_ch = trio.open_memory_channel(QUEUE)
        self.pending: dict[int, tuple[Any, Any, Any]] = {}   # corr -> (api, raft request | None, reply slot)
        self.connected = False              # a connection to its controller listener is up
        self.last_error: str | None = None  # why the last attempt to connect failed (start-up logs)


class PeerConnector(Protocol):
    """How the transport opens a connection to another voter's controller listener
    (kwire.security.peers.PeerLink is one): a stream ready for Kafka requests, TLS and SASL
    done. Raises OSError when the connect fails, kwire.net.PeerAuthenticationFailed when the
    handshake or the login does, trio.TooSlowError after ``timeout`` seconds."""

    async def connect(self, host: str, port: int, *, timeout: float, client_id: str = "kwire") -> Any: ...


class RaftTransport:
    """The Raft messages of one node: connections to the other voters' controller listeners
    (outgoing), and the Raft requests the controller listener hands over (incoming,
    :meth:`handle_request`). The listener itself is the controller's server
    (kwire.metadata.controller_server), which also uses :meth:`call` to reach the active
    controller. Kafka's KafkaNetworkChannel plays this part for KafkaRaftClient."""

    def __init__(self, driver, voters: dict[int, tuple[str, int]], *, link: PeerConnector,
                 cluster_id: str | None = None, unreachable=None):
        self.driver = driver
        # outgoing: how to reach and authenticate to the voters' controller listener, given by
        # the layer above (kwire.security.peers.PeerLink); raft knows nothing of TLS or SASL
        self.link = link
        self.unreachable = unreachable   # tests: kwire.link_faults.UnreachableNodes, else None
        self.node_id = driver.node_id
        self.cluster_id = cluster_id
        self.peers = {nid: _Peer(nid, addr) for nid, addr in voters.items() if nid != self.node_id and addr}
        self._fetch_seq = 0
        self._slots: dict[tuple, Any] = {}          # ("fetch", id) or (src, type name) -> [slots]
        driver.transport = self
        driver.reply_router = self._route_reply

    def unreachable_peers(self) -> dict[int, str]:
        """Voters this node has no connection to: node id -> "HOST:PORT: reason"."""
        return {nid: f"{p.addr[0]}:{p.addr[1]}" + (f": {p.last_error}" if p.last_error else "")
                for nid, p in sorted(self.peers.items()) if not p.connected}

    # ------------------------------------------------------------------ outgoing
    def send(self, dest: int, msg: Any) -> None:
        peer = self.peers.get(dest)
        if peer is None:
            return
        try:
            peer.send_ch.send_nowait((msg, None))
        except trio.WouldBlock:
            log.debug("raft: queue to %d full, dropping %s", dest, type(msg).__name__)

    async def call(self, dest: int, a, version: int, body, timeout: float = 5.0):
        """Send an arbitrary request to a peer's controller listener; its response body."""
        peer = self.peers.get(dest)
        if peer is None:
            raise ConnectionError(f"node {dest} is not a known voter")
        send, recv = trio.open_memory_channel(1)
        peer.send_ch.send_nowait(((a, version, body), send))
        with trio.fail_after(timeout):
            result = await recv.receive()
        if isinstance(result, Exception):
            raise result
        return result

    async def run(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Keep a connection to every other voter (the listener is served by the layer above)."""
        async with trio.open_nursery() as nursery:
            for peer in self.peers.values():
                nursery.start_soon(self._peer_loop, peer)
            task_status.started()

    async def _peer_loop(self, peer: _Peer) -> None:
        backoff = 0.05
        while True:
            if self.unreachable is not None and self.unreachable.blocks(peer.node_id):
                await self._drain_while_down(peer, 0.1)
                continue
            try:
                stream = await self.link.connect(*peer.addr, timeout=5.0, client_id=f"kwire-raft-{self.node_id}")
            except PeerAuthenticationFailed as exc:   # TLS or SASL refused: one error line per reason
                if peer.last_error != str(exc):
                    log.error("raft: node %d cannot connect to voter %d: %s", self.node_id, peer.node_id, exc)
                peer.last_error = str(exc)
                await self._drain_while_down(peer, 0.5)
                continue
            except (OSError, trio.TooSlowError) as exc:
                peer.last_error = _why(exc) if isinstance(exc, OSError) else "connect timed out"
                await self._drain_while_down(peer, backoff)
                backoff = min(backoff * 2, 0.5)
                continue
            backoff = 0.05
            conn = KafkaClientConnection(client_id=f"kwire-raft-{self.node_id}", max_frame_size=64 << 20)
            peer.connected, peer.last_error = True, None
            try:
                async with trio.open_nursery() as n:
                    n.start_soon(self._guard, peer, self._reader(peer, stream, conn), n.cancel_scope)
                    await self._guard(peer, self._writer(peer, stream, conn), n.cancel_scope)
            finally:
                peer.connected = False
                peer.last_error = peer.last_error or "connection lost"
                await trio.aclose_forcefully(stream)
                for _, _, slot in peer.pending.values():
                    if slot is not None:
                        _offer(slot, ConnectionError("connection lost"))
                peer.pending.clear()

    async def _drain_while_down(self, peer: _Peer, delay: float) -> None:
        """The peer is unreachable: drop what is queued for it (Raft resends on its timers)."""
        with trio.move_on_after(delay):
            while True:
                _, slot = await peer.recv_ch.receive()
                if slot is not None:
                    _offer(slot, ConnectionError(f"node {peer.node_id} unreachable"))

    @staticmethod
    async def _guard(peer: _Peer, coro, scope) -> None:
        """Run one side of a peer connection; any failure ends the whole connection."""
        try:
            await coro
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ProtocolError) as exc:
            log.debug("raft: connection to %d lost: %s", peer.node_id, exc)
        except Exception:  # noqa: BLE001 - a bad frame: drop the connection, reconnect
            log.exception("raft: connection to %d failed", peer.node_id)
        finally:
            scope.cancel()

    async def _writer(self, peer: _Peer, stream, conn: KafkaClientConnection) -> None:
        while True:
            item, slot = await peer.recv_ch.receive()
            if self.unreachable is not None and self.unreachable.blocks(peer.node_id):
                if slot is not None:
                    _offer(slot, ConnectionError(f"node {peer.node_id} unreachable"))
                raise ConnectionError(f"node {peer.node_id} unreachable (fault injection)")
            if slot is None:
                a, version, body = request_to_wire(item, self.cluster_id)
            else:
                a, version, body = item
            corr, data = conn.send_request(a, version, body)
            peer.pending[corr] = (a, item if slot is None else None, slot)
            await stream.send_all(data)

    async def _reader(self, peer: _Peer, stream, conn: KafkaClientConnection) -> None:
        async def on_response(resp) -> bool:
            if self.unreachable is not None and self.unreachable.blocks(peer.node_id):
                raise ConnectionError(f"node {peer.node_id} unreachable (fault injection)")
            entry = peer.pending.pop(resp.correlation_id, None)
            if entry is not None:
                _, req, slot = entry
                if slot is not None:
                    _offer(slot, resp.body)
                else:
                    msg = response_from_wire(req, resp.body)
                    if msg is not None:
                        self.driver.deliver(peer.node_id, msg)
            return False

        await pump(stream, conn, conn.next_response, on_response, recv_size=1 << 16)

    # ------------------------------------------------------------------ incoming (from the listener)
    def _route_reply(self, dest: int, msg: Any) -> bool:
        if isinstance(msg, (M.FetchResponse, M.FetchSnapshotResponse)):
            slot = self._slots.pop(("fetch", msg.fetch_id), None)
            if slot is None:
                return True       # its request is gone (timed out); nobody to answer
            _offer(slot, msg)
            return True
        q = self._slots.get((dest, type(msg).__name__))
        if not q:
            return True
        _offer(q.pop(0), msg)
        if not q:
            del self._slots[(dest, type(msg).__name__)]
        return True

    async def handle_request(self, key: int, body) -> Any:
        """The response body to a Raft request that reached the controller listener (Vote,
        BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, DescribeQuorum: ``RAFT_APIS``),
        or None when there is nothing to answer (a malformed request, or the core did not
        answer in time: the sender's Raft timers retry). Kafka's ControllerApis hands these
        to the raft manager the same way (``handleRaftRequest``)."""
        if key == DESCRIBE_QUORUM.key:
            d = self.driver.describe_quorum()
            return describe_quorum_response(d, 0 if self.driver.is_leader else ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._fetch_seq += 1
        got = request_from_wire(key, body, self._fetch_seq)
        if got is None:
            return None
        src, msg = got
        send, recv = trio.open_memory_channel(1)
        if isinstance(msg, (M.FetchRequest, M.FetchSnapshotRequest)):
            slot_key = ("fetch", self._fetch_seq)
            self._slots[slot_key] = send
        else:
            slot_key = (src, type(msg).__name__.replace("Request", "Response"))
            self._slots.setdefault(slot_key, []).append(send)
        self.driver.deliver(src, msg)
        wait = (getattr(msg, "max_wait_ms", 0) or 0) / 1000 + 2.0
        resp = None
        with trio.move_on_after(wait):
            resp = await recv.receive()
        if resp is None:
            s = self._slots.get(slot_key)
            if isinstance(s, list):
                if send in s:
                    s.remove(send)
            else:
                self._slots.pop(slot_key, None)
            return None
        return response_to_wire(key, resp)


__all__ = ["RAFT_APIS", "PeerConnector", "RaftTransport", "describe_quorum_response", "request_to_wire",
           "response_from_wire", "request_from_wire", "response_to_wire"]

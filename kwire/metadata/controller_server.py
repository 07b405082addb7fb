"""The controller listener of one node: Kafka's ControllerServer (the controller's socket
server, secured as its listener says) with the dispatch of ControllerApis.handle.

Every request is answered in its own task, so a parked Raft Fetch never holds up a Vote or
an AlterPartition. The requests of the consensus (Vote, BeginQuorumEpoch, EndQuorumEpoch,
Fetch and FetchSnapshot of the metadata log, DescribeQuorum: kwire.raft.transport.RAFT_APIS)
go to the Raft transport, as Kafka's ControllerApis hands them to the raft manager; the
controller's own (AlterPartition, BrokerHeartbeat, ElectLeaders, AlterPartitionReassignments,
topic changes, metadata forwarding: kwire.metadata.controller_apis) to the handlers the
quorum passes in.

The listener is secured as ``controller.listener.names`` and
``listener.security.protocol.map`` say (kwire.security.peers): TLS (mutual with
``ssl.client.auth=required``) and SASL (kwire.security.controller_edge) on inbound
connections; with an authorizer, requests need CLUSTER_ACTION on the cluster (DescribeQuorum:
DESCRIBE), as Kafka's controllers ask. Fault injection (kwire.link_faults) drops the requests
of a node cut off from this one.
"""
from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

import trio

from kwire.connection import CLOSED, KafkaConnection, Reply, Request
from kwire.net import peer_name, pump, send_parts, set_socket_options
from kwire.raft.transport import RAFT_APIS, RaftTransport
from kwire.security.controller_edge import ControllerConnection
from kwire.security.edge import HandshakeFailed, secure

log = logging.getLogger("kwire.controller_server")

Handler = Callable[[Any, int], Awaitable[Any]]   # fn(request body, version) -> response body


class ControllerServer:
    """Serves the controller listener of one node."""

    def __init__(self, raft: RaftTransport, apis: dict[int, Handler] | None = None, *, unreachable=None,
                 listener_security=None, authorizer=None):
        self.raft = raft
        # api key -> handler for the controller's own requests (kwire.metadata.controller_apis)
        self.apis = dict(apis or {})
        assert not RAFT_APIS & self.apis.keys(), "the Raft requests belong to the Raft transport"
        self.unreachable = unreachable   # tests: kwire.link_faults.UnreachableNodes, else None
        # what inbound connections must do (TLS, SASL) and the authorizer
        self.listener_security = listener_security
        self.authorizer = authorizer

    async def run(self, listeners, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            if listeners:
                nursery.start_soon(trio.serve_listeners, self._handle, listeners)
            task_status.started()

    async def _handle(self, stream) -> None:
        set_socket_options(stream)
        peer = peer_name(stream)
        conn = KafkaConnection(64 << 20, peer=peer)
        send_lock = trio.Lock()
        guard = None
        if self.listener_security is not None or self.authorizer is not None:
            guard = ControllerConnection(self.listener_security, self.authorizer, host=peer.rpartition(":")[0]
                                         .strip("[]"))
        try:
            if self.listener_security is not None and self.listener_security.tls:
                try:
                    stream, guard.principal = await secure(stream, self.listener_security, 10.0)
                except HandshakeFailed as exc:
                    log.info("controller: closing inbound connection from %s on the controller listener: %s",
                             peer, exc)
                    return
            async with trio.open_nursery() as nursery:
                async def on_event(ev) -> bool:
                    if ev.__class__ is Request:  # each in its own task: a parked Fetch never holds up a Vote
                        if self.unreachable is not None and self.unreachable.blocks_client(ev.header.client_id):
                            return True
                        if guard is not None:
                            verdict = guard.check(ev.header.api_key, ev.header.api_version, ev.body,
                                                  int(trio.current_time() * 1000))
                            if verdict.answer is not None:
                                async with send_lock:
                                    await send_parts(stream, KafkaConnection.send_response(ev, verdict.answer))
                            if verdict.close is not None:
                                log.warning("controller: closing inbound connection from %s on the controller "
                                            "listener: %s", peer, verdict.close)
                                return True
                            if verdict.answer is not None:
                                return False
                        nursery.start_soon(self._answer_guarded, stream, send_lock, ev)
                        return False
                    if ev is CLOSED:
                        return True
                    if ev.__class__ is Reply:
                        async with send_lock:
                            await send_parts(stream, ev.parts)
                        return False
                    log.warning("controller: closing inbound connection from %s: %s", peer, ev.reason)
                    return True

                try:
                    await pump(stream, conn, conn.next_request, on_event, recv_size=1 << 16)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    log.debug("controller: inbound connection from %s lost: %s", peer, exc)
                except Exception:  # noqa: BLE001 - close this connection only
                    log.exception("controller: closing inbound connection from %s", peer)
                nursery.cancel_scope.cancel()
        finally:
            await trio.aclose_forcefully(stream)

    async def _answer_guarded(self, stream, send_lock, req) -> None:
        try:
            await self._answer(stream, send_lock, req)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            log.debug("controller: answer lost: %s", exc)
        except Exception:  # noqa: BLE001 - one bad request must not take the listener down
            log.exception("controller: answering %s failed", req.api.name)

    async def _answer(self, stream, send_lock, req) -> None:
        key = req.api.key
        handler = self.apis.get(key)
        if handler is not None:
            body = await handler(req.body, req.header.api_version)
        else:   # a Raft request, or one nobody here serves (no answer: the sender times out)
            body = await self.raft.handle_request(key, req.body)
        if body is None:
            return
        parts = KafkaConnection.send_response(req, body)
        async with send_lock:
            await send_parts(stream, parts)


__all__ = ["ControllerServer"]

"""Requests from this broker to another one (the transaction coordinator's WriteTxnMarkers to
partition leaders, a partition leader's AddPartitionsToTxn verify_only to a coordinator), over
the other broker's inter-broker listener (kwire.security.peers: TLS and SASL when it asks):
idle connections kept per broker and reused, one request at a time on each, a connection
closed after any failure (the caller decides whether to retry)."""
from __future__ import annotations

import trio

from kwire.codec.apis import api
from kwire.codec.frame import NEED_DATA
from kwire.connection import KafkaClientConnection
from kwire.security.peers import PLAINTEXT_LINK


class BrokerChannel:
    def __init__(self, broker, timeout_s: float, client_id: str, link=None):
        self.broker = broker
        self.link = link or PLAINTEXT_LINK   # the inter-broker listener and its security (kwire.security.peers)
        self.timeout_s = timeout_s
        self.client_id = client_id
        self.idle: dict[int, list[tuple]] = {}

    async def request(self, node: int, api_name: str, version: int, body):
        """The response body of ``api_name`` v``version`` sent to broker ``node``; raises
        OSError (no address, refused), trio.TooSlowError (request.timeout.ms) or a protocol
        error."""
        a = api(api_name)
        pool = self.idle.setdefault(node, [])
        held = pool.pop() if pool else None
        try:
            if held is None:
                link = self.link
                b = self.broker.image.brokers.get(node)
                addr = link.address(b) if b is not None else None
                if addr is None:
                    raise OSError(f"broker {node} has no address" + (f" for listener {link.listener}"
                                                                      if link.listener else ""))
                stream = await link.connect(addr[0], addr[1], timeout=self.timeout_s, client_id=self.client_id)
                held = (stream, KafkaClientConnection(self.client_id))
            stream, conn = held
            _, data = conn.send_request(a, version, body)
            with trio.fail_after(self.timeout_s):
                await stream.send_all(data)
                while (resp := conn.next_response()) is NEED_DATA:
                    conn.receive_data(await stream.receive_some(1 << 16))
        except BaseException:
            if held is not None:
                await trio.aclose_forcefully(held[0])
            raise
        pool.append(held)
        return resp.body

    async def aclose(self) -> None:
        for pool in self.idle.values():
            for stream, _conn in pool:
                await trio.aclose_forcefully(stream)
        self.idle.clear()

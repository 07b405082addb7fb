"""The Trio edge of the client listener: accept loop, one task per connection, requests
handled and answered in order (Kafka handles one request per connection at a time).

Each connection is a sans-I/O :class:`kwire.connection.KafkaConnection` fed by the one read
loop of kwire.net. Errors are converted here, once:
- a handler that raises (a bug, an OSError, an internal KafkaError) is logged once with the
  peer, API, version, correlation id and client id, and the request is answered in its
  response's shape: the exception's code for a KafkaError, UNKNOWN_SERVER_ERROR (-1) for
  anything else (Kafka's ``AbstractRequest.getErrorResponse``); where the response has no
  error code (or for Produce with acks=0, which expects no answer) the connection is closed;
- a frame that cannot be served closes its connection with a log line naming the peer.
Either way the broker and every other connection keep running: connection tasks live in a
nursery of their own, and nothing but cancellation leaves a connection task.

Limits, with Kafka's names and defaults (read from the broker config when a connection
arrives, so altering them applies to new connections): ``max.connections``,
``max.connections.per.ip`` and ``max.connections.per.ip.overrides`` (``host:n,...``): a
connection beyond them is closed at once, with one log line naming the peer;
``connections.max.idle.ms``: a connection with no request for that long is closed;
``request.timeout.ms`` (30 s): a peer that sent part of a request and then nothing for that
long is dropped (the wait restarts with every chunk received, so a slow upload that keeps
moving is not). One watchdog task checks both every tenth of the shorter limit (at most every
second), instead of a deadline on every read, which would cost every request; ``queued.max.requests``: at most that many complete requests are split out of
what one connection sent ahead of being answered, and nothing more is read from it until
they are (backpressure, not an error). Accepting past the open-file limit (EMFILE) is
handled as Trio's ``serve_listeners`` does (the accept loop here is its loop without the
wrapper task per connection): one log line, 0.1 s of sleep, and the listener lives on.

Client quotas (kwire.quota.edge), once one is configured: a handled request is recorded on its
user's / client id's quotas; when one is violated the throttle time goes into the response's
throttle_time_ms and, after the answer is written, nothing more is read from that connection
for that long (Kafka mutes the channel); older Produce / Fetch versions get the answer held
back instead. Until a quota exists this costs one attribute check per request.

One DEBUG line per request on the logger ``kwire.requests`` (API, version, correlation id,
client id, peer, size, time taken, non-zero error codes of the response); when that level is
off, a request costs one ``isEnabledFor`` check.
"""
from __future__ import annotations

import errno
import logging
import math
import os
import time
from collections import Counter

import trio

from kwire.codec.apis import APIS
from kwire.codec.error_response import error_codes, error_response, has_error_code
from kwire.emulation import table_of
from kwire.connection import CLOSED, Close, KafkaConnection, RawToken, Reply, Request
from kwire.groups.edge import start_groups
from kwire.transactions.edge import start_transactions
from kwire.log.log_cleaner import LogCleaner
from kwire.memory import MemoryReclaimer
from kwire.errors import ErrorCode, KafkaError
from kwire.handlers import REGISTRY, RequestContext
from kwire.internal_topics import SHARE_STATE_TOPIC as STATE_TOPIC
from kwire.net import peer_name, pump, send_parts, set_socket_options
from kwire.quota import edge as quota_edge
from kwire.security.edge import HandshakeFailed, secure

log = logging.getLogger("kwire.server")
request_log = logging.getLogger("kwire.requests")

_DEBUG = logging.DEBUG
_PRODUCE_KEY = 0
_FETCH_KEY = 1


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:n,host:n`` (an IPv6 host may be bracketed)."""
    out: dict[str, int] = {}
    for item in str(text or "").split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, n = item.rpartition(":")
        if not sep or not host:
            raise ValueError(f"max.connections.per.ip.overrides entry {item!r} is not host:count")
        out[host.strip("[]")] = int(n)
    return out


def _peer_host(peer: str) -> str:
    host = peer.rpartition(":")[0] if ":" in peer else peer
    return host.strip("[]")


def _seconds(ms) -> float:
    ms = int(ms)
    return math.inf if ms < 0 else ms / 1000


class _CloseConnection(Exception):
    pass


#: accept() errors that mean "out of descriptors or memory for now" (trio.serve_listeners' list)
_ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
_ACCEPT_RETRY_S = 0.1


async def _close(stream) -> None:
    """Close a connection's stream. A TCP stream's socket is closed at once, with no
    checkpoint: ``aclose_forcefully`` would make a cancel scope, a Cancelled and its traceback
    for each of a burst of closing connections while all of them are still alive (issue 32);
    trio's socket close wakes any task waiting on it, as aclose does."""
    if type(stream) is trio.SocketStream:
        stream.socket.close()
    else:
        await trio.aclose_forcefully(stream)


class LogThrottle:
    """At most one log line per key (peer host and reason) per ``interval`` seconds: an old
    client refused under 4.x emulation reconnects in a tight loop (kafka-go 0.2: ~150 times a
    second), which must not flood the log. The next line after a quiet spell says how many
    were left out."""

    MAX_KEYS = 4096

    def __init__(self, interval: float = 10.0):
        self.interval = interval
        self._last: dict = {}
        self._left_out: Counter = Counter()

    def allow(self, key, now: float) -> int | None:
        """None: leave this one out; else how many were left out since the last line."""
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._left_out[key] += 1
            return None
        if len(self._last) >= self.MAX_KEYS:   # forget the quiet ones
            for k in [k for k, t in self._last.items() if now - t >= self.interval]:
                del self._last[k]
                self._left_out.pop(k, None)
        self._last[key] = now
        return self._left_out.pop(key, 0)


class KafkaServer:
    """Serves the Kafka protocol for one Broker on one or more listeners."""

    def __init__(self, broker):
        self.broker = broker
        self.connections: dict[KafkaConnection, trio.CancelScope] = {}
        self._timed_out: dict[KafkaConnection, str] = {}
        self._per_ip: Counter = Counter()
        self.memory = MemoryReclaimer()   # memory given back after a burst of connections closes
        self.close_log = LogThrottle()   # refused connections: one line per host and reason per 10 s
        self.in_flight = 0  # requests being handled right now, across connections
        self._idle: trio.Event | None = None
        self._accepting = trio.CancelScope()
        self.fault_hook = None  # testing: fault injection (kwire.testing)
        self.metrics = None     # kwire.metrics.BrokerMetrics when metrics.listen is set
        self.metrics_port: int | None = None   # where /metrics is served
        self.cleaner = None     # kwire.log.log_cleaner.LogCleaner, from start_background

    # ---------------------------------------------------------------- lifecycle
    async def start_background(self, nursery) -> None:
        """Background duties: retention checks; the group coordinator (the broker's
        ``group_edge``) replays __consumer_offsets before serving, then runs its timers."""
        nursery.start_soon(self._retention_loop)
        self.cleaner = LogCleaner(self.broker.logs, self.broker.config, self.broker.clock)
        nursery.start_soon(self.cleaner.run)   # compaction (cleanup.policy=compact), off the loop
        await start_groups(self.broker, nursery)  # replay before serving
        await start_transactions(self.broker, nursery)
        b = self.broker
        # the share partitions' state (KIP-932), before serving (off the loop); without a
        # __share_group_state there is nothing to load and the share components wait for
        # their first use (kwire.broker.Broker.share_state)
        if (getattr(b, "share_built", True) or STATE_TOPIC in b.image.topics) \
                and getattr(b, "share_state", None) is not None:
            await b.share_state.load()

    async def _retention_loop(self) -> None:
        """Retention, flush of rolled segments and checkpoints: decided here on the loop,
        the unlinks, fsyncs and file writes in a worker thread (a slow disk must not stall
        the connections), their effect (recovery points) applied back here."""
        interval = int(self.broker.config.get("log.retention.check.interval.ms")) / 1000
        while True:
            await trio.sleep(interval)
            try:
                work = self.broker.logs.plan_retention(self.broker.clock.now_ms())
                await trio.to_thread.run_sync(work.run)
                self.broker.logs.finish(work)
            except Exception:  # noqa: BLE001 - a failed pass must not stop the broker
                log.exception("retention pass failed")

    async def accept(self, listeners, handler_nursery=None, *, security=None, more=()) -> None:
        """Accept connections until drain(). Connection tasks run in a nursery of their own
        (``handler_nursery`` is not used: a connection must never reach the broker's).
        ``security`` (kwire.security.edge.ListenerSecurity; None: PLAINTEXT) is what
        ``listeners`` ask of a connection; ``more`` is further (listeners, security) pairs,
        one per further client listener."""
        groups = [(listeners, security), *more]
        async with trio.open_nursery() as connections:
            connections.start_soon(self.watch_connections)
            with self._accepting:
                async with trio.open_nursery() as acceptors:
                    for lst, sec in groups:
                        for one in lst:
                            acceptors.start_soon(self._accept_loop, one, sec, connections)
            # not accepting any more; the connections live on until the broker's nursery ends

    async def _accept_loop(self, listener, security, connections) -> None:
        """trio.serve_listeners' loop, spawning ``serve_connection`` itself: serve_listeners
        wraps each connection in a task of its own (``_run_handler``) that closes the stream
        a second time, after serve_connection closed it (a coroutine held by every connection,
        and a cancel scope, a Cancelled and its traceback made by every close: issue 32).
        Accepting past the open-file limit (EMFILE and kin) is logged and retried after 0.1 s,
        as serve_listeners does; the listener lives on."""
        async with listener:
            while True:
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                        raise
                    log.error("accept returned %s (%s); retrying in %.1f seconds",
                              errno.errorcode.get(exc.errno, exc.errno), os.strerror(exc.errno), _ACCEPT_RETRY_S)
                    await trio.sleep(_ACCEPT_RETRY_S)
                    continue
                connections.start_soon(self.serve_connection, stream, None, security)

    async def watch_connections(self) -> None:
        """The watchdog of connections.max.idle.ms and request.timeout.ms: closes a connection
        that has waited that long for a request (idle), or for the rest of one it started
        (stalled). Runs every tenth of the shorter limit (at most every second), so a
        connection goes within that much past its limit; reading carries no deadline itself
        (a deadline per read would cost every request)."""
        while True:
            cfg = self.broker.config
            idle_s = _seconds(cfg.get("connections.max.idle.ms"))
            partial_s = _seconds(cfg.get("request.timeout.ms"))
            await trio.sleep(max(0.01, min(1.0, idle_s / 10, partial_s / 10)))
            # in a call of its own: a loop variable here would keep the last connection
            # checked (and its stream and buffers) alive through the next sleep
            self._check_connections(trio.current_time(), idle_s, partial_s)

    def _check_connections(self, now: float, idle_s: float, partial_s: float) -> None:
        for conn, scope in self.connections.items():
            since = conn.reading_since
            if since is None:
                continue  # a request is being handled
            if conn.partial:
                if now - since >= partial_s:
                    self._timed_out[conn] = (f"sent part of a request, then nothing for {now - since:.1f} s "
                                             f"(request.timeout.ms)")
                    scope.cancel()
            elif now - since >= idle_s:
                self._timed_out[conn] = f"idle for {now - since:.1f} s (connections.max.idle.ms)"
                scope.cancel()

    async def drain(self, grace_s: float = 5.0) -> None:
        """Graceful shutdown: stop accepting, then let in-flight requests finish (at most
        ``grace_s``: a long-poll fetch or a pending JoinGroup is cut after that)."""
        self._accepting.cancel()
        with trio.move_on_after(grace_s):
            while self.in_flight:
                self._idle = trio.Event()
                await self._idle.wait()
        log.info("stopped accepting; %d requests still in flight at shutdown", self.in_flight)

    # ---------------------------------------------------------------- connections
    def _refusal(self, host: str) -> str | None:
        """Why a new connection from ``host`` must be refused, or None."""
        cfg = self.broker.config
        per_ip = int(cfg.get("max.connections.per.ip"))
        overrides = cfg.get("max.connections.per.ip.overrides")
        if overrides:
            try:
                per_ip = parse_ip_overrides(overrides).get(host, per_ip)
            except ValueError as exc:
                log.warning("ignoring max.connections.per.ip.overrides: %s", exc)
        if self._per_ip[host] >= per_ip:
            return f"address {host} already has the configured maximum of {per_ip} connections"
        limit = int(cfg.get("max.connections"))
        if len(self.connections) >= limit:
            return f"the broker has the configured maximum of {limit} connections (max.connections)"
        return None

    async def serve_connection(self, stream, peer: str | None = None, listener=None) -> None:
        """Serve one connection until it closes. Never raises (except Cancelled): whatever
        goes wrong ends this connection only. ``listener``: the ListenerSecurity of the
        listener it came in on (None: PLAINTEXT)."""
        raw = stream   # the TCP stream (``stream`` becomes the TLS stream over it on a TLS listener)
        peer = peer or peer_name(stream)
        host = _peer_host(peer)
        try:
            refused = self._refusal(host)
            if refused is None:
                cfg = self.broker.config
                set_socket_options(stream, int(cfg.get("socket.send.buffer.bytes")), int(cfg.get("socket.receive.buffer.bytes")))
                versions = table_of(cfg)
                conn = KafkaConnection(int(cfg.get("socket.request.max.bytes")),
                                       max_queued=int(cfg.get("queued.max.requests")),
                                       serves=versions.serves, peer=peer, versions=versions)
        except BaseException:
            await _close(stream)
            raise
        if refused is not None:
            log.info("refusing connection from %s: %s", peer, refused)
            await _close(stream)
            return
        if listener is not None:
            conn.listener = listener.name
            if listener.sasl is not None:
                from kwire.security.sasl import SaslAuthenticator  # noqa: PLC0415 - start-up time: SASL listeners only

                conn.sasl = SaslAuthenticator(listener.sasl, self._scram_credentials)
                # as Kafka: until authenticated, frames are held to sasl.server.max.receive.size
                conn.max_frame_size = min(conn.max_frame_size, listener.sasl.max_receive_size)
        scope = trio.CancelScope()
        self.connections[conn] = scope
        self.memory.opened(len(self.connections))
        self._per_ip[host] += 1
        log.debug("connection from %s", peer)

        async def on_event(ev) -> bool:
            if ev.__class__ is Request:
                await self._process(stream, conn, ev)
                return False
            if ev is CLOSED:
                log.debug("connection from %s closed by peer after %d requests", peer, conn.requests)
                return True
            if ev.__class__ is RawToken:
                await self._raw_sasl_token(stream, conn, ev.data)
                return False
            if ev.__class__ is Reply:
                if request_log.isEnabledFor(_DEBUG):
                    self._log_request(conn, ev.header, ev.size, 0.0, Counter({ErrorCode.UNSUPPORTED_VERSION: 1}))
                await send_parts(stream, ev.parts)
                return False
            assert ev.__class__ is Close
            raise _CloseConnection(ev.reason)

        try:
            with scope:
                if listener is not None and listener.tls:
                    stream, conn.principal = await secure(stream, listener,
                                                          min(10.0, _seconds(cfg.get("request.timeout.ms"))))
                await pump(stream, conn, conn.next_request, on_event)
            if scope.cancelled_caught:
                reason = self._timed_out.pop(conn, "timed out")
                (log.info if conn.partial else log.debug)("closing connection from %s: %s", peer, reason)
        except _CloseConnection as exc:
            left_out = self.close_log.allow((host, str(exc)), time.monotonic())
            if left_out is not None:
                log.warning("closing connection from %s: %s%s", peer, exc,
                            f" (and {left_out} more from {host} in the last {self.close_log.interval:.0f}s)"
                            if left_out else "")
        except HandshakeFailed as exc:
            log.info("closing connection from %s on listener %s: %s", peer, listener.name, exc)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError) as exc:
            log.debug("connection from %s lost: %s", peer, exc)
        except Exception:  # noqa: BLE001 - the error boundary: this connection ends, the broker does not
            log.exception("closing connection from %s after an unexpected error", peer)
        finally:
            del self.connections[conn]
            self._timed_out.pop(conn, None)
            self._per_ip[host] -= 1
            if self._per_ip[host] <= 0:
                del self._per_ip[host]
            if stream is not raw:
                await trio.aclose_forcefully(stream)   # TLS: close_notify is not waited for
            await _close(raw)
            # counted once the socket is closed: the reclaim waits until closes stop (kwire.memory),
            # and a connection counted before its close still holds its task and buffers
            if self.memory.closed(len(self.connections)):
                trio.lowlevel.spawn_system_task(self.memory.reclaim, self._open_connections, self._compact_tables)

    def _open_connections(self) -> int:
        return len(self.connections)

    def _compact_tables(self) -> None:
        """After a burst of connections closed (kwire.memory): the per-connection tables rebuilt
        at their present size. A dict keeps the hash table of its peak when entries are deleted
        (5,000 connections: ~150 KiB each, held for the life of the process). Safe at any await
        point: every user looks the table up on ``self`` and none iterates across an await."""
        self.connections = dict(self.connections)
        self._timed_out = dict(self._timed_out)
        self._per_ip = Counter(self._per_ip)

    def _scram_credentials(self):
        """The SCRAM credentials of the metadata quorum (the current image's: a snapshot replaces it)."""
        return getattr(self.broker.image, "scram", None)

    async def _raw_sasl_token(self, stream, conn: KafkaConnection, token: bytes) -> None:
        """SaslHandshake v0's exchange: bare size-prefixed tokens each way until the mechanism
        is done; a failure closes the connection (v0 has no way to say why)."""
        from kwire.security.sasl import SaslAuthenticationFailed  # noqa: PLC0415 - start-up time: SASL only

        auth = conn.sasl
        try:
            out = auth.authenticate(token, self.broker.clock.now_ms())
        except SaslAuthenticationFailed as exc:
            raise _CloseConnection(f"SASL {auth.mechanism} authentication failed: {exc}") from None
        await send_parts(stream, [len(out).to_bytes(4, "big"), out])
        if auth.complete:
            conn.raw_tokens = False
            conn.principal = auth.principal
            conn.max_frame_size = int(self.broker.config.get("socket.request.max.bytes"))

    async def _process(self, stream, conn: KafkaConnection, req: Request) -> None:
        hdr = req.header
        logged = request_log.isEnabledFor(_DEBUG)
        metrics = self.metrics
        t0 = time.perf_counter() if logged or metrics is not None else 0.0
        quotas = self.broker.quotas if self.broker.quotas.enabled else None   # kwire.quota: off until configured
        throttle_ms = 0
        self.in_flight += 1
        try:
            sasl = conn.sasl
            if sasl is not None and (not sasl.complete or sasl.session_expires_ms is not None) \
                    and not sasl.allowed(hdr.api_key, self.broker.clock.now_ms()):
                raise _CloseConnection(f"{req.api.name} v{hdr.api_version} " + (
                    "after the SASL session expired (connections.max.reauth.ms)" if sasl.complete else
                    f"before SASL authentication (listener {conn.listener}; state {sasl.state})"))
            ctx = RequestContext(self.broker, hdr, req.api, conn.peer, conn)
            resp = None
            try:
                if self.fault_hook is not None:
                    resp = await self.fault_hook(ctx, req.body)
                    if isinstance(resp, str):  # "drop"
                        raise _CloseConnection("fault injection: dropped")
                if resp is None:
                    if quotas is not None and quotas.request.enabled:   # request_percentage: time the handler
                        resp = await quota_edge.timed(ctx, REGISTRY[hdr.api_key].fn(ctx, req.body))
                    else:
                        resp = await REGISTRY[hdr.api_key].fn(ctx, req.body)
                if resp is None:  # Produce with acks=0: no answer
                    parts = None
                elif isinstance(resp, str) and resp == "drop":  # test switch: the work was done, the answer is lost
                    raise _CloseConnection("fault injection: dropped after handling")
                else:
                    if quotas is not None:
                        throttle_ms = quota_edge.after_request(quotas, ctx, req, resp, self.broker.clock.now_ms())
                    parts = conn.send_response(req, resp)
            except _CloseConnection:
                raise
            except Exception as exc:  # noqa: BLE001 - the per-request error boundary
                resp, parts = self._failed(conn, req, exc)
            if parts is not None:
                if throttle_ms > 0 and not quota_edge.client_throttles(hdr.api_key, hdr.api_version):
                    await trio.sleep(throttle_ms / 1000)   # an old client: Kafka holds the answer back instead
                    throttle_ms = 0
                await send_parts(stream, parts)
            if sasl is not None and sasl.complete:   # authenticated: frames up to socket.request.max.bytes
                conn.max_frame_size = int(self.broker.config.get("socket.request.max.bytes"))
            if conn.close_after_response is not None:
                raise _CloseConnection(conn.close_after_response)
            if logged:
                codes = error_codes(req.api, hdr.api_version, resp) if resp is not None else Counter()
                self._log_request(conn, hdr, req.size, time.perf_counter() - t0, codes)
            if metrics is not None:
                self._count(metrics, req, resp, time.perf_counter() - t0)
        finally:
            self.in_flight -= 1
            if not self.in_flight and self._idle is not None:
                self._idle.set()
        if throttle_ms > 0:
            # a quota was violated: the channel is muted (no request read from it) that long
            await trio.sleep(throttle_ms / 1000)

    def _count(self, metrics, req: Request, resp, seconds: float) -> None:
        """Metrics of one answered request (kwire.metrics); never fails the request."""
        hdr = req.header
        try:
            metrics.request(req.api.name, hdr.api_version, seconds)
            if hdr.api_key == _PRODUCE_KEY:
                metrics.produced(req.body, resp, self._topic_name)
            elif hdr.api_key == _FETCH_KEY and resp is not None and not isinstance(resp, str):
                body = req.body
                replica = body.replica_state.replica_id if hdr.api_version >= 15 and body.replica_state is not None \
                    else body.replica_id
                if replica < 0:      # consumers only, as Kafka's BytesOutPerSec
                    metrics.fetched(resp, self._topic_name)
        except Exception:  # noqa: BLE001 - metrics must never cost a client its answer
            log.debug("metrics of %s failed", req.api.name, exc_info=True)

    def _topic_name(self, t) -> str:
        name = getattr(t, "name", None) or getattr(t, "topic", None)
        if name:
            return name
        ti = self.broker.image.topics_by_id.get(getattr(t, "topic_id", None))
        return ti.name if ti is not None else str(getattr(t, "topic_id", "?"))

    def _failed(self, conn: KafkaConnection, req: Request, exc: Exception):
        """A handler raised: log it once, and answer in the response's shape (or close)."""
        hdr = req.header
        what = (f"{req.api.name} v{hdr.api_version} (correlation id {hdr.correlation_id}, "
                f"client {hdr.client_id!r}) from {conn.peer}")
        if isinstance(exc, KafkaError):
            code = exc.code
            log.warning("%s failed: %s: %s", what, _code_name(code), exc)
        else:
            code = ErrorCode.UNKNOWN_SERVER_ERROR
            log.error("%s failed; answering UNKNOWN_SERVER_ERROR", what, exc_info=exc)
        if hdr.api_key == _PRODUCE_KEY and getattr(req.body, "acks", None) == 0:
            raise _CloseConnection(f"{what} failed and acks=0 expects no answer")
        try:
            if not has_error_code(req.api, hdr.api_version):
                raise _CloseConnection(f"{what} failed and its response has no error code")
            body = error_response(req.api, hdr.api_version, req.body, int(code))
            return body, conn.send_response(req, body)
        except _CloseConnection:
            raise
        except Exception as exc2:  # noqa: BLE001
            raise _CloseConnection(f"{what} failed, and so did its error answer: {exc2!r}") from None

    @staticmethod
    def _log_request(conn: KafkaConnection, hdr, size: int, seconds: float, codes: Counter) -> None:
        api = APIS.get(hdr.api_key)
        errors = ",".join(f"{_code_name(c)}x{n}" if n > 1 else _code_name(c) for c, n in sorted(codes.items()))
        request_log.debug("%s v%d correlation_id=%d client_id=%r peer=%s size=%d took=%.3fms errors=%s",
                          api.name if api else hdr.api_key, hdr.api_version, hdr.correlation_id, hdr.client_id,
                          conn.peer, size, seconds * 1000, errors or "none")


def _code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)

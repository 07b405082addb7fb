"""Run a broker: build it from a config (Broker() is the composition root: storage, replica
manager, group coordinator edge, producer-id manager, fetch sessions), open it (metadata
replay, partition logs), start its background duties (group coordinator replay and timers,
retention), serve until cancelled or signalled (SIGINT/SIGTERM: controlled shutdown - the
controller moves this broker's leaderships away - then stop accepting, finish, write log
checkpoints)."""
from __future__ import annotations

import functools
import logging
import signal

import trio

from kwire import link_faults
from kwire.bind import bind, describe_address, listen
from kwire.broker import Broker
from kwire.config import BrokerConfig
from kwire.errors import LogDirsFailed, StartupError
from kwire.listeners import PROTOCOL_IDS, ClientListener, Endpoint, ListenerError, parse_endpoint
from kwire.log.regions import OPEN_FILES, raise_open_file_limit
from kwire.security.edge import for_listener
from kwire.server import KafkaServer

log = logging.getLogger("kwire")


_nofile_logged = False


def _raise_open_file_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit (once per process), said once in the log."""
    global _nofile_logged
    got = raise_open_file_limit()
    if got is not None and not _nofile_logged:
        _nofile_logged = True
        log.info("open files: soft limit %d (was %d); up to %d segment files kept open",
                 got[1], got[0], OPEN_FILES.capacity)


async def run_broker(config: BrokerConfig, *, host: str, port: int, advertised: tuple[str, int] | None = None,
                     task_status=trio.TASK_STATUS_IGNORED, handle_signals: bool = False, on_ready=None,
                     controller_listen: tuple[str, int] | None = None,
                     voters: dict[int, tuple[str, int]] | None = None, raft_config=None,
                     metrics_default: str | None = None, listeners=None) -> None:
    """Serve until cancelled. ``task_status.started((broker, server, port))`` once listening.

    ``voters`` (node id -> controller address) makes this node one of a KRaft quorum, with a
    controller listener on ``controller_listen`` (default: its own entry in ``voters``); the
    client listener opens once the node has caught up with the quorum and registered. Without
    it, the node is a quorum of one.

    ``metrics.listen`` (HOST:PORT) serves Prometheus metrics; when it is not configured,
    ``metrics_default`` (kwire serve: 127.0.0.1:9464) is tried, and a port in use there is only
    a warning.

    ``listeners`` (kwire.listeners.ClientListener, the first being ``host:port``) are every
    client listener with its security protocol and advertised address; None: one PLAINTEXT
    listener on ``host:port``."""
    metrics_at = _metrics_address(config, metrics_default)
    if not listeners:
        listeners = [ClientListener(Endpoint("PLAINTEXT", host or "", port), "PLAINTEXT", advertised)]

    if handle_signals:   # from the start: a SIGTERM while starting is a shutdown once started
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            await _run(config, host, port, advertised, task_status, signals, on_ready, controller_listen, voters,
                       raft_config, metrics_at, listeners)
    else:
        await _run(config, host, port, advertised, task_status, None, on_ready, controller_listen, voters,
                   raft_config, metrics_at, listeners)


def _metrics_address(config, default: str | None):
    """(host, port, required) of the metrics listener, or None (off)."""
    required = config.is_static("metrics.listen")
    text = config.get("metrics.listen") if required else default
    if not text:
        return None
    try:
        ep = parse_endpoint(text, what="metrics.listen")
    except ListenerError as exc:
        raise StartupError(str(exc)) from None
    return ep.host, ep.port, required


async def _start_metrics(nursery, metrics_at, broker, server) -> None:
    from kwire.metrics import BrokerMetrics, registry_for, serve_metrics  # noqa: PLC0415 - start-up time: metrics listener only

    host, port, required = metrics_at
    try:
        socks = await bind(host or None, port, what="metrics listener (metrics.listen)")
        listeners = listen(socks, what="metrics listener (metrics.listen)")
    except StartupError as exc:
        if required:
            raise
        log.warning("%s; metrics are off (set metrics.listen=HOST:PORT, or empty to silence this)", exc)
        return
    server.metrics = BrokerMetrics()
    # prometheus_client is imported by the serving task, after clients are being served
    nursery.start_soon(serve_metrics, listeners, lambda: registry_for(broker, server, server.metrics))
    bound = listeners[0].socket.getsockname()[1]
    server.metrics_port = bound
    log.info("Prometheus metrics at http://%s/metrics", describe_address(host or "0.0.0.0", bound))


def _peer_security(config, client_listeners, controller_listen, voters):
    """The inter-broker and controller links (kwire.security.peers); StartupError naming the key."""
    from kwire.security.peers import PeerConfigError, plan_peers  # noqa: PLC0415 - start-up time: Broker build (module doc)

    quorum = bool(voters and len(voters) > 1)
    own = (controller_listen or voters.get(config.node_id)) if quorum else None
    try:
        return plan_peers(config, client_listeners, own, alone=not quorum)
    except PeerConfigError as exc:
        raise StartupError(str(exc)) from None


async def _run(config, host, port, advertised, task_status, signals, on_ready, controller_listen, voters,
               raft_config, metrics_at, client_listeners) -> None:
    handle_signals = signals is not None
    _raise_open_file_limit()
    # The client port is bound first (so port 0 resolves before the broker registers its
    # advertised address, and a port in use stops the start at once) but listens only once
    # the broker can serve: until then a connect is refused.
    controller_listeners = None
    securities = [for_listener(config, cl) for cl in client_listeners]   # bad TLS/SASL settings stop here
    peer_security = _peer_security(config, client_listeners, controller_listen, voters)
    client_socks = await bind(host, port, what="client listener")
    more_socks: list = []
    try:
        for cl in client_listeners[1:]:
            more_socks.append(await bind(cl.endpoint.bind_host, cl.endpoint.port,
                                         what=f"client listener {cl.name}"))
        if voters and len(voters) > 1:
            if config.node_id in voters or controller_listen:
                chost, cport = controller_listen or voters[config.node_id]
                controller_listeners = listen(await bind(chost, cport, what="controller listener"),
                                              what="controller listener")
            # else: a broker that is not a voter (process.roles=broker): an observer that follows the
            # metadata log by fetching from the voters, and needs no controller listener
        bound_port = client_socks[0].getsockname()[1]
        adv_host, adv_port = advertised or (host if host not in ("0.0.0.0", "::", "", None) else "127.0.0.1",
                                            bound_port)
        if adv_port == 0:
            adv_port = bound_port
        broker = Broker(config, advertised_host=adv_host, advertised_port=adv_port,
                        voters=dict(voters) if voters and len(voters) > 1 else None, peer_security=peer_security)
        broker.listener_endpoints = [(client_listeners[0].name, adv_host, adv_port,
                                      PROTOCOL_IDS[client_listeners[0].protocol])]
        for cl, socks in zip(client_listeners[1:], more_socks):
            bound = socks[0].getsockname()[1]
            ah, ap = cl.advertised or (cl.endpoint.host if cl.endpoint.host not in ("0.0.0.0", "::", "")
                                       else "127.0.0.1", bound)
            broker.listener_endpoints.append((cl.name, ah, ap or bound, PROTOCOL_IDS[cl.protocol]))
    except BaseException:
        for s in client_socks + [x for socks in more_socks for x in socks]:
            s.close()
        for lst in controller_listeners or ():
            lst.socket.close()
        raise
    stop = trio.Event()
    started = False
    try:
        async with trio.open_nursery() as nursery:
            if handle_signals:
                async def watch_signals():
                    async for sig in signals:
                        log.info("received %s: shutting down", signal.Signals(sig).name)
                        stop.set()
                        if not started:    # still starting (waiting for the quorum): nothing to hand over
                            nursery.cancel_scope.cancel()
                        return
                nursery.start_soon(watch_signals)
            try:
                await broker.open(nursery, controller_listeners, raft_config)
                backlog = config.get("socket.listen.backlog.size") if config.is_static("socket.listen.backlog.size") \
                    else None   # unset: the system's maximum, as Trio chooses
                listeners = listen(client_socks, backlog, what="client listener")
                more = [(listen(socks, backlog, what=f"client listener {cl.name}"), sec)
                        for cl, socks, sec in zip(client_listeners[1:], more_socks, securities[1:])]
            except BaseException:
                for s in client_socks + [x for socks in more_socks for x in socks]:
                    s.close()
                raise
            server = KafkaServer(broker)
            unreachable = link_faults.from_config(config, broker.node_id)
            if unreachable is not None:   # tests: replica fetches from "unreachable" nodes are dropped
                server.fault_hook = unreachable.server_hook
            await server.start_background(nursery)
            if metrics_at is not None:
                await _start_metrics(nursery, metrics_at, broker, server)
            nursery.start_soon(functools.partial(server.accept, listeners, nursery, security=securities[0],
                                                 more=more))
            for name, h, p, _ in broker.listener_endpoints[1:]:
                log.info("kwire broker %d: listener %s advertised as %s", broker.node_id, name, describe_address(h, p))
            log.info("kwire broker %d ready: serving clients on %s (advertised %s), data in %s",
                     broker.node_id, describe_address(host or "", bound_port)
                     if host else f"every interface, port {bound_port}",
                     describe_address(adv_host, adv_port), broker.data_dir)
            if on_ready is not None:
                on_ready(broker, server, bound_port)
            started = True

            async def watch_log_dirs():   # every log dir failed: shut down (Kafka halts)
                await broker.stop_requested.wait()
                stop.set()
                if not handle_signals:
                    await server.drain()
                    nursery.cancel_scope.cancel()
            nursery.start_soon(watch_log_dirs)
            task_status.started((broker, server, bound_port))
            if handle_signals:
                await stop.wait()
                if broker.quorum is not None and broker.config.get("controlled.shutdown.enable"):
                    # hand leadership over first (bounded: the controller fences us after the session anyway)
                    await broker.quorum.controlled_shutdown(broker.quorum.session_timeout_ms / 1000)
                await server.drain()  # stop accepting; let in-flight requests finish
                if broker.quorum is not None and broker.quorum.driver.is_leader and len(broker.voters) > 1:
                    broker.quorum.driver.resign()     # EndQuorumEpoch: a quick hand-over
                    await trio.sleep(0.1)
                nursery.cancel_scope.cancel()
    finally:
        broker.close()
        log.info("kwire broker %d stopped; log checkpoints written", broker.node_id)
    if broker.stop_requested.is_set():
        raise LogDirsFailed(f"broker {broker.node_id} shut down: every log dir has failed "
                            f"({', '.join(sorted(broker.directory_ids))}); see the log for the I/O errors")

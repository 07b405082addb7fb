"""``kwire serve``: flags and server.properties -> a checked plan -> a running broker.

Order of precedence, lowest first: the config table's defaults, ``--config`` (a Kafka
server.properties), ``--override KEY=VALUE``, then the dedicated flags. Everything is checked
before the broker starts, and each mistake ends the start with one line naming it:

- a value the config table refuses (Kafka's wording), a key that is a near miss of a known
  one (``num.partiton``: "did you mean num.partitions?"), a listener or voter Kafka would not
  accept: usage errors, exit code 2; a key kwire does not know at all is warned about the way
  Kafka does ("supplied but isn't a known config"), since plug-ins bring their own keys;
- a port in use, a data dir that is a file or cannot be written: runtime errors, exit code 1.
"""
from __future__ import annotations

import argparse
import atexit
import errno
import gc
import logging
import os
import sys
import threading
from dataclasses import dataclass, field

from kwire.cmdline import RuntimeFailure, UsageError, suggest
from kwire.listeners import (DEFAULT_PROTOCOL_MAP, PROTOCOL_IDS, ClientListener, Endpoint, ListenerError,
                             parse_endpoint, parse_listeners, parse_protocol_map, parse_voters)

log = logging.getLogger("kwire")

DEFAULT_METRICS = "127.0.0.1:9464"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

SERVE_EPILOG = """\
examples:
  kwire serve                                   Kafka on 127.0.0.1:9092, data in ./kwire-data
  kwire serve --listen 9092 --data-dir /var/lib/kwire     every interface, port 9092
  kwire serve --config config/server.properties           a stock Kafka (KRaft) server.properties
  kwire serve --override num.partitions=3 --override auto.create.topics.enable=false

  three nodes: V=1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293
  kwire serve --node-id 1 --listen 127.0.0.1:9092 --controller-quorum-voters $V --data-dir d1
  (node 2: --listen 127.0.0.1:9192 --data-dir d2, node 3 likewise)

Readiness: the client port accepts connections only once the broker can serve
(`until nc -z 127.0.0.1 9092; do sleep 0.1; done`). Metrics: Prometheus text at
http://127.0.0.1:9464/metrics (--override metrics.listen=HOST:PORT to move it, empty: off).
Exit codes: 0 after a clean shutdown (SIGINT/SIGTERM), 1 when the broker cannot start or
fails (a port in use, an unwritable data dir), 2 for a usage error."""


def add_serve_parser(sub) -> None:
    s = sub.add_parser(
        "serve", help="run a broker (see 'kwire serve --help')",
        description="Run a Kafka broker (broker and KRaft controller in one process). Config keys are\n"
                    "Kafka's own names (server.properties syntax); docs/config.md lists which are honoured.",
        epilog=SERVE_EPILOG, formatter_class=_raw_formatter())
    s.add_argument("--listen", default=None, metavar="[NAME://][HOST:]PORT",
                   help="the client listener (sets Kafka's listeners), e.g. 127.0.0.1:9092, PLAINTEXT://:9092 "
                        "(empty host: every interface), [::1]:9092 or a bare 9092 (every interface); "
                        "default 127.0.0.1:9092")
    s.add_argument("--advertised-listener", default=None, metavar="[NAME://]HOST:PORT",
                   help="the address clients are told to connect to (Kafka's advertised.listeners); "
                        "default: the listener's own address")
    s.add_argument("--data-dir", default=None, metavar="DIR",
                   help="where partitions, metadata and offsets are stored (Kafka's log.dirs: "
                        "DIR[,DIR...], partitions spread over them, metadata in the first); "
                        "default ./kwire-data")
    s.add_argument("--config", default=None, metavar="FILE",
                   help="a Kafka server.properties file (Java properties syntax, Kafka's key names)")
    s.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="set a config key, after --config (repeatable), e.g. --override num.partitions=3")
    s.add_argument("--node-id", default=None, metavar="ID",
                   help="this node's id (Kafka's node.id, an integer >= 0); default 1; a cluster's "
                        "nodes need distinct ids")
    s.add_argument("--controller-listen", default=None, metavar="[HOST:]PORT",
                   help="this node's controller (KRaft) listener; default: its own entry in "
                        "--controller-quorum-voters")
    s.add_argument("--controller-quorum-voters", default=None, metavar="ID@HOST:PORT,...",
                   help="the KRaft voters (Kafka's controller.quorum.voters), e.g. "
                        "1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293; default: this node alone")
    s.add_argument("--log-level", default="INFO", metavar="LEVEL",
                   help=f"one of {', '.join(LOG_LEVELS)} (case insensitive); DEBUG logs one line per "
                        f"request; default INFO")


def _raw_formatter():
    return argparse.RawDescriptionHelpFormatter


def log_level(text: str) -> int:
    level = text.strip().upper()
    if level == "WARN":
        level = "WARNING"
    if level not in LOG_LEVELS:
        near = suggest(level, LOG_LEVELS, 0.6)
        raise UsageError(f"kwire serve: --log-level {text!r} is not a log level; use one of "
                         f"{', '.join(LOG_LEVELS)}" + (f" (did you mean {near}?)" if near else ""))
    return getattr(logging, level)


# ---------------------------------------------------------------------------- config
def config_from_args(args):
    """The broker config of ``kwire serve``: server.properties (Java properties syntax), then
    --override, then the flags; every key given here is a static broker config, as in Kafka.
    UsageError (one line) for a missing file, a malformed override or a refused value."""
    from kwire.config import BrokerConfig  # noqa: PLC0415 - start-up time: not for --help (kwire.cli)
    from kwire.configdef import ConfigError  # noqa: PLC0415 - start-up time: not for --help (kwire.cli)

    text = ""
    if args.config:
        try:
            with open(args.config, encoding="latin-1") as f:   # java.util.Properties reads ISO 8859-1
                text = f.read()
        except OSError as exc:
            raise UsageError(f"kwire serve: --config {args.config}: {exc.strerror or exc}") from None
    overrides = {}
    for item in args.override:
        k, eq, v = item.partition("=")
        if not eq or not k.strip():
            raise UsageError(f"kwire serve: --override needs KEY=VALUE, got {item!r} "
                             f"(e.g. --override num.partitions=3)")
        overrides[k.strip()] = v.strip()
    where = {k: "set by --override" for k in overrides}
    try:
        cfg = BrokerConfig.from_properties(text, overrides)
        for flag, key, value in (("--data-dir", "log.dirs", args.data_dir),
                                 ("--node-id", "node.id", args.node_id),
                                 ("--controller-quorum-voters", "controller.quorum.voters",
                                  args.controller_quorum_voters)):
            if value is not None:
                where[key] = f"set by {flag}"
                cfg.set(key, value)
    except ConfigError as exc:
        source = where.get(exc.name) or (f"in {args.config}" if args.config else "")
        raise UsageError(f"kwire serve: {exc}" + (f" ({source})" if source else "")) from None
    _check_keys(cfg, where, args.config)
    try:
        _apply_listen_flags(cfg, args, where.get("listeners") or (f"in {args.config}" if args.config else ""))
    except ListenerError as exc:
        raise UsageError(f"kwire serve: {exc}") from None
    if cfg.is_static("metrics.listen") and cfg.get("metrics.listen"):   # a malformed address is a usage error
        try:
            parse_endpoint(cfg.get("metrics.listen"), what="metrics.listen")
        except ListenerError as exc:
            source = where.get("metrics.listen") or (f"in {args.config}" if args.config else "")
            raise UsageError(f"kwire serve: {exc}" + (f" ({source})" if source else "")) from None
    return cfg


def _check_keys(cfg, where: dict, config_file: str | None) -> None:
    """A near miss of a known key is a typo: refused with the key it resembles. Other keys
    kwire does not know are warned about, as Kafka's AbstractConfig.logUnused does."""
    from kwire.config_keys import BROKER, near_miss  # noqa: PLC0415 - start-up time: not for --help (kwire.cli)

    for key in cfg.values:
        if key in BROKER or key.startswith("listener.name."):   # Kafka's per-listener overrides
            continue
        source = where.get(key) or (f"in {config_file}" if config_file else "")
        near = near_miss(key)
        if near is not None:
            raise UsageError(f"kwire serve: unknown config key {key!r}" + (f" ({source})" if source else "")
                             + f"; did you mean {near}?")
        log.warning("The configuration '%s' was supplied but isn't a known config.", key)


def _apply_listen_flags(cfg, args, listeners_source: str = "") -> None:
    """--listen replaces the client listener and keeps the config's controller listeners;
    --advertised-listener sets the client listener's advertised address.

    A listener's name is its identity (and, through listener.security.protocol.map, its
    security protocol): --listen moves the listener of its own name. When ``listeners`` was
    given (server.properties or --override) and has client listeners but none of that name,
    the flag and the key disagree on what is served (``--listen 127.0.0.1:9092`` is a
    PLAINTEXT listener, ``listeners=SASL_PLAINTEXT://...`` asks for SASL): refused, as the
    other pairs that cannot both hold are (--controller-listen vs controller.quorum.voters),
    never resolved by serving one of them silently."""
    controller_names = {n.upper() for n in (cfg.get("controller.listener.names") or [])}
    if args.listen is not None:
        new = parse_endpoint(args.listen, what="--listen")
        current = parse_listeners(cfg.get("listeners") or [])
        clients = [e for e in current if e.name not in controller_names]
        if cfg.is_static("listeners") and clients and not any(e.name == new.name for e in clients):
            given = ",".join(str(e) for e in clients)
            shown = args.listen if "://" in args.listen else f"{args.listen} (a {new.name} listener)"
            raise ListenerError(
                f"--listen {shown} and listeners={given}" + (f" ({listeners_source})" if listeners_source else "")
                + f" name different listeners; write --listen {clients[0].name}://{new.address} to move "
                f"{clients[0].name}, or give only one of them")
        # replaced: the client listener of the same name, else the first; the others are kept
        replaced = next((e for e in clients if e.name == new.name), clients[0] if clients else None)
        kept = [e for e in current if e is not replaced and e.name != new.name]
        cfg.set("listeners", ",".join(str(e) for e in [new, *kept]))
    if args.advertised_listener is not None:
        adv = parse_endpoint(args.advertised_listener, what="--advertised-listener")
        if not adv.host or adv.host in ("0.0.0.0", "::"):
            raise ListenerError(f"--advertised-listener {args.advertised_listener!r} needs a host clients "
                                f"can reach, e.g. localhost:{adv.port}")
        client = plan_endpoints(cfg)[0]
        others = [e for e in parse_listeners(cfg.get("advertised.listeners") or [], key="advertised.listeners")
                  if e.name != client.name]
        cfg.set("advertised.listeners", ",".join(str(e) for e in [Endpoint(client.name, adv.host, adv.port), *others]))


# ---------------------------------------------------------------------------- plan
@dataclass
class ServePlan:
    client: Endpoint                       # the client listener (host "" = every interface)
    advertised: tuple[str, int] | None     # None: the listener's address (127.0.0.1 for every interface)
    controller: tuple[str, int] | None     # this node's controller listener, if named
    voters: dict[int, tuple[str, int]] | None
    notes: list[str] = field(default_factory=list)   # warnings to log once logging is set up
    clients: list[ClientListener] = field(default_factory=list)   # every client listener; [0] is `client`


def plan_endpoints(cfg) -> tuple[Endpoint, Endpoint | None]:
    """(first client listener, controller listener or None) from ``listeners``, as Kafka splits
    them by ``controller.listener.names``; ListenerError when kwire cannot serve them."""
    clients, controller = plan_listeners(cfg)
    return clients[0].endpoint, controller


SERVED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def plan_listeners(cfg) -> tuple[list[ClientListener], Endpoint | None]:
    """(client listeners with their security protocols, controller listener or None)."""
    listeners = parse_listeners(cfg.get("listeners") or [])
    controller_names = [n.upper() for n in (cfg.get("controller.listener.names") or [])]
    proto_map = dict(DEFAULT_PROTOCOL_MAP)
    proto_map.update(parse_protocol_map(cfg.get("listener.security.protocol.map") or ""))
    clients = [e for e in listeners if e.name not in controller_names]
    controllers = [e for e in listeners if e.name in controller_names]
    if not clients:
        raise ListenerError("listeners has no client listener (only the controller's: "
                            + ", ".join(map(str, controllers)) + "); add one, e.g. PLAINTEXT://:9092")
    ports = [e.port for e in listeners if e.port]
    dup = sorted({p for p in ports if ports.count(p) > 1})
    if dup:
        raise ListenerError(f"listeners: port {dup[0]} is used by more than one listener "
                            f"(each listener needs its own port)")
    out: list[ClientListener] = []
    for client in clients:
        proto = proto_map.get(client.name)
        if proto is None:
            raise ListenerError(f"listener {client}: no security protocol for the name {client.name} in "
                                f"listener.security.protocol.map (add {client.name}:PLAINTEXT)")
        if proto not in PROTOCOL_IDS:
            raise ListenerError(f"listener {client}: {proto} is not a security protocol (write PLAINTEXT, SSL, "
                                f"SASL_PLAINTEXT or SASL_SSL)")
        if proto not in SERVED_PROTOCOLS:
            raise ListenerError(f"listener {client} uses {proto}; kwire serves "
                                + ", ".join(SERVED_PROTOCOLS) + " listeners")
        out.append(ClientListener(client, proto))
    return out, (controllers[0] if controllers else None)


def plan_from_config(cfg, controller_listen: str | None = None) -> ServePlan:
    """Where to listen, what to advertise, who the voters are; ListenerError (one line) when
    the config names something kwire cannot do."""
    planned, controller_ep = plan_listeners(cfg)
    notes: list[str] = []
    adv_list = parse_listeners(cfg.get("advertised.listeners") or [], key="advertised.listeners")
    clients: list[ClientListener] = []
    for cl in planned:
        client = cl.endpoint
        advertised = None
        mine = [e for e in adv_list if e.name == client.name]
        if mine:
            if not mine[0].host:
                raise ListenerError(f"advertised.listeners entry {mine[0]} has no host; clients need one "
                                    f"they can reach, e.g. {client.name}://localhost:{mine[0].port}")
            if mine[0].host in ("0.0.0.0", "::"):
                raise ListenerError(f"advertised.listeners entry {mine[0]} uses the non-routable meta-address "
                                    f"{mine[0].host}; advertise an address clients can reach")
            advertised = (mine[0].host, mine[0].port)
        elif not client.host or client.host in ("0.0.0.0", "::"):
            notes.append(f"listener {client} binds every interface and advertised.listeners has no entry for "
                         f"it: clients are told 127.0.0.1:{client.port}, which only this machine reaches; set "
                         f"advertised.listeners={client.name}://HOST:{client.port} for others")
        clients.append(ClientListener(client, cl.protocol, advertised))
    client, advertised = clients[0].endpoint, clients[0].advertised
    controller = None
    if controller_listen:
        ep = parse_endpoint(controller_listen, what="--controller-listen")
        controller = (ep.host, ep.port)
    elif controller_ep is not None:
        controller = (controller_ep.host, controller_ep.port)
    node_id = cfg.node_id
    roles = set(cfg.get("process.roles") or [])
    if "broker" not in roles:
        raise ListenerError("process.roles=controller: kwire nodes are always brokers "
                            "(use broker,controller, or broker for a node that is not a voter)")
    voters = parse_voters(cfg.get("controller.quorum.voters") or [])
    if not voters:
        boot = [b for b in (cfg.get("controller.quorum.bootstrap.servers") or []) if b.strip()]
        if len(boot) > 1:
            raise ListenerError("controller.quorum.bootstrap.servers names several controllers; kwire "
                                "needs the static voter set: set controller.quorum.voters=ID@HOST:PORT,...")
        voters = None          # a quorum of one (Kafka's `kafka-storage format --standalone`)
    else:
        if roles == {"broker"} and node_id in voters:
            raise ListenerError(f"process.roles=broker, but node {node_id} is one of controller.quorum.voters; "
                                f"a voter's process.roles is broker,controller")
        if cfg.is_static("process.roles") and "controller" in roles and node_id not in voters and len(voters) > 1:
            raise ListenerError(f"node.id {node_id} is not among controller.quorum.voters "
                                f"({', '.join(map(str, sorted(voters)))}); give each voter its own node id, "
                                f"or set process.roles=broker for a node that only follows the quorum")
        if len(voters) == 1:
            if node_id not in voters:
                raise ListenerError(f"controller.quorum.voters names only node {next(iter(voters))}; kwire's "
                                    f"one-voter quorum is the node itself (node.id {node_id})")
            voters = None
        elif controller is not None and node_id in voters and controller[1] != voters[node_id][1]:
            raise ListenerError(f"the controller listener port {controller[1]} is not node {node_id}'s port "
                                f"in controller.quorum.voters ({voters[node_id][1]})")
    names = [n.strip().upper() for n in (cfg.get("controller.listener.names") or []) if n.strip()]
    if voters and names:     # Kafka's KRaft checks of controller.listener.names
        if node_id in voters and controller_ep is None and not controller_listen:
            raise ListenerError(f"controller.listener.names={','.join(names)} must name one of the listeners on "
                                f"a controller (node {node_id} is a voter): add {names[0]}://HOST:PORT to listeners")
        if node_id not in voters and controller_ep is not None:
            raise ListenerError(f"controller.listener.names must not name one of the listeners ({controller_ep}) "
                                f"on a node that only brokers (process.roles=broker)")
    if voters is None and controller_ep is not None:
        notes.append(f"controller listener {controller_ep} not opened: this node is a quorum of one")
        controller = None
    return ServePlan(client, advertised, controller, voters, notes, clients)


def check_peers(cfg, plan: ServePlan) -> None:
    """inter.broker.listener.name / security.inter.broker.protocol, controller.listener.names
    and the settings of the links between nodes (TLS files, SASL mechanism and credentials),
    as kwire.security.peers will use them; ListenerError (one line) when they do not hold."""
    from kwire.security.peers import PeerConfigError, plan_peers  # noqa: PLC0415 - start-up time: not for --help (kwire.cli)

    quorum = bool(plan.voters) and len(plan.voters) > 1
    own = (plan.controller or plan.voters.get(cfg.node_id)) if quorum else None
    try:
        plan_peers(cfg, plan.clients, own, alone=not quorum)
    except PeerConfigError as exc:
        raise ListenerError(str(exc)) from None


# ---------------------------------------------------------------------------- data dir
def check_data_dir(path: str) -> None:
    """The data dir exists (created if need be) and can be written; RuntimeFailure naming it."""
    shown = path if os.path.isabs(path) else f"{path} ({os.path.abspath(path)})"
    if os.path.exists(path) and not os.path.isdir(path):
        raise RuntimeFailure(f"kwire: data dir {shown} is a file, not a directory; choose another --data-dir")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise RuntimeFailure(f"kwire: cannot create data dir {shown}: {_why(exc)}") from None
    probe = os.path.join(path, f".kwire-write-check-{os.getpid()}")
    try:
        with open(probe, "wb") as f:
            f.write(b"x")
        os.unlink(probe)
    except OSError as exc:
        raise RuntimeFailure(f"kwire: data dir {shown} cannot be written: {_why(exc)}") from None


def _why(exc: OSError) -> str:
    if exc.errno == errno.EROFS:
        return "read-only file system (choose a --data-dir on a writable disk)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied (choose a --data-dir this user may write)"
    if exc.errno == errno.ENOTDIR:
        return "a part of the path is a file, not a directory"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return exc.strerror or str(exc)


# ---------------------------------------------------------------------------- run
class _GcOffUntilReady:
    """Start-up time: the cyclic garbage collector is off while ``kwire serve`` starts.
    Importing and building the broker makes ~55k long-lived objects (modules, classes, the
    broker) and little cyclic garbage (~2k objects), so the ~60-75 collections that would run
    meanwhile (the older generations walking everything made so far) find almost nothing, at
    ~3-4% of the start's instructions. At ready (before the first request is read) the
    survivors are frozen (gc.freeze: they live as long as the process, and no later
    collection walks them again; the start's few garbage cycles stay) and the collector is
    back on; a start that fails turns it back on as it was."""

    def __init__(self):
        self.was_on = gc.isenabled()
        gc.disable()

    def ready(self, *_) -> None:
        if self.was_on and not gc.isenabled():
            gc.freeze()
            gc.enable()

    def restore(self) -> None:
        if self.was_on:
            gc.enable()


def exit_without_teardown(rc: int) -> None:
    """End the process now, after the broker stopped cleanly: atexit handlers and logging
    flush as usual, then ``os._exit`` skips the interpreter's teardown of every object,
    0.3-1.2 s after a shutdown with 5,000 partitions on a loaded 2-core machine (issue 32;
    a JVM's exit frees no heap either). Everything durable is on disk already: the logs,
    checkpoints and marker (LogManager.close), and the metadata log, fsynced as it is
    written and closed when its driver stops (kwire.raft.driver). Returns (a normal exit follows)
    while another non-daemon thread runs, which Python would wait for."""
    main = threading.main_thread()
    if any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate()):
        return
    run_exitfuncs = getattr(atexit, "_run_exitfuncs", None)
    if run_exitfuncs is None:   # not CPython: exit the usual way
        return
    run_exitfuncs()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(rc)


def run_serve(args) -> int:
    gc_off = _GcOffUntilReady()
    try:
        return _run_serve(args, gc_off)
    finally:
        gc_off.restore()


def _run_serve(args, gc_off: _GcOffUntilReady) -> int:
    level = log_level(args.log_level)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = config_from_args(args)
    try:
        plan = plan_from_config(cfg, args.controller_listen)
    except ListenerError as exc:
        raise UsageError(f"kwire serve: {exc}") from None
    for note in plan.notes:
        log.warning("%s", note)
    if any(c.protocol != "PLAINTEXT" for c in plan.clients):
        from kwire.errors import StartupError, StartupFileError  # noqa: PLC0415 - start-up time: TLS/SASL listeners only
        from kwire.security.edge import for_listener  # noqa: PLC0415 - start-up time: TLS/SASL listeners only
        try:   # TLS keystores and SASL users: a bad setting is a usage error, said before anything starts
            for c in plan.clients:
                for_listener(cfg, c)
        except StartupFileError as exc:   # a keystore that cannot be read or decrypted: runtime
            raise RuntimeFailure(f"kwire: {exc}") from None
        except StartupError as exc:
            raise UsageError(f"kwire serve: {exc}") from None
    try:
        check_peers(cfg, plan)
    except ListenerError as exc:
        raise UsageError(f"kwire serve: {exc}") from None
    for log_dir in cfg.log_dirs:   # each of log.dirs (JBOD); the first also holds the metadata log
        check_data_dir(log_dir)

    import trio  # noqa: PLC0415 - not needed for --help and usage errors

    from kwire.app import run_broker  # noqa: PLC0415 - start-up time: after the checks
    from kwire.errors import StartupError  # noqa: PLC0415 - start-up time: after the checks

    try:
        trio.run(lambda: run_broker(cfg, host=plan.client.host, port=plan.client.port, advertised=plan.advertised,
                                    listeners=plan.clients, on_ready=gc_off.ready,
                                    handle_signals=True, controller_listen=plan.controller, voters=plan.voters,
                                    metrics_default=DEFAULT_METRICS))
    except KeyboardInterrupt:
        return 0
    except BaseException as exc:  # noqa: BLE001 - turned into one line below
        leaves = _leaves(exc)
        if all(isinstance(e, KeyboardInterrupt) for e in leaves):
            return 0
        for e in leaves:
            if isinstance(e, StartupError):
                raise RuntimeFailure(f"kwire: {e}") from None
        for e in leaves:
            if isinstance(e, OSError) and e.errno is not None:
                target = f" ({e.filename})" if e.filename else ""
                raise RuntimeFailure(f"kwire: {_why(e)}{target}") from None
        raise
    return 0


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out = []
        for e in exc.exceptions:
            out.extend(_leaves(e))
        return out
    return [exc]

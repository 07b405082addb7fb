"""``KafkaContainer`` with the shape of testcontainers' ``testcontainers.kafka.KafkaContainer``,
backed by a kwire broker instead of a Docker container, so a suite switches with one import::

    # from testcontainers.kafka import KafkaContainer
    from kwire.testing import KafkaContainer

    with KafkaContainer() as kafka:
        producer = Producer({"bootstrap.servers": kafka.get_bootstrap_server()})

What users touch is there: ``get_bootstrap_server``, ``with_env`` (``KAFKA_*`` mapped the way
the Confluent image maps them: prefix off, ``_`` to ``.``, lower case; ``CLUSTER_ID`` and
``with_cluster_id`` honoured), ``exec`` (kafka-topics, kafka-consumer-groups, kafka-configs,
kafka-metadata-quorum, kafka-cluster, kafka-acls mapped to kwire's admin commands; the console
producer and consumer to kwire's wire client; ``bash -c`` / ``sh -c`` and ``echo ... |``
understood), ``get_logs`` (the broker's log, with the Kafka image's "started" line, so
testcontainers' ``wait_for_logs`` works), ``get_wrapped_container`` / ``reload`` / ``status``
/ ``wait`` shims for wait strategies. The image, ports and Docker knobs are accepted and
ignored (``with_kraft()``, ``with_name()``, ``with_bind_ports()`` ...); listener and controller
settings are kwire's own business.

In thread mode (the default) ``get_logs`` holds the broker's records at the ``kwire`` logger's
level (WARNING unless the test configured logging) plus the lifecycle lines; ``mode="process"``
captures the broker's whole INFO log.
"""
from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import shlex
import tempfile
import threading
import time
from typing import Any

from kwire.testing.broker import Broker

__all__ = ["KafkaContainer", "ExecResult"]

# Settings the Confluent image needs that mean nothing (or something harmful) to kwire.
_IGNORED_KEYS = {"listeners", "advertised.listeners", "log.dirs", "listener.security.protocol.map",
                 "inter.broker.listener.name", "process.roles", "controller.quorum.voters",
                 "controller.listener.names", "zookeeper.connect", "broker.id", "node.id",
                 "controller.quorum.bootstrap.servers"}
# testcontainers' image is tuned for tests in the same way.
TEST_DEFAULTS = {"group.initial.rebalance.delay.ms": 0}
_TOOLS = {"kafka-topics": ["topics"], "kafka-consumer-groups": ["groups"], "kafka-configs": ["configs"],
          "kafka-acls": ["acls"], "kafka-metadata-quorum": ["cluster", "quorum"], "kafka-cluster": ["cluster", "id"]}
_LOG_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"

ExecResult = collections.namedtuple("ExecResult", "exit_code output")   # docker's exec_run result shape


class _Status(str):
    """The container's state: compares as a string (testcontainers' ``status`` property) and
    can be called (the older ``status()`` method)."""

    def __call__(self) -> str:
        return str(self)


class _ThreadLog(logging.Handler):
    """The records of one in-process broker (its thread), formatted as the Kafka image logs."""

    def __init__(self, thread_name: str):
        super().__init__()
        self.thread_name = thread_name
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter(_LOG_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        if record.threadName == self.thread_name:
            self.lines.append(self.format(record))


class _Wrapped:
    """What ``get_wrapped_container()`` returns: the bits of docker's Container that
    testcontainers' wait strategies and users read."""

    def __init__(self, outer: "KafkaContainer"):
        self._outer = outer

    @property
    def id(self) -> str:
        return self._outer.get_container_id()

    name = id

    @property
    def status(self) -> str:
        return str(self._outer.status)

    @property
    def attrs(self) -> dict:
        running = self.status == "running"
        return {"Id": self.id, "State": {"Status": self.status, "Running": running, "ExitCode": 0, "Error": "",
                                         "Health": {"Status": "healthy" if running else "unhealthy"}}}

    def reload(self) -> None:
        pass

    def logs(self, stdout: bool = True, stderr: bool = True, **_: Any) -> bytes:
        out, err = self._outer.get_logs()
        return (out if stdout else b"") + (err if stderr else b"")

    def exec_run(self, cmd, **_: Any) -> ExecResult:
        return self._outer.exec(cmd)


class _DockerShim:
    """``get_docker_client()``: where the "container" is reached (this machine)."""

    def __init__(self, outer: "KafkaContainer"):
        self._outer = outer

    def host(self) -> str:
        return self._outer.get_container_host_ip()

    def port(self, container_id: str, port: int) -> int:
        return self._outer.get_exposed_port(port)

    def bridge_ip(self, container_id: str) -> str:
        return self._outer.get_container_host_ip()

    gateway_ip = bridge_ip


class KafkaContainer:
    """A kwire broker dressed as testcontainers' KafkaContainer."""

    def __init__(self, image: str = "kwire", port: int = 9093, *, mode: str = "thread",
                 storage: str = "memory", **kwargs: Any):
        self.image = image
        self.port = port  # the "container" port; the broker listens on a free host port
        self.env: dict[str, str] = {}
        self._mode = mode
        self._storage = storage
        self._broker: Broker | None = None
        self._kraft = True
        self._stdout: list[str] = []
        self._thread_log: _ThreadLog | None = None
        self._log_path: str | None = None
        self._stopped = threading.Event()

    # ------------------------------------------------------------------ builder (no-ops where harmless)
    def with_kraft(self) -> "KafkaContainer":
        self._kraft = True  # kwire has no ZooKeeper mode
        return self

    def with_cluster_id(self, cluster_id: str) -> "KafkaContainer":
        self.env["CLUSTER_ID"] = cluster_id
        return self

    def with_env(self, key: str, value: str) -> "KafkaContainer":
        self.env[key] = str(value)
        return self

    def with_envs(self, **variables: str) -> "KafkaContainer":
        for k, v in variables.items():
            self.with_env(k, v)
        return self

    def _noop(self, *args: Any, **kwargs: Any) -> "KafkaContainer":
        return self

    with_bind_ports = with_exposed_ports = with_name = with_command = with_volume_mapping = _noop
    with_network = with_network_aliases = with_kwargs = maybe_emulate_amd64 = with_tmpfs_mount = _noop
    with_env_file = waiting_for = with_label = with_labels = with_user = with_working_directory = _noop

    # ------------------------------------------------------------------ lifecycle
    def overrides(self) -> dict[str, Any]:
        """Kafka settings from the ``KAFKA_*`` environment, as the Confluent image maps them;
        ``CLUSTER_ID`` (with_cluster_id) is the cluster id a fresh data dir is formatted with."""
        out: dict[str, Any] = dict(TEST_DEFAULTS)
        for key, value in self.env.items():
            if key == "CLUSTER_ID":
                out["cluster.id"] = value
                continue
            if not key.startswith("KAFKA_"):
                continue
            name = key[len("KAFKA_"):].lower().replace("__", "-").replace("_", ".")
            if name not in _IGNORED_KEYS:
                out[name] = value
        return out

    def start(self) -> "KafkaContainer":
        if self._broker is None:
            self._broker = Broker(mode=self._mode, storage=self._storage, overrides=self.overrides(),
                                  log_level="INFO")
            if self._mode == "process":
                fd, self._log_path = tempfile.mkstemp(prefix="kwire-container-", suffix=".log")
                os.close(fd)
                self._broker.log_path = self._log_path
        if self._mode == "thread" and self._thread_log is None:
            self._thread_log = _ThreadLog(f"kwire-{self._broker.port}")
            logging.getLogger("kwire").addHandler(self._thread_log)
        self._stopped.clear()
        self._say(f"Starting kwire in place of {self.image} (KRaft, node 1)")
        self._broker.start()
        self._say(f"[KafkaServer id=1] started (kafka.server.KafkaServer); bootstrap {self.get_bootstrap_server()}")
        return self

    def _say(self, text: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self._stdout.append(f"[{stamp},000] INFO {text}")

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        if self._broker is not None:
            if delete_volume:
                self._broker.cleanup()
                self._broker = None
            else:
                self._broker.stop()
            self._say("[KafkaServer id=1] shut down completed (kafka.server.KafkaServer)")
        if self._thread_log is not None and self._broker is None:
            logging.getLogger("kwire").removeHandler(self._thread_log)
        if self._log_path is not None and self._broker is None:
            with contextlib.suppress(OSError):
                os.unlink(self._log_path)
            self._log_path = None
        self._stopped.set()

    def __enter__(self) -> "KafkaContainer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ accessors
    @property
    def broker(self) -> Broker:
        """The kwire :class:`Broker` underneath (faults, helpers, restart)."""
        if self._broker is None:
            raise RuntimeError("the container is not started")
        return self._broker

    def get_bootstrap_server(self) -> str:
        return self.broker.bootstrap_servers

    def get_container_host_ip(self) -> str:
        return self.broker.host

    def get_exposed_port(self, port: int | None = None) -> int:
        return self.broker.port

    def get_container_id(self) -> str:
        return f"kwire-{self.broker.port}" if self._broker is not None else "kwire-stopped"

    @property
    def status(self) -> _Status:
        return _Status("running" if self._broker is not None and self._broker.running else "exited")

    def get_wrapped_container(self) -> _Wrapped:
        if self._broker is None:
            raise RuntimeError("Container is not started")
        return _Wrapped(self)

    def get_docker_client(self) -> _DockerShim:
        return _DockerShim(self)

    def reload(self) -> None:
        pass

    def wait(self) -> int:
        """Until the container is stopped; its exit code (0)."""
        self._stopped.wait()
        return 0

    def get_logs(self) -> tuple[bytes, bytes]:
        """(stdout, stderr) as the Kafka image would give them: lifecycle lines on stdout, the
        broker's log on stderr."""
        out = "".join(line + "\n" for line in self._stdout).encode()
        err = b""
        if self._thread_log is not None:
            err = "".join(line + "\n" for line in self._thread_log.lines).encode()
        elif self._log_path is not None:
            with contextlib.suppress(OSError), open(self._log_path, "rb") as f:
                err = f.read()
        return out, err

    # ------------------------------------------------------------------ exec
    def exec(self, command) -> ExecResult:
        """Run a Kafka tool "inside the container": kafka-topics & co. map to kwire's admin
        commands against this broker (whatever --bootstrap-server says), the console producer
        and consumer to kwire's wire client. Output is stdout and stderr together, as docker's
        exec_run gives them."""
        if not isinstance(command, (str, list, tuple)):
            command = getattr(command, "command", command)      # testcontainers' ExecConfig
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        stdin = None
        if len(argv) >= 3 and os.path.basename(argv[0]) in ("bash", "sh") and argv[1] == "-c":
            script = argv[2]
            left, bar, right = script.partition("|")
            if bar and left.strip().split()[:1] in (["echo"], ["printf"]):
                stdin = _echo_output(shlex.split(left))
                script = right
            argv = shlex.split(script)
        if not argv:
            return ExecResult(126, b"exec: no command\n")
        tool = os.path.basename(argv[0])
        tool = tool[:-3] if tool.endswith(".sh") else tool
        rest = _with_bootstrap(argv[1:], self.get_bootstrap_server())
        if tool in _TOOLS:
            return _run_cli(_tools_args(tool, rest))
        if tool == "kafka-console-producer":
            return self._console_produce(rest, stdin or "")
        if tool == "kafka-console-consumer":
            return self._console_consume(rest)
        return ExecResult(127, f"exec: {argv[0]}: not found (kwire's container maps kafka-topics, "
                               f"kafka-consumer-groups, kafka-configs, kafka-metadata-quorum, kafka-cluster, "
                               f"kafka-acls, kafka-console-producer and kafka-console-consumer)\n".encode())

    def _console_produce(self, args: list[str], text: str) -> ExecResult:
        opts = _options(args)
        topic = opts.get("--topic")
        if not topic:
            return ExecResult(1, b"Missing required argument \"[topic]\"\n")
        props = _properties(args)
        key_sep = props.get("key.separator", "\t") if props.get("parse.key") == "true" else None
        records = []
        for line in text.splitlines():
            if key_sep is not None and key_sep in line:
                k, v = line.split(key_sep, 1)
                records.append((k, v))
            else:
                records.append(line)
        try:
            with self.broker.client() as c:
                c.create_topic(topic, exist_ok=True)
                parts = c.partitions(topic)
                for i, r in enumerate(records):
                    c.produce(topic, [r], parts[i % len(parts)])
        except Exception as exc:  # noqa: BLE001 - reported like the tool's own failure
            return ExecResult(1, f"ERROR {exc}\n".encode())
        return ExecResult(0, b"")

    def _console_consume(self, args: list[str]) -> ExecResult:
        opts = _options(args)
        topic = opts.get("--topic")
        if not topic:
            return ExecResult(1, b"Exactly one of --include/--topic is required.\n")
        n = int(opts.get("--max-messages", "0") or 0)
        timeout = int(opts.get("--timeout-ms", "10000")) / 1000
        props = _properties(args)
        print_key = props.get("print.key") == "true"
        sep = props.get("key.separator", "\t")
        offset = 0 if "--from-beginning" in args else None
        try:
            with self.broker.client(timeout) as c:
                if offset is None:    # without --from-beginning: only what arrives from now on
                    return ExecResult(0, b"Processed a total of 0 messages\n")
                recs = c.consume(topic, n or 1, None, offset=0, timeout=timeout)
        except TimeoutError:
            recs = []
        except Exception as exc:  # noqa: BLE001
            return ExecResult(1, f"ERROR {exc}\n".encode())
        lines = []
        for r in recs[: n or None]:
            value = (r.value or b"").decode(errors="replace")
            lines.append(f"{(r.key or b'').decode(errors='replace')}{sep}{value}" if print_key else value)
        lines.append(f"Processed a total of {len(lines)} messages")
        return ExecResult(0, ("\n".join(lines) + "\n").encode())


def _echo_output(argv: list[str]) -> str:
    if argv[0] == "echo":
        words = [a for a in argv[1:] if a not in ("-e", "-n")]
        text = " ".join(words)
        return text.encode().decode("unicode_escape") if "-e" in argv[1:] else text
    fmt, *params = argv[1:] or [""]
    try:
        return fmt.encode().decode("unicode_escape") % tuple(params) if params else \
            fmt.encode().decode("unicode_escape")
    except TypeError:
        return fmt


def _with_bootstrap(args: list[str], bootstrap: str) -> list[str]:
    """Point the tool at this broker: the container's own address (localhost:9092 ...) is
    meaningless outside Docker."""
    out, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a in ("--bootstrap-server", "--broker-list", "--bootstrap-controller"):
            out += ["--bootstrap-server", bootstrap]
            skip = i + 1 < len(args)
        elif a.startswith(("--bootstrap-server=", "--broker-list=")):
            out += ["--bootstrap-server", bootstrap]
        else:
            out.append(a)
    if "--bootstrap-server" not in out:
        out += ["--bootstrap-server", bootstrap]
    return out


def _tools_args(tool: str, rest: list[str]) -> list[str]:
    cmd = list(_TOOLS[tool])
    if tool == "kafka-metadata-quorum":
        rest = [a for a in rest if a not in ("describe", "--status")]
        if "--replication" in rest:
            pass
    if tool == "kafka-cluster":
        rest = [a for a in rest if a != "cluster-id"]
    return cmd + rest


def _options(args: list[str]) -> dict[str, str]:
    out = {}
    for i, a in enumerate(args):
        if a.startswith("--") and i + 1 < len(args) and not args[i + 1].startswith("--"):
            out[a] = args[i + 1]
    return out


def _properties(args: list[str]) -> dict[str, str]:
    out = {}
    for i, a in enumerate(args):
        if a == "--property" and i + 1 < len(args) and "=" in args[i + 1]:
            k, v = args[i + 1].split("=", 1)
            out[k] = v
    return out


def _run_cli(argv: list[str]) -> ExecResult:
    """kwire's CLI in this process, stdout and stderr captured together."""
    from kwire.cli import main  # noqa: PLC0415

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = main(argv)
        except SystemExit as exc:       # --help
            rc = exc.code if isinstance(exc.code, int) else 0
    return ExecResult(rc, buf.getvalue().encode())

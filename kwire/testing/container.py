"""``KafkaContainer`` with the shape of testcontainers' ``testcontainers.kafka.KafkaContainer``,
backed by a kwire broker instead of a Docker container, so a suite switches with one import::

    # from testcontainers.kafka import KafkaContainer
    from kwire.testing import KafkaContainer

    with KafkaContainer() as kafka:
        producer = Producer({"bootstrap.servers": kafka.get_bootstrap_server()})

testcontainers' KafkaContainer API is served as a process can serve it:

- ``with_env`` / ``with_envs`` / ``with_env_file``: ``KAFKA_*`` mapped the way the Confluent image
  maps them (prefix off, ``_`` to ``.``, lower case); ``CLUSTER_ID`` and ``with_cluster_id``
  honoured; a near miss of a known key (``KAFKA_NUM_PARTITONS``) is refused at ``start``, as
  ``kwire serve`` refuses it.
- ``start(timeout=30)``, ``stop``, the context manager; ``with_bind_ports(9093, 25777)`` makes the
  broker listen on host port 25777 (the Kafka port is the only port there is).
- ``exec``: Kafka's tools (kafka-topics, kafka-consumer-groups, kafka-configs, kafka-metadata-quorum,
  kafka-cluster, kafka-acls) mapped to kwire's admin commands, the console producer and consumer to
  kwire's wire client, inside ``sh -c`` / ``bash -c`` scripts with pipes, ``&&``, ``;`` and ``<`` /
  ``>`` redirections; other commands (``wc``, ``grep``, ``cat`` ...) run on this machine, with
  absolute paths taken inside the container's own file tree.
- The container's file tree: a private directory per container (removed at ``stop``), plus
  ``with_volume_mapping`` host directories; ``create_file``, ``copy_into_container``,
  ``with_copy_into_container`` and ``copy_from_container`` work on it.
- ``get_logs``: the Kafka image's lifecycle lines on stdout and the broker's own log at INFO on
  stderr (in thread mode, the broker thread's records; with ``mode="process"`` the subprocess's
  whole log); testcontainers' ``wait_for_logs`` and ``LogMessageWaitStrategy`` work.
- ``get_wrapped_container`` / ``get_container_info`` / ``reload`` / ``status`` / ``wait`` /
  ``get_docker_client`` answer what wait strategies and users read.

What cannot apply to a process (``with_command``, ``with_network``, ``with_tmpfs_mount``, other
ports' bindings ...) is accepted and says so in one log line (logger ``kwire.testing``).
"""
from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import pathlib
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any

from kwire.testing.broker import Broker

__all__ = ["KafkaContainer", "ExecResult"]

log = logging.getLogger("kwire.testing")

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
# Builder calls of testcontainers' DockerContainer that have no meaning for a process.
_NOT_FOR_A_PROCESS = ("with_command", "with_name", "with_network", "with_network_aliases", "with_kwargs",
                      "maybe_emulate_amd64", "with_tmpfs_mount", "waiting_for", "with_label", "with_labels",
                      "with_user", "with_working_directory", "with_exposed_ports")

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


class _Forward(logging.Handler):
    """While a container captures the broker's INFO log, the ``kwire`` logger stops
    propagating; this hands on to the handlers above it what they saw before (records at or
    above the level that was in effect), as Logger.callHandlers would."""

    def __init__(self, threshold: int):
        super().__init__()
        self.threshold = threshold

    def handle(self, record: logging.LogRecord) -> bool:
        if record.levelno < self.threshold:
            return False
        node, found = logging.getLogger("kwire").parent, 0
        while node is not None:
            for h in node.handlers:
                found += 1
                if record.levelno >= h.level:
                    h.handle(record)
            if not node.propagate:
                break
            node = node.parent
        if found == 0 and logging.lastResort is not None and record.levelno >= logging.lastResort.level:
            logging.lastResort.handle(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:  # handle() does the work
        pass


class _BrokerInfoLog:
    """The broker's INFO records for the containers' ``get_logs`` without changing what the
    test's own logging shows: the ``kwire`` logger is lowered to INFO while a container runs
    and ``_Forward`` passes on only what passed before. Counted: containers may overlap."""

    _lock = threading.Lock()
    _users = 0
    _saved: tuple[int, bool, _Forward] | None = None

    @classmethod
    def acquire(cls) -> None:
        with cls._lock:
            cls._users += 1
            lg = logging.getLogger("kwire")
            if cls._users > 1 or lg.getEffectiveLevel() <= logging.INFO:
                return
            fwd = _Forward(lg.getEffectiveLevel())
            cls._saved = (lg.level, lg.propagate, fwd)
            lg.addHandler(fwd)
            lg.setLevel(logging.INFO)
            lg.propagate = False

    @classmethod
    def release(cls) -> None:
        with cls._lock:
            cls._users -= 1
            if cls._users > 0 or cls._saved is None:
                return
            level, propagate, fwd = cls._saved
            lg = logging.getLogger("kwire")
            lg.removeHandler(fwd)
            lg.setLevel(level)
            lg.propagate = propagate
            cls._saved = None


class _Wrapped:
    """What ``get_wrapped_container()`` returns: the bits of docker's Container that
    testcontainers' wait strategies and users read."""

    def __init__(self, outer: "KafkaContainer"):
        self._outer = outer

    @property
    def id(self) -> str:
        return self._outer.get_container_id()

    name = id
    short_id = id

    @property
    def status(self) -> str:
        return str(self._outer.status)

    @property
    def attrs(self) -> dict:
        return self._outer._inspect()

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

    def get_container_inspect_info(self, container_id: str) -> Any:
        return self._outer.get_container_info()


def _port_number(port: str | int) -> int:
    return int(str(port).partition("/")[0])


class KafkaContainer:
    """A kwire broker dressed as testcontainers' KafkaContainer."""

    def __init__(self, image: str = "kwire", port: int = 9093, *, mode: str = "thread",
                 storage: str = "memory", **kwargs: Any):
        self.image = image
        self.port = port  # the "container" port; the broker listens on a free host port
        self.env: dict[str, str] = {}
        self.volumes: dict[str, dict[str, str]] = {}   # host path -> {"bind": container path, "mode": ...}
        self._mode = mode
        self._storage = storage
        self._host_port: int | None = None
        self._broker: Broker | None = None
        self._kraft = True
        self._stdout: list[str] = []
        self._thread_log: _ThreadLog | None = None
        self._log_path: str | None = None
        self._root: str | None = None               # the container's own file tree
        self._copies: list[tuple[Any, str, int]] = []
        self._created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self._stopped = threading.Event()
        for key in kwargs:
            self._not_for_a_process(f"KafkaContainer({key}=...)")

    # ------------------------------------------------------------------ builder
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

    def with_env_file(self, env_file: str | os.PathLike) -> "KafkaContainer":
        """KEY=VALUE lines (``#`` comments, ``export``, quotes), as docker's --env-file."""
        with open(env_file) as f:
            for raw in f:
                line = raw.strip()
                if not line or line.startswith("#") or "=" not in line:
                    continue
                key, _, value = line.removeprefix("export ").partition("=")
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]
                self.with_env(key.strip(), value)
        return self

    def with_bind_ports(self, container: str | int, host: str | int | None = None) -> "KafkaContainer":
        """The Kafka port bound to a chosen host port: the broker listens there."""
        if _port_number(container) != self.port:
            self._not_for_a_process(f"with_bind_ports({container!r}, {host!r}): the only port is the Kafka "
                                    f"port {self.port}")
        elif host is not None:
            self._host_port = _port_number(host)
        return self

    def with_volume_mapping(self, host: str | os.PathLike, container: str, mode: str = "ro") -> "KafkaContainer":
        """A host directory (or file) seen at ``container`` by exec and the copy methods."""
        self.volumes[str(host)] = {"bind": container, "mode": mode}
        return self

    def with_copy_into_container(self, transferable: Any, destination_in_container: str,
                                 mode: int = 0o644) -> "KafkaContainer":
        self._copies.append((transferable, destination_in_container, mode))
        return self

    def _not_for_a_process(self, what: str) -> "KafkaContainer":
        log.info("kwire KafkaContainer: %s does not apply to a broker process (ignored)", what)
        return self

    def __getattr__(self, name: str):
        if name in _NOT_FOR_A_PROCESS:
            return lambda *a, **kw: self._not_for_a_process(f"{name}()")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # ------------------------------------------------------------------ lifecycle
    def overrides(self) -> dict[str, Any]:
        """Kafka settings from the ``KAFKA_*`` environment, as the Confluent image maps them;
        ``CLUSTER_ID`` (with_cluster_id) is the cluster id a fresh data dir is formatted with.
        A near miss of a known key is refused (ValueError naming the variable)."""
        from kwire.config_keys import near_miss  # noqa: PLC0415 - start-up time: key tables at start()

        out: dict[str, Any] = dict(TEST_DEFAULTS)
        for key, value in self.env.items():
            if key == "CLUSTER_ID":
                out["cluster.id"] = value
                continue
            if not key.startswith("KAFKA_"):
                continue
            name = key[len("KAFKA_"):].lower().replace("__", "-").replace("_", ".")
            if name in _IGNORED_KEYS:
                continue
            if (near := near_miss(name)) is not None:
                raise ValueError(f"KafkaContainer: {key} sets unknown config key {name!r}; did you mean "
                                 f"KAFKA_{near.upper().replace('.', '_')} ({near})?")
            out[name] = value
        return out

    def start(self, timeout: int = 30) -> "KafkaContainer":
        """Start the broker and wait, at most ``timeout`` seconds, until it serves."""
        if self._broker is None:
            self._broker = Broker(mode=self._mode, storage=self._storage, overrides=self.overrides(),
                                  log_level="INFO", port=self._host_port)
            if self._mode == "process":
                fd, self._log_path = tempfile.mkstemp(prefix="kwire-container-", suffix=".log")
                os.close(fd)
                self._broker.log_path = self._log_path
        if self._mode == "thread" and self._thread_log is None:
            self._thread_log = _ThreadLog(f"kwire-{self._broker.port}")
            logging.getLogger("kwire").addHandler(self._thread_log)
            _BrokerInfoLog.acquire()
        for transferable, destination, mode in self._copies:
            self.copy_into_container(transferable, destination, mode)
        self._stopped.clear()
        self._say(f"Starting kwire in place of {self.image} (KRaft, node 1)")
        try:
            self._broker.start(timeout)
        except BaseException:
            self.stop()
            raise
        # the lines the Kafka image's wait strategies look for (ZooKeeper-era and KRaft)
        self._say("[KafkaServer id=1] started (kafka.server.KafkaServer)")
        self._say(f"[KafkaRaftServer nodeId=1] Kafka Server started (kafka.server.KafkaRaftServer); "
                  f"bootstrap {self.get_bootstrap_server()}")
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
            self._thread_log = None
            _BrokerInfoLog.release()
        if self._log_path is not None and self._broker is None:
            with contextlib.suppress(OSError):
                os.unlink(self._log_path)
            self._log_path = None
        if self._root is not None and delete_volume:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
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

    def _inspect(self) -> dict:
        """docker inspect's answer, for what a process has."""
        running = self.status == "running"
        proc = self._broker.proc if self._broker is not None else None
        port = self._broker.port if self._broker is not None else None
        bindings = {f"{self.port}/tcp": [{"HostIp": self._broker.host, "HostPort": str(port)}]} if port else {}
        return {"Id": self.get_container_id(), "Created": self._created, "Name": f"/{self.get_container_id()}",
                "Image": self.image, "Path": "kwire", "Args": ["serve"],
                "State": {"Status": str(self.status), "Running": running, "Paused": False, "Restarting": False,
                          "OOMKilled": False, "Dead": False, "Pid": proc.pid if proc is not None else os.getpid(),
                          "ExitCode": 0, "Error": "", "Health": {"Status": "healthy" if running else "unhealthy"}},
                "Config": {"Image": self.image, "Env": [f"{k}={v}" for k, v in self.env.items()],
                           "ExposedPorts": {f"{self.port}/tcp": {}}},
                "Mounts": [{"Type": "bind", "Source": h, "Destination": v["bind"], "Mode": v["mode"],
                            "RW": v["mode"] != "ro"} for h, v in self.volumes.items()],
                "NetworkSettings": {"Ports": bindings}}

    def get_container_info(self) -> Any:
        """docker inspect's information (testcontainers' ContainerInspectInfo when testcontainers
        is installed, else the dict); None before start, as testcontainers answers."""
        if self._broker is None:
            return None
        data = self._inspect()
        try:
            from testcontainers.core.inspect import ContainerInspectInfo  # noqa: PLC0415 - optional dependency: testcontainers
        except ImportError:
            return data
        return ContainerInspectInfo.from_dict(data)

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

    # ------------------------------------------------------------------ the container's files
    def _host_path(self, path: str) -> str:
        """Where a container path lives on this machine: under a volume mapping, else in the
        container's own tree."""
        path = os.path.normpath("/" + str(path).lstrip("/"))
        if path.startswith(("/dev/", "/proc/")):
            return path                              # the machine's devices: /dev/null ...
        best = None
        for host, spec in self.volumes.items():
            bind = os.path.normpath(spec["bind"])
            if (path == bind or path.startswith(bind.rstrip("/") + "/")) and (best is None or len(bind) > len(best[1])):
                best = (host, bind)
        if best is not None:
            return os.path.join(best[0], os.path.relpath(path, best[1])) if path != best[1] else best[0]
        if self._root is None:
            self._root = tempfile.mkdtemp(prefix="kwire-container-fs-")
        return os.path.join(self._root, path.lstrip("/"))

    def create_file(self, content: bytes, path: str) -> None:
        target = self._host_path(path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(content)

    def copy_into_container(self, transferable: Any, destination_in_container: str, mode: int = 0o644) -> None:
        """bytes, or a file or directory on this machine, to ``destination_in_container``."""
        target = self._host_path(destination_in_container)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if isinstance(transferable, (bytes, bytearray)):
            with open(target, "wb") as f:
                f.write(transferable)
            os.chmod(target, mode)
        elif os.path.isdir(transferable):
            shutil.copytree(transferable, target, dirs_exist_ok=True)
        else:
            shutil.copyfile(transferable, target)
            os.chmod(target, mode)

    def copy_from_container(self, source_in_container: str, destination_on_host: pathlib.Path) -> None:
        source = self._host_path(source_in_container)
        if not os.path.exists(source):
            raise FileNotFoundError(f"{source_in_container}: no such file in the container")
        if os.path.isdir(source):
            shutil.copytree(source, destination_on_host, dirs_exist_ok=True)
        else:
            pathlib.Path(destination_on_host).write_bytes(pathlib.Path(source).read_bytes())

    # ------------------------------------------------------------------ exec
    def exec(self, command) -> ExecResult:
        """Run a command "inside the container": kafka-topics & co. map to kwire's admin
        commands against this broker (whatever --bootstrap-server says), the console producer
        and consumer to kwire's wire client; ``sh -c`` / ``bash -c`` scripts with pipes,
        ``&&``, ``||``, ``;`` and redirections; other commands run on this machine with absolute
        paths taken inside the container's tree. Output is stdout and stderr together, as
        docker's exec_run gives them."""
        if not isinstance(command, (str, list, tuple)):
            command = getattr(command, "command", command)      # testcontainers' ExecConfig
        argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        if len(argv) >= 3 and os.path.basename(argv[0]) in ("bash", "sh") and argv[1] == "-c":
            return self._script(argv[2])
        if not argv:
            return ExecResult(126, b"exec: no command\n")
        code, out, err = self._run_one(argv, b"")
        return ExecResult(code, out + err)

    def _script(self, script: str) -> ExecResult:
        """A shell script's lists of pipelines (``|``, ``&&``, ``||``, ``;``, ``<``, ``>``, ``>>``)."""
        lex = shlex.shlex(script, posix=True, punctuation_chars=";&|<>")
        lex.whitespace_split = True
        tokens = list(lex)
        output = b""
        code, skip = 0, False
        pipeline: list[list[str]] = [[]]
        for tok in tokens + [";"]:
            if tok in (";", "&&", "||", "\n"):
                if pipeline != [[]] and not skip:
                    code, out = self._pipeline(pipeline)
                    output += out
                skip = (tok == "&&" and code != 0) or (tok == "||" and code == 0)
                pipeline = [[]]
            elif tok == "|":
                pipeline.append([])
            else:
                pipeline[-1].append(tok)
        return ExecResult(code, output)

    def _pipeline(self, commands: list[list[str]]) -> tuple[int, bytes]:
        data, errors, code = b"", b"", 0
        last = len(commands) - 1
        for i, words in enumerate(commands):
            words, infile, outfile, append, drop_err = _redirections(words)
            if infile is not None:
                with open(self._host_path(infile), "rb") as f:
                    data = f.read()
            if not words:
                return 2, errors + b"sh: syntax error\n"
            code, out, err = self._run_one(words, data)
            errors += b"" if drop_err else err
            if outfile is not None:
                target = self._host_path(outfile)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "ab" if append else "wb") as f:
                    f.write(out)
                out = b""
            data = out
            if i == last:
                return code, errors + data
        return code, errors + data

    def _run_one(self, argv: list[str], stdin: bytes) -> tuple[int, bytes, bytes]:
        """One command: (exit code, stdout, stderr)."""
        tool = os.path.basename(argv[0])
        tool = tool[:-3] if tool.endswith(".sh") else tool
        if tool in ("echo", "printf"):
            return 0, _echo_output(argv).encode(), b""
        if tool.startswith("kafka-"):
            rest = _with_bootstrap(self._container_paths(argv[1:]), self.get_bootstrap_server())
            if tool in _TOOLS:
                r = _run_cli(_tools_args(tool, rest))
            elif tool == "kafka-console-producer":
                r = self._console_produce(rest, stdin.decode(errors="replace"))
            elif tool == "kafka-console-consumer":
                r = self._console_consume(rest)
            else:
                r = ExecResult(127, f"exec: {argv[0]}: not found (kwire's container maps kafka-topics, "
                                    f"kafka-consumer-groups, kafka-configs, kafka-metadata-quorum, kafka-cluster, "
                                    f"kafka-acls, kafka-console-producer and kafka-console-consumer)\n".encode())
            return r.exit_code, r.output, b""
        program = argv[0] if os.path.isfile(argv[0]) else shutil.which(tool)
        if program is None:
            return 127, b"", f"sh: {argv[0]}: not found\n".encode()
        cwd = self._host_path("/")
        try:
            done = subprocess.run([program, *self._container_paths(argv[1:])], input=stdin, capture_output=True,
                                  cwd=cwd, timeout=120)
        except OSError as exc:
            return 126, b"", f"sh: {argv[0]}: {exc.strerror}\n".encode()
        return done.returncode, done.stdout, done.stderr

    def _container_paths(self, args: list[str]) -> list[str]:
        """Absolute paths in arguments (also ``key=/path``) point into the container's tree."""
        out = []
        for a in args:
            key, eq, value = a.partition("=")
            if a.startswith("/"):
                out.append(self._host_path(a))
            elif eq and value.startswith("/") and not key.startswith("-"):
                out.append(f"{key}={self._host_path(value)}")
            else:
                out.append(a)
        return out

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
        text = text.encode().decode("unicode_escape") if "-e" in argv[1:] else text
        return text if "-n" in argv[1:] else text + "\n"
    fmt, *params = argv[1:] or [""]
    try:
        return fmt.encode().decode("unicode_escape") % tuple(params) if params else \
            fmt.encode().decode("unicode_escape")
    except TypeError:
        return fmt


def _redirections(words: list[str]) -> tuple[list[str], str | None, str | None, bool, bool]:
    """A command's words without its redirections: (words, ``< in``, ``> out`` / ``>> out``,
    append, stderr dropped (``2> /dev/null``)). ``2>&1`` changes nothing: exec's output holds
    stdout and stderr together anyway."""
    rest: list[str] = []
    infile = outfile = None
    append = drop_err = False
    i = 0
    while i < len(words):
        w = words[i]
        fd = None
        if w.isdigit() and i + 1 < len(words) and words[i + 1] in (">", ">>", ">&", "<"):
            fd, i = int(w), i + 1
            w = words[i]
        if w in ("<", ">", ">>", ">&"):
            target = words[i + 1] if i + 1 < len(words) else None
            i += 2
            if w == ">&":
                continue
            if fd == 2:
                drop_err = True      # stderr to a file: not part of the output
            elif w == "<":
                infile = target
            else:
                outfile, append = target, w == ">>"
            continue
        rest.append(w)
        i += 1
    return rest, infile, outfile, append, drop_err


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
    from kwire.cli import main  # noqa: PLC0415 - start-up time: the CLI loads for exec() only

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            rc = main(argv)
        except SystemExit as exc:       # --help
            rc = exc.code if isinstance(exc.code, int) else 0
    return ExecResult(rc, buf.getvalue().encode())

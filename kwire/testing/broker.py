"""``Broker``: start kwire for a test, in-process (a thread running Trio) or as a subprocess,
on a free loopback port with a temporary data dir (on tmpfs with ``storage="memory"``);
helpers to create topics and produce/consume a few records; fault injection (thread mode);
``restart()`` on the same data; clean stop.

Only the standard library is imported here; Trio and the broker load when a broker starts.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from kwire.testing.ports import free_port

__all__ = ["Broker", "free_port", "wait_for_port", "memory_dir"]


def _kill_orphan(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def wait_for_port(host: str, port: int, timeout: float = 10.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"kwire exited with {proc.returncode} before listening")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.005)
    raise TimeoutError(f"kwire did not listen on {host}:{port} within {timeout}s")


def memory_dir() -> str | None:
    """A RAM-backed directory for ``storage="memory"`` (Linux /dev/shm), or None."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        return shm
    return None


async def _off_loop(fn):
    """Run a blocking call in a worker thread of whichever event loop is running (Trio or
    asyncio), so starting and stopping never stalls the caller's loop."""
    import sniffio  # noqa: PLC0415 - start-up time (module doc)

    if sniffio.current_async_library() == "trio":
        import trio  # noqa: PLC0415 - start-up time (module doc)

        return await trio.to_thread.run_sync(fn)
    import asyncio  # noqa: PLC0415 - start-up time (module doc)

    return await asyncio.to_thread(fn)


class Broker:
    """A kwire broker for tests.

    ``mode="thread"`` runs it in this process (fast start, fault injection, ``.broker`` and
    ``.server`` available); ``mode="process"`` runs ``python -m kwire serve`` (needed to
    SIGKILL it). ``overrides`` are Kafka config keys (``num.partitions``, ...).
    ``storage="memory"`` keeps the log on tmpfs (/dev/shm) where there is one: kwire's log is
    file based, so "memory" means RAM-backed files, still surviving ``restart()``.
    ``log_dirs``: more log dirs after ``data_dir`` (Kafka's log.dirs, JBOD).
    """

    def __init__(self, *, mode: str = "thread", host: str = "127.0.0.1", port: int | None = None,
                 data_dir: str | None = None, overrides: dict[str, object] | None = None,
                 log_level: str = "WARNING", storage: str = "disk", security: str = "PLAINTEXT",
                 users: dict[str, str] | None = None, client_auth: str = "none",
                 log_dirs: list[str] | None = None):
        if mode not in ("thread", "process"):
            raise ValueError(f"mode is 'thread' or 'process', not {mode!r}")
        if storage not in ("disk", "memory"):
            raise ValueError(f"storage is 'disk' or 'memory', not {storage!r}")
        self.mode = mode
        self.host = host
        self.port = port or free_port(host)
        self.storage = storage
        self.security = security.upper()
        self.overrides = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (overrides or {}).items()}
        self._check_listeners_override()       # before anything is made on disk
        self._check_keys()
        self._own_dir = data_dir is None
        base = memory_dir() if storage == "memory" else None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="kwire-test-", dir=base)
        self.log_dirs = [self.data_dir, *(log_dirs or [])]
        self.log_level = log_level
        self.proc: subprocess.Popen | None = None
        self.log_path: str | None = None   # process mode: the broker's stdout and stderr go here (appended)
        self._thread: threading.Thread | None = None
        self._trio_token = None
        self._cancel = None
        self._error: BaseException | None = None
        self._faults = None
        self.broker = None  # the kwire.broker.Broker in thread mode
        self.server = None  # the kwire.server.KafkaServer in thread mode
        self.users = dict(users or {})
        self.tls = None          # kwire.testing.certs.CertificateAuthority of an SSL / SASL_SSL broker
        self.harness_port = None  # a PLAINTEXT listener for this object's own helpers on a secured broker
        if self.security != "PLAINTEXT":
            from kwire.testing.secured import configure  # noqa: PLC0415 - start-up time (module doc)
            try:
                configure(self, client_auth)
            except BaseException:
                if self._own_dir:
                    shutil.rmtree(self.data_dir, ignore_errors=True)
                raise

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        return self._thread is not None and self._thread.is_alive()

    # ------------------------------------------------------------------ lifecycle
    def _check_keys(self) -> None:
        """A misspelt key is refused here as ``kwire serve`` refuses it (a process-mode broker
        would not start; a thread-mode one must not quietly differ)."""
        from kwire.config_keys import near_miss  # noqa: PLC0415 - start-up time (module doc)

        for key in self.overrides:
            if (near := near_miss(key)) is not None:
                raise ValueError(f"unknown config key {key!r}; did you mean {near}?")

    def start(self, timeout: float = 30.0) -> "Broker":
        """Start and wait until the broker serves, at most ``timeout`` seconds."""
        if self.running:
            return self
        if self.mode == "process":
            self._start_process(timeout)
        else:
            self._start_thread(timeout)
        return self

    def _args(self) -> list[str]:
        args = [sys.executable, "-m", "kwire", "serve", "--listen", f"{self.security}://{self.host}:{self.port}",
                "--data-dir", ",".join(self.log_dirs), "--log-level", self.log_level]
        if "metrics.listen" not in self.overrides:
            args += ["--override", "metrics.listen="]   # off, as in thread mode (kwire serve's default: on)
        for k, v in self.overrides.items():
            args += ["--override", f"{k}={v}"]
        return args

    def _start_process(self, timeout: float = 30.0) -> None:
        if self.log_path is not None:
            with open(self.log_path, "ab") as out:
                self.proc = subprocess.Popen(self._args(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        else:
            self.proc = subprocess.Popen(self._args(), stdin=subprocess.DEVNULL)
        # a test process that dies without cleanup() must not leave its broker behind
        atexit.register(_kill_orphan, self.proc)
        try:
            wait_for_port(self.host, self.port, timeout, proc=self.proc)
        except BaseException:
            _kill_orphan(self.proc)
            raise

    def _start_thread(self, timeout: float = 30.0) -> None:
        import trio  # noqa: PLC0415 - start-up time (module doc)

        from kwire.app import run_broker  # noqa: PLC0415 - start-up time (module doc)
        from kwire.config import BrokerConfig  # noqa: PLC0415 - start-up time (module doc)

        cfg = BrokerConfig.from_properties("", dict(self.overrides))
        cfg.set("log.dirs", ",".join(self.log_dirs))
        ready = threading.Event()
        self._error = None

        async def main():
            self._trio_token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as cs:
                self._cancel = cs

                def on_ready(broker, server, port):
                    self.broker = broker
                    self.server = server
                    if self._faults is not None:
                        server.fault_hook = self._faults
                    ready.set()

                await run_broker(cfg, host=self.host, port=self.port, on_ready=on_ready,
                                 listeners=self._client_listeners())

        def runner():
            try:
                trio.run(main)
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                self._error = exc
            finally:
                ready.set()

        self._thread = threading.Thread(target=runner, name=f"kwire-{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError(f"kwire did not start within {timeout:g} s")
        if self._error is not None:
            self._thread.join(5)
            self._thread = None
            raise RuntimeError(f"kwire failed to start: {self._error!r}") from self._error

    def stop(self) -> None:
        """Stop cleanly (SIGTERM / cancel): the log writes its checkpoints."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        if self._thread is not None:
            if self._trio_token is not None and self._thread.is_alive():
                import trio  # noqa: PLC0415 - start-up time (module doc)
                try:  # thread-safe and non-blocking, so stop() works from any thread or task
                    self._trio_token.run_sync_soon(self._cancel.cancel)
                except trio.RunFinishedError:
                    pass
            self._thread.join(10)
            self._thread = None
            self._trio_token = None
            self.broker = None
            self.server = None

    def kill(self) -> None:
        """SIGKILL the subprocess broker (process mode only)."""
        assert self.proc is not None, "kill() needs mode='process'"
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        """Stop and start again on the same port and data (and the same fault rules)."""
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    close = cleanup

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()

    async def __aenter__(self) -> "Broker":
        return await _off_loop(self.start)

    async def __aexit__(self, *exc) -> None:
        await _off_loop(self.cleanup)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<kwire.testing.Broker {self.mode} {self.bootstrap_servers} {state}>"

    # ------------------------------------------------------------------ faults
    @property
    def faults(self):
        """The :class:`kwire.testing.faults.Faults` control hooks (thread mode only)."""
        if self.mode != "thread":
            raise RuntimeError("fault injection needs mode='thread' (the hooks live in the broker's process)")
        if self._faults is None:
            from kwire.testing.faults import Faults  # noqa: PLC0415 - start-up time (module doc)

            self._faults = Faults()
            if self.server is not None:
                self.server.fault_hook = self._faults
        return self._faults

    def _check_listeners_override(self) -> None:
        """The harness names its client listener from ``security``, ``host`` and ``port``; a
        ``listeners`` override that names another one would be ignored in thread mode and fight
        ``--listen`` in process mode, so it is refused unless it says the same."""
        value = self.overrides.get("listeners")
        if value is None:
            return
        from kwire.listeners import Endpoint, ListenerError, parse_listeners  # noqa: PLC0415 - start-up time (module doc)

        controllers = {n.strip().upper() for n in self.overrides.get("controller.listener.names", "").split(",")}
        try:
            clients = [e for e in parse_listeners(value.split(",")) if e.name not in controllers]
        except ListenerError as exc:
            raise ValueError(f"Broker(overrides={{'listeners': {value!r}}}): {exc}") from None
        if clients != [Endpoint(self.security, self.host, self.port)]:
            first = clients[0] if clients else None
            hint = (f"Broker(security={first.name!r}, host={first.host!r}, port={first.port})"
                    if first is not None and first.host else f"Broker(security='{self.security}', port=...)")
            raise ValueError(f"Broker(overrides={{'listeners': {value!r}}}) disagrees with the harness's listener "
                             f"{self.security}://{self.host}:{self.port} (from security=, host=, port=); "
                             f"leave listeners out and write {hint}")
        del self.overrides["listeners"]     # it says what --listen / the harness's listeners say

    def _client_listeners(self):
        from kwire.listeners import ClientListener, Endpoint  # noqa: PLC0415 - start-up time (module doc)

        out = [ClientListener(Endpoint(self.security, self.host, self.port), self.security)]
        if self.harness_port is not None:
            out.append(ClientListener(Endpoint("HARNESS", "127.0.0.1", self.harness_port), "PLAINTEXT"))
        return out

    def client_config(self, client: str = "confluent", user: str | None = None, mechanism: str = "PLAIN") -> dict:
        """Ready settings for a stock client on this broker: ``client`` is "confluent"
        (confluent-kafka / librdkafka keys), "kafka-python" or "aiokafka" (their keyword
        arguments); ``user`` picks one of ``users`` for SASL (default: the first), with
        ``mechanism`` (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)."""
        from kwire.testing.secured import client_config  # noqa: PLC0415 - start-up time (module doc)

        return client_config(self, client, user, mechanism)

    # ------------------------------------------------------------------ helpers
    def client(self, timeout: float = 10.0):
        """A :class:`kwire.testing.client.WireClient` connected to this broker (on a secured
        broker: to its PLAINTEXT harness listener on 127.0.0.1)."""
        from kwire.testing.client import WireClient  # noqa: PLC0415 - start-up time (module doc)

        if self.harness_port is not None:
            return WireClient(f"127.0.0.1:{self.harness_port}", timeout=timeout)
        return WireClient(self.bootstrap_servers, timeout=timeout)

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None, *,
                     exist_ok: bool = False) -> str:
        with self.client() as c:
            c.create_topic(name, partitions, config, exist_ok=exist_ok)
        return name

    def delete_topic(self, name: str) -> None:
        with self.client() as c:
            c.delete_topic(name)

    def produce(self, topic: str, records, partition: int = 0) -> list[int]:
        """Append records (values, or (key, value[, headers]) tuples) to one partition; returns
        their offsets."""
        with self.client() as c:
            return c.produce(topic, records, partition)

    def consume(self, topic: str, n: int, partition: int | None = 0, *, offset: int = 0,
                timeout: float = 10.0) -> list:
        """The first ``n`` records from ``offset`` (of ``partition``, or all partitions with
        None), waiting up to ``timeout`` s; ``kwire.codec.records.Record`` objects."""
        with self.client(timeout) as c:
            return c.consume(topic, n, partition, offset=offset, timeout=timeout)

"""``Broker``: start kwire for a test, in-process (a thread running Trio) or as a subprocess,
on a free loopback port with a temporary data dir; ``restart()`` on the same data; clean stop.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float = 10.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"kwire exited with {proc.returncode} before listening")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.01)
    raise TimeoutError(f"kwire did not listen on {host}:{port} within {timeout}s")


class Broker:
    """A kwire broker for tests.

    ``mode="thread"`` runs it in this process (fast start); ``mode="process"`` runs
    ``python -m kwire serve`` (needed to SIGKILL it). ``overrides`` are Kafka config keys.
    """

    def __init__(self, *, mode: str = "thread", host: str = "127.0.0.1", port: int | None = None,
                 data_dir: str | None = None, overrides: dict[str, object] | None = None,
                 log_level: str = "WARNING"):
        self.mode = mode
        self.host = host
        self.port = port or free_port(host)
        self._own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="kwire-test-")
        self.overrides = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (overrides or {}).items()}
        self.log_level = log_level
        self.proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._trio_token = None
        self._cancel = None
        self._error: BaseException | None = None
        self.broker = None  # the kwire.broker.Broker in thread mode

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "Broker":
        if self.mode == "process":
            self._start_process()
        else:
            self._start_thread()
        return self

    def _args(self) -> list[str]:
        args = [sys.executable, "-m", "kwire", "serve", "--listen", f"{self.host}:{self.port}",
                "--data-dir", self.data_dir, "--log-level", self.log_level]
        for k, v in self.overrides.items():
            args += ["--override", f"{k}={v}"]
        return args

    def _start_process(self) -> None:
        self.proc = subprocess.Popen(self._args(), stdin=subprocess.DEVNULL)
        wait_for_port(self.host, self.port, proc=self.proc)

    def _start_thread(self) -> None:
        import trio

        from kwire.app import run_broker
        from kwire.config import BrokerConfig

        cfg = BrokerConfig.from_properties("", dict(self.overrides))
        cfg.set("log.dirs", self.data_dir)
        ready = threading.Event()

        async def main():
            self._trio_token = trio.lowlevel.current_trio_token()
            with trio.CancelScope() as cs:
                self._cancel = cs

                def on_ready(broker, server, port):
                    self.broker = broker
                    self.server = server
                    ready.set()

                await run_broker(cfg, host=self.host, port=self.port, on_ready=on_ready)

        def runner():
            try:
                trio.run(main)
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                self._error = exc
            finally:
                ready.set()

        self._thread = threading.Thread(target=runner, name=f"kwire-{self.port}", daemon=True)
        self._thread.start()
        ready.wait(30)
        if self._error is not None:
            raise RuntimeError(f"kwire failed to start: {self._error!r}") from self._error

    def stop(self) -> None:
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
                import trio
                try:
                    trio.from_thread.run_sync(self._cancel.cancel, trio_token=self._trio_token)
                except trio.RunFinishedError:
                    pass
            self._thread.join(10)
            self._thread = None
            self._trio_token = None

    def kill(self) -> None:
        """SIGKILL the subprocess broker (process mode only)."""
        assert self.proc is not None, "kill() needs mode='process'"
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()

    async def __aenter__(self) -> "Broker":
        return self.start()

    async def __aexit__(self, *exc) -> None:
        self.cleanup()

"""``KafkaContainer`` with the shape of testcontainers' ``testcontainers.kafka.KafkaContainer``,
backed by a kwire broker instead of a Docker container, so a suite switches with one import::

    # from testcontainers.kafka import KafkaContainer
    from kwire.testing import KafkaContainer

    with KafkaContainer() as kafka:
        producer = Producer({"bootstrap.servers": kafka.get_bootstrap_server()})

The image, ports and Docker knobs are accepted and ignored (``with_kraft()``, ``with_name()``,
``with_bind_ports()`` ...). ``with_env("KAFKA_NUM_PARTITIONS", "3")`` is honoured the way the
Confluent image reads it (``KAFKA_`` prefix off, ``_`` to ``.``, lower case) for the broker and
topic-default settings kwire knows; listener and controller settings are kwire's own business.
"""
from __future__ import annotations

from typing import Any

from kwire.testing.broker import Broker

__all__ = ["KafkaContainer"]

# Settings the Confluent image needs that mean nothing (or something harmful) to kwire.
_IGNORED_KEYS = {"listeners", "advertised.listeners", "log.dirs", "listener.security.protocol.map",
                 "inter.broker.listener.name", "process.roles", "controller.quorum.voters",
                 "controller.listener.names", "zookeeper.connect", "broker.id", "node.id"}
# testcontainers' image is tuned for tests in the same way.
TEST_DEFAULTS = {"group.initial.rebalance.delay.ms": 0}


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
    with_env_file = waiting_for = _noop

    # ------------------------------------------------------------------ lifecycle
    def overrides(self) -> dict[str, Any]:
        """Kafka settings from the ``KAFKA_*`` environment, as the Confluent image maps them."""
        out: dict[str, Any] = dict(TEST_DEFAULTS)
        for key, value in self.env.items():
            if not key.startswith("KAFKA_"):
                continue
            name = key[len("KAFKA_"):].lower().replace("__", "-").replace("_", ".")
            if name not in _IGNORED_KEYS:
                out[name] = value
        return out

    def start(self) -> "KafkaContainer":
        if self._broker is None:
            self._broker = Broker(mode=self._mode, storage=self._storage, overrides=self.overrides())
        self._broker.start()
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        if self._broker is not None:
            if delete_volume:
                self._broker.cleanup()
                self._broker = None
            else:
                self._broker.stop()

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
        return f"kwire-{self.broker.port}"

    def get_logs(self) -> tuple[bytes, bytes]:
        return b"", b""

    def status(self) -> str:
        return "running" if self._broker is not None and self._broker.running else "exited"

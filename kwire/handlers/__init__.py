"""Request handlers: one module per API. Each module registers its handler with ``@handles``;
the registry drives ApiVersions.

A handler is ``async def fn(ctx: RequestContext, req) -> response | None``; ``None`` means
no response is sent (Produce with acks=0). Handlers answer Kafka error codes in their
responses. An exception that escapes a handler is the server's to convert (kwire/server.py):
logged once, then answered in the response's shape with the KafkaError's code, or
UNKNOWN_SERVER_ERROR for anything else; the connection closes only where the response has
no error code to carry it.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol, runtime_checkable

from kwire.codec.apis import Api, api as api_by
from kwire.codec.frame import RequestHeader
from kwire.security.principal import ANONYMOUS
# which module serves each API (kwire.served, below the handlers for kwire.emulation's sake);
# ``@handles`` refuses a module whose versions disagree with it
from kwire.served import INDEX, SERVED, parse_range, served_ranges  # noqa: F401

if TYPE_CHECKING:
    from kwire.broker import TopicError
    from kwire.clock import Clock
    from kwire.config import BrokerConfig
    from kwire.fetch_session import FetchSessionCache
    from kwire.groups.coordinator import GroupCoordinator
    from kwire.groups.edge import GroupEdge
    from kwire.metadata.image import MetadataImage
    from kwire.metadata.quorum import MetadataQuorum
    from kwire.producers.ids import ProducerIdManager
    from kwire.replication import ReplicaManager
    from kwire.transactions.edge import TransactionEdge
    import trio


@runtime_checkable
class BrokerServices(Protocol):
    """What a handler may use of the broker (``RequestContext.broker``; kwire.broker.Broker
    provides it, its composition root builds the components). Data goes through the replica
    manager, groups through the group coordinator; nothing else of the broker is for handlers."""

    node_id: int
    cluster_id: str
    config: BrokerConfig
    clock: Clock
    image: MetadataImage           # the metadata image, as committed records left it
    quorum: MetadataQuorum | None  # DescribeQuorum's view of the metadata quorum
    replica_manager: ReplicaManager
    producer_ids: ProducerIdManager
    producer_ids_lock: trio.Lock
    authorizer: Any                # kwire.security.authorizer.Authorizer, None without authorizer.class.name
    fetch_sessions: FetchSessionCache
    share_partitions: Any          # kwire.share.manager.SharePartitionManager (KIP-932)
    share_state: Any               # kwire.share.state_store.ShareStateStore (__share_group_state)
    quotas: Any                    # kwire.quota.manager.ClientQuotas

    @property
    def groups(self) -> GroupCoordinator | None: ...   # None until __consumer_offsets replayed

    group_edge: GroupEdge       # creates __consumer_offsets on a group's first FindCoordinator
    txn_edge: TransactionEdge   # the transaction coordinator (``txn_edge.coordinator``) and its topic

    def controller_id(self) -> int: ...

    async def submit_metadata(self, recs: list) -> int: ...

    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str | None], *, validate_only: bool = False,
                           assignments: dict[int, list[int]] | None = None) -> TopicError: ...

    async def delete_topic(self, name: str) -> TopicError: ...

    async def create_partitions(self, name: str, count: int, *, validate_only: bool = False,
                                assignments: list[list[int]] | None = None) -> TopicError: ...

    async def set_configs(self, resource_type: int, resource_name: str,
                          changes: dict[str, str | None]) -> None: ...


@dataclass(frozen=True)
class Handler:
    api: Api
    min_version: int
    max_version: int
    fn: Callable[["RequestContext", Any], Awaitable[Any]]


class _Registry(dict):
    """{api key: Handler}, filled as handler modules are imported: a key not yet loaded imports
    the module INDEX names for it. Iterating sees only what is loaded (``load_all()`` first)."""

    def __missing__(self, key):
        entry = INDEX.get(key)
        if entry is None:
            raise KeyError(key)
        importlib.import_module(f"{__name__}.{entry[0]}")
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or key in INDEX


REGISTRY: dict[int, Handler] = _Registry()


def handles(api_name: str, versions: str | None = None):
    """Register the decorated coroutine for an API; ``versions`` narrows the schema's range and
    must say what SERVED says."""
    a = api_by(api_name)

    def deco(fn):
        lo, hi = parse_range(versions or "", a)
        entry = INDEX.get(a.key)
        module = fn.__module__.rpartition(".")[2]
        if entry != (module, lo, hi):
            raise ImportError(f"kwire.handlers.SERVED says {api_name} is {entry}, "
                              f"but {fn.__module__} serves it at versions {lo}-{hi}")
        REGISTRY[a.key] = Handler(a, lo, hi, fn)
        return fn

    return deco


@dataclass
class RequestContext:
    broker: BrokerServices
    header: RequestHeader
    api: Api
    peer: str
    connection: Any = None
    # set by a handler that recorded its own quotas (Fetch): the throttle time it answered
    throttle_time_ms: int | None = None
    request_timer: Any = None   # kwire.quota.manager.TimedCoroutine while a request quota exists

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def principal(self) -> str:
        """Who sent the request, as Kafka's ``KafkaPrincipal.toString``: ``User:ANONYMOUS`` on
        PLAINTEXT, ``User:alice`` after SASL, ``User:CN=...`` for a TLS client certificate
        (kept on the connection: kwire.connection.KafkaConnection.principal)."""
        return getattr(self.connection, "principal", None) or ANONYMOUS

    @property
    def listener(self) -> str | None:
        """The name of the listener the request came in on (PLAINTEXT, SASL_SSL, ...), or None."""
        return getattr(self.connection, "listener", None)

    def response(self, **kw):
        return self.api.response.cls(**kw)

    def struct(self, name: str):
        """A class of the response schema (e.g. ``ctx.struct("MetadataResponseTopic")``)."""
        return self.api.response.struct(name)


def load_all() -> dict[int, Handler]:
    """Import every handler module (tests, tools that list handlers)."""
    for name in sorted({m for m, _lo, _hi in INDEX.values()}):
        importlib.import_module(f"{__name__}.{name}")
    return REGISTRY

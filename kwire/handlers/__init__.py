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
from typing import Any, Awaitable, Callable

from kwire.codec.apis import Api, api as api_by
from kwire.codec.frame import RequestHeader


@dataclass(frozen=True)
class Handler:
    api: Api
    min_version: int
    max_version: int
    fn: Callable[["RequestContext", Any], Awaitable[Any]]


REGISTRY: dict[int, Handler] = {}


def handles(api_name: str, versions: str | None = None):
    """Register the decorated coroutine for an API; ``versions`` narrows the schema's range."""
    a = api_by(api_name)

    def deco(fn):
        lo, hi = a.min_version, a.max_version
        if versions:
            lo_s, _, hi_s = versions.partition("-")
            lo, hi = int(lo_s), int(hi_s or lo_s)
        REGISTRY[a.key] = Handler(a, lo, hi, fn)
        return fn

    return deco


@dataclass
class RequestContext:
    broker: Any  # kwire.broker.Broker
    header: RequestHeader
    api: Api
    peer: str
    connection: Any = None

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    def response(self, **kw):
        return self.api.response.cls(**kw)

    def struct(self, name: str):
        """A class of the response schema (e.g. ``ctx.struct("MetadataResponseTopic")``)."""
        return self.api.response.struct(name)


_MODULES = [
    "api_versions", "metadata", "produce", "fetch", "list_offsets", "topics", "configs",
    "records_admin", "cluster", "groups", "init_producer_id", "describe_quorum", "offset_for_leader_epoch",
]


def load_all() -> dict[int, Handler]:
    for name in _MODULES:
        importlib.import_module(f"{__name__}.{name}")
    return REGISTRY

"""One schema module per API key. Each module defines ``REQUEST`` and ``RESPONSE``
(:class:`kwire.codec.schema.Message`); adding an API means adding one module here.

``APIS`` maps api key -> :class:`Api`, discovered from the modules of this package.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

from kwire.codec.schema import Message


@dataclass(frozen=True)
class Api:
    key: int
    name: str
    request: Message
    response: Message

    @property
    def min_version(self) -> int:
        return self.request.valid.lo

    @property
    def max_version(self) -> int:
        return self.request.valid.hi

    def supports(self, version: int) -> bool:
        return version in self.request.valid


def _discover() -> dict[int, Api]:
    apis: dict[int, Api] = {}
    for info in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        req, resp = getattr(mod, "REQUEST", None), getattr(mod, "RESPONSE", None)
        if req is None or resp is None:
            continue
        assert req.api_key == resp.api_key, mod.__name__
        assert req.api_key not in apis, f"api key {req.api_key} defined twice"
        name = req.name[: -len("Request")] if req.name.endswith("Request") else req.name
        apis[req.api_key] = Api(req.api_key, name, req, resp)
    return dict(sorted(apis.items()))


APIS: dict[int, Api] = _discover()
BY_NAME: dict[str, Api] = {a.name: a for a in APIS.values()}


def api(key_or_name: int | str) -> Api:
    return APIS[key_or_name] if isinstance(key_or_name, int) else BY_NAME[key_or_name]

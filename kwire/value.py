"""Frozen value classes without generated code: what ``@dataclass(frozen=True)`` gives a
class of plain annotated fields, for the ones ``kwire serve`` builds before its first answer.

A dataclass compiles generated source for each method at import (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, and ``__setattr__`` / ``__delattr__`` when frozen): ~3.7 M
instructions per frozen class; with ~50 dataclasses on its path that was about 18% of
``kwire serve``'s start-up (issue 29: start-up <= 1/10 of Apache Kafka's). A :class:`Value`
subclass gets the same from shared methods: construction by position or keyword with the class body's assignments as
defaults, ``__slots__``, immutability (``dataclasses.FrozenInstanceError``), equality and
hashing by type and fields, the dataclass repr, ``__match_args__`` and copy / pickle. What it
does not offer: ``dataclasses.fields`` / ``replace`` / ``asdict``, ``field(...)``, ordering,
``__post_init__``, inheritance of fields; hot classes built per record or per request keep
``@dataclass``, whose generated ``__init__`` is faster than this shared one.
tests/edge/test_value.py checks it against a dataclass of the same fields.
"""
from __future__ import annotations

from dataclasses import FrozenInstanceError

_setattr = object.__setattr__


class _ValueType(type):
    def __new__(mcls, name, bases, ns, **kw):
        annotations = ns.get("__annotations__", {})
        for f, t in annotations.items():
            if "ClassVar" in str(t) or "InitVar" in str(t):
                raise TypeError(f"{name}.{f}: kwire.value.Value has no ClassVar / InitVar fields")
        if any(getattr(b, "_fields", ()) for b in bases):
            raise TypeError(f"{name}: kwire.value.Value classes do not inherit fields")
        fields = tuple(annotations)
        defaults = {f: ns.pop(f) for f in fields if f in ns}
        seen_default = False
        for f in fields:   # as a dataclass: no field without a default after one with
            if f in defaults:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f!r} follows default argument")
        ns.update(__slots__=fields, __match_args__=fields, _fields=fields, _defaults=defaults)
        return super().__new__(mcls, name, bases, ns, **kw)


class Value(metaclass=_ValueType):
    __slots__ = ()

    def __init__(self, *args, **kw):
        fields = self._fields
        if args:
            if len(args) > len(fields):
                raise TypeError(f"{type(self).__name__}() takes {len(fields)} positional arguments "
                                f"but {len(args)} were given")
            for f, v in zip(fields, args):
                if f in kw:
                    raise TypeError(f"{type(self).__name__}() got multiple values for argument {f!r}")
                kw[f] = v
        defaults = self._defaults
        for f in fields:
            if f in kw:
                _setattr(self, f, kw.pop(f))
            elif f in defaults:
                _setattr(self, f, defaults[f])
            else:
                raise TypeError(f"{type(self).__name__}() missing required argument: {f!r}")
        if kw:
            raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument {next(iter(kw))!r}")

    def _values(self) -> tuple:
        return tuple([getattr(self, f) for f in self._fields])

    def __eq__(self, other):
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return (f"{type(self).__qualname__}("
                + ", ".join([f"{f}={getattr(self, f)!r}" for f in self._fields]) + ")")

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self):
        return type(self), self._values()

"""Kafka's ConfigDef in miniature: config types, validators, parsing and printing of values.

A :class:`ConfigKey` describes one config the way Kafka's ``ConfigDef.define`` does: name,
type, default, validator, documentation, plus what DescribeConfigs needs beside it: the
dynamic update mode of a broker key (Kafka's read-only / per-broker / cluster-wide) and, for a
topic or group key, the broker keys that give its default (``synonyms``). The tables
themselves live in :mod:`kwire.config_keys`.

Values travel as strings (server.properties, AlterConfigs, metadata CONFIG records) and are
parsed with :func:`parse` into Python values (bool, int, float, str, list[str]); errors use
Kafka's wording: ``Invalid value X for configuration NAME: reason``.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any, Callable


class Type(enum.IntEnum):
    """Kafka's ConfigDef.Type, numbered as DescribeConfigs' config_type field."""
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


READ_ONLY, PER_BROKER, CLUSTER_WIDE = "read-only", "per-broker", "cluster-wide"

INT_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1
DOUBLE_MAX = 1.7976931348623157e308
_BOUNDS = {Type.INT: (-(1 << 31), INT_MAX), Type.SHORT: (-(1 << 15), (1 << 15) - 1),
           Type.LONG: (-(1 << 63), LONG_MAX)}


class ConfigError(ValueError):
    """A value a config key refuses; the message is Kafka's ConfigException message."""

    def __init__(self, name: str, value: Any, reason: str | None = None):
        self.name, self.value, self.reason = name, value, reason
        super().__init__(f"Invalid value {value} for configuration {name}" + (f": {reason}" if reason else ""))


# --------------------------------------------------------------------------- validators
# A validator is a callable (name, parsed value) -> None that raises ConfigError.
Validator = Callable[[str, Any], None]


def at_least(lo: float) -> Validator:
    return between(lo, None)


def between(lo: float | None, hi: float | None) -> Validator:
    def check(name: str, v: Any) -> None:
        if v is None:
            raise ConfigError(name, v, "Value must be non-null")
        if lo is not None and v < lo:
            raise ConfigError(name, v, f"Value must be at least {_num(lo)}")
        if hi is not None and v > hi:
            raise ConfigError(name, v, f"Value must be no more than {_num(hi)}")
    check.__doc__ = (f"[{_num(lo)},...]" if hi is None else f"[{_num(lo)},...,{_num(hi)}]")
    return check


def one_of(*options: str, case_insensitive: bool = False) -> Validator:
    """Kafka's ValidString.in / CaseInsensitiveValidString.in."""
    allowed = {o.lower() for o in options} if case_insensitive else set(options)

    def check(name: str, v: Any) -> None:
        if v is None:
            return
        if (v.lower() if case_insensitive else v) not in allowed:
            how = " (case insensitive)" if case_insensitive else ""
            raise ConfigError(name, v, f"String must be one of{how}: {', '.join(options)}")
    check.__doc__ = "[" + ", ".join(options) + "]"
    return check


def list_of(*options: str, allow_empty: bool = True) -> Validator:
    """Kafka's ValidList.in: every element one of ``options``."""
    def check(name: str, v: Any) -> None:
        if v is None:
            return
        if not v and not allow_empty:
            raise ConfigError(name, "", "Configuration must not be empty")
        for item in v:
            if item not in options:
                raise ConfigError(name, ",".join(v), f"String must be one of: {', '.join(options)}")
    check.__doc__ = "[" + ", ".join(options) + "]"
    return check


def non_empty(name: str, v: Any) -> None:
    if v is not None and not str(v).strip():
        raise ConfigError(name, v, "String must be non-empty")


def gzip_level(name: str, v: Any) -> None:
    if v != -1 and not 1 <= v <= 9:
        raise ConfigError(name, v, "Value must be between 1 and 9, or equal to -1")


def version_string(name: str, v: Any) -> None:
    """A MetadataVersion-like string (message.format.version: 0.10.0, 2.8-IV1, 3.0-IV1 ...)."""
    if v is not None and not re.fullmatch(r"\d+\.\d+(\.\d+)*(-IV\d+)?", str(v)):
        raise ConfigError(name, v, "Version is not a valid MetadataVersion")


def _num(x: float | None) -> str:
    return str(int(x)) if isinstance(x, (int, float)) and float(x).is_integer() else str(x)


# --------------------------------------------------------------------------- keys
@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: Type
    default: Any                       # parsed value, or None (Kafka's null default)
    doc: str
    validator: Validator | None = None
    mode: str = READ_ONLY              # broker keys: read-only | per-broker | cluster-wide
    synonyms: tuple[str, ...] = ()     # topic/group keys: the broker keys behind the default
    kwire: bool = False                # kwire's own key, not Kafka's
    hidden: bool = False               # accepted and stored, described only when set

    @property
    def sensitive(self) -> bool:
        return self.type is Type.PASSWORD

    @property
    def dynamic(self) -> bool:
        return self.mode != READ_ONLY

    @property
    def default_string(self) -> str | None:
        return to_string(self.default, self.type)

    def parse(self, value: Any) -> Any:
        """A raw value (str, or already typed) -> the typed value, checked by the validator."""
        v = parse(self.name, value, self.type)
        if self.validator is not None and v is not None:
            self.validator(self.name, v)
        return v


def parse(name: str, value: Any, t: Type) -> Any:
    """Kafka's ConfigDef.parseType."""
    if value is None:
        return None
    if t is Type.LIST and isinstance(value, (list, tuple)):
        return [str(x).strip() for x in value]
    if t is Type.BOOLEAN and isinstance(value, bool):
        return value
    if t in _BOUNDS and isinstance(value, int) and not isinstance(value, bool):
        s = str(value)
    elif t is Type.DOUBLE and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    else:
        s = str(value).strip() if t is not Type.PASSWORD else str(value)
    if t is Type.BOOLEAN:
        if s.lower() == "true":
            return True
        if s.lower() == "false":
            return False
        raise ConfigError(name, value, "Expected value to be either true or false")
    if t in (Type.STRING, Type.CLASS, Type.PASSWORD):
        return s
    if t in _BOUNDS:
        lo, hi = _BOUNDS[t]
        try:
            n = int(s, 10)
        except ValueError:
            n = None
        if n is None or not lo <= n <= hi:
            raise ConfigError(name, value, f"Not a number of type {t.name}")
        return n
    if t is Type.DOUBLE:
        try:
            return float(s)
        except ValueError:
            raise ConfigError(name, value, "Not a number of type DOUBLE") from None
    if t is Type.LIST:
        if not s:
            return []
        return [x.strip() for x in s.split(",")]
    raise AssertionError(t)


def to_string(v: Any, t: Type) -> str | None:
    """Kafka's ConfigDef.convertToString: how DescribeConfigs prints a typed value."""
    if v is None:
        return None
    if t is Type.BOOLEAN or isinstance(v, bool):
        return "true" if v else "false"
    if t is Type.LIST and isinstance(v, (list, tuple)):
        return ",".join(v)
    if t is Type.DOUBLE or isinstance(v, float):
        return java_double(float(v))
    return str(v)


def java_double(d: float) -> str:
    """Java's Double.toString: 0.5, 10.0, 1.0E7, 1.7976931348623157E308."""
    if d != d or d in (float("inf"), float("-inf")):
        return {True: "NaN"}.get(d != d, "Infinity" if d > 0 else "-Infinity")
    if d == 0 or 1e-3 <= abs(d) < 1e7:
        r = repr(d)
        return r if ("." in r or "e" in r) else r + ".0"
    digits = repr(abs(d))
    if "e" in digits:
        m, e = digits.split("e")
        m = m if "." in m else m + ".0"
        return ("-" if d < 0 else "") + m + "E" + str(int(e))
    sign = "-" if d < 0 else ""
    intpart, _, frac = digits.partition(".")
    allds = (intpart + frac).lstrip("0")
    e = len(intpart) - 1 if intpart != "0" else -(len(frac) - len(frac.lstrip("0")) + 1)
    allds = allds.rstrip("0") or "0"
    m = allds[0] + "." + (allds[1:] or "0")
    return f"{sign}{m}E{e}"

"""The table's building blocks: the three dicts and the helpers that fill them."""
from __future__ import annotations

from kwire.configdef import CLUSTER_WIDE, PER_BROKER, READ_ONLY, ConfigKey, Type

B, S, I, SH, L, D, LI, C, P = (Type.BOOLEAN, Type.STRING, Type.INT, Type.SHORT, Type.LONG, Type.DOUBLE,
                               Type.LIST, Type.CLASS, Type.PASSWORD)
RO, PB, CW = READ_ONLY, PER_BROKER, CLUSTER_WIDE
HOUR_MS, DAY_MS = 3600 * 1000, 24 * 3600 * 1000
WEEK_MS = 7 * DAY_MS
COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

BROKER: dict[str, ConfigKey] = {}
TOPIC: dict[str, ConfigKey] = {}
GROUP: dict[str, ConfigKey] = {}


def _b(name, t, default, doc, v=None, mode=RO, **kw):
    assert name not in BROKER, name
    BROKER[name] = ConfigKey(name, t, default, doc, v, mode, **kw)


def _t(name, t, default, doc, v=None, synonyms=(), **kw):
    assert name not in TOPIC, name
    TOPIC[name] = ConfigKey(name, t, default, doc, v, CW, tuple(synonyms), **kw)


def _g(name, t, broker_key, doc, v=None, default=None, **kw):
    GROUP[name] = ConfigKey(name, t, default, doc, v, CW, (broker_key,) if broker_key else (), **kw)


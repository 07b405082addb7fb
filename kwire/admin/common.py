"""What every admin command shares: --bootstrap-server, one-line failures, tables."""
from __future__ import annotations

import argparse

from kwire.cmdline import RuntimeFailure, UsageError

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP, metavar="HOST:PORT[,HOST:PORT]",
                   help=f"the cluster to talk to (any broker of it; kwire or Apache Kafka); default {DEFAULT_BOOTSTRAP}")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="how long to wait for the cluster (default 30)")
    p.add_argument("--command-config", default=None, metavar="FILE",
                   help="client properties, as Kafka's tools take them: security.protocol, sasl.mechanism, "
                        "sasl.jaas.config, ssl.truststore.*/ssl.keystore.* (PEM), ssl.key.password")


def client(args, cmd: str):
    """An AdminClient for ``args`` (UsageError for a malformed address or a --command-config
    that cannot be used)."""
    from kwire.admin.client import AdminClient, AdminError  # noqa: PLC0415 - start-up time (kwire.admin)

    security = None
    if args.command_config:
        from kwire.admin.security import from_properties  # noqa: PLC0415 - only with --command-config
        from kwire.config import parse_properties  # noqa: PLC0415 - only with --command-config

        try:
            with open(args.command_config, encoding="latin-1") as f:
                props = parse_properties(f.read())
        except OSError as exc:
            raise UsageError(f"kwire {cmd}: --command-config {args.command_config}: {exc.strerror or exc}") from None
        security = from_properties(props, f"kwire {cmd}: --command-config {args.command_config}")
    try:
        return AdminClient(args.bootstrap_server, timeout=args.timeout, security=security)
    except AdminError as exc:
        raise UsageError(f"kwire {cmd}: {exc}") from None


def run(cmd: str, fn, args) -> int:
    """Run an admin action; a cluster's refusal or absence is one line, exit code 1."""
    from kwire.admin.client import AdminError  # noqa: PLC0415 - start-up time (kwire.admin)

    try:
        return fn(args) or 0
    except AdminError as exc:
        raise RuntimeFailure(f"kwire {cmd}: {exc}") from None
    except BrokenPipeError:
        raise
    except (OSError, ConnectionError) as exc:
        raise RuntimeFailure(f"kwire {cmd}: {getattr(exc, 'strerror', None) or exc}") from None


def java_fmt(widths: list[int], values: list) -> str:
    """Java's ``%-Ns %-Ms ...`` (left-justified, space separated; the last column unpadded
    when its width is 0)."""
    out = []
    for w, v in zip(widths, values):
        s = "-" if v is None else str(v)
        out.append(s.ljust(w) if w else s)
    return " ".join(out)


def parse_topic_partitions(spec: str) -> tuple[str, list[int] | None]:
    """``topic`` or ``topic:0,1,2`` (kafka-consumer-groups' --topic)."""
    topic, sep, parts = spec.partition(":")
    if not sep:
        return topic, None
    try:
        return topic, [int(p) for p in parts.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"--topic {spec!r}: write TOPIC or TOPIC:PARTITION,PARTITION,...") from None


def parse_add_config(text: str) -> dict[str, str]:
    """Kafka's --add-config syntax: ``k1=v1,k2=[v1,v2],k3=v3`` (brackets keep commas)."""
    out: dict[str, str] = {}
    i, n = 0, len(text)
    while i < n:
        eq = text.find("=", i)
        if eq < 0:
            raise UsageError(f"kwire configs: --add-config {text!r}: {text[i:]!r} is not KEY=VALUE")
        key = text[i:eq].strip()
        j = eq + 1
        if j < n and text[j] == "[":
            end = text.find("]", j)
            if end < 0:
                raise UsageError(f"kwire configs: --add-config {text!r}: a '[' without its ']'")
            value = text[j + 1:end]
            j = end + 1
        else:
            end = text.find(",", j)
            end = n if end < 0 else end
            value = text[j:end]
            j = end
        if not key:
            raise UsageError(f"kwire configs: --add-config {text!r}: a value without a key")
        out[key] = value.strip()
        if j < n and text[j] == ",":
            j += 1
        i = j
    return out

"""``kwire serve``: parse flags (Kafka's config names accepted), build a config, run."""
from __future__ import annotations

import argparse
import logging
import sys

import trio

from kwire.config import BrokerConfig
from kwire.errors import StartupError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kwire", description="A Kafka broker in Python on Trio")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve", help="run a broker")
    s.add_argument("--listen", default=None, help="HOST:PORT to listen on (default 127.0.0.1:9092)")
    s.add_argument("--advertised-listener", default=None, help="HOST:PORT clients should connect to")
    s.add_argument("--data-dir", default=None, help="data directory (default ./kwire-data)")
    s.add_argument("--config", default=None, help="a server.properties file (Kafka's key names)")
    s.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                   help="set a config key (repeatable), e.g. --override num.partitions=3")
    s.add_argument("--node-id", type=int, default=None)
    s.add_argument("--controller-listen", default=None,
                   help="HOST:PORT of this node's controller listener (default: its entry in the voters)")
    s.add_argument("--controller-quorum-voters", default=None, metavar="ID@HOST:PORT,...",
                   help="the KRaft voters, e.g. 1@127.0.0.1:9093,2@127.0.0.1:9193,3@127.0.0.1:9293 "
                        "(default: this node alone)")
    s.add_argument("--log-level", default="INFO")
    return p


def config_from_args(args) -> tuple[BrokerConfig, str]:
    """The broker config of ``kwire serve``: server.properties (Java properties syntax), then
    --override, then the flags; every key given here is a static broker config, as in Kafka.
    A value the config table refuses raises ValueError naming the key and value."""
    text = ""
    if args.config:
        with open(args.config, encoding="latin-1") as f:   # java.util.Properties reads ISO 8859-1
            text = f.read()
    overrides = {}
    for item in args.override:
        if "=" not in item:
            raise SystemExit(f"--override needs KEY=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        overrides[k.strip()] = v.strip()
    cfg = BrokerConfig.from_properties(text, overrides)
    if args.data_dir:
        cfg.set("log.dirs", args.data_dir)
    if args.node_id is not None:
        cfg.set("node.id", args.node_id)
    if args.listen:
        cfg.set("listeners", args.listen if "://" in args.listen else f"PLAINTEXT://{args.listen}")
    if args.advertised_listener:
        adv = args.advertised_listener
        cfg.set("advertised.listeners", adv if "://" in adv else f"PLAINTEXT://{adv}")
    if args.controller_quorum_voters:
        cfg.set("controller.quorum.voters", args.controller_quorum_voters)
    listen = cfg.get("listeners")[0]
    scheme, sep, hostport = listen.rpartition("://")
    if hostport.startswith(":"):   # Kafka: a listener without a host binds every interface
        listen = f"{scheme}{sep}0.0.0.0{hostport}"
    return cfg, listen


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=getattr(logging, args.log_level.upper(), logging.INFO),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if args.cmd == "serve":
        from kwire.app import parse_hostport, parse_voters, run_broker

        cfg, listen = config_from_args(args)
        host, port = parse_hostport(listen)
        adv = None
        if cfg.get("advertised.listeners"):
            adv = parse_hostport(cfg.get("advertised.listeners")[0])
        voters_list = cfg.get("controller.quorum.voters")
        voters = parse_voters(",".join(voters_list)) if voters_list else None
        clisten = args.controller_listen
        controller = parse_hostport(clisten) if clisten else None
        try:
            trio.run(lambda: run_broker(cfg, host=host, port=port, advertised=adv, handle_signals=True,
                                        controller_listen=controller, voters=voters))
        except KeyboardInterrupt:
            pass
        except StartupError as exc:
            print(f"kwire: {exc}", file=sys.stderr)
            return 1
        return 0
    return 2

"""Kafka's listener syntax (kwire.listeners) and how ``kwire serve`` splits a config into a
client listener, a controller listener and voters (kwire.cli.serve.plan_from_config)."""
from __future__ import annotations

import pathlib

import pytest

from kwire.cli import build_parser, config_from_args, plan_from_config
from kwire.config import BrokerConfig
from kwire.listeners import Endpoint, ListenerError, parse_endpoint, parse_listeners, parse_voters

STOCK = pathlib.Path(__file__).with_name("kraft_server.properties")


@pytest.mark.parametrize("text,want", [
    ("PLAINTEXT://127.0.0.1:9092", Endpoint("PLAINTEXT", "127.0.0.1", 9092)),
    ("PLAINTEXT://:9092", Endpoint("PLAINTEXT", "", 9092)),
    ("plaintext://localhost:0", Endpoint("PLAINTEXT", "localhost", 0)),
    ("CONTROLLER://[::1]:9093", Endpoint("CONTROLLER", "::1", 9093)),
    ("EXTERNAL://0.0.0.0:29092", Endpoint("EXTERNAL", "0.0.0.0", 29092)),
    ("127.0.0.1:9092", Endpoint("PLAINTEXT", "127.0.0.1", 9092)),
    (":9092", Endpoint("PLAINTEXT", "", 9092)),
    ("9092", Endpoint("PLAINTEXT", "", 9092)),
    ("[::]:9092", Endpoint("PLAINTEXT", "::", 9092)),
])
def test_listener_syntax(text, want):
    ep = parse_endpoint(text)
    assert ep == want
    assert parse_endpoint(str(ep)) == ep          # printing round-trips


@pytest.mark.parametrize("text,words", [
    ("127.0.0.1:abc", ["'abc' is not a number"]),
    ("127.0.0.1", ["has no port", "127.0.0.1:9092"]),
    ("::1:9092", ["brackets"]),
    ("[::1]9092", ["[ADDRESS]:PORT"]),
    ("PLAINTEXT://host:70000", ["out of range"]),
    ("", ["empty"]),
])
def test_bad_listeners_name_the_problem(text, words):
    with pytest.raises(ListenerError) as ei:
        parse_endpoint(text, what="--listen")
    msg = str(ei.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_listener_names_are_unique():
    with pytest.raises(ListenerError, match="PLAINTEXT appears more than once"):
        parse_listeners(["PLAINTEXT://:9092", "PLAINTEXT://:9093"])


def test_voters():
    assert parse_voters("1@127.0.0.1:9093, 2@[::1]:9193") == {1: ("127.0.0.1", 9093), 2: ("::1", 9193)}
    for bad, word in [("1@127.0.0.1", "is not ID@HOST:PORT"), ("1@:9093", "has no host"),
                      ("x@h:1", "is not ID@HOST:PORT"), ("1@h:1,1@h:2", "node 1 twice"),
                      ("1@CONTROLLER://h:1", "without a listener name")]:
        with pytest.raises(ListenerError, match=word):
            parse_voters(bad)


def _plan(*argv, props: str | None = None, tmp_path=None):
    args = list(argv)
    if props is not None:
        path = tmp_path / "server.properties"
        path.write_text(props)
        args = ["--config", str(path), *args]
    parsed = build_parser().parse_args(["serve", *args])
    return plan_from_config(config_from_args(parsed), parsed.controller_listen)


def test_stock_kraft_quickstart_properties():
    """Kafka 4's server.properties: a host-less client listener, a controller listener, a
    one-node quorum found through controller.quorum.bootstrap.servers."""
    plan = _plan("--config", str(STOCK))
    assert plan.client == Endpoint("PLAINTEXT", "", 9092)
    assert plan.advertised == ("localhost", 9092)
    assert plan.voters is None and plan.controller is None
    assert any("quorum of one" in n for n in plan.notes)


def test_kafka3_kraft_properties_with_one_voter(tmp_path):
    props = STOCK.read_text().replace("controller.quorum.bootstrap.servers=localhost:9093",
                                      "controller.quorum.voters=1@localhost:9093")
    plan = _plan(props=props, tmp_path=tmp_path)
    assert plan.voters is None and plan.client.port == 9092


def test_listen_flag_replaces_the_client_listener_only():
    parsed = build_parser().parse_args(["serve", "--config", str(STOCK), "--listen", "19092"])
    cfg = config_from_args(parsed)
    assert cfg.get("listeners") == ["PLAINTEXT://:19092", "CONTROLLER://:9093"]


def test_three_voters_with_controller_listener(tmp_path):
    props = ("node.id=2\nlisteners=PLAINTEXT://:9192,CONTROLLER://:9193\ncontroller.listener.names=CONTROLLER\n"
             "controller.quorum.voters=1@h1:9093,2@h2:9193,3@h3:9293\n")
    plan = _plan(props=props, tmp_path=tmp_path)
    assert plan.controller == ("", 9193) and set(plan.voters) == {1, 2, 3}
    assert any("every interface" in n for n in plan.notes)   # no advertised.listeners: said once


@pytest.mark.parametrize("props,words", [
    ("listeners=PLAINTEXT://:9092,EXTERNAL://:9092\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,"
     "EXTERNAL:SSL\n", ["port 9092", "more than one listener"]),
    ("listeners=EXTERNAL://:9092\nlistener.security.protocol.map=EXTERNAL:KERBEROS\n",
     ["KERBEROS is not a security protocol"]),
    ("listeners=EXTERNAL://:9092\n", ["no security protocol", "EXTERNAL:PLAINTEXT"]),
    ("listeners=CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n", ["no client listener"]),
    ("process.roles=controller\n", ["always brokers"]),
    ("process.roles=broker\ncontroller.quorum.voters=1@h:1,2@h:2\n", ["process.roles=broker"]),
    ("controller.quorum.voters=2@h:9093\n", ["names only node 2"]),
    ("controller.quorum.bootstrap.servers=h1:9093,h2:9093\n", ["controller.quorum.voters"]),
    ("advertised.listeners=PLAINTEXT://:9092\n", ["has no host"]),
    ("advertised.listeners=PLAINTEXT://0.0.0.0:9092\n", ["non-routable"]),
])
def test_configs_kwire_cannot_serve_are_refused(tmp_path, props, words):
    with pytest.raises(ListenerError) as ei:
        _plan(props=props, tmp_path=tmp_path)
    assert "\n" not in str(ei.value) and all(w in str(ei.value) for w in words), str(ei.value)


def test_default_config_listens_on_loopback():
    plan = plan_from_config(BrokerConfig())
    assert plan.client == Endpoint("PLAINTEXT", "127.0.0.1", 9092) and plan.notes == []


def test_several_typed_client_listeners(tmp_path):
    """Kafka's syntax: several client listeners, each with its protocol (by name or through
    listener.security.protocol.map) and its own advertised address."""
    props = ("listeners=PLAINTEXT://127.0.0.1:9092,SSL://:9094,INTERNAL://127.0.0.1:9095,CONTROLLER://:9093\n"
             "controller.listener.names=CONTROLLER\n"
             "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,INTERNAL:SSL,CONTROLLER:PLAINTEXT\n"
             "advertised.listeners=PLAINTEXT://localhost:9092,SSL://kafka.example:19094\n")
    plan = _plan(props=props, tmp_path=tmp_path)
    assert [(c.name, c.protocol, c.advertised) for c in plan.clients] == [
        ("PLAINTEXT", "PLAINTEXT", ("localhost", 9092)), ("SSL", "SSL", ("kafka.example", 19094)),
        ("INTERNAL", "SSL", None)]
    assert plan.client == Endpoint("PLAINTEXT", "127.0.0.1", 9092) and plan.advertised == ("localhost", 9092)
    # --listen replaces the listener of its name and keeps the others
    path = tmp_path / "server.properties"
    parsed = build_parser().parse_args(["serve", "--config", str(path), "--listen", "SSL://127.0.0.1:19094",
                                        "--advertised-listener", "SSL://h:1"])
    cfg = config_from_args(parsed)
    assert cfg.get("listeners")[0] == "SSL://127.0.0.1:19094" and "PLAINTEXT://127.0.0.1:9092" in cfg.get("listeners")

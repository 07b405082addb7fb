"""One composition root: the broker builds every component handlers use before it serves,
and offers what kwire.handlers.BrokerServices declares; nothing attaches itself later."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kwire.fetch_session import FetchSessionCache
from kwire.handlers import BrokerServices
from kwire.producers.ids import ProducerIdManager
from kwire.replication import ReplicaManager
from kwire.testing import Broker

HANDLERS = Path(__file__).resolve().parents[2] / "kwire" / "handlers"


@pytest.mark.slow
def test_the_broker_offers_the_handlers_interface_built_before_serving():
    with Broker() as b:
        broker = b.broker
        assert isinstance(broker, BrokerServices)
        assert isinstance(broker.replica_manager, ReplicaManager)
        assert isinstance(broker.producer_ids, ProducerIdManager)
        assert isinstance(broker.fetch_sessions, FetchSessionCache)
        assert broker.groups is not None          # replayed before serving, or built on first use


def test_handlers_use_only_the_declared_interface():
    """Every ``ctx.broker.X`` / ``b.X`` (b = ctx.broker) a handler uses is declared."""
    declared = {n for n in dir(BrokerServices) if not n.startswith("_")} | set(BrokerServices.__annotations__)
    used = set()
    for path in HANDLERS.glob("*.py"):
        text = path.read_text()
        used |= set(re.findall(r"ctx\.broker\.([a-z_]+)", text))
        if re.search(r"^\s+b = ctx\.broker$", text, re.M):
            # b is also the name of image broker entries in some handlers: those are b.epoch etc.
            used |= set(re.findall(r"\bb\.([a-z_]+)", text)) - {"epoch", "fenced", "host", "port", "rack"}
    assert used - declared == set()
    assert "getattr(ctx.broker" not in "".join(p.read_text() for p in HANDLERS.glob("*.py"))

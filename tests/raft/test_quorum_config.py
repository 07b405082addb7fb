"""The controller.quorum.* timing keys reach the Raft core (Kafka's QuorumConfig): an election
timeout, fetch timeout, election backoff, request timeout and retry backoff set on the broker
are the ones its quorum runs with (they were accepted and ignored before)."""
from __future__ import annotations

import pytest

from kwire.raft.core import RaftConfig
from kwire.testing import Broker

pytestmark = pytest.mark.slow   # an in-process broker listens on TCP


def test_quorum_keys_set_the_raft_timing():
    overrides = {"controller.quorum.election.timeout.ms": 300, "controller.quorum.fetch.timeout.ms": 2500,
                 "controller.quorum.election.backoff.max.ms": 700, "controller.quorum.request.timeout.ms": 1800,
                 "controller.quorum.retry.backoff.ms": 35}
    with Broker(mode="thread", overrides=overrides) as b:
        cfg = b.server.broker.quorum.driver.core.cfg
        assert (cfg.election_timeout_ms, cfg.fetch_timeout_ms, cfg.election_backoff_max_ms,
                cfg.request_timeout_ms, cfg.retry_backoff_ms) == (300, 2500, 700, 1800, 35)


def test_the_defaults_are_kafkas():
    with Broker(mode="thread") as b:
        assert b.server.broker.quorum.driver.core.cfg == RaftConfig()

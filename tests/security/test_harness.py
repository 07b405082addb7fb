"""Broker(security=..., users=...) gives a secured broker and ready client settings: aiokafka
with SCRAM over SASL_SSL in-process, and a `kwire serve` subprocess (process mode)."""
from __future__ import annotations

import asyncio

from hypothesis import given, settings, strategies as st
import pytest

from kwire.testing.broker import Broker
from kwire.security.sasl import SaslAuthenticationFailed, SaslAuthenticator, SaslServerConfig, scram_credential
from tests.security.clients import confluent_roundtrip


@pytest.mark.slow
def test_aiokafka_scram_over_sasl_ssl():
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    with Broker(security="SASL_SSL", users={"dave": "d-pw"}, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        b.create_topic("aio", 1)
        conf = b.client_config("aiokafka", mechanism="SCRAM-SHA-256")

        async def main():
            p = AIOKafkaProducer(**conf)
            await p.start()
            try:
                for i in range(3):
                    await p.send_and_wait("aio", f"a{i}".encode())
            finally:
                await p.stop()
            c = AIOKafkaConsumer("aio", **conf, auto_offset_reset="earliest")
            await c.start()
            try:
                got = []
                while len(got) < 3:
                    got.append((await asyncio.wait_for(c.getone(), 10)).value)
                return got
            finally:
                await c.stop()

        assert asyncio.run(main()) == [b"a0", b"a1", b"a2"]
        assert [r.value for r in b.consume("aio", 3)] == [b"a0", b"a1", b"a2"]   # the harness's own listener


@pytest.mark.slow
def test_process_mode_sasl_plaintext():
    with Broker(mode="process", security="SASL_PLAINTEXT", users={"erin": "e-pw"}, overrides={"group.initial.rebalance.delay.ms": 0}) as b:
        b.create_topic("proc", 1)
        got = confluent_roundtrip(b.client_config("confluent", mechanism="SCRAM-SHA-512"), "proc", 3)
        assert len(got) == 3


_CFG = SaslServerConfig(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"], plain_users={"u": "p"},
                        scram={m: {"u": scram_credential(m, "p")} for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")},
                        max_receive_size=4096)


@settings(max_examples=300, deadline=None)
@given(mech=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
       tokens=st.lists(st.one_of(st.binary(max_size=200), st.text(max_size=80).map(str.encode),
                                 st.sampled_from([b"n,,n=u,r=abc", b"c=biws,r=abc,p=AAAA", b"\x00u\x00p",
                                                  b"y,,n=u,r=x", b"n,a=u,n=u,r=q"])), max_size=4))
def test_garbage_tokens_only_ever_fail_authentication(mech, tokens):
    """Fuzzed SASL exchanges: every outcome is an answer or SaslAuthenticationFailed, never
    another exception (which the edge would log as a server error)."""
    a = SaslAuthenticator(_CFG)
    assert a.handshake(mech, 1)
    for t in tokens:
        try:
            a.authenticate(t)
        except SaslAuthenticationFailed:
            assert a.state in ("failed", "complete")   # complete: a token after the exchange ended
            break

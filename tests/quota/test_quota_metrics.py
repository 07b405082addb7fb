"""Quota metrics on the Prometheus endpoint: absent until a quota exists, then the byte rate and
throttle time per user / client-id under the JMX exporter's names."""
from __future__ import annotations

import pytest

from kwire.testing import Broker

from .test_quota_clients import KB, alter, produce_timed

pytestmark = pytest.mark.slow


def test_throttle_time_and_byte_rate_per_client(tmp_path):
    from tests.cli.test_metrics import scrape  # noqa: PLC0415

    with Broker(data_dir=str(tmp_path / "d"), overrides={"metrics.listen": "127.0.0.1:0",
                                                         "quota.window.num": 2}) as b:
        port = b.server.metrics_port
        assert not any(n.startswith("kafka_server_produce_") for n in scrape(port))
        assert alter(b, {"client-id": "metered"}, {"producer_byte_rate": 100 * KB}) == [(0, None)]
        _, throttles = produce_timed(b, "metered", 200 * 1000)
        assert throttles
        m = scrape(port)
        key = (("client_id", "metered"), ("user", ""))
        assert m["kafka_server_produce_byte_rate"][key] > 0
        assert m["kafka_server_produce_throttle_time"][key] > 0
        assert m["kwire_quota_produce_throttle_time_ms_total"][key] >= max(throttles) * 0.9
        assert "kafka_server_fetch_byte_rate" not in m     # no consumer quota configured

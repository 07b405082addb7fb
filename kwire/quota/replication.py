"""Replication throttling (KIP-73), as Kafka's ReplicationQuotaManager: the throttle
``kafka-reassign-partitions --execute --throttle`` sets while replicas move.

Two quotas per broker, ``leader`` and ``follower``. Which partitions each covers is a topic
config, ``<kind>.replication.throttled.replicas``: ``partition:broker`` entries (or ``*``, every
replica), of which a broker keeps the partitions listed with its own id (Kafka's
TopicConfigHandler.parseThrottledPartitions). The bound is the dynamic broker config
``<kind>.replication.throttled.rate`` in bytes/s (unset: Long.MAX_VALUE, never exceeded),
measured over replication.quota.window.num samples of replication.quota.window.size.seconds.

- Leader (ReplicaManager.read_for_follower, Kafka's ReplicaManager.readFromLog with
  shouldLeaderThrottle): a follower outside the ISR fetching a throttled partition while the
  quota is exceeded gets no records; the bytes sent for throttled partitions are recorded
  (KafkaApis.sizeOfThrottledPartitions).
- Follower (kwire.replication.fetcher, Kafka's ReplicaFetcherThread.buildFetch with
  shouldFollowerThrottle): a replica outside the ISR leaves a throttled partition out of its
  fetch while the quota is exceeded (and asks again after replica.fetch.backoff.ms); the bytes
  it receives for throttled partitions are recorded.

In-sync replicas are never held back, so a throttle slows only the replicas being added.
Nothing here reads a clock: callers pass ``now_ms``."""
from __future__ import annotations

from typing import Callable

from kwire.quota.rate import Rate

LEADER, FOLLOWER = "leader", "follower"
# (topic config naming the throttled replicas, dynamic broker config bounding the rate) per kind
_KEYS = {LEADER: ("leader.replication.throttled.replicas", "leader.replication.throttled.rate"),
         FOLLOWER: ("follower.replication.throttled.replicas", "follower.replication.throttled.rate")}
_UNBOUNDED = 2**63 - 1   # Long.MAX_VALUE: the rate configs' default


def throttled_partitions(raw: str | None, node_id: int) -> bool | frozenset[int]:
    """A ``*.replication.throttled.replicas`` value read for broker ``node_id``: True for ``*``,
    else the partitions listed with this broker (an empty set when none)."""
    if not raw:
        return frozenset()
    out = set()
    for entry in raw.split(","):
        entry = entry.strip()
        if entry == "*":
            return True
        part, sep, broker = entry.partition(":")
        if sep and broker.strip() == str(node_id):
            try:
                out.add(int(part))
            except ValueError:
                continue     # the config's validator refuses these; a stored one is skipped
    return frozenset(out)


class ReplicationQuota:
    """One broker's leader or follower replication quota."""

    def __init__(self, kind: str, node_id: int, config, topic_configs: Callable[[str], dict | None]):
        """``config``: the broker config (dynamic values included); ``topic_configs(topic)``:
        the topic's stored config overrides (None for an unknown topic)."""
        assert kind in (LEADER, FOLLOWER)
        self.kind = kind
        self.node_id = node_id
        self._config = config
        self._topic_configs = topic_configs
        self._replicas_key, self._rate_key = _KEYS[kind]
        self._rate = Rate(int(config.get("replication.quota.window.num")),
                          int(config.get("replication.quota.window.size.seconds")) * 1000)
        # the parsed replicas config per topic, keyed by its raw value (a change re-parses)
        self._parsed: dict[str, tuple[str | None, bool | frozenset[int]]] = {}

    def is_throttled(self, topic: str, partition: int) -> bool:
        configs = self._topic_configs(topic)
        raw = configs.get(self._replicas_key) if configs else None
        if not raw:
            return False
        cached = self._parsed.get(topic)
        if cached is None or cached[0] != raw:
            cached = self._parsed[topic] = (raw, throttled_partitions(raw, self.node_id))
        parts = cached[1]
        return parts is True or partition in parts

    def bound(self) -> int:
        v = self._config.get(self._rate_key)
        return _UNBOUNDED if v is None else int(v)

    def is_exceeded(self, now_ms: int) -> bool:
        """Kafka's isQuotaExceeded: the measured rate above the bound."""
        bound = self.bound()
        if bound >= _UNBOUNDED:
            return False
        return self._rate.measure(now_ms) > bound

    def record(self, size: int, now_ms: int) -> None:
        if size > 0:
            self._rate.record(size, now_ms)

    def should_throttle(self, topic: str, partition: int, in_sync: bool, now_ms: int) -> bool:
        """Kafka's shouldLeaderThrottle / shouldFollowerThrottle: a replica outside the ISR, on a
        throttled partition, with the quota exceeded."""
        return not in_sync and self.is_throttled(topic, partition) and self.is_exceeded(now_ms)

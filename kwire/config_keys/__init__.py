"""The config table: every broker, topic and group config Kafka 4 knows, with Kafka's names,
types, defaults, validators and dynamic update modes (read from Kafka's ServerConfigs,
ServerLogConfigs, LogConfig, KRaftConfigs, QuorumConfig, SocketServerConfigs,
ReplicationConfigs, GroupCoordinatorConfig, GroupConfig, ShareGroupConfig,
ShareCoordinatorConfig, TransactionLogConfig, CleanerConfig, QuotaConfig, MetricConfigs,
BrokerSecurityConfigs, SslConfigs, SaslConfigs, RemoteLogManagerConfig, DelegationTokenManagerConfigs
and DynamicBrokerConfig), in kwire's own words.

Where kwire's default differs from Kafka's the doc says so (node.id, listeners, log.dir: a
kwire node starts without a config file). kwire's own keys are marked ``kwire=True``.
Most keys are accepted, checked, stored and described but change nothing in kwire.
broker_server.py and broker_services.py hold the broker keys, topic_group.py the topic and group
keys (a topic or group key names the broker keys behind its default).
"""
from __future__ import annotations

from kwire.config_keys import broker_server, broker_services, topic_group  # noqa: F401 - they fill the dicts
from kwire.config_keys.define import BROKER, GROUP, TOPIC

__all__ = ["BROKER", "BROKER_SYNONYMS", "GROUP", "TOPIC", "near_miss"]

# Kafka's DynamicBrokerConfig.brokerConfigSynonyms: keys that set the same thing, strongest first.
BROKER_SYNONYMS: dict[str, list[str]] = {}
for _grp in (["log.roll.ms", "log.roll.hours"], ["log.roll.jitter.ms", "log.roll.jitter.hours"],
             ["log.retention.ms", "log.retention.minutes", "log.retention.hours"]):
    for _n in _grp:
        BROKER_SYNONYMS[_n] = _grp
BROKER_SYNONYMS["log.flush.interval.ms"] = ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]



def near_miss(key: str) -> str | None:
    """The broker key ``key`` is a typo of, if it is an unknown near miss of one (or a topic
    key whose broker synonym was meant): ``kwire serve`` refuses such a key, and so do the
    test brokers (kwire.testing), so a misspelt setting never passes silently."""
    if key in BROKER or key.startswith("listener.name."):   # Kafka's per-listener overrides
        return None
    import difflib  # noqa: PLC0415 - only for keys kwire does not know

    near = difflib.get_close_matches(key, list(BROKER), n=1, cutoff=0.85)
    if near:
        return near[0]
    if key in TOPIC:
        return next((s for s in TOPIC[key].synonyms if s in BROKER), None)
    return None

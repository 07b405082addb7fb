"""The config table, server.properties parsing and the values derived from it (no broker)."""
from __future__ import annotations

import pytest

from kwire.config import BROKER, GROUP, TOPIC, BrokerConfig, parse_properties, validate_topic_config
from kwire.configdef import ConfigError, Type, java_double, to_string
from kwire.log.config import LogConfig


def test_every_default_passes_its_own_validator():
    for table in (BROKER, TOPIC, GROUP):
        for spec in table.values():
            if spec.default is not None:
                assert spec.parse(spec.default_string) == spec.default, spec.name


@pytest.mark.parametrize("name,t", [("num.partitions", Type.INT), ("log.retention.ms", Type.LONG),
                                    ("log.retention.hours", Type.INT), ("offsets.topic.replication.factor", Type.SHORT),
                                    ("log.cleanup.policy", Type.LIST), ("log.cleaner.min.cleanable.ratio", Type.DOUBLE),
                                    ("ssl.keystore.password", Type.PASSWORD), ("create.topic.policy.class.name", Type.CLASS),
                                    ("auto.create.topics.enable", Type.BOOLEAN), ("listeners", Type.LIST),
                                    ("listener.security.protocol.map", Type.STRING)])
def test_broker_types_as_kafka_declares_them(name, t):
    assert BROKER[name].type is t


def test_topic_keys_name_their_broker_synonyms():
    assert TOPIC["retention.ms"].synonyms == ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
    assert TOPIC["segment.ms"].synonyms == ("log.roll.ms", "log.roll.hours")
    assert TOPIC["max.message.bytes"].synonyms == ("message.max.bytes",)
    assert TOPIC["retention.ms"].type is Type.LONG and TOPIC["segment.bytes"].type is Type.INT
    for spec in TOPIC.values():
        for s in spec.synonyms:
            assert s in BROKER, (spec.name, s)
            assert BROKER[s].dynamic or s != spec.synonyms[0] or spec.name == "message.format.version", s


def test_dynamic_modes_follow_kafka():
    assert not BROKER["num.partitions"].dynamic and not BROKER["log.retention.hours"].dynamic
    assert BROKER["log.retention.ms"].mode == "cluster-wide"
    assert BROKER["sasl.kerberos.min.time.before.relogin"].mode == "per-broker"
    assert BROKER["max.connections"].mode == "cluster-wide"
    assert BROKER["listeners"].mode == "per-broker" and not BROKER["advertised.listeners"].dynamic


def test_kafka_4_defaults():
    assert BROKER["num.recovery.threads.per.data.dir"].default == 2
    assert TOPIC["message.timestamp.after.max.ms"].default == 3600000
    assert TOPIC["segment.bytes"].default == 1 << 30
    with pytest.raises(ConfigError, match="at least 1048576"):
        TOPIC["segment.bytes"].parse("1000")
    assert GROUP["consumer.session.timeout.ms"].default == 45000
    assert GROUP["share.auto.offset.reset"].default == "latest"


def test_parse_and_print_like_kafka():
    assert BROKER["log.cleanup.policy"].parse(" compact , delete ") == ["compact", "delete"]
    assert TOPIC["cleanup.policy"].parse("") == []          # Kafka 4: an empty policy is valid
    assert to_string(["compact", "delete"], Type.LIST) == "compact,delete"
    assert java_double(1.7976931348623157e308) == "1.7976931348623157E308" and java_double(0.5) == "0.5"
    assert BROKER["auto.create.topics.enable"].parse("TRUE") is True
    with pytest.raises(ConfigError) as ei:
        BROKER["num.partitions"].parse("3000000000")
    assert str(ei.value) == "Invalid value 3000000000 for configuration num.partitions: Not a number of type INT"
    with pytest.raises(ConfigError, match="String must be one of: CreateTime, LogAppendTime"):
        validate_topic_config("message.timestamp.type", "Later")
    with pytest.raises(KeyError):
        validate_topic_config("no.such.key", "1")
    assert validate_topic_config("message.format.version", "2.8-IV1") == "2.8-IV1"   # Kafka 3.x accepted it


def test_properties_syntax_continuations_escapes_unicode_colons():
    text = ("# comment\n! also a comment\n"
            "log.dirs = /data/a,\\\n    /data/b\n"
            "broker.rack:rack\\u0041\n"
            "listeners PLAINTEXT://127.0.0.1:9092\n"
            "my\\ key=tab\\tvalue\n"
            "num.partitions=3   \n")
    props = parse_properties(text)
    assert props["log.dirs"] == "/data/a,/data/b"
    assert props["broker.rack"] == "rackA"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert props["my key"] == "tab\tvalue"
    cfg = BrokerConfig.from_properties(text)
    assert cfg.log_dirs == ["/data/a", "/data/b"] and cfg.data_dir == "/data/a"
    assert cfg.get("num.partitions") == 3 and cfg.get("broker.rack") == "rackA"
    assert cfg.get("my key") == "tab\tvalue"     # unknown keys are kept, as Kafka keeps them
    assert cfg.originals["num.partitions"] == "3   "   # as written; the typed value is trimmed


@pytest.mark.parametrize("key,value,why", [("num.partitions", "zero", "Not a number of type INT"),
                                           ("num.partitions", "0", "Value must be at least 1"),
                                           ("log.message.timestamp.type", "Sometime", "String must be one of"),
                                           ("auto.create.topics.enable", "yes", "either true or false"),
                                           ("log.cleanup.policy", "compact,shred", "String must be one of")])
def test_bad_values_refuse_to_start(key, value, why):
    with pytest.raises(ValueError) as ei:
        BrokerConfig.from_properties(f"{key}={value}\n")
    msg = str(ei.value)
    assert "\n" not in msg and key in msg and value in msg and why in msg
    with pytest.raises(ValueError):
        BrokerConfig.from_properties("", {key: value})


def test_topic_defaults_follow_broker_synonyms():
    assert BrokerConfig().topic_default("retention.ms") == 7 * 24 * 3600 * 1000
    assert BrokerConfig.from_properties("log.retention.hours=2").topic_default("retention.ms") == 2 * 3600000
    cfg = BrokerConfig.from_properties("log.retention.hours=2\nlog.retention.minutes=5")
    assert cfg.topic_default("retention.ms") == 5 * 60000
    cfg = BrokerConfig.from_properties("log.retention.minutes=5\nlog.retention.ms=1234")
    assert cfg.topic_default("retention.ms") == 1234
    assert BrokerConfig.from_properties("log.retention.ms=-5").topic_default("retention.ms") == -1
    assert BrokerConfig.from_properties("log.roll.hours=1").topic_default("segment.ms") == 3600000
    assert BrokerConfig.from_properties("log.cleanup.policy=compact").topic_default("cleanup.policy") == ["compact"]
    assert BrokerConfig().topic_default("flush.ms") == (1 << 63) - 1


def test_dynamic_values_win_over_static():
    cfg = BrokerConfig.from_properties("log.retention.ms=1000\nnum.partitions=2")
    per_broker, cluster = {}, {}
    cfg.dynamic = lambda: (per_broker, cluster)
    cluster["log.retention.ms"] = "2000"
    assert cfg.get("log.retention.ms") == 2000 and cfg.topic_default("retention.ms") == 2000
    per_broker["log.retention.ms"] = "3000"
    assert cfg.get("log.retention.ms") == 3000
    cluster["num.partitions"] = "9"            # read-only keys cannot change at run time
    assert cfg.get("num.partitions") == 2


def test_node_id_and_broker_id():
    assert BrokerConfig().node_id == 1
    assert BrokerConfig.from_properties("broker.id=7").node_id == 7
    assert BrokerConfig.from_properties("broker.id=7\nnode.id=3").node_id == 3


def test_log_config_reads_the_table():
    lc = LogConfig.from_kafka({"segment.bytes": "2097152", "retention.ms": 5, "log.flush.per.append": "true",
                               "cleanup.policy": ["compact"], "not.a.log.key": 1})
    assert lc.segment_bytes == 2097152 and lc.retention_ms == 5 and lc.fsync_per_append is True
    assert LogConfig().max_message_bytes == TOPIC["max.message.bytes"].default

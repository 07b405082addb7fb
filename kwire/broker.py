"""The broker's state: config, metadata image, partition logs, waiters for new data.

Handlers call into this; it never touches sockets. Metadata changes go through
``commit_metadata`` (the metadata log: single node now, the Raft quorum later), and are
applied to the image only once committed.
"""
from __future__ import annotations

import base64
import logging
import os
import re
import uuid
from dataclasses import dataclass

import trio

from kwire.clock import REAL_CLOCK, Clock
from kwire.config import TOPIC_CONFIGS, BrokerConfig, validate_topic_config
from kwire.errors import ErrorCode
from kwire.log.producer_state import append_idempotent
from kwire.metadata import records as R
from kwire.metadata.image import MetadataImage, TopicImage
from kwire.metadata.store import MetadataStore

log = logging.getLogger("kwire.broker")

LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_LENGTH = 249


@dataclass
class TopicError:
    code: ErrorCode
    message: str | None = None


def validate_topic_name(name: str) -> str | None:
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_TOPIC_LENGTH:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_LENGTH} characters"
    if not LEGAL_TOPIC.match(name):
        return f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
    return None


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock = REAL_CLOCK, *,
                 advertised_host: str = "127.0.0.1", advertised_port: int = 9092):
        from kwire.log.manager import LogManager  # noqa: PLC0415 - keep import kwire light

        self.config = config
        self.clock = clock
        self.node_id = config.node_id
        self.advertised_host = advertised_host
        self.advertised_port = advertised_port
        self.data_dir = os.path.abspath(config.data_dir)
        os.makedirs(self.data_dir, exist_ok=True)
        self.cluster_id = self._load_meta_properties()
        self.image = MetadataImage()
        self.store = MetadataStore(os.path.join(self.data_dir, "__cluster_metadata-0"), clock)
        self.logs = LogManager(self.data_dir, self.log_config_for, clock=clock)
        self._waiters: dict[tuple[str, int], set[trio.Event]] = {}
        self.groups = None  # the group coordinator (kwire.groups), attached by the server
        self.producers = None  # the producer-id manager, attached when idempotence lands
        self.fetch_sessions = None

    # ------------------------------------------------------------------ startup
    def _load_meta_properties(self) -> str:
        path = os.path.join(self.data_dir, "meta.properties")
        props: dict[str, str] = {}
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    if "=" in line and not line.startswith("#"):
                        k, v = line.strip().split("=", 1)
                        props[k] = v
        cid = props.get("cluster.id") or self.config.get("cluster.id") or \
            base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not props:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                f.write(f"version=1\ncluster.id={cid}\nnode.id={self.node_id}\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        return cid

    def open(self) -> None:
        """Replay committed metadata, open every partition log, register this broker."""
        for data in self.store.replay():
            self.image.apply_bytes(data)
        for t in self.image.topics.values():
            self.logs.reconfigure(t.name)  # logs were opened before the image knew their configs
            for p in t.partitions:
                self.logs.open_partition(t.name, p)
        for (topic, p) in [tp for tp, _ in self.logs]:
            t = self.image.topics.get(topic)
            if t is None or p not in t.partitions:  # deleted while we were down
                self.logs.delete_partition(topic, p)
        b = self.image.brokers.get(self.node_id)
        if b is None or (b.host, b.port) != (self.advertised_host, self.advertised_port) or b.fenced:
            self.commit_metadata([(R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
                broker_id=self.node_id, incarnation_id=uuid.uuid4(),
                broker_epoch=(b.epoch + 1) if b else 1,
                end_points=[R.REGISTER_BROKER.struct("BrokerEndpoint")(
                    name="PLAINTEXT", host=self.advertised_host, port=self.advertised_port,
                    security_protocol=0)],
                rack=self.config.get("broker.rack"), fenced=False))])
        log.info("broker %d open: cluster %s, %d topics, data dir %s", self.node_id, self.cluster_id,
                 len(self.image.topics), self.data_dir)

    def close(self) -> None:
        self.logs.close()
        self.store.close()

    # ------------------------------------------------------------------ metadata
    def controller_id(self) -> int:
        """The active controller (this node until the Raft quorum lands)."""
        return self.node_id

    def commit_metadata(self, recs: list) -> None:
        """Persist metadata records as one batch, then apply them to the image."""
        encoded = [R.encode_record(m, o) for m, o in recs]
        self.store.append(encoded)
        for m, o in recs:
            self.image.apply(m, o)

    def topic_config(self, topic: TopicImage | None, name: str):
        if topic is not None and name in topic.configs:
            return validate_topic_config(name, topic.configs[name])
        dyn = self.image.broker_configs.get("", {})
        bkey = TOPIC_CONFIGS[name][0]
        if bkey in dyn:
            return validate_topic_config(name, dyn[bkey])
        return self.config.topic_default(name)

    def log_config_for(self, topic_name: str) -> dict:
        """The effective topic configs (Kafka names) for a topic's partition logs."""
        t = self.image.topics.get(topic_name)
        return {name: self.topic_config(t, name) for name in TOPIC_CONFIGS}

    # ------------------------------------------------------------------ topics
    def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                     configs: dict[str, str | None], *, validate_only: bool = False,
                     assignments: dict[int, list[int]] | None = None) -> TopicError:
        err = validate_topic_name(name)
        if err:
            return TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, err)
        if name in self.image.topics:
            return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if num_partitions == -1:
            num_partitions = int(self.config.get("num.partitions"))
        if replication_factor == -1:
            replication_factor = int(self.config.get("default.replication.factor"))
        if assignments:
            num_partitions = len(assignments)
        if num_partitions <= 0:
            return TopicError(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        brokers = [b.node_id for b in self.image.live_brokers()]
        if replication_factor <= 0:
            return TopicError(ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0.")
        if replication_factor > len(brokers):
            return TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                              f"Unable to replicate the partition {replication_factor} time(s): "
                              f"The target replication factor of {replication_factor} cannot be reached "
                              f"because only {len(brokers)} broker(s) are registered.")
        clean: dict[str, str] = {}
        for k, v in (configs or {}).items():
            try:
                validate_topic_config(k, v)
            except KeyError:
                return TopicError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {k}")
            except ValueError as exc:
                return TopicError(ErrorCode.INVALID_CONFIG, str(exc))
            if v is not None:
                clean[k] = v
        if validate_only:
            return TopicError(ErrorCode.NONE)
        topic_id = uuid.uuid4()
        recs: list = [(R.TOPIC, R.TOPIC.cls(name=name, topic_id=topic_id))]
        for p in range(num_partitions):
            replicas = assignments[p] if assignments else \
                [brokers[(p + i) % len(brokers)] for i in range(replication_factor)]
            recs.append((R.PARTITION, R.PARTITION.cls(
                partition_id=p, topic_id=topic_id, replicas=replicas, isr=list(replicas),
                leader=replicas[0], leader_epoch=0, partition_epoch=0)))
        for k, v in clean.items():
            recs.append((R.CONFIG, R.CONFIG.cls(resource_type=R.RESOURCE_TOPIC, resource_name=name, name=k, value=v)))
        self.commit_metadata(recs)
        for p in range(num_partitions):
            self.logs.open_partition(name, p)
        log.info("created topic %s with %d partitions and configs %s", name, num_partitions, clean)
        return TopicError(ErrorCode.NONE)

    def delete_topic(self, name: str) -> TopicError:
        t = self.image.topics.get(name)
        if t is None:
            return TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              "This server does not host this topic-partition.")
        if not self.config.get("delete.topic.enable"):
            return TopicError(ErrorCode.TOPIC_DELETION_DISABLED)
        parts = list(t.partitions)
        self.commit_metadata([(R.REMOVE_TOPIC, R.REMOVE_TOPIC.cls(topic_id=t.topic_id))])
        for p in parts:
            self.logs.delete_partition(name, p)
            self.notify_append(name, p)  # wake fetches so they see the topic is gone
        if self.groups is not None:
            self.groups.delete_topic_offsets([name])
        log.info("deleted topic %s", name)
        return TopicError(ErrorCode.NONE)

    def create_partitions(self, name: str, count: int, *, validate_only: bool = False,
                          assignments: list[list[int]] | None = None) -> TopicError:
        t = self.image.topics.get(name)
        if t is None:
            return TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
        cur = len(t.partitions)
        if count < cur:
            return TopicError(ErrorCode.INVALID_PARTITIONS,
                              f"The topic {name} currently has {cur} partition(s); {count} would not be an increase.")
        if count == cur:
            return TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {cur} partitions.")
        brokers = [b.node_id for b in self.image.live_brokers()]
        rf = len(t.partitions[0].replicas) if t.partitions else 1
        if validate_only:
            return TopicError(ErrorCode.NONE)
        recs = []
        for i, p in enumerate(range(cur, count)):
            replicas = assignments[i] if assignments else [brokers[(p + k) % len(brokers)] for k in range(rf)]
            recs.append((R.PARTITION, R.PARTITION.cls(partition_id=p, topic_id=t.topic_id, replicas=replicas,
                                                      isr=list(replicas), leader=replicas[0])))
        self.commit_metadata(recs)
        for p in range(cur, count):
            self.logs.open_partition(name, p)
        return TopicError(ErrorCode.NONE)

    def set_configs(self, resource_type: int, resource_name: str, changes: dict[str, str | None]) -> None:
        recs = [(R.CONFIG, R.CONFIG.cls(resource_type=resource_type, resource_name=resource_name, name=k, value=v))
                for k, v in changes.items()]
        if recs:
            self.commit_metadata(recs)
            if resource_type == R.RESOURCE_TOPIC:
                self.logs.reconfigure(resource_name)
            else:
                for t in list(self.image.topics):
                    self.logs.reconfigure(t)

    # ------------------------------------------------------------------ data
    def partition_log(self, topic: str, partition: int):
        return self.logs.get(topic, partition)

    def append_records(self, topic: str, partition: int, plog, records, now_ms: int):
        """Append a Produce request's records; on one broker the leader is the whole ISR, so
        the high watermark follows the log end offset at once. Batches with a producer id go
        through the partition's producer state (kwire.log.producer_state): a retried batch
        is answered with its original offsets and not written again."""
        res = append_idempotent(plog, records, now_ms=now_ms, leader_epoch=self.leader_epoch(topic, partition),
                                expiration_ms=int(self.config.get("producer.id.expiration.ms")))
        plog.high_watermark = plog.log_end_offset
        self.notify_append(topic, partition)
        return res

    def leader_epoch(self, topic: str, partition: int) -> int:
        t = self.image.topics.get(topic)
        p = t.partitions.get(partition) if t else None
        return p.leader_epoch if p else -1

    def notify_append(self, topic: str, partition: int) -> None:
        waiters = self._waiters.pop((topic, partition), None)
        if waiters:
            for ev in waiters:
                ev.set()

    def data_event(self, tps) -> trio.Event:
        """An event set at the next append to any of the given partitions."""
        ev = trio.Event()
        for tp in tps:
            self._waiters.setdefault(tp, set()).add(ev)
        return ev

    def forget_event(self, ev: trio.Event, tps) -> None:
        for tp in tps:
            s = self._waiters.get(tp)
            if s is not None:
                s.discard(ev)
                if not s:
                    del self._waiters[tp]

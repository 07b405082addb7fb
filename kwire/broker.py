"""The broker's state: config, metadata image, and the components handlers use (the
composition root, ``_build_components``: replica manager, group coordinator's edge,
producer-id manager, fetch sessions).

Handlers call into this through kwire.handlers.BrokerServices; it never touches sockets.
Metadata changes go through ``submit_metadata`` (async: the Raft quorum of
kwire.metadata.quorum, forwarded to the active controller when this node is not it) and are
applied to the image, on every node, only from committed entries (``_apply_entry``).

The components are imported where the Broker builds them (``__init__``, ``_build_components``,
``open``; tagged ``start-up time: Broker build``): kwire.handlers.configs and many tests import
this module without building a Broker, and the replication, coordinator and quota modules
are ~15 ms of that import. Every Broker built loads them.
"""
from __future__ import annotations

import base64
import hashlib
import logging
import os
import threading
import uuid
from dataclasses import dataclass

import trio

from kwire.clock import REAL_CLOCK, Clock
from kwire.config import BrokerConfig, topic_configs_for_log, validate_topic_config
from kwire.errors import ErrorCode, KafkaError, StartupError
from kwire.log.data_dir import DataDirLock, check_meta_properties, ensure_directory_id
from kwire.log.manager import CLEAN_SHUTDOWN_MARKER, LogManager
from kwire.metadata import records as R
from kwire.metadata import topic_changes as TC
from kwire.metadata.config_control import clear_elr_records
from kwire.metadata.delta import MetadataDelta
from kwire.metadata.image import MetadataImage, TopicImage
from kwire.metadata.publisher import MetadataPublishers
from kwire.metadata.topic_changes import validate_topic_name  # noqa: F401 - handlers import it from here
from kwire.security.authorizer import Authorizer

log = logging.getLogger("kwire.broker")


@dataclass
class TopicError:
    code: ErrorCode
    message: str | None = None
    num_partitions: int = -1       # as the controller decided (CreateTopics v5+ reports them)
    replication_factor: int = -1


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock = REAL_CLOCK, *,
                 advertised_host: str = "127.0.0.1", advertised_port: int = 9092,
                 voters: dict[int, tuple[str, int] | None] | None = None, peer_security=None):
        self.config = config
        self.clock = clock
        self.node_id = config.node_id
        self.advertised_host = advertised_host
        self.advertised_port = advertised_port
        # every client listener as registered: [(name, advertised host, port, security protocol code)],
        # the first being advertised_host/port (kwire.app sets it; empty: one PLAINTEXT listener)
        self.listener_endpoints: list[tuple[str, str, int, int]] = []
        self.data_dir = os.path.abspath(config.data_dir)
        os.makedirs(self.data_dir, exist_ok=True)
        self.voters = voters or {self.node_id: None}
        # how this node reaches the others' inter-broker and controller listeners, and what its own
        # controller listener asks (kwire.security.peers.PeerSecurity; default: PLAINTEXT everywhere)
        from kwire.security.peers import PeerSecurity  # noqa: PLC0415 - start-up time: Broker build (module doc)
        self.peer_security = peer_security or PeerSecurity()
        self.image = MetadataImage()     # replaced (never changed) by each committed batch: _apply_entry
        self.publishers = MetadataPublishers()
        # None: no authorization; it takes each new image's ACLs as a publisher
        self.authorizer = Authorizer.from_config(config, self.image.acls)
        # dynamic broker configs (AlterConfigs) take precedence over the static ones
        config.dynamic = lambda: (self.image.broker_configs.get(str(self.node_id), {}),
                                  self.image.broker_configs.get("", {}))
        self.quorum = None     # kwire.metadata.quorum.MetadataQuorum, from open()
        # every log dir (log.dirs; the data dir, first, also holds the metadata log)
        self.log_dirs = list(dict.fromkeys([self.data_dir, *(os.path.abspath(d) for d in config.log_dirs)]))
        self._locks = []   # one claim per log dir, released by close()
        try:
            for d in self.log_dirs:
                os.makedirs(d, exist_ok=True)
                self._locks.append(DataDirLock(d, self.node_id))
            self.cluster_id = check_meta_properties(self.data_dir, self.node_id, self.config.get("cluster.id") or None,
                                                    self._default_cluster_id)
            for d in self.log_dirs[1:]:   # the same cluster and node in every log dir
                check_meta_properties(d, self.node_id, self.cluster_id, lambda: self.cluster_id)
            # KIP-858: each log dir's id (meta.properties directory.id), named when it fails
            self.directory_ids = {d: ensure_directory_id(d, self.node_id, self.cluster_id) for d in self.log_dirs}
            if len(set(self.directory_ids.values())) != len(self.directory_ids):
                raise StartupError(f"two log dirs have the same directory.id in meta.properties: "
                                   f"{', '.join(self.log_dirs)} (a copied log dir?)")
            self.logs = self._open_logs(LogManager, clock)
        except BaseException:
            for lock in self._locks:
                lock.release()
            raise
        self._nursery = None
        self._trio_token = None
        self._dir_failed = trio.Event()       # set (on the loop) when a log dir fails
        self.stop_requested = trio.Event()    # every log dir failed: the app shuts down
        self.logs.failure_channel.add_listener(self._on_log_dir_failure)
        self._build_components()

    def _open_logs(self, log_manager, clock):
        """Open (and after a crash, recover) every partition log, saying so in the log: a
        recovery is announced before it starts and timed when done."""
        dirs, unclean = 0, False
        for d in self.log_dirs:
            here = sum(1 for e in os.scandir(d)
                       if e.is_dir() and "-" in e.name and not e.name.startswith("__cluster_metadata"))
            dirs += here
            unclean |= here > 0 and not os.path.exists(os.path.join(d, CLEAN_SHUTDOWN_MARKER))
        if unclean:
            log.info("recovering the %d partition logs in %s after an unclean shutdown: each is checked from its "
                     "recovery point (CRC, indexes, torn tail)", dirs, self.data_dir)
        t0 = clock.monotonic_ms()
        done = threading.Event()

        def still_opening() -> None:   # a long open or recovery says it is alive every 10 s
            while not done.wait(10.0):
                log.info("still %s the %d partition logs in %s (%.0f s so far)", "recovering" if unclean else "opening",
                         dirs, self.data_dir, (clock.monotonic_ms() - t0) / 1000)

        if dirs:
            threading.Thread(target=still_opening, name="kwire-log-open-progress", daemon=True).start()
        try:
            logs = log_manager(self.data_dir, self.log_config_for, clock=clock, log_dirs=self.log_dirs)
        finally:
            done.set()
        took = (clock.monotonic_ms() - t0) / 1000
        segments = sum(len(p.segments) for p in logs.logs.values())
        log.info("%s %d partition logs (%d segments) in %.2f s", "recovered" if unclean else "loaded",
                 len(logs.logs), segments, took)
        return logs

    def _build_components(self) -> None:
        """The composition root: every component a handler reaches through
        ``RequestContext.broker`` (kwire.handlers.BrokerServices) is built here, once, before
        the metadata replays and anything is served; nothing attaches itself later."""
        from kwire.fetch_session import FetchSessionCache  # noqa: PLC0415 - start-up time: Broker build (module doc)
        from kwire.groups.edge import GroupEdge  # noqa: PLC0415 - start-up time: Broker build (module doc)
        from kwire.producers.ids import ProducerIdManager  # noqa: PLC0415 - start-up time: Broker build (module doc)
        from kwire.replication import ReplicaManager  # noqa: PLC0415 - start-up time: Broker build (module doc)
        from kwire.replication.fetcher import ReplicaFetcherManager  # noqa: PLC0415 - start-up time: Broker build (module doc)
        from kwire.replication.isr import IsrChanges  # noqa: PLC0415 - start-up time: Broker build (module doc)
        from kwire.replication.replica_selector import selector_for  # noqa: PLC0415 - start-up time: Broker build (module doc)
        from kwire.transactions.edge import TransactionEdge  # noqa: PLC0415 - start-up time: Broker build (module doc)

        # the partitions this node hosts: logs, leader epochs, high watermarks, ISR, waiters
        self.replica_manager = ReplicaManager(
            self.node_id, self.logs, lambda: self.image,
            producer_id_expiration_ms=lambda: int(self.config.get("producer.id.expiration.ms")),
            now_ms=self.clock.now_ms)
        # replica.selector.class: consumers' preferred read replicas (KIP-392); None: the leader
        self.replica_manager.replica_selector = selector_for(self.config.get("replica.selector.class"))
        # replication throttles (KIP-73: kafka-reassign-partitions --throttle), leader and follower side
        from kwire.quota.replication import (  # noqa: PLC0415 - start-up time: Broker build (module doc)
            FOLLOWER, LEADER, ReplicationQuota)

        def topic_configs(name: str):
            t = self.image.topics.get(name)
            return t.configs if t is not None else None
        self.replica_manager.leader_quota = ReplicationQuota(LEADER, self.node_id, self.config, topic_configs)
        follower_quota = ReplicationQuota(FOLLOWER, self.node_id, self.config, topic_configs)
        # follower fetchers (one per leader broker) and the ISR changes sent to the controller
        self.replica_fetchers = ReplicaFetcherManager(
            self.node_id, self.replica_manager, lambda: self.image, self.config, self.clock.now_ms,
            self._broker_epoch, link=self.peer_security.inter_broker)
        self.replica_fetchers.quota = follower_quota
        self.isr_changes = IsrChanges(self.node_id, self.replica_manager, lambda: self.image, lambda: self.quorum,
                                      int(self.config.get("replica.lag.time.max.ms")))
        # the group coordinator's Trio edge: it replays __consumer_offsets in start_groups
        # (kwire.groups.edge, before the listeners serve); ``groups`` is None until then
        self.group_edge = GroupEdge(self)
        # the transaction coordinator's Trio edge (kwire.transactions.edge): opened in
        # start_transactions, it follows __transaction_state leadership like the groups
        self.txn_edge = TransactionEdge(self)
        self.producer_ids = ProducerIdManager(expiration_ms=int(self.config.get("producer.id.expiration.ms")))
        self.producer_ids_lock = trio.Lock()   # one block allocation (a metadata commit) at a time
        self.fetch_sessions = FetchSessionCache()
        # KIP-932: share_partitions and share_state, built on first use (see _share)
        self._share_components = None
        # client quotas (kwire.quota): sensors per user / client id, bounds from the image
        from kwire.quota.manager import ClientQuotas  # noqa: PLC0415 - start-up time: Broker build (module doc)
        self.quotas = ClientQuotas(lambda: self.image.client_quotas, int(self.config.get("quota.window.num")),
                                   int(self.config.get("quota.window.size.seconds")))
        # who hears of each new image, in this order (kwire.metadata.publisher): this node's
        # replicas, then the coordinators (both from open(), once the metadata has replayed),
        # the quotas, the authorizer; the controller adds its wake-up when the quorum starts
        from kwire.broker_metadata import (  # noqa: PLC0415 - start-up time: Broker build (module doc)
            CoordinatorPublisher, ReplicaPublisher)
        self.replica_publisher = ReplicaPublisher(self)
        self.coordinator_publisher = CoordinatorPublisher(self)
        for p in (self.replica_publisher, self.coordinator_publisher, self.quotas, self.authorizer):
            if p is not None:
                self.publishers.install(p)

    # KIP-932: the share partitions this node leads with the share sessions of its clients
    # (kwire.share.manager, Kafka's SharePartitionManager) and their durable form in
    # __share_group_state (kwire.share.state_store: the persister and the share coordinator).
    # Built on first use: a share-group request, a share group deleted, or the start-up load
    # of a __share_group_state that exists (KafkaServer.start_background); a broker that
    # serves no share group never imports the share modules (start-up time, issue 29).
    @property
    def share_partitions(self):
        return self._share()[0]

    @property
    def share_state(self):
        return self._share()[1]

    @property
    def share_built(self) -> bool:
        return self._share_components is not None

    def _share(self):
        if self._share_components is None:
            from kwire.share.manager import SharePartitionManager  # noqa: PLC0415 - start-up time: share groups only
            from kwire.share.settings import share_settings  # noqa: PLC0415 - start-up time: share groups only
            from kwire.share.state_store import ShareStateStore  # noqa: PLC0415 - start-up time: share groups only
            manager = SharePartitionManager(lambda gid: share_settings(self.config, self.image, gid))
            self._share_components = (manager, ShareStateStore(self, manager))
        return self._share_components

    def _broker_epoch(self) -> int:
        b = self.image.brokers.get(self.node_id)
        return b.epoch if b is not None else -1

    @property
    def groups(self):
        """The group coordinator (kwire.groups.GroupCoordinator); None until it has replayed
        __consumer_offsets at start-up."""
        return self.group_edge.coordinator

    # ------------------------------------------------------------------ startup
    def _default_cluster_id(self) -> str:
        """A fresh id for a node alone; for a quorum, one every voter derives alike from the
        voter list (no storage-format step needed; set cluster.id to choose one)."""
        if len(self.voters) > 1:
            text = ",".join(f"{n}@{a[0]}:{a[1]}" for n, a in sorted(self.voters.items()) if a)
            digest = hashlib.sha256(text.encode()).digest()[:16]
            return base64.urlsafe_b64encode(digest).decode().rstrip("=")
        return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")

    async def open(self, nursery, controller_listeners=None, raft_config=None) -> None:
        """Start the metadata quorum, replay committed metadata, open this node's partition
        logs, register this broker (with the active controller)."""
        from kwire.metadata.quorum import MetadataQuorum  # noqa: PLC0415 - start-up time: Broker build (module doc)

        self._nursery = nursery   # for disk work that the publishers leave to a worker thread
        self.quorum = MetadataQuorum(self, self.voters, controller_listeners=controller_listeners,
                                     raft_config=raft_config)
        await self.quorum.start(nursery)
        await self.quorum.wait_caught_up()
        self.replica_publisher.start(self.image)   # logs not open yet open in worker threads
        self.coordinator_publisher.start()         # (their loads wait for those opens)
        self.replica_fetchers.start(nursery)
        self.isr_changes.start(nursery)
        self._trio_token = trio.lowlevel.current_trio_token()
        nursery.start_soon(self._watch_log_dirs)
        nursery.start_soon(self.replica_manager.log_dir_mover.run)
        injected = self.config.get("kwire.test.failed.log.dirs.file")
        if injected:   # tests: a deterministic disk failure in a broker process
            nursery.start_soon(self._inject_log_dir_failures, str(injected))
        # dynamic broker configs are known now that the metadata has replayed
        self.producer_ids.expiration_ms = int(self.config.get("producer.id.expiration.ms"))
        b = self.image.brokers.get(self.node_id)
        # a new registration (epoch) ends a controlled shutdown; after an unclean shutdown (no
        # clean-shutdown marker: the log may have lost an unflushed tail) it takes this broker
        # out of the ISRs others share until it has caught up (the controller's
        # _registration_effects)
        endpoints = self.listener_endpoints or [("PLAINTEXT", self.advertised_host, self.advertised_port, 0)]
        if b is None or (b.host, b.port) != (self.advertised_host, self.advertised_port) or b.fenced \
                or b.rack != self.config.get("broker.rack") \
                or b.endpoints != {n: (h, p, sp) for n, h, p, sp in endpoints} \
                or b.in_controlled_shutdown or (len(self.voters) > 1 and not self.logs.was_clean_shutdown):
            rec = (R.REGISTER_BROKER, R.REGISTER_BROKER.cls(
                broker_id=self.node_id, incarnation_id=uuid.uuid4(),
                broker_epoch=(b.epoch + 1) if b else 1,
                end_points=[R.REGISTER_BROKER.struct("BrokerEndpoint")(name=n, host=h, port=p, security_protocol=sp)
                            for n, h, p, sp in endpoints],
                rack=self.config.get("broker.rack"), fenced=False))
            while True:
                try:
                    await self.submit_metadata([rec])
                    break
                except KafkaError as exc:
                    log.info("broker %d registration not done yet (%s); retrying", self.node_id, exc)
                    await trio.sleep(0.2)
        await self.replica_publisher.wait_opens()   # served once opened, as when they opened on the loop
        await self._wait_for_leaderships(5.0)
        log.info("broker %d open: cluster %s, %d topics, data dir %s", self.node_id, self.cluster_id,
                 len(self.image.topics), self.data_dir)

    async def _wait_for_leaderships(self, timeout: float) -> None:
        """Before serving: the partitions left without a leader that this broker may lead (its
        replicas were in a failed log dir, or it was the last one up: in the ISR, or with ELR
        on in the ELR or as the last known leader, KIP-966) get their leader from the
        controller, as a Kafka broker serves once unfenced, after the controller's
        handleBrokerUnfenced has elected it. Bounded: a controller that does not answer
        leaves them to its next sweep."""
        me = self.node_id

        def leaderless() -> bool:
            return any(p.leader == -1 and (me in p.isr or me in p.elr or me in p.last_known_elr)
                       for t in self.image.topics.values() for p in t.partitions.values())
        if not leaderless():
            return
        with trio.move_on_after(timeout):
            while leaderless():
                with trio.move_on_after(0.05):
                    await self.quorum.driver.wait_changed()

    # ------------------------------------------------------------------ failed log dirs
    def _on_log_dir_failure(self, log_dir: str) -> None:
        """LogDirFailureChannel listener (any thread): wake ``_watch_log_dirs``."""
        token = self._trio_token
        if token is None:
            return      # before open(): _watch_log_dirs reads the channel when it starts
        try:
            token.run_sync_soon(lambda: self._dir_failed.set())
        except trio.RunFinishedError:
            pass

    async def _watch_log_dirs(self) -> None:
        """Kafka's ReplicaManager.handleLogDirFailure on the broker side: a failed dir's
        partitions stop fetching, the dir is reported to the active controller (which moves
        their leaderships and ISR places elsewhere) at once and again every
        broker.heartbeat.interval.ms while it stays offline (a new controller learns it so);
        when every log dir has failed, the broker shuts down (Kafka halts)."""
        handled: set[str] = set()
        all_dirs = set(self.directory_ids)
        interval = max(0.05, int(self.config.get("broker.heartbeat.interval.ms")) / 1000)
        while True:
            self._dir_failed = trio.Event()   # before reading: a failure from now on sets it
            offline = set(self.logs.failure_channel.offline_dirs) & all_dirs
            new = offline - handled
            if new:
                handled |= new
                tps = self.replica_manager.partitions_in_dirs(new)
                for tp in tps:
                    self.replica_fetchers.remove(tp)
                log.warning("broker %d stopped serving %d partition(s) in failed log dir(s) %s", self.node_id,
                            len(tps), ", ".join(sorted(new)))
            reported = True
            if offline:
                parts = []
                for topic, p in self.replica_manager.partitions_in_dirs(offline):
                    t = self.image.topics.get(topic)
                    if t is not None:
                        parts.append((t.topic_id, p))
                ids = [self.directory_ids[d] for d in sorted(offline)]
                reported = await self.quorum.report_offline_dirs(ids, parts, timeout=max(interval, 1.0))
            if offline == all_dirs and reported and not self.stop_requested.is_set():
                log.error("broker %d: shutting down because every log dir (%s) has failed", self.node_id,
                          ", ".join(sorted(all_dirs)))
                self.stop_requested.set()
            with trio.move_on_after(interval if offline else float("inf")):
                await self._dir_failed.wait()

    async def _inject_log_dir_failures(self, path: str) -> None:
        """Tests only (kwire.test.failed.log.dirs.file): each of this broker's log dirs listed
        in the file fails as on an I/O error (EIO), through the same LogDirFailureChannel."""
        while True:
            try:
                with open(path, encoding="utf-8") as f:
                    listed = {os.path.abspath(line.strip()) for line in f if line.strip()}
            except OSError:
                listed = set()
            for d in sorted(listed & set(self.directory_ids)):
                self.logs.failure_channel.maybe_add_offline_log_dir(
                    d, "injected failure (kwire.test.failed.log.dirs.file)", OSError(5, os.strerror(5)))
            await trio.sleep(0.05)

    def close(self) -> None:
        try:
            self.logs.close()
        finally:
            for lock in self._locks:
                lock.release()

    # ------------------------------------------------------------------ metadata
    def controller_id(self) -> int:
        """The active controller: the metadata quorum's leader (-1 while there is none)."""
        return self.quorum.driver.leader_id if self.quorum is not None else -1

    async def submit_metadata(self, recs: list) -> int:
        """Commit metadata records through the active controller; applied here on return.
        Raises KafkaError with the controller's error code (TOPIC_ALREADY_EXISTS, ...)."""
        return await self.quorum.commit([R.encode_record(m, o) for m, o in recs])

    def _apply_entry(self, entry) -> None:
        """A committed entry of the metadata log (every node): its records make a delta and a
        new image (Kafka's MetadataLoader), which the publishers then take in order."""
        delta = MetadataDelta(self.image)
        for value in entry.records:
            delta.replay(*R.decode_record(value))
        self._publish(delta, delta.apply(entry.offset))

    def _publish(self, delta, image) -> None:
        self.image = image   # first: a publisher (and everything it calls) reads the new image
        self.publishers.publish(delta, image)

    def _install_snapshot(self, data: bytes) -> None:
        """A snapshot (the leader's, or our own at startup) replaces the image."""
        from kwire.metadata.snapshot import decode_snapshot  # noqa: PLC0415 - start-up time: snapshots only

        image = decode_snapshot(data)
        self._publish(MetadataDelta.snapshot(self.image, image), image)

    def _snapshot(self):
        """The metadata quorum's snapshot source: the encoder of the image as it is now
        (immutable: the driver runs it in a worker thread while later batches apply)."""
        from kwire.metadata.snapshot import encode_snapshot  # noqa: PLC0415 - loaded only when a snapshot is due

        image = self.image
        return lambda: encode_snapshot(image)


    def topic_config(self, topic: TopicImage | None, name: str):
        """One topic config's effective typed value: the topic's override, else the broker's
        default (dynamic, static, Kafka's)."""
        if topic is not None and topic.configs.get(name) is not None:
            try:
                return validate_topic_config(name, topic.configs[name])
            except ValueError:
                pass
        return self.config.topic_default(name)

    def log_config_for(self, topic_name: str) -> dict:
        """The effective topic configs (Kafka names) for a topic's partition logs, and kwire's
        log.flush.per.append."""
        t = self.image.topics.get(topic_name)
        out = topic_configs_for_log(self.config, t.configs if t is not None else None)
        out["log.flush.per.append"] = bool(self.config.get("log.flush.per.append"))
        return out

    # ------------------------------------------------------------------ topics
    async def create_topic(self, name: str, num_partitions: int, replication_factor: int,
                           configs: dict[str, str | None], *, validate_only: bool = False,
                           assignments: dict[int, list[int]] | None = None) -> TopicError:
        """Create a topic: the active controller checks the request against its image,
        places the replicas (kwire.metadata.placement) and commits; answered once applied
        here. The controller makes the logs of the partitions it will lead before the commit
        (``_make_logs``); every other leader opens its own as the records apply."""
        out = await self.quorum.create_topic(TC.CreateTopic(
            name, num_partitions, replication_factor, assignments or None, dict(configs or {}), validate_only))
        if out.code == ErrorCode.TOPIC_ALREADY_EXISTS:
            # created by someone else just now: let this node's image catch up with it
            with trio.move_on_after(5):
                while name not in self.image.topics:
                    await trio.sleep(0.02)
        if out.code == ErrorCode.NONE and not validate_only:
            await self.replica_publisher.wait_opens(name)   # this node's new logs, opening off the loop
            log.info("created topic %s with %d partitions, replication factor %d", name, out.num_partitions,
                     out.replication_factor)
        return TopicError(out.code, out.message, out.num_partitions, out.replication_factor)

    async def delete_topic(self, name: str) -> TopicError:
        t = self.image.topics.get(name)
        if t is None:
            return TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                              "This server does not host this topic-partition.")
        if not self.config.get("delete.topic.enable"):
            return TopicError(ErrorCode.TOPIC_DELETION_DISABLED)
        try:   # logs, waiting fetches and committed offsets go as the record applies
            await self.submit_metadata([(R.REMOVE_TOPIC, R.REMOVE_TOPIC.cls(topic_id=t.topic_id))])
        except KafkaError as exc:
            return TopicError(exc.code, str(exc))
        log.info("deleted topic %s", name)
        return TopicError(ErrorCode.NONE)

    async def create_partitions(self, name: str, count: int, *, validate_only: bool = False,
                                assignments: list[list[int]] | None = None) -> TopicError:
        """Add partitions to a topic, placed by the active controller (see create_topic)."""
        out = await self.quorum.create_partitions(TC.CreatePartitions(name, count, assignments, validate_only))
        if out.code == ErrorCode.NONE and not validate_only:
            await self.replica_publisher.wait_opens(name)
        return TopicError(out.code, out.message)

    async def _make_logs(self, topic: str, partitions: list[int]) -> list:
        """On the active controller: create the logs of new partitions this node will lead
        before their records are committed (disk work in a worker thread), so a failure to create them (EMFILE,
        EACCES, ENOSPC ...) refuses the request with KAFKA_STORAGE_ERROR, as Kafka's
        LogManager does, and nothing is committed. Partitions other nodes will lead are
        opened by those nodes as the records apply (kwire.broker_metadata.ReplicaPublisher): a failure
        there marks the partition offline on that node (KAFKA_STORAGE_ERROR to clients)."""
        if not partitions:
            return []
        made = await trio.to_thread.run_sync(self.logs.make_logs, topic, partitions,
                                             self.logs.config_for(topic))
        return self.logs.stage(made)

    async def _drop_staged(self, staged: list) -> None:
        """Remove logs made for a create whose records did not apply (refused, or lost to
        another leader): no directory is left behind for a partition that does not exist."""
        dirs = self.logs.unstage(staged)
        if dirs:
            await trio.to_thread.run_sync(self.logs.remove_dirs, dirs)

    async def set_configs(self, resource_type: int, resource_name: str, changes: dict[str, str | None]) -> None:
        """Commit config changes (logs pick them up as they apply). Raises KafkaError."""
        recs = [(R.CONFIG, R.CONFIG.cls(resource_type=resource_type, resource_name=resource_name, name=k, value=v))
                for k, v in changes.items()]
        recs += clear_elr_records(self.image, resource_type, resource_name, changes)
        if recs:
            await self.submit_metadata(recs)

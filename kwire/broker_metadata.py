"""The broker's metadata publishers (Kafka's BrokerMetadataPublisher and the coordinators'
part of it): what a new metadata image means for this node's partitions, follower fetchers,
logs and coordinators.

Each takes (delta, image) from kwire.metadata.publisher.MetadataPublishers after every
committed batch (kwire.broker._apply_entry) and acts only on what the delta changed:

- ``ReplicaPublisher``: deleted topics stop (waiters see them gone, fetchers stop, logs are
  renamed aside and removed in a worker thread); created or changed partitions take the
  role, leader epoch and ISR the image gives them (ReplicaManager.apply_partition: the image
  is their one source); changed topic or broker configs reconfigure the logs. A partition
  whose log is not open here has it opened (and recovered) in a worker thread first, one open
  per partition at a time, the role taken up when it ended (``_open_then_apply``); the
  coordinators' loads of it wait for that (ReplicaManager.wait_log_open). Until the
  broker has replayed the metadata log (``start``) it does nothing: ``start`` then takes up
  every role at once, as Kafka's publisher does with its first, full delta.
- ``CoordinatorPublisher``: the group and transaction coordinators follow the leadership of
  __consumer_offsets / __transaction_state; a deleted topic's committed offsets go.
"""
from __future__ import annotations

import logging

import trio

log = logging.getLogger("kwire.broker")
EPOCH_CHECKPOINT_CHUNK = 256   # leader-epoch checkpoints written per worker-thread call (_write_epoch_checkpoints)


class ReplicaPublisher:
    name = "ReplicaManager"

    def __init__(self, broker) -> None:
        self.broker = broker
        self.live = False                  # set by start(), once the metadata log has replayed
        self._epochs_due: list = []        # logs whose new leader epoch is not in the file yet
        self._epochs_writing = False

    # ------------------------------------------------------------------ publishing
    def on_metadata_update(self, delta, image) -> None:
        if not self.live:
            return
        if delta.is_snapshot:   # a snapshot replaced the image: take up every role afresh
            self.reconcile(image)
            return
        b = self.broker
        node = b.node_id
        for t in delta.deleted_topics.values():
            for p in t.partitions:
                b.replica_manager.partition_deleted(t.name, p)  # waiters see the topic gone
                b.replica_fetchers.remove((t.name, p))
            self.delete_logs([(t.name, p) for p in t.partitions])
        rm = b.replica_manager
        for topic, index in delta.changed_partition_names(image):
            p = image.topics[topic].partitions[index]
            if node in p.replicas or p.leader == node or (topic, index) in rm.partitions:
                self.apply_partition(topic, index)
        # after the partitions: a new topic's logs (the controller makes its own before the
        # commit, when the image does not know the topic's configs yet) take up its configs
        created = {image.topics_by_id[i].name for i in delta.created_topics if i in image.topics_by_id}
        if delta.changed_broker_configs:
            for name in list(image.topics):
                b.logs.reconfigure(name)
        else:
            for name in sorted(delta.changed_topic_configs | created):
                if name in image.topics:
                    b.logs.reconfigure(name)

    def start(self, image) -> None:
        """After replay: open the logs of partitions this node hosts, take up its roles in
        them, drop deleted ones; from now on each delta is acted on."""
        self.live = True
        self.reconcile(image)

    def reconcile(self, image) -> None:
        b = self.broker
        for t in image.topics.values():
            b.logs.reconfigure(t.name)  # logs were opened before the image knew their configs
            for p in t.partitions.values():
                if p.leader == b.node_id or b.node_id in p.replicas:
                    self.apply_partition(t.name, p.index)
        for (topic, p) in [tp for tp, _ in b.logs]:
            t = image.topics.get(topic)
            if t is None or p not in t.partitions:  # deleted while we were down
                b.replica_manager.partition_deleted(topic, p)
                b.replica_fetchers.remove((topic, p))
                b.logs.delete_partition(topic, p)

    # ------------------------------------------------------------------ one partition
    def apply_partition(self, topic: str, partition: int) -> None:
        """Make this node leader or follower of a partition as the image says, and move the
        follower fetchers with the role. A partition whose log is not open here (a new one
        this node did not make before the commit, or one found again) has it opened and
        recovered in a worker thread first (``_open_then_apply``), one open per partition at
        a time: a delta naming the partition meanwhile leaves it to the open's end, which
        applies the image as it is then. Offline when the open fails."""
        b = self.broker
        rm = b.replica_manager
        if rm.log_opening(topic, partition):
            return
        if b._nursery is not None:
            plan = rm.begin_open(topic, partition)
            if plan is not None:
                b._nursery.start_soon(self._open_then_apply, plan, topic, partition)
                return
        tr = rm.apply_partition(topic, partition)
        tp = (topic, partition)
        if tr is None:
            b.replica_fetchers.remove(tp)
            if tp in b.replica_manager.partitions:
                # no longer a replica (a reassignment moved it away): stop, delete the log
                b.replica_manager.partition_deleted(topic, partition)
                self.delete_logs([tp])
            return
        if tr.leader and tr.new_epoch and tr.partition.log.leader_epoch_cache.dirty:
            self._epoch_checkpoint_due(tr.partition.log)
        if tr.leader or b.replica_manager.log_offline(topic, partition):
            # a replica in a failed log dir fetches nothing (Kafka's HostedPartition.Offline)
            b.replica_fetchers.remove(tp)
        else:
            b.replica_fetchers.update(tr.partition)

    async def _open_then_apply(self, plan, topic: str, partition: int) -> None:
        """The open in a worker thread, then the role (ReplicaManager.finish_open); the
        coordinators' loads of the partition wait for both (``wait_log_open``)."""
        def then() -> None:
            try:
                self.apply_partition(topic, partition)
            except Exception:  # noqa: BLE001 - as a publisher that raises: logged, the broker goes on
                log.exception("taking up %s-%d after its log opened failed", topic, partition)

        await self.broker.replica_manager.finish_open(plan, then)

    async def wait_opens(self, topic: str | None = None) -> None:
        """Until the log opens running now (of ``topic``; None: all) ended and their roles
        are taken up: a broker serves once its start-up opens ended, a CreateTopics is
        answered once this node's partitions are open, as when the opens ran on the loop."""
        await self.broker.replica_manager.wait_logs_open(topic)

    def _epoch_checkpoint_due(self, plog) -> None:
        """A new leader epoch's entry goes to the checkpoint file soon, in a worker thread
        (Kafka's makeLeader writes it at once), rather than at the next flush or the close:
        a shutdown right after thousands of partitions were created would otherwise create
        thousands of files (issue 32). One writer task at a time takes what is due."""
        self._epochs_due.append(plog)
        if not self._epochs_writing and self.broker._nursery is not None:
            self._epochs_writing = True
            self.broker._nursery.start_soon(self._write_epoch_checkpoints)

    async def _write_epoch_checkpoints(self) -> None:
        try:
            while self._epochs_due:
                # in chunks: a shutdown waits for the chunk in hand (a thread is not cancelled)
                chunk = self._epochs_due[:EPOCH_CHECKPOINT_CHUNK]
                del self._epochs_due[:EPOCH_CHECKPOINT_CHUNK]
                await trio.to_thread.run_sync(self.broker.logs.write_epoch_checkpoints, chunk)
        finally:
            self._epochs_writing = False

    def delete_logs(self, tps) -> None:
        """Rename the logs aside here; their files go in a worker thread."""
        logs = self.broker.logs
        doomed = []
        for topic, p in tps:
            aside = logs.delete_later(topic, p)
            if aside is not None:
                doomed.append(aside)
        if doomed:
            self.broker._nursery.start_soon(self._remove_deleted, doomed)

    async def _remove_deleted(self, dirs: list[str]) -> None:
        try:
            await trio.to_thread.run_sync(self.broker.logs.remove_deleted, dirs)
        except OSError as exc:   # left for the next start, which removes *-delete dirs
            log.warning("removing deleted logs %s failed: %s", dirs, exc)


class CoordinatorPublisher:
    """The coordinators follow the leadership of their topics' partitions (Kafka's
    BrokerMetadataPublisher.updateCoordinator: onElection / onResignation)."""
    name = "Coordinators"

    def __init__(self, broker) -> None:
        self.broker = broker
        self.live = False

    def on_metadata_update(self, delta, image) -> None:
        if not self.live:
            return
        b = self.broker
        if delta.is_snapshot:   # a snapshot may have moved leaders
            b.group_edge.follow_image()
            b.txn_edge.follow_image()
            return
        gone = [t.name for t in delta.deleted_topics.values()]
        if gone and b.groups is not None:
            b.groups.delete_topic_offsets(gone)
        for tid in delta.changed_partitions:
            t = image.topics_by_id.get(tid)
            if t is not None and t.name == "__consumer_offsets":
                b.group_edge.follow_image()
            elif t is not None and t.name == "__transaction_state":
                b.txn_edge.follow_image()

    def start(self) -> None:
        self.live = True
        self.broker.group_edge.follow_image()
        self.broker.txn_edge.follow_image()

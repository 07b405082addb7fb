"""The active controller's partition decisions (Kafka's ReplicationControlManager): given the
metadata image, the records that fence, unfence or shut down a broker, answer an
AlterPartition, elect leaders on request (ElectLeaders) or to rebalance preferred leaders.
Pure: every function reads the image and returns records (``(message, object)`` pairs) to
commit; kwire.metadata.controller proposes them, one decision at a time, so each decision
sees the previous one applied.

``unclean`` is a callable ``TopicImage -> bool``: the topic's unclean.leader.election.enable
(else the broker default, false).
"""
from __future__ import annotations

import uuid
from typing import Callable, Iterable, Iterator

from kwire.errors import ErrorCode
from kwire.metadata import records as R
from kwire.metadata.config_control import elr_enabled, topic_min_isr
from kwire.metadata.image import MetadataImage, PartitionImage, TopicImage
from kwire.metadata.partition_change import (NO_LEADER, RECOVERED, RECOVERING, AlterPartitionResult, Election,
                                             PartitionChangeBuilder, election_for, leader_acceptor)
from kwire.metadata.placement import PlacementError, validate_assignment

Unclean = Callable[[TopicImage], bool]
NEVER: Unclean = lambda _t: False  # noqa: E731

ELECTION_MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
}


def _partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, PartitionImage]]:
    for t in image.topics.values():
        for p in t.partitions.values():
            yield t, p


# (topic id, partition) -> the brokers whose replica of it sits in a failed log dir
OfflineReplicas = dict[tuple[uuid.UUID, int], set[int]]


def builder(image: MetadataImage, t: TopicImage, p: PartitionImage, acceptable: Callable[[int], bool],
            election: Election) -> PartitionChangeBuilder:
    """A PartitionChangeBuilder as Kafka's controller makes every one: with the topic's
    effective min ISR and ELR on where eligible.leader.replicas.version is."""
    return PartitionChangeBuilder(p, t.topic_id, acceptable, election, min_isr=topic_min_isr(image, t),
                                  elr_enabled=elr_enabled(image))


def leader_and_isr_updates(image: MetadataImage, parts: Iterable[tuple[TopicImage, PartitionImage]], *,
                           removing: int = NO_LEADER, adding: int = NO_LEADER, unclean: Unclean = NEVER,
                           offline: OfflineReplicas | None = None, unclean_shutdown: int = NO_LEADER) -> list:
    """Kafka's generateLeaderAndIsrUpdates: ``removing`` leaves each ISR (without ELR not the
    last member) and leadership; ``adding`` may lead although the image does not show it
    active yet; a replica in ``offline`` (its log dir failed) never leads (Kafka's
    LeaderAcceptor checks that the replica's directory is online); ``unclean_shutdown`` (a
    broker back from an unclean shutdown) leaves each ISR, ELR and leadership."""
    acceptable = leader_acceptor(image.brokers, removing=removing, adding=adding)
    if unclean_shutdown != NO_LEADER:
        outer = acceptable
        acceptable = lambda r: r != unclean_shutdown and outer(r)  # noqa: E731
    out = []
    for t, p in parts:
        acc = acceptable
        gone = offline.get((t.topic_id, p.index)) if offline else None
        if gone:
            acc = lambda r, a=acceptable, g=gone: r not in g and a(r)  # noqa: E731
        b = builder(image, t, p, acc, election_for(unclean(t)))
        if removing != NO_LEADER or unclean_shutdown != NO_LEADER:
            b.set_target_isr([r for r in p.isr if r not in (removing, unclean_shutdown)])
        if unclean_shutdown != NO_LEADER:
            b.set_unclean_shutdown_replicas([unclean_shutdown])
        rec = b.build()
        if rec is not None:
            out.append((R.PARTITION_CHANGE, rec))
    return out


def fence_broker(image: MetadataImage, broker_id: int, unclean: Unclean = NEVER) -> list:
    """A broker whose session timed out: it leaves every ISR and leadership; then fenced."""
    b = image.brokers[broker_id]
    recs = leader_and_isr_updates(image, ((t, p) for t, p in _partitions(image) if broker_id in p.isr),
                                  removing=broker_id, unclean=unclean)
    recs.append((R.BROKER_REGISTRATION_CHANGE, R.BROKER_REGISTRATION_CHANGE.cls(
        broker_id=broker_id, broker_epoch=b.epoch, fenced=1)))
    return recs


def offline_dir_updates(image: MetadataImage, broker_id: int, partitions: set[tuple[uuid.UUID, int]],
                        unclean: Unclean = NEVER, offline: OfflineReplicas | None = None) -> list:
    """A broker reported log dirs offline (Kafka's handleDirectoriesOffline): it leaves the
    ISR (not as the last member) and the leadership of each partition it hosts there;
    another ISR member leads (leader -1 when none is left)."""
    parts = []
    for topic_id, index in sorted(partitions):
        t = image.topics_by_id.get(topic_id)
        p = t.partitions.get(index) if t is not None else None
        if p is not None and (broker_id in p.isr or p.leader == broker_id):
            parts.append((t, p))
    return leader_and_isr_updates(image, parts, removing=broker_id, unclean=unclean, offline=offline)


def unfence_broker(image: MetadataImage, broker_id: int, unclean: Unclean = NEVER,
                   offline: OfflineReplicas | None = None) -> list:
    """A fenced broker heard from again: unfenced; leaderless partitions whose ISR holds it
    (or, unclean, any of its replicas) get it as leader."""
    b = image.brokers[broker_id]
    recs = [(R.BROKER_REGISTRATION_CHANGE, R.BROKER_REGISTRATION_CHANGE.cls(
        broker_id=broker_id, broker_epoch=b.epoch, fenced=-1))]
    recs += leader_and_isr_updates(image, ((t, p) for t, p in _partitions(image) if p.leader == NO_LEADER),
                                   adding=broker_id, unclean=unclean, offline=offline)
    return recs


def elect_leaderless(image: MetadataImage, unclean: Unclean = NEVER, offline: OfflineReplicas | None = None) -> list:
    """Leaders for partitions without one, where an ISR member (or, unclean, any replica) is
    active now: a broker that registered again, an unclean election enabled later."""
    return leader_and_isr_updates(image, ((t, p) for t, p in _partitions(image) if p.leader == NO_LEADER),
                                  unclean=unclean, offline=offline)


def controlled_shutdown(image: MetadataImage, broker_id: int, unclean: Unclean = NEVER) -> list:
    """A broker asked to shut down (BrokerHeartbeat want_shut_down): in controlled shutdown
    from now until it registers again; it leaves every ISR (not the last member) and every
    leadership moves to another ISR member (leader -1 where none is left)."""
    b = image.brokers[broker_id]
    recs = []
    if not b.in_controlled_shutdown:
        recs.append((R.BROKER_REGISTRATION_CHANGE, R.BROKER_REGISTRATION_CHANGE.cls(
            broker_id=broker_id, broker_epoch=b.epoch, in_controlled_shutdown=1)))
    recs += leader_and_isr_updates(image, ((t, p) for t, p in _partitions(image) if broker_id in p.isr),
                                   removing=broker_id, unclean=unclean)
    return recs


def has_leaderships(image: MetadataImage, broker_id: int) -> bool:
    return any(p.leader == broker_id for _, p in _partitions(image))


# ---------------------------------------------------------------------- AlterPartition
def alter_partition(image: MetadataImage, broker_id: int, topic_id: uuid.UUID, partition: int, leader_epoch: int,
                    partition_epoch: int, new_isr: list[int], *, leader_recovery_state: int = RECOVERED,
                    broker_epochs: list[int] | None = None,
                    unclean: Unclean = NEVER) -> tuple[AlterPartitionResult, list]:
    """One partition of an AlterPartition from ``broker_id``, checked as Kafka's controller
    checks it (validateAlterPartitionData); the answer and the records to commit."""
    t = image.topics_by_id.get(topic_id)
    if t is None:
        return AlterPartitionResult(ErrorCode.UNKNOWN_TOPIC_ID), []
    p = t.partitions.get(partition)
    if p is None:
        return AlterPartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), []
    if leader_epoch > p.leader_epoch or partition_epoch > p.partition_epoch:
        return AlterPartitionResult(ErrorCode.NOT_CONTROLLER), []   # this controller is behind
    if leader_epoch < p.leader_epoch:
        return AlterPartitionResult(ErrorCode.FENCED_LEADER_EPOCH), []
    if broker_id != p.leader:
        return AlterPartitionResult(ErrorCode.INVALID_REQUEST), []
    if partition_epoch < p.partition_epoch:
        return AlterPartitionResult(ErrorCode.INVALID_UPDATE_VERSION), []
    if len(set(new_isr)) != len(new_isr) or not new_isr or any(r not in p.replicas for r in new_isr):
        return AlterPartitionResult(ErrorCode.INVALID_REQUEST), []
    if p.leader not in new_isr:
        return AlterPartitionResult(ErrorCode.INVALID_REQUEST), []   # the ISR always holds the leader
    if leader_recovery_state == RECOVERING and len(new_isr) > 1:
        return AlterPartitionResult(ErrorCode.INVALID_REQUEST), []
    if p.leader_recovery_state == RECOVERED and leader_recovery_state == RECOVERING:
        return AlterPartitionResult(ErrorCode.INVALID_REQUEST), []
    for i, r in enumerate(new_isr):
        b = image.brokers.get(r)
        epoch = broker_epochs[i] if broker_epochs else -1
        if b is None or not b.active or (epoch != -1 and epoch != b.epoch):
            return AlterPartitionResult(ErrorCode.INELIGIBLE_REPLICA), []
    rec = (builder(image, t, p, leader_acceptor(image.brokers), election_for(unclean(t)))
           .set_target_isr(new_isr).set_target_leader_recovery_state(leader_recovery_state).build())
    after = p.copy()
    recs = []
    code = ErrorCode.NONE
    if rec is not None:
        after.merge(rec)
        recs.append((R.PARTITION_CHANGE, rec))
        if rec.leader not in (broker_id, -2):
            code = ErrorCode.NEW_LEADER_ELECTED   # committed, but the requester leads no more
    return AlterPartitionResult(code, after.leader, after.leader_epoch, list(after.isr), after.partition_epoch,
                                after.leader_recovery_state), recs


# ---------------------------------------------------------------------- elections
def elect_leader(image: MetadataImage, topic: str, partition: int, election: Election,
                 unclean: Unclean = NEVER) -> tuple[ErrorCode, str | None, list]:
    """One partition of an ElectLeaders (PREFERRED or UNCLEAN): (code, message, records)."""
    t = image.topics.get(topic)
    if t is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}", []
    p = t.partitions.get(partition)
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{partition}", []
    if (election is Election.PREFERRED and p.replicas and p.leader == p.replicas[0]) or \
            (election is Election.UNCLEAN and p.leader != NO_LEADER):
        code = ErrorCode.ELECTION_NOT_NEEDED
        return code, ELECTION_MESSAGES[code], []
    rec = builder(image, t, p, leader_acceptor(image.brokers), election).build()
    if rec is None:
        code = (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE if election is Election.PREFERRED
                else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)
        return code, ELECTION_MESSAGES[code], []
    return ErrorCode.NONE, None, [(R.PARTITION_CHANGE, rec)]


def elect_leaders(image: MetadataImage, election: Election, topic_partitions: dict[str, list[int]] | None
                  ) -> tuple[dict[str, list[tuple[int, ErrorCode, str | None]]], list]:
    """ElectLeaders: per topic, (partition, code, message); and the records. ``None`` asks
    for every partition, and then partitions that need no election are left out (Kafka)."""
    results: dict[str, list] = {}
    recs: list = []
    if topic_partitions is None:
        for name, t in sorted(image.topics.items()):
            rows = results.setdefault(name, [])
            for pid in sorted(t.partitions):
                code, msg, r = elect_leader(image, name, pid, election)
                if code != ErrorCode.ELECTION_NOT_NEEDED:
                    rows.append((pid, code, msg))
                recs += r
        return results, recs
    for name, pids in topic_partitions.items():
        rows = results.setdefault(name, [])
        for pid in pids:
            code, msg, r = elect_leader(image, name, pid, election)
            rows.append((pid, code, msg))
            recs += r
    return results, recs


def rebalance_preferred_leaders(image: MetadataImage) -> list:
    """auto.leader.rebalance.enable (Kafka's maybeBalancePartitionLeaders): a preferred
    election for every partition not led by its first replica, done where that replica is an
    active ISR member. As in Kafka's KRaft controller, leader.imbalance.per.broker.percentage
    plays no part (the ZooKeeper controller weighed it; Kafka 4 dropped the key)."""
    recs = []
    for t, p in _partitions(image):
        if p.replicas and p.leader != p.replicas[0] and p.replicas[0] in p.isr:
            rec = builder(image, t, p, leader_acceptor(image.brokers), Election.PREFERRED).build()
            if rec is not None and rec.leader == p.replicas[0]:
                recs.append((R.PARTITION_CHANGE, rec))
    return recs


# ---------------------------------------------------------------------- reassignment
def _reassignment_size(p: PartitionImage) -> int:
    return len([r for r in p.replicas if r not in p.removing_replicas]) if p.removing_replicas else len(p.replicas)


def alter_reassignment(image: MetadataImage, topic: str, partition: int, target: list[int] | None, *,
                       allow_rf_change: bool = True, unclean: Unclean = NEVER) -> tuple[ErrorCode, str | None, list]:
    """One partition of an AlterPartitionReassignments (Kafka's alterPartitionReassignment):
    ``target`` replicas start a reassignment (the new ones are added, and the old ones removed
    once the new ones are in the ISR); None cancels the one in progress. (code, message, records)."""
    t = image.topics.get(topic)
    if t is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}.", []
    p = t.partitions.get(partition)
    if p is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{partition}.", []
    acceptable = leader_acceptor(image.brokers)
    b = builder(image, t, p, acceptable, election_for(unclean(t)))
    if target is None:
        if not p.removing_replicas and not p.adding_replicas:
            return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress.", []
        replicas = [r for r in p.replicas if r not in p.adding_replicas]
        isr = [r for r in p.isr if r not in p.adding_replicas]
        if not isr:   # only replicas being added are in sync: going back loses data
            if not unclean(t):
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unable to revert partition assignment for {topic}:"
                        f"{partition} because it would require an unclean leader election.", [])
            isr = list(replicas)
        b.set_target_replicas(replicas).set_target_isr(isr).set_target_removing([]).set_target_adding([])
    else:
        try:
            validate_assignment(target, image.brokers.keys(), None)
        except PlacementError as exc:
            return exc.code, exc.message, []
        if not allow_rf_change and _reassignment_size(p) != len(target):
            return (ErrorCode.INVALID_REPLICATION_FACTOR,
                    f"The replication factor is changed from {_reassignment_size(p)} to {len(target)}", [])
        removing = [r for r in p.replicas if r not in target]
        adding = [r for r in target if r not in p.replicas]
        b.set_target_replicas(list(target) + removing).set_target_removing(removing).set_target_adding(adding)
    rec = b.build()
    return ErrorCode.NONE, None, ([] if rec is None else [(R.PARTITION_CHANGE, rec)])


def list_reassignments(image: MetadataImage, topics: dict[str, list[int]] | None) -> dict[str, list[PartitionImage]]:
    """ListPartitionReassignments: {topic: [partitions with a reassignment in progress]}; None
    lists every topic. Unknown topics and partitions are left out, as Kafka does."""
    names = sorted(image.topics) if topics is None else list(topics)
    out: dict[str, list[PartitionImage]] = {}
    for name in names:
        t = image.topics.get(name)
        if t is None:
            continue
        idxs = sorted(t.partitions) if topics is None else topics[name]
        parts = [t.partitions[i] for i in idxs if i in t.partitions
                 and (t.partitions[i].removing_replicas or t.partitions[i].adding_replicas)]
        if parts:
            out[name] = parts
    return out


def register_again(image: MetadataImage, broker_id: int, broker_epoch: int, unclean: Unclean = NEVER, *,
                   clean_shutdown: bool = False) -> list:
    """A known broker registering in a higher epoch restarted. Records to commit before the
    registration.

    With ELR on, Kafka's handleBrokerShutdown: after a clean shutdown it leaves every ISR and
    leadership as if fenced (into the ELR where the ISR falls below min ISR, so it may lead
    again); after an unclean one it leaves every ISR, ELR and leadership (its log may have
    lost acknowledged records). ``clean_shutdown``: Kafka compares the broker epoch the
    broker wrote at its clean shutdown (BrokerRegistrationRequest PreviousBrokerEpoch) with
    its registration; kwire's registration is a record, so the controller counts a restart
    after a completed controlled shutdown as clean (quorum._registration_effects).

    Without ELR (kwire's rule before KIP-966): it leaves every ISR (and leadership) that has
    another active member, as Kafka's controller fences the old incarnation; whatever its log
    lost in an unclean shutdown, it rejoins an ISR only once its leader sees it caught up. A
    partition it alone is in sync for stays with it (there is no other copy to prefer), in a
    new leader epoch."""
    old = image.brokers.get(broker_id)
    if old is None or broker_epoch <= old.epoch:
        return []
    if elr_enabled(image):
        if clean_shutdown:
            return leader_and_isr_updates(image, ((t, p) for t, p in _partitions(image) if broker_id in p.isr),
                                          removing=broker_id, unclean=unclean)
        return leader_and_isr_updates(
            image, ((t, p) for t, p in _partitions(image) if broker_id in p.isr or broker_id in p.elr),
            unclean_shutdown=broker_id, unclean=unclean)

    def shared(p) -> bool:
        return any(r != broker_id and image.brokers.get(r) is not None and image.brokers[r].active for r in p.isr)
    recs = leader_and_isr_updates(image, ((t, p) for t, p in _partitions(image) if broker_id in p.isr and shared(p)),
                                  removing=broker_id, unclean=unclean)
    # what it leads alone it leads on, in a new leader epoch: batches it writes from now on
    # must not share an epoch with ones its followers got before the restart (which its log
    # may have lost), or the followers could not see where the logs part
    for t, p in _partitions(image):
        if p.leader == broker_id and not shared(p):
            recs.append((R.PARTITION_CHANGE, R.PARTITION_CHANGE.cls(partition_id=p.index, topic_id=t.topic_id,
                                                                    leader=broker_id)))
    return recs

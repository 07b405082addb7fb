"""KIP-848 consumer groups in the group coordinator (Kafka's GroupMetadataManager
consumerGroupHeartbeat / consumerGroupDescribe), mixed into GroupCoordinator. No I/O: records
go to the writer, answers wait on ``Pending``, time comes from the clock.

A heartbeat (``consumer_group_heartbeat``):
1. finds or creates the group (epoch 0 creates it; an Empty classic group becomes a consumer
   group keeping its offsets; a classic group with members is upgraded online where
   group.consumer.migration.policy allows, else GROUP_ID_NOT_FOUND:
   kwire.groups.consumer_migration) and the member (epoch 0 joins: v1 clients bring their
   own member id, v0 ones get one; otherwise UNKNOWN_MEMBER_ID, or
   FENCED_MEMBER_EPOCH for an epoch the member is not at, except its previous epoch with a
   subset of its partitions: the answer carrying the bump may have been lost);
2. bumps the group epoch when a member joins, changes its subscription or assignor, or the
   subscribed topics' partitions changed (names resolved against the metadata image;
   regular expressions in RE2/J syntax, full match, over the same topics, with Python's
   ``re``; what RE2/J refuses - lookaround, backreferences, atomic groups, possessive
   quantifiers - is refused with INVALID_REGULAR_EXPRESSION);
3. recomputes the target assignment with the server-side assignor (the members' choice,
   else the first of ``group.consumer.assignors``) when the group epoch passed the
   assignment epoch;
4. reconciles the member (kwire.groups.consumer_group.reconcile: revocation first, then the
   partitions no one else owns), restarts its session timer
   (``group.consumer.session.timeout.ms``, or the group's own ``consumer.session.timeout.ms``
   set with IncrementalAlterConfigs), and starts a rebalance timer (the member's
   rebalance timeout) while it has partitions to revoke: a member that does not revoke in
   time is fenced, as is one that misses its session timeout;
5. writes the records that changed (kwire.groups.consumer_records) and answers once they are
   durable: member id, epoch, the heartbeat interval (``group.consumer.heartbeat.interval.ms``
   or the group's ``consumer.heartbeat.interval.ms``) and the assignment
   when it changed or the request was a full one.

Epoch -1 leaves (the member is removed, its partitions are freed, the group epoch bumped);
Static members (an instance id): epoch -2 leaves for a while, keeping the partitions (and the
session timer running); a member joining (epoch 0) with that instance id takes over the place,
epoch and partitions without a rebalance (UNRELEASED_INSTANCE_ID while the old one has not
left; FENCED_INSTANCE_ID for the old one afterwards). Members using the classic protocol in a
consumer group, and the downgrade when the last consumer-protocol member leaves:
kwire.groups.consumer_migration.
"""
from __future__ import annotations

import logging
import re
import uuid
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Mapping
from uuid import UUID

from kwire.errors import ErrorCode
from kwire.groups import consumer_records as CR
from kwire.groups import records as R
from kwire.groups.assignors import ASSIGNORS, Racks
from kwire.groups.consumer_group import (Assignment, ConsumerGroup, ConsumerGroupMember, MemberState,
                                         compile_regex, is_subset, member_topic_ids, reconcile,
                                         validate_commit_epochs, with_assignment_epoch)
from kwire.groups.group import Group, GroupState
from kwire.groups.membership import Record, store_error
from kwire.coordinator.pending import Pending

E = ErrorCode
log = logging.getLogger("kwire.groups")

#: the member timers (kind, group id, member id) and why a member is fenced when one expires;
#: cg_join / cg_sync are for classic members (kwire.groups.consumer_migration)
_FENCED_BECAUSE = {
    "cg_session": "missed its session timeout",
    "cg_rebalance": "did not revoke its partitions within its rebalance timeout",
    "cg_join": "did not rejoin (JoinGroup) within its rebalance timeout",
    "cg_sync": "did not send its SyncGroup within its rebalance timeout",
}

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


@dataclass(slots=True)
class ConsumerHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None   # None: not sent


@dataclass(slots=True)
class ConsumerGroupDescription:
    group_id: str
    error: ErrorCode
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: list[ConsumerGroupMember] | None = None
    targets: dict[str, Assignment] | None = None


def _fail(error: ErrorCode, message: str | None = None, member_id: str | None = None,
          epoch: int = -1) -> Pending[ConsumerHeartbeatResult]:
    return Pending.completed(ConsumerHeartbeatResult(error, message, member_id, epoch))


def _owned(topic_partitions) -> dict[UUID, list[int]] | None:
    if topic_partitions is None:
        return None
    out: dict[UUID, list[int]] = {}
    for t, ps in topic_partitions:
        out.setdefault(t, []).extend(ps)
    return out


class ConsumerGroups:
    """Mixed into GroupCoordinator (``groups``, ``config``, ``clock``, ``timers``,
    ``_schedule``, ``_write``, ``_new_uuid``)."""

    #: name -> (topic id, partition count) of every topic; the edge sets it from the image
    topic_metadata: Callable[[], Mapping[str, tuple[UUID, int]]] = staticmethod(lambda: {})
    #: (topic id, partition) -> the racks of its replicas' brokers; the edge sets it from the image
    partition_racks: Callable[[UUID, int], frozenset] = staticmethod(lambda _t, _p: frozenset())
    #: group id -> its dynamic group configs (IncrementalAlterConfigs on a GROUP resource)
    group_overrides: Callable[[str], Mapping[str, str]] = staticmethod(lambda _gid: {})

    def _group_setting(self, group_id: str, name: str, default: int) -> int:
        try:
            return int(self.group_overrides(group_id).get(name, default))
        except (TypeError, ValueError):
            return default

    def _session_timeout_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "consumer.session.timeout.ms",
                                   self.config.consumer_session_timeout_ms)

    def _heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "consumer.heartbeat.interval.ms",
                                   self.config.consumer_heartbeat_interval_ms)

    # ------------------------------------------------------------------ queries
    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        g = self.groups.get(group_id)
        return None if g is None else g.consumer

    def _assignor_names(self) -> list[str]:
        return [a for a in self.config.consumer_assignors if a in ASSIGNORS] or ["uniform"]

    # ------------------------------------------------------------------ heartbeat
    def consumer_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int, *,
                                 instance_id: str | None = None, rack_id: str | None = None,
                                 rebalance_timeout_ms: int = -1,
                                 subscribed_topic_names: list[str] | None = None,
                                 subscribed_topic_regex: str | None = None,
                                 server_assignor: str | None = None,
                                 topic_partitions: list[tuple[UUID, list[int]]] | None = None,
                                 client_id: str = "", client_host: str = "",
                                 version: int = 1) -> Pending[ConsumerHeartbeatResult]:
        # -- request validation (Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid)
        if not group_id:
            return _fail(E.INVALID_REQUEST, "GroupId can't be empty.")
        if version >= 1 and not member_id:
            return _fail(E.INVALID_REQUEST, "MemberId can't be empty.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                return _fail(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
            if topic_partitions:
                return _fail(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
            if not subscribed_topic_names and subscribed_topic_regex is None:
                return _fail(E.INVALID_REQUEST, "SubscribedTopicNames or SubscribedTopicRegex must be set "
                                                "in first request.")
        elif member_epoch < STATIC_LEAVE_EPOCH or (member_epoch > 0 and not member_id):
            return _fail(E.INVALID_REQUEST, "MemberId can't be empty.")
        if server_assignor is not None and server_assignor not in self._assignor_names():
            return _fail(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {server_assignor} is not supported. "
                         f"Supported assignors: {', '.join(self._assignor_names())}.")
        if subscribed_topic_regex is not None:
            try:
                compile_regex(subscribed_topic_regex)
            except re.error as exc:
                return _fail(E.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex `{subscribed_topic_regex}` is not a valid regular "
                             f"expression: {exc}.")
        if member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._consumer_leave(group_id, member_id, member_epoch, instance_id)

        if group_id in getattr(self, "share_groups", ()):   # KIP-932
            return _fail(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        # -- the group
        records: list[Record] = []
        g = self.groups.get(group_id)
        if g is None or (g.consumer is None and g.is_(GroupState.EMPTY) and not g.members):
            if member_epoch != 0:
                return _fail(E.UNKNOWN_MEMBER_ID, f"Consumer group {group_id} not found.")
            if g is None:
                g = self.groups[group_id] = Group(group_id)
            elif g.protocol_type:   # an empty classic group becomes a consumer group, keeping its offsets
                records.append((R.group_key(group_id), None))
            g.consumer = ConsumerGroup(group_id)
            g.protocol_type = None
        elif g.consumer is None:
            if member_epoch != 0:
                return _fail(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            # the online upgrade of a classic group (kwire.groups.consumer_migration)
            error, message, upgrade = self._upgrade_classic_group(g)
            if error is not None:
                return _fail(error, message)
            records += upgrade
        cg = g.consumer

        # -- the member
        old = cg.members.get(member_id) if member_id else None
        static_id = cg.static_members.get(instance_id) if instance_id is not None else None
        returning = False   # a static member back after leaving with epoch -2
        if member_epoch == 0 and static_id is not None and static_id != member_id:
            # a new incarnation of a static member (Kafka's getOrMaybeSubscribeStaticConsumerGroupMember)
            prior = cg.members[static_id]
            if prior.member_epoch != STATIC_LEAVE_EPOCH:
                return _fail(E.UNRELEASED_INSTANCE_ID, f"Static member {static_id} with instance id "
                             f"{instance_id} is not released yet.")
            if not member_id:
                member_id = str(self._new_uuid_consumer())
            records += self._replace_consumer_static_member(cg, prior, member_id)
            returning = True
        elif member_epoch != 0 and old is not None and static_id is not None and static_id != member_id:
            return _fail(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                         f"was fenced by {static_id}.")
        elif member_epoch == 0 and old is not None and old.member_epoch == STATIC_LEAVE_EPOCH:
            returning = True
        if returning:   # it takes its partitions back at the epoch it left at: no rebalance
            back = cg.members[member_id]
            member = old = replace(back, member_epoch=back.previous_member_epoch)
            cg.update_member(member)
        elif member_epoch == 0:
            if old is None and len(cg.members) >= self.config.consumer_max_size:
                return _fail(E.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of "
                             f"{self.config.consumer_max_size} members.")
            if not member_id:
                member_id = str(self._new_uuid_consumer())
            member = old or ConsumerGroupMember(member_id)
        else:
            if old is None:
                return _fail(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if member_epoch > old.member_epoch:
                return _fail(E.FENCED_MEMBER_EPOCH, "The consumer group member has a greater member epoch "
                             f"({member_epoch}) than expected ({old.member_epoch}).")
            if member_epoch < old.member_epoch and (member_epoch != old.previous_member_epoch or
                                                    not is_subset(_owned(topic_partitions), old.assigned)):
                return _fail(E.FENCED_MEMBER_EPOCH, "The consumer group member has a smaller member epoch "
                             f"({member_epoch}) than expected ({old.member_epoch}).")
            member = old
        updated = replace(
            member,
            instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=rack_id if rack_id is not None else member.rack_id,
            client_id=client_id, client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms if rebalance_timeout_ms != -1 else member.rebalance_timeout_ms,
            subscribed_topic_names=tuple(subscribed_topic_names) if subscribed_topic_names is not None
            else member.subscribed_topic_names,
            subscribed_topic_regex=subscribed_topic_regex if subscribed_topic_regex is not None
            else member.subscribed_topic_regex,
            server_assignor=server_assignor if server_assignor is not None else member.server_assignor)
        bump = old is None or not updated.same_subscription(old)
        if old is None or updated != member:
            records.append((CR.member_key(CR.MEMBER_METADATA, group_id, member_id), CR.member_value(updated)))

        self._update_member_and_target(cg, updated, bump, records)

        # -- reconciliation
        current = cg.members[member_id]
        target = cg.target.get(member_id, {})
        subscribed = member_topic_ids(current, cg.subscription_metadata)
        owned = _owned(topic_partitions)
        reconciled = reconcile(current, cg.assignment_epoch, target, owned, cg.current_partition_epoch,
                               subscribed)
        if old is None or returning or (reconciled.member_epoch, reconciled.previous_member_epoch, reconciled.state,
                           reconciled.assigned, reconciled.pending_revocation) != \
                (old.member_epoch, old.previous_member_epoch, old.state, old.assigned, old.pending_revocation):
            records.append((CR.member_key(CR.CURRENT_ASSIGNMENT, group_id, member_id), CR.current_value(reconciled)))
        cg.update_member(reconciled)

        # -- timers
        self._schedule(("cg_session", group_id, member_id), self._session_timeout_ms(group_id))
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
            key = ("cg_rebalance", group_id, member_id)
            if old is None or old.state is not MemberState.UNREVOKED_PARTITIONS or key not in self.timers:
                self._schedule(key, max(0, reconciled.rebalance_timeout_ms))
        else:
            self.timers.cancel(("cg_rebalance", group_id, member_id))

        full = member_epoch == 0 or (rebalance_timeout_ms != -1 and subscribed_topic_names is not None
                                     and topic_partitions is not None)
        changed = old is None or reconciled.assigned != old.assigned
        result = ConsumerHeartbeatResult(E.NONE, None, member_id, reconciled.member_epoch,
                                         self._heartbeat_interval_ms(group_id),
                                         dict(reconciled.assigned) if (full or changed) else None)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("group %s: ConsumerGroupHeartbeat of %s epoch %d -> epoch %d %s, group epoch %d, "
                      "assigned %s, revoking %s", group_id, member_id, member_epoch, reconciled.member_epoch,
                      reconciled.state.name, cg.group_epoch, _fmt(reconciled.assigned),
                      _fmt(reconciled.pending_revocation))
        return self._answer_after(group_id, records, result)

    def _new_uuid_consumer(self) -> str:
        return self._new_uuid() if self._new_uuid else str(uuid.uuid4())

    def _answer_after(self, group_id: str, records: list[Record],
                      result: ConsumerHeartbeatResult) -> Pending[ConsumerHeartbeatResult]:
        p: Pending[ConsumerHeartbeatResult] = Pending()
        if not records:
            p.set_result(result)
            return p

        def done(error: ErrorCode) -> None:
            if error != E.NONE:
                p.set_result(ConsumerHeartbeatResult(store_error(error), None, result.member_id, -1))
            else:
                p.set_result(result)
        self._write(group_id, records, done)
        return p

    def _replace_consumer_static_member(self, cg: ConsumerGroup, prior: ConsumerGroupMember,
                               member_id: str) -> list[Record]:
        """The new incarnation of a static member takes the place, epoch and partitions of the
        one that left with epoch -2 (no rebalance: the group epoch stays)."""
        gid = cg.group_id
        self._cancel_member_timers(gid, prior.member_id)
        target = cg.target.get(prior.member_id, {})
        cg.remove_member(prior.member_id)
        fresh = replace(prior, member_id=member_id)
        cg.update_member(fresh)
        cg.target[member_id] = target
        log.info("group %s: static member %s (instance %s) replaced by %s", gid, prior.member_id,
                 prior.instance_id, member_id)
        return [(CR.member_key(CR.CURRENT_ASSIGNMENT, gid, prior.member_id), None),
                (CR.member_key(CR.TARGET_MEMBER, gid, prior.member_id), None),
                (CR.member_key(CR.MEMBER_METADATA, gid, prior.member_id), None),
                (CR.member_key(CR.MEMBER_METADATA, gid, member_id), CR.member_value(fresh)),
                (CR.member_key(CR.TARGET_MEMBER, gid, member_id), CR.target_member_value(target))]

    def _update_member_and_target(self, cg, updated, bump: bool, records: list) -> None:
        """Put ``updated`` in the group; refresh the subscribed topics' metadata, bump the group
        epoch when it or the member's subscription (``bump``) changed, and compute the target
        assignment when the group epoch moved past it (Kafka's consumerGroupHeartbeat steps)."""
        all_topics = self.topic_metadata()
        others = [m for mid, m in cg.members.items() if mid != updated.member_id]
        names = cg.subscribed_topic_names(all_topics, others + [updated])
        metadata = {n: all_topics[n] for n in sorted(names) if n in all_topics}
        if metadata != cg.subscription_metadata:
            cg.subscription_metadata = metadata
            bump = True
        if bump:
            cg.group_epoch += 1
            records.append((CR.group_key(CR.GROUP_METADATA, cg.group_id), CR.metadata_value(cg.group_epoch)))
        cg.update_member(updated)
        if cg.group_epoch > cg.assignment_epoch:
            records.extend(self._compute_target(cg))

    def _compute_target(self, cg: ConsumerGroup) -> list[Record]:
        """A new target assignment at the group epoch; the records of the members' targets
        that changed and of the assignment epoch."""
        names = self._assignor_names()
        # the members' most common choice (Kafka's computePreferredServerAssignor), else the default
        votes = Counter(m.server_assignor for m in cg.members.values() if m.server_assignor in names)
        chosen = max(votes, key=lambda a: (votes[a], -names.index(a))) if votes else names[0]
        subs = {mid: member_topic_ids(m, cg.subscription_metadata) for mid, m in cg.members.items()}
        topics = {tid: n for tid, n in cg.subscription_metadata.values()}
        racks = Racks({mid: m.rack_id for mid, m in cg.members.items()}, self.partition_racks)
        new = ASSIGNORS[chosen](subs, topics, cg.target, racks)
        records = []
        for mid in cg.members:
            a = new.get(mid, {})
            if cg.target.get(mid) != a:
                records.append((CR.member_key(CR.TARGET_MEMBER, cg.group_id, mid), CR.target_member_value(a)))
        cg.target = {mid: new.get(mid, {}) for mid in cg.members}
        cg.assignment_epoch = cg.group_epoch
        cg.assignor = chosen
        records.append((CR.group_key(CR.TARGET_METADATA, cg.group_id), CR.target_metadata_value(cg.assignment_epoch)))
        return records

    # ------------------------------------------------------------------ leaving, fencing
    def _consumer_leave(self, group_id: str, member_id: str, epoch: int,
                        instance_id: str | None) -> Pending[ConsumerHeartbeatResult]:
        cg = self.consumer_group(group_id)
        if cg is None or member_id not in cg.members:
            return _fail(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.",
                         member_id, epoch)
        m = cg.members[member_id]
        if instance_id is not None and cg.static_members.get(instance_id) not in (None, member_id):
            return _fail(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance_id} "
                         "was fenced.", member_id, epoch)
        if epoch == STATIC_LEAVE_EPOCH and m.instance_id is not None:
            # a static member leaving for a while keeps its partitions (its session timeout
            # still runs): the member coming back with its instance id takes them over
            # its assigned partitions' assignment epochs go to 0 (Kafka's
            # resetAssignedPartitionsEpochsToZero): the incarnation that takes them over may commit
            # them at any epoch up to its own
            left = replace(m, member_epoch=STATIC_LEAVE_EPOCH, previous_member_epoch=m.member_epoch,
                           assignment_epochs={**m.assignment_epochs, **with_assignment_epoch(m.assigned, 0)})
            cg.update_member(left)
            self.timers.cancel(("cg_rebalance", group_id, member_id))
            log.info("group %s: static member %s (instance %s) left for now", group_id, member_id, m.instance_id)
            return self._answer_after(group_id, [(CR.member_key(CR.CURRENT_ASSIGNMENT, group_id, member_id),
                                                  CR.current_value(left))],
                                      ConsumerHeartbeatResult(E.NONE, None, member_id, epoch, 0))
        records = self._fence_member(self.groups[group_id], member_id, "left the group")
        return self._answer_after(group_id, records, ConsumerHeartbeatResult(E.NONE, None, member_id, epoch, 0))

    def _fence_member(self, g: Group, member_id: str, why: str) -> list[Record]:
        downgrade = self._maybe_downgrade(g, member_id)   # the last consumer-protocol member left
        if downgrade is not None:
            log.info("group %s: member %s %s", g.group_id, member_id, why)
            return downgrade
        cg = g.consumer
        cg.remove_member(member_id)
        self._cancel_member_timers(g.group_id, member_id)
        cg.group_epoch += 1
        log.info("group %s: member %s %s; group epoch %d, %d members", g.group_id, member_id, why,
                 cg.group_epoch, len(cg.members))
        return [(CR.member_key(CR.CURRENT_ASSIGNMENT, g.group_id, member_id), None),
                (CR.member_key(CR.TARGET_MEMBER, g.group_id, member_id), None),
                (CR.member_key(CR.MEMBER_METADATA, g.group_id, member_id), None),
                (CR.group_key(CR.GROUP_METADATA, g.group_id), CR.metadata_value(cg.group_epoch))]

    def _on_consumer_timer(self, key) -> bool:
        kind = key[0]
        if kind not in _FENCED_BECAUSE:
            return False
        g = self.groups.get(key[1])
        if g is None or g.consumer is None or key[2] not in g.consumer.members:
            return True
        self._write(g.group_id, self._fence_member(g, key[2], _FENCED_BECAUSE[kind]))
        return True

    def _cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for kind in _FENCED_BECAUSE:
            self.timers.cancel((kind, group_id, member_id))

    def consumer_group_tombstones(self, g: Group) -> list[Record]:
        """Records that delete an empty consumer group (its offsets are the caller's)."""
        return [(CR.group_key(CR.TARGET_METADATA, g.group_id), None),
                (CR.group_key(CR.GROUP_METADATA, g.group_id), None)]

    def _cancel_consumer_timers(self, g: Group) -> None:
        if g.consumer is not None:
            for mid in g.consumer.members:
                self._cancel_member_timers(g.group_id, mid)

    def _start_consumer_timers(self, g: Group) -> None:
        """After a load: every member gets a fresh session (as Kafka's onLoaded)."""
        if g.consumer is not None:
            for mid, m in g.consumer.members.items():
                self._schedule(("cg_session", g.group_id, mid), m.classic.session_timeout_ms
                               if m.classic is not None else self._session_timeout_ms(g.group_id))

    # ------------------------------------------------------------------ offsets
    def validate_consumer_offset_commit(self, g: Group, member_id: str, member_epoch: int,
                                        api_version: int, partitions: Iterable[tuple[str, int]] = (), *,
                                        transactional: bool = False) -> ErrorCode | None:
        """Kafka 4.3's ConsumerGroup.validateOffsetCommit, KIP-1251's assignment epochs: a member
        commits at its member epoch, or at an older one for partitions it was assigned at or
        before that epoch (kwire.groups.consumer_group.validate_commit_epochs); ``partitions``:
        the (topic, partition)s committed. A transactional commit without member (TxnOffsetCommit
        v0-2) is accepted from outside the group, as for classic groups."""
        cg = g.consumer
        if member_epoch < 0 and not cg.members:
            return None   # admin client or a consumer without group management
        if transactional and member_epoch < 0 and not member_id:
            return None
        m = cg.members.get(member_id)
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if api_version < 9 and not transactional and not m.uses_classic_protocol:
            return E.UNSUPPORTED_VERSION
        if member_epoch == m.member_epoch:
            return None
        ids = {name: tid for name, (tid, _n) in self.topic_metadata().items()} if member_epoch < m.member_epoch else {}
        why = validate_commit_epochs(m, member_epoch, ((ids.get(t), t, p) for t, p in partitions))
        if why is None:
            return None
        log.debug("group %s: offset commit of member %s refused: %s", g.group_id, member_id, why)
        return E.ILLEGAL_GENERATION if m.uses_classic_protocol else E.STALE_MEMBER_EPOCH

    def validate_consumer_offset_fetch(self, group_id: str, member_id: str | None,
                                       member_epoch: int) -> ErrorCode | None:
        """Kafka's ConsumerGroup.validateOffsetFetch: epoch -1 is an admin client."""
        cg = self.consumer_group(group_id)
        if cg is None or member_epoch < 0 or member_id is None:
            return None
        m = cg.members.get(member_id)
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if member_epoch != m.member_epoch:
            return E.STALE_MEMBER_EPOCH
        return None

    # ------------------------------------------------------------------ describe
    def describe_consumer_groups(self, group_ids: list[str]) -> list[ConsumerGroupDescription]:
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if not gid:
                out.append(ConsumerGroupDescription(gid, E.INVALID_GROUP_ID))
            elif g is None or g.is_(GroupState.DEAD):
                out.append(ConsumerGroupDescription(gid, E.GROUP_ID_NOT_FOUND, f"Group {gid} not found.",
                                                    "Dead"))
            elif g.consumer is None:
                out.append(ConsumerGroupDescription(gid, E.GROUP_ID_NOT_FOUND,
                                                    f"Group {gid} is not a consumer group.", "Dead"))
            else:
                cg = g.consumer
                out.append(ConsumerGroupDescription(
                    gid, E.NONE, None, cg.state().value, cg.group_epoch, cg.assignment_epoch,
                    cg.assignor or self._assignor_names()[0],
                    list(cg.members.values()), dict(cg.target)))
        return out


def _fmt(a: Assignment) -> str:
    return "{" + ", ".join(f"{str(t)[:8]}:{sorted(ps)}" for t, ps in a.items()) + "}"

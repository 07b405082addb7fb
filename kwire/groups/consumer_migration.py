"""Online migration between classic and KIP-848 consumer groups, as Kafka 4 does it
(GroupMetadataManager: validateOnlineUpgrade / convertToConsumerGroup, classicGroupJoin/Sync/
Heartbeat/LeaveToConsumerGroup, validateOnlineDowngrade / convertToClassicGroup). Mixed into
GroupCoordinator beside ConsumerGroups; no I/O, time from the clock.

``group.consumer.migration.policy``: ``bidirectional`` (default), ``upgrade``, ``downgrade``
or ``disabled``.

Upgrade: a ConsumerGroupHeartbeat joining (epoch 0) a classic group with members that uses the
consumer embedded protocol (protocol type "consumer", at most group.consumer.max.size members)
turns it into a consumer group: joins and syncs in flight answer REBALANCE_IN_PROGRESS, every
classic member becomes a consumer group member *using the classic protocol* at member epoch =
the generation, STABLE, owning the partitions of its last SyncGroup assignment (which is also
its target); the group epoch and assignment epoch start at the generation. The joining member
then bumps the group epoch as any new member does. Offsets stay where they are (the group).
Otherwise the heartbeat answers GROUP_ID_NOT_FOUND, as Kafka.

Classic members of a consumer group keep using JoinGroup/SyncGroup/Heartbeat/LeaveGroup:
- JoinGroup (v4+ without instance id: MEMBER_ID_REQUIRED first, with a fresh id that is not
  kept: a JoinGroup with a member id the group does not know creates that member, as Kafka's
  getOrMaybeSubscribeDynamicConsumerGroupMember does for classic joins) updates the member from its
  subscription (topics, rack, owned partitions), bumps the group epoch when the subscription
  changed, recomputes the target and reconciles it like a heartbeat; it answers at once with
  generation = member epoch, no leader (every classic member is a follower);
- SyncGroup answers the member's assigned partitions (consumer protocol Assignment, the version
  of its subscription), or REBALANCE_IN_PROGRESS when the group epoch moved past its epoch;
  ILLEGAL_GENERATION for another generation than its member epoch;
- Heartbeat answers REBALANCE_IN_PROGRESS while it must rejoin: its epoch is behind the group
  epoch, it has partitions to revoke, or partitions it waits for were released;
- LeaveGroup fences it (the group epoch is bumped).
Session timeouts are the members' classic session timeouts; a member is fenced when it does
not rejoin within its rebalance timeout after a heartbeat told it to (or while it has partitions
to revoke), or does not send its SyncGroup within its rebalance timeout after its JoinGroup.

Downgrade: when the last member using the consumer protocol leaves (epoch -1, session or
rebalance timeout) and classic members remain (at most group.max.size), the consumer group
becomes a classic group at generation = group epoch, Stable with each member's current
assignment, and a rebalance is prepared at once so the members rejoin the classic way.

Left out: a classic static member replacing a consumer-protocol member of the same instance
id (Kafka may downgrade then; here it joins as a new member).
"""
from __future__ import annotations

import logging
from dataclasses import replace
from uuid import UUID

from kwire.codec import consumer_protocol as cp
from kwire.errors import CodecError, ErrorCode
from kwire.groups import consumer_records as CR
from kwire.groups import records as R
from kwire.groups.consumer_group import (Assignment, ClassicMemberMetadata, ConsumerGroup,
                                         ConsumerGroupMember, MemberState, member_topic_ids,
                                         reconcile, with_assignment_epoch)
from kwire.groups.group import CONSUMER_PROTOCOL_TYPE, Group, GroupState, Member
from kwire.groups.membership import Record, store_error
from kwire.coordinator.pending import Pending
from kwire.groups.results import JoinResult, LeaveMemberResult, SyncResult

E = ErrorCode
log = logging.getLogger("kwire.groups")


class ConsumerGroupMigration:
    """Mixed into GroupCoordinator (uses ConsumerGroups' and Membership's helpers)."""

    # ------------------------------------------------------------------ policy
    def _migration_policy(self) -> str:
        return str(getattr(self.config, "consumer_migration_policy", "bidirectional")).lower()

    def _upgrade_enabled(self) -> bool:
        return self._migration_policy() in ("bidirectional", "upgrade")

    def _downgrade_enabled(self) -> bool:
        return self._migration_policy() in ("bidirectional", "downgrade")

    # ------------------------------------------------------------------ names <-> ids
    def _ids_of(self, owned) -> dict[UUID, list[int]]:
        topics = self.topic_metadata()
        out: dict[UUID, list[int]] = {}
        for tp in owned or ():
            if tp.topic in topics and tp.partitions:
                out.setdefault(topics[tp.topic][0], []).extend(tp.partitions)
        return out

    def _encode_assignment(self, a: Assignment, version: int) -> bytes:
        names = {tid: name for name, (tid, _n) in self.topic_metadata().items()}
        tps = [cp.AssignmentTopicPartition(topic=names[t], partitions=sorted(ps))
               for t, ps in sorted(a.items(), key=lambda kv: names.get(kv[0], "")) if t in names and ps]
        return cp.encode_assignment(cp.Assignment(assigned_partitions=tps, user_data=None),
                                    max(0, min(version, 3)))

    # ------------------------------------------------------------------ upgrade
    def _upgrade_classic_group(self, g: Group) -> tuple[ErrorCode | None, str | None, list[Record]]:
        """Kafka's validateOnlineUpgrade + convertToConsumerGroup: (error, message, records)."""
        gid = g.group_id
        if not self._upgrade_enabled():
            return E.GROUP_ID_NOT_FOUND, (f"Cannot upgrade classic group {gid} to consumer group because "
                                          "online upgrade is disabled."), []
        if g.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return E.GROUP_ID_NOT_FOUND, (f"Cannot upgrade classic group {gid} to consumer group because "
                                          "the group does not use the consumer embedded protocol."), []
        if len(g.members) > self.config.consumer_max_size:
            return E.GROUP_ID_NOT_FOUND, (f"Cannot upgrade classic group {gid} to consumer group because "
                                          "the group size exceeds the consumer group maximum size."), []
        cg = ConsumerGroup(gid)
        epoch = g.generation_id
        try:
            for m in g.members.values():
                protocol = g.protocol_name if g.protocol_name in m.protocol_names() else m.protocols[0][0]
                sub = cp.decode_subscription(m.metadata(protocol))
                assigned: Assignment = {}
                if m.assignment:
                    for t, ps in self._ids_of(cp.decode_assignment(m.assignment).assigned_partitions).items():
                        assigned[t] = frozenset(ps)
                        taken = [p for p in ps if cg.partition_owner(t, p) is not None]
                        if taken:   # a classic leader gave a partition twice: Kafka refuses too
                            raise ValueError(f"partitions {taken} of topic {t} assigned to two members")
                cm = ConsumerGroupMember(
                    m.member_id, instance_id=m.group_instance_id, rack_id=sub.rack_id,
                    client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=tuple(sub.topics), rebalance_timeout_ms=m.rebalance_timeout_ms,
                    member_epoch=epoch, previous_member_epoch=epoch, state=MemberState.STABLE,
                    assigned=assigned, assignment_epochs=with_assignment_epoch(assigned, epoch),
                    classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)))
                cg.update_member(cm)
                cg.target[m.member_id] = dict(assigned)
        except (CodecError, KeyError, IndexError, UnicodeDecodeError, ValueError) as exc:
            log.warning("group %s: cannot upgrade to a consumer group: malformed consumer protocol or "
                        "assignment (%s)", gid, exc)
            return E.GROUP_ID_NOT_FOUND, (f"Cannot upgrade classic group {gid} to consumer group because the "
                                          "embedded consumer protocol is malformed."), []
        all_topics = self.topic_metadata()
        names = cg.subscribed_topic_names(all_topics)
        cg.subscription_metadata = {n: all_topics[n] for n in sorted(names) if n in all_topics}
        cg.group_epoch = cg.assignment_epoch = epoch
        # the classic group ends: answer what waits, stop its timers
        for m in list(g.members.values()):
            self._fail_join(m, E.REBALANCE_IN_PROGRESS)
            self._fail_sync(m, E.REBALANCE_IN_PROGRESS)
            self.timers.cancel(("heartbeat", gid, m.member_id))
        for mid in g.pending_members:
            self.timers.cancel(("pending", gid, mid))
        self.timers.cancel(("join", gid))
        self.timers.cancel(("sync", gid, g.generation_id))
        self._reset_classic_state(g)
        g.consumer = cg
        records: list[Record] = [(R.group_key(gid), None)]
        records += self._consumer_group_records(cg)
        for m in cg.members.values():
            self._schedule(("cg_session", gid, m.member_id), m.classic.session_timeout_ms)
        log.info("group %s: converted the classic group to a consumer group (epoch %d, %d members)",
                 gid, epoch, len(cg.members))
        return None, None, records

    @staticmethod
    def _reset_classic_state(g: Group) -> None:
        g.members.clear()
        g.static_members.clear()
        g.pending_members.clear()
        g.pending_sync_members.clear()
        g.state = GroupState.EMPTY
        g.protocol_type = None
        g.protocol_name = None
        g.leader_id = None
        g.subscribed_topics = None
        g.initial_delay_remaining_ms = None

    @staticmethod
    def _consumer_group_records(cg: ConsumerGroup) -> list[Record]:
        """Kafka's createConsumerGroupRecords: the whole group as records."""
        gid = cg.group_id
        out: list[Record] = []
        for m in cg.members.values():
            out.append((CR.member_key(CR.MEMBER_METADATA, gid, m.member_id), CR.member_value(m)))
        out.append((CR.group_key(CR.GROUP_METADATA, gid), CR.metadata_value(cg.group_epoch)))
        for mid, a in cg.target.items():
            out.append((CR.member_key(CR.TARGET_MEMBER, gid, mid), CR.target_member_value(a)))
        out.append((CR.group_key(CR.TARGET_METADATA, gid), CR.target_metadata_value(cg.assignment_epoch)))
        for m in cg.members.values():
            out.append((CR.member_key(CR.CURRENT_ASSIGNMENT, gid, m.member_id), CR.current_value(m)))
        return out

    # ------------------------------------------------------------------ classic members: JoinGroup
    def classic_join_to_consumer_group(self, g: Group, p: Pending[JoinResult], member_id: str, *,
                                       protocol_type: str, protocols: list[tuple[str, bytes]],
                                       session_timeout_ms: int, rebalance_timeout_ms: int,
                                       instance_id: str | None, client_id: str, client_host: str,
                                       require_known_member_id: bool) -> None:
        cg: ConsumerGroup = g.consumer
        gid = g.group_id
        unknown = member_id == ""
        if instance_id is not None and unknown:
            member_id = cg.static_members.get(instance_id) or ""
            unknown = member_id == ""
        if unknown:
            member_id = self._new_uuid_consumer()
        old = cg.members.get(member_id)
        if old is None and len(cg.members) >= self.config.consumer_max_size:
            p.set_result(JoinResult(E.GROUP_MAX_SIZE_REACHED, member_id))
            return
        others = [m.classic for mid, m in cg.members.items() if m.classic is not None and mid != member_id]
        common = set.intersection(*({n for n, _ in c.protocols} for c in others)) if others else None
        if protocol_type != CONSUMER_PROTOCOL_TYPE or not protocols or \
                (common is not None and not common & {n for n, _ in protocols}):
            # Kafka's supportsClassicProtocols: the classic members keep a protocol in common
            p.set_result(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if unknown and require_known_member_id and instance_id is None:
            p.set_result(JoinResult(E.MEMBER_ID_REQUIRED, member_id))
            return
        if old is not None and instance_id is not None and cg.static_members.get(instance_id) != member_id:
            p.set_result(JoinResult(E.FENCED_INSTANCE_ID, member_id))
            return
        if old is not None and old.classic is None:
            p.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))   # a consumer-protocol member
            return
        try:
            sub = cp.decode_subscription(protocols[0][1])
        except (CodecError, UnicodeDecodeError, ValueError):
            p.set_result(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        member = old or ConsumerGroupMember(member_id)
        updated = replace(
            member, instance_id=instance_id if instance_id is not None else member.instance_id,
            rack_id=sub.rack_id if sub.rack_id is not None else member.rack_id,
            client_id=client_id, client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms, server_assignor=None,
            subscribed_topic_names=tuple(sub.topics), subscribed_topic_regex=None,
            classic=ClassicMemberMetadata(session_timeout_ms, tuple(protocols)))
        records: list[Record] = []
        if updated != member or old is None:
            records.append((CR.member_key(CR.MEMBER_METADATA, gid, member_id), CR.member_value(updated)))
        self._update_member_and_target(cg, updated, old is None or not updated.same_subscription(old), records)
        current = cg.members[member_id]
        owned = self._ids_of(getattr(sub, "owned_partitions", None))
        reconciled = reconcile(current, cg.assignment_epoch, cg.target.get(member_id, {}), owned,
                               cg.current_partition_epoch, member_topic_ids(current, cg.subscription_metadata))
        if old is None or reconciled != current:
            records.append((CR.member_key(CR.CURRENT_ASSIGNMENT, gid, member_id), CR.current_value(reconciled)))
        cg.update_member(reconciled)
        self._schedule(("cg_session", gid, member_id), session_timeout_ms)
        self.timers.cancel(("cg_join", gid, member_id))
        self._schedule(("cg_sync", gid, member_id), max(0, rebalance_timeout_ms))
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
            key = ("cg_rebalance", gid, member_id)
            if key not in self.timers:
                self._schedule(key, max(0, reconciled.rebalance_timeout_ms))
        else:
            self.timers.cancel(("cg_rebalance", gid, member_id))
        result = JoinResult(E.NONE, member_id, reconciled.member_epoch, CONSUMER_PROTOCOL_TYPE,
                            protocols[0][0], leader="")
        log.debug("group %s: classic JoinGroup of %s -> epoch %d %s, group epoch %d", gid, member_id,
                  reconciled.member_epoch, reconciled.state.name, cg.group_epoch)

        def done(error: ErrorCode) -> None:
            p.set_result(result if error == E.NONE else JoinResult(store_error(error), member_id))
        if records:
            self._write(gid, records, done)
        else:
            done(E.NONE)

    # ------------------------------------------------------------------ SyncGroup, Heartbeat, LeaveGroup
    def _classic_member_of(self, cg: ConsumerGroup, member_id: str,
                           instance_id: str | None) -> tuple[ConsumerGroupMember | None, ErrorCode | None]:
        if instance_id is not None:
            current = cg.static_members.get(instance_id)
            if current is None:
                return None, E.UNKNOWN_MEMBER_ID
            if current != member_id:
                return None, E.FENCED_INSTANCE_ID
        m = cg.members.get(member_id)
        if m is None or m.classic is None:
            return None, E.UNKNOWN_MEMBER_ID
        return m, None

    def classic_sync_to_consumer_group(self, g: Group, generation_id: int, member_id: str,
                                       instance_id: str | None, protocol_type: str | None,
                                       protocol_name: str | None) -> SyncResult:
        cg: ConsumerGroup = g.consumer
        m, error = self._classic_member_of(cg, member_id, instance_id)
        if error is not None:
            return SyncResult(error)
        if generation_id != m.member_epoch:
            return SyncResult(E.ILLEGAL_GENERATION)
        names = [n for n, _ in m.classic.protocols]
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE) or \
                (protocol_name is not None and protocol_name not in names):
            return SyncResult(E.INCONSISTENT_GROUP_PROTOCOL)
        if cg.group_epoch > m.member_epoch and m.state is not MemberState.UNREVOKED_PARTITIONS:
            return SyncResult(E.REBALANCE_IN_PROGRESS)
        self._schedule(("cg_session", g.group_id, member_id), m.classic.session_timeout_ms)
        self.timers.cancel(("cg_sync", g.group_id, member_id))
        try:
            version = cp.read_version(m.classic.protocols[0][1])
        except CodecError:
            version = 0
        return SyncResult(E.NONE, CONSUMER_PROTOCOL_TYPE, protocol_name or names[0],
                          self._encode_assignment(m.assigned, version))

    def classic_heartbeat_to_consumer_group(self, g: Group, generation_id: int, member_id: str,
                                            instance_id: str | None) -> ErrorCode:
        cg: ConsumerGroup = g.consumer
        m, error = self._classic_member_of(cg, member_id, instance_id)
        if error is not None:
            return error
        if generation_id != m.member_epoch:
            return E.ILLEGAL_GENERATION
        self._schedule(("cg_session", g.group_id, member_id), m.classic.session_timeout_ms)
        if m.member_epoch < cg.group_epoch or m.state is MemberState.UNREVOKED_PARTITIONS or \
                (m.state is MemberState.UNRELEASED_PARTITIONS and not self._waiting_on_unreleased(cg, m)):
            key = ("cg_join", g.group_id, member_id)   # it must rejoin within its rebalance timeout
            if key not in self.timers:
                self._schedule(key, max(0, m.rebalance_timeout_ms))
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    @staticmethod
    def _waiting_on_unreleased(cg: ConsumerGroup, m: ConsumerGroupMember) -> bool:
        """Kafka's waitingOnUnreleasedPartition: a partition of its target still owned by another."""
        for t, ps in cg.target.get(m.member_id, {}).items():
            mine = m.assigned.get(t, frozenset())
            for p in ps:
                if p not in mine and cg.current_partition_epoch(t, p) != -1:
                    return True
        return False

    def classic_leave_consumer_group(self, g: Group,
                                     members: list[tuple[str, str | None]]) -> list[LeaveMemberResult]:
        cg: ConsumerGroup = g.consumer
        out, records = [], []
        for mid, iid in members:
            if g.consumer is None:   # downgraded by an earlier member of this request
                out += self._leave_group(g.group_id, [(mid, iid)]).members
                continue
            if mid == "" and iid is not None:
                mid_found = cg.static_members.get(iid)
                m = cg.members.get(mid_found) if mid_found else None
                error = None if m is not None else E.UNKNOWN_MEMBER_ID
            else:
                m, error = self._classic_member_of(cg, mid, iid)
            if error is None:
                records += self._fence_member(g, m.member_id, "left the group (LeaveGroup)")
            out.append(LeaveMemberResult(mid, iid, error or E.NONE))
        if records:
            self._write(g.group_id, records)
        return out

    # ------------------------------------------------------------------ downgrade
    def _maybe_downgrade(self, g: Group, leaving: str) -> list[Record] | None:
        """Kafka's validateOnlineDowngradeWithFencedMembers + convertToClassicGroup: when the
        leaving member is the last one using the consumer protocol, the records that turn the
        group into a classic one (which then rebalances); None when it stays a consumer group."""
        cg: ConsumerGroup = g.consumer
        rest = [m for mid, m in cg.members.items() if mid != leaving]
        if not rest or any(m.classic is None for m in rest) or not self._downgrade_enabled() \
                or len(rest) > self.config.group_max_size:
            return None
        common = set.intersection(*({n for n, _ in m.classic.protocols} for m in rest))
        if not common:   # cannot happen through classic_join_to_consumer_group's check
            return None
        gid = g.group_id
        records: list[Record] = []
        for mid in cg.members:
            self._cancel_member_timers(gid, mid)
            records += [(CR.member_key(CR.CURRENT_ASSIGNMENT, gid, mid), None),
                        (CR.member_key(CR.TARGET_MEMBER, gid, mid), None),
                        (CR.member_key(CR.MEMBER_METADATA, gid, mid), None)]
        records += self.consumer_group_tombstones(g)
        protocol = next(n for n, _ in rest[0].classic.protocols if n in common)
        assignment: dict[str, bytes] = {}
        g.consumer = None
        self._reset_classic_state(g)
        g.protocol_type = CONSUMER_PROTOCOL_TYPE
        g.protocol_name = protocol
        g.generation_id = cg.group_epoch
        for m in rest:
            try:
                version = cp.read_version(dict(m.classic.protocols).get(protocol, b"\0\0"))
            except CodecError:
                version = 0
            a = self._encode_assignment(m.assigned, version)
            assignment[m.member_id] = a
            g.add(Member(m.member_id, m.instance_id, m.client_id, m.client_host,
                         m.rebalance_timeout_ms if m.rebalance_timeout_ms > 0 else m.classic.session_timeout_ms,
                         m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, list(m.classic.protocols), a))
        g.state = GroupState.STABLE
        g.current_state_timestamp = self.clock.now_ms()
        g.subscribed_topics = g.compute_subscribed_topics()
        records.append(self._group_record(g, assignment))
        for m in g.members.values():
            self._schedule_heartbeat(g, m)
        self._prepare_rebalance(g)
        log.info("group %s: converted the consumer group to a classic group (generation %d, %d members)",
                 gid, g.generation_id, len(g.members))
        return records

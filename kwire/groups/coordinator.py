"""The group coordinator: membership (see membership.py) plus committed offsets, admin APIs,
durability in ``__consumer_offsets``, and the partitions it serves (ownership.py: loaded
when its broker becomes their leader, unloaded when it resigns).

Nothing here does I/O. The edge:
- builds ``GroupCoordinator(config, clock, writer, owned_partitions=())``;
  ``writer(partition, records, done)`` appends records to ``__consumer_offsets`` and calls
  ``done(error_code)`` once durable (replicated);
- loads each partition its broker leads (``begin_load``, the partition's records in offset
  order to ``PartitionLoad.replay``, ``complete_load``) and unloads those it resigns;
- asks ``coordinator_error(group_id)`` before a group API (COORDINATOR_LOAD_IN_PROGRESS,
  NOT_COORDINATOR);
- runs a timer task: ``deadline = coordinator.tick()``, sleep until then (monotonic ms of the
  coordinator's clock) or until ``coordinator.wakeup`` is called, repeat;
- calls the API methods from its handlers; methods that return ``Pending`` answer later;
- after a transaction marker is appended to a partition, calls ``complete_transaction``
  (transactional offsets: kwire.groups.txn_offsets).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

from kwire.errors import ErrorCode
from kwire.groups import consumer_records as CR
from kwire.groups import records as R
from kwire.groups.group import CONSUMER_PROTOCOL_TYPE, Group, GroupState
from kwire.groups.consumer_coordinator import ConsumerGroups
from kwire.groups.consumer_migration import ConsumerGroupMigration
from kwire.groups.share_coordinator import ShareGroups
from kwire.groups.loader import replay_record
from kwire.groups.membership import GroupConfig, Membership, Record, Writer, append_error
from kwire.groups.offsets import OffsetAndMetadata
from kwire.groups.ownership import PartitionOwnership
from kwire.groups.txn_offsets import TransactionalOffsets
from kwire.coordinator.pending import Pending
from kwire.groups.results import (CommitResult, FetchedOffset, FetchResult, GroupDescription,
                                  GroupListing, MemberDescription, OffsetDeleteResult)

E = ErrorCode
S = GroupState

#: (topic, partition, committed offset, leader epoch or -1, metadata or None)
CommitOffset = tuple[str, int, int, int, "str | None"]


def commit_error(error: ErrorCode) -> ErrorCode:
    """What a failed append of offsets means to a client (Kafka's maybeConvertOffsetCommitError)."""
    return append_error(error, E.INVALID_COMMIT_OFFSET_SIZE)


class GroupCoordinator(ConsumerGroupMigration, ConsumerGroups, ShareGroups, TransactionalOffsets, PartitionOwnership,
                       Membership):
    def __init__(self, config: GroupConfig | None = None, clock=None, writer: Writer | None = None,
                 new_uuid: Callable[[], str] | None = None, *,
                 owned_partitions: Iterable[int] | None = None):
        """``owned_partitions``: the ``__consumer_offsets`` partitions served from the start
        (None: every one; the edge starts with none and loads those its broker leads)."""
        kw = {} if clock is None else {"clock": clock}
        super().__init__(config, writer=writer, new_uuid=new_uuid, **kw)
        self._init_ownership(owned_partitions)
        self._init_transactional_offsets()
        self._init_share_groups()
        self._schedule(("expire_offsets",), self.config.offsets_retention_check_interval_ms)

    def _on_timer(self, key) -> None:
        if self._on_consumer_timer(key) or self._on_share_timer(key):
            return
        if key[0] == "expire_offsets":
            self.expire_offsets()
            self._schedule(("expire_offsets",), self.config.offsets_retention_check_interval_ms)
        else:
            super()._on_timer(key)

    # ================================================================== OffsetCommit ====
    def commit_offsets(self, group_id: str, generation_id: int, member_id: str,
                       offsets: Iterable[CommitOffset], *, group_instance_id: str | None = None,
                       retention_ms: int = -1,
                       commit_timestamp: int = -1, api_version: int = 9) -> Pending[CommitResult]:
        """Handle an OffsetCommit. Answers once the writer has made the offsets durable.

        ``retention_ms``: OffsetCommit v2-v4 ``retention_time_ms`` (-1: broker default);
        ``commit_timestamp``: v1's per-request timestamp (-1: now).
        """
        offsets = list(offsets)
        p: Pending[CommitResult] = Pending()

        def fail(error: ErrorCode) -> Pending[CommitResult]:
            p.set_result(CommitResult({(t, part): error for t, part, *_ in offsets}))
            return p

        g = self.groups.get(group_id)
        if g is None:
            if generation_id >= 0:
                return fail(E.ILLEGAL_GENERATION)  # an older generation of a deleted group
            g = self.groups[group_id] = Group(group_id)  # a standalone ("simple") consumer
        if g.consumer is not None:   # KIP-848: member epochs (Kafka's ConsumerGroup.validateOffsetCommit)
            error = self.validate_consumer_offset_commit(g, member_id, generation_id, api_version,
                                                         self._checked_partitions(offsets))
            if error is not None:
                return fail(error)
        else:
            error = self._validate_offset_commit(g, generation_id, member_id, group_instance_id)
        if error is None and g.is_(S.COMPLETING_REBALANCE):
            error = E.REBALANCE_IN_PROGRESS
        if error is not None:
            if not g.members and g.offsets.empty and g.is_(S.EMPTY) and not g.pending_members:
                self.groups.pop(group_id, None)
            return fail(error)
        if g.state in (S.STABLE, S.PREPARING_REBALANCE):
            self._schedule_heartbeat(g, g.members[member_id])

        now = self.clock.now_ms()
        ts = now if commit_timestamp < 0 else commit_timestamp
        expire = -1 if retention_ms < 0 else ts + retention_ms
        errors: dict[tuple[str, int], ErrorCode] = {}
        accepted: dict[tuple[str, int], OffsetAndMetadata] = {}
        for topic, partition, offset, leader_epoch, metadata in offsets:
            metadata = metadata or ""
            tp = (topic, partition)
            if len(metadata.encode()) > self.config.offset_metadata_max_bytes:
                errors[tp] = E.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = OffsetAndMetadata(offset, leader_epoch, metadata, ts, expire)
                errors[tp] = E.NONE
        if not accepted:
            p.set_result(CommitResult(errors))
            return p
        records = [(R.offset_key(group_id, t, part),
                    R.offset_value(R.OffsetValue(om.offset, om.leader_epoch, om.metadata,
                                                 om.commit_timestamp, om.expire_timestamp)))
                   for (t, part), om in accepted.items()]

        def appended(error: ErrorCode, base_offset: int) -> None:
            if error == E.NONE:
                if self.groups.get(group_id) is g and not g.is_(S.DEAD):
                    for i, (tp, om) in enumerate(accepted.items()):
                        # a transaction committed by a later record keeps its offset
                        g.offsets.put_if_newer(tp, om if base_offset < 0 else
                                               replace(om, record_offset=base_offset + i))
            else:
                e = commit_error(error)
                for tp in accepted:
                    errors[tp] = e
            p.set_result(CommitResult(errors))

        self._write(group_id, records, appended, with_offset=True)
        return p

    def _checked_partitions(self, offsets) -> list[tuple[str, int]]:
        """The (topic, partition)s whose commit Kafka validates against the member's assignment
        epochs: those whose metadata is not too large (refused per partition before)."""
        limit = self.config.offset_metadata_max_bytes
        return [(t, part) for t, part, _o, _e, md in offsets if len((md or "").encode()) <= limit]

    def _validate_offset_commit(self, g: Group, generation_id: int, member_id: str,
                                instance_id: str | None,
                                transactional: bool = False, partitions=()) -> ErrorCode | None:
        """Kafka's ClassicGroup.validateOffsetCommit. A transactional commit (TxnOffsetCommit
        v0-2 carries no member id nor generation) is accepted from outside the group."""
        if g.consumer is not None:   # KIP-848 (TxnOffsetCommit lands here; OffsetCommit checks first)
            return self.validate_consumer_offset_commit(g, member_id, generation_id, 9, partitions,
                                                        transactional=transactional)
        if g.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and g.is_(S.EMPTY):
            return None  # admin client or a consumer without group management
        if generation_id >= 0 or member_id != "" or instance_id is not None:
            error = self._validate_current_member(g, member_id, instance_id)
            if error is not None:
                return error
            return E.ILLEGAL_GENERATION if generation_id != g.generation_id else None
        if not transactional and not g.is_(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID  # only members commit for a group with members
        return None

    # ================================================================== OffsetFetch =====
    def fetch_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None,
                      require_stable: bool = False) -> FetchResult:
        """Handle an OffsetFetch for one group; ``partitions`` None means all committed.

        ``require_stable`` (OffsetFetch v7+): a partition with an offset in an open
        transaction answers UNSTABLE_OFFSET_COMMIT (retriable: the client asks again once
        the transaction ended), as Kafka's OffsetMetadataManager.fetchOffsets.
        """
        g = self.groups.get(group_id)
        if g is not None and g.is_(S.DEAD):
            g = None
        unstable = FetchedOffset(-1, -1, "", E.UNSTABLE_OFFSET_COMMIT)
        if partitions is None:
            if g is None:
                return FetchResult(E.NONE, {})
            return FetchResult(E.NONE, {
                tp: unstable if require_stable and g.offsets.has_pending(tp) else
                FetchedOffset(om.offset, om.leader_epoch, om.metadata)
                for tp, om in g.offsets.items()})
        out = {}
        for tp in partitions:
            tp = (tp[0], tp[1])
            if g is not None and require_stable and g.offsets.has_pending(tp):
                out[tp] = unstable
                continue
            om = None if g is None else g.offsets.get(tp)
            out[tp] = FetchedOffset() if om is None else \
                FetchedOffset(om.offset, om.leader_epoch, om.metadata)
        return FetchResult(E.NONE, out)

    # ================================================================== describe/list ===
    def describe_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        """DescribeGroups; an unknown group is state "Dead" with GROUP_ID_NOT_FOUND (send
        NONE to clients below v6, as Kafka does)."""
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if g is None or g.is_(S.DEAD) or g.consumer is not None:
                # a consumer group "is not a classic group" (Kafka answers it so, Dead)
                msg = f"Group {gid} not found." if g is None or g.consumer is None \
                    else f"Group {gid} is not a classic group."
                out.append(GroupDescription(gid, E.GROUP_ID_NOT_FOUND, S.DEAD.value, "", "",
                                            error_message=msg))
                continue
            stable = g.is_(S.STABLE)
            members = [MemberDescription(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.metadata(g.protocol_name) if stable and g.protocol_name else b"",
                m.assignment if stable else b"") for m in g.members.values()]
            out.append(GroupDescription(gid, E.NONE, g.state.value, g.protocol_type or "",
                                        (g.protocol_name or "") if stable else "", members))
        return out

    def list_groups(self, states_filter: Iterable[str] | None = None,
                    types_filter: Iterable[str] | None = None) -> list[GroupListing]:
        """ListGroups; filters are case-insensitive, empty or None means no filter."""
        states = {s.lower() for s in states_filter or ()}
        types = {t.lower() for t in types_filter or ()}
        out = []
        for g in self.groups.values():
            if g.is_(S.DEAD):
                continue
            if g.consumer is not None:   # KIP-848: type and protocol type "consumer"
                listing = GroupListing(g.group_id, CONSUMER_PROTOCOL_TYPE, g.consumer.state().value,
                                       "consumer")
            else:
                listing = GroupListing(g.group_id, g.protocol_type or "", g.state.value)
            if (not states or listing.state.lower() in states) and \
                    (not types or listing.group_type in types):
                out.append(listing)
        for gid, state in self.share_group_listings():   # KIP-932: type and protocol type "share"
            if (not states or state.lower() in states) and (not types or "share" in types):
                out.append(GroupListing(gid, "share", state, "share"))
        return out

    # ================================================================== deletion ========
    def _cleanup(self, g: Group, removed: list[tuple[str, int]]) -> list[Record]:
        """Remove offsets (committed, or pending in an open transaction); an Empty group left
        without offsets nor open transactions is deleted. Tombstones out."""
        recs: list[Record] = []
        for t, part in removed:
            committed = g.offsets.remove((t, part))
            if g.offsets.remove_pending((t, part)) or committed:
                recs.append((R.offset_key(g.group_id, t, part), None))
        if g.is_(S.EMPTY) and g.offsets.empty and (g.consumer is None or g.consumer.is_empty()):
            g.transition_to(S.DEAD)
            self._forget(g)
            recs.extend(self.consumer_group_tombstones(g) if g.consumer is not None
                        else [(R.group_key(g.group_id), None)])
        return recs

    def _forget(self, g: Group) -> None:
        self._cancel_consumer_timers(g)
        if self.groups.get(g.group_id) is g:
            del self.groups[g.group_id]
        for mid in g.pending_members:
            self.timers.cancel(("pending", g.group_id, mid))
        self.timers.cancel(("join", g.group_id))

    def delete_groups(self, group_ids: Iterable[str]) -> Pending[dict[str, ErrorCode]]:
        """DeleteGroups: only Empty groups (NON_EMPTY_GROUP otherwise); answers once the
        tombstones of the group and its offsets are written."""
        p: Pending[dict[str, ErrorCode]] = Pending()
        result: dict[str, ErrorCode] = {}
        writes: list[tuple[str, list[Record]]] = []
        for gid in group_ids:
            if gid is None:
                result[gid] = E.INVALID_GROUP_ID
                continue
            g = self.groups.get(gid)
            if g is None and gid in self.share_groups:   # KIP-932 (Admin deleteShareGroups)
                result[gid] = self.delete_share_group(gid)
            elif g is None or g.is_(S.DEAD):
                result[gid] = E.GROUP_ID_NOT_FOUND
            elif not g.is_(S.EMPTY) or (g.consumer is not None and not g.consumer.is_empty()):
                result[gid] = E.NON_EMPTY_GROUP
            else:
                recs = [(R.offset_key(gid, t, part), None)
                        for t, part in g.offsets.all_partitions()]
                recs.extend(self.consumer_group_tombstones(g) if g.consumer is not None
                            else [(R.group_key(gid), None)])
                g.transition_to(S.DEAD)
                self._forget(g)
                result[gid] = E.NONE
                writes.append((gid, recs))
        self._write_all(writes, result, p)
        return p

    def _write_all(self, writes: list[tuple[str, list[Record]]], result: dict, p: Pending) -> None:
        outstanding = [len(writes)]
        if not writes:
            p.set_result(result)
            return
        for gid, recs in writes:
            def done(error: ErrorCode, gid=gid) -> None:
                if error != E.NONE:
                    result[gid] = commit_error(error)
                outstanding[0] -= 1
                if outstanding[0] == 0:
                    p.set_result(result)
            self._write(gid, recs, done)

    def delete_offsets(self, group_id: str,
                       partitions: Iterable[tuple[str, int]]) -> Pending[OffsetDeleteResult]:
        """OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for topics a live consumer group reads."""
        p: Pending[OffsetDeleteResult] = Pending()
        partitions = [(t, part) for t, part in partitions]
        if not group_id:
            p.set_result(OffsetDeleteResult(E.INVALID_GROUP_ID))
            return p
        g = self.groups.get(group_id)
        if g is None or g.is_(S.DEAD):
            p.set_result(OffsetDeleteResult(E.GROUP_ID_NOT_FOUND))
            return p
        errors: dict[tuple[str, int], ErrorCode] = {}
        if g.consumer is not None and not g.consumer.is_empty():
            subscribed = g.consumer.subscribed_topic_names(self.topic_metadata())
            eligible = []
            for tp in partitions:
                if tp[0] in subscribed:
                    errors[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        elif g.is_(S.EMPTY):
            eligible = partitions
        elif g.protocol_type == CONSUMER_PROTOCOL_TYPE:
            eligible = []
            for tp in partitions:
                if g.is_subscribed_to_topic(tp[0]):
                    errors[tp] = E.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            p.set_result(OffsetDeleteResult(E.NON_EMPTY_GROUP))
            return p
        for tp in eligible:
            errors[tp] = E.NONE
        recs = self._cleanup(g, eligible) if eligible else []
        if not recs:
            p.set_result(OffsetDeleteResult(E.NONE, errors))
            return p

        def done(error: ErrorCode) -> None:
            if error != E.NONE:
                p.set_result(OffsetDeleteResult(commit_error(error)))
            else:
                p.set_result(OffsetDeleteResult(E.NONE, errors))
        self._write(group_id, recs, done)
        return p

    def delete_topic_offsets(self, topics: Iterable[str]) -> None:
        """Forget committed offsets of deleted topics (Kafka's handleDeletedPartitions)."""
        topics = set(topics)
        for g in list(self.groups.values()):
            gone = [tp for tp in g.offsets.all_partitions() if tp[0] in topics]
            if gone:
                recs = self._cleanup(g, gone)
                if recs:
                    self._write(g.group_id, recs)

    # ================================================================== expiry ==========
    def expire_offsets(self) -> int:
        """Drop expired offsets (and groups left Empty without offsets); tombstones are
        written. Runs every offsets.retention.check.interval.ms from tick(); returns how
        many offsets expired."""
        now = self.clock.now_ms()
        retention = self.config.offsets_retention_ms
        count = 0
        for g in list(self.groups.values()):
            if g.consumer is not None:
                if not g.consumer.is_empty():
                    continue   # Kafka keeps the offsets of a consumer group with members
                expired = g.offsets.expired(now, retention, None)
            elif g.protocol_type and g.is_(S.EMPTY):
                expired = g.offsets.expired(now, retention, g.current_state_timestamp)
            elif g.protocol_type == CONSUMER_PROTOCOL_TYPE and g.is_(S.STABLE) \
                    and g.subscribed_topics is not None:
                expired = g.offsets.expired(now, retention, None, g.subscribed_topics)
            elif not g.protocol_type:
                expired = g.offsets.expired(now, retention, None)
            else:
                expired = []
            if not expired and not (g.is_(S.EMPTY) and g.offsets.empty
                                    and not g.pending_members):
                continue
            count += len(expired)
            recs = self._cleanup(g, expired)
            if recs:
                self._write(g.group_id, recs)
        return count

    # ================================================================== replay ==========
    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one ``__consumer_offsets`` record straight to the live groups (a coordinator
        that owns every partition; see kwire.groups.loader). Records that do not decode are
        skipped (CodecError), as Kafka skips unknown ones."""
        fresh = replay_record(self.groups, key, value, self._forget)
        if value is not None and len(key) >= 2 and int.from_bytes(bytes(key[:2]), "big") in CR.TYPES:
            g = self.groups.get(CR.decode_key(bytes(key)).group_id)
            if g is not None:
                self._start_consumer_timers(g)
        if fresh is not None:
            for m in fresh.members.values():
                self._schedule_heartbeat(fresh, m)

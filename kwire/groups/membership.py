"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: Kafka's classic rebalance protocol.

A state machine with time passed in (habit 1): no I/O, no await. Operations that must wait
(a JoinGroup until the rebalance completes, a follower's SyncGroup until the leader's
assignment is stored) return a ``Pending`` that the coordinator completes later, from another
call or from ``tick()``. Group metadata that must survive is handed to the ``writer`` (the
edge appends it to ``__consumer_offsets``); answers that depend on it are given only once the
writer reports the append done.

Semantics follow Apache Kafka's GroupCoordinator (the classic protocol):
- a rebalance completes once every known member has rejoined and no member-id-required
  member is pending, or when the rebalance timeout (the largest of the members') expires:
  dynamic members that did not rejoin are removed;
- an Empty group waits ``group.initial.rebalance.delay.ms`` before its first rebalance
  completes, extended while new members keep arriving (up to the rebalance timeout);
- members that do not SyncGroup within the rebalance timeout after the join are removed;
- a member that misses its session timeout is removed (not while it waits in a JoinGroup or
  SyncGroup; a new member waiting in its first JoinGroup expires after 5 minutes).
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterable

from kwire.clock import REAL_CLOCK, Clock
from kwire.errors import ErrorCode
from kwire.groups import records as R
from kwire.groups.group import Group, GroupState, Member
from kwire.coordinator.pending import Pending
from kwire.groups.results import JoinMember, JoinResult, LeaveMemberResult, LeaveResult, SyncResult
from kwire.coordinator.timers import Timers

E = ErrorCode
S = GroupState

#: DEBUG: every group state transition and the answer each member gets to its JoinGroup,
#: SyncGroup, Heartbeat and LeaveGroup (logged when the answer is given, not when asked).
log = logging.getLogger("kwire.groups")


def _err(code) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


def _trace_join(p: Pending, group_id: str, member_id: str) -> None:
    if log.isEnabledFor(logging.DEBUG):
        def done(_p: Pending) -> None:
            r = _p.result
            log.debug("group %s: JoinGroup of %r -> %s member=%s generation=%d leader=%s%s",
                      group_id, member_id, _err(r.error), r.member_id, r.generation_id,
                      r.leader or "-", f" members={len(r.members)}" if r.members else "")
        p.add_done_callback(done)


def _trace_sync(p: Pending, group_id: str, member_id: str, generation: int) -> None:
    if log.isEnabledFor(logging.DEBUG):
        def done(_p: Pending) -> None:
            r = _p.result
            log.debug("group %s: SyncGroup of %s (generation %d) -> %s, %d assignment bytes",
                      group_id, member_id, generation, _err(r.error), len(r.assignment or b""))
        p.add_done_callback(done)

Record = tuple[bytes, "bytes | None"]
#: writer(partition, records, done, *, transaction=None): append the records (key, value or
#: None for a tombstone) to that ``__consumer_offsets`` partition as one batch, then call
#: ``done(ErrorCode.NONE, base_offset)`` (or an error code) once they are durable;
#: ``base_offset`` is the offset of the first record, or left out (-1) when the writer does
#: not know it. ``done`` may be called before ``writer`` returns. ``transaction`` is only
#: passed for a transactional batch (TxnOffsetCommit): (producer id, producer epoch), and a
#: third item, the KIP-890 verification guard, when the edge verified the transaction.
Writer = Callable[..., None]


def immediate_writer(partition: int, records: list[Record], done: Callable[..., None], *,
                     transaction: tuple | None = None) -> None:
    """A writer for tests and in-memory brokers: nothing to append, done at once."""
    done(ErrorCode.NONE)


@dataclass
class GroupConfig:
    """Kafka's broker settings for the group coordinator (same names, snake_case)."""
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = 2_147_483_647
    new_member_join_timeout_ms: int = 300_000
    offsets_topic_num_partitions: int = 50
    offsets_retention_ms: int = 7 * 24 * 60 * 60 * 1000  # offsets.retention.minutes = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    # KIP-848 consumer groups (group.consumer.*)
    consumer_session_timeout_ms: int = 45_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_max_size: int = 2_147_483_647
    consumer_assignors: list = field(default_factory=lambda: ["uniform", "range"])
    consumer_migration_policy: str = "bidirectional"   # group.consumer.migration.policy
    # KIP-932 share groups (group.share.*)
    share_session_timeout_ms: int = 45_000
    share_heartbeat_interval_ms: int = 5_000
    share_max_size: int = 200


def append_error(error: ErrorCode, too_large: ErrorCode) -> ErrorCode:
    """What a failed append to __consumer_offsets means to a client; ``too_large`` is the
    code for an oversized write (it differs between group metadata and offsets in Kafka)."""
    if error in (E.UNKNOWN_TOPIC_OR_PARTITION, E.NOT_ENOUGH_REPLICAS,
                 E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.REQUEST_TIMED_OUT):
        return E.COORDINATOR_NOT_AVAILABLE
    if error in (E.NOT_LEADER_OR_FOLLOWER, E.KAFKA_STORAGE_ERROR):
        return E.NOT_COORDINATOR
    if error in (E.MESSAGE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_FETCH_SIZE):
        return too_large
    return error


def store_error(error: ErrorCode) -> ErrorCode:
    """What a failed append of group metadata means to a client (Kafka's storeGroup)."""
    return append_error(error, E.UNKNOWN_SERVER_ERROR)


class Membership:
    """Group membership and rebalancing; GroupCoordinator adds offsets and admin on top."""

    def __init__(self, config: GroupConfig | None = None, clock: Clock = REAL_CLOCK,
                 writer: Writer | None = None,
                 new_uuid: Callable[[], str] | None = None):
        self.config = config or GroupConfig()
        self.clock = clock
        self.writer: Writer = writer or immediate_writer
        self.groups: dict[str, Group] = {}
        self.timers = Timers()
        #: called (with no argument) when a deadline earlier than the previous earliest one
        #: is set, so the edge's timer task can wake up and call tick() sooner.
        self.wakeup: Callable[[], None] | None = None
        self._new_uuid = new_uuid or (lambda: str(uuid.uuid4()))

    # ================================================================== timers ==========
    def _schedule(self, key, delay_ms: int) -> None:
        deadline = self.clock.monotonic_ms() + max(0, delay_ms)
        prev = self.timers.next_deadline()
        self.timers.schedule(key, deadline)
        if self.wakeup is not None and (prev is None or deadline < prev):
            self.wakeup()

    def next_deadline(self) -> int | None:
        """The earliest pending deadline (monotonic ms of the clock), or None."""
        return self.timers.next_deadline()

    def tick(self) -> int | None:
        """Fire every timer due by now; return the next deadline (monotonic ms) or None."""
        now = self.clock.monotonic_ms()
        expired = []
        while (key := self.timers.pop_expired(now)) is not None:
            expired.append(key)
        for key in expired:
            if key in self.timers:
                continue  # rescheduled by an earlier expiry of this tick
            self._on_timer(key)
        return self.timers.next_deadline()

    def _on_timer(self, key) -> None:
        kind = key[0]
        if kind == "heartbeat":
            self._on_heartbeat_expired(key[1], key[2])
        elif kind == "pending":
            self._on_pending_member_expired(key[1], key[2])
        elif kind == "join":
            self._on_join_timer(key[1])
        elif kind == "sync":
            self._on_sync_expired(key[1], key[2])

    def _schedule_heartbeat(self, g: Group, m: Member, timeout_ms: int | None = None) -> None:
        self._schedule(("heartbeat", g.group_id, m.member_id),
                       m.session_timeout_ms if timeout_ms is None else timeout_ms)

    # ================================================================== writes ==========
    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition holding this group's records."""
        return R.partition_for(group_id, self.config.offsets_topic_num_partitions)

    def _write(self, group_id: str, records: list[Record],
               done: Callable[[ErrorCode], None] | None = None) -> None:
        self.writer(self.partition_for(group_id), records, done or (lambda _e: None))

    def _group_record(self, g: Group, assignment: dict[str, bytes]) -> Record:
        members = [R.MemberValue(
            member_id=m.member_id, group_instance_id=m.group_instance_id,
            client_id=m.client_id, client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms, session_timeout_ms=m.session_timeout_ms,
            subscription=m.metadata(g.protocol_name) if g.protocol_name else b"",
            assignment=assignment.get(m.member_id, b"")) for m in g.members.values()]
        value = R.GroupValue(
            protocol_type=g.protocol_type or "", generation=g.generation_id,
            protocol=g.protocol_name, leader=g.leader_id if g.members else None,
            current_state_timestamp=-1 if g.current_state_timestamp is None
            else g.current_state_timestamp, members=members)
        return R.group_key(g.group_id), R.group_value(value)

    def _store_group(self, g: Group, assignment: dict[str, bytes],
                     done: Callable[[ErrorCode], None] | None = None) -> None:
        self._write(g.group_id, [self._group_record(g, assignment)],
                    None if done is None else (lambda e: done(store_error(e))))

    # ================================================================== JoinGroup =======
    def join_group(self, group_id: str, member_id: str, *, protocol_type: str,
                   protocols: list[tuple[str, bytes]], session_timeout_ms: int,
                   rebalance_timeout_ms: int = -1, group_instance_id: str | None = None,
                   client_id: str = "", client_host: str = "",
                   require_known_member_id: bool = True,
                   supports_skip_assignment: bool = False,
                   reason: str | None = None) -> Pending[JoinResult]:
        """Handle a JoinGroup.

        ``require_known_member_id``: True for JoinGroup v4+ without a group instance id
        (Kafka's rule); ``supports_skip_assignment``: JoinGroup v9+. ``rebalance_timeout_ms``
        below 0 (v0) means the session timeout.
        """
        p: Pending[JoinResult] = Pending()
        _trace_join(p, group_id, member_id)
        protocols = [(name, bytes(meta)) for name, meta in protocols]
        if not group_id:
            p.set_result(JoinResult(E.INVALID_GROUP_ID, member_id))
            return p
        if group_id in getattr(self, "share_groups", ()):   # KIP-932: "not a classic group"
            p.set_result(JoinResult(E.GROUP_ID_NOT_FOUND, member_id))
            return p
        cfg = self.config
        if not cfg.group_min_session_timeout_ms <= session_timeout_ms <= cfg.group_max_session_timeout_ms:
            p.set_result(JoinResult(E.INVALID_SESSION_TIMEOUT, member_id))
            return p
        if rebalance_timeout_ms < 0:
            rebalance_timeout_ms = session_timeout_ms
        unknown = member_id == ""
        g = self.groups.get(group_id)
        created = False
        if g is None:
            if not unknown:
                p.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))
                return p
            g = self.groups[group_id] = Group(group_id)
            created = True
        if g.consumer is not None:   # a KIP-848 consumer group
            if not g.consumer.is_empty():
                # a classic member of a consumer group (kwire.groups.consumer_migration)
                self.classic_join_to_consumer_group(
                    g, p, member_id, protocol_type=protocol_type, protocols=protocols,
                    session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms,
                    instance_id=group_instance_id, client_id=client_id, client_host=client_host,
                    require_known_member_id=require_known_member_id)
                return p
            # an empty consumer group becomes a classic one, keeping its offsets (as Kafka)
            self._write(group_id, self.consumer_group_tombstones(g))
            g.consumer = None
        if not self._accept_joining_member(g, member_id):
            if g.has(member_id):
                self._remove_member(g, g.members[member_id], join_error=E.GROUP_MAX_SIZE_REACHED)
            p.set_result(JoinResult(E.GROUP_MAX_SIZE_REACHED, ""))
        elif unknown:
            self._join_new_member(g, p, group_instance_id, require_known_member_id,
                                  supports_skip_assignment, client_id, client_host,
                                  rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                  protocols)
        else:
            self._join_current_member(g, p, member_id, group_instance_id, client_id,
                                      client_host, rebalance_timeout_ms, session_timeout_ms,
                                      protocol_type, protocols)
        if g.is_(S.PREPARING_REBALANCE):
            self._maybe_complete_join(g)
        if created and g.is_(S.EMPTY) and not g.members and not g.pending_members \
                and g.offsets.empty:
            del self.groups[group_id]
        return p

    def _accept_joining_member(self, g: Group, member_id: str) -> bool:
        limit = self.config.group_max_size
        if g.state in (S.EMPTY, S.DEAD):
            return True
        if g.is_(S.PREPARING_REBALANCE):
            m = g.members.get(member_id)
            return (m is not None and m.awaiting_join) or g.num_awaiting_join() < limit
        return g.has(member_id) or len(g.members) < limit

    def _join_new_member(self, g: Group, p: Pending, instance_id, require_known, skip_ok,
                         client_id, client_host, rebalance_timeout_ms, session_timeout_ms,
                         protocol_type, protocols) -> None:
        if g.is_(S.DEAD):
            p.set_result(JoinResult(E.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not g.supports_protocols(protocol_type, protocols):
            p.set_result(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        new_id = f"{instance_id if instance_id is not None else client_id}-{self._new_uuid()}"
        if instance_id is not None:
            old_id = g.static_member_id(instance_id)
            if old_id is not None:
                self._replace_static_member(g, p, old_id, new_id, instance_id, protocols,
                                            rebalance_timeout_ms, session_timeout_ms, skip_ok)
                return
        elif require_known:
            g.pending_members.add(new_id)
            self._schedule(("pending", g.group_id, new_id), session_timeout_ms)
            p.set_result(JoinResult(E.MEMBER_ID_REQUIRED, new_id))
            return
        self._add_member_and_rebalance(g, p, new_id, instance_id, client_id, client_host,
                                       rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                       protocols)

    def _validate_current_member(self, g: Group, member_id: str,
                                 instance_id: str | None) -> ErrorCode | None:
        if instance_id is not None:
            current = g.static_member_id(instance_id)
            if current is None:
                return E.UNKNOWN_MEMBER_ID
            if current != member_id:
                return E.FENCED_INSTANCE_ID
        if not g.has(member_id):
            return E.UNKNOWN_MEMBER_ID
        return None

    def _join_current_member(self, g: Group, p: Pending, member_id, instance_id, client_id,
                             client_host, rebalance_timeout_ms, session_timeout_ms,
                             protocol_type, protocols) -> None:
        if g.is_(S.DEAD):
            p.set_result(JoinResult(E.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not g.supports_protocols(protocol_type, protocols):
            p.set_result(JoinResult(E.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in g.pending_members:
            if instance_id is not None:  # pending members are always dynamic
                p.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))
                return
            self.timers.cancel(("pending", g.group_id, member_id))
            self._add_member_and_rebalance(g, p, member_id, None, client_id, client_host,
                                           rebalance_timeout_ms, session_timeout_ms,
                                           protocol_type, protocols)
            return
        error = self._validate_current_member(g, member_id, instance_id)
        if error is not None:
            p.set_result(JoinResult(error, member_id))
            return
        m = g.members[member_id]
        if g.is_(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(g, m, p, protocols, rebalance_timeout_ms,
                                              session_timeout_ms)
        elif g.is_(S.COMPLETING_REBALANCE):
            if m.matches(protocols):
                # it lost its JoinGroup answer: give it the current generation again
                p.set_result(self._join_answer(g, m, with_members=g.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(g, m, p, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms)
        elif g.is_(S.STABLE):
            if g.is_leader(member_id) or not m.matches(protocols):
                # the leader rejoins to trigger a rebalance (e.g. topic metadata changed)
                self._update_member_and_rebalance(g, m, p, protocols, rebalance_timeout_ms,
                                                  session_timeout_ms)
            else:
                p.set_result(self._join_answer(g, m, with_members=False))
        else:
            p.set_result(JoinResult(E.UNKNOWN_MEMBER_ID, member_id))

    def _join_answer(self, g: Group, m: Member, *, with_members: bool) -> JoinResult:
        return JoinResult(
            E.NONE, m.member_id, g.generation_id, g.protocol_type, g.protocol_name,
            g.leader_id or "", False,
            [JoinMember(*x) for x in g.current_member_metadata()] if with_members else [])

    def _add_member_and_rebalance(self, g: Group, p: Pending, member_id, instance_id,
                                  client_id, client_host, rebalance_timeout_ms,
                                  session_timeout_ms, protocol_type, protocols) -> None:
        m = Member(member_id, instance_id, client_id, client_host, rebalance_timeout_ms,
                   session_timeout_ms, protocol_type, protocols, join_pending=p, is_new=True)
        if g.is_(S.PREPARING_REBALANCE) and g.generation_id == 0:
            g.new_member_added = True
        g.add(m)
        # a new member cannot heartbeat while its first JoinGroup waits: time that out instead
        self._schedule_heartbeat(g, m, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(g)

    def _update_member_and_rebalance(self, g: Group, m: Member, p: Pending, protocols,
                                     rebalance_timeout_ms, session_timeout_ms) -> None:
        m.protocols = protocols
        m.rebalance_timeout_ms = rebalance_timeout_ms
        m.session_timeout_ms = session_timeout_ms
        old = m.join_pending
        m.join_pending = p
        if old is not None and old is not p:
            old.set_result(JoinResult(E.REBALANCE_IN_PROGRESS, m.member_id))
        self._maybe_prepare_rebalance(g)

    def _replace_static_member(self, g: Group, p: Pending, old_id: str, new_id: str,
                               instance_id: str, protocols, rebalance_timeout_ms,
                               session_timeout_ms, skip_ok: bool) -> None:
        current_leader = g.leader_id or ""
        m = g.members[old_id]
        # fence whatever the old incarnation is waiting for
        self._fail_join(m, E.FENCED_INSTANCE_ID)
        self._fail_sync(m, E.FENCED_INSTANCE_ID)
        self.timers.cancel(("heartbeat", g.group_id, old_id))
        g.replace_static_member(instance_id, old_id, new_id)
        self._schedule_heartbeat(g, m)
        old_protocols = m.protocols
        old_timeouts = (m.rebalance_timeout_ms, m.session_timeout_ms)
        m.protocols = protocols
        m.rebalance_timeout_ms, m.session_timeout_ms = rebalance_timeout_ms, session_timeout_ms
        m.join_pending = p

        if g.is_(S.STABLE):
            if g.select_protocol() != g.protocol_name:
                self._maybe_prepare_rebalance(g)
                return
            # same protocol: no rebalance; persist the new member id, keep the assignment
            assignment = {x.member_id: x.assignment for x in g.members.values()}
            generation = g.generation_id

            def stored(error: ErrorCode) -> None:
                if m.join_pending is not p:
                    return  # answered meanwhile (a rebalance started and completed)
                if error != E.NONE:
                    if g.members.get(new_id) is m and generation == g.generation_id:
                        m.join_pending = None
                        self.timers.cancel(("heartbeat", g.group_id, new_id))
                        g.replace_static_member(instance_id, new_id, old_id)
                        m.protocols = old_protocols
                        m.rebalance_timeout_ms, m.session_timeout_ms = old_timeouts
                        self._schedule_heartbeat(g, m)
                    else:
                        m.join_pending = None
                    p.set_result(JoinResult(error, "", g.generation_id, g.protocol_type,
                                            g.protocol_name, current_leader))
                    return
                m.join_pending = None
                if skip_ok:
                    is_leader = g.is_leader(new_id)
                    r = self._join_answer(g, m, with_members=is_leader)
                    r.skip_assignment = is_leader
                else:
                    # older clients: name the old leader id so that a restarted leader does
                    # not run an assignment a Stable group would ignore
                    r = self._join_answer(g, m, with_members=False)
                    r.leader = current_leader
                p.set_result(r)

            self._store_group(g, assignment, stored)
        elif g.is_(S.COMPLETING_REBALANCE):
            # the leader may have been given the old id: rebalance again
            self._prepare_rebalance(g)
        # PreparingRebalance: it waits for the join to complete like everyone else

    def _maybe_prepare_rebalance(self, g: Group) -> None:
        if g.can_rebalance():
            self._prepare_rebalance(g)

    def _prepare_rebalance(self, g: Group) -> None:
        if g.is_(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(g, E.REBALANCE_IN_PROGRESS)
        self._clear_pending_sync(g)
        was_empty = g.is_(S.EMPTY)
        g.transition_to(S.PREPARING_REBALANCE)
        delay = self.config.group_initial_rebalance_delay_ms
        if was_empty and delay > 0:
            g.initial_delay_remaining_ms = max(g.rebalance_timeout_ms() - delay, 0)
            self._schedule(("join", g.group_id), delay)
        else:
            g.initial_delay_remaining_ms = None
            self._schedule(("join", g.group_id), g.rebalance_timeout_ms())
            self._maybe_complete_join(g)

    def _maybe_complete_join(self, g: Group) -> None:
        if g.is_(S.PREPARING_REBALANCE) and g.initial_delay_remaining_ms is None \
                and g.has_all_members_joined():
            self._complete_join(g)

    def _on_join_timer(self, group_id: str) -> None:
        g = self.groups.get(group_id)
        if g is None or not g.is_(S.PREPARING_REBALANCE):
            return
        remaining = g.initial_delay_remaining_ms
        if remaining is not None:
            if g.new_member_added and remaining > 0:
                g.new_member_added = False
                delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
                g.initial_delay_remaining_ms = max(remaining - delay, 0)
                self._schedule(("join", group_id), delay)
                return
            g.initial_delay_remaining_ms = None
        self._complete_join(g)

    def _complete_join(self, g: Group) -> None:
        self.timers.cancel(("join", g.group_id))
        g.initial_delay_remaining_ms = None
        g.new_member_added = False
        for m in g.not_yet_rejoined():
            if m.group_instance_id is None:  # static members keep their place until expiry
                self._remove_member(g, m, join_error=E.UNKNOWN_MEMBER_ID)
        if g.is_(S.DEAD):
            return
        if g.members and not g.maybe_elect_new_joined_leader():
            # nobody rejoined: wait another rebalance timeout for session expiry to clean up
            self._schedule(("join", g.group_id), g.rebalance_timeout_ms())
            return
        g.init_next_generation(self.clock.now_ms())
        if g.is_(S.EMPTY):
            self._store_group(g, {})
            return
        answers = []
        for m in g.members.values():
            if m.join_pending is not None:
                answers.append((m.join_pending, self._join_answer(
                    g, m, with_members=g.is_leader(m.member_id))))
                m.join_pending = None
            self._schedule_heartbeat(g, m)
            m.is_new = False
            g.pending_sync_members.add(m.member_id)
        self._schedule(("sync", g.group_id, g.generation_id), g.rebalance_timeout_ms())
        for p, r in answers:
            p.set_result(r)

    def _on_sync_expired(self, group_id: str, generation: int) -> None:
        g = self.groups.get(group_id)
        if g is None or g.generation_id != generation:
            return
        if g.state in (S.COMPLETING_REBALANCE, S.STABLE) and g.pending_sync_members:
            for member_id in list(g.pending_sync_members):
                m = g.members.get(member_id)
                if m is not None:
                    self._remove_member(g, m, join_error=E.UNKNOWN_MEMBER_ID,
                                        sync_error=E.UNKNOWN_MEMBER_ID)
            g.pending_sync_members.clear()
            self._prepare_rebalance(g)

    def _clear_pending_sync(self, g: Group) -> None:
        g.pending_sync_members.clear()
        self.timers.cancel(("sync", g.group_id, g.generation_id))

    def _remove_pending_sync_member(self, g: Group, member_id: str) -> None:
        g.pending_sync_members.discard(member_id)
        if not g.pending_sync_members:
            self.timers.cancel(("sync", g.group_id, g.generation_id))

    # ================================================================== SyncGroup =======
    def sync_group(self, group_id: str, generation_id: int, member_id: str, *,
                   assignments: dict[str, bytes] | Iterable[tuple[str, bytes]] = (),
                   group_instance_id: str | None = None, protocol_type: str | None = None,
                   protocol_name: str | None = None) -> Pending[SyncResult]:
        """Handle a SyncGroup; ``protocol_type``/``protocol_name`` as sent by v5+ (else None)."""
        p: Pending[SyncResult] = Pending()
        _trace_sync(p, group_id, member_id, generation_id)
        if not group_id:
            p.set_result(SyncResult(E.INVALID_GROUP_ID))
            return p
        g = self.groups.get(group_id)
        if g is None:
            p.set_result(SyncResult(E.UNKNOWN_MEMBER_ID))
            return p
        if g.is_(S.DEAD):
            p.set_result(SyncResult(E.COORDINATOR_NOT_AVAILABLE))
            return p
        if g.consumer is not None:   # a classic member of a consumer group
            p.set_result(self.classic_sync_to_consumer_group(g, generation_id, member_id, group_instance_id,
                                                             protocol_type, protocol_name)
                         if not g.consumer.is_empty() else SyncResult(E.UNKNOWN_MEMBER_ID))
            return p
        error = self._validate_current_member(g, member_id, group_instance_id)
        if error is None:
            if generation_id != g.generation_id:
                error = E.ILLEGAL_GENERATION
            elif protocol_type is not None and protocol_type != g.protocol_type:
                error = E.INCONSISTENT_GROUP_PROTOCOL
            elif protocol_name is not None and protocol_name != g.protocol_name:
                error = E.INCONSISTENT_GROUP_PROTOCOL
            elif g.is_(S.EMPTY):
                error = E.UNKNOWN_MEMBER_ID
            elif g.is_(S.PREPARING_REBALANCE):
                error = E.REBALANCE_IN_PROGRESS
        if error is not None:
            p.set_result(SyncResult(error))
            return p
        m = g.members[member_id]
        if g.is_(S.STABLE):
            self._remove_pending_sync_member(g, member_id)
            p.set_result(SyncResult(E.NONE, g.protocol_type, g.protocol_name, m.assignment))
            self._schedule_heartbeat(g, m)
            return p
        # CompletingRebalance
        if m.sync_pending is not None:
            m.sync_pending.set_result(SyncResult(E.REBALANCE_IN_PROGRESS))
        m.sync_pending = p
        self._remove_pending_sync_member(g, member_id)
        if g.is_leader(member_id):
            given = dict(assignments)
            assignment = {mid: bytes(given.get(mid, b"")) for mid in g.members}
            generation = g.generation_id

            def stored(error: ErrorCode) -> None:
                if self.groups.get(group_id) is not g or not g.is_(S.COMPLETING_REBALANCE) \
                        or g.generation_id != generation:
                    return
                if error != E.NONE:
                    self._reset_and_propagate_assignment_error(g, error)
                    self._maybe_prepare_rebalance(g)
                else:
                    for x in g.members.values():
                        x.assignment = assignment.get(x.member_id, b"")
                    g.transition_to(S.STABLE)
                    self._propagate_assignment(g, E.NONE)

            self._store_group(g, assignment, stored)
        return p

    def _reset_and_propagate_assignment_error(self, g: Group, error: ErrorCode) -> None:
        for m in g.members.values():
            m.assignment = b""
        self._propagate_assignment(g, error)

    def _propagate_assignment(self, g: Group, error: ErrorCode) -> None:
        answers = []
        for m in g.members.values():
            if m.sync_pending is not None:
                if error == E.NONE:
                    r = SyncResult(E.NONE, g.protocol_type, g.protocol_name, m.assignment)
                else:
                    r = SyncResult(error)
                answers.append((m.sync_pending, r))
                m.sync_pending = None
                self._schedule_heartbeat(g, m)
        for p, r in answers:
            p.set_result(r)

    # ================================================================== Heartbeat =======
    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None = None) -> ErrorCode:
        error = self._heartbeat(group_id, generation_id, member_id, group_instance_id)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("group %s: Heartbeat of %s (generation %d) -> %s",
                      group_id, member_id, generation_id, _err(error))
        return error

    def _heartbeat(self, group_id: str, generation_id: int, member_id: str,
                   group_instance_id: str | None) -> ErrorCode:
        if not group_id:
            return E.INVALID_GROUP_ID
        g = self.groups.get(group_id)
        if g is None:
            return E.UNKNOWN_MEMBER_ID
        if g.is_(S.DEAD):
            return E.COORDINATOR_NOT_AVAILABLE
        if g.consumer is not None:   # a classic member of a consumer group
            return self.classic_heartbeat_to_consumer_group(g, generation_id, member_id, group_instance_id)
        error = self._validate_current_member(g, member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != g.generation_id:
            return E.ILLEGAL_GENERATION
        if g.is_(S.EMPTY):
            return E.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(g, g.members[member_id])
        if g.is_(S.PREPARING_REBALANCE):
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    def _on_heartbeat_expired(self, group_id: str, member_id: str) -> None:
        g = self.groups.get(group_id)
        if g is None or g.is_(S.DEAD):
            return
        m = g.members.get(member_id)
        if m is None:
            return
        if not m.is_new and (m.awaiting_join or m.awaiting_sync):
            return  # waiting in a JoinGroup/SyncGroup counts as alive; rescheduled after it
        log.debug("group %s: member %s missed its session timeout (%d ms): removed",
                  group_id, member_id, m.session_timeout_ms)
        self._remove_member_and_update_group(g, m)

    def _on_pending_member_expired(self, group_id: str, member_id: str) -> None:
        g = self.groups.get(group_id)
        if g is None or member_id not in g.pending_members:
            return
        g.pending_members.discard(member_id)
        self._maybe_complete_join(g)

    # ================================================================== LeaveGroup ======
    def leave_group(self, group_id: str,
                    members: Iterable[tuple[str, str | None]]) -> LeaveResult:
        """Handle a LeaveGroup: ``members`` as (member id, group instance id or None).

        v0-v2 send one member id: answer them with that member's error as the top error.
        A member id of "" with an instance id removes that static member (admin removal).
        """
        members = list(members)
        r = self._leave_group(group_id, members)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("group %s: LeaveGroup -> %s %s", group_id, _err(r.error),
                      ", ".join(f"{m.member_id or m.group_instance_id}: {_err(m.error)}"
                                for m in r.members))
        return r

    def _leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> LeaveResult:
        if not group_id:
            return LeaveResult(E.INVALID_GROUP_ID)
        g = self.groups.get(group_id)
        if g is None:
            return LeaveResult(E.NONE, [LeaveMemberResult(mid, iid, E.UNKNOWN_MEMBER_ID)
                                        for mid, iid in members])
        if g.is_(S.DEAD):
            return LeaveResult(E.COORDINATOR_NOT_AVAILABLE)
        if g.consumer is not None:   # classic members of a consumer group
            return LeaveResult(E.NONE, self.classic_leave_consumer_group(g, members))
        out = []
        for mid, iid in members:
            if mid == "":
                current = g.static_member_id(iid) if iid is not None else None
                if current is None:
                    out.append(LeaveMemberResult(mid, iid, E.UNKNOWN_MEMBER_ID))
                    continue
                self._remove_member_and_update_group(g, g.members[current])
                out.append(LeaveMemberResult(mid, iid, E.NONE))
            elif mid in g.pending_members:
                g.pending_members.discard(mid)
                self.timers.cancel(("pending", group_id, mid))
                self._maybe_complete_join(g)
                out.append(LeaveMemberResult(mid, iid, E.NONE))
            else:
                error = self._validate_current_member(g, mid, iid)
                if error is None:
                    self._remove_member_and_update_group(g, g.members[mid])
                    error = E.NONE
                out.append(LeaveMemberResult(mid, iid, error))
        return LeaveResult(E.NONE, out)

    # ================================================================== removal =========
    def _fail_join(self, m: Member, error: ErrorCode) -> None:
        p, m.join_pending = m.join_pending, None
        if p is not None:
            p.set_result(JoinResult(error, m.member_id if error == E.FENCED_INSTANCE_ID else ""))

    def _fail_sync(self, m: Member, error: ErrorCode) -> None:
        p, m.sync_pending = m.sync_pending, None
        if p is not None:
            p.set_result(SyncResult(error))

    def _remove_member(self, g: Group, m: Member, *, join_error: ErrorCode,
                       sync_error: ErrorCode = E.UNKNOWN_MEMBER_ID) -> None:
        """Take a member out (answering whatever it waits for); no state change of the group."""
        log.debug("group %s: member %s removed (%s)", g.group_id, m.member_id, _err(join_error))
        g.remove(m.member_id)
        self.timers.cancel(("heartbeat", g.group_id, m.member_id))
        if not g.pending_sync_members:
            self.timers.cancel(("sync", g.group_id, g.generation_id))
        self._fail_join(m, join_error)
        self._fail_sync(m, sync_error)

    def _remove_member_and_update_group(self, g: Group, m: Member) -> None:
        self._remove_member(g, m, join_error=E.UNKNOWN_MEMBER_ID)
        if g.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(g)
        elif g.is_(S.PREPARING_REBALANCE):
            self._maybe_complete_join(g)

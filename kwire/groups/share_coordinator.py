"""KIP-932 share groups in the group coordinator (Kafka's GroupMetadataManager
shareGroupHeartbeat / shareGroupDescribe), mixed into GroupCoordinator. No I/O: time from the
clock, answers as ``Pending``.

A heartbeat (``share_group_heartbeat``), after Kafka's request checks (group id and member
id set: the client makes its member id; epoch 0 must carry the subscribed topic names;
epochs below -1 are invalid):
- epoch 0 joins (a new member, or a known one starting over), GROUP_MAX_SIZE_REACHED past
  group.share.max.size members; a group id held by a classic or consumer group answers
  GROUP_ID_NOT_FOUND ("not a share group");
- epoch -1 leaves: the member goes, the group epoch is bumped and the target recomputed;
- any other epoch must be the member's (UNKNOWN_MEMBER_ID for a member not in the group,
  FENCED_MEMBER_EPOCH otherwise; its previous epoch is accepted: the answer carrying the bump
  may have been lost);
- the member moves to the target assignment (kwire.groups.share_group: no revocation in a
  share group) and its session timer restarts (group.share.session.timeout.ms, or the
  group's share.session.timeout.ms); a member that misses it is removed.
The answer carries the heartbeat interval (group.share.heartbeat.interval.ms or the group's
share.heartbeat.interval.ms) and the assignment when it changed or the member joined.

Durable: the group epoch, the members and their assignments are written to
``__consumer_offsets`` (kwire.groups.share_records) before the heartbeat is answered, and
loaded with the partition (members keep their epochs across a restart or a coordinator
move); the share partitions' state (what was delivered and acknowledged) is in
``__share_group_state`` (kwire.share). Left out: the target-assignment records (recomputed
from the members at load).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from kwire.errors import ErrorCode
from kwire.groups import share_records as SHR
from kwire.groups.membership import store_error
from kwire.coordinator.pending import Pending
from kwire.groups.share_group import Assignment, ShareGroup, ShareGroupMember

E = ErrorCode
log = logging.getLogger("kwire.groups")

LEAVE_EPOCH = -1


@dataclass(slots=True)
class ShareHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None   # None: not sent


@dataclass(slots=True)
class ShareGroupDescription:
    group_id: str
    error: ErrorCode
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = "simple"
    members: list[ShareGroupMember] | None = None


def _fail(error: ErrorCode, message: str | None = None, member_id: str | None = None,
          epoch: int = -1) -> Pending[ShareHeartbeatResult]:
    return Pending.completed(ShareHeartbeatResult(error, message, member_id, epoch))


class ShareGroups:
    """Mixed into GroupCoordinator (``groups``, ``config``, ``timers``, ``_schedule``,
    ``topic_metadata``, ``group_overrides``). Share groups are kept apart from classic and
    consumer groups (``share_groups``), one namespace checked both ways."""

    def _init_share_groups(self) -> None:
        self.share_groups: dict[str, ShareGroup] = {}

    def share_group(self, group_id: str) -> ShareGroup | None:
        return self.share_groups.get(group_id)

    def _share_setting(self, group_id: str, name: str, default: int) -> int:
        try:
            return int(self.group_overrides(group_id).get(name, default))
        except (TypeError, ValueError):
            return default

    def _share_session_timeout_ms(self, group_id: str) -> int:
        return self._share_setting(group_id, "share.session.timeout.ms", self.config.share_session_timeout_ms)

    def _share_heartbeat_interval_ms(self, group_id: str) -> int:
        return self._share_setting(group_id, "share.heartbeat.interval.ms",
                                   self.config.share_heartbeat_interval_ms)

    # ------------------------------------------------------------------ heartbeat
    def share_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int, *,
                              rack_id: str | None = None, subscribed_topic_names: list[str] | None = None,
                              client_id: str = "", client_host: str = "") -> Pending[ShareHeartbeatResult]:
        if not group_id:
            return _fail(E.INVALID_REQUEST, "GroupId can't be empty.")
        if not member_id:
            return _fail(E.INVALID_REQUEST, "MemberId can't be empty.")
        if member_epoch < LEAVE_EPOCH:
            return _fail(E.INVALID_REQUEST, f"MemberEpoch is {member_epoch}, but must be greater than or "
                                            "equal to -1.")
        if member_epoch == 0 and not subscribed_topic_names:
            return _fail(E.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
        g = self.groups.get(group_id)
        if g is not None and (g.members or g.consumer is not None or g.protocol_type):
            return _fail(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        sg = self.share_groups.get(group_id)
        all_topics = self.topic_metadata()
        if member_epoch == LEAVE_EPOCH:
            if sg is None or member_id not in sg.members:
                return _fail(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.",
                             member_id, member_epoch)
            records = self._remove_share_member(sg, member_id, "left the group")
            return self._share_answer_after(group_id, records,
                                            ShareHeartbeatResult(E.NONE, None, member_id, LEAVE_EPOCH, 0))

        old = sg.members.get(member_id) if sg is not None else None
        if member_epoch == 0:
            if sg is None:
                sg = self.share_groups[group_id] = ShareGroup(group_id)
            if old is None and len(sg.members) >= self.config.share_max_size:
                return _fail(E.GROUP_MAX_SIZE_REACHED, f"The share group has reached its maximum capacity of "
                             f"{self.config.share_max_size} members.")
            base = old or ShareGroupMember(member_id)
        else:
            if old is None:
                return _fail(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
            if member_epoch != old.member_epoch and member_epoch != old.previous_member_epoch:
                return _fail(E.FENCED_MEMBER_EPOCH, f"The share group member has epoch {member_epoch}, "
                             f"expected {old.member_epoch}.")
            base = old
        updated = replace(base, rack_id=rack_id if rack_id is not None else base.rack_id,
                          client_id=client_id, client_host=client_host,
                          subscribed_topic_names=tuple(subscribed_topic_names) if subscribed_topic_names is not None
                          else base.subscribed_topic_names)
        epoch_before = sg.group_epoch
        now_member = sg.join_or_update(updated, all_topics)
        records: list = []
        if sg.group_epoch != epoch_before:
            records.append((SHR.group_key(group_id), SHR.metadata_value(sg.group_epoch)))
        if old is None or (old.rack_id, old.client_id, old.client_host, old.subscribed_topic_names) != \
                (now_member.rack_id, now_member.client_id, now_member.client_host, now_member.subscribed_topic_names):
            records.append((SHR.member_key(SHR.MEMBER_METADATA, group_id, member_id), SHR.member_value(now_member)))
        if old is None or (old.member_epoch, old.previous_member_epoch, old.assignment) != \
                (now_member.member_epoch, now_member.previous_member_epoch, now_member.assignment):
            records.append((SHR.member_key(SHR.CURRENT_ASSIGNMENT, group_id, member_id),
                            SHR.current_value(now_member)))
        self._schedule(("sg_session", group_id, member_id), self._share_session_timeout_ms(group_id))
        changed = old is None or member_epoch == 0 or now_member.assignment != old.assignment
        if old is None or now_member.member_epoch != old.member_epoch:
            log.info("group %s: share member %s at epoch %d (group epoch %d, %d members)", group_id, member_id,
                     now_member.member_epoch, sg.group_epoch, len(sg.members))
        return self._share_answer_after(group_id, records, ShareHeartbeatResult(
            E.NONE, None, member_id, now_member.member_epoch, self._share_heartbeat_interval_ms(group_id),
            dict(now_member.assignment) if changed else None))

    def _share_answer_after(self, group_id: str, records: list,
                            result: ShareHeartbeatResult) -> Pending[ShareHeartbeatResult]:
        """Answer once the records are durable in ``__consumer_offsets``."""
        if not records:
            return Pending.completed(result)
        p: Pending[ShareHeartbeatResult] = Pending()

        def done(error: ErrorCode, *_rest) -> None:
            p.set_result(result if error == E.NONE else
                         ShareHeartbeatResult(store_error(error), None, result.member_id, -1))
        self._write(group_id, records, done)
        return p

    def _remove_share_member(self, sg: ShareGroup, member_id: str, why: str) -> list:
        sg.remove(member_id, self.topic_metadata())
        self.timers.cancel(("sg_session", sg.group_id, member_id))
        log.info("group %s: share member %s %s; group epoch %d, %d members", sg.group_id, member_id, why,
                 sg.group_epoch, len(sg.members))
        return SHR.leave_records(sg.group_id, member_id) + [
            (SHR.group_key(sg.group_id), SHR.metadata_value(sg.group_epoch))]

    def _on_share_timer(self, key) -> bool:
        if key[0] != "sg_session":
            return False
        sg = self.share_groups.get(key[1])
        if sg is not None and key[2] in sg.members:
            self._write(sg.group_id, self._remove_share_member(sg, key[2], "missed its session timeout"))
        return True

    # ------------------------------------------------------------------ admin
    def describe_share_groups(self, group_ids: list[str]) -> list[ShareGroupDescription]:
        out = []
        for gid in group_ids:
            sg = self.share_groups.get(gid)
            if not gid:
                out.append(ShareGroupDescription(gid, E.INVALID_GROUP_ID))
            elif sg is None:
                g = self.groups.get(gid)
                msg = f"Group {gid} is not a share group." if g is not None else f"Group {gid} not found."
                out.append(ShareGroupDescription(gid, E.GROUP_ID_NOT_FOUND, msg, "Dead"))
            else:
                out.append(ShareGroupDescription(gid, E.NONE, None, sg.state().value, sg.group_epoch,
                                                 sg.assignment_epoch, "simple", list(sg.members.values())))
        return out

    def share_group_listings(self) -> list[tuple[str, str]]:
        """(group id, state) of every share group."""
        return [(gid, sg.state().value) for gid, sg in sorted(self.share_groups.items())]

    #: called with the id of a deleted share group (the edge drops its share partitions' state)
    share_group_deleted = staticmethod(lambda _gid: None)

    def delete_share_group(self, group_id: str) -> ErrorCode:
        """DeleteGroups on a share group: only an empty one (NON_EMPTY_GROUP otherwise)."""
        sg = self.share_groups.get(group_id)
        if sg is None:
            return E.GROUP_ID_NOT_FOUND
        if sg.members:
            return E.NON_EMPTY_GROUP
        del self.share_groups[group_id]
        self._write(group_id, [(SHR.group_key(group_id), None)])
        self.share_group_deleted(group_id)
        log.info("group %s: share group deleted", group_id)
        return E.NONE

    def _unload_share_groups(self, partition: int) -> int:
        """The ``__consumer_offsets`` partition moved away: its share groups go (their members
        join the new coordinator: UNKNOWN_MEMBER_ID, then epoch 0)."""
        doomed = [gid for gid in self.share_groups if self.partition_for(gid) == partition]
        for gid in doomed:
            for mid in self.share_groups.pop(gid).members:
                self.timers.cancel(("sg_session", gid, mid))
        return len(doomed)

    def _install_share_groups(self, loaded: dict[str, ShareGroup]) -> None:
        """A load completed: its share groups are served, each member with a fresh session
        (as Kafka's onLoaded), the target recomputed from the members."""
        topics = self.topic_metadata()
        for gid, sg in loaded.items():
            SHR.finish_load(sg, topics)
            self.share_groups[gid] = sg
            for mid in sg.members:
                self._schedule(("sg_session", gid, mid), self._share_session_timeout_ms(gid))
